"""bench.learning_apex's command lines: the single-process DQN baseline gets the learner's
network and hyperparameters, seed, target and time budget; --runs is checked before anything
starts. No learning run (that is the benchmark's job)."""

from __future__ import annotations

import pytest

from bench import learning_apex as la
from host_agents.cli import config_from_args
from host_agents.dqn import DQNConfig
from host_agents.dqn import build_parser as dqn_parser

SHARED = ("env", "seed", "hidden", "n_step", "batch_size", "lr", "target_update_interval", "tau",
          "learning_starts", "eval_interval", "eval_episodes", "target_return", "time_budget_s")  # fmt: skip


def _flags(argv: list[str]) -> dict[str, str]:
    """--flag value pairs of a command line (after ``-m module``)."""
    i = argv.index("-m") + 2
    out, rest = {}, argv[i:]
    for k, v in zip(rest[::2], rest[1::2], strict=False):
        out[k] = v
    return out


def _args(*argv: str):  # type: ignore[no-untyped-def]
    args = la.build_parser().parse_args(["--log-dir", "/tmp/x", *argv])
    la._defaults(args)
    return args


def test_dqn_baseline_gets_the_learners_settings() -> None:
    args = _args(
        "--seed", "7", "--time-budget-s", "123", "--tau", "0.05", "--dqn-args", "--train-frequency 2"
    )  # fmt: skip
    dqn_argv = la.build_dqn_argv(args, "run1")
    learner = _flags(la.build_learner_argv(args, la.common_flags(args, "run1")))
    dqn = _flags(dqn_argv)
    for name in SHARED:
        flag = "--" + name.replace("_", "-")
        assert dqn[flag] == learner[flag], flag
    assert dqn["--replay-max-size"] == str(args.replay_max_size)
    assert dqn["--run-name"] == "run1" and dqn["--seed"] == "7" and dqn["--time-budget-s"] == "123.0"
    # the baseline's own parser accepts the whole line, and --dqn-args come last
    cfg = config_from_args(DQNConfig, dqn_parser().parse_args(dqn_argv[3:]))
    assert cfg.train_frequency == 2 and cfg.batch_size == 128 and cfg.target_return == 475.0
    assert cfg.lr == args.lr and cfg.target_update_interval == args.target_update_interval
    assert cfg.tau == 0.05


def test_no_target_reaches_the_baseline_too() -> None:
    argv = la.build_dqn_argv(_args("--no-target"), "r")
    assert "--target-return" not in argv


def test_runs_are_checked() -> None:
    assert la.parse_runs("dqn,apex") == ["apex", "dqn"]
    assert la.parse_runs("dqn") == ["dqn"]
    with pytest.raises(ValueError, match="unknown dqm"):
        la.parse_runs("apex,dqm")
    with pytest.raises(SystemExit) as e:
        la.main(["--runs", "both"])
    assert e.value.code == 2


def test_several_seeds_give_each_seed_and_the_median(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """--seeds 3 runs the comparison for seeds 5, 6, 7 (each with its own run name) and keeps the
    median of the ratios where both runs reached the target; the first seed's figures stay at
    the top level, a seed that missed the target makes the whole result a miss."""
    walls = {5: (60.0, 30.0), 6: (40.0, 80.0), 7: (None, 50.0)}  # Ape-X, DQN time to target
    seen = []

    def fake_run_one(args, name):  # type: ignore[no-untyped-def]
        seen.append((args.seed, name))
        a, q = walls[args.seed]
        return {"reached_target": a is not None, "wall_s_to_target": a, "updates_to_target": 100,
                "exit_codes": {"learner": 0, "dqn": 0}, "settings": {"seed": args.seed},
                "dqn": {"reached_target": True, "wall_s_to_target": q, "updates_to_target": 90},
                "apex_over_dqn": a / q if a and q else None, "run_dir": f"/tmp/{name}"}

    monkeypatch.setattr(la, "run_one", fake_run_one)
    out = tmp_path / "r.json"
    r = la.run(_args("--seed", "5", "--seeds", "3", "--run-name", "x", "--out", str(out)))
    assert seen == [(5, "x-seed5"), (6, "x-seed6"), (7, "x-seed7")]
    assert [s["seed"] for s in r["seeds"]] == [5, 6, 7]
    assert r["apex_over_dqn_all"] == [2.0, 0.5] and r["apex_over_dqn_median"] == 1.25
    assert r["wall_s_to_target"] == 60.0 and r["reached_target"] is False  # seed 7's Ape-X missed
    assert r["exit_codes"]["learner@seed6"] == 0
    assert out.exists()


def test_seeds_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        la.main(["--seeds", "0", "--log-dir", "/tmp/x"])
    assert e.value.code == 2 and "--seeds must be at least 1, not 0" in capsys.readouterr().err
