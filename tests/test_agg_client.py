"""AggregationClient's refusals, checked before any packet is sent (the client is bound to
loopback; its allreduce over a real switch is tested in test_aggregation_netns.py)."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from host_agents.agg_client import AggregationClient, AggregationTimeout, AllreduceStats, _Slot
from host_agents.agg_protocol import (
    DEFAULT_VALUES_PER_PACKET,
    FLAG_RETX,
    HEADER_BYTES,
    OP_RESULT,
    OP_STALE,
    AggHeaderFields,
)
from host_agents.aggio import AggIOUnavailable

REPO = Path(__file__).resolve().parent.parent

SWITCH = ("127.0.0.1", 9)  # never contacted: every call below is refused first


def client(**kwargs: object) -> AggregationClient:
    args = {"job_id": 1, "worker_id": 0, "num_workers": 4, "num_slots": 8, "bind": ("127.0.0.1", 0)}
    args.update(kwargs)
    return AggregationClient(SWITCH, **args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"worker_id": 32}, "worker id 32 is outside 0..31"),
        ({"num_workers": 0}, "num_workers 0 must be 1..255"),
        ({"num_slots": 0}, "num_slots must be at least 1"),
        ({"threshold": 3}, "asynchronous job needs fixed_exponent"),
        ({"fixed_exponent": 121}, "fixed_exponent 121 must be -120..120"),
        ({"values_per_packet": 48}, "48 values per packet: p4/innet.p4 is built for 32, 64, 256"),
    ],
)
def test_constructor_refusals(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        client(**kwargs)


def test_bad_tensors_are_refused() -> None:
    with client() as c:
        with pytest.raises(TypeError, match="takes a torch.Tensor, not list"):
            c.allreduce([1.0, 2.0])  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="NaN or infinity"):
            c.allreduce(torch.tensor([1.0, float("nan")]))
        with pytest.raises(ValueError, match="NaN or infinity"):
            c.allreduce_array(np.array([float("inf")], np.float32))
        assert c.totals.packets_sent == 0


def test_allreduce_worker_does_not_import_torch() -> None:
    """python -m host_agents.allreduce moves NumPy arrays: torch's ~2 s import stays out of every
    worker process the tests and bench.aggregation start."""
    code = "import sys, host_agents.allreduce; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_asynchronous_job_refuses_a_second_tensor_size() -> None:
    with client(threshold=3, fixed_exponent=4) as c:
        c._async_size = 100  # as after a first call of 100 elements
        with pytest.raises(ValueError, match="first sent 100 elements, now 50"):
            c.allreduce(torch.zeros(50))
        assert c.totals.packets_sent == 0


def test_async_slot_rejoins_at_the_round_the_switch_holds() -> None:
    """After STALE a slot takes part in the held round with this tensor's chunk for that round's
    position in the call, not in the next call (whose first round would restart a cell the in-step
    workers are still filling)."""
    with client(threshold=3, fixed_exponent=1, num_slots=4) as c:
        c._async_size = 10 * DEFAULT_VALUES_PER_PACKET  # 10 chunks on 4 slots: 3 rounds per call
        slot = _Slot(1, rounds=[5, 9], round=1)  # call 1, sent chunk 1 in round 1; chunks 5, 9 to come
        stats = AllreduceStats()
        c._on_stale(slot, 8, 3, stats)  # the switch holds round 8: call 3, second position
        assert (slot.round, slot.rounds, stats.stale) == (7, [5, 9], 1)
        slot = _Slot(3, rounds=[7, -1], round=1)
        c._on_stale(slot, 9, 3, AllreduceStats())  # call 3's last round: slot 3 pads there
        assert (slot.round, slot.rounds) == (8, [-1])
        slot = _Slot(2, rounds=[6], round=1)
        c._on_stale(slot, 3, 3, AllreduceStats())  # same call, last position: chunk 10 -> padding
        assert (slot.round, slot.rounds) == (2, [-1])


def test_synchronous_stale_is_an_error() -> None:
    with client() as c:
        with pytest.raises(RuntimeError, match="round counters disagree"):
            c._on_stale(_Slot(0, round=1), 3, 1, AllreduceStats())


class _ScriptedSwitch(threading.Thread):
    """A one-member synchronous job's switch on loopback: answers each DATA with its RESULT (the
    values it carried, next_exp echoed), drops the first copy of every 7th packet, sends every
    5th result twice and answers every 11th packet with a stray RESULT for another round first."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.stop = threading.Event()
        self.seen: dict[tuple[int, int], int] = {}  # (slot, round) -> copies received
        self.added = 0  # contributions summed: the first copy of each (slot, round) that arrives
        self._summed: set[tuple[int, int]] = set()
        self.lengths: set[int] = set()  # UDP payload lengths received

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            try:
                data, addr = self.sock.recvfrom(2048)
            except TimeoutError:
                continue
            h = AggHeaderFields.unpack(data)
            self.lengths.add(len(data))
            key = (h.slot, h.round)
            copies = self.seen[key] = self.seen.get(key, 0) + 1
            n += 1
            if copies == 1 and n % 7 == 0:
                continue  # lost on the way in
            if key not in self._summed:
                self._summed.add(key)
                self.added += h.count
            elif h.flags != FLAG_RETX:
                raise AssertionError(f"a second copy of slot {h.slot} round {h.round} without RETX")
            h.op, h.count, h.bitmap, h.flags = OP_RESULT, h.count, 1 if h.count else 0, 0
            reply = h.pack() + bytes(data[HEADER_BYTES:])
            if n % 11 == 0:
                stray = AggHeaderFields(**{**{f: getattr(h, f) for f in h.__slots__}, "round": h.round + 7})
                self.sock.sendto(stray.pack() + bytes(data[HEADER_BYTES:]), addr)
            for _ in range(2 if n % 5 == 0 else 1):
                self.sock.sendto(reply, addr)


@pytest.mark.parametrize("values_per_packet", [DEFAULT_VALUES_PER_PACKET, 256])
@pytest.mark.parametrize("path", ["engine", "numpy", "per-packet"])
def test_loss_duplicates_and_strays_leave_the_exact_result(path: str, values_per_packet: int) -> None:
    """Over a scripted switch that loses, duplicates and misdirects replies, every path (the C
    protocol loop of synchronous jobs, the NumPy batched path, one socket call per packet) returns
    the input (one worker: the sum is the tensor itself, within the fixed-point bound); the
    batched ones retransmit what was lost, once per loss at least, and send runs of datagrams as
    UDP GSO messages that the kernel cuts into the same datagrams (the lengths the switch sees).
    At the default width and at 256 values per packet."""
    sw = _ScriptedSwitch()
    sw.start()
    batched = path != "per-packet"
    try:
        x = torch.from_numpy(np.random.default_rng(3).standard_normal(5003).astype(np.float32) * 50)
        with AggregationClient(
            sw.sock.getsockname(), 1, 0, 1, 16, bind=("127.0.0.1", 0), timeout=0.05, batched=batched,
            values_per_packet=values_per_packet,
        ) as c:
            assert c.batched is batched
            c.use_engine = path == "engine"
            outs = [c.allreduce(x) for _ in range(3)]
            chunks = -(-x.numel() // values_per_packet)
            assert sw.lengths == {HEADER_BYTES, HEADER_BYTES + 4 * values_per_packet}
            assert c.last_info is not None and (c.last_info.count == 1).all()
            assert c.totals.retransmissions > 0
            if batched:  # loopback takes UDP GSO sends: runs of equal datagrams went out as one
                assert c._bio.gso[0] == 1
            # a bootstrap round in the first call only: the next two predict its exponents
            assert c.slots[0].round == 1 + 3 * -(-chunks // 16) and c.totals.redone == 0
    finally:
        sw.stop.set()
        sw.join()
    assert torch.equal(outs[1], outs[2])  # the same predicted exponents
    for y in outs:
        assert torch.allclose(y, x, atol=1e-5, rtol=0)
    assert sw.added == 3 * chunks  # each chunk's contribution counted once


@pytest.mark.parametrize("fixed_exponent", [None, 8])
def test_c_protocol_loop_and_numpy_path_agree_to_the_bit(fixed_exponent: int | None) -> None:
    """The C loop (aggc_run) and the NumPy batched path quantize, descale and count alike: the
    same tensors through the same lossy scripted switch give the same bits, the same chunk
    info and the same round counters; both agreed exponents and a fixed one."""
    rng = np.random.default_rng(11)
    xs = [torch.from_numpy((rng.standard_normal(3001) * 10.0 ** rng.integers(-3, 3, 3001)).astype(np.float32))
          for _ in range(3)]
    xs[1][:700] = 0.0  # all-zero chunks: exponent 0, scale 1
    got = {}
    for engine in (True, False):
        sw = _ScriptedSwitch()
        sw.start()
        try:
            with AggregationClient(sw.sock.getsockname(), 1, 0, 3, 8, bind=("127.0.0.1", 0), timeout=0.05,
                                   fixed_exponent=fixed_exponent) as c:  # fmt: skip
                c.use_engine = engine
                outs = []
                for x in xs:
                    outs.append(c.allreduce(x))
                    info = c.last_info
                got[engine] = (outs, info, [s.round for s in c.slots], c.totals.packets_received,
                               c.totals.redone)
        finally:
            sw.stop.set()
            sw.join()
    (a, ia, ra, pa, da), (b, ib, rb, pb, db) = got[True], got[False]
    for ya, yb in zip(a, b, strict=True):
        assert torch.equal(ya, yb)
    assert ra == rb and pa > 0 and pb > 0
    # the third call's first chunks were all zero in the second: predicted 0, they redo
    assert da == db == (8 if fixed_exponent is None else 0)
    for f in ("count", "bitmap", "version_lo", "version_hi"):
        assert np.array_equal(getattr(ia, f), getattr(ib, f)), f


def test_c_protocol_loop_stale_round_is_an_error() -> None:
    """A synchronous worker whose round counter disagrees with the switch's (a STALE reply for
    its slot) fails with the same error on the C path as on the NumPy one."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(5)

    def stale_switch() -> None:
        data, addr = sock.recvfrom(2048)
        h = AggHeaderFields.unpack(data)
        h.op, h.round = OP_STALE, h.round + 3
        sock.sendto(h.pack(), addr)

    t = threading.Thread(target=stale_switch, daemon=True)
    t.start()
    try:
        with AggregationClient(sock.getsockname(), 1, 0, 1, 4, bind=("127.0.0.1", 0), timeout=0.05) as c:
            assert c.batched and c.use_engine
            with pytest.raises(RuntimeError, match="holds round 4 of slot 0, this worker is at round 1"):
                c.allreduce(torch.ones(10))
    finally:
        t.join()
        sock.close()


def test_fallback_to_per_packet_io_warns_once(monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    import host_agents.agg_client as ac

    def unavailable(*_: object) -> None:
        raise AggIOUnavailable("no C compiler found")

    monkeypatch.setattr(ac, "BatchSocket", unavailable)
    monkeypatch.setattr(ac, "_warned_fallback", False)
    with caplog.at_level(logging.WARNING, logger="host_agents.agg_client"):
        with client() as a, client() as b:
            assert not a.batched and not b.batched
    assert [r.getMessage() for r in caplog.records] == [
        "batched aggregation I/O unavailable (no C compiler found): one socket call per packet"
    ]
    with pytest.raises(RuntimeError, match="batched I/O was asked for"):
        client(batched=True)


@pytest.mark.parametrize("batched", [True, False])
def test_no_switch_gives_up_after_timeout_times_tries(batched: bool) -> None:
    """Nobody answers: both paths give up naming the slot and round once timeout x max_tries
    has passed since the first try (the batched path retries sooner, on its adaptive timeout)."""
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    try:
        with AggregationClient(
            silent.getsockname(), 1, 0, 2, 4, bind=("127.0.0.1", 0), timeout=0.02, max_tries=5,
            batched=batched,
        ) as c:
            t0 = time.monotonic()
            with pytest.raises(AggregationTimeout, match="no result for slot 0 round 1") as e:
                c.allreduce(torch.ones(100))
            assert f"check values per packet: this worker sends {DEFAULT_VALUES_PER_PACKET}" in str(e.value)
            assert 0.1 <= time.monotonic() - t0 < 2.0
            assert c.last_stats.packets_sent == 0  # no result: the call's stats are not published
    finally:
        silent.close()


def test_c_block_exponents_match_numpy() -> None:
    """aggc_exponents (one pass of C) gives agg_protocol.block_exponents' exponents, including
    all-zero rows, subnormal and near-limit values, and refuses what it refuses."""
    from host_agents.agg_protocol import block_exponents

    rng = np.random.default_rng(5)
    blocks = (rng.standard_normal((300, 64)) * 10.0 ** rng.integers(-40, 38, (300, 1))).astype(np.float32)
    blocks[3] = 0.0
    blocks[4, :] = 0.0
    blocks[4, 7] = -1e-45  # subnormal: biased exponent clamped to 1
    blocks[5, 9] = -(2.0**126) * (1 - 2**-24)  # the largest value with an exponent (254)
    blocks[6] = 0.0
    blocks[6, 0] = 2.0**-3  # a power of two: 2**-3 < 2**-2, biased 126
    with client() as c:
        assert c.batched
        got = c._block_exponents(blocks)
        want = block_exponents(blocks)
        assert got.tolist() == want.tolist() and got[3] == 0 and got[4] == 1 and got[5] == 254
        assert got[6] == 126
        for bad, message in ((np.nan, "NaN or infinity"), (-np.inf, "NaN or infinity"),
                             (2.0**126, "2\\*\\*126 or more")):
            b = blocks.copy()
            b[100, 3] = bad
            with pytest.raises(ValueError, match=message):
                c._block_exponents(b)
            c.use_engine = False
        with pytest.raises(ValueError, match="NaN or infinity"):
            c.allreduce(torch.tensor([1.0, float("inf")]))
        assert c.totals.packets_sent == 0 and c.version == 0


def test_c_value_codec_matches_numpy_to_the_bit() -> None:
    """aggc_encode / aggc_decode (the packet value loops of aggc_run, vectorized in float where
    the scale allows) give NumPy's quantization exactly: round half to even, clipping at both
    int32 bounds, zeros, subnormals, every width up to and past the stack arrays, and scales
    outside float's normal range (the double fallback)."""
    rng = np.random.default_rng(17)
    with client() as c, np.errstate(over="ignore"):  # inputs at the ends of float's range
        assert c.batched
        ffi, lib = c._bio._io.ffi, c._bio._lib
        for n in (1, 7, 64, 256, 352, 1024, 1100):
            for e in (-140, -126, -100, -20, 0, 1, 20, 29, 31, 40, 126, 127, 140):
                scale = 2.0**e
                x = (rng.standard_normal(n) * 2.0 ** rng.integers(-30, 30, n) / scale).astype(np.float32)
                ties = rng.integers(-(2**24), 2**24, n) + 0.5  # exact halves at this scale
                x[::3] = (ties[::3] / scale).astype(np.float32)
                x[1::11] = np.float32(2.0**31 / scale)  # clips up
                x[2::13] = np.float32(-(2.0**31) / scale)  # the lowest int32, exactly
                x[4::17] = np.float32(-(2.0**33) / scale)  # clips down
                x[5::19] = 0.0
                x[6::23] = -0.0
                x[7::29] = np.float32(1e-45)  # subnormal input
                x[8::31] = np.float32(3e38)  # the float product overflows to infinity: clips up
                x = np.nan_to_num(x, nan=0.0, posinf=3e38, neginf=-3e38).astype(np.float32)
                want = np.clip(np.rint(x.astype(np.float64) * scale), -(2**31), 2**31 - 1).astype(">i4")
                out = np.zeros(4 * n, np.uint8)
                lib.aggc_encode(ffi.cast("uint8_t *", out.ctypes.data), ffi.cast("float *", x.ctypes.data),
                                n, scale)  # fmt: skip
                assert out.tobytes() == want.tobytes(), (n, e)
                back = np.zeros(n, np.float32)
                lib.aggc_decode(ffi.cast("float *", back.ctypes.data), ffi.cast("uint8_t *", out.ctypes.data),
                                n, 1.0 / scale)  # fmt: skip
                expect = (want.astype(np.float64) / scale).astype(np.float32)
                assert back.tobytes() == expect.tobytes(), (n, e)


def test_a_shorter_tensor_of_as_many_chunks_is_padded_with_zeros() -> None:
    """allreduce_array keeps its padded buffer from call to call: a tensor one value shorter but
    of the same chunk count must not carry the last call's value in the padding (over a scripted
    one-member switch the result is the input itself)."""
    sw = _ScriptedSwitch()
    sw.start()
    try:
        with AggregationClient(sw.sock.getsockname(), 1, 0, 1, 4, bind=("127.0.0.1", 0), timeout=0.05) as c:
            long = np.full(3 * DEFAULT_VALUES_PER_PACKET, 5.0, np.float32)
            assert np.array_equal(c.allreduce_array(long), long)
            short = long[:-1]
            got = c.allreduce_array(short)
            assert got.shape == short.shape and np.array_equal(got, short)
            assert c._blocks is not None and c._blocks[-1, -1] == 0.0  # not the last call's 5.0
            assert np.array_equal(long, np.full_like(long, 5.0))  # the caller's array untouched
    finally:
        sw.stop.set()
        sw.join()

