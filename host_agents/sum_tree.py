"""Prioritized experience replay on the host: NumPy sum-tree and min-tree, and the table that
uses them (``PrioritizedReplay``) with the semantics of docs/replay_protocol.md.

The trees are power-of-two arrays: node 1 is the root, node ``n`` has children ``2n`` and
``2n + 1``, leaf ``i`` is node ``leaves + i``. Batch updates and batch prefix-sum descents are
vectorized over the batch (one NumPy operation per tree level), so a batch of 512 costs about
``log2(leaves)`` array operations, not 512 Python loops.

``PrioritizedReplay`` follows Ape-X / PER: a FIFO ring of ``max_size`` items, keys counted from
0 and never reused (slot = key mod max_size), ``priority^alpha`` in the trees, stratified
proportional sampling with replacement, importance weights normalized by the largest possible
weight (found with the min-tree), so every weight is ≤ 1. The Redis baseline's learner and the
tests use it; the C server implements the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["MinTree", "PrioritizedReplay", "SampleBatch", "SumTree"]


def _leaf_count(capacity: int) -> int:
    if not isinstance(capacity, (int, np.integer)) or isinstance(capacity, bool) or capacity < 1:
        raise ValueError(f"tree capacity must be a positive integer, got {capacity!r}")
    return 1 << (int(capacity) - 1).bit_length()


def _last_wins(indices: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop earlier duplicates of an index so that the last value written for it is kept."""
    reversed_unique, first_in_reversed = np.unique(indices[::-1], return_index=True)
    return reversed_unique, values[::-1][first_in_reversed]


class _ArrayTree:
    """Shared layout and batch update; subclasses say how two children combine."""

    _neutral: float

    def __init__(self, capacity: int) -> None:
        self.capacity = int(capacity)
        self.leaves = _leaf_count(capacity)
        self.depth = self.leaves.bit_length() - 1  # levels below the root
        self._tree = np.full(2 * self.leaves, self._neutral, dtype=np.float64)

    def _combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _check_indices(self, indices: np.ndarray) -> np.ndarray:
        idx = np.asarray(indices)
        if idx.size and (idx.dtype.kind not in "iu" or idx.min() < 0 or idx.max() >= self.capacity):
            raise IndexError(f"leaf indices must be integers in [0, {self.capacity})")
        return idx.astype(np.int64, copy=False).reshape(-1)

    def update(self, indices: np.ndarray | Sequence[int], values: np.ndarray | Sequence[float]) -> None:
        """Set leaves ``indices`` to ``values``; a leaf named twice keeps the last value."""
        idx = self._check_indices(np.asarray(indices))
        vals = np.asarray(values, dtype=np.float64).reshape(-1)
        if idx.shape != vals.shape:
            raise ValueError(f"{idx.size} indices but {vals.size} values")
        if idx.size == 0:
            return
        idx, vals = _last_wins(idx, vals)
        nodes = idx + self.leaves
        self._tree[nodes] = vals
        # Recompute each touched parent from both children (not by adding deltas), so that the
        # sums never drift from their leaves however many updates a long run makes.
        for _ in range(self.depth):
            nodes = np.unique(nodes >> 1)
            self._tree[nodes] = self._combine(self._tree[2 * nodes], self._tree[2 * nodes + 1])

    def __getitem__(self, indices: np.ndarray | Sequence[int] | int) -> np.ndarray | float:
        if np.isscalar(indices):
            i = int(indices)  # type: ignore[arg-type]
            if not 0 <= i < self.capacity:
                raise IndexError(f"leaf {i} outside [0, {self.capacity})")
            return float(self._tree[self.leaves + i])
        return self._tree[self._check_indices(np.asarray(indices)) + self.leaves].copy()

    def root(self) -> float:
        return float(self._tree[1])


class SumTree(_ArrayTree):
    """Sum over leaves, with a vectorized prefix-sum search for proportional sampling."""

    _neutral = 0.0

    def _combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return left + right

    def total(self) -> float:
        return self.root()

    def find_prefixsum(self, masses: np.ndarray | Sequence[float]) -> np.ndarray:
        """For each mass ``m`` in ``[0, total)``, the leaf ``i`` whose cumulative range
        ``[sum(leaves < i), sum(leaves ≤ i))`` holds ``m``. A leaf of value 0 is never returned
        while the total is positive (rounding at the edge of a zero leaf goes to its sibling)."""
        m = np.array(masses, dtype=np.float64).reshape(-1)
        nodes = np.ones(m.shape, dtype=np.int64)
        for _ in range(self.depth):
            left = self._tree[2 * nodes]
            right = self._tree[2 * nodes + 1]
            # Go right only when the right subtree holds mass: a parent's positive sum then
            # always leads to a positive leaf even when float rounding puts m at the edge.
            go_right = (m >= left) & (right > 0)
            m = np.where(go_right, m - left, m)
            nodes = 2 * nodes + go_right
        return nodes - self.leaves


class MinTree(_ArrayTree):
    """Minimum over leaves; empty leaves hold +inf so they never win."""

    _neutral = math.inf

    def _combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return np.minimum(left, right)

    def min(self) -> float:
        return self.root()


@dataclass
class SampleBatch:
    """One sampled batch, as every replay path returns it (Reverb-like: key, probability and
    table size with every item)."""

    keys: np.ndarray  # uint64, the items' keys (for update_priorities)
    items: list[bytes]  # the stored bytes, in the order of keys
    probabilities: np.ndarray  # float64, P(i) = p_i^alpha / Σ p^alpha when drawn
    weights: np.ndarray  # float64, importance weights, normalized so the largest possible is 1
    table_size: int  # items stored when sampled (N in the weight formula)

    def __len__(self) -> int:
        return len(self.items)


def check_priorities(priorities: np.ndarray | Sequence[float], count: int, what: str = "items") -> np.ndarray:
    """Priorities as float64, or a ValueError saying what is wrong with them."""
    p = np.asarray(priorities, dtype=np.float64).reshape(-1)
    if p.size != count:
        raise ValueError(f"{count} {what} but {p.size} priorities")
    if p.size and not np.all(np.isfinite(p)):
        raise ValueError(f"priorities must be finite, got {p[~np.isfinite(p)][:4].tolist()}")
    if p.size and p.min() < 0:
        raise ValueError(f"priorities must be >= 0, got {p[p < 0][:4].tolist()}")
    return p


def check_batch_size(batch_size: int) -> int:
    if not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    return int(batch_size)


def check_beta(beta: float) -> float:
    b = float(beta)
    if not math.isfinite(b) or b < 0:
        raise ValueError(f"beta must be finite and >= 0, got {beta!r}")
    return b


class PrioritizedReplay:
    """A prioritized replay table: FIFO ring of ``max_size`` items with sum- and min-trees.

    ``insert`` returns each item's key (``first_key``, ``first_key + 1``, ... never reused;
    ``first_key`` is 0 unless the table joins a stream mid-way); an item lives in slot
    ``key % max_size`` until ``max_size`` later inserts push it out. ``sample`` draws
    ``batch_size`` items with replacement, one in each equal part of the total priority mass.
    An item of priority 0 is stored but never sampled (nor counted in the min-tree, whose
    minimum must be positive for the weights to be finite).
    """

    def __init__(
        self,
        max_size: int,
        alpha: float = 0.6,
        seed: int | np.random.Generator | None = None,
        first_key: int = 0,
    ) -> None:
        if not isinstance(max_size, (int, np.integer)) or isinstance(max_size, bool) or max_size < 1:
            raise ValueError(f"max_size must be a positive integer, got {max_size!r}")
        if not math.isfinite(alpha) or alpha < 0:
            raise ValueError(f"alpha must be finite and >= 0, got {alpha!r}")
        self.max_size = int(max_size)
        self.alpha = float(alpha)
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self._sum = SumTree(self.max_size)
        self._min = MinTree(self.max_size)
        self._items: list[bytes | None] = [None] * self.max_size
        if first_key < 0:
            raise ValueError(f"first_key must be >= 0, got {first_key!r}")
        # A table that starts mid-stream (the Redis learner joining late) numbers from first_key.
        self.first_key = int(first_key)
        self.next_key = self.first_key  # the key the next inserted item gets
        self.inserted = 0
        self.sampled = 0
        self.updated = 0
        self.ignored_updates = 0

    def __len__(self) -> int:
        return min(self.next_key - self.first_key, self.max_size)

    @property
    def size(self) -> int:
        return len(self)

    def total(self) -> float:
        """Σ priority^alpha over stored items."""
        return self._sum.total()

    def _scaled(self, p: np.ndarray) -> np.ndarray:
        # 0^0 would be 1 in NumPy; a zero priority must stay unsampled whatever alpha is.
        return np.where(p > 0, np.power(p, self.alpha), 0.0)

    def _set(self, slots: np.ndarray, p: np.ndarray) -> None:
        scaled = self._scaled(p)
        self._sum.update(slots, scaled)
        self._min.update(slots, np.where(scaled > 0, scaled, math.inf))

    def insert(self, items: Sequence[bytes], priorities: np.ndarray | Sequence[float]) -> np.ndarray:
        """Store ``items`` with ``priorities``; returns their keys (uint64). Oldest items go first
        when the table is full; a batch larger than ``max_size`` keeps only its last items."""
        if isinstance(items, (bytes, bytearray, memoryview)):
            raise ValueError("items must be a sequence of bytes objects, not one bytes object")
        p = check_priorities(priorities, len(items))
        for it in items:
            if not isinstance(it, (bytes, bytearray, memoryview)):
                raise ValueError(f"items must be bytes, got {type(it).__name__}")
        n = len(items)
        keys = np.arange(self.next_key, self.next_key + n, dtype=np.uint64)
        if n == 0:
            return keys
        slots = (keys % np.uint64(self.max_size)).astype(np.int64)
        for slot, it in zip(slots[-self.max_size :].tolist(), items[-self.max_size :], strict=True):
            self._items[slot] = bytes(it)
        self._set(slots, p)  # duplicate slots in one batch: the later item's priority wins
        self.next_key += n
        self.inserted += n
        return keys

    def _stored(self, keys: np.ndarray) -> np.ndarray:
        oldest = self.next_key - len(self)
        return (keys >= np.uint64(oldest)) & (keys < np.uint64(self.next_key))

    def update_priorities(
        self, keys: np.ndarray | Sequence[int], priorities: np.ndarray | Sequence[float]
    ) -> tuple[int, int]:
        """Set new priorities; keys no longer stored (evicted or never issued) are ignored.
        Returns (updated, ignored)."""
        k = np.asarray(keys)
        if k.size and k.dtype.kind not in "iu":
            raise ValueError(f"keys must be integers, got dtype {k.dtype}")
        if k.size and k.dtype.kind == "i" and k.min() < 0:
            raise ValueError("keys must be >= 0")
        k = k.astype(np.uint64).reshape(-1)
        p = check_priorities(priorities, k.size, "keys")
        live = self._stored(k)
        slots = (k[live] % np.uint64(self.max_size)).astype(np.int64)
        self._set(slots, p[live])
        updated, ignored = int(live.sum()), int(k.size - live.sum())
        self.updated += updated
        self.ignored_updates += ignored
        return updated, ignored

    def sample(self, batch_size: int, beta: float = 0.4) -> SampleBatch:
        """Draw ``batch_size`` items with replacement, proportionally to priority^alpha."""
        b = check_batch_size(batch_size)
        beta = check_beta(beta)
        n = len(self)
        if n == 0:
            raise ValueError("cannot sample from an empty table (insert items first)")
        total = self.total()
        if not total > 0:
            raise ValueError(f"cannot sample: none of the {n} stored items has a priority > 0")
        # Stratified: one uniform draw in each of b equal parts of the mass.
        masses = (np.arange(b) + self.rng.random(b)) * (total / b)
        slots = self._sum.find_prefixsum(np.minimum(masses, np.nextafter(total, 0)))
        scaled = self._sum[slots]
        probabilities = scaled / total
        # weight_i = (N P_i)^-beta / max_j (N P_j)^-beta = (p_i / p_min)^-beta, p in the trees.
        weights = np.power(scaled / self._min.min(), -beta)
        oldest = self.next_key - n
        # The key in slot s is the one stored key congruent to s mod max_size.
        keys = oldest + (slots - oldest) % self.max_size
        self.sampled += b
        return SampleBatch(
            keys=keys.astype(np.uint64),
            items=[self._items[s] for s in slots.tolist()],  # type: ignore[misc]
            probabilities=probabilities,
            weights=weights,
            table_size=n,
        )

    def priorities(self, keys: np.ndarray | Sequence[int]) -> np.ndarray:
        """Stored priority^alpha of ``keys`` (NaN for keys no longer stored)."""
        k = np.asarray(keys, dtype=np.uint64).reshape(-1)
        out = np.full(k.size, np.nan)
        live = self._stored(k)
        out[live] = self._sum[(k[live] % np.uint64(self.max_size)).astype(np.int64)]
        return out

    def info(self) -> dict[str, object]:
        return {
            "max_size": self.max_size,
            "size": len(self),
            "alpha": self.alpha,
            "next_key": self.next_key,
            "total": self.total(),
            "inserted": self.inserted,
            "sampled": self.sampled,
            "updated": self.updated,
            "ignored_updates": self.ignored_updates,
        }
