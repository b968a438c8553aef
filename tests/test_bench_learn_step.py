"""bench.learn_step on the CPU with tiny networks: its JSON, the CPU as the reference, the check
that fails when a device's first update differs, and its refusals (no timing is asserted: the
figures are the benchmark's)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import bench.learn_step as ls
from bench.learn_step import main, parse_devices


def test_cpu_points_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ls.json"
    threads = torch.get_num_threads()
    argv = ["--devices", "cpu", "--hidden", "16,8", "--batch", "32", "--updates", "5", "--out", str(out)]
    assert main(argv) == 0
    assert torch.get_num_threads() == threads  # the benchmark's one thread is given back
    data = json.loads(out.read_text())
    assert data["benchmark"] == "learn_step" and data["config"]["rtol"] == ls.RTOL
    points = [(r["device"], r["hidden"], r["batch"]) for r in data["results"]]
    assert points == [("cpu", 16, 32), ("cpu", 8, 32)]
    assert all(r["same_update"] and r["ms_per_update"] > 0 for r in data["results"])
    assert "ms/update" in capsys.readouterr().out


def test_first_update_compared_with_the_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """A second device whose first update moves one parameter by more than the tolerance fails
    the run (exit 1, named); one within float32 rounding passes. The 'device' here is the CPU
    measured twice with a perturbed result, since a GPU is rarely there."""
    real = ls.measure
    shift = {"value": 0.0}
    calls: list[str] = []

    def measure(device: torch.device, hidden: int, batch: int, updates: int) -> tuple[dict, dict]:
        point, first = real(device, hidden, batch, updates)
        calls.append(str(device))
        if len(calls) % 2 == 0:  # the second device of each width
            first = {**first, "parameters": first["parameters"] + np.float32(shift["value"])}
        return point, first

    monkeypatch.setattr(ls, "measure", measure)
    monkeypatch.setattr(ls, "parse_devices", lambda text: [torch.device("cpu"), torch.device("cpu")])
    argv = ["--hidden", "8", "--batch", "16", "--updates", "2", "--out", str(tmp_path / "a.json")]
    shift["value"] = 1e-7
    assert main(argv) == 0
    shift["value"] = 1e-2
    assert main(argv) == 1
    assert "the first update differs from the CPU's on cpu hidden 8" in capsys.readouterr().err
    data = json.loads((tmp_path / "a.json").read_text())
    assert [r["same_update"] for r in data["results"]] == [True, False]
    assert data["results"][1]["parameters_max_abs_diff"] == pytest.approx(1e-2, rel=1e-3)


def test_devices_cpu_first_and_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_devices("cpu") == [torch.device("cpu")]
    if torch.cuda.is_available():
        assert parse_devices("cuda,cpu") == [torch.device("cpu"), torch.device("cuda")]
        assert parse_devices("cuda")[0] == torch.device("cpu")  # the reference is always measured
    out = str(tmp_path / "x.json")
    for devices, message in (("tpu9", "unknown device 'tpu9'"), ("meta", "device 'meta' is not supported"),
                             (f"cuda:{torch.cuda.device_count()}", "CUDA device")):  # fmt: skip
        assert main(["--devices", devices, "--out", out]) == 2
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--hidden", "a,b", "--out", out])
    assert not Path(out).exists()
