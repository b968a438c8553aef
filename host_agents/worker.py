"""Data-parallel RL worker: N of these train ONE policy (PPO, A2C or DQN) by allreducing
gradients through the switch, the parameter server, gloo, or nothing (``--comm local``).

Every worker builds the network from the common ``--seed`` (identical initial parameters),
collects data with its own environments (seeded by seed and worker index), computes the
gradient of its own data, allreduces it and applies the average with its own copy of the
optimizer. In synchronous mode every worker applies the same averaged gradient, so all models
stay identical (``summary.json`` holds a hash of the final parameters to check it).

Asynchronous mode (``--mode async``, switch only, ``--threshold`` k < N): each chunk's result
holds the first k gradients to reach the switch; a late worker gets the result without its own
contribution. Staleness-aware scaling and importance-sampling truncation follow Stellaris as
described in ``host_agents.dp_algorithms``.

Parameter resynchronisation (async, ``--resync-interval`` K, default 16): a chunk a worker
missed is never made up, so the workers' models drift apart. After the gradient call whose
job-wide call number ``v`` (the worker's model version) has ``(v + 1) % K == 0``, a worker makes
one extra call that carries its parameters (times ``PARAM_SEND_SCALE`` = 1/16, so that the
fixed-point bound admits them) instead of a gradient, its version sent with
``PARAM_VERSION_FLAG`` (bit 31) set. Every worker that follows the job's calls makes that call
at the same job-wide call number. Each chunk of any result is read by its kind
(``dp_algorithms.chunk_kinds``): parameter chunks (flag in version_lo and version_hi) are
averaged, ``S_c / n_c``, and replace this worker's values there (a missing chunk keeps its own);
gradient chunks (flag in neither) go through the optimizer as usual, whichever kind this worker
sent; a chunk that mixes both kinds (a worker that disagreed on the call) is dropped like a
missing one. Logged: ``agg/param_divergence`` (the relative L2 distance of this worker's
parameters to the average it adopts, over the chunks received), ``agg/mixed_chunks``; summary:
``resyncs``.

Control chunk: the allreduced tensor is the flat gradient padded to whole chunks
(``--values-per-packet`` values each, the switch's packet width, whatever the transport) plus one
chunk of control values that travel with it, so that decisions need no extra round trip:

- element i < N: 1 when worker i is done (it stops after this call); every worker repeats the
  flags it knows, so a flag outlives its sender;
- element N: checkpoint request (worker 0, every ``--checkpoint-interval-s``): every worker
  saves at the end of the same iteration;
- element N+1: stop all (worker 0 reached ``--target-return``).

Synchronous jobs stop after the first call whose result holds any flag: all workers at the
same update. Asynchronous workers stop after their own flagged call, after a stop-all (one more
call, flagged), or when fewer than k workers remain. A late contribution is not in the result,
so worker 0 keeps training with the stop-all flag until a result echoes it. A worker whose last
round cannot complete because its peers left ends cleanly after a timeout instead of hanging.

Logs: ``<log-dir>/<run-name>/worker-<i>`` (TensorBoard + metrics.jsonl, checkpoint.pt,
summary.json). Resuming an in-switch job needs the job reset (round counters restart).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from host_agents.agg_client import AggregationTimeout
from host_agents.agg_protocol import DEFAULT_VALUES_PER_PACKET, MAX_WORKERS, SUPPORTED_VALUES_PER_PACKET
from host_agents.cli import ConfigError, add_config_args, config_from_args, run_main
from host_agents.dp_algorithms import (
    PARAM_VERSION_FLAG,
    StalenessReference,
    a2c_loss,
    chunk_kinds,
    chunk_weights,
    dqn_loss,
    gae,
    ppo_loss,
)
from host_agents.envs import env_info, make_env
from host_agents.grad_comm import GlooComm, GradComm, LocalComm, PSComm, SwitchComm, parse_addr
from host_agents.metrics import (
    PhaseTimer,
    Progress,
    RunLogger,
    communication_share,
    load_checkpoint,
    save_checkpoint,
)
from host_agents.networks import (
    ActorCritic,
    DuelingQNetwork,
    flat_gradients,
    flat_params,
    load_flat_gradients,
    load_flat_params,
    select_device,
)
from host_agents.run_config import RunConfig, evaluate, seed_everything

__all__ = ["Worker", "WorkerConfig", "main"]

PROG = "python -m host_agents.worker"
ALGOS = ("ppo", "a2c", "dqn")
COMMS = ("switch", "ps", "gloo", "local")
MODES = ("sync", "async")
DEFAULT_LR = {"ppo": 2.5e-4, "a2c": 7e-4, "dqn": 5e-4}
# Parameters travel scaled by this in a resynchronisation call, so that the fixed-point bound
# 2**fixed_exponent (2 by default) admits parameters up to 2**(fixed_exponent + 4) (32).
PARAM_SEND_SCALE = 2.0**-4
# The largest replay a DQN worker allocates (observation and next observation per transition).
MAX_REPLAY_BYTES = 2 << 30
COMM_PHASES = ["allreduce"]  # the worker's only communication phase (metrics.communication_share)


@dataclass
class WorkerConfig(RunConfig):
    """Settings of one data-parallel worker."""

    algo: str = "ppo"
    """learning algorithm: ppo (clipped, GAE), a2c, or dqn (Double DQN, local replay per worker)"""
    comm: str = "local"
    """gradient transport: switch (in-network aggregation), ps (parameter server), gloo (ring
    allreduce) or local (one process, no communication)"""
    mode: str = "sync"
    """sync: every gradient of every worker in every update; async: the switch completes each
    chunk with the first --threshold workers (switch only)"""
    worker: int = 0
    """this worker's index (0..num-workers-1); also its id in the switch job"""
    num_workers: int = 1
    """number of workers training the policy"""
    switch: str = "10.100.0.254"
    """switch address ip[:port] for --comm switch (port default 47000)"""
    job: int = 1
    """switch aggregation job id"""
    slots: int = 32
    """the switch job's slot count (outstanding packets per worker)"""
    values_per_packet: int = DEFAULT_VALUES_PER_PACKET
    """int32 values per aggregation packet (32, 64 or 256): with --comm switch it must be the
    width the switch's p4/innet.p4 was compiled with (-DAGG_VALUES_PER_PACKET; this default is
    the program's; the topology launcher sets both from the file), else the switch drops the
    packets as malformed and the worker times out; every transport cuts the gradient into chunks
    of this size"""
    bind: str = "0.0.0.0:40000"
    """local ip:port of the aggregation socket (the port the job's member entry names)"""
    threshold: int = 0
    """contributions that complete a chunk; 0 means all workers (sync); async needs 1..num-workers-1"""
    fixed_exponent: int = 1
    """async only: gradients are clipped to +-2**e for fixed-point aggregation (the local
    grad-norm clip keeps them far below)"""
    agg_timeout_s: float = 0.2
    """seconds before an aggregation packet is retransmitted"""
    agg_max_tries: int = 50
    """transmissions of one aggregation packet before the worker gives up (switch unreachable)"""
    ps: str = "127.0.0.1:5555"
    """parameter server address host:port for --comm ps"""
    gloo_init: str = "127.0.0.1:29500"
    """gloo rendezvous host:port (worker 0 listens there) for --comm gloo"""
    gloo_ifname: str = ""
    """network interface gloo binds to (empty: resolve the hostname)"""
    comm_timeout_s: float = 60.0
    """seconds the ps and gloo transports wait for a connection, rendezvous or round"""
    torch_threads: int = 1
    """torch CPU threads per worker (several workers share the cores)"""
    hidden: int = 64
    """hidden units per layer of the MLP networks"""
    num_envs: int = 1
    """environments per worker (stepped one after the other)"""
    rollout_steps: int = 128
    """environment steps per environment per iteration (PPO/A2C rollout length; DQN steps between logs)"""
    lr: float = 0.0
    """Adam learning rate (0: the algorithm's default: 2.5e-4 PPO, 7e-4 A2C, 5e-4 DQN)"""
    anneal_lr: bool = True
    """PPO/A2C: decay the learning rate linearly to 0 over --max-steps"""
    gamma: float = 0.99
    """discount factor"""
    gae_lambda: float = 0.95
    """GAE lambda (PPO, A2C)"""
    epochs: int = 4
    """PPO epochs over each rollout"""
    minibatches: int = 4
    """PPO minibatches per epoch (one allreduce each)"""
    clip: float = 0.2
    """PPO ratio clip"""
    ent_coef: float = 0.01
    """entropy bonus coefficient (PPO, A2C)"""
    vf_coef: float = 0.5
    """value loss coefficient (PPO, A2C)"""
    max_grad_norm: float = 0.5
    """each worker clips its own gradient to this L2 norm before the allreduce (0: no clipping)"""
    buffer_size: int = 10_000
    """DQN: local replay capacity per worker (transitions; Atari frames take 2 x 28 KB each, and
    a replay over 2 GiB is refused)"""
    batch_size: int = 64
    """DQN: sampled transitions per update per worker"""
    learning_starts: int = 1000
    """DQN: transitions in the worker's own replay before its first update (also after
    --resume: the replay is not saved, so a resumed worker refills it first)"""
    train_every: int = 4
    """DQN: environment steps (per environment) between updates"""
    target_update: int = 100
    """DQN: updates between target network copies (every worker at the same update)"""
    eps_start: float = 1.0
    """DQN: initial exploration epsilon"""
    eps_end: float = 0.05
    """DQN: final exploration epsilon"""
    eps_fraction: float = 0.3
    """DQN: fraction of --max-steps over which epsilon decays linearly"""
    staleness_scaling: bool = True
    """async: weight each chunk's mean by min(1, (1 + s_ref) / (1 + staleness)), s_ref the job's running
    mean staleness, so only chunks staler than usual are scaled down (host_agents.dp_algorithms)"""
    resync_interval: int = 16
    """async: every this many job-wide allreduce calls the workers average their parameters
    through the switch (one extra call; a worker missing a chunk keeps its own values there); 0:
    never (the workers' models drift apart by the chunks each one missed)"""
    is_truncation: float = 0.0
    """importance-sampling truncation rho-bar for the policy-gradient loss (0: off)"""
    target_return: float = 0.0
    """stop every worker once worker 0's periodic evaluation reaches this mean return (0: never;
    needs --eval-interval and --eval-episodes)"""
    eval_interval: int = 10
    """iterations between worker 0's periodic evaluations of --eval-episodes episodes (0: none)"""
    slowdown_s: float = 0.0
    """seconds this worker sleeps per iteration (emulates a straggler in asynchronous experiments)"""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, value, allowed in (
            ("algo", self.algo, ALGOS),
            ("comm", self.comm, COMMS),
            ("mode", self.mode, MODES),
        ):
            if value not in allowed:
                raise ConfigError(f"--{name} must be one of {', '.join(allowed)}, got {value!r}")
        if not 1 <= self.num_workers <= MAX_WORKERS:
            raise ConfigError(f"--num-workers must be 1..{MAX_WORKERS}, got {self.num_workers}")
        if self.values_per_packet not in SUPPORTED_VALUES_PER_PACKET:
            raise ConfigError(
                f"--values-per-packet must be one of {', '.join(map(str, SUPPORTED_VALUES_PER_PACKET))} "
                f"(the widths p4/innet.p4 can be compiled with), got {self.values_per_packet}"
            )
        if self.num_workers + 2 > self.values_per_packet:
            raise ConfigError(
                f"--num-workers {self.num_workers} needs --values-per-packet of at least "
                f"{self.num_workers + 2} (the control chunk holds a flag per worker and two more)"
            )
        if not 0 <= self.worker < self.num_workers:
            raise ConfigError(f"--worker must be 0..{self.num_workers - 1}, got {self.worker}")
        if self.comm == "local" and self.num_workers != 1:
            raise ConfigError("--comm local runs one process: --num-workers must be 1")
        if self.mode == "async":
            if self.comm != "switch":
                raise ConfigError(
                    f"--mode async needs --comm switch (threshold aggregation), not {self.comm}"
                )
            if not 1 <= self.threshold < self.num_workers:
                raise ConfigError(
                    f"--mode async needs 1 <= --threshold < --num-workers ({self.num_workers}), "
                    f"got {self.threshold}"
                )
        elif self.threshold not in (0, self.num_workers):
            raise ConfigError(
                f"--threshold {self.threshold} < --num-workers makes the job asynchronous: add --mode async"
            )
        positive = (
            "num_envs",
            "rollout_steps",
            "epochs",
            "minibatches",
            "batch_size",
            "train_every",
            "target_update",
            "hidden",
            "slots",
            "agg_max_tries",
            "torch_threads",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")
        if self.minibatches > self.num_envs * self.rollout_steps:
            raise ConfigError("--minibatches exceeds the rollout's samples (--num-envs x --rollout-steps)")
        if self.batch_size > self.buffer_size:
            raise ConfigError(
                f"--batch-size {self.batch_size} is larger than the replay (--buffer-size {self.buffer_size})"
            )
        if self.resync_interval < 0:
            raise ConfigError(f"--resync-interval must be >= 0, got {self.resync_interval}")
        if self.lr < 0 or self.agg_timeout_s <= 0 or self.comm_timeout_s <= 0 or self.slowdown_s < 0:
            raise ConfigError("--lr, --slowdown-s must be >= 0 and the timeouts > 0")
        if self.target_return and not (self.eval_interval and self.eval_episodes):
            raise ConfigError(
                "--target-return is checked by worker 0's periodic evaluation: it needs "
                f"--eval-interval and --eval-episodes > 0 (got {self.eval_interval} and {self.eval_episodes})"
            )
        for flag, text, default_port in (("--ps", self.ps, 5555), ("--gloo-init", self.gloo_init, 29500)):
            try:
                parse_addr(text, default_port)
            except ValueError as e:
                raise ConfigError(f"{flag}: {e}") from None
        if self.lr == 0:
            self.lr = DEFAULT_LR[self.algo]

    @property
    def asynchronous(self) -> bool:
        return self.mode == "async"


def make_comm(cfg: WorkerConfig) -> GradComm:
    if cfg.comm == "local":
        return LocalComm()
    if cfg.comm == "switch":
        try:
            return SwitchComm(
                cfg.switch,
                cfg.job,
                cfg.worker,
                cfg.num_workers,
                cfg.slots,
                cfg.bind,
                cfg.threshold if cfg.asynchronous else None,
                cfg.fixed_exponent if cfg.asynchronous else None,
                cfg.agg_timeout_s,
                cfg.agg_max_tries,
                cfg.values_per_packet,
            )
        except OSError as e:  # bind to an address this host does not have, ...
            raise ConnectionError(
                f"cannot open the aggregation socket on {cfg.bind}: {e.strerror or e}"
            ) from e
        except ValueError as e:
            raise ConfigError(str(e)) from e
    if cfg.comm == "ps":
        try:
            return PSComm(cfg.ps, cfg.worker, cfg.num_workers, cfg.comm_timeout_s)
        except OSError as e:
            raise ConnectionError(f"parameter server {cfg.ps} unreachable: {e.strerror or e}") from e
    return GlooComm(cfg.gloo_init, cfg.worker, cfg.num_workers, cfg.comm_timeout_s, cfg.gloo_ifname or None)


class _Replay:
    """Uniform replay of one worker (DQN)."""

    def __init__(
        self, capacity: int, obs_shape: tuple[int, ...], obs_dtype: np.dtype, rng: np.random.Generator
    ) -> None:
        # observations as the environment gives them (Atari: uint8 frames, [capacity, 4, 84, 84])
        self.obs = np.zeros((capacity, *obs_shape), obs_dtype)
        self.next_obs = np.zeros((capacity, *obs_shape), obs_dtype)
        self.actions = np.zeros(capacity, np.int64)
        self.rewards = np.zeros(capacity, np.float32)
        self.dones = np.zeros(capacity, np.float32)
        self.capacity, self.size, self.pos, self.rng = capacity, 0, 0, rng

    def add(self, obs: np.ndarray, action: int, reward: float, next_obs: np.ndarray, done: bool) -> None:
        i = self.pos
        self.obs[i], self.actions[i], self.rewards[i], self.next_obs[i], self.dones[i] = (
            obs,
            action,
            reward,
            next_obs,
            done,
        )
        self.pos = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    @staticmethod
    def bytes_needed(capacity: int, obs_shape: tuple[int, ...], obs_dtype: np.dtype) -> int:
        return capacity * (2 * int(np.prod(obs_shape)) * np.dtype(obs_dtype).itemsize + 8 + 4 + 4)

    def sample(self, n: int) -> tuple[np.ndarray, ...]:
        idx = self.rng.integers(0, self.size, n)
        return self.obs[idx], self.actions[idx], self.rewards[idx], self.next_obs[idx], self.dones[idx]


class _StopTraining(Exception):
    """Raised out of an update loop when the job decided to stop after the current call."""


class Worker:
    def __init__(self, cfg: WorkerConfig) -> None:
        self.cfg = cfg
        info = env_info(cfg.env)  # ConfigError for an unknown or unsupported environment
        self.info = info
        if cfg.algo == "dqn":
            need = _Replay.bytes_needed(cfg.buffer_size, info.obs_shape, info.obs_dtype)
            if need > MAX_REPLAY_BYTES:
                per = _Replay.bytes_needed(1, info.obs_shape, info.obs_dtype)
                raise ConfigError(
                    f"--buffer-size {cfg.buffer_size} on {cfg.env} would need {need / 2**30:.1f} GiB of "
                    f"replay ({per} bytes per transition); at most {MAX_REPLAY_BYTES / 2**30:.0f} GiB: "
                    f"use --buffer-size {MAX_REPLAY_BYTES // per} or less"
                )
        torch.set_num_threads(cfg.torch_threads)
        self.device = select_device(cfg.device)  # ConfigError for a bad or absent device
        self.role = f"worker-{cfg.worker}"
        self.run_dir = cfg.run_dir(self.role)
        # Same seed on every worker: identical initial parameters.
        seed_everything(cfg.seed)
        if cfg.algo == "dqn":
            self.model: torch.nn.Module = DuelingQNetwork(info.obs_shape, info.num_actions, cfg.hidden).to(
                self.device
            )
            self.target = DuelingQNetwork(info.obs_shape, info.num_actions, cfg.hidden).to(self.device)
            self.target.load_state_dict(self.model.state_dict())
        else:
            self.model = ActorCritic(info.obs_shape, info.num_actions, cfg.hidden).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr, eps=1e-5)
        # From here on each worker draws its own random numbers (actions, minibatches): a large
        # odd multiplier keeps (seed, worker) pairs apart, as the Ape-X actors do.
        self.own_seed = cfg.seed * 1_000_003 + 7919 * (cfg.worker + 1)
        self.rng = seed_everything(self.own_seed)
        self.env_seeds = 0  # environment seeds used so far (restored on --resume, which takes new ones)
        self.envs = [make_env(cfg.env, seed=self.own_seed + e) for e in range(cfg.num_envs)]
        self._reset_envs()
        self.recent_returns: deque[float] = deque(maxlen=10)
        self.replay = (
            _Replay(cfg.buffer_size, info.obs_shape, info.obs_dtype, self.rng) if cfg.algo == "dqn" else None
        )
        self.num_params = sum(p.numel() for p in self.model.parameters())
        self.vpp = cfg.values_per_packet  # chunk size of the allreduced tensor
        self.padded = -(-self.num_params // self.vpp) * self.vpp
        # counters (restored on --resume)
        self.updates = 0  # optimizer steps = allreduce calls of this worker
        self.resyncs = 0  # async: parameter resynchronisation calls of this worker
        self.staleness_ref = StalenessReference()  # async: running reference staleness s_ref
        self.version = 0  # model version sent with each gradient: updates (sync), job-wide call (async)
        self.env_steps = 0  # this worker's environment steps (all its environments)
        self.dqn_steps = 0  # DQN: steps of the environment loop (train_every counts these)
        self.iterations = 0
        self.episodes = 0
        self.evaluations = 0  # periodic evaluations so far (each takes its own seeds)
        self.reached: dict[str, Any] | None = None  # when worker 0's evaluation first met the target
        # control state
        self.known_done = np.zeros(cfg.num_workers, bool)
        self.own_done = False
        self.stop_all = False  # worker 0 reached the target (or this worker heard of it)
        self.stop_all_seen = False  # a result held the stop-all flag: the others have it too
        self.stop_reason = ""
        self.ckpt_requested = False
        self._stop_after_call = False
        self.timer = PhaseTimer()
        self.iter_stats: dict[str, list[float]] = {}
        self.comm: GradComm | None = None
        self.logger: RunLogger | None = None

    def _reset_envs(self) -> None:
        """Start a new episode in every environment with seeds not used before by this worker."""
        base = self.own_seed + self.env_seeds
        self.obs = np.stack([np.asarray(env.reset(seed=base + e)[0]) for e, env in enumerate(self.envs)])
        self.env_seeds += len(self.envs)
        self.ep_return = np.zeros(len(self.envs))
        self.ep_length = np.zeros(len(self.envs), np.int64)

    # ------------------------------------------------------------------ control

    def _want_done(self) -> str:
        """Why this worker wants to stop now ('' = it does not)."""
        cfg = self.cfg
        if self.env_steps >= cfg.max_steps:
            return "max_steps"
        if cfg.time_budget_s and time.monotonic() - self.start >= cfg.time_budget_s:
            return "time_budget"
        return ""

    def _control_chunk(self) -> torch.Tensor:
        cfg = self.cfg
        ctl = torch.zeros(self.vpp)
        if not self.own_done:
            reason = self._want_done()
            if reason or (self.stop_all_seen and cfg.asynchronous):
                self.own_done = True
                self.stop_reason = self.stop_reason or reason or "target_return"
        done = self.known_done.copy()
        done[cfg.worker] |= self.own_done
        ctl[: cfg.num_workers] = torch.from_numpy(done.astype(np.float32))
        if cfg.worker == 0 and cfg.checkpoint_interval_s and time.monotonic() >= self.next_ckpt:
            ctl[cfg.num_workers] = 1.0
            self.next_ckpt = time.monotonic() + cfg.checkpoint_interval_s
        ctl[cfg.num_workers + 1] = float(self.stop_all)
        return ctl

    def apply_gradient(self) -> None:
        """Allreduce this worker's gradient (in ``.grad``), apply the average, and take the
        control decisions it carries. Raises _StopTraining when the job stops after this call.
        Asynchronous workers in step with the job then resynchronise their parameters every
        ``--resync-interval`` job-wide calls (see the module docstring)."""
        cfg = self.cfg
        if cfg.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
        self._exchange(flat_gradients(self.model), params=False)
        if cfg.asynchronous and cfg.resync_interval and (self.version + 1) % cfg.resync_interval == 0:
            self._exchange(torch.from_numpy(flat_params(self.model)) * PARAM_SEND_SCALE, params=True)

    def _exchange(self, values: torch.Tensor, params: bool) -> None:
        """One allreduce call of ``values`` (a gradient, or with ``params`` the scaled parameters
        of a resynchronisation) and the control chunk; applies what the result holds: gradient
        chunks through the optimizer, parameter chunks averaged into the model."""
        cfg = self.cfg
        assert self.comm is not None
        payload = torch.zeros(self.padded + self.vpp)
        payload[: self.num_params] = values
        payload[self.padded :] = self._control_chunk()
        version = self.version | PARAM_VERSION_FLAG if params else self.version
        try:
            with self.timer.phase("allreduce"):
                summed, info = self.comm.allreduce(payload, version)
        except AggregationTimeout as e:
            if cfg.asynchronous and self.updates > 0:
                # After a STALE a worker's slots run ahead of its own call count, so its last calls
                # can name rounds its peers, already gone, never send (it may also have skipped the
                # call that carried their done flags). Once the job has worked, a round nobody
                # completes means the peers left: end cleanly, not with an error.
                self.stop_reason = self.stop_reason or "peers_left"
                print(f"{self.role}: no result after the peers stopped ({e}); ending", file=sys.stderr)
                raise _StopTraining from None
            raise
        n = self.num_params
        param_avg: torch.Tensor | None = None
        if info is None or not cfg.asynchronous:
            grad: torch.Tensor | None = summed[:n] / cfg.num_workers
            ctl = summed[self.padded :]
        else:
            grad_chunks, param_chunks = chunk_kinds(info.count, info.version_lo, info.version_hi)
            grad_chunks[-1] = param_chunks[-1] = False  # the control chunk is neither
            total = self.padded + self.vpp
            grad = None
            if grad_chunks.any():
                lo = np.where(grad_chunks, info.version_lo, 0)
                hi = np.where(grad_chunks, info.version_hi, 0)
                w = chunk_weights(
                    np.where(grad_chunks, info.count, 0),
                    lo,
                    hi,
                    self.version,
                    total,
                    self.vpp,
                    cfg.staleness_scaling,
                    self.staleness_ref.value,
                )
                grad = summed[:n] * w.factors[:n]
                self.staleness_ref.update(w.staleness_mean)
                self._stat("agg/staleness_mean", w.staleness_mean)
                self._stat("agg/staleness_ref", self.staleness_ref.value or 0.0)
                self._stat("agg/staleness_weight_mean", w.weight_mean)
                self._stat("agg/contributors_mean", w.contributors_mean)
            if param_chunks.any():
                per_chunk = np.where(param_chunks, 1.0 / np.maximum(info.count, 1), 0.0)
                keep = torch.from_numpy(np.repeat(param_chunks, self.vpp)[:n])
                factors = torch.from_numpy(np.repeat(per_chunk, self.vpp)[:n].astype(np.float32))
                param_avg = torch.where(keep, summed[:n] * factors / PARAM_SEND_SCALE, torch.nan)
            missing = int((info.count == 0).sum())
            mixed = int(((info.count > 0) & ~grad_chunks & ~param_chunks).sum()) - int(info.count[-1] > 0)
            if grad is not None or not params:
                self._stat("agg/missing_chunks", missing)
            if mixed:
                self._stat("agg/mixed_chunks", mixed)
            ctl = summed[self.padded :] if info.count[-1] > 0 else torch.zeros(self.vpp)
        if grad is not None:
            load_flat_gradients(self.model, grad)
            self.optimizer.step()
        if param_avg is not None:
            own = torch.from_numpy(flat_params(self.model).copy())
            received = ~torch.isnan(param_avg)
            diff = own[received] - param_avg[received]
            self._stat("agg/param_divergence", float(diff.norm() / max(1e-12, float(own[received].norm()))))
            self._stat("agg/param_chunks_received", int(received.sum()) / self.vpp)
            load_flat_params(self.model, torch.where(received, param_avg, own).numpy())
        if params:
            self.resyncs += 1
        else:
            self.updates += 1
        if cfg.asynchronous and isinstance(self.comm, SwitchComm):
            # the job-wide call this update belongs to: skipped calls make this worker's model older
            self.version = self.comm.call_index(payload.numel())
        else:
            self.version = self.updates
        self._control(ctl)

    def _control(self, ctl: torch.Tensor) -> None:
        """The control decisions a result's control chunk carries (may raise _StopTraining)."""
        cfg = self.cfg
        self.known_done |= ctl[: cfg.num_workers].numpy() > 0.5
        self.ckpt_requested |= bool(ctl[cfg.num_workers] > 0.5)
        saw_stop_all = bool(ctl[cfg.num_workers + 1] > 0.5)
        if not cfg.asynchronous:
            if self.known_done.any() or self.own_done:
                self.stop_reason = self.stop_reason or ("target_return" if saw_stop_all else "peer_done")
                raise _StopTraining
            return
        self.stop_all |= saw_stop_all
        self.stop_all_seen |= saw_stop_all
        done = self.known_done.copy()
        done[cfg.worker] |= self.own_done
        active = cfg.num_workers - int(done.sum())
        if self.known_done.any() and isinstance(self.comm, SwitchComm):
            # a peer left: a round that cannot complete should end this worker soon, not after 10 s
            self.comm.client.max_tries = min(self.comm.client.max_tries, 10)
        if self.own_done:
            raise _StopTraining
        if active < cfg.threshold:
            self.stop_reason = "peers_left"
            raise _StopTraining

    def _stat(self, tag: str, value: float) -> None:
        self.iter_stats.setdefault(tag, []).append(float(value))

    # ------------------------------------------------------------------ environments

    def _step_envs(
        self, actions: np.ndarray, values_fn=None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:  # type: ignore[no-untyped-def]
        """Step every environment; returns (next obs, learning rewards (clipped to [-1, 1] on
        Atari), dones, [env index of each truncated episode]). Ended episodes are reset and their
        (unclipped) returns logged."""
        E = self.cfg.num_envs
        rewards = np.zeros(E, np.float32)
        dones = np.zeros(E, np.float32)
        real_next = self.obs.copy()
        truncated_at = []
        for e, env in enumerate(self.envs):
            obs, reward, terminated, truncated, _ = env.step(int(actions[e]))
            obs = np.asarray(obs)
            real_next[e] = obs
            # Atari rewards are clipped for learning only; the logged return is the game's
            rewards[e] = np.clip(reward, -1.0, 1.0) if self.info.atari else reward
            self.ep_return[e] += reward
            self.ep_length[e] += 1
            if terminated or truncated:
                dones[e] = 1.0
                if truncated and not terminated:
                    truncated_at.append(e)
                self.episodes += 1
                assert self.logger is not None
                self.logger.scalar("episode/return", self.ep_return[e], self.env_steps + e + 1)
                self.logger.scalar("episode/length", self.ep_length[e], self.env_steps + e + 1)
                self.recent_returns.append(float(self.ep_return[e]))
                self.ep_return[e], self.ep_length[e] = 0.0, 0
                obs = np.asarray(env.reset()[0])
            self.obs[e] = obs
        self.env_steps += E
        return real_next, rewards, dones, truncated_at

    # ------------------------------------------------------------------ algorithms

    def _set_lr(self) -> None:
        if self.cfg.anneal_lr and self.cfg.algo != "dqn":
            frac = max(0.0, 1.0 - self.env_steps / self.cfg.max_steps)
            for group in self.optimizer.param_groups:
                group["lr"] = frac * self.cfg.lr

    def iteration_pg(self) -> None:
        """One PPO/A2C iteration: a rollout, then the updates (one allreduce per minibatch)."""
        cfg = self.cfg
        T, E = cfg.rollout_steps, cfg.num_envs
        obs_buf = np.zeros((T, E) + self.obs.shape[1:], self.obs.dtype)
        act_buf = np.zeros((T, E), np.int64)
        logp_buf = np.zeros((T, E), np.float32)
        val_buf = np.zeros((T, E), np.float32)
        rew_buf = np.zeros((T, E), np.float32)
        done_buf = np.zeros((T, E), np.float32)
        model = self.model
        self._set_lr()
        for t in range(T):
            obs_buf[t] = self.obs
            with torch.no_grad():
                logits, value = model(torch.as_tensor(self.obs, device=self.device))
                dist = torch.distributions.Categorical(logits=logits)
                action = dist.sample()
                logp_buf[t] = dist.log_prob(action).cpu().numpy()  # behaviour policy mu
            act_buf[t] = action.cpu().numpy()
            val_buf[t] = value.cpu().numpy()
            real_next, rewards, dones, truncated = self._step_envs(act_buf[t])
            if truncated:  # time limit: bootstrap from the final observation instead of 0
                with torch.no_grad():
                    v = model(torch.as_tensor(real_next[truncated], device=self.device))[1].cpu().numpy()
                rewards[truncated] += cfg.gamma * v
            rew_buf[t], done_buf[t] = rewards, dones
        with torch.no_grad():
            last_value = model(torch.as_tensor(self.obs, device=self.device))[1].cpu().numpy()
        adv, ret = gae(rew_buf, val_buf, done_buf, last_value, cfg.gamma, cfg.gae_lambda)
        B = T * E
        tens = {
            "obs": torch.as_tensor(obs_buf.reshape((B,) + obs_buf.shape[2:]), device=self.device),
            "actions": torch.as_tensor(act_buf.reshape(B), device=self.device),
            "logp": torch.as_tensor(logp_buf.reshape(B), device=self.device),
            "adv": torch.as_tensor(adv.reshape(B), device=self.device),
            "ret": torch.as_tensor(ret.reshape(B), device=self.device),
        }
        if cfg.algo == "a2c":
            self._pg_update(tens, np.arange(B), a2c=True)
            return
        for _ in range(cfg.epochs):
            perm = self.rng.permutation(B)
            for mb in np.array_split(perm, cfg.minibatches):
                self._pg_update(tens, mb, a2c=False)

    def _pg_update(self, tens: dict[str, torch.Tensor], idx: np.ndarray, a2c: bool) -> None:
        cfg = self.cfg
        i = torch.as_tensor(idx, device=self.device)
        args = (
            self.model,
            tens["obs"][i],
            tens["actions"][i],
            tens["logp"][i],
            tens["adv"][i],
            tens["ret"][i],
        )
        if a2c:
            loss, stats = a2c_loss(
                *args, vf_coef=cfg.vf_coef, ent_coef=cfg.ent_coef, rho_bar=cfg.is_truncation
            )
        else:
            loss, stats = ppo_loss(
                *args, clip=cfg.clip, vf_coef=cfg.vf_coef, ent_coef=cfg.ent_coef, rho_bar=cfg.is_truncation
            )
        self.optimizer.zero_grad(set_to_none=False)
        loss.backward()
        for k, v in stats.items():
            self._stat(f"train/{k}", v)
        self.apply_gradient()

    def _epsilon(self) -> float:
        cfg = self.cfg
        frac = min(1.0, self.env_steps / max(1.0, cfg.eps_fraction * cfg.max_steps))
        return cfg.eps_start + frac * (cfg.eps_end - cfg.eps_start)

    def iteration_dqn(self) -> None:
        """``rollout_steps`` environment steps with epsilon-greedy actions; an update (one
        allreduce) every ``train_every`` steps once the replay holds ``learning_starts`` (and at
        least ``batch_size``) transitions: its own size, so that a resumed worker (whose replay was
        not saved) refills it before training."""
        cfg = self.cfg
        assert self.replay is not None
        for _ in range(cfg.rollout_steps):
            self.dqn_steps += 1
            eps = self._epsilon()
            with torch.no_grad():
                greedy = self.model(torch.as_tensor(self.obs, device=self.device)).argmax(dim=1).cpu().numpy()
            explore = self.rng.random(cfg.num_envs) < eps
            actions = np.where(
                explore, self.rng.integers(0, self.envs[0].action_space.n, cfg.num_envs), greedy
            )
            before = self.obs.copy()
            real_next, rewards, dones, truncated = self._step_envs(actions)
            for e in range(cfg.num_envs):
                terminal = bool(dones[e]) and e not in truncated  # a time limit is not a terminal state
                self.replay.add(before[e], int(actions[e]), float(rewards[e]), real_next[e], terminal)
            warm = self.replay.size >= max(cfg.learning_starts, cfg.batch_size)
            if warm and self.dqn_steps % cfg.train_every == 0:
                o, a, r, o2, d = (
                    torch.as_tensor(x, device=self.device) for x in self.replay.sample(cfg.batch_size)
                )
                loss, stats = dqn_loss(self.model, self.target, o, a, r, o2, d, cfg.gamma)
                self.optimizer.zero_grad(set_to_none=False)
                loss.backward()
                for k, v in stats.items():
                    self._stat(f"train/{k}", v)
                self._stat("train/epsilon", eps)
                self.apply_gradient()
                if self.updates % cfg.target_update == 0:
                    self.target.load_state_dict(self.model.state_dict())

    # ------------------------------------------------------------------ evaluation, checkpoints

    def act_greedy(self, obs: np.ndarray) -> int:
        with torch.no_grad():
            out = self.model(torch.as_tensor(np.asarray(obs, self.obs.dtype)[None], device=self.device))
            logits = out[0] if isinstance(out, tuple) else out
            return int(logits.argmax(dim=1).item())

    def eval_seed(self, periodic: int | None) -> int:
        """First seed of an evaluation's episodes (episode i takes this + i): periodic evaluation
        k takes the k+1-th block of --eval-episodes seeds, the final evaluation the block before
        them, so no two evaluations of a run replay the same episodes. The same on every worker
        (synchronous workers' identical models evaluate identically)."""
        base = self.cfg.seed * 1_000_003 + 500_009
        return base if periodic is None else base + self.cfg.eval_episodes * (periodic + 1)

    def evaluate(self, episodes: int, periodic: int | None = None) -> list[float]:
        with self.timer.phase("evaluate"):
            return evaluate(self.act_greedy, self.cfg.env, episodes, seed=self.eval_seed(periodic))

    def state(self) -> dict[str, Any]:
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "counters": {
                "updates": self.updates,
                "resyncs": self.resyncs,
                "version": self.version,
                "env_steps": self.env_steps,
                "dqn_steps": self.dqn_steps,
                "iterations": self.iterations,
                "episodes": self.episodes,
                "evaluations": self.evaluations,
                "env_seeds": self.env_seeds,
            },
            "rng": {
                "numpy": self.rng.bit_generator.state,
                "torch": torch.get_rng_state(),
                "cuda": torch.cuda.get_rng_state_all() if self.device.type == "cuda" else None,
            },
            "reached": self.reached,
            "config": asdict(self.cfg),
        }
        if self.cfg.algo == "dqn":
            state["target"] = self.target.state_dict()
        return state

    def restore(self, path: Path) -> None:
        state = load_checkpoint(path)
        try:
            self.model.load_state_dict(state["model"])
        except RuntimeError as e:
            raise ConfigError(
                f"{path} holds another network (different --env, --algo or --hidden): {e}"
            ) from e
        self.optimizer.load_state_dict(state["optimizer"])
        if self.cfg.algo == "dqn" and "target" in state:
            self.target.load_state_dict(state["target"])
        for k, v in state["counters"].items():
            setattr(self, k, v)
        self.reached = state.get("reached")
        rng = state.get("rng")
        if rng is not None:  # the random streams go on where the saved run left them
            self.rng.bit_generator.state = rng["numpy"]
            torch.set_rng_state(rng["torch"])
            if rng.get("cuda") is not None and self.device.type == "cuda":
                torch.cuda.set_rng_state_all(rng["cuda"])
        self._reset_envs()  # the saved run's episodes are lost: new ones, on seeds not used yet

    def params_sha256(self) -> str:
        return hashlib.sha256(flat_params(self.model).tobytes()).hexdigest()

    # ------------------------------------------------------------------ main loop

    def _log_iteration(self, steps_before: int, t0: float) -> None:
        assert self.logger is not None
        split = self.timer.interval()
        dt = max(1e-9, time.perf_counter() - t0)
        step = self.env_steps
        log = self.logger
        log.scalar("env/steps_per_s", (self.env_steps - steps_before) / dt, step)
        log.scalar("time/allreduce", split.get("allreduce", 0.0), step)
        log.scalar("time/computation", split.get("computation", 0.0), step)
        for phase in ("evaluate", "checkpoint"):
            if phase in split:
                log.scalar(f"time/{phase}", split[phase], step)
        log.scalar("time/communication_share", communication_share(split, COMM_PHASES), step)
        log.scalar("train/updates", self.updates, step)
        for tag, values in self.iter_stats.items():
            log.scalar(tag, float(np.mean(values)), step)
        self.iter_stats = {}

    def run(self) -> dict[str, Any]:
        cfg = self.cfg
        ckpt_path = self.run_dir / "checkpoint.pt"
        if cfg.resume and ckpt_path.exists():
            self.restore(ckpt_path)
        self.logger = RunLogger(self.run_dir, tensorboard=cfg.tensorboard, resume=cfg.resume)
        progress = Progress(self.role, cfg.progress_interval_s)
        self.comm = make_comm(cfg)
        self.start = time.monotonic()
        self.next_ckpt = self.start + (cfg.checkpoint_interval_s or float("inf"))
        self.timer = PhaseTimer()
        wall0 = time.perf_counter()
        iterate = self.iteration_dqn if cfg.algo == "dqn" else self.iteration_pg
        first = True
        try:
            while True:
                steps_before, t0 = self.env_steps, time.perf_counter()
                stopping = False
                if first and self.env_steps >= cfg.max_steps:  # resumed at the end: every worker alike
                    self.stop_reason = "max_steps"
                    break
                first = False
                try:
                    if cfg.slowdown_s:
                        time.sleep(cfg.slowdown_s)
                    iterate()
                    if self.comm.name == "local":
                        reason = self._want_done()  # nothing travels: decide here
                    elif cfg.algo == "dqn" and self.updates == 0:
                        # DQN warm-up, no call yet: max_steps comes at the same step on every
                        # worker, but a time budget would not; it waits for the first call's
                        # control chunk (every worker then stops together)
                        reason = "max_steps" if self.env_steps >= cfg.max_steps else ""
                    else:
                        reason = ""
                    if reason:
                        self.stop_reason, stopping = reason, True
                except _StopTraining:
                    stopping = True
                self.iterations += 1
                self._log_iteration(steps_before, t0)
                if (
                    cfg.worker == 0
                    and cfg.eval_interval
                    and cfg.eval_episodes
                    and self.iterations % cfg.eval_interval == 0
                    and not stopping
                ):
                    returns = self.evaluate(cfg.eval_episodes, periodic=self.evaluations)
                    self.evaluations += 1
                    mean = float(np.mean(returns))
                    self.logger.scalar("eval/return_mean", mean, self.env_steps)
                    if cfg.target_return and mean >= cfg.target_return and self.reached is None:
                        self.reached = {
                            "updates": self.updates,
                            "env_steps_worker": self.env_steps,
                            "env_steps_total": self.env_steps * cfg.num_workers,
                            "wall_s": time.perf_counter() - wall0,
                            "eval_return_mean": mean,
                        }
                        self.stop_all = True
                        self.own_done = not cfg.asynchronous or self.own_done
                        if self.comm.name == "local":
                            self.stop_reason, stopping = "target_return", True
                        elif not cfg.asynchronous:
                            self.stop_reason = "target_return"
                if self.ckpt_requested or (
                    self.comm.name == "local"
                    and cfg.checkpoint_interval_s
                    and time.monotonic() >= self.next_ckpt
                ):
                    self.ckpt_requested = False
                    self.next_ckpt = time.monotonic() + cfg.checkpoint_interval_s
                    with self.timer.phase("checkpoint"):
                        save_checkpoint(ckpt_path, self.state())
                progress.maybe(self._progress_text)
                if stopping:
                    break
        finally:
            self.comm.close()
            for env in self.envs:
                env.close()
        with self.timer.phase("checkpoint"):
            save_checkpoint(ckpt_path, self.state())
        wall = time.perf_counter() - wall0
        eval_returns = self.evaluate(cfg.eval_episodes) if cfg.eval_episodes else []
        totals = self.timer.totals()
        summary = {
            "role": self.role,
            "algo": cfg.algo,
            "comm": cfg.comm,
            "mode": cfg.mode,
            "num_workers": cfg.num_workers,
            "threshold": cfg.threshold or cfg.num_workers,
            "staleness_scaling": cfg.staleness_scaling,
            "is_truncation": cfg.is_truncation,
            "updates": self.updates,
            "resyncs": self.resyncs,
            "iterations": self.iterations,
            "env_steps": self.env_steps,
            "episodes": self.episodes,
            "wall_s": wall,
            "phase_totals_s": totals,
            "communication_share": communication_share(totals, COMM_PHASES),
            "eval_returns": eval_returns,
            "eval_return_mean": float(np.mean(eval_returns)) if eval_returns else None,
            "stop_reason": self.stop_reason,
            "reached_target": self.reached,
            "params_sha256": self.params_sha256(),
            "num_params": self.num_params,
            "values_per_packet": self.vpp,
            "packets_per_allreduce": (self.padded + self.vpp) // self.vpp,
            "comm_counters": self.comm.counters(),
        }
        self.logger.write_json("summary.json", summary)
        self.logger.close()
        progress.print(
            self._progress_text() + f" | done ({self.stop_reason}), eval {summary['eval_return_mean']}"
        )
        return summary

    def _progress_text(self) -> str:
        recent = list(self.recent_returns)
        ret = f"{np.mean(recent):.1f}" if recent else "-"
        totals = self.timer.totals()
        return (
            f"steps {self.env_steps} updates {self.updates} episodes {self.episodes} "
            f"return {ret} comm {100 * communication_share(totals, COMM_PHASES):.0f}%"
        )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Data-parallel RL worker: N workers train one policy (PPO, A2C or DQN) by "
        "allreducing gradients through the switch (sync or async with staleness-aware scaling), "
        "a parameter server, gloo, or locally. Start one process per worker.",
    )
    add_config_args(parser, WorkerConfig)
    return parser


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        args = build_parser().parse_args(argv)
        cfg = config_from_args(WorkerConfig, args)
        Worker(cfg).run()
        return 0

    return run_main(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
