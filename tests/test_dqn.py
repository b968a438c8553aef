"""Single-process DQN baseline (host_agents.dqn).

Its hyperparameter defaults against the Ape-X learner's, the epsilon schedule, the local replay
(ring wraparound, uniform and prioritized sampling, importance weights, a slot rewritten after a
priority update), a short real run on CartPole writing the summary the benchmark reads (with and
without reaching a target), and bad command lines ending with one line and exit code 2. Whether
it learns CartPole to 475 is the benchmark's question (bench.learning_apex), not a test's.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from host_agents.cli import ConfigError
from host_agents.dqn import DQNConfig, LocalReplay, linear_epsilon, run_dqn
from host_agents.experience import Transition
from host_agents.learner import LearnerConfig

REPO = Path(__file__).resolve().parent.parent

# what bench.learning_apex reads from summary.json
SUMMARY_KEYS = {
    "env_steps", "updates", "episodes", "evaluations", "reached_target", "reached_at", "wall_time_s",
    "env_steps_per_s", "updates_per_s", "phase_totals_s", "eval_return_mean", "stopped_by",
}  # fmt: skip


def _t(i: int, obs_dim: int = 4) -> Transition:
    """A transition whose every field names i."""
    obs = np.full(obs_dim, i, np.float32)
    return Transition(obs, i % 2, float(i), obs + 0.5, 0.9)


def test_shared_hyperparameters_default_to_the_learners() -> None:
    """'same hyperparameters': every field the DQN shares with the Ape-X learner has its default."""
    learner = {f.name: f.default for f in dataclasses.fields(LearnerConfig)}
    shared = [f for f in dataclasses.fields(DQNConfig) if f.name in learner]
    assert {"lr", "batch_size", "gamma", "n_step", "target_update_interval", "hidden", "beta"} <= {
        f.name for f in shared
    }
    for f in shared:
        if f.name != "max_steps":  # env steps here, updates there
            assert f.default == learner[f.name], f.name


def test_linear_epsilon() -> None:
    assert linear_epsilon(0, 1.0, 0.05, 100) == 1.0
    assert linear_epsilon(50, 1.0, 0.05, 100) == pytest.approx(0.525)
    assert linear_epsilon(100, 1.0, 0.05, 100) == 0.05
    assert linear_epsilon(10**6, 1.0, 0.05, 100) == 0.05
    assert linear_epsilon(0, 1.0, 0.05, 0) == 0.05


def test_ring_wraps_around_and_keeps_the_newest() -> None:
    r = LocalReplay(5, (4,), np.dtype(np.float32), alpha=None, seed=0)
    slots = [r.add(_t(i)) for i in range(7)]
    assert slots == [0, 1, 2, 3, 4, 0, 1]
    assert len(r) == 5 and r.inserted == 7
    stored = sorted(r.returns.tolist())
    assert stored == [2.0, 3.0, 4.0, 5.0, 6.0]  # 0 and 1 were overwritten by 5 and 6
    idx, batch, w = r.sample(64)
    assert set(batch.returns.tolist()) <= set(stored)
    assert np.all(batch.obs[:, 0] == batch.returns) and np.all(batch.next_obs == batch.obs + 0.5)
    assert np.all(batch.actions == batch.returns.astype(np.int64) % 2)
    assert np.all(w == 1.0) and w.dtype == np.float32


def test_uniform_sampling_sees_only_stored_items_before_the_ring_is_full() -> None:
    r = LocalReplay(100, (4,), np.dtype(np.float32), alpha=None, seed=1)
    for i in range(3):
        r.add(_t(i))
    _, batch, _ = r.sample(300)
    assert set(batch.returns.tolist()) == {0.0, 1.0, 2.0}
    with pytest.raises(ValueError, match="empty"):
        LocalReplay(4, (4,), np.dtype(np.float32), alpha=None).sample(2)


def test_prioritized_sampling_is_proportional_with_weights() -> None:
    alpha, beta = 0.5, 0.4
    r = LocalReplay(4, (4,), np.dtype(np.float32), alpha=alpha, seed=2)
    for i in range(4):
        r.add(_t(i))
    idx, _, w = r.sample(4, beta)
    assert np.all(w == 1.0)  # all at the initial priority 1
    r.update_priorities(np.array([0, 1, 2, 3]), np.array([1.0, 1.0, 1.0, 25.0]))
    assert r.max_priority == 25.0
    counts = np.zeros(4)
    for _ in range(200):
        idx, batch, w = r.sample(8, beta)
        counts += np.bincount(idx, minlength=4)
        assert np.all(batch.returns == idx)  # slot i holds transition i
        # (p_i / p_min)^-beta with p = priority^alpha: 5^-0.4 for slot 3, 1 for the others
        np.testing.assert_allclose(w, np.where(idx == 3, 5.0**-beta, 1.0), rtol=1e-6)
    # P(3) = 5 / (1 + 1 + 1 + 5) = 0.625
    assert counts[3] / counts.sum() == pytest.approx(0.625, abs=0.03)


def test_a_new_transition_gets_the_largest_priority_and_wins_over_an_older_update() -> None:
    r = LocalReplay(2, (4,), np.dtype(np.float32), alpha=1.0, seed=3)
    r.add(_t(0))
    r.add(_t(1))
    r.sample(2)
    r.update_priorities(np.array([0, 1]), np.array([9.0, 1.0]))
    r.add(_t(2))  # overwrites slot 0 after its update to 9, before the trees saw either
    r.sample(1)
    assert r._sum[0] == 9.0 and r._sum[1] == 1.0  # the new transition at max priority 9
    r.update_priorities(np.array([1]), np.array([0.0]))  # priority 0: never sampled
    idx, batch, _ = r.sample(50)
    assert np.all(idx == 0) and np.all(batch.returns == 2.0)
    with pytest.raises(ValueError, match="finite"):
        r.update_priorities(np.array([0]), np.array([np.nan]))


def _cfg(tmp_path: Path, **kw: object) -> DQNConfig:
    base = dict(
        log_dir=str(tmp_path), run_name="t", tensorboard=False, progress_interval_s=0.0, max_steps=600,
        learning_starts=100, batch_size=32, train_frequency=2, eval_interval=100, eval_episodes=2,
        epsilon_decay_steps=300, checkpoint_interval_s=0.0,
    )  # fmt: skip
    base.update(kw)
    return DQNConfig(**base)  # type: ignore[arg-type]


def test_a_short_run_writes_the_summary_the_benchmark_reads(tmp_path: Path) -> None:
    s = run_dqn(_cfg(tmp_path))
    on_disk = json.loads((tmp_path / "t" / "dqn" / "summary.json").read_text())
    assert SUMMARY_KEYS <= on_disk.keys()
    assert on_disk["stopped_by"] == "max_steps" == s["stopped_by"]
    assert on_disk["env_steps"] == 600
    # updates every 2 steps once 100 transitions are in: about (600 - 100 - n-step lag) / 2
    assert 240 <= on_disk["updates"] <= 250
    assert [e["updates"] for e in on_disk["evaluations"]] == [100, 200]
    assert on_disk["reached_target"] is False and on_disk["reached_at"] is None
    assert len(on_disk["eval_returns"]) == 2 and on_disk["replay_inserts"] <= 600
    assert {"act", "env", "replay", "learn", "evaluate", "computation"} <= on_disk["phase_totals_s"].keys()
    assert sum(on_disk["phase_totals_s"].values()) <= on_disk["wall_time_s"] + 5
    assert (tmp_path / "t" / "dqn" / "checkpoint.pt").is_file()
    tags = {json.loads(line)["tag"] for line in (tmp_path / "t" / "dqn" / "metrics.jsonl").open()}
    assert {"episode/return", "learner/loss", "eval/return_mean", "dqn/epsilon", "time/learn"} <= tags


def test_reaching_the_target_stops_the_run_and_says_when(tmp_path: Path) -> None:
    s = run_dqn(_cfg(tmp_path, target_return=1.0, max_steps=10_000, prioritized=False))
    assert s["stopped_by"] == "target_return" and s["reached_target"] is True
    at = s["reached_at"]
    assert at == s["evaluations"][0] and at["updates"] == 100 and at["return_mean"] >= 1.0
    assert at["env_steps"] == s["env_steps"] < 10_000
    assert 0 < at["wall_time_s"] <= s["wall_time_s"]


def test_config_checks() -> None:
    with pytest.raises(ConfigError, match="train_frequency"):
        DQNConfig(train_frequency=0)
    with pytest.raises(ConfigError, match="must fit in the replay"):
        DQNConfig(batch_size=128, replay_max_size=100)
    with pytest.raises(ConfigError, match="epsilon"):
        DQNConfig(epsilon_end=1.5)
    with pytest.raises(ConfigError, match="needs periodic evaluations"):
        DQNConfig(target_return=475, eval_interval=0)
    with pytest.raises(ConfigError, match="resume"):
        DQNConfig(resume=True)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "host_agents.dqn", *args], capture_output=True, text=True, cwd=REPO, timeout=90
    )


def test_help_is_the_dqn_s_own() -> None:
    out = _cli("--help")
    assert out.returncode == 0, out.stderr
    for flag in ("--train-frequency", "--epsilon-decay-steps", "--no-prioritized", "--target-return"):
        assert flag in out.stdout
    assert "--replay-server-ip" not in out.stdout and "--resume" not in out.stdout
    assert "One process plays the environment" in out.stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--env", "CartPoel-v1"], ["configuration error", "unknown environment", "CartPole-v1"]),
        (["--batch-size", "0"], ["configuration error", "batch_size must be >= 1"]),
        (["--replay-max-size", "10"], ["configuration error", "must fit in the replay"]),
        (["--device", "gpu"], ["configuration error", "unknown device 'gpu'"]),
    ],
)
def test_bad_configuration_is_one_line_exit_2(args: list[str], words: list[str], tmp_path: Path) -> None:
    res = _cli(*args, "--log-dir", str(tmp_path), "--max-steps", "10")
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert lines[0].startswith("python -m host_agents.dqn: ")
    for w in words:
        assert w in lines[0]
    assert not (tmp_path / "default").exists()  # nothing written for a run that never started


def test_a_flag_of_the_wrong_type_is_argparse_s_exit_2() -> None:
    res = _cli("--batch-size", "many")
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines()[-1].endswith("--batch-size wants int, got 'many'")
