"""host_agents.redis_replay against a real redis-server: actors push, the learner drains into its
local sum-tree and samples, priorities are updated, parameters are published."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

from host_agents.redis_replay import (
    RedisActor,
    RedisLearner,
    RedisServer,
    get_params,
    items_key,
    set_params,
)

CHI2_999_DF3 = 16.27

needs_redis = pytest.mark.skipif(
    RedisServer.available() is None, reason="redis-server not installed (apt-get install redis-server)"
)


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    if RedisServer.available() is None:
        pytest.skip("redis-server not installed (apt-get install redis-server)")
    with RedisServer() as s:
        yield s


@pytest.fixture
def url(server: RedisServer) -> str:
    server.client().flushall()  # each test starts from empty tables
    return server.url


def test_missing_redis_server_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="apt-get install redis-server"):
        RedisServer(executable="innet-no-such-redis-server").start()


@needs_redis
def test_server_on_a_given_port_and_stop() -> None:
    with RedisServer() as first:
        port = first.port
    with RedisServer(port=port) as s:  # the stopped server freed its port
        assert s.port == port and s.client().ping()
        proc = s.process
    assert proc is not None and proc.poll() is not None


def test_several_actors_push_and_the_learner_samples_by_priority(url: str) -> None:
    priorities = [1.0, 2.0, 4.0, 8.0]  # actor a's items all have priority priorities[a]
    per_actor = 50
    keys_of: dict[int, bytes] = {}
    lock = threading.Lock()

    def actor(a: int) -> None:
        act = RedisActor(url)
        for batch in range(5):
            items = [f"actor{a}-{batch}-{i}".encode() for i in range(per_actor // 5)]
            keys = act.push(items, [priorities[a]] * len(items))
            with lock:
                keys_of.update(zip(keys.tolist(), items, strict=True))

    threads = [threading.Thread(target=actor, args=(a,)) for a in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(keys_of) == list(range(4 * per_actor))  # keys are unique and dense

    learner = RedisLearner(url, max_size=1000, alpha=1.0, seed=11)
    counts = np.zeros(4)
    for _ in range(40):
        batch = learner.sample(100, beta=0.4)
        assert batch.table_size == 4 * per_actor
        for k, item in zip(batch.keys.tolist(), batch.items, strict=True):
            assert keys_of[k] == item  # the actor's key names the item the learner holds
            counts[int(item.split(b"-")[0][5:])] += 1
    expected = np.array(priorities) / sum(priorities)
    assert ((counts - counts.sum() * expected) ** 2 / (counts.sum() * expected)).sum() < CHI2_999_DF3
    assert learner.info()["pending_in_redis"] == 0


def test_update_priorities_changes_sampling(url: str) -> None:
    RedisActor(url).push([b"a", b"b", b"c"], [1.0, 1.0, 1.0])
    learner = RedisLearner(url, max_size=8, alpha=1.0, seed=3)
    assert set(learner.sample(60).keys.tolist()) == {0, 1, 2}
    assert learner.update_priorities([0, 1, 99], [0.0, 0.0, 5.0]) == (2, 1)
    assert set(learner.sample(60).items) == {b"c"}


def test_learner_evicts_fifo_and_weights_are_normalized(url: str) -> None:
    actor = RedisActor(url)
    actor.push([bytes([i]) for i in range(6)], [1.0, 1.0, 1.0, 1.0, 2.0, 4.0])
    learner = RedisLearner(url, max_size=3, alpha=1.0, seed=0)
    batch = learner.sample(70, beta=1.0)
    assert set(batch.keys.tolist()) <= {3, 4, 5} and batch.table_size == 3
    # weight = (p / p_min)^-beta with p_min = 1 (key 3)
    expected = {3: 1.0, 4: 0.5, 5: 0.25}
    np.testing.assert_allclose(batch.weights, [expected[k] for k in batch.keys.tolist()])


def test_drain_is_bounded_and_a_late_learner_numbers_from_the_list(url: str) -> None:
    actor = RedisActor(url)
    actor.push([b"old"] * 5, [1.0] * 5)
    first = RedisLearner(url, max_size=100, drain_chunk=2, drain_limit=3)
    assert first.drain() == 3 and len(first) == 3
    actor.push([b"new"], [1.0])
    # A learner that starts now sees keys 3, 4 (left by the first) and 5.
    late = RedisLearner(url, max_size=100, seed=1)
    assert late.drain() == 3
    assert set(late.sample(50).keys.tolist()) == {3, 4, 5}
    actor.push([b"more"], [1.0])
    with pytest.raises(RuntimeError, match="another learner"):
        first.drain()  # its next key is 3, Redis's next record is key 6


def test_refused_push_stores_nothing(url: str) -> None:
    actor = RedisActor(url)
    with pytest.raises(ValueError, match="finite"):
        actor.push([b"a", b"b"], [1.0, float("nan")])
    with pytest.raises(ValueError, match="2 items but 3 priorities"):
        actor.push([b"a", b"b"], [1.0, 1.0, 1.0])
    assert actor.redis.llen(items_key("innet", 0)) == 0
    learner = RedisLearner(url, max_size=4)
    with pytest.raises(ValueError, match="empty"):
        learner.sample(4)
    with pytest.raises(ValueError, match="batch_size"):
        learner.sample(0)


def test_tables_are_separate(url: str) -> None:
    RedisActor(url, table_id=0).push([b"zero"], [1.0])
    RedisActor(url, table_id=1).push([b"one"] * 2, [1.0, 1.0])
    assert RedisLearner(url, table_id=1, max_size=4).sample(4).items == [b"one"] * 4
    assert RedisLearner(url, table_id=0, max_size=4).sample(2).items == [b"zero"] * 2


def test_params_set_get(server: RedisServer, url: str) -> None:
    r = server.client()
    assert get_params(r) == (0, b"")
    blob = bytes(range(256)) * 1000
    set_params(r, blob, 7)
    set_params(r, b"other", 1, slot=2)
    assert get_params(r) == (7, blob)
    assert get_params(r, slot=2) == (1, b"other")
    set_params(r, b"newer", 8)
    assert get_params(r) == (8, b"newer")
    with pytest.raises(ValueError, match="u64"):
        set_params(r, b"", -1)
