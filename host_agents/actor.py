"""Ape-X actor: ``python -m host_agents.actor --actor-index i --num-actors N [flags]``.

Plays one Gymnasium environment epsilon-greedily with its own copy of the Dueling Q network
(eps_i = 0.4^(1 + 7 i / (N - 1))), turns its steps into n-step transitions, keeps them in a local
buffer and, each time the buffer is full, computes their initial priorities (|n-step double-Q TD
error| under its own network) and pushes them to the replay. Pushes go out from a bounded queue
on a background thread (``--push-queue``), so that the environment loop waits for the network
only when the queue is full; a push that fails after its retries stops the actor with the error,
and the queue is drained before the actor ends. Every K environment steps it pulls the
learner's newest parameters from the parameter store (the replay's parameter slot).

Outputs, in ``<log-dir>/<run-name>/actor<i>``: TensorBoard events and metrics.jsonl
(episode/return, episode/length, actor/epsilon, env/steps_per_s, time/<phase> for pull_params,
push_experiences and computation, time/communication_share), checkpoint.pt (counters and RNG
state; ``--resume`` continues counting from it) and summary.json at the end. SIGTERM or Ctrl-C
stops it cleanly (buffer pushed, checkpoint and summary written).
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch

from host_agents.apex import (
    ApexConfig,
    StopFlag,
    actor_epsilon,
    apex_main,
    batch_tensors,
    double_q_loss,
    finite,
    mean_last,
    open_replay,
)
from host_agents.cli import ConfigError
from host_agents.envs import env_info, make_env
from host_agents.experience import NStepAccumulator, Transition, TransitionBatch, encode_transition
from host_agents.metrics import (
    PhaseTimer,
    Progress,
    RunLogger,
    communication_share,
    load_checkpoint,
    save_checkpoint,
)
from host_agents.networks import DuelingQNetwork, GreedyPolicy, select_device
from host_agents.param_store import ParamStore
from host_agents.replay_client import ReplayConfig, make_replay_client
from host_agents.replay_pipeline import BackgroundReplay
from host_agents.run_config import seed_everything

__all__ = ["ActorConfig", "main", "run_actor"]

PROG = "python -m host_agents.actor"
COMM_PHASES = ("pull_params", "push_experiences")


@dataclass
class ActorConfig(ApexConfig):
    """One Ape-X actor. ``max_steps`` counts environment steps."""

    actor_index: int = 0
    """this actor's index i in 0..N-1 (sets its epsilon and its seed)"""
    num_actors: int = 1
    """N, the number of actors of the run"""
    epsilon_base: float = 0.4
    """Ape-X epsilon schedule base: eps_i = base^(1 + epsilon_alpha * i / (N - 1))"""
    epsilon_alpha: float = 7.0
    """Ape-X epsilon schedule exponent"""
    local_buffer: int = 50
    """transitions gathered before one push to the replay (with their priorities)"""
    param_pull_interval: int = 400
    """environment steps between parameter pulls from the parameter store"""
    push_queue: int = 4
    """pushes queued for a background sender, so that the environment loop does not wait for
    the network (0: push inline and wait); a push that fails after its retries stops the actor"""
    steps_per_s_limit: float = 0.0
    """at most this many environment steps per second (0: as fast as it can), to leave the
    cores to the learner when actors and learner share a machine"""

    def __post_init__(self) -> None:
        super().__post_init__()
        actor_epsilon(self.actor_index, self.num_actors)  # raises ConfigError when out of range
        if not 0.0 < self.epsilon_base <= 1.0 or self.epsilon_alpha < 0:
            raise ConfigError("epsilon_base must be in (0, 1] and epsilon_alpha >= 0")
        if self.local_buffer < 1 or self.param_pull_interval < 1:
            raise ConfigError("local_buffer and param_pull_interval must be >= 1")
        if self.push_queue < 0:
            raise ConfigError("push_queue must be >= 0")
        if self.steps_per_s_limit < 0:
            raise ConfigError("steps_per_s_limit must be >= 0")

    @property
    def epsilon(self) -> float:
        return actor_epsilon(self.actor_index, self.num_actors, self.epsilon_base, self.epsilon_alpha)

    @property
    def role(self) -> str:
        return f"actor{self.actor_index}"

    @property
    def process_seed(self) -> int:
        return self.seed * 1_000_003 + 7919 * (self.actor_index + 1)


def initial_priorities(
    net: torch.nn.Module, transitions: list[Transition], device: torch.device, eps: float
) -> np.ndarray:
    """|n-step double-Q TD error| + eps of each transition under the actor's own network (online
    and target alike: the actor has one copy)."""
    batch = batch_tensors(
        TransitionBatch(
            obs=np.stack([t.obs for t in transitions]),
            actions=np.array([t.action for t in transitions], np.int64),
            returns=np.array([t.ret for t in transitions], np.float32),
            next_obs=np.stack([t.next_obs for t in transitions]),
            discounts=np.array([t.discount for t in transitions], np.float32),
        ),
        device,
    )
    with torch.no_grad():
        out = double_q_loss(net, net, batch)
    return out.td_errors.abs().cpu().double().numpy() + eps


def run_actor(cfg: ActorConfig, replay: ReplayConfig) -> dict:
    """Act until max_steps, the time budget or a stop signal; returns the summary."""
    stop = StopFlag()
    torch.set_num_threads(cfg.torch_threads)
    device = select_device(cfg.device)  # ConfigError for a bad or absent device
    info = env_info(cfg.env)  # ConfigError for an unknown environment, before any socket
    rng = seed_everything(cfg.process_seed)
    run_dir = cfg.run_dir(cfg.role)
    ckpt_path = run_dir / "checkpoint.pt"

    steps = episodes = pushed = 0
    returns: list[float] = []
    if cfg.resume and ckpt_path.exists():
        state = load_checkpoint(ckpt_path)
        steps, episodes, pushed = state["env_steps"], state["episodes"], state["transitions_pushed"]
        returns = list(state["recent_returns"])
        rng.bit_generator.state = state["rng"]
        torch.set_rng_state(state["torch_rng"])
        print(f"[{cfg.role}] resumed from {ckpt_path}: {steps} env steps, {episodes} episodes", flush=True)

    net = DuelingQNetwork(info.obs_shape, info.num_actions, cfg.hidden).to(device)
    net.eval()
    policy = GreedyPolicy(net)  # the greedy action without a torch call per step (MLP networks)
    client, _ = open_replay(replay)  # a missing server or a table of another size: say so now
    store = ParamStore(client)
    # pushes go out on their own client and thread; parameter pulls stay on this one
    sender = None
    if cfg.push_queue:
        sender = BackgroundReplay(make_replay_client(replay), cfg.push_queue, f"{cfg.role}-push")
    pushed_before = pushed  # a resumed run counts on from its checkpoint
    env = make_env(cfg.env, seed=cfg.process_seed + episodes)
    acc = NStepAccumulator(cfg.n_step, cfg.gamma)
    epsilon = cfg.epsilon
    timer = PhaseTimer()
    progress = Progress(cfg.role, cfg.progress_interval_s)
    logger = RunLogger(run_dir, cfg.tensorboard, resume=cfg.resume)
    start = time.monotonic()
    start_steps = steps
    last_log, last_log_steps = start, steps
    last_ckpt = start
    buffer: list[Transition] = []
    pulls = 0

    def checkpoint() -> None:
        save_checkpoint(
            ckpt_path,
            {
                "env_steps": steps,
                "episodes": episodes,
                "transitions_pushed": pushed,
                "recent_returns": returns[-100:],
                "rng": rng.bit_generator.state,
                "torch_rng": torch.get_rng_state(),
                "params_version": store.version,
                "config": asdict(cfg),
            },
        )

    def push() -> None:
        nonlocal pushed
        if not buffer:
            return
        prios = initial_priorities(net, buffer, device, cfg.priority_eps)
        items = [encode_transition(t, compress=info.atari) for t in buffer]
        with timer.phase("push_experiences"):
            if sender is None:
                client.insert(items, prios)
                pushed += len(buffer)
            else:
                sender.insert(items, prios)  # waits only when push_queue pushes are in flight
                pushed = pushed_before + sender.stats["items_inserted"]  # the ones the replay confirmed
        buffer.clear()

    def log_interval(now: float) -> None:
        nonlocal last_log, last_log_steps
        split = timer.interval()
        rate = (steps - last_log_steps) / max(now - last_log, 1e-9)
        logger.scalar("env/steps_per_s", rate, steps)
        logger.scalar("actor/epsilon", epsilon, steps)
        logger.scalar("actor/params_version", store.version, steps)
        for phase in (*COMM_PHASES, "computation"):
            logger.scalar(f"time/{phase}", split.get(phase, 0.0), steps)
        logger.scalar("time/communication_share", communication_share(split, COMM_PHASES), steps)
        last_log, last_log_steps = now, steps

    def progress_text() -> str:
        elapsed = time.monotonic() - start
        share = communication_share(timer.totals(), COMM_PHASES)
        return (
            f"env steps {steps}/{cfg.max_steps} episodes {episodes} return(last 100) "
            f"{mean_last(returns):.1f} eps {epsilon:.3g} params v{store.version} "
            f"{(steps - start_steps) / max(elapsed, 1e-9):.0f} steps/s communication {share:.0%}"
        )

    obs, _ = env.reset(seed=cfg.process_seed + episodes)
    ep_return, ep_length = 0.0, 0
    reason = "max_steps"
    clean_exit = False
    try:
        while steps < cfg.max_steps:
            if stop.set:
                reason = "signal"
                break
            now = time.monotonic()
            if cfg.time_budget_s and now - start >= cfg.time_budget_s:
                reason = "time_budget"
                break
            if (steps - start_steps) % cfg.param_pull_interval == 0:
                with timer.phase("pull_params"):
                    if store.pull(net):
                        pulls += 1
                        policy.refresh()
            if rng.random() < epsilon:
                action = int(rng.integers(info.num_actions))
            else:
                action = policy.act(obs)
            next_obs, reward, terminated, truncated, _ = env.step(action)
            steps += 1
            ep_return += float(reward)
            ep_length += 1
            # Atari rewards are clipped for learning only; the logged return is the game's
            learn_reward = float(np.clip(reward, -1.0, 1.0)) if info.atari else float(reward)
            buffer.extend(
                acc.add(np.asarray(obs), action, learn_reward, np.asarray(next_obs), terminated, truncated)
            )
            if len(buffer) >= cfg.local_buffer:
                push()
            if terminated or truncated:
                episodes += 1
                returns.append(ep_return)
                logger.scalar("episode/return", ep_return, steps)
                logger.scalar("episode/length", ep_length, steps)
                ep_return, ep_length = 0.0, 0
                obs, _ = env.reset(seed=cfg.process_seed + episodes)
            else:
                obs = next_obs
            if now - last_log >= cfg.log_interval_s:
                log_interval(now)
            progress.maybe(progress_text)
            if cfg.checkpoint_interval_s and now - last_ckpt >= cfg.checkpoint_interval_s:
                checkpoint()
                last_ckpt = now
            if cfg.steps_per_s_limit:
                ahead = (steps - start_steps) / cfg.steps_per_s_limit - (time.monotonic() - start)
                if ahead > 0:
                    with timer.phase("rate_limit"):
                        time.sleep(ahead)
        push()  # what the local buffer holds; the episode in progress stays unfinished
        if sender is not None:
            with timer.phase("push_experiences"):
                sender.drain()  # every queued push stored before the run ends (or raises)
            pushed = pushed_before + sender.stats["items_inserted"]
        log_interval(time.monotonic())
        clean_exit = True
    finally:
        env.close()
        client.close()
        if sender is not None:
            sender.close(drain=clean_exit)
    wall = time.monotonic() - start
    totals = timer.totals()
    summary = {
        "role": cfg.role,
        "env": cfg.env,
        "stopped_by": reason,
        "env_steps": steps,
        "env_steps_this_run": steps - start_steps,
        "episodes": episodes,
        "transitions_pushed": pushed,
        "mean_return_last_100": mean_last(returns),
        "epsilon": epsilon,
        "params_version": store.version,
        "param_pulls_loaded": pulls,
        "param_bytes_moved": store.bytes_moved,
        "wall_time_s": wall,
        "env_steps_per_s": (steps - start_steps) / max(wall, 1e-9),
        "phase_totals_s": totals,
        "communication_share": communication_share(totals, COMM_PHASES),
    }
    checkpoint()
    logger.write_json("summary.json", finite(summary))
    logger.close()
    progress.print(progress_text() + f" -- stopped ({reason})")
    return summary


def main(argv: list[str] | None = None) -> int:
    return apex_main(PROG, __doc__, ActorConfig, run_actor, argv, skip=("eval_episodes",))


if __name__ == "__main__":
    sys.exit(main())
