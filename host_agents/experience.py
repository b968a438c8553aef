"""Ape-X experience: n-step transitions built by each actor, and their bytes in the replay.

An actor turns its stream of steps into n-step transitions ``(s_t, a_t, R, s_{t+n}, discount)``
with ``R = sum_{k<n} gamma^k r_{t+k}`` and ``discount = gamma^n`` (``gamma^k`` when the episode
was truncated after k steps, 0 when it terminated: nothing to bootstrap from). The learner's
target is then ``R + discount * Q_target(s', argmax_a Q(s', a))``.

Item format (little-endian; every item of a table comes from one environment, so the learner
knows the observation shape and dtype)::

    u16 magic 0x5854 ("TX")  u8 version 1  u8 flags (bit 0: body zlib-compressed)
    u16 action  u16 reserved  f32 return  f32 discount
    body: obs bytes then next_obs bytes (C order), optionally zlib-compressed

Atari frames compress about ten times with zlib level 1, which matters when a batch of them
crosses the network; flat observations are sent raw.
"""

from __future__ import annotations

import struct
import zlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["NStepAccumulator", "Transition", "TransitionBatch", "decode_transitions", "encode_transition"]

_HEADER = struct.Struct("<HBBHHff")
_MAGIC = 0x5854
_VERSION = 1
_ZLIB = 1


@dataclass
class Transition:
    obs: np.ndarray
    action: int
    ret: float  # discounted n-step return
    next_obs: np.ndarray
    discount: float  # gamma^n, gamma^k when truncated after k < n steps, 0 when terminal


@dataclass
class TransitionBatch:
    obs: np.ndarray  # [B, *obs_shape]
    actions: np.ndarray  # int64 [B]
    returns: np.ndarray  # float32 [B]
    next_obs: np.ndarray
    discounts: np.ndarray  # float32 [B]


def encode_transition(t: Transition, compress: bool = False) -> bytes:
    """The replay item for one transition."""
    if t.obs.shape != t.next_obs.shape or t.obs.dtype != t.next_obs.dtype:
        raise ValueError("obs and next_obs differ in shape or dtype")
    if not 0 <= t.action < 1 << 16:
        raise ValueError(f"action {t.action} does not fit in 16 bits")
    body = np.ascontiguousarray(t.obs).tobytes() + np.ascontiguousarray(t.next_obs).tobytes()
    flags = 0
    if compress:
        body = zlib.compress(body, 1)
        flags |= _ZLIB
    return _HEADER.pack(_MAGIC, _VERSION, flags, int(t.action), 0, float(t.ret), float(t.discount)) + body


def _record_dtype(obs_shape: tuple[int, ...], dtype: np.dtype) -> np.dtype:
    """An uncompressed transition as a NumPy record: _HEADER's fields, then the two observations."""
    return np.dtype([("magic", "<u2"), ("version", "u1"), ("flags", "u1"), ("action", "<u2"), ("pad", "<u2"),
                     ("ret", "<f4"), ("discount", "<f4"), ("obs", dtype, obs_shape),
                     ("next_obs", dtype, obs_shape)])  # fmt: skip


def decode_transitions(
    items: Sequence[bytes], obs_shape: tuple[int, ...], obs_dtype: np.dtype
) -> TransitionBatch:
    """A batch of items back as arrays; ValueError naming the first item that is not a
    transition of this shape (wrong table, another environment, corrupt data)."""
    dtype = np.dtype(obs_dtype)
    obs_bytes = int(np.prod(obs_shape)) * dtype.itemsize
    n = len(items)
    whole = _HEADER.size + 2 * obs_bytes
    if n and all(len(item) == whole for item in items):
        # the usual batch (uncompressed, one size): one array view instead of a loop per item
        rec = np.frombuffer(b"".join(items), _record_dtype(obs_shape, dtype))
        if ((rec["magic"] == _MAGIC) & (rec["version"] == _VERSION) & (rec["flags"] & _ZLIB == 0)).all():
            return TransitionBatch(
                rec["obs"].copy(), rec["action"].astype(np.int64), rec["ret"].copy(), rec["next_obs"].copy(),
                rec["discount"].copy(),
            )  # fmt: skip
    obs = np.empty((n, *obs_shape), dtype)
    next_obs = np.empty((n, *obs_shape), dtype)
    actions = np.empty(n, np.int64)
    returns = np.empty(n, np.float32)
    discounts = np.empty(n, np.float32)
    for i, item in enumerate(items):
        if len(item) < _HEADER.size:
            raise ValueError(f"item {i}: {len(item)} bytes is shorter than a transition header")
        magic, version, flags, action, _, ret, discount = _HEADER.unpack_from(item)
        if magic != _MAGIC or version != _VERSION:
            raise ValueError(f"item {i}: not a transition (magic {magic:#x}, version {version})")
        body = memoryview(item)[_HEADER.size :]
        if flags & _ZLIB:
            try:
                body = memoryview(zlib.decompress(body))
            except zlib.error as e:
                raise ValueError(f"item {i}: corrupt compressed body ({e})") from None
        if len(body) != 2 * obs_bytes:
            raise ValueError(
                f"item {i}: body of {len(body)} bytes, expected {2 * obs_bytes} for two "
                f"{dtype} observations of shape {obs_shape}"
            )
        obs[i] = np.frombuffer(body[:obs_bytes], dtype).reshape(obs_shape)
        next_obs[i] = np.frombuffer(body[obs_bytes:], dtype).reshape(obs_shape)
        actions[i], returns[i], discounts[i] = action, ret, discount
    return TransitionBatch(obs, actions, returns, next_obs, discounts)


class NStepAccumulator:
    """Turns (obs, action, reward, next_obs, terminated, truncated) steps into n-step
    transitions. ``add`` returns the transitions completed by that step: one per step once n
    steps are queued, and all the queued ones at the end of an episode."""

    def __init__(self, n: int, gamma: float) -> None:
        if n < 1:
            raise ValueError(f"n-step must be >= 1, got {n}")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        self.n = n
        self.gamma = gamma
        self._queue: deque[tuple[np.ndarray, int, float]] = deque()

    def _emit(self, next_obs: np.ndarray, terminated: bool) -> Transition:
        ret = 0.0
        for k, (_, _, r) in enumerate(self._queue):
            ret += self.gamma**k * r
        obs, action, _ = self._queue.popleft()
        steps = len(self._queue) + 1
        discount = 0.0 if terminated else self.gamma**steps
        return Transition(obs, action, ret, next_obs, discount)

    def add(
        self,
        obs: np.ndarray,
        action: int,
        reward: float,
        next_obs: np.ndarray,
        terminated: bool,
        truncated: bool,
    ) -> list[Transition]:
        self._queue.append((obs, int(action), float(reward)))
        out = []
        if terminated or truncated:
            while self._queue:
                out.append(self._emit(next_obs, terminated))
        elif len(self._queue) == self.n:
            out.append(self._emit(next_obs, False))
        return out

    def __len__(self) -> int:
        return len(self._queue)
