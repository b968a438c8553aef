"""packet_in.lookahead<T>() (P4-16 v1.2.4 section 12.8.3): what the type check refuses (one
located line), and the fixed-width types tests/p4/features/parser_lookahead_types does not
cover (a serializable enum, a `type`, a signed field wider than 64 bits), on both backends."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from backends import BACKENDS, run_stf

from p4compiler.errors import P4Error
from p4compiler.python_backend import compile_file

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
header tag_t { bit<8> a; }
header out_t { bit<8> se; bit<8> nt; bit<72> w; bit<8> sb; bit<8> zb; }
enum bit<8> SE { A = 1, B = 2 }
type bit<8> nt_t;
struct ws_t { bit<1> x; int<70> y; bool z; }
DECL
struct headers_t { eth_t eth; out_t o; }
struct meta_t { bit<8> se; bit<8> nt; bit<72> w; bit<8> sb; bool z; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        BODY
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.o.setValid();
        hdr.o.se = meta.se;
        hdr.o.nt = meta.nt;
        hdr.o.w = meta.w;
        hdr.o.sb = meta.sb;
        hdr.o.zb = meta.z ? 8w1 : 8w0;
        sm.egress_spec = 9w1;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.o); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
BODY_LINE = PROGRAM.splitlines().index("        BODY") + 1
COL = len("        x = pkt.lookahead<") + 1  # where the type argument starts


def program(decl: str = "", body: str = "") -> str:
    return PROGRAM.replace("DECL", decl).replace("        BODY", body)


@pytest.mark.parametrize(
    "decl, ty, words",
    [
        ("header_union u_t { tag_t t; }", "u_t", "u_t is a header_union"),
        ("", "tag_t[2]", "tag_t[2] is a header stack"),
        ("header vb_t { bit<8> n; varbit<16> v; }", "vb_t", "vb_t.v is a varbit"),
        ("header vb_t { bit<8> n; varbit<16> v; } struct s_t { bit<8> a; vb_t h; }", "s_t",
         "s_t.h.v is a varbit"),
        ("struct s_t { bit<8> a; tag_t[2] st; }", "s_t", "s_t.st is a header stack"),
        ("", "int", "int is an integer of unknown width"),
        ("", "error", "error has no fixed width"),
        ("enum E { X, Y }", "E", "E has no fixed width"),
        ("", "tuple<bit<8>, bit<8>>", "has no fixed width"),
    ],
)
def test_lookahead_of_a_type_without_fixed_width_is_refused_at_the_type(
        tmp_path: Path, decl: str, ty: str, words: str) -> None:
    path = tmp_path / "prog.p4"
    path.write_text(program(decl, f"        {ty} x;\n        x = pkt.lookahead<{ty}>();"))
    with pytest.raises(P4Error) as ei:
        compile_file(str(path))
    text = str(ei.value)
    assert "\n" not in text.strip(), text
    m = re.match(r".*prog\.p4:(\d+):(\d+): error: (.*)", text)
    assert m, text
    assert (int(m.group(1)), int(m.group(2))) == (BODY_LINE + 1, COL), text
    assert f"lookahead<{ty}> is not supported" in m.group(3) and words in m.group(3), text


LOOKS = """
        SE e = pkt.lookahead<SE>();
        meta.se = (bit<8>)e;
        nt_t n = pkt.lookahead<nt_t>();
        meta.nt = (bit<8>)n;
        int<72> w = pkt.lookahead<int<72>>();
        meta.w = (bit<72>)(w >> 8);
        ws_t s = pkt.lookahead<ws_t>();
        meta.sb = (bit<8>)(s.y >> 69);
        meta.z = s.z;"""

# After Ethernet: c1 02 03 04 05 06 07 08 09 (9 bytes, 72 bits).
# SE and nt_t: c1. int<72>: c10203040506070809 is negative; >> 8 fills with ones:
# ff c1 02 03 04 05 06 07 08. ws_t: x = bit 0 (1), y = bits 1..70, its sign bit 1 (c1 = 1100 0001),
# so y >> 69 = -1 -> ff; z = bit 71 = last bit of 09 = 1. Nothing is extracted: payload as sent.
# With 8 bytes only, the first two lookaheads work and int<72> is PacketTooShort (meta stays 0
# from there on).
STF = """
packet 0 000000000001 000000000002 88b5 c1 0203040506070809
expect 1 000000000001 000000000002 88b5 c1 c1 ffc1020304050607 08 ff 01 c1 0203040506070809 $
packet 0 000000000001 000000000002 88b5 c1 02030405060708
expect 1 000000000001 000000000002 88b5 c1 c1 000000000000000000 00 00 c1 02030405060708 $
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_lookahead_of_serializable_enum_type_and_wide_signed_fields(tmp_path: Path, backend: str) -> None:
    p4 = tmp_path / "look.p4"
    p4.write_text(program(body=LOOKS))
    stf_path = tmp_path / "look.stf"
    stf_path.write_text(STF)
    result = run_stf(p4, stf_path, backend)
    assert result.ok, "\n".join(result.failures)
