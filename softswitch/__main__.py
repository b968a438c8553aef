"""Run the software switch, as bmv2's simple_switch_grpc:

    python -m softswitch --p4 prog.p4 --grpc-addr 0.0.0.0:9559 -i 1@veth1 -i 2@veth2

Ports bind to Linux interfaces with AF_PACKET raw sockets. The P4Runtime server accepts
SetForwardingPipelineConfig with the P4-16 source as the device config, so a controller can
also load the program (start without --p4 then).
"""

from __future__ import annotations

import argparse
import logging
import random
import re
import signal
import sys
import threading
import time

from p4compiler.errors import P4Error

log = logging.getLogger("softswitch")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m softswitch",
        description="P4-16 v1model software switch with a P4Runtime server (a stand-in for bmv2's "
                    "simple_switch_grpc).",
    )
    p.add_argument("--p4", metavar="PROGRAM.p4", help="P4-16 program to run (else wait for a controller to "
                   "push one with SetForwardingPipelineConfig)")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="extra #include directory (repeatable)")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                   help="preprocessor definition (repeatable)")
    p.add_argument("--allow-nonportable", action="store_true",
                   help="also accept what p4c-bm2-ss (v1model) refuses: / or %% by a non-constant value, a "
                        "table applied twice on one path, a select on an enum-typed key (applies to --p4 "
                        "and to pipelines a controller pushes)")
    p.add_argument("-i", "--interface", dest="interfaces", action="append", default=[], metavar="PORT@IFACE",
                   help="bind switch port PORT to Linux interface IFACE, e.g. 1@veth1 (repeatable)")
    p.add_argument("--grpc-addr", default="127.0.0.1:9559",
                   help="P4Runtime server address (default %(default)s; port 0 picks a free one)")
    p.add_argument("--no-grpc", action="store_true", help="do not start the P4Runtime server")
    p.add_argument("--device-id", type=int, default=1, help="P4Runtime device id (default %(default)s)")
    p.add_argument("--cpu-port", type=int, default=64,
                   help="port number of the controller's packet-in/packet-out path (default %(default)s)")
    p.add_argument("--stats-interval", type=float, default=0.0, metavar="SECONDS",
                   help="print packet counts every SECONDS (default: only at exit)")
    p.add_argument("--loss-rate", type=float, default=0.0, metavar="P",
                   help="emulate lossy links: drop each received and each sent frame with probability P "
                        "(for loss-recovery tests where tc netem is not available; default 0)")
    p.add_argument("--netem", dest="netem", action="append", default=[], metavar="PORT:SPEC",
                   help="emulate the link behind port PORT in both directions (received and sent frames), "
                        "as tc netem would where the kernel has no sch_netem: SPEC is key=value[,...] with "
                        "delay=5ms, jitter=1ms (uniform, order kept), loss=0.01 (or 1%%), rate=100mbit "
                        "(bit/kbit/mbit/gbit), limit=1000 (frames queued) and backlog=100ms (longest wait "
                        "for the rate serializer before a tail drop), all optional; e.g. "
                        "--netem 2:delay=5ms,loss=0.01,rate=100mbit (repeatable, one per port)")
    p.add_argument("--loss-seed", type=int, default=None,
                   help="seed of the loss emulation of --loss-rate and --netem (default: random)")
    p.add_argument("--offloads", action="store_true",
                   help="offload mode (native backend, Linux 6.2+): each port exchanges TCP and UDP "
                        "super-frames with the kernel behind a virtio_net_hdr, as a virtual NIC with "
                        "TSO/USO does, so hosts whose links have segmentation offloads on hand over up to "
                        "64 KiB at once; the pipeline still sees every wire frame, and a run of output "
                        "frames of one flow to one port goes back as one super-frame for the kernel to cut "
                        "(it renumbers the IPv4 IDs of such a run and fills in zero UDP checksums; "
                        "softswitch/native/src/offload.h)")
    p.add_argument("--backend", choices=["auto", "native", "python"], default=None,
                   help="how the pipeline runs: native = the program compiled to C (built with the system "
                        "C compiler at load, cached) with receive, pipeline and transmit in C threads; "
                        "python = the Python reference backend; auto = native, or python with a one-line "
                        "reason when the C emitter cannot handle the program or no C compiler is found "
                        "(default: "
                        "$INNET_SWITCH_BACKEND, else auto)")
    p.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    return p


def _defines(items: list[str]) -> dict[str, str]:
    out = {}
    for d in items:
        name, _, value = d.partition("=")
        out[name] = value or "1"
    return out


class Stats:
    def __init__(self) -> None:
        self.rx = 0
        self.tx = 0
        self.dropped = 0
        self.errors = 0
        self.lost = 0  # by --loss-rate

    def line(self) -> str:
        lost = f"  lost {self.lost}" if self.lost else ""
        return f"rx {self.rx}  tx {self.tx}  dropped {self.dropped}  errors {self.errors}{lost}"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        hint = ""
        if args.netem and re.match(r"^[a-zA-Z%]+(,|$)", extra[0]) and re.search(r"=[\d.]+$", args.netem[-1]):
            hint = (f" (a space split --netem {args.netem[-1]!r} {extra[0]!r}: "
                    "write the number and its unit together, e.g. delay=5ms)")
        parser.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from p4compiler.python_backend import compile_file, compile_text
    from softswitch.api import SwitchError
    from softswitch.netem import NetemSpecError, parse_netem_specs
    from softswitch.p4runtime_server import P4RuntimeServer
    from softswitch.ports import PortError, PortSet
    from softswitch.switch import Switch

    defines = _defines(args.defines)
    if not 0.0 <= args.loss_rate < 1.0:
        print(f"error: --loss-rate {args.loss_rate} must be in [0, 1)", file=sys.stderr)
        return 2
    loss = random.Random(args.loss_seed)
    try:
        links = parse_netem_specs(args.netem)
    except NetemSpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    bound_ports = set()
    for spec in args.interfaces:
        num = spec.split("@", 1)[0].strip()
        if num.isdigit():
            bound_ports.add(int(num))
    unbound = sorted(set(links) - bound_ports)
    if unbound:
        print(f"error: --netem names port {unbound[0]}, which no -i PORT@IFACE binds", file=sys.stderr)
        return 2
    from softswitch.native_switch import NativeSwitch, create_switch, default_backend
    from softswitch.ports import parse_port_specs

    try:
        backend = args.backend or default_backend()
    except SwitchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.offloads and backend == "python":
        print("error: --offloads needs the native backend", file=sys.stderr)
        return 2
    try:
        interfaces = parse_port_specs(args.interfaces)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    def make_switch(program: object) -> Switch:
        return create_switch(program, backend, cpu_port=args.cpu_port)  # type: ignore[arg-type]

    switch = None
    if args.p4:
        try:
            switch = make_switch(compile_file(args.p4, args.include_dirs, defines,
                                              allow_nonportable=args.allow_nonportable))
        except P4Error as e:
            print(e, file=sys.stderr)
            return 2
    if args.no_grpc and switch is None:
        print("error: without --p4 the switch needs the P4Runtime server to get a program", file=sys.stderr)
        return 2

    stats = Stats()
    holder: dict = {"switch": switch, "ports": None, "netem": None}

    def to_wire(port: int, data: bytes) -> None:
        if holder["ports"] is not None and holder["ports"].send(port, data):
            stats.tx += 1
        else:
            stats.dropped += 1

    def send_all(packets: list[tuple[int, bytes]]) -> None:
        netem = holder["netem"]
        for port, data in packets:
            if args.loss_rate and loss.random() < args.loss_rate:
                stats.lost += 1
                continue
            link = netem.egress.get(port) if netem is not None else None
            if link is not None:
                link.submit(data)
            else:
                to_wire(port, data)

    def on_frame(port_no: int, frame: bytes) -> None:
        stats.rx += 1
        if args.loss_rate and loss.random() < args.loss_rate:
            stats.lost += 1
            return
        sw = server.switch if server is not None else holder["switch"]
        if sw is None:
            stats.dropped += 1
            return
        try:
            with lock:
                out = sw.process_packet(port_no, frame)
        except Exception:  # a bug must not take the switch down: log it, drop the packet
            stats.errors += 1
            log.exception("packet from port %d dropped by an internal error", port_no)
            return
        if not out:
            stats.dropped += 1
        send_all(out)

    def python_ports() -> None:
        """The Python data path: one receive thread per AF_PACKET port, netem in Python threads."""
        if holder["ports"] is not None:
            return
        ports = PortSet.from_specs(args.interfaces)
        netem = None
        if links:  # only then: without --netem the data path stays as it was, no per-frame cost
            from softswitch.netem import NetemPorts

            netem = NetemPorts(links, on_frame, to_wire, seed=args.loss_seed)
        holder["ports"], holder["netem"] = ports, netem

        def handler(port_no: int, frame: bytes) -> None:
            link = netem.ingress.get(port_no) if netem is not None else None
            if link is None:
                on_frame(port_no, frame)
            else:
                link.submit(frame)

        ports.start(handler)

    def close_python_ports() -> None:
        if holder["netem"] is not None:
            holder["netem"].close()
        if holder["ports"] is not None:
            holder["ports"].close()
        holder["ports"] = holder["netem"] = None

    def attach(sw: Switch) -> None:
        """Give the ports to the switch that runs now (the C data path or the Python one)."""
        old = holder["switch"]
        if isinstance(old, NativeSwitch) and old is not sw:
            old.close()
        if isinstance(sw, NativeSwitch):
            close_python_ports()
            sw.start(interfaces, links, args.loss_rate, args.loss_seed, offloads=args.offloads)
        elif args.offloads:
            raise SwitchError("--offloads needs the native backend; this program runs on the python one")
        else:
            python_ports()
        holder["switch"] = sw

    def load_pipeline(config: bytes, p4info: object) -> Switch:
        text = config.decode("utf-8", errors="replace")
        program = compile_text(text, "<device config>", args.include_dirs, defines,
                               allow_nonportable=args.allow_nonportable)
        sw = make_switch(program)
        attach(sw)
        print(f"softswitch: pipeline loaded, {backend_of(sw)} backend", flush=True)
        return sw

    server = None
    if not args.no_grpc:
        server = P4RuntimeServer(switch, args.device_id, load_pipeline, send_all,
                                 device_config=(switch.program.p4_source.encode() if switch else b""))
        try:
            bound = server.start(args.grpc_addr)
        except (OSError, RuntimeError) as e:
            print(f"error: cannot start the P4Runtime server on {args.grpc_addr}: {e}", file=sys.stderr)
            return 2
        host = args.grpc_addr.rsplit(":", 1)[0]
        print(f"P4Runtime server listening on {host}:{bound} (device id {args.device_id})", flush=True)
    lock = server.lock if server is not None else threading.RLock()

    try:
        if switch is not None:
            holder["switch"] = None
            attach(switch)
        elif backend == "python":
            python_ports()
    except (ValueError, PortError, SwitchError) as e:
        print(f"error: {e}", file=sys.stderr)
        if server is not None:
            server.stop()
        return 2
    names = ", ".join(f"{n}@{i}" for n, i in sorted(interfaces)) or "none"
    prog = args.p4 or "(none yet: waiting for SetForwardingPipelineConfig)"
    running = f" on the {backend_of(switch)} backend" if switch is not None else ""
    # handlers before the ready line: whoever reads it may stop the switch at once
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print(f"softswitch running {prog}{running}; ports: {names}", flush=True)
    for port_no, params in sorted(links.items()):
        print(f"softswitch: port {port_no} emulates {params.describe()} in each direction", flush=True)

    def stats_line() -> str:
        sw = holder["switch"]
        if isinstance(sw, NativeSwitch):
            return native_stats_line(sw, [n for n, _ in interfaces])
        netem = holder["netem"]
        return stats.line() + (f"  {netem.line()}" if netem else "")

    last = time.monotonic()
    while not stop.wait(0.2):
        if args.stats_interval and time.monotonic() - last >= args.stats_interval:
            last = time.monotonic()
            print(stats_line(), flush=True)
    final = stats_line()
    sw = holder["switch"]
    if isinstance(sw, NativeSwitch):
        sw.close()
    close_python_ports()
    if server is not None:
        server.stop()
    print(f"softswitch stopped: {final}", flush=True)
    return 0


def backend_of(sw: object) -> str:
    return "native" if getattr(sw, "backend", "python") == "native" else "python"


def native_stats_line(sw: object, ports: list[int]) -> str:
    """The stop/--stats-interval line of the C data path, in the Python path's words."""
    keys = ("rx_packets", "tx_packets", "rx_dropped", "tx_dropped", "netem_lost", "netem_qdrop")
    tot = dict.fromkeys(keys, 0)
    for p in ports:
        for k, v in sw.port_stats(p).items():  # type: ignore[attr-defined]
            if k in tot:
                tot[k] += v
    st = sw.stats()  # type: ignore[attr-defined]
    line = (f"rx {tot['rx_packets']}  tx {tot['tx_packets']}  dropped {st['pipeline_drops']}  "
            f"errors {st['assert_drops']}  overrun {tot['rx_dropped']}  tx-dropped {tot['tx_dropped']}")
    if tot["netem_lost"] or tot["netem_qdrop"]:
        line += f"  lost {tot['netem_lost']}  qdrop {tot['netem_qdrop']}"
    return line


if __name__ == "__main__":
    sys.exit(main())
