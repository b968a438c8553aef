"""`make run` as a benchmark: the main job's time to the target return and its learner's
communication share, recorded in the same results directory as the other benchmarks.

Runs ``python -m topologies run topologies/star.yaml`` (what ``make run`` runs: the software
switch, the replay server, a learner and four Ape-X actors, each in its own network namespace;
needs root) with ``--quiet --no-report``, then writes the figures of its ``run_summary.json``
(time to target, environment steps and updates to it, learner and actor communication shares,
updates/s, the whole summary under ``summary``) to ``--out`` as JSON with ``"bench": "make_run"``.

    sudo .venv/bin/python -m bench.make_run [--file topologies/star.yaml] [--time-budget-s S]

Exit code: the launcher's (0 target reached, 3 not reached, 1 a process or the launcher failed,
2 bad file or not root, 130 interrupted); the JSON is written whenever the run left a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_name = f"make-run-{stamp}"
    cmd = launcher_argv(args, run_name)
    print(f"bench.make_run: {' '.join(cmd[1:])}", flush=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    rc = subprocess.call(cmd, cwd=ROOT, env=env)
    summary_path = args.log_dir / run_name / "run_summary.json"
    try:
        summary = json.loads(summary_path.read_text())
    except (OSError, ValueError):
        print(f"bench.make_run: the run left no {summary_path} (exit code {rc})", file=sys.stderr)
        return rc or 1
    result = result_from_summary(summary, args.file, rc)
    out = args.out or RESULTS / f"make-run-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    shown = {k: result[k] for k in ("reached_target", "time_to_target_s", "learner_communication_share")}
    print(f"bench.make_run: {json.dumps(shown)}; wrote {out}", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
