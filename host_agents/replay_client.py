"""One prioritized-replay API, whichever path serves it; agents and benchmarks pick the path by
configuration (``ReplayConfig.backend``) and ``make_replay_client``:

- ``"host"``: ``HostReplayClient`` speaks docs/replay_protocol.md over UDP to the C replay
  server (``dpdk_fallback/``), whether the server uses kernel sockets or DPDK I/O;
- ``"switch"``: ``SwitchReplayClient``, the doc's switch path: items live on the server, their
  priorities in the switch's register sum-tree, updates and draws 16 to a datagram (batches);
- ``"redis"``: ``RedisReplayClient``, the Redis baseline (host_agents.redis_replay).

Every client: ``insert(items, priorities) -> keys``, ``sample(batch_size, beta) ->
SampleBatch``, ``update_priorities(keys, priorities)``, ``set_params`` / ``get_params``,
``info()``, ``close()``, and use as a context manager. Clients are not thread-safe: give each
thread its own. Bad arguments raise ValueError before anything is sent; a server's ERROR reply
raises ``ReplayError`` (a ValueError carrying the status); no answer after ``max_tries`` raises
``ReplayTimeout``.
"""

from __future__ import annotations

import abc
import errno
import logging
import math
import os
import select
import socket
import struct
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType

import numpy as np

from host_agents.aggio import AggIOUnavailable, BatchSocket
from host_agents.aggio import load as load_aggio
from host_agents.replay_protocol import (
    BATCH_DTYPE,
    ENTRY_DTYPE,
    FIXED_POINT_SHIFT,
    FRAGMENT_BYTES,
    HEADER_BYTES,
    HEADER_DTYPE,
    MAX_BATCH_ENTRIES,
    MAX_MESSAGE_BYTES,
    REPLAY_UDP_PORT,
    STATUS,
    SWITCH_BATCH_DEFAULT,
    EntryResult,
    Flag,
    Header,
    Op,
    ProtocolError,
    Reassembler,
    Status,
    decode_error,
    decode_get_params_reply,
    decode_info_reply,
    decode_push_leaves_reply,
    decode_push_reply,
    decode_sample_reply,
    decode_set_params_reply,
    decode_update_reply,
    encode_push_leaves_request,
    encode_push_request,
    encode_resend,
    encode_sample_request,
    encode_set_params,
    encode_update_request,
    fragment,
    reply_op,
    split_datagram,
)
from host_agents.replay_protocol import VERSION as PROTOCOL_VERSION
from host_agents.sum_tree import SampleBatch, check_batch_size, check_beta, check_priorities

__all__ = [
    "HostReplayClient",
    "RedisReplayClient",
    "ReplayClient",
    "ReplayConfig",
    "ReplayError",
    "ReplayTimeout",
    "SampleBatch",
    "SwitchReplayClient",
    "make_replay_client",
]

log = logging.getLogger("innet.replay")

BACKENDS = ("host", "switch", "redis")
_F32_MAX = float(np.finfo(np.float32).max)
_RESEND_MAX = (FRAGMENT_BYTES - 4) // 2  # fragment indexes one RESEND datagram can name
_PUSH_ITEM_OVERHEAD = 8  # f32 priority (a PUSH with leaves: u32 leaf) + u32 length
_UPDATE_ENTRY_BYTES = 12  # u64 key + f32 priority
# UDP GSO (linux/udp.h): the segment size as a native u16 in a SOL_UDP control message; a send
# holds at most 64 segments and one IPv4 packet's 65,507 bytes of UDP payload
_UDP_SEGMENT, _GSO_MAX_SEGMENTS, _GSO_MAX_BYTES = 103, 64, 65507
_U16_NATIVE = struct.Struct("=H")


@dataclass
class ReplayConfig:
    """Where and how to reach a replay table. Flat on purpose: one CLI flag per field."""

    backend: str = "host"
    """which path serves the table: "host" (C server over UDP), "switch" (priorities in the
    switch, items on the server) or "redis" (the Redis baseline)"""
    server_ip: str = "127.0.0.1"
    """the replay server's IPv4 address (host and switch paths; switch datagrams are addressed
    to the server too, the switch intercepts them)"""
    server_port: int = REPLAY_UDP_PORT
    """the replay server's UDP port"""
    table_id: int = 0
    """replay table, 0-based in the server's table order (a Redis key suffix on the Redis path)"""
    max_size: int = 1_000_000
    """the table's capacity; must equal the server's: the switch path maps key -> leaf
    key % max_size, the Redis learner keeps this many items"""
    alpha: float = 0.6
    """priority exponent. The host server applies its own per-table alpha; the switch path and
    the Redis learner apply this one (switch: leaf = round(p^alpha * 2^12))"""
    beta: float = 0.4
    """default importance-sampling exponent for sample() when none is given"""
    switch_leaves: int | None = None
    """switch path: leaves of the switch's tree (a power of two >= max_size); bounds a leaf to
    2^32 / leaves - 1 so the root cannot overflow. None: the smallest power of two >= max_size"""
    timeout_s: float = 0.2
    """seconds to wait for a reply (or for the next fragment of one) before resending"""
    max_tries: int = 10
    """sends of one request (or rounds without progress) before ReplayTimeout"""
    window: int = 256
    """switch path: datagrams outstanding at once (UPDATE_PRIORITY and SAMPLE datagrams)"""
    switch_batch: int = SWITCH_BATCH_DEFAULT
    """switch path: priority updates or SAMPLE draws per datagram (a batch, flag MULTI, that the
    switch recirculates once per entry), 1..64; 1 sends one datagram per update or draw (the
    form of switches without batches). Pushes carry their items' leaves in the server's reply
    whatever this is."""
    max_message_bytes: int = 8 << 20
    """host path: an insert or update larger than this is split into several requests (keep
    at or below the server's --max-message-bytes)"""
    redis_url: str = "redis://127.0.0.1:6379/0"
    """Redis path: the Redis server"""
    redis_prefix: str = "innet"
    """Redis path: key prefix, so several experiments can share one Redis"""
    seed: int | None = None
    """seeds the client's random draws (switch strata, Redis learner sampling, request ids)"""
    random_draw: bool = False
    """switch path: let the switch draw each SAMPLE's random number (RANDOM_DRAW flag) instead
    of the client's stratified draws"""
    bind_ip: str = "0.0.0.0"
    """local address of the client's UDP socket"""
    rcvbuf_bytes: int = 8 << 20
    """SO_RCVBUF of the client's UDP socket (SO_RCVBUFFORCE is tried first, as root): a 512-item
    batch of Atari frames is ~11000 datagrams arriving in one burst"""

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if not 1 <= self.server_port <= 65535:
            raise ValueError(f"server_port must be 1..65535, got {self.server_port}")
        if not 0 <= self.table_id < 1 << 16:
            raise ValueError(f"table_id must fit in 16 bits, got {self.table_id}")
        if not 1 <= self.max_size < 1 << 32:
            raise ValueError(f"max_size must be in [1, 2^32), got {self.max_size}")
        if not (math.isfinite(self.alpha) and self.alpha >= 0):
            raise ValueError(f"alpha must be finite and >= 0, got {self.alpha}")
        check_beta(self.beta)
        if not (self.timeout_s > 0 and self.max_tries >= 1 and self.window >= 1):
            raise ValueError("timeout_s must be > 0, max_tries and window >= 1")
        if not 1 <= self.switch_batch <= MAX_BATCH_ENTRIES:
            raise ValueError(f"switch_batch must be 1..{MAX_BATCH_ENTRIES}, got {self.switch_batch}")
        if self.max_message_bytes < FRAGMENT_BYTES:
            raise ValueError(f"max_message_bytes must be at least {FRAGMENT_BYTES}")
        if self.switch_leaves is not None:
            n = self.switch_leaves
            if n < 1 or n & (n - 1) or n < self.max_size:
                raise ValueError(f"switch_leaves must be a power of two >= max_size, got {n}")

    @property
    def leaves(self) -> int:
        """Leaves of the switch's tree for this table."""
        return self.switch_leaves or 1 << (self.max_size - 1).bit_length()


class ReplayError(ValueError):
    """The server (or switch) answered ERROR: ``status`` (a Status code) and its message."""

    def __init__(self, status: int, message: str, op: str = "", request_id: int | None = None) -> None:
        self.status = status
        self.status_name = STATUS.get(status, f"status{status}")
        self.message, self.op, self.request_id = message, op, request_id
        where = f" ({op} request {request_id})" if op else ""
        super().__init__(f"{self.status_name}{where}: {message}")

    def __reduce__(self) -> tuple:  # pickled as its fields (host_agents.replay_pipeline's process)
        return type(self), (self.status, self.message, self.op, self.request_id)


class ReplayTimeout(TimeoutError):
    """No (complete) answer after every try: the server, the switch or the path is gone."""

    def __init__(
        self, op: str, request_id: int, server: tuple[str, int], tries: int, detail: str = ""
    ) -> None:
        self.op, self.request_id, self.server, self.tries = op, request_id, server, tries
        self.detail = detail
        extra = f"; {detail}" if detail else ""
        super().__init__(
            f"{op} request {request_id} to {server[0]}:{server[1]}: no reply after {tries} tries{extra}"
        )

    def __reduce__(self) -> tuple:  # pickled as its fields (host_agents.replay_pipeline's process)
        return type(self), (self.op, self.request_id, self.server, self.tries, self.detail)


def _check_items(items: Sequence[bytes]) -> list[bytes]:
    if isinstance(items, (bytes, bytearray, memoryview)):
        raise ValueError("items must be a sequence of bytes objects, not one bytes object")
    out = []
    for it in items:
        if not isinstance(it, (bytes, bytearray, memoryview)):
            raise ValueError(f"items must be bytes, got {type(it).__name__}")
        out.append(bytes(it))
    return out


def _check_wire_priorities(priorities: np.ndarray | Sequence[float], count: int, what: str) -> np.ndarray:
    p = check_priorities(priorities, count, what)
    if p.size and p.max() > _F32_MAX:
        raise ValueError(f"priorities travel as f32: {p.max()} is too large")
    return p


def _check_keys(keys: np.ndarray | Sequence[int]) -> np.ndarray:
    k = np.asarray(keys)
    if k.size and k.dtype.kind not in "iu":
        raise ValueError(f"keys must be integers, got dtype {k.dtype}")
    if k.size and k.dtype.kind == "i" and k.min() < 0:
        raise ValueError("keys must be >= 0")
    return k.astype(np.uint64).reshape(-1)


def _chunks(sizes: Sequence[int], limit: int, max_count: int | None = None) -> list[tuple[int, int]]:
    """[start, end) runs of consecutive entries whose sizes add up to at most ``limit`` (an
    entry larger than ``limit`` gets a run of its own; the server judges it), and of at most
    ``max_count`` entries."""
    runs, start, total = [], 0, 0
    for i, s in enumerate(sizes):
        if i > start and (total + s > limit or (max_count is not None and i - start >= max_count)):
            runs.append((start, i))
            start, total = i, 0
        total += s
    if start < len(sizes):
        runs.append((start, len(sizes)))
    return runs


class ReplayClient(abc.ABC):
    """The API every replay path offers (see the module docstring)."""

    config: ReplayConfig

    @abc.abstractmethod
    def insert(self, items: Sequence[bytes], priorities: np.ndarray | Sequence[float]) -> np.ndarray:
        """Store items with their initial priorities; returns their keys (uint64)."""

    @abc.abstractmethod
    def sample(self, batch_size: int, beta: float | None = None) -> SampleBatch:
        """Draw ``batch_size`` items proportionally to priority^alpha, with replacement."""

    @abc.abstractmethod
    def update_priorities(
        self, keys: np.ndarray | Sequence[int], priorities: np.ndarray | Sequence[float]
    ) -> tuple[int, int]:
        """Set new priorities; returns (updated, ignored) where ignored keys are gone."""

    @abc.abstractmethod
    def set_params(self, blob: bytes, version: int, slot: int = 0) -> int:
        """Publish model parameters in ``slot``; returns the version stored."""

    @abc.abstractmethod
    def get_params(self, slot: int = 0) -> tuple[int, bytes]:
        """(version, blob) of ``slot``; version 0 when never set."""

    @abc.abstractmethod
    def info(self) -> dict:
        """Tables and counters, as the path reports them."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release sockets and connections."""

    def _beta(self, beta: float | None) -> float:
        return check_beta(self.config.beta if beta is None else beta)

    def __enter__(self) -> ReplayClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _open_udp_socket(config: ReplayConfig) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        # SO_RCVBUFFORCE passes net.core.rmem_max (root only); fall back to the capped SO_RCVBUF.
        sock.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), config.rcvbuf_bytes)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, config.rcvbuf_bytes)
    try:
        sock.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_SNDBUFFORCE", 32), 4 << 20)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    sock.bind((config.bind_ip, 0))
    sock.setblocking(True)
    return sock


def _resolve(ip: str, port: int) -> tuple[str, int]:
    """The server as recvfrom reports it (replies are matched on it)."""
    return socket.getaddrinfo(ip, port, socket.AF_INET, socket.SOCK_DGRAM)[0][4][:2]


class HostReplayClient(ReplayClient):
    """Requests/replies over UDP to the C replay server (sockets or DPDK I/O alike).

    Each request gets a fresh request_id (random start); a request without a reply after
    ``timeout_s`` is sent again with the same request_id (the server answers a repeat from its
    reply cache, so a repeated PUSH does not store twice); missing fragments of a long reply are
    asked for with RESEND. ``max_tries`` rounds without progress raise ReplayTimeout.
    """

    def __init__(self, config: ReplayConfig | None = None, **overrides: object) -> None:
        self.config = config or ReplayConfig(**overrides)  # type: ignore[arg-type]
        self.server = _resolve(self.config.server_ip, self.config.server_port)
        self.rng = np.random.default_rng(self.config.seed)
        self.sock = _open_udp_socket(self.config)
        self._gso = True  # UDP GSO for runs of equal fragments, until the kernel refuses it
        # not from the seed: a client restarted with the same seed must not reuse request ids
        # that the server may still hold replies for
        self._next_id = int.from_bytes(os.urandom(4), "big")
        self._buf = bytearray(65536)
        self.stats = {"requests": 0, "resent_requests": 0, "resend_asks": 0, "stray_datagrams": 0}

    def close(self) -> None:
        self.sock.close()

    def _request_id(self) -> int:
        rid = self._next_id
        self._next_id = (rid + 1) & 0xFFFFFFFF
        return rid

    def _recv(self, deadline: float) -> tuple[bytes, tuple[str, int]] | None:
        """One datagram, or None at the deadline."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        ready, _, _ = select.select([self.sock], [], [], remaining)
        if not ready:
            return None
        try:
            n, addr = self.sock.recvfrom_into(self._buf)
        except ConnectionRefusedError:
            return None  # an ICMP port-unreachable surfaced: nobody listens, the tries decide
        return bytes(self._buf[:n]), addr

    def _send_all(self, datagrams: Sequence[bytes]) -> None:
        """Send the datagrams in order. Runs of equal-size datagrams (a long message's full
        fragments) go out as UDP GSO sends, one system call per up to 64 KiB, which the kernel
        cuts into the same datagrams (a PUSH of 32 x 4 KB is 94 of them); where the kernel
        refuses GSO, one sendto per datagram from then on."""
        i, n = 0, len(datagrams)
        while i < n:
            size = len(datagrams[i])
            j = i + 1
            while j < n and j - i < _GSO_MAX_SEGMENTS and len(datagrams[j]) == size \
                    and (j - i + 1) * size <= _GSO_MAX_BYTES:
                j += 1
            if j - i > 1 and self._gso:
                try:
                    gso = [(socket.SOL_UDP, _UDP_SEGMENT, _U16_NATIVE.pack(size))]
                    self.sock.sendmsg([b"".join(datagrams[i:j])], gso, 0, self.server)
                    i = j
                    continue
                except OSError as e:
                    if e.errno not in (errno.EINVAL, errno.EIO, errno.ENOPROTOOPT, errno.EOPNOTSUPP):
                        raise
                    self._gso = False  # an old kernel or a device without UDP GSO: per datagram
                    log.debug("UDP GSO refused (%s): one sendto per datagram", e)
            for d in datagrams[i:j]:
                self.sock.sendto(d, self.server)
            i = j

    def call(
        self, op: Op, body: bytes = b"", table_id: int | None = None, flags: int = 0
    ) -> tuple[Header, bytes]:
        """Send one request and return the reply (header, whole body); raises ReplayError for an
        ERROR reply and ReplayTimeout when the server stays silent."""
        table = self.config.table_id if table_id is None else table_id
        rid = self._request_id()
        datagrams = fragment(Header(op=int(op), flags=flags, table_id=table, request_id=rid), body)
        reasm = Reassembler()
        want = reply_op(op)
        self.stats["requests"] += 1
        # Bounds: whole sends of the request (first one included), and rounds in a row in which
        # no new reply fragment arrived. A long reply that keeps arriving is never cut short.
        sends, quiet_rounds = 1, 0
        received: set[int] = set()
        self._send_all(datagrams)

        def give_up(detail: str = "") -> ReplayTimeout:
            reasm.discard(rid)
            return ReplayTimeout(op.name, rid, self.server, max(sends, quiet_rounds), detail)

        while True:
            deadline = time.monotonic() + self.config.timeout_s
            progressed = False
            while True:
                got = self._recv(deadline)
                if got is None:
                    break
                data, addr = got
                try:
                    header, piece = split_datagram(data)
                except ProtocolError as e:
                    self.stats["stray_datagrams"] += 1
                    log.debug("dropped malformed datagram from %s: %s", addr, e)
                    continue
                if addr != self.server or header.request_id != rid:
                    # A late copy of an earlier request's reply (after a resend), or not ours.
                    self.stats["stray_datagrams"] += 1
                    continue
                deadline = time.monotonic() + self.config.timeout_s
                if header.op == Op.ERROR and header.status == Status.NOT_CACHED:
                    # Our RESEND came too late: the server forgot the reply, ask again in full.
                    if sends >= self.config.max_tries:
                        raise give_up("the server kept forgetting its reply (NOT_CACHED)")
                    log.debug("request %d: reply no longer cached, sending the request again", rid)
                    reasm.discard(rid)
                    received.clear()
                    sends += 1
                    self.stats["resent_requests"] += 1
                    self._send_all(datagrams)
                    continue
                if header.frag_index not in received:
                    received.add(header.frag_index)
                    progressed = True
                try:
                    done = reasm.add_split(header, piece)
                except ProtocolError as e:
                    log.warning("request %d: bad reply fragment: %s", rid, e)
                    continue
                if done is None:
                    continue
                rheader, rbody = done
                if rheader.op == Op.ERROR:
                    raise ReplayError(rheader.status, decode_error(rbody), op.name, rid)
                if rheader.op != want:
                    raise ProtocolError(f"{op.name} request {rid} got a reply with op {rheader.op_name}")
                return rheader, rbody
            quiet_rounds = 0 if progressed else quiet_rounds + 1
            missing = reasm.missing(rid)
            if quiet_rounds >= self.config.max_tries:
                raise give_up(f"{len(missing)} reply fragments still missing" if missing else "")
            if missing:
                self.stats["resend_asks"] += 1
                log.debug("request %d: asking for %d missing reply fragments", rid, len(missing))
                resend = encode_resend(missing[:_RESEND_MAX])
                self._send_all(fragment(Header(op=Op.RESEND, table_id=table, request_id=rid), resend))
            else:
                if sends >= self.config.max_tries:
                    raise give_up()
                sends += 1
                self.stats["resent_requests"] += 1
                log.debug(
                    "request %d (%s): no reply in %.3f s, sending again", rid, op.name, self.config.timeout_s
                )
                self._send_all(datagrams)

    def insert(self, items: Sequence[bytes], priorities: np.ndarray | Sequence[float]) -> np.ndarray:
        data = _check_items(items)
        p = _check_wire_priorities(priorities, len(data), "items")
        keys: list[int] = []
        limit = min(self.config.max_message_bytes, MAX_MESSAGE_BYTES) - 4
        for start, end in _chunks([len(d) + _PUSH_ITEM_OVERHEAD for d in data], limit):
            body = encode_push_request(zip(p[start:end].tolist(), data[start:end], strict=True))
            _, reply = self.call(Op.PUSH, body)
            got = decode_push_reply(reply)
            if len(got) != end - start:
                raise ProtocolError(f"PUSH of {end - start} items got {len(got)} keys back")
            keys.extend(got)
        return np.array(keys, dtype=np.uint64)

    def sample(self, batch_size: int, beta: float | None = None) -> SampleBatch:
        b = check_batch_size(batch_size)
        if b >= 1 << 32:
            raise ValueError(f"batch_size must fit in 32 bits, got {b}")
        _, body = self.call(Op.SAMPLE, encode_sample_request(b, self._beta(beta)))
        reply = decode_sample_reply(body)
        return SampleBatch(
            keys=np.array([it.key for it in reply.items], dtype=np.uint64),
            items=[it.data for it in reply.items],
            probabilities=np.array([it.probability for it in reply.items], dtype=np.float64),
            weights=np.array([it.weight for it in reply.items], dtype=np.float64),
            table_size=reply.table_size,
        )

    def update_priorities(
        self, keys: np.ndarray | Sequence[int], priorities: np.ndarray | Sequence[float]
    ) -> tuple[int, int]:
        k = _check_keys(keys)
        p = _check_wire_priorities(priorities, k.size, "keys")
        updated = ignored = 0
        if k.size == 0:
            return 0, 0
        per_message = max(
            1, (min(self.config.max_message_bytes, MAX_MESSAGE_BYTES) - 4) // _UPDATE_ENTRY_BYTES
        )
        for start in range(0, k.size, per_message):
            entries = zip(
                k[start : start + per_message].tolist(), p[start : start + per_message].tolist(), strict=True
            )
            _, body = self.call(Op.UPDATE_PRIORITY, encode_update_request(entries))
            u, i = decode_update_reply(body)
            updated, ignored = updated + u, ignored + i
        return updated, ignored

    def set_params(self, blob: bytes, version: int, slot: int = 0) -> int:
        if not 0 <= version < 1 << 64:
            raise ValueError(f"version must fit in a u64, got {version}")
        _, body = self.call(Op.SET_PARAMS, encode_set_params(version, blob), table_id=slot)
        return decode_set_params_reply(body)

    def get_params(self, slot: int = 0) -> tuple[int, bytes]:
        _, body = self.call(Op.GET_PARAMS, b"", table_id=slot)
        return decode_get_params_reply(body)

    def info(self) -> dict:
        _, body = self.call(Op.INFO)
        return decode_info_reply(body)

    def checkpoint(self) -> str:
        """Ask the server to write a checkpoint; returns the path it wrote."""
        _, body = self.call(Op.CHECKPOINT)
        return bytes(body).decode("utf-8", errors="replace")


def switch_priorities(priorities: np.ndarray, alpha: float, leaves: int) -> np.ndarray:
    """Fixed-point leaf values for the switch: round(p^alpha · 2^12), at least 1 for p > 0, at most
    2^32 / leaves − 1 (uint32); fixed_point_priority for a whole array (a Python call per item
    cost the learner ~5 us each)."""
    p = np.asarray(priorities, dtype=np.float64).ravel()
    bad = np.flatnonzero(~np.isfinite(p) | (p < 0))
    if bad.size:
        raise ValueError(f"priority must be finite and >= 0, got {p[bad[0]]}")
    if leaves < 1:
        raise ValueError("a switch tree has at least one leaf")
    cap = (1 << 32) // leaves - 1
    with np.errstate(over="ignore"):
        scaled = np.power(p, alpha) * float(1 << FIXED_POINT_SHIFT)
    # round half to even, as Python's round(); at least 1, at most the cap (also when inf)
    top = max(1, cap)
    out = np.where(np.isfinite(scaled) & (scaled < cap), np.clip(np.rint(scaled), 1, top), top)
    out[p == 0] = 0
    return out.astype(np.uint32)


def stratified_draws(batch_size: int, rng: np.random.Generator) -> np.ndarray:
    """One uniform draw per stratum as the switch's u32 fraction: u_i = (i + U_i) / B · 2^32."""
    u = (np.arange(batch_size) + rng.random(batch_size)) / batch_size * float(1 << 32)
    return np.minimum(np.floor(u), float((1 << 32) - 1)).astype(np.uint32)


# bytes per row of the switch client's request table: a SAMPLE (header + 8-byte body) is the longest
_REQUEST_ROW_BYTES = 64

# a one-item SAMPLE_REPLY body's fixed part: table_size, count, then the item's key,
# probability, weight and length (docs/replay_protocol.md); the item's bytes follow
_SAMPLE_ONE_DTYPE = np.dtype([("table_size", ">u8"), ("count", ">u4"), ("key", ">u8"), ("probability", ">f4"),
                              ("weight", ">f4"), ("length", ">u4")])  # fmt: skip
# an item's fixed part in a SAMPLE_REPLY; its bytes follow
_ITEM_HEAD = np.dtype([("key", ">u8"), ("probability", ">f4"), ("weight", ">f4"), ("length", ">u4")])


def _raise_bad_index(entries: np.ndarray, op: Op, request_id: int | None = None) -> None:
    """ReplayError when the switch answered an UPDATE batch entry (or a pushed item's leaf) with
    BAD_INDEX: the client's table size differs from the one installed in the switch."""
    bad = np.flatnonzero(entries["result"] == EntryResult.BAD_INDEX)
    if bad.size:
        raise ReplayError(
            Status.BAD_INDEX,
            f"leaf {int(entries['index'][bad[0]])} is beyond the switch table's leaves ({bad.size} of "
            f"{entries.size} entries; switch_leaves/max_size differ from the installed table?)",
            op.name, request_id,
        )  # fmt: skip


@dataclass
class _Replies:
    """The replies of one switch-path exchange, in request order: headers as HEADER_DTYPE
    records, each reply's datagram in a row (header included) unless it came in fragments."""

    heads: np.ndarray
    rows: np.ndarray
    lens: np.ndarray
    reassembled: dict[int, bytes] = field(default_factory=dict)

    @classmethod
    def from_pairs(cls, pairs: list[tuple[Header, bytes]]) -> _Replies:
        n = len(pairs)
        out = cls(np.zeros(n, HEADER_DTYPE), np.zeros((n, 0), np.uint8), np.zeros(n, np.int64))
        for i, pair in enumerate(pairs):
            out.set_pair(i, pair)
        return out

    def set_pair(self, i: int, pair: tuple[Header, bytes]) -> None:
        self.heads[i] = np.frombuffer(pair[0].pack(), HEADER_DTYPE)[0]
        self.reassembled[i] = pair[1]

    def body(self, i: int) -> bytes:
        if i in self.reassembled:
            return self.reassembled[i]
        return self.rows[i, HEADER_BYTES : self.lens[i]].tobytes()

    def raise_first_error(self, op: Op) -> None:
        """ReplayError for the first ERROR reply of the exchange, if any (raised once every
        request has its reply, so that none is left unanswered)."""
        errors = np.flatnonzero(self.heads["op"] == Op.ERROR)
        if errors.size:
            i = int(errors[0])
            raise ReplayError(int(self.heads["status"][i]), decode_error(self.body(i)), op.name,
                              int(self.heads["request_id"][i]))  # fmt: skip


class _EngineState:
    """The C exchange loop's state for up to ``cap`` requests over one BatchSocket: its call
    struct, whose pointers are set once, and the arrays they point to."""

    def __init__(self, cap: int, bio: BatchSocket, rx_rows: int) -> None:
        self.cap, self.bio = cap, bio
        ffi = bio._io.ffi
        self.rows = np.zeros((cap, bio.rx.shape[1]), np.uint8)
        self.lens = np.zeros(cap, np.int64)
        self.flags = np.zeros((3, cap), np.uint8)  # done, outstanding, resent
        self.tries, self.due = np.zeros(cap, np.int64), np.zeros(cap)
        self.sendq, self.frag = np.zeros(cap, np.int32), np.zeros(rx_rows, np.int32)

        def p(ctype: str, a: np.ndarray) -> object:
            return ffi.cast(ctype, a.ctypes.data)

        c = self.c = ffi.new("struct rexc_call *")
        c.fd, c.ip_be, c.port_be = bio._fd, bio._ip_be, bio._port_be
        c.tx, c.tx_row, c.tx_len = bio._tx_p, bio.tx.shape[1], bio._tx_len_p
        c.rx, c.rx_row, c.rx_len, c.rx_rows = bio._rx_p, bio.rx.shape[1], bio._rx_len_p, rx_rows
        c.out, c.out_len = p("uint8_t *", self.rows), p("int64_t *", self.lens)
        c.done, c.outstanding, c.resent = (p("uint8_t *", self.flags[k]) for k in range(3))
        c.tries, c.due = p("int64_t *", self.tries), p("double *", self.due)
        c.sendq, c.frag = p("int32_t *", self.sendq), p("int32_t *", self.frag)


class _Fragments:
    """The replies of one switch-path exchange that come in fragments (a long SAMPLE_REPLY), by
    request index: the reassembler and the requests it holds part of."""

    def __init__(self, base: int) -> None:
        self.base = base  # request id of index 0
        self.reasm = Reassembler()
        self.partial: set[int] = set()

    def drop(self, indices: Iterable[int]) -> None:
        """Forget the parts of these requests' replies: a resent SAMPLE may be walked again to
        another item (no splicing), an answered one needs none."""
        for i in self.partial.intersection(indices):
            self.reasm.discard((self.base + i) & 0xFFFFFFFF)
            self.partial.discard(i)

    def take(
        self, fragments: Iterable[tuple[int, bytes]], done: np.ndarray
    ) -> tuple[list[tuple[int, tuple[Header, bytes]]], int]:
        """Fragments as (request index, datagram): the replies they complete (each request marked
        in ``done``) and how many were strays (its request already answered, or a datagram the
        reassembler refuses)."""
        completed: list[tuple[int, tuple[Header, bytes]]] = []
        strays = 0
        for i, datagram in fragments:
            if done[i]:
                strays += 1
                continue
            try:
                whole = self.reasm.add(datagram)
            except ProtocolError:
                strays += 1
                continue
            if whole is None:
                self.partial.add(i)
                continue
            self.partial.discard(i)
            done[i] = True
            completed.append((i, whole))
        return completed, strays


class SwitchReplayClient(ReplayClient):
    """The switch path: items on the server, priorities in the switch's register sum-tree.

    insert = PUSHes with leaves: the server stores the items and its PUSH_REPLY carries each
    item's leaf (key % max_size, its fixed-point priority), which the switch sets as the reply
    passes; sample(B) = SAMPLE datagrams carrying B stratified draws, answered by the server
    with the slots the switch picked; update_priorities = UPDATE datagrams. Each datagram is a
    batch of ``switch_batch`` updates or draws (flag MULTI; the switch recirculates it once per
    entry), or one of each with ``switch_batch`` 1. Datagrams go out ``window`` at a time;
    unanswered ones are resent (same request_id) after ``timeout_s``. Parameters and info go to
    the server as on the host path.

    Each leaf of the switch remembers the key (+ 1, mod 2^32) of the item it stands for: insert's
    leaves carry INSERT and set it; a later UPDATE for another key (an item evicted since it was
    sampled, its slot now holding a newer one) comes back with KEY_MISMATCH and changes nothing;
    it is counted as ignored. The client also skips keys it knows are gone (older by
    ``max_size`` than the newest key it has seen) without sending them.
    """

    def __init__(self, config: ReplayConfig | None = None, **overrides: object) -> None:
        self.config = config or ReplayConfig(backend="switch", **overrides)  # type: ignore[arg-type]
        self.host = HostReplayClient(self.config)  # PUSH, params, info: plain host-path messages
        self.rng = np.random.default_rng(None if self.config.seed is None else self.config.seed + 1)
        self.sock = _open_udp_socket(self.config)  # own socket: host-path replies never mix in
        self.server = self.host.server
        self.leaves = self.config.leaves
        # not from the seed: a client restarted with the same seed must not reuse request ids
        # that the server may still hold replies for
        self._next_id = int.from_bytes(os.urandom(4), "big")
        self._buf = bytearray(65536)
        self.newest_key = -1
        self.stats = {"datagrams": 0, "resent": 0, "stray_datagrams": 0}
        # batched datagram I/O (sendmmsg/recvmmsg, host_agents/aggio.c) when it can be built;
        # else one socket call per datagram
        self._rx: np.ndarray | None = None
        self._bio: BatchSocket | None = None
        self._eng: _EngineState | None = None
        # the exchange loop in C (rexc_run); False keeps the NumPy loop, for comparison
        self.use_engine = True
        try:
            load_aggio()
            self._rx = np.zeros((256, 2048), np.uint8)
            self._rx_head = np.ndarray((256,), HEADER_DTYPE, self._rx, 0, (2048,))
        except AggIOUnavailable:
            pass

    def close(self) -> None:
        self.sock.close()
        self.host.close()

    def _ids(self, n: int) -> list[int]:
        ids = [(self._next_id + i) & 0xFFFFFFFF for i in range(n)]
        self._next_id = (self._next_id + n) & 0xFFFFFFFF
        return ids

    def _exchange(self, requests: list[bytes], op: Op) -> list[tuple[Header, bytes]]:
        """Send one-datagram requests ``window`` at a time; returns their replies in order.
        ERROR replies raise ReplayError after the batch is answered."""
        rids = [Header.unpack(r).request_id for r in requests]
        slot_of = {rid: i for i, rid in enumerate(rids)}
        replies: list[tuple[Header, bytes] | None] = [None] * len(requests)
        tries = [0] * len(requests)
        outstanding: dict[int, float] = {}  # request index -> resend time
        next_new, answered = 0, 0
        first_error: tuple[Header, bytes] | None = None
        reasm = Reassembler()
        while answered < len(requests):
            now = time.monotonic()
            while next_new < len(requests) and len(outstanding) < self.config.window:
                self.sock.sendto(requests[next_new], self.server)
                tries[next_new] = 1
                outstanding[next_new] = now + self.config.timeout_s
                next_new += 1
            deadline = min(outstanding.values())
            if deadline <= now:
                for i, due in list(outstanding.items()):
                    if due > now:
                        continue
                    if tries[i] >= self.config.max_tries:
                        raise ReplayTimeout(
                            op.name, rids[i], self.server, tries[i],
                            f"{len(requests) - answered} of {len(requests)} datagrams unanswered "
                            "(switch or server down, or the table not installed in the switch?)",
                        )  # fmt: skip
                    self.sock.sendto(requests[i], self.server)
                    # a resent SAMPLE may be walked again to another item: never splice fragments
                    reasm.discard(rids[i])
                    tries[i] += 1
                    self.stats["resent"] += 1
                    outstanding[i] = now + self.config.timeout_s
                continue
            ready, _, _ = select.select([self.sock], [], [], deadline - now)
            if not ready:
                continue
            try:
                n, _addr = self.sock.recvfrom_into(self._buf)
            except ConnectionRefusedError:
                continue  # an ICMP port-unreachable: silence, the tries decide
            data = bytes(self._buf[:n])
            try:
                header, piece = split_datagram(data)
                i = slot_of.get(header.request_id)
                if i is None or replies[i] is not None:
                    self.stats["stray_datagrams"] += 1  # a duplicate answer to a resend, or not ours
                    continue
                # A sampled item larger than one datagram comes in fragments; a resend of the
                # request brings the server's cached reply again, filling the gaps.
                whole = reasm.add_split(header, piece)
            except ProtocolError:
                self.stats["stray_datagrams"] += 1
                continue
            if whole is None:
                continue
            header, body = whole
            replies[i] = (header, body)
            outstanding.pop(i, None)
            answered += 1
            if header.op == Op.ERROR and first_error is None:
                first_error = (header, body)
        self.stats["datagrams"] += len(requests)
        if first_error is not None:
            h, b = first_error
            raise ReplayError(h.status, decode_error(b), op.name, h.request_id)
        return replies  # type: ignore[return-value]

    def _batch_socket(self, rows: int, width: int = _REQUEST_ROW_BYTES) -> BatchSocket:
        """The batched I/O over this client's socket, its request table grown to ``rows`` rows
        of ``width`` bytes (kept across calls: binding the tables to the C helper is not free)."""
        if self._bio is None or self._bio.tx.shape[0] < rows or self._bio.tx.shape[1] < width:
            old = (0, _REQUEST_ROW_BYTES) if self._bio is None else self._bio.tx.shape
            tx = np.zeros((max(rows, 256, old[0]), max(width, old[1])), np.uint8)
            assert self._rx is not None
            self._bio = BatchSocket(self.sock, self.server, tx, self._rx)
        return self._bio

    def _exchange_table(self, table: np.ndarray, op: Op, lengths: np.ndarray | None = None) -> _Replies:
        """:meth:`_exchange` for requests given as rows of a uint8 table (one datagram each, with
        consecutive request ids), moved ``window`` at a time with one sendmmsg and received a
        batch per recvmmsg; one-datagram replies are matched and kept as arrays (request id
        arithmetic), replies in fragments go through the Reassembler. Same semantics: resend
        after ``timeout_s``, ReplayTimeout after ``max_tries``, ERROR raised after the batch.
        ``lengths``: each row's datagram length (default: the whole row)."""
        n = table.shape[0]
        if lengths is None:
            lengths = np.full(n, table.shape[1], np.int64)
        if self._rx is None or n == 0:
            rows_ = [row[:ln].tobytes() for row, ln in zip(table, lengths.tolist(), strict=True)]
            return _Replies.from_pairs(self._exchange(rows_, op))
        if self.use_engine:
            return self._exchange_engine(table, op, lengths)
        base = int.from_bytes(table[0, 4:8].tobytes(), "big")  # request_id of the first row
        bio = self._batch_socket(n, table.shape[1])
        bio.tx[:n, : table.shape[1]] = table  # rows 0..n-1 are this call's requests
        bio.tx_len[:n] = lengths
        out = _Replies(np.zeros(n, HEADER_DTYPE), np.zeros((n, self._rx.shape[1]), np.uint8),
                       np.zeros(n, np.int64))  # fmt: skip
        done = np.zeros(n, bool)
        tries = np.zeros(n, np.int64)
        due = np.zeros(n)
        outstanding = np.zeros(n, bool)
        in_flight, next_new, answered = 0, 0, 0
        frags = _Fragments(base)
        timeout, window = self.config.timeout_s, self.config.window
        while answered < n:
            now = time.monotonic()
            if next_new < n and in_flight < window:
                rows = np.arange(next_new, min(n, next_new + window - in_flight))
                bio.send_rows(rows)
                tries[rows], due[rows], outstanding[rows] = 1, now + timeout, True
                in_flight += rows.size
                next_new += rows.size
            oi = np.flatnonzero(outstanding)
            late = oi[due[oi] <= now]
            if late.size:
                worn = late[tries[late] >= self.config.max_tries]
                if worn.size:
                    i = int(worn[0])
                    raise ReplayTimeout(
                        op.name, (base + i) & 0xFFFFFFFF, self.server, int(tries[i]),
                        f"{n - answered} of {n} datagrams unanswered "
                        "(switch or server down, or the table not installed in the switch?)",
                    )  # fmt: skip
                bio.send_rows(late)
                frags.drop(late.tolist())
                tries[late] += 1
                due[late] = now + timeout
                self.stats["resent"] += int(late.size)
            wait = float(due[oi].min()) - time.monotonic() if oi.size else 0.0
            got = bio.recv(max(0.0, wait))
            if not got:
                continue
            lens = bio.rx_len[:got].astype(np.int64)
            head = self._rx_head[:got]
            idx = (head["request_id"].astype(np.int64) - base) & 0xFFFFFFFF
            ours = (lens >= HEADER_BYTES) & (idx < n)
            single = ours & (head["frag_count"] == 1) & (head["frag_index"] == 0)
            single &= lens - HEADER_BYTES <= FRAGMENT_BYTES
            ks = np.flatnonzero(single)
            ks = ks[~done[idx[ks]]]
            ii, first = np.unique(idx[ks], return_index=True)  # a duplicate in the same batch: once
            ks = ks[first]
            self.stats["stray_datagrams"] += int(got - ours.sum()) + int(single.sum() - ks.size)
            if ks.size:
                out.heads[ii], out.rows[ii], out.lens[ii] = head[ks], self._rx[ks], lens[ks]
                done[ii], outstanding[ii] = True, False
                frags.drop(ii.tolist())
                in_flight -= ii.size
                answered += ii.size
            parts = np.flatnonzero(ours & ~single).tolist()  # fragments of long replies
            completed, strays = frags.take(
                ((int(idx[k]), self._rx[k, : lens[k]].tobytes()) for k in parts), done
            )
            self.stats["stray_datagrams"] += strays
            for i, whole in completed:
                out.set_pair(i, whole)
                outstanding[i] = False
            in_flight -= len(completed)
            answered += len(completed)
        self.stats["datagrams"] += n
        out.raise_first_error(op)
        return out

    def _exchange_engine(self, table: np.ndarray, op: Op, lengths: np.ndarray) -> _Replies:
        """:meth:`_exchange_table` with its loop in C (host_agents/aggio.c, rexc_run): sending,
        resending, receiving and matching one-datagram replies cost no Python per datagram, and
        the C call releases the GIL, so the learner's training thread keeps its core. Replies in
        fragments come back here for the reassembler. Same semantics and errors."""
        n, width = table.shape
        assert self._rx is not None
        base = int.from_bytes(table[0, 4:8].tobytes(), "big")  # request_id of the first row
        bio = self._batch_socket(n, width)
        bio.tx[:n, :width] = table
        bio.tx_len[:n] = lengths
        lib = bio._lib
        st = self._engine_state(n, bio)
        c = st.c
        c.n, c.window, c.max_tries = n, self.config.window, self.config.max_tries
        c.timeout_s, c.base = self.config.timeout_s, base
        c.n_frag = c.started = c.in_flight = c.next_new = c.answered = 0
        c.resent_total = c.stray = c.err_index = c.err_tries = c.err_errno = 0
        st.flags[:] = 0
        done, outstanding, resent = st.flags[0], st.flags[1], st.flags[2]
        rows, lens, frag = st.rows, st.lens, st.frag
        reassembled: dict[int, tuple[Header, bytes]] = {}
        frags = _Fragments(base)
        while (r := lib.rexc_run(c)) != 0:
            if r == 1:  # a wait ended empty (or a signal): Python's handlers have run
                continue
            if r == -1:
                i = int(c.err_index)
                raise ReplayTimeout(
                    op.name, (base + i) & 0xFFFFFFFF, self.server, int(c.err_tries),
                    f"{n - int(c.answered)} of {n} datagrams unanswered "
                    "(switch or server down, or the table not installed in the switch?)",
                )  # fmt: skip
            if r < 0:
                raise OSError(int(c.err_errno), f"replay I/O: {os.strerror(int(c.err_errno))}")
            frags.drop(np.flatnonzero(resent).tolist())
            resent[:] = 0
            parts = frag[: c.n_frag].tolist()  # r == 2: fragments of long replies
            idx = (self._rx_head["request_id"][parts].astype(np.int64) - base) & 0xFFFFFFFF
            rx_len = bio.rx_len
            completed, strays = frags.take(
                ((int(i), self._rx[k, : rx_len[k]].tobytes()) for i, k in zip(idx, parts, strict=True)), done
            )
            c.stray += strays
            for i, whole in completed:
                reassembled[i] = whole
                outstanding[i] = 0
            c.in_flight -= len(completed)
            c.answered += len(completed)
        self.stats["datagrams"] += n
        self.stats["resent"] += int(c.resent_total)
        self.stats["stray_datagrams"] += int(c.stray)
        rows, lens = rows[:n].copy(), lens[:n].copy()  # the state is reused by the next call
        heads = np.ascontiguousarray(rows[:, :HEADER_BYTES]).view(HEADER_DTYPE).reshape(n)
        out = _Replies(heads, rows, lens)
        for i, pair in reassembled.items():
            out.set_pair(i, pair)
        out.raise_first_error(op)
        return out

    def _engine_state(self, n: int, bio: BatchSocket) -> _EngineState:
        """rexc_run's call struct and arrays for ``n`` requests over ``bio``, kept across calls
        (building them cost the learner's I/O thread ~100 us a call)."""
        st = self._eng
        if st is None or st.bio is not bio or st.cap < n:
            assert self._rx is not None
            st = self._eng = _EngineState(max(n, 64), bio, self._rx.shape[0])
        return st

    def _saw_keys(self, keys: np.ndarray) -> None:
        if keys.size:
            self.newest_key = max(self.newest_key, int(keys.max()))

    def _set_leaves(self, keys: np.ndarray, priorities: np.ndarray) -> int:
        """Set slot ``key % max_size`` of each key (a learner's priority update): ``switch_batch``
        slots per UPDATE datagram (one per datagram when 1); returns how many of ``keys`` the
        switch applied (the others' slots answered KEY_MISMATCH)."""
        if keys.size == 0:
            return 0
        fixed = switch_priorities(priorities, self.config.alpha, self.leaves)
        slots = (keys % np.uint64(self.config.max_size)).astype(np.int64)
        # One entry per slot: a slot named twice keeps the last key and priority (as a batch
        # update). np.unique over the reversed slots finds each slot's last occurrence.
        uniq, first_rev = np.unique(slots[::-1], return_index=True)
        last = slots.size - 1 - first_rev
        key1 = (keys[last] + np.uint64(1)) & np.uint64(0xFFFFFFFF)  # the item's key + 1 (mod 2^32)
        prio = np.asarray(fixed)[last]
        if self.config.switch_batch > 1:
            mismatched = self._update_batches(uniq, prio, key1)
        else:
            n = uniq.size
            req = np.zeros(n, HEADER_DTYPE)
            req["op"], req["table_id"] = Op.UPDATE_PRIORITY, self.config.table_id
            req["request_id"], req["frag_count"], req["version"] = self._ids(n), 1, PROTOCOL_VERSION
            req["index"], req["draw"], req["priority"] = uniq, key1, prio
            table = req.view(np.uint8).reshape(n, HEADER_BYTES)
            h = self._exchange_table(table, Op.UPDATE_PRIORITY).heads
            self._check_switch_updated(h)
            mismatched = h["index"][(h["flags"] & Flag.KEY_MISMATCH) != 0].astype(np.int64)
        return int((~np.isin(slots, mismatched)).sum())

    def _check_switch_updated(self, h: np.ndarray) -> None:
        bad = np.flatnonzero((h["op"] != Op.UPDATE_REPLY) | ((h["flags"] & Flag.SWITCH_UPDATED) == 0))
        if bad.size:
            i = int(bad[0])
            name = Header(op=int(h["op"][i])).op_name
            raise ReplayError(
                Status.INTERNAL,
                f"UPDATE_PRIORITY {int(h['request_id'][i])} was answered by {name} "
                f"without SWITCH_UPDATED: the switch does not hold table {self.config.table_id} "
                "(control plane not run?)",
            )

    def _exchange_batches(
        self, op: Op, flags: int, entries: np.ndarray, beta: float
    ) -> tuple[_Replies, np.ndarray, np.ndarray]:
        """Send ``entries`` (ENTRY_DTYPE) ``switch_batch`` to a datagram (the last one shorter)
        and collect the replies; returns them with each datagram's entry count and length."""
        n, per = entries.size, self.config.switch_batch
        rows = -(-n // per)
        counts = np.full(rows, per, np.int64)
        counts[-1] = n - per * (rows - 1)
        req = np.zeros(rows, [("h", HEADER_DTYPE), ("b", BATCH_DTYPE), ("e", ENTRY_DTYPE, (per,))])
        h = req["h"]
        h["op"], h["flags"], h["table_id"] = op, flags | Flag.MULTI, self.config.table_id
        h["request_id"], h["frag_count"], h["version"] = self._ids(rows), 1, PROTOCOL_VERSION
        req["b"]["count"], req["b"]["beta"] = counts, beta
        padded = np.zeros(rows * per, ENTRY_DTYPE)
        padded[:n] = entries
        req["e"] = padded.reshape(rows, per)
        lengths = HEADER_BYTES + BATCH_DTYPE.itemsize + ENTRY_DTYPE.itemsize * counts
        table = req.view(np.uint8).reshape(rows, req.dtype.itemsize)
        return self._exchange_table(table, op, lengths), counts, lengths

    def _update_batches(self, index: np.ndarray, prio: np.ndarray, key1: np.ndarray) -> np.ndarray:
        """UPDATE batches (flag MULTI) of ``switch_batch`` entries; the slots whose entry came back
        KEY_MISMATCH. A BAD_INDEX entry raises ReplayError (after the whole call is answered)."""
        n, per = index.size, self.config.switch_batch
        e = np.zeros(n, ENTRY_DTYPE)
        e["index"], e["priority"], e["draw"] = index, prio, key1
        r, counts, lengths = self._exchange_batches(Op.UPDATE_PRIORITY, 0, e, 0.0)
        self._check_switch_updated(r.heads)
        # the replies' bodies as rows (a reply that came through the reassembler, too)
        rows = counts.size
        bdt = np.dtype([("b", BATCH_DTYPE), ("e", ENTRY_DTYPE, (per,))])
        body = np.zeros((rows, bdt.itemsize), np.uint8)
        blen = r.lens - HEADER_BYTES
        if r.rows.shape[1] >= HEADER_BYTES + bdt.itemsize:
            body[:] = r.rows[:, HEADER_BYTES : HEADER_BYTES + bdt.itemsize]
        for i, b in r.reassembled.items():
            blen[i] = len(b)
            body[i, : min(len(b), bdt.itemsize)] = np.frombuffer(b[: bdt.itemsize], np.uint8)
        wrong = np.flatnonzero(blen != lengths - HEADER_BYTES)
        if wrong.size:
            i = int(wrong[0])
            got_bytes = int(blen[i]) + HEADER_BYTES
            raise ProtocolError(f"UPDATE_REPLY of a {int(counts[i])}-entry batch is {got_bytes} bytes, "
                                f"not {int(lengths[i])}")  # fmt: skip
        got = body.view(bdt).reshape(rows)
        ent = got["e"].reshape(rows * per)[(np.arange(per) < counts[:, None]).ravel()]
        if (ent["index"] != index).any() or (got["b"]["next"] != counts).any():
            raise ProtocolError("an UPDATE_REPLY batch does not hold the entries sent, all done")
        _raise_bad_index(ent, Op.UPDATE_PRIORITY)
        return ent["index"][ent["result"] == EntryResult.KEY_MISMATCH].astype(np.int64)

    def insert(self, items: Sequence[bytes], priorities: np.ndarray | Sequence[float]) -> np.ndarray:
        """PUSHes with leaves (flags MULTI + INSERT), up to MAX_BATCH_ENTRIES items each: the
        server stores the items and answers with their leaves, which the switch sets as the reply
        passes. One round trip per PUSH, as on the host path."""
        data = _check_items(items)
        p = _check_wire_priorities(priorities, len(data), "items")
        fixed = switch_priorities(p, self.config.alpha, self.leaves)
        keys = np.empty(len(data), np.uint64)
        limit = min(self.config.max_message_bytes, MAX_MESSAGE_BYTES) - 4
        sizes = [len(d) + _PUSH_ITEM_OVERHEAD for d in data]
        for start, end in _chunks(sizes, limit, MAX_BATCH_ENTRIES):
            body = encode_push_leaves_request(zip(fixed[start:end].tolist(), data[start:end], strict=True))
            header, reply = self.host.call(Op.PUSH, body, flags=Flag.MULTI | Flag.INSERT)
            keys[start:end] = self._check_push_leaves(header, reply, fixed[start:end])
        self._saw_keys(keys)
        return keys

    def _check_push_leaves(self, header: Header, reply: bytes, fixed: np.ndarray) -> np.ndarray:
        """The keys of a PUSH with leaves, once its reply shows every leaf set by the switch."""
        n = fixed.size
        if not header.flags & Flag.SWITCH_UPDATED:
            raise ReplayError(
                Status.INTERNAL,
                f"PUSH {header.request_id} was answered without SWITCH_UPDATED: the switch does not "
                f"hold table {self.config.table_id} (control plane not run?); the server stored the "
                f"{n} items, their leaves are not set",
                Op.PUSH.name, header.request_id,
            )  # fmt: skip
        batch, ent, first = decode_push_leaves_reply(reply)
        keys = np.uint64(first) + np.arange(n, dtype=np.uint64)
        key1 = (keys + np.uint64(1)) & np.uint64(0xFFFFFFFF)
        slots = keys % np.uint64(self.config.max_size)
        done = int(batch["count"][0]) == n and int(batch["next"][0]) == n  # the switch's passes
        want = {"priority": fixed, "index": slots, "draw": key1}
        same = done and all((ent[f] == v).all() for f, v in want.items())  # (count n: same lengths)
        if not same:
            raise ProtocolError(f"the PUSH_REPLY to request {header.request_id} does not hold the {n} "
                                "leaves pushed, all set")  # fmt: skip
        _raise_bad_index(ent, Op.PUSH, header.request_id)
        return keys

    def sample(self, batch_size: int, beta: float | None = None) -> SampleBatch:
        b = check_batch_size(batch_size)
        beta_ = self._beta(beta)
        flags = int(Flag.RANDOM_DRAW) if self.config.random_draw else 0
        draws = np.zeros(b, dtype=np.uint32) if self.config.random_draw else stratified_draws(b, self.rng)
        if self.config.switch_batch > 1:
            one, items = self._sample_batches(draws, beta_, flags)
        else:
            one, items = self._sample_one_each(draws, beta_, flags)
        keys = one["key"].astype(np.uint64)
        probs = one["probability"].astype(np.float64)
        weights = one["weight"].astype(np.float64)
        table_size = int(one["table_size"].max()) if b else 0
        w = weights
        # The switch has no min-tree: normalize by the batch's largest weight instead.
        w = w / w.max() if w.size and w.max() > 0 else w
        self._saw_keys(keys)
        return SampleBatch(keys=keys, items=items, probabilities=probs, weights=w, table_size=table_size)

    def _sample_one_each(self, draws: np.ndarray, beta: float, flags: int) -> tuple[np.ndarray, list[bytes]]:
        """One SAMPLE datagram per draw (switch_batch 1); each reply's (table_size, count, key,
        probability, weight, length) record and the items."""
        b = draws.size
        body = encode_sample_request(1, beta)
        req = np.zeros(b, [("h", HEADER_DTYPE), ("body", f"S{len(body)}")])
        h = req["h"]
        h["op"], h["flags"], h["table_id"] = Op.SAMPLE, flags, self.config.table_id
        h["request_id"], h["frag_count"], h["version"], h["draw"] = self._ids(b), 1, PROTOCOL_VERSION, draws
        req["body"] = body
        r = self._exchange_table(req.view(np.uint8).reshape(b, -1), Op.SAMPLE)
        self._check_sample_replies(r)
        # one-datagram replies (the usual case) decoded as arrays, the others one by one
        one = np.zeros(b, _SAMPLE_ONE_DTYPE)
        start = HEADER_BYTES + _SAMPLE_ONE_DTYPE.itemsize
        if r.rows.shape[1] >= start:
            one[:] = np.ndarray((b,), _SAMPLE_ONE_DTYPE, r.rows, HEADER_BYTES, (r.rows.strides[0],))
        # Replies in one datagram are checked and cut as arrays; the others (fragments, or too
        # short to hold one item) are decoded one by one. A Python loop over the batch cost the
        # learner's I/O thread ~200 us per sample of 128 (with the GIL held).
        whole = r.lens >= start
        for i in r.reassembled:
            whole[i] = False
        wrong_len = start + one["length"].astype(np.int64) != r.lens
        bad = np.flatnonzero(whole & ((one["count"] != 1) | wrong_len))
        if bad.size:
            reply = decode_sample_reply(r.body(int(bad[0])))  # raises ProtocolError for a malformed body
            raise ProtocolError(f"switch-path SAMPLE_REPLY holds {len(reply.items)} items, not 1")
        ends = r.lens.tolist()
        if whole.all() and b and min(ends) == max(ends):  # the usual batch: one item size
            width = ends[0] - start
            blob = r.rows[:, start : ends[0]].tobytes()
            items = [blob[k : k + width] for k in range(0, b * width, width)]
        else:
            oks = whole.tolist()
            items = [r.rows[i, start:e].tobytes() if oks[i] else b"" for i, e in enumerate(ends)]
        for i in np.flatnonzero(~whole).tolist():
            reply = decode_sample_reply(r.body(i))
            if len(reply.items) != 1:
                raise ProtocolError(f"switch-path SAMPLE_REPLY holds {len(reply.items)} items, not 1")
            it = reply.items[0]
            one[i] = (reply.table_size, 1, it.key, it.probability, it.weight, len(it.data))
            items[i] = it.data
        return one, items

    def _check_sample_replies(self, r: _Replies) -> None:
        wrong = np.flatnonzero(r.heads["op"] != Op.SAMPLE_REPLY)
        if wrong.size:
            i = int(wrong[0])
            name = Header(op=int(r.heads["op"][i])).op_name
            raise ProtocolError(f"SAMPLE {int(r.heads['request_id'][i])} answered by {name}")

    def _sample_batches(self, draws: np.ndarray, beta: float, flags: int) -> tuple[np.ndarray, list[bytes]]:
        """SAMPLE batches (flag MULTI) of ``switch_batch`` draws: the switch walks its tree for
        each entry, the server answers each batch with its items in entry order."""
        b, per = draws.size, self.config.switch_batch
        e = np.zeros(b, ENTRY_DTYPE)
        e["draw"] = draws
        r, counts, _ = self._exchange_batches(Op.SAMPLE, flags, e, beta)
        self._check_sample_replies(r)
        rows = counts.size
        one = np.zeros(b, _SAMPLE_ONE_DTYPE)
        # The usual reply: one datagram whose items all have one size; cut as arrays. Any other
        # (fragments, mixed sizes) is decoded reply by reply.
        head = HEADER_BYTES + 12  # table_size, count
        width = r.rows.shape[1]
        if not r.reassembled and rows and width >= head + _ITEM_HEAD.itemsize:
            size = int.from_bytes(r.rows[0, head + 16 : head + 20].tobytes(), "big")
            stride = _ITEM_HEAD.itemsize + size
            fits = head + per * stride <= width and (r.lens == head + counts * stride).all()
        else:
            fits = False
        if fits:
            tops = np.ndarray((rows,), [("table_size", ">u8"), ("count", ">u4")], r.rows, HEADER_BYTES,
                              (r.rows.strides[0],))  # fmt: skip
            item_dt = np.dtype(_ITEM_HEAD.descr + [("data", f"V{size}")] if size else _ITEM_HEAD.descr)
            grid = np.ndarray((rows, per), item_dt, r.rows, head, (r.rows.strides[0], stride))
            got = grid[np.arange(per) < counts[:, None]]  # the entries each reply holds
            if (tops["count"] != counts).any() or (got["length"] != size).any():
                fits = False
        if fits:
            for f in ("key", "probability", "weight", "length"):
                one[f] = got[f]
            one["table_size"] = np.repeat(tops["table_size"], counts)
            one["count"] = 1
            blob = got["data"].tobytes() if size else b""
            items = [blob[k : k + size] for k in range(0, b * size, size)] if size else [b""] * b
            return one, items
        items = []
        at = 0
        for i in range(rows):
            reply = decode_sample_reply(r.body(i))  # raises ProtocolError for a malformed body
            if len(reply.items) != counts[i]:
                raise ProtocolError(f"a {int(counts[i])}-draw SAMPLE batch was answered with "
                                    f"{len(reply.items)} items")  # fmt: skip
            for it in reply.items:
                one[at] = (reply.table_size, 1, it.key, it.probability, it.weight, len(it.data))
                items.append(it.data)
                at += 1
        return one, items

    def update_priorities(
        self, keys: np.ndarray | Sequence[int], priorities: np.ndarray | Sequence[float]
    ) -> tuple[int, int]:
        k = _check_keys(keys)
        p = _check_wire_priorities(priorities, k.size, "keys")
        if k.size and self.newest_key >= 0:  # keep keys not surely evicted
            live = k + np.uint64(self.config.max_size) > np.uint64(self.newest_key)
        else:
            live = np.ones(k.size, dtype=bool)
        applied = self._set_leaves(k[live], p[live]) if live.any() else 0
        return applied, int(k.size - applied)

    def set_params(self, blob: bytes, version: int, slot: int = 0) -> int:
        return self.host.set_params(blob, version, slot)

    def get_params(self, slot: int = 0) -> tuple[int, bytes]:
        return self.host.get_params(slot)

    def info(self) -> dict:
        info = self.host.info()
        info["switch_client"] = {"leaves": self.leaves, "newest_key": self.newest_key, **self.stats}
        return info


class RedisReplayClient(ReplayClient):
    """The Redis baseline behind the same API: insert pushes to Redis (actor role); sample drains
    the Redis list into the local sum-tree and samples it (learner role). One object can play
    both roles; a learner should be the only one sampling its table."""

    def __init__(self, config: ReplayConfig | None = None, **overrides: object) -> None:
        from host_agents import redis_replay  # redis is only imported where it is used

        self._rr = redis_replay
        self.config = config or ReplayConfig(backend="redis", **overrides)  # type: ignore[arg-type]
        self.redis = redis_replay.connect(self.config.redis_url)
        c = self.config
        self.actor = redis_replay.RedisActor(self.redis, c.table_id, c.redis_prefix)
        self.learner = redis_replay.RedisLearner(
            self.redis, c.table_id, c.max_size, c.alpha, seed=c.seed, prefix=c.redis_prefix
        )

    def insert(self, items: Sequence[bytes], priorities: np.ndarray | Sequence[float]) -> np.ndarray:
        return self.actor.push(_check_items(items), priorities)

    def sample(self, batch_size: int, beta: float | None = None) -> SampleBatch:
        return self.learner.sample(batch_size, self._beta(beta))

    def update_priorities(
        self, keys: np.ndarray | Sequence[int], priorities: np.ndarray | Sequence[float]
    ) -> tuple[int, int]:
        self.learner.drain()  # keys handed out since the last sample must be known locally
        return self.learner.update_priorities(_check_keys(keys), priorities)

    def set_params(self, blob: bytes, version: int, slot: int = 0) -> int:
        return self._rr.set_params(self.redis, blob, version, slot, self.config.redis_prefix)

    def get_params(self, slot: int = 0) -> tuple[int, bytes]:
        return self._rr.get_params(self.redis, slot, self.config.redis_prefix)

    def info(self) -> dict:
        return {"backend": "redis", "table_id": self.config.table_id, **self.learner.info()}

    def close(self) -> None:
        self.redis.close()


def make_replay_client(config: ReplayConfig) -> ReplayClient:
    """The client for ``config.backend``."""
    if config.backend == "host":
        return HostReplayClient(config)
    if config.backend == "switch":
        return SwitchReplayClient(config)
    if config.backend == "redis":
        return RedisReplayClient(config)
    raise ValueError(f"backend must be one of {BACKENDS}, got {config.backend!r}")
