"""Learning check for data-parallel training (issue 5; not a test): N workers
(``python -m host_agents.worker``) train PPO on CartPole-v1 in a star(N) topology on the
software switch until worker 0's evaluation (mean of 10 greedy episodes) reaches the target.

Runs (same seeds, same hyperparameters):

- ``sync-switch``: synchronous in-switch aggregation;
- ``sync-gloo``:   the gloo ring-allreduce baseline over the same namespaces and switch
  (forwarding only). Both should reach the target within about the same number of updates: the
  only difference is the switch's fixed-point rounding;
- ``async-scaled``: asynchronous in-switch aggregation (threshold k < N, one straggler that
  sleeps ``--straggler-s`` per iteration), staleness-aware scaling on, IS truncation on;
- ``async-unscaled``: the same with staleness-aware scaling off (plain 1/contributors).

Reports env steps (all workers), updates and wall-clock to the target for each, prints a table
and writes JSON to ``bench/results/learning-dp-<timestamp>.json``. Needs root (namespaces).
``env_steps_to_target``: synchronous runs keep the workers in lockstep, so it is exactly worker
0's env steps when its evaluation met the target times N; asynchronous workers step at their
own pace (a straggler takes fewer), so it is the sum of every worker's own env steps when it
stopped (each stops within about one call of hearing the stop): an upper bound, marked
``env_steps_to_target_kind``. Exit status: 0 when every run reached the target, 3 when one did
not (the runs themselves worked), 1 when a worker failed, 2 for bad arguments.

    sudo .venv/bin/python -m bench.learning_dp                       # all four runs
    sudo .venv/bin/python -m bench.learning_dp --runs sync-switch,sync-gloo --seeds 1,2
"""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from host_agents.agg_protocol import DEFAULT_VALUES_PER_PACKET, SUPPORTED_VALUES_PER_PACKET

ROOT = Path(__file__).resolve().parent.parent
RUNS = ("sync-switch", "sync-gloo", "async-scaled", "async-unscaled")
GLOO_PORT = 29500


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.learning_dp",
        description="Data-parallel PPO on CartPole over the software switch: synchronous in-switch "
        "vs gloo, asynchronous with vs without staleness-aware scaling; env steps, updates and "
        "wall-clock to the target return.",
    )
    p.add_argument("--runs", default=",".join(RUNS), help=f"comma-separated subset of {', '.join(RUNS)}")
    p.add_argument(
        "--workers", type=int, default=4, help="workers (hosts on the star) (default: %(default)s)"
    )
    p.add_argument("--seeds", default="0", help="comma-separated seeds; each run is repeated per seed")
    p.add_argument(
        "--target", type=float, default=475.0, help="target mean eval return (default: %(default)s)"
    )
    p.add_argument(
        "--max-steps",
        type=int,
        default=60_000,
        help="env steps per worker before giving up (default: %(default)s)",
    )
    p.add_argument(
        "--time-limit-s", type=float, default=900.0, help="wall-clock cap per run (default: %(default)s)"
    )
    p.add_argument(
        "--eval-interval", type=int, default=2, help="iterations between evaluations (default: %(default)s)"
    )
    p.add_argument(
        "--threshold", type=int, default=3, help="async: contributions per chunk (default: %(default)s)"
    )
    p.add_argument(
        "--straggler-s",
        type=float,
        default=0.5,
        help="async: the last worker's sleep per iteration (default: %(default)s)",
    )
    p.add_argument("--is-truncation", type=float, default=2.0, help="async: rho-bar (default: %(default)s)")
    p.add_argument("--slots", type=int, default=32, help="switch job slots (default: %(default)s)")
    p.add_argument(
        "--values-per-packet", type=int, default=DEFAULT_VALUES_PER_PACKET,
        choices=SUPPORTED_VALUES_PER_PACKET,
        help="int32 values per aggregation packet: the switch's program is compiled for it and the "
        "workers use it (default: %(default)s, the Tofino-compatible width; 256 for software switches)",
    )
    p.add_argument(
        "--worker-args", default="", help="extra arguments for every worker, e.g. '--lr 3e-4 --minibatches 2'"
    )
    p.add_argument(
        "--out", default="", help="JSON path (default: bench/results/learning-dp-<timestamp>.json)"
    )
    return p


def worker_argv(
    args: argparse.Namespace, run: str, seed: int, w: Any, tb: Any, job: int, log_dir: Path
) -> list[str]:
    from topologies.testbed import switch_ip

    argv = [
        sys.executable, "-m", "host_agents.worker",
        "--worker", str(w.worker_id), "--num-workers", str(args.workers), "--seed", str(seed),
        "--log-dir", str(log_dir), "--run-name", f"{run}-s{seed}", "--no-tensorboard",
        "--max-steps", str(args.max_steps), "--time-budget-s", str(args.time_limit_s),
        "--target-return", str(args.target), "--eval-interval", str(args.eval_interval),
        "--eval-episodes", "10", "--progress-interval-s", "30", "--checkpoint-interval-s", "0",
    ]  # fmt: skip
    if run == "sync-gloo":
        argv += ["--comm", "gloo", "--gloo-init", f"{tb.workers[0].ip}:{GLOO_PORT + job}",
                 "--gloo-ifname", w.host.pair.ns_if, "--comm-timeout-s", "120"]  # fmt: skip
    else:
        argv += ["--comm", "switch", "--switch", switch_ip(0), "--bind", f"{w.ip}:40000", "--job", str(job),
                 "--slots", str(args.slots), "--agg-timeout-s", "0.1", "--agg-max-tries", "300",
                 "--values-per-packet", str(args.values_per_packet)]  # fmt: skip
    if run.startswith("async"):
        argv += [
            "--mode",
            "async",
            "--threshold",
            str(args.threshold),
            "--is-truncation",
            str(args.is_truncation),
        ]
        if run == "async-unscaled":
            argv.append("--no-staleness-scaling")
        if w.worker_id == args.workers - 1:
            argv += ["--slowdown-s", str(args.straggler_s)]
    return argv + shlex.split(args.worker_args)


def run_one(
    args: argparse.Namespace, tb: Any, run: str, seed: int, job: int, log_dir: Path
) -> dict[str, Any]:
    if run != "sync-gloo":
        threshold = args.threshold if run.startswith("async") else None
        tb.install_job(job, slot_base=0, num_slots=args.slots, threshold=threshold,
                       values_per_packet=args.values_per_packet)
    name = f"{run}-s{seed}"
    procs = []
    files = []
    t0 = time.monotonic()
    for w in tb.workers:
        out = open(log_dir / f"{name}-worker-{w.worker_id}.log", "w")  # noqa: SIM115
        files.append(out)
        procs.append(
            w.host.ns.popen(worker_argv(args, run, seed, w, tb, job, log_dir), stdout=out, stderr=out)
        )
    errors = []
    try:
        for i, p in enumerate(procs):
            left = max(1.0, args.time_limit_s + 180 - (time.monotonic() - t0))
            try:
                rc = p.wait(timeout=left)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = p.wait()
            if rc != 0:
                errors.append(f"worker {i} exited {rc}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for f in files:
            f.close()
        if run != "sync-gloo":
            tb.root.controller.jobs.delete(job)  # frees its slots and member entries for the next run
    wall = time.monotonic() - t0
    summaries = []
    for w in tb.workers:
        path = log_dir / name / f"worker-{w.worker_id}" / "summary.json"
        summaries.append(json.loads(path.read_text()) if path.exists() else None)
    s0 = summaries[0] or {}
    reached = s0.get("reached_target")
    if reached is None:
        steps_to_target, steps_kind = None, None
    elif run.startswith("async"):
        steps_to_target = sum(s["env_steps"] for s in summaries if s)
        steps_kind = "sum of the workers' env steps at their stop (upper bound)"
    else:
        steps_to_target, steps_kind = reached["env_steps_total"], "worker 0's env steps x N (lockstep)"
    res = {
        "run": run,
        "seed": seed,
        "errors": errors,
        "reached": reached is not None,
        "updates_to_target": reached and reached["updates"],
        "env_steps_to_target": steps_to_target,
        "env_steps_to_target_kind": steps_kind,
        "wall_s_to_target": reached and round(reached["wall_s"], 1),
        "final_eval_return_mean": s0.get("eval_return_mean"),
        "final_eval_all_workers": [s and s["eval_return_mean"] for s in summaries],
        "updates_all_workers": [s and s["updates"] for s in summaries],
        "resyncs_all_workers": [s and s.get("resyncs") for s in summaries],
        "param_distance_to_worker0": _param_distances(log_dir / name, len(tb.workers)),
        "updates": s0.get("updates"),
        "env_steps_total": sum(s["env_steps"] for s in summaries if s),
        "communication_share": [s and round(s["communication_share"], 3) for s in summaries],
        "identical_params": len({s["params_sha256"] for s in summaries if s}) == 1,
        "process_wall_s": round(wall, 1),
        "summaries": summaries,
    }
    if run.startswith("async"):
        from host_agents.metrics import read_metrics

        stale, contrib = [], []
        for w in tb.workers:
            try:
                m = read_metrics(log_dir / name / f"worker-{w.worker_id}")
            except FileNotFoundError:
                continue
            stale += [v for _, v in m.get("agg/staleness_mean", [])]
            contrib += [v for _, v in m.get("agg/contributors_mean", [])]
        res["staleness_mean"] = sum(stale) / len(stale) if stale else None
        res["contributors_mean"] = sum(contrib) / len(contrib) if contrib else None
    return res


def _param_distances(run_dir: Path, workers: int) -> list[float | None]:
    """Relative L2 distance of each worker's final parameters (checkpoint.pt) to worker 0's."""
    import torch

    from host_agents.metrics import load_checkpoint

    flats: list[Any] = []
    for i in range(workers):
        path = run_dir / f"worker-{i}" / "checkpoint.pt"
        if not path.exists():
            flats.append(None)
            continue
        state = load_checkpoint(path)["model"]
        flats.append(torch.cat([v.reshape(-1).float() for v in state.values()]))
    if flats[0] is None:
        return [None] * workers
    ref = flats[0]
    return [None if f is None else round(float((f - ref).norm() / ref.norm()), 5) for f in flats]


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM unwinds like Ctrl-C: workers killed, namespaces removed


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    bad = [r for r in runs if r not in RUNS]
    if bad:
        print(f"learning_dp: unknown run(s) {', '.join(bad)}; choose from {', '.join(RUNS)}", file=sys.stderr)
        return 2
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    from topologies.netns import netns_unavailable

    if (reason := netns_unavailable()) is not None:
        print(f"learning_dp: {reason}", file=sys.stderr)
        return 2
    from bench.aggregation import fail_dns_fast
    from topologies.testbed import star

    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_path = Path(args.out) if args.out else ROOT / "bench" / "results" / f"learning-dp-{stamp}.json"
    log_dir = ROOT / "bench" / "results" / f"learning-dp-{stamp}-runs"
    log_dir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "benchmark": "learning_dp",
        "config": vars(args),
        "started": stamp,
        "results": [],
    }
    job = 0
    with star(args.workers, values_per_packet=args.values_per_packet) as tb:
        fail_dns_fast(tb)
        for seed in seeds:
            for run in runs:
                job += 1
                log(f"{run} seed {seed}: starting {args.workers} workers")
                res = run_one(args, tb, run, seed, job, log_dir)
                report["results"].append(res)
                out_path.parent.mkdir(parents=True, exist_ok=True)
                out_path.write_text(json.dumps(report, indent=1) + "\n")
                log(
                    f"{run} seed {seed}: reached={res['reached']} updates={res['updates_to_target']} "
                    f"env_steps={res['env_steps_to_target']} wall={res['wall_s_to_target']} s "
                    f"final_eval={res['final_eval_return_mean']} errors={res['errors']}"
                )
    print(f"\n{'run':16} {'seed':>4} {'reached':>7} {'updates':>8} {'env steps':>10} {'wall s':>7} "
          f"{'final eval':>10} {'comm %':>7} {'stale':>6}")  # fmt: skip
    for r in report["results"]:
        comm = [c for c in r["communication_share"] if c is not None]
        stale = r.get("staleness_mean")
        print(
            f"{r['run']:16} {r['seed']:>4} {('yes' if r['reached'] else 'NO'):>7} "
            f"{r['updates_to_target'] or '-':>8} "
            f"{r['env_steps_to_target'] or '-':>10} {r['wall_s_to_target'] or '-':>7} "
            f"{r['final_eval_return_mean'] if r['final_eval_return_mean'] is not None else '-':>10} "
            f"{100 * sum(comm) / len(comm) if comm else 0:7.1f} {'-' if stale is None else f'{stale:.2f}':>6}"
        )
    print("\nfinal evals (all workers), relative parameter distance to worker 0, resyncs:")
    for r in report["results"]:
        print(
            f"{r['run']:16} {r['seed']:>4} evals {r['final_eval_all_workers']} "
            f"dist {r['param_distance_to_worker0']} resyncs {r['resyncs_all_workers']}"
        )
    print(f"\nJSON: {out_path}")
    if any(r["errors"] for r in report["results"]):
        return 1
    missed = [f"{r['run']} seed {r['seed']}" for r in report["results"] if not r["reached"]]
    if missed:
        print(f"learning_dp: target {args.target} not reached by {', '.join(missed)}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
