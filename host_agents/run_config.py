"""Settings every agent shares (environment, seed, device, where logs and checkpoints go, how
long to run) and the helpers that act on them: seeding, the run directory, greedy evaluation."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from host_agents.cli import ConfigError
from host_agents.envs import make_env

__all__ = ["RunConfig", "evaluate", "seed_everything"]

_RUN_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass
class RunConfig:
    """Fields shared by the actor, learner and worker configurations."""

    env: str = "CartPole-v1"
    """Gymnasium environment id: CartPole-v1 (fast) or an Atari game such as ALE/Breakout-v5"""
    seed: int = 0
    """base seed; each process derives its own from it and its index"""
    device: str = "auto"
    """torch device: auto (CUDA when present, else CPU), cpu, cuda or cuda:N"""
    run_name: str = "default"
    """logs and checkpoints go to <log-dir>/<run-name>/<role>"""
    log_dir: str = "runs"
    """parent directory of all runs (TensorBoard: tensorboard --logdir runs)"""
    tensorboard: bool = True
    """write TensorBoard event files (metrics.jsonl is always written)"""
    progress_interval_s: float = 10.0
    """seconds between one-line progress reports on stdout (0: none)"""
    checkpoint_interval_s: float = 60.0
    """seconds between checkpoints (0: only at the end)"""
    resume: bool = False
    """continue from the run directory's checkpoint.pt when there is one"""
    max_steps: int = 100_000
    """stop after this many steps (environment steps for actors and workers, updates for the learner)"""
    time_budget_s: float = 0.0
    """stop after this many seconds of wall-clock (0: no limit)"""
    eval_episodes: int = 10
    """greedy evaluation episodes per evaluation, periodic and final (0: none)"""

    def __post_init__(self) -> None:
        if not _RUN_NAME.match(self.run_name):
            raise ConfigError(f"run_name {self.run_name!r} may hold only letters, digits, '.', '_' and '-'")
        if self.max_steps < 1:
            raise ConfigError(f"max_steps must be >= 1, got {self.max_steps}")
        if self.time_budget_s < 0 or self.progress_interval_s < 0 or self.checkpoint_interval_s < 0:
            raise ConfigError("time_budget_s, progress_interval_s and checkpoint_interval_s must be >= 0")
        if self.eval_episodes < 0:
            raise ConfigError(f"eval_episodes must be >= 0, got {self.eval_episodes}")

    def run_dir(self, role: str) -> Path:
        return Path(self.log_dir) / self.run_name / role


def seed_everything(seed: int) -> np.random.Generator:
    """Seed Python, NumPy and torch; returns a NumPy generator for the caller's own draws."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return np.random.default_rng(seed)


def evaluate(
    act: Callable[[np.ndarray], int],
    env_id: str,
    episodes: int,
    seed: int,
    max_episode_steps: int | None = None,
) -> list[float]:
    """Undiscounted return of ``episodes`` episodes with ``act`` (obs -> action), on a fresh
    environment seeded with ``seed``."""
    env = make_env(env_id, seed=seed, max_episode_steps=max_episode_steps)
    returns = []
    try:
        for episode in range(episodes):
            obs, _ = env.reset(seed=seed + episode)
            total, done = 0.0, False
            while not done:
                obs, reward, terminated, truncated, _ = env.step(act(obs))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    finally:
        env.close()
    return returns
