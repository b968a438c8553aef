"""Allreduce through the switch: ``AggregationClient.allreduce(tensor)`` returns the sum of the
tensor over the job's workers, aggregated packet by packet in p4/innet.p4
(``allreduce_array`` does the same for a NumPy array, without importing torch).

The tensor is cut into chunks of ``values_per_packet`` values (the width the switch's program was
compiled with: 64 by default, docs/protocol.md); chunk c travels in slot c % W of the job (W = the
job's slots = this host's window of outstanding packets), one round of the slot per chunk.
Floats become int32 with a block exponent per chunk that all workers share (docs/protocol.md,
"Scaling"): synchronous jobs agree on it through the switch, which keeps the max of the
exponent each worker announces for the slot's next round; asynchronous jobs use a fixed
exponent (gradients are clipped to it) so that a late or missing worker never leaves the
others with a scale they cannot know. Lost packets are retransmitted after a timeout.

Three paths with the same semantics. Synchronous jobs run the whole protocol loop in C
(host_agents/aggio.c, ``aggc_run``: quantize, pack, sendmmsg/recvmmsg, match, descale,
retransmit on a timeout that follows the measured round trip); Python only computes the block
exponents. Asynchronous jobs (and ``use_engine = False``) take the NumPy batched path: each
slot's state in arrays, a window of packets packed into a table and moved with one system call.
The per-packet path (one socket call per packet, fixed timeout) is the fallback when the C
helper cannot be built, and ``batched=False`` asks for it.
"""

from __future__ import annotations

import logging
import math
import os
import select
import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from host_agents.agg_protocol import (
    AGG_UDP_PORT,
    DEFAULT_VALUES_PER_PACKET,
    EXP_BIAS,
    EXP_REDO,
    FLAG_RETX,
    FRAME_OVERHEAD,
    HEADER_BYTES,
    HEADER_STRUCT,
    MAX_WORKERS,
    OP_DATA,
    OP_RESULT,
    OP_STALE,
    VALUES_DTYPE,
    AggFormat,
    block_exponents,
    headroom_bits,
    predicted_exponents,
    scale_for,
)
from host_agents.aggio import AggIOUnavailable, BatchSocket

if TYPE_CHECKING:  # torch is imported by allreduce() when called: array users need not load it
    import torch

log = logging.getLogger(__name__)

NOT_FINITE = "the tensor holds NaN or infinity; it cannot be aggregated in fixed point"

# Floor of the adaptive retransmission timeout. A retransmission resends a whole window at once,
# and on a loaded host a worker (this one, or a peer of a synchronous job) is often descheduled
# for a few milliseconds: with a 2 ms floor the 2-core bench machine resent ~8 packets per call
# for nothing, with 10 ms none.
MIN_RTO = 0.010
_warned_fallback = False


class AggregationTimeout(TimeoutError):
    """A slot got no result after every retransmission: the switch, the job or a worker is gone,
    or the hosts and the switch disagree on the values per packet."""


@dataclass
class AllreduceStats:
    """What one allreduce call did (also accumulated over calls in ``AggregationClient.totals``)."""

    packets_sent: int = 0
    packets_received: int = 0
    retransmissions: int = 0
    stale: int = 0
    redone: int = 0  # first rounds on a predicted exponent that a chunk did not fit: run again
    bytes_sent: int = 0  # Ethernet frames, as on the wire (without preamble/FCS)
    bytes_received: int = 0
    seconds: float = 0.0

    def add(self, other: AllreduceStats) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class ChunkInfo:
    """Per-chunk metadata of the last result (asynchronous jobs weight gradients with it)."""

    count: np.ndarray  # worker gradients summed into each chunk (0: chunk missing)
    bitmap: np.ndarray  # which workers those were
    version_lo: np.ndarray  # oldest model version among them
    version_hi: np.ndarray  # newest model version among them


def _unwrap(reference: int, wrapped: int) -> int:
    """The 32-bit round nearest ``reference`` whose low 16 bits are ``wrapped``."""
    delta = (wrapped - reference) & 0xFFFF
    return reference + (delta - 0x10000 if delta >= 0x8000 else delta)


@dataclass
class _Slot:
    index: int
    rounds: list = field(default_factory=list)  # [(chunk or -1 for bootstrap, ...)] still to run
    round: int = 0  # 32-bit count of rounds this slot has used (wire: low 16 bits)
    packet: bytes = b""  # the outstanding packet
    sent_at: float = 0.0
    tries: int = 0
    chunk: int = -1  # chunk of the outstanding round (-1: bootstrap or padding)
    predicting: bool = False  # the outstanding round is the first, on a predicted exponent


class AggregationClient:
    """One worker of one aggregation job.

    ``switch`` is the (IP, port) the switch's aggregation service answers on (any address routed
    through the switch; the switch intercepts UDP port 47000). ``bind`` is this host's address;
    its port must be the UDP port the job's member entry names. ``num_workers`` is the number of
    members (it sets the int32 headroom); ``num_slots`` the job's slot count; ``threshold`` < the
    members makes the job asynchronous and requires ``fixed_exponent``. ``timeout`` is the wait
    before a retransmission (fixed; on the batched path the largest); a slot gives up
    ``timeout * max_tries`` after its first try. ``batched``: None batches when it can, True
    insists, False never does. ``values_per_packet`` must be the width the switch's P4 program was
    compiled with (AGG_VALUES_PER_PACKET): the switch drops packets of another length as
    malformed, and the client then times out. ``predict_exponent`` (synchronous jobs with an
    agreed exponent): from the second call with the same tensor size on, the first round of
    each slot goes out on the exponent the last call agreed for its chunk plus a margin, instead
    of after a header-only bootstrap round (docs/protocol.md); every worker of a job must set it
    alike.
    """

    def __init__(
        self,
        switch: tuple[str, int],
        job_id: int,
        worker_id: int,
        num_workers: int,
        num_slots: int,
        bind: tuple[str, int] = ("0.0.0.0", 0),
        threshold: int | None = None,
        fixed_exponent: int | None = None,
        timeout: float = 0.2,
        max_tries: int = 50,
        batched: bool | None = None,
        values_per_packet: int = DEFAULT_VALUES_PER_PACKET,
        predict_exponent: bool = True,
    ) -> None:
        self.format = AggFormat(values_per_packet)  # ValueError for a width the switch cannot have
        if not 0 <= worker_id < MAX_WORKERS:
            raise ValueError(f"worker id {worker_id} is outside 0..{MAX_WORKERS - 1}")
        if not 1 <= num_workers <= 255:
            raise ValueError(f"num_workers {num_workers} must be 1..255")
        if num_slots < 1:
            raise ValueError("num_slots must be at least 1")
        self.asynchronous = threshold is not None and threshold < num_workers
        if self.asynchronous and fixed_exponent is None:
            raise ValueError(
                "an asynchronous job needs fixed_exponent (the gradient bound 2**e that all "
                "workers clip to): workers cannot agree on a scale when any may be missing"
            )
        if fixed_exponent is not None and not -120 <= fixed_exponent <= 120:
            raise ValueError(f"fixed_exponent {fixed_exponent} must be -120..120")
        self.switch = (switch[0], switch[1] or AGG_UDP_PORT)
        self.job_id = job_id
        self.worker_id = worker_id
        self.num_workers = num_workers
        self.num_slots = num_slots
        self.fixed_exponent = fixed_exponent
        self.timeout = timeout
        self.max_tries = max_tries
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        # DF on every datagram, GSO sends too (the kernel leaves DF off a GSO send larger than the
        # MTU unless told): an aggregation packet must never be fragmented (the switch parses one
        # whole packet), and DF lets a switch port in offload mode merge runs of results
        self.sock.setsockopt(socket.IPPROTO_IP, getattr(socket, "IP_MTU_DISCOVER", 10),
                             getattr(socket, "IP_PMTUDISC_DO", 2))  # Linux's values; 3.11 lacks the names
        self.sock.bind(bind)
        self.sock.setblocking(False)
        self.slots = [_Slot(i) for i in range(num_slots)]
        self.version = 0
        self._async_size: int | None = None
        self.predict_exponent = predict_exponent
        self._last_agreed: np.ndarray | None = None  # the exponents the switch agreed last call
        # the padded (chunks, values per packet) copy of the tensor, kept from call to call: a new
        # 1 MB array per call cost a worker ~0.2 ms of zeroing and page faults (bench/README.md,
        # "Twelfth pass"); nothing keeps a reference to it past a call
        self._blocks: np.ndarray | None = None
        self.last_info: ChunkInfo | None = None
        self.last_stats = AllreduceStats()
        self.totals = AllreduceStats()
        # retransmission timeout of the batched path: starts at `timeout`, then follows the
        # measured round trip (RFC 6298's smoothing), backs off per try, never above `timeout`
        self.rto = timeout
        self._srtt: float | None = None
        self._rttvar = 0.0
        self._bio = self._batch_socket() if batched is not False else None
        # synchronous jobs on the batched path run the whole protocol in C (aggc_run); False
        # keeps the NumPy batched path (the asynchronous jobs' path), for comparison
        self.use_engine = True
        if batched and self._bio is None:
            raise RuntimeError("batched I/O was asked for, but host_agents/aggio.c cannot be built here")

    def _batch_socket(self) -> BatchSocket | None:
        """The batched packet I/O (one packet table row per slot), or None after one warning when
        the C helper cannot be built: the client then makes one socket call per packet."""
        global _warned_fallback
        try:
            row = self.format.packet_dtype.itemsize
            tx = np.zeros((self.num_slots, row), np.uint8)
            rx = np.zeros((min(1024, max(64, 2 * self.num_slots)), row), np.uint8)
            bio = BatchSocket(self.sock, self.switch, tx, rx)
        except AggIOUnavailable as e:
            if not _warned_fallback:
                log.warning("batched aggregation I/O unavailable (%s): one socket call per packet", e)
                _warned_fallback = True
            return None
        rec = tx.view(self.format.packet_dtype).reshape(-1)
        rec["op"], rec["job_id"], rec["worker_id"] = OP_DATA, self.job_id, self.worker_id
        rec["slot"] = np.arange(self.num_slots)
        return bio

    @property
    def values_per_packet(self) -> int:
        return self.format.values_per_packet

    @property
    def batched(self) -> bool:
        return self._bio is not None

    @property
    def address(self) -> tuple[str, int]:
        return self.sock.getsockname()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> AggregationClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- scaling ----

    def _scale(self, biased_exp: int) -> float:
        return scale_for(biased_exp, self.num_workers)

    # ---- allreduce ----

    def allreduce(self, tensor: torch.Tensor, version: int | None = None) -> torch.Tensor:
        """Sum of ``tensor`` over the job's workers (float32, same shape). ``version`` is this
        worker's model version, carried to the others in the result (default: call count)."""
        import torch

        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"allreduce takes a torch.Tensor, not {type(tensor).__name__}")
        flat = tensor.detach().to(torch.float32).reshape(-1).cpu().numpy()
        return torch.from_numpy(self.allreduce_array(flat, version)).reshape(tensor.shape)

    def allreduce_array(self, values: np.ndarray, version: int | None = None) -> np.ndarray:
        """:meth:`allreduce` for a NumPy array: the sum as a new flat float32 array."""
        flat = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
        if self.fixed_exponent is not None and not np.isfinite(flat).all():
            raise ValueError(NOT_FINITE)
        n = flat.size
        if self.asynchronous:
            # round numbers name calls only if every call runs the same rounds (docs/protocol.md)
            if self._async_size is None:
                self._async_size = n
            elif n != self._async_size:
                raise ValueError(
                    f"an asynchronous job's tensors must all have the same size: this "
                    f"client first sent {self._async_size} elements, now {n}"
                )
        chunks = self.format.chunks(n)
        shape = (chunks, self.format.values_per_packet)
        if self._blocks is None or self._blocks.shape != shape:
            self._blocks = np.zeros(shape, np.float32)
        blocks = self._blocks
        blocks.reshape(-1)[:n] = flat
        blocks.reshape(-1)[n:] = 0.0  # the padding: a longer tensor of as many chunks left values there
        local_exp = None if self.fixed_exponent is not None else self._block_exponents(blocks)
        self.version = self.version + 1 if version is None else version
        if self.fixed_exponent is not None:
            bound = math.ldexp(1.0, self.fixed_exponent)
            if np.abs(blocks).max(initial=0.0) >= bound:
                log.debug("clipping values to the fixed bound 2**%d", self.fixed_exponent)
                np.clip(blocks, -bound * (1 - 2**-24), bound * (1 - 2**-24), out=blocks)
            local_exp = np.full(chunks, self.fixed_exponent + EXP_BIAS, np.int64)
        # the job's exponent of each chunk: fixed, or agreed through the switch as the call goes
        # (the first round of each slot predicted from the last call's, when there was one)
        dynamic = self.fixed_exponent is None
        agreed = np.full(chunks, 0 if dynamic else self.fixed_exponent + EXP_BIAS, np.int64)
        predicted = None
        last, self._last_agreed = self._last_agreed, None  # a failed call leaves no prediction
        if dynamic and self.predict_exponent and last is not None and last.size == chunks:
            n_active = min(self.num_slots, chunks)
            agreed[:n_active] = predicted_exponents(last[:n_active])
            predicted = np.ones(n_active, bool)
        if self._bio is not None and self.use_engine and not self.asynchronous:
            run = self._run_engine
        else:
            run = self._run_batched if self._bio is not None else self._run
        result, info, stats = run(blocks, local_exp, agreed, predicted)
        if dynamic:
            self._last_agreed = agreed
        self.last_info, self.last_stats = info, stats
        self.totals.add(stats)
        return result.reshape(-1)[:n]  # every path's result is a new array, the caller's alone

    def _block_exponents(self, blocks: np.ndarray) -> np.ndarray:
        """:func:`block_exponents` (ValueError for NaN, infinity, 2**126 or more), in one pass of C
        (aggc_exponents) when the batched I/O helper is loaded."""
        if self._bio is None:
            try:
                return block_exponents(blocks)
            except ValueError as e:
                raise ValueError(NOT_FINITE if "NaN" in str(e) else str(e)) from None
        out = np.empty(blocks.shape[0], np.int64)
        ffi = self._bio._io.ffi
        r = self._bio._lib.aggc_exponents(ffi.cast("float *", blocks.ctypes.data), blocks.shape[0],
                                          blocks.shape[1], ffi.cast("int64_t *", out.ctypes.data))
        if r == -1:
            raise ValueError(NOT_FINITE)
        if r == -2:
            raise ValueError("values of 2**126 or more cannot be given a block exponent")
        return out

    def _run(
        self, blocks: np.ndarray, local_exp: np.ndarray, agreed: np.ndarray, predicted: np.ndarray | None
    ) -> tuple[np.ndarray, ChunkInfo, AllreduceStats]:
        """One packet per socket call. ``agreed``: the job's exponent per chunk, filled in as the
        switch agrees them (preset when fixed, and for the predicted first rounds: ``predicted``
        per active slot, None when none is)."""
        chunks = blocks.shape[0]
        W = self.num_slots
        rounds_per_slot = -(-chunks // W)
        dynamic = self.fixed_exponent is None
        result = np.zeros_like(blocks)
        info = ChunkInfo(
            np.zeros(chunks, np.int64),
            np.zeros(chunks, np.int64),
            np.zeros(chunks, np.int64),
            np.zeros(chunks, np.int64),
        )
        stats = AllreduceStats()
        # Each active slot's rounds: its chunks in order (an asynchronous job pads with -1 so that
        # every slot runs the same number of rounds per call); a bootstrap round (-2) first when
        # the exponent is agreed through the switch and not predicted.
        active = []
        for slot in self.slots[: min(W, chunks)]:
            own = list(range(slot.index, chunks, W))
            if self.asynchronous:
                own += [-1] * (rounds_per_slot - len(own))
            slot.predicting = predicted is not None and bool(predicted[slot.index])
            slot.rounds = ([-2] if dynamic and not slot.predicting else []) + own
            active.append(slot)
        start = time.perf_counter()
        for slot in active:
            self._send_next(slot, blocks, local_exp, agreed, stats)
        pending = len(active)
        buf = bytearray(max(2048, self.format.packet_bytes))
        values_bytes, vpp = self.format.values_bytes, self.format.values_per_packet
        while pending:
            deadline = min(s.sent_at for s in active if s.packet) + self.timeout
            ready, _, _ = select.select([self.sock], [], [], max(0.0, deadline - time.monotonic()))
            if not ready or time.monotonic() >= deadline:
                # also after a drain: a stream of ignored packets must not hold retransmissions back
                self._retransmit_overdue(active, stats)
            if not ready:
                continue
            while True:
                try:
                    nbytes = self.sock.recv_into(buf)
                except BlockingIOError:
                    break
                stats.packets_received += 1
                stats.bytes_received += nbytes + FRAME_OVERHEAD
                if nbytes < HEADER_BYTES:
                    continue
                (
                    op,
                    _flags,
                    job,
                    _worker,
                    slot_i,
                    rnd,
                    next_exp,
                    _reserved,
                    count,
                    bitmap,
                    _chunk,
                    version_lo,
                    version_hi,
                ) = HEADER_STRUCT.unpack_from(buf)
                if job != self.job_id or slot_i >= len(active) or not active[slot_i].packet:
                    continue
                slot = active[slot_i]
                if op == OP_STALE and rnd != slot.round & 0xFFFF:
                    held = _unwrap(slot.round, rnd)
                    if held < slot.round and self.asynchronous:
                        continue  # a late reply to a packet of a round this slot has already left
                    self._on_stale(slot, held, rounds_per_slot, stats)
                elif op == OP_RESULT and rnd == slot.round & 0xFFFF:
                    c = slot.chunk
                    if c >= 0 and nbytes < HEADER_BYTES + values_bytes:
                        continue
                    if slot.predicting and next_exp == EXP_REDO:
                        # a worker's chunk did not fit the predicted exponent: every worker got
                        # this mark, drops the result and runs the bootstrap and the chunk again
                        slot.predicting = False
                        stats.redone += 1
                        slot.rounds[:0] = [-2, c]
                        slot.packet = b""
                        self._send_next(slot, blocks, local_exp, agreed, stats)
                        continue
                    slot.predicting = False
                    if c >= 0:
                        ints = np.frombuffer(buf, VALUES_DTYPE, vpp, HEADER_BYTES)
                        result[c] = ints.astype(np.float64) / self._scale(int(agreed[c]))
                        info.count[c], info.bitmap[c] = count, bitmap
                        info.version_lo[c], info.version_hi[c] = version_lo, version_hi
                    if dynamic:
                        nxt = self._next_chunk(slot)
                        agreed[nxt if nxt >= 0 else slot.index] = next_exp
                else:
                    continue  # a reply for a round this host is not waiting for
                slot.packet = b""
                if slot.rounds:
                    self._send_next(slot, blocks, local_exp, agreed, stats)
                else:
                    pending -= 1
        stats.seconds = time.perf_counter() - start
        return result, info, stats

    # ---- synchronous jobs: the protocol loop in C (host_agents/aggio.c, aggc_run) ----

    def _run_engine(
        self, blocks: np.ndarray, local_exp: np.ndarray, agreed: np.ndarray, predicted: np.ndarray | None
    ) -> tuple[np.ndarray, ChunkInfo, AllreduceStats]:
        """What :meth:`_run_batched` does for a synchronous job, with the per-packet work
        (quantize, pack, match, descale, retransmit) in C: Python's cost no longer grows with
        the packets of a call. The arrays handed to C are locals of this frame: they outlive
        every aggc_run call."""
        bio = self._bio
        assert bio is not None and not self.asynchronous
        ffi, lib = bio._io.ffi, bio._lib
        chunks, vpp = blocks.shape
        n_active = min(self.num_slots, chunks)
        dynamic = self.fixed_exponent is None
        blocks32 = np.ascontiguousarray(blocks, np.float32)
        lexp = np.ascontiguousarray(local_exp, np.int64)
        assert agreed.dtype == np.int64 and agreed.flags.c_contiguous  # C fills it in place
        pred = (np.zeros(n_active, np.int64) if predicted is None
                else np.ascontiguousarray(predicted, np.int64))  # fmt: skip
        result = np.empty_like(blocks32)  # a completed call has written every chunk
        info = ChunkInfo(*(np.zeros(chunks, np.int64) for _ in range(4)))
        rounds = np.array([s.round for s in self.slots], np.int64)
        cur, tries = np.zeros(n_active, np.int64), np.zeros(n_active, np.int64)
        sent_at, first_sent = np.zeros(n_active), np.zeros(n_active)
        sendq = np.zeros(max(1, n_active), np.int32)

        def p(ctype: str, a: np.ndarray) -> object:
            return ffi.cast(ctype, a.ctypes.data)

        c = ffi.new("struct aggc_call *")
        c.fd, c.ip_be, c.port_be = bio._fd, bio._ip_be, bio._port_be
        c.gso = bio.gso[0]
        c.job_id, c.worker_id = self.job_id, self.worker_id
        c.vpp, c.chunks, c.slots, c.n_active = vpp, chunks, self.num_slots, n_active
        c.headroom = headroom_bits(self.num_workers)
        c.dynamic = int(dynamic)
        c.version = self.version & 0xFFFFFFFF
        c.row, c.rx_rows = bio.tx.shape[1], bio.rx.shape[0]
        c.timeout_s, c.min_rto, c.max_tries = self.timeout, MIN_RTO, self.max_tries
        c.frame_overhead = FRAME_OVERHEAD
        c.blocks, c.local_exp, c.agreed = p("float *", blocks32), p("int64_t *", lexp), p("int64_t *", agreed)
        c.result = p("float *", result)
        c.count, c.bitmap = p("int64_t *", info.count), p("int64_t *", info.bitmap)
        c.vlo, c.vhi = p("int64_t *", info.version_lo), p("int64_t *", info.version_hi)
        c.rounds, c.cur, c.tries = p("int64_t *", rounds), p("int64_t *", cur), p("int64_t *", tries)
        c.predicted = p("int64_t *", pred)
        c.sent_at, c.first_sent = p("double *", sent_at), p("double *", first_sent)
        c.sendq = p("int32_t *", sendq)
        c.tx, c.rx, c.tx_len, c.rx_len = bio._tx_p, bio._rx_p, bio._tx_len_p, bio._rx_len_p
        c.srtt, c.rttvar, c.rto = self._srtt or 0.0, self._rttvar, self.rto
        c.have_rtt = int(self._srtt is not None)
        start = time.perf_counter()
        try:
            while (r := lib.aggc_run(c)) == 1:
                pass  # a signal: Python ran its handler; carry on where the call was
        finally:
            for i in range(n_active):  # round counters go on across calls, whichever path runs
                self.slots[i].round = int(rounds[i])
            if c.have_rtt:
                self._srtt, self._rttvar = c.srtt, c.rttvar
            self.rto = c.rto
            bio.gso[0] = c.gso
        stats = AllreduceStats(
            packets_sent=c.packets_sent, packets_received=c.packets_received,
            retransmissions=c.retransmissions, bytes_sent=c.bytes_sent, bytes_received=c.bytes_received,
            redone=c.redone, seconds=time.perf_counter() - start,
        )  # fmt: skip
        if r == -1:  # the call's stats are not published: it has no result
            raise AggregationTimeout(
                f"job {self.job_id} worker {self.worker_id}: no result for slot {c.err_slot} round "
                f"{c.err_round} after {c.err_tries} tries in {self.timeout * self.max_tries:g} s; is the "
                f"switch at {self.switch[0]} up, the job installed and every member running? "
                + self._width_hint()
            )
        if r == -2:
            self._on_stale(_Slot(c.err_slot, round=c.err_round), c.err_held, 0, stats)  # raises
        if r < 0:
            raise OSError(c.err_errno, f"aggregation I/O: {os.strerror(c.err_errno)}")
        return result.astype(blocks.dtype, copy=False), info, stats

    # ---- batched path: a window of packets per system call, packed and parsed as arrays ----

    def _scales(self, biased_exp: np.ndarray) -> np.ndarray:
        """:func:`scale_for` of each exponent (this client's worker count)."""
        headroom = headroom_bits(self.num_workers)
        e = np.asarray(biased_exp, np.int64)
        return np.where(e == 0, 1.0, np.ldexp(1.0, 30 - (e - EXP_BIAS) - headroom))

    def _quantize(self, blocks: np.ndarray, biased_exp: np.ndarray) -> np.ndarray:
        """Chunks as the int32 values that go on the wire, each at its exponent's scale."""
        q = np.rint(blocks.astype(np.float64) * self._scales(biased_exp)[:, None])
        return np.clip(q, -(2**31), 2**31 - 1).astype(np.int32)

    def _rto_for(self, tries: np.ndarray) -> np.ndarray:
        """Per outstanding packet: the wait before its next try (doubled per try, capped)."""
        return np.minimum(self.rto * np.exp2(np.minimum(tries - 1, 16)), self.timeout)

    def _rtt_sample(self, rtt: float) -> None:
        if self._srtt is None:
            self._srtt, self._rttvar = rtt, rtt / 2
        else:
            self._rttvar = 0.75 * self._rttvar + 0.25 * abs(self._srtt - rtt)
            self._srtt = 0.875 * self._srtt + 0.125 * rtt
        self.rto = min(self.timeout, max(MIN_RTO, self._srtt + 4 * self._rttvar))

    def _run_batched(
        self, blocks: np.ndarray, local_exp: np.ndarray, agreed: np.ndarray, predicted: np.ndarray | None
    ) -> tuple[np.ndarray, ChunkInfo, AllreduceStats]:
        """What :meth:`_run` does, with the same per-slot state kept in arrays: each received
        batch is matched against every slot at once, and the slots it advances send their next
        rounds in one batch."""
        bio = self._bio
        assert bio is not None
        chunks = blocks.shape[0]
        W = self.num_slots
        rounds_per_slot = -(-chunks // W)
        n_active = min(W, chunks)
        dynamic = self.fixed_exponent is None
        result = np.zeros_like(blocks)
        info = ChunkInfo(*(np.zeros(chunks, np.int64) for _ in range(4)))
        stats = AllreduceStats()
        ids = np.arange(n_active)
        # Slot s runs the call's rounds j = 0, 1, ... < end[s]; round j carries chunk
        # table[s, j + 1] (-1: an asynchronous job's padding, or the bootstrap round j = -1 of an
        # agreed exponent, column 0); the last column is -1 so that "the next round's chunk" of
        # the last round needs no test.
        own = (chunks - ids + W - 1) // W
        end = np.full(n_active, rounds_per_slot) if self.asynchronous else own
        cols = np.arange(-1, rounds_per_slot + 1)
        table = ids[:, None] + W * cols[None, :]
        table = np.where((cols >= 0) & (cols < rounds_per_slot) & (table < chunks), table, -1)
        # the exponent a round announces for the slot's next round (0: no chunk there)
        # (on a slot's last round, with agreed exponents: its first chunk's, chunk s, whose
        # job-wide maximum the next call predicts from)
        announce = np.where(table >= 0, local_exp[np.maximum(table, 0)],
                            local_exp[ids][:, None] if dynamic else 0)
        # slots whose first round is still out on a predicted exponent (they skip the bootstrap)
        pred = np.zeros(n_active, bool) if predicted is None else np.array(predicted, bool)
        seq = np.where(pred, 0, -1 if dynamic else 0).astype(np.int64)
        rnd = np.array([s.round for s in self.slots[:n_active]], np.int64)
        outstanding = np.zeros(n_active, bool)
        tries = np.zeros(n_active, np.int64)
        sent_at = np.zeros(n_active)
        first_sent = np.zeros(n_active)
        tx = bio.tx.view(self.format.packet_dtype).reshape(-1)
        rx = bio.rx.view(self.format.packet_dtype).reshape(-1)
        tx["version_lo"] = tx["version_hi"] = self.version & 0xFFFFFFFF
        tx_flags, tx_round, tx_next, tx_count = tx["flags"], tx["round"], tx["next_exp"], tx["count"]
        tx_chunk, tx_values = tx["chunk"], tx["values"]
        rx_op, rx_job, rx_slot, rx_round = rx["op"], rx["job_id"], rx["slot"], rx["round"]
        full_len, header_len = self.format.packet_bytes, HEADER_BYTES
        # a fixed exponent scales every chunk alike: quantize the whole tensor once
        fixed_q = None if dynamic else self._quantize(blocks, agreed)

        def launch(s: np.ndarray) -> None:
            """Send each slot's round seq[s] as its next round."""
            rnd[s] += 1
            j = seq[s] + 1
            c = table[s, j]
            tx_flags[s] = 0
            tx_round[s] = rnd[s] & 0xFFFF
            tx_next[s] = announce[s, j + 1]
            p = pred[s]
            if p.any():  # a chunk that does not fit its predicted exponent says so
                sp, cp = s[p], c[p]
                tx_next[sp[local_exp[cp] > agreed[cp]]] = EXP_REDO
            data = c >= 0
            tx_count[s] = data
            tx_chunk[s] = np.maximum(c, 0)
            if data.all():
                sd, cd = s, c
            else:
                sd, cd = s[data], c[data]
            if cd.size:
                tx_values[sd] = fixed_q[cd] if fixed_q is not None else self._quantize(blocks[cd], agreed[cd])
            bio.tx_len[s] = np.where(data, full_len, header_len)
            bio.send_rows(s)
            sent_at[s] = first_sent[s] = time.monotonic()
            tries[s] = 1
            outstanding[s] = True
            stats.packets_sent += s.size
            stats.bytes_sent += int(bio.tx_len[s].sum()) + FRAME_OVERHEAD * s.size

        def absorb(k: int) -> None:
            """Match k received packets against the slots, in arrival order as _run does."""
            lens = bio.rx_len[:k]
            stats.packets_received += k
            stats.bytes_received += int(lens.sum()) + FRAME_OVERHEAD * k
            slot = rx_slot[:k].astype(np.int64)
            op = rx_op[:k]
            wire = rx_round[:k].astype(np.int64)
            cand = np.flatnonzero((lens >= HEADER_BYTES) & (rx_job[:k] == self.job_id) & (slot < n_active))
            while cand.size:
                s = slot[cand]
                cur = rnd[s]
                w = wire[cand]
                o = op[cand]
                match = w == cur & 0xFFFF
                live = outstanding[s]
                is_res = live & match & (o == OP_RESULT)
                is_res &= (table[s, seq[s] + 1] < 0) | (lens[cand] >= full_len)
                is_stale = live & ~match & (o == OP_STALE)
                if is_stale.any():
                    delta = (w - cur) & 0xFFFF
                    held = cur + np.where(delta >= 0x8000, delta - 0x10000, delta)
                    if self.asynchronous:
                        is_stale &= held >= cur  # a late reply to a round this slot has already left
                    ev = np.flatnonzero(is_res | is_stale)
                else:
                    held = cur
                    ev = np.flatnonzero(is_res)
                if not ev.size:
                    return
                # each slot's first event only: the slot then waits for a round it has just sent
                se = s[ev]
                if se.size == 1 or (np.diff(se) > 0).all():
                    take = ev  # already one per slot (the usual batch: one reply per slot, in order)
                else:
                    take = ev[np.unique(se, return_index=True)[1]]
                stale = is_stale[take]
                rt = take[~stale] if stale.any() else take
                if rt.size != take.size:
                    if not self.asynchronous:
                        i = int(take[stale].min())
                        behind = _Slot(int(s[i]), round=int(cur[i]))
                        self._on_stale(behind, int(held[i]), rounds_per_slot, stats)  # raises
                    ss, hh = s[take[stale]], held[take[stale]]
                    stats.stale += ss.size
                    log.info("slots %s: rounds %s are stale (switch holds %s): rejoining",
                             ss.tolist(), rnd[ss].tolist(), hh.tolist())
                    seq[ss] = (hh - 1) % rounds_per_slot
                    rnd[ss] = hh - 1  # launch counts the next round: held
                rs, pkt = s[rt], cand[rt]
                redo = None
                if pred[rs].any():  # the first results of predicted rounds
                    redo = pred[rs] & (rx["next_exp"][pkt] == EXP_REDO)
                    pred[rs] = False
                    if redo.any():  # a worker's chunk did not fit: bootstrap, then the chunk again
                        stats.redone += int(redo.sum())
                        seq[rs[redo]] = -1
                        redo, rs, pkt = rs[redo], rs[~redo], pkt[~redo]
                    else:
                        redo = None
                j = seq[rs] + 1
                c = table[rs, j]
                data = c >= 0
                cd, pd = (c, pkt) if data.all() else (c[data], pkt[data])
                if cd.size:
                    h = rx[pd]
                    result[cd] = h["values"].astype(np.float64) / self._scales(agreed[cd])[:, None]
                    info.count[cd], info.bitmap[cd] = h["count"], h["bitmap"]
                    info.version_lo[cd], info.version_hi[cd] = h["version_lo"], h["version_hi"]
                if dynamic:
                    nxt = table[rs, j + 1]
                    agreed[np.where(nxt >= 0, nxt, rs)] = rx["next_exp"][pkt]
                clean = tries[rs] == 1  # a retransmitted packet's reply times no single send (Karn)
                if clean.any():
                    self._rtt_sample(time.monotonic() - float(sent_at[rs[clean]].min()))
                seq[rs] = j
                outstanding[s[take]] = False
                again = rs[j < end[rs]]
                if rt.size != take.size:
                    again = np.concatenate([again, s[take[stale]]])
                if redo is not None:
                    again = np.concatenate([again, redo])
                if again.size:
                    launch(again)
                # a packet after a slot's event is matched again against its next round
                taken_at = np.full(n_active, k, np.int64)
                taken_at[s[take]] = cand[take]
                cand = cand[cand > taken_at[s]]

        def retransmit(now: float) -> None:
            oi = np.flatnonzero(outstanding)
            due = oi[now - sent_at[oi] >= self._rto_for(tries[oi])]
            if not due.size:
                return
            gone = due[now - first_sent[due] >= self.timeout * self.max_tries]
            if gone.size:
                i = int(gone[0])
                raise AggregationTimeout(
                    f"job {self.job_id} worker {self.worker_id}: no result for slot {i} round {int(rnd[i])} "
                    f"after {int(tries[i])} tries in {self.timeout * self.max_tries:g} s; is the switch at "
                    f"{self.switch[0]} up, the job installed and every member running? {self._width_hint()}"
                )
            tx["flags"][due] = FLAG_RETX
            tries[due] += 1
            bio.send_rows(due)
            sent_at[due] = time.monotonic()
            stats.retransmissions += due.size
            stats.packets_sent += due.size
            stats.bytes_sent += int(bio.tx_len[due].sum()) + FRAME_OVERHEAD * due.size

        start = time.perf_counter()
        try:
            launch(ids)
            while outstanding.any():
                oi = np.flatnonzero(outstanding)
                deadline = float((sent_at[oi] + self._rto_for(tries[oi])).min())
                k = bio.recv(deadline - time.monotonic())
                if k:
                    absorb(k)
                now = time.monotonic()
                if now >= deadline:  # also after a batch: ignored packets must not hold retries back
                    retransmit(now)
        finally:
            for i in range(n_active):  # round counters go on across calls, whichever path runs
                self.slots[i].round = int(rnd[i])
        stats.seconds = time.perf_counter() - start
        return result, info, stats

    @staticmethod
    def _next_chunk(slot: _Slot) -> int:
        """Chunk of the slot's next round (-1: padding or none). The bootstrap round (-2) is
        always the first one popped, so it is never next."""
        return slot.rounds[0] if slot.rounds else -1

    def _send_next(
        self,
        slot: _Slot,
        blocks: np.ndarray,
        local_exp: np.ndarray,
        agreed: np.ndarray,
        stats: AllreduceStats,
    ) -> None:
        c = slot.rounds.pop(0)
        slot.round += 1
        slot.chunk = c
        nxt = self._next_chunk(slot)
        # the next chunk's exponent; on the slot's last round (agreed exponents) its first chunk's
        # (chunk slot.index), whose job-wide maximum the next call predicts from
        dynamic = self.fixed_exponent is None
        next_exp = int(local_exp[nxt]) if nxt >= 0 else int(local_exp[slot.index]) if dynamic else 0
        if slot.predicting and c >= 0 and local_exp[c] > agreed[c]:
            next_exp = EXP_REDO  # this chunk does not fit the predicted exponent
        if c >= 0:
            scale = self._scale(int(agreed[c]))
            q = np.rint(blocks[c].astype(np.float64) * scale)
            payload = np.clip(q, -(2**31), 2**31 - 1).astype(VALUES_DTYPE).tobytes()
            count = 1
        else:
            payload = b""
            count = 0  # bootstrap or padding: no gradient
        header = HEADER_STRUCT.pack(
            OP_DATA,
            0,
            self.job_id,
            self.worker_id,
            slot.index,
            slot.round & 0xFFFF,
            next_exp,
            0,
            count,
            0,
            max(c, 0),
            self.version & 0xFFFFFFFF,
            self.version & 0xFFFFFFFF,
        )
        slot.packet = header + payload
        slot.tries = 1
        self._send(slot, stats)

    def _send(self, slot: _Slot, stats: AllreduceStats) -> None:
        self.sock.sendto(slot.packet, self.switch)
        slot.sent_at = time.monotonic()
        stats.packets_sent += 1
        stats.bytes_sent += len(slot.packet) + FRAME_OVERHEAD

    def _retransmit_overdue(self, active: list[_Slot], stats: AllreduceStats) -> None:
        now = time.monotonic()
        for slot in active:
            if slot.packet and now - slot.sent_at >= self.timeout:
                if slot.tries >= self.max_tries:
                    raise AggregationTimeout(
                        f"job {self.job_id} worker {self.worker_id}: no result for slot {slot.index} "
                        f"round {slot.round} after {slot.tries} tries {self.timeout:g} s apart; is the "
                        f"switch at {self.switch[0]} up, the job installed and every member running? "
                        + self._width_hint()
                    )
                if slot.tries == 1:  # set the RETX flag once; the header is otherwise unchanged
                    slot.packet = slot.packet[:1] + bytes([FLAG_RETX]) + slot.packet[2:]
                slot.tries += 1
                stats.retransmissions += 1
                self._send(slot, stats)

    def _width_hint(self) -> str:
        n = self.format.values_per_packet
        return (
            f"Also check values per packet: this worker sends {n} (UDP length {self.format.udp_len_full}); "
            f"a switch whose program was compiled for another width (AGG_VALUES_PER_PACKET, "
            f"`python -m control_plane counters` shows them as rejected malformed) drops every packet "
            f"with values."
        )

    def _on_stale(self, slot: _Slot, held: int, rounds_per_slot: int, stats: AllreduceStats) -> None:
        """This host fell behind on ``slot`` (asynchronous jobs): the switch's cell holds round
        ``held``, later than the one this host sent. The slot's rounds in between stay missing
        (count and bitmap 0: no result came for them) and the slot rejoins at the held round
        itself, with this tensor's chunk for that round's position in the call (rounds are
        counted from 1, ``rounds_per_slot`` per call). Round ``held``'s cell holds ``held``: a
        late contribution gets the result back without being added, one the round still needs
        is added; every later round is sent only after the previous one's result. Rejoining at
        the next call's first round instead would restart cells whose round the in-step workers
        are still filling (they lose contributions and skip calls in turn) and can leave a worker
        alone in a round nobody else sends."""
        if not self.asynchronous:
            raise RuntimeError(
                f"job {self.job_id} worker {self.worker_id}: the switch holds round {held} of slot "
                f"{slot.index}, this worker is at round {slot.round}: the workers' round counters disagree "
                f"(a worker restarted or the job was reset); reset the job and restart every worker"
            )
        stats.stale += 1
        log.info("slot %d: round %d is stale (switch holds %d): rejoining", slot.index, slot.round, held)
        chunks = self.format.chunks(self._async_size or 0)
        position = (held - 1) % rounds_per_slot
        own = (slot.index + self.num_slots * j for j in range(position, rounds_per_slot))
        slot.rounds = [c if c < chunks else -1 for c in own]
        slot.round = held - 1  # _send_next counts the next round: held
