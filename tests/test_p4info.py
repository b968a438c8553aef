"""P4Info generation: p4c's ids and aliases, every object kind, text round trip, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2

from p4compiler import p4info as p4i
from p4compiler.errors import P4Error
from p4compiler.model import (
    ActionInfo,
    ActionParam,
    ActionProfileInfo,
    ActionRef,
    ControllerHeaderInfo,
    CounterInfo,
    DigestInfo,
    DirectCounterInfo,
    DirectMeterInfo,
    MatchField,
    MeterInfo,
    ProgramInfo,
    RegisterInfo,
    StructField,
    TableInfo,
    ValueSetInfo,
)
from p4compiler.python_backend import compile_file

P4_FILE = Path(__file__).parent / "p4" / "p4rt_basic.p4"


def tunnel_info() -> ProgramInfo:
    """The control-plane objects of the P4 tutorials' basic_tunnel exercise, whose P4Info as
    written by p4c is public: the ids asserted below are p4c's."""
    return ProgramInfo(
        tables=[
            TableInfo(
                "MyIngress.ipv4_lpm",
                [MatchField("hdr.ipv4.dstAddr", 32, "lpm", 1)],
                [
                    ActionRef("MyIngress.ipv4_forward"),
                    ActionRef("MyIngress.myTunnel_ingress"),
                    ActionRef("MyIngress.drop"),
                    ActionRef("NoAction"),
                ],
                1024,
                "NoAction",
            ),
            TableInfo(
                "MyIngress.myTunnel_exact",
                [MatchField("hdr.myTunnel.dst_id", 16, "exact", 1)],
                [
                    ActionRef("MyIngress.myTunnel_forward"),
                    ActionRef("MyIngress.myTunnel_egress"),
                    ActionRef("MyIngress.drop"),
                ],
                1024,
                "MyIngress.drop",
            ),
        ],
        actions=[
            ActionInfo("NoAction", [], annotations=['@noWarn("unused")']),
            ActionInfo("MyIngress.drop", []),
            ActionInfo("MyIngress.ipv4_forward", [ActionParam("dstAddr", 48, 1), ActionParam("port", 9, 2)]),
            ActionInfo("MyIngress.myTunnel_ingress", [ActionParam("dst_id", 16, 1)]),
            ActionInfo("MyIngress.myTunnel_forward", [ActionParam("port", 9, 1)]),
            ActionInfo(
                "MyIngress.myTunnel_egress", [ActionParam("dstAddr", 48, 1), ActionParam("port", 9, 2)]
            ),
        ],
        counters=[
            CounterInfo("MyIngress.ingressTunnelCounter", "BOTH", 65536),
            CounterInfo("MyIngress.egressTunnelCounter", "BOTH", 65536),
        ],
        controller_headers=[
            ControllerHeaderInfo("packet_out", "packet_out_header_t", [StructField("egress_port", 16)]),
            ControllerHeaderInfo("packet_in", "packet_in_header_t", [StructField("ingress_port", 16)]),
        ],
    )


def ids_by_name(msg: p4info_pb2.P4Info) -> dict[str, int]:
    out = {}
    for kind in ("tables", "actions", "counters", "controller_packet_metadata"):
        for obj in getattr(msg, kind):
            out[obj.preamble.name] = obj.preamble.id
    return out


def test_ids_and_aliases_match_p4c():
    msg = p4i.build_p4info(tunnel_info())
    assert ids_by_name(msg) == {
        "MyIngress.ipv4_lpm": 37375156,
        "MyIngress.myTunnel_exact": 35862311,
        "NoAction": 21257015,
        "MyIngress.drop": 25652968,
        "MyIngress.ipv4_forward": 28792405,
        "MyIngress.myTunnel_ingress": 24181246,
        "MyIngress.myTunnel_forward": 27454791,
        "MyIngress.myTunnel_egress": 33029817,
        "MyIngress.ingressTunnelCounter": 315557958,
        "MyIngress.egressTunnelCounter": 312374841,
        # controller headers hash the header *type* name (ids from p4c-generated test data)
        "packet_out": 76689799,
        "packet_in": 81826293,
    }
    assert [t.preamble.alias for t in msg.tables] == ["ipv4_lpm", "myTunnel_exact"]
    assert msg.actions[0].preamble.annotations == ['@noWarn("unused")']
    assert [r.id for r in msg.tables[0].action_refs] == [28792405, 24181246, 25652968, 21257015]
    assert msg.pkg_info.arch == "v1model"
    pin = msg.controller_packet_metadata[1]
    assert (pin.preamble.name, pin.preamble.alias) == ("packet_in", "packet_in")
    assert pin.preamble.annotations == ['@controller_header("packet_in")']
    assert [(m.id, m.name, m.bitwidth) for m in pin.metadata] == [(1, "ingress_port", 16)]


def test_jenkins_hash_known_values():
    assert p4i.jenkins_one_at_a_time(b"") == 0
    assert p4i.jenkins_one_at_a_time(b"a") == 0xCA2E9442  # the published one-at-a-time value
    assert p4i.jenkins_one_at_a_time(b"The quick brown fox jumps over the lazy dog") == 0x519E91F5


def full_info() -> ProgramInfo:
    """One of every control-plane object kind."""
    return ProgramInfo(
        tables=[
            TableInfo(
                "ingress.t_exact",
                [
                    MatchField("hdr.a.f", 8, "exact", 1, annotations=['@brief("the f field")']),
                    MatchField("meta.sel", 16, "selector", 2),
                    MatchField("meta.r", 16, "range", 3),
                    MatchField("meta.o", 4, "optional", 4),
                    MatchField("meta.x", 12, "my_match_kind", 5),
                ],
                [
                    ActionRef("ingress.set"),
                    ActionRef("ingress.drop", scope="DEFAULT_ONLY"),
                    ActionRef("ingress.only_entries", scope="TABLE_ONLY", annotations=["@tableonly"]),
                ],
                512,
                "ingress.drop",
                default_action_const=True,
                is_const_table=True,
                direct_counter="ingress.dc",
                direct_meter="ingress.dm",
                implementation="ingress.prof",
                idle_timeout=True,
                id=7,
                annotations=['@name("t_exact")', "@id(7)", '@description("a table")', "@my_note"],
            ),
            TableInfo(
                "egress.drop", [], [ActionRef("egress.drop")], 16, "egress.drop", has_initial_entries=True
            ),
        ],
        actions=[
            ActionInfo("ingress.set", [ActionParam("v", 8, 1), ActionParam("w", 9, 5)]),
            ActionInfo("ingress.drop", []),
            ActionInfo("egress.drop", [], id=0x01000042),
            ActionInfo("ingress.only_entries", []),
        ],
        registers=[RegisterInfo("ingress.reg", 48, 128)],
        counters=[CounterInfo("ingress.cnt", "PACKETS", 32)],
        direct_counters=[DirectCounterInfo("ingress.dc", "BYTES", "ingress.t_exact")],
        meters=[MeterInfo("ingress.m", "BYTES", 8)],
        direct_meters=[DirectMeterInfo("ingress.dm", "PACKETS", "ingress.t_exact")],
        digests=[DigestInfo("learn_t", [StructField("mac", 48), StructField("port", 9)])],
        controller_headers=[ControllerHeaderInfo("packet_in", "cpu_in_t", [StructField("port", 9)])],
        value_sets=[ValueSetInfo("parser.pvs", 4, [MatchField("", 16, "exact", 1)])],
        action_profiles=[ActionProfileInfo("ingress.prof", ["ingress.t_exact"], True, 64)],
    )


def test_every_kind_gets_its_prefix_and_fields():
    msg = p4i.build_p4info(full_info())
    prefix = {
        "tables": 0x02,
        "actions": 0x01,
        "value_sets": 0x03,
        "controller_packet_metadata": 0x04,
        "action_profiles": 0x11,
        "counters": 0x12,
        "direct_counters": 0x13,
        "meters": 0x14,
        "direct_meters": 0x15,
        "registers": 0x16,
        "digests": 0x17,
    }
    all_ids = []
    for kind, p in prefix.items():
        objs = list(getattr(msg, kind))
        assert objs, kind
        for o in objs:
            assert o.preamble.id >> 24 == p, (kind, hex(o.preamble.id))
            all_ids.append(o.preamble.id)
    assert len(all_ids) == len(set(all_ids))

    t = msg.tables[0]
    assert t.preamble.id == 0x02000007  # @id(7) gets the table prefix
    assert t.preamble.annotations == ["@my_note"]  # @name/@id dropped, doc separately
    assert t.preamble.doc.description == "a table"
    mf = {m.name: m for m in t.match_fields}
    assert "meta.sel" not in mf  # selector keys are not control-plane match fields
    assert mf["hdr.a.f"].doc.brief == "the f field"
    assert mf["meta.r"].match_type == p4info_pb2.MatchField.RANGE
    assert mf["meta.o"].match_type == p4info_pb2.MatchField.OPTIONAL
    assert mf["meta.x"].other_match_type == "my_match_kind" and mf["meta.x"].match_type == 0
    refs = {r.id: r for r in t.action_refs}
    by_name = {a.preamble.name: a.preamble.id for a in msg.actions}
    assert refs[by_name["ingress.drop"]].scope == p4info_pb2.ActionRef.DEFAULT_ONLY
    assert list(refs[by_name["ingress.drop"]].annotations) == ["@defaultonly"]
    assert list(refs[by_name["ingress.only_entries"]].annotations) == ["@tableonly"]
    assert refs[by_name["ingress.set"]].scope == p4info_pb2.ActionRef.TABLE_AND_DEFAULT
    assert t.const_default_action_id == by_name["ingress.drop"]
    assert t.is_const_table and t.has_initial_entries
    assert t.size == 512
    assert t.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL
    assert t.implementation_id == msg.action_profiles[0].preamble.id
    assert list(t.direct_resource_ids) == [
        msg.direct_counters[0].preamble.id,
        msg.direct_meters[0].preamble.id,
    ]
    assert msg.tables[1].has_initial_entries and not msg.tables[1].is_const_table
    assert by_name["egress.drop"] == 0x01000042  # an @id that already has the right prefix
    assert [(p.id, p.name, p.bitwidth) for p in msg.actions[0].params] == [(1, "v", 8), (5, "w", 9)]

    assert msg.registers[0].type_spec.bitstring.bit.bitwidth == 48 and msg.registers[0].size == 128
    assert msg.counters[0].spec.unit == p4info_pb2.CounterSpec.PACKETS and msg.counters[0].size == 32
    assert msg.direct_counters[0].spec.unit == p4info_pb2.CounterSpec.BYTES
    assert msg.direct_counters[0].direct_table_id == t.preamble.id
    assert msg.meters[0].spec.unit == p4info_pb2.MeterSpec.BYTES and msg.meters[0].size == 8
    assert msg.direct_meters[0].direct_table_id == t.preamble.id
    d = msg.digests[0]
    assert d.preamble.name == "learn_t" and d.type_spec.struct.name == "learn_t"
    members = msg.type_info.structs["learn_t"].members
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in members] == [("mac", 48), ("port", 9)]
    assert msg.value_sets[0].size == 4 and msg.value_sets[0].match[0].bitwidth == 16
    ap = msg.action_profiles[0]
    assert ap.with_selector and ap.size == 64 and list(ap.table_ids) == [t.preamble.id]
    # the same name in two controls keeps enough components to stay unique
    aliases = {a.preamble.name: a.preamble.alias for a in msg.actions}
    assert aliases["ingress.drop"] == "ingress.drop" and aliases["egress.drop"] == "egress.drop"
    assert aliases["ingress.set"] == "set"


def test_stable_and_order_independent():
    a = p4i.build_p4info(full_info())
    b = p4i.build_p4info(full_info())
    assert a.SerializeToString() == b.SerializeToString()
    shuffled = full_info()
    shuffled.actions.reverse()
    shuffled.tables.reverse()
    c = p4i.build_p4info(shuffled)
    assert {x.preamble.name: x.preamble.id for x in c.actions} == {
        x.preamble.name: x.preamble.id for x in a.actions
    }
    assert {x.preamble.name: x.preamble.id for x in c.tables} == {
        x.preamble.name: x.preamble.id for x in a.tables
    }


def _colliding_names() -> tuple[str, str]:
    seen: dict[int, str] = {}
    i = 0
    while True:
        name = f"c.t{i}"
        h = p4i.jenkins_one_at_a_time(name.encode()) & 0xFFFFFF
        if h in seen:
            return seen[h], name
        seen[h] = name
        i += 1


def test_hash_collisions_probe_in_sorted_order():
    n1, n2 = _colliding_names()
    first, second = sorted([n1, n2])
    info = ProgramInfo(actions=[ActionInfo(second, []), ActionInfo(first, [])])
    ids = {a.preamble.name: a.preamble.id for a in p4i.build_p4info(info).actions}
    base = p4i.jenkins_one_at_a_time(first.encode())
    assert ids[first] == 0x01000000 | (base & 0xFFFFFF)
    assert ids[second] == 0x01000000 | ((base + 1) & 0xFFFFFF)


def test_explicit_id_wins_and_hashed_ids_probe_around_it():
    name = "ingress.a"
    hashed = 0x01000000 | (p4i.jenkins_one_at_a_time(name.encode()) & 0xFFFFFF)
    info = ProgramInfo(actions=[ActionInfo(name, []), ActionInfo("ingress.b", [], id=hashed & 0xFFFFFF)])
    ids = {a.preamble.name: a.preamble.id for a in p4i.build_p4info(info).actions}
    assert ids["ingress.b"] == hashed
    assert ids[name] == hashed + 1


def test_bad_explicit_ids():
    wrong_prefix = ProgramInfo(actions=[ActionInfo("a", [], id=0x02000001)])
    with pytest.raises(P4Error, match="wrong 8-bit prefix"):
        p4i.build_p4info(wrong_prefix)
    dup = ProgramInfo(actions=[ActionInfo("a", [], id=5), ActionInfo("b", [], id=0x01000005)])
    with pytest.raises(P4Error, match="multiple declarations"):
        p4i.build_p4info(dup)


def test_text_round_trip():
    msg = p4i.build_p4info(full_info())
    text = p4i.p4info_to_text(msg)
    assert 'name: "ingress.t_exact"' in text and "type_info {" in text
    assert p4i.p4info_from_text(text) == msg
    assert p4info_pb2.P4Info.FromString(p4i.serialize(msg, "binary")) == msg
    assert json.loads(p4i.serialize(msg, "json"))["tables"][0]["preamble"]["name"] == "ingress.t_exact"


# --- CLI ---------------------------------------------------------------------------------


DEFINES_P4 = """
#include <core.p4>
#include <v1model.p4>
#include "hdrs.p4"
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t { key = { hdr.h.f: exact; } actions = { fwd; NoAction; } size = TSIZE; }
    apply { t.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.mark.parametrize("fmt", ["text", "binary", "json"])
def test_cli_writes_each_format(tmp_path, fmt):
    """The real compiler behind the CLI: -I finds the included file, -D sets the table size."""
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "hdrs.p4").write_text("header h_t { bit<8> f; }\nstruct headers_t { h_t h; }\n")
    prog = tmp_path / "prog.p4"
    prog.write_text(DEFINES_P4)
    out = tmp_path / f"out.{fmt}"
    assert p4i.main([str(prog), "--out", str(out), "--format", fmt, "-I", str(inc), "-DTSIZE=77"]) == 0
    data = out.read_bytes()
    if fmt == "text":
        msg = p4i.p4info_from_text(data.decode())
    elif fmt == "binary":
        msg = p4info_pb2.P4Info.FromString(data)
    else:
        from google.protobuf import json_format

        msg = json_format.Parse(data.decode(), p4info_pb2.P4Info())
    (table,) = msg.tables
    assert (table.preamble.name, table.size) == ("I.t", 77)
    assert [m.name for m in table.match_fields] == ["hdr.h.f"]
    assert msg == p4i.build_p4info(compile_file(str(prog), (str(inc),), {"TSIZE": "77"}).info)


def test_cli_p4rt_basic_to_stdout(capsysbinary):
    assert p4i.main([str(P4_FILE), "--out", "-"]) == 0
    msg = p4i.p4info_from_text(capsysbinary.readouterr().out.decode())
    assert ids_by_name(msg)["MyIngress.ipv4_lpm"] == 37375156  # p4c's id for this name


def test_cli_compile_error_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <core.p4>\n\ncontrol c() { apply { x = ; } }\n")
    out = tmp_path / "x.txt"
    assert p4i.main([str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3:" in err and "error:" in err
    assert not out.exists()


def test_real_compiler_p4info():
    msg = p4i.build_p4info(compile_file(str(P4_FILE)).info)
    tables = {t.preamble.name: t for t in msg.tables}
    assert tables["MyIngress.ipv4_lpm"].preamble.id == 37375156
    assert [m.name for m in tables["MyIngress.ipv4_lpm"].match_fields] == [
        "standard_metadata.ingress_port",
        "hdr.ipv4.dstAddr",
    ]
    acl = tables["MyIngress.acl"]
    assert [m.match_type for m in acl.match_fields] == [p4info_pb2.MatchField.TERNARY] * 2
    assert len(acl.direct_resource_ids) == 1
    assert {c.preamble.name for c in msg.counters} == {"MyIngress.port_counter"}
    assert {r.preamble.name for r in msg.registers} == {"MyIngress.last_seen"}
    assert {c.preamble.name for c in msg.controller_packet_metadata} == {"packet_in", "packet_out"}
    assert {a.preamble.name for a in msg.actions} >= {"NoAction", "MyIngress.drop", "MyIngress.ipv4_forward"}
    assert {d.preamble.name for d in msg.digests} == {"learn_t"}


def test_actions_called_from_apply_blocks_are_listed_as_p4c_does():
    """p4c's P4Info also lists actions that no table names but an apply block calls directly
    (five in p4/innet.p4); actions called only from other actions, and unused ones, are not."""
    msg = p4i.build_p4info(compile_file(str(Path(__file__).parent.parent / "p4" / "innet.p4")).info)
    names = {a.preamble.name for a in msg.actions}
    assert {"InnetIngress.aggregation.reject", "InnetIngress.aggregation.multicast_result",
            "InnetIngress.aggregation.reply", "InnetIngress.aggregation.to_parent",
            "InnetIngress.replay.reflect"} <= names
    assert len(names) == 16, sorted(names)


DIGEST_LIST_P4 = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
struct headers_t { eth_t eth; }
struct learn_t { bit<48> mac; bit<9> port; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { digest<learn_t>(1, { hdr.eth.src, sm.ingress_port }); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_digest_of_a_list_expression():
    """digest<T>(r, {a, b}): the list expression becomes a T (as p4c does), so learn_t is a digest."""
    from p4compiler.python_backend import compile_text

    msg = p4i.build_p4info(compile_text(DIGEST_LIST_P4, "digest_list.p4").info)
    (d,) = msg.digests
    assert d.preamble.name == "learn_t"
    assert [m.name for m in msg.type_info.structs["learn_t"].members] == ["mac", "port"]
    # and the switch sends it with the list's values in the struct's fields
    from softswitch.switch import Switch

    sw = Switch(compile_text(DIGEST_LIST_P4, "digest_list.p4"))
    got = []
    sw.add_digest_handler(lambda name, msgs: got.append((name, msgs)))
    sw.process_packet(5, bytes.fromhex("000000000001" + "0a0b0c0d0e0f" + "88b5"))
    assert got == [("learn_t", [{"mac": 0x0A0B0C0D0E0F, "port": 5}])]


def test_toplevel_extern_instances_are_named_without_a_control_prefix():
    """Extern instances declared at the top level (as p4c's P4-14 translations write them) are
    called by their own name in P4Info, as p4c names them: p4c's issue1097-bmv2 test (a top-level
    `register<bit<8>>(2) r;`) lists register "r", alias "r", id 369183714."""
    src = Path(__file__).parent / "p4" / "features" / "toplevel_externs.p4"
    msg = p4i.build_p4info(compile_file(str(src)).info)
    assert [(r.preamble.name, r.preamble.alias, r.size) for r in msg.registers] == [("seen", "seen", 4)]
    assert [(c.preamble.name, c.preamble.alias) for c in msg.counters] == [("hits", "hits")]
    (dc,) = msg.direct_counters
    (t,) = msg.tables
    assert dc.preamble.name == "t_hits" and dc.direct_table_id == t.preamble.id
    assert t.preamble.name == "MyIngress.t" and list(t.direct_resource_ids) == [dc.preamble.id]
    info = ProgramInfo(registers=[RegisterInfo("r", 8, 2)])
    assert p4i.build_p4info(info).registers[0].preamble.id == 369183714
