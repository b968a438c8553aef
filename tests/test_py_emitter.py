"""The Python back end's emitter (p4compiler.python_backend.emit): the Python the switch runs is
written from the lowered program (p4compiler.ir), the form the C back end also consumes.

The STF corpora run on it wherever they run the Python backend (tests/test_stf_corpus.py,
tests/test_innet_stf.py); here every whole program of the tree goes through it to a loadable
switch, and constructs whose emitted code has a shape of its own (labels as flags, parser loops,
sub-parsers) run through packets.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import pytest
from backends import allow_nonportable

from p4compiler.python_backend import compile_file
from softswitch.switch import Switch

ROOT = Path(__file__).resolve().parent.parent
P4_DIR = ROOT / "tests" / "p4"
PROGRAMS = sorted(
    os.path.relpath(p, ROOT)
    for pat in ("tests/p4/*/*.p4", "tests/p4/*.p4", "p4/*.p4", "p4/examples/*.p4", "bench/p4/*.p4")
    for p in glob.glob(str(ROOT / pat))
    if re.search(r"\)\s*main\s*;", Path(p).read_text())  # whole programs, not included pieces
)


@pytest.mark.parametrize("path", PROGRAMS)
def test_every_program_emits(path: str) -> None:
    cp = compile_file(str(ROOT / path), allow_nonportable=allow_nonportable(ROOT / path))
    assert cp.ir is not None and "def __build(RT):" in cp.source
    sw = Switch(cp)
    assert set(sw.tables) == {t.name for t in cp.info.tables}


SHAPES = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
header e_t { bit<8> v; }
struct headers_t { h_t h; e_t[3] s; }
struct meta_t { bit<8> m; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition select(hdr.h.b) { 0: accept; default: more; } }
    state more { pkt.extract(hdr.s.next); transition select(hdr.s.last.v) { 0: accept; default: more; } }
}
bit<8> pick(in bit<8> x) {
    if (x == 1) { return 10; }
    if (x == 2) { if (x != 3) { return 20; } }
    bit<8> y = x + 1;
    return y + 100;
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.StackOutOfBounds) { hdr.h.b = 0xee; return; }
        hdr.h.a = pick(hdr.h.a);
        if (hdr.h.a == 20) { return; }
        hdr.h.b = hdr.h.b + 1;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.s); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.mark.parametrize(("packet", "out"), [
    ("0100", "0a01"),  # return in the first if of the function: what follows does not run
    ("0200", "1400"),  # return from a nested if, then `return` in the control
    ("0500", "6a01"),  # no return taken: the statements after the guarded ones run
    ("0107050300", "0a08050300"),  # the parser loops over the stack until last.v == 0
    ("010705030409", "01ee05030409"),  # a fourth element: StackOutOfBounds, ingress sees it
])
def test_emitted_shapes(tmp_path: Path, packet: str, out: str) -> None:
    path = tmp_path / "shapes.p4"
    path.write_text(SHAPES)
    sw = Switch(compile_file(str(path)))
    assert sw.process_packet(1, bytes.fromhex(packet)) == [(0, bytes.fromhex(out))]
