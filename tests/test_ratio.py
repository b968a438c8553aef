"""bench.ratio: the recommendation rule, the /proc and nvidia-smi parsing, the JSON/PNG writer on a
fixture, and one real tiny sweep point (1 actor, CartPole, the C server on loopback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import ratio
from topologies.replay_server import SERVER_BIN


def pt(actors: int, env: float, ups: float, threads: int = 1) -> dict:
    return {"actors": actors, "threads": threads, "env_steps_per_s": env, "learner_updates_per_s": ups}


# ---------------------------------------------------------------- the rule


def test_rule_stops_where_the_learner_slows() -> None:
    # 1->2 +80%, 2->4 +17% (learner at 93%): kept; 8 actors: learner at 50% of its best: stop at 4
    points = [pt(1, 1000, 300), pt(2, 1800, 290), pt(4, 2100, 280), pt(8, 2600, 150)]
    rec = ratio.recommend(points)
    assert (rec["actors"], rec["threads"]) == (4, 1)
    assert "50% of the best 300.0" in rec["why"][3] and "stop" in rec["why"][3]


def test_rule_stops_where_collection_saturates() -> None:
    # 2 actors add only +5% env steps/s: 1 actor is the answer even though the learner is unhurt
    points = [pt(1, 1000, 300), pt(2, 1050, 300), pt(4, 3000, 300)]
    rec = ratio.recommend(points)
    assert rec["actors"] == 1
    assert "+5%" in rec["why"][1] and "collection saturated" in rec["why"][1]
    # a looser gain threshold keeps walking
    assert ratio.recommend(points, min_gain=0.04)["actors"] == 4


def test_rule_largest_count_and_thread_choice() -> None:
    one = [pt(1, 1000, 300), pt(2, 2000, 300)]
    two = [pt(1, 900, 300, threads=2), pt(2, 1500, 290, threads=2), pt(4, 1600, 280, threads=2)]
    failed = {"actors": 8, "threads": 1, "error": "boom"}
    rec = ratio.recommend([*one, *two, failed])
    assert (rec["actors"], rec["threads"]) == (2, 1)  # 2000 env steps/s beats threads 2's 1500
    assert rec["per_threads"][2]["actors"] == 2  # 4 actors: +7% only
    assert any("largest count measured" in w for w in rec["why"])
    assert ratio.recommend([failed])["actors"] is None


def test_rule_drop_threshold_is_relative_to_the_best() -> None:
    points = [pt(1, 1000, 100), pt(2, 2000, 79)]
    assert ratio.recommend(points)["actors"] == 1  # 79% < 80%
    assert ratio.recommend(points, max_drop=0.25)["actors"] == 2


# ---------------------------------------------------------------- /proc parsing

PROC_STAT = """cpu  100 5 50 800 20 3 2 0 10 0
cpu0 50 2 25 400 10 1 1 0 5 0
cpu1 50 3 25 400 10 2 1 0 5 0
intr 12345 0 0
ctxt 999
"""


def test_parse_proc_stat() -> None:
    busy, total = ratio.parse_proc_stat(PROC_STAT)
    assert total == 100 + 5 + 50 + 800 + 20 + 3 + 2 + 0  # guest (10) is inside user already
    assert busy == total - 800 - 20
    with pytest.raises(ValueError):
        ratio.parse_proc_stat("cpu0 1 2 3 4\n")


def test_parse_pid_stat_with_a_strange_name() -> None:
    text = "4242 (py (thon) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 317 42 0 0 20 0 3 0 555 0 0\n"
    assert ratio.parse_pid_stat(text) == 317 + 42


def test_window_figures() -> None:
    t0 = {"learner": 100, "actor0": 50, "actor1": 60, "replay_server": None}
    t1 = {"learner": 500, "actor0": 250, "actor1": 260, "replay_server": 7}
    s0 = ratio.Snapshot(t=10.0, inserts=1000, samples=0, cpu_busy=500, cpu_total=1000, ticks=t0)
    s1 = ratio.Snapshot(t=14.0, inserts=5000, samples=128 * 200, cpu_busy=1300, cpu_total=1800, ticks=t1)
    f = ratio.window_figures(s0, s1, batch_size=128, num_actors=2, clk_tck=100.0)
    assert f["env_steps_per_s"] == pytest.approx(1000.0)
    assert f["env_steps_per_s_per_actor"] == pytest.approx(500.0)
    assert f["learner_updates_per_s"] == pytest.approx(50.0)
    assert f["replay_ratio"] == pytest.approx(128 * 200 / 4000)
    assert f["machine_cpu_util"] == pytest.approx(1.0)
    assert f["learner_cores"] == pytest.approx(1.0)
    assert f["actors_cores"] == pytest.approx(1.0)
    assert f["server_cores"] is None  # no first reading


def test_parse_nvidia_smi() -> None:
    text = "NVIDIA H100 80GB HBM3, 37, 1024, 81559\nNVIDIA H100 80GB HBM3, [N/A], 0, 81559\n"
    gpus = ratio.parse_nvidia_smi(text)
    assert gpus == [{"name": "NVIDIA H100 80GB HBM3", "util_pct": 37.0, "mem_used_mib": 1024.0,
                     "mem_total_mib": 81559.0}]  # fmt: skip


# ---------------------------------------------------------------- output from a fixture


def fixture_point(actors: int, env: float, ups: float, gpu: bool) -> dict:
    return {
        **pt(actors, env, ups), "env_steps_per_s_per_actor": env / actors, "replay_ratio": 2.0,
        "machine_cpu_util": 0.9, "learner_cores": 0.8, "actors_cores": 0.9, "server_cores": 0.1,
        "window_s": 8.0, "startup_s": 3.0,
        "gpu": {"name": "G", "util_pct_mean": 40.0, "mem_used_mib_max": 1.0, "mem_total_mib": 2.0,
                "samples": 3} if gpu else None,
    }  # fmt: skip


@pytest.mark.parametrize("gpu", [False, True])
def test_write_outputs(tmp_path: Path, gpu: bool) -> None:
    points = [fixture_point(1, 1000, 300, gpu), fixture_point(2, 1900, 290, gpu), {"actors": 4,
              "threads": 1, "error": "PointError: boom"}]  # fmt: skip
    result = {
        "bench": "ratio", "machine": {"cpus": 2, "cpu_model": "test"}, "gpu": "G" if gpu else None,
        "settings": {"env": "CartPole-v1"}, "points": points, "recommendation": ratio.recommend(points),
    }  # fmt: skip
    json_path, png = ratio.write_outputs(result, tmp_path / "sub" / "ratio-x.json")
    back = json.loads(json_path.read_text())
    assert back["recommendation"]["actors"] == 2 and back["plot_file"] == str(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ratio.describe(points[0]).startswith("env steps/s 1000 (1000/actor)")
    assert ratio.describe(points[2]) == "failed: PointError: boom"


# ---------------------------------------------------------------- one real point


@pytest.mark.skipif(not SERVER_BIN.exists(), reason=f"{SERVER_BIN} is not built (make replay-server)")
def test_one_real_point(tmp_path: Path) -> None:
    opts = ratio.build_parser().parse_args(["--seconds", "3", "--learner-device", "cpu"])
    opts.log_dir = str(tmp_path)
    p = ratio.measure_point(1, 1, opts, str(tmp_path), "a1-t1")
    assert p["env_steps"] > 0 and p["env_steps_per_s"] > 0
    assert p["learner_updates"] > 0 and p["learner_updates_per_s"] > 0
    assert p["learner_cores"] > 0 and p["actors_cores"] > 0
    assert 0 < p["machine_cpu_util"] <= 1
    # the window's rate times its length is the window's count
    assert p["env_steps_per_s"] * p["window_s"] == pytest.approx(p["env_steps"])
    # the actor's own summary agrees loosely: it stepped at least what reached the replay in the
    # window, its own rate times its own life is its step count, and the two rates are within 4x
    assert p["summary_actor_env_steps"] >= p["env_steps"]
    (wall,) = p["summary_actor_wall_s"]
    assert p["summary_actor_env_steps_per_s"] * wall == pytest.approx(p["summary_actor_env_steps"], rel=0.5)
    assert 0.25 < p["env_steps_per_s"] / p["summary_actor_env_steps_per_s"] < 4
    assert p["summary_learner_updates"] >= p["learner_updates"] * 0.5
    assert p["exit_codes"] == {"learner": 0, "actor0": 0}
    # the actor's phase split travels in the JSON (the report's breakdown must not need runs/)
    (phases,) = p["actor_phase_totals_s"]
    assert phases["push_experiences"] > 0 and phases["computation"] > 0
