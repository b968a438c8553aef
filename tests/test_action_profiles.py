"""Action profiles and action selectors (v1model `implementation = action_profile(N)` /
`action_selector(algo, N, W)`) on both backends, through the switch API and P4Runtime.

What bmv2 does (behavioral-model src/bm_sim/action_profile.cpp, P4Objects.cpp, match_tables.cpp):
a member is an action and its data under a member handle (the lowest free handle when it is
created); a group is a set of member handles; an entry refers to a member or a group. For a
group, the selector's hash (its algorithm over the `selector` key fields in key order, packed as
hash() packs them) picks the member with index hash % group size among the group's members in
handle order. A miss runs the P4 default action until the control plane sets a default; a hit
on an empty group runs no action (the table still hit). The expected members below are computed
here from that definition with a bitwise CRC-16/ARC, not with the switch's own code.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from control_plane.p4runtime_client import P4RuntimeClient
from p4compiler.p4info import build_p4info
from p4compiler.python_backend import compile_file, compile_text
from softswitch import api
from softswitch.native_switch import create_switch
from softswitch.p4runtime_server import P4RuntimeServer

P4 = Path(__file__).parent / "p4" / "features" / "action_selector.p4"
AP, SEL = "MyIngress.ap", "MyIngress.sel"
T_AP, T_SEL = "MyIngress.t_ap", "MyIngress.t_sel"
SET = "MyIngress.set_out"
ETH = bytes.fromhex("000000000001" "000000000002" "88b5")


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC bit by bit (reflected polynomial 0xA001, init 0): bmv2's crc16."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def frame(which: int, k: int, f1: int = 0, f2: int = 0) -> bytes:
    return ETH + bytes([which, k]) + f1.to_bytes(2, "big") + f2.to_bytes(2, "big") + b"\0\0"


def run(sw, data: bytes) -> tuple[int, int, int]:
    """(egress port, res, hit) of the one packet out."""
    (port, out), = sw.process_packet(0, data)
    return port, out[-2], out[-1]


@pytest.fixture(scope="module")
def program():
    return compile_file(str(P4))


@pytest.fixture(params=["python", "native"])
def sw(request, program):
    s = create_switch(program, request.param)
    yield s
    if hasattr(s, "close"):
        s.close()


def test_crc16_reference() -> None:
    assert crc16_arc(b"123456789") == 0xBB3D  # the CRC-16/ARC check value


def test_members_entries_and_misses(sw) -> None:
    assert run(sw, frame(0, 1)) == (3, 0xEE, 0)  # miss: the P4 default action miss()
    sw.insert_member(AP, 5, SET, {"v": 7, "port": 2})
    sw.insert_entry(api.TableEntry(T_AP, {"hdr.d.k": api.Exact(1)}, "", member=5))
    sw.insert_entry(api.TableEntry(T_AP, {"hdr.d.k": api.Exact(2)}, "", member=5))
    assert run(sw, frame(0, 1)) == (2, 7, 1)
    assert run(sw, frame(0, 2)) == (2, 7, 1)
    assert run(sw, frame(0, 3)) == (3, 0xEE, 0)
    # a member changed: every entry referring to it runs the new action data
    sw.modify_member(AP, 5, SET, {"v": 9, "port": 4})
    assert run(sw, frame(0, 1)) == (4, 9, 1) and run(sw, frame(0, 2)) == (4, 9, 1)
    sw.insert_member(AP, 6, "MyIngress.miss", {})
    sw.modify_entry(api.TableEntry(T_AP, {"hdr.d.k": api.Exact(2)}, "", member=6))
    assert run(sw, frame(0, 2)) == (3, 0xEE, 1)
    assert sw.read_members(AP) == {5: (SET, {"v": 9, "port": 4}), 6: ("MyIngress.miss", {})}
    entries = {e.match["hdr.d.k"].value: e.member for e in sw.read_entries(T_AP)}
    assert entries == {1: 5, 2: 6}
    # a default member (bmv2's set_default_member), then back to the P4 default
    sw.set_default_reference(T_AP, member=5)
    assert sw.get_default_reference(T_AP) == ("member", 5)
    assert run(sw, frame(0, 9)) == (4, 9, 0)
    sw.reset_default_entry(T_AP)
    assert sw.get_default_reference(T_AP) is None and run(sw, frame(0, 9)) == (3, 0xEE, 0)


def test_member_errors(sw) -> None:
    sw.insert_member(AP, 1, SET, {"v": 1, "port": 1})
    with pytest.raises(api.AlreadyExists):
        sw.insert_member(AP, 1, SET, {"v": 1, "port": 1})
    with pytest.raises(api.NotFound):
        sw.modify_member(AP, 2, SET, {"v": 1, "port": 1})
    with pytest.raises(api.NotFound):
        sw.insert_member("MyIngress.nosuch", 1, SET, {"v": 1, "port": 1})
    with pytest.raises(api.NotFound):  # not an action of the profile's table
        sw.insert_member(AP, 2, "NoAction", {})
    with pytest.raises(api.SwitchError):  # 9 does not fit in bit<8>
        sw.insert_member(AP, 2, SET, {"v": 256, "port": 1})
    with pytest.raises(api.NotFound):  # an entry referring to a member that does not exist
        sw.insert_entry(api.TableEntry(T_AP, {"hdr.d.k": api.Exact(1)}, "", member=2))
    with pytest.raises(api.SwitchError):  # a table with an action profile takes no direct action
        sw.insert_entry(api.TableEntry(T_AP, {"hdr.d.k": api.Exact(1)}, SET, {"v": 1, "port": 1}))
    with pytest.raises(api.SwitchError):  # an action profile has no groups
        sw.insert_group(AP, 1, [1])
    sw.insert_entry(api.TableEntry(T_AP, {"hdr.d.k": api.Exact(1)}, "", member=1))
    with pytest.raises(api.InUse):
        sw.delete_member(AP, 1)
    sw.delete_entry(api.TableEntry(T_AP, {"hdr.d.k": api.Exact(1)}, ""))
    sw.delete_member(AP, 1)
    with pytest.raises(api.NotFound):
        sw.delete_member(AP, 1)
    for i in range(8):  # action_profile(32w8): eight members
        sw.insert_member(AP, 10 + i, SET, {"v": i, "port": 1})
    with pytest.raises(api.ResourceExhausted):
        sw.insert_member(AP, 99, SET, {"v": 0, "port": 1})
    assert run(sw, frame(0, 1)) == (3, 0xEE, 0)  # nothing of the above is left in the table


def expected_member(order: list[int], f1: int, f2: int) -> int:
    """The member bmv2 picks: crc16 of f1 ++ f2 (two 16-bit fields), modulo the group size,
    among the members in handle order."""
    h = crc16_arc(f1.to_bytes(2, "big") + f2.to_bytes(2, "big"))
    return order[h % len(order)]


FLOWS = [(f1, f2) for f1 in range(0, 64, 5) for f2 in (0, 7, 0x1234)]


def test_selector_choice_follows_the_hash(sw) -> None:
    # member handles: 20 -> 0, 21 -> 1, 22 -> 2; delete 20 and create 23: it takes handle 0
    for mid in (20, 21, 22):
        sw.insert_member(SEL, mid, SET, {"v": mid, "port": 1})
    sw.delete_member(SEL, 20)
    sw.insert_member(SEL, 23, SET, {"v": 23, "port": 1})
    sw.insert_member(SEL, 24, SET, {"v": 24, "port": 2})  # handle 3
    # three members: crc16 % 4 of these inputs is only ever 0 or 1 (0x8005 has the factor x + 1),
    # % 3 reaches all three
    sw.insert_group(SEL, 1, [22, 21, 23])
    assert sw.read_groups(SEL) == {1: ([23, 21, 22], 0)}  # handle order
    sw.insert_entry(api.TableEntry(T_SEL, {"hdr.d.k": api.Exact(1)}, "", group=1))
    seen = set()
    for f1, f2 in FLOWS:
        want = expected_member([23, 21, 22], f1, f2)
        assert run(sw, frame(1, 1, f1, f2)) == (1, want, 1), (f1, f2)
        seen.add(want)
    assert seen == {21, 22, 23}  # the flows reach every member
    # fewer members: the choice is over the new set
    sw.modify_group(SEL, 1, [21, 24])
    for f1, f2 in FLOWS:
        assert run(sw, frame(1, 1, f1, f2))[1] == expected_member([21, 24], f1, f2)
    # a member changed inside the group
    sw.modify_member(SEL, 24, SET, {"v": 0x44, "port": 5})
    outs = {run(sw, frame(1, 1, f1, f2)) for f1, f2 in FLOWS}
    assert (5, 0x44, 1) in outs and (1, 21, 1) in outs
    # the selector keys are not matched: another exact key misses whatever they are
    assert run(sw, frame(1, 2, 3, 4)) == (3, 0xEE, 0)
    # an empty group: the table hits and runs no action (egress_spec stays 0)
    sw.insert_group(SEL, 2, [])
    sw.insert_entry(api.TableEntry(T_SEL, {"hdr.d.k": api.Exact(2)}, "", group=2))
    assert run(sw, frame(1, 2, 3, 4)) == (0, 0, 1)
    # a group as the default
    sw.set_default_reference(T_SEL, group=1)
    want = expected_member([21, 24], 3, 4)
    assert run(sw, frame(1, 9, 3, 4)) == ((5, 0x44, 0) if want == 24 else (1, 21, 0))


def test_group_errors(sw) -> None:
    sw.insert_member(SEL, 1, SET, {"v": 1, "port": 1})
    with pytest.raises(api.NotFound):
        sw.insert_group(SEL, 1, [1, 2])
    sw.insert_group(SEL, 1, [1], max_size=2)
    with pytest.raises(api.AlreadyExists):
        sw.insert_group(SEL, 1, [1])
    with pytest.raises(api.ResourceExhausted):  # over the group's max_size
        sw.insert_member(SEL, 2, SET, {"v": 2, "port": 1})
        sw.insert_member(SEL, 3, SET, {"v": 3, "port": 1})
        sw.modify_group(SEL, 1, [1, 2, 3])
    with pytest.raises(api.SwitchError):
        sw.insert_group(SEL, 3, [1, 1])
    with pytest.raises(api.NotFound):
        sw.modify_group(SEL, 7, [1])
    with pytest.raises(api.InUse):  # a member in a group
        sw.delete_member(SEL, 1)
    sw.insert_entry(api.TableEntry(T_SEL, {"hdr.d.k": api.Exact(1)}, "", group=1))
    with pytest.raises(api.InUse):  # a group an entry refers to
        sw.delete_group(SEL, 1)
    with pytest.raises(api.NotFound):
        sw.insert_entry(api.TableEntry(T_SEL, {"hdr.d.k": api.Exact(2)}, "", group=5))
    sw.delete_entry(api.TableEntry(T_SEL, {"hdr.d.k": api.Exact(1)}, ""))
    sw.delete_group(SEL, 1)
    sw.delete_member(SEL, 1)  # no longer in a group
    with pytest.raises(api.NotFound):
        sw.delete_group(SEL, 1)


def test_inline_implementation_and_max_group_size(tmp_path) -> None:
    """`implementation = action_selector(...)` in the table: named by its @name (else after the
    table), @max_group_size read into P4Info's max_group_size as p4c does."""
    src = P4.read_text().replace(
        "        implementation = sel;",
        '        @name("ap_ws") @max_group_size(2)\n'
        "        implementation = action_selector(HashAlgorithm.crc16, 32w16, 32w14);").replace(
        "        implementation = ap;", "        implementation = action_profile(32w4);")
    prog = compile_text(src, str(tmp_path / "inline.p4"))
    profiles = {p.name: p for p in prog.info.action_profiles}
    assert set(profiles) == {"ap_ws", T_AP}
    p4i = build_p4info(prog.info)
    by_name = {ap.preamble.name: ap for ap in p4i.action_profiles}
    assert by_name["ap_ws"].max_group_size == 2 and by_name["ap_ws"].with_selector
    assert by_name[T_AP].size == 4 and not by_name[T_AP].with_selector
    assert not by_name["ap_ws"].preamble.annotations  # p4c consumes @max_group_size
    sw = create_switch(prog, "python")
    for i in range(3):
        sw.insert_member("ap_ws", i, SET, {"v": i, "port": 1})
    with pytest.raises(api.ResourceExhausted):
        sw.insert_group("ap_ws", 1, [0, 1, 2])


# --- P4Runtime ------------------------------------------------------------------------------


def _code(err: grpc.RpcError) -> int:
    for key, value in err.trailing_metadata():
        if key == "grpc-status-details-bin":
            st = status_pb2.Status.FromString(value)
            e = p4runtime_pb2.Error()
            assert st.details[0].Unpack(e)
            return e.canonical_code
    raise AssertionError("no per-update error details")


@pytest.fixture(params=["python", "native"])
def p4rt(request, program):
    kind = request.param
    server = P4RuntimeServer(
        None, device_id=1, send_packets=lambda pkts: None,
        load_pipeline=lambda config, p4info: create_switch(compile_text(config.decode(), str(P4)), kind))
    port = server.start("127.0.0.1:0")
    client = P4RuntimeClient(f"127.0.0.1:{port}")
    p4info = build_p4info(program.info)
    client.set_pipeline(p4info, P4.read_bytes())
    try:
        yield server, client, p4info
    finally:
        client.close()
        server.stop()


def test_p4runtime_members_groups_and_entries(p4rt) -> None:
    server, client, p4info = p4rt
    ids = {x.preamble.name: x.preamble.id for x in [*p4info.tables, *p4info.actions, *p4info.action_profiles]}
    U = p4runtime_pb2.Update

    def member(mid: int, v: int, port: int, profile: str = SEL) -> p4runtime_pb2.Entity:
        ent = p4runtime_pb2.Entity()
        m = ent.action_profile_member
        m.action_profile_id, m.member_id = ids[profile], mid
        m.action.action_id = ids[SET]
        m.action.params.add(param_id=1, value=bytes([v]))
        m.action.params.add(param_id=2, value=port.to_bytes(2, "big"))
        return ent

    def group(gid: int, members: list[int]) -> p4runtime_pb2.Entity:
        ent = p4runtime_pb2.Entity()
        g = ent.action_profile_group
        g.action_profile_id, g.group_id = ids[SEL], gid
        for mid in members:
            g.members.add(member_id=mid, weight=1)
        return ent

    def entry(k: int, group_id: int | None = None, member_id: int | None = None,
              table: str = T_SEL) -> p4runtime_pb2.Entity:
        ent = p4runtime_pb2.Entity()
        te = ent.table_entry
        te.table_id = ids[table]
        te.match.add(field_id=1).exact.value = bytes([k])
        if group_id is not None:
            te.action.action_profile_group_id = group_id
        if member_id is not None:
            te.action.action_profile_member_id = member_id
        return ent

    def write(utype: int, *ents: p4runtime_pb2.Entity) -> None:
        client.write([p4runtime_pb2.Update(type=utype, entity=e) for e in ents], "write")

    def error(utype: int, ent: p4runtime_pb2.Entity) -> int:
        req = p4runtime_pb2.WriteRequest(device_id=1, election_id=client.election_id)
        req.updates.add(type=utype, entity=ent)
        with pytest.raises(grpc.RpcError) as ei:
            client.stub.Write(req)
        return _code(ei.value)

    write(U.INSERT, member(1, 11, 1), member(2, 22, 2), member(3, 33, 3))
    write(U.INSERT, group(7, [3, 1, 2]))
    write(U.INSERT, entry(1, group_id=7))
    with server.lock:
        for f1, f2 in FLOWS[:12]:
            want = expected_member([1, 2, 3], f1, f2)
            assert run(server.switch, frame(1, 1, f1, f2)) == (want, 11 * want, 1)
    # reads: members with their actions, the group in handle order, the entry's group id
    read = client.read([p4runtime_pb2.Entity(action_profile_member=p4runtime_pb2.ActionProfileMember(
        action_profile_id=ids[SEL]))], "read members")
    assert [(e.action_profile_member.member_id, e.action_profile_member.action.params[0].value)
            for e in read] == [(1, b"\x0b"), (2, b"\x16"), (3, b"\x21")]
    read = client.read([p4runtime_pb2.Entity(action_profile_group=p4runtime_pb2.ActionProfileGroup(
        action_profile_id=ids[SEL]))], "read groups")
    assert [(e.action_profile_group.group_id, [m.member_id for m in e.action_profile_group.members])
            for e in read] == [(7, [1, 2, 3])]
    read = client.read([p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=ids[T_SEL]))],
                       "read entries")
    assert [e.table_entry.action.action_profile_group_id for e in read] == [7]
    # a group modified: only member 2 left
    write(U.MODIFY, group(7, [2]))
    with server.lock:
        assert run(server.switch, frame(1, 1, 5, 6)) == (2, 22, 1)
    # errors: in use, unknown ids, a group on an action profile, a direct action in an indirect table
    # in use: bmv2 refuses (MBR_STILL_USED / GRP_STILL_USED), PI answers UNKNOWN for any target error
    assert error(U.DELETE, member(2, 0, 0)) == code_pb2.UNKNOWN
    assert error(U.DELETE, group(7, [])) == code_pb2.UNKNOWN
    assert error(U.INSERT, member(1, 0, 0)) == code_pb2.ALREADY_EXISTS
    assert error(U.MODIFY, member(9, 0, 0)) == code_pb2.NOT_FOUND
    assert error(U.INSERT, entry(2, group_id=99)) == code_pb2.NOT_FOUND
    assert error(U.INSERT, group(8, [42])) == code_pb2.NOT_FOUND
    bad = group(8, [1])
    bad.action_profile_group.action_profile_id = ids[AP]
    assert error(U.INSERT, bad) == code_pb2.INVALID_ARGUMENT
    direct = entry(3)
    direct.table_entry.action.action.action_id = ids["MyIngress.miss"]
    assert error(U.INSERT, direct) == code_pb2.INVALID_ARGUMENT
    for w in (0, -1):  # PI: "Member weight must be a positive integer value"
        weighted = group(9, [1])
        weighted.action_profile_group.members[0].weight = w
        assert error(U.INSERT, weighted) == code_pb2.INVALID_ARGUMENT
    assert error(U.INSERT, group(9, [1, 1])) == code_pb2.INVALID_ARGUMENT  # twice: use weights
    # members of the action profile, its table's entries and its default member
    write(U.INSERT, member(4, 44, 4, profile=AP))
    write(U.INSERT, entry(1, member_id=4, table=T_AP))
    default = entry(0, member_id=4, table=T_AP)
    del default.table_entry.match[:]
    default.table_entry.is_default_action = True
    write(U.MODIFY, default)
    with server.lock:
        assert run(server.switch, frame(0, 1)) == (4, 44, 1)
        assert run(server.switch, frame(0, 5)) == (4, 44, 0)
    read = client.read([p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=ids[T_AP], is_default_action=True))], "read default")
    assert read[0].table_entry.action.action_profile_member_id == 4
    # delete in order: entries, then groups, then members
    write(U.DELETE, entry(1, group_id=7))
    write(U.DELETE, group(7, []))
    write(U.DELETE, member(2, 0, 0))
    with server.lock:
        assert run(server.switch, frame(1, 1, 5, 6)) == (3, 0xEE, 0)


# --- weights, one-shot entries, watch ports, pipeline reloads ---------------------------------


def test_group_weights_are_member_copies(sw) -> None:
    """PI (action_prof_mgr.cpp, ActionProfAccessManual) programs a member of weight w as w bmv2
    members: its own handle and w - 1 copies, made (lowest free handle, member id order) before
    the group changes and deleted once no group needs them; the hash picks among all handles in
    handle order, so hash % (sum of weights)."""
    for mid in (1, 2, 3):  # handles 0, 1, 2
        sw.insert_member(SEL, mid, SET, {"v": mid, "port": 1})
    # member 1 weight 2 -> copy handle 3; member 3 weight 3 -> copies 4, 5
    sw.insert_group(SEL, 1, [3, 1], weights=[3, 2])
    assert sw.read_groups(SEL) == {1: ([1, 3], 0)}
    assert sw.read_group_weights(SEL) == {1: {3: 3, 1: 2}}
    sw.insert_entry(api.TableEntry(T_SEL, {"hdr.d.k": api.Exact(1)}, "", group=1))
    order = [1, 3, 1, 3, 3]  # handles 0 (1), 2 (3), 3 (1), 4 (3), 5 (3)
    picks = [expected_member(order, f1, f2) for f1, f2 in FLOWS]
    assert picks.count(3) > picks.count(1) > 0
    for (f1, f2), want in zip(FLOWS, picks, strict=True):
        assert run(sw, frame(1, 1, f1, f2)) == (1, want, 1), (f1, f2)
    # new weights: member 2 weight 2 takes handle 6 (0-5 in use while the copies are made),
    # then the copies of 1 (handle 3) and 3 (4, 5) are deleted
    sw.modify_group(SEL, 1, [1, 2], weights=[1, 2])
    for f1, f2 in FLOWS:
        assert run(sw, frame(1, 1, f1, f2))[1] == expected_member([1, 2, 2], f1, f2)
    # member 4 takes the lowest free handle, 3 (member 2 keeps its copy, handle 6)
    sw.insert_member(SEL, 4, SET, {"v": 4, "port": 2})
    sw.insert_group(SEL, 2, [4, 3])
    sw.insert_entry(api.TableEntry(T_SEL, {"hdr.d.k": api.Exact(2)}, "", group=2))
    for f1, f2 in FLOWS:  # handles 2 (3), 3 (4)
        assert run(sw, frame(1, 2, f1, f2))[1] == expected_member([3, 4], f1, f2)
    # copies count against the profile's size (16 handles; 0-3 and 6 in use, 11 free)
    with pytest.raises(api.ResourceExhausted):
        sw.modify_group(SEL, 2, [4, 3], weights=[6, 8])  # 5 + 7 copies
    assert sw.read_group_weights(SEL)[2] == {4: 1, 3: 1}  # unchanged, its copies gone again
    # 5 + 5 copies, made for member 3 first (handles 4 5 7 8 9), then for member 4 (10-14)
    sw.modify_group(SEL, 2, [4, 3], weights=[6, 6])
    order = [3, 4, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4]  # handles 2, 3, 4, 5, 7, 8, 9, 10 .. 14
    for f1, f2 in FLOWS:
        assert run(sw, frame(1, 2, f1, f2))[1] == expected_member(order, f1, f2)
    sw.insert_member(SEL, 5, SET, {"v": 5, "port": 1})  # handle 15, the last one
    with pytest.raises(api.ResourceExhausted):
        sw.insert_member(SEL, 6, SET, {"v": 6, "port": 1})
    for bad in ([0, 1], [-1, 1], [1]):
        with pytest.raises(api.SwitchError):
            sw.modify_group(SEL, 2, [4, 3], weights=bad)
    # deleting the group deletes its copies: a member fits again
    sw.delete_entry(api.TableEntry(T_SEL, {"hdr.d.k": api.Exact(2)}, ""))
    sw.delete_group(SEL, 2)
    sw.insert_member(SEL, 6, SET, {"v": 6, "port": 1})
    sw.insert_group(SEL, 3, [4, 3], weights=[5, 5])
    with pytest.raises(api.InUse):  # a member in a group, copies or not
        sw.delete_member(SEL, 4)


class _P4rt:
    """Small P4Runtime helpers over the `p4rt` fixture."""

    def __init__(self, p4rt) -> None:
        self.server, self.client, self.p4info = p4rt
        self.ids = {x.preamble.name: x.preamble.id
                    for x in [*self.p4info.tables, *self.p4info.actions, *self.p4info.action_profiles]}

    def action(self, out: p4runtime_pb2.Action, v: int, port: int) -> None:
        out.action_id = self.ids[SET]
        out.params.add(param_id=1, value=bytes([v]))
        out.params.add(param_id=2, value=port.to_bytes(2, "big"))

    def member(self, mid: int, v: int, port: int = 1) -> p4runtime_pb2.Entity:
        ent = p4runtime_pb2.Entity()
        ent.action_profile_member.action_profile_id = self.ids[SEL]
        ent.action_profile_member.member_id = mid
        self.action(ent.action_profile_member.action, v, port)
        return ent

    def group(self, gid: int, members: list[tuple[int, int]]) -> p4runtime_pb2.Entity:
        ent = p4runtime_pb2.Entity()
        g = ent.action_profile_group
        g.action_profile_id, g.group_id = self.ids[SEL], gid
        for mid, w in members:
            g.members.add(member_id=mid, weight=w)
        return ent

    def entry(self, k: int, group_id: int | None = None,
              action_set: list[tuple[int, int]] | None = None) -> p4runtime_pb2.Entity:
        ent = p4runtime_pb2.Entity()
        te = ent.table_entry
        te.table_id = self.ids[T_SEL]
        te.match.add(field_id=1).exact.value = bytes([k])
        if group_id is not None:
            te.action.action_profile_group_id = group_id
        if action_set is not None:
            te.action.action_profile_action_set.SetInParent()  # an empty set too
        for v, w in action_set or []:
            a = te.action.action_profile_action_set.action_profile_actions.add(weight=w)
            self.action(a.action, v, 1)
        return ent

    def write(self, utype: int, *ents: p4runtime_pb2.Entity) -> None:
        self.client.write([p4runtime_pb2.Update(type=utype, entity=e) for e in ents], "write")

    def error(self, utype: int, ent: p4runtime_pb2.Entity) -> int:
        req = p4runtime_pb2.WriteRequest(device_id=1, election_id=self.client.election_id)
        req.updates.add(type=utype, entity=ent)
        with pytest.raises(grpc.RpcError) as ei:
            self.client.stub.Write(req)
        return _code(ei.value)

    def read(self, **kw) -> list[p4runtime_pb2.Entity]:
        return list(self.client.read([p4runtime_pb2.Entity(**kw)], "read"))

    def groups(self) -> list[tuple[int, list[tuple[int, int]]]]:
        req = p4runtime_pb2.ActionProfileGroup(action_profile_id=self.ids[SEL])
        return [(e.action_profile_group.group_id,
                 [(m.member_id, m.weight) for m in e.action_profile_group.members])
                for e in self.read(action_profile_group=req)]

    def members(self) -> list[int]:
        req = p4runtime_pb2.ActionProfileMember(action_profile_id=self.ids[SEL])
        return [e.action_profile_member.member_id for e in self.read(action_profile_member=req)]

    def entries(self) -> list[p4runtime_pb2.TableEntry]:
        req = p4runtime_pb2.TableEntry(table_id=self.ids[T_SEL])
        return [e.table_entry for e in self.read(table_entry=req)]

    def run(self, k: int, f1: int, f2: int) -> tuple[int, int, int]:
        with self.server.lock:
            return run(self.server.switch, frame(1, k, f1, f2))

    def set_pipeline(self, action: int, device_config: bytes) -> None:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=1, election_id=self.client.election_id, action=action)
        req.config.p4info.CopyFrom(self.p4info)
        req.config.p4_device_config = device_config
        self.client.stub.SetForwardingPipelineConfig(req)


def test_p4runtime_weights_and_watch_ports(p4rt) -> None:
    """Weights through P4Runtime pick as the member copies PI makes; watch / watch_port are kept
    and read back (PI does), not enforced."""
    t = _P4rt(p4rt)
    U = p4runtime_pb2.Update
    t.write(U.INSERT, t.member(1, 11), t.member(2, 22))
    g = t.group(5, [(2, 3), (1, 1)])
    g.action_profile_group.members[0].watch_port = b"\x07"
    g.action_profile_group.members[1].watch = 4
    t.write(U.INSERT, g)
    t.write(U.INSERT, t.entry(1, group_id=5))
    order = [1, 2, 2, 2]  # handles 0 (1), 1 (2), copies of 2 at 2 and 3
    for f1, f2 in FLOWS:
        assert t.run(1, f1, f2)[1] == 11 * expected_member(order, f1, f2)
    read = t.read(action_profile_group=p4runtime_pb2.ActionProfileGroup(action_profile_id=t.ids[SEL]))
    ms = {m.member_id: m for m in read[0].action_profile_group.members}
    assert (ms[2].weight, ms[2].watch_port, ms[1].weight, ms[1].watch) == (3, b"\x07", 1, 4)
    # the sum of the weights is bounded by max_size (else the P4Info's max_group_size)
    big = t.group(6, [(1, 2)])
    big.action_profile_group.max_size = 1
    assert t.error(U.INSERT, big) == code_pb2.RESOURCE_EXHAUSTED
    t.write(U.MODIFY, t.group(5, [(1, 2)]))
    assert t.groups() == [(5, [(1, 2)])]
    for f1, f2 in FLOWS:
        assert t.run(1, f1, f2)[1] == 11


def test_p4runtime_one_shot_entries(p4rt) -> None:
    """action_profile_action_set as PI's ActionProfAccessOneshot does it: hidden members (one per
    action and unit of weight, in order) and a group, gone with the entry."""
    t = _P4rt(p4rt)
    U = p4runtime_pb2.Update
    t.write(U.INSERT, t.entry(1, action_set=[(0x21, 1), (0x42, 2)]))
    order = [0x21, 0x42, 0x42]  # members made in order: handles 0, 1, 2
    for f1, f2 in FLOWS:
        assert t.run(1, f1, f2) == (1, expected_member(order, f1, f2), 1)
    assert t.members() == [] and t.groups() == []  # hidden from member and group reads
    (te,) = t.entries()
    acts = te.action.action_profile_action_set.action_profile_actions
    assert [(a.action.params[0].value, a.weight) for a in acts] == [(b"\x21", 1), (b"\x42", 2)]
    # mixing with members and groups is refused both ways while either is in use
    assert t.error(U.INSERT, t.member(1, 1)) == code_pb2.INVALID_ARGUMENT
    assert t.error(U.INSERT, t.entry(3, action_set=[])) == code_pb2.UNIMPLEMENTED
    assert t.error(U.INSERT, t.entry(3, action_set=[(1, 0)])) == code_pb2.INVALID_ARGUMENT
    assert t.error(U.INSERT, t.entry(3, action_set=[(1, 15)])) == code_pb2.RESOURCE_EXHAUSTED  # > 14
    assert t.error(U.INSERT, t.entry(1, action_set=[(1, 1)])) == code_pb2.ALREADY_EXISTS
    # MODIFY replaces the set (the old hidden group and members are deleted: handles reused)
    t.write(U.MODIFY, t.entry(1, action_set=[(0x55, 1)]))
    assert {t.run(1, f1, f2)[1] for f1, f2 in FLOWS} == {0x55}
    with t.server.lock:
        assert len(t.server.switch.read_members(SEL)) == 1
    t.write(U.DELETE, t.entry(1))
    with t.server.lock:
        assert t.server.switch.read_members(SEL) == {} and t.server.switch.read_groups(SEL) == {}
    t.write(U.INSERT, t.member(1, 1))  # empty again: members and groups are allowed
    assert t.error(U.INSERT, t.entry(2, action_set=[(1, 1)])) == code_pb2.INVALID_ARGUMENT


def test_p4runtime_pipeline_reconcile_and_reset(p4rt) -> None:
    """RECONCILE_AND_COMMIT of a newly loaded program carries members, weighted groups, one-shot
    entries and the entries referring to them over (_migrate_state); VERIFY_AND_COMMIT of the
    loaded program (empty p4_device_config) resets them (_reset_state), as does SAVE + COMMIT.
    (One profile takes members/groups or one-shot entries, not both at once, as in PI.)"""
    t = _P4rt(p4rt)
    U = p4runtime_pb2.Update
    Req = p4runtime_pb2.SetForwardingPipelineConfigRequest
    t.write(U.INSERT, t.member(1, 11), t.member(2, 22))
    t.write(U.INSERT, t.group(5, [(1, 1), (2, 2)]))
    t.write(U.INSERT, t.entry(1, group_id=5))

    def check_groups() -> None:
        for f1, f2 in FLOWS:
            assert t.run(1, f1, f2)[1] == 11 * expected_member([1, 2, 2], f1, f2)

    check_groups()
    old = t.server.switch
    t.set_pipeline(Req.RECONCILE_AND_COMMIT, P4.read_bytes())
    assert t.server.switch is not old  # a new switch, with the state carried over
    check_groups()
    assert t.members() == [1, 2] and t.groups() == [(5, [(1, 1), (2, 2)])]
    assert [e.action.action_profile_group_id for e in t.entries()] == [5]
    # VERIFY_AND_COMMIT of the loaded program: everything is gone
    t.set_pipeline(Req.VERIFY_AND_COMMIT, b"")
    assert t.members() == [] and t.groups() == [] and t.entries() == []
    assert t.run(1, 3, 4) == (3, 0xEE, 0)
    # one-shot entries (the profile is empty again), carried over by a reconcile too
    t.write(U.INSERT, t.entry(2, action_set=[(0x33, 1), (0x44, 1)]))

    def check_oneshot() -> None:
        for f1, f2 in FLOWS:
            assert t.run(2, f1, f2)[1] == expected_member([0x33, 0x44], f1, f2)

    check_oneshot()
    t.set_pipeline(Req.RECONCILE_AND_COMMIT, P4.read_bytes())
    check_oneshot()
    (te,) = t.entries()
    acts = te.action.action_profile_action_set.action_profile_actions
    assert [a.action.params[0].value for a in acts] == [b"\x33", b"\x44"]
    t.write(U.MODIFY, t.entry(2, action_set=[(0x55, 1)]))  # the old hidden group still goes
    with t.server.lock:
        assert len(t.server.switch.read_members(SEL)) == 1
    # VERIFY_AND_SAVE then COMMIT of the loaded program resets too
    t.set_pipeline(Req.VERIFY_AND_SAVE, b"")
    t.set_pipeline(Req.COMMIT, b"")
    assert t.entries() == [] and t.run(2, 3, 4) == (3, 0xEE, 0)
    with t.server.lock:
        assert t.server.switch.read_members(SEL) == {} and t.server.switch.read_groups(SEL) == {}
    t.write(U.INSERT, t.member(1, 11))  # and members are allowed again


@pytest.mark.parametrize("kind", ["python", "native"])
def test_selector_leaves_out_fields_of_invalid_headers(kind, tmp_path) -> None:
    """A selector key that is a field of an invalid header is left out of the hash input (bmv2's
    BufBuilder skips a field whose header is invalid), not hashed as 0."""
    src = (P4.read_text()
           .replace("struct headers_t {\n    ethernet_t eth;",
                    "header opt_t {\n    bit<16> g;\n}\n\n"
                    "struct headers_t {\n    ethernet_t eth;\n    opt_t      o;")
           .replace("        pkt.extract(hdr.eth);\n        pkt.extract(hdr.d);\n        transition accept;",
                    "        pkt.extract(hdr.eth);\n        transition select(hdr.eth.etype) {\n"
                    "            16w0x88b6: opt;\n            default: data;\n        }\n    }\n"
                    "    state opt {\n        pkt.extract(hdr.o);\n        transition data;\n    }\n"
                    "    state data {\n        pkt.extract(hdr.d);\n        transition accept;")
           .replace("            hdr.d.f1 : selector;\n",
                    "            hdr.d.f1 : selector;\n            hdr.o.g  : selector;\n")
           .replace("        pkt.emit(hdr.eth);\n", "        pkt.emit(hdr.eth);\n        pkt.emit(hdr.o);\n"))
    assert "hdr.o.g  : selector" in src and "state opt" in src
    s = create_switch(compile_text(src, str(tmp_path / "sel_opt.p4")), kind)
    try:
        for mid in (1, 2, 3):
            s.insert_member(SEL, mid, SET, {"v": mid, "port": 1})
        s.insert_group(SEL, 1, [1, 2, 3])
        s.insert_entry(api.TableEntry(T_SEL, {"hdr.d.k": api.Exact(1)}, "", group=1))
        differs = 0
        for f1, f2 in FLOWS:
            # o invalid: f1 ++ f2, as if the key were not there
            assert run(s, frame(1, 1, f1, f2))[1] == expected_member([1, 2, 3], f1, f2)
            # o valid (g = 0x0102): f1 ++ g ++ f2
            data = ETH[:-2] + bytes.fromhex("88b6" "0102") + frame(1, 1, f1, f2)[len(ETH):]
            h = crc16_arc(f1.to_bytes(2, "big") + b"\x01\x02" + f2.to_bytes(2, "big"))
            assert run(s, data)[1] == [1, 2, 3][h % 3]
            zero = crc16_arc(f1.to_bytes(2, "big") + b"\0\0" + f2.to_bytes(2, "big"))
            differs += [1, 2, 3][zero % 3] != expected_member([1, 2, 3], f1, f2)
        assert differs  # hashing the invalid field as 0 would pick other members for some flows
    finally:
        if hasattr(s, "close"):
            s.close()
