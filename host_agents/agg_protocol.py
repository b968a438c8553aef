"""Wire format of in-switch gradient aggregation (docs/protocol.md is the authority).

Two encodings of the same bytes: ``struct``/NumPy here, for the hot path (the aggregation
client), and scapy layers in :mod:`host_agents.agg_layers` for tests and debugging (kept apart
so that the hot path does not import scapy). Both mirror
``p4/include/headers.p4`` field for field; ``tests/test_agg_protocol.py`` checks that the
constants here match the P4 program's.

The values per packet are a compile-time constant of the P4 program (AGG_VALUES_PER_PACKET,
set with ``-DAGG_VALUES_PER_PACKET=N``): :class:`AggFormat` holds the sizes of one width, and a
host must use the width its switch was compiled with, since the switch drops a packet of any
other length as malformed.
"""

from __future__ import annotations

import functools
import math
import struct
from dataclasses import dataclass

import numpy as np

AGG_UDP_PORT = 47000
# The widths p4/include/types.p4 accepts, and its default.
SUPPORTED_VALUES_PER_PACKET = (32, 64, 256)
DEFAULT_VALUES_PER_PACKET = 64
HEADER_BYTES = 28
VALUE_BYTES = 4  # int32
UDP_LEN_HEADER_ONLY = 8 + HEADER_BYTES
FRAME_OVERHEAD = 14 + 20 + 8  # Ethernet + IPv4 + UDP headers around each aggregation packet
MAX_WORKERS = 32  # worker_bitmap_t is 32 bits
POOL_SLOTS = 1024  # AGG_POOL_SLOTS: slots shared by all jobs of one switch
MAX_JOBS = 256

OP_DATA = 1
OP_RESULT = 2
OP_STALE = 3
OP_NAMES = {OP_DATA: "DATA", OP_RESULT: "RESULT", OP_STALE: "STALE"}
FLAG_RETX = 0x01

# agg_rejected counter indexes (AGG_REJECT_* in p4/include/types.p4)
REJECT_REASONS = ("malformed", "unknown_job", "not_member", "bad_slot", "bad_op")

EXP_BIAS = 128  # next_exp = e + 128 where |values| < 2**e; 0 means "all zeros"
# next_exp of a round sent on a predicted exponent that the sender's chunk does not fit (the
# switch keeps the max, so every worker sees it and redoes the round): docs/protocol.md
EXP_REDO = 255
PREDICT_MARGIN = 1  # bits above the last call's exponent that a prediction allows

# op, flags, job_id, worker_id, slot, round, next_exp, reserved, count, bitmap, chunk,
# version_lo, version_hi -- network byte order
HEADER_STRUCT = struct.Struct("!BBBBHHBBHIIII")
assert HEADER_STRUCT.size == HEADER_BYTES
VALUES_DTYPE = np.dtype(">i4")


def check_values_per_packet(n: int) -> int:
    """``n`` if the P4 program can be compiled with that many values per packet, else ValueError."""
    if n not in SUPPORTED_VALUES_PER_PACKET:
        raise ValueError(
            f"{n} values per packet: p4/innet.p4 is built for "
            f"{', '.join(map(str, SUPPORTED_VALUES_PER_PACKET))} (AGG_VALUES_PER_PACKET)"
        )
    return n


@functools.cache
def _packet_dtype(values_per_packet: int) -> np.dtype:
    # The packet as a NumPy record, so that a whole window of packets is packed and parsed with
    # array operations (the batched client); tests/test_agg_protocol.py checks it against
    # HEADER_STRUCT.
    return np.dtype(
        {
            "names": ["op", "flags", "job_id", "worker_id", "slot", "round", "next_exp", "reserved", "count",
                      "bitmap", "chunk", "version_lo", "version_hi", "values"],
            "formats": ["u1", "u1", "u1", "u1", ">u2", ">u2", "u1", "u1", ">u2", ">u4", ">u4", ">u4", ">u4",
                        (VALUES_DTYPE, (values_per_packet,))],
            "offsets": [0, 1, 2, 3, 4, 6, 8, 9, 10, 12, 16, 20, 24, HEADER_BYTES],
            "itemsize": HEADER_BYTES + VALUE_BYTES * values_per_packet,
        }
    )


@dataclass(frozen=True)
class AggFormat:
    """The sizes of aggregation packets of one width: ``values_per_packet`` int32 values after
    the 28-byte header (p4/include/types.p4's AGG_VALUES_PER_PACKET; 32, 64 or 256)."""

    values_per_packet: int = DEFAULT_VALUES_PER_PACKET

    def __post_init__(self) -> None:
        check_values_per_packet(self.values_per_packet)

    @property
    def values_bytes(self) -> int:
        return VALUE_BYTES * self.values_per_packet

    @property
    def packet_bytes(self) -> int:
        """UDP payload of a packet with values (header + values)."""
        return HEADER_BYTES + self.values_bytes

    @property
    def udp_len_full(self) -> int:
        """UDP length of a packet with values (AGG_UDP_LEN_FULL)."""
        return 8 + self.packet_bytes

    @property
    def frame_bytes(self) -> int:
        """Ethernet frame of a packet with values, without preamble and FCS."""
        return FRAME_OVERHEAD + self.packet_bytes

    @property
    def packet_dtype(self) -> np.dtype:
        """One packet with values as a NumPy record (the header's fields and ``values``)."""
        return _packet_dtype(self.values_per_packet)

    def chunks(self, numel: int) -> int:
        """Packets (chunks) that carry a tensor of ``numel`` values (at least one)."""
        return max(1, -(-numel // self.values_per_packet))


DEFAULT_FORMAT = AggFormat()


@dataclass(slots=True)
class AggHeaderFields:
    """The 28-byte aggregation header, decoded."""

    op: int
    flags: int
    job_id: int
    worker_id: int
    slot: int
    round: int
    next_exp: int
    count: int
    bitmap: int
    chunk: int
    version_lo: int
    version_hi: int

    def pack(self) -> bytes:
        return HEADER_STRUCT.pack(
            self.op,
            self.flags,
            self.job_id,
            self.worker_id,
            self.slot,
            self.round & 0xFFFF,
            self.next_exp,
            0,
            self.count,
            self.bitmap,
            self.chunk,
            self.version_lo,
            self.version_hi,
        )

    @classmethod
    def unpack(cls, data: bytes | memoryview) -> AggHeaderFields:
        if len(data) < HEADER_BYTES:
            raise ValueError(f"aggregation header needs {HEADER_BYTES} bytes, got {len(data)}")
        (
            op,
            flags,
            job_id,
            worker_id,
            slot,
            rnd,
            next_exp,
            _reserved,
            count,
            bitmap,
            chunk,
            version_lo,
            version_hi,
        ) = HEADER_STRUCT.unpack_from(data)
        return cls(
            op, flags, job_id, worker_id, slot, rnd, next_exp, count, bitmap, chunk, version_lo, version_hi
        )


def block_exponents(blocks: np.ndarray) -> np.ndarray:
    """Per row of ``blocks``: the biased exponent b with every |x| in the row < 2**(b - EXP_BIAS);
    0 for an all-zero row. ValueError on NaN or infinity."""
    peak = np.abs(blocks).max(axis=-1, initial=0.0)
    if not np.isfinite(peak).all():
        raise ValueError("tensor holds NaN or infinity; it cannot be aggregated in fixed point")
    _, e = np.frexp(peak)  # peak = m * 2**e with 0.5 <= m < 1, so peak < 2**e
    biased = e.astype(np.int64) + EXP_BIAS
    if (biased >= EXP_REDO).any():  # 255 is the protocol's "redo" mark
        raise ValueError("values of 2**126 or more cannot be given a block exponent")
    return np.where(peak > 0, np.maximum(biased, 1), 0)


def predicted_exponents(last_agreed: np.ndarray) -> np.ndarray:
    """The exponents a synchronous job's workers assume for the first round of each slot, from
    the exponents the switch agreed for the same chunks in the last call (all workers saw the
    same ones): PREDICT_MARGIN bits more, 0 (all zeros) stays 0. A worker whose chunk does not
    fit announces EXP_REDO."""
    last = np.asarray(last_agreed, np.int64)
    return np.where(last > 0, np.minimum(last + PREDICT_MARGIN, EXP_REDO - 1), 0)


def block_exponent(block: np.ndarray) -> int:
    """:func:`block_exponents` of one block."""
    return int(block_exponents(np.asarray(block).reshape(1, -1))[0])


def headroom_bits(num_contributions: int) -> int:
    """Bits kept free above a block's values so that a sum of ``num_contributions`` of them fits."""
    return max(0, math.ceil(math.log2(max(1, num_contributions))))


def scale_for(biased_exp: int, num_contributions: int) -> float:
    """Fixed-point scale for a block: the sum of ``num_contributions`` values below 2**e stays
    below 2**30, so int32 cannot overflow (one bit of headroom for rounding)."""
    if biased_exp == 0:
        return 1.0
    return math.ldexp(1.0, 30 - (biased_exp - EXP_BIAS) - headroom_bits(num_contributions))
