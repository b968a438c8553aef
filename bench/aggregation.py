"""Allreduce benchmark: in-switch aggregation against a parameter server and gloo's ring allreduce,
all three over the same network (hosts in namespaces, routed through one software switch).

For each worker count N a star of N+1 hosts is built on one `python -m softswitch` process
(topologies.testbed.star): hosts 0..N-1 are the workers, host N runs the parameter server (idle
for the other methods), so every byte of every method crosses the switch. Methods:

  switch  in-switch aggregation (p4/innet.p4, host_agents.agg_client.AggregationClient): each
          worker sends its tensor in UDP packets of --values-per-packet values (the switch's
          program compiled for that width; 64 by default), the switch sums them and multicasts
          the result back; a window of --slots outstanding packets per worker. With several
          widths (--values-per-packet 64,256) every switch method runs at each, on a switch
          compiled for it, and each result says its width ("values_per_packet"); ps and gloo
          run once (they have no packet width: "values_per_packet" null).
  switch-fixed
          the same synchronous job, with a fixed exponent (every worker clips to one bound 2**e
          computed from the shared inputs) instead of agreeing one per chunk through the switch:
          no bootstrap round. The control for switch-async, which must use a fixed exponent.
  switch-async
          an asynchronous job (iSwitch async): each chunk's result goes out once the first
          --async-threshold workers' packets are in (default N-1), fixed exponent as
          switch-fixed; a worker behind gets that result without its own contribution, so a
          result sums k of N gradients. Needs N >= 2 (recorded as not applicable at N = 1).
          Checked per chunk against the exact sum of the workers the result's bitmap names;
          chunks a worker got no result for (it fell a round behind: STALE) are counted apart.
  ps      parameter server over TCP (host_agents.param_server) on the extra host.
  gloo    torch.distributed gloo ring allreduce (host_agents.gloo_allreduce), rank 0 = worker 0.

Per (method, workers, size) each worker makes one warm-up call (its result is checked against
the exact sum of every worker's input) and then the timed calls, on 4 other tensors of the same
generator in turn (as training makes a new gradient per step: `switch` predicts each slot's first
exponent from the last call and redoes the rounds it missed, JSON redone_per_call). A call's
time is the slowest worker's; the table gives the median and the minimum over the timed calls
and the algorithm bandwidth size/median. Bytes on the wire are the worker interfaces' own counters
(/sys/class/net/<if>/statistics/{tx,rx}_bytes inside each namespace, read before and after the
timed calls: Ethernet frames incl. headers, TCP ACKs and retransmissions), per worker per call;
each method's own count is kept as a cross-check (switch: frames it sent/received; ps: payload +
32-byte framing; gloo: the analytic ring estimate of payload bytes, it has no counters). Where
each call's time goes: the CPU (user and system, from /proc) of the switch process, the workers,
the parameter server and this driver over the timed calls, per call, and how busy the machine was
(JSON cpu_per_call, a progress line per measurement).

THE TIMINGS MEASURE THE PROJECT'S SOFTWARE SWITCH (its native backend by default, about a
million packets/s; the Python backend tens of thousands; sharing the machine's CPUs with the
workers), NOT A HARDWARE SWITCH: they compare the methods on this target only. Sizes are
float32 tensors of SIZE_KB * 1000 / 4 elements (13000 KB ~ the seed's dueling DQN).

    python -m bench.aggregation                       # the full grid (long: see the estimate)
    python -m bench.aggregation --quick               # smoke run, about a minute
    python -m bench.aggregation --workers 1,2,4 --sizes-kb 10,100,1000 --methods switch,gloo
    python -m bench.aggregation --quick --methods switch --values-per-packet 64,256
    python -m bench.aggregation --targets --values-per-packet 256   # issue 15's (d) points, 30 calls each

Needs root (network namespaces). Writes JSON (default bench/results/aggregation.json, rewritten
after every measurement so an interrupted run keeps what it measured) and prints a table on
stdout; progress goes to stderr. Everything it creates (namespaces, veths, processes) is removed
on exit, error or Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import platform
import select
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import (
    BenchError,
    ProcessGroup,
    StdinLines,
    choice_list,
    cpu_per_call,
    cpu_snapshot,
    emit,
    format_cpu,
    int_list,
    process_group,
    progress,
    run_and_report,
)

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/aggregation.py` as well as `python -m bench.aggregation`
    sys.path.insert(0, str(ROOT))

METHODS = ("switch", "switch-fixed", "switch-async", "ps", "gloo")
KB = 1000
DEFAULT_WORKERS = [1, 2, 4, 8]
DEFAULT_SIZES_KB = [10, 100, 1000, 13000]
DEFAULT_REPEAT = 5
BIG_SIZE_BYTES = 1_000_000  # sizes above this get --big-repeat timed calls
DEFAULT_BIG_REPEAT = 1
DEFAULT_SLOTS = 64
QUICK = {"workers": [2], "sizes_kb": [10, 100], "repeat": 2}
# --targets: issue 15's (d) points, the three methods its ratios compare, more calls per median
TARGETS = {"workers": [4, 8], "sizes_kb": [100, 1000], "methods": ["switch", "gloo", "ps"], "repeat": 30,
           "values_per_packet": [256]}  # the software target's width, which the targets name
DEFAULT_OUT = ROOT / "bench" / "results" / "aggregation.json"

JOB_ID = 1
MEMBER_UDP_PORT = 40000
# switch-fixed: a second synchronous job (JOB_ID + 1, the next --slots slots, port + 1).
# switch-async: one job per size (an asynchronous job's tensors all have one size, and its
# round numbers restart with each new client), ids ASYNC_JOB_BASE + size index, slots after the
# other two jobs', member ports MEMBER_UDP_PORT + 2 + size index
FIXED_JOB_ID = 2
ASYNC_JOB_BASE = 3
PS_PORT = 5555
GLOO_PORT = 29500
SEED = 0
# Rough forwarding rates of the software switch for the time estimate (and the timeouts, which
# are many times the estimate): aggregation packets in, TCP frames forwarded.
EST_AGG_PPS = 12_000
EST_TCP_PPS = 25_000
TCP_MSS = 1448
SETTLE_S = 0.15  # let trailing ACKs land before reading interface counters
FILL_GIVE_UP_S = 3.0  # a filler call's wait for a round the others stopped filling (see --fill)
STARTUP_TIMEOUT_S = 180.0  # worker processes import torch (and gloo rendezvous) on shared CPUs
NOTE = (
    "Timings are of the project's software switch (softswitch on its default backend, the P4 "
    "program compiled to C: AF_PACKET ports on veth pairs, about a million packets/s, sharing the "
    "CPUs with the workers; the Python backend, if run_all.json says so, tens of thousands), not "
    "of a hardware switch; they compare the methods on this target only."
)


# ---------------------------------------------------------------------------------------------
# sizes, estimates


def numel_for(size_kb: int) -> int:
    return max(1, size_kb * KB // 4)


def size_label(nbytes: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if nbytes >= scale:
            v = nbytes / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{nbytes:.0f} B"


def repeat_for(size_kb: int, repeat: int, big_repeat: int) -> int:
    return big_repeat if size_kb * KB > BIG_SIZE_BYTES else repeat


def estimate_call_s(method: str, workers: int, numel: int, vpp: int = 32) -> float:
    """Rough seconds of one allreduce on the software switch (for the estimate and timeouts);
    ``vpp``: values per packet (the default, 32, estimates long)."""
    nbytes = 4 * numel
    if method.startswith("switch"):
        packets = workers * math.ceil(numel / vpp)
        return 0.01 + packets / EST_AGG_PPS
    if method == "ps":  # N tensors to the server and N back, plus about one ACK per two segments
        frames = 1.5 * 2 * workers * nbytes / TCP_MSS
    else:  # ring: 2(N-1)/N of the tensor sent by each of N workers
        frames = 1.5 * 2 * (workers - 1) * nbytes / TCP_MSS
    return 0.01 + frames / EST_TCP_PPS


def estimate_config_s(
    method: str, workers: int, sizes_kb: list[int], repeat: int, big_repeat: int, vpp: int = 32
) -> float:
    total = 3.0 + 0.5 * workers  # process start-up
    for kb in sizes_kb:
        calls = 1 + repeat_for(kb, repeat, big_repeat)
        total += calls * estimate_call_s(method, workers, numel_for(kb), vpp) + 2 * SETTLE_S + 0.1 * workers
    return total


def phase_timeout_s(method: str, workers: int, numel: int, calls: int, vpp: int = 32) -> float:
    return 60.0 + 10.0 * calls * estimate_call_s(method, workers, numel, vpp)


# ---------------------------------------------------------------------------------------------
# worker side: `python -m bench.aggregation --role ...`, run inside a worker's namespace


class _SwitchMethod:
    asynchronous = False

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.client = self._client(args.job, MEMBER_UDP_PORT, None, None)

    def _client(self, job: int, port: int, threshold: int | None, exponent: int | None):
        from host_agents.agg_client import AggregationClient
        from host_agents.agg_protocol import AGG_UDP_PORT

        a = self.args
        return AggregationClient(
            (a.switch, AGG_UDP_PORT), job, a.rank, a.workers, a.slots, bind=(a.bind, port),
            threshold=threshold, fixed_exponent=exponent, timeout=a.retx_timeout, max_tries=a.max_tries,
            values_per_packet=a.values_per_packet,
        )  # fmt: skip

    def start_size(self, index: int, exponent: int) -> None:
        """Called before each size's warm-up with that size's fixed exponent (used by the
        fixed-exponent and asynchronous variants only)."""

    def allreduce(self, x):
        y = self.client.allreduce(x)
        st = self.client.last_stats
        return y, st.bytes_sent, st.bytes_received, st.retransmissions

    def close(self) -> None:
        self.client.close()


class _SwitchFixedMethod(_SwitchMethod):
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.client = self._client(FIXED_JOB_ID, MEMBER_UDP_PORT + 1, None, 0)

    def start_size(self, index: int, exponent: int) -> None:
        self.client.fixed_exponent = exponent  # a synchronous job takes any size with one client


class _SwitchAsyncMethod(_SwitchMethod):
    asynchronous = True

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.client = None

    def start_size(self, index: int, exponent: int) -> None:
        if self.client is not None:
            self.client.close()
        a = self.args
        self.client = self._client(ASYNC_JOB_BASE + index, MEMBER_UDP_PORT + 2 + index, a.threshold, exponent)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()


def fixed_exponent_for(seed: int, workers: int, numel: int) -> int:
    """The smallest e with every worker's input inside +-2**e (all workers compute the same e from
    the shared seed, as real workers agree on a gradient clip bound)."""
    from host_agents.allreduce import input_tensor

    peak = max(float(input_tensor(seed, w, numel, 0).abs().max()) for w in range(workers))
    return max(-120, min(120, math.floor(math.log2(peak)) + 1 if peak > 0 else 0))


def check_async(
    seed: int, workers: int, threshold: int, y, info, values_per_packet: int | None = None
) -> tuple[float, float, int, int]:
    """(max relative error, mean workers per received chunk, chunks with no result, chunks whose
    header contradicts itself) of an asynchronous result: every chunk with a result must equal
    the exact sum of the inputs of the workers its bitmap names, with count = the bitmap's
    workers >= threshold. No result (count 0) is normal in an asynchronous job: the worker fell
    a round behind on that slot and rejoined later. Chunks are ``values_per_packet`` values
    (default: the program's default width)."""
    import numpy as np

    from host_agents.agg_protocol import DEFAULT_VALUES_PER_PACKET
    from host_agents.allreduce import input_tensor

    vpp = values_per_packet or DEFAULT_VALUES_PER_PACKET

    numel = y.numel()
    inputs = np.stack([input_tensor(seed, w, numel, 0).double().numpy() for w in range(workers)])
    got = y.double().numpy()
    err, peak = 0.0, 0.0
    missing, contradictions, counts = 0, 0, []
    for c, bitmap in enumerate(info.bitmap.tolist()):
        lo, hi = c * vpp, min(numel, (c + 1) * vpp)
        count = int(info.count[c])
        if count == 0 and bitmap == 0:
            missing += 1
            continue
        members = [w for w in range(workers) if bitmap >> w & 1]
        if count != len(members) or count < threshold or bitmap >> workers:
            contradictions += 1
            continue
        counts.append(count)
        expect = inputs[members, lo:hi].sum(axis=0)
        err = max(err, float(np.abs(got[lo:hi] - expect).max()))
        peak = max(peak, float(np.abs(expect).max()))
    mean_count = float(np.mean(counts)) if counts else 0.0
    return err / (peak or 1.0), mean_count, missing, contradictions


class _PsMethod:
    def __init__(self, args: argparse.Namespace) -> None:
        from host_agents.param_server import ParameterServerClient

        host, _, port = args.server.rpartition(":")
        self.client = ParameterServerClient(
            host, int(port), args.rank, args.workers, timeout=args.phase_timeout
        )

    def allreduce(self, x):
        s0, r0 = self.client.bytes_sent, self.client.bytes_received
        y = self.client.allreduce(x)
        return y, self.client.bytes_sent - s0, self.client.bytes_received - r0, 0

    def close(self) -> None:
        self.client.close()


class _GlooMethod:
    def __init__(self, args: argparse.Namespace) -> None:
        from host_agents.gloo_allreduce import GlooAllreduce

        host, _, port = args.master.rpartition(":")
        self.world = args.workers
        self.g = GlooAllreduce(args.rank, args.workers, host, int(port), args.phase_timeout, args.ifname)

    def allreduce(self, x):
        from host_agents.gloo_allreduce import bytes_on_wire_estimate

        y = self.g.allreduce(x)
        est = bytes_on_wire_estimate(x.numel(), self.world)
        return y, est, est, 0

    def close(self) -> None:
        self.g.close()


def _expected_sum(seed: int, workers: int, numel: int):
    import torch

    from host_agents.allreduce import input_tensor

    total = torch.zeros(numel, dtype=torch.float64)
    for w in range(workers):
        total += input_tensor(seed, w, numel, 0).double()
    return total


def worker_main(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C in the terminal: just go
    from host_agents.agg_client import AggregationTimeout
    from host_agents.allreduce import input_tensor

    sizes = [int(s) for s in args.sizes.split(",")]
    repeats = [int(r) for r in args.repeats.split(",")]
    stdin = StdinLines()
    kind = {
        "switch-worker": _SwitchMethod, "switch-fixed-worker": _SwitchFixedMethod,
        "switch-async-worker": _SwitchAsyncMethod,
        "ps-worker": _PsMethod, "gloo-worker": _GlooMethod,
    }[args.role]  # fmt: skip
    try:
        method = kind(args)
    except Exception as e:
        emit(event="error", message=f"{args.role} {args.rank}: set-up failed: {type(e).__name__}: {e}")
        return 1
    try:
        is_async = isinstance(method, _SwitchAsyncMethod)
        # each size's shared bound, computed once by the driver (fixed-exponent methods only)
        exponents = [int(e) for e in args.exponents.split(",")] if args.exponents else [0] * len(sizes)
        # torch and the method's set-up leave ~10^5 long-lived objects; a full collection over them,
        # triggered by any call's allocations, cost a worker ~10% of a core inside its timed calls
        # (perf, 4 x 1 MB): freeze them out of the collector, for every method alike
        gc.collect()
        gc.freeze()
        emit(event="up", rank=args.rank)
        for index, (numel, repeat) in enumerate(zip(sizes, repeats, strict=True)):
            x = input_tensor(args.seed, args.rank, numel, 0)
            if stdin.readline(args.phase_timeout) is None:
                return 1
            if isinstance(method, _SwitchMethod):
                method.start_size(index, exponents[index])
            t0 = time.perf_counter()
            y, _, _, retx = method.allreduce(x)
            warm_s = time.perf_counter() - t0
            extra: dict = {}
            if is_async:
                info = method.client.last_info
                err, mean_count, missing, bad = check_async(
                    args.seed, args.workers, args.threshold, y, info, args.values_per_packet
                )
                extra = {"mean_count": mean_count, "missing_chunks": missing, "contradictions": bad}
            else:
                expect = _expected_sum(args.seed, args.workers, numel)
                peak = float(expect.abs().max())
                err = float((y.double() - expect).abs().max()) / (peak or 1.0)
            # a new gradient per timed call, as training makes (the switch's predicted exponents
            # then miss where a chunk's largest value grows; the warm-up tensor is the one checked
            # against the exact sum): up to 4 made before the timed calls and taken in turn, so
            # that making one does not hold the other workers up inside a timed call
            grads = [input_tensor(args.seed, args.rank, numel, 1 + k) for k in range(min(repeat, 4))]
            # Python's collector stays out of the timed calls, as timeit keeps it out, for every
            # method alike: with torch loaded a full collection walks ~1.5e5 objects (~140 ms on
            # the 2-CPU VM), and the warm-up's lazy imports left ~1e5 new ones that kept
            # triggering collections (perf at 4 x 1 MB: ~10% of each worker's core in
            # gc_collect_main, ~16 ms per 30 ms call); frozen, then off until the timed calls end
            gc.collect()
            gc.freeze()
            gc.disable()
            # all of that before "warm": the driver's CPU accounting (cpu_per_call) starts at its
            # go line and so counts only the timed calls
            emit(event="warm", rank=args.rank, numel=numel, seconds=warm_s, max_rel_err=err, retx=retx,
                 **extra)  # fmt: skip
            if stdin.readline(args.phase_timeout) is None:
                return 1
            for rep in range(repeat):
                x = grads[rep % len(grads)]
                if args.delay_ms:  # the straggler: a slower compute step before each timed call
                    time.sleep(args.delay_ms / 1000)
                t0 = time.perf_counter()
                _, sent, received, retx = method.allreduce(x)
                seconds = time.perf_counter() - t0
                if is_async:  # workers per received chunk, and chunks with no result
                    cnt = method.client.last_info.count
                    got = cnt[cnt > 0]
                    extra = {"mean_count": float(got.mean()) if got.size else 0.0,
                             "missing_chunks": int((cnt == 0).sum())}  # fmt: skip
                elif isinstance(method, _SwitchMethod):  # predicted first rounds run again
                    extra = {"redone": method.client.last_stats.redone}
                emit(
                    event="call", rank=args.rank, numel=numel, rep=rep, seconds=seconds,
                    bytes_sent=sent, bytes_received=received, retransmissions=retx, **extra,
                )
            gc.enable()
            emit(event="done", rank=args.rank, numel=numel)
            if args.fill:
                # an asynchronous job's fast workers race ahead of the straggler; if they stopped,
                # its last calls would open rounds no one else sends and never reach k. Keep the
                # job going with untimed calls until the driver says the straggler is done.
                st = method.client.totals
                s0, r0, p0, q0 = st.bytes_sent, st.bytes_received, st.packets_sent, st.packets_received
                fills, deadline = 0, time.monotonic() + args.phase_timeout
                # A filler that starts a round just before the others stop fills would wait for
                # k in vain: fill calls give up after FILL_GIVE_UP_S, which ends filling once the
                # driver's line is there (their results are not used; the job is not used again).
                method.client.max_tries = max(1, math.ceil(FILL_GIVE_UP_S / method.client.timeout))
                while not stdin.ready() and time.monotonic() < deadline:
                    try:
                        method.allreduce(x)
                    except AggregationTimeout:
                        if not stdin.ready():
                            raise
                        break
                    fills += 1
                if stdin.readline(args.phase_timeout) is None:
                    return 1
                emit(event="filled", rank=args.rank, calls=fills, bytes_sent=st.bytes_sent - s0,
                     bytes_received=st.bytes_received - r0, packets_sent=st.packets_sent - p0,
                     packets_received=st.packets_received - q0)  # fmt: skip
    except Exception as e:
        emit(event="error", message=f"{args.role} {args.rank}: {type(e).__name__}: {e}")
        return 1
    finally:
        method.close()
    return 0


def build_worker_parser() -> argparse.ArgumentParser:
    from host_agents.agg_protocol import DEFAULT_VALUES_PER_PACKET

    p = argparse.ArgumentParser(
        prog="python -m bench.aggregation --role ROLE",
        description="INTERNAL: one benchmark worker inside a namespace, driven over stdin/stdout by "
        "`python -m bench.aggregation` (not meant to be run by hand).",
    )
    p.add_argument("--role", required=True, choices=[f"{m}-worker" for m in METHODS])
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--workers", type=int, required=True)
    p.add_argument("--sizes", required=True, help="comma-separated element counts")
    p.add_argument("--repeats", required=True, help="timed calls per size, comma-separated")
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--phase-timeout", type=float, default=300.0)
    p.add_argument("--switch", help="switch-worker: the switch's aggregation IP")
    p.add_argument("--bind", help="switch-worker: this worker's IP")
    p.add_argument("--job", type=int, default=JOB_ID)
    p.add_argument("--slots", type=int, default=DEFAULT_SLOTS)
    p.add_argument("--values-per-packet", type=int, default=DEFAULT_VALUES_PER_PACKET,
                   help="switch workers: the width the switch's program was compiled with "
                   "(default %(default)s)")  # fmt: skip
    p.add_argument("--threshold", type=int, help="switch-async-worker: the job's threshold")
    p.add_argument("--exponents", default="",
                   help="switch-fixed/-async-worker: each size's fixed exponent")  # fmt: skip
    p.add_argument("--delay-ms", type=float, default=0.0, help="sleep before each timed call (the straggler)")
    p.add_argument("--fill", action="store_true",
                   help="async, every worker but a straggler: untimed calls after the timed ones until the "
                   "next line on stdin, so that a worker left a call behind can finish")  # fmt: skip
    p.add_argument("--retx-timeout", type=float, default=0.2)
    p.add_argument("--max-tries", type=int, default=100)
    p.add_argument("--server", help="ps-worker: IP:PORT of the parameter server")
    p.add_argument("--master", help="gloo-worker: IP:PORT of rank 0's rendezvous")
    p.add_argument("--ifname", help="gloo-worker: this namespace's interface")
    return p


# ---------------------------------------------------------------------------------------------
# parent side


@contextlib.contextmanager
def param_server(host, workers: int, timeout: float) -> Iterator[tuple[str, int]]:
    """`python -m host_agents.param_server` in the server host's namespace; yields (IP:PORT, its
    process id)."""
    argv = [
        sys.executable, "-m", "host_agents.param_server", "--host", host.ip, "--port", str(PS_PORT),
        "--workers", str(workers), "--round-timeout", str(timeout), "--idle-timeout", str(timeout),
        "--log-level", "WARNING",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = host.ns.popen(argv, cwd=str(ROOT), env=env, start_new_session=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        line = proc.stdout.readline() if ready else ""
        if "listening" not in line:
            proc.kill()
            raise BenchError(f"parameter server did not start: {line!r} {proc.stderr.read()[-1000:]}")
        threading.Thread(target=proc.stderr.read, daemon=True).start()  # never block on a full pipe
        yield f"{host.ip}:{PS_PORT}", proc.pid
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


IF_COUNTERS = ("tx_bytes", "rx_bytes", "tx_packets", "rx_packets")
COUNTERS = (*IF_COUNTERS, "tcp_retrans_segs")


def read_counters(host) -> dict[str, int]:
    """The host interface's byte/packet counters and its namespace's TCP RetransSegs
    (/proc/net/snmp is per network namespace)."""
    base = f"/sys/class/net/{host.pair.ns_if}/statistics"
    out = host.ns.run(["cat", *(f"{base}/{c}" for c in IF_COUNTERS), "/proc/net/snmp"], timeout=10).stdout
    lines = out.splitlines()
    values = dict(zip(IF_COUNTERS, (int(v) for v in lines[: len(IF_COUNTERS)]), strict=True))
    tcp = [line.split()[1:] for line in lines if line.startswith("Tcp:")]
    snmp = dict(zip(tcp[0], tcp[1], strict=True)) if len(tcp) >= 2 else {}
    values["tcp_retrans_segs"] = int(snmp.get("RetransSegs", 0))
    return values


def _delta(after: dict[str, int], before: dict[str, int], calls: int) -> dict[str, float]:
    return {k: (after[k] - before[k]) / calls for k in COUNTERS}


def _deltas(after: list[dict[str, int]], before: list[dict[str, int]], calls: int) -> list[dict[str, float]]:
    return [_delta(a, b, calls) for a, b in zip(after, before, strict=True)]


def _default_width() -> int:
    from host_agents.agg_protocol import DEFAULT_VALUES_PER_PACKET

    return DEFAULT_VALUES_PER_PACKET


@dataclass
class Config:
    workers: list[int]
    sizes_kb: list[int]
    methods: list[str]
    repeat: int
    big_repeat: int
    slots: int
    out: Path
    async_threshold: int = 0  # switch-async: 0 = N - 1
    straggler_ms: float = 0.0  # the last worker sleeps this long before each timed call
    values_per_packet: list[int] = field(default_factory=lambda: [_default_width()])  # switch methods: each
    mtu: int = 1500  # every link's, for all methods alike
    offloads: bool = False  # checksum/segmentation offloads on every link, switch ports in offload mode
    targets: bool = False  # issue 15's (d) points only (TARGETS): its own figure, the targets' medians
    results: list[dict] = field(default_factory=list)
    meta: dict = field(default_factory=dict)

    def save(self) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.out.with_suffix(self.out.suffix + ".tmp")
        tmp.write_text(json.dumps({**self.meta, "results": self.results}, indent=1) + "\n")
        tmp.replace(self.out)


def straggler_of(cfg: Config, n: int) -> int | None:
    """The straggling worker's rank (the last one) when --straggler-ms is set and n >= 2."""
    return n - 1 if cfg.straggler_ms > 0 and n >= 2 else None


def async_threshold(cfg: Config, n: int) -> int:
    """switch-async's threshold for n workers: --async-threshold (capped at n - 1), else n - 1."""
    return max(1, min(n - 1, cfg.async_threshold or n - 1))


def worker_argv(cfg: Config, method: str, n: int, rank: int, tb, extra: dict, vpp: int) -> list[str]:
    numels = [numel_for(kb) for kb in cfg.sizes_kb]
    repeats = [repeat_for(kb, cfg.repeat, cfg.big_repeat) for kb in cfg.sizes_kb]
    timeout = max(phase_timeout_s(method, n, m, 1 + r, vpp) for m, r in zip(numels, repeats, strict=True))
    argv = [
        sys.executable, "-m", "bench.aggregation", "--role", f"{method}-worker", "--rank", str(rank),
        "--workers", str(n), "--sizes", ",".join(map(str, numels)), "--repeats", ",".join(map(str, repeats)),
        "--phase-timeout", f"{timeout + STARTUP_TIMEOUT_S:.0f}",
    ]
    straggler = straggler_of(cfg, n)
    if straggler == rank:
        argv += ["--delay-ms", f"{cfg.straggler_ms:g}"]
    elif method == "switch-async":
        # k = N-1 workers do not need the N-th: one that falls a call behind (a designated
        # straggler, or a worker descheduled on a busy machine) rejoins at the others' round and
        # then needs rounds that only workers still calling can fill
        argv.append("--fill")
    w = tb.workers[rank]
    if method.startswith("switch"):
        from topologies.testbed import switch_ip

        argv += ["--switch", switch_ip(0), "--bind", w.ip, "--slots", str(cfg.slots), "--job", str(JOB_ID),
                 "--values-per-packet", str(vpp)]  # fmt: skip
        if method == "switch-async":
            argv += ["--threshold", str(async_threshold(cfg, n))]
        if "exponents" in extra:
            argv += ["--exponents", extra["exponents"]]
    elif method == "ps":
        argv += ["--server", extra["server"]]
    else:
        argv += ["--master", f"{tb.workers[0].ip}:{GLOO_PORT}", "--ifname", w.host.pair.ns_if]
    return argv


def width_of(method: str, vpp: int) -> int | None:
    """The values per packet a result was measured at: the switch's for the switch methods, none
    for ps and gloo."""
    return vpp if method.startswith("switch") else None


def run_method(cfg: Config, tb, method: str, n: int, vpp: int) -> None:
    """All sizes of one method with n workers on testbed `tb` (n workers + the server host), its
    switch compiled for ``vpp`` values per packet."""
    workers = tb.workers[:n]
    server_host = tb.workers[n].host
    pending = list(cfg.sizes_kb)
    with contextlib.ExitStack() as stack:
        try:
            extra: dict = {}
            # whose CPU each call's figures count: the switch process(es), the workers (below), the
            # parameter server, and this driver
            roles: dict[str, list[int]] = {"switch": [sw.process.proc.pid for sw in tb.switches],
                                           "workers": [], "server": [], "driver": [os.getpid()]}  # fmt: skip
            if method == "ps":
                extra["server"], ps_pid = stack.enter_context(param_server(server_host, n, 600.0))
                roles["server"].append(ps_pid)
            if method in ("switch-fixed", "switch-async"):  # one shared bound per size, for all workers
                sizes = (numel_for(kb) for kb in cfg.sizes_kb)
                extra["exponents"] = ",".join(str(fixed_exponent_for(SEED, n, m)) for m in sizes)
            group = stack.enter_context(process_group())
            for rank in range(n):
                argv = worker_argv(cfg, method, n, rank, tb, extra, vpp)
                group.start(f"worker {rank}", workers[rank].host.ns, argv)
                roles["workers"].append(group.procs[-1].pid)
            t0 = time.monotonic()
            group.wait_for("up", STARTUP_TIMEOUT_S)
            progress(f"  {method} x{n}: {n} worker(s) up in {time.monotonic() - t0:.1f} s")
            while pending:
                kb = pending[0]
                cfg.results.append(measure_size(cfg, group, workers, server_host, method, n, kb, vpp, roles))
                pending.pop(0)
                cfg.save()
        except (BenchError, OSError, RuntimeError, subprocess.TimeoutExpired) as e:
            progress(f"  {method} x{n}: FAILED: {e}")
            for i, kb in enumerate(pending):
                cfg.results.append(
                    {"method": method, "workers": n, "size_kb": kb, "size_bytes": kb * KB,
                     "values_per_packet": width_of(method, vpp),
                     "error": str(e) if i == 0 else "skipped: an earlier size failed"}
                )
            cfg.save()


def measure_size(
    cfg: Config, group: ProcessGroup, workers, server_host, method: str, n: int, kb: int, vpp: int,
    roles: dict[str, list[int]],
) -> dict:
    numel = numel_for(kb)
    nbytes = 4 * numel
    repeat = repeat_for(kb, cfg.repeat, cfg.big_repeat)
    est = estimate_call_s(method, n, numel, vpp)
    progress(
        f"  {method} x{n} {size_label(nbytes)}: 1 warm-up + {repeat} timed call(s), "
        f"estimate ~{est * (1 + repeat):.2g} s"
    )
    group.go()
    got = group.wait_for("warm", phase_timeout_s(method, n, numel, 1, vpp))
    warm = [got[rank] for rank in range(n)]
    time.sleep(SETTLE_S)
    hosts = [w.host for w in workers]
    before = [read_counters(h) for h in hosts]
    server_before = read_counters(server_host)
    calls: list[dict] = []
    straggler = straggler_of(cfg, n)
    timeout = phase_timeout_s(method, n, numel, repeat, vpp) + repeat * cfg.straggler_ms / 1000
    cpu0 = cpu_snapshot(roles)
    t0 = time.monotonic()
    group.go()
    group.wait_for("done", timeout, collect=calls)
    wall = time.monotonic() - t0
    # (with a straggler, the fast workers' filler calls before its last timed call count too)
    cpu = cpu_per_call(cpu0, cpu_snapshot(roles), repeat)
    filled: dict[int, dict] = {}
    if method == "switch-async":  # stop the filler calls (every worker but the straggler's)
        fast = [r for r in range(n) if r != straggler]
        group.go(fast)
        filled = group.wait_for("filled", timeout, which=fast)
    time.sleep(SETTLE_S)
    after = [read_counters(h) for h in hosts]
    for r, f in filled.items():  # the wire counters of the timed calls only
        after[r] = {**after[r], "tx_bytes": after[r]["tx_bytes"] - f["bytes_sent"],
                    "rx_bytes": after[r]["rx_bytes"] - f["bytes_received"],
                    "tx_packets": after[r]["tx_packets"] - f["packets_sent"],
                    "rx_packets": after[r]["rx_packets"] - f["packets_received"]}  # fmt: skip
    server_after = read_counters(server_host)

    per_rank = [[0.0] * repeat for _ in range(n)]
    own_bytes = [0] * n
    retx = sum(int(w.get("retx", 0)) for w in warm)
    retx_timed = 0
    redone = 0
    for c in calls:
        if c.get("event") != "call":
            continue
        redone += c.get("redone", 0)
        per_rank[c["rank"]][c["rep"]] = c["seconds"]
        own_bytes[c["rank"]] += c["bytes_sent"] + c["bytes_received"]
        retx_timed += c["retransmissions"]
    if not method.startswith("switch"):  # TCP: segments the worker hosts' kernels retransmitted
        hosts_after, hosts_before = after + [server_after], before + [server_before]  # ps: its server too
        retx_timed = int(sum(w["tcp_retrans_segs"] for w in _deltas(hosts_after, hosts_before, 1)))
    # a call's time is the slowest worker's; with a straggler, the slowest of the others (the
    # straggler's own call starts after its delay: a synchronous method makes the others wait
    # for it, an asynchronous one need not)
    timed_ranks = [r for r in range(n) if r != straggler]
    seconds = [max(per_rank[r][rep] for r in timed_ranks) for rep in range(repeat)]
    counts = [c["mean_count"] for c in calls if c.get("event") == "call" and "mean_count" in c]
    wire = _deltas(after, before, repeat)
    wire_mean = statistics.fmean(w["tx_bytes"] + w["rx_bytes"] for w in wire)
    median = statistics.median(seconds)
    err = max(w["max_rel_err"] for w in warm)
    res = {
        "method": method,
        "values_per_packet": width_of(method, vpp),  # which width this figure uses (switch methods)
        "workers": n,
        "size_kb": kb,
        "size_bytes": nbytes,
        "numel": numel,
        "repeat": repeat,
        "seconds": seconds,
        "seconds_per_worker": per_rank,
        "median_s": median,
        "min_s": min(seconds),
        "algbw_MBps": nbytes / median / 1e6,
        "timed_wall_s": wall,
        "warmup_s": max(w["seconds"] for w in warm),
        "wire_per_worker_per_call": wire,
        "wire_tx_rx_bytes_per_worker_per_call": wire_mean,
        "method_bytes_per_worker_per_call": statistics.fmean(own_bytes) / repeat,
        "method_bytes_kind": {
            "switch": "Ethernet frames the client sent + received",
            "switch-fixed": "Ethernet frames the client sent + received",
            "switch-async": "Ethernet frames the client sent + received",
            "ps": "payload + 32-byte frame headers sent + received (no TCP/IP/Ethernet headers)",
            "gloo": "analytic ring estimate of payload sent + received (gloo has no counters)",
        }[method],
        "server_wire_per_call": _delta(server_after, server_before, repeat) if method == "ps" else None,
        # slot rounds whose predicted exponent some worker's chunk did not fit (they ran again),
        # per worker per call; None for methods without predictions
        "redone_per_call": redone / n / repeat if method == "switch" else None,
        "retransmissions_warmup": retx,
        "retransmissions_timed": retx_timed,
        "retransmissions_kind": "aggregation packets resent by the clients" if method.startswith("switch")
        else "TCP segments resent by the hosts (/proc/net/snmp RetransSegs, all workers + the ps server)",
        "max_rel_err": err,
        "check_ok": err < 1e-4,
        # where a call's time goes: CPU per timed call of the switch, the workers (all of them),
        # the parameter server and the driver, user and system (the kernel's packet path), and the
        # machine's busy share over the timed calls (bench/README.md, "Twelfth pass")
        "cpu_per_call": cpu,
        "error": None,
    }
    if straggler is not None:
        res["straggler"] = {
            "rank": straggler,
            "delay_ms": cfg.straggler_ms,
            "own_seconds": per_rank[straggler],
            # async: untimed calls the fast workers made while the straggler finished
            "fast_workers_filler_calls": {str(r): f["calls"] for r, f in filled.items()},
        }
    if method == "switch-async":
        # threshold k of n: a call's time is the slowest worker's, but no worker waits for the
        # last n - k; mean_count = workers summed per received chunk in the results workers got;
        # missing = chunks a worker got no result for (it fell behind; normal when asynchronous)
        res["threshold"] = async_threshold(cfg, n)
        res["mean_count_timed"] = statistics.fmean(counts) if counts else None
        res["missing_chunks_warmup"] = sum(int(w.get("missing_chunks", 0)) for w in warm)
        res["missing_chunks_timed"] = sum(
            int(c.get("missing_chunks", 0)) for c in calls if c.get("event") == "call"
        )
        res["contradictions_warmup"] = sum(int(w.get("contradictions", 0)) for w in warm)
        res["check_ok"] = res["check_ok"] and res["contradictions_warmup"] == 0
    at = f" ({vpp} values/packet)" if method.startswith("switch") else ""
    progress(
        f"  {method}{at} x{n} {size_label(nbytes)}: median {median * 1e3:.1f} ms, "
        f"min {min(seconds) * 1e3:.1f} ms, "
        f"{res['algbw_MBps']:.2f} MB/s, wire {size_label(wire_mean)}/worker/call, retx {retx_timed}, "
        f"err {err:.1e}"
    )
    progress(f"    {format_cpu(cpu)}")
    return res


def nameservers() -> list[str]:
    """IPv4 nameservers of /etc/resolv.conf that are not loopback addresses."""
    try:
        lines = Path("/etc/resolv.conf").read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "nameserver":
            ip = parts[1]
            if "." in ip and ":" not in ip and not ip.startswith("127."):
                out.append(ip)
    return out


def fail_dns_fast(tb) -> None:
    """Gloo's rendezvous does reverse lookups (getnameinfo) of its peers; inside a worker namespace
    the host's nameserver lies behind the switch, which drops the query, so each lookup waits for
    the resolver's timeout (~10 s per rank start-up). An `unreachable` route to the nameserver in
    each namespace (gone with the namespace) makes lookups fail at once instead."""
    for w in tb.workers:
        for ip in nameservers():
            w.host.ns.run(["ip", "route", "replace", "unreachable", f"{ip}/32"], check=False)


def run(cfg: Config) -> None:
    from topologies.netns import netns_unavailable
    from topologies.testbed import Testbed, star

    if (reason := netns_unavailable()) is not None:
        raise SystemExit(f"aggregation benchmark: {reason}")
    for n in cfg.workers:
        for wi, vpp in enumerate(cfg.values_per_packet):
            # the switch methods at every width, ps and gloo (no packet width) once
            methods = [m for m in cfg.methods if m.startswith("switch") or wi == 0]
            if not methods:
                continue
            progress(f"workers={n}: building a star of {n} worker(s) + 1 parameter-server host on one switch "
                     f"(innet.p4 at {vpp} values per packet)")  # fmt: skip
            t0 = time.monotonic()
            with star(n + 1, values_per_packet=vpp, mtu=cfg.mtu, offloads=cfg.offloads) as tb:
                progress(f"workers={n}: testbed up in {time.monotonic() - t0:.1f} s")
                fail_dns_fast(tb)
                _run_testbed(cfg, tb, Testbed(tb.switches, tb.workers[:n]), methods, n, vpp)


def _run_testbed(cfg: Config, tb, job_net, methods: list[str], n: int, vpp: int) -> None:
    """``methods`` with n workers on one star (``job_net``: the workers, not the PS host, are the
    jobs' members), the switch compiled for ``vpp`` values per packet."""
    if "switch" in methods:
        job_net.install_job(JOB_ID, 0, cfg.slots, udp_port=MEMBER_UDP_PORT, values_per_packet=vpp)
    if "switch-fixed" in methods:
        job_net.install_job(FIXED_JOB_ID, cfg.slots, cfg.slots, udp_port=MEMBER_UDP_PORT + 1,
                            values_per_packet=vpp)  # fmt: skip
    if "switch-async" in methods and n >= 2:
        for i in range(len(cfg.sizes_kb)):
            job_net.install_job(
                ASYNC_JOB_BASE + i, cfg.slots * (2 + i), cfg.slots,
                threshold=async_threshold(cfg, n), udp_port=MEMBER_UDP_PORT + 2 + i, values_per_packet=vpp,
            )  # fmt: skip
    for method in methods:
        if method == "switch-async" and n < 2:
            progress("  switch-async x1: not applicable (an asynchronous job needs 2+ workers)")
            cfg.results += [
                {"method": method, "workers": n, "size_kb": kb, "size_bytes": kb * KB,
                 "values_per_packet": vpp,
                 "error": "not applicable: an asynchronous job needs at least 2 workers",
                 "not_applicable": True}
                for kb in cfg.sizes_kb
            ]  # fmt: skip
            cfg.save()
            continue
        est = estimate_config_s(method, n, cfg.sizes_kb, cfg.repeat, cfg.big_repeat, vpp)
        progress(f"  {method} x{n}: starting (estimate ~{est:.0f} s)")
        run_method(cfg, tb, method, n, vpp)


def format_table(results: list[dict], meta: dict) -> str:
    lines = [
        "In-network aggregation vs parameter server vs gloo ring allreduce (sum of float32 tensors)",
        f"NOTE: {NOTE}",
        f"host: {meta['host']['cpus']} CPUs, {meta['host']['machine']}; "
        f"switch window {meta['config']['slots']} "
        "slots/worker; time = slowest worker's call"
        + (f" except the straggler's (worker N-1 sleeps {meta['config']['straggler_ms']:g} ms per call)"
           if meta["config"].get("straggler_ms") else "")
        + "; wire = interface tx+rx bytes per worker per call",
        "",
    ]
    head = (
        f"{'method':<12} {'V':>3} {'N':>2} {'size':>8} {'rep':>3} {'median ms':>10} {'min ms':>10} "
        f"{'algbw MB/s':>10} {'wire/worker':>12} {'wire/size':>9} {'own count':>10} {'retx':>5} {'check':>6}"
    )
    lines += [head, "-" * len(head)]
    for r in results:
        width = r.get("values_per_packet") or "-"
        if r.get("error"):
            where = f"{r['method']:<12} {width:>3} {r['workers']:>2} {size_label(r['size_bytes']):>8}"
            lines.append(f"{where}   ERROR: {r['error']}")
            continue
        lines.append(
            f"{r['method']:<12} {width:>3} {r['workers']:>2} {size_label(r['size_bytes']):>8} "
            f"{r['repeat']:>3} "
            f"{r['median_s'] * 1e3:>10.1f} {r['min_s'] * 1e3:>10.1f} {r['algbw_MBps']:>10.2f} "
            f"{size_label(r['wire_tx_rx_bytes_per_worker_per_call']):>12} "
            f"{r['wire_tx_rx_bytes_per_worker_per_call'] / r['size_bytes']:>9.2f} "
            f"{size_label(r['method_bytes_per_worker_per_call']):>10} {r['retransmissions_timed']:>5} "
            f"{'ok' if r['check_ok'] else 'BAD':>6}"
        )
    lines += [
        "",
        "V = values per packet of the switch methods (the switch's program compiled for it; - for ps "
        "and gloo). "
        "switch-fixed = switch with a fixed exponent (no bootstrap round): the control for switch-async. "
        "switch-async: threshold k of N workers (JSON: threshold, mean_count_timed = workers summed per "
        "received chunk, missing_chunks_* = chunks a worker fell behind on), checked per chunk against "
        "the exact sum of the workers its bitmap names. "
        "own count: switch = its frames; ps = payload + framing (no TCP/IP headers); gloo = analytic "
        "payload estimate. retx (timed calls, all workers): switch = client retransmissions; ps, gloo = "
        "TCP segments the hosts (workers, ps server) retransmitted (RetransSegs). check = warm-up "
        "result vs the exact sum (max error / max |sum| < 1e-4).",
    ]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.aggregation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Internal: the benchmark re-runs this module with --role switch-worker|ps-worker|"
        "gloo-worker inside each worker's namespace (see `--role switch-worker --help`).",
    )
    p.add_argument("--workers", type=int_list, default=None,
                   help=f"comma-separated worker counts (default {','.join(map(str, DEFAULT_WORKERS))})")
    p.add_argument("--sizes-kb", type=int_list, default=None,
                   help="comma-separated tensor sizes in KB of float32, 1 KB = 1000 bytes "
                   f"(default {','.join(map(str, DEFAULT_SIZES_KB))})")
    p.add_argument("--methods", type=choice_list(METHODS, "method"), default=None,
                   help=f"comma-separated subset of {','.join(METHODS)} (default: all)")
    p.add_argument("--repeat", type=int, default=None,
                   help=f"timed calls per size after one warm-up call (default {DEFAULT_REPEAT})")
    p.add_argument("--big-repeat", type=int, default=DEFAULT_BIG_REPEAT,
                   help=f"timed calls for sizes above {BIG_SIZE_BYTES // 1_000_000} MB, which take long on "
                   "the software switch (default %(default)s)")
    p.add_argument("--slots", type=int, default=DEFAULT_SLOTS,
                   help="switch method: the job's slots = each worker's window of outstanding packets "
                   "(default %(default)s)")
    p.add_argument("--straggler-ms", type=float, default=0.0,
                   help="the last worker (with 2+ workers) sleeps this long before each timed call, as a "
                   "slow compute step; a call's time is then the slowest of the other workers "
                   "(default 0: no straggler)")
    p.add_argument("--values-per-packet", type=int_list, default=None,
                   help="comma-separated widths the switch methods run at, each on a switch whose innet.p4 "
                   "is compiled for it (32, 64, 256; default: the program's default, 64); ps and gloo run "
                   "once. Each result's values_per_packet says which width it used")
    p.add_argument("--mtu", type=int, default=1500,
                   help="every link's MTU, the same for all methods (default %(default)s, which every "
                   "width fits; a larger one lets TCP, ps and gloo, send larger segments)")
    p.add_argument("--offloads", action="store_true",
                   help="checksum and segmentation offloads (TSO, UDP GSO) on every link and the switch's "
                   "ports in offload mode (python -m softswitch --offloads), for all methods alike: hosts "
                   "hand the switch TCP and UDP super-frames of up to 64 KiB, the P4 program still sees "
                   "every wire frame, and runs of one flow's output frames go back as super-frames. "
                   "Models hosts with NIC offloads; default off: every frame crosses the kernel alone")
    p.add_argument("--async-threshold", type=int, default=0,
                   help="switch-async: workers per chunk result, capped at N-1 (default: N-1)")
    p.add_argument("--targets", action="store_true",
                   help=f"issue 15's (d) points: workers {','.join(map(str, TARGETS['workers']))}, sizes "
                   f"{','.join(map(str, TARGETS['sizes_kb']))} KB, methods {','.join(TARGETS['methods'])}, "
                   f"repeat {TARGETS['repeat']}, switch at {TARGETS['values_per_packet'][0]} values per "
                   "packet (explicit options still win); its JSON (benchmark "
                   "aggregation_targets) is what bench/report.md reads the (d) targets from, the full "
                   "grid's fewer calls per median being the fallback")
    p.add_argument("--quick", action="store_true",
                   help=f"smoke run: workers {QUICK['workers'][0]}, "
                   f"sizes {','.join(map(str, QUICK['sizes_kb']))} KB, repeat {QUICK['repeat']} "
                   "(explicit --workers/--sizes-kb/--repeat still win)")
    p.add_argument("--out", type=Path, default=None,
                   help="JSON output (default bench/results/aggregation.json; with --straggler-ms "
                   "bench/results/aggregation-straggler.json, else with --offloads "
                   "bench/results/aggregation-offloads.json, else with --targets "
                   "bench/results/aggregation-targets.json)")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(a == "--role" or a.startswith("--role=") for a in argv):
        return worker_main(build_worker_parser().parse_args(argv))
    args = build_parser().parse_args(argv)
    if args.targets and (args.quick or args.offloads or args.straggler_ms):
        print("error: --targets measures issue 15's (d) figure as it is defined (no offloads, no "
              "straggler) at its own points: not with --quick, --offloads or --straggler-ms", file=sys.stderr)
        return 2
    quick = QUICK if args.quick else TARGETS if args.targets else {}
    cfg = Config(
        workers=args.workers or quick.get("workers", DEFAULT_WORKERS),
        sizes_kb=args.sizes_kb or quick.get("sizes_kb", DEFAULT_SIZES_KB),
        methods=args.methods or quick.get("methods", list(METHODS)),
        repeat=args.repeat or quick.get("repeat", DEFAULT_REPEAT),
        big_repeat=args.big_repeat,
        slots=args.slots,
        out=args.out or (DEFAULT_OUT.with_name("aggregation-straggler.json") if args.straggler_ms > 0
                         else DEFAULT_OUT.with_name("aggregation-offloads.json") if args.offloads
                         else DEFAULT_OUT.with_name("aggregation-targets.json") if args.targets
                         else DEFAULT_OUT),  # fmt: skip
        async_threshold=args.async_threshold,
        straggler_ms=args.straggler_ms,
        values_per_packet=args.values_per_packet or quick.get("values_per_packet", [_default_width()]),
        mtu=args.mtu,
        offloads=args.offloads,
        targets=args.targets,
    )
    if (cfg.repeat < 1 or cfg.big_repeat < 1 or not 1 <= cfg.slots <= 1024 or cfg.async_threshold < 0
            or cfg.straggler_ms < 0):  # fmt: skip
        print("error: --repeat and --big-repeat must be >= 1, --slots 1..1024, --async-threshold and "
              "--straggler-ms >= 0",
              file=sys.stderr)  # fmt: skip
        return 2
    from host_agents.agg_protocol import MAX_JOBS, POOL_SLOTS, SUPPORTED_VALUES_PER_PACKET, AggFormat

    widths = cfg.values_per_packet
    if set(widths) - set(SUPPORTED_VALUES_PER_PACKET) or len(set(widths)) != len(widths):
        known = ", ".join(map(str, SUPPORTED_VALUES_PER_PACKET))
        print(f"error: --values-per-packet takes distinct widths of {known} (innet.p4's "
              f"AGG_VALUES_PER_PACKET), got {','.join(map(str, widths))}", file=sys.stderr)  # fmt: skip
        return 2
    ip_len = 20 + AggFormat(max(widths)).udp_len_full  # the widest aggregation packet's IP length
    if not 576 <= cfg.mtu <= 65535 or ip_len > cfg.mtu:
        print(f"error: --mtu {cfg.mtu}: 576..65535, and at least {ip_len} for {max(widths)} values per "
              "packet (an aggregation packet's IP length)", file=sys.stderr)
        return 2

    jobs = 2 + (len(cfg.sizes_kb) if "switch-async" in cfg.methods else 0)
    if jobs * cfg.slots > POOL_SLOTS or ASYNC_JOB_BASE + len(cfg.sizes_kb) > MAX_JOBS:
        print(
            f"error: the switch methods take up to {jobs} jobs of --slots {cfg.slots} (switch, "
            f"switch-fixed and one switch-async job per size): {jobs * cfg.slots} slots exceed the "
            f"switch's {POOL_SLOTS} (or the job ids its {MAX_JOBS}); lower --slots or give fewer --sizes-kb",
            file=sys.stderr,
        )
        return 2
    import torch

    cfg.meta = {
        # a straggler run is its own figure in the report (times mean something else there)
        "benchmark": ("aggregation_straggler" if cfg.straggler_ms > 0
                      else "aggregation_offloads" if cfg.offloads
                      else "aggregation_targets" if cfg.targets else "aggregation"),  # its own figure
        "note": NOTE,
        "host": {
            "cpus": os.cpu_count(), "machine": platform.machine(), "platform": platform.platform(),
            "python": platform.python_version(), "torch": torch.__version__,
        },
        "config": {
            "workers": cfg.workers, "sizes_kb": cfg.sizes_kb, "methods": cfg.methods, "repeat": cfg.repeat,
            "big_repeat": cfg.big_repeat, "big_size_bytes": BIG_SIZE_BYTES, "slots": cfg.slots, "seed": SEED,
            "async_threshold": "N-1" if not cfg.async_threshold else f"min({cfg.async_threshold}, N-1)",
            "straggler_ms": cfg.straggler_ms,
            "values_per_packet": cfg.values_per_packet,  # the switch methods' widths (each result: its own)
            "mtu": cfg.mtu,
            "offloads": cfg.offloads,
            "kb_bytes": KB,
        },
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "interrupted": False,
    }
    total = sum(
        estimate_config_s(m, n, cfg.sizes_kb, cfg.repeat, cfg.big_repeat, v) + 2 + n
        for n in cfg.workers for i, v in enumerate(cfg.values_per_packet) for m in cfg.methods
        if m.startswith("switch") or i == 0
    )
    progress(NOTE)
    progress(
        f"workers {cfg.workers}, sizes {cfg.sizes_kb} KB, methods {cfg.methods}, repeat {cfg.repeat} "
        f"({cfg.big_repeat} above 1 MB), window {cfg.slots} slots, switch methods at "
        f"{','.join(map(str, cfg.values_per_packet))} values per packet; rough estimate ~{total / 60:.1f} min"
    )

    # the driver runs beside the workers while they are timed; its collections (torch loaded: ~140 ms
    # each, perf saw ~10% of a core in them) would take CPU from them: keep what exists now out
    gc.collect()
    gc.freeze()
    return run_and_report(cfg, run, format_table)

if __name__ == "__main__":
    sys.exit(main())
