"""Packets per second of the software switch, both backends side by side (not a test).

Two programs:
  (a) l2l3: p4/examples/basic_router.p4 -- parse Ethernet/IPv4, verify the IPv4 checksum, LPM
      route with MAC rewrite and TTL decrement, per-port counter, checksum update, deparse.
  (b) agg32: bench/p4/agg32.p4 -- 32 int32 payload fields added into 32 register arrays at the
      packet's slot, sums written back into the packet (the shape of in-switch aggregation).
Two backends: python (the reference: generated Python per packet) and native (the program
compiled to C, run by the C runtime with C data-path threads).
Two paths:
  in-process: no I/O, one core. Python: Switch.process_packet in a loop. Native: the C pipeline
      over a batch of frames (NativeSwitch.process_batch), no Python per packet.
  veth: `python -m softswitch --backend B` pinned to one core with AF_PACKET ports; a sender in
      one network namespace blasts frames over a veth pair (trafgen from netsniff-ng, pinned to
      the other core, when installed: a sender that is not the bottleneck; else a Python
      sender, which is), and the forwarded rate is read from the kernel's counters of the
      receiving interface over the middle of the run (needs root).

    python bench/softswitch_pps.py [--backends python,native] [--packets N] [--seconds S]
                                   [--skip-veth] [--out FILE]

Prints a table and writes bench/results/softswitch_pps.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import parse_pid_stat, sigterm_as_interrupt  # noqa: E402
from p4compiler.python_backend import compile_file  # noqa: E402
from softswitch.api import Lpm, TableEntry  # noqa: E402
from softswitch.native_switch import create_switch  # noqa: E402
from softswitch.switch import Switch  # noqa: E402

L2L3 = ROOT / "p4" / "examples" / "basic_router.p4"
AGG32 = ROOT / "bench" / "p4" / "agg32.p4"
GW_MAC = bytes.fromhex("0200000000fe")
DST_IP = "10.0.2.2"


def ipv4_checksum(hdr: bytes) -> int:
    s = sum(struct.unpack("!10H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def l2l3_frame(dst_mac: bytes = GW_MAC) -> bytes:
    payload = bytes(26)
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0, 64, 17, 0,
                      bytes([10, 0, 1, 1]), bytes([10, 0, 2, 2]))
    hdr = hdr[:10] + struct.pack("!H", ipv4_checksum(hdr)) + hdr[12:]
    return dst_mac + bytes.fromhex("020000000101") + b"\x08\x00" + hdr + payload


def agg32_frame(slot: int = 5) -> bytes:
    return (bytes.fromhex("ffffffffffff020000000101") + b"\x88\xb5" + struct.pack("!I", slot)
            + b"".join(struct.pack("!I", i) for i in range(32)))


def make_switch(which: str, backend: str) -> Switch:
    sw = create_switch(compile_file(str(L2L3 if which == "l2l3" else AGG32)), backend)
    if which == "l2l3":
        sw.insert_entry(TableEntry("RouterIngress.ipv4_lpm", {"hdr.ipv4.dst": Lpm(0x0A000202, 32)},
                                   "RouterIngress.set_nhop",
                                   {"dst_mac": 0x020000000202, "src_mac": 0x0200000000FE, "port": 2}))
    return sw


def bench_in_process(which: str, backend: str, packets: int) -> dict:
    sw = make_switch(which, backend)
    frame = l2l3_frame() if which == "l2l3" else agg32_frame()
    out = sw.process_packet(1, frame)
    assert out, f"{which}: the benchmark packet was dropped"
    if backend == "native":
        batch = [frame] * 1024
        repeat = max(1, packets // len(batch))
        sw.process_batch(1, batch, repeat=min(repeat, 20))  # warm-up
        t = time.perf_counter()
        n_out = sw.process_batch(1, batch, repeat=repeat)
        dt = time.perf_counter() - t
        packets = repeat * len(batch)
        assert n_out == packets, f"{which}: {n_out} outputs for {packets} packets"
    else:
        for _ in range(min(1000, packets)):  # warm-up
            sw.process_packet(1, frame)
        t = time.perf_counter()
        for _ in range(packets):
            sw.process_packet(1, frame)
        dt = time.perf_counter() - t
    close = getattr(sw, "close", None)
    if close is not None:
        close()
    return {"program": which, "backend": backend, "path": "in-process", "packets": packets,
            "seconds": round(dt, 3), "pps": round(packets / dt),
            "ns_per_packet": round(dt / packets * 1e9, 1)}


SENDER = r"""
import socket, sys, time
iface, frame, seconds = sys.argv[1], bytes.fromhex(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
end = time.monotonic() + seconds
while time.monotonic() < end:
    for _ in range(1000):
        try:
            s.send(frame)
        except OSError:
            pass
"""


def _link_counters(ns: object, ifname: str) -> tuple[int, int]:
    """(rx_packets, tx_packets) of an interface in a namespace, from the kernel."""
    out = subprocess.run(["ip", "-n", ns.name, "-s", "-j", "link", "show", "dev", ifname],  # type: ignore[attr-defined]
                         capture_output=True, text=True, check=True).stdout
    st = json.loads(out)[0]["stats64"]
    return int(st["rx"]["packets"]), int(st["tx"]["packets"])


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads), from /proc."""
    return parse_pid_stat(Path(f"/proc/{pid}/stat").read_text()) / os.sysconf("SC_CLK_TCK")


def _trafgen_conf(frame: bytes, path: Path) -> None:
    path.write_text("{ " + ", ".join(f"0x{b:02x}" for b in frame) + " }\n")


def _pins() -> tuple[list[str], list[str]]:
    """taskset prefixes: the switch on the last core, the sender on core 0 (none on one core)."""
    cores = os.cpu_count() or 1
    pin_switch = ["taskset", "-c", str(cores - 1)] if cores > 1 and shutil.which("taskset") else []
    return pin_switch, (["taskset", "-c", "0"] if pin_switch else [])


def _start_switch(program: Path, backend: str, interfaces: list[str], pin: list[str],
                  defines: tuple[str, ...] = ()) -> tuple[subprocess.Popen, int, str]:
    """`python -m softswitch` on ports 1.. bound to `interfaces` (`defines`: -D NAME=VALUE for the
    program): (process, P4Runtime port, the backend it says it runs)."""
    argv = pin + [sys.executable, "-m", "softswitch", "--backend", backend, "--p4", str(program),
                  "--grpc-addr", "127.0.0.1:0"]
    for d in defines:
        argv += ["-D", d]
    for n, ifname in enumerate(interfaces, start=1):
        argv += ["-i", f"{n}@{ifname}"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    first = proc.stdout.readline()  # type: ignore[union-attr]
    m = re.search(r":(\d+) ", first)
    running = proc.stdout.readline() if m else ""  # type: ignore[union-attr]
    if not m or "softswitch running" not in running:
        err = _stop(proc)
        raise RuntimeError(f"softswitch did not start: {first!r} {running!r} {err[-500:]}")
    return proc, int(m.group(1)), ("native" if "native backend" in running else "python")


def _stop(proc: subprocess.Popen | None, wait_s: float = 10, output: bool = True) -> str:
    """SIGTERM, then SIGKILL after `wait_s`; returns what the process wrote on stderr when
    `output` (a sender is only waited for: trafgen can sit in a blocked ring flush, its pipes
    open, well after the signal)."""
    if proc is None or proc.returncode is not None:
        return ""
    proc.terminate()
    try:
        if output:
            return proc.communicate(timeout=wait_s)[1] or ""
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    return ""


def bench_veth(which: str, backend: str, seconds: float) -> dict:
    from topologies.netns import create_namespace, create_veth_pair, netns_unavailable

    reason = netns_unavailable()
    if reason:
        return {"program": which, "backend": backend, "path": "veth", "skipped": reason}
    made = []
    proc = send = None
    trafgen = shutil.which("trafgen")
    pin_switch, pin_sender = _pins()
    try:
        ns_tx, ns_rx = create_namespace("bt"), create_namespace("br")
        made += [ns_tx, ns_rx]
        p1, p2 = create_veth_pair(peer_ns=ns_tx, prefix="bp"), create_veth_pair(peer_ns=ns_rx, prefix="bp")
        made += [p1, p2]
        program = L2L3 if which == "l2l3" else AGG32
        proc, grpc_port, ran = _start_switch(program, backend, [p1.host_if, p2.host_if], pin_switch)
        if which == "l2l3":
            install_route(grpc_port)
        frame = agg32_frame() if which == "agg32" else l2l3_frame()
        # l2l3 routes port 1 -> port 2; agg32 sends results back out of port 1
        rx_ns, tx_if, rx_if = (ns_rx, p1.ns_if, p2.ns_if) if which == "l2l3" else (ns_tx, p1.ns_if, p1.ns_if)
        with tempfile.TemporaryDirectory() as td:
            if trafgen:
                conf = Path(td) / "frame.cfg"
                _trafgen_conf(frame, conf)
                argv = pin_sender + [trafgen, "--dev", tx_if, "--conf", str(conf), "--cpus", "1", "-q", "-C"]
                sender = "trafgen (netsniff-ng), 1 core"
            else:
                argv = pin_sender + [sys.executable, "-c", SENDER, tx_if, frame.hex(), str(seconds + 2)]
                sender = "python AF_PACKET send() loop (slower than the switch may be)"
            send = ns_tx.popen(argv)
            time.sleep(min(2.0, seconds / 4))  # ramp-up, then measure a steady window
            rx0, _ = _link_counters(rx_ns, rx_if)
            _, tx0 = _link_counters(ns_tx, tx_if)
            cpu0, t0 = _cpu_seconds(proc.pid), time.perf_counter()
            time.sleep(seconds)
            rx1, _ = _link_counters(rx_ns, rx_if)
            _, tx1 = _link_counters(ns_tx, tx_if)
            cpu1, dt = _cpu_seconds(proc.pid), time.perf_counter() - t0
        forwarded, offered = rx1 - rx0, tx1 - tx0
        busy = (cpu1 - cpu0) / dt  # the switch process's CPU share of the window (its one core: 1.0)
        return {"program": which, "backend": ran, "path": "veth", "sender": sender, "seconds": round(dt, 2),
                "offered_pps": round(offered / dt), "pps": round(forwarded / dt),
                "forwarded_share": round(forwarded / offered, 4) if offered else 0.0,
                "switch_cpu_busy": round(busy, 3),
                "switch_cpu_ns_per_packet": round((cpu1 - cpu0) / forwarded * 1e9) if forwarded else None,
                "switch_core": pin_switch[-1] if pin_switch else "any"}
    finally:
        _stop(send, wait_s=3, output=False)
        _stop(proc)
        for obj in reversed(made):
            obj.delete()


INNET = ROOT / "p4" / "innet.p4"
BLAST_SRC = ROOT / "bench" / "blast.c"
AGG_WORKERS = 4
AGG_SLOTS = 1024  # the whole pool (host_agents.agg_protocol.POOL_SLOTS): workers may drift apart
SWITCH_MAC, SWITCH_IP = "02:00:00:00:00:fe", "10.0.0.254"


def build_blast() -> Path:
    """bench/blast.c compiled with the system C compiler, cached by its source's hash."""
    import hashlib

    from softswitch.native import cache_dir

    src = BLAST_SRC.read_bytes()
    exe = cache_dir() / f"blast-{hashlib.sha256(src).hexdigest()[:16]}"
    if not exe.exists():
        exe.parent.mkdir(parents=True, exist_ok=True)
        tmp = exe.with_suffix(f".tmp{os.getpid()}")
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-o", str(tmp), str(BLAST_SRC)], check=True)
        tmp.replace(exe)
    return exe


def innet_agg_frame(worker: int, values_per_packet: int | None = None) -> bytes:
    """A DATA packet of worker `worker` in job 1 (docs/protocol.md), slot 0 round 1, with
    `values_per_packet` values (the program's default when None; the switch must be compiled for
    it): blast rewrites slot and round per packet."""
    from host_agents.agg_protocol import AGG_UDP_PORT, DEFAULT_VALUES_PER_PACKET, AggHeaderFields

    values = values_per_packet or DEFAULT_VALUES_PER_PACKET

    hdr = AggHeaderFields(op=1, flags=0, job_id=1, worker_id=worker, slot=0, round=1, next_exp=0, count=1,
                          bitmap=0, chunk=0, version_lo=0, version_hi=0).pack()
    payload = hdr + b"".join(struct.pack("!i", worker * 100 + i) for i in range(values))
    udp = struct.pack("!HHHH", AGG_UDP_PORT, AGG_UDP_PORT, 8 + len(payload), 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + len(payload), 0, 0, 64, 17, 0,
                     bytes([10, 0, 1, 1 + worker]), bytes([10, 0, 0, 254]))
    ip = ip[:10] + struct.pack("!H", ipv4_checksum(ip)) + ip[12:]
    mac = bytes.fromhex(f"0200000001{1 + worker:02x}")
    return bytes.fromhex(SWITCH_MAC.replace(":", "")) + mac + b"\x08\x00" + ip + udp + payload


def bench_innet_agg(backend: str, seconds: float, values_per_packet: int | None = None) -> dict:
    """p4/innet.p4 aggregating a 4-worker synchronous job: each worker on its own switch port
    sends DATA packets for slot i % 1024, round 1 + i / 1024, the workers in step (bench/blast.c
    on the other core, 64 frames per worker in turn); a round that collects all four
    contributions goes out as a RESULT to all four. The rate is contributions aggregated per
    second: the job's `agg_aggregated` counter over the measured window (RESULT copies sent, from
    `agg_results`, beside it). `values_per_packet`: the program compiled with
    -D AGG_VALUES_PER_PACKET=V (its default when None)."""
    from control_plane.aggregation import Job, Member
    from control_plane.switch_controller import SwitchController
    from topologies.netns import create_namespace, create_veth_pair, netns_unavailable

    reason = netns_unavailable()
    if reason:
        return {"program": "innet_agg4", "backend": backend, "path": "veth", "skipped": reason}
    made: list = []
    proc = send = None
    pin_switch, pin_sender = _pins()
    sc = None
    try:
        blast = build_blast()
        ns = create_namespace("bw")
        made.append(ns)
        pairs = [create_veth_pair(peer_ns=ns, prefix="bw") for _ in range(AGG_WORKERS)]
        made += pairs
        defines = (f"AGG_VALUES_PER_PACKET={values_per_packet}",) if values_per_packet else ()
        proc, grpc_port, ran = _start_switch(INNET, backend, [p.host_if for p in pairs], pin_switch, defines)
        sc = SwitchController(f"127.0.0.1:{grpc_port}", SWITCH_MAC, SWITCH_IP)
        sc.attach()
        members = [Member(i, port=i + 1, mac=f"02:00:00:00:01:{1 + i:02x}", ip=f"10.0.1.{1 + i}")
                   for i in range(AGG_WORKERS)]
        sc.jobs.create(Job(job_id=1, slot_base=0, num_slots=AGG_SLOTS, members=members))
        slot_off, round_off = 14 + 20 + 8 + 4, 14 + 20 + 8 + 6
        argv = pin_sender + [str(blast), str(seconds + 3), str(AGG_SLOTS), str(slot_off), str(round_off)]
        for i, p in enumerate(pairs):
            argv += [p.ns_if, innet_agg_frame(i, values_per_packet).hex()]
        send = ns.popen(argv)
        time.sleep(min(2.0, seconds / 4))

        def sample() -> tuple[int, int, int, int]:
            rx = tx = 0
            for p in pairs:
                r, t = _link_counters(ns, p.ns_if)
                rx, tx = rx + r, tx + t
            agg = sc.jobs.ingress.counters(1)["aggregated"]  # type: ignore[union-attr]
            return agg, sc.jobs.egress.results(1), rx, tx  # type: ignore[union-attr]

        agg0, res0, rx0, tx0 = sample()
        cpu0, t0 = _cpu_seconds(proc.pid), time.perf_counter()
        time.sleep(seconds)
        agg1, res1, rx1, tx1 = sample()
        cpu1, dt = _cpu_seconds(proc.pid), time.perf_counter() - t0
        out, _ = send.communicate(timeout=30)
        counters = sc.jobs.ingress.counters(1)
        return {"program": "innet_agg4", "backend": ran, "path": "veth",
                "sender": "bench/blast.c (sendmmsg, 64 frames per worker in turn), 1 core",
                "workers": AGG_WORKERS, "slots": AGG_SLOTS,
                "values_per_packet": (len(innet_agg_frame(0, values_per_packet)) - 70) // 4,
                "seconds": round(dt, 2),
                "offered_pps": round((tx1 - tx0) / dt), "pps": round((agg1 - agg0) / dt),
                "result_copies_per_s": round((res1 - res0) / dt), "frames_out_pps": round((rx1 - rx0) / dt),
                "job_counters": counters, "sender_said": out.strip(),
                "switch_cpu_busy": round((cpu1 - cpu0) / dt, 3),
                "switch_cpu_ns_per_packet": (round((cpu1 - cpu0) / (agg1 - agg0) * 1e9)
                                             if agg1 > agg0 else None),
                "switch_core": pin_switch[-1] if pin_switch else "any"}
    finally:
        if sc is not None:
            sc.close()
        _stop(send, wait_s=5, output=False)
        _stop(proc)
        for obj in reversed(made):
            obj.delete()


def bench_load(backend: str) -> dict:
    """Loading p4/innet.p4 as a pipeline load does (front end, C emitter, C compiler, dlopen),
    each in a fresh Python process: a cold native cache first, then warm."""
    code = ("import sys, time; t = time.perf_counter(); "
            "from p4compiler.python_backend import compile_file; "
            "from softswitch.native_switch import create_switch; "
            f"sw = create_switch(compile_file({str(INNET)!r}), {backend!r}, announce=False); "
            "print(sw.backend, time.perf_counter() - t)")
    out: dict = {"program": "innet", "backend": backend, "path": "load"}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, INNET_NATIVE_CACHE=cache)
        for which in ("cold", "warm"):
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                               cwd=ROOT, timeout=300)
            if r.returncode != 0:
                raise RuntimeError(f"loading innet.p4 failed: {r.stderr[-500:]}")
            ran, secs = r.stdout.split()
            out["backend"] = ran
            out[f"{which}_s"] = round(float(secs), 3)
    return out


def install_route(grpc_port: int) -> None:
    """The l2l3 route to port 2, installed as a controller would (p4runtime-shell)."""
    import contextlib
    import io
    import tempfile

    import p4runtime_sh.shell as sh

    from p4compiler.p4info import build_p4info, p4info_to_text

    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
        p4info = Path(tmp) / "p4info.txt"
        p4info.write_text(p4info_to_text(build_p4info(compile_file(str(L2L3)).info)))
        sh.setup(device_id=1, grpc_addr=f"127.0.0.1:{grpc_port}", election_id=(0, 1),
                 config=sh.FwdPipeConfig(str(p4info), str(L2L3)))
        try:
            te = sh.TableEntry("RouterIngress.ipv4_lpm")(action="RouterIngress.set_nhop")
            te.match["hdr.ipv4.dst"] = f"{DST_IP}/32"
            te.action["dst_mac"] = "02:00:00:00:02:02"
            te.action["src_mac"] = "02:00:00:00:00:fe"
            te.action["port"] = "2"
            te.insert()
        finally:
            sh.teardown()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backends", default="python,native",
                    help="comma-separated backends to measure (default %(default)s)")
    ap.add_argument("--packets", type=int, default=20000,
                    help="packets per in-process run of the Python backend; the native one runs 100x as "
                         "many (default %(default)s)")
    ap.add_argument("--seconds", type=float, default=5.0,
                    help="measured window of each veth run (default %(default)s)")
    ap.add_argument("--skip-veth", action="store_true", help="only the in-process runs")
    ap.add_argument("--skip-in-process", action="store_true", help="only the veth runs")
    ap.add_argument("--only-innet", action="store_true",
                    help="of the veth runs, only p4/innet.p4's aggregation (no l2l3/agg32, no load time)")
    ap.add_argument("--values-per-packet", default="",
                    help="comma-separated widths for the innet aggregation run (p4/innet.p4 compiled "
                         "with -D AGG_VALUES_PER_PACKET=V for each; default: the program's default, 64)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "softswitch_pps.json"))
    args = ap.parse_args()
    sigterm_as_interrupt()  # trafgen and the switches it started are stopped in `finally`
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    bad = [b for b in backends if b not in ("python", "native")]
    if bad:
        ap.error(f"unknown backend {bad[0]!r} (python, native)")
    try:
        widths: list[int | None] = [int(v) for v in args.values_per_packet.split(",") if v.strip()] or [None]
    except ValueError:
        ap.error(f"--values-per-packet: comma-separated integers, not {args.values_per_packet!r}")
    results = []
    for which in (() if args.skip_in_process or args.only_innet else ("l2l3", "agg32")):
        for backend in backends:
            n = args.packets * (100 if backend == "native" else 1)
            r = bench_in_process(which, backend, n)
            print(f"{which:6s} {backend:6s} in-process  {r['pps']:>11,d} packets/s  "
                  f"({r['ns_per_packet']} ns/packet)", flush=True)
            results.append(r)
    if not args.skip_veth and not args.only_innet:
        for which in ("l2l3", "agg32"):
            for backend in backends:
                r = bench_veth(which, backend, args.seconds)
                if "skipped" in r:
                    print(f"{which:6s} {backend:6s} veth        skipped: {r['skipped']}")
                else:
                    print(f"{which:6s} {r['backend']:6s} veth        {r['pps']:>11,d} packets/s forwarded of "
                          f"{r['offered_pps']:,d} offered ({r['sender']}; switch on core {r['switch_core']}, "
                          f"{r['switch_cpu_busy']:.0%} busy, {r['switch_cpu_ns_per_packet']} ns CPU per "
                          "forwarded packet)", flush=True)
                results.append(r)
    if not args.skip_veth:
        for width in widths:
            for backend in backends:
                r = bench_innet_agg(backend, args.seconds, width)
                if "skipped" in r:
                    print(f"innet  {backend:6s} 4 workers   skipped: {r['skipped']}")
                else:
                    print(f"innet  {r['backend']:6s} 4 workers   {r['values_per_packet']} values/packet: "
                          f"{r['pps']:>11,d} contributions/s aggregated of {r['offered_pps']:,d} offered "
                          f"({r['result_copies_per_s']:,d} RESULT copies/s; {r['sender']}; switch on core "
                          f"{r['switch_core']}, {r['switch_cpu_busy']:.0%} busy, "
                          f"{r['switch_cpu_ns_per_packet']} ns CPU per contribution)", flush=True)
                results.append(r)
    for backend in (() if args.only_innet else backends):
        r = bench_load(backend)
        cold = r.get("cold_s")
        print(f"innet  {r['backend']:6s} load        cold cache {cold} s, warm {r.get('warm_s')} s "
              f"(front end + C build + dlopen, in a fresh process)", flush=True)
        results.append(r)
    doc = {"benchmark": "softswitch_pps", "machine": {"cpu": platform.processor() or platform.machine(),
           "cores": os.cpu_count(), "python": platform.python_version()},
           "targets": {"agg32_in_process_native_pps": 2_000_000, "agg32_veth_native_pps": 500_000,
                       "innet_agg4_veth_native_pps": 300_000, "innet_load_cold_s": 10.0,
                       "innet_load_warm_s": 1.0},
           "results": results}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
