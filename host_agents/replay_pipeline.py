"""Replay calls on a background I/O thread, so that learners and actors overlap them with work.

A learner that samples, trains, then updates priorities and waits each time spends its round
trips idle; an actor that pushes stops its environment loop. :class:`BackgroundReplay` runs a
:class:`~host_agents.replay_client.ReplayClient`'s calls on one thread, **in the order they were
submitted** (a single-worker executor is a FIFO), which gives the guarantees the agents need:

- a priority update submitted after a sample is applied after that sample, exactly once (the
  thread calls the client once; the client's retries reuse the request id, and a repeated update
  sets the same priority again);
- a prefetched sample (:meth:`sample` returns a future) is drawn while the caller trains;
- fire-and-forget calls (:meth:`update_priorities`, :meth:`insert`, :meth:`set_params`) are bounded: at most
  ``max_pending`` wait at a time, the next one blocks until one completes (backpressure, never a
  silent drop). A call that fails after the client's retries is raised to the caller at its next
  call, or at :meth:`drain` / :meth:`close`; after a failure every call raises.
- :meth:`close` drains: it waits for every submitted update or insert before closing the client.

The client is used by the I/O thread only: calls that the caller needs answered now (parameters,
info) go through :attr:`sync`, a proxy that runs each method on the thread and waits for it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from host_agents.replay_client import ReplayClient, SampleBatch

__all__ = ["BackgroundReplay", "ReplayPipelineError"]


class ReplayPipelineError(RuntimeError):
    """A background replay call failed (the original error is the cause); the pipeline is broken."""


class _SyncProxy:
    """The client's methods, each run on the I/O thread and waited for."""

    def __init__(self, owner: BackgroundReplay) -> None:
        self._owner = owner

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._owner._client, name)
        if not callable(method):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._owner._run(method, *args, **kwargs).result()

        return call


class BackgroundReplay:
    """``io = BackgroundReplay(client)``; ``fut = io.sample(32, beta)``; ``io.update_priorities(k, p)``;
    ``io.sync.info()``; ``io.close()``. Owns ``client`` (closes it)."""

    def __init__(self, client: ReplayClient, max_pending: int = 4, name: str = "replay-io") -> None:
        if max_pending < 1:
            raise ValueError(f"max_pending must be >= 1, got {max_pending}")
        self._client = client
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name)
        self._slots = threading.Semaphore(max_pending)
        self._pending: deque[tuple[str, Future]] = deque()  # fire-and-forget calls, oldest first
        self._failure: BaseException | None = None
        self._closed = False
        self.sync = _SyncProxy(self)
        self.busy_s = 0.0  # time the I/O thread spent in client calls
        self.stats = {"updates_applied": 0, "updates_ignored": 0, "items_inserted": 0, "calls": 0}

    # --- the thread side ----------------------------------------------------------------------

    def _timed(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self.busy_s += time.perf_counter() - t0
            self.stats["calls"] += 1

    def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        self._check()
        return self._pool.submit(self._timed, fn, *args, **kwargs)

    # --- the caller side ----------------------------------------------------------------------

    def _collect(self) -> None:
        """Account for the fire-and-forget calls that completed, oldest first; remember a failure."""
        while self._pending and self._pending[0][1].done():
            what, fut = self._pending.popleft()
            err = fut.exception()
            if err is not None:
                if self._failure is None:
                    self._failure = ReplayPipelineError(f"background {what} failed: {err}")
                    self._failure.__cause__ = err
                continue
            result = fut.result()
            if what == "update_priorities":
                applied, ignored = result
                self.stats["updates_applied"] += applied
                self.stats["updates_ignored"] += ignored
            elif what == "insert":
                self.stats["items_inserted"] += len(result)

    def _check(self) -> None:
        if self._closed:
            raise ReplayPipelineError("the background replay is closed")
        self._collect()
        if self._failure is not None:
            raise self._failure

    def _fire(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        self._check()
        self._slots.acquire()  # backpressure: at most max_pending calls wait
        try:
            fut = self._pool.submit(self._timed, fn, *args)
        except BaseException:
            self._slots.release()
            raise
        fut.add_done_callback(lambda _f: self._slots.release())
        self._pending.append((what, fut))

    def sample(self, batch_size: int, beta: float | None = None) -> Future[SampleBatch]:
        """Queue a sample; its future completes after every call submitted before it."""
        return self._run(self._client.sample, batch_size, beta)

    def update_priorities(
        self, keys: np.ndarray | Sequence[int], priorities: np.ndarray | Sequence[float]
    ) -> None:
        """Queue a priority update (applied after every call submitted before it)."""
        k = np.array(keys, copy=True)  # copies: the caller may reuse its arrays
        p = np.array(priorities, dtype=np.float64, copy=True)
        self._fire("update_priorities", self._client.update_priorities, k, p)

    def insert(self, items: Sequence[bytes], priorities: np.ndarray | Sequence[float]) -> None:
        """Queue a push of ``items`` (their count is in ``stats["items_inserted"]`` once stored)."""
        p = np.array(priorities, dtype=np.float64, copy=True)
        self._fire("insert", self._client.insert, list(items), p)

    def set_params(self, blob: bytes, version: int, slot: int = 0) -> None:
        """Queue a parameter publication (actors pull whichever version is stored when they ask,
        so the caller need not wait). A store that keeps a newer version fails the pipeline."""

        def publish() -> int:
            held = self._client.set_params(blob, version, slot)
            if held != version:  # the server keeps the newer of two versions
                raise ReplayPipelineError(
                    f"the parameter store already holds version {held} > {version}, from an earlier "
                    "run: continue that run with --resume, or restart the replay server"
                )
            return held

        self._fire("set_params", publish)

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
        """Drain (unless ``drain=False``: queued calls not started are cancelled), stop the thread
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
            self._pool.shutdown(wait=True, cancel_futures=not drain or err is not None)
            self._client.close()
        if err is not None:
            raise err

    def __enter__(self) -> BackgroundReplay:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.close(drain=exc_type is None)
