"""`make demo`: the software switch routes real pings.

Two hosts live in network namespaces, each cabled to a switch port by a veth pair. The switch
runs p4/examples/basic_router.p4 with AF_PACKET ports and a P4Runtime server; the controller is
p4runtime-shell, which pushes the pipeline and installs the routes. Then h1 pings h2 through
the switch, a packet with no route goes to the controller as a PacketIn, and the port counters
are read back. Without root (no namespaces) the same exchange runs over in-process ports.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "p4" / "examples" / "basic_router.p4"
GW_MAC = "02:00:00:00:00:fe"
HOSTS = [("h1", "10.0.1.1", "10.0.1.254", 1), ("h2", "10.0.2.2", "10.0.2.254", 2)]


def say(step: str, text: str) -> None:
    print(f"[{step}] {text}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m softswitch.demo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--pings", type=int, default=3, help="pings from h1 to h2 (default %(default)s)")
    ap.add_argument("--in-process", action="store_true", help="skip namespaces even when running as root")
    args = ap.parse_args(argv)

    from p4compiler.p4info import build_p4info, p4info_to_text
    from p4compiler.python_backend import compile_file
    from softswitch.p4runtime_server import P4RuntimeServer
    from softswitch.switch import Switch

    t0 = time.perf_counter()
    program = compile_file(str(PROGRAM))
    info = program.info
    say("1/5", f"compiled {PROGRAM.relative_to(ROOT)} in {time.perf_counter() - t0:.2f}s: "
        f"{len(info.tables)} table, {len(info.actions)} actions, {len(info.counters)} counter")

    from topologies.netns import create_routed_host, netns_unavailable

    reason = "--in-process given" if args.in_process else netns_unavailable()
    if reason is not None:
        say("2/5", f"no network namespaces ({reason}); using in-process ports instead")
        return _in_process(program)

    hosts = []
    server = None
    ports = None
    try:
        from softswitch.ports import AfPacketPort, PortSet

        portset = {}
        for _name, ip_, gw, port in HOSTS:
            host = create_routed_host(f"{ip_}/24", gw, GW_MAC, prefix="dm")
            hosts.append(host)
            portset[port] = AfPacketPort(host.pair.host_if)
        macs = [h.mac for h in hosts]
        say("2/5", "network: " + "   ".join(
            f"{h[0]} {h[1]} ({host.mac}) = switch port {h[3]} ({host.pair.host_if})"
            for h, host in zip(HOSTS, hosts, strict=True)))

        # the switch starts empty; the controller pushes the program, as with simple_switch_grpc
        ports = PortSet(portset)

        def send(packets: list[tuple[int, bytes]]) -> None:
            for p, data in packets:
                ports.send(p, data)

        def load(config: bytes, _p4info: object) -> Switch:
            from p4compiler.python_backend import compile_text

            return Switch(compile_text(config.decode(), str(PROGRAM)))

        server = P4RuntimeServer(None, 1, load, send)
        grpc_port = server.start("127.0.0.1:0")
        counts = {"rx": 0, "tx": 0}

        def on_frame(port_no: int, frame: bytes) -> None:
            sw = server.switch
            if sw is None:
                return
            counts["rx"] += 1
            with server.lock:
                out = sw.process_packet(port_no, frame)
            counts["tx"] += len(out)
            send(out)

        ports.start(on_frame)
        say("3/5", f"switch up: ports 1-2 on AF_PACKET, P4Runtime server on 127.0.0.1:{grpc_port}")

        with tempfile.TemporaryDirectory() as tmp:
            p4info_path = Path(tmp) / "p4info.txt"
            p4info_path.write_text(p4info_to_text(build_p4info(info)))
            h1 = hosts[0].ns

            def send_unrouted() -> None:  # h1 sends to an address without a route
                h1.run([sys.executable, "-c", UNROUTED_SENDER], check=False, timeout=10)

            with contextlib.redirect_stdout(io.StringIO()):  # p4runtime-shell echoes every protobuf
                packet_ins = _controller(grpc_port, p4info_path, macs, send_unrouted)
        ping = hosts[0].ns.run(["ping", "-c", str(args.pings), "-i", "0.2", "-W", "2", HOSTS[1][1]],
                                 check=False, timeout=30)
        say("5/5", f"h1$ ping -c {args.pings} {HOSTS[1][1]}")
        for line in ping.stdout.strip().splitlines():
            print("      " + line)
        sw = server.switch
        with server.lock:
            c = [sw.counter_read("RouterIngress.rx_port_counter", p) for p in (1, 2)]
        print(f"      switch: {counts['rx']} frames in, {counts['tx']} out; rx_port_counter: "
              f"port 1 {c[0][1]} packets/{c[0][0]} bytes, port 2 {c[1][1]} packets/{c[1][0]} bytes")
        if packet_ins:
            print(f"      controller got {len(packet_ins)} PacketIn(s) for unrouted traffic, e.g. "
                  f"{packet_ins[0]}")
        ok = ping.returncode == 0
        print("demo " + ("finished: the software switch routed the pings" if ok else
                         "FAILED: the pings did not get through (see above)"), flush=True)
        return 0 if ok else 1
    finally:
        if ports is not None:
            ports.close()
        if server is not None:
            server.stop()
        for host in hosts:
            host.delete()


def _controller(grpc_port: int, p4info_path: Path, macs: list[str], send_unrouted: Callable[[], None]
                ) -> list[str]:
    """p4runtime-shell as the controller: push the pipeline, install routes, watch PacketIns."""
    import p4runtime_sh.shell as sh

    sh.setup(device_id=1, grpc_addr=f"127.0.0.1:{grpc_port}", election_id=(0, 1),
             config=sh.FwdPipeConfig(str(p4info_path), str(PROGRAM)))
    try:
        for (_name, ip_, _, port), mac in zip(HOSTS, macs, strict=False):
            te = sh.TableEntry("RouterIngress.ipv4_lpm")(action="RouterIngress.set_nhop")
            te.match["hdr.ipv4.dst"] = f"{ip_}/32"
            te.action["dst_mac"] = mac
            te.action["src_mac"] = GW_MAC
            te.action["port"] = str(port)
            te.insert()
        print("[4/5] controller (p4runtime-shell) pushed the pipeline and installed routes: "
              + ", ".join(f"{h[1]}/32 -> port {h[3]}" for h in HOSTS), file=sys.stderr, flush=True)
        # a packet to an address with no route goes to the controller
        got: list[str] = []
        sniffer = sh.PacketIn()

        def sniff() -> None:
            for msg in sniffer.sniff(timeout=2):
                meta = {m.metadata_id: int.from_bytes(m.value, "big") for m in msg.packet.metadata}
                got.append(f"{len(msg.packet.payload)} bytes from ingress_port {meta.get(1)}")

        th = threading.Thread(target=sniff)
        th.start()
        time.sleep(0.2)
        send_unrouted()
        th.join()
        return got
    finally:
        sh.teardown()


UNROUTED_SENDER = ("import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                   "s.sendto(b'hello controller', ('10.0.9.9', 9999))")


def _in_process(program: object) -> int:
    from scapy.layers.inet import ICMP, IP
    from scapy.layers.l2 import Ether

    from softswitch.api import Lpm, TableEntry
    from softswitch.switch import Switch

    sw = Switch(program)  # type: ignore[arg-type]
    for (_, ip_, _, port), mac in zip(HOSTS, ["02:00:00:00:01:01", "02:00:00:00:02:02"], strict=False):
        sw.insert_entry(TableEntry("RouterIngress.ipv4_lpm", {"hdr.ipv4.dst": Lpm(_ip(ip_), 32)},
                                   "RouterIngress.set_nhop",
                                   {"dst_mac": _macint(mac), "src_mac": _macint(GW_MAC), "port": port}))
    say("3/5", "switch up with in-process ports; routes installed through the switch API")
    pkt = Ether(dst=GW_MAC, src="02:00:00:00:01:01") / IP(src=HOSTS[0][1], dst=HOSTS[1][1], ttl=64) / ICMP()
    out = sw.process_packet(1, bytes(pkt))
    for port, data in out:
        p = Ether(data)
        fresh = p[IP].copy()
        fresh.chksum = None  # scapy recomputes it: compare with what the switch wrote
        ok_sum = IP(bytes(fresh)).chksum == p[IP].chksum
        say("4/5", f"ICMP echo h1->h2 left port {port}: ttl {p[IP].ttl}, dst mac {p.dst}, "
            f"IPv4 checksum {'correct' if ok_sum else 'WRONG'}")
    lost = sw.process_packet(1, bytes(Ether(dst=GW_MAC) / IP(dst="10.0.9.9") / ICMP()))
    say("5/5", f"packet without a route went to port {lost[0][0] if lost else 'none'} (the CPU port is 64)")
    ok = bool(out) and out[0][0] == 2
    print("demo " + ("finished" if ok else "FAILED"), flush=True)
    return 0 if ok else 1


def _ip(s: str) -> int:
    a, b, c, d = (int(x) for x in s.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def _macint(s: str) -> int:
    return int(s.replace(":", ""), 16)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
