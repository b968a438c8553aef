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
    assert NOT_MEASURED not in text[text.index("## (a)") :]
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
    # (d3) NIC offloads: switch 30 ms / gloo 15 ms = 2.00x at 4 x 1 MB, / ps 20 ms = 1.50x
    assert "| 4 | 1000 | 30 | 15 | 20 | 2.00x | 1.50x |" in text
    assert "## (d3) Aggregation with NIC offloads on the hosts" in text
    # headline table: one line per figure, its ratio from this run and what limits it
    head = text.split("## Headline ratios")[1].split("\n## ")[0]
    assert "| figure | ratio (this run) | target (issue 15) | met? | what limits it |" in head
    # a figure without a target: "-" in both columns
    assert "| (b) actor push rate vs ideal | 0.60x per actor (2 actors) | - | - | CPU contention" in head
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
    assert ("| (d3) allreduce time with host NIC offloads, switch / gloo | 1.00x at 4 x 100 KB, 2.00x at "
            "4 x 1000 KB, 0.50x at 8 x 100 KB, 1.25x at 8 x 1000 KB (< 1: switch faster) | - | - |") in head
    assert "| (d3) allreduce time with host NIC offloads, switch / ps | 2.00x at 4 x 100 KB, 1.50x" in head
    # issue 15's targets: (c) host-sockets / switch 2.00x against >= 1.3x; (d) measured at 2 workers
    # only, not at the target's points; Ape-X 60 s / DQN 48 s = 1.25x against < 1.0
    same_server = "(host-sockets / switch median, 1 actors; > 1: switch faster)"
    assert f"{same_server} | >= 1.3x (host-sockets / switch) | yes |" in head
    assert ("| (d) allreduce time, switch / gloo | 5.00x (2 workers, 100 KB; < 1: switch faster) | "
            "< 1.0 at 4 and 8 workers x 100 KB and 1 MB | - (its points, 4 and 8 workers x 100 KB and 1 MB, "
            "not measured) |") in head  # fmt: skip
    assert "| (d) allreduce time, switch / ps | 3.00x (2 workers, 100 KB; < 1: switch faster) | < 0.7" in head
    assert ("| Ape-X (4 actors) time to 475 / single-process DQN | 1.25x (60 s vs 48 s; < 1: Ape-X faster) | "
            "< 1.0 | no | updates/s: Ape-X's learner 200 (communicating 25% of its time), the single process "
            "250; environment steps/s: 1000 (4 actors) vs 1000; updates to the target per seed, Ape-X vs "
            "DQN: 11000 vs 12500.") in head  # fmt: skip
    # targets whose figure this run has no data for still have their row
    for figure, target in (("learning: wall-clock to target, sync-switch / sync-gloo", "< 1.0"),
                           ("make run: time to 475", "<= 60 s"),
                           ("make run: learner communication share", "<= 30%")):  # fmt: skip
        assert f"| {figure} | {NOT_MEASURED} | {target} | - | - |" in head
    # the learning section: both runs with their settings and where their time went
    learning = text.split("## Learning checks")[1]
    assert "- Ape-X (`learning-apex.json`): 4 actors, CartPole-v1, target 475.0: reached=True, wall to " \
        "target 60 s, env steps 48000, updates 11000; learner 200 updates/s, communication 25%; learner " \
        "time: computation 75%, sample 10%" in learning
    assert "- single-process DQN (`learning-apex.json`, same seed" in learning
    assert "one update every 4 env steps, prioritized replay, epsilon 1.0 -> 0.05 over 10000 steps): " \
        "reached=True, wall to target 48 s, env steps 52000, updates 12500; 250 updates/s, 1000 env " \
        "steps/s; time: learn 50%, replay 20%" in learning
    # each figure states its machine and configuration
    assert text.count("- machine: Fixture CPU, 2 CPUs") == 4  # ratio (a, b, f) and replay
    assert text.count("- configuration:") == 9
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
    # (a), (b), (c), (d2), (d3), (e), (f), softswitch and learning: not measured
    assert text.count(f"**{NOT_MEASURED}.**") == 9
    assert "`replay`: skipped: needs root" in text
    assert "`ratio`: failed: exit code 1" in text
    assert "`scale_model`: no result file" in text
    # a target whose benchmark did not run says why in its row
    head = text.split("## Headline ratios")[1].split("\n## ")[0]
    assert "| (c) sample latency, in-network sampling vs the same server | not measured in this run | " \
        ">= 1.3x (host-sockets / switch) | - | `replay`: skipped: needs root |" in head
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


def _learning_apex(tmp_path: Path, **change: object) -> str:
    data = json.loads((FIXTURES / "learning-apex.json").read_text())
    for k, v in change.items():
        if k.startswith("dqn_"):
            data["dqn"][k[4:]] = v
        else:
            data[k] = v
    res = tmp_path / "res"
    res.mkdir()
    (res / "learning-apex.json").write_text(json.dumps(data))
    text = _report(res, tmp_path / "out")
    return text.split("## Headline ratios")[1].split("\n## ")[0]


def test_apex_vs_dqn_when_one_misses_the_target(tmp_path: Path) -> None:
    head = _learning_apex(tmp_path, dqn_reached_target=False, dqn_wall_s_to_target=None)
    # Ape-X in 60 s, the baseline not within the 180 s budget: Ape-X is faster, by more than 3x
    assert "| Ape-X (4 actors) time to 475 / single-process DQN | < 0.33x (DQN missed the target in 180 s) " \
        "| < 1.0 | yes |" in head


def test_apex_vs_dqn_when_apex_is_faster(tmp_path: Path) -> None:
    settings = {"time_budget_s": 180.0, "seed": 0, "hidden": 64, "lr": 0.002, "batch_size": 128}
    head = _learning_apex(tmp_path, wall_s_to_target=24.0, settings=settings)
    assert "| 0.50x (24 s vs 48 s; < 1: Ape-X faster) | < 1.0 | yes |" in head
    # the ratio depends on the learner's settings: the row names them
    assert "(bench/README.md, Thirteenth pass). Both at 64 hidden units, lr 0.002, batch 128 |" in head


def test_apex_vs_dqn_median_of_several_seeds(tmp_path: Path) -> None:
    seeds = [{"seed": 0, "apex_wall_s_to_target": 60.0, "dqn_wall_s_to_target": 30.0, "apex_over_dqn": 2.0},
             {"seed": 1, "apex_wall_s_to_target": 40.0, "dqn_wall_s_to_target": 80.0, "apex_over_dqn": 0.5},
             {"seed": 2, "apex_wall_s_to_target": 45.0, "dqn_wall_s_to_target": 50.0, "apex_over_dqn": 0.9}]
    head = _learning_apex(tmp_path, seeds=seeds, apex_over_dqn_all=[2.0, 0.5, 0.9], apex_over_dqn_median=0.9)
    assert "single-process DQN, median of 3 seeds | 0.90x (per seed: 2.00x, 0.50x, 0.90x; 3 of 3 seeds " \
        "with both at the target) | < 1.0 | yes |" in head


def test_allreduce_targets_at_their_points(tmp_path: Path) -> None:
    """(d)'s targets name 4 and 8 workers x 100 KB and 1 MB: each measured point is shown, and the
    target is met only when all four are measured and under the bound."""
    base = json.loads((FIXTURES / "aggregation.json").read_text())
    rows = []
    times = {"switch": 0.05, "ps": 0.08, "gloo": 0.04}
    for w, sz in ((4, 100), (4, 1000)):
        for m, t in times.items():
            rows.append({"method": m, "workers": w, "size_kb": sz, "median_s": t * sz / 100, "check_ok": True,
                         "error": None})  # fmt: skip
    base["results"] = rows
    res = tmp_path / "res"
    res.mkdir()
    (res / "aggregation.json").write_text(json.dumps(base))
    head = _report(res, tmp_path / "out").split("## Headline ratios")[1].split("\n## ")[0]
    # switch / gloo 1.25x at both points: missed; switch / ps 0.62x at both, under 0.7, but 2 of 4 measured
    assert "| (d) allreduce time, switch / gloo | 1.25x at 4 x 100 KB, 1.25x at 4 x 1000 KB (< 1: switch " \
        "faster) | < 1.0 at 4 and 8 workers x 100 KB and 1 MB | no |" in head
    assert "| (d) allreduce time, switch / ps | 0.62x at 4 x 100 KB, 0.62x at 4 x 1000 KB (< 1: switch " \
        "faster) | < 0.7 at 4 and 8 workers x 100 KB and 1 MB | ? (2 of 4 points measured) |" in head


def test_allreduce_targets_from_their_own_run_with_cpu_per_call(tmp_path: Path) -> None:
    """bench.aggregation --targets (more calls per median) gives (d)'s target rows when it has
    every point, with the grid's ratios beside them; each point's CPU per call gets a row per
    method, and the (d) / ps row's limit names the switch method's CPU as a share of the
    parameter server's."""
    base = json.loads((FIXTURES / "aggregation.json").read_text())
    # (sys, user) ms per call; totals: switch 30 + workers 20 = 50; ps: switch 40 + server 20 +
    # workers 40 = 100
    none = (0.0, 0.0)
    cpu = {
        "switch": {"switch": (25.0, 5.0), "workers": (10.0, 10.0), "server": none, "driver": none},
        "ps": {"switch": (30.0, 10.0), "workers": (30.0, 10.0), "server": (15.0, 5.0), "driver": none},
    }

    def rows(times: dict[str, float], with_cpu: bool) -> list[dict]:
        out = []
        for w, sz in ((4, 100), (4, 1000), (8, 100), (8, 1000)):
            for m, t in times.items():
                r = {"method": m, "workers": w, "size_kb": sz, "median_s": t, "check_ok": True, "error": None}
                if with_cpu and m in cpu:
                    r["cpu_per_call"] = {
                        k: {"sys_ms": a, "user_ms": b, "total_ms": a + b} for k, (a, b) in cpu[m].items()
                    } | {"machine_busy": 0.8, "cores": 2}
                out.append(r)
        return out

    res = tmp_path / "res"
    res.mkdir()
    grid = {**base, "results": rows({"switch": 0.05, "ps": 0.05, "gloo": 0.05}, with_cpu=False)}
    (res / "aggregation.json").write_text(json.dumps(grid))
    targets = {**base, "benchmark": "aggregation_targets", "config": {**base["config"], "repeat": 30},
               "results": rows({"switch": 0.05, "ps": 0.08, "gloo": 0.04}, with_cpu=True)}  # fmt: skip
    (res / "aggregation-targets.json").write_text(json.dumps(targets))
    text = _report(res, tmp_path / "out")
    head = text.split("## Headline ratios")[1].split("\n## ")[0]
    ps_row = next(line for line in head.splitlines() if "(d) allreduce time, switch / ps" in line)
    assert "| 0.62x at 4 x 100 KB, 0.62x at 4 x 1000 KB, 0.62x at 8 x 100 KB, 0.62x at 8 x 1000 KB (< 1: " \
        "switch faster; medians of 30 calls, aggregation-targets.json; the grid's medians of " in ps_row
    assert ": 1.00x, 1.00x, 1.00x, 1.00x) | < 0.7 at 4 and 8 workers x 100 KB and 1 MB | yes |" in ps_row
    assert "the switch method needs 0.50x, 0.50x, 0.50x, 0.50x of the parameter server's CPU" in ps_row
    gloo_row = next(line for line in head.splitlines() if "(d) allreduce time, switch / gloo" in line)
    assert "| 1.25x at 4 x 100 KB" in gloo_row and "| no |" in gloo_row
    assert "parameter server's CPU" not in gloo_row  # gloo's CPU is not counted (no server, no switch hops)
    assert "| 8 | 1000 | switch | 50 | 30.0 (5.0) | 20.0 (10.0) | - | - | 50.0 | 80% |" in text
    assert "| 8 | 1000 | ps | 80 | 40.0 (10.0) | 40.0 (10.0) | 20.0 (5.0) | - | 100.0 | 80% |" in text

    # without the targets' run the grid's medians give the rows, as before
    (res / "aggregation-targets.json").unlink()
    head = _report(res, tmp_path / "out2").split("## Headline ratios")[1].split("\n## ")[0]
    ps_row = next(line for line in head.splitlines() if "(d) allreduce time, switch / ps" in line)
    assert "| 1.00x at 4 x 100 KB" in ps_row and "medians of 30" not in ps_row and "| no |" in ps_row


def test_replay_cpu_per_round_and_push_in_table_and_c_limit(tmp_path: Path) -> None:
    """bench.replay's CPU over each timed phase becomes the learner's CPU per round, the actors'
    per push and the switch's and server's cores; (c)'s limit quotes both paths' figures."""
    data = json.loads((FIXTURES / "replay.json").read_text())
    cpu = {  # ms over the timed phase, (total, user); 10 rounds, 2 actors x 5 pushes; 2 s phase
        "switch": {"learner": (30.0, 10.0), "actors": (50.0, 20.0), "switch": (400.0, 100.0),
                   "server": (200.0, 50.0)},
        "host-sockets": {"learner": (20.0, 10.0), "actors": (40.0, 20.0), "switch": (300.0, 100.0),
                         "server": (100.0, 50.0)},
    }  # fmt: skip
    for r in data["results"]:
        if r["path"] in cpu:
            r["timed_wall_s"] = 2.0
            r["latencies_s"] = {"sample": [0.001] * 10, "update": [0.001] * 10,
                                "push_per_actor": [[0.001] * 5, [0.001] * 5]}  # fmt: skip
            r["cpu_timed_phase"] = {
                k: {"total_ms": t, "user_ms": u, "sys_ms": t - u} for k, (t, u) in cpu[r["path"]].items()
            } | {"driver": {"total_ms": 0.0, "user_ms": 0.0, "sys_ms": 0.0}, "machine_busy": 0.9, "cores": 2}
    res = tmp_path / "res"
    res.mkdir()
    (res / "replay.json").write_text(json.dumps(data))
    text = _report(res, tmp_path / "out")
    assert "| 1 | switch | 3.00 (1.00) | 5.00 (2.00) | 0.20 | 0.10 | 90% |" in text
    assert "| 1 | host-sockets | 2.00 (1.00) | 4.00 (2.00) | 0.15 | 0.05 | 90% |" in text
    head = text.split("## Headline ratios")[1].split("\n## ")[0]
    c_row = next(line for line in head.splitlines() if "in-network sampling vs the same server" in line)
    assert "CPU in this run at 1 actors, switch vs host-sockets: the learner 3.00 (1.00) vs 2.00 (1.00) ms " \
        "per round, the actors 5.00 (2.00) vs 4.00 (2.00) ms per push" in c_row


def test_make_run_rows_from_its_summary(tmp_path: Path) -> None:
    """bench.make_run's JSON (the launcher's run_summary.json figures) gives the two make run rows."""
    from bench.make_run import result_from_summary

    summary = {
        "reached_target": True, "target_return": 475, "time_to_target_s": 51.2, "env_steps_to_target": 52000,
        "updates_to_target": 11000, "learner_communication_share": 0.59, "actor_communication_share": 0.1,
        "learner_updates_per_s": 215.0, "env_steps_per_s": 1000.0, "best_eval_return": 500.0,
        "time_budget_s": 660, "run_dir": "runs/make-run-x",
    }  # fmt: skip
    data = result_from_summary(summary, Path("topologies/star.yaml"), 0)
    assert data["bench"] == "make_run" and data["time_to_target_s"] == 51.2 and data["summary"] == summary
    res = tmp_path / "res"
    res.mkdir()
    (res / "make-run.json").write_text(json.dumps(data))
    text = _report(res, tmp_path / "out")
    head = text.split("## Headline ratios")[1].split("\n## ")[0]
    assert "| make run: time to 475 | 51 s | <= 60 s | yes | the learner's 215 updates/s to 11000" in head
    assert "| make run: learner communication share | 59% | <= 30% | no |" in head
    assert "- make run (`make-run.json`, topologies/star.yaml): reached=True, time to target 51 s" in text

    (res / "make-run.json").write_text(json.dumps(result_from_summary(
        {**summary, "reached_target": False, "time_to_target_s": None, "best_eval_return": 310.5},
        Path("topologies/star.yaml"), 3)))  # fmt: skip
    head = _report(res, tmp_path / "out2").split("## Headline ratios")[1].split("\n## ")[0]
    assert "| make run: time to 475 | not reached (best evaluation 310.5, budget 660 s) | <= 60 s | no |" \
        in head


def test_make_run_medians_of_several_runs(tmp_path: Path) -> None:
    """bench.make_run --runs N: the headline rows take the medians (a missed target counts as
    slower than any reached one), each run is listed, and half or more missed is 'not reached'."""
    from bench.make_run import result_from_summary, with_medians

    def run(t: float | None, updates: int | None, rate: float, share: float) -> dict:
        summary = {
            "reached_target": t is not None, "target_return": 475, "time_to_target_s": t,
            "updates_to_target": updates, "learner_updates_per_s": rate, "learner_communication_share": share,
            "best_eval_return": 500.0 if t is not None else 300.0, "time_budget_s": 660,
        }  # fmt: skip
        return result_from_summary(summary, Path("topologies/star.yaml"), 0 if t is not None else 3)

    data = with_medians([run(90.0, 9000, 100.0, 0.10), run(None, None, 110.0, 0.08),
                         run(60.0, 7000, 117.0, 0.12)])  # fmt: skip
    assert data["median"] == {"time_to_target_s": 90.0, "updates_to_target": 9000.0,
                              "learner_updates_per_s": 110.0,
                              "learner_communication_share": 0.10}  # fmt: skip
    assert len(data["runs"]) == 3 and data["reached_all"] is False
    assert data["time_to_target_s"] == 90.0  # the first run's figures stay at the top level
    res = tmp_path / "res"
    res.mkdir()
    (res / "make-run.json").write_text(json.dumps(data))
    text = _report(res, tmp_path / "out")
    head = text.split("## Headline ratios")[1].split("\n## ")[0]
    assert "| make run: time to 475 | 90 s | <= 60 s | no | median of 3 runs: the learner's 110 updates/s " \
        "to 9000 updates" in head
    assert "| make run: learner communication share | 10% | <= 30% | yes |" in head
    assert "  - run 2: reached=False, time to target n/a s, updates None at 110 updates/s" in text

    two_missed = with_medians([run(None, None, 100.0, 0.1), run(None, None, 100.0, 0.1),
                               run(50.0, 6000, 120.0, 0.1)])  # fmt: skip
    assert two_missed["median"]["time_to_target_s"] is None
    (res / "make-run.json").write_text(json.dumps(two_missed))
    head = _report(res, tmp_path / "out2").split("## Headline ratios")[1].split("\n## ")[0]
    assert "| make run: time to 475 | not reached in half or more of the runs (best evaluation 500.0, " \
        "budget 660 s) | <= 60 s | no |" in head


def test_learning_dp_median_of_seeds(tmp_path: Path) -> None:
    """learning-dp: one ratio per seed, the median in the headline; a seed only one mode brought to
    the target counts as won by that mode, one neither did is named and left out."""

    def result(run: str, seed: int, wall: float | None) -> dict:
        return {"run": run, "seed": seed, "reached": wall is not None, "wall_s_to_target": wall}

    def head_of(results: list[dict], name: str) -> str:
        data = {"benchmark": "learning_dp", "config": {"values_per_packet": 256}, "results": results}
        res = tmp_path / name
        res.mkdir()
        (res / "learning-dp.json").write_text(json.dumps(data))
        return _report(res, tmp_path / f"{name}-out").split("## Headline ratios")[1].split("\n## ")[0]

    row = "| learning: wall-clock to target, sync-switch / sync-gloo | "
    both = [result("sync-switch", 0, 12.0), result("sync-gloo", 0, 10.0),  # 1.2
            result("sync-switch", 1, 9.0), result("sync-gloo", 1, 10.0),   # 0.9
            result("sync-switch", 2, 8.0), result("sync-gloo", 2, 10.0)]   # 0.8
    head = head_of(both + [result("sync-switch", 3, None), result("sync-gloo", 3, None)], "a")
    assert row + "0.90x (256 values/packet, median of 3 seeds: 1.20x, 0.90x, 0.80x; seed(s) 3: neither " \
        "mode reached the target) | < 1.0 | yes |" in head
    # the switch missing two seeds that gloo reached: slower than any, the median says so
    missed = [result("sync-switch", 1, None), result("sync-gloo", 1, 10.0),
              result("sync-switch", 2, None), result("sync-gloo", 2, 10.0)]  # fmt: skip
    head = head_of(both[:2] + missed, "b")
    assert row + "> any (switch missed) (256 values/packet, median of 3 seeds: 1.20x, switch missed, " \
        "switch missed) | < 1.0 | no |" in head
    head = head_of([result("sync-switch", 5, 8.0), result("sync-gloo", 5, None)], "c")
    assert row + "< any (gloo missed) (256 values/packet, one seed: gloo missed) | < 1.0 | yes |" in head
    head = head_of(both[:2], "d")
    assert row + "1.20x (256 values/packet, one seed: 1.20x) | < 1.0 | no |" in head
    head = head_of([result("sync-switch", 0, None), result("sync-gloo", 0, None)], "e")
    assert row + "not reached by either mode (seeds 0) | < 1.0 | no |" in head
