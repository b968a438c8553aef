"""Analytic scale model: time per training iteration (compute + one gradient allreduce of S bytes)
for N workers on one hardware switch at line rate, for four ways of summing the gradient.

    python -m bench.scale_model [--workers 8,16,...,256] [--link-gbps 10,40,100] [--model-mb 13]
                                [--compute-ms X] [--out JSON] [--plot PNG]

Nothing here is measured by running: the model is closed-form arithmetic. Its inputs come from
three places, and every one is reported with its provenance (``Input.kind``):

* ``measured``: read from a benchmark result in ``bench/results/`` (file and value named);
* ``code``: a constant of this project's protocol (``host_agents/agg_protocol.py``);
* ``assumed``: a figure the model takes on trust, with where it comes from;
* ``given``: set on the command line.

Equations (B = link rate in bytes/s, full duplex; all links equal; one switch):

* in-switch synchronous (iSwitch / SwitchML style): the gradient goes out in
  ``n = ceil(S / (4 V))`` packets of V int32 values; each costs ``w = 4V + H`` bytes on the wire
  (H = aggregation + UDP + IPv4 + Ethernet headers + FCS + preamble + inter-frame gap). A worker
  sends a packet every ``t = max(w / B, host_pkt, rtt_pkt / W)`` (link, host per-packet cost, and a
  window of W outstanding packets over one packet's round trip), the switch sums at line rate
  and multicasts, results come back on the other direction of the same link. Time
  ``T_sync = n t + tail`` with ``tail = rtt + switch_lat + w / B`` (the last packet's round trip
  and its result's serialization). Independent of N.
* in-switch asynchronous, threshold k < N: the same streaming, but a round completes at the
  k-th contribution, so the iteration waits for the k-th fastest worker's compute instead of the
  slowest one's.
* parameter server, P servers (sharded evenly, dedicated hosts), pipelined push/pull over TCP:
  each server's link carries N S / P bytes in and the same out at once (full duplex), each
  worker's link S in and S out: ``T_ps = max(N / P, 1) S (1 + o_tcp) / B + rtt``. This is the
  optimistic (best-case) parameter server: no incast loss, push and pull overlapped.
* ring all-reduce: ``T_ring = 2 (N - 1) / N S (1 + o_tcp) / B + 2 (N - 1) alpha`` with
  ``alpha = rtt / 2 + switch_lat`` (one step's one-way latency).

Compute: every worker's compute time per iteration is ``C + X_i`` with X_i independent
exponential with mean ``J`` (the jitter; an assumption, stated). The expected k-th smallest of N
is ``C + J (1/N + 1/(N-1) + ... + 1/(N-k+1))``; the slowest (k = N) is ``C + J H_N``.
Synchronous methods (in-switch sync, PS, ring) wait for the slowest; in-switch async for the
k-th. Time per iteration = expected compute order statistic + communication (no overlap of
compute and communication: each iteration's gradient exists only after its compute).
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

METHODS = ("switch_sync", "switch_async", "ps", "ring")
METHOD_LABELS = {
    "switch_sync": "in-switch sync",
    "switch_async": "in-switch async",
    "ps": "parameter server",
    "ring": "ring all-reduce",
}

# Ethernet framing not in the frame bytes the hosts count: preamble + SFD 8, FCS 4, IFG 12.
ETH_WIRE_EXTRA = 8 + 4 + 12
ETH_HEADER = 14
IPV4_HEADER = 20
UDP_HEADER = 8
TCP_HEADER = 20 + 12  # with the timestamp option Linux uses by default
TCP_MSS = 1448  # 1500-byte MTU minus IPv4, TCP and the timestamp option

# iSwitch (Li et al., "Accelerating Distributed Reinforcement Learning with In-Switch
# Computing", ISCA 2019): "system-level speedup of up to 3.66x for synchronous distributed
# training and 3.71x for asynchronous", "network communication ... up to 83.2% of the execution
# time of each training iteration", prototype on a NetFPGA board.
ISWITCH = {
    "paper": "Li, Liu, Yuan, Chen, Schwing, Huang: Accelerating Distributed Reinforcement Learning "
    "with In-Switch Computing, ISCA 2019 (pp. 279-291)",
    "speedup_sync": 3.66,
    "speedup_async": 3.71,
    "communication_share": 0.832,
    "confirmed": "venue, authors, NetFPGA prototype, 'up to' 3.66x sync / 3.71x async system-level "
    "speedups over state-of-the-art approaches (PS and AllReduce), communication up to 83.2% of "
    "an iteration: from the authors' abstract (YifanYuan3.github.io/publication/iswitch) and "
    "UIUC's technology page",
    "assumed": "4 workers on 10 GbE (a NetFPGA-SUME board has four 10 GbE ports) and that the "
    "speedup is over the better of PS and ring: NOT confirmed here (the full paper was not "
    "available to this model's author)",
    "workers": 4,
    "link_gbps": 10.0,
}


@dataclass(frozen=True)
class Input:
    """One model input with its provenance."""

    value: float
    unit: str
    kind: str  # measured | code | assumed | given
    source: str


@dataclass(frozen=True)
class Params:
    model_bytes: float
    values_per_packet: int
    value_bytes: int
    agg_header_bytes: int  # aggregation header + UDP + IPv4 + Ethernet + wire extra
    tcp_mss: int
    tcp_overhead_bytes: int  # per segment: TCP + IPv4 + Ethernet + wire extra
    switch_latency_s: float
    host_pkt_s: float
    rtt_s: float
    window: int
    compute_s: float
    jitter_s: float
    async_k_frac: float
    ps_servers: int

    @property
    def payload_bytes(self) -> int:
        return self.values_per_packet * self.value_bytes

    @property
    def packet_wire_bytes(self) -> int:
        return self.payload_bytes + self.agg_header_bytes

    @property
    def agg_overhead(self) -> float:
        return self.agg_header_bytes / self.payload_bytes

    @property
    def tcp_overhead(self) -> float:
        return self.tcp_overhead_bytes / self.tcp_mss

    def packets(self) -> int:
        return math.ceil(self.model_bytes / self.payload_bytes)


def link_bytes_per_s(gbps: float) -> float:
    return gbps * 1e9 / 8


# ---- compute order statistics ----


def expected_kth_fastest(n: int, k: int, compute_s: float, jitter_s: float) -> float:
    """E[k-th smallest of C + X_i], X_i ~ Exp(mean jitter_s) iid, i = 1..N (Renyi)."""
    if not 1 <= k <= n:
        raise ValueError(f"k must lie in 1..{n}, got {k}")
    return compute_s + jitter_s * sum(1.0 / j for j in range(n - k + 1, n + 1))


def async_threshold(n: int, frac: float) -> int:
    return max(1, min(n, math.ceil(frac * n)))


# ---- communication ----


def switch_packet_interval(p: Params, bw: float) -> float:
    """Seconds between a worker's packets: link, host per-packet cost, or the window."""
    wire = p.packet_wire_bytes / bw
    rtt_pkt = p.rtt_s + p.switch_latency_s + 2 * wire
    return max(wire, p.host_pkt_s, rtt_pkt / p.window)


def switch_comm(p: Params, bw: float) -> float:
    tail = p.rtt_s + p.switch_latency_s + p.packet_wire_bytes / bw
    return p.packets() * switch_packet_interval(p, bw) + tail


def switch_limit(p: Params, bw: float) -> str:
    wire = p.packet_wire_bytes / bw
    rtt_pkt = p.rtt_s + p.switch_latency_s + 2 * wire
    limits = {"link": wire, "host pkt cost": p.host_pkt_s, "window": rtt_pkt / p.window}
    return max(limits, key=lambda name: limits[name])


def ps_comm(p: Params, n: int, bw: float) -> float:
    return max(n / p.ps_servers, 1.0) * p.model_bytes * (1 + p.tcp_overhead) / bw + p.rtt_s


def ring_comm(p: Params, n: int, bw: float) -> float:
    if n == 1:
        return 0.0
    alpha = p.rtt_s / 2 + p.switch_latency_s
    return 2 * (n - 1) / n * p.model_bytes * (1 + p.tcp_overhead) / bw + 2 * (n - 1) * alpha


def iteration_times(p: Params, n: int, gbps: float) -> dict[str, dict[str, float]]:
    """Per method: compute, communication and total seconds per iteration."""
    bw = link_bytes_per_s(gbps)
    slowest = expected_kth_fastest(n, n, p.compute_s, p.jitter_s)
    k = async_threshold(n, p.async_k_frac)
    kth = expected_kth_fastest(n, k, p.compute_s, p.jitter_s)
    sw = switch_comm(p, bw)
    comm = {"switch_sync": sw, "switch_async": sw, "ps": ps_comm(p, n, bw), "ring": ring_comm(p, n, bw)}
    comp = {"switch_sync": slowest, "switch_async": kth, "ps": slowest, "ring": slowest}
    out = {m: {"compute_s": comp[m], "comm_s": comm[m], "total_s": comp[m] + comm[m]} for m in METHODS}
    out["switch_async"]["k"] = k
    return out


def speedups(times: dict[str, dict[str, float]]) -> dict[str, float]:
    t = {m: times[m]["total_s"] for m in METHODS}
    best = min(t["ps"], t["ring"])
    return {
        "sync_vs_ps": t["ps"] / t["switch_sync"],
        "sync_vs_ring": t["ring"] / t["switch_sync"],
        "sync_vs_best": best / t["switch_sync"],
        "async_vs_ps": t["ps"] / t["switch_async"],
        "async_vs_ring": t["ring"] / t["switch_async"],
        "async_vs_best": best / t["switch_async"],
    }


def compute_for_speedup(p: Params, n: int, gbps: float, target: float) -> float | None:
    """Compute time C (no jitter) at which in-switch sync is ``target`` x faster than the better
    baseline: (C + T_base) / (C + T_sw) = target. None if no C >= 0 reaches it."""
    bw = link_bytes_per_s(gbps)
    base = min(ps_comm(p, n, bw), ring_comm(p, n, bw))
    sw = switch_comm(p, bw)
    c = (base - target * sw) / (target - 1)
    return c if c >= 0 else None


# ---- calibration ----


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def measured_inputs(results_dir: Path | None = None) -> dict[str, Input]:
    """Per-packet and per-iteration costs of this project's software path, from bench results.
    Missing or unreadable files give no entry (the caller falls back to documented defaults)."""
    results = RESULTS if results_dir is None else results_dir
    out: dict[str, Input] = {}
    pps = results / "softswitch_pps.json"
    try:
        for r in json.loads(pps.read_text())["results"]:
            if r.get("program") == "agg32" and r.get("path") == "in-process":
                out["softswitch_pkt_s"] = Input(
                    r["us_per_packet"] * 1e-6,
                    "s",
                    "measured",
                    f"{_rel(pps)}: agg32 in-process us_per_packet = {r['us_per_packet']}",
                )
    except (OSError, ValueError, KeyError, TypeError):
        pass
    agg = results / "aggregation.json"
    try:
        best = None
        for r in json.loads(agg.read_text())["results"]:
            if r.get("method") != "switch" or r.get("workers") != 1 or r.get("error"):
                continue
            pk = (r.get("wire_per_worker_per_call") or [{}])[0].get("tx_packets")
            if pk and (best is None or r["size_bytes"] > best[0]["size_bytes"]):
                best = (r, pk)
        if best:
            r, pk = best
            out["software_path_pkt_s"] = Input(
                r["median_s"] / pk,
                "s",
                "measured",
                f"{_rel(agg)}: switch, 1 worker, {r['size_kb']} KB: median {r['median_s']:.3f} s / "
                f"{pk:.0f} packets sent (Python client + Python softswitch, end to end)",
            )
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass
    # learning-dp-<stamp>.json from bench.learning_dp, learning-dp.json from bench.run_all
    for path in sorted(glob.glob(str(results / "learning-dp*.json")), key=os.path.getmtime, reverse=True):
        try:
            data = json.loads(Path(path).read_text())
            for res in data.get("results", []):
                for s in res.get("summaries", []):
                    share, wall, upd = s.get("communication_share"), s.get("wall_s"), s.get("updates")
                    if share is None or not wall or not upd:
                        continue
                    c = wall * (1 - share) / upd
                    out["compute_s"] = Input(
                        c,
                        "s",
                        "measured",
                        f"{_rel(Path(path))}: {res.get('run')} {s.get('role')}: wall_s {wall:.1f} x "
                        f"(1 - communication_share {share:.3f}) / {upd} updates "
                        f"({s.get('algo')}, {s.get('num_params')} parameters; everything but "
                        "the allreduce, per update)",
                    )
                    out["communication_share"] = Input(
                        share, "", "measured", f"{_rel(Path(path))}: {res.get('run')} {s.get('role')}"
                    )
                    return out
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return out


def default_inputs(measured: dict[str, Input]) -> dict[str, Input]:
    """Every model input with its provenance (before command-line overrides)."""
    from host_agents import agg_protocol as ap

    agg_hdr = ap.HEADER_BYTES + UDP_HEADER + IPV4_HEADER + ETH_HEADER + ETH_WIRE_EXTRA
    src = "host_agents/agg_protocol.py"
    inputs = {
        "model_bytes": Input(13e6, "B", "assumed", "the seed's dueling DQN, 13 MB (bench/README.md)"),
        "values_per_packet": Input(
            ap.DEFAULT_VALUES_PER_PACKET, "", "code", f"{src} DEFAULT_VALUES_PER_PACKET (innet.p4's default)"
        ),
        "value_bytes": Input(4, "B", "code", "int32 values (docs/protocol.md)"),
        "agg_header_bytes": Input(
            agg_hdr,
            "B",
            "code",
            f"{src} HEADER_BYTES {ap.HEADER_BYTES} + UDP 8 + IPv4 20 + Ethernet 14 "
            "+ FCS 4 + preamble 8 + inter-frame gap 12",
        ),
        "tcp_mss": Input(TCP_MSS, "B", "assumed", "1500-byte MTU, TCP timestamps (Linux default)"),
        "tcp_overhead_bytes": Input(
            TCP_HEADER + IPV4_HEADER + ETH_HEADER + ETH_WIRE_EXTRA,
            "B",
            "assumed",
            "TCP 20 + timestamp option 12 + IPv4 20 + Ethernet 14 + FCS/preamble/IFG 24 per segment",
        ),
        "switch_latency_s": Input(
            1e-6, "s", "assumed", "hardware switch port-to-port latency, Tofino-class (sub-microsecond); 1 us"
        ),
        "host_pkt_s": Input(
            0.0,
            "s",
            "assumed",
            "hosts send at line rate (kernel bypass, e.g. SwitchML's DPDK/RDMA clients); "
            "this project's Python path is far slower: see software_path_pkt_s",
        ),
        "rtt_s": Input(
            10e-6, "s", "assumed", "round trip host-switch-host inside a rack, 10 us, excluding serialization"
        ),
        "window": Input(
            64, "packets", "assumed", "bench/aggregation.py --slots default 64 (outstanding packets)"
        ),
        "async_k_frac": Input(0.5, "", "assumed", "async threshold k = ceil(0.5 N)"),
        "ps_servers": Input(1, "", "assumed", "one parameter server (the project's param_server)"),
    }
    if "compute_s" in measured:
        inputs["compute_s"] = measured["compute_s"]
    else:
        inputs["compute_s"] = Input(
            10e-3, "s", "assumed", "10 ms per iteration (no learning-dp result found)"
        )
    inputs["jitter_s"] = Input(
        0.1 * inputs["compute_s"].value,
        "s",
        "assumed",
        "exponential compute jitter per worker, mean 10% of compute (a guess; no jitter measured)",
    )
    return inputs


def params_from(inputs: dict[str, Input]) -> Params:
    v = {k: inputs[k].value for k in inputs}
    return Params(
        model_bytes=v["model_bytes"],
        values_per_packet=int(v["values_per_packet"]),
        value_bytes=int(v["value_bytes"]),
        agg_header_bytes=int(v["agg_header_bytes"]),
        tcp_mss=int(v["tcp_mss"]),
        tcp_overhead_bytes=int(v["tcp_overhead_bytes"]),
        switch_latency_s=v["switch_latency_s"],
        host_pkt_s=v["host_pkt_s"],
        rtt_s=v["rtt_s"],
        window=int(v["window"]),
        compute_s=v["compute_s"],
        jitter_s=v["jitter_s"],
        async_k_frac=v["async_k_frac"],
        ps_servers=int(v["ps_servers"]),
    )


# ---- command line ----


def _num_list(kind):
    def parse(text: str):
        try:
            vals = [kind(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a comma-separated list of numbers: {text!r}") from None
        if not vals or any(x <= 0 for x in vals):
            raise argparse.ArgumentTypeError(f"need positive numbers: {text!r}")
        return vals

    return parse


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m bench.scale_model",
        description="Analytic model of time per iteration (compute + one gradient allreduce) for N "
        "workers on one hardware switch at line rate: in-switch sync/async aggregation vs "
        "parameter server vs ring all-reduce. Prints a table, writes JSON and a PNG plot; every "
        "input is reported as measured (bench/results/*.json, file and value), code (protocol "
        "constants), assumed (with its source) or given (this command line). No network, no root.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    ap.add_argument("--workers", type=_num_list(int), default=[8, 16, 32, 64, 128, 256], help="N list")
    ap.add_argument("--link-gbps", type=_num_list(float), default=[10.0, 40.0, 100.0], help="link rates")
    ap.add_argument(
        "--model-mb", type=float, default=None, help="gradient size S in MB (1e6 bytes); default 13"
    )
    ap.add_argument(
        "--compute-ms",
        type=float,
        default=None,
        help="compute per iteration; default: measured from the newest bench/results/learning-dp*.json, "
        "else 10 ms",
    )
    ap.add_argument(
        "--jitter-ms",
        type=float,
        default=None,
        help="mean exponential compute jitter; default 10%% of compute",
    )
    ap.add_argument(
        "--async-k-frac", type=float, default=None, help="async threshold k = ceil(frac N); default 0.5"
    )
    ap.add_argument("--ps-servers", type=int, default=None, help="parameter-server shards P; default 1")
    ap.add_argument("--rtt-us", type=float, default=None, help="base round trip, default 10")
    ap.add_argument("--switch-latency-us", type=float, default=None, help="switch latency, default 1")
    ap.add_argument(
        "--host-pkt-us",
        type=float,
        default=None,
        help="host cost per aggregation packet, default 0 (line rate)",
    )
    ap.add_argument(
        "--window", type=int, default=None, help="outstanding aggregation packets per worker, default 64"
    )
    ap.add_argument(
        "--values-per-packet",
        type=int,
        default=None,
        help="int32 values per packet; default from agg_protocol",
    )
    ap.add_argument("--results-dir", type=Path, default=RESULTS, help="where measured inputs are read from")
    ap.add_argument(
        "--out", type=Path, default=None, help="JSON path; default bench/results/scale-model-<stamp>.json"
    )
    ap.add_argument("--plot", type=Path, default=None, help="PNG path; default the JSON path with .png")
    return ap


def _given(inputs: dict[str, Input], args: argparse.Namespace) -> None:
    overrides = {
        "model_bytes": (args.model_mb, 1e6, "--model-mb"),
        "compute_s": (args.compute_ms, 1e-3, "--compute-ms"),
        "jitter_s": (args.jitter_ms, 1e-3, "--jitter-ms"),
        "async_k_frac": (args.async_k_frac, 1, "--async-k-frac"),
        "ps_servers": (args.ps_servers, 1, "--ps-servers"),
        "rtt_s": (args.rtt_us, 1e-6, "--rtt-us"),
        "switch_latency_s": (args.switch_latency_us, 1e-6, "--switch-latency-us"),
        "host_pkt_s": (args.host_pkt_us, 1e-6, "--host-pkt-us"),
        "window": (args.window, 1, "--window"),
        "values_per_packet": (args.values_per_packet, 1, "--values-per-packet"),
    }
    for key, (val, scale, flag) in overrides.items():
        if val is not None:
            inputs[key] = Input(val * scale, inputs[key].unit, "given", f"{flag} {val}")
    if args.compute_ms is not None and args.jitter_ms is None:
        inputs["jitter_s"] = replace(inputs["jitter_s"], value=0.1 * inputs["compute_s"].value)


def run_model(inputs: dict[str, Input], workers: list[int], gbps_list: list[float]) -> dict:
    p = params_from(inputs)
    rows = []
    for gbps in gbps_list:
        for n in workers:
            t = iteration_times(p, n, gbps)
            rows.append(
                {
                    "workers": n,
                    "link_gbps": gbps,
                    "times": t,
                    "speedups": speedups(t),
                    "switch_limited_by": switch_limit(p, link_bytes_per_s(gbps)),
                }
            )
    # iSwitch's (assumed) setting, and what our project's software path would give there
    n0, g0 = ISWITCH["workers"], ISWITCH["link_gbps"]
    t0 = iteration_times(p, n0, g0)
    comparison = {
        "setting": {"workers": n0, "link_gbps": g0},
        "predicted": speedups(t0),
        "predicted_communication_only": speedups(
            iteration_times(replace(p, compute_s=0.0, jitter_s=0.0), n0, g0)
        ),
        "times": t0,
        "published": {"sync": ISWITCH["speedup_sync"], "async": ISWITCH["speedup_async"]},
        "compute_s_for_published_sync": compute_for_speedup(p, n0, g0, ISWITCH["speedup_sync"]),
        "amdahl_ceiling_at_published_share": 1 / (1 - ISWITCH["communication_share"]),
    }
    software = {}
    for key in ("software_path_pkt_s", "softswitch_pkt_s"):
        if key in inputs:
            ps = replace(p, host_pkt_s=inputs[key].value)
            software[key] = {
                "per_packet_s": inputs[key].value,
                "switch_comm_s": switch_comm(ps, link_bytes_per_s(g0)),
                "note": "in-switch allreduce time if every packet cost this (project's software path), any N",
            }
    return {"params": asdict(p), "rows": rows, "iswitch": comparison, "software_path": software}


def format_table(result: dict) -> str:
    lines = []
    hdr = (
        f"{'Gb/s':>5} {'N':>4} | {'sync ms':>8} {'async ms':>8} {'k':>4} {'PS ms':>9} {'ring ms':>8} | "
        f"{'sync/PS':>7} {'sync/ring':>9} {'async/PS':>8} {'async/ring':>10} | switch limit"
    )
    lines += [hdr, "-" * len(hdr)]
    for r in result["rows"]:
        t, s = r["times"], r["speedups"]
        lines.append(
            f"{r['link_gbps']:>5g} {r['workers']:>4} | {t['switch_sync']['total_s'] * 1e3:>8.2f} "
            f"{t['switch_async']['total_s'] * 1e3:>8.2f} {t['switch_async']['k']:>4} "
            f"{t['ps']['total_s'] * 1e3:>9.2f} {t['ring']['total_s'] * 1e3:>8.2f} | "
            f"{s['sync_vs_ps']:>7.2f} {s['sync_vs_ring']:>9.2f} {s['async_vs_ps']:>8.2f} "
            f"{s['async_vs_ring']:>10.2f} | {r['switch_limited_by']}"
        )
    return "\n".join(lines)


def format_inputs(inputs: dict[str, Input]) -> str:
    return "\n".join(
        f"  {k:<22} {v.value:<12.6g} {v.unit:<8} {v.kind:<8} {v.source}" for k, v in inputs.items()
    )


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gbps_list = sorted({r["link_gbps"] for r in result["rows"]})
    fig, axes = plt.subplots(1, len(gbps_list), figsize=(5 * len(gbps_list), 4), squeeze=False)
    for ax, g in zip(axes[0], gbps_list, strict=True):
        rows = [r for r in result["rows"] if r["link_gbps"] == g]
        ns = [r["workers"] for r in rows]
        for m in METHODS:
            ax.plot(ns, [r["times"][m]["total_s"] * 1e3 for r in rows], marker="o", label=METHOD_LABELS[m])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("workers")
        ax.set_ylabel("time per iteration (ms)")
        ax.set_title(f"{g:g} GbE, S = {result['params']['model_bytes'] / 1e6:g} MB (model)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Scale model (analytic; inputs measured/assumed as listed in the JSON)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    measured = measured_inputs(args.results_dir)
    inputs = default_inputs(measured)
    _given(inputs, args)
    for k in ("software_path_pkt_s", "softswitch_pkt_s", "communication_share"):
        if k in measured:
            inputs[k] = measured[k]
    if not 0 < inputs["async_k_frac"].value <= 1:
        print("--async-k-frac must lie in (0, 1]", file=sys.stderr)
        return 2
    result = run_model(inputs, sorted(args.workers), args.link_gbps)
    result["inputs"] = {k: asdict(v) for k, v in inputs.items()}
    result["iswitch"]["reference"] = ISWITCH
    result["benchmark"] = "scale_model"
    result["note"] = "Analytic predictions, not measurements; see the module docstring for the equations."

    print(format_table(result))
    c = result["iswitch"]
    pr = c["predicted"]
    print(
        f"\niSwitch comparison (assumed setting {c['setting']['workers']} workers, "
        f"{c['setting']['link_gbps']:g} GbE; published sync {c['published']['sync']}x, async "
        f"{c['published']['async']}x over the better baseline):\n"
        f"  predicted sync {pr['sync_vs_ps']:.2f}x vs PS, {pr['sync_vs_ring']:.2f}x vs ring; "
        f"async {pr['async_vs_ps']:.2f}x vs PS, {pr['async_vs_ring']:.2f}x vs ring"
    )
    co = c["predicted_communication_only"]
    print(
        f"  communication alone (no compute): sync {co['sync_vs_ps']:.2f}x vs PS, "
        f"{co['sync_vs_ring']:.2f}x vs ring"
    )
    cs = c["compute_s_for_published_sync"]
    print(
        "  compute time at which the model gives 3.66x sync over the better baseline: "
        + (f"{cs * 1e3:.3f} ms" if cs is not None else "none (the model cannot reach it here)")
        + f"; Amdahl ceiling at 83.2% communication: {c['amdahl_ceiling_at_published_share']:.2f}x"
    )
    for k, v in result["software_path"].items():
        print(
            f"  with {k} = {v['per_packet_s'] * 1e6:.1f} us/packet, "
            f"in-switch allreduce = {v['switch_comm_s'] * 1e3:.1f} ms (any N)"
        )
    print("\ninputs (value, unit, provenance, source):\n" + format_inputs(inputs))

    out = args.out or RESULTS / f"scale-model-{time.strftime('%Y%m%d-%H%M%S')}.json"
    png = args.plot or out.with_suffix(".png")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    plot(result, png)
    print(f"\nwrote {out} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
