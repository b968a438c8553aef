"""p4compiler.lower: the IR expresses everything the Python back end runs; C limits are refused
by the C back end (p4compiler.c_backend.check) with one located line, not by the lowering."""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import pytest
from backends import allow_nonportable

from p4compiler import ir
from p4compiler.c_backend import NativeUnsupported, emit_c
from p4compiler.lower import lower_program
from p4compiler.python_backend import compile_file

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = sorted(
    os.path.relpath(p, ROOT)
    for pat in ("tests/p4/*/*.p4", "tests/p4/*.p4", "p4/*.p4", "p4/examples/*.p4", "bench/p4/*.p4")
    for p in glob.glob(str(ROOT / pat))
    if re.search(r"\)\s*main\s*;", Path(p).read_text())  # whole programs, not included pieces
)
LOCATED = re.compile(r"^[^\s:]+:\d+:\d+: error: the native backend does not support .+ yet$")


@pytest.mark.parametrize("path", PROGRAMS)
def test_every_program_lowers(path: str) -> None:
    prog = lower_program(compile_file(str(ROOT / path), allow_nonportable=allow_nonportable(ROOT / path)))
    assert prog.parser.states and set(prog.controls) == {
        "verify_checksum", "ingress", "egress", "compute_checksum", "deparser"
    }


HEAD = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<W> w; }
header v_t { bit<8> len; varbit<32> opt; }
header x_t { bit<8> x; }
header y_t { bit<16> y; }
header_union u_t { x_t x; y_t y; }
struct headers_t { h_t h; v_t v; v_t v2; u_t u; }
struct meta_t { bit<32> hv; bit<8> n; }
"""
TAIL = """
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""
PLAIN_PARSER = """
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
"""
PLAIN_INGRESS = """
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
"""

CASES = {
    # name: (parser, ingress, IR node the lowering must produce, construct the C back end refuses,
    # None: the C back end compiles it)
    "wide": (PLAIN_PARSER, """
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.h.w = hdr.h.w + 1; }
}""", ir.BinOp, None),
    "wide_range_key": (PLAIN_PARSER, """
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    table t { key = { hdr.h.w: range; } actions = { NoAction; } }
    apply { t.apply(); }
}""", ir.TableApply, None),
    "sub_parser": ("""
parser Sub(packet_in pkt, inout headers_t hdr, inout bit<8> n) {
    state start { pkt.extract(hdr.u.x); n = hdr.u.x.x; transition accept; }
}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    state start { pkt.extract(hdr.h); sub.apply(pkt, hdr, meta.n); transition accept; }
}""", PLAIN_INGRESS, ir.SubParser, None),
    "value_set_in_tuple": ("""
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<bit<8>>(4) vs;
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a, sm.ingress_port) { (vs, 1): accept; default: reject; }
    }
}""", PLAIN_INGRESS, ir.KsValueSet, None),
    "for_loops": (PLAIN_PARSER, """
bool small(in bit<8> v) { if (v > 9) { return false; } return true; }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        for (bit<8> i = 0; i < hdr.h.a && small(i); i = i + 1) {
            switch (i) { 3: { break; } default: { continue; } }
        }
        for (bit<8> v in hdr.h.a .. 255) { meta.n = v; }
    }
}""", ir.Loop, None),
    "varbit_assign": (PLAIN_PARSER, """
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.v2.opt = hdr.v.opt; }
}""", ir.Assign, None),
    "union_in_hash": (PLAIN_PARSER, """
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hash(meta.hv, HashAlgorithm.crc32, 32w0, { hdr.u }, 32w0xffffffff); }
}""", ir.ExternCall, None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_construct_lowers_and_c_refuses_only_its_limits(name: str, tmp_path: Path) -> None:
    parser, ingress, node, refused = CASES[name]
    head = HEAD.replace("bit<W>", "bit<128>" if name.startswith("wide") else "bit<8>")
    src = tmp_path / f"{name}.p4"
    src.write_text(head + parser + ingress + TAIL)
    cp = compile_file(str(src))
    prog = lower_program(cp)
    everything = [*prog.parser.states, *[s for body in prog.controls.values() for s in body]]
    assert any(isinstance(n, node) for n in ir.walk(everything))
    if refused is None:
        emit_c(cp)
        return
    with pytest.raises(NativeUnsupported) as ei:
        emit_c(cp)
    msg = str(ei.value)
    assert LOCATED.match(msg) and refused in msg, msg


def test_union_in_field_list_flattens_each_member_when_valid(tmp_path: Path) -> None:
    _, ingress, _, _ = CASES["union_in_hash"]
    head = HEAD.replace("bit<W>", "bit<8>")
    src = tmp_path / "u.p4"
    src.write_text(head + PLAIN_PARSER + ingress + TAIL)
    prog = lower_program(compile_file(str(src)))
    call = next(n for n in ir.walk(prog.controls["ingress"]) if isinstance(n, ir.ExternCall))
    assert [it.width for it in call.fields] == [8, 16]
    assert all(isinstance(it.valid, ir.IsValid) for it in call.fields)


COPIES = {
    # ingress (and what it applies) -> the argument copies the lowering keeps (P4-16 6.8: copy-in/
    # copy-out; a header/struct/stack argument is worked on in place unless the call can tell)
    "unaliased_action": ("""
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action f(inout h_t p, out x_t q) { p.a = p.a + 1; q.setValid(); q.x = p.a; }
    apply { f(hdr.h, hdr.u.x); }
}""", 0),
    "action_writes_argument_directly": ("""
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action f(inout h_t p) { p.a = 1; hdr.h.a = 2; }
    apply { f(hdr.h); }
}""", 1),
    "action_reads_argument_directly": ("""
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action f(out h_t p) { p = hdr.h; }
    apply { f(hdr.h); }
}""", 1),
    "two_arguments_alias": ("""
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action f(inout h_t p, inout bit<8> a) { p.a = 1; a = 2; }
    apply { f(hdr.h, hdr.h.a); }
}""", 1),
    "later_argument_writes_it": ("""
bit<8> bump(inout bit<8> n) { n = n + 1; return n; }
void f(inout h_t p, in bit<8> v) { p.a = v; }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { f(hdr.h, bump(hdr.h.a)); }
}""", 1),
    "sub_control_whole_structs": ("""
control Sub(inout headers_t h, inout meta_t m, inout standard_metadata_t s) {
    apply { h.h.a = m.n; mark_to_drop(); s.egress_spec = 2; }
}
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    apply { sub.apply(hdr, meta, sm); }
}""", 0),
    "exit_in_nested_action": ("""
control Sub(inout headers_t h) {
    action a(inout h_t p) { p.a = 1; exit; }
    apply { a(h.h); }
}
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    apply { sub.apply(hdr); }
}""", 0),
    "sub_control_aliased": ("""
control Sub(inout headers_t h, inout h_t x) { apply { x.a = 1; h.h.a = 2; } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    apply { sub.apply(hdr, hdr.h); }
}""", 2),
}


@pytest.mark.parametrize("name", sorted(COPIES))
def test_composite_arguments_are_copied_only_where_the_callee_can_tell(name: str, tmp_path: Path) -> None:
    ingress, copies = COPIES[name]
    src = tmp_path / f"{name}.p4"
    src.write_text(HEAD.replace("bit<W>", "bit<8>") + PLAIN_PARSER + ingress + TAIL)
    cp = compile_file(str(src))
    body = lower_program(cp).controls["ingress"]
    declared = [n.var.name for n in ir.walk(body) if isinstance(n, ir.Declare) and n.var.name[:3] == "cp_"]
    used = {n.name for n in ir.walk(body) if isinstance(n, ir.Var) and n.name[:3] == "cp_"}
    assert len(declared) == copies
    assert used == set(declared)  # an argument worked on in place leaves no trace of its copy
    emit_c(cp)
