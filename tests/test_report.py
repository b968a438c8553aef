"""topologies.report on run directories written by hand with known values."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from topologies.report import ReportError, main, write_report

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _write_role(
    run: Path,
    role: str,
    records: list[tuple[str, float, int, float]],
    summary: dict | None,
    torn_tail: bool = False,
) -> None:
    d = run / role
    d.mkdir(parents=True)
    with open(d / "metrics.jsonl", "w") as f:
        for tag, value, step, t in records:
            f.write(json.dumps({"tag": tag, "value": value, "step": step, "time": t}) + "\n")
        if torn_tail:  # a process killed in the middle of a write
            f.write('{"tag": "episode/ret')
    if summary is not None:
        (d / "summary.json").write_text(json.dumps(summary))


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def apex_run(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "apex-fixture"
    # actor0: three episodes, steps 100/200/300 at 1/2/3 s, a summary
    _write_role(
        run,
        "actor0",
        [
            ("episode/return", 10.0, 100, 1.0),
            ("env/steps_per_s", 100.0, 100, 1.0),
            ("episode/return", 20.0, 200, 2.0),
            ("episode/return", 30.0, 300, 3.0),
            ("time/pull_params", 0.5, 300, 3.0),
            ("time/push_experiences", 0.5, 300, 3.0),
            ("time/computation", 2.0, 300, 3.0),
            ("time/communication_share", 0.33, 300, 3.0),
        ],
        {
            "role": "actor0",
            "env_steps": 300,
            "wall_time_s": 3.5,
            "stopped_by": "time_budget",
            "phase_totals_s": {"computation": 2.0, "pull_params": 0.5, "push_experiences": 0.5},
            "communication_share": 1.0 / 3.0,
        },
    )
    # actor1 was killed: no summary, a torn last line; its split comes from the time/* scalars
    _write_role(
        run,
        "actor1",
        [
            ("episode/return", 40.0, 50, 1.0),
            ("episode/return", 50.0, 100, 2.0),
            ("episode/return", 60.0, 150, 3.0),
            ("time/pull_params", 1.0, 100, 2.0),
            ("time/push_experiences", 2.0, 100, 2.0),
            ("time/computation", 4.0, 100, 2.0),
            ("time/rate_limit", 5.0, 100, 2.0),
            ("time/pull_params", 1.0, 150, 3.0),
            ("time/push_experiences", 2.0, 150, 3.0),
            ("time/computation", 4.0, 150, 3.0),
            ("time/rate_limit", 5.0, 150, 3.0),
            ("time/communication_share", 0.43, 150, 3.0),
        ],
        None,
        torn_tail=True,
    )
    _write_role(
        run,
        "learner",
        [
            ("learner/loss", 1.0, 10, 0.5),
            ("eval/return_mean", 25.0, 100, 2.0),
            ("eval/return_mean", 45.0, 200, 3.0),
            ("time/sample", 1.0, 200, 3.0),
            ("eval/final_return_mean", 47.5, 200, 4.0),
        ],
        {
            "role": "learner",
            "updates": 200,
            "wall_time_s": 4.25,
            "eval_return_mean": 47.5,
            "target_return": 40.0,
            "reached_target": True,
            "stopped_by": "target_return",
            "phase_totals_s": {
                "computation": 3.0,
                "sample": 0.6,
                "update_priorities": 0.3,
                "set_params": 0.1,
                "evaluate": 0.25,
            },
            "communication_share": 0.25,
        },
    )
    return run


def test_apex_run_summary_numbers(apex_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "plots" / "report.png"
    s = write_report(apex_run, out)
    assert s["run"] == "apex-fixture"
    assert s["roles"] == ["actor0", "actor1", "learner"]
    assert s["return_reached"] == pytest.approx(47.5)
    assert s["return_source"] == "final evaluation"
    assert s["eval_return_best"] == pytest.approx(45.0)
    assert s["episode_return_last100"] == pytest.approx(35.0)  # mean of 10..60
    assert s["episodes"] == 6
    assert s["reached_target"] is True and s["target_return"] == 40.0
    assert s["env_steps"] == 300 + 150  # actor0's summary + actor1's last logged step
    assert s["wall_time_s"] == pytest.approx(4.25)
    assert s["stopped_by"] == {"actor0": "time_budget", "actor1": None, "learner": "target_return"}
    # shares: from summary.json where there is one, else from the time/* scalars (rate_limit is neither)
    assert s["communication_share"]["actor0"] == pytest.approx(1 / 3)
    assert s["communication_share"]["actor1"] == pytest.approx(6 / 14)
    assert s["communication_share"]["learner"] == pytest.approx(0.25)
    assert s["phase_totals_s"]["actor1"] == pytest.approx(
        {"pull_params": 2.0, "push_experiences": 4.0, "computation": 8.0, "rate_limit": 10.0}
    )
    # evaluations sit at the actors' total env steps at their wall time
    assert [e["return_mean"] for e in s["evaluations"]] == [25.0, 45.0]
    assert [e["env_steps_total"] for e in s["evaluations"]] == [200 + 100, 300 + 150]
    # the plot: a real PNG of a real size
    assert s["png"] == str(out)
    width, height = _png_size(out)
    assert width >= 800 and height >= 600
    assert out.stat().st_size > 20_000


def _dp_run(tmp_path: Path, reached: list[dict | None]) -> Path:
    """Workers as host_agents/worker.py writes them: ``worker-<i>`` folders, role ``worker-<i>``,
    ``reached_target`` the record of the evaluation that reached the target (or None), no
    ``target_return`` in their summaries (the launcher's run_summary.json has it)."""
    run = tmp_path / "dp"
    for w, rec in enumerate(reached):
        records = [("episode/return", 10.0 * (i + 1) + w, 100 * (i + 1), float(i + 1)) for i in range(30)]
        records += [("time/allreduce", 1.0, 3000, 30.0), ("time/computation", 3.0, 3000, 30.0)]
        if w == 0:
            records += [
                ("eval/return_mean", 150.0, 1500, 15.0),
                ("eval/return_mean", 300.0, 3000, 30.0),
                ("time/eval", 0.5, 3000, 30.0),
            ]
        summary = {
            "role": f"worker-{w}",
            "num_workers": len(reached),
            "threshold": len(reached),  # not a target return
            "env_steps": 3000,
            "wall_s": 31.0 + w,
            "stop_reason": "target_return",
            "phase_totals_s": {"allreduce": 1.0, "computation": 3.0, "eval": 0.5 if w == 0 else 0.0},
            "reached_target": rec,
            "eval_return_mean": None,
        }
        _write_role(run, f"worker-{w}", records, summary)
    return run


REACHED = {"updates": 30, "env_steps_worker": 3000, "env_steps_total": 6000, "wall_s": 30.0,
           "eval_return_mean": 300.0}  # fmt: skip


def test_data_parallel_run(tmp_path: Path) -> None:
    run = _dp_run(tmp_path, [REACHED, None])
    s = write_report(run, tmp_path / "dp.png")
    assert s["roles"] == ["worker-0", "worker-1"]
    assert s["return_reached"] == pytest.approx(300.0)
    assert s["return_source"] == "last evaluation"
    assert s["env_steps"] == 6000
    assert s["wall_time_s"] == pytest.approx(32.0)
    assert s["reached_target"] is True  # worker-0's record of the evaluation that reached it
    assert s["target_return"] is None  # no run_summary.json; a worker's threshold is not one
    assert s["communication_share"] == {"worker-0": pytest.approx(0.25), "worker-1": pytest.approx(0.25)}
    assert s["evaluations"][0]["env_steps_total"] == 3000  # both workers at 1500 after 15 s
    assert s["stopped_by"] == {"worker-0": "target_return", "worker-1": "target_return"}
    _png_size(tmp_path / "dp.png")


def test_data_parallel_target_from_the_launcher(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _dp_run(tmp_path, [REACHED, REACHED])
    (run / "run_summary.json").write_text(json.dumps({"target_return": 250.0, "reached_target": True}))
    assert main([str(run)]) == 0
    assert "target 250 reached" in capsys.readouterr().out
    # nobody reached it: null in every worker's summary, false in the launcher's
    run2 = _dp_run(tmp_path / "b", [None, None])
    s = write_report(run2, tmp_path / "b.png")
    assert s["reached_target"] is False and s["target_return"] is None
    (run2 / "run_summary.json").write_text(json.dumps({"target_return": 450.0, "reached_target": False}))
    assert main([str(run2)]) == 0
    assert "target 450 not reached" in capsys.readouterr().out


def test_cli(apex_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(apex_run)]) == 0  # default: RUN_DIR/report.png
    text = capsys.readouterr().out
    assert "return reached 47.5 (final evaluation), target 40 reached" in text
    assert "env steps 450 in 6 episodes" in text
    assert "actor0 33%, actor1 43%, learner 25%" in text
    assert (apex_run / "report.png").read_bytes()[:8] == PNG_SIGNATURE
    assert main([str(apex_run), "--out", str(tmp_path / "x.png"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["env_steps"] == 450
    assert main([str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty")]) == 2
    assert "has no <role>/metrics.jsonl" in capsys.readouterr().err
    with pytest.raises(ReportError):
        write_report(tmp_path / "empty", tmp_path / "e.png")
