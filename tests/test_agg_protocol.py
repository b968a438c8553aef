"""The Python mirror of the aggregation wire format agrees with the P4 program and with itself."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from host_agents import agg_protocol as ap
from host_agents.agg_layers import AggHeader, AggValues
from p4compiler import P4Error, compile_file

ROOT = Path(__file__).resolve().parent.parent
TYPES_P4 = ROOT / "p4" / "include" / "types.p4"
PROGRAM = ROOT / "p4" / "innet.p4"


def _p4_defines() -> dict[str, int]:
    """types.p4's `#define NAME <number>` lines (the first of each: #ifndef defaults come first)."""
    out: dict[str, int] = {}
    for m in re.finditer(r"#define (\w+) (\d+)\b", TYPES_P4.read_text()):
        out.setdefault(m[1], int(m[2]))
    return out


@functools.cache
def _compiled_constants(width: int | None) -> dict[str, int]:
    """innet.p4's constants as the compiler folds them, built with -DAGG_VALUES_PER_PACKET=width
    (None: the program's default)."""
    defines = None if width is None else {"AGG_VALUES_PER_PACKET": str(width)}
    return compile_file(str(PROGRAM), defines=defines).constants


def test_constants_match_the_p4_program() -> None:
    c = _compiled_constants(None) | _p4_defines()
    assert c["AGG_UDP_PORT"] == ap.AGG_UDP_PORT
    assert c["AGG_VALUES_PER_PACKET"] == ap.DEFAULT_VALUES_PER_PACKET == ap.DEFAULT_FORMAT.values_per_packet
    assert c["AGG_HEADER_BYTES"] == ap.HEADER_BYTES
    assert c["AGG_VALUES_BYTES"] == ap.DEFAULT_FORMAT.values_bytes
    assert c["AGG_UDP_LEN_FULL"] == ap.DEFAULT_FORMAT.udp_len_full
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


@pytest.mark.parametrize("width", [32, 64, 256])
def test_each_width_compiles_to_its_sizes(width: int) -> None:
    """-DAGG_VALUES_PER_PACKET sets every size of the program: the byte and UDP length constants,
    the values header and one register per value."""
    c = _compiled_constants(width)
    fmt = ap.AggFormat(width)
    assert c["AGG_VALUES_BYTES"] == fmt.values_bytes == 4 * width
    assert c["AGG_UDP_LEN_HEADER_ONLY"] == ap.UDP_LEN_HEADER_ONLY == 8 + 28
    assert c["AGG_UDP_LEN_FULL"] == fmt.udp_len_full == 8 + 28 + 4 * width
    assert fmt.frame_bytes == 14 + 20 + c["AGG_UDP_LEN_FULL"]
    prog = compile_file(str(PROGRAM), defines={"AGG_VALUES_PER_PACKET": str(width)})
    values_t = dict(prog.headers_type.fields)["agg_values"]
    assert [n for n, _ in values_t.fields] == [f"v{i:02x}" for i in range(width)]
    registers = [r.name for r in prog.info.registers if ".agg_value_" in r.name]
    assert registers == [f"InnetIngress.aggregation.agg_value_{i:02x}" for i in range(width)]


@pytest.mark.parametrize("width", ["48", "0", "1024"])
def test_other_widths_stop_the_compile_with_one_line(width: str) -> None:
    with pytest.raises(P4Error, match=r"types\.p4:\d+:\d+: .*AGG_VALUES_PER_PACKET must be 32, 64 or 256"):
        compile_file(str(PROGRAM), defines={"AGG_VALUES_PER_PACKET": width})
    with pytest.raises(ValueError, match=f"{width} values per packet"):
        ap.AggFormat(int(width))


@pytest.mark.parametrize("width", ap.SUPPORTED_VALUES_PER_PACKET)
def test_struct_and_scapy_encode_the_same_bytes(width: int) -> None:
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
    values = np.arange(-width // 2, width // 2, dtype=np.int64) * 8_000_000
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
    assert pkt[UDP].len == ap.AggFormat(width).udp_len_full
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
    with pytest.raises(ValueError, match="2\\*\\*126 or more"):  # 255 is the redo mark
        ap.block_exponent(np.array([2.0**126]))
    assert ap.block_exponent(np.array([2.0**126 * (1 - 2**-24)])) == 126 + ap.EXP_BIAS == ap.EXP_REDO - 1
    assert ap.predicted_exponents(np.array([0, 1, 130, 254])).tolist() == [0, 2, 131, 254]


@pytest.mark.parametrize("width", ap.SUPPORTED_VALUES_PER_PACKET)
def test_packet_dtype_lays_out_the_header_as_the_struct_does(width: int) -> None:
    dtype = ap.AggFormat(width).packet_dtype
    rec = np.zeros(2, dtype)
    fields = (2, 1, 7, 31, 513, 65535, 140, 0, 300, 0x80000001, 123456, 5, 0xFFFFFFFF)
    names = [n for n in dtype.names if n != "values"]
    for name, value in zip(names, fields, strict=True):
        rec[1][name] = value
    rec[1]["values"] = np.arange(-width // 2, width // 2)
    raw = rec.tobytes()[dtype.itemsize :]
    assert dtype.itemsize == ap.HEADER_BYTES + 4 * width == ap.AggFormat(width).packet_bytes
    assert raw[: ap.HEADER_BYTES] == ap.HEADER_STRUCT.pack(*fields)
    assert raw[ap.HEADER_BYTES :] == np.arange(-width // 2, width // 2).astype(ap.VALUES_DTYPE).tobytes()
