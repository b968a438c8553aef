"""The STF runner (softswitch.stf.run_stf_on_switch): packet matching, entry translation, PRE, errors.

TEMPORARY DEVELOPMENT AID: these tests drive the runner with `FakeSwitch`, a scripted stand-in
for SwitchAPI, so that the runner's own logic (matching, name resolution, priorities, multicast
translation) is tested before softswitch.switch exists. It implements no P4 semantics. Tests of
STF files on the real software switch live elsewhere and import softswitch.switch.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable

import pytest

from softswitch import stf
from softswitch.api import (
    AlreadyExists,
    CloneSession,
    Exact,
    Lpm,
    Optional_,
    Range,
    Replica,
    TableEntry,
    Ternary,
)
from softswitch.model import (
    ActionInfo,
    ActionParam,
    ActionRef,
    CounterInfo,
    DirectCounterInfo,
    MatchField,
    MeterInfo,
    ProgramInfo,
    RegisterInfo,
    TableInfo,
)
from softswitch.stf import StfError, match_packet, packet_diff, run_stf_on_switch


def make_info() -> ProgramInfo:
    actions = [
        ActionInfo("NoAction", []),
        ActionInfo("MyIngress.set_port", [ActionParam("port", 9, 1)]),
        ActionInfo("MyIngress.setb1", [ActionParam("val", 8, 1), ActionParam("port", 9, 2)]),
        ActionInfo("MyEgress.set_port", [ActionParam("port", 9, 1)]),
    ]
    refs = [ActionRef("MyIngress.set_port"), ActionRef("MyIngress.setb1"), ActionRef("NoAction")]
    tables = [
        TableInfo(
            "MyIngress.fwd",
            [
                MatchField("hdr.ethernet.dstAddr", 48, "exact", 1),
                MatchField("standard_metadata.ingress_port", 9, "exact", 2),
            ],
            refs,
            1024,
            "NoAction",
        ),
        TableInfo(
            "MyIngress.tern",
            [
                MatchField("hdr.data.f1", 32, "ternary", 1),
                MatchField("hdr.h.isValid()", 1, "exact", 2),
                MatchField("hdr.extra[0].h", 16, "ternary", 3),
            ],
            refs,
            1024,
            "NoAction",
            direct_counter="MyIngress.tern_ctr",
        ),
        TableInfo(
            "MyIngress.ipv4_lpm", [MatchField("hdr.ipv4.dstAddr", 32, "lpm", 1)], refs, 1024, "NoAction"
        ),
        TableInfo(
            "MyIngress.rng",
            [MatchField("meta.port", 16, "range", 1), MatchField("meta.opt", 8, "optional", 2)],
            refs,
            16,
            "NoAction",
        ),
        TableInfo(
            "MyEgress.fwd",
            [MatchField("hdr.ethernet.dstAddr", 48, "exact", 1)],
            [ActionRef("MyEgress.set_port"), ActionRef("NoAction")],
            16,
            "NoAction",
        ),
    ]
    return ProgramInfo(
        tables=tables,
        actions=actions,
        registers=[RegisterInfo("MyIngress.reg", 32, 4)],
        counters=[CounterInfo("MyIngress.pkts", "BOTH", 8)],
        direct_counters=[DirectCounterInfo("MyIngress.tern_ctr", "BOTH", "MyIngress.tern")],
        meters=[MeterInfo("MyIngress.m", "BYTES", 2)],
    )


class FakeSwitch:
    """TEMPORARY DEVELOPMENT AID (see module docstring): records control-plane calls and
    answers packets with `behaviour(port, data) -> [(egress_port, bytes)]`."""

    def __init__(self, behaviour: Callable[[int, bytes], list[tuple[int, bytes]]] | None = None):
        self.info = make_info()
        self.cpu_port = 64
        self.behaviour = behaviour or (lambda port, data: [(port, data)])  # echo by default
        self.entries: list[TableEntry] = []
        self.defaults: dict[str, tuple[str, dict[str, int]]] = {}
        self.groups: dict[int, list[Replica]] = {}
        self.sessions: dict[int, CloneSession] = {}
        self.registers: dict[tuple[str, int], int] = {}
        self.counters: dict[tuple[str, int], tuple[int, int]] = {}
        self.meters: dict[tuple[str, int], tuple[int, int, int, int]] = {}
        self.cleared: list[str] = []
        self.direct_reads: list[TableEntry] = []

    def insert_entry(self, entry: TableEntry) -> None:
        for e in self.entries:
            if (e.table, e.match, e.priority) == (entry.table, entry.match, entry.priority):
                raise AlreadyExists(f"entry already exists in {entry.table}")
        self.entries.append(entry)

    def set_default_entry(self, table: str, action: str, args: dict[str, int]) -> None:
        self.defaults[table] = (action, args)

    def clear_table(self, table: str) -> None:
        self.cleared.append(table)
        self.entries = [e for e in self.entries if e.table != table]

    def read_direct_counter(self, entry: TableEntry) -> tuple[int, int]:
        self.direct_reads.append(entry)
        return (640, 10)

    def register_read(self, name: str, index: int) -> int:
        return self.registers.get((name, index), 0)

    def register_write(self, name: str, index: int, value: int) -> None:
        self.registers[(name, index)] = value

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        return self.counters.get((name, index), (0, 0))

    def counter_write(self, name: str, index: int, byte_count: int, packet_count: int) -> None:
        self.counters[(name, index)] = (byte_count, packet_count)

    def meter_set_config(self, name: str, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        self.meters[(name, index)] = (cir, cburst, pir, pburst)

    def mc_group_set(self, group_id: int, replicas: list[Replica]) -> None:
        self.groups[group_id] = list(replicas)

    def mc_group_delete(self, group_id: int) -> None:
        del self.groups[group_id]

    def clone_session_set(self, session: CloneSession) -> None:
        self.sessions[session.session_id] = session

    def clone_session_delete(self, session_id: int) -> None:
        del self.sessions[session_id]

    def clone_sessions(self) -> dict[int, CloneSession]:
        return dict(self.sessions)

    def process_packet(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        return self.behaviour(ingress_port, data)


def run(tmp_path, text: str, switch: FakeSwitch | None = None) -> tuple[stf.StfResult, FakeSwitch]:
    sw = switch or FakeSwitch()
    path = tmp_path / "t.stf"
    path.write_text(text)
    return run_stf_on_switch(sw, str(path)), sw


# --- packet matching -----------------------------------------------------------------------


def test_match_packet_rules():
    data = bytes.fromhex("0a0b0c0d")
    assert match_packet("0A0B0C0D", False, data)
    assert match_packet("0A*B**0D", False, data)
    assert match_packet("0A0B", False, data)  # extra trailing bytes are fine without '$'
    assert not match_packet("0A0B", True, data)  # ... but not with it
    assert match_packet("0A0B0C0D", True, data)
    assert not match_packet("0A0B0C0D0E", False, data)  # too short
    assert not match_packet("0A0B0C0E", False, data)
    assert match_packet(None, False, b"")


def test_packet_diff_marks_differing_nibbles():
    lines = packet_diff("0A0B0C0D", False, bytes.fromhex("0a0b1c0e"))
    exp_line, got_line, marks = lines[:3]
    col = exp_line.index("0A0B0C0D")
    assert got_line[col:] == "0A0B1C0E"
    assert marks[col:] == "    ^  ^"


def test_packet_diff_marks_extra_bytes_with_dollar():
    lines = packet_diff("0A", True, bytes.fromhex("0a0b"))
    col = lines[0].index("0A")
    assert lines[2][col:] == "  ^^"


def test_dont_care_nibbles_pass(tmp_path):
    result, _ = run(tmp_path, "packet 1 0a0b0c0d 0e0f\nexpect 1 0a** *c0d ****\n")
    assert result.ok, result.failures
    assert result.outputs == {1: [bytes.fromhex("0a0b0c0d0e0f")]}


def test_mismatch_reports_line_port_and_carets(tmp_path):
    result, _ = run(tmp_path, "# c\npacket 1 0a0b0c0d\n\nexpect 1 0a0b0c0e\n")
    assert not result.ok
    (msg,) = result.failures
    assert msg.startswith(f"{tmp_path / 't.stf'}:4: port 1: packet #1")
    assert "t.stf:2" in msg  # the packet line that caused it
    assert "expected: 0A0B0C0E" in msg and "got:      0A0B0C0D" in msg
    assert msg.splitlines()[-1].endswith("^")


def test_trailing_bytes_and_dollar(tmp_path):
    assert run(tmp_path, "packet 1 0a0b0c\nexpect 1 0a0b\n")[0].ok
    result, _ = run(tmp_path, "packet 1 0a0b0c\nexpect 1 0a0b $\n")
    assert not result.ok
    assert "expected exactly 2" in result.failures[0]
    assert run(tmp_path, "packet 1 0a0b0c\nexpect 1 0a0b0c$\n")[0].ok


def test_too_short(tmp_path):
    result, _ = run(tmp_path, "packet 1 0a\nexpect 1 0a0b\n")
    assert not result.ok and "too short" in result.failures[0]


def test_per_port_order_matters_across_ports_it_does_not(tmp_path):
    def fanout(port, data):
        return [(2, data + b"\x01"), (3, data + b"\x02"), (2, data + b"\x03")]

    ok = "packet 1 aa\nexpect 3 aa02\nexpect 2 aa01\nexpect 2 aa03\n"
    assert run(tmp_path, ok, FakeSwitch(fanout))[0].ok
    swapped = "packet 1 aa\nexpect 2 aa03\nexpect 2 aa01\nexpect 3 aa02\n"
    result, _ = run(tmp_path, swapped, FakeSwitch(fanout))
    assert not result.ok
    assert len(result.failures) == 2 and all("port 2" in f for f in result.failures)


def test_expectations_are_checked_at_the_end_like_bmv2stf(tmp_path):
    # expects may come before or after the packets that cause them
    assert run(tmp_path, "expect 1 bb\nexpect 1 aa\npacket 1 bb\npacket 1 aa\n")[0].ok


def test_missing_packet(tmp_path):
    result, _ = run(tmp_path, "packet 1 aa\nexpect 1 aa\nexpect 5 aa\n")
    assert not result.ok
    (msg,) = result.failures
    assert ":3: port 5: expected packet #1 never arrived" in msg


def test_unexpected_packet_on_checked_port_fails(tmp_path):
    result, _ = run(tmp_path, "packet 1 aa\npacket 1 bb\nexpect 1 aa\n")
    assert not result.ok
    (msg,) = result.failures
    assert ":2: port 1: unexpected packet #2" in msg and "BB" in msg


def test_packet_on_unnamed_port_is_not_checked(tmp_path):
    sw = FakeSwitch(lambda port, data: [(9, data)])
    result, _ = run(tmp_path, "packet 1 aa\n", sw)
    assert result.ok
    assert result.outputs == {9: [b"\xaa"]}
    assert any("not checked" in line for line in result.log)
    # port 1 is named by the packet line: a packet going there would be unexpected
    result, _ = run(tmp_path, "packet 1 aa\n")
    assert not result.ok


def test_expect_without_data_matches_one_packet_of_any_content(tmp_path):
    assert run(tmp_path, "packet 4 0123\nexpect 4\n")[0].ok
    result, _ = run(tmp_path, "expect 4\n")
    assert not result.ok and "(any packet)" in result.failures[0]


# --- table entries -------------------------------------------------------------------------


def test_add_resolves_names_and_fills_exact_keys(tmp_path):
    # "Ingress.fwd" resolves by plain suffix (bmv2stf), "ethernet.dstAddr" by dotted suffix
    result, sw = run(tmp_path, "add Ingress.fwd ethernet.dstAddr:0x0a0b0c0d0e0f set_port(port:3)\n")
    assert result.ok
    (e,) = sw.entries
    assert e.table == "MyIngress.fwd"
    assert e.action == "MyIngress.set_port" and e.args == {"port": 3}
    # bmv2stf sends 0 for an exact key that the line leaves out
    assert e.match == {
        "hdr.ethernet.dstAddr": Exact(0x0A0B0C0D0E0F),
        "standard_metadata.ingress_port": Exact(0),
    }
    assert e.priority == 0


def test_ternary_priorities_larger_stf_number_wins(tmp_path):
    text = (
        "add tern 100 extra$0.h:0x25** h.$valid$:1 MyIngress.setb1(val:0x25, port:1)\n"
        "add tern 110 hdr.extra[0].h:0x2525 h.valid:1 setb1(val:0x27, port:2)\n"
        "add tern 0 data.f1:0x****0101 hdr.h.isValid():0 setb1(val:1, port:0)\n"
    )
    result, sw = run(tmp_path, text)
    assert result.ok
    a, b, c = sw.entries
    assert a.match == {"hdr.extra[0].h": Ternary(0x2500, 0xFF00), "hdr.h.isValid()": Exact(1)}
    assert b.match == {"hdr.extra[0].h": Ternary(0x2525, 0xFFFF), "hdr.h.isValid()": Exact(1)}
    assert b.priority > a.priority > c.priority > 0  # P4Runtime: larger wins, like STF
    assert c.match == {"hdr.data.f1": Ternary(0x0101, 0xFFFF), "hdr.h.isValid()": Exact(0)}


def test_ternary_other_forms(tmp_path):
    text = (
        "add tern 1 data.f1:0x0a&&&0xff NoAction()\n"
        "add tern 2 data.f1:10 NoAction()\n"  # decimal: exact match (extension)
        "add tern 3 data.f1:* NoAction()\n"
        "add tern 4 data.f1:0x0a000000/8 NoAction()\n"
    )
    result, sw = run(tmp_path, text)
    assert result.ok
    f1 = [e.match.get("hdr.data.f1") for e in sw.entries]
    assert f1 == [Ternary(0x0A, 0xFF), Ternary(10, 0xFFFFFFFF), None, Ternary(0x0A000000, 0xFF000000)]


def test_missing_priority_gets_insertion_order(tmp_path):
    result, sw = run(tmp_path, "add tern data.f1:0x01 NoAction()\nadd tern data.f1:0x02 NoAction()\n")
    assert result.ok
    first, second = sw.entries
    assert first.priority > second.priority > 0


def test_priority_is_dropped_for_exact_and_lpm_tables(tmp_path):
    result, sw = run(tmp_path, "add ipv4_lpm 7 ipv4.dstAddr:0x0a000000/8 NoAction()\n")
    assert result.ok
    assert sw.entries[0].priority == 0


def test_lpm_forms(tmp_path):
    text = (
        "add ipv4_lpm ipv4.dstAddr:0x0a010065 NoAction()\n"  # 8 digits: /32
        "add ipv4_lpm ipv4.dstAddr:0x0a01**** NoAction()\n"  # stars: /16
        "add ipv4_lpm ipv4.dstAddr:0x0a0100ff/24 NoAction()\n"  # host bits cleared
        "add ipv4_lpm ipv4.dstAddr:167837696 NoAction()\n"  # decimal: full width
    )
    result, sw = run(tmp_path, text)
    assert result.ok
    assert [e.match["hdr.ipv4.dstAddr"] for e in sw.entries] == [
        Lpm(0x0A010065, 32),
        Lpm(0x0A010000, 16),
        Lpm(0x0A010000, 24),
        Lpm(167837696, 32),
    ]


def test_range_and_optional(tmp_path):
    result, sw = run(tmp_path, "add rng 5 port:10->20 opt:3 NoAction()\nadd rng 6 port:7 NoAction()\n")
    assert result.ok
    a, b = sw.entries
    assert a.match == {"meta.port": Range(10, 20), "meta.opt": Optional_(3)}
    assert b.match == {"meta.port": Range(7, 7)}
    assert (a.priority, b.priority) == (6, 7)


def test_setdefault(tmp_path):
    result, sw = run(tmp_path, "setdefault MyIngress.fwd set_port(port:0x1ff)\n")
    assert result.ok
    assert sw.defaults == {"MyIngress.fwd": ("MyIngress.set_port", {"port": 0x1FF})}


@pytest.mark.parametrize(
    "line, message",
    [
        ("add nosuch NoAction()", "no table named 'nosuch'"),
        ("add fwd dstAddr:1 NoAction()", "table name 'fwd' is ambiguous: MyEgress.fwd, MyIngress.fwd"),
        (
            "add MyIngress.fwd nosuch:1 NoAction()",
            "no key field named 'nosuch' in the key of table MyIngress.fwd",
        ),
        ("add MyIngress.fwd dstAddr:1 MyEgress.set_port(port:1)", "no action named 'MyEgress.set_port'"),
        ("add MyIngress.fwd dstAddr:1 set_port(prt:1)", "has no parameter 'prt'"),
        ("add MyIngress.fwd dstAddr:1 set_port()", "missing argument(s) port"),
        ("add MyIngress.fwd dstAddr:1 set_port(port:512)", "does not fit in the 9 bits"),
        ("add MyIngress.fwd dstAddr:0x1*** NoAction()", "an exact key takes a plain number"),
        ("add MyIngress.fwd dstAddr:1 dstAddr:2 NoAction()", "given twice"),
        ("add ipv4_lpm dstAddr:1/33 NoAction()", "prefix length exceeds 32"),
        ("add rng port:20->10 NoAction()", "low end above high end"),
        ("setdefault nosuch NoAction()", "no table named"),
    ],
)
def test_bad_entries_raise_with_line(tmp_path, line, message):
    with pytest.raises(StfError) as info:
        run(tmp_path, "wait\n" + line + "\n")
    assert info.value.line == 2
    assert message in str(info.value)


def test_switch_error_becomes_stf_error_with_line(tmp_path):
    line = "add MyIngress.fwd dstAddr:1 NoAction()"
    with pytest.raises(StfError) as info:
        run(tmp_path, f"{line}\n{line}\n")
    assert info.value.line == 2
    assert "the switch refused" in str(info.value) and "ALREADY_EXISTS" in str(info.value)


def test_remove_all_clears_tables(tmp_path):
    result, sw = run(tmp_path, "add MyIngress.fwd dstAddr:1 NoAction()\nremove all\n")
    assert result.ok and sw.entries == []
    assert "MyIngress.fwd" in sw.cleared


# --- multicast, mirroring, externs -----------------------------------------------------------


def test_multicast_nodes_become_replicas(tmp_path):
    text = (
        "mc_mgrp_create 1113\n"
        "mc_node_create 400 7 6\n"  # handle 0; ports ascending as in bmv2's port bitmap
        "mc_node_create 401 8\n"  # handle 1
        "mc_node_associate 1113 1\n"
        "mc_node_associate 1113 0\n"
    )
    result, sw = run(tmp_path, text)
    assert result.ok
    assert sw.groups[1113] == [Replica(8, 401), Replica(6, 400), Replica(7, 400)]
    result, sw = run(tmp_path, text + "mc_node_update 0 5\nmc_node_dissociate 1113 1\n")
    assert sw.groups[1113] == [Replica(5, 400)]
    result, sw = run(tmp_path, text + "mc_mgrp_destroy 1113\n")
    assert 1113 not in sw.groups


def test_multicast_errors(tmp_path):
    with pytest.raises(StfError, match=r"t.stf:1: no multicast group 5"):
        run(tmp_path, "mc_node_associate 5 0\n")
    with pytest.raises(StfError, match=r":2: no multicast node with handle 0"):
        run(tmp_path, "mc_mgrp_create 5\nmc_node_associate 5 0\n")


def test_mirroring(tmp_path):
    result, sw = run(tmp_path, "mirroring_add 5 4\n")
    assert sw.sessions == {5: CloneSession(5, [Replica(4, 0)])}
    text = "mc_mgrp_create 2\nmirroring_add_mc 6 2\nmc_node_create 1 3\nmc_node_associate 2 0\n"
    result, sw = run(tmp_path, text)
    assert result.ok
    assert sw.sessions[6] == CloneSession(6, [Replica(3, 1)])  # follows the group's later changes
    result, sw = run(tmp_path, "mirroring_add 5 4\nmirroring_delete 5\n")
    assert sw.sessions == {}


def test_registers_counters_meters(tmp_path):
    text = (
        "register_write reg 2 0xff\n"
        "counter_write pkts 1 3 300\n"  # simple_switch_CLI: <index> <packets> <bytes>
        "meter_set_rates m 1 0.5:1000 2:3000\n"
    )
    result, sw = run(tmp_path, text)
    assert result.ok
    assert sw.registers == {("MyIngress.reg", 2): 0xFF}
    assert sw.counters == {("MyIngress.pkts", 1): (300, 3)}
    assert sw.meters == {("MyIngress.m", 1): (500_000, 1000, 2_000_000, 3000)}
    result, sw = run(tmp_path, "register_write reg 2 5\nregister_reset reg\n")
    assert sw.registers == {("MyIngress.reg", i): 0 for i in range(4)}
    with pytest.raises(StfError, match="does not fit in the 32 bits"):
        run(tmp_path, "register_write reg 0 0x100000000\n")


def test_check_counter(tmp_path):
    sw = FakeSwitch()
    sw.counters[("MyIngress.pkts", 3)] = (128, 2)
    assert run(tmp_path, "check_counter pkts(3) packets == 2\ncheck_counter pkts(3) bytes > 100\n", sw)[0].ok
    result, _ = run(tmp_path, "check_counter pkts(3) packets == 5\n", sw)
    assert not result.ok
    assert "packets is 2, expected == 5" in result.failures[0]
    assert run(tmp_path, "check_counter pkts(3)\n", sw)[0].ok  # no condition: read and log


def test_check_direct_counter_by_handle(tmp_path):
    text = "add tern 1 data.f1:0x01 NoAction() = A\ncheck_counter tern_ctr($A) packets == 10\n"
    result, sw = run(tmp_path, text)
    assert result.ok
    assert sw.direct_reads == [sw.entries[0]]
    with pytest.raises(StfError, match="no entry with handle 'B'"):
        run(tmp_path, "check_counter tern_ctr($B) packets == 1\n")


# --- command line --------------------------------------------------------------------------


@pytest.fixture
def fake_modules(monkeypatch):
    """TEMPORARY DEVELOPMENT AID: stand-ins for softswitch.compiler / softswitch.switch so the
    CLI's exit codes can be tested before they exist."""
    from softswitch.errors import P4Error

    compiler = types.ModuleType("softswitch.compiler")
    switch_mod = types.ModuleType("softswitch.switch")

    def compile_file(path, include_dirs=(), defines=None):
        if "bad" in str(path):
            raise P4Error("syntax error", str(path), 3, 7)
        return types.SimpleNamespace(info=make_info(), defines=defines, include_dirs=include_dirs)

    class Switch(FakeSwitch):
        def __init__(self, program, cpu_port=64):
            super().__init__()

    compiler.compile_file = compile_file
    switch_mod.Switch = Switch
    monkeypatch.setitem(sys.modules, "softswitch.compiler", compiler)
    monkeypatch.setitem(sys.modules, "softswitch.switch", switch_mod)


def test_cli_exit_codes(tmp_path, capsys, fake_modules):
    good = tmp_path / "good.stf"
    good.write_text("packet 1 aa\nexpect 1 aa\n")
    failing = tmp_path / "fail.stf"
    failing.write_text("packet 1 aa\nexpect 1 ab\n")
    broken = tmp_path / "broken.stf"
    broken.write_text("packet 1 aa\nbogus\n")
    prog = str(tmp_path / "p.p4")

    assert stf.main([prog, str(good), "-I", "inc", "-D", "X=1"]) == 0
    assert f"PASS {good}" in capsys.readouterr().out

    assert stf.main([prog, str(good), str(failing)]) == 1
    out = capsys.readouterr().out
    assert f"PASS {good}" in out and f"FAIL {failing}" in out and "^" in out

    assert stf.main([prog, str(broken)]) == 2
    assert f"{broken}:2: unknown command 'bogus'" in capsys.readouterr().err

    assert stf.main([str(tmp_path / "bad.p4"), str(good)]) == 2
    assert "bad.p4:3:7: error: syntax error" in capsys.readouterr().err
