"""NativeSwitch's glue to the C runtime (softswitch/native_switch.py): what crosses it must behave
as on the Python backend. No cap of its own on a packet's outputs, the same bound on E2E
clone-of-clone loops, the ingress port checked before it reaches C, a table's implicit default
(NoAction), digests delivered when made."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from p4compiler.python_backend import compile_file, compile_text
from softswitch.api import CloneSession, Exact, Replica, SwitchError, TableEntry, check_ingress_port
from softswitch.native_switch import NativeSwitch
from softswitch.switch import Switch

ROOT = Path(__file__).resolve().parent.parent
MULTICAST = ROOT / "tests" / "p4" / "features" / "multicast.p4"
P4RT_BASIC = ROOT / "tests" / "p4" / "p4rt_basic.p4"


def _both(program) -> list[Switch]:
    return [Switch(program, seed=1), NativeSwitch(program, seed=1)]


def test_a_packet_may_have_more_outputs_than_any_fixed_buffer() -> None:
    """2000 replicas of a 3000-byte frame (6 MB of output): every one comes back, as on the
    Python backend (the glue used to have room for 1024 outputs and 4 MiB)."""
    program = compile_file(str(MULTICAST))
    frame = bytes.fromhex("000000000001 000000000002 88b5 0007 0000 0000 00".replace(" ", "")) + bytes(3000)
    results = []
    for sw in _both(program):
        sw.mc_group_set(7, [Replica(i % 500, i) for i in range(2000)])
        results.append(sw.process_packet(1, frame))
    py, native = results
    assert len(native) == 2000 and native == py
    assert native[1999][0] == 1999 % 500 and len(native[1999][1]) == len(frame)


CLONE_LOOP = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> itype; bit<16> n; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.h.itype = (bit<8>)sm.instance_type; hdr.h.n = hdr.h.n + 1; clone(CloneType.E2E, 5); }
}
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""


@pytest.mark.parametrize("replicas", [1, 3])
def test_clone_of_clone_ends_after_the_same_number_of_copies_on_both_backends(replicas: int) -> None:
    """Every egress clones (E2E) again: 1024 copies per input packet, counted in copies (a
    session of 3 replicas makes 3 per clone), then no more, on both backends (the Python
    backend used to loop forever)."""
    program = compile_text(CLONE_LOOP, "clone_loop.p4")
    results = []
    for sw in _both(program):
        sw.clone_session_set(CloneSession(5, [Replica(2 + i, i) for i in range(replicas)]))
        results.append(sw.process_packet(1, b"\x00\x00\x00"))
    py, native = results
    assert native == py
    assert len(native) == 1 + (1024 // replicas) * replicas
    assert native[0] == (1, b"\x00\x00\x01") and native[-1][1][0] == 2  # E2E clone

@pytest.mark.parametrize("port", [-1, 512, 1 << 32, True])
def test_ingress_port_must_fit_9_bits_on_both_backends(port: int) -> None:
    """Before it reaches C (where a uint32_t would take 512 and cffi refuse -1 with an
    OverflowError), and on the Python backend, which ran the program with any number."""
    for sw in _both(compile_file(str(MULTICAST))):
        with pytest.raises(SwitchError, match=r"ingress port .* out of range 0\.\.511 \(bit<9>\)"):
            sw.process_packet(port, bytes(21))
        sw.process_packet(511, bytes(21))
    with pytest.raises(SwitchError, match=r"out of range 0\.\.511"):
        check_ingress_port(port)


IMPLICIT_DEFAULT = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> v; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set(bit<8> v, bit<9> port) { hdr.h.v = v; sm.egress_spec = port; }
    table t { key = { hdr.h.k: exact; } actions = { set; } }
    apply { sm.egress_spec = 2; t.apply(); }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""


def test_table_without_default_action_runs_noaction_on_a_miss() -> None:
    """P4-16: a table with no default_action has NoAction as its default; the miss must not run
    `set` (the table's only action) with zero arguments."""
    program = compile_text(IMPLICIT_DEFAULT, "implicit_default.p4")
    for sw in _both(program):
        assert sw.process_packet(1, b"\x05\x77") == [(2, b"\x05\x77")], sw.backend
        sw.insert_entry(TableEntry("Ing.t", {"hdr.h.k": Exact(5)}, "Ing.set", {"v": 0x11, "port": 3}))
        assert sw.process_packet(1, b"\x05\x77") == [(3, b"\x05\x11")], sw.backend
        assert sw.process_packet(1, b"\x06\x77") == [(2, b"\x06\x77")], sw.backend


def test_digests_are_delivered_when_made_not_at_the_next_packet_in_poll(monkeypatch) -> None:
    """With the data path started, a digest reaches its handler when it is made; it used to wait
    for the poll's timeout. The poll period is stretched to 1 s here, and each of ten digests,
    made at different points of it, must arrive within half of it (by the timeout alone, all ten
    would with a chance of about 1 in 1000)."""
    import softswitch.native_switch as ns

    monkeypatch.setattr(ns, "POLL_MS", 1000)
    sw = NativeSwitch(compile_file(str(P4RT_BASIC)), seed=1)
    arrived = threading.Event()

    def handler(name: str, data: list[dict[str, int]]) -> None:
        arrived.set()

    sw.add_digest_handler(handler)
    sw.start([])
    try:
        frame = bytes.fromhex("0a0b0c0d0e0f" "000000000001" "88b5") + bytes(46)
        outs = sw.ffi.new("ss_out[]", 4)
        buf = sw.ffi.new("uint8_t[]", 4096)
        for i in range(10):
            time.sleep(0.13 * i % 1.0)  # spread over the poll period
            arrived.clear()
            with sw.lock:  # straight into C: process_packet would deliver the digest itself
                assert sw.lib.ss_process(sw._sw, 3, frame, len(frame), outs, 4, buf, 4096) >= 0
            assert arrived.wait(0.5), f"digest {i} not delivered within half a poll period"
    finally:
        sw.close()


BANKED = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> idx; bit<16> a; bit<16> b; bit<8> c; bit<48> d; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<16>>(4) ra;   // ra, rb, rc: one bank (declared together, same size)
    register<bit<16>>(4) rb;
    register<bit<8>>(4) rc;
    register<bit<48>>(2) rd;   // another size: alone
    apply {
        sm.egress_spec = 1;
        bit<16> x; bit<16> y; bit<8> z; bit<48> w;
        ra.read(x, (bit<32>)hdr.h.idx);
        rb.read(y, (bit<32>)hdr.h.idx);
        rc.read(z, (bit<32>)hdr.h.idx);
        rd.read(w, (bit<32>)hdr.h.idx);
        ra.write((bit<32>)hdr.h.idx, x + hdr.h.a);
        rb.write((bit<32>)hdr.h.idx, y + hdr.h.b);
        rc.write((bit<32>)hdr.h.idx, z + hdr.h.c);
        rd.write((bit<32>)hdr.h.idx, w + hdr.h.d);
        hdr.h.a = x; hdr.h.b = y; hdr.h.c = z; hdr.h.d = w;
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""


def test_registers_stored_as_a_bank_stay_separate_registers() -> None:
    """Registers declared together with one size share an interleaved allocation in the runtime
    (c_backend's register_layout, ss_define_register_bank; the generated code reads the cells at
    constant offsets in the bank's rows): each is still its own register, to the program
    (read-modify-write per packet, out-of-range indexes, widths) and to the control plane, as on
    the Python backend."""
    from softswitch.native_switch import _register_banks

    program = compile_text(BANKED)
    nat = NativeSwitch(program, seed=1)
    banks = _register_banks(nat.manifest["registers"])
    names = [[r["name"].split(".")[-1] for r in regs] for _, regs in banks]
    assert names == [["ra", "rb", "rc"], ["rd"]]
    ref = Switch(program, seed=1)
    for sw in (ref, nat):
        sw.register_write("Ing.rb", 3, 0xBEEF)
    for idx in (0, 1, 3, 3, 4, 2, 1, 200):  # 4, 200: out of range for all; 2, 3: out of range for rd
        frame = bytes([idx]) + (0x1234 + idx).to_bytes(2, "big") + (0xF00D).to_bytes(2, "big") \
            + bytes([0xF0 + idx % 16]) + (0xABCDEF012345 + idx).to_bytes(6, "big")
        assert nat.process_packet(1, frame) == ref.process_packet(1, frame), idx
    for name, size in (("Ing.ra", 4), ("Ing.rb", 4), ("Ing.rc", 4), ("Ing.rd", 2)):
        assert [nat.register_read(name, i) for i in range(size)] \
            == [ref.register_read(name, i) for i in range(size)], name
    assert nat.register_read("Ing.rb", 3) == (0xBEEF + 2 * 0xF00D) & 0xFFFF
    assert nat.register_read("Ing.rc", 1) == (2 * 0xF1) & 0xFF


def test_a_program_whose_registers_are_laid_out_otherwise_is_refused(monkeypatch) -> None:
    """The generated code reads register cells at the offsets of the compiler's layout, as
    constants: a loader that defined the registers any other way (here each alone, not as the
    bank the manifest names) would have it read and write out of bounds. ss_switch_load says
    which register differs and loads nothing."""
    import softswitch.native_switch as ns

    program = compile_text(BANKED)
    layout = [(r["bank"], r["member"], r["members"]) for r in NativeSwitch(program).manifest["registers"]]
    assert layout == [(0, 0, 3), (0, 1, 3), (0, 2, 3), (3, 0, 1)]
    monkeypatch.setattr(ns, "_register_banks", lambda regs: [(i, [r]) for i, r in enumerate(regs)])
    with pytest.raises(SwitchError, match=r"register 0: defined with 4 cells of 16 bits \(stride 1\), "
                                          r"the program was compiled for 4 cells of 16 bits, member 0 of 3"):
        NativeSwitch(program)


GROW_N = 64
GROW = """#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
header c_t { bit<8> n; }
header big_t { bit<4096> a; bit<4096> b; }
struct headers_t { eth_t eth; c_t c; big_t[%d] s; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.c); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
%s
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.c); pkt.emit(hdr.s); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
""" % (GROW_N, "\n".join(f"        if (hdr.c.n > {i}) {{ hdr.s[{i}].setValid(); hdr.s[{i}].a = {i + 1}; "
                         f"hdr.s[{i}].b = (bit<4096>)hdr.c.n; }}" for i in range(GROW_N)))


def test_a_frame_may_grow_by_any_amount_up_to_the_largest_frame() -> None:
    """The deparser adds n headers of 1024 bytes each (a = i + 1, b = n, 512 bytes each, big
    endian) to a 22-byte frame. The native backend used to drop a frame grown by more than 4096
    bytes (a fixed headroom) that the Python backend emits; now both emit every frame of up to
    65535 bytes (SS_MAX_FRAME, softswitch.switch.MAX_FRAME) and drop a longer one alike (the
    native backend counts it in too_long); a longer input frame is refused by both."""
    program = compile_text(GROW, "grow.p4")
    head = bytes(12) + b"\x88\xb5"
    for sw in _both(program):
        name = type(sw).__name__
        for n in (0, 1, 5, 63):  # 5: 5120 bytes more (over the old headroom); 63: 64534 bytes
            frame = head + bytes([n]) + b"payload"
            want = head + bytes([n]) + b"".join(
                (i + 1).to_bytes(512, "big") + n.to_bytes(512, "big") for i in range(n)) + b"payload"
            assert sw.process_packet(0, frame) == [(1, want)], (name, n)
        assert sw.process_packet(0, head + bytes([64]) + b"payload") == [], name  # 65551 bytes
        if isinstance(sw, NativeSwitch):
            assert sw.stats()["too_long"] == 1
        with pytest.raises(SwitchError, match="65536 bytes refused"):
            sw.process_packet(0, bytes(65536))
