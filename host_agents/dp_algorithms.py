"""Losses and gradient weighting for the data-parallel workers (``host_agents.worker``).

- ``gae``: generalized advantage estimation (Schulman et al. 2016) over one rollout.
- ``ppo_loss`` / ``a2c_loss``: clipped PPO and advantage actor-critic, both with optional
  importance-sampling truncation; ``dqn_loss``: Double DQN with a Huber loss.
- ``chunk_weights``: how an asynchronous worker turns the switch's per-chunk sums into one
  averaged gradient (staleness-aware scaling).

Asynchronous training follows Stellaris (Yu et al., SC'24). **This is our reading of the paper,
adapted to what the switch tells a worker**, not a copy of its code:

*Staleness-aware scaling.* The switch returns, per chunk of values, the sum ``S_c`` of the
``n_c`` worker gradients it holds and the oldest and newest model version among them
(``version_lo``, ``version_hi``); it cannot say which contributor had which version. A worker's
model version is the job-wide call number of the last aggregated update it applied (a worker
that fell behind and skipped calls carries an older version; in synchronous jobs it is simply
the number of updates). Let ``V`` be the newest version this worker knows of after the call:
``max(own version, max_c version_hi_c)``. The staleness of chunk ``c`` is the lag of its
contributors' mid version::

    s_c = max(0, V - (version_lo_c + version_hi_c) / 2)

(with ``version_lo`` alone, one old contributor would mark the whole chunk as old as itself).
Stellaris' point is to down-weight the gradients that are staler than the others, not to
shrink every step: a rule ``1 / (1 + s_c)`` cuts the step size of every update by the job's
typical lag (and the first version of this module, which did that with the oldest contributor,
learned more slowly than no scaling at all). So the weight is relative to a reference
staleness ``s_ref``, the typical staleness of this job, and never above 1::

    w_c = min(1, (1 + s_ref) / (1 + s_c))    # staleness scaling on
    w_c = 1                                   # staleness scaling off
    g_c = w_c * S_c / n_c                     # n_c > 0
    g_c = 0                                   # n_c = 0: the chunk missed this worker

A chunk as stale as usual or fresher keeps the full mean ``S_c / n_c``; one twice as stale
(in ``1 + s``) as the reference gets half of it. ``s_ref`` is a running average
(``StalenessReference``: exponential, decay 0.9 per call, started at the first call's value) of
the mean ``s_c`` over the chunks a worker received in each call, taken *before* the call's own
staleness is folded in, so an unusually stale call is weighed against the history. Every
worker that received a chunk sees the same ``S_c``, ``n_c`` and versions; their references are
averages of (mostly) the same values, so workers apply (nearly) the same update, and the
worker's periodic parameter resynchronisation (``--resync-interval``) removes what drift is
left. In a synchronous job ``n_c = N`` and all versions are equal (``s_c = 0``, ``w_c = 1``),
so the rule is the plain mean; the synchronous worker does not even compute it.

*Importance-sampling truncation.* Each sample keeps the log-probability ``log mu(a|s)`` of the
policy that collected it. The policy-gradient term weights it by the truncated ratio
``min(pi(a|s) / mu(a|s), rho_bar)``: A2C multiplies ``-A * log pi`` by that weight (a constant,
as in V-trace); PPO uses ``min(ratio, rho_bar)`` in place of the ratio in both surrogate terms,
which bounds the otherwise unbounded term for negative advantages (as dual-clip PPO does).
``rho_bar = 0`` turns truncation off.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from host_agents.apex import double_q_loss

__all__ = [
    "PARAM_VERSION_FLAG",
    "ChunkWeights",
    "StalenessReference",
    "chunk_kinds",
    "a2c_loss",
    "chunk_weights",
    "dqn_loss",
    "gae",
    "is_weights",
    "ppo_loss",
]


def gae(
    rewards: np.ndarray,
    values: np.ndarray,
    dones: np.ndarray,
    last_value: np.ndarray | float,
    gamma: float,
    lam: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(advantages, returns) of a rollout of T steps (arrays [T] or [T, envs]).

    ``dones[t]`` is 1 when step t ended its episode (the value after it is not bootstrapped;
    a time-limit truncation should fold ``gamma * V(final obs)`` into ``rewards[t]`` first).
    ``last_value`` is V of the observation after the last step."""
    rewards = np.asarray(rewards, np.float64)
    values = np.asarray(values, np.float64)
    dones = np.asarray(dones, np.float64)
    adv = np.zeros_like(rewards)
    running = np.zeros_like(rewards[0])
    next_value = np.asarray(last_value, np.float64) * np.ones_like(rewards[0])
    for t in reversed(range(len(rewards))):
        nonterminal = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_value * nonterminal - values[t]
        running = delta + gamma * lam * nonterminal * running
        adv[t] = running
        next_value = values[t]
    return adv.astype(np.float32), (adv + values).astype(np.float32)


def is_weights(logp: torch.Tensor, behaviour_logp: torch.Tensor, rho_bar: float) -> torch.Tensor:
    """Truncated importance weights ``min(pi / mu, rho_bar)`` (no gradient); all ones when
    ``rho_bar`` is 0 (truncation off)."""
    if rho_bar <= 0:
        return torch.ones_like(logp)
    return torch.clamp(torch.exp(logp.detach() - behaviour_logp), max=rho_bar)


def _policy_terms(model: nn.Module, obs: torch.Tensor, actions: torch.Tensor):  # type: ignore[no-untyped-def]
    logits, values = model(obs)
    dist = torch.distributions.Categorical(logits=logits)
    return dist.log_prob(actions), dist.entropy(), values


def _actor_critic_loss(
    policy_loss: torch.Tensor,
    values: torch.Tensor,
    returns: torch.Tensor,
    entropy: torch.Tensor,
    vf_coef: float,
    ent_coef: float,
) -> tuple[torch.Tensor, dict[str, float]]:
    """policy + vf_coef * value - ent_coef * entropy (PPO and A2C alike), with their stats."""
    value_loss = 0.5 * (returns - values).pow(2).mean()
    ent = entropy.mean()
    loss = policy_loss + vf_coef * value_loss - ent_coef * ent
    return loss, {"policy_loss": policy_loss.item(), "value_loss": value_loss.item(), "entropy": ent.item()}


def ppo_loss(
    model: nn.Module,
    obs: torch.Tensor,
    actions: torch.Tensor,
    behaviour_logp: torch.Tensor,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    clip: float = 0.2,
    vf_coef: float = 0.5,
    ent_coef: float = 0.01,
    rho_bar: float = 0.0,
    normalize_advantages: bool = True,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped PPO loss of one minibatch; with ``rho_bar`` > 0 the ratio is truncated at it."""
    logp, entropy, values = _policy_terms(model, obs, actions)
    if normalize_advantages and advantages.numel() > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    ratio = torch.exp(logp - behaviour_logp)
    if rho_bar > 0:
        ratio = torch.clamp(ratio, max=rho_bar)
    surrogate = torch.min(ratio * advantages, torch.clamp(ratio, 1 - clip, 1 + clip) * advantages)
    loss, stats = _actor_critic_loss(-surrogate.mean(), values, returns, entropy, vf_coef, ent_coef)
    with torch.no_grad():
        stats["clipfrac"] = ((ratio - 1).abs() > clip).float().mean().item()
    return loss, stats


def a2c_loss(
    model: nn.Module,
    obs: torch.Tensor,
    actions: torch.Tensor,
    behaviour_logp: torch.Tensor,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    vf_coef: float = 0.5,
    ent_coef: float = 0.01,
    rho_bar: float = 0.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Advantage actor-critic loss; each sample's policy term weighted by its truncated IS ratio."""
    logp, entropy, values = _policy_terms(model, obs, actions)
    weights = is_weights(logp, behaviour_logp, rho_bar)
    policy_loss = -(weights * advantages * logp).mean()
    loss, stats = _actor_critic_loss(policy_loss, values, returns, entropy, vf_coef, ent_coef)
    stats["is_weight_mean"] = weights.mean().item()
    return loss, stats


def dqn_loss(
    q_net: nn.Module,
    target_net: nn.Module,
    obs: torch.Tensor,
    actions: torch.Tensor,
    rewards: torch.Tensor,
    next_obs: torch.Tensor,
    dones: torch.Tensor,
    gamma: float,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Double DQN Huber loss on one-step transitions: ``host_agents.apex.double_q_loss`` (the
    online net picks the next action, the target net values it) with returns = rewards and
    discounts = gamma * (1 - dones)."""
    batch = {
        "obs": obs,
        "actions": actions.long(),
        "returns": rewards,
        "next_obs": next_obs,
        "discounts": gamma * (1.0 - dones),
    }
    out = double_q_loss(q_net, target_net, batch)
    return out.loss, {"loss": out.loss.item(), "q_mean": out.q_mean}


PARAM_VERSION_FLAG = 1 << 31
"""Set in the version a worker sends with a parameter-resynchronisation call (not a gradient)."""


def chunk_kinds(
    count: np.ndarray, version_lo: np.ndarray, version_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(gradient chunks, parameter chunks) of a result, as boolean masks: a chunk whose every
    contributor sent parameters has ``PARAM_VERSION_FLAG`` in both ``version_lo`` and
    ``version_hi`` (the switch keeps the unsigned min and max), a gradient chunk in neither;
    a chunk that mixes both kinds (``lo`` without the flag, ``hi`` with it) and a missing chunk
    are in neither mask."""
    got = np.asarray(count) > 0
    lo_param = np.asarray(version_lo, np.int64) >= PARAM_VERSION_FLAG
    hi_param = np.asarray(version_hi, np.int64) >= PARAM_VERSION_FLAG
    return got & ~hi_param, got & lo_param


@dataclass
class ChunkWeights:
    """Per-element factors for an aggregated gradient, and what they were made of."""

    factors: torch.Tensor  # multiply the summed gradient by this (0 where a chunk is missing)
    staleness_mean: float  # mean s_c over the chunks received
    contributors_mean: float  # mean n_c over the chunks received
    missing: int  # chunks with n_c = 0
    weight_mean: float = 1.0  # mean staleness weight w_c over the chunks received


class StalenessReference:
    """The running reference staleness ``s_ref`` of the module docstring: an exponential average
    (``decay`` per call) of each call's mean chunk staleness, started at the first value."""

    def __init__(self, decay: float = 0.9) -> None:
        self.decay = decay
        self.value: float | None = None

    def update(self, staleness_mean: float) -> None:
        if self.value is None:
            self.value = float(staleness_mean)
        else:
            self.value = self.decay * self.value + (1.0 - self.decay) * float(staleness_mean)


def chunk_weights(
    count: np.ndarray,
    version_lo: np.ndarray,
    version_hi: np.ndarray,
    own_version: int,
    numel: int,
    values_per_chunk: int,
    staleness_scaling: bool = True,
    reference: float | None = None,
) -> ChunkWeights:
    """The factors ``w_c / n_c`` of the module docstring (``1 / n_c`` without staleness
    scaling), expanded to ``numel`` elements (chunk c covers elements ``c * values_per_chunk``
    onwards). ``reference`` is ``s_ref``; None (no history yet) takes this call's own mean
    staleness."""
    count = np.asarray(count, np.int64)
    lo = np.asarray(version_lo, np.int64)
    hi = np.asarray(version_hi, np.int64)
    got = count > 0
    n_got = int(got.sum())
    newest = max(int(own_version), int(hi[got].max(initial=own_version)))
    staleness = np.where(got, np.maximum(0.0, newest - (lo + hi) / 2.0), 0.0)
    staleness_mean = float(staleness[got].mean()) if n_got else 0.0
    weight = np.ones(count.shape, np.float64)
    if staleness_scaling:
        s_ref = staleness_mean if reference is None else float(reference)
        weight = np.minimum(1.0, (1.0 + s_ref) / (1.0 + staleness))
    per_chunk = np.zeros(count.shape, np.float64)
    per_chunk[got] = weight[got] / count[got]
    factors = np.repeat(per_chunk, values_per_chunk)[:numel]
    if factors.size < numel:
        raise ValueError(f"{count.size} chunks of {values_per_chunk} cannot cover {numel} elements")
    return ChunkWeights(
        torch.from_numpy(factors.astype(np.float32)),
        staleness_mean,
        float(count[got].mean()) if n_got else 0.0,
        int(count.size - n_got),
        float(weight[got].mean()) if n_got else 1.0,
    )
