"""NativeSwitch's glue to the C runtime (softswitch/native_switch.py): what crosses it must behave
as on the Python backend. No cap of its own on a packet's outputs, digests delivered when made."""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path

from p4compiler.python_backend import compile_file
from softswitch.api import Replica
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



def test_digests_are_delivered_when_made_not_at_the_next_packet_in_poll() -> None:
    """With the data path started, a digest reaches its handler within milliseconds; it used
    to wait for the packet-in poll's 100 ms timeout."""
    sw = NativeSwitch(compile_file(str(P4RT_BASIC)), seed=1)
    got: list[float] = []
    arrived = threading.Event()

    def handler(name: str, data: list[dict[str, int]]) -> None:
        got.append(time.monotonic())
        arrived.set()

    sw.add_digest_handler(handler)
    sw.start([])
    try:
        frame = bytes.fromhex("0a0b0c0d0e0f" "000000000001" "88b5") + bytes(46)
        outs = sw.ffi.new("ss_out[]", 4)
        buf = sw.ffi.new("uint8_t[]", 4096)
        latencies = []
        for i in range(10):
            time.sleep(0.013 * i % 0.1)  # spread over the poll period
            arrived.clear()
            with sw.lock:  # straight into C: process_packet would deliver the digest itself
                t0 = time.monotonic()
                assert sw.lib.ss_process(sw._sw, 3, frame, len(frame), outs, 4, buf, 4096) >= 0
            assert arrived.wait(5), "no digest delivered"
            latencies.append(got[-1] - t0)
        assert statistics.median(latencies) < 0.02, latencies
    finally:
        sw.close()
