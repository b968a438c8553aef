"""The seed paper's Redis baseline for distributed prioritized replay, done the way published
Redis-based Ape-X implementations do it:

- actors append serialized ``(priority, item)`` records to one Redis list per table (RPUSH,
  pipelined: one round trip per batch of experiences);
- the learner drains that list into its own ``PrioritizedReplay`` (the sum-tree lives in the
  learner's memory, not in Redis) with bounded ``LRANGE`` + ``LTRIM`` pairs inside MULTI/EXEC,
  then samples and updates priorities locally;
- model parameters travel through one Redis key per slot (SET / GET), version first.

Keys: each actor batch does ``INCRBY <table>:next_key n`` and its RPUSH in one MULTI/EXEC
transaction, so the list order is the key order and the i-th record ever pushed has key i, the
same key the learner's ``PrioritizedReplay`` gives it. Actors therefore learn their items' keys
at push time, as on the other replay paths. One learner drains a table (a second learner
draining the same list would split the stream; the learner detects that and raises).

``RedisServer`` starts a private ``redis-server`` for tests and benchmarks.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from collections.abc import Sequence
from types import TracebackType

import numpy as np
import redis

from host_agents.netutil import free_port
from host_agents.sum_tree import PrioritizedReplay, SampleBatch, check_priorities

log = logging.getLogger("innet.replay")

__all__ = [
    "RedisActor",
    "RedisLearner",
    "RedisServer",
    "decode_record",
    "encode_record",
    "get_params",
    "set_params",
]

_PRIORITY = struct.Struct(">d")  # record = f64 priority, then the item bytes
_VERSION = struct.Struct(">Q")  # parameter value = u64 version, then the blob
RPUSH_CHUNK = 1024  # records per RPUSH command: bounds one command's size, not round trips


def encode_record(priority: float, item: bytes) -> bytes:
    return _PRIORITY.pack(priority) + bytes(item)


def decode_record(record: bytes) -> tuple[float, bytes]:
    if len(record) < _PRIORITY.size:
        raise ValueError(f"replay record of {len(record)} bytes is shorter than its priority")
    return _PRIORITY.unpack_from(record)[0], record[_PRIORITY.size :]


def items_key(prefix: str, table_id: int) -> str:
    return f"{prefix}:table:{table_id}:items"


def counter_key(prefix: str, table_id: int) -> str:
    return f"{prefix}:table:{table_id}:next_key"


def params_key(prefix: str, slot: int) -> str:
    return f"{prefix}:params:{slot}"


def connect(url_or_client: str | redis.Redis) -> redis.Redis:
    if isinstance(url_or_client, redis.Redis):
        return url_or_client
    return redis.Redis.from_url(url_or_client, decode_responses=False)


class RedisActor:
    """The actor side: pushes experiences with their initial priorities."""

    def __init__(self, url_or_client: str | redis.Redis, table_id: int = 0, prefix: str = "innet") -> None:
        self.redis = connect(url_or_client)
        self.table_id = table_id
        self.prefix = prefix
        self.pushed = 0

    def push(self, items: Sequence[bytes], priorities: np.ndarray | Sequence[float]) -> np.ndarray:
        """Append ``items`` to the table's list in one round trip; returns their keys."""
        if isinstance(items, (bytes, bytearray, memoryview)):
            raise ValueError("items must be a sequence of bytes objects, not one bytes object")
        p = check_priorities(priorities, len(items))
        n = len(items)
        if n == 0:
            return np.zeros(0, dtype=np.uint64)
        records = [encode_record(pr, it) for pr, it in zip(p.tolist(), items, strict=True)]
        pipe = self.redis.pipeline(transaction=True)  # INCRBY + RPUSH atomic: list order = keys
        pipe.incrby(counter_key(self.prefix, self.table_id), n)
        lst = items_key(self.prefix, self.table_id)
        for start in range(0, n, RPUSH_CHUNK):
            pipe.rpush(lst, *records[start : start + RPUSH_CHUNK])
        last = int(pipe.execute()[0])
        self.pushed += n
        return np.arange(last - n, last, dtype=np.uint64)


class RedisLearner:
    """The learner side: drains the table's list into a local ``PrioritizedReplay`` and samples it.

    ``drain_chunk`` bounds one LRANGE (records per round trip); ``drain_limit`` bounds the records
    one ``drain()`` takes, so that actors pushing faster than the learner drains cannot stall it.
    """

    def __init__(
        self,
        url_or_client: str | redis.Redis,
        table_id: int = 0,
        max_size: int = 1_000_000,
        alpha: float = 0.6,
        seed: int | np.random.Generator | None = None,
        prefix: str = "innet",
        drain_chunk: int = 4096,
        drain_limit: int | None = None,
    ) -> None:
        if drain_chunk < 1:
            raise ValueError(f"drain_chunk must be >= 1, got {drain_chunk}")
        self.redis = connect(url_or_client)
        self.table_id = table_id
        self.prefix = prefix
        self.max_size = max_size
        self.alpha = alpha
        self.drain_chunk = drain_chunk
        self.drain_limit = drain_limit
        self._seed = seed
        # Created at the first drain, numbered from the key of the first record still in the list.
        self.replay: PrioritizedReplay | None = None
        PrioritizedReplay(max_size, alpha)  # validate the arguments now, not at the first drain
        self.drained = 0

    def drain(self) -> int:
        """Move pushed records into the local replay; returns how many were moved."""
        lst = items_key(self.prefix, self.table_id)
        ctr = counter_key(self.prefix, self.table_id)
        moved = 0
        while self.drain_limit is None or moved < self.drain_limit:
            n = (
                self.drain_chunk
                if self.drain_limit is None
                else min(self.drain_chunk, self.drain_limit - moved)
            )
            pipe = self.redis.pipeline(transaction=True)
            pipe.get(ctr)
            pipe.llen(lst)
            pipe.lrange(lst, 0, n - 1)
            pipe.ltrim(lst, n, -1)
            counter, length, records, _ = pipe.execute()
            # Every push bumps the counter with its RPUSH, so the first record in the list has
            # key counter - length (records removed so far).
            first = int(counter or 0) - int(length)
            if self.replay is None:
                self.replay = PrioritizedReplay(self.max_size, self.alpha, seed=self._seed, first_key=first)
            elif records and first != self.replay.next_key:
                raise RuntimeError(
                    f"table {self.table_id}: next record in Redis has key {first} but this learner "
                    f"expected {self.replay.next_key}: another learner is draining {lst!r}"
                )
            if records:
                decoded = [decode_record(r) for r in records]
                self.replay.insert([it for _, it in decoded], [pr for pr, _ in decoded])
                moved += len(records)
            if len(records) < n:
                break
        self.drained += moved
        if moved:
            log.debug("redis table %d: drained %d records (replay size %d)", self.table_id, moved, len(self))
        return moved

    def __len__(self) -> int:
        return 0 if self.replay is None else len(self.replay)

    def sample(self, batch_size: int, beta: float = 0.4, drain: bool = True) -> SampleBatch:
        if drain:
            self.drain()
        if self.replay is None:
            # Same error as an empty local table, after validating batch_size the same way.
            return PrioritizedReplay(self.max_size, self.alpha).sample(batch_size, beta)
        return self.replay.sample(batch_size, beta)

    def update_priorities(
        self, keys: np.ndarray | Sequence[int], priorities: np.ndarray | Sequence[float]
    ) -> tuple[int, int]:
        if self.replay is None:
            p = check_priorities(priorities, len(np.asarray(keys).reshape(-1)), "keys")
            return 0, p.size
        return self.replay.update_priorities(keys, priorities)

    def info(self) -> dict[str, object]:
        pending = int(self.redis.llen(items_key(self.prefix, self.table_id)))
        local = self.replay.info() if self.replay is not None else {"size": 0, "max_size": self.max_size}
        return {**local, "pending_in_redis": pending, "drained": self.drained}


def set_params(r: redis.Redis, blob: bytes, version: int, slot: int = 0, prefix: str = "innet") -> int:
    """Publish parameters: one SET of version + blob, so readers never see a torn pair."""
    if not 0 <= version < 1 << 64:
        raise ValueError(f"version must fit in a u64, got {version}")
    r.set(params_key(prefix, slot), _VERSION.pack(version) + bytes(blob))
    return version


def get_params(r: redis.Redis, slot: int = 0, prefix: str = "innet") -> tuple[int, bytes]:
    """(version, blob); (0, b"") when nothing was ever set, as on the other replay paths."""
    value = r.get(params_key(prefix, slot))
    if value is None:
        return 0, b""
    return _VERSION.unpack_from(value)[0], bytes(value[_VERSION.size :])


class RedisServer:
    """A private ``redis-server`` on ``host`` (a free port unless ``port`` is given), without
    persistence, for tests and benchmarks. Use as a context manager or call start()/stop()."""

    def __init__(
        self,
        port: int | None = None,
        host: str = "127.0.0.1",
        executable: str = "redis-server",
        startup_timeout: float = 10.0,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.host = host
        self.port = port
        self.executable = executable
        self.startup_timeout = startup_timeout
        self.extra_args = list(extra_args)
        self.process: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    @staticmethod
    def available(executable: str = "redis-server") -> str | None:
        """The executable's path, or None when redis-server is not installed."""
        return shutil.which(executable)

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host=self.host, port=self.port, decode_responses=False)

    def start(self) -> RedisServer:
        path = self.available(self.executable)
        if path is None:
            raise RuntimeError(
                f"{self.executable} not found on PATH: install it (apt-get install redis-server)"
            )
        if self.process is not None:
            raise RuntimeError(f"redis-server already running on port {self.port}")
        self._dir = tempfile.TemporaryDirectory(prefix="innet-redis-")
        logfile = os.path.join(self._dir.name, "redis.log")
        fixed_port = self.port is not None
        for attempt in range(3):  # a free port can be taken between probing and binding
            if not fixed_port:
                self.port = free_port("tcp", self.host)
            args = [
                path,
                "--bind", self.host,
                "--port", str(self.port),
                "--save", "",
                "--appendonly", "no",
                "--daemonize", "no",
                # a private server: protected mode would refuse every client not on loopback
                "--protected-mode", "no",
                "--dir", self._dir.name,
                "--logfile", logfile,
                *self.extra_args,
            ]  # fmt: skip
            self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL)
            if self._wait_ready():
                log.info("redis-server pid %d on %s:%d", self.process.pid, self.host, self.port)
                return self
            tail = self._log_tail(logfile)
            self._kill()
            if fixed_port or "Address already in use" not in tail or attempt == 2:
                self._cleanup_dir()
                raise RuntimeError(f"redis-server on {self.host}:{self.port} did not start: {tail}")
        raise AssertionError("unreachable")

    def _wait_ready(self) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + self.startup_timeout
        probe = self.client()
        try:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    return False
                try:
                    if probe.ping():
                        return True
                except redis.exceptions.ConnectionError:
                    time.sleep(0.02)
            return False
        finally:
            probe.close()

    @staticmethod
    def _log_tail(logfile: str) -> str:
        try:
            with open(logfile, errors="replace") as f:
                return " | ".join(f.read().strip().splitlines()[-3:]) or "(empty log)"
        except OSError:
            return "(no log)"

    def _kill(self) -> None:
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def _cleanup_dir(self) -> None:
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def stop(self) -> None:
        self._kill()
        self._cleanup_dir()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
