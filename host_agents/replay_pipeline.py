"""Replay calls off the caller's path, so that learners and actors overlap them with work.

A learner that samples, trains, then updates priorities and waits each time spends its round
trips idle; an actor that pushes stops its environment loop. A :class:`ReplayPipeline` runs a
:class:`~host_agents.replay_client.ReplayClient`'s calls **in the order they were submitted**,
one at a time, which gives the guarantees the agents need:

- a priority update submitted after a sample is applied after that sample, exactly once (the
  client is called once; its retries reuse the request id, and a repeated update sets the same
  priority again);
- a prefetched sample (:meth:`~ReplayPipeline.sample` returns a future) is drawn while the
  caller trains;
- fire-and-forget calls (``update_priorities``, ``insert``, ``set_params``) are bounded: at most
  ``max_pending`` wait at a time, the next one blocks until the oldest completes (backpressure,
  never a silent drop). A call that fails after the client's retries is raised to the caller at
  its next call, or at ``drain`` / ``close``; after a failure every call raises.
- ``close`` drains: it waits for every submitted update or insert before closing the client.

Two carriers, one behaviour:

- :class:`BackgroundReplay` runs the calls on a thread of the caller's process. Cheap to start,
  but the thread's Python (encoding requests, cutting replies) holds the interpreter lock that
  the caller needs between its own calls: on the 2-core machine a replay thread busy 20% of the
  time made the learner's training step ~1.7x slower (the two threads take turns, one torch op
  per switch interval while the other runs Python).
- :class:`ReplayProcess` runs them in a child process of its own (``python -m
  host_agents.replay_pipeline``, talking over a socketpair): no lock shared with the caller. The
  caller pays one pickle per call and reads the replies when it needs them; it has no thread of
  its own. The learner's default (``--io-process``): 25-30% more updates/s than the thread on
  the 2-CPU Intel VM, about the same on the AMD VM, where four actors took half a core
  (bench/README.md, sixth and thirteenth passes).

Calls that the caller needs answered now (parameters, info) go through ``sync``, a proxy that
runs each client method in order with the others and waits for it.
"""

from __future__ import annotations

import abc
import os
import pickle
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from host_agents.replay_client import ReplayClient, ReplayConfig, make_replay_client

__all__ = ["BackgroundReplay", "CallResult", "ReplayPipeline", "ReplayPipelineError", "ReplayProcess"]


class ReplayPipelineError(RuntimeError):
    """A background replay call failed (the original error is the cause); the pipeline is broken."""


class CallResult(Protocol):
    """What a submitted call returns (a concurrent.futures.Future or a reply of the process)."""

    def done(self) -> bool: ...
    def exception(self) -> BaseException | None: ...
    def result(self) -> Any: ...


class _SyncProxy:
    """The client's methods, each run in order with the queued calls and waited for."""

    def __init__(self, owner: ReplayPipeline) -> None:
        self._owner = owner

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            return self._owner._run(name, *args).result()

        return call


class ReplayPipeline(abc.ABC):
    """``io.sample(32, beta)`` returns a future; ``io.update_priorities(k, p)``, ``io.insert(items,
    p)`` and ``io.set_params(blob, version)`` return at once; ``io.sync.info()`` waits;
    ``io.close()`` drains. Subclasses carry the calls (a thread, a process)."""

    def __init__(self, max_pending: int) -> None:
        if max_pending < 1:
            raise ValueError(f"max_pending must be >= 1, got {max_pending}")
        self.max_pending = max_pending
        # fire-and-forget calls not accounted for yet, oldest first: (what, call, set_params version)
        self._pending: deque[tuple[str, CallResult, int]] = deque()
        self._failure: BaseException | None = None
        self._closed = False
        self.sync = _SyncProxy(self)
        self.busy_s = 0.0  # time the carrier spent in client calls
        self.stats = {"updates_applied": 0, "updates_ignored": 0, "items_inserted": 0, "calls": 0}

    @abc.abstractmethod
    def _submit(self, method: str, *args: Any) -> CallResult:
        """Queue ``client.<method>(*args)`` behind every call submitted before it."""

    @abc.abstractmethod
    def _stop(self, cancel: bool) -> None:
        """Stop the carrier and close the client (``cancel``: drop the calls not started)."""

    def _run(self, method: str, *args: Any) -> CallResult:
        self._check()
        return self._submit(method, *args)

    def _collect(self) -> None:
        """Account for the fire-and-forget calls that completed, oldest first; remember a failure."""
        while self._pending and self._pending[0][1].done():
            what, call, version = self._pending.popleft()
            err = call.exception()
            if err is not None:
                self._fail(f"background {what} failed: {err}", err)
                continue
            result = call.result()
            if what == "update_priorities":
                applied, ignored = result
                self.stats["updates_applied"] += applied
                self.stats["updates_ignored"] += ignored
            elif what == "insert":
                self.stats["items_inserted"] += len(result)
            elif what == "set_params" and result != version:  # the store keeps the newer version
                self._fail(
                    f"the parameter store already holds version {result} > {version}, from an "
                    "earlier run: continue that run with --resume, or restart the replay server"
                )

    def _fail(self, message: str, cause: BaseException | None = None) -> None:
        if self._failure is None:
            self._failure = ReplayPipelineError(message)
            self._failure.__cause__ = cause

    def _check(self) -> None:
        if self._closed:
            raise ReplayPipelineError("the background replay is closed")
        self._collect()
        if self._failure is not None:
            raise self._failure

    def _fire(self, what: str, *args: Any, version: int = 0) -> None:
        self._check()
        while len(self._pending) >= self.max_pending:  # backpressure: wait for the oldest
            self._pending[0][1].exception()  # the client's retries bound the wait
            self._check()
        self._pending.append((what, self._submit(what, *args), version))

    def sample(self, batch_size: int, beta: float | None = None) -> CallResult:
        """Queue a sample; its future's result (a SampleBatch) comes after every call before it."""
        return self._run("sample", batch_size, beta)

    def update_priorities(
        self, keys: np.ndarray | Sequence[int], priorities: np.ndarray | Sequence[float]
    ) -> None:
        """Queue a priority update (applied after every call submitted before it)."""
        k = np.array(keys, copy=True)  # copies: the caller may reuse its arrays
        p = np.array(priorities, dtype=np.float64, copy=True)
        self._fire("update_priorities", k, p)

    def insert(self, items: Sequence[bytes], priorities: np.ndarray | Sequence[float]) -> None:
        """Queue a push of ``items`` (their count is in ``stats["items_inserted"]`` once stored)."""
        p = np.array(priorities, dtype=np.float64, copy=True)
        # a memoryview cannot be pickled for the process: bytes-like items as bytes (anything
        # else goes on as it is, for the client to refuse)
        items_ = [bytes(x) if isinstance(x, (bytearray, memoryview)) else x for x in items]
        self._fire("insert", items_, p)

    def set_params(self, blob: bytes, version: int, slot: int = 0) -> None:
        """Queue a parameter publication (actors pull whichever version is stored when they ask,
        so the caller need not wait). A store that keeps a newer version fails the pipeline."""
        self._fire("set_params", blob, version, slot, version=version)

    @property
    def pending(self) -> int:
        """Fire-and-forget calls not yet accounted for."""
        self._collect()
        return len(self._pending)

    def drain(self) -> None:
        """Wait for every queued update and insert; raise the first failure."""
        self._check()
        while self._pending:
            self._pending[0][1].exception()  # waits; the client's retries bound the wait
            self._collect()
        if self._failure is not None:
            raise self._failure

    def close(self, drain: bool = True) -> None:
        """Drain (unless ``drain=False``: queued calls not started are dropped), stop the carrier
        and close the client. Raises a failure found while draining, after closing."""
        if self._closed:
            return
        err: BaseException | None = None
        try:
            if drain:
                self.drain()
        except BaseException as e:  # noqa: BLE001 - re-raised below, after the client is closed
            err = e
        finally:
            self._closed = True
            self._stop(cancel=not drain or err is not None)
        if err is not None:
            raise err

    def __enter__(self) -> ReplayPipeline:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.close(drain=exc_type is None)


class BackgroundReplay(ReplayPipeline):
    """The calls on one thread of this process (a single-worker executor is a FIFO). Owns
    ``client`` (closes it)."""

    def __init__(self, client: ReplayClient, max_pending: int = 4, name: str = "replay-io") -> None:
        super().__init__(max_pending)
        self._client = client
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name)

    def _timed(self, fn: Callable[..., Any], *args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.busy_s += time.perf_counter() - t0
            self.stats["calls"] += 1

    def _submit(self, method: str, *args: Any) -> Future:
        return self._pool.submit(self._timed, getattr(self._client, method), *args)

    def _stop(self, cancel: bool) -> None:
        self._pool.shutdown(wait=True, cancel_futures=cancel)
        self._client.close()


class _Reply:
    """A call carried by :class:`ReplayProcess`: complete once its reply has been read (the
    replies come in call order)."""

    __slots__ = ("_owner", "_ok", "_value")

    def __init__(self, owner: ReplayProcess) -> None:
        self._owner = owner
        self._ok: bool | None = None
        self._value: Any = None

    def _set(self, ok: bool, value: Any) -> None:
        self._ok, self._value = ok, value

    def done(self) -> bool:
        if self._ok is None:
            self._owner._read(block=False)
        return self._ok is not None

    def exception(self) -> BaseException | None:
        while self._ok is None:
            self._owner._read(block=True)
        return None if self._ok else self._value

    def result(self) -> Any:
        err = self.exception()
        if err is not None:
            raise err
        return self._value


# where `python -m host_agents.replay_pipeline` finds the package, whatever the caller's cwd
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)
_START_TIMEOUT_S = 60.0


class ReplayProcess(ReplayPipeline):
    """The calls in a child process that makes its own client from ``config`` (a
    :class:`~host_agents.replay_client.ReplayConfig`): no interpreter lock shared with the
    caller. Replies are read by the caller when it asks for a result or queues a call (no thread
    here); the child sends them from a thread of its own, so that neither side blocks the other
    with a large message. The child ignores SIGINT and SIGTERM (the caller stops it by closing the
    connection, after draining) and exits when the caller's end closes, the caller gone included.
    Raises what the client's construction raises (the child reports it)."""

    def __init__(self, config: ReplayConfig, max_pending: int = 4, name: str = "replay-io") -> None:
        super().__init__(max_pending)
        self._calls: deque[_Reply] = deque()  # submitted, reply not read yet, oldest first
        self._broken: BaseException | None = None
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        with theirs:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "host_agents.replay_pipeline", str(theirs.fileno()), name],
                pass_fds=(theirs.fileno(),),
                env=env,
                stdin=subprocess.DEVNULL,
            )
        self._conn = Connection(ours.detach())
        try:
            hello = self._submit("__start__", config)
            deadline = time.monotonic() + _START_TIMEOUT_S
            while not hello.done():
                if time.monotonic() > deadline:
                    raise ReplayPipelineError(
                        f"the replay I/O process did not start in {_START_TIMEOUT_S:.0f} s"
                    )
                self._read(block=True, timeout=1.0)
            hello.result()
            self.stats["calls"], self.busy_s = 0, 0.0  # the client's construction is not a call
        except BaseException:
            self._stop(cancel=True)
            raise

    def _submit(self, method: str, *args: Any) -> _Reply:
        call = _Reply(self)
        if self._broken is not None:
            call._set(False, self._broken)
            return call
        data = pickle.dumps((method, args))  # arguments that cannot travel fail here, nothing queued
        self._calls.append(call)
        try:
            self._conn.send_bytes(data)
        except OSError:
            self._read(block=True)  # the child is gone: every queued call gets the reason
        except BaseException:  # interrupted half-way (Ctrl-C): the stream is out of step
            self._break("a call was interrupted while being sent")
            raise
        return call

    def _read(self, block: bool, timeout: float | None = None) -> None:
        """Read the replies that are there (``block``: at least one, unless ``timeout`` passes)."""
        while self._calls:
            if not self._conn.poll(timeout if block else 0):
                return
            try:
                ok, value, busy = self._conn.recv()
            except (EOFError, OSError):
                self._lost()
                return
            except BaseException:  # interrupted half-way: the replies are out of step
                self._break("a reply was interrupted while being read")
                raise
            self.busy_s += busy
            self.stats["calls"] += 1
            self._calls.popleft()._set(ok, value)
            block = False  # one reply was what we waited for; take the others already there

    def _lost(self) -> None:
        """The child closed its end: every call not answered fails with the reason."""
        code = self._proc.poll()
        if code is None:
            try:
                code = self._proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                code = None
        self._fail_all(ReplayPipelineError(f"the replay I/O process exited (exit code {code})"))

    def _break(self, reason: str) -> None:
        """Replies can no longer be matched to calls: stop the child, fail what waits."""
        self._proc.kill()
        self._fail_all(ReplayPipelineError(f"the replay I/O process was stopped: {reason}"))

    def _fail_all(self, err: ReplayPipelineError) -> None:
        self._broken = err
        while self._calls:
            self._calls.popleft()._set(False, err)

    def _stop(self, cancel: bool) -> None:
        if cancel:
            self._proc.kill()
        else:
            try:
                self._conn.send(None)  # the child finishes what is queued, closes its client, exits
            except OSError:
                pass
            # replies nobody asked for (a sample never waited on) are read, so that the child's
            # writer is not left blocked on them, and counted as the thread counts its calls
            deadline = time.monotonic() + 30.0
            while self._calls and self._broken is None and time.monotonic() < deadline:
                self._read(block=True, timeout=1.0)
        try:
            self._proc.wait(timeout=30.0)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._conn.close()


def _portable(err: BaseException) -> BaseException:
    """``err`` if it survives pickling (the client's errors do), else a RuntimeError saying it."""
    try:
        pickle.loads(pickle.dumps(err))
        return err
    except Exception:  # noqa: BLE001 - any failure to pickle means: send a description instead
        return RuntimeError(f"{type(err).__name__}: {err}")


def _serve(fd: int) -> None:
    """The child of :class:`ReplayProcess`: make the client, then run the calls in order."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops this process, after draining
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    conn = Connection(fd)
    replies: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()

    def write() -> None:  # sends never hold up the calls (a large reply, a slow reader)
        while (reply := replies.get()) is not None:
            try:
                conn.send_bytes(reply)
            except OSError:
                return

    writer = threading.Thread(target=write, name="replay-io-replies", daemon=True)
    writer.start()
    client: ReplayClient | None = None
    try:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                break  # the parent is gone
            if msg is None:
                break
            method, args = msg
            t0 = time.perf_counter()
            try:
                if method == "__start__":
                    client = make_replay_client(args[0])
                    value: Any = None
                elif client is None:
                    raise ReplayPipelineError("the replay client was not made")
                else:
                    value = getattr(client, method)(*args)
                data = pickle.dumps((True, value, time.perf_counter() - t0))
            except Exception as e:  # noqa: BLE001 - every failure (a value that cannot travel too)
                data = pickle.dumps((False, _portable(e), time.perf_counter() - t0))
            replies.put(data)
    finally:
        if client is not None:
            client.close()
        replies.put(None)
        writer.join(timeout=10.0)
        conn.close()


if __name__ == "__main__":
    # through the package's module, so that what the child raises pickles under its real name
    from host_agents.replay_pipeline import _serve as serve

    serve(int(sys.argv[1]))
