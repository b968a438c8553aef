"""bench.learning_apex's command lines: the single-process DQN baseline gets the learner's
network and hyperparameters, seed, target and time budget; --runs is checked before anything
starts. No learning run (that is the benchmark's job)."""

from __future__ import annotations

import pytest

from bench import learning_apex as la
from host_agents.cli import config_from_args
from host_agents.dqn import DQNConfig
from host_agents.dqn import build_parser as dqn_parser

SHARED = ("env", "seed", "hidden", "n_step", "batch_size", "lr", "target_update_interval",
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
    args = _args("--seed", "7", "--time-budget-s", "123", "--dqn-args", "--train-frequency 2")
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
