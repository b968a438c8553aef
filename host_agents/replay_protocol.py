"""Wire format of the prioritized replay service (docs/replay_protocol.md is the authority).

Pure ``struct`` codecs, no sockets: the 32-byte header, fragmentation of a message body into
1400-byte pieces and their reassembly, and an encoder/decoder pair for every message body. The
replay client (:mod:`host_agents.replay_client`), the tests and the C server
(``dpdk_fallback/src/proto.h``) agree on these bytes.

Decoders are strict: a body shorter or longer than its fields say raises :class:`ProtocolError`.
"""

from __future__ import annotations

import enum
import json
import math
import struct
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

REPLAY_UDP_PORT = 47100
VERSION = 1
HEADER_BYTES = 32
FRAGMENT_BYTES = 1400  # body bytes per datagram (all fragments but the last are this long)
MAX_DATAGRAM = HEADER_BYTES + FRAGMENT_BYTES  # 1432: UDP payload of a 1460-byte IPv4 packet
MAX_FRAGMENTS = 0xFFFF  # frag_count is 16 bits
MAX_MESSAGE_BYTES = MAX_FRAGMENTS * FRAGMENT_BYTES

# Switch path: fixed-point leaves are p^alpha * 2^12 (docs/replay_protocol.md, "The switch path").
FIXED_POINT_SHIFT = 12


class Op(enum.IntEnum):
    """Message ops. A reply's op is the request's op + 1 (ERROR when status is not OK)."""

    PUSH = 1
    PUSH_REPLY = 2
    SAMPLE = 3
    SAMPLE_REPLY = 4
    UPDATE_PRIORITY = 5
    UPDATE_REPLY = 6
    SET_PARAMS = 7
    SET_PARAMS_REPLY = 8
    GET_PARAMS = 9
    GET_PARAMS_REPLY = 10
    INFO = 11
    INFO_REPLY = 12
    RESEND = 13
    CHECKPOINT = 15
    CHECKPOINT_REPLY = 16
    ERROR = 255


class Flag(enum.IntFlag):
    """Header flag bits."""

    SWITCH_SAMPLED = 0x01
    RANDOM_DRAW = 0x02
    SWITCH_UPDATED = 0x04
    INSERT = 0x08  # switch UPDATE: a new item's priority; the leaf remembers its key
    KEY_MISMATCH = 0x10  # switch UPDATE_REPLY: ignored, the leaf stands for another item
    MULTI = 0x20  # switch SAMPLE/UPDATE: a batch of entries (BATCH_DTYPE, ENTRY_DTYPE)


class Status(enum.IntEnum):
    """Reply status codes (0 is OK)."""

    OK = 0
    MALFORMED = 1
    UNKNOWN_OP = 2
    UNKNOWN_TABLE = 3
    BAD_INDEX = 4
    TOO_LARGE = 5
    EMPTY = 6
    NOT_SWITCH_SAMPLED = 7
    NOT_CACHED = 8
    BAD_VERSION = 9
    INTERNAL = 10


# Name tables for logs and error messages: code -> name.
OPS: dict[int, str] = {int(o): o.name for o in Op}
FLAGS: dict[int, str] = {int(f): f.name for f in Flag if f.name}
STATUS: dict[int, str] = {int(s): s.name for s in Status}

# Request ops that get a reply op of op + 1 (RESEND's "reply" is the cached reply's own op).
REQUEST_OPS = (Op.PUSH, Op.SAMPLE, Op.UPDATE_PRIORITY, Op.SET_PARAMS, Op.GET_PARAMS, Op.INFO, Op.CHECKPOINT)

# op, flags, table_id, request_id, frag_index, frag_count, index, priority, draw, total,
# status, version, reserved -- network byte order
HEADER_STRUCT = struct.Struct("!BBHIHHIIIIBBH")
_FRAG_INDEX, _FRAG_INDEX_OFFSET = struct.Struct("!H"), struct.calcsize("!BBHI")  # the header's frag_index
# The same header as a NumPy record, so that a window of switch-path datagrams is built and read
# as arrays (SwitchReplayClient); tests/test_replay_protocol.py checks it against HEADER_STRUCT.
HEADER_DTYPE = np.dtype(
    [("op", "u1"), ("flags", "u1"), ("table_id", ">u2"), ("request_id", ">u4"), ("frag_index", ">u2"),
     ("frag_count", ">u2"), ("index", ">u4"), ("priority", ">u4"), ("draw", ">u4"), ("total", ">u4"),
     ("status", "u1"), ("version", "u1"), ("reserved", ">u2")]
)  # fmt: skip
assert HEADER_STRUCT.size == HEADER_BYTES

# Switch-path batches (flag MULTI, "The switch path"): after the header a batch header, then
# `count` entries; the switch does them one per pass and writes each one's outcome into it.
MAX_BATCH_ENTRIES = 64  # REPLAY_MAX_ENTRIES in p4/include/types.p4
# Entries per SAMPLE or UPDATE datagram by default: the switch parses the whole batch again on
# each of its passes, so a batch costs it ~count^2 (32 draws per datagram were slower than 2 x 16)
SWITCH_BATCH_DEFAULT = 16
BATCH_DTYPE = np.dtype([("next", ">u2"), ("count", ">u2"), ("beta", ">f4")])
ENTRY_DTYPE = np.dtype([("index", ">u4"), ("priority", ">u4"), ("draw", ">u4"), ("total", ">u4"),
                        ("result", "u1"), ("reserved", "V3")])  # fmt: skip
assert BATCH_DTYPE.itemsize == 8 and ENTRY_DTYPE.itemsize == 20


class EntryResult(enum.IntEnum):
    """An UPDATE batch entry's outcome, written by the switch."""

    APPLIED = 0
    KEY_MISMATCH = 1  # ignored: the leaf stands for another item
    BAD_INDEX = 2  # the leaf is beyond the table's leaves


_U32 = struct.Struct("!I")
_U64 = struct.Struct("!Q")
_F32 = struct.Struct("!f")
_PUSH_ITEM = struct.Struct("!fI")  # priority, length
_PUSH_LEAF_ITEM = struct.Struct("!II")  # fixed-point leaf, length (a PUSH with leaves)
_SAMPLE_REQ = struct.Struct("!If")  # batch_size, beta
_SAMPLE_HEAD = struct.Struct("!QI")  # table_size, count
_SAMPLE_ITEM = struct.Struct("!QffI")  # key, probability, weight, length
_UPDATE_ENTRY = struct.Struct("!Qf")  # key, priority
_UPDATE_REPLY = struct.Struct("!II")  # updated, ignored
_U16 = struct.Struct("!H")


class ProtocolError(ValueError):
    """Bytes that do not follow docs/replay_protocol.md."""


def reply_op(op: int) -> int:
    """The reply op of a request op (PUSH -> PUSH_REPLY, ...)."""
    return op + 1


@dataclass(slots=True)
class Header:
    """The 32-byte replay header, decoded. Field names follow the doc."""

    op: int
    flags: int = 0
    table_id: int = 0
    request_id: int = 0
    frag_index: int = 0
    frag_count: int = 1
    index: int = 0
    priority: int = 0
    draw: int = 0
    total: int = 0
    status: int = 0
    version: int = VERSION
    reserved: int = 0

    def pack(self) -> bytes:
        """The header's 32 bytes (struct.error when a field does not fit its width)."""
        return HEADER_STRUCT.pack(
            self.op,
            self.flags,
            self.table_id,
            self.request_id,
            self.frag_index,
            self.frag_count,
            self.index,
            self.priority,
            self.draw,
            self.total,
            self.status,
            self.version,
            self.reserved,
        )

    @classmethod
    def unpack(cls, data: bytes | bytearray | memoryview) -> Header:
        """Decode the first 32 bytes of ``data`` (ProtocolError when shorter)."""
        if len(data) < HEADER_BYTES:
            raise ProtocolError(f"replay header needs {HEADER_BYTES} bytes, got {len(data)}")
        return cls(*HEADER_STRUCT.unpack_from(data))

    @property
    def op_name(self) -> str:
        return OPS.get(self.op, f"op{self.op}")

    @property
    def status_name(self) -> str:
        return STATUS.get(self.status, f"status{self.status}")


def pack_header(header: Header) -> bytes:
    """Same as ``header.pack()``."""
    return header.pack()


def unpack_header(data: bytes | bytearray | memoryview) -> Header:
    """Same as ``Header.unpack(data)``."""
    return Header.unpack(data)


def fragment_count(body_len: int) -> int:
    """Fragments needed for a body of ``body_len`` bytes (an empty body is one fragment)."""
    return max(1, -(-body_len // FRAGMENT_BYTES))


def fragment(header: Header, body: bytes | bytearray | memoryview) -> list[bytes]:
    """Cut ``body`` into datagrams: each is the header (with frag_index/frag_count set) plus up
    to 1400 body bytes. ProtocolError when the body needs more than 65535 fragments."""
    count = fragment_count(len(body))
    if count > MAX_FRAGMENTS:
        raise ProtocolError(f"body of {len(body)} bytes needs {count} fragments; at most {MAX_FRAGMENTS}")
    view = memoryview(body)
    # one packed header, its frag_index rewritten per fragment (a new Header per fragment was
    # most of an actor's Python per 128 KB push: 94 dataclasses.replace calls)
    head = bytearray(replace(header, frag_index=0, frag_count=count).pack())
    out = []
    for k in range(count):
        _FRAG_INDEX.pack_into(head, _FRAG_INDEX_OFFSET, k)
        out.append(bytes(head) + view[k * FRAGMENT_BYTES : (k + 1) * FRAGMENT_BYTES])
    return out


def split_datagram(data: bytes | bytearray | memoryview) -> tuple[Header, bytes]:
    """A datagram's header and its body piece, checked against the fragment rules."""
    header = Header.unpack(data)
    piece = bytes(data[HEADER_BYTES:])
    if header.frag_count < 1 or header.frag_index >= header.frag_count:
        raise ProtocolError(f"fragment {header.frag_index} of {header.frag_count}")
    if len(piece) > FRAGMENT_BYTES:
        raise ProtocolError(f"fragment body of {len(piece)} bytes; at most {FRAGMENT_BYTES}")
    if header.frag_index < header.frag_count - 1 and len(piece) != FRAGMENT_BYTES:
        raise ProtocolError(f"fragment {header.frag_index} is not the last but holds {len(piece)} bytes")
    return header, piece


@dataclass(slots=True)
class _Partial:
    header: Header
    pieces: dict[int, bytes] = field(default_factory=dict)
    last_seen: float = 0.0


class Reassembler:
    """Collects fragments into whole messages, keyed by (source, request_id).

    ``source`` is whatever identifies the sender (an (ip, port) tuple on a server, ``None`` on a
    client that talks to one server). Fragments of one message must agree on op, table_id,
    frag_count and status; a disagreeing fragment raises ProtocolError and drops the partial.
    """

    def __init__(self) -> None:
        self._partials: dict[tuple[object, int], _Partial] = {}

    def add(self, data: bytes | bytearray | memoryview, source: object = None) -> tuple[Header, bytes] | None:
        """Feed one datagram. Returns (header of fragment 0 with frag_index 0, whole body) when
        this completes the message, else None. Duplicate fragments are ignored."""
        return self.add_split(*split_datagram(data), source)

    def add_split(self, header: Header, piece: bytes, source: object = None) -> tuple[Header, bytes] | None:
        """:meth:`add` of a datagram the caller has already split (:func:`split_datagram`), so
        that a client that looks at each reply's header first does not parse it twice."""
        if header.frag_count == 1:
            return header, piece
        key = (source, header.request_id)
        partial = self._partials.get(key)
        if partial is None:
            partial = self._partials[key] = _Partial(replace(header, frag_index=0))
        else:
            h0 = partial.header
            if (h0.op, h0.table_id, h0.frag_count, h0.status) != (
                header.op,
                header.table_id,
                header.frag_count,
                header.status,
            ):
                del self._partials[key]
                raise ProtocolError(
                    f"fragment {header.frag_index} of request {header.request_id} disagrees with "
                    "the message's earlier fragments (op, table_id, frag_count or status)"
                )
        partial.last_seen = time.monotonic()
        partial.pieces.setdefault(header.frag_index, piece)
        if len(partial.pieces) < header.frag_count:
            return None
        del self._partials[key]
        body = b"".join(partial.pieces[k] for k in range(header.frag_count))
        return partial.header, body

    def missing(self, request_id: int, source: object = None) -> list[int]:
        """Fragment indexes not yet received for a partial message ([] when none is pending)."""
        partial = self._partials.get((source, request_id))
        if partial is None:
            return []
        return [k for k in range(partial.header.frag_count) if k not in partial.pieces]

    def pending(self, request_id: int, source: object = None) -> bool:
        """Whether some fragments of this message arrived but not all."""
        return (source, request_id) in self._partials

    def discard(self, request_id: int, source: object = None) -> None:
        """Forget a partial message."""
        self._partials.pop((source, request_id), None)

    def expire(self, max_age_s: float) -> int:
        """Drop partials whose last fragment is older than ``max_age_s``; returns how many."""
        now = time.monotonic()
        old = [k for k, p in self._partials.items() if now - p.last_seen > max_age_s]
        for k in old:
            del self._partials[k]
        return len(old)

    def __len__(self) -> int:
        return len(self._partials)


# --- bodies ---------------------------------------------------------------------------------


def _need(body: bytes | memoryview, offset: int, n: int, what: str) -> None:
    if offset + n > len(body):
        raise ProtocolError(f"{what}: body ends at {len(body)} bytes, field needs {offset + n}")


def _done(body: bytes | memoryview, offset: int, what: str) -> None:
    if offset != len(body):
        raise ProtocolError(f"{what}: {len(body) - offset} bytes after the last field")


def _encode_push(items: Iterable[tuple[float, bytes | bytearray | memoryview]], item: struct.Struct) -> bytes:
    parts = [b""]
    count = 0
    for priority, data in items:
        parts.append(item.pack(priority, len(data)))
        parts.append(bytes(data))
        count += 1
    parts[0] = _U32.pack(count)
    return b"".join(parts)


def encode_push_request(items: Iterable[tuple[float, bytes | bytearray | memoryview]]) -> bytes:
    """PUSH body: ``u32 count``, then per item ``f32 priority``, ``u32 length``, the bytes."""
    return _encode_push(items, _PUSH_ITEM)


def encode_push_leaves_request(items: Iterable[tuple[int, bytes | bytearray | memoryview]]) -> bytes:
    """Body of a PUSH with leaves (flags MULTI + INSERT, the switch path): as a PUSH, but each
    item's priority field is its fixed-point leaf value (u32), which the server hands back in
    its reply for the switch to set."""
    return _encode_push(items, _PUSH_LEAF_ITEM)


def decode_push_leaves_reply(body: bytes | memoryview) -> tuple[np.ndarray, np.ndarray, int]:
    """A PUSH_REPLY with leaves: the batch header (BATCH_DTYPE), its entries (ENTRY_DTYPE: each
    item's slot, leaf value, key + 1 and, once the switch has set them, the tree's total and the
    result) and the first key (item i's key is first_key + i)."""
    _need(body, 0, BATCH_DTYPE.itemsize, "PUSH_REPLY batch")
    batch = np.frombuffer(body, BATCH_DTYPE, 1)
    count = int(batch["count"][0])
    end = BATCH_DTYPE.itemsize + ENTRY_DTYPE.itemsize * count
    _need(body, end, 8, "PUSH_REPLY entries and first key")
    _done(body, end + 8, "PUSH_REPLY with leaves")
    entries = np.frombuffer(body, ENTRY_DTYPE, count, BATCH_DTYPE.itemsize)
    (first_key,) = _U64.unpack_from(body, end)
    return batch, entries, first_key


def _decode_push(body: bytes | memoryview, item: struct.Struct) -> list[tuple[float, bytes]]:
    _need(body, 0, 4, "PUSH")
    (count,) = _U32.unpack_from(body)
    off, items = 4, []
    for _ in range(count):
        _need(body, off, item.size, "PUSH item")
        priority, length = item.unpack_from(body, off)
        off += item.size
        _need(body, off, length, "PUSH item data")
        items.append((priority, bytes(body[off : off + length])))
        off += length
    _done(body, off, "PUSH")
    return items


def decode_push_request(body: bytes | memoryview) -> list[tuple[float, bytes]]:
    """Inverse of :func:`encode_push_request`: [(priority, data), ...]."""
    return _decode_push(body, _PUSH_ITEM)


def decode_push_leaves_request(body: bytes | memoryview) -> list[tuple[int, bytes]]:
    """Inverse of :func:`encode_push_leaves_request`: [(leaf, data), ...]."""
    return _decode_push(body, _PUSH_LEAF_ITEM)  # type: ignore[return-value]


def encode_push_reply(keys: Sequence[int]) -> bytes:
    """PUSH_REPLY body: ``u32 count``, then ``u64 key`` per item."""
    return _U32.pack(len(keys)) + b"".join(_U64.pack(k) for k in keys)


def decode_push_reply(body: bytes | memoryview) -> list[int]:
    """Inverse of :func:`encode_push_reply`: the keys, in push order."""
    _need(body, 0, 4, "PUSH_REPLY")
    (count,) = _U32.unpack_from(body)
    _need(body, 4, 8 * count, "PUSH_REPLY keys")
    _done(body, 4 + 8 * count, "PUSH_REPLY")
    return list(struct.unpack_from(f"!{count}Q", body, 4))


def encode_sample_request(batch_size: int, beta: float) -> bytes:
    """SAMPLE body: ``u32 batch_size``, ``f32 beta``."""
    return _SAMPLE_REQ.pack(batch_size, beta)


def decode_sample_request(body: bytes | memoryview) -> tuple[int, float]:
    """Inverse of :func:`encode_sample_request`: (batch_size, beta)."""
    if len(body) != _SAMPLE_REQ.size:
        raise ProtocolError(f"SAMPLE body is {_SAMPLE_REQ.size} bytes, got {len(body)}")
    batch_size, beta = _SAMPLE_REQ.unpack(body)
    return batch_size, beta


@dataclass(slots=True)
class SampledItem:
    """One item of a SAMPLE_REPLY."""

    key: int
    probability: float
    weight: float
    data: bytes


@dataclass(slots=True)
class SampleReply:
    """A decoded SAMPLE_REPLY body."""

    table_size: int
    items: list[SampledItem]


def encode_sample_reply(table_size: int, items: Sequence[SampledItem]) -> bytes:
    """SAMPLE_REPLY body: ``u64 table_size``, ``u32 count``, then per item ``u64 key``,
    ``f32 probability``, ``f32 weight``, ``u32 length``, the bytes."""
    parts = [_SAMPLE_HEAD.pack(table_size, len(items))]
    for it in items:
        parts.append(_SAMPLE_ITEM.pack(it.key, it.probability, it.weight, len(it.data)))
        parts.append(bytes(it.data))
    return b"".join(parts)


def decode_sample_reply(body: bytes | memoryview) -> SampleReply:
    """Inverse of :func:`encode_sample_reply`."""
    _need(body, 0, _SAMPLE_HEAD.size, "SAMPLE_REPLY")
    table_size, count = _SAMPLE_HEAD.unpack_from(body)
    off, items = _SAMPLE_HEAD.size, []
    for _ in range(count):
        _need(body, off, _SAMPLE_ITEM.size, "SAMPLE_REPLY item")
        key, prob, weight, length = _SAMPLE_ITEM.unpack_from(body, off)
        off += _SAMPLE_ITEM.size
        _need(body, off, length, "SAMPLE_REPLY item data")
        items.append(SampledItem(key, prob, weight, bytes(body[off : off + length])))
        off += length
    _done(body, off, "SAMPLE_REPLY")
    return SampleReply(table_size, items)


def encode_update_request(entries: Iterable[tuple[int, float]]) -> bytes:
    """UPDATE_PRIORITY body: ``u32 count``, then per entry ``u64 key``, ``f32 priority``."""
    packed = [_UPDATE_ENTRY.pack(k, p) for k, p in entries]
    return _U32.pack(len(packed)) + b"".join(packed)


def decode_update_request(body: bytes | memoryview) -> list[tuple[int, float]]:
    """Inverse of :func:`encode_update_request`: [(key, priority), ...]."""
    _need(body, 0, 4, "UPDATE_PRIORITY")
    (count,) = _U32.unpack_from(body)
    _need(body, 4, _UPDATE_ENTRY.size * count, "UPDATE_PRIORITY entries")
    _done(body, 4 + _UPDATE_ENTRY.size * count, "UPDATE_PRIORITY")
    return [_UPDATE_ENTRY.unpack_from(body, 4 + i * _UPDATE_ENTRY.size) for i in range(count)]


def encode_update_reply(updated: int, ignored: int) -> bytes:
    """UPDATE_REPLY body: ``u32 updated``, ``u32 ignored``."""
    return _UPDATE_REPLY.pack(updated, ignored)


def decode_update_reply(body: bytes | memoryview) -> tuple[int, int]:
    """Inverse of :func:`encode_update_reply`: (updated, ignored). An empty body (the switch
    path's UPDATE_REPLY) decodes as (0, 0)."""
    if len(body) == 0:
        return 0, 0
    if len(body) != _UPDATE_REPLY.size:
        raise ProtocolError(f"UPDATE_REPLY body is {_UPDATE_REPLY.size} bytes, got {len(body)}")
    updated, ignored = _UPDATE_REPLY.unpack(body)
    return updated, ignored


def encode_set_params(version: int, blob: bytes | bytearray | memoryview) -> bytes:
    """SET_PARAMS body: ``u64 version``, then the blob."""
    return _U64.pack(version) + bytes(blob)


def decode_set_params(body: bytes | memoryview) -> tuple[int, bytes]:
    """Inverse of :func:`encode_set_params`: (version, blob)."""
    _need(body, 0, 8, "SET_PARAMS")
    return _U64.unpack_from(body)[0], bytes(body[8:])


def encode_set_params_reply(version: int) -> bytes:
    """SET_PARAMS_REPLY body: ``u64 version`` (the version the slot holds now)."""
    return _U64.pack(version)


def decode_set_params_reply(body: bytes | memoryview) -> int:
    """Inverse of :func:`encode_set_params_reply`."""
    if len(body) != 8:
        raise ProtocolError(f"SET_PARAMS_REPLY body is 8 bytes, got {len(body)}")
    return _U64.unpack(body)[0]


def encode_get_params_reply(version: int, blob: bytes | bytearray | memoryview) -> bytes:
    """GET_PARAMS_REPLY body: ``u64 version`` (0: never set), then the blob."""
    return _U64.pack(version) + bytes(blob)


def decode_get_params_reply(body: bytes | memoryview) -> tuple[int, bytes]:
    """Inverse of :func:`encode_get_params_reply`: (version, blob)."""
    _need(body, 0, 8, "GET_PARAMS_REPLY")
    return _U64.unpack_from(body)[0], bytes(body[8:])


def encode_info_reply(info: dict) -> bytes:
    """INFO_REPLY body: UTF-8 JSON."""
    return json.dumps(info).encode()


def decode_info_reply(body: bytes | memoryview) -> dict:
    """Inverse of :func:`encode_info_reply`."""
    try:
        return json.loads(bytes(body).decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError(f"INFO_REPLY is not UTF-8 JSON: {e}") from e


def encode_resend(frag_indexes: Sequence[int]) -> bytes:
    """RESEND body: ``u32 count``, then ``u16 frag_index`` per missing reply fragment."""
    return _U32.pack(len(frag_indexes)) + b"".join(_U16.pack(i) for i in frag_indexes)


def decode_resend(body: bytes | memoryview) -> list[int]:
    """Inverse of :func:`encode_resend`."""
    _need(body, 0, 4, "RESEND")
    (count,) = _U32.unpack_from(body)
    _need(body, 4, 2 * count, "RESEND indexes")
    _done(body, 4 + 2 * count, "RESEND")
    return list(struct.unpack_from(f"!{count}H", body, 4))


def encode_checkpoint_reply(path: str) -> bytes:
    """CHECKPOINT_REPLY body: the UTF-8 path written."""
    return path.encode()


def decode_checkpoint_reply(body: bytes | memoryview) -> str:
    """Inverse of :func:`encode_checkpoint_reply`."""
    return bytes(body).decode("utf-8", errors="replace")


def encode_error(message: str) -> bytes:
    """ERROR body: a UTF-8 message."""
    return message.encode()


def decode_error(body: bytes | memoryview) -> str:
    """Inverse of :func:`encode_error` (undecodable bytes are replaced, never raised on)."""
    return bytes(body).decode("utf-8", errors="replace")


def fixed_point_priority(priority: float, alpha: float, leaves: int) -> int:
    """Switch-path leaf value of a priority: ``round(p^alpha * 2^12)``, at least 1 for a positive
    priority, at most ``2^32 // leaves - 1`` so the root cannot overflow; 0 for priority 0."""
    if not math.isfinite(priority) or priority < 0:
        raise ValueError(f"priority must be finite and >= 0, got {priority}")
    if leaves < 1:
        raise ValueError("a switch tree has at least one leaf")
    if priority == 0:
        return 0
    cap = (1 << 32) // leaves - 1
    try:
        scaled = priority**alpha * (1 << FIXED_POINT_SHIFT)
    except OverflowError:
        return max(1, cap)
    if not math.isfinite(scaled) or scaled >= cap:
        return max(1, cap)
    return max(1, min(cap, round(scaled)))
