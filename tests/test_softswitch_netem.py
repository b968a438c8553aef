"""Link emulation of the software switch (`python -m softswitch --netem PORT:...`).

The unit tests drive `softswitch.netem.LinkDirection` in process; the namespace tests run the
switch as users do, five hosts in namespaces on veth pairs, and measure what the emulated links
do to real UDP traffic: one-way delay (sender and receiver share the machine's clock), the
rate of a saturating burst, and the share of datagrams lost.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from softswitch.__main__ import main as softswitch_main
from softswitch.netem import LinkDirection, LinkParams, NetemSpecError, parse_netem_spec, parse_netem_specs

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "p4" / "examples" / "basic_router.p4"
GW_MAC = "02:00:00:00:00:fe"
UDP_PORT = 9911
HEADERS = 14 + 20 + 8  # Ethernet + IPv4 + UDP bytes around each datagram's payload

# ---------------------------------------------------------------------------------------------
# spec parsing and the command line


def test_spec_parsing_accepts_every_key():
    port, p = parse_netem_spec("3:delay=5ms,jitter=500us,loss=0.01,rate=100mbit,limit=50,backlog=1s")
    assert port == 3
    assert p == LinkParams(delay_s=0.005, jitter_s=0.0005, loss=0.01, rate_bps=100e6, limit=50, backlog_s=1.0)
    assert parse_netem_spec("7:loss=2%")[1].loss == pytest.approx(0.02)
    assert parse_netem_spec("1:rate=1.5gbit")[1].rate_bps == pytest.approx(1.5e9)
    assert parse_netem_spec("2:")[1] == LinkParams()  # every key is optional
    assert parse_netem_spec("2:delay=0.1s")[1].delay_s == pytest.approx(0.1)
    assert parse_netem_specs(["1:delay=1ms", "2:loss=0.5"]).keys() == {1, 2}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("3:delay=5 ms", "contains a space; write the number and its unit together, e.g. delay=5ms"),
        ("3:delay=5", "delay value '5' has no unit; use s, ms or us"),
        ("3:rate=10mb", "unknown unit 'mb'; use bit, kbit, mbit or gbit"),
        ("3:rate=10", "rate value '10' has no unit"),
        ("3:loss=1.5", "must be a probability in [0, 1)"),
        ("3:loss=5x", "give a probability (loss=0.01) or a percentage (loss=1%)"),
        ("3:lag=5ms", "unknown key 'lag'; keys are delay, jitter, loss, rate, limit, backlog"),
        ("3:delay=5ms,delay=6ms", "delay is given twice"),
        ("3:delay", "'delay' is not key=value"),
        ("delay=5ms", "expected PORT:key=value"),
        ("600:delay=5ms", "port '600' is not a port number 0..511"),
        ("3:limit=0", "limit '0' must be a positive number of frames"),
    ],
)
def test_spec_errors_name_the_problem(spec, message):
    with pytest.raises(NetemSpecError) as info:
        parse_netem_spec(spec)
    assert message in str(info.value)
    assert repr(spec) in str(info.value)


def test_command_line_refuses_bad_specs_before_opening_anything(capsys):
    assert softswitch_main(["--no-grpc", "-i", "3@lo", "--netem", "3:delay=5 ms"]) == 2
    assert "bad --netem spec '3:delay=5 ms': delay value '5 ms' contains a space" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:  # the same typed unquoted in a shell: two arguments
        softswitch_main(["--no-grpc", "-i", "3@lo", "--netem", "3:delay=5", "ms"])
    assert info.value.code == 2
    assert "a space split --netem '3:delay=5' 'ms'" in capsys.readouterr().err
    assert softswitch_main(["--no-grpc", "-i", "1@lo", "--netem", "2:delay=5ms"]) == 2
    assert "--netem names port 2, which no -i PORT@IFACE binds" in capsys.readouterr().err
    assert (
        softswitch_main(["--no-grpc", "-i", "1@lo", "--netem", "1:loss=0.1", "--netem", "1:delay=1ms"]) == 2
    )
    assert "port 1 already has a --netem spec" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# one direction in process


class _Sink:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.got: list[tuple[float, bytes]] = []
        self.done = threading.Event()
        self.expect = 0
        self.clock = clock

    def __call__(self, frame: bytes) -> None:
        self.got.append((self.clock(), frame))
        if len(self.got) >= self.expect:
            self.done.set()


def test_delay_holds_each_frame_and_keeps_order_under_jitter():
    sink = _Sink()
    sink.expect = 200
    link = LinkDirection(LinkParams(delay_s=0.02, jitter_s=0.01), sink, random.Random(1))
    try:
        sent = {}
        for i in range(200):
            frame = i.to_bytes(4, "big")
            sent[frame] = time.monotonic()
            assert link.submit(frame)
            if i % 20 == 0:
                time.sleep(0.001)
        assert sink.done.wait(5)
    finally:
        link.close()
    frames = [f for _, f in sink.got]
    assert frames == sorted(frames)  # jitter never reorders
    held = [t - sent[f] for t, f in sink.got]
    assert min(held) >= 0.01  # delay - jitter
    # and not much more: a frame whose wake-up was lost would wait for the scheduler's 0.5 s poll
    # (the bound leaves a loaded machine's scheduling slack)
    assert statistics.median(held) < 0.25


class _Clock:
    """A frozen instant until `thaw()`, then real time shifted so that it runs on from that instant."""

    def __init__(self) -> None:
        self.instant = time.monotonic()
        self._offset: float | None = None

    def thaw(self) -> None:
        self._offset = time.monotonic() - self.instant

    def __call__(self) -> float:
        return self.instant if self._offset is None else time.monotonic() - self._offset


def test_rate_serializes_and_tail_drops_beyond_the_backlog():
    rate = 8e6  # 1000-byte frames: 1 ms each
    clock = _Clock()  # all 200 frames offered at one instant, however slow this loop is
    sink = _Sink(clock)  # delivery times on the link's own clock
    link = LinkDirection(LinkParams(rate_bps=rate, backlog_s=0.05), sink, random.Random(1), clock=clock)
    try:
        accepted = sum(link.submit(bytes(1000)) for _ in range(200))
        clock.thaw()  # the scheduler delivers them from the instant on
        # frame k starts k ms after the instant; those starting more than 50 ms after it are dropped
        # (frame 50 starts at exactly 50 ms, give or take the float sum's last bit)
        assert accepted in (50, 51), accepted
        assert link.overflow == 200 - accepted
        sink.expect = accepted
        assert sink.done.wait(5)
    finally:
        link.close()
    # Serialized: frame k leaves when its last bit is on the wire, (k + 1) ms after the instant,
    # never sooner. (A loaded machine delivers late, never early, so this cannot flake.)
    since = [t - clock.instant for t, _ in sink.got]
    assert since == sorted(since)
    early = [(k, s) for k, s in enumerate(since) if s < (k + 1) * 0.001 - 1e-9]
    assert not early, early[:5]


def test_loss_is_seeded_and_binomial():
    n, p = 5000, 0.2
    counts = []
    for _ in range(2):
        sink = _Sink()
        link = LinkDirection(LinkParams(loss=p), sink, random.Random("7:1:in"))  # no thread: loss only
        for _ in range(n):
            link.submit(b"x")
        assert link.lost + link.passed == n and len(sink.got) == link.passed
        counts.append(link.lost)
    assert counts[0] == counts[1]  # same seed, same drops
    assert abs(counts[0] - n * p) <= 5 * math.sqrt(n * p * (1 - p))


# ---------------------------------------------------------------------------------------------
# the switch with emulated links, hosts in namespaces

LINKS = {1: "delay=20ms", 3: "rate=20mbit,backlog=1s", 4: "loss=0.2"}  # ports 2 and 5: plain

RECEIVER = (
    r"""
import json, socket, struct, sys, time
n, timeout = int(sys.argv[1]), float(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind(("0.0.0.0", %d))
print("ready", flush=True)
got = []
deadline = time.time() + timeout
while len(got) < n:
    left = deadline - time.time() if not got else 1.0
    if left <= 0:
        break
    s.settimeout(left)
    try:
        data = s.recv(65536)
    except socket.timeout:
        break
    now = time.time()
    sent, seq = struct.unpack("!dI", data[:12])
    got.append((now, now - sent, len(data), seq))
print(json.dumps(got))
"""
    % UDP_PORT
)

SENDER = (
    r"""
import socket, struct, sys, time
dst, n, size, per_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
t0 = time.monotonic()
for i in range(n):
    target = t0 + i / per_ms / 1000.0
    while time.monotonic() < target:
        time.sleep(max(0.0, min(target - time.monotonic(), 0.002)))
    s.sendto(struct.pack("!dI", time.time(), i).ljust(size, b"."), (dst, %d))
"""
    % UDP_PORT
)


def _install_routes(grpc_port: int, hosts, tmp_path: Path) -> None:
    import p4runtime_sh.shell as sh

    from p4compiler.p4info import build_p4info, p4info_to_text
    from p4compiler.python_backend import compile_file

    p4info = tmp_path / "p4info.txt"
    p4info.write_text(p4info_to_text(build_p4info(compile_file(str(PROGRAM)).info)))
    with contextlib.redirect_stdout(io.StringIO()):
        sh.setup(
            device_id=1,
            grpc_addr=f"127.0.0.1:{grpc_port}",
            election_id=(0, 1),
            config=sh.FwdPipeConfig(str(p4info), str(PROGRAM)),
        )
        try:
            for n, h in enumerate(hosts, start=1):
                te = sh.TableEntry("RouterIngress.ipv4_lpm")(action="RouterIngress.set_nhop")
                te.match["hdr.ipv4.dst"] = f"{h.ip}/32"
                te.action["dst_mac"] = h.mac
                te.action["src_mac"] = GW_MAC
                te.action["port"] = str(n)
                te.insert()
        finally:
            sh.teardown()


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    from topologies.netns import create_routed_host, netns_unavailable

    reason = netns_unavailable()
    if reason:
        pytest.skip(reason)
    hosts = []
    proc = None
    try:
        for n in range(1, 6):
            hosts.append(create_routed_host(f"10.0.{n}.{n}/24", f"10.0.{n}.254", GW_MAC, prefix="tn"))
        argv = [
            sys.executable,
            "-m",
            "softswitch",
            "--grpc-addr",
            "127.0.0.1:0",
            "--p4",
            str(PROGRAM),
            "--loss-seed",
            "11",
        ]
        for n, h in enumerate(hosts, start=1):
            argv += ["-i", f"{n}@{h.pair.host_if}"]
        for port, spec in LINKS.items():
            argv += ["--netem", f"{port}:{spec}"]
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        first = proc.stdout.readline()
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", first)
        assert m, first + (proc.stderr.read() if proc.poll() is not None else "")
        assert "softswitch running" in proc.stdout.readline()
        described = [proc.stdout.readline() for _ in LINKS]
        assert "port 1 emulates delay 20ms in each direction" in described[0], described
        _install_routes(int(m.group(1)), hosts, tmp_path_factory.mktemp("netem"))
        yield hosts, proc
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
        for h in hosts:
            h.delete()


def _transfer(src, dst, n: int, size: int = 64, per_ms: float = 1.0, timeout: float = 10.0):
    """Send n datagrams of `size` bytes from host src to host dst at per_ms datagrams per ms;
    returns [(arrival time, one-way delay, payload bytes, sequence number), ...] as received."""
    rx = dst.ns.popen([sys.executable, "-c", RECEIVER, str(n), str(timeout)])
    try:
        assert rx.stdout.readline().strip() == "ready", rx.stderr.read() if rx.poll() is not None else ""
        src.ns.run([sys.executable, "-c", SENDER, dst.ip, str(n), str(size), str(per_ms)], timeout=60)
        out, err = rx.communicate(timeout=timeout + 30)
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.communicate()
    assert rx.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.netns
def test_delay_is_added_in_each_direction_of_the_port(net):
    hosts, _ = net
    h1, h2, _, _, h5 = hosts
    plain = [d for _, d, _, _ in _transfer(h2, h5, 30, per_ms=0.1)]  # ports 2 -> 5: no emulation
    into = [d for _, d, _, _ in _transfer(h1, h2, 30, per_ms=0.1)]  # received on port 1
    out = [d for _, d, _, _ in _transfer(h2, h1, 30, per_ms=0.1)]  # sent out of port 1
    assert len(plain) == len(into) == len(out) == 30
    print(
        f"one-way delay median: plain {statistics.median(plain) * 1e3:.2f} ms, "
        f"into port 1 {statistics.median(into) * 1e3:.2f} ms, "
        f"out of port 1 {statistics.median(out) * 1e3:.2f} ms"
    )
    assert min(into) >= 0.0195 and min(out) >= 0.0195  # never less than the 20 ms (0.5 ms clock slack)
    assert statistics.median(into) < 0.06 and statistics.median(out) < 0.06
    assert statistics.median(plain) < 0.01  # much lower without the emulation


@pytest.mark.netns
def test_rate_limits_a_saturating_burst(net):
    hosts, _ = net
    h2, h3, h5 = hosts[1], hosts[2], hosts[4]

    def rate_of(got) -> float:
        times = [t for t, _, _, _ in got]
        return sum((b + HEADERS) * 8 for _, _, b, _ in got[1:]) / (times[-1] - times[0])

    size, n, per_ms = 1400, 600, 3.5  # ~40 Mbit/s offered
    # the same burst through an unshaped port (2 -> 5): what sender and switch manage without
    # the limiter; it must be well above the limit, or the shaped rate below would prove nothing
    offered = rate_of(_transfer(h2, h5, n, size=size, per_ms=per_ms))
    got = _transfer(h2, h3, n, size=size, per_ms=per_ms)  # into the 20 Mbit/s port
    assert len(got) > 300
    rate = rate_of(got)
    print(
        f"measured {rate / 1e6:.1f} Mbit/s through rate=20mbit ({len(got)} of {n} frames); "
        f"{offered / 1e6:.1f} Mbit/s through an unshaped port"
    )
    assert offered >= 1.4 * 20e6, f"only {offered / 1e6:.1f} Mbit/s without a limit: cannot test one"
    assert rate == pytest.approx(20e6, rel=0.3)


@pytest.mark.netns
def test_loss_drops_about_the_given_share_each_way(net):
    hosts, _ = net
    h2, h4 = hosts[1], hosts[3]
    n, p = 500, 0.2
    bound = 5 * math.sqrt(n * p * (1 - p))  # 5 standard deviations of the binomial: ~45 frames
    for src, dst in ((h4, h2), (h2, h4)):  # received on port 4, then sent out of it
        got = _transfer(src, dst, n, per_ms=2.0, timeout=5.0)
        lost = n - len(got)
        print(f"{src.ip} -> {dst.ip}: lost {lost} of {n} through loss=0.2")
        assert abs(lost - n * p) <= bound, lost
