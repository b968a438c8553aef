"""Summary and plot of one training run: ``python -m topologies.report RUN_DIR [--out PNG]``.

A run directory holds one folder per process (``runs/<run>/<role>/``, host_agents.metrics):
``metrics.jsonl`` (one ``{"tag", "value", "step", "time"}`` record per scalar, ``time`` in
seconds since that process started logging) and ``summary.json`` (written once at the end; a
process that was killed has none). Ape-X runs have ``actor<i>`` and ``learner`` folders,
data-parallel runs ``worker-<i>``; the launcher adds ``run_summary.json`` next to them. What is
read:

- ``episode/return`` (step = that process's env steps): episode returns of actors and workers;
- ``eval/return_mean``: greedy evaluations (the learner's step is its update count, a worker's
  its env steps); ``eval/final_return_mean`` and ``summary.json``'s ``eval_return_mean``: the
  final evaluation;
- the target return: ``run_summary.json``'s ``target_return`` (the launcher's, which a worker's
  summary does not carry), else a learner's ``target_return``; whether it was reached: the
  launcher's ``reached_target``, else any process's (the learner writes true/false, a worker the
  record of the evaluation that reached it, or null);
- ``summary.json``'s ``phase_totals_s`` (else the sum of the ``time/<phase>`` scalars): where the
  time went. Communication phases are every phase but computation and the ones that are neither
  (evaluation, checkpoints, an actor's rate limiting), the rule of host_agents.metrics; the
  share is communication / (communication + computation).

The processes of a run start within a second or two of each other, so their own clocks are put
on one wall-time axis unshifted. Env steps of all acting processes are added up; an evaluation
is placed at the total env steps the actors had reached at its wall time.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

COMPUTATION = "computation"
NEITHER = frozenset({"evaluate", "eval", "checkpoint", "rate_limit"})  # neither side of the share
SMOOTH_EPISODES = 10


class ReportError(ValueError):
    """A run directory that cannot be reported on (missing, no metrics)."""


def _records(path: Path) -> list[dict[str, Any]]:
    """metrics.jsonl records; a torn last line (a process killed while writing) is skipped."""
    out = []
    with open(path) as f:
        for line in f:
            try:
                rec = json.loads(line)
                value = float(rec["value"])
            except (ValueError, KeyError, TypeError):
                continue
            if math.isfinite(value):
                out.append(
                    {
                        "tag": rec["tag"],
                        "value": value,
                        "step": int(rec.get("step", 0)),
                        "time": float(rec.get("time", 0.0)),
                    }
                )
    return out


def _read_summary(role_dir: Path) -> dict[str, Any]:
    return _read_json(role_dir / "summary.json")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _role_dirs(run_dir: Path) -> list[Path]:
    if (run_dir / "metrics.jsonl").exists() or (run_dir / "summary.json").exists():
        return [run_dir]  # one process's own folder
    dirs = [
        d
        for d in sorted(run_dir.iterdir())
        if d.is_dir() and ((d / "metrics.jsonl").exists() or (d / "summary.json").exists())
    ]
    return dirs


def _series(records: list[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    return [r for r in records if r["tag"] == tag]


def _trailing_mean(values: list[float], window: int) -> list[float]:
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def _interp(x: float, xs: list[float], ys: list[float]) -> float:
    """Piecewise-linear y(x) over increasing xs; clamped at both ends; 0 before any point."""
    if not xs:
        return 0.0
    if x <= xs[0]:
        return ys[0] if x == xs[0] else ys[0] * (x / xs[0] if xs[0] > 0 else 1.0)
    if x >= xs[-1]:
        return ys[-1]
    lo, hi = 0, len(xs) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if xs[mid] <= x:
            lo = mid
        else:
            hi = mid
    t = (x - xs[lo]) / (xs[hi] - xs[lo]) if xs[hi] > xs[lo] else 0.0
    return ys[lo] + t * (ys[hi] - ys[lo])


def communication_share(phases: dict[str, float]) -> float:
    comm = sum(v for k, v in phases.items() if k != COMPUTATION and k not in NEITHER)
    total = comm + phases.get(COMPUTATION, 0.0)
    return 0.0 if total <= 0 else comm / total


class _Role:
    def __init__(self, role_dir: Path) -> None:
        self.dir = role_dir
        self.summary = _read_summary(role_dir)
        self.name = str(self.summary.get("role") or role_dir.name)
        metrics = role_dir / "metrics.jsonl"
        self.records = _records(metrics) if metrics.exists() else []
        self.episodes = _series(self.records, "episode/return")
        self.evals = _series(self.records, "eval/return_mean")
        self.acting = bool(self.episodes) or "env_steps" in self.summary

    @property
    def phases(self) -> dict[str, float]:
        totals = self.summary.get("phase_totals_s")
        if isinstance(totals, dict) and totals:
            return {str(k): float(v) for k, v in totals.items() if isinstance(v, (int, float))}
        out: dict[str, float] = {}
        for r in self.records:
            tag = r["tag"]
            if tag.startswith("time/") and tag != "time/communication_share":
                out[tag[5:]] = out.get(tag[5:], 0.0) + r["value"]
        return out

    @property
    def env_steps(self) -> int:
        if isinstance(self.summary.get("env_steps"), (int, float)):
            return int(self.summary["env_steps"])
        steps = [r["step"] for r in self.records if r["tag"] in ("episode/return", "env/steps_per_s")]
        return max(steps, default=0)

    @property
    def wall_time_s(self) -> float:
        for key in ("wall_time_s", "wall_s"):
            if isinstance(self.summary.get(key), (int, float)):
                return float(self.summary[key])
        return max((r["time"] for r in self.records), default=0.0)

    def step_curve(self) -> tuple[list[float], list[float]]:
        """(times, env steps) of this acting process, increasing."""
        pts = sorted(
            (r["time"], r["step"]) for r in self.records if r["tag"] in ("episode/return", "env/steps_per_s")
        )
        times: list[float] = []
        steps: list[float] = []
        for t, s in pts:
            if times and t <= times[-1]:
                steps[-1] = max(steps[-1], s)
                continue
            times.append(t)
            steps.append(float(max(s, steps[-1] if steps else 0)))
        return times, steps


def summarize(run_dir: Path) -> tuple[dict[str, Any], list[_Role]]:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ReportError(f"{run_dir} is not a directory")
    roles = [_Role(d) for d in _role_dirs(run_dir)]
    if not roles:
        raise ReportError(f"{run_dir} has no <role>/metrics.jsonl or summary.json (is it a run directory?)")
    acting = [r for r in roles if r.acting]
    curves = [r.step_curve() for r in acting]

    def total_steps_at(t: float) -> float:
        return sum(_interp(t, ts, ss) for ts, ss in curves)

    evals = sorted(
        (
            {
                "role": r.name,
                "time_s": e["time"],
                "step": e["step"],
                "return_mean": e["value"],
                "env_steps_total": round(total_steps_at(e["time"])),
            }
            for r in roles
            for e in r.evals
        ),
        key=lambda e: e["time_s"],
    )
    finals = [
        r.summary["eval_return_mean"]
        for r in roles
        if isinstance(r.summary.get("eval_return_mean"), (int, float))
    ]
    if not finals:
        finals = [x["value"] for r in roles for x in _series(r.records, "eval/final_return_mean")]
    episodes = sorted(((e["time"], e["value"]) for r in acting for e in r.episodes))
    last100 = [v for _, v in episodes[-100:]]
    if finals:
        reached, source = float(max(finals)), "final evaluation"
    elif evals:
        reached, source = float(evals[-1]["return_mean"]), "last evaluation"
    elif last100:
        reached, source = sum(last100) / len(last100), "mean of the last 100 episodes"
    else:
        reached, source = None, "no returns logged"
    launcher = _read_json(run_dir / "run_summary.json")
    targets = [launcher.get("target_return")] + [r.summary.get("target_return") for r in roles]
    if "reached_target" in launcher:
        reached_target = bool(launcher["reached_target"])
    else:  # learner: a bool; worker: a dict (the evaluation that reached it) or None
        reached_target = any(bool(r.summary.get("reached_target")) for r in roles)
    summary: dict[str, Any] = {
        "run": run_dir.name,
        "roles": [r.name for r in roles],
        "return_reached": reached,
        "return_source": source,
        "eval_return_best": max((e["return_mean"] for e in evals), default=None),
        "episode_return_last100": sum(last100) / len(last100) if last100 else None,
        "episodes": len(episodes),
        "reached_target": reached_target,
        "target_return": next((t for t in targets if isinstance(t, (int, float))), None),
        "env_steps": sum(r.env_steps for r in acting),
        "wall_time_s": max((r.wall_time_s for r in roles), default=0.0),
        "communication_share": {},
        "phase_totals_s": {},
        "evaluations": evals,
        "stopped_by": {r.name: r.summary.get("stopped_by", r.summary.get("stop_reason")) for r in roles},
    }
    for r in roles:
        phases = r.phases
        summary["phase_totals_s"][r.name] = phases
        share = r.summary.get("communication_share")
        summary["communication_share"][r.name] = (
            float(share) if isinstance(share, (int, float)) else communication_share(phases)
        )
    return summary, roles


def _plot(summary: dict[str, Any], roles: list[_Role], out_png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(13, 8.5), constrained_layout=True)
    grid = fig.add_gridspec(2, 2, height_ratios=[3, 2])
    ax_time = fig.add_subplot(grid[0, 0])
    ax_steps = fig.add_subplot(grid[0, 1])
    ax_split = fig.add_subplot(grid[1, :])
    acting = [r for r in roles if r.episodes]
    cmap = plt.get_cmap("tab10")
    for i, r in enumerate(acting):
        values = [e["value"] for e in r.episodes]
        smooth = _trailing_mean(values, SMOOTH_EPISODES)
        color = cmap(i % 10)
        ax_time.plot([e["time"] for e in r.episodes], smooth, color=color, lw=1.2, alpha=0.8, label=r.name)
        ax_steps.plot([e["step"] for e in r.episodes], smooth, color=color, lw=1.2, alpha=0.8, label=r.name)
    evals = summary["evaluations"]
    if evals:
        kw = {"color": "black", "marker": "o", "lw": 2, "ms": 5, "label": "evaluation (greedy)"}
        ax_time.plot([e["time_s"] for e in evals], [e["return_mean"] for e in evals], **kw)
        ax_steps.plot([e["env_steps_total"] for e in evals], [e["return_mean"] for e in evals], **kw)
    target = summary.get("target_return")
    for ax in (ax_time, ax_steps):
        if isinstance(target, (int, float)):
            ax.axhline(target, color="gray", ls="--", lw=1, label=f"target {target:g}")
        ax.set_ylabel(f"return (episodes: mean of the last {SMOOTH_EPISODES})")
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8, loc="best")
    ax_time.set_xlabel("wall time (s)")
    ax_time.set_title("returns over wall time")
    ax_steps.set_xlabel("env steps (episodes: that process's own; evaluations: all actors together)")
    ax_steps.set_title("returns over env steps")

    names = [r.name for r in roles]
    phase_names: list[str] = []
    for r in roles:
        for p in summary["phase_totals_s"][r.name]:
            if p not in phase_names:
                phase_names.append(p)
    order = (
        ([COMPUTATION] if COMPUTATION in phase_names else [])
        + sorted(p for p in phase_names if p != COMPUTATION and p not in NEITHER)
        + sorted(p for p in phase_names if p in NEITHER)
    )
    comm_colors = plt.get_cmap("autumn")
    comm = [p for p in order if p != COMPUTATION and p not in NEITHER]
    colors = {COMPUTATION: "tab:blue"}
    for j, p in enumerate(comm):
        colors[p] = comm_colors(j / max(1, len(comm)))
    grays = ["lightgray", "darkgray", "gainsboro", "silver"]
    for k, p in enumerate(q for q in order if q not in colors):
        colors[p] = grays[k % len(grays)]
    left = [0.0] * len(roles)
    for p in order:
        widths = []
        for r in roles:
            phases = summary["phase_totals_s"][r.name]
            total = sum(phases.values())
            widths.append(100.0 * phases.get(p, 0.0) / total if total > 0 else 0.0)
        kind = "computation" if p == COMPUTATION else ("neither" if p in NEITHER else "communication")
        ax_split.barh(
            names,
            widths,
            left=left,
            color=colors[p],
            edgecolor="white",
            hatch="//" if kind == "communication" else None,
            label=p if kind == "computation" else f"{p} ({kind})",
        )
        left = [a + b for a, b in zip(left, widths, strict=True)]
    for y, r in enumerate(roles):
        share = summary["communication_share"][r.name]
        total = sum(summary["phase_totals_s"][r.name].values())
        ax_split.text(101, y, f"comm {share:.0%} of {total:.0f} s", va="center", fontsize=8)
    ax_split.set_xlim(0, 118)
    ax_split.set_xlabel("share of the process's time (%); communication share = comm / (comm + computation)")
    ax_split.set_title("time split per process")
    ax_split.invert_yaxis()
    if order:
        ax_split.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    reached = summary["return_reached"]
    shown = "-" if reached is None else f"{reached:.1f}"
    fig.suptitle(
        f"{summary['run']}: return {shown} ({summary['return_source']}), "
        f"{summary['env_steps']} env steps, {summary['wall_time_s']:.0f} s"
    )
    out_png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=100)
    plt.close(fig)


def write_report(run_dir: Path, out_png: Path) -> dict[str, Any]:
    """Read the run in ``run_dir``, write the plot to ``out_png`` and return the summary dict:
    return_reached (+ return_source), eval_return_best, episode_return_last100, episodes,
    reached_target, target_return, env_steps (all acting processes), wall_time_s (longest
    process), communication_share and phase_totals_s per role, evaluations, stopped_by, png."""
    summary, roles = summarize(Path(run_dir))
    _plot(summary, roles, Path(out_png))
    summary["png"] = str(out_png)
    return summary


def format_summary(s: dict[str, Any]) -> str:
    reached = s["return_reached"]
    shown = "-" if reached is None else f"{reached:.1f}"
    lines = [
        f"run {s['run']}: return reached {shown} ({s['return_source']})"
        + (
            f", target {s['target_return']:g} {'reached' if s['reached_target'] else 'not reached'}"
            if isinstance(s.get("target_return"), (int, float))
            else ""
        ),
        f"env steps {s['env_steps']} in {s['episodes']} episodes, wall time {s['wall_time_s']:.0f} s",
        "communication share: " + ", ".join(f"{k} {v:.0%}" for k, v in s["communication_share"].items()),
    ]
    if s.get("png"):
        lines.append(f"plot: {s['png']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m topologies.report", description=__doc__.splitlines()[0])
    p.add_argument("run_dir", metavar="RUN_DIR", help="runs/<run>: one folder per process")
    p.add_argument("--out", metavar="PNG", help="plot file (default RUN_DIR/report.png)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = p.parse_args(argv)
    run_dir = Path(args.run_dir)
    out = Path(args.out) if args.out else run_dir / "report.png"
    try:
        summary = write_report(run_dir, out)
    except ReportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=1) if args.json else format_summary(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
