"""host_agents.sum_tree: trees against plain NumPy references, and PrioritizedReplay's sampling
distribution, weights, FIFO eviction and validation (docs/replay_protocol.md semantics)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from host_agents.sum_tree import MinTree, PrioritizedReplay, SumTree

# 99.9% quantiles of the chi-square distribution, by degrees of freedom.
CHI2_999 = {1: 10.83, 3: 16.27, 4: 18.47, 5: 20.52, 7: 24.32}


def chi_square(counts: np.ndarray, probabilities: np.ndarray) -> float:
    expected = counts.sum() * probabilities
    return float(((counts - expected) ** 2 / expected).sum())


def test_sum_tree_non_power_of_two_and_totals() -> None:
    t = SumTree(5)
    assert t.leaves == 8 and t.capacity == 5
    t.update([0, 1, 2, 3, 4], [1.0, 2.0, 3.0, 4.0, 5.0])
    assert t.total() == 15.0
    assert t[4] == 5.0
    with pytest.raises(IndexError):
        t.update([5], [1.0])  # beyond capacity, even though the array has room
    with pytest.raises(IndexError):
        _ = t[5]


def test_batch_update_duplicates_keep_the_last_value() -> None:
    t = SumTree(4)
    t.update([1, 1, 2, 1, 2], [5.0, 7.0, 3.0, 9.0, 0.5])
    assert t[1] == 9.0 and t[2] == 0.5
    assert t.total() == 9.5
    m = MinTree(4)
    m.update([3, 3], [0.1, 4.0])
    assert m.min() == 4.0


def test_batch_update_matches_sequential_reference() -> None:
    rng = np.random.default_rng(7)
    t, m = SumTree(37), MinTree(37)
    ref = np.zeros(37)
    ref_min = np.full(37, math.inf)
    for _ in range(200):
        idx = rng.integers(0, 37, size=rng.integers(1, 20))
        vals = rng.random(idx.size) * 10
        t.update(idx, vals)
        m.update(idx, vals)
        for i, v in zip(idx, vals, strict=True):  # sequential writes: the last one stays
            ref[i] = v
            ref_min[i] = v
    np.testing.assert_allclose(t[np.arange(37)], ref)
    assert t.total() == pytest.approx(ref.sum(), rel=1e-12)
    assert m.min() == ref_min.min()


def test_find_prefixsum_matches_searchsorted() -> None:
    rng = np.random.default_rng(3)
    t = SumTree(100)
    vals = rng.random(100)
    vals[rng.choice(100, 30, replace=False)] = 0.0
    t.update(np.arange(100), vals)
    masses = rng.random(5000) * t.total()
    expected = np.searchsorted(np.cumsum(vals), masses, side="right")
    np.testing.assert_array_equal(t.find_prefixsum(masses), expected)


def test_find_prefixsum_never_returns_a_zero_leaf() -> None:
    t = SumTree(4)
    t.update([0, 1, 2, 3], [1.0, 0.0, 0.0, 1.0])
    # Masses at every edge, including exactly the total (which rounding can produce).
    got = t.find_prefixsum([0.0, np.nextafter(1.0, 0), 1.0, 1.5, np.nextafter(2.0, 0), 2.0])
    assert set(got.tolist()) <= {0, 3}
    assert got.tolist()[:3] == [0, 0, 3]


def test_sampling_frequencies_follow_priorities() -> None:
    alpha = 0.6
    priorities = np.array([1.0, 2.0, 3.0, 4.0, 10.0, 0.0])
    r = PrioritizedReplay(8, alpha=alpha, seed=1234)
    keys = r.insert([bytes([i]) * 3 for i in range(6)], priorities)
    counts = np.zeros(6)
    for _ in range(100):
        batch = r.sample(64)
        counts += np.bincount(batch.keys.astype(np.int64), minlength=6)
        assert all(item == bytes([k]) * 3 for k, item in zip(batch.keys.tolist(), batch.items, strict=True))
    assert counts[5] == 0  # priority 0: stored, never sampled
    scaled = priorities[:5] ** alpha
    expected = scaled / scaled.sum()
    assert chi_square(counts[:5], expected) < CHI2_999[4]
    # The test can fail: the same counts do not pass as alpha = 1 frequencies.
    wrong = priorities[:5] / priorities[:5].sum()
    assert chi_square(counts[:5], wrong) > CHI2_999[4]
    np.testing.assert_array_equal(keys, np.arange(6, dtype=np.uint64))


def test_probabilities_and_weights_equal_the_formula() -> None:
    alpha, beta = 0.7, 0.5
    priorities = np.array([0.5, 1.0, 2.0, 8.0])
    r = PrioritizedReplay(16, alpha=alpha, seed=5)
    r.insert([b"x"] * 4, priorities)
    batch = r.sample(256, beta=beta)
    n = 4
    prob = priorities**alpha / (priorities**alpha).sum()
    w = (n * prob) ** -beta / ((n * prob) ** -beta).max()
    k = batch.keys.astype(np.int64)
    np.testing.assert_allclose(batch.probabilities, prob[k], rtol=1e-12)
    np.testing.assert_allclose(batch.weights, w[k], rtol=1e-12)
    assert batch.table_size == 4
    assert batch.weights.max() <= 1.0
    # The max weight comes from the smallest stored priority even when it is not sampled.
    assert 0 in k  # (with 256 stratified draws the smallest item is drawn: P=0.07)
    assert batch.weights[k == 0].max() == pytest.approx(1.0)


def test_zero_priority_is_left_out_of_the_min_tree() -> None:
    r = PrioritizedReplay(4, alpha=1.0, seed=0)
    r.insert([b"a", b"b", b"c"], [0.0, 1.0, 4.0])
    batch = r.sample(100, beta=1.0)
    # Weight normalization uses the smallest positive priority (1.0), so weights stay finite.
    assert np.all(np.isfinite(batch.weights)) and batch.weights.max() == pytest.approx(1.0)
    assert 0 not in batch.keys


def test_fifo_eviction_at_capacity() -> None:
    r = PrioritizedReplay(4, alpha=1.0, seed=2)
    r.insert([bytes([i]) for i in range(3)], [1.0] * 3)
    keys = r.insert([bytes([i]) for i in range(3, 10)], [1.0] * 7)  # one batch over capacity
    np.testing.assert_array_equal(keys, np.arange(3, 10, dtype=np.uint64))
    assert len(r) == 4 and r.next_key == 10
    batch = r.sample(400)
    assert set(batch.keys.tolist()) == {6, 7, 8, 9}
    assert all(item == bytes([k]) for k, item in zip(batch.keys.tolist(), batch.items, strict=True))
    assert r.total() == pytest.approx(4.0)
    # Evicted or never issued keys are ignored, live ones updated.
    assert r.update_priorities([2, 5, 6, 10, 9], [3.0, 3.0, 0.0, 3.0, 2.0]) == (2, 3)
    assert r.total() == pytest.approx(1.0 + 1.0 + 2.0)
    assert 6 not in r.sample(200).keys


def test_duplicate_slots_in_one_insert_keep_the_last_item() -> None:
    r = PrioritizedReplay(2, alpha=1.0, seed=0)
    r.insert([b"a", b"b", b"c"], [5.0, 1.0, 0.0])  # "c" (key 2) overwrites "a" in slot 0
    assert r.total() == pytest.approx(1.0)
    batch = r.sample(10)
    assert set(batch.items) == {b"b"} and set(batch.keys.tolist()) == {1}


def test_update_priorities_changes_the_distribution() -> None:
    r = PrioritizedReplay(4, alpha=1.0, seed=9)
    r.insert([b"a", b"b"], [1.0, 1.0])
    r.update_priorities(np.array([0, 0], dtype=np.uint64), [9.0, 3.0])  # last one wins
    counts = np.bincount(r.sample(4000).keys.astype(np.int64), minlength=2)
    assert chi_square(counts, np.array([0.75, 0.25])) < CHI2_999[1]  # 3 : 1, not 9 : 1
    r.update_priorities([1], [0.0])
    assert set(r.sample(50).keys.tolist()) == {0}


def test_seeded_sampling_is_reproducible() -> None:
    draws = []
    for _ in range(2):
        r = PrioritizedReplay(64, seed=42)
        r.insert([b"i"] * 50, np.linspace(0.1, 5, 50))
        draws.append(r.sample(32).keys)
    np.testing.assert_array_equal(draws[0], draws[1])


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "8"])
def test_bad_batch_size(bad: object) -> None:
    r = PrioritizedReplay(4)
    r.insert([b"a"], [1.0])
    with pytest.raises(ValueError, match="batch_size"):
        r.sample(bad)  # type: ignore[arg-type]


def test_sampling_an_empty_or_zero_table_is_an_error() -> None:
    r = PrioritizedReplay(4)
    with pytest.raises(ValueError, match="empty"):
        r.sample(1)
    r.insert([b"a", b"b"], [0.0, 0.0])
    with pytest.raises(ValueError, match="priority > 0"):
        r.sample(1)


@pytest.mark.parametrize("bad", [math.nan, -1.0, math.inf])
def test_bad_priorities(bad: float) -> None:
    r = PrioritizedReplay(4)
    with pytest.raises(ValueError, match="priorities"):
        r.insert([b"a", b"b"], [1.0, bad])
    assert len(r) == 0  # a refused insert stores nothing
    r.insert([b"a"], [1.0])
    with pytest.raises(ValueError, match="priorities"):
        r.update_priorities([0], [bad])
    assert r.total() == 1.0


def test_mismatched_lengths_and_bad_arguments() -> None:
    r = PrioritizedReplay(4)
    with pytest.raises(ValueError, match="2 items but 1 priorities"):
        r.insert([b"a", b"b"], [1.0])
    r.insert([b"a"], [1.0])
    with pytest.raises(ValueError, match="2 keys but 1 priorities"):
        r.update_priorities([0, 0], [1.0])
    with pytest.raises(ValueError, match="keys must be"):
        r.update_priorities([-1], [1.0])
    with pytest.raises(ValueError, match="bytes"):
        r.insert(["text"], [1.0])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="beta"):
        r.sample(1, beta=-0.1)
    with pytest.raises(ValueError, match="max_size"):
        PrioritizedReplay(0)
    with pytest.raises(ValueError, match="alpha"):
        PrioritizedReplay(4, alpha=math.nan)


def test_first_key_numbers_a_table_that_joins_mid_stream() -> None:
    r = PrioritizedReplay(3, alpha=1.0, seed=0, first_key=10)
    assert len(r) == 0
    np.testing.assert_array_equal(r.insert([b"a", b"b"], [1.0, 1.0]), [10, 11])
    assert len(r) == 2 and set(r.sample(20).keys.tolist()) == {10, 11}
    r.insert([b"c", b"d"], [1.0, 1.0])  # key 13 evicts key 10
    assert set(r.sample(30).items) == {b"b", b"c", b"d"}
    assert r.update_priorities([9, 10, 13], [2.0, 2.0, 2.0]) == (1, 2)
