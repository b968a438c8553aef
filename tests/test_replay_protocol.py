"""host_agents.replay_protocol: header layout, fragmentation/reassembly and every body codec,
checked against the byte layout of docs/replay_protocol.md and against the C server's
constants in dpdk_fallback/src/proto.h."""

from __future__ import annotations

import math
import re
import struct
from pathlib import Path

import pytest

from host_agents import replay_protocol as rp
from host_agents.replay_protocol import Flag, Header, Op, ProtocolError, Status

ROOT = Path(__file__).resolve().parents[1]
PROTO_H = ROOT / "dpdk_fallback" / "src" / "proto.h"


def test_header_layout_is_the_doc_table() -> None:
    h = Header(
        op=3,
        flags=0x05,
        table_id=0x0102,
        request_id=0x03040506,
        frag_index=0x0708,
        frag_count=0x090A,
        index=0x0B0C0D0E,
        priority=0x0F101112,
        draw=0x13141516,
        total=0x1718191A,
        status=0x1B,
        version=1,
        reserved=0x1C1D,
    )
    raw = h.pack()
    assert len(raw) == rp.HEADER_BYTES == 32
    assert raw == bytes.fromhex("03050102030405060708090a0b0c0d0e0f101112131415161718191a1b011c1d")
    assert Header.unpack(raw + b"body") == h
    assert rp.unpack_header(rp.pack_header(h)) == h
    with pytest.raises(ProtocolError):
        Header.unpack(raw[:31])


def test_names_and_constants_match_the_c_server() -> None:
    text = PROTO_H.read_text()
    c_ops = {m[1]: int(m[2]) for m in re.finditer(r"RP_OP_(\w+) = (\d+)", text)}
    assert c_ops == {o.name: o.value for o in Op}
    c_status = {m[1]: int(m[2]) for m in re.finditer(r"\bRP_(?!OP_|FLAG_)(\w+) = (\d+),", text)}
    c_status.pop("STATUS_COUNT")
    assert c_status == {s.name: s.value for s in Status if s != Status.OK} | {"OK": 0}
    c_flags = {m[1]: int(m[2], 16) for m in re.finditer(r"RP_FLAG_(\w+) = 0x(\w+)", text)}
    assert c_flags == {f.name: f.value for f in Flag}
    assert f"#define RP_FRAG_BYTES {rp.FRAGMENT_BYTES}" in text
    assert f"#define RP_HEADER_BYTES {rp.HEADER_BYTES}" in text
    assert rp.OPS[2] == "PUSH_REPLY" and rp.STATUS[8] == "NOT_CACHED" and rp.FLAGS[4] == "SWITCH_UPDATED"
    assert rp.reply_op(Op.SAMPLE) == Op.SAMPLE_REPLY
    assert rp.MAX_DATAGRAM == 1432


def test_batch_limits_agree_everywhere() -> None:
    """A batch of MAX_BATCH_ENTRIES takes that many passes through the switch: the P4 program,
    the C server, the client and both software-switch backends' per-packet pass limits agree."""
    from softswitch.switch import MAX_LOOPS

    types_p4 = (ROOT / "p4" / "include" / "types.p4").read_text()
    p4_max = int(re.search(r"REPLAY_MAX_ENTRIES = (\d+);", types_p4)[1])
    flag = int(re.search(r"REPLAY_FLAG_MULTI\s*= 0x(\w+);", types_p4)[1], 16)
    c_max = int(re.search(r"#define RP_BATCH_MAX_ENTRIES (\d+)u", PROTO_H.read_text())[1])
    passes_h = (ROOT / "softswitch" / "native" / "include" / "ss_runtime.h").read_text()
    native_passes = int(re.search(r"#define SS_MAX_PASSES (\d+)u", passes_h)[1])
    assert p4_max == c_max == rp.MAX_BATCH_ENTRIES and flag == Flag.MULTI
    assert rp.MAX_BATCH_ENTRIES <= min(MAX_LOOPS, native_passes)
    assert rp.BATCH_DTYPE.itemsize == 8 and rp.ENTRY_DTYPE.itemsize == 20


@pytest.mark.parametrize("size", [0, 1, 1399, 1400, 1401, 2800, 10_000])
def test_fragment_sizes_and_reassembly_in_any_order(size: int) -> None:
    body = bytes(i % 251 for i in range(size))
    frags = rp.fragment(Header(op=Op.PUSH, table_id=2, request_id=9), body)
    assert len(frags) == max(1, math.ceil(size / 1400)) == rp.fragment_count(size)
    for k, d in enumerate(frags):
        h = Header.unpack(d)
        assert (h.frag_index, h.frag_count, h.table_id, h.request_id) == (k, len(frags), 2, 9)
        assert len(d) - 32 == (1400 if k < len(frags) - 1 else size - 1400 * k)
    r = rp.Reassembler()
    results = [r.add(d, source=("10.0.0.1", 5)) for d in reversed(frags)]
    assert all(x is None for x in results[:-1])
    header, whole = results[-1]
    assert whole == body and header.frag_index == 0 and len(r) == 0


def test_reassembler_missing_duplicates_and_sources() -> None:
    frags = rp.fragment(Header(op=Op.SAMPLE_REPLY, request_id=4), b"x" * 5000)  # 4 fragments
    r = rp.Reassembler()
    assert r.add(frags[0]) is None and r.add(frags[0]) is None  # duplicate ignored
    assert r.add(frags[2], source="other") is None  # another sender's message is separate
    assert r.missing(4) == [1, 2, 3] and r.missing(4, "other") == [0, 1, 3]
    assert r.pending(4) and not r.pending(5)
    r.add(frags[1])
    r.add(frags[3])
    assert r.add(frags[2])[1] == b"x" * 5000
    assert not r.pending(4) and r.expire(0.0) == 1 and len(r) == 0


def test_reassembler_rejects_inconsistent_and_misnumbered_fragments() -> None:
    frags = rp.fragment(Header(op=Op.PUSH, request_id=1), b"y" * 3000)
    r = rp.Reassembler()
    r.add(frags[0])
    other = Header.unpack(frags[1])
    other.op = Op.SAMPLE
    with pytest.raises(ProtocolError, match="disagrees"):
        r.add(other.pack() + frags[1][32:])
    assert not r.pending(1)  # the broken message is dropped
    with pytest.raises(ProtocolError):  # a short fragment that is not the last
        r.add(frags[0][:100])
    with pytest.raises(ProtocolError):
        r.add(Header(op=Op.INFO, frag_index=1, frag_count=1).pack())
    with pytest.raises(ProtocolError):
        r.add(Header(op=Op.INFO, frag_count=0).pack())
    with pytest.raises(ProtocolError):
        r.add(Header(op=Op.INFO).pack() + b"z" * 1401)


def test_fragment_refuses_more_than_65535_fragments() -> None:
    with pytest.raises(ProtocolError):
        rp.fragment(Header(op=Op.PUSH), memoryview(bytearray(rp.MAX_MESSAGE_BYTES + 1)))


def test_push_bodies() -> None:
    items = [(1.5, b"abc"), (0.0, b""), (7.0, bytes(2000))]
    body = rp.encode_push_request(items)
    assert body[:4] == b"\0\0\0\3" and body[4:15] == struct.pack("!fI", 1.5, 3) + b"abc"
    assert rp.decode_push_request(body) == items
    with pytest.raises(ProtocolError):
        rp.decode_push_request(body + b"!")
    with pytest.raises(ProtocolError):
        rp.decode_push_request(body[:-1])
    leaves = [(4096, b"abc"), (2**32 - 1, b"")]  # a PUSH with leaves: u32 leaf values, not floats
    body = rp.encode_push_leaves_request(leaves)
    assert body[4:15] == struct.pack("!II", 4096, 3) + b"abc"
    assert rp.decode_push_leaves_request(body) == leaves
    with pytest.raises(ProtocolError):
        rp.decode_push_leaves_request(body[:-1])
    reply = rp.encode_push_reply([5, 2**40])
    assert reply == struct.pack("!IQQ", 2, 5, 2**40)
    assert rp.decode_push_reply(reply) == [5, 2**40]
    with pytest.raises(ProtocolError):
        rp.decode_push_reply(reply[:-1])


def test_sample_bodies() -> None:
    assert rp.encode_sample_request(32, 0.5) == struct.pack("!If", 32, 0.5)
    assert rp.decode_sample_request(rp.encode_sample_request(32, 0.5)) == (32, 0.5)
    with pytest.raises(ProtocolError):
        rp.decode_sample_request(b"\0" * 7)
    items = [rp.SampledItem(3, 0.25, 1.0, b"item"), rp.SampledItem(9, 0.5, 0.5, b"")]
    body = rp.encode_sample_reply(10, items)
    assert body[:12] == struct.pack("!QI", 10, 2)
    assert body[12:32] == struct.pack("!QffI", 3, 0.25, 1.0, 4)
    assert rp.decode_sample_reply(body) == rp.SampleReply(10, items)
    with pytest.raises(ProtocolError):
        rp.decode_sample_reply(body[:-1])


def test_update_bodies() -> None:
    entries = [(1, 2.0), (2**63, 0.0)]
    body = rp.encode_update_request(entries)
    assert body == struct.pack("!IQfQf", 2, 1, 2.0, 2**63, 0.0)
    assert rp.decode_update_request(body) == entries
    with pytest.raises(ProtocolError):
        rp.decode_update_request(body + b"\0")
    assert rp.decode_update_reply(rp.encode_update_reply(3, 4)) == (3, 4)
    assert rp.decode_update_reply(b"") == (0, 0)  # the switch's UPDATE_REPLY has no body
    with pytest.raises(ProtocolError):
        rp.decode_update_reply(b"\0" * 4)


def test_params_info_resend_checkpoint_error_bodies() -> None:
    assert rp.encode_set_params(7, b"blob") == struct.pack("!Q", 7) + b"blob"
    assert rp.decode_set_params(rp.encode_set_params(7, b"blob")) == (7, b"blob")
    assert rp.decode_set_params_reply(rp.encode_set_params_reply(7)) == 7
    assert rp.decode_get_params_reply(rp.encode_get_params_reply(0, b"")) == (0, b"")
    with pytest.raises(ProtocolError):
        rp.decode_set_params(b"\0" * 7)
    with pytest.raises(ProtocolError):
        rp.decode_set_params_reply(b"\0" * 9)
    assert rp.decode_info_reply(rp.encode_info_reply({"tables": []})) == {"tables": []}
    with pytest.raises(ProtocolError):
        rp.decode_info_reply(b"{not json")
    assert rp.encode_resend([1, 300]) == struct.pack("!IHH", 2, 1, 300)
    assert rp.decode_resend(rp.encode_resend([1, 300])) == [1, 300]
    with pytest.raises(ProtocolError):
        rp.decode_resend(struct.pack("!IH", 2, 1))
    assert rp.decode_checkpoint_reply(rp.encode_checkpoint_reply("/tmp/x")) == "/tmp/x"
    assert rp.decode_error(rp.encode_error("bad")) == "bad"
    assert rp.decode_error(b"\xff") == "\ufffd"


def test_fixed_point_priority() -> None:
    assert rp.fixed_point_priority(0.0, 0.6, 1024) == 0
    assert rp.fixed_point_priority(1.0, 0.6, 1024) == 4096
    assert rp.fixed_point_priority(4.0, 0.5, 1024) == 8192
    assert rp.fixed_point_priority(1e-12, 1.0, 1024) == 1  # positive never rounds to 0
    assert rp.fixed_point_priority(1e30, 1.0, 1024) == 2**32 // 1024 - 1  # root cannot overflow
    for bad in (math.nan, -1.0, math.inf):
        with pytest.raises(ValueError):
            rp.fixed_point_priority(bad, 0.6, 8)


def test_header_dtype_matches_the_struct() -> None:
    """HEADER_DTYPE (the switch client's arrays) and HEADER_STRUCT (everything else) lay out the
    same 32 bytes."""
    import numpy as np

    from host_agents.replay_protocol import HEADER_DTYPE, HEADER_STRUCT

    h = Header(op=3, flags=0x41, table_id=0x1234, request_id=0xDEADBEEF, frag_index=2, frag_count=7,
               index=0x01020304, priority=0xA0B0C0D0, draw=0xFFFFFFFE, total=5, status=9, reserved=0xBEEF)
    rec = np.frombuffer(h.pack(), HEADER_DTYPE)[0]
    assert HEADER_DTYPE.itemsize == HEADER_STRUCT.size
    assert tuple(int(rec[f]) for f in HEADER_DTYPE.names) == HEADER_STRUCT.unpack(h.pack())
    assert np.array([rec], HEADER_DTYPE).tobytes() == h.pack()
