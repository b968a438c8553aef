"""host_agents.replay_pipeline.BackgroundReplay against the real C replay server on loopback:
calls run in the order they were submitted (a sample queued after an update sees it, one queued
before does not), each update or push is executed once (the server's counters), queued pushes
are all stored by close(), backpressure bounds what is in flight, and a call that fails after
its retries is raised to the caller instead of being dropped. Across namespaces with packet
loss: tests/test_replay_netns.py."""

from __future__ import annotations

import numpy as np
import pytest
from test_replay_client import real_server

from host_agents.replay_client import HostReplayClient, ReplayConfig, ReplayTimeout
from host_agents.replay_pipeline import BackgroundReplay, ReplayPipelineError


def client(port: int, **kw: object) -> HostReplayClient:
    return HostReplayClient(ReplayConfig(server_port=port, seed=5, **kw))  # type: ignore[arg-type]


def counters(port: int) -> dict:
    with client(port) as c:
        info = c.info()
    return {**info["counters"], "table": info["tables"][0]}


def test_calls_run_in_submission_order_and_once() -> None:
    with real_server("--table", "t:max_size=64,alpha=1") as port:
        io = BackgroundReplay(client(port), max_pending=2)
        io.insert([b"item%d" % i for i in range(16)], np.ones(16))
        io.drain()
        keys = io.sync.sample(16).keys  # synchronous call through the same thread
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


def test_close_drains_queued_pushes_under_backpressure() -> None:
    with real_server("--table", "t:max_size=1000,alpha=1") as port:
        io = BackgroundReplay(client(port), max_pending=3)
        for i in range(40):
            io.insert([b"x" * 200] * 10, np.full(10, float(i + 1)))
            assert io.pending <= 3  # never more than max_pending in flight
        io.close()  # returns only when every push is stored
        assert io.stats["items_inserted"] == 400
        c = counters(port)
        assert c["pushes"] == 40 and c["table"]["inserts"] == 400 and c["table"]["size"] == 400
        with pytest.raises(ReplayPipelineError, match="closed"):
            io.insert([b"late"], [1.0])


def test_a_failed_call_is_raised_not_dropped() -> None:
    with real_server("--table", "t:max_size=8,alpha=1") as port:
        pass  # the server is gone: nobody answers on this port any more
    io = BackgroundReplay(client(port, timeout_s=0.05, max_tries=2), max_pending=4)
    io.insert([b"lost?"], [1.0])  # returns at once: the failure comes later
    with pytest.raises(ReplayPipelineError, match="background insert failed") as err:
        io.drain()
    assert isinstance(err.value.__cause__, ReplayTimeout)
    with pytest.raises(ReplayPipelineError):  # broken from now on
        io.update_priorities([0], [1.0])
    with pytest.raises(ReplayPipelineError):
        io.close()
    assert io.stats["items_inserted"] == 0


def test_sample_errors_reach_the_future() -> None:
    with real_server("--table", "t:max_size=8,alpha=1") as port:
        with BackgroundReplay(client(port)) as io:
            fut = io.sample(4)  # the table is empty: the server answers EMPTY
            with pytest.raises(Exception, match="(?i)empty"):
                fut.result()
            io.insert([b"a"], [1.0])  # the pipeline still works after a failed read
        assert io.stats["items_inserted"] == 1


def test_bad_arguments() -> None:
    with real_server("--table", "t:max_size=8,alpha=1") as port:
        with pytest.raises(ValueError, match="max_pending"):
            BackgroundReplay(client(port), max_pending=0)


def test_queued_parameter_publication() -> None:
    """set_params goes out after the calls queued before it, without the caller waiting; a store
    that holds a newer version (an earlier run's) fails the pipeline at the next call."""
    with real_server("--table", "t:max_size=8,alpha=1") as port:
        io = BackgroundReplay(client(port))
        io.insert([b"a"], [1.0])
        io.set_params(b"weights-v3", 3)
        assert io.sync.get_params() == (3, b"weights-v3")  # queued behind the publication
        io.set_params(b"weights-v2", 2)  # older than what the store holds
        with pytest.raises(ReplayPipelineError, match="already holds version 3 > 2"):
            io.drain()
        with pytest.raises(ReplayPipelineError):
            io.close()
