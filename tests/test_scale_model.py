"""bench.scale_model: the arithmetic on cases with hand-computed answers, provenance, CLI."""

from __future__ import annotations

import json
from dataclasses import fields, replace

import pytest

from bench import scale_model as sm

GBPS10 = 1.25e9  # bytes/s


def zero_latency(**kw) -> sm.Params:
    base = sm.Params(
        model_bytes=1e6,
        values_per_packet=32,
        value_bytes=4,
        agg_header_bytes=94,
        tcp_mss=1448,
        tcp_overhead_bytes=0,
        switch_latency_s=0.0,
        host_pkt_s=0.0,
        rtt_s=0.0,
        window=64,
        compute_s=0.0,
        jitter_s=0.0,
        async_k_frac=0.5,
        ps_servers=1,
    )
    return replace(base, **kw)


def test_ring_zero_latency_is_2_n_minus_1_over_n_s_over_b():
    p = zero_latency()
    # 2 * 3/4 * 1e6 B / 1.25e9 B/s = 1.2 ms
    assert sm.ring_comm(p, 4, GBPS10) == pytest.approx(1.2e-3)
    # 2 * 255/256 * 1e6 / 1.25e9 = 1.59375 ms
    assert sm.ring_comm(p, 256, GBPS10) == pytest.approx(1.59375e-3)


def test_ring_latency_steps_and_tcp_overhead():
    # alpha = rtt/2 + switch = 5 us + 1 us; 2(N-1) = 6 steps -> 36 us; bytes x (1448+90)/1448
    p = zero_latency(rtt_s=10e-6, switch_latency_s=1e-6, tcp_overhead_bytes=90)
    assert sm.ring_comm(p, 4, GBPS10) == pytest.approx(1.2e-3 * 1538 / 1448 + 36e-6)


def test_ps_one_server_carries_n_s_on_its_link():
    p = zero_latency()
    assert sm.ps_comm(p, 8, GBPS10) == pytest.approx(6.4e-3)  # 8 * 1e6 / 1.25e9
    assert sm.ps_comm(replace(p, ps_servers=4), 8, GBPS10) == pytest.approx(1.6e-3)
    # more servers than workers: the worker's own link (S each way) is the limit
    assert sm.ps_comm(replace(p, ps_servers=16), 8, GBPS10) == pytest.approx(0.8e-3)


def test_switch_sync_zero_latency_is_s_times_one_plus_overhead_over_b_for_any_n():
    p = zero_latency(model_bytes=128_000)  # 1000 packets of 128 B values, 222 B on the wire
    assert p.packets() == 1000
    assert p.agg_overhead == pytest.approx(94 / 128)
    # 1000 x 222 B / 1.25e9 = 177.6 us, plus the last result's serialization (0.1776 us)
    expected = 128_000 * (1 + 94 / 128) / GBPS10 + 222 / GBPS10
    assert expected == pytest.approx(177.7776e-6)
    for n in (8, 64, 256):
        t = sm.iteration_times(p, n, 10)
        assert t["switch_sync"]["comm_s"] == pytest.approx(expected)


def test_switch_window_limit():
    # 100 GbE: 222 B = 17.76 ns; round trip 10 + 1 us + 2 x 17.76 ns = 11.03552 us; / 64 slots
    p = zero_latency(model_bytes=128_000, rtt_s=10e-6, switch_latency_s=1e-6)
    bw = sm.link_bytes_per_s(100)
    assert sm.switch_packet_interval(p, bw) == pytest.approx(11.03552e-6 / 64)
    assert sm.switch_limit(p, bw) == "window"
    assert sm.switch_limit(replace(p, window=1024), bw) == "link"
    assert sm.switch_limit(replace(p, host_pkt_s=1e-6), bw) == "host pkt cost"


def test_async_with_k_equal_n_and_no_jitter_equals_sync():
    p = zero_latency(compute_s=5e-3, async_k_frac=1.0)
    t = sm.iteration_times(p, 16, 40)
    assert t["switch_async"]["k"] == 16
    assert t["switch_async"]["total_s"] == pytest.approx(t["switch_sync"]["total_s"])


def test_exponential_order_statistics():
    # N = 2, Exp(mean J): min has mean J/2, max 3J/2
    assert sm.expected_kth_fastest(2, 1, 1.0, 0.2) == pytest.approx(1.1)
    assert sm.expected_kth_fastest(2, 2, 1.0, 0.2) == pytest.approx(1.3)
    # N = 4, k = 2: J (1/4 + 1/3)
    assert sm.expected_kth_fastest(4, 2, 0.0, 12.0) == pytest.approx(7.0)
    with pytest.raises(ValueError):
        sm.expected_kth_fastest(4, 5, 0.0, 1.0)
    assert sm.async_threshold(7, 0.5) == 4


def test_async_waits_for_kth_and_speedups_are_ratios():
    p = zero_latency(compute_s=10e-3, jitter_s=1e-3, async_k_frac=0.5)
    t = sm.iteration_times(p, 2, 10)
    # sync: slowest of 2 = 10 + 1.5 ms; async k = 1: fastest = 10 + 0.5 ms
    assert t["switch_sync"]["compute_s"] == pytest.approx(11.5e-3)
    assert t["switch_async"]["compute_s"] == pytest.approx(10.5e-3)
    s = sm.speedups(t)
    assert s["sync_vs_ps"] == pytest.approx(t["ps"]["total_s"] / t["switch_sync"]["total_s"])
    assert s["async_vs_ring"] == pytest.approx(t["ring"]["total_s"] / t["switch_async"]["total_s"])
    assert s["sync_vs_best"] == pytest.approx(
        min(t["ps"]["total_s"], t["ring"]["total_s"]) / t["switch_sync"]["total_s"]
    )


def test_compute_for_speedup_solves_the_ratio():
    p = zero_latency(tcp_overhead_bytes=90)
    c = sm.compute_for_speedup(p, 64, 10, 1.1)  # ring 2.09 S vs switch 1.73 S: at most 1.2x
    bw = sm.link_bytes_per_s(10)
    base = min(sm.ps_comm(p, 64, bw), sm.ring_comm(p, 64, bw))
    sw = sm.switch_comm(p, bw)
    assert c is not None and (c + base) / (c + sw) == pytest.approx(1.1)
    assert sm.compute_for_speedup(p, 64, 10, 100.0) is None


def test_every_input_has_provenance_and_defaults_without_results(tmp_path):
    measured = sm.measured_inputs(tmp_path)  # empty dir: a fresh clone
    assert measured == {}
    inputs = sm.default_inputs(measured)
    for f in fields(sm.Params):
        assert f.name in inputs, f.name
    for name, inp in inputs.items():
        assert inp.kind in {"measured", "code", "assumed", "given"}, name
        assert inp.source, name
    assert inputs["compute_s"].kind == "assumed"
    assert inputs["values_per_packet"].kind == "code"


def test_measured_inputs_name_file_and_value(tmp_path):
    (tmp_path / "softswitch_pps.json").write_text(
        json.dumps({"results": [{"program": "agg32", "path": "in-process", "us_per_packet": 12.5}]})
    )
    (tmp_path / "learning-dp.json").write_text(  # the name bench.run_all gives it
        json.dumps(
            {
                "results": [
                    {
                        "run": "sync-switch",
                        "summaries": [{"communication_share": 0.75, "wall_s": 40.0, "updates": 100}],
                    }
                ]
            }
        )
    )
    m = sm.measured_inputs(tmp_path)
    assert m["softswitch_pkt_s"].value == pytest.approx(12.5e-6)
    assert "softswitch_pps.json" in m["softswitch_pkt_s"].source and "12.5" in m["softswitch_pkt_s"].source
    assert m["compute_s"].value == pytest.approx(0.1)  # 40 s x 0.25 / 100
    assert m["compute_s"].kind == "measured" and "learning-dp.json" in m["compute_s"].source
    inputs = sm.default_inputs(m)
    assert inputs["compute_s"].kind == "measured"


def test_cli_writes_json_and_png(tmp_path, capsys):
    out = tmp_path / "o.json"
    rc = sm.main(
        [
            "--workers",
            "8,16",
            "--link-gbps",
            "10",
            "--model-mb",
            "1",
            "--compute-ms",
            "2",
            "--results-dir",
            str(tmp_path),
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    data = json.loads(out.read_text())
    assert (tmp_path / "o.png").stat().st_size > 0
    assert [r["workers"] for r in data["rows"]] == [8, 16]
    assert data["inputs"]["model_bytes"]["kind"] == "given"
    assert data["inputs"]["compute_s"] == {
        "value": 0.002,
        "unit": "s",
        "kind": "given",
        "source": "--compute-ms 2.0",
    }
    assert data["inputs"]["rtt_s"]["kind"] == "assumed"
    assert data["iswitch"]["published"] == {"sync": 3.66, "async": 3.71}
    assert "in-switch" not in capsys.readouterr().err


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as e:
        sm.main(["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for opt in ("--workers", "--link-gbps", "--model-mb", "--compute-ms", "--out", "--plot"):
        assert opt in text
