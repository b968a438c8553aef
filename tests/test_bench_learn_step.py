"""bench.learn_step on the CPU with a tiny network: its JSON, and its refusals (no timing is
asserted: the figures are the benchmark's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from bench.learn_step import main


def test_cpu_points_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ls.json"
    argv = ["--devices", "cpu", "--hidden", "16,8", "--batch", "32", "--updates", "5", "--out", str(out)]
    assert main(argv) == 0
    data = json.loads(out.read_text())
    assert data["benchmark"] == "learn_step"
    points = [(r["device"], r["hidden"], r["batch"]) for r in data["results"]]
    assert points == [("cpu", 16, 32), ("cpu", 8, 32)]
    for r in data["results"]:
        assert r["ms_per_update"] > 0 and r["loss_diff"] == 0.0 and r["priority_max_rel_diff"] == 0.0
    assert "ms/update" in capsys.readouterr().out


def test_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "x.json")
    assert main(["--devices", "tpu9", "--out", out]) == 2
    assert "unknown device 'tpu9'" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert main(["--devices", "cuda", "--out", out]) == 2
        assert "torch sees no CUDA device" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--hidden", "a,b", "--out", out])
    assert not Path(out).exists()
