"""host_agents.replay_pipeline against the real C replay server on loopback, both carriers (a
thread of this process, a child process): calls run in the order they were submitted (a sample
queued after an update sees it, one queued before does not), each update or push is executed once
(the server's counters), queued pushes are all stored by close(), backpressure bounds what is in
flight, and a call that fails after its retries is raised to the caller instead of being
dropped. The child process: errors keep their type across it, its death fails the calls waiting
on it, a client it cannot make fails the constructor. Across namespaces with packet loss:
tests/test_replay_netns.py."""

from __future__ import annotations

import os
import pickle
import signal
from typing import Any

import numpy as np
import pytest
from test_replay_client import real_server

from host_agents.replay_client import HostReplayClient, ReplayConfig, ReplayError, ReplayTimeout
from host_agents.replay_pipeline import (
    BackgroundReplay,
    ReplayPipeline,
    ReplayPipelineError,
    ReplayProcess,
)

CARRIERS = ("thread", "process")


def config(port: int, **kw: object) -> ReplayConfig:
    return ReplayConfig(server_port=port, seed=5, **kw)  # type: ignore[arg-type]


def pipeline(carrier: str, port: int, max_pending: int = 4, **kw: object) -> ReplayPipeline:
    if carrier == "thread":
        return BackgroundReplay(HostReplayClient(config(port, **kw)), max_pending=max_pending)
    return ReplayProcess(config(port, **kw), max_pending=max_pending)


def client(port: int, **kw: object) -> HostReplayClient:
    return HostReplayClient(config(port, **kw))


def counters(port: int) -> dict:
    with client(port) as c:
        info = c.info()
    return {**info["counters"], "table": info["tables"][0]}


@pytest.mark.parametrize("carrier", CARRIERS)
def test_calls_run_in_submission_order_and_once(carrier: str) -> None:
    with real_server("--table", "t:max_size=64,alpha=1") as port:
        io = pipeline(carrier, port, max_pending=2)
        io.insert([b"item%d" % i for i in range(16)], np.ones(16))
        io.drain()
        keys = io.sync.sample(16).keys  # synchronous call, in order with the others
        hot = int(keys[0])
        before = io.sample(400)  # queued before the update: drawn from uniform priorities
        io.update_priorities([hot], [1000.0])
        after = io.sample(400)  # queued after it: sees it
        b, a = before.result(), after.result()
        assert np.allclose(b.probabilities, 1 / 16)
        p_hot = a.probabilities[a.keys == hot]
        assert p_hot.size > 300 and np.allclose(p_hot, 1000 / 1015)
        # twenty more updates without waiting, then one sample queued behind them
        for i in range(20):
            io.update_priorities([hot], [float(i + 1)])
        last = io.sample(200).result()
        assert np.allclose(last.probabilities[last.keys == hot], 20 / 35)  # the last one won
        io.close()
        assert io.stats["updates_applied"] == 21 and io.stats["updates_ignored"] == 0
        assert io.stats["items_inserted"] == 16
        c = counters(port)
        assert c["updates"] == 21 and c["priorities_updated"] == 21  # each executed once
        assert c["pushes"] == 1 and c["table"]["inserts"] == 16


@pytest.mark.parametrize("carrier", CARRIERS)
def test_close_drains_queued_pushes_under_backpressure(carrier: str) -> None:
    with real_server("--table", "t:max_size=1000,alpha=1") as port:
        io = pipeline(carrier, port, max_pending=3)
        for i in range(40):
            io.insert([b"x" * 200] * 10, np.full(10, float(i + 1)))
            assert io.pending <= 3  # never more than max_pending in flight
        io.close()  # returns only when every push is stored
        assert io.stats["items_inserted"] == 400
        c = counters(port)
        assert c["pushes"] == 40 and c["table"]["inserts"] == 400 and c["table"]["size"] == 400
        with pytest.raises(ReplayPipelineError, match="closed"):
            io.insert([b"late"], [1.0])


@pytest.mark.parametrize("carrier", CARRIERS)
def test_a_failed_call_is_raised_not_dropped(carrier: str) -> None:
    with real_server("--table", "t:max_size=8,alpha=1") as port:
        pass  # the server is gone: nobody answers on this port any more
    io = pipeline(carrier, port, timeout_s=0.05, max_tries=2)
    io.insert([b"lost?"], [1.0])  # returns at once: the failure comes later
    with pytest.raises(ReplayPipelineError, match="background insert failed") as err:
        io.drain()
    assert isinstance(err.value.__cause__, ReplayTimeout)
    with pytest.raises(ReplayPipelineError):  # broken from now on
        io.update_priorities([0], [1.0])
    with pytest.raises(ReplayPipelineError):
        io.close()
    assert io.stats["items_inserted"] == 0


@pytest.mark.parametrize("carrier", CARRIERS)
def test_sample_errors_reach_the_future(carrier: str) -> None:
    with real_server("--table", "t:max_size=8,alpha=1") as port:
        with pipeline(carrier, port) as io:
            fut = io.sample(4)  # the table is empty: the server answers EMPTY
            with pytest.raises(ReplayError, match="(?i)empty") as err:
                fut.result()
            assert err.value.op == "SAMPLE"  # the client's own error, fields and all
            io.insert([b"a"], [1.0])  # the pipeline still works after a failed read
        assert io.stats["items_inserted"] == 1


def test_bad_arguments() -> None:
    with real_server("--table", "t:max_size=8,alpha=1") as port:
        with pytest.raises(ValueError, match="max_pending"):
            BackgroundReplay(client(port), max_pending=0)
        with pytest.raises(ValueError, match="max_pending"):
            ReplayProcess(ReplayConfig(server_port=port), max_pending=0)


@pytest.mark.parametrize("carrier", CARRIERS)
def test_queued_parameter_publication(carrier: str) -> None:
    """set_params goes out after the calls queued before it, without the caller waiting; a store
    that holds a newer version (an earlier run's) fails the pipeline at the next call."""
    with real_server("--table", "t:max_size=8,alpha=1") as port:
        io = pipeline(carrier, port)
        io.insert([b"a"], [1.0])
        io.set_params(b"weights-v3", 3)
        assert io.sync.get_params() == (3, b"weights-v3")  # queued behind the publication
        io.set_params(b"weights-v2", 2)  # older than what the store holds
        with pytest.raises(ReplayPipelineError, match="already holds version 3 > 2"):
            io.drain()
        with pytest.raises(ReplayPipelineError):
            io.close()


def test_process_death_fails_the_waiting_calls() -> None:
    """The child killed with calls queued: each of them, and every later call, raises
    ReplayPipelineError naming the exit; close() returns."""
    with real_server("--table", "t:max_size=64,alpha=1") as port:
        io = pipeline("process", port, max_pending=8)
        assert isinstance(io, ReplayProcess)
        io.insert([b"a"] * 4, np.ones(4))
        io.drain()
        os.kill(io._proc.pid, signal.SIGKILL)
        io._proc.wait()
        fut = io.sample(4)
        with pytest.raises(ReplayPipelineError, match="exited"):
            fut.result()
        with pytest.raises(ReplayPipelineError, match="exited"):
            io.sync.info()
        io.update_priorities([0], [1.0])  # not sent: fails at once, raised at close
        with pytest.raises(ReplayPipelineError, match="background update_priorities failed"):
            io.close()
        assert io._proc.poll() is not None


def test_process_ignores_signals_and_exits_when_the_caller_closes() -> None:
    """SIGTERM and SIGINT (a Ctrl-C reaches the whole process group) leave the child serving, so
    that the caller can still drain; closing the connection ends it."""
    with real_server("--table", "t:max_size=64,alpha=1") as port:
        io = pipeline("process", port)
        assert isinstance(io, ReplayProcess)
        for sig in (signal.SIGTERM, signal.SIGINT):
            os.kill(io._proc.pid, sig)
        io.insert([b"x"] * 3, np.ones(3))
        io.close()
        assert io.stats["items_inserted"] == 3 and io.stats["calls"] == 1
        assert io._proc.returncode == 0
        assert counters(port)["table"]["inserts"] == 3


def test_process_start_failure_is_raised_by_the_constructor() -> None:
    """A client the child cannot make (its socket cannot bind an address this host does not have)
    fails ReplayProcess() with the error the client raises in-process, and leaves no child."""
    unbindable = ReplayConfig(bind_ip="192.0.2.1")  # TEST-NET-1: never a local address
    with pytest.raises(OSError) as here:
        HostReplayClient(unbindable)
    name = f"start-failure-{os.getpid()}"
    with pytest.raises(OSError) as there:
        ReplayProcess(unbindable, name=name)
    assert there.value.errno == here.value.errno
    left = [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(int(p)).endswith(name)]
    assert left == [], "the child outlived its failed start"


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


@pytest.mark.parametrize("carrier", CARRIERS)
def test_bytes_like_items_and_unread_replies(carrier: str) -> None:
    """memoryview and bytearray items are stored as on the thread; samples never waited for are
    still answered and counted by close(), which returns at once (the child's writer is not
    left blocked on them)."""
    with real_server("--table", "t:max_size=4096,alpha=1") as port:
        io = pipeline(carrier, port)
        io.insert([memoryview(b"m" * 2000), bytearray(b"b" * 2000)] * 100, np.ones(200))
        io.drain()
        for _ in range(4):
            io.sample(200)  # ~400 KB of replies each, never read by the caller
        io.close()
        assert io.stats["items_inserted"] == 200 and io.stats["calls"] == 5
        assert counters(port)["table"]["inserts"] == 200


def test_process_refuses_arguments_that_cannot_travel_and_stays_in_step() -> None:
    """A call whose arguments cannot be pickled raises at once and is never queued: the calls
    after it get their own replies."""
    with real_server("--table", "t:max_size=64,alpha=1") as port:
        io = pipeline("process", port)
        with pytest.raises((TypeError, AttributeError, pickle.PicklingError)):
            io.sync.set_params(lambda: None, 1)
        io.insert([b"a", b"b"], [1.0, 1.0])
        assert io.sync.info()["tables"][0]["size"] == 2
        io.close()


class _CtrlCInNextRead:
    """The child's real connection, with a Ctrl-C landing inside the next reply's read (where a
    signal at the terminal can land: the caller reads replies on its main thread)."""

    def __init__(self, conn: Any) -> None:
        self._conn, self._fired = conn, False

    def recv(self) -> Any:
        if not self._fired:
            self._fired = True
            raise KeyboardInterrupt
        return self._conn.recv()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_process_interrupted_read_stops_the_child_and_fails_what_waits() -> None:
    """A reply interrupted half-way leaves the replies out of step with the calls: the interrupt
    is raised, the child is stopped, the calls still waiting and every later call fail with the
    reason, and close() returns."""
    with real_server("--table", "t:max_size=64,alpha=1") as port:
        io = pipeline("process", port, max_pending=8)
        assert isinstance(io, ReplayProcess)
        io.insert([b"a"] * 4, np.ones(4))
        io.drain()
        first, second = io.sample(4), io.sample(4)
        io._conn = _CtrlCInNextRead(io._conn)
        with pytest.raises(KeyboardInterrupt):
            first.result()
        assert io._proc.wait(timeout=10) == -signal.SIGKILL
        for fut in (first, second):
            with pytest.raises(ReplayPipelineError, match="interrupted while being read"):
                fut.result()
        with pytest.raises(ReplayPipelineError, match="interrupted while being read"):
            io.sync.info()
        io.close(drain=False)
        assert io._proc.poll() is not None
