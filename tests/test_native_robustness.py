"""Bad input never crashes or wedges the native switch: 100,000+ frames of 0 to 65535 bytes,
truncated headers and garbage on every port of p4/innet.p4, then a valid packet must still be
forwarded exactly as before. Under `make test` the sanitizer run (test_native_sanitizers.py)
repeats this with AddressSanitizer + UndefinedBehaviorSanitizer in the C code.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from p4compiler.python_backend import compile_file
from softswitch import stf
from softswitch.native_switch import NativeSwitch
from softswitch.switch import Switch

ROOT = Path(__file__).resolve().parent.parent
INNET = ROOT / "p4" / "innet.p4"
FORWARDING_STF = ROOT / "tests" / "p4" / "innet" / "forwarding.stf"
N_FRAMES = 100_000


def _forwarded_frame(setup: list[stf.StfCommand]) -> tuple[int, bytes, list[tuple[int, bytes]]]:
    """The first packet of forwarding.stf that the Python backend (the reference) forwards, and
    what it sends."""
    ref = Switch(compile_file(str(INNET)), seed=1)
    stf.run_stf_commands(ref, setup)
    for c in stf.parse_stf(FORWARDING_STF.read_text(), str(FORWARDING_STF)):
        if isinstance(c, stf.PacketCommand):
            out = ref.process_packet(c.port, bytes(c.data))
            if out:
                return c.port, bytes(c.data), out
    raise AssertionError("forwarding.stf has no packet that is forwarded")


@pytest.mark.slow
def test_garbage_flood_then_valid_packet_forwarded() -> None:
    sw = NativeSwitch(compile_file(str(INNET)), seed=1)
    setup = [c for c in stf.parse_stf(FORWARDING_STF.read_text(), str(FORWARDING_STF))
             if not isinstance(c, (stf.PacketCommand, stf.ExpectCommand, stf.CheckCounterCommand))]
    stf.run_stf_commands(sw, setup)
    in_port, frame, expected = _forwarded_frame(setup)
    before = sw.process_packet(in_port, frame)
    assert before == expected

    rng = random.Random(2026)
    templates = [frame, frame[:14], frame[:20], frame[:34], frame[:42]]
    sizes = [0, 1, 13, 14, 15, 33, 34, 41, 42, 60, 64, 1500, 9000, 65535]
    for i in range(N_FRAMES):
        kind = i % 4
        if kind == 0:  # every size of interest, random bytes
            data = rng.randbytes(sizes[i // 4 % len(sizes)] if i % 40 else rng.randint(0, 65535))
        elif kind == 1:  # a truncated valid frame
            data = frame[: rng.randint(0, len(frame))]
        elif kind == 2:  # a valid prefix with garbage after it
            t = rng.choice(templates)
            data = t + rng.randbytes(rng.randint(0, 200))
        else:  # a valid frame with flipped bytes
            b = bytearray(frame)
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] = rng.getrandbits(8)
            data = bytes(b)
        sw.process_packet(rng.randrange(0, 512), data)

    after = sw.process_packet(in_port, frame)
    assert after == before
    stats = sw.stats()
    assert stats["packets"] >= N_FRAMES
