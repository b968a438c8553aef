"""Single-process DQN: ``python -m host_agents.dqn [flags]``.

The baseline for Ape-X: what a user would run instead of actors, a replay server and a learner.
One process plays the environment epsilon-greedily (linear decay from ``--epsilon-start`` to
``--epsilon-end`` over ``--epsilon-decay-steps``), turns its steps into n-step transitions, keeps
them in a local replay (a NumPy ring; prioritized with host_agents.sum_tree's trees as Ape-X's
replay is, or uniform with ``--no-prioritized``) and, once it holds ``--learning-starts``
transitions, takes one Adam step every ``--train-frequency`` environment steps. Network and loss
are the Ape-X learner's: the Dueling Q network, Double DQN on n-step targets, weighted Huber loss,
gradient-norm clipping, new priorities |TD error| + eps after each step (a new transition gets the
largest priority seen so far), the online network copied into the target network every
``--target-update-interval`` updates. Every ``--eval-interval`` updates it plays ``--eval-episodes``
greedy episodes; ``--target-return`` stops the run once their mean reaches it, and the run's
time to that return is measured as the Ape-X learner measures its own. A final greedy evaluation
ends the run. No sockets, no other process.

Outputs, in ``<log-dir>/<run-name>/dqn``: TensorBoard events and metrics.jsonl (episode/return,
episode/length, dqn/epsilon, learner/loss, learner/q_mean, env/steps_per_s, learner/updates_per_s,
time/<phase> for act, env, replay, learn and evaluate, eval/return_mean), checkpoint.pt (online
and target networks, optimizer, counters; written every --checkpoint-interval-s and at the end,
not resumable: the replay is not saved) and summary.json (env steps, updates, wall time, phase
totals, evaluations, whether and when the target return was reached). SIGTERM or Ctrl-C stops it
cleanly.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch

from host_agents.apex import (
    LossLog,
    QLearnerConfig,
    StopFlag,
    batch_tensors,
    finite,
    learn_step,
    mean_last,
    q_optimizer,
    update_target,
)
from host_agents.cli import ConfigError, add_config_args, config_from_args, run_main
from host_agents.envs import env_info, make_env
from host_agents.experience import NStepAccumulator, Transition, TransitionBatch
from host_agents.learner import greedy_returns
from host_agents.metrics import PhaseTimer, Progress, RunLogger, save_checkpoint
from host_agents.networks import DuelingQNetwork, GreedyPolicy, select_device
from host_agents.run_config import seed_everything
from host_agents.sum_tree import MinTree, SumTree

__all__ = ["DQNConfig", "LocalReplay", "linear_epsilon", "main", "run_dqn"]

PROG = "python -m host_agents.dqn"
ROLE = "dqn"
PHASES = ("act", "env", "replay", "learn", "evaluate")


@dataclass
class DQNConfig(QLearnerConfig):
    """The single-process DQN. ``max_steps`` counts environment steps. The learning fields are the
    Ape-X learner's own (QLearnerConfig), with its defaults."""

    train_frequency: int = 4
    """environment steps per update (Ape-X's 4 actors at 250 steps/s fed its learner about 4.4
    steps per update on the 2-core machine)"""
    replay_max_size: int = 50_000
    """capacity of the local replay (a ring: the oldest transition goes first)"""
    prioritized: bool = True
    """prioritized replay with alpha and beta as Ape-X's (--no-prioritized: uniform, as CleanRL)"""
    alpha: float = 0.6
    """priority exponent (prioritized replay)"""
    epsilon_start: float = 1.0
    """exploration rate at the first step"""
    epsilon_end: float = 0.05
    """exploration rate after epsilon_decay_steps (linear decay, as CleanRL's dqn.py)"""
    epsilon_decay_steps: int = 10_000
    """environment steps over which epsilon goes from epsilon_start to epsilon_end"""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.resume:
            raise ConfigError("resume is not supported: the local replay is not checkpointed")
        for name in ("train_frequency", "replay_max_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.alpha >= 0:
            raise ConfigError(f"alpha must be >= 0, got {self.alpha}")
        if not (0 <= self.epsilon_end <= 1 and 0 <= self.epsilon_start <= 1) or self.epsilon_decay_steps < 0:
            raise ConfigError("epsilon_start and epsilon_end must be in [0, 1], epsilon_decay_steps >= 0")
        if self.batch_size > self.replay_max_size or self.learning_starts > self.replay_max_size:
            raise ConfigError(
                f"batch_size {self.batch_size} and learning_starts {self.learning_starts} must fit in the "
                f"replay (--replay-max-size {self.replay_max_size})"
            )
        self.wait_for_batch_size(PROG)


def linear_epsilon(step: int, start: float, end: float, decay_steps: int) -> float:
    """``start`` at step 0, ``end`` from ``decay_steps`` on, linear in between."""
    if decay_steps <= 0 or step >= decay_steps:
        return end
    return start + (end - start) * step / decay_steps


class LocalReplay:
    """The single process's replay: n-step transitions in NumPy arrays used as a ring of
    ``capacity`` (slot = insert count mod capacity, the oldest overwritten first).

    Prioritized (``alpha`` not None): priority^alpha of each slot in a sum-tree and a min-tree,
    stratified proportional sampling with replacement and importance weights (p_i / p_min)^-beta,
    as host_agents.sum_tree.PrioritizedReplay; a new transition gets the largest priority seen so
    far. Inserts and priority updates reach the trees in one batch before the next sample (one
    tree update per sample instead of one per call; a slot updated and then overwritten keeps the
    new transition's priority). Uniform (``alpha`` None): indices drawn uniformly with
    replacement, weights 1.
    """

    def __init__(
        self,
        capacity: int,
        obs_shape: tuple[int, ...],
        obs_dtype: np.dtype,
        alpha: float | None = 0.6,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self.obs = np.zeros((capacity, *obs_shape), obs_dtype)
        self.next_obs = np.zeros((capacity, *obs_shape), obs_dtype)
        self.actions = np.zeros(capacity, np.int64)
        self.returns = np.zeros(capacity, np.float32)
        self.discounts = np.zeros(capacity, np.float32)
        self.inserted = 0
        self.alpha = alpha
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self.max_priority = 1.0
        # written to the trees at the next sample: priority updates, then new slots (later wins)
        self._updates: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending: list[int] = []
        if alpha is not None:
            self._sum = SumTree(capacity)
            self._min = MinTree(capacity)

    def __len__(self) -> int:
        return min(self.inserted, self.capacity)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.obs, self.next_obs, self.actions, self.returns, self.discounts))

    def add(self, t: Transition) -> int:
        """Store one transition; returns its slot."""
        slot = self.inserted % self.capacity
        self.obs[slot] = t.obs
        self.next_obs[slot] = t.next_obs
        self.actions[slot] = t.action
        self.returns[slot] = t.ret
        self.discounts[slot] = t.discount
        self.inserted += 1
        if self.alpha is not None:
            self._pending.append(slot)
        return slot

    def _flush(self) -> None:
        assert self.alpha is not None
        if not (self._updates or self._pending):
            return
        new = np.array(self._pending, np.int64)
        slots = np.concatenate([*(u[0] for u in self._updates), new])
        prios = np.concatenate([*(u[1] for u in self._updates), np.full(new.size, self.max_priority)])
        self._updates.clear()
        self._pending.clear()
        scaled = np.where(prios > 0, np.power(prios, self.alpha), 0.0)  # 0^0 stays 0: never sampled
        self._sum.update(slots, scaled)  # a slot named twice keeps its last value
        self._min.update(slots, np.where(scaled > 0, scaled, np.inf))

    def sample(self, batch_size: int, beta: float = 0.4) -> tuple[np.ndarray, TransitionBatch, np.ndarray]:
        """(slots, batch, float32 importance weights) of ``batch_size`` transitions."""
        n = len(self)
        if n == 0:
            raise ValueError("cannot sample from an empty replay")
        if self.alpha is None:
            slots = self.rng.integers(0, n, size=batch_size)
            weights = np.ones(batch_size, np.float32)
        else:
            self._flush()
            total = self._sum.total()
            masses = (np.arange(batch_size) + self.rng.random(batch_size)) * (total / batch_size)
            slots = self._sum.find_prefixsum(np.minimum(masses, np.nextafter(total, 0)))
            weights = np.power(self._sum[slots] / self._min.min(), -beta).astype(np.float32)
        batch = TransitionBatch(
            obs=self.obs[slots],
            actions=self.actions[slots],
            returns=self.returns[slots],
            next_obs=self.next_obs[slots],
            discounts=self.discounts[slots],
        )
        return slots, batch, weights

    def update_priorities(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        """New priorities for sampled slots (nothing to do for a uniform replay)."""
        if self.alpha is None:
            return
        p = np.asarray(priorities, np.float64)
        if p.size and not (np.all(np.isfinite(p)) and p.min() >= 0):
            raise ValueError("priorities must be finite and >= 0")
        self._updates.append((np.asarray(slots, np.int64).reshape(-1), p.reshape(-1)))
        if p.size:
            self.max_priority = max(self.max_priority, float(p.max()))


def run_dqn(cfg: DQNConfig) -> dict:
    """Play and learn until max_steps environment steps, the target return, the time budget or a
    stop signal; returns the summary."""
    stop = StopFlag()
    torch.set_num_threads(cfg.torch_threads)
    device = select_device(cfg.device)  # ConfigError for a bad or absent device
    info = env_info(cfg.env)  # ConfigError for an unknown environment
    rng = seed_everything(cfg.seed)
    run_dir = cfg.run_dir(ROLE)

    online = DuelingQNetwork(info.obs_shape, info.num_actions, cfg.hidden).to(device)
    target = copy.deepcopy(online)
    target.requires_grad_(False)
    optimizer = q_optimizer(online, cfg)
    policy = GreedyPolicy(online)  # acting as Ape-X's actors do (NumPy for MLPs), refreshed per update
    replay = LocalReplay(
        cfg.replay_max_size, info.obs_shape, info.obs_dtype, cfg.alpha if cfg.prioritized else None, rng
    )
    env = make_env(cfg.env, seed=cfg.seed)
    acc = NStepAccumulator(cfg.n_step, cfg.gamma)
    timer = PhaseTimer()
    progress = Progress(ROLE, cfg.progress_interval_s)
    logger = RunLogger(run_dir, cfg.tensorboard)
    progress.print(
        f"{cfg.env}, replay {cfg.replay_max_size} transitions "
        f"({replay.nbytes / 2**20:.0f} MiB, {'prioritized' if cfg.prioritized else 'uniform'}), "
        f"one update every {cfg.train_frequency} steps from {cfg.learning_starts} transitions on"
    )

    steps = updates = episodes = 0
    returns: list[float] = []
    loss_log = LossLog(logger, cfg.loss_log_interval)
    evals: list[dict] = []
    reached: dict | None = None
    epsilon = cfg.epsilon_start
    start = time.monotonic()
    last_log, last_log_steps, last_log_updates, last_ckpt = start, 0, 0, start

    def checkpoint() -> None:
        save_checkpoint(
            run_dir / "checkpoint.pt",
            {
                "online": online.state_dict(),
                "target": target.state_dict(),
                "optimizer": optimizer.state_dict(),
                "env_steps": steps,
                "updates": updates,
                "episodes": episodes,
                "reached": reached,
                "evals": evals,
                "config": asdict(cfg),
            },
        )

    def log_interval(now: float) -> None:
        nonlocal last_log, last_log_steps, last_log_updates
        split = timer.interval()
        dt = max(now - last_log, 1e-9)
        logger.scalar("env/steps_per_s", (steps - last_log_steps) / dt, steps)
        logger.scalar("learner/updates_per_s", (updates - last_log_updates) / dt, steps)
        logger.scalar("dqn/epsilon", epsilon, steps)
        logger.scalar("replay/size", len(replay), steps)
        for phase in (*PHASES, "computation"):
            logger.scalar(f"time/{phase}", split.get(phase, 0.0), steps)
        last_log, last_log_steps, last_log_updates = now, steps, updates

    def progress_text() -> str:
        elapsed = max(time.monotonic() - start, 1e-9)
        last_eval = f"{evals[-1]['return_mean']:.1f}" if evals else "-"
        loss = loss_log.recent
        return (
            f"env steps {steps}/{cfg.max_steps} episodes {episodes} "
            f"return(last 100) {mean_last(returns):.1f} eps {epsilon:.3f} "
            f"updates {updates} loss {loss:.4f} eval {last_eval} "
            f"{steps / elapsed:.0f} steps/s {updates / elapsed:.1f} updates/s"
        )

    def learn() -> None:
        nonlocal updates
        with timer.phase("replay"):
            slots, batch, weights = replay.sample(cfg.batch_size, cfg.beta_at(updates))
        with timer.phase("learn"):
            w = torch.from_numpy(weights).to(device)
            out, prios = learn_step(
                online, target, optimizer, batch_tensors(batch, device), w, cfg.grad_clip, cfg.priority_eps
            )
        with timer.phase("replay"):
            replay.update_priorities(slots, prios)
        policy.refresh()
        updates += 1
        loss_log.add(out, updates, steps)
        if updates % cfg.target_update_interval == 0:
            update_target(online, target, cfg.tau)

    def evaluate_now() -> bool:
        """A periodic evaluation; True when it reached the target return."""
        nonlocal reached
        with timer.phase("evaluate"):
            rets = greedy_returns(online, info, cfg, cfg.seed + 100_003 + updates)  # type: ignore[arg-type]
        record = {
            "updates": updates,
            "env_steps": steps,
            "return_mean": float(np.mean(rets)),
            "wall_time_s": time.monotonic() - start,
        }
        evals.append(record)
        logger.scalar("eval/return_mean", record["return_mean"], steps)
        if cfg.target_return is not None and record["return_mean"] >= cfg.target_return:
            reached = reached or record
            progress.print(f"evaluation mean {record['return_mean']:.1f} >= {cfg.target_return}")
            return True
        return False

    obs, _ = env.reset(seed=cfg.seed)
    ep_return, ep_length = 0.0, 0
    reason = "max_steps"
    try:
        while steps < cfg.max_steps:
            if stop.set:
                reason = "signal"
                break
            now = time.monotonic()
            if cfg.time_budget_s and now - start >= cfg.time_budget_s:
                reason = "time_budget"
                break
            epsilon = linear_epsilon(steps, cfg.epsilon_start, cfg.epsilon_end, cfg.epsilon_decay_steps)
            if rng.random() < epsilon:
                action = int(rng.integers(info.num_actions))
            else:
                with timer.phase("act"):
                    action = policy.act(obs)
            with timer.phase("env"):
                next_obs, reward, terminated, truncated, _ = env.step(action)
            steps += 1
            ep_return += float(reward)
            ep_length += 1
            # Atari rewards are clipped for learning only; the logged return is the game's
            learn_reward = float(np.clip(reward, -1.0, 1.0)) if info.atari else float(reward)
            with timer.phase("replay"):
                for t in acc.add(
                    np.asarray(obs), action, learn_reward, np.asarray(next_obs), terminated, truncated
                ):
                    replay.add(t)
            if terminated or truncated:
                episodes += 1
                returns.append(ep_return)
                logger.scalar("episode/return", ep_return, steps)
                logger.scalar("episode/length", ep_length, steps)
                ep_return, ep_length = 0.0, 0
                with timer.phase("env"):
                    obs, _ = env.reset(seed=cfg.seed + episodes)
            else:
                obs = next_obs
            if len(replay) >= cfg.learning_starts and steps % cfg.train_frequency == 0:
                learn()
                if cfg.eval_interval and cfg.eval_episodes and updates % cfg.eval_interval == 0:
                    if evaluate_now():
                        reason = "target_return"
                        break
            if now - last_log >= cfg.log_interval_s:
                log_interval(now)
            progress.maybe(progress_text)
            if cfg.checkpoint_interval_s and now - last_ckpt >= cfg.checkpoint_interval_s:
                checkpoint()
                last_ckpt = now
        log_interval(time.monotonic())
    finally:
        env.close()
        checkpoint()
    wall = time.monotonic() - start
    final: list[float] = []
    if cfg.eval_episodes:
        with timer.phase("evaluate"):
            final = greedy_returns(online, info, cfg, cfg.seed + 999_983)  # type: ignore[arg-type]
        logger.scalar("eval/final_return_mean", float(np.mean(final)), steps)
    totals = timer.totals()
    summary = {
        "role": ROLE,
        "env": cfg.env,
        "stopped_by": reason,
        "env_steps": steps,
        "updates": updates,
        "episodes": episodes,
        "mean_return_last_100": mean_last(returns),
        "eval_returns": final,
        "eval_return_mean": float(np.mean(final)) if final else None,
        "evaluations": evals,
        "target_return": cfg.target_return,
        "reached_target": reached is not None,
        "reached_at": reached,
        "replay_size": len(replay),
        "replay_inserts": replay.inserted,
        "prioritized": cfg.prioritized,
        "wall_time_s": wall,
        "env_steps_per_s": steps / max(wall, 1e-9),
        "updates_per_s": updates / max(wall, 1e-9),
        "phase_totals_s": totals,
        "communication_share": 0.0,
        "config": asdict(cfg),
    }
    logger.write_json("summary.json", finite(summary))
    logger.close()
    progress.print(
        progress_text() + f" -- stopped ({reason}); final evaluation {summary['eval_return_mean']}"
    )
    return summary


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_args(parser.add_argument_group(DQNConfig.__name__), DQNConfig, skip=("resume",))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse, run, print the summary as one JSON line; user errors are one line, exit 2."""
    args = build_parser().parse_args(argv)

    def body() -> int:
        summary = run_dqn(config_from_args(DQNConfig, args))
        print(json.dumps({"summary": finite(summary)}), flush=True)
        return 0

    return run_main(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
