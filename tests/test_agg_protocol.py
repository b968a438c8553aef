"""The Python mirror of the aggregation wire format agrees with the P4 program and with itself."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from host_agents import agg_protocol as ap
from host_agents.agg_layers import AggHeader, AggValues

TYPES_P4 = Path(__file__).resolve().parent.parent / "p4" / "include" / "types.p4"


def _p4_constants() -> dict[str, int]:
    text = TYPES_P4.read_text()
    consts = {
        m[1]: int(m[2], 0) for m in re.finditer(r"const bit<\d+>\s+(\w+)\s*=\s*(0x[0-9a-fA-F]+|\d+);", text)
    }
    consts.update({m[1]: int(m[2]) for m in re.finditer(r"#define (\w+) (\d+)\b", text)})
    return consts


def test_constants_match_the_p4_program() -> None:
    c = _p4_constants()
    assert c["AGG_UDP_PORT"] == ap.AGG_UDP_PORT
    assert c["AGG_VALUES_PER_PACKET"] == ap.VALUES_PER_PACKET
    assert c["AGG_HEADER_BYTES"] == ap.HEADER_BYTES
    assert c["AGG_VALUES_BYTES"] == ap.VALUES_BYTES
    assert c["AGG_UDP_LEN_FULL"] == ap.UDP_LEN_FULL
    assert c["AGG_UDP_LEN_HEADER_ONLY"] == ap.UDP_LEN_HEADER_ONLY
    assert c["AGG_POOL_SLOTS"] == ap.POOL_SLOTS
    assert c["AGG_MAX_JOBS"] == ap.MAX_JOBS
    assert (c["AGG_OP_DATA"], c["AGG_OP_RESULT"], c["AGG_OP_STALE"]) == (
        ap.OP_DATA,
        ap.OP_RESULT,
        ap.OP_STALE,
    )
    assert c["AGG_FLAG_RETX"] == ap.FLAG_RETX
    reasons = sorted(
        (v, k) for k, v in c.items() if k.startswith("AGG_REJECT_") and k != "AGG_REJECT_REASONS"
    )
    assert [k.removeprefix("AGG_REJECT_").lower() for _, k in reasons] == list(ap.REJECT_REASONS)


def test_struct_and_scapy_encode_the_same_bytes() -> None:
    fields = ap.AggHeaderFields(
        op=2,
        flags=1,
        job_id=7,
        worker_id=31,
        slot=513,
        round=65535,
        next_exp=140,
        count=300,
        bitmap=0x80000001,
        chunk=123456,
        version_lo=5,
        version_hi=2**32 - 1,
    )
    values = np.arange(-16, 16, dtype=np.int64) * 100_000_000
    wire = fields.pack() + values.astype(ap.VALUES_DTYPE).tobytes()
    layered = bytes(
        AggHeader(**{k: getattr(fields, k) for k in fields.__dataclass_fields__})
        / AggValues(values=[int(v) for v in values])
    )
    assert layered == wire
    assert ap.AggHeaderFields.unpack(wire) == fields
    pkt = Ether(bytes(Ether() / IP() / UDP(sport=1234, dport=ap.AGG_UDP_PORT) / layered))
    assert pkt[AggHeader].bitmap == 0x80000001
    assert pkt[AggValues].values == [int(v) for v in values]
    with pytest.raises(ValueError, match="28 bytes"):
        ap.AggHeaderFields.unpack(wire[:27])


@pytest.mark.parametrize(("peak", "expected"), [(0.0, 0), (1.0, 129), (0.75, 128), (1e-3, 119), (3e5, 147)])
def test_block_exponent_bounds_the_block(peak: float, expected: int) -> None:
    block = np.array([0.0, -peak, peak / 2], np.float32)
    b = ap.block_exponent(block)
    assert b == expected
    if b:
        assert np.abs(block).max() < 2.0 ** (b - ap.EXP_BIAS)


def test_scale_keeps_the_sum_of_n_workers_inside_int32() -> None:
    for n in (1, 2, 3, 8, 32, 255):
        for b in (100, 128, 129, 150):
            worst = (2.0 ** (b - ap.EXP_BIAS)) * ap.scale_for(b, n) * n
            assert worst <= 2**30
    with pytest.raises(ValueError, match="NaN or infinity"):
        ap.block_exponent(np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match="2\\*\\*127 or more"):
        ap.block_exponent(np.array([2.0**127]))
    assert ap.block_exponent(np.array([2.0**126])) == 127 + ap.EXP_BIAS


def test_packet_dtype_lays_out_the_header_as_the_struct_does() -> None:
    rec = np.zeros(2, ap.PACKET_DTYPE)
    fields = (2, 1, 7, 31, 513, 65535, 140, 0, 300, 0x80000001, 123456, 5, 0xFFFFFFFF)
    names = [n for n in ap.PACKET_DTYPE.names if n != "values"]
    for name, value in zip(names, fields, strict=True):
        rec[1][name] = value
    rec[1]["values"] = np.arange(-16, 16)
    raw = rec.tobytes()[ap.PACKET_DTYPE.itemsize :]
    assert ap.PACKET_DTYPE.itemsize == ap.HEADER_BYTES + ap.VALUES_BYTES
    assert raw[: ap.HEADER_BYTES] == ap.HEADER_STRUCT.pack(*fields)
    assert raw[ap.HEADER_BYTES :] == np.arange(-16, 16).astype(ap.VALUES_DTYPE).tobytes()
