"""The benchmark report: reads the JSON files of one results directory (what `python -m
bench.run_all` wrote, or any directory of bench/*.py outputs) and writes a Markdown report with
PNG plots next to it, one section per seed figure:

  (a) execution-time breakdown of actors and learner per actor count   <- bench.ratio
  (b) actor push frequency (env steps/s per actor) vs the ideal          <- bench.ratio
  (c) replay push/sample/update latency per path                          <- bench.replay
  (d) aggregation time per allreduce: in-switch sync/async vs PS vs gloo  <- bench.aggregation
  (d2) the same with one straggler (async vs sync)   <- bench.aggregation --straggler-ms
  (d3) the same with NIC offloads on the hosts       <- bench.aggregation --offloads
  (e) scale-model predictions                                             <- bench.scale_model
  (f) CPU/GPU ratio advisor: rates, utilization, recommended actors       <- bench.ratio

plus the software switch's packets/s and the learning checks (make run, Ape-X against the
single-process DQN, data-parallel PPO) when present, and a "Headline ratios" table up front: one
line per figure with its ratio, issue 15's target where it has one (TARGETS) and whether this run
met it, and what limits it. Every figure states
its machine, its configuration and its ratio to the baseline measured in the same run; a figure
whose data is missing says "not measured in this run" (with the driver's reason when
run_all.json has one). Files are recognised by their "benchmark"/"bench" key, not their name;
when a directory holds several of one kind the last by name is used.

    python -m bench.report bench/results/run-<stamp> [--out bench/report.md]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_MEASURED = "not measured in this run"

ACTOR_PHASES = ("computation", "pull_params", "push_experiences")
LEARNER_PHASES = ("computation", "sample", "set_params", "update_priorities")
REPLAY_OPS = ("push", "sample", "update")
AGG_METHODS = ("switch", "switch-fixed", "switch-async", "ps", "gloo")
SCALE_METHODS = ("switch_sync", "switch_async", "ps", "ring")

# Issue 15's targets, shown in the headline table's "target" and "met?" columns: key -> (the
# headline row's figure, the target). A target whose figure this run did not measure still gets a
# row ("not measured in this run"), so that every target is visible.
TARGETS = {
    "agg_gloo": ("(d) allreduce time, switch / gloo", "< 1.0 at 4 and 8 workers x 100 KB and 1 MB"),
    "agg_ps": ("(d) allreduce time, switch / ps", "< 0.7 at 4 and 8 workers x 100 KB and 1 MB"),
    "learning_dp": ("learning: wall-clock to target, sync-switch / sync-gloo", "< 1.0"),
    "sample_same_server": (
        "(c) sample latency, in-network sampling vs the same server",
        ">= 1.3x (host-sockets / switch)",
    ),
    "make_run_time": ("make run: time to 475", "<= 60 s"),
    "make_run_comm": ("make run: learner communication share", "<= 30%"),
    "apex_dqn": ("Ape-X (4 actors) time to 475 / single-process DQN", "< 1.0"),
}
# what limits Ape-X against the single-process DQN (profiled on the 2-CPU VM: bench/README.md)
APEX_DQN_LIMIT = (
    "Both take the same update. Ape-X's learner only learns (its replay calls in a child process), its "
    "actors act and step their environments at their rate limit on the other core, while the single "
    "process does all of it in turn: Ape-X makes more updates and environment steps per second. How many "
    "of them a seed needs is a lottery: over six seeds on the 2-CPU Intel VM the ratio ranged 0.23-2.24x, "
    "median 0.69x (bench/README.md, Thirteenth pass)"
)
# the benchmark (bench.run_all's name) that measures each target's figure
TARGET_BENCH = {
    "agg_gloo": "aggregation", "agg_ps": "aggregation", "learning_dp": "learning-dp",
    "sample_same_server": "replay", "make_run_time": "make-run", "make_run_comm": "make-run",
    "apex_dqn": "learning-apex",
}  # fmt: skip
# the allreduce points of the (d) targets: (workers, size KB)
AGG_TARGET_POINTS = ((4, 100), (4, 1000), (8, 100), (8, 1000))
AGG_BOUNDS = {"agg_gloo": 1.0, "agg_ps": 0.7}


# ---------------------------------------------------------------- loading


def kind_of(data: dict) -> str | None:
    k = data.get("benchmark") or data.get("bench")
    return str(k) if k else None


def load_results(results_dir: Path) -> dict[str, dict]:
    """{kind: data} for every JSON file in results_dir (not recursive); the last by name wins.
    run_all.json (the driver's record) is returned under "run_all"."""
    found: dict[str, dict] = {}
    for path in sorted(results_dir.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        kind = "run_all" if path.name == "run_all.json" else kind_of(data)
        if kind:
            data["_file"] = path.name
            found[kind] = data
    return found


def proc_machine() -> str:
    """This machine from /proc/cpuinfo and nproc (used when a JSON does not say)."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPUs (report machine: /proc/cpuinfo, nproc)"


def machine_line(data: dict, fallback: str) -> str:
    host = data.get("host") or data.get("machine")
    if isinstance(host, dict):
        parts = [str(host.get("cpu_model") or host.get("cpu") or host.get("machine") or "CPU")]
        cpus = host.get("cpus") or host.get("cores")
        if cpus:
            parts.append(f"{cpus} CPUs")
        if host.get("kernel"):
            parts.append(f"kernel {host['kernel']}")
        if host.get("torch"):
            parts.append(f"torch {host['torch']}")
        gpu = data.get("gpu")
        parts.append(f"GPU {gpu}" if gpu else "no GPU" if "gpu" in data else "")
        return ", ".join(p for p in parts if p) + f" (from {data.get('_file', 'the JSON')})"
    return fallback


def fmt_ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}x"


def ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def div(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def met_mark(value: float | None, op: str, bound: float) -> str:
    """Whether ``value op bound`` (op "<", "<=" or ">="): "yes" or "no"; "-" without a value."""
    if value is None:
        return "-"
    ok = {"<": value < bound, "<=": value <= bound, ">=": value >= bound}[op]
    return "yes" if ok else "no"


def cpu_total_ms(r: dict | None) -> float | None:
    """All roles' CPU per call (ms) of an aggregation result (``cpu_per_call``), None without it."""
    cpu = (r or {}).get("cpu_per_call") or {}
    parts = [v["total_ms"] for v in cpu.values() if isinstance(v, dict) and "total_ms" in v]
    return sum(parts) if parts else None


def replay_cpu_row(r: dict, config: dict) -> list[str]:
    """bench.replay's CPU over one timed phase as a row: actors, path, the learner's CPU per round
    and the actors' per push ("total (user)" ms), the switch's and the server's cores in use, and
    the machine's busy share."""
    cpu, wall = r.get("cpu_timed_phase") or {}, r.get("timed_wall_s") or 0.0
    rounds = len((r.get("latencies_s") or {}).get("sample") or []) or int(config.get("rounds") or 0)
    pushes = sum(len(p) for p in (r.get("latencies_s") or {}).get("push_per_actor") or [])

    def per(role: str, n: int) -> str:
        v = cpu.get(role)
        if not isinstance(v, dict) or not n:
            return "-"
        return f"{v['total_ms'] / n:.2f} ({v['user_ms'] / n:.2f})"

    def cores(role: str) -> str:
        v = cpu.get(role)
        return f"{v['total_ms'] / 1e3 / wall:.2f}" if isinstance(v, dict) and wall > 0 else "-"

    busy = cpu.get("machine_busy")
    return [str(r["actors"]), r["path"], per("learner", rounds), per("actors", pushes), cores("switch"),
            cores("server"), "-" if busy is None else f"{busy:.0%}"]  # fmt: skip


def cpu_role_text(v: object) -> str:
    """One role's CPU per call, "total (user)" in ms; "-" for a role with none."""
    if not isinstance(v, dict) or not v.get("total_ms"):
        return "-"
    return f"{v['total_ms']:.1f} ({v['user_ms']:.1f})"


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


class Report:
    def __init__(self, results_dir: Path, out: Path) -> None:
        self.results_dir = results_dir
        self.out = out
        self.data = load_results(results_dir)
        self.run_all = self.data.get("run_all") or {}
        rm = self.run_all.get("machine")
        self.machine_fallback = f"{rm} (from run_all.json)" if rm else proc_machine()
        self.lines: list[str] = []
        self.pngs: list[Path] = []
        self.headlines: list[list[str]] = []  # [figure, ratio, target, met?, what limits it]
        self.targets_shown: set[str] = set()

    def headline(
        self, figure: str, ratio: str, limit: str, target: str | None = None, met: str = "-"
    ) -> None:
        """One row of the headline table; ``target`` is a key of TARGETS (None: no target, "-")."""
        text = "-"
        if target is not None:
            text = TARGETS[target][1]
            self.targets_shown.add(target)
        self.headlines.append([figure, ratio, text, met, limit])

    # ---- helpers

    def png(self, fig, name: str) -> str:
        path = self.out.parent / f"{self.out.stem}-{name}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        _plt().close(fig)
        self.pngs.append(path)
        return path.name

    def missing(self, title: str, benches: list[str]) -> None:
        self.lines += [f"## {title}", "", f"**{NOT_MEASURED}.**"]
        for b in benches:
            rec = (self.run_all.get("benchmarks") or {}).get(b)
            if rec:
                why = rec.get("reason") or f"exit code {rec.get('rc')}"
                self.lines.append(f"- `{b}`: {rec.get('status')}: {why} (log: {rec.get('log', '-')})")
            else:
                self.lines.append(f"- `{b}`: no result file in {self.results_dir}")
        self.lines.append("")

    def head(self, title: str, data: dict, config: str) -> None:
        self.lines += [
            f"## {title}",
            "",
            f"- machine: {machine_line(data, self.machine_fallback)}",
            f"- configuration: {config}",
            f"- source: `{data.get('_file')}`",
            "",
        ]

    # ---- (a) + (b) ratio sweep

    def actor_phases(self, point: dict) -> tuple[dict[str, float], str]:
        """Mean per-actor phase totals (s) and where they came from."""
        per = point.get("actor_phase_totals_s")
        if isinstance(per, list) and per:
            return _mean_dicts(per), "actor_phase_totals_s in the JSON"
        run_dir = point.get("run_dir")
        if run_dir:
            sums = []
            for i in range(int(point["actors"])):
                f = Path(run_dir) / f"actor{i}" / "summary.json"
                try:
                    sums.append(json.loads(f.read_text())["phase_totals_s"])
                except (OSError, ValueError, KeyError):
                    sums = []
                    break
            if sums:
                return _mean_dicts(
                    sums
                ), "the actors' own summary.json (phase_totals_s) in each point's run_dir"
        shares = [s for s in point.get("summary_actor_communication_share") or [] if s is not None]
        walls = [w for w in point.get("summary_actor_wall_s") or [] if w is not None]
        if shares:
            share = statistics.mean(shares)
            wall = statistics.mean(walls) if walls else 1.0
            return (
                {"computation": (1 - share) * wall, "pull+push": share * wall},
                "communication_share of the actor summaries (pull and push not split)",
            )
        return {}, "no actor phase data"

    def section_ratio(self) -> None:
        d = self.data.get("ratio")
        title_a = "(a) Execution-time breakdown of actors and learner"
        title_b = "(b) Actor push frequency vs the ideal"
        points = [p for p in (d or {}).get("points", []) if "error" not in p or not p.get("error")]
        points = [p for p in points if p.get("learner_phase_totals_s") or p.get("env_steps_per_s")]
        if not d or not points:
            self.missing(title_a, ["ratio"])
            self.missing(title_b, ["ratio"])
            return
        s = d.get("settings", {})
        config = (
            f"Ape-X on {s.get('env', '?')}, replay server on loopback, "
            f"{s.get('seconds', '?')} s window per point, "
            f"actors {s.get('actors')}, torch threads per actor {s.get('threads')}, quick={s.get('quick')}"
        )
        threads = min(p.get("threads", 1) for p in points)
        pts = sorted((p for p in points if p.get("threads", 1) == threads), key=lambda p: p["actors"])

        # (a)
        self.head(title_a, d, config + f"; shown: {threads} thread(s) per actor")
        rows, actor_fr, learner_fr, sources = [], [], [], set()
        base_lc = None
        for p in pts:
            aph, src = self.actor_phases(p)
            sources.add(src)
            a_tot = sum(aph.values()) or 1.0
            lph = p.get("learner_phase_totals_s") or {}
            l_tot = sum(lph.values()) or 1.0
            af = {k: v / a_tot for k, v in aph.items()}
            lf = {k: v / l_tot for k, v in lph.items()}
            actor_fr.append(af)
            learner_fr.append(lf)
            l_comm = 1 - lf.get("computation", 1.0) if lph else None
            if base_lc is None:
                base_lc = l_comm
            a_comm = 1 - af.get("computation", 1.0) if aph else None
            rows.append(
                [
                    str(p["actors"]),
                    *(f"{af[k]:.0%}" if k in af else "-" for k in (*ACTOR_PHASES, "pull+push")),
                    *(f"{lf[k]:.0%}" if k in lf else "-" for k in LEARNER_PHASES),
                    "n/a" if a_comm is None else f"{a_comm:.0%}",
                    "n/a" if l_comm is None else f"{l_comm:.0%}",
                    fmt_ratio(div(l_comm, base_lc)),
                ]
            )
        plt = _plt()
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, fr, role in ((axes[0], actor_fr, "actor (mean per actor)"), (axes[1], learner_fr, "learner")):
            keys = sorted({k for f in fr for k in f}, key=lambda k: (k != "computation", k))
            bottom = [0.0] * len(pts)
            x = [str(p["actors"]) for p in pts]
            for k in keys:
                vals = [f.get(k, 0.0) for f in fr]
                ax.bar(x, vals, bottom=bottom, label=k)
                bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
            ax.set_xlabel("actors")
            ax.set_ylabel("share of process time")
            ax.set_title(role)
            ax.legend(fontsize=7)
        name = self.png(fig, "breakdown")
        self.lines += [f"![execution-time breakdown]({name})", ""]
        rows_a = rows
        self.lines += md_table(
            [
                "actors",
                *(f"actor {k}" for k in (*ACTOR_PHASES, "pull+push")),
                *(f"learner {k}" for k in LEARNER_PHASES),
                "actor comm.",
                "learner comm.",
                f"learner comm. vs {pts[0]['actors']} actor(s)",
            ],
            rows,
        )
        self.lines += [
            "",
            f"Actor phases from: {'; '.join(sorted(sources))}. Learner phases: `learner_phase_totals_s`. "
            "Communication = everything but computation. The baseline is the fewest actors of this run.",
            "",
        ]

        # (b)
        self.head(title_b, d, config + f"; shown: {threads} thread(s) per actor")
        ideal = pts[0].get("env_steps_per_s_per_actor")
        rows, xs, per_actor = [], [], []
        for p in pts:
            r = p.get("env_steps_per_s_per_actor")
            xs.append(str(p["actors"]))
            per_actor.append(r or 0.0)
            rows.append(
                [
                    str(p["actors"]),
                    f"{p.get('env_steps_per_s', 0):.0f}",
                    "n/a" if r is None else f"{r:.0f}",
                    "n/a" if ideal is None else f"{ideal:.0f}",
                    fmt_ratio(div(r, ideal)),
                    f"{p.get('learner_updates_per_s', 0):.1f}",
                ]
            )
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.bar(xs, per_actor, label="measured per actor")
        if ideal:
            ax.axhline(
                ideal, color="k", linestyle="--", label=f"ideal (uncontended {pts[0]['actors']} actor)"
            )
        ax.set_xlabel("actors")
        ax.set_ylabel("env steps/s per actor (each step is pushed)")
        ax.legend(fontsize=8)
        name = self.png(fig, "push-frequency")
        self.lines += [f"![push frequency]({name})", ""]
        self.lines += md_table(
            [
                "actors",
                "env steps/s (all)",
                "per actor",
                "ideal per actor",
                "per actor / ideal",
                "learner updates/s",
            ],
            rows,
        )
        self.lines += [
            "",
            f"Ideal = the per-actor rate with {pts[0]['actors']} actor(s) in the same run (no contention for "
            "CPU or the replay server); every environment step is pushed as a transition, so steps/s is the "
            "push rate in transitions/s.",
            "",
        ]
        lo, hi = pts[0], pts[-1]
        cpus = (d.get("machine") or {}).get("cpus") if isinstance(d.get("machine"), dict) else None
        contention = (
            f"CPU contention ({cpus} CPUs shared by actors, learner and server)"
            if cpus
            else ("CPU contention (actors, learner and server share the machine)")
        )
        if len(pts) > 1:
            self.headline(
                "(a) learner communication share",
                f"{rows_a[-1][-2]} at {hi['actors']} actors vs {rows_a[0][-2]} at {lo['actors']} "
                f"({rows_a[-1][-1]})",
                contention,
            )
            self.headline(
                "(b) actor push rate vs ideal",
                f"{fmt_ratio(div(hi.get('env_steps_per_s_per_actor'), ideal))} per actor "
                f"({hi['actors']} actors)",
                contention,
            )

    # ---- (f) ratio advisor

    def section_advisor(self) -> None:
        d = self.data.get("ratio")
        title = "(f) CPU/GPU ratio advisor: actors per learner"
        points = [p for p in (d or {}).get("points", []) if not p.get("error") and p.get("env_steps_per_s")]
        if not d or not points:
            self.missing(title, ["ratio"])
            return
        s = d.get("settings", {})
        gpu = d.get("gpu")
        self.head(
            title, d,
            f"Ape-X on {s.get('env', '?')}, actors {s.get('actors')}, threads per actor {s.get('threads')}, "
            f"{s.get('seconds', '?')} s per point; learner on "
            f"{'GPU ' + _gpu_text(gpu) if gpu else 'the CPU (no GPU)'}",
        )  # fmt: skip
        pts = sorted(points, key=lambda p: (p.get("threads", 1), p["actors"]))
        threads = sorted({p.get("threads", 1) for p in pts})
        plt = _plt()
        fig, ax = plt.subplots(figsize=(6, 4))
        ax2 = ax.twinx()
        for t in threads:
            tp = [p for p in pts if p.get("threads", 1) == t]
            xs = [p["actors"] for p in tp]
            ax.plot(xs, [p["env_steps_per_s"] for p in tp], marker="o", label=f"env steps/s, {t} thr")
            ax2.plot(xs, [p.get("learner_updates_per_s", 0) for p in tp], marker="s", linestyle="--",
                     label=f"updates/s, {t} thr")  # fmt: skip
        ax.set_xlabel("actors per learner")
        ax.set_ylabel("environment steps/s (all actors)")
        ax2.set_ylabel("learner updates/s")
        ax.set_xscale("log", base=2)
        counts = sorted({p["actors"] for p in pts})
        ax.set_xticks(counts, [str(a) for a in counts])
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=7)
        name = self.png(fig, "ratio")
        self.lines += [f"![ratio advisor]({name})", ""]

        def cores(x: object) -> str:
            return "n/a" if x is None else f"{float(x):.2f}"

        rows = [
            [
                str(p["actors"]), str(p.get("threads", 1)), f"{p['env_steps_per_s']:.0f}",
                f"{p.get('learner_updates_per_s', 0):.1f}", cores(p.get("learner_cores")),
                cores(p.get("actors_cores")), cores(p.get("server_cores")),
                "n/a" if p.get("machine_cpu_util") is None else f"{p['machine_cpu_util']:.0%}",
                _gpu_text(p.get("gpu")),
            ]
            for p in pts
        ]  # fmt: skip
        self.lines += md_table(
            ["actors", "threads", "env steps/s", "updates/s", "learner cores", "actors cores", "server cores",
             "machine CPU", "GPU"],
            rows,
        )  # fmt: skip
        rec = d.get("recommendation")
        if rec:
            self.lines += ["", f"**Recommendation: {rec.get('actors')} actor(s) per learner, "
                           f"{rec.get('threads')} thread(s) each.** Why:", ""]  # fmt: skip
            self.lines += [f"- {w}" for w in rec.get("why", [])]
            best = max(pts, key=lambda p: p["env_steps_per_s"])
            # the rule's own reason for stopping (the per-thread "why" ends with it), else the summary
            stops = [w for w in rec.get("why", []) if w.rstrip().endswith("stop")]
            self.headline(
                "(f) recommended actors per learner",
                f"{rec.get('actors')} (x{rec.get('threads')} threads); most env steps/s: {best['actors']}",
                stops[-1] if stops else "no stop: the largest count measured was kept (sweep further)",
            )
        self.lines.append("")

    # ---- (c) replay

    def section_replay(self) -> None:
        d = self.data.get("replay")
        title = "(c) Replay access and sampling latency"
        res = [
            r
            for r in (d or {}).get("results", [])
            if not r.get("error") and not r.get("skipped") and r.get("push")
        ]
        if not d or not res:
            self.missing(title, ["replay"])
            return
        c = d.get("config", {})
        config = (
            f"items {c.get('item_bytes')} B, batch {c.get('batch')}, "
            f"{c.get('pushes_per_actor', c.get('pushes'))} pushes per actor, "
            f"{c.get('rounds')} learner rounds, "
            f"paths {c.get('paths')}, actors {c.get('actors')}, "
            f"quick={c.get('quick')}; every request crosses {self.switch_name()}"
        )
        self.head(title, d, config)
        paths = [
            p for p in ("switch", "host-sockets", "host-dpdk", "redis") if any(r["path"] == p for r in res)
        ]
        paths += sorted({r["path"] for r in res} - set(paths))
        actors = sorted({r["actors"] for r in res})
        by = {(r["path"], r["actors"]): r for r in res}
        baseline = "redis" if "redis" in paths else paths[-1]
        plt = _plt()
        fig, axes = plt.subplots(1, 3, figsize=(13, 4))
        for ax, op in zip(axes, REPLAY_OPS, strict=True):
            for p in paths:
                xs = [a for a in actors if (p, a) in by]
                ax.plot(xs, [by[(p, a)][op]["median_ms"] for a in xs], marker="o", label=p)
            ax.set_xlabel("actors")
            ax.set_ylabel(f"{op} median latency (ms)")
            ax.set_title(op)
            ax.set_xticks(actors)
            ax.legend(fontsize=7)
        name = self.png(fig, "replay")
        self.lines += [f"![replay latency]({name})", ""]
        rows = []
        for a in actors:
            for p in paths:
                r = by.get((p, a))
                if not r:
                    continue
                b = by.get((baseline, a))
                rows.append(
                    [
                        str(a),
                        p,
                        *(ms(r[op]["median_ms"]) for op in REPLAY_OPS),
                        *(
                            fmt_ratio(div(b[op]["median_ms"], r[op]["median_ms"]) if b else None)
                            for op in REPLAY_OPS
                        ),
                    ]
                )
        self.lines += md_table(
            [
                "actors",
                "path",
                *(f"{op} median ms" for op in REPLAY_OPS),
                *(f"{op}: {baseline} / path" for op in REPLAY_OPS),
            ],
            rows,
        )
        self.lines += [
            "",
            f"Ratios are {baseline}'s median latency over the path's at the same actor count "
            "(> 1: the path is faster). `switch` = in-network sampling (priorities in the switch); "
            "`host-sockets` = the same server without it. `redis`: the learner drains new records from "
            "Redis into its own sum-tree inside sample (purely local when none arrived since the last "
            "round) and updates priorities locally, so its sample and update are not network round "
            "trips like the other paths'.",
            "",
        ]
        if "switch" in paths and "host-sockets" in paths:
            cmp_rows = []
            for a in actors:
                s, h = by.get(("switch", a)), by.get(("host-sockets", a))
                if s and h:
                    cmp_rows.append(
                        [
                            str(a),
                            *(fmt_ratio(div(h[op]["median_ms"], s[op]["median_ms"])) for op in REPLAY_OPS),
                        ]
                    )
            self.lines += ["With vs without in-network sampling (host-sockets / switch median latency):", ""]
            self.lines += md_table(["actors", *REPLAY_OPS], cmp_rows) + [""]
        top = actors[-1]
        cpu_rows = [replay_cpu_row(by[(p, a)], c) for a in actors for p in paths
                    if (p, a) in by and by[(p, a)].get("cpu_timed_phase")]  # fmt: skip
        if cpu_rows:
            self.lines += [
                "Where the CPU went during each timed phase: the learner's CPU per sample + update round "
                "and the actors' per push (user-space part in brackets; the rest is the kernel's packet "
                "path), the switch's and the server's cores in use, and how busy the machine was:",
                "",
            ]
            self.lines += md_table(
                ["actors", "path", "learner ms/round", "actors ms/push", "switch cores", "server cores",
                 "machine busy"],
                cpu_rows,
            ) + [""]  # fmt: skip
        if self.native_switch():
            limit = ("the kernel's cost per datagram at every hop (a 4 KB item is 3 datagrams), on 2 CPUs "
                     "shared with the switch, the server and the clients")
            both_cross = ("both paths' packets cross the switch and the hosts' Python socket calls, which "
                          "cost more than the server's kernel-socket path that DPDK removes")
        else:
            limit = "the Python software switch's per-packet cost on every path (all requests cross it)"
            both_cross = ("both paths' packets cross the Python software switch, whose per-packet cost "
                          "dwarfs the server's kernel-socket cost that DPDK removes")
        k, batch = int(c.get("switch_batch", 1)), int(c.get("batch", 32))
        if k > 1:
            per_item = (
                f"in-network sampling sends a batch of {batch} draws as {-(-batch // k)} datagrams of {k} "
                f"draws ({self.switch_name()} walks one draw per pass, by recirculation) and the server "
                f"answers each with its {k} items; the host path sends one request for the batch and "
                "gets the same item bytes back over the same hops: the switch path adds a switch pass "
                "per draw and per pushed item (its leaf, set as the PUSH_REPLY passes), and leaves the "
                "server's tree walk of a few microseconds per draw (bench/README.md, sixth and "
                "thirteenth passes)"
            )
        else:
            per_item = (
                "in-network sampling answers with one datagram per sampled item or update (a batch of "
                f"{batch} is {batch} packets through {self.switch_name()}), the host path with one "
                "request per batch"
            )
        redis_limit = (
            "Redis's learner samples its own local sum-tree (a network drain only when new records "
            "arrived), so its sample is partly local; " + limit
        )
        for op, num, den, what, why in (
            ("push", "redis", "switch", "push latency, switch path vs Redis", limit),
            ("sample", "redis", "switch", "sample latency, in-network sampling vs Redis", redis_limit),
            (
                "sample",
                "host-sockets",
                "switch",
                "sample latency, in-network sampling vs the same server",
                per_item,
            ),
            ("sample", "host-sockets", "host-dpdk", "sample latency, DPDK vs kernel sockets", both_cross),
        ):
            a, b = by.get((num, top)), by.get((den, top))
            if a and b:
                r = div(a[op]["median_ms"], b[op]["median_ms"])
                key = "sample_same_server" if (op, num, den) == ("sample", "host-sockets", "switch") else None
                if key and a.get("cpu_timed_phase") and b.get("cpu_timed_phase"):
                    (_, _, la, pa, *_), (_, _, lb, pb, *_) = replay_cpu_row(a, c), replay_cpu_row(b, c)
                    why += (f"; CPU in this run at {top} actors, {den} vs {num}: the learner {lb} vs {la} "
                            f"ms per round, the actors {pb} vs {pa} ms per push (table in (c)), on "
                            f"{(a['cpu_timed_phase'] or {}).get('cores')} cores they all share")  # fmt: skip
                self.headline(
                    f"(c) {what}",
                    f"{fmt_ratio(r)} ({num} / {den} median, {top} actors; > 1: {den} faster)",
                    why,
                    key,
                    met_mark(r, ">=", 1.3) if key else "-",
                )
        skipped = [r for r in d.get("results", []) if r.get("error") or r.get("skipped")]
        for r in skipped:
            self.lines.append(f"- {r['path']}, {r['actors']} actors: {r.get('error') or r.get('skipped')}")
        if skipped:
            self.lines.append("")

    # ---- (d) aggregation

    def section_aggregation(self) -> None:
        d = self.data.get("aggregation")
        title = "(d) Aggregation time per iteration: in-switch sync/async vs parameter server vs gloo"
        all_res = (d or {}).get("results", [])
        res, bad, errs = split_agg_results(all_res)
        if not d or not res:
            self.missing(title, ["aggregation"])
            return
        c = d.get("config", {})
        config = (
            f"one allreduce of a float32 tensor, workers {c.get('workers')}, sizes {c.get('sizes_kb')} KB, "
            f"repeat {c.get('repeat')}, slots {c.get('slots')}; in-switch on {self.switch_name()}: "
            "`switch` synchronous (exponent agreed through the switch), `switch-fixed` synchronous with a "
            "fixed exponent (the control for async), `switch-async` a result per chunk once k = "
            f"{c.get('async_threshold', 'N-1')} workers are in (fixed exponent)"
        )
        if not any(r["method"] == "switch-async" for r in res):
            config += " (switch-async not in this run's results)"
        # the switch methods may run at several packet widths: the widest (the software target's)
        # keeps the plain name and the targets, the others are columns named method@width
        widths = sorted({int(r["values_per_packet"]) for r in res if r.get("values_per_packet")})
        head_w = widths[-1] if widths else None

        def label(r: dict) -> str:
            v = r.get("values_per_packet")
            return r["method"] if v is None or v == head_w else f"{r['method']}@{v}"

        if widths:
            config += (f"; switch methods at {', '.join(map(str, widths))} values per packet (the plain "
                       f"names are {head_w}, the others are named method@width)")  # fmt: skip
        self.head(title, d, config)
        full = {(label(r), r["workers"], r["size_kb"]): r for r in res}
        by = {k: r["median_s"] for k, r in full.items()}
        # issue 15's points measured again with more calls per median (bench.aggregation --targets)
        t = self.data.get("aggregation_targets") or {}
        t_full = {(label(r), r["workers"], r["size_kb"]): r
                  for r in split_agg_results(t.get("results", []))[0]}  # fmt: skip
        t_by = {k: r["median_s"] for k, r in t_full.items()}
        k_of = {(r["workers"], r["size_kb"]): r for r in res if label(r) == "switch-async"}
        sizes = sorted({r["size_kb"] for r in res})
        workers = sorted({r["workers"] for r in res})
        methods = [m for m in AGG_METHODS if any(label(r) == m for r in res)]
        methods += sorted({label(r) for r in res} - set(methods))
        sync_ref = "switch-fixed" if "switch-fixed" in methods else "switch"
        plt = _plt()
        fig, axes = plt.subplots(1, len(sizes), figsize=(4 * len(sizes), 4), squeeze=False)
        for ax, sz in zip(axes[0], sizes, strict=True):
            for m in methods:
                xs = [w for w in workers if (m, w, sz) in by]
                ax.plot(xs, [by[(m, w, sz)] * 1e3 for w in xs], marker="o", label=m)
            ax.set_title(f"{sz} KB")
            ax.set_xlabel("workers")
            ax.set_ylabel("median ms per allreduce")
            ax.set_yscale("log")
            ax.set_xticks(workers)
            ax.legend(fontsize=7)
        name = self.png(fig, "aggregation")
        self.lines += [f"![aggregation time]({name})", ""]

        def k_text(w: int, sz: int) -> str:
            r = k_of.get((w, sz))
            if not r:
                return "-"
            mc = r.get("mean_count_timed")
            return f"k={r.get('threshold')}/{w}" + (f", {mc:.2g} summed" if mc is not None else "")

        rows = []
        for sz in sizes:
            for w in workers:
                vals = {m: by.get((m, w, sz)) for m in methods}
                if not any(v is not None for v in vals.values()):
                    continue
                rows.append(
                    [
                        str(w),
                        str(sz),
                        *(ms(None if vals[m] is None else vals[m] * 1e3) for m in methods),
                        fmt_ratio(div(vals.get("switch"), vals.get("gloo"))),
                        fmt_ratio(div(vals.get("switch"), vals.get("ps"))),
                        fmt_ratio(div(vals.get("switch-async"), vals.get(sync_ref))),
                        k_text(w, sz),
                    ]
                )
        self.lines += md_table(
            ["workers", "size KB", *(f"{m} ms" for m in methods), "switch / gloo", "switch / ps",
             f"switch-async / {sync_ref}", "async: results sum"],
            rows,
        )  # fmt: skip
        vtext = f"{head_w or 32}-value"
        pps_limit = (
            (f"CPU: 2 cores shared by the workers' kernel UDP send/receive per {vtext} packet (the "
             "protocol loop itself is C), the switch's per-packet work, against TCP's 1448-byte "
             "segments and gloo's few large writes"
             if self.native_switch() else
             f"the software switch's packets/s ({vtext} packets) against TCP's 1448-byte segments")
            + "; (e) models a line-rate switch instead; (d3) gives the hosts NIC offloads"
        )
        async_limit = (
            "workers of equal speed here: async saves only the wait for the last one while the late "
            "worker's packets still cost the switch, and each result sums k of N gradients"
        )
        cpu_rows, cores = [], "?"
        def at_every_point(d: dict, methods: tuple[str, ...]) -> bool:
            return all((m, *p) in d for p in AGG_TARGET_POINTS for m in methods)

        # the targets' run when it has every point of the switch method and the parameter server
        # (as for the ratios below), else the grid
        t_whole = at_every_point(t_full, ("switch", "ps"))
        cpu_src = t_full if t_whole else full
        for (w, sz), m in ((p, m) for p in AGG_TARGET_POINTS for m in ("switch", "ps", "gloo")):
            r = cpu_src.get((m, w, sz)) or {}
            cpu = r.get("cpu_per_call")
            if not cpu:
                continue
            busy, cores = cpu.get("machine_busy"), cpu.get("cores", cores)
            cpu_rows.append([
                str(w), str(sz), m, ms(r["median_s"] * 1e3),
                *(cpu_role_text(cpu.get(k)) for k in ("switch", "workers", "server", "driver")),
                f"{cpu_total_ms(r):.1f}", "-" if busy is None else f"{busy:.0%}",
            ])  # fmt: skip
        if cpu_rows:
            self.lines += [
                "",
                "Where each call's time goes at issue 15's points"
                + (f" ({t.get('_file', 'aggregation-targets.json')}, medians of "
                   f"{(t.get('config') or {}).get('repeat')} calls)" if t_whole else "")
                + ": CPU per timed call in ms (user-space part in brackets; "
                "the rest is the kernel's packet path) of the switch process, all workers together, "
                "the parameter server and the benchmark's driver, and how busy the machine's "
                f"{cores} cores were "
                "over the timed calls. On a machine that stays busy the call takes about total CPU / "
                "(cores x busy share): the methods compare by the CPU they need.",
                "",
            ]
            self.lines += md_table(
                ["workers", "size KB", "method", "median ms", "switch", "workers", "ps server", "driver",
                 "total", "machine busy"],
                cpu_rows,
            )  # fmt: skip
        for num, den in (("switch", "gloo"), ("switch", "ps"), ("switch-async", sync_ref)):
            common = [(w, sz) for sz in sizes for w in workers if (num, w, sz) in by and (den, w, sz) in by]
            if not common:
                continue
            key = {"gloo": "agg_gloo", "ps": "agg_ps"}.get(den) if num == "switch" else None
            # the targets' own run when it has every point of both methods, else the grid
            src_by, src_full, src_note = by, full, ""
            if key and at_every_point(t_by, (num, den)):
                src_by, src_full = t_by, t_full
                grid = ", ".join(fmt_ratio(div(by.get((num, *p)), by.get((den, *p))))
                                 for p in AGG_TARGET_POINTS)  # fmt: skip
                src_note = (f"; medians of {(t.get('config') or {}).get('repeat')} calls, "
                            f"{t.get('_file', 'aggregation-targets.json')}; the grid's medians of "
                            f"{c.get('repeat')}: {grid}")  # fmt: skip
                common = AGG_TARGET_POINTS
            at_target = [p for p in AGG_TARGET_POINTS if p in common] if key else []
            if key and at_target:  # issue 15's points: every one measured, each against the bound
                bound = AGG_BOUNDS[key]
                ratios = [div(src_by[(num, w, sz)], src_by[(den, w, sz)]) for w, sz in at_target]
                text = ", ".join(
                    f"{fmt_ratio(r)} at {w} x {sz} KB" for (w, sz), r in zip(at_target, ratios, strict=True)
                )
                if any(r is None or r >= bound for r in ratios):
                    met = "no"
                elif len(at_target) < len(AGG_TARGET_POINTS):
                    met = f"? ({len(at_target)} of {len(AGG_TARGET_POINTS)} points measured)"
                else:
                    met = "yes"
                at = f" ({head_w} values/packet)" if head_w else ""
                cpu_ratios = [div(cpu_total_ms(src_full.get((num, *p))),
                                  cpu_total_ms(src_full.get((den, *p)))) for p in at_target]  # fmt: skip
                limit = pps_limit
                if den == "ps" and all(r is not None for r in cpu_ratios):
                    limit = (f"the {num} method needs {', '.join(fmt_ratio(r) for r in cpu_ratios)} of "
                             "the parameter server's CPU per call at these points (the CPU table in (d): "
                             "the server's traffic crosses the switch twice and a server process), and "
                             f"a call's time follows its CPU on the {cores} shared cores. "
                             + pps_limit)  # fmt: skip
                self.headline(f"(d) allreduce time, {num}{at} / {den}",
                              f"{text} (< 1: {num} faster{src_note})", limit, key, met)  # fmt: skip
                for other in (m for m in methods if m.startswith(f"{num}@")):  # the other widths, no target
                    pts = [p for p in AGG_TARGET_POINTS if (other, *p) in by and (den, *p) in by]
                    if pts:
                        self.headline(
                            f"(d) allreduce time, {other.replace('@', ' (') + ' values/packet)'} / {den}",
                            ", ".join(
                                f"{fmt_ratio(div(by[(other, *p)], by[(den, *p)]))} at {p[0]} x {p[1]} KB"
                                for p in pts
                            ),
                            "the same, with more packets per tensor",
                        )  # fmt: skip
                continue
            w, sz = max(common, key=lambda x: (x[1], x[0]))  # the largest point both measured
            extra = f", {k_text(w, sz)}" if num == "switch-async" else ""
            self.headline(
                f"(d) allreduce time, {num} / {den}",
                f"{fmt_ratio(div(by[(num, w, sz)], by[(den, w, sz)]))} ({w} workers, {sz} KB{extra}; "
                f"< 1: {num} faster)",
                async_limit if num == "switch-async" else pps_limit,
                key,
                "- (its points, 4 and 8 workers x 100 KB and 1 MB, not measured)" if key else "-",
            )
        na = sorted({r["workers"] for r in all_res if r.get("not_applicable")})
        if na:
            self.lines += ["", f"switch-async with {na} worker(s): not applicable (async needs 2+)."]
        self.lines += [
            "",
            "Ratios are time over time: < 1 means the first-named method is faster. "
            f"switch-async is compared with {sync_ref}"
            + (
                " (same fixed exponent, so the ratio isolates the threshold)"
                if sync_ref == "switch-fixed"
                else " (not measured: the sync run's bootstrap round per slot is in the ratio)"
            )
            + "; its results sum k of N workers' gradients (last column: threshold, mean workers "
            "summed per received chunk). "
            + (f"The cost per {vtext} packet on 2 shared cores (the workers' kernel UDP path and the "
               "switch's per-packet work), not the method, bounds the in-switch times on this "
               "target (the native switch forwards ~1 M packets/s; see its section)." if self.native_switch()
               else "The software switch's packets/s, not the method, bounds the in-switch times on this "
               "target."),
            "",
        ]
        self.lines += agg_problem_lines(bad, errs)

    def section_straggler(self) -> None:
        d = self.data.get("aggregation_straggler")
        title = "(d2) Aggregation with one straggler: in-switch async vs sync"
        res, bad, errs = split_agg_results((d or {}).get("results", []))
        if not d:
            self.missing(title, ["aggregation-straggler"])
            return
        c = d.get("config", {})
        delay = float(c.get("straggler_ms") or 0)
        if not res:
            self.lines += [
                f"## {title}",
                "",
                f"**{NOT_MEASURED}:** every point of `{d.get('_file')}` failed.",
            ]
            self.lines += agg_problem_lines(bad, errs)
            return
        self.head(
            title,
            d,
            f"as (d), workers {c.get('workers')}, sizes {c.get('sizes_kb')} KB, repeat {c.get('repeat')}; "
            f"worker N-1 sleeps {delay:g} ms before each call (a slow compute step) and a call's time is "
            "the slowest of the other workers; in switch-async the others keep the job going with untimed "
            "calls until the straggler's last call is done",
        )
        by = {(r["method"], r["workers"], r["size_kb"]): r for r in res}
        methods = [m for m in AGG_METHODS if any(r["method"] == m for r in res)]
        points = sorted({(r["workers"], r["size_kb"]) for r in res})
        sync_ref = "switch-fixed" if "switch-fixed" in methods else "switch"
        rows = []
        for w, sz in points:
            vals = {m: (by[(m, w, sz)]["median_s"] if (m, w, sz) in by else None) for m in methods}
            a = by.get(("switch-async", w, sz))
            rows.append(
                [
                    str(w),
                    str(sz),
                    *(ms(None if vals[m] is None else vals[m] * 1e3) for m in methods),
                    fmt_ratio(div(vals.get("switch-async"), vals.get(sync_ref))),
                    f"k={a.get('threshold')}/{w}" if a else "-",
                ]
            )
        self.lines += md_table(
            ["workers", "size KB", *(f"{m} ms" for m in methods), f"switch-async / {sync_ref}", "async k"],
            rows,
        )
        both = [(w, sz) for w, sz in points if ("switch-async", w, sz) in by and (sync_ref, w, sz) in by]
        if both:
            w, sz = max(both, key=lambda x: (x[1], x[0]))
            r = div(by[("switch-async", w, sz)]["median_s"], by[(sync_ref, w, sz)]["median_s"])
            k = by[("switch-async", w, sz)].get("threshold")
            self.headline(
                f"(d2) allreduce with a {delay:g} ms straggler, switch-async / {sync_ref}",
                f"{fmt_ratio(r)} ({w} workers, {sz} KB; results sum k={k} of {w} gradients; "
                "< 1: switch-async faster)",
                "sync waits for the straggler each call, async (k = N-1) does not; async still carries the "
                "late worker's packets, and its results leave out the straggler's gradient",
            )
        self.lines += [
            "",
            "The straggler's own call times are in the JSON (`straggler.own_seconds`); ratios are time "
            "over time (< 1: switch-async faster). The ratio depends on the chosen delay: a synchronous "
            "call takes about the delay plus its own time.",
            "",
        ]
        self.lines += agg_problem_lines(bad, errs)

    def section_offloads(self) -> None:
        """(d3): issue 15's allreduce points with the hosts' NIC offloads modelled (every link with
        TSO/USO, the switch's ports in offload mode): a figure of its own, no target."""
        d = self.data.get("aggregation_offloads")
        title = "(d3) Aggregation with NIC offloads on the hosts: in-switch vs parameter server vs gloo"
        if not d:
            self.missing(title, ["aggregation-offloads"])
            return
        res, bad, errs = split_agg_results(d.get("results", []))
        c = d.get("config", {})
        self.head(
            title,
            d,
            f"as (d), workers {c.get('workers')}, sizes {c.get('sizes_kb')} KB, repeat {c.get('repeat')}, "
            f"switch at {', '.join(map(str, c.get('values_per_packet') or []))} values per packet; checksum "
            "and segmentation offloads (TSO, UDP GSO) on every link and the switch's ports in offload mode: "
            "hosts hand over TCP and UDP super-frames of up to 64 KiB, the P4 program still runs per wire "
            "packet, and runs of one flow's output frames go back as super-frames",
        )
        by = {(r["method"], r["workers"], r["size_kb"]): r["median_s"] for r in res}
        points = sorted({(r["workers"], r["size_kb"]) for r in res})
        rows = [
            [str(w), str(sz),
             *(ms(by[(m, w, sz)] * 1e3) if (m, w, sz) in by else "-" for m in ("switch", "gloo", "ps")),
             fmt_ratio(div(by.get(("switch", w, sz)), by.get(("gloo", w, sz)))),
             fmt_ratio(div(by.get(("switch", w, sz)), by.get(("ps", w, sz))))]
            for w, sz in points
        ]  # fmt: skip
        self.lines += md_table(
            ["workers", "size KB", "switch ms", "gloo ms", "ps ms", "switch / gloo", "switch / ps"], rows
        )
        limit = (
            "offloads cut TCP's per-byte kernel cost (64 KiB per pass), while the switch still runs its P4 "
            "program per ~1 KB wire packet on one data-path thread: its user-space work per call does not "
            "shrink (parsing, the 256 register updates and deparsing of each contribution; the updates "
            "cost 45% less since the Eleventh pass) and larger windows did not help (bench/README, Tenth "
            "and Eleventh passes)"
        )
        for den in ("gloo", "ps"):
            pts = [p for p in AGG_TARGET_POINTS if ("switch", *p) in by and (den, *p) in by]
            if pts:
                self.headline(
                    f"(d3) allreduce time with host NIC offloads, switch / {den}",
                    ", ".join(f"{fmt_ratio(div(by[('switch', *p)], by[(den, *p)]))} at {p[0]} x {p[1]} KB"
                              for p in pts) + " (< 1: switch faster)",
                    limit,
                )  # fmt: skip
        self.lines.append("")
        self.lines += agg_problem_lines(bad, errs)

    # ---- (e) scale model

    def section_scale(self) -> None:
        d = self.data.get("scale_model")
        title = "(e) Scale-model predictions (analytic, not measured)"
        if not d or not d.get("rows"):
            self.missing(title, ["scale_model"])
            return
        p = d.get("params", {})
        config = (
            f"model {p.get('model_bytes', 0) / 1e6:g} MB, "
            f"compute {p.get('compute_s', 0) * 1e3:.3g} ms per iteration, "
            f"window {p.get('window')}, hardware switch at line rate; {d.get('note', '')}"
        )
        self.head(title, d, config)
        rows_in = d["rows"]
        links = sorted({r["link_gbps"] for r in rows_in})
        plt = _plt()
        fig, axes = plt.subplots(1, len(links), figsize=(4.5 * len(links), 4), squeeze=False)
        for ax, link in zip(axes[0], links, strict=True):
            rs = sorted((r for r in rows_in if r["link_gbps"] == link), key=lambda r: r["workers"])
            for m in SCALE_METHODS:
                xs = [r["workers"] for r in rs if m in r["times"]]
                ax.plot(
                    xs, [r["times"][m]["total_s"] * 1e3 for r in rs if m in r["times"]], marker="o", label=m
                )
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{link:g} GbE")
            ax.set_xlabel("workers")
            ax.set_ylabel("predicted ms per iteration")
            ax.legend(fontsize=7)
        name = self.png(fig, "scale-model")
        self.lines += [f"![scale model]({name})", ""]
        rows = []
        for r in sorted(rows_in, key=lambda r: (r["link_gbps"], r["workers"])):
            sp = r.get("speedups", {})
            rows.append(
                [
                    f"{r['link_gbps']:g}",
                    str(r["workers"]),
                    *(
                        ms(r["times"][m]["total_s"] * 1e3) if m in r["times"] else "n/a"
                        for m in SCALE_METHODS
                    ),
                    *(
                        fmt_ratio(sp.get(k))
                        for k in ("sync_vs_ps", "sync_vs_ring", "async_vs_ps", "async_vs_ring")
                    ),
                ]
            )
        self.lines += md_table(
            [
                "GbE",
                "workers",
                *(f"{m} ms" for m in SCALE_METHODS),
                "sync vs PS",
                "sync vs ring",
                "async vs PS",
                "async vs ring",
            ],
            rows,
        )
        isw = d.get("iswitch")
        inputs = d.get("inputs") or {}
        vpp, vb, hdr = (
            (inputs.get(k) or {}).get("value")
            for k in ("values_per_packet", "value_bytes", "agg_header_bytes")
        )
        per_packet = (
            f"{vpp:g} values per packet ({vpp * vb:g} B of values under {hdr:g} B of headers and framing)"
            if vpp and vb and hdr
            else "the values per packet against the headers"
        )
        if isw:
            pred, pub, st = isw.get("predicted", {}), isw.get("published", {}), isw.get("setting", {})
            self.headline(
                "(e) model (not measured) vs iSwitch's published speedup",
                f"predicted sync {fmt_ratio(pred.get('sync_vs_ps'))} / async "
                f"{fmt_ratio(pred.get('async_vs_ps'))} over PS at {st.get('workers')} workers, "
                f"{st.get('link_gbps')} GbE, against published "
                f"{fmt_ratio(pub.get('sync'))} / {fmt_ratio(pub.get('async'))}",
                f"{per_packet}: at few workers a ring, 2(N-1)/N of the bytes, moves as little on the "
                "wire; then Amdahl with the compute per iteration (see Inputs) and the assumed link, "
                "RTT and window",
            )
            self.lines += [
                "",
                f"iSwitch comparison ({st.get('workers')} workers, {st.get('link_gbps')} GbE): predicted "
                f"sync vs PS {fmt_ratio(pred.get('sync_vs_ps'))}, "
                f"async vs PS {fmt_ratio(pred.get('async_vs_ps'))}; "
                f"published {fmt_ratio(pub.get('sync'))} sync, {fmt_ratio(pub.get('async'))} async.",
            ]
        if inputs:
            self.lines += [
                "",
                "Inputs: measured " + ", ".join(k for k, v in inputs.items() if v.get("kind") == "measured"),
            ]
            self.lines.append(
                "; assumed " + ", ".join(k for k, v in inputs.items() if v.get("kind") == "assumed") + "."
            )
        kf = (inputs.get("async_k_frac") or {}).get("value")
        self.lines += [
            "",
            "Speedups are the baseline's predicted time over in-switch's (> 1: in-switch faster)."
            + (
                f" The model's async threshold is k = ceil({kf:g} N) (input async_k_frac); (d) measures "
                "k = N-1 unless --async-threshold says otherwise, so the two async figures are different "
                "settings."
                if kf
                else ""
            ),
            "",
        ]

    # ---- extras

    def section_pps(self) -> None:
        d = self.data.get("softswitch_pps")
        title = "Software switch packets/s, both backends (what limits the in-switch timings)"
        if not d or not d.get("results"):
            self.missing(title, ["softswitch_pps"])
            return
        targets = d.get("targets") or {}
        self.head(title, d, "targets: agg32 native " + ", ".join(f"{k} {v}" for k, v in targets.items()))
        rows = []
        loads = [r for r in d["results"] if r.get("path") == "load"]
        for r in d["results"]:
            if r.get("path") == "load":
                continue
            if r.get("skipped"):
                rows.append([str(r.get("program")), str(r.get("backend")), str(r.get("path")), "skipped",
                             "-", "-"])
                continue
            ns = r.get("ns_per_packet") or (r.get("us_per_packet") and r["us_per_packet"] * 1000)
            if r.get("program") == "innet_agg4":  # switch CPU per contribution aggregated
                ns = r.get("switch_cpu_ns_per_packet")
            width = r.get("values_per_packet")
            name = str(r.get("program")) + (f"@{width}" if width else "")
            rows.append([name, str(r.get("backend", "python")), str(r.get("path")),
                         str(r.get("pps")), str(ns if ns else "-"), str(r.get("offered_pps", "-"))])
        self.lines += md_table(["program", "backend", "path", "packets/s",
                                "ns/packet (innet: switch CPU per contribution)", "offered packets/s"],
                               rows) + [""]
        senders = sorted({str(r["sender"]) for r in d["results"] if r.get("sender")})
        if senders:
            self.lines += [f"veth senders: {'; '.join(senders)}. Forwarded packets/s from the receiving "
                           "interfaces' kernel counters; innet_agg4: contributions aggregated per second "
                           "(the job's agg_aggregated counter), 4 workers on 4 ports.", ""]
        if loads:
            self.lines += md_table(["program", "backend", "load, cold cache (s)", "load, warm (s)"],
                                   [[str(r.get("program")), str(r.get("backend")), str(r.get("cold_s", "-")),
                                     str(r.get("warm_s", "-"))] for r in loads]) + [""]

        def pick(backend: str, path: str, program: str = "agg32") -> dict | None:
            return next((r for r in d["results"] if r.get("program") == program and r.get("path") == path
                         and r.get("backend", "python") == backend and r.get("pps") is not None), None)

        for path in ("in-process", "veth"):
            nat, py = pick("native", path), pick("python", path)
            if nat and py and not py["pps"]:
                self.headline(f"software switch agg32 {path}, native / python backend",
                              f"{nat['pps']:.0f} pps vs 0 (python forwards nothing under the same "
                              f"{py.get('offered_pps', 0):.0f} pps flood)",
                              "native: the kernel's send path; python: nothing forwarded in the measured "
                              "window (before RX_BATCH, softswitch/ports.py, its receive loop never let "
                              "the pipeline run under a flood)")
            elif nat and py:
                ratio = fmt_ratio(div(nat["pps"], py["pps"]))
                self.headline(f"software switch agg32 {path}, native / python backend",
                              f"{ratio} ({nat['pps']:.0f} vs {py['pps']:.0f} pps)",
                              "native: the kernel's send path (veth) or the 32 register accesses "
                              "(in-process); python: the interpreter per packet")
            elif nat or py:
                r = nat or py
                self.headline(f"software switch agg32 {path} ({r.get('backend', 'python')})",
                              f"{r['pps']:.0f} pps", "one backend measured")
        for agg in (r for r in d["results"] if r.get("program") == "innet_agg4" and r.get("path") == "veth"
                    and r.get("backend") == "native" and r.get("pps") is not None):
            width = f", {agg['values_per_packet']} values/packet" if agg.get("values_per_packet") else ""
            self.headline(f"innet.p4 aggregation, 4 workers over veth (native{width})",
                          f"{agg['pps']:.0f} contributions/s of {agg.get('offered_pps', 0):.0f} offered, "
                          f"{_num(agg.get('switch_cpu_ns_per_packet'))} ns of switch CPU each",
                          "the switch's core: the kernel's AF_PACKET receive and send, then the "
                          "pipeline (parser, 8 + V register cells, deparser)")

    def section_learning(self) -> None:
        got = [(k, self.data[k]) for k in ("make_run", "learning_apex", "learning_dp") if k in self.data]
        title = "Learning checks"
        if not got:
            self.missing(title, ["make-run", "learning-apex", "learning-dp"])
            return
        self.lines += [f"## {title}", ""]
        for k, d in got:
            if k == "make_run":
                self.make_run(d)
            elif k == "learning_apex":
                self.learning_apex(d)
            else:
                for r in d.get("results", []):
                    keys = ("run", "seed", "reached", "wall_s_to_target", "env_steps_to_target", "error")
                    desc = ", ".join(f"{x}={r[x]}" for x in keys if x in r)
                    self.lines.append(f"- data-parallel (`{d['_file']}`): {desc}")
                self.learning_dp(d)
        self.lines.append("")

    def learning_dp(self, d: dict) -> None:
        """learning-dp's headline row: sync-switch / sync-gloo wall-clock to the target per seed
        (a seed takes the same updates in both modes, so its ratio is the two runs' wall-clock per
        update, allreduce and shared computation together); with several seeds their median
        counts. A seed that only one mode brought to the target counts as won by that mode (as
        make-run counts a missed run as slower than any reached one); one neither did is left
        out and named."""
        modes = ("sync-switch", "sync-gloo")
        walls: dict[tuple[object, object], float | None] = {}
        for r in d.get("results", []):
            if r.get("run") in modes:
                reached = r.get("reached") and r.get("wall_s_to_target")
                walls[(r.get("run"), r.get("seed"))] = float(r["wall_s_to_target"]) if reached else None
        seeds = list(dict.fromkeys(seed for _, seed in walls))  # in the order they ran
        ratios: list[float] = []
        each: list[str] = []
        neither: list[str] = []
        for seed in seeds:
            if not all((m, seed) in walls for m in modes):
                continue
            sw, gl = walls[("sync-switch", seed)], walls[("sync-gloo", seed)]
            if sw is None and gl is None:
                neither.append(str(seed))
            elif sw is None:
                ratios.append(math.inf)
                each.append("switch missed")
            elif gl is None:
                ratios.append(0.0)
                each.append("gloo missed")
            else:
                ratios.append(sw / gl)
                each.append(fmt_ratio(sw / gl))
        if not ratios and not neither:
            return
        vpp = d.get("config", {}).get("values_per_packet")
        width = f"{vpp} values/packet, " if vpp else ""
        left_out = f"; seed(s) {', '.join(neither)}: neither mode reached the target" if neither else ""
        r = statistics.median(ratios) if ratios else None
        if r is None:
            shown, met = f"not reached by either mode (seeds {', '.join(neither)})", "no"
        else:
            value = {math.inf: "> any (switch missed)", 0.0: "< any (gloo missed)"}.get(r, fmt_ratio(r))
            if len(ratios) == 1:
                shown = f"{value} ({width}one seed: {each[0]}{left_out})"
            else:
                shown = f"{value} ({width}median of {len(ratios)} seeds: {', '.join(each)}{left_out})"
            met = met_mark(r, "<", 1.0)
        self.headline(
            "learning: wall-clock to target, sync-switch / sync-gloo",
            shown,
            "the in-switch allreduce time (same updates to target when both reach it)",
            "learning_dp",
            met,
        )

    def make_run(self, d: dict) -> None:
        """`make run`'s line and its two headline rows (time to the target, learner communication)."""
        t, share = d.get("time_to_target_s"), d.get("learner_communication_share")
        budget = (d.get("summary") or {}).get("time_budget_s")
        actor_share = _pct(d.get("actor_communication_share"))
        self.lines.append(
            f"- make run (`{d['_file']}`, {d.get('file')}): reached={d.get('reached_target')}, time to "
            f"target {_num(t)} s, env steps {d.get('env_steps_to_target')}, updates "
            f"{d.get('updates_to_target')}; learner {_num(d.get('learner_updates_per_s'))} updates/s, "
            f"communication {_pct(share)}; actors {_num(d.get('env_steps_per_s'))} env steps/s, "
            f"communication {actor_share}; best evaluation {d.get('best_eval_return')}; exit code "
            f"{d.get('exit_code')}"
        )
        runs = d.get("runs") or []
        median = d.get("median")
        if len(runs) > 1 and isinstance(median, dict):  # bench.make_run --runs N: the medians count
            for i, r in enumerate(runs, start=1):
                self.lines.append(
                    f"  - run {i}: reached={r.get('reached_target')}, time to target "
                    f"{_num(r.get('time_to_target_s'))} s, updates {r.get('updates_to_target')} at "
                    f"{_num(r.get('learner_updates_per_s'))} updates/s, learner communication "
                    f"{_pct(r.get('learner_communication_share'))}, exit code {r.get('exit_code')}"
                )
            t, share = median.get("time_to_target_s"), median.get("learner_communication_share")
            upd = median.get("updates_to_target")
            updates = (
                f"median of {len(runs)} runs: the learner's {_num(median.get('learner_updates_per_s'))} "
                f"updates/s to {_num(upd)} updates, with the switch, the replay "
                "server and four actors on the same CPUs; the updates the target takes vary from run to run"
            )
            best = max((r.get("best_eval_return") or 0 for r in runs), default=None)
            d = {**d, "best_eval_return": best}
        else:
            updates = (
                f"the learner's {_num(d.get('learner_updates_per_s'))} updates/s to "
                f"{d.get('updates_to_target')} updates, with the switch, the replay server and four actors "
                "on the same CPUs"
            )
        if t is not None:
            met = met_mark(t, "<=", 60)
            self.headline("make run: time to 475", f"{t:.0f} s", updates, "make_run_time", met)
        else:
            why = "not reached in half or more of the runs" if len(runs) > 1 else "not reached"
            why += f" (best evaluation {d.get('best_eval_return')}"
            why += f", budget {budget:g} s)" if isinstance(budget, (int, float)) else ")"
            self.headline("make run: time to 475", why, updates, "make_run_time", "no")
        self.headline(
            "make run: learner communication share",
            _pct(share),
            "the learner's waits for sample, update_priorities and set_params round trips through the switch",
            "make_run_comm",
            met_mark(share, "<=", 0.30),
        )

    def learning_apex(self, d: dict) -> None:
        """Ape-X's and the single-process DQN's lines, and the headline Ape-X / DQN."""
        n, target = d.get("num_actors"), d.get("target_return")
        if d.get("reached_target") is not None:  # None: Ape-X not run (--runs dqn)
            self.lines.append(
                f"- Ape-X (`{d['_file']}`): {n} actors, {d.get('env')}, target {target}: "
                f"reached={d.get('reached_target')}, wall to target {_num(d.get('wall_s_to_target'))} s, "
                f"env steps {d.get('env_steps_to_target')}, updates {d.get('updates_to_target')}; learner "
                f"{_num(d.get('learner_updates_per_s'))} updates/s, communication "
                f"{_pct(d.get('learner_communication_share'))}; learner time: "
                f"{_shares(d.get('learner_phase_totals_s'))}"
            )
        q = d.get("dqn")
        if not q:
            return
        st = q.get("settings") or {}
        replay = "prioritized" if st.get("prioritized") else "uniform"
        eps = f"{st.get('epsilon_start')} -> {st.get('epsilon_end')}"
        eps += f" over {st.get('epsilon_decay_steps')} steps"
        self.lines.append(
            f"- single-process DQN (`{d['_file']}`, same seed, target, time budget, network and learner "
            f"hyperparameters; one update every {st.get('train_frequency')} env steps, {replay} replay, "
            f"epsilon {eps}): reached={q.get('reached_target')}, wall to target "
            f"{_num(q.get('wall_s_to_target'))} s, env steps {q.get('env_steps_to_target')}, updates "
            f"{q.get('updates_to_target')}; {_num(q.get('updates_per_s'))} updates/s, "
            f"{_num(q.get('env_steps_per_s'))} env steps/s; time: {_shares(q.get('phase_totals_s'))}"
        )
        figure = TARGETS["apex_dqn"][0]
        if n and target:
            figure = f"Ape-X ({n} actors) time to {target:g} / single-process DQN"
        a_t, q_t = d.get("wall_s_to_target"), q.get("wall_s_to_target")
        budget = (d.get("settings") or {}).get("time_budget_s")
        seeds = d.get("seeds") or []
        for x in seeds:
            self.lines.append(
                f"  - seed {x.get('seed')}: Ape-X {_num(x.get('apex_wall_s_to_target'))} s "
                f"({x.get('apex_updates_to_target')} updates, "
                f"{_num(x.get('apex_learner_updates_per_s'))}/s), "
                f"DQN {_num(x.get('dqn_wall_s_to_target'))} s ({x.get('dqn_updates_to_target')} updates): "
                f"{fmt_ratio(x['apex_over_dqn']) if x.get('apex_over_dqn') else 'n/a'}")
        if len(seeds) > 1:
            med, all_ = d.get("apex_over_dqn_median"), d.get("apex_over_dqn_all") or []
            figure += f", median of {len(seeds)} seeds"
            if med:
                ratio = (f"{fmt_ratio(med)} (per seed: {', '.join(fmt_ratio(r) for r in all_)}; "
                         f"{len(all_)} of {len(seeds)} seeds with both at the target)")
                met = met_mark(med, "<", 1.0)
            else:
                ratio, met = "n/a (no seed where both reached the target)", "-"
        elif a_t and q_t:
            r = a_t / q_t
            ratio = f"{fmt_ratio(r)} ({a_t:.0f} s vs {q_t:.0f} s; < 1: Ape-X faster)"
            met = met_mark(r, "<", 1.0)
        elif a_t and budget:  # the baseline missed the target within the budget
            ratio, met = f"< {fmt_ratio(a_t / budget)} (DQN missed the target in {budget:g} s)", "yes"
        elif q_t and budget and d.get("reached_target") is False:
            ratio, met = f"> {fmt_ratio(budget / q_t)} (Ape-X missed the target in {budget:g} s)", "no"
        else:
            ratio, met = "n/a (neither reached the target)", "-"
        share = _pct(d.get("learner_communication_share"))
        seeds = d.get("seeds") or [{"apex_updates_to_target": d.get("updates_to_target"),
                                    "dqn_updates_to_target": q.get("updates_to_target")}]  # fmt: skip
        needed = ", ".join(
            f"{x.get('apex_updates_to_target')} vs {x.get('dqn_updates_to_target')}" for x in seeds
        )
        steps = d.get("actor_env_steps_per_s") or []
        env = (f"; environment steps/s: {_num(sum(steps))} ({len(steps)} actors) vs "
               f"{_num(q.get('env_steps_per_s'))}") if steps and q.get("env_steps_per_s") else ""  # fmt: skip
        limit = (
            f"updates/s: Ape-X's learner {_num(d.get('learner_updates_per_s'))} (communicating {share} of "
            f"its time), the single process {_num(q.get('updates_per_s'))}{env}; updates to the target "
            f"per seed, Ape-X vs DQN: {needed}. {APEX_DQN_LIMIT}"
        )
        st = d.get("settings") or {}
        if st.get("hidden") and st.get("lr"):  # the ratio depends on them (bench/README, Eighth pass)
            limit += f". Both at {st['hidden']} hidden units, lr {st['lr']:g}, batch {st.get('batch_size')}"
        self.headline(figure, ratio, limit, "apex_dqn", met)

    def section_status(self) -> None:
        b = self.run_all.get("benchmarks")
        if not b:
            return
        self.lines += ["## Benchmark runs", ""]
        rows = [
            [
                n,
                str(r.get("status")),
                f"{r.get('seconds', 0):.0f}",
                str(r.get("reason") or ""),
                f"`{r.get('log', '')}`",
            ]
            for n, r in b.items()
        ]
        self.lines += md_table(["benchmark", "status", "seconds", "note", "log"], rows) + [""]

    def build(self) -> str:
        started = self.run_all.get("started")
        self.lines = [
            "# innet-drl benchmark report",
            "",
            f"Results: `{self.results_dir}`"
            + (f" (run started {started}, quick={self.run_all.get('quick')})" if started else ""),
            "",
            f"Machine: {self.machine_fallback}",
            "",
            self.backend_line(),
            "",
            "All in-switch timings are of the project's software switch on this machine, not of a "
            "hardware switch; each ratio compares methods measured in the same run.",
            "",
        ]
        intro, self.lines = self.lines, []
        self.section_ratio()
        self.section_replay()
        self.section_aggregation()
        self.section_straggler()
        self.section_offloads()
        self.section_scale()
        self.section_advisor()
        self.section_pps()
        self.section_learning()
        self.section_status()
        for key, (figure, _) in TARGETS.items():  # every target has a row, measured or not
            if key not in self.targets_shown:
                bench = TARGET_BENCH[key]
                rec = (self.run_all.get("benchmarks") or {}).get(bench)
                why = "-"
                if rec:
                    why = f"`{bench}`: {rec.get('status')}: {rec.get('reason') or ''}".rstrip(": ")
                self.headline(figure, NOT_MEASURED, why, key)
        head = ["## Headline ratios", ""]
        head += md_table(["figure", "ratio (this run)", "target (issue 15)", "met?", "what limits it"],
                         self.headlines)  # fmt: skip
        head += ["", "A target's \"met?\" is this run's figure against it; \"-\": the figure has no target "
                 "or was not measured."]  # fmt: skip
        return "\n".join(intro + head + [""] + self.lines) + "\n"

    def native_switch(self) -> bool:
        """Whether this run's switches ran p4/innet.p4 natively (run_all.json's switch_backend)."""
        return (self.run_all.get("switch_backend") or {}).get("innet_p4") == "native"

    def switch_name(self) -> str:
        return ("the native software switch (P4 compiled to C)" if self.native_switch()
                else "the Python software switch")

    def backend_line(self) -> str:
        b = self.run_all.get("switch_backend")
        if not b:
            return "Switch backend: not recorded in this run (run_all.json predates the native backend)."
        text = f"Switch backend: **{b.get('innet_p4')}** for p4/innet.p4 (requested: {b.get('requested')})"
        return text + (f"; {b['why']}." if b.get("why") else ".")

    def write(self) -> Path:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        text = self.build()
        self.out.write_text(text)
        return self.out


def split_agg_results(results: list[dict]) -> tuple[list[dict], list[dict], list[dict]]:
    """bench.aggregation results: (timed with a good sum, timed with a bad sum, errors); a wrong
    sum is not a time to compare, and a not-applicable point is neither."""
    timed = [r for r in results if not r.get("error") and r.get("median_s") is not None]
    bad = [r for r in timed if r.get("check_ok") is False]
    good = [r for r in timed if r.get("check_ok") is not False]
    errs = [r for r in results if r.get("error") and not r.get("not_applicable")]
    return good, bad, errs


def agg_problem_lines(bad: list[dict], errs: list[dict]) -> list[str]:
    lines = [
        f"- {r['method']}, {r['workers']} workers, {r['size_kb']} KB: left out, its result check failed "
        f"(max relative error {r.get('max_rel_err')})"
        for r in bad
    ]
    lines += [f"- {r['method']}, {r['workers']} workers, {r['size_kb']} KB: {r['error']}" for r in errs]
    return lines + [""] if lines else []


def _num(x: object) -> str:
    return f"{x:.0f}" if isinstance(x, (int, float)) else "n/a"


def _pct(x: object) -> str:
    return f"{x:.0%}" if isinstance(x, (int, float)) else "n/a"


def _shares(totals: object) -> str:
    """Phase totals (s) as shares of their sum, largest first."""
    if not isinstance(totals, dict) or not totals:
        return "n/a"
    whole = sum(totals.values()) or 1.0
    return ", ".join(f"{k} {v / whole:.0%}" for k, v in sorted(totals.items(), key=lambda kv: -kv[1]))


def _gpu_text(g: object) -> str:
    if not g:
        return "no GPU"
    if isinstance(g, dict):
        util, mem = g.get("util_pct_mean"), g.get("mem_used_mib_max")
        parts = [str(g.get("name") or "GPU")]
        parts += [f"{util:.0f}% util"] if util is not None else []
        parts += [f"{mem:.0f} MiB"] if mem is not None else []
        return ", ".join(parts)
    return str(g)


def _mean_dicts(ds: list[dict]) -> dict[str, float]:
    keys = {k for d in ds for k in d}
    return {k: statistics.mean(float(d.get(k, 0.0)) for d in ds) for k in keys}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("results_dir", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "report.md")
    args = ap.parse_args(argv)
    if not args.results_dir.is_dir():
        print(f"bench.report: {args.results_dir} is not a directory", file=sys.stderr)
        return 2
    rep = Report(args.results_dir, args.out)
    rep.write()
    print(f"wrote {args.out} and {len(rep.pngs)} plots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
