"""Ape-X DQN (host_agents.actor, host_agents.learner, host_agents.apex).

Unit tests: the per-actor epsilon schedule, initial priorities of n-step transitions against a
hand computation, the double-Q target and the weighted Huber loss on a tiny network, config
checks. Smoke tests over real sockets: the C replay server on loopback with two actors and a
learner as subprocesses (logs, TensorBoard events, checkpoints, summaries and counters that
agree with each other and with the server's), resume of both, bad configurations that must end
with one line and a non-zero exit, and the switch path in a namespace star topology.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from host_agents.actor import ActorConfig, initial_priorities
from host_agents.apex import actor_epsilon, double_q_loss, update_target
from host_agents.cli import ConfigError
from host_agents.experience import NStepAccumulator
from host_agents.learner import LearnerConfig, check_against_replay
from host_agents.metrics import load_checkpoint, read_metrics
from host_agents.netutil import free_port
from host_agents.replay_client import HostReplayClient, ReplayConfig
from topologies.replay_server import SERVER_BIN, ReplayServerProcess

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable

ACTOR_TAGS = {
    "episode/return",
    "episode/length",
    "actor/epsilon",
    "env/steps_per_s",
    "time/pull_params",
    "time/push_experiences",
    "time/computation",
    "time/communication_share",
}
LEARNER_TAGS = {
    "learner/loss",
    "learner/q_mean",
    "replay/size",
    "learner/updates_per_s",
    "time/sample",
    "time/update_priorities",
    "time/set_params",
    "time/computation",
    "time/communication_share",
    "eval/return_mean",
}

needs_server = pytest.mark.skipif(
    not SERVER_BIN.exists(), reason=f"{SERVER_BIN} is not built (make replay-server)"
)


# ---------------------------------------------------------------- unit tests


def test_actor_epsilon_schedule() -> None:
    assert actor_epsilon(0, 1) == pytest.approx(0.4)
    eps = [actor_epsilon(i, 8) for i in range(8)]
    assert eps[0] == pytest.approx(0.4)
    assert eps[7] == pytest.approx(0.4**8)
    assert eps[3] == pytest.approx(0.4**4)  # 1 + 7 * 3 / 7
    assert all(a > b for a, b in zip(eps, eps[1:], strict=False))
    assert actor_epsilon(1, 2) == pytest.approx(0.4**8)
    assert ActorConfig(actor_index=2, num_actors=5).epsilon == pytest.approx(0.4 ** (1 + 7 * 2 / 4))
    with pytest.raises(ConfigError):
        actor_epsilon(3, 3)
    with pytest.raises(ConfigError):
        ActorConfig(actor_index=-1, num_actors=2)


class TableQ(nn.Module):
    """Q(s, .) = s @ W: observations are one-hot states, so Q is a lookup table."""

    def __init__(self, table: list[list[float]]) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.tensor(table, dtype=torch.float32))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.float() @ self.w


def onehot(i: int, n: int = 4) -> np.ndarray:
    v = np.zeros(n, np.float32)
    v[i] = 1.0
    return v


def test_initial_priorities_match_a_hand_computation() -> None:
    # states 0 -> 1 -> 2 -> 3 (terminal after the third step), rewards 1, 2, 3; n = 2, gamma = 0.5
    q = [[1.0, 2.0], [0.5, 4.0], [3.0, -1.0], [10.0, 20.0]]
    net = TableQ(q)
    acc = NStepAccumulator(2, 0.5)
    out = []
    out += acc.add(onehot(0), 0, 1.0, onehot(1), False, False)
    assert out == []
    out += acc.add(onehot(1), 1, 2.0, onehot(2), False, False)
    out += acc.add(onehot(2), 0, 3.0, onehot(3), True, False)
    assert len(out) == 3
    # t0: R = 1 + 0.5*2 = 2, bootstrap from s2 with 0.25: argmax Q(s2) = 0 -> 3.0; y = 2.75; Q(s0,0) = 1
    # t1: R = 2 + 0.5*3 = 3.5, terminal (discount 0): y = 3.5; Q(s1,1) = 4 -> |TD| = 0.5
    # t2: R = 3, terminal: y = 3; Q(s2,0) = 3 -> |TD| = 0
    assert [t.ret for t in out] == pytest.approx([2.0, 3.5, 3.0])
    assert [t.discount for t in out] == pytest.approx([0.25, 0.0, 0.0])
    prios = initial_priorities(net, out, torch.device("cpu"), eps=1e-3)
    assert prios == pytest.approx([1.75 + 1e-3, 0.5 + 1e-3, 0.0 + 1e-3])


def test_double_q_target_uses_online_argmax_and_target_values() -> None:
    online = TableQ([[0.0, 0.0], [1.0, 5.0]])  # in s1 the online net prefers action 1
    target = TableQ([[0.0, 0.0], [9.0, 2.0]])  # ... which the target net values at 2 (max would be 9)
    batch = {
        "obs": torch.from_numpy(np.stack([onehot(0, 2), onehot(0, 2)])),
        "actions": torch.tensor([0, 1]),
        "returns": torch.tensor([1.0, 0.2]),
        "next_obs": torch.from_numpy(np.stack([onehot(1, 2), onehot(1, 2)])),
        "discounts": torch.tensor([0.5, 0.0]),
    }
    out = double_q_loss(online, target, batch, weights=torch.tensor([1.0, 0.5]))
    # y0 = 1 + 0.5 * Q_target(s1, argmax Q_online(s1) = 1) = 2.0; y1 = 0.2 (no bootstrap)
    assert out.td_errors.tolist() == pytest.approx([2.0, 0.2])
    # Huber (delta 1): |2| -> 2 - 0.5 = 1.5 (linear part); |0.2| -> 0.5 * 0.04 = 0.02; weighted mean
    assert float(out.loss.detach()) == pytest.approx((1.5 * 1.0 + 0.02 * 0.5) / 2)
    assert out.q_mean == pytest.approx(0.0)
    out.loss.backward()
    # only Q(s0, a) entries of the online net get gradient; the target net none
    assert online.w.grad is not None and target.w.grad is None
    assert online.w.grad[1].abs().sum() == 0


def test_target_update_copies_at_tau_one_and_averages_below() -> None:
    """tau 1: the target becomes the online network; tau < 1: each parameter moves that share of
    the way (Polyak averaging), and repeated updates converge on the online network."""
    torch.manual_seed(3)
    online, target = nn.Linear(3, 2), nn.Linear(3, 2)
    before = [t.detach().clone() for t in target.parameters()]
    update_target(online, target, 0.25)
    for t, b, o in zip(target.parameters(), before, online.parameters(), strict=True):
        assert torch.allclose(t, b + 0.25 * (o - b))
        assert t.grad is None and not torch.equal(t, o)
    for _ in range(200):
        update_target(online, target, 0.25)
    assert all(torch.allclose(t, o) for t, o in zip(target.parameters(), online.parameters(), strict=True))
    fresh = nn.Linear(3, 2)
    update_target(online, fresh, 1.0)
    assert all(torch.equal(t, o) for t, o in zip(fresh.parameters(), online.parameters(), strict=True))
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ConfigError, match="tau must be in"):
            LearnerConfig(tau=bad)


def test_greedy_evaluation_plays_the_networks_argmax() -> None:
    """greedy_returns (the learner's and the DQN baseline's evaluation, NumPy actions) gives the
    returns of the same episodes played with torch's argmax Q; eval_epsilon still explores."""
    from host_agents.envs import env_info
    from host_agents.learner import greedy_returns
    from host_agents.networks import DuelingQNetwork
    from host_agents.run_config import evaluate

    info = env_info("CartPole-v1")
    cfg = LearnerConfig(env="CartPole-v1", eval_episodes=4)
    for seed in (1, 2):
        torch.manual_seed(seed)
        net = DuelingQNetwork(info.obs_shape, info.num_actions, 32)

        def torch_act(obs: np.ndarray, net: DuelingQNetwork = net) -> int:
            with torch.no_grad():
                return int(net(torch.from_numpy(np.asarray(obs, np.float32)[None])).argmax(dim=1).item())

        expected = evaluate(torch_act, "CartPole-v1", 4, seed=77)
        assert greedy_returns(net, info, cfg, seed=77) == expected
        assert net.training  # left in training mode
    explore = LearnerConfig(env="CartPole-v1", eval_episodes=4, eval_epsilon=1.0)
    random_play = greedy_returns(net, info, explore, seed=77)
    assert len(random_play) == 4 and random_play != expected


def test_learner_config_checks() -> None:
    cfg = LearnerConfig(batch_size=64, learning_starts=10)
    assert cfg.learning_starts == 64  # raised to one batch
    with pytest.raises(ConfigError, match="larger than the replay"):
        check_against_replay(LearnerConfig(batch_size=512), ReplayConfig(max_size=100))
    with pytest.raises(ConfigError):
        LearnerConfig(target_update_interval=0)
    cfg = LearnerConfig(beta=0.4, beta_final=1.0, beta_anneal_updates=100)
    assert [cfg.beta_at(u) for u in (0, 50, 100, 1000)] == pytest.approx([0.4, 0.7, 1.0, 1.0])


# ---------------------------------------------------------------- processes


def run_cli(module: str, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", module, *args], capture_output=True, text=True, cwd=REPO, timeout=timeout
    )


def run_clis(*calls: tuple[str, ...], timeout: float = 90) -> list[subprocess.CompletedProcess[str]]:
    """``run_cli`` for each (module, *args), all at once (each process spends ~2 s importing torch)."""
    pipe = subprocess.PIPE
    procs = [subprocess.Popen([PY, "-m", *c], stdout=pipe, stderr=pipe, text=True, cwd=REPO) for c in calls]
    done = []
    for call, p in zip(calls, procs, strict=True):
        out, err = p.communicate(timeout=timeout)
        done.append(subprocess.CompletedProcess([PY, "-m", *call], p.returncode, out, err))
    return done


def start(module: str, *args: str, log: Path) -> subprocess.Popen[str]:
    out = open(log, "w")  # noqa: SIM115 - closed by the OS when the child exits; the test reads the file
    return subprocess.Popen(
        [PY, "-m", module, *args], stdout=out, stderr=subprocess.STDOUT, text=True, cwd=REPO
    )


def finish(proc: subprocess.Popen[str], log: Path, timeout: float = 90) -> None:
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"{log.name} did not finish:\n{log.read_text()[-3000:]}") from None
    assert rc == 0, f"{log.name} exited {rc}:\n{log.read_text()[-3000:]}"


def assert_one_line_error(res: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert res.returncode == code, (res.returncode, res.stdout[-2000:], res.stderr[-2000:])
    assert "Traceback" not in res.stderr, res.stderr
    lines = [ln for ln in res.stderr.strip().splitlines() if ln]
    assert len(lines) == 1, res.stderr
    for w in words:
        assert w in lines[0], lines[0]


@dataclass
class Smoke:
    server: ReplayServerProcess
    port: int
    run_dir: Path
    common: list[str]
    max_size: int


MAX_SIZE = 5000
ACTOR_STEPS = 600
UPDATES = 120
LOSS_EVERY = 10
BATCH = 32


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory):
    """Server + learner + 2 actors (CartPole) run to completion; the server stays up for the
    tests of this module."""
    if not SERVER_BIN.exists():
        pytest.skip(f"{SERVER_BIN} is not built (make replay-server)")
    tmp = tmp_path_factory.mktemp("apex")
    port = free_port("udp")
    server = ReplayServerProcess(
        [
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--table",
            f"apex:max_size={MAX_SIZE},alpha=0.6",
            "--quiet",
        ]
    )
    common = [
        "--log-dir", str(tmp / "runs"), "--run-name", "smoke", "--seed", "3",
        "--replay-server-port", str(port), "--replay-max-size", str(MAX_SIZE),
        "--progress-interval-s", "1", "--log-interval-s", "0.2", "--checkpoint-interval-s", "0.5",
        "--hidden", "32",
    ]  # fmt: skip
    try:
        learner = start(
            "host_agents.learner", *common,
            "--max-steps", str(UPDATES), "--batch-size", str(BATCH), "--learning-starts", "300",
            "--publish-interval", "10", "--target-update-interval", "25",
            "--loss-log-interval", str(LOSS_EVERY),
            "--eval-interval", "60", "--eval-episodes", "2", "--time-budget-s", "80",
            log=tmp / "learner.log",
        )  # fmt: skip
        # the learner publishes its first parameters before it waits for data: start the actors
        # after that, so that their first pull finds them
        with HostReplayClient(ReplayConfig(server_port=port, max_size=MAX_SIZE)) as c:
            for _ in range(300):
                if c.info()["params"][0]["version"] >= 1 or learner.poll() is not None:
                    break
                time.sleep(0.1)
        actors = [
            start(
                "host_agents.actor",
                *common,
                "--actor-index",
                str(i),
                "--num-actors",
                "2",
                "--max-steps",
                str(ACTOR_STEPS),
                "--param-pull-interval",
                "100",
                "--local-buffer",
                "40",
                "--steps-per-s-limit",
                "1500",
                log=tmp / f"actor{i}.log",
            )  # fmt: skip
            for i in range(2)
        ]
        for i, a in enumerate(actors):
            finish(a, tmp / f"actor{i}.log")
        finish(learner, tmp / "learner.log")
        yield Smoke(server, port, tmp / "runs" / "smoke", common, MAX_SIZE)
    finally:
        server.stop()


def summary(run_dir: Path, role: str) -> dict:
    return json.loads((run_dir / role / "summary.json").read_text())


def server_table(port: int) -> dict:
    with HostReplayClient(ReplayConfig(server_port=port, max_size=MAX_SIZE)) as c:
        return c.info()["tables"][0]


@needs_server
def test_smoke_outputs_and_counters(smoke: Smoke) -> None:
    run_dir = smoke.run_dir
    for role, tags in (("actor0", ACTOR_TAGS), ("actor1", ACTOR_TAGS), ("learner", LEARNER_TAGS)):
        d = run_dir / role
        for name in ("metrics.jsonl", "checkpoint.pt", "summary.json"):
            assert (d / name).is_file(), f"{role}: no {name}"
        events = list(d.glob("events.out.tfevents.*"))
        assert events and all(e.stat().st_size > 0 for e in events), f"{role}: no TensorBoard events"
        missing = tags - set(read_metrics(d))
        assert not missing, f"{role}: tags {sorted(missing)} never logged"

    actors = [summary(run_dir, f"actor{i}") for i in range(2)]
    learner = summary(run_dir, "learner")
    table = server_table(smoke.port)
    # every transition an actor says it pushed reached the server, and nothing else did
    assert all(a["env_steps"] == ACTOR_STEPS for a in actors)
    assert table["inserts"] == sum(a["transitions_pushed"] for a in actors)
    # each env step yields exactly one n-step transition; only the unfinished episode's are held back
    for a in actors:
        assert ACTOR_STEPS - 3 <= a["transitions_pushed"] <= ACTOR_STEPS
    # epsilons of the schedule, as logged
    m0, m1 = read_metrics(run_dir / "actor0"), read_metrics(run_dir / "actor1")
    assert m0["actor/epsilon"][-1][1] == pytest.approx(0.4)
    assert m1["actor/epsilon"][-1][1] == pytest.approx(0.4**8)
    assert len(m0["episode/return"]) == actors[0]["episodes"]
    assert sum(v for _, v in m0["episode/length"]) <= ACTOR_STEPS

    # learner: one loss record per LOSS_EVERY updates; the checkpoint has the same count
    assert learner["updates"] == UPDATES and learner["stopped_by"] == "max_steps"
    ml = read_metrics(run_dir / "learner")
    assert len(ml["learner/loss"]) == UPDATES // LOSS_EVERY
    assert [s for s, _ in ml["learner/loss"]] == list(range(LOSS_EVERY, UPDATES + 1, LOSS_EVERY))
    assert load_checkpoint(run_dir / "learner" / "checkpoint.pt")["updates"] == UPDATES
    assert [s for s, _ in ml["eval/return_mean"]] == [60, 120]
    assert learner["eval_return_mean"] is not None and len(learner["eval_returns"]) == 2
    # every update sampled one batch and sent its priorities back
    assert table["updates"] + table["ignored_updates"] >= UPDATES * BATCH
    assert 0 < learner["replay_size"] <= MAX_SIZE
    # parameters: actors only ever saw versions the learner published
    assert all(1 <= a["params_version"] <= learner["params_version"] for a in actors)
    assert learner["params_version"] == UPDATES + 1
    for s in (*actors, learner):
        assert 0.0 <= s["communication_share"] <= 1.0
        assert s["phase_totals_s"]["computation"] > 0


@needs_server
def test_resume_continues_counting(smoke: Smoke) -> None:
    before = summary(smoke.run_dir, "learner")
    ckpt_path = smoke.run_dir / "learner" / "checkpoint.pt"
    first = load_checkpoint(ckpt_path)
    # a resume with no update to make writes back exactly what it loaded: networks, optimizer
    res = run_cli(
        "host_agents.learner", *smoke.common, "--resume", "--max-steps", str(UPDATES),
        "--batch-size", str(BATCH), "--learning-starts", "300", "--eval-interval", "0",
        "--eval-episodes", "0",
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    same = load_checkpoint(ckpt_path)
    for net in ("online", "target"):
        assert same[net].keys() == first[net].keys()
        assert all(torch.equal(same[net][k], first[net][k]) for k in first[net]), f"{net} changed"
    assert not all(torch.equal(first["online"][k], first["target"][k]) for k in first["online"]), (
        "online == target: the comparison above could not tell them apart"
    )
    opt_a, opt_b = first["optimizer"]["state"], same["optimizer"]["state"]
    assert opt_a.keys() == opt_b.keys() and all(
        torch.equal(opt_a[i]["exp_avg"], opt_b[i]["exp_avg"]) for i in opt_a
    )
    assert same["updates"] == UPDATES
    res = run_cli(
        "host_agents.learner", *smoke.common, "--resume", "--max-steps", str(UPDATES + 40),
        "--batch-size", str(BATCH), "--learning-starts", "300", "--eval-interval", "0",
        "--eval-episodes", "1", "--loss-log-interval", str(LOSS_EVERY),
        "--no-io-process",  # the replay calls in a thread of the learner: same outcome
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert f"resumed from {smoke.run_dir / 'learner' / 'checkpoint.pt'}: {UPDATES} updates" in res.stdout
    after = summary(smoke.run_dir, "learner")
    assert after["updates"] == UPDATES + 40 and after["updates_this_run"] == 40
    io = after["replay_io"]  # each of the 40 batches' updates went through the child and was applied
    assert io["updates_applied"] + io["updates_ignored"] == 40 * BATCH and io["calls"] >= 80
    assert after["params_version"] > before["params_version"]
    ckpt = load_checkpoint(smoke.run_dir / "learner" / "checkpoint.pt")
    assert ckpt["updates"] == UPDATES + 40
    # loss records continue after the first run's (metrics.jsonl is appended to)
    steps = [s for s, _ in read_metrics(smoke.run_dir / "learner")["learner/loss"]]
    assert steps[-4:] == [UPDATES + 10, UPDATES + 20, UPDATES + 30, UPDATES + 40]

    inserts = server_table(smoke.port)["inserts"]
    res = run_cli(
        "host_agents.actor", *smoke.common, "--resume", "--actor-index", "0", "--num-actors", "2",
        "--max-steps", str(ACTOR_STEPS + 200),
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    a0 = summary(smoke.run_dir, "actor0")
    assert a0["env_steps"] == ACTOR_STEPS + 200 and a0["env_steps_this_run"] == 200
    assert server_table(smoke.port)["inserts"] > inserts
    # the resumed actor got the resumed learner's newest parameters
    assert a0["params_version"] == after["params_version"]


# ---------------------------------------------------------------- bad configuration


def test_unknown_environment_is_one_line() -> None:
    flags = ("--env", "CartPoel-v1", "--replay-timeout-s", "0.05", "--replay-max-tries", "1")
    for res in run_clis(("host_agents.actor", *flags), ("host_agents.learner", *flags)):
        assert_one_line_error(res, 2, "unknown environment", "CartPole-v1")


def test_batch_larger_than_replay_is_one_line() -> None:
    res = run_cli("host_agents.learner", "--batch-size", "512", "--replay-max-size", "100")
    assert_one_line_error(res, 2, "batch_size 512", "larger than the replay")


def test_unreachable_server_is_one_line(tmp_path: Path) -> None:
    port = free_port("udp")  # nobody listens there
    flags = ["--replay-server-port", str(port), "--replay-timeout-s", "0.05", "--replay-max-tries", "2"]
    flags += ["--log-dir", str(tmp_path), "--max-steps", "100"]
    actor = ("host_agents.actor", *flags, "--local-buffer", "10")
    for res in run_clis(("host_agents.learner", *flags), actor):
        assert_one_line_error(res, 1, "no reply after 2 tries", f"127.0.0.1:{port}")


@needs_server
def test_table_size_mismatch_is_one_line(smoke: Smoke, tmp_path: Path) -> None:
    res = run_cli(
        "host_agents.learner", "--replay-server-port", str(smoke.port), "--replay-max-size", "999",
        "--batch-size", "8", "--learning-starts", "100", "--log-dir", str(tmp_path),
    )  # fmt: skip
    assert_one_line_error(res, 2, "max_size=5000", "--replay-max-size is 999")


# ---------------------------------------------------------------- switch path


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.timeout(240)
@needs_server
def test_switch_path_in_namespaces(tmp_path: Path) -> None:
    """Server on host 0, learner on host 1, actors on hosts 2-3 of a star topology; the priorities
    live in the switch (--replay-backend switch)."""
    from topologies.netns import netns_unavailable
    from topologies.testbed import star

    reason = netns_unavailable()
    if reason:
        pytest.skip(reason)
    size, batch, updates, steps = 1024, 16, 30, 300
    with star(4) as tb:
        server_ip = tb.workers[0].ip
        table = f"apex:max_size={size},alpha=0.6,priorities=switch"
        with ReplayServerProcess(
            ["--bind", server_ip, "--table", table, "--quiet"], ns=tb.workers[0].host.ns
        ):
            tb.root.controller.replay.install_table(0, size)
            common = [
                "--log-dir", str(tmp_path / "runs"), "--run-name", "sw", "--hidden", "16",
                "--replay-backend", "switch", "--replay-server-ip", server_ip, "--replay-max-size", str(size),
                "--replay-timeout-s", "0.5", "--progress-interval-s", "2", "--log-interval-s", "0.5",
                "--time-budget-s", "150",
            ]  # fmt: skip
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}

            def launch(host: int, module: str, *args: str) -> subprocess.Popen[str]:
                log = open(tmp_path / f"{module}{host}.log", "w")  # noqa: SIM115
                argv = [PY, "-m", module, *common, *args]
                return tb.workers[host].host.ns.popen(
                    argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env
                )

            learner = launch(
                1, "host_agents.learner", "--max-steps", str(updates), "--batch-size", str(batch),
                "--learning-starts", "200", "--publish-interval", "10", "--eval-interval", "0",
                "--eval-episodes", "1", "--loss-log-interval", "5",
            )  # fmt: skip
            actors = [
                launch(2 + i, "host_agents.actor", "--actor-index", str(i), "--num-actors", "2",
                       "--max-steps", str(steps), "--local-buffer", "50", "--param-pull-interval", "100")
                for i in range(2)
            ]  # fmt: skip
            for i, a in enumerate(actors):
                finish(a, tmp_path / f"host_agents.actor{2 + i}.log", timeout=180)
            finish(learner, tmp_path / "host_agents.learner1.log", timeout=180)
            counters = tb.root.controller.replay.counters(0)
    run_dir = tmp_path / "runs" / "sw"
    learner_sum = summary(run_dir, "learner")
    actor_sums = [summary(run_dir, f"actor{i}") for i in range(2)]
    assert learner_sum["updates"] == updates
    assert len(read_metrics(run_dir / "learner")["learner/loss"]) == updates // 5
    # the switch drew every sampled item and took every priority update
    assert counters["samples"] >= updates * batch, counters
    assert counters["updates"] >= updates * batch, counters
    assert all(a["transitions_pushed"] >= steps - 3 for a in actor_sums)
    assert all(a["params_version"] <= learner_sum["params_version"] for a in actor_sums)
