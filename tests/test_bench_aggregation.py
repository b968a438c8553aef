"""bench.aggregation's pure helpers: the asynchronous result check and the shared fixed exponent."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from bench.aggregation import check_async, fixed_exponent_for
from host_agents.agg_client import ChunkInfo
from host_agents.agg_protocol import DEFAULT_VALUES_PER_PACKET as VALUES_PER_PACKET
from host_agents.allreduce import input_tensor

SEED, WORKERS, NUMEL = 3, 3, 5 * VALUES_PER_PACKET + 7  # a partial last chunk


def _info(bitmaps: list[int]) -> ChunkInfo:
    bm = np.array(bitmaps, np.int64)
    counts = np.array([bin(b).count("1") for b in bitmaps], np.int64)
    return ChunkInfo(counts, bm, np.zeros_like(bm), np.zeros_like(bm))


def _subset_sum(bitmaps: list[int]) -> torch.Tensor:
    inputs = [input_tensor(SEED, w, NUMEL, 0) for w in range(WORKERS)]
    out = torch.zeros(NUMEL)
    for c, b in enumerate(bitmaps):
        lo, hi = c * VALUES_PER_PACKET, min(NUMEL, (c + 1) * VALUES_PER_PACKET)
        for w in range(WORKERS):
            if b >> w & 1:
                out[lo:hi] += inputs[w][lo:hi]
    return out


def test_check_async_accepts_each_chunk_summing_the_workers_its_bitmap_names() -> None:
    bitmaps = [0b011, 0b110, 0b101, 0b111, 0b011, 0b110]  # a different pair (or all) per chunk
    err, mean_count, missing, bad = check_async(SEED, WORKERS, 2, _subset_sum(bitmaps), _info(bitmaps))
    assert err < 1e-6
    assert missing == bad == 0
    assert mean_count == np.mean([2, 2, 2, 3, 2, 2])


def test_check_async_rejects_a_chunk_that_does_not_match_its_bitmap() -> None:
    bitmaps = [0b011, 0b110, 0b101, 0b111, 0b011, 0b110]
    y = _subset_sum(bitmaps)
    claimed = list(bitmaps)
    claimed[2] = 0b011  # the values are workers 0+2, the header says 0+1
    err, _, missing, bad = check_async(SEED, WORKERS, 2, y, _info(claimed))
    assert err > 1e-3
    assert missing == bad == 0


def test_check_async_counts_missing_chunks_apart_from_contradicting_headers() -> None:
    bitmaps = [0b011, 0, 0b101, 0b111, 0b011, 0b001]
    info = _info(bitmaps)
    info.count[4] = 3  # the bitmap names two workers
    # chunk 1: no result (the worker fell behind: normal); chunk 5: one worker < threshold 2
    err, mean_count, missing, bad = check_async(SEED, WORKERS, 2, _subset_sum(bitmaps), info)
    assert (missing, bad) == (1, 2)
    assert err < 1e-6
    assert mean_count == np.mean([2, 2, 3])


def test_fixed_exponent_bounds_every_workers_input_tightly() -> None:
    e = fixed_exponent_for(SEED, WORKERS, NUMEL)
    peak = max(float(input_tensor(SEED, w, NUMEL, 0).abs().max()) for w in range(WORKERS))
    assert peak < math.ldexp(1.0, e)
    assert peak >= math.ldexp(1.0, e - 1)


def test_switch_workers_are_told_their_width_and_results_name_it() -> None:
    """--values-per-packet 64,256: each switch worker gets the width its switch was compiled for;
    results of switch methods carry it, ps and gloo none; the table shows it."""
    from types import SimpleNamespace

    from bench.aggregation import Config, format_table, width_of, worker_argv

    cfg = Config(workers=[2], sizes_kb=[10], methods=["switch", "gloo"], repeat=1, big_repeat=1, slots=8,
                 out=Path("unused.json"), values_per_packet=[64, 256])  # fmt: skip
    host = SimpleNamespace(pair=SimpleNamespace(ns_if="eth0"))
    tb = SimpleNamespace(workers=[SimpleNamespace(ip=f"10.0.{i + 1}.1", host=host) for i in range(3)])
    argv = worker_argv(cfg, "switch", 2, 0, tb, {}, 256)
    assert argv[argv.index("--values-per-packet") + 1] == "256"
    assert "--values-per-packet" not in worker_argv(cfg, "gloo", 2, 0, tb, {}, 256)
    assert (width_of("switch-async", 256), width_of("ps", 256)) == (256, None)
    row = {"method": "switch", "values_per_packet": 256, "workers": 2, "size_bytes": 10_000, "error": "x"}
    meta = {"host": {"cpus": 2, "machine": "x86_64"}, "config": {"slots": 8}}
    assert "switch       256  2    10 KB   ERROR: x" in format_table([row], meta)


def test_mtu_must_hold_the_widest_packet(capsys) -> None:
    """--mtu is every link's, for all methods; one below a width's IP packet (IPv4 + UDP + the
    28-byte header + 4 bytes per value) is refused before anything is built."""
    from bench.aggregation import main

    assert main(["--mtu", str(20 + 8 + 28 + 1024 - 1), "--values-per-packet", "64,256"]) == 2
    assert "at least 1080 for 256 values per packet" in capsys.readouterr().err
    assert main(["--mtu", "100"]) == 2
    assert "576..65535" in capsys.readouterr().err


def test_targets_refuse_what_would_change_the_figure(capsys) -> None:
    """--targets measures issue 15's (d) figure as defined: with --quick, --offloads or a
    straggler it is refused before anything is built."""
    from bench.aggregation import main

    for extra in (["--quick"], ["--offloads"], ["--straggler-ms", "100"]):
        assert main(["--targets", *extra]) == 2
        assert "--targets measures issue 15's (d) figure" in capsys.readouterr().err


def test_every_async_worker_but_the_straggler_fills() -> None:
    """k = N-1 workers do not wait for the N-th: whoever falls a call behind needs the others
    to keep the job's rounds going, so every switch-async worker fills after its timed calls,
    except the designated straggler; the synchronous methods never do."""
    from types import SimpleNamespace

    from bench.aggregation import Config, worker_argv

    host = SimpleNamespace(pair=SimpleNamespace(ns_if="eth0"))
    tb = SimpleNamespace(workers=[SimpleNamespace(ip=f"10.0.{i + 1}.1", host=host) for i in range(4)])
    cfg = Config(workers=[3], sizes_kb=[10], methods=["switch-async"], repeat=1, big_repeat=1, slots=8,
                 out=Path("unused.json"))  # fmt: skip
    assert all("--fill" in worker_argv(cfg, "switch-async", 3, r, tb, {}, 64) for r in range(3))
    assert "--fill" not in worker_argv(cfg, "switch", 3, 0, tb, {}, 64)
    cfg.straggler_ms = 50.0
    fills = ["--fill" in worker_argv(cfg, "switch-async", 3, r, tb, {}, 64) for r in range(3)]
    assert fills == [True, True, False]  # the straggler (the last rank) only sleeps


def test_cpu_per_call_counts_a_roles_processes_and_their_children() -> None:
    """cpu_snapshot follows a role's processes down to their descendants (workers run under `ip
    netns exec`, here under a shell that forks): a child that burns 0.3 s of CPU shows up in its
    role, split by calls, and a role with no process counts nothing."""
    import subprocess
    import sys

    from bench.common import cpu_per_call, cpu_snapshot, format_cpu

    burn = ("import sys, time\nprint('ready', flush=True); sys.stdin.readline()\n"
            "t = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
            "print('done', flush=True)\nsys.stdin.read()")
    proc = subprocess.Popen(["sh", "-c", f'"{sys.executable}" -c "$0"; true', burn],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "ready"
        roles = {"workers": [proc.pid], "server": []}
        before = cpu_snapshot(roles)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "done"
        cpu = cpu_per_call(before, cpu_snapshot(roles), calls=3)
    finally:
        proc.communicate("", timeout=30)
    w = cpu["workers"]
    assert isinstance(w, dict) and w["total_ms"] == pytest.approx(w["user_ms"] + w["sys_ms"])
    assert 3 * w["total_ms"] >= 290  # the child's 0.3 s, per call of 3
    assert cpu["server"] == {"user_ms": 0.0, "sys_ms": 0.0, "total_ms": 0.0}
    assert cpu["machine_busy"] is not None and 0 < cpu["machine_busy"] <= 1
    assert "workers " in format_cpu(cpu) and "busy of" in format_cpu(cpu)


def test_cpu_per_call_keeps_the_cpu_of_a_thread_that_ended() -> None:
    """A thread that ran and ended inside the window (a server's per-connection thread) takes its
    exact nanoseconds with it; the process's ticks still count it, and cpu_per_call uses them."""
    import subprocess
    import sys

    from bench.common import cpu_per_call, cpu_snapshot

    code = ("import sys, threading, time\n"
            "def burn():\n"
            "    sys.stdin.readline()\n"
            "    t = time.thread_time()\n"
            "    while time.thread_time() - t < 0.3: pass\n"
            "th = threading.Thread(target=burn); th.start()\n"
            "print('ready', flush=True); th.join()\n"
            "print('done', flush=True); sys.stdin.read()\n")  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "ready"
        before = cpu_snapshot({"server": [proc.pid]})
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "done"
        cpu = cpu_per_call(before, cpu_snapshot({"server": [proc.pid]}), calls=1)
    finally:
        proc.communicate("", timeout=30)
    s = cpu["server"]
    assert isinstance(s, dict) and s["total_ms"] >= 250  # 0.3 s, in 10 ms ticks
