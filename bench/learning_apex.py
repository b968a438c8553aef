"""Ape-X learning check: does the distributed DQN learn, and how fast, against one process?

Starts the C replay server (``dpdk_fallback``: host backend on loopback, or ``--replay-backend
switch`` with the server and every agent on their own host of a software-switch star topology,
priorities in the switch), N actors (``python -m host_agents.actor``) and one learner
(``python -m host_agents.learner``), and waits until the learner's periodic evaluation (mean
return of ``--eval-episodes`` greedy episodes) reaches ``--target-return``, the actors have played
``--actor-max-steps`` each, or the time budget ends. The other processes are then stopped with
SIGTERM (they write their summaries).

Then, in the same invocation and with the same seed, target, time budget, network and learner
hyperparameters, the single-process DQN baseline (``python -m host_agents.dqn``: one process, a
local replay, no server; ``--dqn-args`` passes more of its flags), so that Ape-X's time to the
target is compared with what a user would run instead (``apex_over_dqn``: Ape-X's wall-clock to
the target over the baseline's, when both reach it). ``--runs apex`` or ``--runs dqn`` runs one.

Prints and writes (``bench/results/learning-apex-<timestamp>.json``): whether the target was
reached, the wall-clock and the environment steps to it (transitions inserted into the replay
when the reaching evaluation ran, i.e. environment steps of all actors less those still in
their local buffers), actors' environment steps per second, learner updates per second and the
communication shares, and under ``dqn`` the baseline's figures. Logs of every process:
``<log-dir>/<run-name>/``.

Defaults are the CartPole-v1 settings this check was tuned with; for the short Breakout run:
``python -m bench.learning_apex --env ALE/Breakout-v5 --num-actors 2 --actor-max-steps 10000
--no-target``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from bench.common import progress, sigterm_as_interrupt
from host_agents.netutil import free_port

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
REPLAY_PORT = 47100


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench.learning_apex",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--env", default="CartPole-v1", help="Gymnasium environment (default: %(default)s)")
    p.add_argument("--num-actors", type=int, default=4, help="actor processes (default: %(default)s)")
    p.add_argument(
        "--target-return", type=float, default=475.0, help="stop when reached (default: %(default)s)"
    )
    p.add_argument(
        "--no-target", action="store_true", help="no target return: run to the step or time limits"
    )
    p.add_argument(
        "--time-budget-s", type=float, default=900.0, help="wall-clock limit (default: %(default)s)"
    )
    p.add_argument(
        "--actor-max-steps", type=int, default=10**9, help="environment steps per actor (default: no limit)"
    )
    p.add_argument("--seed", type=int, default=0, help="base seed of every process (default: %(default)s)")
    p.add_argument(
        "--seeds", type=int, default=1,
        help="run the whole comparison for seeds SEED, SEED+1, ... (this many): one seed's time to "
        "the target is a lottery; the JSON then has each seed's figures under `seeds` and the median "
        "ratio `apex_over_dqn_median` (default: %(default)s)",
    )
    p.add_argument(
        "--replay-backend", choices=("host", "switch"), default="host", help="(default: %(default)s)"
    )
    p.add_argument(
        "--replay-max-size",
        type=int,
        default=None,
        help="replay capacity (default: 50000 CartPole, 20000 Atari; the switch path at most 16384)",
    )
    # learner
    p.add_argument("--batch-size", type=int, default=None, help="(default: 128 CartPole, 32 Atari)")
    p.add_argument("--lr", type=float, default=None, help="Adam step (default: 5e-4 CartPole, 1e-4 Atari)")
    p.add_argument("--hidden", type=int, default=128, help="MLP width (default: %(default)s)")
    p.add_argument("--n-step", type=int, default=3, help="(default: %(default)s)")
    p.add_argument("--target-update-interval", type=int, default=250, help="(default: %(default)s)")
    p.add_argument(
        "--tau", type=float, default=1.0,
        help="share of the online network in each target update, both runs (1: a copy; < 1: Polyak "
        "averaging, e.g. 0.005 with --target-update-interval 1) (default: %(default)s)",
    )
    p.add_argument("--publish-interval", type=int, default=None, help="(default: 20 CartPole, 100 Atari)")
    p.add_argument("--learning-starts", type=int, default=None, help="(default: 1000 CartPole, 2000 Atari)")
    p.add_argument(
        "--eval-interval", type=int, default=500, help="updates between evaluations (default: %(default)s)"
    )
    p.add_argument("--eval-episodes", type=int, default=10, help="(default: %(default)s)")
    # actors
    p.add_argument(
        "--param-pull-interval",
        type=int,
        default=100,
        help="actor steps between pulls (default: %(default)s)",
    )
    p.add_argument("--local-buffer", type=int, default=50, help="(default: %(default)s)")
    p.add_argument(
        "--actor-steps-per-s", type=float, default=None,
        help="rate limit per actor, to leave CPU to the learner (default: 500 CartPole, 0 = none for Atari)",
    )  # fmt: skip
    p.add_argument(
        "--runs", default="apex,dqn",
        help="apex (the distributed run), dqn (the single-process baseline) or both (default: %(default)s)",
    )  # fmt: skip
    p.add_argument("--learner-args", default="", help="more learner flags, one shell-quoted string")
    p.add_argument("--actor-args", default="", help="more actor flags, one shell-quoted string")
    p.add_argument(
        "--dqn-args", default="",
        help="more flags of the single-process DQN (python -m host_agents.dqn --help), shell-quoted",
    )  # fmt: skip
    p.add_argument("--log-dir", default=str(ROOT / "runs"), help="(default: %(default)s)")
    p.add_argument("--run-name", default=None, help="(default: learning-apex-<env>-<timestamp>)")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="result JSON (default: bench/results/learning-apex-<timestamp>.json)",
    )
    return p


def _defaults(args: argparse.Namespace) -> None:
    atari = args.env.startswith("ALE/")
    pick = {
        "replay_max_size": (50_000, 20_000),
        "batch_size": (128, 32),
        "lr": (5e-4, 1e-4),
        "learning_starts": (1000, 2000),
        # CartPole: 4 x 500 steps/s against the single process's ~1,400 (at 250 Ape-X needed
        # about as many environment steps to 475 and got them slower); unlimited, the actors took
        # the learner's core (Thirteenth pass)
        "actor_steps_per_s": (500.0, 0.0),
        "publish_interval": (20, 100),  # an Atari network is 13 MB a publication
    }
    for name, (flat, image) in pick.items():
        if getattr(args, name) is None:
            setattr(args, name, image if atari else flat)
    if args.replay_backend == "switch":
        args.replay_max_size = min(args.replay_max_size, 16384)
    if args.no_target:
        args.target_return = None


class Launcher:
    """Starts the server and the agents: on loopback (host backend) or each on its own host of a
    star topology (switch backend)."""

    def __init__(self, args: argparse.Namespace, run_dir: Path, stack: contextlib.ExitStack) -> None:
        self.args = args
        self.run_dir = run_dir
        self.tb = None
        from topologies.replay_server import ReplayServerProcess

        table = f"apex:max_size={args.replay_max_size},alpha=0.6,priorities={args.replay_backend}"
        if args.replay_backend == "switch":
            from topologies.testbed import star

            self.tb = stack.enter_context(star(args.num_actors + 2))
            server_host = self.tb.workers[0].host
            self.server_ip, self.port = self.tb.workers[0].ip, REPLAY_PORT
            server = ReplayServerProcess(
                ["--bind", self.server_ip, "--port", str(self.port), "--table", table, "--quiet"],
                ns=server_host.ns,
                log=run_dir / "replay_server.log",
            )
            self.tb.root.controller.replay.install_table(0, args.replay_max_size)
        else:
            self.server_ip, self.port = "127.0.0.1", free_port("udp")
            server = ReplayServerProcess(
                ["--bind", self.server_ip, "--port", str(self.port), "--table", table, "--quiet"],
                log=run_dir / "replay_server.log",
            )
        self.server = stack.enter_context(server)

    def replay_flags(self) -> list[str]:
        return [
            "--replay-backend", self.args.replay_backend,
            "--replay-server-ip", self.server_ip,
            "--replay-server-port", str(self.port),
            "--replay-max-size", str(self.args.replay_max_size),
            "--replay-timeout-s", "0.5",
        ]  # fmt: skip

    def start(self, host_index: int, argv: list[str], out: IO[str] | None) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        kw: dict[str, Any] = {"stdout": out, "stderr": subprocess.STDOUT, "cwd": ROOT, "env": env}
        if self.tb is None:
            return subprocess.Popen(argv, start_new_session=True, text=True, **kw)
        return self.tb.workers[host_index].host.ns.popen(argv, **kw)


def common_flags(args: argparse.Namespace, run_name: str) -> list[str]:
    return [
        "--env", args.env, "--seed", str(args.seed), "--run-name", run_name, "--log-dir", args.log_dir,
        "--hidden", str(args.hidden), "--n-step", str(args.n_step), "--progress-interval-s", "15",
        "--time-budget-s", str(args.time_budget_s),
    ]  # fmt: skip


def build_learner_argv(args: argparse.Namespace, common: list[str]) -> list[str]:
    """The learner's command line (``common``: common_flags + the launcher's replay flags)."""
    return [
        sys.executable, "-m", "host_agents.learner", *common,
        "--max-steps", str(10**9),
        "--batch-size", str(args.batch_size), "--lr", str(args.lr),
        "--target-update-interval", str(args.target_update_interval),
        "--tau", str(args.tau),
        "--publish-interval", str(args.publish_interval),
        "--learning-starts", str(args.learning_starts),
        "--eval-interval", str(args.eval_interval), "--eval-episodes", str(args.eval_episodes),
        *(["--target-return", str(args.target_return)] if args.target_return is not None else []),
        *shlex.split(args.learner_args),
    ]  # fmt: skip


def build_actor_argv(args: argparse.Namespace, common: list[str], i: int) -> list[str]:
    """Actor ``i``'s command line."""
    return [
        sys.executable, "-m", "host_agents.actor", *common,
        "--actor-index", str(i), "--num-actors", str(args.num_actors),
        "--max-steps", str(args.actor_max_steps),
        "--param-pull-interval", str(args.param_pull_interval),
        "--local-buffer", str(args.local_buffer),
        "--steps-per-s-limit", str(args.actor_steps_per_s),
        *shlex.split(args.actor_args),
    ]  # fmt: skip


def stop_all(procs: list[subprocess.Popen[str]], timeout: float = 30.0) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


RUNS = ("apex", "dqn")
# the baseline's settings the result records (from its summary.json's config)
DQN_SETTINGS = (
    "train_frequency", "prioritized", "alpha", "beta", "epsilon_start", "epsilon_end", "epsilon_decay_steps",
    "torch_threads", "batch_size", "lr", "n_step", "target_update_interval", "tau", "replay_max_size",
)  # fmt: skip


def parse_runs(text: str) -> list[str]:
    """``--runs``: a comma-separated subset of RUNS, in RUNS order (ValueError naming a bad one)."""
    names = [r.strip() for r in text.split(",") if r.strip()]
    bad = [r for r in names if r not in RUNS]
    if bad or not names:
        raise ValueError(f"--runs: unknown {', '.join(bad) or '(empty)'}; choose from {', '.join(RUNS)}")
    return [r for r in RUNS if r in names]


def build_dqn_argv(args: argparse.Namespace, run_name: str) -> list[str]:
    """The single-process baseline's command line: the learner's network and hyperparameters, the
    same seed, target and time budget (its --max-steps counts environment steps: no limit)."""
    return [
        sys.executable, "-m", "host_agents.dqn", *common_flags(args, run_name),
        "--max-steps", str(10**9),
        "--batch-size", str(args.batch_size), "--lr", str(args.lr),
        "--target-update-interval", str(args.target_update_interval),
        "--tau", str(args.tau),
        "--learning-starts", str(args.learning_starts),
        "--replay-max-size", str(args.replay_max_size),
        "--eval-interval", str(args.eval_interval), "--eval-episodes", str(args.eval_episodes),
        *(["--target-return", str(args.target_return)] if args.target_return is not None else []),
        *shlex.split(args.dqn_args),
    ]  # fmt: skip


def run_apex(args: argparse.Namespace, run_name: str, run_dir: Path) -> dict:
    """The distributed run: server, learner, actors; its figures (the result's top-level keys)."""
    with contextlib.ExitStack() as stack:
        launcher = Launcher(args, run_dir, stack)
        progress(f"replay server up ({args.replay_backend} backend, {launcher.server_ip}:{launcher.port})")
        common = common_flags(args, run_name) + launcher.replay_flags()
        learner_argv = build_learner_argv(args, common)
        t0 = time.monotonic()
        learner_out = stack.enter_context(open(run_dir / "learner.log", "w"))
        learner = launcher.start(1, learner_argv, learner_out)
        actors = []
        for i in range(args.num_actors):
            argv = build_actor_argv(args, common, i)
            out = stack.enter_context(open(run_dir / f"actor{i}.log", "w"))
            actors.append(launcher.start(2 + i, argv, out))
        progress(f"{args.num_actors} actors and the learner started; logs in {run_dir}")
        procs = [learner, *actors]
        deadline = t0 + args.time_budget_s + 120  # the processes stop themselves; this is a backstop
        try:
            last_report = t0
            while time.monotonic() < deadline:
                if learner.poll() is not None or all(a.poll() is not None for a in actors):
                    break
                if time.monotonic() - last_report >= 30:
                    last_report = time.monotonic()
                    lines = (run_dir / "learner.log").read_text().strip().splitlines()
                    progress(lines[-1] if lines else "learner: no output yet")
                time.sleep(0.5)
        finally:
            stop_all(procs)
        wall = time.monotonic() - t0
        rcs = {"learner": learner.returncode, **{f"actor{i}": a.returncode for i, a in enumerate(actors)}}
        try:
            from host_agents.replay_client import HostReplayClient, ReplayConfig

            if launcher.tb is None:
                with HostReplayClient(ReplayConfig(server_port=launcher.port)) as c:
                    server_info = c.info()["tables"][0]
            else:
                server_info = None
        except Exception as e:  # noqa: BLE001 - the report goes on without it
            server_info = {"error": str(e)}
        switch_counters = launcher.tb.root.controller.replay.counters(0) if launcher.tb is not None else None

    learner_sum = read_json(run_dir / "learner" / "summary.json") or {}
    actor_sums = [read_json(run_dir / f"actor{i}" / "summary.json") or {} for i in range(args.num_actors)]
    reached = learner_sum.get("reached_at")
    return {
        "reached_target": bool(learner_sum.get("reached_target")),
        "wall_s_to_target": reached["wall_time_s"] if reached else None,
        "env_steps_to_target": reached["replay_inserts"] if reached else None,
        "updates_to_target": reached["updates"] if reached else None,
        "final_eval_return_mean": learner_sum.get("eval_return_mean"),
        "evaluations": learner_sum.get("evaluations"),
        "wall_s": wall,
        "env_steps_total": sum(a.get("env_steps", 0) for a in actor_sums),
        "actor_env_steps_per_s": [a.get("env_steps_per_s") for a in actor_sums],
        "actor_communication_share": [a.get("communication_share") for a in actor_sums],
        "learner_updates": learner_sum.get("updates"),
        "learner_updates_per_s": learner_sum.get("updates_per_s"),
        "learner_communication_share": learner_sum.get("communication_share"),
        "learner_phase_totals_s": learner_sum.get("phase_totals_s"),
        "replay_table": server_info,
        "switch_counters": switch_counters,
        "exit_codes": rcs,
    }


def run_dqn_baseline(args: argparse.Namespace, run_name: str, run_dir: Path) -> dict:
    """The single-process DQN with the same settings; its figures (the result's ``dqn``)."""
    argv = build_dqn_argv(args, run_name)
    progress(f"single-process DQN baseline started; log {run_dir / 'dqn.log'}")
    t0 = time.monotonic()
    with open(run_dir / "dqn.log", "w") as out:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env, text=True, start_new_session=True
        )
        try:
            deadline = t0 + args.time_budget_s + 120  # it stops itself; this is a backstop
            last_report = t0
            while proc.poll() is None and time.monotonic() < deadline:
                if time.monotonic() - last_report >= 30:
                    last_report = time.monotonic()
                    lines = (run_dir / "dqn.log").read_text().strip().splitlines()
                    progress(lines[-1][:300] if lines else "dqn: no output yet")
                time.sleep(0.5)
        finally:
            stop_all([proc])
    wall = time.monotonic() - t0
    s = read_json(run_dir / "dqn" / "summary.json") or {}
    reached = s.get("reached_at")
    cfg = s.get("config") or {}
    return {
        "reached_target": bool(s.get("reached_target")),
        "wall_s_to_target": reached["wall_time_s"] if reached else None,
        "env_steps_to_target": reached["env_steps"] if reached else None,
        "updates_to_target": reached["updates"] if reached else None,
        "final_eval_return_mean": s.get("eval_return_mean"),
        "evaluations": s.get("evaluations"),
        "wall_s": wall,
        "env_steps_total": s.get("env_steps"),
        "env_steps_per_s": s.get("env_steps_per_s"),
        "updates": s.get("updates"),
        "updates_per_s": s.get("updates_per_s"),
        "phase_totals_s": s.get("phase_totals_s"),
        "stopped_by": s.get("stopped_by"),
        "settings": {k: cfg.get(k) for k in DQN_SETTINGS},
        "exit_code": proc.returncode,
        "argv": argv[1:],
    }


def run(args: argparse.Namespace) -> dict:
    """The comparison for --seeds seeds: the first seed's figures at the top level (as with one
    seed), every seed's under ``seeds``, the median ratio over the seeds where both runs reached
    the target."""
    _defaults(args)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base_name = args.run_name or f"learning-apex-{args.env.replace('/', '_')}-{stamp}"
    results = []
    for k in range(args.seeds):
        one = argparse.Namespace(**vars(args))
        one.seed = args.seed + k
        name = base_name if args.seeds <= 1 else f"{base_name}-seed{one.seed}"
        if args.seeds > 1:
            progress(f"bench.learning_apex: seed {one.seed} ({k + 1} of {args.seeds})")
        results.append(run_one(one, name))
    result = dict(results[0])
    if args.seeds > 1:
        result["seeds"] = [_seed_summary(r) for r in results]
        ratios = [r["apex_over_dqn"] for r in results if r.get("apex_over_dqn")]
        result["apex_over_dqn_all"] = ratios
        result["apex_over_dqn_median"] = statistics.median(ratios) if ratios else None
        result["exit_codes"] = {f"{name}@seed{r['settings']['seed']}": rc for r in results
                                for name, rc in r["exit_codes"].items()}  # fmt: skip
        result["reached_target"] = all(r.get("reached_target") is not False for r in results)
        if "dqn" in result:
            result["dqn"] = {**result["dqn"], "reached_target": all(
                (r.get("dqn") or {}).get("reached_target") is not False for r in results)}
    result["settings"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    out = args.out or RESULTS / f"learning-apex-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    result["result_file"] = str(out)
    return result


def _seed_summary(r: dict) -> dict:
    """One seed's figures for the ``seeds`` list."""
    q = r.get("dqn") or {}
    return {
        "seed": r["settings"]["seed"],
        "apex_reached": r.get("reached_target"),
        "apex_wall_s_to_target": r.get("wall_s_to_target"),
        "apex_updates_to_target": r.get("updates_to_target"),
        "apex_learner_updates_per_s": r.get("learner_updates_per_s"),
        "dqn_reached": q.get("reached_target"),
        "dqn_wall_s_to_target": q.get("wall_s_to_target"),
        "dqn_updates_to_target": q.get("updates_to_target"),
        "apex_over_dqn": r.get("apex_over_dqn"),
        "run_dir": r.get("run_dir"),
    }


def run_one(args: argparse.Namespace, run_name: str) -> dict:
    """Ape-X then the DQN baseline (as --runs says) for one seed."""
    runs = parse_runs(args.runs)
    run_dir = Path(args.log_dir) / run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "bench": "learning_apex",
        "env": args.env,
        "replay_backend": args.replay_backend,
        "num_actors": args.num_actors,
        "target_return": args.target_return,
        "runs": runs,
        "reached_target": None,
        "exit_codes": {},
    }
    if "apex" in runs:
        result.update(run_apex(args, run_name, run_dir))
    if "dqn" in runs:
        dqn = run_dqn_baseline(args, run_name, run_dir)
        result["dqn"] = dqn
        result["exit_codes"] = {**result["exit_codes"], "dqn": dqn["exit_code"]}
        apex_t, dqn_t = result.get("wall_s_to_target"), dqn["wall_s_to_target"]
        result["apex_over_dqn"] = apex_t / dqn_t if apex_t and dqn_t else None
    result["settings"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    result["run_dir"] = str(run_dir)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        parse_runs(args.runs)
    except ValueError as e:
        parser.error(str(e))
    if args.seeds < 1:
        parser.error(f"--seeds must be at least 1, not {args.seeds}")
    sigterm_as_interrupt()  # its learner, actors and replay server are stopped in `finally`
    result = run(args)
    keys = (
        "env", "replay_backend", "num_actors", "reached_target", "wall_s_to_target", "env_steps_to_target",
        "updates_to_target", "final_eval_return_mean", "wall_s", "env_steps_total", "actor_env_steps_per_s",
        "learner_updates", "learner_updates_per_s", "learner_communication_share", "apex_over_dqn",
        "seeds", "apex_over_dqn_all", "apex_over_dqn_median", "exit_codes", "result_file",
    )  # fmt: skip
    shown = {k: result[k] for k in keys if k in result}
    if "dqn" in result:
        dqn_keys = ("reached_target", "wall_s_to_target", "env_steps_to_target", "updates_to_target",
                    "final_eval_return_mean", "wall_s", "env_steps_per_s", "updates_per_s")  # fmt: skip
        shown["dqn"] = {k: result["dqn"][k] for k in dqn_keys}
    print(json.dumps(shown, indent=1))
    failed = [name for name, rc in result["exit_codes"].items() if rc not in (0, -signal.SIGTERM)]
    if failed:
        print(f"bench.learning_apex: processes failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    target = result["target_return"]
    missed = [name for name, r in (("Ape-X", result), ("the DQN baseline", result.get("dqn")))
              if r is not None and r.get("reached_target") is False]  # fmt: skip
    if target is not None and missed:
        print(f"bench.learning_apex: the target return {target} was not reached by {' and '.join(missed)}",
              file=sys.stderr)  # fmt: skip
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
