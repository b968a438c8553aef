"""`make run` as a benchmark: the main job's time to the target return and its learner's
communication share, recorded in the same results directory as the other benchmarks.

Runs ``python -m topologies run topologies/star.yaml`` (what ``make run`` runs: the software
switch, the replay server, a learner and four Ape-X actors, each in its own network namespace;
needs root) with ``--quiet --no-report``, then writes the figures of its ``run_summary.json``
(time to target, environment steps and updates to it, learner and actor communication shares,
updates/s, the whole summary under ``summary``) to ``--out`` as JSON with ``"bench": "make_run"``.

    sudo .venv/bin/python -m bench.make_run [--file topologies/star.yaml] [--time-budget-s S] [--runs N]

With --runs N the job runs N times back to back (the updates the target takes vary about 2x
from run to run: the actors and the learner are asynchronous): the first run's figures stay at
the top level, each run's go under ``runs`` and their medians under ``median`` (a run that missed
the target counts as slower than any that reached it; the median is None when half or more
missed), which the report's headline rows use.

Exit code: the launcher's (0 target reached, 3 not reached, 1 a process or the launcher failed,
2 bad file or not root, 130 interrupted; with several runs the first that is not 0); the JSON is
written whenever a run left a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.common import sigterm_as_interrupt, wait_or_stop

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
KEYS = (
    "reached_target", "target_return", "time_to_target_s", "env_steps_to_target", "updates_to_target",
    "learner_communication_share", "actor_communication_share", "learner_updates_per_s", "env_steps_per_s",
    "best_eval_return", "final_eval_return", "stopped_by", "wall_s", "switch_backends", "failures",
)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.make_run",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--file",
        type=Path,
        default=ROOT / "topologies" / "star.yaml",
        help="topology file (default: %(default)s)",
    )
    p.add_argument("--time-budget-s", type=float, default=None, help="override the file's time budget")
    p.add_argument(
        "--runs", type=int, default=1, help="run the job this many times; medians in the JSON (default: 1)"
    )
    p.add_argument("--log-dir", type=Path, default=ROOT / "runs", help="(default: %(default)s)")
    p.add_argument("--out", type=Path, default=None, help="(default: bench/results/make-run-<stamp>.json)")
    return p


def launcher_argv(args: argparse.Namespace, run_name: str) -> list[str]:
    argv = [sys.executable, "-m", "topologies", "run", str(args.file), "--quiet", "--no-report",
            "--run-name", run_name, "--log-dir", str(args.log_dir)]  # fmt: skip
    if args.time_budget_s is not None:
        argv += ["--time-budget-s", str(args.time_budget_s)]
    return argv


def result_from_summary(summary: dict, file: Path, exit_code: int) -> dict:
    """The benchmark's JSON from a launcher's run_summary.json."""
    try:
        file = file.resolve().relative_to(ROOT)
    except ValueError:
        pass  # a topology file outside the repository keeps its path
    return {
        "bench": "make_run",
        "file": str(file),
        "exit_code": exit_code,
        **{k: summary.get(k) for k in KEYS},
        "run_dir": summary.get("run_dir"),
        "summary": summary,
    }


# the figures the median is taken of (a missed target: time and updates count as infinite)
MEDIAN_KEYS = (
    "time_to_target_s", "updates_to_target", "learner_updates_per_s", "learner_communication_share",
)  # fmt: skip


def with_medians(results: list[dict]) -> dict:
    """The first run's result with every run's figures under ``runs`` and their medians under
    ``median`` (None where half or more of the runs have none: missed targets)."""
    out = dict(results[0])
    out["runs"] = [{"exit_code": r["exit_code"], "run_dir": r.get("run_dir"), **{k: r.get(k) for k in KEYS}}
                   for r in results]  # fmt: skip
    median: dict[str, float | None] = {}
    for k in MEDIAN_KEYS:
        vals = sorted(float("inf") if r.get(k) is None else float(r[k]) for r in results)
        mid = vals[(len(vals) - 1) // 2 : len(vals) // 2 + 1]  # one value, or the two middle ones
        m = sum(mid) / len(mid)
        median[k] = None if m == float("inf") else m
    out["median"] = median
    out["reached_all"] = all(r.get("reached_target") for r in results)
    return out


def run_once(args: argparse.Namespace, run_name: str) -> tuple[int, dict | None]:
    """One launcher run; its exit code and the benchmark's JSON (None without a summary)."""
    cmd = launcher_argv(args, run_name)
    print(f"bench.make_run: {' '.join(cmd[1:])}", flush=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    rc = wait_or_stop(subprocess.Popen(cmd, cwd=ROOT, env=env))
    summary_path = args.log_dir / run_name / "run_summary.json"
    try:
        summary = json.loads(summary_path.read_text())
    except (OSError, ValueError):
        print(f"bench.make_run: the run left no {summary_path} (exit code {rc})", file=sys.stderr)
        return rc or 1, None
    return rc, result_from_summary(summary, args.file, rc)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    sigterm_as_interrupt()
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, not {args.runs}")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = args.out or RESULTS / f"make-run-{stamp}.json"
    codes, results = [], []
    result: dict = {}
    for k in range(args.runs):
        name = f"make-run-{stamp}" if args.runs == 1 else f"make-run-{stamp}-{k + 1}"
        if args.runs > 1:
            print(f"bench.make_run: run {k + 1} of {args.runs}", flush=True)
        rc, one = run_once(args, name)
        codes.append(rc)
        if one is not None:
            results.append(one)
            # written after every run: a caller's time limit that stops the later ones keeps these
            result = results[0] if args.runs == 1 else with_medians(results)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(result, indent=1, default=str) + "\n")
        if rc not in (0, 3):  # a failure (or Ctrl-C), not a missed target: stop here
            break
    rc = next((c for c in codes if c != 0), 0)
    if not results:
        return rc or 1
    shown = {k: result[k] for k in ("reached_target", "time_to_target_s", "learner_communication_share")}
    if "median" in result:
        shown = {"runs": len(results), **result["median"]}
    print(f"bench.make_run: {json.dumps(shown)}; wrote {out}", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
