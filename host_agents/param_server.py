"""Parameter-server allreduce over TCP: the classic host-only baseline for in-switch aggregation.

Every worker pushes its float32 tensor to one server; once all `num_workers` contributions of a
round have arrived the server sums them (numpy, float32, in worker-id order, so the result is
deterministic and bit-identical for every worker) and sends the sum back to each worker. The server's
link carries `num_workers` tensors in and `num_workers` out per round, which is exactly the
bottleneck that in-network aggregation removes; to make the comparison fair the data path here
avoids Python-level overheads: TCP_NODELAY, one `sendmsg` for header + payload (no copy of the
tensor), `recv_into` preallocated buffers, `numpy.frombuffer` views, a vectorised sum.

Wire format (all integers big-endian, header is `HEADER.size` == 32 bytes, see `HEADER`):

    magic    4s   b"PSv1"
    op       u8   OP_HELLO / OP_WELCOME / OP_PUSH / OP_RESULT / OP_ERROR
    dtype    u8   DTYPE_BYTES (0) or DTYPE_F32 (1: float32, little-endian payload)
    worker   u16  worker id (server echoes the client's id)
    round    u64  round number
    count    u64  element count (HELLO/WELCOME: num_workers; ERROR: payload bytes)
    nbytes   u64  payload length in bytes, followed by that many payload bytes

Session: client sends HELLO(worker, count=num_workers); server answers WELCOME(round=next round
number, count=num_workers) or ERROR. Then per round: PUSH(worker, round, float32 payload) ->
RESULT(round, float32 sum) or ERROR(utf-8 message). Any protocol error makes the server send an
ERROR frame to that client and close that connection only; other clients keep being served.
"""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch is imported lazily: the server process needs only numpy (starts in ~0.1 s)
    import torch

log = logging.getLogger(__name__)

HEADER = struct.Struct("!4sBBHQQQ")
MAGIC = b"PSv1"

OP_HELLO = 1
OP_WELCOME = 2
OP_PUSH = 3
OP_RESULT = 4
OP_ERROR = 5
_OP_NAMES = {
    OP_HELLO: "HELLO",
    OP_WELCOME: "WELCOME",
    OP_PUSH: "PUSH",
    OP_RESULT: "RESULT",
    OP_ERROR: "ERROR",
}

DTYPE_BYTES = 0
DTYPE_F32 = 1
_F32 = np.dtype("<f4")

DEFAULT_MAX_MESSAGE_BYTES = 1 << 30  # 1 GiB: bounds what one header can make the peer allocate
MAX_ERROR_BYTES = 64 * 1024  # error texts are short; a longer "error" is itself a protocol error
MAX_WORKERS = 0xFFFF  # the worker field is a u16
_DRAIN_MAX_BYTES = 16 << 20  # after an error, read at most this much of what the client still sends


class ProtocolError(RuntimeError):
    """The peer sent something that does not follow the wire format (or the round's rules)."""


def _recv_exact(sock: socket.socket, view: memoryview) -> int:
    """Fill `view` completely from `sock`; returns the byte count. Raises ConnectionError on EOF."""
    got, total = 0, len(view)
    while got < total:
        n = sock.recv_into(view[got:], total - got)
        if n == 0:
            raise ConnectionError(f"peer closed the connection ({got} of {total} bytes received)")
        got += n
    return got


def _send_frame(sock: socket.socket, header: bytes, payload: memoryview | bytes = b"") -> int:
    """Send header + payload with as few syscalls as possible (`sendmsg` gathers, no copy).

    Returns the number of bytes written to the socket (framing + payload).
    """
    bufs: list[memoryview] = [memoryview(header).cast("B")]
    if len(payload):
        bufs.append(memoryview(payload).cast("B"))
    total = sum(len(b) for b in bufs)
    sent_total = 0
    while bufs:
        sent = sock.sendmsg(bufs)
        sent_total += sent
        while bufs and sent >= len(bufs[0]):  # drop fully-sent buffers, trim a partial one
            sent -= len(bufs[0])
            bufs.pop(0)
        if bufs and sent:
            bufs[0] = bufs[0][sent:]
    assert sent_total == total
    return sent_total


def _pack(op: int, dtype: int, worker: int, rnd: int, count: int, nbytes: int) -> bytes:
    return HEADER.pack(MAGIC, op, dtype, worker, rnd, count, nbytes)


@dataclass
class _Round:
    """State of the single open round (rounds are strictly sequential: nobody can push round r+1
    before receiving the result of round r)."""

    number: int
    numel: int
    started: float
    contributions: dict[int, np.ndarray] = field(default_factory=dict)
    full: bool = False  # all contributions in: the sum is being computed, no timeout may abort it
    result: np.ndarray | None = None
    error: str | None = None


class ParameterServer:
    """TCP parameter server summing one float32 tensor per worker per round.

    One thread per connection, so a slow or misbehaving client only ties up its own thread; all
    waits are bounded (`io_timeout_s` within a frame, `idle_timeout_s` between frames,
    `round_timeout_s` for a round whose other contributions never arrive).
    """

    def __init__(
        self,
        host: str,
        port: int,
        num_workers: int,
        *,
        round_timeout_s: float = 60.0,
        io_timeout_s: float = 30.0,
        idle_timeout_s: float = 300.0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if not 1 <= num_workers <= MAX_WORKERS:
            raise ValueError(f"num_workers must be in 1..{MAX_WORKERS}, got {num_workers}")
        if max_message_bytes <= 0:
            raise ValueError(f"max_message_bytes must be positive, got {max_message_bytes}")
        self.host = host
        self.port = port
        self.num_workers = num_workers
        self.round_timeout_s = round_timeout_s
        self.io_timeout_s = io_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self.max_message_bytes = max_message_bytes
        self._listener: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self._closing = threading.Event()
        self._cond = threading.Condition()
        self._next_round = 0
        self._round: _Round | None = None
        self._conns: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self.rounds_completed = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> int:
        """Bind and listen, serve in background threads; returns the bound port (so port 0 works)."""
        if self._listener is not None:
            raise RuntimeError("parameter server already started")
        infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, _, _, _, addr = infos[0]
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(addr)
            listener.listen(max(16, 2 * self.num_workers))
            listener.settimeout(0.2)  # accept() polls so close() is noticed promptly
        except OSError:
            listener.close()
            raise
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._accept_thread = threading.Thread(target=self._accept_loop, name="ps-accept", daemon=True)
        self._accept_thread.start()
        log.info("parameter server listening on %s:%d for %d workers", self.host, self.port, self.num_workers)
        return self.port

    def close(self, join_timeout_s: float = 5.0) -> None:
        """Stop accepting, fail any open round, close every connection, join threads (bounded)."""
        self._closing.set()
        with self._cond:
            if self._round is not None and self._round.result is None:
                self._round.error = "parameter server is shutting down"
            self._cond.notify_all()
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv
            except OSError:
                pass
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)  # on Linux this wakes accept() at once
            except OSError:
                pass
        if self._accept_thread is not None:
            self._accept_thread.join(join_timeout_s)
        if self._listener is not None:
            self._listener.close()
        deadline = time.monotonic() + join_timeout_s
        for t in list(self._threads):
            t.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> ParameterServer:
        if self._listener is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ serving

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._closing.is_set():
            try:
                conn, peer = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if not self._closing.is_set():
                    log.exception("parameter server: accept failed")
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            t = threading.Thread(
                target=self._serve_conn, args=(conn, peer), name=f"ps-conn-{peer}", daemon=True
            )
            with self._cond:
                if self._closing.is_set():
                    conn.close()
                    return
                self._conns.add(conn)
                self._threads.add(t)
            t.start()

    def _serve_conn(self, conn: socket.socket, peer: object) -> None:
        """Serve one client until it disconnects or breaks the protocol."""
        state = {"worker": -1}  # filled in by HELLO, for log and error messages
        error: str | None = None
        try:
            self._serve_frames(conn, state)
        except ProtocolError as exc:
            error = str(exc)
        except TimeoutError:
            error = "timed out waiting for the client (idle, or stalled in the middle of a message)"
        except OSError as exc:  # includes ConnectionError: the client went away
            if not self._closing.is_set():
                log.info("parameter server: client %s (worker %d) gone: %s", peer, state["worker"], exc)
        finally:
            if error is not None:
                if not self._closing.is_set():
                    log.warning(
                        "parameter server: client %s (worker %d): %s; closing that connection",
                        peer,
                        state["worker"],
                        error,
                    )
                self._send_error(conn, max(state["worker"], 0), error)
            with self._cond:
                self._conns.discard(conn)
                self._threads.discard(threading.current_thread())
            conn.close()

    def _serve_frames(self, conn: socket.socket, state: dict[str, int]) -> None:
        """The per-connection protocol loop; returns on clean EOF, raises ProtocolError on bad input."""
        hdr = bytearray(HEADER.size)
        hdr_view = memoryview(hdr)
        buf = bytearray(0)
        worker = -1

        while not self._closing.is_set():
            # Between frames the client may legitimately compute for a while: idle timeout.
            conn.settimeout(self.idle_timeout_s)
            first = conn.recv_into(hdr_view, HEADER.size)
            if first == 0:
                return  # clean close between frames
            conn.settimeout(self.io_timeout_s)
            if first < HEADER.size:
                _recv_exact(conn, hdr_view[first:])
            magic, op, dtype, hworker, rnd, count, nbytes = HEADER.unpack(hdr)
            if magic != MAGIC:
                raise ProtocolError(f"bad magic {bytes(magic)!r} (expected {MAGIC!r})")
            if op not in (OP_HELLO, OP_PUSH):
                raise ProtocolError(f"unexpected op {op} ({_OP_NAMES.get(op, 'unknown')}) from a client")
            if nbytes > self.max_message_bytes:
                raise ProtocolError(f"message of {nbytes} bytes exceeds the cap of {self.max_message_bytes}")
            if hworker >= self.num_workers:
                raise ProtocolError(f"worker id {hworker} out of range 0..{self.num_workers - 1}")

            if op == OP_HELLO:
                if worker >= 0:
                    raise ProtocolError("HELLO sent twice on one connection")
                if nbytes != 0:
                    raise ProtocolError(f"HELLO carries no payload, got {nbytes} bytes")
                if count != self.num_workers:
                    raise ProtocolError(f"client expects {count} workers, server has {self.num_workers}")
                worker = state["worker"] = hworker
                with self._cond:
                    next_round = self._next_round
                _send_frame(conn, _pack(OP_WELCOME, DTYPE_BYTES, worker, next_round, self.num_workers, 0))
                continue

            # OP_PUSH
            if worker < 0:
                raise ProtocolError("PUSH before HELLO")
            if hworker != worker:
                raise ProtocolError(f"PUSH for worker {hworker} on worker {worker}'s connection")
            if dtype != DTYPE_F32:
                raise ProtocolError(f"unsupported dtype code {dtype} (only float32 = {DTYPE_F32})")
            if nbytes != count * _F32.itemsize:
                raise ProtocolError(f"payload of {nbytes} bytes does not hold {count} float32 elements")
            if len(buf) < nbytes:
                # A fresh buffer rather than a resize: a previous round's numpy view may still
                # reference the old one (resizing an exported bytearray raises BufferError).
                buf = bytearray(nbytes)
            payload = memoryview(buf)[:nbytes]
            _recv_exact(conn, payload)  # read it all first so our error frame reaches the client
            arr = np.frombuffer(payload, dtype=_F32)
            result = self._contribute(worker, rnd, arr)
            _send_frame(conn, _pack(OP_RESULT, DTYPE_F32, worker, rnd, count, nbytes), memoryview(result))

    def _contribute(self, worker: int, rnd: int, arr: np.ndarray) -> np.ndarray:
        """Add `arr` to round `rnd`; wait (bounded) until the round's sum exists and return it."""
        with self._cond:
            if self._closing.is_set():
                raise ConnectionError("parameter server is shutting down")
            if rnd != self._next_round:
                raise ProtocolError(f"PUSH for round {rnd}, but the open round is {self._next_round}")
            r = self._round
            if r is None:
                r = self._round = _Round(number=rnd, numel=arr.size, started=time.monotonic())
            if arr.size != r.numel:
                raise ProtocolError(
                    f"round {rnd}: {arr.size} elements, but other workers sent {r.numel} elements"
                )
            if worker in r.contributions:
                raise ProtocolError(f"round {rnd}: worker {worker} already contributed")
            r.contributions[worker] = arr
            last = r.full = len(r.contributions) == self.num_workers

        if last:
            # Sum outside the lock (nobody else can touch a full round), in worker-id order so the
            # float32 result is deterministic whatever order the contributions arrived in.
            contribs = r.contributions
            total = np.array(contribs[0], dtype=_F32, copy=True)
            for w in range(1, self.num_workers):
                np.add(total, contribs[w], out=total)
            with self._cond:
                r.result = total
                r.contributions = {}  # release the views into per-connection receive buffers
                if self._round is r:
                    self._round = None
                    self._next_round = rnd + 1
                    self.rounds_completed += 1
                self._cond.notify_all()
            return total

        with self._cond:
            deadline = r.started + self.round_timeout_s
            while r.result is None and r.error is None:
                left = deadline - time.monotonic()
                if left <= 0 and not r.full:
                    missing = sorted(set(range(self.num_workers)) - set(r.contributions))
                    r.error = (
                        f"round {rnd} timed out after {self.round_timeout_s:g} s; missing workers {missing}"
                    )
                    r.contributions = {}
                    if self._round is r:
                        self._round = None  # abort: the round number is reused by a retry
                    self._cond.notify_all()
                    break
                self._cond.wait(max(left, 0.05))
            if r.result is not None:
                return r.result
            raise ProtocolError(r.error or "round aborted")

    def _send_error(self, conn: socket.socket, worker: int, message: str) -> None:
        """Best effort: tell the client why its connection is being closed.

        After the ERROR frame we half-close and briefly drain what the client still sends: closing a
        socket with unread input makes the kernel send RST, which can destroy the ERROR frame before
        the client reads it. The drain is bounded in time and bytes.
        """
        data = message.encode("utf-8", "replace")[:MAX_ERROR_BYTES]
        try:
            conn.settimeout(min(self.io_timeout_s, 5.0))
            _send_frame(conn, _pack(OP_ERROR, DTYPE_BYTES, worker & 0xFFFF, 0, len(data), len(data)), data)
            conn.shutdown(socket.SHUT_WR)
            conn.settimeout(0.2)
            sink = bytearray(65536)
            deadline, drained = time.monotonic() + 1.0, 0
            while time.monotonic() < deadline and drained < _DRAIN_MAX_BYTES:
                n = conn.recv_into(sink)
                if n == 0:
                    break
                drained += n
        except OSError:
            pass


class ParameterServerClient:
    """One worker's connection to a `ParameterServer`; `allreduce` is one blocking round.

    `bytes_sent` / `bytes_received` count every byte this client wrote to / read from its socket
    (headers included, the HELLO/WELCOME handshake too; call `reset_counters` to exclude it), so a
    benchmark can report application-level bytes on the wire per worker.

    `timeout` bounds every socket operation, including the wait for a round's result, so it must
    exceed how far the slowest worker can lag behind; the server's own `round_timeout_s` bounds the
    same wait from its side. After any error the client is closed and `allreduce` raises.
    """

    def __init__(
        self,
        host: str,
        port: int,
        worker_id: int,
        num_workers: int,
        timeout: float = 30.0,
        *,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if not 1 <= num_workers <= MAX_WORKERS:
            raise ValueError(f"num_workers must be in 1..{MAX_WORKERS}, got {num_workers}")
        if not 0 <= worker_id < num_workers:
            raise ValueError(f"worker_id must be in 0..{num_workers - 1}, got {worker_id}")
        self.worker_id = worker_id
        self.num_workers = num_workers
        self.max_message_bytes = max_message_bytes
        self.bytes_sent = 0
        self.bytes_received = 0
        self._hdr = bytearray(HEADER.size)
        self._sock: socket.socket | None = socket.create_connection((host, port), timeout=timeout)
        try:
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._send(_pack(OP_HELLO, DTYPE_BYTES, worker_id, 0, num_workers, 0))
            _, _, _, rnd, count, nbytes = self._recv_header(OP_WELCOME)
            if count != num_workers or nbytes != 0:
                raise RuntimeError(f"malformed WELCOME from the server (count={count}, nbytes={nbytes})")
            self.round = rnd
        except BaseException:
            self.close()
            raise

    def allreduce(self, tensor: torch.Tensor) -> torch.Tensor:
        """Push `tensor`, return the elementwise float32 SUM over all workers (same shape, new tensor)."""
        import torch  # deferred, see the TYPE_CHECKING import

        if tensor.dtype != torch.float32:
            raise ValueError(f"parameter server allreduce takes float32 tensors, got {tensor.dtype}")
        nbytes = tensor.numel() * _F32.itemsize
        if nbytes > self.max_message_bytes:
            raise ValueError(f"tensor of {nbytes} bytes exceeds the message cap of {self.max_message_bytes}")
        if self._sock is None:
            raise RuntimeError("parameter server client is closed")
        src = tensor.detach().cpu().contiguous().numpy().reshape(-1)
        if src.dtype != _F32:  # big-endian host: the wire is little-endian
            src = src.astype(_F32)
        rnd = self.round
        try:
            self._send(_pack(OP_PUSH, DTYPE_F32, self.worker_id, rnd, src.size, nbytes), memoryview(src))
        except OSError as exc:
            # The server may have rejected us and closed mid-send; its ERROR frame may still be readable.
            self._raise_pending_error(exc)
        _, _, _, rrnd, count, rnbytes = self._recv_header(OP_RESULT)
        if rrnd != rnd or count != src.size or rnbytes != nbytes:
            self.close()
            raise RuntimeError(
                f"malformed RESULT: round {rrnd}/{rnd}, count {count}/{src.size}, bytes {rnbytes}/{nbytes}"
            )
        out = np.empty(src.size, dtype=_F32)  # fresh per call: the caller owns the returned tensor
        self._recv_into(memoryview(out).cast("B"))
        self.round = rnd + 1
        return torch.from_numpy(out).reshape(tensor.shape)

    def reset_counters(self) -> None:
        """Zero `bytes_sent` / `bytes_received` (e.g. after the handshake or warm-up rounds)."""
        self.bytes_sent = 0
        self.bytes_received = 0

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def __enter__(self) -> ParameterServerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _send(self, header: bytes, payload: memoryview | bytes = b"") -> None:
        assert self._sock is not None
        self.bytes_sent += _send_frame(self._sock, header, payload)

    def _recv_into(self, view: memoryview) -> None:
        if self._sock is None:
            raise RuntimeError("parameter server client is closed")
        try:
            self.bytes_received += _recv_exact(self._sock, view)
        except (OSError, ConnectionError) as exc:
            self.close()
            raise RuntimeError(f"parameter server connection failed: {exc}") from exc

    def _recv_header(self, expected_op: int) -> tuple[bytes, int, int, int, int, int]:
        """Read one header; turn an ERROR frame into RuntimeError and validate the rest."""
        self._recv_into(memoryview(self._hdr))
        magic, op, dtype, worker, rnd, count, nbytes = HEADER.unpack(self._hdr)
        if magic != MAGIC:
            self.close()
            raise RuntimeError(f"bad magic {bytes(magic)!r} from parameter server")
        if op == OP_ERROR:
            if nbytes > MAX_ERROR_BYTES:
                self.close()
                raise RuntimeError(f"parameter server sent an oversized error frame ({nbytes} bytes)")
            msg = bytearray(nbytes)
            self._recv_into(memoryview(msg))
            self.close()  # the server closes its side after an error
            text = msg.decode("utf-8", "replace")
            raise RuntimeError(f"parameter server rejected worker {self.worker_id}: {text}")
        if op != expected_op:
            self.close()
            raise RuntimeError(f"expected {_OP_NAMES[expected_op]} from parameter server, got op {op}")
        if worker != self.worker_id:
            self.close()
            raise RuntimeError(f"parameter server answered for worker {worker}, we are {self.worker_id}")
        if op == OP_RESULT and dtype != DTYPE_F32:
            self.close()
            raise RuntimeError(f"parameter server sent dtype code {dtype}, expected float32")
        return magic, op, dtype, rnd, count, nbytes

    def _raise_pending_error(self, exc: OSError) -> None:
        try:
            self._recv_header(OP_RESULT)
        except RuntimeError as server_error:
            raise server_error from exc
        self.close()
        raise RuntimeError(f"parameter server connection failed while sending: {exc}") from exc


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: run a parameter server until SIGINT/SIGTERM."""
    parser = argparse.ArgumentParser(
        prog="python -m host_agents.param_server",
        description="Run a TCP parameter server that sums one float32 tensor per worker per round "
        "and sends the sum back to every worker (the host-only allreduce baseline).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    parser.add_argument(
        "--port", type=int, default=5555, help="TCP port to bind, 0 picks a free one (default: %(default)s)"
    )
    parser.add_argument(
        "--workers", type=int, required=True, help="number of workers taking part in every round (required)"
    )
    parser.add_argument(
        "--round-timeout",
        type=float,
        default=60.0,
        help="seconds a round may wait for missing workers before it is aborted (default: %(default)s)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=300.0,
        help="seconds a connection may stay silent between messages before it is closed "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--max-message-bytes",
        type=int,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        help="largest payload accepted in one message (default: %(default)s)",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default: %(default)s)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(message)s")

    server = ParameterServer(
        args.host,
        args.port,
        args.workers,
        round_timeout_s=args.round_timeout,
        idle_timeout_s=args.idle_timeout,
        max_message_bytes=args.max_message_bytes,
    )
    # the handlers go in before the ready line: a client that stops the server as soon as it is
    # listening (a test under load did) otherwise kills it by the default SIGTERM action
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    port = server.start()
    print(f"parameter server listening on {args.host}:{port}", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
