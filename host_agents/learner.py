"""Ape-X learner: ``python -m host_agents.learner [flags]``.

Waits until the replay table holds ``--learning-starts`` transitions, then repeats: sample a
prioritized batch with importance weights, take one Adam step on the Dueling Double DQN loss
(weighted Huber on n-step targets, gradient-norm clipping), send the batch's new priorities
(|TD error| + eps) back, publish the parameters to the parameter store (the replay's parameter
slot) every P updates and copy them into the target network every T updates. Every
``--eval-interval`` updates it plays ``--eval-episodes`` greedy episodes; ``--target-return``
stops the run once their mean reaches it. A final greedy evaluation ends the run.

Outputs, in ``<log-dir>/<run-name>/learner``: TensorBoard events and metrics.jsonl
(learner/loss and learner/q_mean every ``--loss-log-interval`` updates, replay/size,
learner/updates_per_s, time/<phase> for sample, update_priorities, set_params and computation,
time/communication_share, eval/return_mean, replay/inserts), checkpoint.pt (online and target
networks, optimizer, update count; ``--resume`` continues from it) and summary.json
(eval_return_mean, updates, wall time, phase totals, communication share, whether and when the
target return was reached). SIGTERM or Ctrl-C stops it cleanly.

With ``--prefetch K`` (default 1) the replay calls run in the background in the order they were
made: the next K batches are drawn while the learner trains, and priority updates go out
without waiting (each applied once, after the sample it refers to; at most
``--max-pending-updates`` in flight; all applied before the run ends); so do the periodic
parameter publications (the first and the last are waited for). The background is a child
process of the learner (``--io-process``, the default: its Python does not hold the learner's
interpreter lock), or with ``--no-io-process`` a thread of the learner. time/sample,
time/update_priorities and time/set_params then count only the time the learner waited; summary.json's
replay_io_busy_s is the calls' own time in the background. ``--prefetch 0`` waits for every call.
"""

from __future__ import annotations

import copy
import sys
import time
from collections import deque
from dataclasses import asdict, dataclass

import numpy as np
import torch

from host_agents.apex import (
    LossLog,
    QLearnerConfig,
    StopFlag,
    apex_main,
    batch_tensors,
    finite,
    learn_step,
    open_replay,
    q_optimizer,
    replay_status,
    update_target,
)
from host_agents.cli import ConfigError
from host_agents.envs import EnvInfo, env_info
from host_agents.experience import decode_transitions
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
from host_agents.replay_client import ReplayConfig, ReplayTimeout
from host_agents.replay_pipeline import BackgroundReplay, CallResult, ReplayPipeline, ReplayProcess
from host_agents.run_config import evaluate, seed_everything

__all__ = ["LearnerConfig", "main", "run_learner"]

PROG = "python -m host_agents.learner"
ROLE = "learner"
SWITCH_INTERVAL_S = 0.0005  # sys.setswitchinterval with the replay I/O thread (see run_learner)
COMM_PHASES = ("sample", "update_priorities", "set_params")


@dataclass
class LearnerConfig(QLearnerConfig):
    """The Ape-X learner. ``max_steps`` counts learner updates (one batch each)."""

    publish_interval: int = 25
    """updates between parameter publications to the parameter store (P)"""
    wait_poll_s: float = 0.5
    """seconds between replay size checks while waiting for learning_starts"""
    prefetch: int = 1
    """batches sampled ahead on a background thread while the learner trains, priority updates
    sent without waiting (0: sample, train and update in turn, each waited for)"""
    max_pending_updates: int = 4
    """priority updates in flight at most before the learner waits for one (with prefetch)"""
    io_process: bool = True
    """with prefetch, run the replay calls in a child process (no interpreter lock shared with
    training); --no-io-process: in a thread of the learner. The process gave 25-30% more updates/s
    on the 2-CPU Intel VM and about the same on the AMD VM (bench/README.md, sixth and thirteenth
    passes). Ignored with prefetch 0 (every call waited for, in the learner)"""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.publish_interval < 1 or not self.wait_poll_s > 0:
            raise ConfigError("publish_interval must be >= 1 and wait_poll_s > 0")
        if self.prefetch < 0 or self.max_pending_updates < 1:
            raise ConfigError("prefetch must be >= 0 and max_pending_updates >= 1")
        self.wait_for_batch_size(PROG)


def check_against_replay(cfg: LearnerConfig, replay: ReplayConfig) -> None:
    """Settings that cannot work with this replay table, before anything is sent."""
    if cfg.batch_size > replay.max_size:
        raise ConfigError(
            f"batch_size {cfg.batch_size} is larger than the replay (--replay-max-size {replay.max_size})"
        )
    if cfg.learning_starts > replay.max_size:
        raise ConfigError(
            f"learning_starts {cfg.learning_starts} can never be reached: the replay holds at most "
            f"{replay.max_size} items"
        )


def greedy_returns(net: DuelingQNetwork, info: EnvInfo, cfg: LearnerConfig, seed: int) -> list[float]:
    """``eval_episodes`` episodes with the greedy (or eval_epsilon) policy of ``net``. The greedy
    action comes from :class:`GreedyPolicy` as the actors' does (NumPy for MLP networks): a torch
    forward per step made a 10-episode evaluation of a good CartPole policy (5000 steps) cost
    seconds of the learner's time, counted in its time to the target."""
    rng = np.random.default_rng(seed)
    net.eval()
    policy = GreedyPolicy(net)

    def act(obs: np.ndarray) -> int:
        if cfg.eval_epsilon and rng.random() < cfg.eval_epsilon:
            return int(rng.integers(info.num_actions))
        return policy.act(obs)

    try:
        return evaluate(act, cfg.env, cfg.eval_episodes, seed, cfg.eval_max_episode_steps)
    finally:
        net.train()


def run_learner(cfg: LearnerConfig, replay: ReplayConfig) -> dict:
    """Learn until max_steps updates, the target return, the time budget or a stop signal;
    returns the summary."""
    stop = StopFlag()
    check_against_replay(cfg, replay)
    torch.set_num_threads(cfg.torch_threads)
    device = select_device(cfg.device)  # ConfigError for a bad or absent device
    info = env_info(cfg.env)
    seed_everything(cfg.seed)
    run_dir = cfg.run_dir(ROLE)
    ckpt_path = run_dir / "checkpoint.pt"

    online = DuelingQNetwork(info.obs_shape, info.num_actions, cfg.hidden).to(device)
    target = copy.deepcopy(online)
    target.requires_grad_(False)
    optimizer = q_optimizer(online, cfg)
    updates = 0
    version = 0
    reached: dict | None = None
    evals: list[dict] = []
    if cfg.resume and ckpt_path.exists():
        state = load_checkpoint(ckpt_path)
        try:
            online.load_state_dict(state["online"])
            target.load_state_dict(state["target"])
            optimizer.load_state_dict(state["optimizer"])
        except (RuntimeError, KeyError, ValueError) as e:
            raise ConfigError(
                f"{ckpt_path} is not a checkpoint of this network (--env {cfg.env}, --hidden "
                f"{cfg.hidden}): {str(e).splitlines()[0]}"
            ) from None
        for group in optimizer.param_groups:  # the flags of this run win over the checkpoint's
            group["lr"], group["eps"] = cfg.lr, cfg.adam_eps
        updates, version = state["updates"], state["params_version"]
        reached, evals = state.get("reached"), state.get("evals", [])
        torch.set_rng_state(state["torch_rng"])
        print(f"[{ROLE}] resumed from {ckpt_path}: {updates} updates, params v{version}", flush=True)
    start_updates = updates

    # unreachable server or a table that does not match: fail before the run directory, its
    # checkpoint or the published parameters are touched
    client, status = open_replay(replay)
    # With prefetch every replay call goes through one carrier, in order (the Redis path's
    # sum-tree lives in its client, so it must not be used from two threads).
    io: ReplayPipeline | None = None
    if cfg.prefetch and cfg.io_process:
        client.close()  # checked; the child process makes its own
        io = ReplayProcess(replay, cfg.max_pending_updates, "learner-replay")
    elif cfg.prefetch:
        io = BackgroundReplay(client, cfg.max_pending_updates, "learner-replay")
        # The training thread releases the GIL around every torch call and takes it back; while
        # the I/O thread runs Python (encoding requests, decoding a batch) that retake waits up
        # to the switch interval, 5 ms by default: per update, many of them. 0.5 ms bounds it.
        sys.setswitchinterval(SWITCH_INTERVAL_S)
    replay_api = io.sync if io else client
    store = ParamStore(replay_api)
    samples: deque[CallResult] = deque()  # prefetched batches (SampleBatch futures), oldest first
    timer = PhaseTimer()
    progress = Progress(ROLE, cfg.progress_interval_s)
    logger = RunLogger(run_dir, cfg.tensorboard, resume=cfg.resume)
    start = time.monotonic()

    def out_of_time() -> bool:
        return bool(cfg.time_budget_s) and time.monotonic() - start >= cfg.time_budget_s

    def publish(wait: bool = False) -> None:
        nonlocal version
        with timer.phase("set_params"):
            if io is None or wait:
                store.publish(online, updates + 1)  # +1: version 0 means "never published"
            else:
                store.publish_queued(online, updates + 1, io)  # sent after the queued calls
        version = updates + 1

    def checkpoint() -> None:
        save_checkpoint(
            ckpt_path,
            {
                "online": online.state_dict(),
                "target": target.state_dict(),
                "optimizer": optimizer.state_dict(),
                "updates": updates,
                "params_version": version,
                "reached": reached,
                "evals": evals,
                "torch_rng": torch.get_rng_state(),
                "config": asdict(cfg),
            },
        )

    reason = "max_steps"
    last_table_size = 0
    clean_exit = False
    try:
        publish(wait=True)  # actors act with the learner's network from their first pull
        # --- wait for learning_starts (bounded by the time budget and by signals)
        while True:
            status = replay_status(replay_api, replay)
            if status["size"] >= cfg.learning_starts:
                break
            if stop.set:
                reason = "signal"
                break
            if out_of_time():
                raise TimeoutError(
                    f"the replay held {status['size']} of learning_starts={cfg.learning_starts} "
                    f"transitions after {time.monotonic() - start:.0f} s; are the actors running?"
                )
            size = status["size"]
            progress.maybe(lambda s=size: f"waiting for the replay: {s}/{cfg.learning_starts} transitions")
            time.sleep(cfg.wait_poll_s)
        if reason != "signal":
            progress.print(f"replay holds {status['size']} transitions: learning")

        last_log, last_log_updates, last_ckpt = time.monotonic(), updates, time.monotonic()
        loss_log = LossLog(logger, cfg.loss_log_interval)

        def log_interval(now: float) -> None:
            nonlocal last_log, last_log_updates
            split = timer.interval()
            logger.scalar(
                "learner/updates_per_s", (updates - last_log_updates) / max(now - last_log, 1e-9), updates
            )
            logger.scalar("replay/size", last_table_size, updates)
            logger.scalar("learner/beta", cfg.beta_at(updates), updates)
            for phase in (*COMM_PHASES, "computation", "evaluate"):
                logger.scalar(f"time/{phase}", split.get(phase, 0.0), updates)
            logger.scalar("time/communication_share", communication_share(split, COMM_PHASES), updates)
            last_log, last_log_updates = now, updates

        def progress_text() -> str:
            elapsed = time.monotonic() - start
            last_eval = f"{evals[-1]['return_mean']:.1f}" if evals else "-"
            share = communication_share(timer.totals(), COMM_PHASES)
            loss = loss_log.recent
            return (
                f"updates {updates}/{cfg.max_steps} loss {loss:.4f} "
                f"replay {last_table_size} eval {last_eval} params v{version} "
                f"{(updates - start_updates) / max(elapsed, 1e-9):.1f} updates/s communication {share:.0%}"
            )

        while reason != "signal" and updates < cfg.max_steps:
            if stop.set:
                reason = "signal"
                break
            if out_of_time():
                reason = "time_budget"
                break
            with timer.phase("sample"):
                if io is None:
                    sb = client.sample(cfg.batch_size, cfg.beta_at(updates))
                else:
                    # keep `prefetch` batches queued behind the one trained on now; each is drawn
                    # after the updates of the batches before it that were already submitted
                    while len(samples) <= cfg.prefetch:
                        samples.append(io.sample(cfg.batch_size, cfg.beta_at(updates + len(samples))))
                    sb = samples.popleft().result()
            last_table_size = sb.table_size
            try:
                decoded = decode_transitions(sb.items, info.obs_shape, info.obs_dtype)
            except ValueError as e:
                raise ConfigError(f"the replay table does not hold {cfg.env} transitions: {e}") from None
            batch = batch_tensors(decoded, device)
            weights = torch.from_numpy(sb.weights.astype(np.float32)).to(device)
            out, prios = learn_step(
                online, target, optimizer, batch, weights, cfg.grad_clip, cfg.priority_eps
            )
            with timer.phase("update_priorities"):
                if io is None:
                    client.update_priorities(sb.keys, prios)
                else:
                    io.update_priorities(sb.keys, prios)  # waits only when max_pending are in flight
            updates += 1
            loss_log.add(out, updates, updates)
            if updates % cfg.target_update_interval == 0:
                update_target(online, target, cfg.tau)
            if updates % cfg.publish_interval == 0:
                publish()
            if cfg.eval_interval and cfg.eval_episodes and updates % cfg.eval_interval == 0:
                with timer.phase("evaluate"):
                    rets = greedy_returns(online, info, cfg, cfg.seed + 100_003 + updates)
                    status = replay_status(replay_api, replay)
                record = {
                    "updates": updates,
                    "return_mean": float(np.mean(rets)),
                    "wall_time_s": time.monotonic() - start,
                    "replay_inserts": status["inserts"],
                }
                evals.append(record)
                logger.scalar("eval/return_mean", record["return_mean"], updates)
                logger.scalar("replay/inserts", status["inserts"], updates)
                if cfg.target_return is not None and record["return_mean"] >= cfg.target_return:
                    if reached is None:
                        reached = record
                    progress.print(f"evaluation mean {record['return_mean']:.1f} >= {cfg.target_return}")
                    reason = "target_return"
                    break
            now = time.monotonic()
            if now - last_log >= cfg.log_interval_s:
                log_interval(now)
            progress.maybe(progress_text)
            if cfg.checkpoint_interval_s and now - last_ckpt >= cfg.checkpoint_interval_s:
                checkpoint()
                last_ckpt = now
        if io is not None:
            with timer.phase("update_priorities"):
                io.drain()  # every update submitted is applied before the run ends (or raises)
        log_interval(time.monotonic())
        try:
            publish(wait=True)  # the final parameters, so actors that are still running get them
            status = replay_status(replay_api, replay)  # the summary's counts are the final ones
        except ReplayTimeout:
            pass  # the server may be gone at shutdown; the checkpoint still has them
        clean_exit = True
    finally:
        checkpoint()
        if io is not None:
            # on an error, queued calls that have not started are dropped: the run failed anyway
            io.close(drain=clean_exit)
        else:
            client.close()
    wall = time.monotonic() - start
    final: list[float] = []
    if cfg.eval_episodes:
        with timer.phase("evaluate"):
            final = greedy_returns(online, info, cfg, cfg.seed + 999_983)
        logger.scalar("eval/final_return_mean", float(np.mean(final)), updates)
    totals = timer.totals()
    summary = {
        "role": ROLE,
        "env": cfg.env,
        "stopped_by": reason,
        "updates": updates,
        "updates_this_run": updates - start_updates,
        "params_version": version,
        "eval_returns": final,
        "eval_return_mean": float(np.mean(final)) if final else None,
        "evaluations": evals,
        "target_return": cfg.target_return,
        "reached_target": reached is not None,
        "reached_at": reached,
        "replay_size": last_table_size,
        "replay_inserts": status["inserts"],
        "wall_time_s": wall,
        "updates_per_s": (updates - start_updates) / max(wall, 1e-9),
        "phase_totals_s": totals,
        "communication_share": communication_share(totals, COMM_PHASES),
        # with prefetch, the replay calls' own time in the background (overlapped with training)
        "replay_io_busy_s": io.busy_s if io is not None else None,
        "replay_io": dict(io.stats) if io is not None else None,
    }
    logger.write_json("summary.json", finite(summary))
    logger.close()
    progress.print(
        f"stopped ({reason}) after {updates} updates; final evaluation "
        f"{summary['eval_return_mean'] if final else '-'}"
    )
    return summary


def main(argv: list[str] | None = None) -> int:
    return apex_main(PROG, __doc__, LearnerConfig, run_learner, argv)


if __name__ == "__main__":
    sys.exit(main())
