"""CPU/GPU ratio advisor: how many Ape-X actors should feed one learner on this machine?

After "The Architectural Implications of Distributed Reinforcement Learning on CPU-GPU Systems"
(Inci et al.): sweeps the number of actors per learner (``--actors``) and the torch threads of
each actor (``--threads``). Each point starts what ``bench.learning_apex`` starts (the C replay
server on loopback, N actor processes without a steps-per-second cap, one learner, no target
return, no evaluations), waits until the learner is learning (its first SAMPLE reaches the
server), then measures for ``--seconds``:

- environment steps per second of all actors together: transitions inserted into the replay
  during the window (the server's INFO counters) over its length; each actor's own summary rate
  (over its whole life) is kept beside it,
- learner updates per second: SAMPLE batches the server served during the window,
- CPU: the machine's busy share from /proc/stat and each process's cores (utime + stime from
  /proc/<pid>/stat) for the learner, the actors together and the replay server,
- GPU: utilization and memory from ``nvidia-smi`` when it is on PATH (the learner then runs on
  ``--learner-device``, auto = CUDA when present; actors always run on the CPU); otherwise
  "no GPU".

Recommendation rule, per thread count (points ordered by actor count; the fewest actors is
always admissible): start at the fewest actors and move to the next count while both hold
  (a) the learner keeps at least 1 - MAX_LEARNER_DROP (default 80%) of the best learner
      updates/s of that thread count (below it the actors take the learner's CPU), and
  (b) environment steps/s rise by at least MIN_GAIN (default +10%) over the count kept so far
      (below it collection has saturated: more actors only share the same cores).
The first count where one fails ends the walk; the recommendation is the last count kept (the
learner saturates there: more actors no longer add data it can use without slowing it). Across
thread counts the recommendation with the most environment steps/s wins. The reasons are printed.

Writes ``bench/results/ratio-<stamp>.json`` and a PNG plot beside it. Logs of every process:
``<log-dir>/ratio-<stamp>/<point>/``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import learning_apex as la
from bench.common import parse_pid_stat, parse_proc_stat, progress, sigterm_as_interrupt

ROOT = la.ROOT
RESULTS = la.RESULTS
FULL = {"actors": [1, 2, 4, 8], "threads": [1, 2], "seconds": 20.0}
QUICK = {"actors": [1, 2, 4, 8], "threads": [1], "seconds": 8.0}  # the seed figure's 1, 2, 4, 8
MIN_GAIN = 0.10
MAX_LEARNER_DROP = 0.20


def int_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected integers >= 1, got {text!r}")
    return sorted(set(values))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench.ratio",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--quick", action="store_true",
        help="actors 1,2,4,8, threads 1, 8 s points (explicit --actors/--threads/--seconds still win)",
    )  # fmt: skip
    p.add_argument("--actors", type=int_list, default=None, help="actor counts (default: 1,2,4,8)")
    p.add_argument("--threads", type=int_list, default=None, help="torch threads per actor (default: 1,2)")
    p.add_argument(
        "--seconds", type=float, default=None,
        help="measured seconds per point, after the learner starts learning (default: 20)",
    )  # fmt: skip
    p.add_argument("--env", default="CartPole-v1", help="Gymnasium environment (default: %(default)s)")
    p.add_argument(
        "--learner-device", default="auto", help="the learner's torch device (default: %(default)s)"
    )
    p.add_argument(
        "--learning-starts", type=int, default=None,
        help="transitions before the learner learns (default: bench.learning_apex's, 1000 CartPole)",
    )  # fmt: skip
    p.add_argument(
        "--startup-timeout-s", type=float, default=120.0,
        help="a point fails when its learner is not learning by then (default: %(default)s)",
    )  # fmt: skip
    p.add_argument("--sample-interval-s", type=float, default=0.5, help="(default: %(default)s)")
    p.add_argument("--min-gain", type=float, default=MIN_GAIN, help="rule (b) (default: %(default)s)")
    p.add_argument(
        "--max-learner-drop", type=float, default=MAX_LEARNER_DROP, help="rule (a) (default: %(default)s)"
    )
    p.add_argument("--log-dir", default=str(ROOT / "runs"), help="(default: %(default)s)")
    p.add_argument(
        "--out", type=Path, default=None,
        help="result JSON (default: bench/results/ratio-<stamp>.json; the plot: same name, .png)",
    )  # fmt: skip
    return p


# ---------------------------------------------------------------- CPU and GPU readings


def machine_cpu() -> tuple[int, int]:
    return parse_proc_stat(Path("/proc/stat").read_text())


def pid_cpu_ticks(pid: int) -> int | None:
    try:
        return parse_pid_stat(Path(f"/proc/{pid}/stat").read_text())
    except (OSError, ValueError, IndexError):
        return None


def parse_nvidia_smi(text: str) -> list[dict[str, Any]]:
    """Lines of ``nvidia-smi --query-gpu=name,utilization.gpu,memory.used,memory.total
    --format=csv,noheader,nounits``."""
    gpus = []
    for line in text.strip().splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) < 4:
            continue
        try:
            gpus.append(
                {"name": parts[0], "util_pct": float(parts[1]), "mem_used_mib": float(parts[2]),
                 "mem_total_mib": float(parts[3])}
            )  # fmt: skip
        except ValueError:
            continue
    return gpus


def gpu_sample() -> list[dict[str, Any]] | None:
    """None when nvidia-smi is not on PATH or fails (no GPU)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    query = "--query-gpu=name,utilization.gpu,memory.used,memory.total"
    try:
        res = subprocess.run(
            [smi, query, "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_nvidia_smi(res.stdout) if res.returncode == 0 else None


@dataclass
class Snapshot:
    """One reading during a point."""

    t: float
    inserts: int
    samples: int  # transitions sampled (the table's counter: batch size per SAMPLE)
    cpu_busy: int
    cpu_total: int
    ticks: dict[str, int | None] = field(default_factory=dict)  # role -> utime + stime
    gpus: list[dict[str, Any]] | None = None


def window_figures(
    start: Snapshot, end: Snapshot, batch_size: int, num_actors: int, clk_tck: float
) -> dict[str, Any]:
    """Rates and CPU use between two snapshots."""
    dt = end.t - start.t
    if dt <= 0:
        raise ValueError("the window has no length")
    env_steps = end.inserts - start.inserts
    updates = (end.samples - start.samples) / batch_size
    cores: dict[str, float | None] = {}
    for role, t1 in end.ticks.items():
        t0 = start.ticks.get(role)
        cores[role] = None if t0 is None or t1 is None else (t1 - t0) / clk_tck / dt
    actor_cores = [v for k, v in cores.items() if k.startswith("actor")]
    d_total = end.cpu_total - start.cpu_total
    return {
        "window_s": dt,
        "env_steps": env_steps,
        "env_steps_per_s": env_steps / dt,
        "env_steps_per_s_per_actor": env_steps / dt / num_actors,
        "learner_updates": updates,
        "learner_updates_per_s": updates / dt,
        # sampled transitions per inserted one (Ape-X's replay ratio)
        "replay_ratio": (updates * batch_size / env_steps) if env_steps else None,
        "machine_cpu_util": (end.cpu_busy - start.cpu_busy) / d_total if d_total > 0 else None,
        "process_cores": cores,
        "learner_cores": cores.get("learner"),
        "actors_cores": sum(v for v in actor_cores if v is not None) if actor_cores else None,
        "server_cores": cores.get("replay_server"),
    }


def gpu_mean(snaps: list[Snapshot]) -> dict[str, Any] | None:
    readings = [s.gpus for s in snaps if s.gpus]
    if not readings:
        return None
    first = readings[0][0]
    utils = [r[0]["util_pct"] for r in readings]
    mems = [r[0]["mem_used_mib"] for r in readings]
    return {
        "name": first["name"], "util_pct_mean": sum(utils) / len(utils), "mem_used_mib_max": max(mems),
        "mem_total_mib": first["mem_total_mib"], "samples": len(readings),
    }  # fmt: skip


# ---------------------------------------------------------------- one point


class PointError(RuntimeError):
    pass


def point_args(
    num_actors: int, threads: int, opts: argparse.Namespace, log_dir: str, run_name: str
) -> argparse.Namespace:
    """bench.learning_apex's settings for one point: no target, no evaluations, uncapped actors."""
    budget = opts.startup_timeout_s + opts.seconds + 60  # a backstop; the sweep stops them first
    argv = [
        "--env", opts.env, "--num-actors", str(num_actors), "--no-target",
        "--time-budget-s", str(budget), "--actor-steps-per-s", "0",
        "--eval-episodes", "0", "--eval-interval", "0",
        "--actor-args", f"--torch-threads {threads} --device cpu",
        "--learner-args", f"--device {opts.learner_device}",
        "--log-dir", log_dir, "--run-name", run_name,
    ]  # fmt: skip
    if opts.learning_starts is not None:
        argv += ["--learning-starts", str(opts.learning_starts)]
    args = la.build_parser().parse_args(argv)
    la._defaults(args)
    return args


def measure_point(
    num_actors: int, threads: int, opts: argparse.Namespace, log_dir: str, run_name: str
) -> dict:
    """Start the server, the learner and ``num_actors`` actors, measure ``opts.seconds`` once the
    learner learns, stop everything; the figures of this point."""
    from host_agents.replay_client import HostReplayClient, ReplayConfig

    args = point_args(num_actors, threads, opts, log_dir, run_name)
    run_dir = Path(args.log_dir) / run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    clk_tck = float(os.sysconf("SC_CLK_TCK"))
    snaps: list[Snapshot] = []
    window_start: Snapshot | None = None
    t_launch = time.monotonic()
    with contextlib.ExitStack() as stack:
        launcher = la.Launcher(args, run_dir, stack)
        common = la.common_flags(args, run_name) + launcher.replay_flags()
        learner_out = stack.enter_context(open(run_dir / "learner.log", "w"))
        learner = launcher.start(1, la.build_learner_argv(args, common), learner_out)
        actors = []
        for i in range(num_actors):
            out = stack.enter_context(open(run_dir / f"actor{i}.log", "w"))
            actors.append(launcher.start(2 + i, la.build_actor_argv(args, common, i), out))
        procs = [learner, *actors]
        pids = {"learner": learner.pid, "replay_server": launcher.server.proc.pid}
        pids.update({f"actor{i}": a.pid for i, a in enumerate(actors)})
        client = stack.enter_context(HostReplayClient(ReplayConfig(server_port=launcher.port)))

        def snapshot() -> Snapshot:
            table = client.info()["tables"][0]
            busy, total = machine_cpu()
            return Snapshot(
                t=time.monotonic(), inserts=int(table["inserts"]), samples=int(table["samples"]),
                cpu_busy=busy, cpu_total=total, ticks={k: pid_cpu_ticks(p) for k, p in pids.items()},
                gpus=gpu_sample(),
            )  # fmt: skip

        try:
            while True:
                dead = [name for name, p in (("learner", learner), *((f"actor{i}", a) for i, a in
                        enumerate(actors))) if p.poll() is not None]  # fmt: skip
                if dead:
                    raise PointError(f"{', '.join(dead)} exited early (logs in {run_dir})")
                snap = snapshot()
                if window_start is None:
                    if snap.samples > 0:
                        window_start = snap
                    elif snap.t - t_launch > opts.startup_timeout_s:
                        raise PointError(
                            f"the learner was not learning after {opts.startup_timeout_s:g} s "
                            f"(replay inserts {snap.inserts}; logs in {run_dir})"
                        )
                else:
                    snaps.append(snap)
                    if snap.t - window_start.t >= opts.seconds:
                        break
                time.sleep(opts.sample_interval_s)
        finally:
            la.stop_all(procs)
        startup_s = window_start.t - t_launch
    figures = window_figures(window_start, snaps[-1], args.batch_size, num_actors, clk_tck)
    learner_sum = la.read_json(run_dir / "learner" / "summary.json") or {}
    actor_sums = [la.read_json(run_dir / f"actor{i}" / "summary.json") or {} for i in range(num_actors)]
    totals = learner_sum.get("phase_totals_s") or {}
    all_time = sum(totals.values())
    return {
        "actors": num_actors,
        "threads": threads,
        **figures,
        "startup_s": startup_s,
        "gpu": gpu_mean([window_start, *snaps]),
        # each process's own summary (over its whole life, start-up and waiting included)
        "summary_actor_env_steps": sum(a.get("env_steps", 0) for a in actor_sums),
        "summary_actor_env_steps_per_s": sum(a.get("env_steps_per_s", 0.0) for a in actor_sums),
        "summary_actor_wall_s": [a.get("wall_time_s") for a in actor_sums],
        "summary_actor_communication_share": [a.get("communication_share") for a in actor_sums],
        "summary_learner_updates": learner_sum.get("updates"),
        "summary_learner_updates_per_s": learner_sum.get("updates_per_s"),
        "learner_sample_share": totals.get("sample", 0.0) / all_time if all_time > 0 else None,
        "learner_communication_share": learner_sum.get("communication_share"),
        "learner_phase_totals_s": totals,
        # the report's time breakdown reads these; runs/... may be gone by then
        "actor_phase_totals_s": [a.get("phase_totals_s", {}) for a in actor_sums],
        "exit_codes": {"learner": learner.returncode,
                       **{f"actor{i}": a.returncode for i, a in enumerate(actors)}},
        "run_dir": str(run_dir),
    }  # fmt: skip


# ---------------------------------------------------------------- the rule


def recommend_group(points: list[dict], min_gain: float, max_drop: float) -> tuple[dict, list[str]]:
    """The rule of the module docstring on the points of one thread count."""
    pts = sorted(points, key=lambda p: p["actors"])
    best = max(p["learner_updates_per_s"] for p in pts)
    kept = pts[0]
    why = [f"{kept['actors']} actors: the fewest measured, admissible by rule"]
    for p in pts[1:]:
        share = p["learner_updates_per_s"] / best if best > 0 else 1.0
        if share < 1 - max_drop:
            why.append(
                f"{p['actors']} actors: learner updates/s {p['learner_updates_per_s']:.1f} is {share:.0%} "
                f"of the best {best:.1f} (< {1 - max_drop:.0%}): the actors take the learner's CPU; stop"
            )
            break
        base = kept["env_steps_per_s"]
        gain = p["env_steps_per_s"] / base - 1 if base > 0 else float("inf")
        if gain < min_gain:
            why.append(
                f"{p['actors']} actors: env steps/s {p['env_steps_per_s']:.0f} is {gain:+.0%} over "
                f"{kept['actors']} actors' {base:.0f} (< {min_gain:+.0%}): collection saturated; stop"
            )
            break
        why.append(
            f"{p['actors']} actors: env steps/s {gain:+.0%} over {kept['actors']}, learner at {share:.0%} "
            "of its best: more actors still pay"
        )
        kept = p
    else:
        if len(pts) > 1:
            why.append(f"{kept['actors']} actors is the largest count measured: try more")
    return kept, why


def recommend(points: list[dict], min_gain: float = MIN_GAIN, max_drop: float = MAX_LEARNER_DROP) -> dict:
    """Per thread count the rule's actor count; overall the one with the most env steps/s (ties:
    fewer threads, then fewer actors)."""
    ok = [p for p in points if "error" not in p]
    if not ok:
        return {"actors": None, "threads": None, "why": ["no point was measured"], "per_threads": {}}
    per: dict[int, dict] = {}
    for threads in sorted({p["threads"] for p in ok}):
        kept, why = recommend_group([p for p in ok if p["threads"] == threads], min_gain, max_drop)
        per[threads] = {"actors": kept["actors"], "env_steps_per_s": kept["env_steps_per_s"],
                        "learner_updates_per_s": kept["learner_updates_per_s"], "why": why}  # fmt: skip
    threads = max(per, key=lambda t: (per[t]["env_steps_per_s"], -t, -per[t]["actors"]))
    choice = per[threads]
    why = [
        f"threads {t}: {r['actors']} actors, {r['env_steps_per_s']:.0f} env steps/s" for t, r in per.items()
    ]
    if len(per) > 1:
        why.append(f"most env steps/s: {threads} thread(s) per actor")
    return {"actors": choice["actors"], "threads": threads, "why": choice["why"] + why, "per_threads": per}


# ---------------------------------------------------------------- output


def write_plot(result: dict, path: Path) -> Path:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [p for p in result["points"] if "error" not in p]
    has_gpu = any(p.get("gpu") for p in ok)
    fig, axes = plt.subplots(1, 4 if has_gpu else 3, figsize=(16 if has_gpu else 13, 4))
    rec = result["recommendation"]
    for threads in sorted({p["threads"] for p in ok}):
        pts = sorted((p for p in ok if p["threads"] == threads), key=lambda p: p["actors"])
        xs = [p["actors"] for p in pts]
        label = f"{threads} thread(s)/actor"
        axes[0].plot(xs, [p["env_steps_per_s"] for p in pts], "o-", label=label)
        axes[1].plot(xs, [p["learner_updates_per_s"] for p in pts], "o-", label=label)
        axes[2].plot(xs, [100 * (p["machine_cpu_util"] or 0) for p in pts], "o-", label=f"machine, {label}")
        axes[2].plot(xs, [100 * (p["learner_cores"] or 0) for p in pts], "s--", label=f"learner, {label}")
        axes[2].plot(xs, [100 * (p["actors_cores"] or 0) for p in pts], "^:", label=f"actors, {label}")
        if has_gpu:
            axes[3].plot(xs, [(p["gpu"] or {}).get("util_pct_mean", 0) for p in pts], "o-", label=label)
    titles = ["env steps/s (all actors)", "learner updates/s", "CPU: machine % / process % of a core"]
    if has_gpu:
        titles.append("GPU utilization %")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("actors per learner")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({p["actors"] for p in ok}) or [1])
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.grid(alpha=0.3)
        if rec.get("actors"):
            ax.axvline(rec["actors"], color="grey", ls="--", lw=1)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    m = result["machine"]
    fig.suptitle(
        f"bench.ratio: {result['settings']['env']}, {m.get('cpus')} CPUs ({m.get('cpu_model', '?')}), "
        f"GPU: {result['gpu'] or 'no GPU'}; recommended {rec.get('actors')} actors x "
        f"{rec.get('threads')} thread(s) (dashed)",
        fontsize=9,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_outputs(result: dict, out: Path) -> tuple[Path, Path]:
    out.parent.mkdir(parents=True, exist_ok=True)
    png = write_plot(result, out.with_suffix(".png"))
    result["plot_file"] = str(png)
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    return out, png


def describe(p: dict) -> str:
    if "error" in p:
        return f"failed: {p['error']}"
    gpu = p["gpu"]
    gpu_text = f"GPU {gpu['util_pct_mean']:.0f}%" if gpu else "no GPU"
    cpu = p["machine_cpu_util"]

    def cores(x: float | None) -> str:
        return "?" if x is None else f"{x:.2f}"

    return (
        f"env steps/s {p['env_steps_per_s']:.0f} ({p['env_steps_per_s_per_actor']:.0f}/actor), "
        f"learner updates/s {p['learner_updates_per_s']:.1f}, replay ratio "
        f"{p['replay_ratio'] if p['replay_ratio'] is None else round(p['replay_ratio'], 2)}, "
        f"CPU machine {'?' if cpu is None else f'{cpu:.0%}'} (cores: learner {cores(p['learner_cores'])}, "
        f"actors {cores(p['actors_cores'])}, server {cores(p['server_cores'])}), {gpu_text}, "
        f"window {p['window_s']:.1f} s after {p['startup_s']:.1f} s start-up"
    )


def main(argv: list[str] | None = None) -> int:
    opts = build_parser().parse_args(argv)
    sigterm_as_interrupt()
    base = QUICK if opts.quick else FULL
    opts.actors = opts.actors or base["actors"]
    opts.threads = opts.threads or base["threads"]
    opts.seconds = opts.seconds if opts.seconds is not None else base["seconds"]
    from bench.replay import machine_info
    from topologies.replay_server import SERVER_BIN

    if not SERVER_BIN.exists():
        print(f"bench.ratio: {SERVER_BIN} is not built (make replay-server)", file=sys.stderr)
        return 2
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = opts.out or RESULTS / f"ratio-{stamp}.json"
    first_gpu = gpu_sample()
    gpu_name = first_gpu[0]["name"] if first_gpu else None
    progress(f"GPU: {gpu_name or 'no GPU (nvidia-smi not on PATH or no device)'}")
    grid = [(t, n) for t in opts.threads for n in opts.actors]
    points: list[dict] = []
    for k, (threads, n) in enumerate(grid, 1):
        progress(f"point {k}/{len(grid)}: {n} actor(s) x {threads} torch thread(s), {opts.seconds:g} s")
        log_dir = str(Path(opts.log_dir) / f"ratio-{stamp}")
        try:
            p = measure_point(n, threads, opts, log_dir, f"a{n}-t{threads}")
        except KeyboardInterrupt:
            progress("interrupted: writing what was measured")
            break
        except Exception as e:  # noqa: BLE001 - the sweep goes on; the point says why it failed
            p = {"actors": n, "threads": threads, "error": f"{type(e).__name__}: {e}"}
        points.append(p)
        progress(f"  {n} actor(s) x {threads}: {describe(p)}")
    rec = recommend(points, opts.min_gain, opts.max_learner_drop)
    result = {
        "bench": "ratio",
        "machine": machine_info(),
        "gpu": gpu_name,
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(opts).items()},
        "rule": {
            "min_gain": opts.min_gain,
            "max_learner_drop": opts.max_learner_drop,
            "text": __doc__.split("Recommendation rule", 1)[1].split("\n\n", 1)[0].strip(),
        },
        "points": points,
        "recommendation": rec,
    }
    json_path, png = write_outputs(result, out)
    print(f"recommendation: {rec['actors']} actor(s) per learner x {rec['threads']} torch thread(s)")
    for line in rec["why"]:
        print(f"  {line}")
    print(f"result: {json_path}\nplot: {png}")
    return 0 if rec["actors"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
