"""Switch port back ends: in-process ports, AF_PACKET ports over veth pairs, PortSet."""

from __future__ import annotations

import os
import queue
import socket
import sys
import time
from pathlib import Path

import pytest

from softswitch.ports import (
    RX_BATCH,
    AfPacketPort,
    InProcessPort,
    Port,
    PortError,
    PortSet,
    parse_port_spec,
)
from topologies.netns import NetNS, VethPair, create_veth_pair

ETHERTYPE = 0x88B5  # IEEE "local experimental": nothing else on the veth uses it
IFF_UP, IFF_PROMISC = 0x1, 0x100


def frame(tag: bytes, dst: str = "02:00:00:00:00:02", size: int | None = None) -> bytes:
    """An Ethernet frame of our test ethertype carrying `tag` (padded to `size` bytes if given)."""
    hdr = bytes.fromhex(dst.replace(":", "")) + bytes.fromhex("020000000001") + ETHERTYPE.to_bytes(2, "big")
    body = tag if size is None else tag + bytes(i & 0xFF for i in range(size - 14 - len(tag)))
    return hdr + body


def ours(f: bytes) -> bool:
    return len(f) >= 14 and f[12:14] == ETHERTYPE.to_bytes(2, "big")


class Collector:
    """A thread-safe frame callback that tests can wait on."""

    def __init__(self) -> None:
        self.q: queue.Queue[tuple[int, bytes]] = queue.Queue()

    def __call__(self, *args: object) -> None:
        port_no, data = args if len(args) == 2 else (-1, args[0])
        self.q.put((port_no, data))  # type: ignore[arg-type]

    def wait_for(self, n: int, timeout: float = 5.0, pred=lambda f: True) -> list[tuple[int, bytes]]:
        got: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + timeout
        while len(got) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                item = self.q.get(timeout=left)
            except queue.Empty:
                break
            if pred(item[1]):
                got.append(item)
        return got


# ---------------------------------------------------------------- InProcessPort


def test_inprocess_inject_reaches_callback_in_order() -> None:
    port, col = InProcessPort("p1"), Collector()
    port.start(col)
    try:
        for i in range(5):
            port.inject(frame(bytes([i])))
        got = col.wait_for(5)
        assert [d for _, d in got] == [frame(bytes([i])) for i in range(5)]
        assert port.rx_frames == 5
    finally:
        port.close()


def test_inprocess_send_is_readable_with_recv_and_drain() -> None:
    port = InProcessPort()
    assert port.recv(timeout=0.05) is None
    port.send(b"a" * 20)
    port.send(b"b" * 20)
    assert port.recv(timeout=1) == b"a" * 20
    assert port.drain() == [b"b" * 20]
    assert port.recv(timeout=0) is None
    assert port.tx_frames == 2


def test_inprocess_close_is_fast_and_final() -> None:
    port = InProcessPort()
    port.start(Collector())
    t0 = time.monotonic()
    port.close()
    assert time.monotonic() - t0 < 1.0
    assert port._thread is not None and not port._thread.is_alive()
    with pytest.raises(PortError, match="closed"):
        port.inject(b"x" * 14)
    port.send(b"y" * 14)  # a closed link loses frames, it does not raise
    assert port.recv(timeout=0) is None
    port.close()  # idempotent


def test_callback_exception_does_not_stop_the_port() -> None:
    port, col = InProcessPort(), Collector()

    def handler(f: bytes) -> None:
        if f == b"bad":
            raise RuntimeError("boom")
        col(f)

    port.start(handler)
    try:
        port.inject(b"bad")
        port.inject(b"good")
        assert [d for _, d in col.wait_for(1)] == [b"good"]
        assert port.rx_dropped == 1
    finally:
        port.close()


# ---------------------------------------------------------------- spec parsing and PortSet


@pytest.mark.parametrize(
    "spec, expected",
    [("1@veth1", (1, "veth1")), ("0@eth0", (0, "eth0")), ("511@a", (511, "a")), (" 7 @ p7 ", (7, "p7"))],
)
def test_parse_port_spec_accepts(spec: str, expected: tuple[int, str]) -> None:
    assert parse_port_spec(spec) == expected


@pytest.mark.parametrize(
    "spec, message",
    [
        ("veth1", "expected PORT@IFNAME"),
        ("1@veth1@x", "expected PORT@IFNAME"),
        ("@veth1", "not a non-negative integer"),
        ("x@veth1", "not a non-negative integer"),
        ("-1@veth1", "not a non-negative integer"),
        ("512@veth1", "out of range 0..511"),
        ("1@", "invalid interface name"),
        ("1@a" + "b" * 15, "invalid interface name"),
        ("1@a b", "invalid interface name"),
        ("1@a/b", "invalid interface name"),
    ],
)
def test_parse_port_spec_rejects(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as ei:
        parse_port_spec(spec)
    assert repr(spec) in str(ei.value)  # the message names the spec the user typed


def test_from_specs_binds_numbers_to_ports() -> None:
    ps = PortSet.from_specs(["1@a1", "5@a5"], port_factory=InProcessPort)
    try:
        assert list(ps) == [1, 5] and len(ps) == 2 and 5 in ps and 2 not in ps
        assert ps[5].name == "a5"
    finally:
        ps.close()


@pytest.mark.parametrize("specs, message", [(["1@a", "1@b"], "port 1 is given twice"),
                                            (["1@a", "2@a"], "bound to two ports")])
def test_from_specs_rejects_duplicates(specs: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PortSet.from_specs(specs, port_factory=InProcessPort)


def test_from_specs_closes_opened_ports_when_one_fails() -> None:
    opened: list[InProcessPort] = []

    def factory(name: str) -> Port:
        if name == "bad":
            raise PortError(19, "no such interface")
        opened.append(InProcessPort(name))
        return opened[-1]

    with pytest.raises(PortError):
        PortSet.from_specs(["1@good", "2@bad"], port_factory=factory)
    assert [p.closed for p in opened] == [True]


def test_portset_delivers_port_number_and_frame() -> None:
    p1, p2, col = InProcessPort(), InProcessPort(), Collector()
    with PortSet({1: p1, 2: p2}) as ps:
        ps.start(col)
        p2.inject(b"from-2" * 3)
        p1.inject(b"from-1" * 3)
        got = sorted(col.wait_for(2))
        assert got == [(1, b"from-1" * 3), (2, b"from-2" * 3)]
        # a port added after start receives too
        p9 = InProcessPort()
        ps.add(9, p9)
        p9.inject(b"late")
        assert col.wait_for(1) == [(9, b"late")]
    assert p1.closed and p2.closed and p9.closed


def test_portset_send_never_raises() -> None:
    class Broken(InProcessPort):
        def send(self, data: bytes) -> None:
            raise OSError(90, "Message too long")

    out = InProcessPort()
    with PortSet({1: out, 2: Broken()}) as ps:
        assert ps.send(1, b"ok" * 10) is True
        assert out.recv(timeout=1) == b"ok" * 10
        assert ps.send(3, b"nobody") is False
        assert ps.send(3, b"nobody") is False
        assert ps.dropped_unknown_port == 2
        assert ps.send(2, b"too big") is False
        assert ps.tx_errors == 1


def test_portset_add_validates() -> None:
    ps = PortSet({1: InProcessPort()})
    with pytest.raises(ValueError, match="already bound"):
        ps.add(1, InProcessPort())
    with pytest.raises(ValueError, match="out of range"):
        ps.add(512, InProcessPort())
    ps.close()


def test_portset_close_does_not_hang() -> None:
    ports = {i: InProcessPort() for i in range(8)}
    ps = PortSet(ports)
    ps.start(Collector())
    t0 = time.monotonic()
    ps.close()
    assert time.monotonic() - t0 < 1.0
    assert all(not p._thread.is_alive() for p in ports.values())  # type: ignore[union-attr]


# ---------------------------------------------------------------- AfPacketPort errors (no root needed)


def test_afpacket_missing_interface_is_a_clear_error() -> None:
    with pytest.raises(PortError, match="'nosuchif0' does not exist"):
        AfPacketPort("nosuchif0")


def test_afpacket_bad_interface_name() -> None:
    with pytest.raises(ValueError, match="invalid interface name"):
        AfPacketPort("x" * 16)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to an unprivileged user")
def test_afpacket_without_permission_is_a_clear_error() -> None:
    # Fork and drop to `nobody` in the child: the module is already imported, so the child
    # needs no file access, only the socket call that must fail.
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            try:
                AfPacketPort("lo")
                msg = "opened"
            except PortError as e:
                msg = str(e)
            except BaseException as e:  # report, never raise inside the forked pytest
                msg = f"other: {e!r}"
            os.write(w, msg.encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        msg = f.read().decode()
    os.waitpid(pid, 0)
    assert "CAP_NET_RAW" in msg and "'lo'" in msg, msg


# ---------------------------------------------------------------- AfPacketPort over veth (root + netns)

# Sends the hex frames given on the command line out of an interface (runs inside the namespace).
NS_SEND = """
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
for h in sys.argv[2:]:
    s.send(bytes.fromhex(h))
"""

# Prints "ready", then each received frame of the test ethertype as hex (runs inside the namespace).
NS_RECV = """
import select, socket, sys, time
ifname, count, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(%d))
s.bind((ifname, %d))
print("ready", flush=True)
deadline = time.monotonic() + timeout
got = 0
while got < count and time.monotonic() < deadline:
    if not select.select([s], [], [], max(0.0, deadline - time.monotonic()))[0]:
        break
    data, addr = s.recvfrom(65536)
    if addr[2] != socket.PACKET_OUTGOING:
        print(data.hex(), flush=True)
        got += 1
""" % (ETHERTYPE, ETHERTYPE)


def ns_send(ns: NetNS, ifname: str, *frames: bytes) -> None:
    ns.run([sys.executable, "-c", NS_SEND, ifname, *(f.hex() for f in frames)])


class NsReceiver:
    """A receiver process inside the namespace; `frames()` waits for it to finish."""

    def __init__(self, ns: NetNS, ifname: str, count: int, timeout: float = 5.0) -> None:
        self.proc = ns.popen([sys.executable, "-c", NS_RECV, ifname, str(count), str(timeout)])
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.proc.kill()
            raise RuntimeError(f"receiver did not start: {line!r} {self.proc.stderr.read()!r}")  # type: ignore[union-attr]

    def frames(self) -> list[bytes]:
        out, err = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0, err
        return [bytes.fromhex(h) for h in out.split()]


def sysfs_flags(ifname: str) -> int:
    with open(f"/sys/class/net/{ifname}/flags") as f:
        return int(f.read(), 16)


@pytest.mark.netns
def test_frames_from_namespace_reach_the_callback(veth_ns: VethPair) -> None:
    col = Collector()
    with AfPacketPort(veth_ns.host_if) as port:
        port.start(col)
        sent = [
            frame(b"unicast-other-mac", dst="02:aa:bb:cc:dd:ee"),  # not the port's MAC: needs promisc on NICs
            frame(b"broadcast", dst="ff:ff:ff:ff:ff:ff"),
            frame(b"third"),
        ]
        ns_send(veth_ns.ns, veth_ns.ns_if, *sent)
        got = [d for _, d in col.wait_for(3, pred=ours)]
    assert got == sent


@pytest.mark.netns
def test_a_read_takes_at_most_a_batch_and_loses_nothing(veth_ns: VethPair) -> None:
    """read_frames returns at most RX_BATCH frames, however many are queued, so that the
    pipeline runs between batches: draining until the socket was empty never returned under a
    flood. The rest stay queued in the kernel and come, in order, with the next reads."""
    with AfPacketPort(veth_ns.host_if) as port:  # not started: the test reads itself
        sent = [frame(b"burst-%03d" % i) for i in range(RX_BATCH + 20)]
        ns_send(veth_ns.ns, veth_ns.ns_if, *sent)  # all queued on the port's socket when it returns
        reads = []
        deadline = time.monotonic() + 10
        while sum(len([f for f in r if ours(f)]) for r in reads) < len(sent) and time.monotonic() < deadline:
            reads.append(port.read_frames(0.5))
    assert len(reads[0]) == RX_BATCH
    assert all(len(r) <= RX_BATCH for r in reads)
    assert [f for r in reads for f in r if ours(f)] == sent


@pytest.mark.netns
def test_frames_sent_by_the_port_arrive_in_the_namespace(veth_ns: VethPair) -> None:
    with AfPacketPort(veth_ns.host_if) as port:
        rx = NsReceiver(veth_ns.ns, veth_ns.ns_if, count=2)
        sent = [frame(b"to-namespace-1"), frame(b"to-namespace-2", dst="ff:ff:ff:ff:ff:ff")]
        for f in sent:
            port.send(f)
        assert rx.frames() == sent
        assert port.tx_frames == 2


@pytest.mark.netns
def test_port_does_not_see_frames_transmitted_on_its_interface(veth_ns: VethPair) -> None:
    col = Collector()
    with AfPacketPort(veth_ns.host_if) as port:
        port.start(col)
        port.send(frame(b"own"))
        # Another sender on the same interface: its frames are outgoing (PACKET_OUTGOING) too.
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as other:
            other.bind((veth_ns.host_if, 0))
            other.send(frame(b"other-local-sender"))
        ns_send(veth_ns.ns, veth_ns.ns_if, frame(b"incoming"))
        # The incoming frame was sent last: everything of ours seen until it arrives, plus a short
        # grace period, must be just that frame.
        seen: list[bytes] = []
        deadline = time.monotonic() + 5.0
        while frame(b"incoming") not in seen and time.monotonic() < deadline:
            seen += [d for _, d in col.wait_for(1, timeout=0.5, pred=ours)]
        seen += [d for _, d in col.wait_for(10, timeout=0.3, pred=ours)]
    assert seen == [frame(b"incoming")]


@pytest.mark.netns
def test_open_brings_interface_up_and_promiscuous_close_undoes_promisc(veth_ns: VethPair) -> None:
    from topologies.netns import ip

    ip("link", "set", veth_ns.host_if, "down")
    assert not sysfs_flags(veth_ns.host_if) & IFF_UP
    port = AfPacketPort(veth_ns.host_if)
    try:
        flags = sysfs_flags(veth_ns.host_if)
        assert flags & IFF_UP and flags & IFF_PROMISC
    finally:
        port.close()
    assert not sysfs_flags(veth_ns.host_if) & IFF_PROMISC


@pytest.mark.netns
def test_jumbo_frames_both_directions(netns: NetNS, request: pytest.FixtureRequest) -> None:
    pair = create_veth_pair(peer_ns=netns, mtu=9216)
    request.addfinalizer(pair.delete)
    big_in, big_out = frame(b"jumbo-in", size=9216 + 14), frame(b"jumbo-out", size=9216 + 14)
    col = Collector()
    with AfPacketPort(pair.host_if) as port:
        port.start(col)
        ns_send(netns, pair.ns_if, big_in)
        assert [d for _, d in col.wait_for(1, pred=ours)] == [big_in]
        rx = NsReceiver(netns, pair.ns_if, count=1)
        port.send(big_out)
        assert rx.frames() == [big_out]
        # Above the MTU the kernel refuses; PortSet turns that into a counted drop.
        with pytest.raises(OSError):
            port.send(frame(b"too-big", size=9216 + 14 + 100))


@pytest.mark.netns
def test_routed_host_mtu_on_both_ends() -> None:
    """create_routed_host(mtu=...) (star's links) sets the MTU on the host's end and the switch's."""
    from topologies.netns import create_routed_host

    host = create_routed_host("10.9.0.1/24", "10.9.0.254", "02:00:00:00:00:01", prefix="mt", mtu=9000)
    try:
        assert Path(f"/sys/class/net/{host.pair.host_if}/mtu").read_text().strip() == "9000"
        assert host.ns.run(["cat", f"/sys/class/net/{host.pair.ns_if}/mtu"]).stdout.strip() == "9000"
    finally:
        host.delete()


@pytest.mark.netns
def test_portset_over_veth_and_fast_close(veth_ns: VethPair) -> None:
    col = Collector()
    ps = PortSet.from_specs([f"3@{veth_ns.host_if}"])
    try:
        ps.start(col)
        ns_send(veth_ns.ns, veth_ns.ns_if, frame(b"via-portset"))
        assert col.wait_for(1, pred=ours) == [(3, frame(b"via-portset"))]
        assert ps.send(3, frame(b"x" * 9300)) is False and ps.tx_errors == 1  # above MTU 1500
    finally:
        t0 = time.monotonic()
        ps.close()
        assert time.monotonic() - t0 < 1.0
    assert not ps[3]._thread.is_alive()  # type: ignore[union-attr]


@pytest.mark.netns
def test_a_burst_larger_than_the_default_socket_buffer_is_not_dropped(veth_ns: VethPair) -> None:
    """400 full-size frames arrive while the port is not reading (a busy pipeline): the default
    receive buffer (~208 KiB, ~90 such frames) would drop most of them; the port's does not."""
    sent = [frame(b"burst-%03d" % i, size=1514) for i in range(400)]
    with AfPacketPort(veth_ns.host_if) as port:
        for i in range(0, len(sent), 100):  # several sender processes: argv stays short
            ns_send(veth_ns.ns, veth_ns.ns_if, *sent[i : i + 100])
        col = Collector()
        port.start(col)
        got = [d for _, d in col.wait_for(len(sent), pred=ours)]
    assert got == sent
