"""Packets per second of the software switch (issue 2's speed figures; not a test).

Two programs:
  (a) l2l3: p4/examples/basic_router.p4 -- parse Ethernet/IPv4, verify the IPv4 checksum, LPM
      route with MAC rewrite and TTL decrement, per-port counter, checksum update, deparse.
  (b) agg32: bench/p4/agg32.p4 -- 32 int32 payload fields added into 32 register arrays at the
      packet's slot, sums written back into the packet (the shape of in-switch aggregation).
Two paths:
  in-process: Switch.process_packet in a loop (no I/O), one core.
  veth: `python -m softswitch` with AF_PACKET ports; a sender in one network namespace blasts
      frames over a veth pair, a receiver in another counts what the switch forwards (needs root).

    python bench/softswitch_pps.py [--packets N] [--seconds S] [--skip-veth] [--out FILE]

Prints a table and writes bench/results/softswitch_pps.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from p4compiler.python_backend import compile_file  # noqa: E402
from softswitch.api import Lpm, TableEntry  # noqa: E402
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


def make_switch(which: str) -> Switch:
    if which == "l2l3":
        sw = Switch(compile_file(str(L2L3)))
        sw.insert_entry(TableEntry("RouterIngress.ipv4_lpm", {"hdr.ipv4.dst": Lpm(0x0A000202, 32)},
                                   "RouterIngress.set_nhop",
                                   {"dst_mac": 0x020000000202, "src_mac": 0x0200000000FE, "port": 2}))
        return sw
    return Switch(compile_file(str(AGG32)))


def bench_in_process(which: str, packets: int) -> dict:
    sw = make_switch(which)
    frame = l2l3_frame() if which == "l2l3" else agg32_frame()
    out = sw.process_packet(1, frame)
    assert out, f"{which}: the benchmark packet was dropped"
    for _ in range(min(1000, packets)):  # warm-up
        sw.process_packet(1, frame)
    t = time.perf_counter()
    for _ in range(packets):
        sw.process_packet(1, frame)
    dt = time.perf_counter() - t
    return {"program": which, "path": "in-process", "packets": packets, "seconds": round(dt, 3),
            "pps": round(packets / dt), "us_per_packet": round(dt / packets * 1e6, 2)}


SENDER = r"""
import socket, sys, time
iface, frame, n = sys.argv[1], bytes.fromhex(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
t = time.perf_counter()
for _ in range(n):
    s.send(frame)
print(time.perf_counter() - t)
"""

RECEIVER = r"""
import socket, sys, time
iface, seconds, size = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((iface, 0))
s.settimeout(0.5)
print("ready", flush=True)
n, first, last = 0, None, None
end = time.monotonic() + seconds
while time.monotonic() < end:
    try:
        data, addr = s.recvfrom(65535)
    except socket.timeout:
        if n:
            break
        continue
    if addr[2] == socket.PACKET_OUTGOING or len(data) != size:
        continue
    now = time.perf_counter()
    first = first or now
    last = now
    n += 1
print(n, (last - first) if n > 1 else 0.0)
"""


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


def bench_veth(which: str, packets: int, seconds: float) -> dict:
    from topologies.netns import create_namespace, create_veth_pair, netns_unavailable

    reason = netns_unavailable()
    if reason:
        return {"program": which, "path": "veth", "skipped": reason}
    made = []
    proc = None
    try:
        ns_tx, ns_rx = create_namespace("bt"), create_namespace("br")
        made += [ns_tx, ns_rx]
        p1, p2 = create_veth_pair(peer_ns=ns_tx, prefix="bp"), create_veth_pair(peer_ns=ns_rx, prefix="bp")
        made += [p1, p2]
        program = L2L3 if which == "l2l3" else AGG32
        proc = subprocess.Popen([sys.executable, "-m", "softswitch", "--p4", str(program), "--grpc-addr",
                                 "127.0.0.1:0", "-i", f"1@{p1.host_if}", "-i", f"2@{p2.host_if}"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        grpc_port = int(re.search(r":(\d+) ", proc.stdout.readline()).group(1))
        assert "softswitch running" in proc.stdout.readline()
        if which == "l2l3":
            install_route(grpc_port)
        frame = agg32_frame() if which == "agg32" else l2l3_frame()
        # l2l3 routes port 1 -> port 2; agg32 sends results back out of port 1
        rx_ns, tx_if, rx_if = (ns_rx, p1.ns_if, p2.ns_if) if which == "l2l3" else (ns_tx, p1.ns_if, p1.ns_if)
        recv = rx_ns.popen([sys.executable, "-c", RECEIVER, rx_if, str(seconds), str(len(frame))])
        assert recv.stdout.readline().strip() == "ready"
        send = ns_tx.run([sys.executable, "-c", SENDER, tx_if, frame.hex(), str(packets)],
                         timeout=seconds + 30)
        out, _ = recv.communicate(timeout=seconds + 30)
        n, span = out.split()
        n, span = int(n), float(span)
        sent_s = float(send.stdout.strip())
        return {"program": which, "path": "veth", "sent": packets, "received": n,
                "send_seconds": round(sent_s, 3), "pps": round(n / span) if span > 0 else 0,
                "loss": round(1 - n / packets, 4)}
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
        for obj in reversed(made):
            obj.delete()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packets", type=int, default=20000,
                    help="packets per in-process run (default %(default)s)")
    ap.add_argument("--veth-packets", type=int, default=5000,
                    help="packets per veth run (default %(default)s)")
    ap.add_argument("--seconds", type=float, default=20.0,
                    help="time limit of each veth run (default %(default)s)")
    ap.add_argument("--skip-veth", action="store_true", help="only the in-process runs")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "softswitch_pps.json"))
    args = ap.parse_args()
    results = []
    for which in ("l2l3", "agg32"):
        r = bench_in_process(which, args.packets)
        print(f"{which:6s} in-process  {r['pps']:>9,d} packets/s  ({r['us_per_packet']} us/packet)",
              flush=True)
        results.append(r)
    if not args.skip_veth:
        for which in ("l2l3", "agg32"):
            r = bench_veth(which, args.veth_packets, args.seconds)
            if "skipped" in r:
                print(f"{which:6s} veth        skipped: {r['skipped']}")
            else:
                print(f"{which:6s} veth        {r['pps']:>9,d} packets/s  ({r['received']}/{r['sent']} "
                      f"forwarded, loss {r['loss']:.1%} with the sender faster than the switch)", flush=True)
            results.append(r)
    doc = {"benchmark": "softswitch_pps", "machine": {"cpu": platform.processor() or platform.machine(),
           "cores": os.cpu_count(), "python": platform.python_version()},
           "target_agg32_in_process_pps": 20000, "results": results}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
