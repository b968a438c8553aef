"""Direct type invocation (`Ctl.apply(...)`, tests/p4/spec/direct_apply.p4 runs it on both
backends) and extern instances passed to controls (tests/p4/spec/extern_forms.p4): the names the
instances get, and the located errors for what P4-16 or this switch refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4compiler.errors import P4Error
from p4compiler.python_backend import compile_file, compile_text

SPEC = Path(__file__).parent / "p4" / "spec"

TEMPLATE = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct hs { h_t h; }
struct m_t { }
parser P(packet_in pk, out hs h, inout m_t m, inout standard_metadata_t s) {
    state start { pk.extract(h.h); transition accept; } }
control VC(inout hs h, inout m_t m) { apply { } }
DECLS
control I(inout hs h, inout m_t m, inout standard_metadata_t s) {
    BODY
}
control E(inout hs h, inout m_t m, inout standard_metadata_t s) { apply { } }
control CC(inout hs h, inout m_t m) { apply { } }
control D(packet_out pk, in hs h) { apply { pk.emit(h.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _compile(decls: str, body: str):
    return compile_text(TEMPLATE.replace("DECLS", decls).replace("BODY", body), "prog.p4")


def test_each_call_site_is_an_instance_named_after_the_type() -> None:
    info = compile_file(str(SPEC / "direct_apply.p4")).info
    assert [t.name for t in info.tables] == ["MyIngress.Classify.t"]
    regs = [r.name for r in info.registers]
    assert regs == ["MyIngress.Counted.seen", "MyIngress.Counted_1.seen", "MyIngress.Counted_2.seen"]


def test_instances_of_a_control_applied_twice_get_their_own_names() -> None:
    prog = _compile(
        "control C(inout bit<8> v) { register<bit<8>>(1) r; apply { r.write(0, v); } }\n"
        "control W(inout hs h) { apply { C.apply(h.h.a); } }",
        "W() w1; W() w2; apply { w1.apply(h); w2.apply(h); C.apply(h.h.b); }",
    )
    assert [r.name for r in prog.info.registers] == ["I.w1.C.r", "I.w2.C.r", "I.C.r"]


def test_extern_instances_passed_to_controls_are_not_new_instances() -> None:
    info = compile_file(str(SPEC / "extern_forms.p4")).info
    names = [r.name for r in info.registers]
    assert names.count("MyIngress.local_reg") == 1 and "top_reg" in names
    assert not [n for n in names if ".store." in n or ".load_" in n]


@pytest.mark.parametrize(
    "decls, body, message, line",
    [
        ("control C(inout bit<8> v)(bit<8> k) { apply { v = k; } }", "apply { C.apply(h.h.a); }",
         "C has constructor parameters", 11),
        ("", "apply { h_t.apply(); }", "only a control or parser type can be applied directly", 11),
        ("control C(inout bit<8> v, register<bit<8>> r) { apply { r.write(0, v); } }",
         "counter(2, CounterType.packets) c; C() x; apply { x.apply(h.h.a, c); }",
         "r takes an instance of register<bit<8>>, not of counter", 11),
        ("control C(inout bit<8> v, register<bit<8>> r) { apply { r.write(0, v); } }",
         "register<bit<16>>(2) r; C() x; apply { x.apply(h.h.a, r); }",
         r"r takes an instance of register<bit<8>>, not of register<bit<16>>", 11),
        ("control C(inout bit<8> v)(register<bit<8>> r) { apply { r.write(0, v); } }",
         "C(h.h.a) x; apply { x.apply(h.h.a); }", "r takes an instance of register<bit<8>>", 11),
        ("control C(inout bit<8> v, in register<bit<8>> r) { apply { } }", "C() x; apply { }",
         "cannot have a direction", 9),
    ],
)
def test_refusals_are_located(decls: str, body: str, message: str, line: int) -> None:
    with pytest.raises(P4Error, match=message) as exc:
        _compile(decls, body)
    assert str(exc.value).startswith(f"prog.p4:{line}:"), str(exc.value)
