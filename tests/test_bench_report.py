"""bench.report on small hand-written fixtures (tests/fixtures/bench/*.json, trimmed copies of
the real formats): each figure's section, its ratios (known answers) and its PNG; and missing
data giving "not measured in this run". No benchmark is run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from bench.report import NOT_MEASURED, main

FIXTURES = Path(__file__).parent / "fixtures" / "bench"
SECTIONS = ("(a) Execution-time breakdown", "(b) Actor push frequency", "(c) Replay access",
            "(d) Aggregation time", "(e) Scale-model predictions", "(f) CPU/GPU ratio advisor")  # fmt: skip


def _report(results: Path, out_dir: Path) -> str:
    out = out_dir / "report.md"
    assert main([str(results), "--out", str(out)]) == 0
    return out.read_text()


def test_full_fixture_report(tmp_path: Path) -> None:
    text = _report(FIXTURES, tmp_path)
    for s in SECTIONS:
        assert f"## {s}" in text
    assert NOT_MEASURED not in text.split("## Learning checks")[0]
    # (a) learner communication 20% at 1 actor, 40% at 2 -> 2.00x; actor comm. 20% / mean(30%, 50%) = 40%
    assert "| 1 | 80% | - | - | 20% | 80% | 10% | 5% | 5% | 20% | 20% | 1.00x |" in text
    assert "| 2 | 60% | - | - | 40% | 60% | 20% | 10% | 10% | 40% | 40% | 2.00x |" in text
    # (b) 600 env steps/s per actor at 2 actors against 1000 at 1 -> 0.60x
    assert "| 2 | 1200 | 600 | 1000 | 0.60x |" in text
    # (c) redis / switch = 8/2, 4/1, 2/0.5 = 4x; redis / host-sockets = 2x; host-sockets / switch = 2x
    assert "| 1 | switch | 2 | 1 | 0.5 | 4.00x | 4.00x | 4.00x |" in text
    assert "| 1 | host-sockets | 4 | 2 | 1 | 2.00x | 2.00x | 2.00x |" in text
    assert "| 1 | 2.00x | 2.00x | 2.00x |" in text
    assert "host-dpdk, 1 actors: libdpdk not found" in text
    # (d) switch 300, fixed 200, async 240, ps 100, gloo 60 ms -> 5.00x, 3.00x, async/fixed 1.20x
    assert "| 2 | 100 | 300 | 200 | 240 | 100 | 60 | 5.00x | 3.00x | 1.20x | k=1/2, 1 summed |" in text
    assert "switch-async with [1] worker(s): not applicable" in text
    assert "- switch-async, 1 workers" not in text  # not applicable is not an error
    # a result whose sum was wrong is listed, not timed: no 10 KB row, no 10 KB plot panel
    assert "- switch, 2 workers, 10 KB: left out, its result check failed" in text
    assert "| 2 | 10 |" not in text
    # (e) the model's own speedups and the iSwitch line
    assert "| 10 | 8 | 40 | 30 | 100 | 60 | 2.50x | 1.50x | 3.33x | 2.00x |" in text
    assert "published 3.66x sync, 3.71x async" in text
    assert "Inputs: measured compute_s" in text
    # (f) the sweep's rates and cores, and the recommendation with its reasons
    assert "| 2 | 1 | 1200 | 50.0 | 0.60 | 1.30 | 0.10 | 95% | no GPU |" in text
    assert "**Recommendation: 1 actor(s) per learner, 1 thread(s) each.**" in text
    assert "- 2 actors: learner updates/s 50.0 is 50% of the best" in text
    # (d2) one straggler: async 300 ms / fixed 500 ms -> 0.60x
    assert "| 4 | 100 | 500 | 300 | 0.60x | k=3/4 |" in text
    assert "worker N-1 sleeps 200 ms before each call" in text
    # headline table: one line per figure, its ratio from this run and what limits it
    head = text.split("## Headline ratios")[1].split("\n## ")[0]
    assert "| (b) actor push rate vs ideal | 0.60x per actor (2 actors) | CPU contention" in head
    assert "| (d) allreduce time, switch / gloo | 5.00x (2 workers, 100 KB" in head
    assert "| (d) allreduce time, switch-async / switch-fixed | 1.20x (2 workers, 100 KB, k=1/2" in head
    assert (
        "| (c) sample latency, in-network sampling vs Redis | 4.00x (redis / switch median, 1 actors; > 1"
        in head
    )
    assert "| (e) model (not measured) vs iSwitch" in head
    assert (
        "learner updates/s 50.0 is 50% of the best 100.0 (< 80%): the actors take the learner's CPU; stop"
        in head
    )
    assert "| (f) recommended actors per learner | 1 (x1 threads)" in head
    assert "against published 3.66x / 3.71x" in head
    assert "| (d2) allreduce with a 200 ms straggler, switch-async / switch-fixed | 0.60x (4 workers" in head
    # each figure states its machine and configuration
    assert text.count("- machine: Fixture CPU, 2 CPUs") == 4  # ratio (a, b, f) and replay
    assert text.count("- configuration:") == 8
    for name in ("breakdown", "push-frequency", "replay", "aggregation", "scale-model", "ratio"):
        png = tmp_path / f"report-{name}.png"
        assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({png.name})" in text


def test_actor_phases_from_run_dir(tmp_path: Path) -> None:
    """With the actors' summary.json files in the point's run_dir, pull and push are split."""
    data = json.loads((FIXTURES / "ratio.json").read_text())
    for p in data["points"]:
        run = tmp_path / "runs" / f"a{p['actors']}"
        for i in range(p["actors"]):
            (run / f"actor{i}").mkdir(parents=True)
            totals = {"computation": 7.0, "pull_params": 1.0, "push_experiences": 2.0}
            (run / f"actor{i}" / "summary.json").write_text(json.dumps({"phase_totals_s": totals}))
        p["run_dir"] = str(run)
    res = tmp_path / "res"
    res.mkdir()
    (res / "ratio.json").write_text(json.dumps(data))
    text = _report(res, tmp_path)
    assert "| 1 | 70% | 10% | 20% | - |" in text
    assert "actors' own summary.json" in text


def test_missing_data_says_not_measured(tmp_path: Path) -> None:
    res = tmp_path / "res"
    res.mkdir()
    shutil.copy(FIXTURES / "aggregation.json", res)
    benches = {
        "replay": {"status": "skipped", "reason": "needs root", "log": "logs/replay.log"},
        "ratio": {"status": "failed", "reason": "exit code 1", "rc": 1, "seconds": 3.0},
    }
    run_all = {"benchmark": "run_all", "machine": "Fixture CPU, 2 CPUs", "quick": True, "benchmarks": benches}
    (res / "run_all.json").write_text(json.dumps(run_all))
    text = _report(res, tmp_path / "out")
    for s in SECTIONS:
        assert f"## {s}" in text
    assert "## (d) Aggregation time" in text and "5.00x" in text
    # (a), (b), (c), (d2), (e), (f), softswitch and learning: not measured
    assert text.count(f"**{NOT_MEASURED}.**") == 8
    assert "`replay`: skipped: needs root" in text
    assert "`ratio`: failed: exit code 1" in text
    assert "`scale_model`: no result file" in text
    assert (tmp_path / "out" / "report-aggregation.png").is_file()
    assert not (tmp_path / "out" / "report-replay.png").exists()
    assert "Machine: Fixture CPU, 2 CPUs (from run_all.json)" in text


def test_straggler_figure_with_only_failed_points_says_so(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "aggregation-straggler.json").read_text())
    data["results"][1] = {**data["results"][1], "median_s": None, "error": "AggregationTimeout: no result"}
    data["results"][0]["check_ok"] = False
    res = tmp_path / "res"
    res.mkdir()
    (res / "aggregation-straggler.json").write_text(json.dumps(data))
    text = _report(res, tmp_path / "out")
    d2 = text.split("## (d2)")[1].split("\n## ")[0]
    assert f"**{NOT_MEASURED}:** every point of `aggregation-straggler.json` failed." in d2
    assert "- switch-async, 4 workers, 100 KB: AggregationTimeout: no result" in d2
    assert "- switch-fixed, 4 workers, 100 KB: left out, its result check failed" in d2
    assert "(d2) allreduce" not in text  # no headline from failed points
