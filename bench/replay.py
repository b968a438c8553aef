"""Prioritized-replay benchmark: push, sample and update-priority latency and throughput with 1, 2,
4 and 8 actors, for four replay paths over the same network (the seed paper's comparison of
in-network experience sampling with a DPDK replay server against Redis).

For each actor count N a star of N + 2 hosts is built on one `python -m softswitch` process
(topologies.testbed.star): host 0 runs the replay server, host 1 the learner, hosts 2.. the
actors, each in its own network namespace, so every request of every path crosses the switch.
Paths:

  switch        in-switch sampling: items on the C replay server (`--io sockets`, table
                `priorities=switch`), priorities in the switch's register sum-tree, installed by
                the control plane (SwitchReplayClient: batches of 16 draws or updates per
                datagram, or one each with --switch-batch 1; a push's leaves ride on the
                server's PUSH_REPLY, set by the switch as it passes)
  host-sockets  the C replay server with kernel UDP sockets, sum-tree on the server
                (HostReplayClient)
  host-dpdk     the same server with DPDK poll-mode I/O: DPDK's af_packet PMD owns the server
                namespace's veth (its kernel address removed), the server answers ARP and UDP
                itself (HostReplayClient)
  redis         a real redis-server on host 0: actors RPUSH (priority, item) records, the learner
                drains them into its local sum-tree and samples there (RedisReplayClient)

Workload (defaults): items of --item-bytes 4096 random bytes (Atari's 4 stacked 84x84 frames are
~28 KB), actors push batches of --batch 32 items with random priorities, --pushes 200 each; the
learner first fills the table with --warmup-items, then, while the actors push, does --rounds
200 rounds of sample(32, beta 0.4) + update_priorities of the 32 sampled keys. The table holds
--max-size 16384 items (at most 16384: one switch tree). Every process does a bounded number of
operations, each with a bounded number of tries.

Figures per (path, N): latency of each operation (median, p99, from each process's own clock)
and throughput: push ops/s and items/s = all actors' timed pushes / the span from the first
actor's start to the last actor's end; sample and update ops/s = the learner's operations / the
time it spent in them (one closed-loop learner), and learner rounds/s = rounds / its wall time.
CPU (user and system, from /proc) of the switch, the server, the learner, the actors and this
driver over the timed phase, and how busy the machine was (JSON cpu_timed_phase).

THE TIMINGS MEASURE THE PROJECT'S SOFTWARE SWITCH (its native backend by default: the P4
program compiled to C, behind kernel sockets; sharing the machine's CPUs with the server, the learner and
the actors), NOT A HARDWARE SWITCH: every path's packets pass through it, so it bounds them all.

    python -m bench.replay --quick                        # smoke run, about 1-2 minutes
    python -m bench.replay                                # 4 paths x 1,2,4,8 actors
    python -m bench.replay --paths switch,host-sockets --actors 1,2 --item-bytes 1024

Needs root (network namespaces), the built replay server (`make -C dpdk_fallback`; DPDK I/O
compiled in for host-dpdk) and redis-server for the redis path; a path that cannot run is
reported as skipped with the reason. Writes JSON (default bench/results/replay-<time>.json,
rewritten after every measurement) and prints a table on stdout; progress goes to stderr.
Everything it creates (namespaces, veths, processes) is removed on exit, error or Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import (
    BenchError,
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
from host_agents.replay_protocol import MAX_BATCH_ENTRIES, SWITCH_BATCH_DEFAULT
from topologies.replay_server import SERVER_BIN, ReplayServerProcess

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/replay.py` as well as `python -m bench.replay`
    sys.path.insert(0, str(ROOT))

PATHS = ("switch", "host-sockets", "host-dpdk", "redis")
# Within one star the paths run in this order: host-dpdk takes the server's kernel address away
# (and gives it back), switch leaves its table installed in the switch, so it goes last.
RUN_ORDER = ("redis", "host-sockets", "host-dpdk", "switch")
BACKEND = {"switch": "switch", "host-sockets": "host", "host-dpdk": "host", "redis": "redis"}
DEFAULT_ACTORS = [1, 2, 4, 8]
DEFAULTS = {"item_bytes": 4096, "batch": 32, "pushes": 200, "rounds": 200, "warmup_items": 2048}
QUICK = {"actors": [1, 2], "pushes": 30, "rounds": 30, "warmup_items": 512}
MAX_SIZE = 16384
SWITCH_MAX_LEAVES = 16384  # one switch tree (control_plane.replay.LEAVES)
BETA = 0.4
ALPHA = 0.6
TABLE_ID = 0
SEED = 0
# EAL without hugepages or a DPDK-bound NIC, as tests/test_replay_dpdk_netns.py runs it (--in-memory
# is refused with --no-huge; --no-shconf keeps EAL's runtime files out of /var/run/dpdk).
DPDK_EAL = f"--no-huge -m 256 --no-pci -l {min(os.sched_getaffinity(0))} --no-shconf"
STARTUP_TIMEOUT_S = 120.0  # Python processes importing numpy on shared CPUs
SERVER_START_TIMEOUT_S = 30.0
EST_PPS = 12_000  # rough software-switch rate for the time estimate (timeouts are many times it)
FRAGMENT = 1400
NOTE = (
    "Timings are of the project's software switch (softswitch on its default backend, the P4 "
    "program compiled to C, about a million packets/s on AF_PACKET ports; the Python backend, if "
    "run_all.json says so, tens of thousands), sharing the CPUs with the server, learner and "
    "actors, not of a hardware switch; every path's packets cross it."
)


# ---------------------------------------------------------------------------------------------
# worker side: `python -m bench.replay --role ...`, run inside a host's namespace


def _wait_go(timeout: float) -> bool:
    """Block until the driver writes a line on stdin (True) or closes it (False)."""
    return StdinLines().readline(timeout) is not None


def _client_config(args: argparse.Namespace, seed: int):
    from host_agents.replay_client import ReplayConfig

    return ReplayConfig(
        backend=args.backend,
        server_ip=args.server_ip or "127.0.0.1",
        table_id=TABLE_ID,
        max_size=args.max_size,
        alpha=ALPHA,
        beta=args.beta,
        timeout_s=args.timeout,
        max_tries=args.max_tries,
        redis_url=args.redis_url or "redis://127.0.0.1:6379/0",
        redis_prefix="bench",
        seed=seed,
        bind_ip=args.bind or "0.0.0.0",
        switch_batch=args.switch_batch,
    )


def _client_stats(client) -> dict:
    stats = dict(getattr(client, "stats", {}) or {})
    host = getattr(client, "host", None)  # SwitchReplayClient: its host-path client for PUSH
    if host is not None and getattr(host, "stats", None):
        stats.update({f"host_{k}": v for k, v in host.stats.items()})
    return stats


def _resends(stats: dict) -> int:
    keys = ("resent_requests", "resend_asks", "resent", "host_resent_requests", "host_resend_asks")
    return int(sum(stats.get(k, 0) for k in keys))


def _us(values: list[float]) -> list[float]:
    return [round(v, 7) for v in values]


def actor_main(args: argparse.Namespace) -> int:
    import numpy as np

    from host_agents.replay_client import make_replay_client

    seed = args.seed * 1000 + args.rank
    rng = np.random.default_rng(seed)
    # A pool of distinct payloads reused round-robin: generating 4 KB x 32 random bytes per push
    # would cost the actor more than some paths' pushes.
    pool = [rng.bytes(args.item_bytes) for _ in range(4 * args.batch)]
    with make_replay_client(_client_config(args, seed)) as client:
        client.insert(pool[: args.batch], rng.uniform(0.01, 1.0, args.batch))  # untimed: path check
        emit(event="ready", rank=args.rank)
        if not _wait_go(args.phase_timeout):
            return 1
        lat: list[float] = []
        start = time.monotonic()
        for i in range(args.ops):
            off = (i * args.batch) % len(pool)
            items = (pool + pool)[off : off + args.batch]
            prio = rng.uniform(0.01, 1.0, args.batch)
            t0 = time.perf_counter()
            client.insert(items, prio)
            lat.append(time.perf_counter() - t0)
        end = time.monotonic()
        emit(event="done", rank=args.rank, push_s=_us(lat), start=start, end=end, stats=_client_stats(client))
    return 0


def learner_main(args: argparse.Namespace) -> int:
    import numpy as np

    from host_agents.replay_client import make_replay_client

    seed = args.seed * 1000 + 999
    rng = np.random.default_rng(seed)
    pool = [rng.bytes(args.item_bytes) for _ in range(4 * args.batch)]
    with make_replay_client(_client_config(args, seed)) as client:
        t0 = time.perf_counter()
        filled = 0
        while filled < args.warmup_items:
            n = min(args.batch, args.warmup_items - filled)
            client.insert(pool[:n], rng.uniform(0.01, 1.0, n))
            filled += n
        fill_s = time.perf_counter() - t0
        batch = client.sample(args.batch, args.beta)  # untimed: the path samples and updates
        client.update_priorities(batch.keys, rng.uniform(0.01, 1.0, len(batch.keys)))
        bad = [len(it) for it in batch.items if len(it) != args.item_bytes]
        if bad:
            raise RuntimeError(f"sampled items of {bad[:3]} bytes, expected {args.item_bytes}")
        emit(event="ready", rank=-1, warmup_items=filled, warmup_fill_s=fill_s)
        if not _wait_go(args.phase_timeout):
            return 1
        sample_s: list[float] = []
        update_s: list[float] = []
        ignored = 0
        start = time.monotonic()
        for _ in range(args.ops):
            t0 = time.perf_counter()
            batch = client.sample(args.batch, args.beta)
            t1 = time.perf_counter()
            _, ign = client.update_priorities(batch.keys, rng.uniform(0.01, 1.0, len(batch.keys)))
            t2 = time.perf_counter()
            sample_s.append(t1 - t0)
            update_s.append(t2 - t1)
            ignored += int(ign)
        end = time.monotonic()
        try:
            info = client.info()
        except Exception as e:  # figures are in; a failed INFO only loses the server's counters
            info = {"error": f"{type(e).__name__}: {e}"}
        emit(
            event="done", rank=-1, sample_s=_us(sample_s), update_s=_us(update_s), start=start, end=end,
            ignored_updates=ignored, stats=_client_stats(client), info=info,
        )  # fmt: skip
    return 0


def redis_main(args: argparse.Namespace) -> int:
    from host_agents.redis_replay import RedisServer

    # Protected mode refuses every client whose source address is not loopback (without a
    # password), which is every client here: the actors and the learner are other hosts.
    with RedisServer(host=args.bind or "127.0.0.1") as server:
        emit(event="ready", rank=-2, url=server.url, pid=server.process.pid if server.process else None)
        _wait_go(args.phase_timeout)  # returns when the parent closes stdin (or the timeout)
    return 0


def worker_main(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C in the terminal: just go
    main_of = {"actor": actor_main, "learner": learner_main, "redis-server": redis_main}[args.role]
    try:
        return main_of(args)
    except TimeoutError as e:
        emit(event="error", message=f"{args.role} {args.rank}: {e}")
    except Exception as e:
        emit(event="error", message=f"{args.role} {args.rank}: {type(e).__name__}: {e}")
    return 1


def build_worker_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.replay --role ROLE",
        description="INTERNAL: one benchmark process inside a namespace, driven over stdin/stdout by "
        "`python -m bench.replay` (not meant to be run by hand).",
    )
    p.add_argument("--role", required=True, choices=["actor", "learner", "redis-server"])
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--backend", choices=["host", "switch", "redis"], default="host")
    p.add_argument("--server-ip", help="replay server's IP (host and switch paths)")
    p.add_argument("--redis-url", help="redis path: redis://IP:PORT/0")
    p.add_argument("--bind", help="this process's IP (redis-server: the address to serve on)")
    p.add_argument("--max-size", type=int, default=MAX_SIZE)
    p.add_argument("--item-bytes", type=int, default=DEFAULTS["item_bytes"])
    p.add_argument("--batch", type=int, default=DEFAULTS["batch"])
    p.add_argument("--ops", type=int, default=0, help="timed pushes (actor) or rounds (learner)")
    p.add_argument("--warmup-items", type=int, default=0)
    p.add_argument("--beta", type=float, default=BETA)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--timeout", type=float, default=0.2, help="client reply timeout (s) before a resend")
    p.add_argument("--max-tries", type=int, default=30)
    p.add_argument("--switch-batch", type=int, default=SWITCH_BATCH_DEFAULT)
    p.add_argument("--phase-timeout", type=float, default=600.0)
    return p


# ---------------------------------------------------------------------------------------------
# parent side


class Skipped(BenchError):
    """The path cannot run here (not built, not installed, DPDK refused): reported, not an error."""


@contextlib.contextmanager
def replay_server(host, path: str, max_size: int, item_bytes: int) -> Iterator[tuple[dict, int]]:
    """The C replay server in the server host's namespace; yields its start-up facts and its
    process id."""
    if not SERVER_BIN.exists():
        raise Skipped(f"{SERVER_BIN.relative_to(ROOT)} is not built (make -C dpdk_fallback)")
    mode = "switch" if path == "switch" else "host"
    argv = [
        "--table", f"main:max_size={max_size},alpha={ALPHA},priorities={mode}",
        "--seed", str(SEED), "--max-item-bytes", str(max(item_bytes, 1 << 20)),
    ]  # fmt: skip
    if path == "host-dpdk":
        eal = f"{DPDK_EAL} --vdev=net_af_packet0,iface={host.pair.ns_if}"
        argv += ["--io", "dpdk", "--dpdk-args", eal, "--dpdk-ip", host.ip]
    else:
        argv += ["--io", "sockets", "--bind", host.ip]
    try:
        server = ReplayServerProcess(argv, ns=host.ns, timeout=SERVER_START_TIMEOUT_S, new_session=True)
    except RuntimeError as e:
        why = f"replay server ({path}) did not start: {e}"
        raise Skipped(why) if path == "host-dpdk" else BenchError(why) from None
    try:
        yield {"ready": server.ready_line, "argv": argv}, server.proc.pid
    finally:
        server.stop(timeout=10)
        if path == "host-dpdk":
            counters = [s.strip() for s in server.stderr().splitlines() if s.startswith("dpdk: rx")]
            if counters:
                progress(f"    {counters[-1]}")


@contextlib.contextmanager
def kernel_address_removed(host) -> Iterator[None]:
    """Take the server host's IPv4 address off its veth (DPDK answers for it instead), and put it
    back with its default route and the switch's neighbour entry afterwards."""
    from topologies.testbed import switch_mac

    dev = host.pair.ns_if
    cidr = host.ns.run(["ip", "-o", "-4", "addr", "show", "dev", dev]).stdout.split()
    addr = cidr[cidr.index("inet") + 1] if "inet" in cidr else f"{host.ip}/24"
    gw = host.ns.run(["ip", "-4", "route", "show", "default"]).stdout.split()
    gateway = gw[gw.index("via") + 1] if "via" in gw else None
    host.ns.run(["ip", "addr", "flush", "dev", dev])
    try:
        yield
    finally:
        host.ns.run(["ip", "addr", "replace", addr, "dev", dev], check=False)
        if gateway:
            host.ns.run(["ip", "route", "replace", "default", "via", gateway], check=False)
            host.ns.run(["ip", "neigh", "replace", gateway, "lladdr", switch_mac(0), "dev", dev], check=False)


@dataclass
class Config:
    paths: list[str]
    actors: list[int]
    item_bytes: int
    batch: int
    pushes: int
    rounds: int
    warmup_items: int
    max_size: int
    beta: float
    timeout: float
    max_tries: int
    out: Path
    switch_batch: int = SWITCH_BATCH_DEFAULT
    results: list[dict] = field(default_factory=list)
    meta: dict = field(default_factory=dict)

    def save(self) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.out.with_suffix(self.out.suffix + ".tmp")
        tmp.write_text(json.dumps({**self.meta, "results": self.results}, indent=1) + "\n")
        tmp.replace(self.out)


def switch_port_drops(pid: int) -> int | None:
    """Frames the kernel dropped because the switch's AF_PACKET port sockets were full (the
    sockets' drop counters, `ss -0 -m`), summed over the ports of switch process ``pid``."""
    try:
        out = subprocess.run(
            ["ss", "-0", "-m", "-p", "-n"], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    total, seen = 0, False
    for line in out.splitlines():
        if f"pid={pid}," not in line or "skmem:(" not in line:
            continue
        for part in line.split("skmem:(", 1)[1].split(")", 1)[0].split(","):
            if part.startswith("d") and part[1:].isdigit():
                total += int(part[1:])
                seen = True
    return total if seen else None


def _frags(nbytes: int) -> int:
    return max(1, math.ceil(nbytes / FRAGMENT))


def estimate_s(cfg: Config, path: str, n: int) -> float:
    """Rough seconds of one (path, n) run on the software switch, for the estimate and timeouts."""
    b, item = cfg.batch, cfg.item_bytes
    push = _frags(4 + b * (8 + item)) + 1
    if path == "switch":
        k = cfg.switch_batch
        push += math.ceil(b / k)
        sample = math.ceil(b / k) * (1 + _frags(12 + k * (20 + item)))
        update = math.ceil(b / k)
    elif path == "redis":
        push = 1.5 * math.ceil(b * (8 + item) / 1448) + 2  # TCP segments + ACKs
        sample = push  # draining the actors' records back out of Redis
        update = 0
    else:
        sample = 1 + _frags(12 + b * (24 + item))
        update = 1 + _frags(4 + 12 * b)
    warm = cfg.warmup_items / b * push
    packets = n * cfg.pushes * push + cfg.rounds * (sample + update) + warm
    return 5.0 + 1.0 * n + packets / EST_PPS


def _pct(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def _op_stats(lat: list[float], ops_per_s: float, batch: int) -> dict:
    return {
        "count": len(lat),
        "median_ms": _pct(lat, 50) * 1e3,
        "p99_ms": _pct(lat, 99) * 1e3,
        "mean_ms": sum(lat) / len(lat) * 1e3 if lat else float("nan"),
        "min_ms": min(lat) * 1e3 if lat else float("nan"),
        "max_ms": max(lat) * 1e3 if lat else float("nan"),
        "ops_per_s": ops_per_s,
        "items_per_s": ops_per_s * batch,
    }


def worker_argv(cfg: Config, role: str, rank: int, path: str, server_ip: str, redis_url: str | None,
                bind: str, ops: int, phase_timeout: float) -> list[str]:  # fmt: skip
    argv = [
        sys.executable, "-m", "bench.replay", "--role", role, "--rank", str(rank), "--backend", BACKEND[path],
        "--server-ip", server_ip, "--bind", bind, "--max-size", str(cfg.max_size),
        "--item-bytes", str(cfg.item_bytes), "--batch", str(cfg.batch), "--ops", str(ops),
        "--beta", str(cfg.beta), "--seed", str(SEED), "--timeout", str(cfg.timeout),
        "--max-tries", str(cfg.max_tries), "--phase-timeout", f"{phase_timeout:.0f}",
        "--switch-batch", str(cfg.switch_batch),
    ]  # fmt: skip
    if role == "learner":
        argv += ["--warmup-items", str(cfg.warmup_items)]
    if redis_url:
        argv += ["--redis-url", redis_url]
    return argv


def run_path(cfg: Config, tb, path: str, n: int) -> dict:
    """One path with n actors on testbed `tb` (host 0 server, host 1 learner, 2.. actors)."""
    server, learner_host = tb.workers[0].host, tb.workers[1].host
    actor_hosts = [w.host for w in tb.workers[2 : 2 + n]]
    est = estimate_s(cfg, path, n)
    # Loss recovery is by client timeouts (one per lost datagram burst), which the packet estimate
    # leaves out: allow half of every operation's tries on top.
    ops = max(cfg.pushes, cfg.rounds)
    timeout = 120.0 + 10.0 * est + ops * cfg.max_tries * cfg.timeout / 2
    res: dict = {"path": path, "actors": n, "error": None, "skipped": None, "estimate_s": est}
    t_all = time.monotonic()
    with contextlib.ExitStack() as stack:
        redis_url = None
        if path == "redis":
            if shutil.which("redis-server") is None:
                raise Skipped("redis-server is not installed (apt-get install redis-server)")
            procs = stack.enter_context(process_group())
            r = procs.start("redis-server", server.ns, [
                sys.executable, "-m", "bench.replay", "--role", "redis-server", "--bind", server.ip,
                "--phase-timeout", f"{STARTUP_TIMEOUT_S + 2 * timeout:.0f}",
            ])  # fmt: skip
            redis_url = procs.wait_for("ready", SERVER_START_TIMEOUT_S, which=[r])[r]["url"]
            server_pids = [procs.procs[r].pid]  # its process tree holds the redis-server
            res["server"] = {"redis_url": redis_url}
        else:
            if path == "host-dpdk":
                stack.enter_context(kernel_address_removed(server))
            res["server"], pid = stack.enter_context(
                replay_server(server, path, cfg.max_size, cfg.item_bytes))
            server_pids = [pid]
            if path == "switch":
                t0 = time.monotonic()
                # Left installed: switch runs last in its star (RUN_ORDER), which is torn down next.
                tb.root.controller.replay.install_table(TABLE_ID, cfg.max_size)
                res["install_table_s"] = time.monotonic() - t0
        g = stack.enter_context(process_group())
        phase = STARTUP_TIMEOUT_S + timeout
        learner = g.start("learner", learner_host.ns, worker_argv(
            cfg, "learner", 0, path, server.ip, redis_url, learner_host.ip, cfg.rounds, phase))  # fmt: skip
        t0 = time.monotonic()
        ready = g.wait_for("ready", STARTUP_TIMEOUT_S + timeout, which=[learner])
        res["warmup"] = {k: ready[learner][k] for k in ("warmup_items", "warmup_fill_s")}
        progress(
            f"  {path} x{n}: learner filled {ready[learner]['warmup_items']} items in "
            f"{ready[learner]['warmup_fill_s']:.1f} s (up after {time.monotonic() - t0:.1f} s)"
        )
        actors = [
            g.start(
                f"actor {i}",
                h.ns,
                worker_argv(cfg, "actor", i, path, server.ip, redis_url, h.ip, cfg.pushes, phase),
            )  # fmt: skip
            for i, h in enumerate(actor_hosts)
        ]
        g.wait_for("ready", STARTUP_TIMEOUT_S, which=actors)
        everyone = [learner, *actors]
        # whose CPU the timed phase used (bench/README.md, "Twelfth pass": what (c) is bound by)
        roles = {"switch": [tb.root.process.proc.pid], "server": server_pids,
                 "learner": [g.procs[learner].pid], "actors": [g.procs[a].pid for a in actors],
                 "driver": [os.getpid()]}  # fmt: skip
        t0 = time.monotonic()
        drops0 = switch_port_drops(tb.root.process.proc.pid)
        cpu0 = cpu_snapshot(roles)
        g.go(everyone)
        done = g.wait_for("done", timeout, which=everyone)
        wall = time.monotonic() - t0
        cpu = cpu_per_call(cpu0, cpu_snapshot(roles), 1)
        drops1 = switch_port_drops(tb.root.process.proc.pid)
    lrec = done[learner]
    arecs = [done[a] for a in actors]
    push_lat = [x for a in arecs for x in a["push_s"]]
    push_span = max(a["end"] for a in arecs) - min(a["start"] for a in arecs)
    sample_lat, update_lat = lrec["sample_s"], lrec["update_s"]
    learner_wall = lrec["end"] - lrec["start"]
    res.update(
        {
            "push": _op_stats(
                push_lat, len(push_lat) / push_span if push_span > 0 else float("nan"), cfg.batch
            ),
            "sample": _op_stats(sample_lat, len(sample_lat) / sum(sample_lat), cfg.batch),
            "update": _op_stats(update_lat, len(update_lat) / sum(update_lat), cfg.batch),
            "push_span_s": push_span,
            "learner_wall_s": learner_wall,
            "learner_rounds_per_s": len(sample_lat) / learner_wall if learner_wall > 0 else float("nan"),
            "overlap_s": max(
                0.0,
                min(lrec["end"], max(a["end"] for a in arecs))
                - max(lrec["start"], min(a["start"] for a in arecs)),
            ),  # fmt: skip
            "timed_wall_s": wall,
            # CPU of each role over the whole timed phase (ms; "calls" = 1), and the machine's load
            "cpu_timed_phase": cpu,
            "switch_port_drops": drops1 - drops0 if drops0 is not None and drops1 is not None else None,
            "run_s": time.monotonic() - t_all,
            "ignored_updates": lrec.get("ignored_updates", 0),
            "resends": {
                "learner": _resends(lrec["stats"]),
                "actors": sum(_resends(a["stats"]) for a in arecs),
            },
            "client_stats": {"learner": lrec["stats"], "actors": [a["stats"] for a in arecs]},
            "server_info": lrec.get("info"),
            "latencies_s": {
                "push_per_actor": [a["push_s"] for a in arecs],
                "sample": sample_lat,
                "update": update_lat,
            },  # fmt: skip
        }
    )
    p, s, u = res["push"], res["sample"], res["update"]
    progress(
        f"  {path} x{n}: median/p99 push {p['median_ms']:.1f}/{p['p99_ms']:.1f} ms "
        f"({p['ops_per_s']:.1f} ops/s), sample {s['median_ms']:.1f}/{s['p99_ms']:.1f} ms, "
        f"update {u['median_ms']:.1f}/{u['p99_ms']:.1f} ms; "
        f"resends {res['resends']['learner'] + res['resends']['actors']}, switch port drops "
        f"{res['switch_port_drops']} ({res['run_s']:.1f} s)"
    )
    progress(f"    {format_cpu(cpu, per=f'over the timed {wall:.1f} s')}")
    return res


def run(cfg: Config) -> None:
    from topologies.netns import netns_unavailable
    from topologies.testbed import star

    if (reason := netns_unavailable()) is not None:
        raise SystemExit(f"replay benchmark: {reason}")
    order = [p for p in RUN_ORDER if p in cfg.paths]
    for n in cfg.actors:
        progress(f"actors={n}: building a star of 1 server + 1 learner + {n} actor host(s) on one switch")
        t0 = time.monotonic()
        with star(n + 2) as tb:
            progress(f"actors={n}: testbed up in {time.monotonic() - t0:.1f} s")
            for path in order:
                progress(f"  {path} x{n}: starting (estimate ~{estimate_s(cfg, path, n):.0f} s)")
                try:
                    cfg.results.append(run_path(cfg, tb, path, n))
                except Skipped as e:
                    progress(f"  {path} x{n}: SKIPPED: {e}")
                    cfg.results.append({"path": path, "actors": n, "error": None, "skipped": str(e)})
                except (BenchError, OSError, RuntimeError, subprocess.TimeoutExpired) as e:
                    progress(f"  {path} x{n}: FAILED: {e}")
                    cfg.results.append({"path": path, "actors": n, "error": str(e), "skipped": None})
                cfg.save()


def format_table(results: list[dict], meta: dict) -> str:
    c = meta["config"]
    lines = [
        "Prioritized replay: push / sample / update-priority over one software switch",
        f"NOTE: {NOTE}",
        f"host: {meta['host']['cpus']} CPUs, kernel {meta['host']['kernel']}; items {c['item_bytes']} B, "
        f"batch {c['batch']}, {c['pushes']} pushes/actor, {c['rounds']} learner rounds, "
        f"max_size {c['max_size']}, warm-up {c['warmup_items']} items, beta {c['beta']}, "
        f"switch path {c.get('switch_batch', 1)} draws/updates per datagram",
        "",
    ]
    head = (
        f"{'path':<12} {'N':>2} | {'push med':>8} {'p99':>7} {'ops/s':>7} {'items/s':>8} | "
        f"{'samp med':>8} {'p99':>7} {'ops/s':>6} {'items/s':>8} | {'upd med':>7} {'p99':>7} {'ops/s':>7} | "
        f"{'rnd/s':>6} {'resend':>6} {'drops':>6}"
    )
    lines += [head, "-" * len(head)]
    order = {p: i for i, p in enumerate(PATHS)}
    for r in sorted(results, key=lambda r: (order.get(r["path"], 9), r["actors"])):
        where = f"{r['path']:<12} {r['actors']:>2} |"
        if r.get("skipped"):
            lines.append(f"{where} SKIPPED: {r['skipped']}")
            continue
        if r.get("error"):
            lines.append(f"{where} ERROR: {r['error']}")
            continue
        p, s, u = r["push"], r["sample"], r["update"]
        lines.append(
            f"{where} {p['median_ms']:>8.2f} {p['p99_ms']:>7.2f} {p['ops_per_s']:>7.1f} "
            f"{p['items_per_s']:>8.0f} | "
            f"{s['median_ms']:>8.2f} {s['p99_ms']:>7.2f} {s['ops_per_s']:>6.1f} {s['items_per_s']:>8.0f} | "
            f"{u['median_ms']:>7.2f} {u['p99_ms']:>7.2f} {u['ops_per_s']:>7.1f} | "
            f"{r['learner_rounds_per_s']:>6.1f} {r['resends']['learner'] + r['resends']['actors']:>6} "
            f"{'?' if r.get('switch_port_drops') is None else r['switch_port_drops']:>6}"
        )
    lines += [
        "",
        "Latencies in ms (median, p99) per operation of one batch. push ops/s, items/s: all actors' "
        "timed pushes / (last actor end - first actor start). sample, update ops/s: the learner's "
        "operations / its time in them (one closed-loop learner; sample items/s = ops/s x batch). "
        "rnd/s: learner sample+update rounds per second of its wall time. resend: requests or "
        "datagrams the clients sent again after a timeout (and RESEND asks). drops: frames the kernel "
        "dropped at the switch's port sockets during the timed phase (full receive buffers; TCP "
        "retransmits them, the replay clients resend after their timeout). redis: sample includes "
        "draining the actors' new records out of Redis into the learner's sum-tree; update is local.",
    ]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.replay",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Internal: the benchmark re-runs this module with --role actor|learner|redis-server "
        "inside each host's namespace (see `--role actor --help`).",
    )
    p.add_argument(
        "--paths",
        type=choice_list(PATHS, "path"),
        default=list(PATHS),
        help=f"comma-separated subset of {','.join(PATHS)} (default: all)",
    )
    p.add_argument(
        "--actors",
        type=int_list,
        default=None,
        help=f"comma-separated actor counts (default {','.join(map(str, DEFAULT_ACTORS))})",
    )
    p.add_argument(
        "--item-bytes",
        type=int,
        default=DEFAULTS["item_bytes"],
        help="bytes per item (default %(default)s; Atari's 4 stacked 84x84 frames are ~28 KB)",
    )
    p.add_argument(
        "--batch",
        type=int,
        default=DEFAULTS["batch"],
        help="items per push and per sample/update (default %(default)s)",
    )
    p.add_argument(
        "--pushes",
        type=int,
        default=None,
        help=f"timed pushes per actor (default {DEFAULTS['pushes']}, quick {QUICK['pushes']})",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=None,
        help=f"learner sample+update rounds (default {DEFAULTS['rounds']}, quick {QUICK['rounds']})",
    )
    p.add_argument(
        "--warmup-items",
        type=int,
        default=None,
        help="items the learner pushes before the timed phase "
        f"(default {DEFAULTS['warmup_items']}, quick {QUICK['warmup_items']})",
    )
    p.add_argument(
        "--max-size",
        type=int,
        default=MAX_SIZE,
        help=f"table capacity (default %(default)s; at most {SWITCH_MAX_LEAVES} with the switch path)",
    )
    p.add_argument(
        "--beta", type=float, default=BETA, help="importance-sampling exponent (default %(default)s)"
    )
    p.add_argument(
        "--client-timeout",
        type=float,
        default=0.2,
        help="seconds a client waits for a reply (or its next fragment) before resending; a lost "
        "datagram costs this much (default %(default)s, ReplayConfig's default)",
    )
    p.add_argument(
        "--max-tries",
        type=int,
        default=30,
        help="sends of one request before a client gives up (default %(default)s)",
    )
    p.add_argument(
        "--switch-batch",
        type=int,
        default=SWITCH_BATCH_DEFAULT,
        help=f"switch path: draws or updates per datagram (ReplayConfig.switch_batch, "
        f"1..{MAX_BATCH_ENTRIES}; 1 = one datagram per sampled item or update, the form before "
        "batches; default %(default)s)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke run: actors {','.join(map(str, QUICK['actors']))}, {QUICK['pushes']} pushes, "
        f"{QUICK['rounds']} rounds, {QUICK['warmup_items']} warm-up items (explicit flags still win)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON output (default bench/results/replay-<YYYYmmdd-HHMMSS>.json)",
    )
    return p


def machine_info() -> dict:
    info = {
        "cpus": os.cpu_count(), "machine": platform.machine(), "kernel": platform.release(),
        "platform": platform.platform(), "python": platform.python_version(),
    }  # fmt: skip
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    for key, argv in (
        ("dpdk", ["pkg-config", "--modversion", "libdpdk"]),
        ("redis", ["redis-server", "--version"]),
    ):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            res = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            if res.returncode == 0:
                info[key] = res.stdout.strip()
    return info


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(a == "--role" or a.startswith("--role=") for a in argv):
        return worker_main(build_worker_parser().parse_args(argv))
    args = build_parser().parse_args(argv)
    quick = QUICK if args.quick else {}

    def pick(name: str) -> int:
        explicit = getattr(args, name)
        return explicit if explicit is not None else quick.get(name, DEFAULTS[name])

    stamp = time.strftime("%Y%m%d-%H%M%S")
    cfg = Config(
        paths=args.paths,
        actors=args.actors or quick.get("actors", DEFAULT_ACTORS),
        item_bytes=args.item_bytes,
        batch=args.batch,
        pushes=pick("pushes"),
        rounds=pick("rounds"),
        warmup_items=pick("warmup_items"),
        max_size=args.max_size,
        beta=args.beta,
        timeout=args.client_timeout,
        max_tries=args.max_tries,
        switch_batch=args.switch_batch,
        out=args.out or ROOT / "bench" / "results" / f"replay-{stamp}.json",
    )
    problems = []
    if cfg.item_bytes < 1 or cfg.batch < 1 or cfg.pushes < 1 or cfg.rounds < 1:
        problems.append("--item-bytes, --batch, --pushes and --rounds must be >= 1")
    if cfg.warmup_items < cfg.batch:
        problems.append(f"--warmup-items must be at least --batch ({cfg.batch}): the learner samples batches")
    if not cfg.warmup_items <= cfg.max_size or cfg.max_size < cfg.batch:
        problems.append("--max-size must hold the warm-up items and one batch")
    if not 1 <= cfg.switch_batch <= MAX_BATCH_ENTRIES:
        problems.append(f"--switch-batch must be 1..{MAX_BATCH_ENTRIES}")
    if "switch" in cfg.paths and cfg.max_size > SWITCH_MAX_LEAVES:
        problems.append(
            f"--max-size above {SWITCH_MAX_LEAVES} does not fit a switch tree (drop the switch path)"
        )
    if not (cfg.beta >= 0 and cfg.timeout > 0 and cfg.max_tries >= 1):
        problems.append("--beta must be >= 0, --client-timeout > 0, --max-tries >= 1")
    if problems:
        for msg in problems:
            print(f"error: {msg}", file=sys.stderr)
        return 2
    from topologies.netns import netns_unavailable

    if (reason := netns_unavailable()) is not None:
        print(f"replay benchmark: {reason}", file=sys.stderr)
        return 2
    cfg.meta = {
        "benchmark": "replay",
        "note": NOTE,
        "host": machine_info(),
        "config": {
            "paths": cfg.paths,
            "actors": cfg.actors,
            "item_bytes": cfg.item_bytes,
            "batch": cfg.batch,
            "pushes_per_actor": cfg.pushes,
            "pushes": cfg.pushes,
            "rounds": cfg.rounds,
            "warmup_items": cfg.warmup_items,
            "max_size": cfg.max_size,
            "beta": cfg.beta,
            "alpha": ALPHA,
            "client_timeout_s": cfg.timeout,
            "max_tries": cfg.max_tries,
            "switch_batch": cfg.switch_batch,
            "seed": SEED,
            "quick": args.quick,
            "dpdk_eal": DPDK_EAL + " --vdev=net_af_packet0,iface=<server veth>",
        },  # fmt: skip
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "interrupted": False,
    }
    total = sum(estimate_s(cfg, p, n) + 3 for n in cfg.actors for p in cfg.paths) + 8 * len(cfg.actors)
    progress(NOTE)
    progress(
        f"paths {cfg.paths}, actors {cfg.actors}, items {cfg.item_bytes} B x batch {cfg.batch}, "
        f"{cfg.pushes} pushes/actor, {cfg.rounds} learner rounds, warm-up {cfg.warmup_items} items; "
        f"rough estimate ~{total / 60:.1f} min without loss recovery (each client timeout adds to it)"
    )

    return run_and_report(cfg, run, format_table)


if __name__ == "__main__":
    sys.exit(main())
