"""Arrays of non-header element types (`bit<8>[4]`, p4-spec PR 1360): what the front end refuses,
each with one located line (tests/p4/features/arrays_of_bits.stf runs what it accepts)."""

from __future__ import annotations

import pytest

from p4compiler import P4Error, compile_text
from p4compiler.c_backend import emit_c

_PROGRAM = """#include <core.p4>
#include <v1model.p4>
header a_t { bit<8>[4] b; bit<8> i; }
struct headers_t { a_t a; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.a); transition accept; } }
control V(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    BODY
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.a); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("apply { bit<8>[2][2] z; }", "arrays of arrays (bit<8>[2][2]) are not supported"),
        ("apply { meta_t[2] z; }", "arrays of structs (meta_t[2]) are not supported"),
        ("apply { error[2] z; }", "arrays of error (error[2]) are not supported"),
        ("apply { bit<8>[0] z; }", "the size of bit<8>[0] must be a positive integer"),
        ("apply { hdr.a.i = hdr.a.b[4]; }", "index 4 out of bounds for bit<8>[4]"),
        ("apply { hdr.a.b.push_front(1); }", "bit<8>[4] have no method push_front"),
        ("apply { hdr.a.i = hdr.a.b.next; }", "next is only defined for header stacks"),
        ("apply { if (hdr.a.b < hdr.a.b) { hdr.a.i = 1; } }", "< needs integer operands, not bit<8>[4]"),
        ("apply { hdr.a.b[hdr.a.i][3:0] = 1; }", "a slice of an array element with a run-time index"),
        ("table t { key = { hdr.a.b : exact; } actions = { NoAction; } } apply { t.apply(); }",
         "table key of type bit<8>[4] is not supported"),
    ],
)
def test_refused_with_a_located_line(body: str, message: str) -> None:
    with pytest.raises(P4Error) as exc:
        compile_text(_PROGRAM.replace("BODY", body))
    text = str(exc.value)
    assert message in text
    assert text.startswith("<device config>:10:")  # the line of BODY
    assert "\n" not in text


def test_array_field_is_its_elements_bits_in_index_order() -> None:
    # element 0 is the first on the wire: the top bits of the header's 32 array bits
    cp = compile_text(_PROGRAM.replace("BODY", "apply { hdr.a.b[0] = 1; hdr.a.b[hdr.a.i] = 2; }"))
    (hdr_type,) = [t for t in cp.ir.types if getattr(t, "name", "").startswith("H_a_t")]
    assert [(n, getattr(t, "width", None)) for n, t in hdr_type.fields] == [("b", 32), ("i", 8)]
    emit_c(cp)  # the native back end takes it as well
