"""Ape-X DQN pieces the actor and the learner share (Horgan et al., ICLR'18).

- ``actor_epsilon``: each actor's exploration rate, eps_i = base^(1 + alpha * i / (N - 1)).
- ``ApexConfig``: the settings both sides must agree on (network width, discount, n-step),
  the base of ``ActorConfig`` and ``LearnerConfig``.
- ``double_q_loss``: the Dueling Double DQN loss on an n-step batch. The target is
  ``R + discount * Q_target(s', argmax_a Q_online(s', a))`` (``discount`` = gamma^n, 0 at a
  terminal; see host_agents.experience). The actor calls it with its one network as both
  online and target to compute initial priorities; the learner with its two.
- ``replay_status``: the table's size and insert count from the replay's ``info()``.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from host_agents.cli import ConfigError, add_config_args, config_from_args, run_main
from host_agents.experience import TransitionBatch
from host_agents.replay_client import ReplayClient, ReplayConfig, make_replay_client
from host_agents.run_config import RunConfig

__all__ = [
    "ApexConfig",
    "LossOutput",
    "StopFlag",
    "actor_epsilon",
    "batch_tensors",
    "double_q_loss",
    "finite",
    "mean_last",
    "replay_status",
    "update_target",
]


def actor_epsilon(index: int, num_actors: int, base: float = 0.4, alpha: float = 7.0) -> float:
    """Ape-X's per-actor exploration: base^(1 + alpha * i / (N - 1)); ``base`` for one actor."""
    if num_actors < 1 or not 0 <= index < num_actors:
        raise ConfigError(f"actor index {index} is outside 0..{num_actors - 1}")
    if num_actors == 1:
        return base
    return base ** (1.0 + alpha * index / (num_actors - 1))


@dataclass
class ApexConfig(RunConfig):
    """Settings the actors and the learner of one Ape-X run must share."""

    hidden: int = 128
    """width of the MLP torso and of the dueling streams (flat observations; Atari uses the
    Nature CNN with 512-unit streams)"""
    gamma: float = 0.99
    """discount factor"""
    n_step: int = 3
    """steps of the n-step return (the actors build transitions, the learner bootstraps with
    gamma^n from them)"""
    priority_eps: float = 1e-6
    """added to |TD error| so that no transition gets priority 0 (initial and updated)"""
    torch_threads: int = 1
    """torch intra-op threads of this process (several processes share the cores)"""
    log_interval_s: float = 5.0
    """seconds between logged scalars (rates, time per phase); also logged at the end"""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.hidden < 1 or self.n_step < 1 or self.torch_threads < 1:
            raise ConfigError("hidden, n_step and torch_threads must be >= 1")
        if not 0.0 <= self.gamma <= 1.0:
            raise ConfigError(f"gamma must be in [0, 1], got {self.gamma}")
        if self.log_interval_s <= 0:
            raise ConfigError(f"log_interval_s must be > 0, got {self.log_interval_s}")
        if self.priority_eps < 0:
            raise ConfigError(f"priority_eps must be >= 0, got {self.priority_eps}")


@dataclass
class QLearnerConfig(ApexConfig):
    """What learns from prioritized n-step batches: the Ape-X learner and the single-process DQN
    baseline share these fields, defaults and checks (so the baseline runs with the learner's
    hyperparameters)."""

    batch_size: int = 64
    """transitions per sampled batch (Ape-X used 512 on Atari)"""
    lr: float = 5e-4
    """Adam learning rate"""
    adam_eps: float = 1e-8
    """Adam epsilon (Ape-X used 1.5e-4 on Atari)"""
    grad_clip: float = 10.0
    """clip the gradient's global norm to this (0: no clipping)"""
    learning_starts: int = 1000
    """transitions the replay must hold before the first update (at least batch_size)"""
    target_update_interval: int = 500
    """updates between copies of the online network into the target network (T)"""
    tau: float = 1.0
    """share of the online network in each target update: 1 copies it (DQN, Ape-X), < 1 moves
    the target that far towards it (Polyak averaging, as CleanRL's tau)"""
    beta: float = 0.4
    """importance-sampling exponent at the start"""
    beta_final: float = 0.4
    """importance-sampling exponent reached after beta_anneal_updates (linearly)"""
    beta_anneal_updates: int = 0
    """updates over which beta goes from beta to beta_final (0: beta stays fixed)"""
    loss_log_interval: int = 10
    """updates between learner/loss and learner/q_mean records"""
    eval_interval: int = 1000
    """updates between periodic greedy evaluations of eval_episodes episodes (0: none)"""
    eval_epsilon: float = 0.0
    """epsilon of the evaluation policy (0: greedy; a little helps Atari games that stall)"""
    eval_max_episode_steps: int | None = None
    """cut evaluation episodes after this many environment steps (None: the environment's limit)"""
    target_return: float | None = None
    """stop once a periodic evaluation's mean return reaches this (None: never)"""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("batch_size", "target_update_interval", "loss_log_interval"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0 < self.tau <= 1:
            raise ConfigError(f"tau must be in (0, 1], got {self.tau}")
        if not self.lr > 0 or not self.adam_eps > 0 or self.grad_clip < 0:
            raise ConfigError("lr and adam_eps must be > 0, grad_clip >= 0")
        if not (0 <= self.beta <= 1 and 0 <= self.beta_final <= 1) or self.beta_anneal_updates < 0:
            raise ConfigError("beta and beta_final must be in [0, 1], beta_anneal_updates >= 0")
        if self.eval_interval < 0 or not 0 <= self.eval_epsilon <= 1:
            raise ConfigError("eval_interval must be >= 0 and eval_epsilon in [0, 1]")
        if self.eval_max_episode_steps is not None and self.eval_max_episode_steps < 1:
            raise ConfigError(f"eval_max_episode_steps must be >= 1, got {self.eval_max_episode_steps}")
        if self.target_return is not None and (self.eval_interval == 0 or self.eval_episodes == 0):
            raise ConfigError(
                "target_return needs periodic evaluations: eval_interval and eval_episodes must be >= 1"
            )

    def wait_for_batch_size(self, prog: str) -> None:
        """learning_starts below batch_size: wait for batch_size transitions instead (said on stderr)."""
        if self.learning_starts < self.batch_size:
            print(
                f"{prog}: learning_starts {self.learning_starts} < batch_size {self.batch_size}: "
                f"waiting for {self.batch_size} transitions instead",
                file=sys.stderr,
            )
            self.learning_starts = self.batch_size

    def beta_at(self, updates: int) -> float:
        if self.beta_anneal_updates == 0:
            return self.beta
        frac = min(1.0, updates / self.beta_anneal_updates)
        return self.beta + frac * (self.beta_final - self.beta)


def batch_tensors(batch: TransitionBatch, device: torch.device) -> dict[str, torch.Tensor]:
    """A decoded batch as tensors on ``device`` (observations keep their dtype: uint8 frames
    travel to a GPU as bytes and are scaled by the network)."""
    return {
        "obs": torch.from_numpy(batch.obs).to(device),
        "actions": torch.from_numpy(batch.actions).to(device),
        "returns": torch.from_numpy(batch.returns).to(device),
        "next_obs": torch.from_numpy(batch.next_obs).to(device),
        "discounts": torch.from_numpy(batch.discounts).to(device),
    }


@dataclass
class LossOutput:
    loss: torch.Tensor  # scalar, weighted mean Huber loss (differentiable w.r.t. the online net)
    td_errors: torch.Tensor  # [B] target - Q(s, a), detached
    q_mean: float  # mean Q(s, a) of the batch


def double_q_loss(
    online: nn.Module,
    target: nn.Module,
    batch: dict[str, torch.Tensor],
    weights: torch.Tensor | None = None,
    huber_delta: float = 1.0,
) -> LossOutput:
    """Double DQN on n-step transitions: the online net picks a' in s', the target net values
    it; loss = mean_i w_i * Huber(target_i - Q(s_i, a_i))."""
    q = online(batch["obs"]).gather(1, batch["actions"].view(-1, 1)).squeeze(1)
    with torch.no_grad():
        next_actions = online(batch["next_obs"]).argmax(dim=1, keepdim=True)
        next_q = target(batch["next_obs"]).gather(1, next_actions).squeeze(1)
        y = batch["returns"] + batch["discounts"] * next_q
    per_item = F.huber_loss(q, y, reduction="none", delta=huber_delta)
    if weights is not None:
        per_item = per_item * weights
    return LossOutput(per_item.mean(), (y - q).detach(), float(q.detach().mean()))


def replay_status(client: ReplayClient, replay: ReplayConfig) -> dict[str, int]:
    """{"size", "inserts"} of the configured table as the replay reports it (the Redis path
    reports what its learner holds); ConfigError when the server has no such table or a
    max_size other than the one configured."""
    info = client.info()
    tables = info.get("tables")
    if tables is None:  # Redis: the learner's local tree plus what waits in the Redis list
        pending = int(info.get("pending_in_redis", 0))
        size = min(int(info.get("size", 0)) + pending, replay.max_size)
        return {"size": size, "inserts": int(info.get("drained", 0)) + pending}
    for t in tables:
        if t.get("id") == replay.table_id:
            if int(t["max_size"]) != replay.max_size:
                raise ConfigError(
                    f"replay table {replay.table_id} holds max_size={t['max_size']} items, but "
                    f"--replay-max-size is {replay.max_size}: make them equal"
                )
            return {"size": int(t["size"]), "inserts": int(t.get("inserts", t["size"]))}
    raise ConfigError(f"the replay server has no table {replay.table_id} ({len(tables)} tables)")


def open_replay(replay: ReplayConfig) -> tuple[ReplayClient, dict[str, int]]:
    """A client of the configured table and its ``replay_status``, checked before anything else is
    touched (unreachable server, missing table or another max_size fail here; the client is closed)."""
    client = make_replay_client(replay)
    try:
        return client, replay_status(client, replay)
    except BaseException:
        client.close()
        raise


def q_optimizer(online: nn.Module, cfg: QLearnerConfig) -> torch.optim.Optimizer:
    """The Adam of the learner and of the DQN baseline (one definition keeps them comparable).
    fused=True: one kernel per parameter instead of torch's per-op CPU loop, ~8% less learner CPU
    per CartPole update on the 2-core VM (same algorithm; the default CPU Adam is single-tensor)."""
    return torch.optim.Adam(online.parameters(), lr=cfg.lr, eps=cfg.adam_eps, fused=True)


@torch.no_grad()
def update_target(online: nn.Module, target: nn.Module, tau: float) -> None:
    """target <- tau * online + (1 - tau) * target, parameter by parameter (tau 1: a copy)."""
    if tau >= 1.0:
        target.load_state_dict(online.state_dict())
        return
    for t, o in zip(target.parameters(), online.parameters(), strict=True):
        t.lerp_(o, tau)
    for t, o in zip(target.buffers(), online.buffers(), strict=True):
        t.copy_(o)


def learn_step(
    online: nn.Module,
    target: nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: dict[str, torch.Tensor],
    weights: torch.Tensor,
    grad_clip: float,
    priority_eps: float,
) -> tuple[LossOutput, np.ndarray]:
    """One Adam step on the weighted double-Q loss (gradient norm clipped to ``grad_clip``, 0: not
    clipped); returns the loss and the batch's new priorities |TD error| + ``priority_eps``."""
    out = double_q_loss(online, target, batch, weights)
    optimizer.zero_grad(set_to_none=True)
    out.loss.backward()
    if grad_clip:
        nn.utils.clip_grad_norm_(online.parameters(), grad_clip)
    optimizer.step()
    return out, out.td_errors.abs().double().cpu().numpy() + priority_eps


class LossLog:
    """learner/loss and learner/q_mean, each the mean over every ``interval`` updates; ``recent``
    is the mean loss of the last 100 (progress lines)."""

    def __init__(self, logger: Any, interval: int) -> None:
        self.logger, self.interval = logger, interval
        self.losses: list[float] = []
        self.q_means: list[float] = []

    def add(self, out: LossOutput, updates: int, step: int) -> None:
        self.losses.append(float(out.loss.detach()))
        self.q_means.append(out.q_mean)
        if updates % self.interval == 0:
            self.logger.scalar("learner/loss", float(np.mean(self.losses[-self.interval :])), step)
            self.logger.scalar("learner/q_mean", float(np.mean(self.q_means[-self.interval :])), step)
            del self.losses[:-100], self.q_means[:-100]

    @property
    def recent(self) -> float:
        return float(np.mean(self.losses[-100:])) if self.losses else float("nan")


class StopFlag:
    """Set by SIGTERM / SIGINT, so that a process asked to stop still writes its checkpoint,
    final figures and summary (the bench stops actors this way)."""

    def __init__(self) -> None:
        self.set = False
        self.signal: int | None = None
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handler)

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        if self.set:  # a second signal: stop now
            raise KeyboardInterrupt
        self.set = True
        self.signal = signum


def finite(value: Any) -> Any:
    """``value`` with every NaN/inf float (in nested dicts and lists) as None: JSON has no NaN."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def mean_last(values: list[float], n: int = 100) -> float:
    """Mean of the last ``n`` values (NaN when there are none)."""
    tail = values[-n:]
    return float(np.mean(tail)) if tail else math.nan


def build_parser(
    prog: str, doc: str, config_cls: type, skip: tuple[str, ...] = ()
) -> argparse.ArgumentParser:
    """The actor's or learner's command line: its config's flags, then the replay's (--replay-*)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=doc.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_args(parser.add_argument_group(config_cls.__name__), config_cls, skip=skip)
    add_config_args(
        parser.add_argument_group("replay (--replay-*)"), ReplayConfig, prefix="replay-", skip=("beta",)
    )
    return parser


def apex_main(
    prog: str,
    doc: str,
    config_cls: type,
    run: Callable[[Any, ReplayConfig], dict],
    argv: list[str] | None,
    skip: tuple[str, ...] = (),
) -> int:
    """Parse, run, print the summary as one JSON line; user errors are one line (cli.run_main)."""
    args = build_parser(prog, doc, config_cls, skip).parse_args(argv)

    def body() -> int:
        cfg = config_from_args(config_cls, args)
        replay = config_from_args(ReplayConfig, args, prefix="replay-")
        summary = run(cfg, replay)
        print(json.dumps({"summary": finite(summary)}), flush=True)
        return 0

    return run_main(prog, body)
