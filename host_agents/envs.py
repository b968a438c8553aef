"""Gymnasium environments as the agents use them.

``CartPole-v1`` (and any other environment with a flat Box observation and Discrete actions)
is used as it is. Atari (``ALE/<Game>-v5``, ROMs from the ale-py wheel) is preprocessed the
DQN way: the base environment at ``frameskip=1`` (the wrapper skips, with max-pooling over the
last two frames), up to 30 no-ops at reset, 84x84 grayscale, 4 stacked frames, and in games
that have FIRE, FIRE after a reset and after each lost life (Breakout waits for it). Rewards
are clipped to [-1, 1] by the agents for learning (not here, so that logged returns are the
game's).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from host_agents.cli import ConfigError

__all__ = ["EnvInfo", "FireOnLifeLoss", "env_info", "make_env"]

_registered_ale = False


def _register_ale() -> None:
    global _registered_ale
    if not _registered_ale:
        import ale_py

        gym.register_envs(ale_py)
        _registered_ale = True


def is_atari(env_id: str) -> bool:
    return env_id.startswith("ALE/")


class FireOnLifeLoss(gym.Wrapper):
    """Press FIRE after reset and whenever a life is lost (games such as Breakout stand still
    until FIRE). The FIRE step's reward and termination are passed on, not dropped."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        if not has_fire(env):
            raise ConfigError(f"{env.spec.id if env.spec else env}: no FIRE action to press")
        self._lives = 0

    def reset(self, **kwargs):  # type: ignore[override]
        for _ in range(10):  # the FIRE step ending the game is vanishingly rare: start again
            obs, info = self.env.reset(**kwargs)
            obs, _, terminated, truncated, info = self.env.step(1)
            if not (terminated or truncated):
                break
        self._lives = info.get("lives", 0)
        return obs, info

    def step(self, action):  # type: ignore[override]
        obs, reward, terminated, truncated, info = self.env.step(action)
        lives = info.get("lives", self._lives)
        if lives < self._lives and not (terminated or truncated):
            obs, r2, terminated, truncated, info = self.env.step(1)
            reward += r2
        self._lives = info.get("lives", lives)
        return obs, reward, terminated, truncated, info


def has_fire(env: gym.Env) -> bool:
    """Whether action 1 of this Atari game is FIRE (Breakout, Pong, ...; not MsPacman)."""
    meanings = env.unwrapped.get_action_meanings()
    return len(meanings) >= 2 and meanings[1] == "FIRE"


def _unknown(env_id: str) -> ConfigError:
    names = list(gym.registry.keys())
    close = difflib.get_close_matches(env_id, names, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else " (try CartPole-v1 or ALE/Breakout-v5)"
    return ConfigError(f"unknown environment {env_id!r}{hint}")


def make_env(env_id: str, seed: int | None = None, max_episode_steps: int | None = None) -> gym.Env:
    """The environment ``env_id``, wrapped as the agents expect, reset once with ``seed`` so that
    its random streams are seeded (the caller resets again to start an episode).
    ``max_episode_steps`` counts agent steps (on Atari: after frame skipping)."""
    if is_atari(env_id):
        _register_ale()
    if env_id not in gym.registry:
        raise _unknown(env_id)
    try:
        if is_atari(env_id):
            env = gym.make(env_id, frameskip=1)
            env = gym.wrappers.AtariPreprocessing(
                env, noop_max=30, frame_skip=4, screen_size=84, grayscale_obs=True, scale_obs=False
            )
            env = gym.wrappers.FrameStackObservation(env, 4)
            if has_fire(env):
                env = FireOnLifeLoss(env)
            if max_episode_steps is not None:  # agent steps, not the base env's raw frames
                env = gym.wrappers.TimeLimit(env, max_episode_steps)
        else:
            env = gym.make(env_id, max_episode_steps=max_episode_steps)
    except gym.error.Error as e:  # e.g. a missing dependency or a bad keyword of the environment
        raise ConfigError(f"cannot create environment {env_id!r}: {e}") from None
    if not is_atari(env_id) and (
        not isinstance(env.observation_space, gym.spaces.Box) or len(env.observation_space.shape) != 1
    ):
        env.close()
        raise ConfigError(f"{env_id}: only flat Box observations or Atari frames are supported")
    if not isinstance(env.action_space, gym.spaces.Discrete):
        env.close()
        raise ConfigError(f"{env_id}: only Discrete action spaces are supported")
    env.reset(seed=seed)
    env.action_space.seed(seed)
    return env


@dataclass(frozen=True)
class EnvInfo:
    """What a network and a transition codec need to know about an environment."""

    env_id: str
    obs_shape: tuple[int, ...]
    obs_dtype: np.dtype
    num_actions: int
    atari: bool


def env_info(env_id: str) -> EnvInfo:
    """Shapes and types of ``env_id`` (builds the environment once; raises ConfigError when it
    does not exist or is not supported)."""
    env = make_env(env_id, seed=0)
    try:
        space = env.observation_space
        return EnvInfo(
            env_id, tuple(space.shape), np.dtype(space.dtype), int(env.action_space.n), is_atari(env_id)
        )
    finally:
        env.close()
