"""Data-parallel workers (host_agents.worker): the algorithms' pieces against hand computations,
local runs (logs, checkpoint, resume), one-line errors for bad configurations, the parameter
server baseline over loopback, and workers in namespaces over the software switch (sync: all
models identical and the switch's counter matches the allreduces; async: staleness logged).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from host_agents.agg_protocol import DEFAULT_VALUES_PER_PACKET as VALUES_PER_PACKET
from host_agents.dp_algorithms import (
    PARAM_VERSION_FLAG,
    StalenessReference,
    a2c_loss,
    chunk_kinds,
    chunk_weights,
    gae,
    is_weights,
    ppo_loss,
)
from host_agents.metrics import read_metrics
from host_agents.param_server import ParameterServer

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
WAIT_S = 100

# ------------------------------------------------------------------------------------ units


def test_gae_matches_a_hand_computation() -> None:
    # gamma 0.9, lambda 0.8; step 1 ends its episode (no bootstrap through it)
    adv, ret = gae([1, 1, 1], [0.5, 0.4, 0.3], [0, 1, 0], last_value=0.2, gamma=0.9, lam=0.8)
    # t=2: 1 + .9*.2 - .3 = .88 ; t=1: 1 - .4 = .6 ; t=0: 1 + .9*.4 - .5 + .9*.8*.6 = 1.292
    np.testing.assert_allclose(adv, [1.292, 0.6, 0.88], rtol=1e-6)
    np.testing.assert_allclose(ret, [1.792, 1.0, 1.18], rtol=1e-6)
    # two environments side by side are independent columns
    adv2, _ = gae(
        np.array([[1, 0], [1, 0], [1, 1]]),
        np.array([[0.5, 0], [0.4, 0], [0.3, 0]]),
        np.array([[0, 0], [1, 0], [0, 0]]),
        np.array([0.2, 0.0]),
        0.9,
        0.8,
    )
    np.testing.assert_allclose(adv2[:, 0], adv, rtol=1e-6)
    np.testing.assert_allclose(adv2[:, 1], [0.72**2, 0.72, 1.0], rtol=1e-6)


def test_staleness_scaling_rule_on_crafted_chunk_info() -> None:
    """w_c = min(1, (1 + s_ref) / (1 + s_c)) with s_c = V - (lo + hi) / 2, factors w_c / n_c."""
    count = np.array([4, 3, 0, 3])
    lo = np.array([5, 4, 0, 2])
    hi = np.array([5, 5, 0, 5])
    numel = 4 * VALUES_PER_PACKET - 3
    # V = 5; staleness 0, 0.5, missing, 1.5; reference 0.5: weights 1 (capped), 1, -, 1.5 / 2.5
    w = chunk_weights(
        count, lo, hi, own_version=5, numel=numel, values_per_chunk=VALUES_PER_PACKET, reference=0.5
    )
    per_chunk = [1 / 4, 1 / 3, 0.0, 0.6 / 3]
    expected = np.repeat(per_chunk, VALUES_PER_PACKET)[:numel]
    np.testing.assert_allclose(w.factors.numpy(), expected, rtol=1e-6)
    assert w.staleness_mean == pytest.approx(2 / 3)
    assert w.contributors_mean == pytest.approx(10 / 3)
    assert w.missing == 1
    assert w.weight_mean == pytest.approx((1 + 1 + 0.6) / 3)
    # no history: the call's own mean staleness (2/3) is the reference
    own = chunk_weights(count, lo, hi, 5, numel, VALUES_PER_PACKET)
    np.testing.assert_allclose(
        own.factors.numpy()[::VALUES_PER_PACKET], [1 / 4, 1 / 3, 0, (5 / 3) / 2.5 / 3], rtol=1e-6
    )
    # reference 0: every stale chunk is down-weighted; never amplified above the plain mean
    zero = chunk_weights(count, lo, hi, 5, numel, VALUES_PER_PACKET, reference=0.0)
    np.testing.assert_allclose(
        zero.factors.numpy()[::VALUES_PER_PACKET], [1 / 4, 1 / 1.5 / 3, 0, 1 / 2.5 / 3], rtol=1e-6
    )
    off = chunk_weights(count, lo, hi, 5, numel, VALUES_PER_PACKET, staleness_scaling=False, reference=0.0)
    np.testing.assert_allclose(off.factors.numpy()[::VALUES_PER_PACKET], [1 / 4, 1 / 3, 0, 1 / 3], rtol=1e-6)
    # the newest version known counts, not only this worker's (a lagging worker scales alike)
    lag = chunk_weights(
        count, lo, hi, own_version=3, numel=numel, values_per_chunk=VALUES_PER_PACKET, reference=0.5
    )
    np.testing.assert_allclose(lag.factors.numpy(), expected, rtol=1e-6)
    # a worker that knows a newer version (7) sees every chunk 2 calls staler
    ahead = chunk_weights(count, lo, hi, 7, numel, VALUES_PER_PACKET, reference=0.5)
    np.testing.assert_allclose(
        ahead.factors.numpy()[::VALUES_PER_PACKET],
        [1.5 / 3 / 4, 1.5 / 3.5 / 3, 0, 1.5 / 4.5 / 3],
        rtol=1e-6,
    )
    # synchronous: every chunk complete, every version equal: exactly the plain mean, any reference
    sync = chunk_weights(
        np.full(4, 4), np.full(4, 9), np.full(4, 9), 9, numel, VALUES_PER_PACKET, reference=3.0
    )
    assert torch.equal(sync.factors, torch.full((numel,), 0.25))


def test_staleness_reference_is_a_running_average() -> None:
    ref = StalenessReference(decay=0.9)
    assert ref.value is None
    ref.update(2.0)
    assert ref.value == pytest.approx(2.0)
    ref.update(0.0)
    assert ref.value == pytest.approx(1.8)


def test_chunk_kinds_tell_gradients_parameters_and_mixtures_apart() -> None:
    F = PARAM_VERSION_FLAG
    count = np.array([3, 3, 2, 0])
    lo = np.array([4, F | 5, 4, 0])
    hi = np.array([5, F | 5, F | 5, 0])  # gradients, parameters, both kinds, missing
    grads, params = chunk_kinds(count, lo, hi)
    assert grads.tolist() == [True, False, False, False]
    assert params.tolist() == [False, True, False, False]


def test_importance_weights_are_truncated() -> None:
    logp = torch.log(torch.tensor([0.5, 0.9, 0.1]))
    mu = torch.log(torch.tensor([0.5, 0.3, 0.4]))
    np.testing.assert_allclose(is_weights(logp, mu, 2.0).numpy(), [1.0, 2.0, 0.25], rtol=1e-6)
    np.testing.assert_allclose(is_weights(logp, mu, 0.0).numpy(), [1.0, 1.0, 1.0])


class _Fixed(torch.nn.Module):
    """A 'network' whose logits and values are parameters (one observation row per sample)."""

    def __init__(self, logits: torch.Tensor) -> None:
        super().__init__()
        self.logits = torch.nn.Parameter(logits.clone())
        self.v = torch.nn.Parameter(torch.zeros(logits.shape[0]))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.logits, self.v


def test_a2c_policy_loss_weights_samples_by_truncated_ratio() -> None:
    logits = torch.log(torch.tensor([[0.5, 0.5], [0.9, 0.1], [0.2, 0.8]]))
    model = _Fixed(logits)
    actions = torch.tensor([0, 0, 1])
    mu = torch.log(torch.tensor([0.5, 0.3, 0.4]))  # ratios 1, 3, 2
    adv = torch.tensor([1.0, -2.0, 0.5])
    ret = torch.zeros(3)
    _, stats = a2c_loss(model, torch.zeros(3, 1), actions, mu, adv, ret, ent_coef=0.0, rho_bar=1.5)
    logp = torch.log(torch.tensor([0.5, 0.9, 0.8]))
    expected = -(torch.tensor([1.0, 1.5, 1.5]) * adv * logp).mean()
    assert stats["policy_loss"] == pytest.approx(expected.item(), rel=1e-5)
    _, untruncated = a2c_loss(model, torch.zeros(3, 1), actions, mu, adv, ret, ent_coef=0.0, rho_bar=0.0)
    assert untruncated["policy_loss"] == pytest.approx(-(adv * logp).mean().item(), rel=1e-5)


def test_ppo_truncation_bounds_the_negative_advantage_term() -> None:
    """ratio 9 with a negative advantage: unbounded PPO keeps the 9 x A term (and its gradient);
    with rho_bar 2 the ratio is held at 2 and the term has no gradient."""
    model = _Fixed(torch.log(torch.tensor([[0.9, 0.1]])))
    args = (
        torch.zeros(1, 1),
        torch.tensor([0]),
        torch.log(torch.tensor([0.1])),
        torch.tensor([-1.0]),
        torch.zeros(1),
    )
    loss, stats = ppo_loss(model, *args, ent_coef=0.0, vf_coef=0.0, normalize_advantages=False)
    assert stats["policy_loss"] == pytest.approx(9.0, rel=1e-5)
    loss.backward()
    assert model.logits.grad.abs().sum() > 0
    model.logits.grad = None
    loss, stats = ppo_loss(model, *args, ent_coef=0.0, vf_coef=0.0, rho_bar=2.0, normalize_advantages=False)
    assert stats["policy_loss"] == pytest.approx(2.0, rel=1e-5)
    loss.backward()
    assert model.logits.grad.abs().sum() == 0


# ------------------------------------------------------------------------------- processes


def _worker(args: list[str], ns=None, **popen) -> subprocess.Popen:  # type: ignore[no-untyped-def]
    argv = [PY, "-m", "host_agents.worker", "--no-tensorboard", "--progress-interval-s", "0", *args]
    if ns is not None:
        return ns.popen(argv)
    return subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
    )


def _finish(procs: list[subprocess.Popen], timeout: float = WAIT_S) -> list[str]:
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            assert p.returncode == 0, f"worker exited {p.returncode}: {err[-3000:]}"
            outs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return outs


def _summary(run: Path, i: int) -> dict:
    return json.loads((run / f"worker-{i}" / "summary.json").read_text())


PG_TAGS = {
    "episode/return",
    "train/policy_loss",
    "train/value_loss",
    "train/entropy",
    "env/steps_per_s",
    "time/allreduce",
    "time/computation",
    "time/communication_share",
}


def test_local_ppo_logs_checkpoints_and_resumes(tmp_path: Path) -> None:
    common = [
        "--comm",
        "local",
        "--log-dir",
        str(tmp_path),
        "--run-name",
        "loc",
        "--rollout-steps",
        "64",
        "--eval-interval",
        "2",
        "--eval-episodes",
        "2",
    ]
    _finish([_worker([*common, "--max-steps", "300"])])
    run = tmp_path / "loc" / "worker-0"
    metrics = read_metrics(run)
    assert PG_TAGS <= set(metrics), f"missing tags: {PG_TAGS - set(metrics)}"
    assert "eval/return_mean" in metrics
    first = json.loads((run / "summary.json").read_text())
    # 5 iterations of 64 steps reach 300; the 5th stops after its first minibatch's update
    assert (
        first["env_steps"] == 320 and first["updates"] == 4 * 16 + 1 and first["stop_reason"] == "max_steps"
    )
    assert len(first["eval_returns"]) == 2 and first["eval_return_mean"] == np.mean(first["eval_returns"])
    assert (run / "checkpoint.pt").exists()
    assert all(v >= 0 for v in first["phase_totals_s"].values())
    totals = first["phase_totals_s"]
    assert totals["evaluate"] > 0  # periodic and final evaluations: neither computation nor communication
    assert first["communication_share"] == pytest.approx(
        totals["allreduce"] / (totals["allreduce"] + totals["computation"])
    )
    _finish([_worker([*common, "--max-steps", "500", "--resume"])])
    second = json.loads((run / "summary.json").read_text())
    assert second["env_steps"] == 512 and second["updates"] > first["updates"]
    steps = [step for step, _ in read_metrics(run)["train/updates"]]
    assert min(steps) <= 320 < max(steps), "a resumed run appends to metrics.jsonl"


def test_resume_with_nothing_left_to_do_writes_what_it_loaded(tmp_path: Path) -> None:
    """Parameters, optimizer, counters and random streams come back exactly: a run resumed at its
    --max-steps makes no update and saves the checkpoint it loaded (environments take new seeds)."""
    import torch

    algos = ("ppo", "dqn")
    common = {
        algo: [
            "--algo", algo, "--comm", "local", "--log-dir", str(tmp_path), "--run-name", algo,
            "--rollout-steps", "64", "--max-steps", "256", "--learning-starts", "64",
            "--eval-episodes", "1", "--num-envs", "2",
        ]  # fmt: skip
        for algo in algos
    }
    ckpts = {algo: tmp_path / algo / "worker-0" / "checkpoint.pt" for algo in algos}
    _finish([_worker(common[algo]) for algo in algos])  # the two runs side by side (separate dirs)
    before_all = {algo: torch.load(ckpts[algo], weights_only=False) for algo in algos}
    _finish([_worker([*common[algo], "--resume"]) for algo in algos])
    for algo in algos:
        before = before_all[algo]
        assert before["counters"]["updates"] > 0
        after = torch.load(ckpts[algo], weights_only=False)
        for name in ("model", "target") if algo == "dqn" else ("model",):
            assert before[name].keys() == after[name].keys()
            for k in before[name]:
                assert torch.equal(before[name][k], after[name][k]), f"{algo} {name} {k}"
        opt_a, opt_b = before["optimizer"], after["optimizer"]
        assert opt_a["param_groups"] == opt_b["param_groups"]
        for i, st in opt_a["state"].items():
            for k, v in st.items():
                assert torch.equal(v, opt_b["state"][i][k]), f"{algo} optimizer {i} {k}"
        assert before["rng"]["numpy"] == after["rng"]["numpy"]
        assert torch.equal(before["rng"]["torch"], after["rng"]["torch"])
        expected = dict(before["counters"], env_seeds=before["counters"]["env_seeds"] + 2)
        assert after["counters"] == expected  # the resumed environments took 2 new seeds
        assert _summary(tmp_path / algo, 0)["stop_reason"] == "max_steps"


def test_dqn_resume_refills_its_replay_before_training(tmp_path: Path) -> None:
    """The replay is not saved: a resumed DQN worker trains only once its own replay holds
    --learning-starts transitions again, not at once because the restored env_steps passed it."""
    common = [
        "--algo", "dqn", "--comm", "local", "--log-dir", str(tmp_path), "--run-name", "dqn",
        "--rollout-steps", "50", "--learning-starts", "100", "--eval-episodes", "0",
    ]  # fmt: skip
    _finish([_worker([*common, "--max-steps", "300"])])
    assert _summary(tmp_path / "dqn", 0)["updates"] == (300 - 100) // 4 + 1
    _finish([_worker([*common, "--max-steps", "400", "--resume"])])
    # steps 301..400 refill the replay to 100 transitions at step 400: one more update there
    assert _summary(tmp_path / "dqn", 0)["updates"] == (300 - 100) // 4 + 2


def test_worker_seeds_and_evaluation_seeds_do_not_collide() -> None:
    from host_agents.worker import Worker, WorkerConfig

    def worker(seed: int, index: int) -> Worker:
        cfg = WorkerConfig(seed=seed, worker=index, num_workers=2, comm="ps", eval_episodes=5)
        return Worker(cfg)

    a, b = worker(1000, 0), worker(0, 1)
    assert a.own_seed != b.own_seed and not np.array_equal(a.obs, b.obs)
    final = set(range(a.eval_seed(None), a.eval_seed(None) + 5))
    periodic = [set(range(a.eval_seed(k), a.eval_seed(k) + 5)) for k in range(3)]
    assert not final & set().union(*periodic)
    assert all(not periodic[i] & periodic[j] for i in range(3) for j in range(i + 1, 3))
    assert a.eval_seed(0) == worker(1000, 1).eval_seed(0)  # the same on every worker


def test_dqn_on_atari_stores_uint8_frames_and_trains(tmp_path: Path) -> None:
    """The replay keeps the environment's uint8 [4, 84, 84] frames (the CNN's input); a replay
    that would take GBs is refused with the size it would need."""
    from host_agents.worker import Worker, WorkerConfig

    cfg = WorkerConfig(
        env="ALE/Breakout-v5", algo="dqn", buffer_size=200, batch_size=8, learning_starts=32,
        rollout_steps=40, log_dir=str(tmp_path), tensorboard=False, progress_interval_s=0,
        max_steps=80, eval_episodes=0,
    )  # fmt: skip
    w = Worker(cfg)
    assert w.replay is not None and w.replay.obs.shape == (200, 4, 84, 84) and w.replay.obs.dtype == np.uint8
    summary = w.run()
    assert summary["updates"] == (80 - 32) // 4 + 1 and summary["stop_reason"] == "max_steps"
    p = _worker([*"--algo dqn --env ALE/Breakout-v5 --buffer-size 100000 --log-dir".split(), str(tmp_path)])
    _, err = p.communicate(timeout=60)
    assert p.returncode == 2 and "would need 5.3 GiB of replay" in err.strip().splitlines()[-1], err


def test_dqn_time_budget_during_warm_up_stops_every_worker_together(tmp_path: Path) -> None:
    """Worker 1 runs out of time during the DQN warm-up (no call yet), worker 0 does not: the
    stop waits for the first call's control chunk, so worker 0 is not left alone in it."""
    with ParameterServer("127.0.0.1", 0, 2, round_timeout_s=30) as server:
        common = (
            "--algo dqn --comm ps --num-workers 2 --run-name warm --rollout-steps 50 --learning-starts 100 "
            "--eval-episodes 0 --comm-timeout-s 20 --time-budget-s 1"
        ).split()
        procs = [
            _worker(
                [*common, "--ps", f"127.0.0.1:{server.port}", "--worker", str(i), "--log-dir", str(tmp_path)]
                + (["--slowdown-s", "1.5"] if i == 1 else [])
            )
            for i in range(2)
        ]
        _finish(procs)
    s = [_summary(tmp_path / "warm", i) for i in range(2)]
    assert s[0]["updates"] == s[1]["updates"] == 1
    assert s[1]["stop_reason"] == "time_budget" and s[0]["params_sha256"] == s[1]["params_sha256"]


def test_local_a2c_and_dqn_train(tmp_path: Path) -> None:
    a2c = _worker(
        [
            "--algo",
            "a2c",
            "--log-dir",
            str(tmp_path),
            "--run-name",
            "a2c",
            "--max-steps",
            "200",
            "--rollout-steps",
            "20",
            "--eval-episodes",
            "1",
        ]
    )
    dqn = _worker(
        [
            "--algo",
            "dqn",
            "--log-dir",
            str(tmp_path),
            "--run-name",
            "dqn",
            "--max-steps",
            "300",
            "--learning-starts",
            "100",
            "--rollout-steps",
            "50",
            "--eval-episodes",
            "1",
        ]
    )
    _finish([a2c, dqn])
    s = _summary(tmp_path / "a2c", 0)
    assert s["updates"] == 10 and s["algo"] == "a2c"
    assert PG_TAGS <= set(read_metrics(tmp_path / "a2c" / "worker-0"))
    s = _summary(tmp_path / "dqn", 0)
    assert s["updates"] == (300 - 100) // 4 + 1  # an update at every 4th step from step 100 on
    assert {"train/loss", "train/epsilon", "episode/return"} <= set(
        read_metrics(tmp_path / "dqn" / "worker-0")
    )


# case -> (flags, exit code, text of the one error line)
BAD_CONFIGS: dict[str, tuple[list[str], int, str]] = {
    "unknown-env": (["--env", "NoSuchEnv-v9"], 2, "unknown environment"),
    "async-ps": (
        ["--mode", "async", "--comm", "ps", "--num-workers", "2", "--threshold", "1"],
        2,
        "needs --comm switch",
    ),
    "threshold-all": (
        ["--mode", "async", "--comm", "switch", "--num-workers", "4", "--threshold", "4"],
        2,
        "--threshold",
    ),
    "threshold-sync": (["--comm", "switch", "--num-workers", "4", "--threshold", "3"], 2, "--mode async"),
    "batch-vs-replay": (
        ["--algo", "dqn", "--batch-size", "100", "--buffer-size", "50"],
        2,
        "larger than the replay",
    ),
    "no-switch": (
        [
            "--comm",
            "switch",
            "--switch",
            "127.0.0.1:9",
            "--bind",
            "127.0.0.1:0",
            "--num-workers",
            "2",
            "--agg-timeout-s",
            "0.05",
            "--agg-max-tries",
            "3",
            "--rollout-steps",
            "8",
        ],
        1,
        "check values per packet",
    ),
    "no-ps": (["--comm", "ps", "--ps", "127.0.0.1:1", "--num-workers", "2"], 1, "unreachable"),
    "bad-device": (["--device", "gpu"], 2, "unknown device 'gpu'"),
    "bad-ps-port": (["--comm", "ps", "--num-workers", "2", "--ps", "127.0.0.1:abc"], 2, "--ps: bad address"),
    "bad-gloo-port": (
        ["--comm", "gloo", "--num-workers", "2", "--gloo-init", "h:x"],
        2,
        "--gloo-init: bad address",
    ),
    "target-no-eval-interval": (["--target-return", "100", "--eval-interval", "0"], 2, "--target-return"),
    "target-no-eval-episodes": (["--target-return", "100", "--eval-episodes", "0"], 2, "--target-return"),
    "bad-width": (["--values-per-packet", "48"], 2, "--values-per-packet must be one of 32, 64, 256"),
    "width-too-small-for-control": (
        ["--comm", "ps", "--num-workers", "32", "--values-per-packet", "32"],
        2,
        "--num-workers 32 needs --values-per-packet of at least 34",
    ),
}


# Runs host_agents.worker's main() once per case in one process (argv: JSON {case: args}) and
# prints {case: [exit code, stderr]}: one import of torch for all the cases instead of one each
# (~2 s of CPU per process on the 2-CPU machine).
_MAIN_PER_CASE = """
import contextlib, io, json, sys
from host_agents.worker import main
out = {}
for case, argv in json.loads(sys.argv[1]).items():
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's own errors
            code = e.code
    out[case] = [code, err.getvalue()]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def bad_config_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str]]:
    """Every BAD_CONFIGS case: case -> (exit code, stderr). The first runs as `python -m
    host_agents.worker` (the entry point's exit code and stderr), the others through main() in
    one other process, beside it."""
    base = ["--no-tensorboard", "--progress-interval-s", "0"]
    argv = {case: [*BAD_CONFIGS[case][0], *base, "--log-dir", str(tmp_path_factory.mktemp(case))]
            for case in BAD_CONFIGS}  # fmt: skip
    first, *rest = BAD_CONFIGS
    cli = _worker([*BAD_CONFIGS[first][0], "--log-dir", str(tmp_path_factory.mktemp(first + "-cli"))])
    child = subprocess.Popen([PY, "-c", _MAIN_PER_CASE, json.dumps({c: argv[c] for c in rest})], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err[-3000:]
    runs = {case: (code, text) for case, (code, text) in json.loads(out).items()}
    _, cli_err = cli.communicate(timeout=60)
    runs[first] = (cli.returncode, cli_err)
    return runs


@pytest.mark.parametrize("case", list(BAD_CONFIGS))
def test_bad_configuration_is_one_line_and_nonzero(
    bad_config_runs: dict[str, tuple[int, str]], case: str
) -> None:
    code, text = BAD_CONFIGS[case][1:]
    returncode, err = bad_config_runs[case]
    assert returncode == code, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m host_agents.worker: ") and text in lines[0], err


def test_parameter_server_baseline_keeps_workers_identical(tmp_path: Path) -> None:
    with ParameterServer("127.0.0.1", 0, 2, round_timeout_s=30) as server:
        port = server.port
        procs = [
            _worker(
                [
                    "--comm",
                    "ps",
                    "--ps",
                    f"127.0.0.1:{port}",
                    "--num-workers",
                    "2",
                    "--worker",
                    str(i),
                    "--log-dir",
                    str(tmp_path),
                    "--run-name",
                    "ps",
                    "--max-steps",
                    "256",
                    "--eval-episodes",
                    "2",
                ]
            )
            for i in range(2)
        ]
        _finish(procs)
        rounds = server.rounds_completed
    s = [_summary(tmp_path / "ps", i) for i in range(2)]
    assert s[0]["params_sha256"] == s[1]["params_sha256"]
    assert s[0]["updates"] == s[1]["updates"] == rounds == 16 + 1
    assert s[0]["eval_returns"] == s[1]["eval_returns"]
    assert s[0]["episodes"] > 0 and s[1]["episodes"] > 0


# --------------------------------------------------------------------- switch, in namespaces


@pytest.fixture(scope="module")
def testbed() -> Iterator:
    from topologies.netns import netns_unavailable

    if (reason := netns_unavailable()) is not None:
        pytest.skip(reason)
    from topologies.testbed import star

    with star(3) as tb:
        yield tb


def _switch_workers(
    tb, tmp: Path, run: str, job: int, extra: list[str], slowdown: dict[int, float] | None = None
):  # type: ignore[no-untyped-def]
    from topologies.testbed import switch_ip

    procs = []
    for w in tb.workers:
        args = [
            "--comm",
            "switch",
            "--switch",
            switch_ip(0),
            "--bind",
            f"{w.ip}:40000",
            "--job",
            str(job),
            "--slots",
            "32",
            "--worker",
            str(w.worker_id),
            "--num-workers",
            str(len(tb.workers)),
            "--log-dir",
            str(tmp),
            "--run-name",
            run,
            "--eval-episodes",
            "2",
            "--agg-timeout-s",
            "0.1",
            "--agg-max-tries",
            "100",
            *extra,
        ]
        if slowdown and w.worker_id in slowdown:
            args += ["--slowdown-s", str(slowdown[w.worker_id])]
        procs.append(_worker(args, ns=w.host.ns))
    return procs


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.timeout(200)
def test_sync_switch_workers_stay_identical_and_counters_match(testbed, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    testbed.install_job(1, slot_base=0, num_slots=32)
    _finish(
        _switch_workers(
            testbed, tmp_path, "sync", 1, ["--max-steps", "256", "--checkpoint-interval-s", "0.5"]
        )
    )
    counters = testbed.root.controller.jobs.counters(1)
    s = [_summary(tmp_path / "sync", i) for i in range(3)]
    assert len({x["params_sha256"] for x in s}) == 1, "synchronous workers ended with different models"
    assert len({x["updates"] for x in s}) == 1 and s[0]["updates"] == 17
    assert len({tuple(x["eval_returns"]) for x in s}) == 1
    chunks = s[0]["packets_per_allreduce"]
    redone = {x["comm_counters"]["redone"] for x in s}
    assert len(redone) == 1, "the workers redid different rounds"
    # value packets; a header-only bootstrap round per slot in the first call; later calls
    # predict the first exponents, and each miss costs the missed round and a bootstrap more
    assert counters["aggregated"] == 3 * (s[0]["updates"] * chunks + min(32, chunks) + 2 * redone.pop())
    for i, x in enumerate(s):
        assert x["comm_counters"]["allreduce_calls"] == x["updates"]
        assert x["phase_totals_s"]["allreduce"] > 0 and 0 < x["communication_share"] < 1
        metrics = read_metrics(tmp_path / "sync" / f"worker-{i}")
        assert PG_TAGS <= set(metrics)
        assert (tmp_path / "sync" / f"worker-{i}" / "checkpoint.pt").exists()


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.timeout(200)
def test_async_switch_workers_log_staleness_and_all_finish(testbed, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Threshold 2 of 3 with worker 2 a straggler: every worker ends (no hang), the chunks hold 2
    contributions on average, and staleness is logged."""
    testbed.install_job(2, slot_base=64, num_slots=32, threshold=2)
    extra = ["--mode", "async", "--threshold", "2", "--max-steps", "256", "--is-truncation", "2"]
    _finish(_switch_workers(testbed, tmp_path, "async", 2, extra, slowdown={2: 0.3}))
    s = [_summary(tmp_path / "async", i) for i in range(3)]
    logged = 0
    for i, x in enumerate(s):
        assert x["mode"] == "async" and x["updates"] > 0 and x["stop_reason"]
        metrics = read_metrics(tmp_path / "async" / f"worker-{i}")
        assert "agg/missing_chunks" in metrics
        # on a loaded machine one worker may fall behind on every call (all chunks missing:
        # nothing to say about staleness); at least the threshold's worth of workers got results
        if "agg/staleness_mean" in metrics:
            logged += 1
            contributors = [v for _, v in metrics["agg/contributors_mean"]]
            assert all(2 - 1e-9 <= c <= 3 for c in contributors), contributors
            assert all(v >= 0 for _, v in metrics["agg/staleness_mean"])
    assert logged >= 2
    # 32 gradient calls with --resync-interval 16: the workers in step averaged their parameters
    resynced = [i for i, x in enumerate(s) if x["resyncs"] > 0]
    assert len(resynced) >= 2, [x["resyncs"] for x in s]
    for i in resynced:
        metrics = read_metrics(tmp_path / "async" / f"worker-{i}")
        assert all(0 <= v < 1 for _, v in metrics["agg/param_divergence"])
