"""Port back ends of the software switch: where frames enter and leave the pipeline.

The switch binds port numbers to back ends the way bmv2 does with `-i 1@veth1`:

    ports = PortSet.from_specs(["1@veth1", "2@veth2"])
    ports.start(lambda port_no, frame: switch.process(port_no, frame))
    ports.send(2, frame_out)      # never raises: unknown ports and send errors are counted
    ports.close()                 # stops every receive thread, never hangs

Back ends:
- `InProcessPort`: an in-memory port for tests (`inject` toward the switch, `recv` what it sent).
- `AfPacketPort`: a Linux network interface through an AF_PACKET raw socket (veth, real NIC).

Every port delivers received frames to a callback from one receive thread per port; the
thread waits with poll() on the port and on a wake-up pipe, so `close()` returns at once.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import queue
import re
import select
import socket
import struct
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping

log = logging.getLogger(__name__)

FrameCallback = Callable[[bytes], None]
PortHandler = Callable[[int, bytes], None]

MAX_PORT = 511  # v1model ports are bit<9>
IFNAMSIZ = 16  # Linux interface names are at most 15 characters plus NUL
# Largest frame we read in one go. Jumbo frames (MTU 9216) fit easily; the extra room is for
# veth/GSO super-frames, which the kernel hands to AF_PACKET unsegmented when offloads are on.
RX_BUFFER = 65536
_POLL_INTERVAL_S = 0.5  # safety net only: close() wakes the receive thread through the pipe
# Most frames one read_frames call takes from an AF_PACKET socket before the pipeline runs them.
# Draining until the socket was empty never ended under a flood faster than Python reads (the
# frames piled up in memory and none was forwarded: `make bench` runs 9-11 recorded 0 packets/s
# against ~300k offered); with a bound the pipeline runs every batch and the kernel drops what
# the socket buffer cannot hold, as the native data path does (IO_BATCH).
RX_BATCH = 64

# Linux constants (not all are exported by the socket module).
ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_IGNORE_OUTGOING = 23  # Linux >= 4.20; we also filter on pkttype for older kernels
PACKET_OUTGOING = 4  # pkttype in the recvfrom address: a frame this host transmitted
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1

_IFNAME_RE = re.compile(r"^[^\s/:]{1,15}$")


class PortError(OSError):
    """A port that cannot be opened or used (missing interface, no permission, ...)."""


class Port(ABC):
    """One switch port. Subclasses provide `send` and `read_frames`; the base runs the receive thread.

    Counters are plain ints updated from the port's own threads; they are statistics, exact
    enough under the GIL, not synchronisation.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.rx_frames = 0
        self.tx_frames = 0
        self.rx_dropped = 0  # frames we could not deliver (too big, callback raised)
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    @abstractmethod
    def send(self, data: bytes) -> None:
        """Transmit one frame out of the switch through this port."""

    @abstractmethod
    def read_frames(self, timeout: float) -> list[bytes]:
        """Wait up to `timeout` seconds for frames toward the switch; [] on timeout or when closed."""

    def start(self, callback: FrameCallback) -> None:
        """Deliver every received frame to `callback(frame)` from a new receive thread."""
        if self.closed:
            raise PortError(f"port {self.name!r} is closed")
        if self._thread is not None:
            raise RuntimeError(f"port {self.name!r} is already receiving")
        self._thread = threading.Thread(
            target=self._rx_loop, args=(callback,), name=f"port-rx-{self.name}", daemon=True
        )
        self._thread.start()

    def _rx_loop(self, callback: FrameCallback) -> None:
        while not self._closed.is_set():
            try:
                frames = self.read_frames(_POLL_INTERVAL_S)
            except (OSError, ValueError):
                if self._closed.is_set():  # the descriptor went away under us during close()
                    break
                log.exception("port %s: receive failed; stopping its receive thread", self.name)
                break
            for frame in frames:
                self.rx_frames += 1
                try:
                    callback(frame)
                except Exception:  # a bad packet must not take the port down
                    self.rx_dropped += 1
                    log.exception("port %s: frame handler raised; frame dropped", self.name)

    def close(self) -> None:
        """Stop the receive thread and release the back end. Idempotent."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._wake()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)
            if thread.is_alive():  # should not happen; the pipe wakes it
                log.warning("port %s: receive thread did not stop within 5 s", self.name)
        self._release()

    def _wake(self) -> None:  # noqa: B027 - optional hook, most back ends need it
        """Make a blocked `read_frames` return (called once by close())."""

    def _release(self) -> None:  # noqa: B027 - optional hook
        """Free descriptors after the receive thread has stopped."""

    def __enter__(self) -> Port:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"{type(self).__name__}({self.name!r}, {state})"


class InProcessPort(Port):
    """An in-memory port for tests: `inject` a frame toward the switch, `recv` what the switch sent."""

    def __init__(self, name: str = "inproc") -> None:
        super().__init__(name)
        self._to_switch: queue.Queue[bytes | None] = queue.Queue()
        self._from_switch: queue.Queue[bytes] = queue.Queue()

    def inject(self, data: bytes) -> None:
        """Put a frame on the wire toward the switch (as if it arrived on this port)."""
        if self.closed:
            raise PortError(f"port {self.name!r} is closed")
        self._to_switch.put(bytes(data))

    def send(self, data: bytes) -> None:
        if self.closed:  # like a link that is down: the frame is lost
            return
        self.tx_frames += 1
        self._from_switch.put(bytes(data))

    def recv(self, timeout: float | None = None) -> bytes | None:
        """The next frame the switch sent out of this port, or None after `timeout` seconds."""
        try:
            return self._from_switch.get(timeout=timeout) if timeout != 0 else self._from_switch.get_nowait()
        except queue.Empty:
            return None

    def drain(self) -> list[bytes]:
        """Every frame sent so far and not yet read, without waiting."""
        out = []
        while True:
            try:
                out.append(self._from_switch.get_nowait())
            except queue.Empty:
                return out

    def read_frames(self, timeout: float) -> list[bytes]:
        try:
            first = self._to_switch.get(timeout=timeout)
        except queue.Empty:
            return []
        frames = []
        item: bytes | None = first
        while item is not None:  # None is close()'s wake-up marker
            frames.append(item)
            try:
                item = self._to_switch.get_nowait()
            except queue.Empty:
                break
        return frames

    def _wake(self) -> None:
        self._to_switch.put(None)


def _check_ifname(ifname: str) -> None:
    if not isinstance(ifname, str) or not _IFNAME_RE.match(ifname):
        raise ValueError(
            f"invalid interface name {ifname!r}: 1 to {IFNAMSIZ - 1} characters, no spaces, '/' or ':'"
        )


def _set_if_up(ifname: str) -> None:
    """Bring the interface administratively up (`ip link set IF up`)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifr = struct.pack("16sH", ifname.encode(), 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, ifr)[:18])[1]
        if not flags & IFF_UP:
            fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH", ifname.encode(), flags | IFF_UP))


# Receive buffer of each port's socket. The default (net.core.rmem_default, ~208 KiB) holds ~90
# full-size frames: a replay PUSH of 32 Atari-sized items is ~100 datagrams arriving at once,
# and the busy Python pipeline drops the burst's tail (then the client's resend, at the same
# place). 8 MiB absorbs such bursts.
PORT_RCVBUF = 8 << 20
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)


def _grow_rcvbuf(sock: socket.socket, nbytes: int) -> None:
    """SO_RCVBUFFORCE (root: above net.core.rmem_max), else SO_RCVBUF (capped by rmem_max)."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, nbytes)
    except OSError:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, nbytes)


class AfPacketPort(Port):
    """A network interface as a switch port, through an AF_PACKET raw socket (like bmv2's `1@veth1`).

    Opening the port brings the interface up and puts it in promiscuous mode (through a socket
    membership, so the kernel undoes it when the socket closes), so frames for any MAC address
    are seen. Frames this host transmits on the interface, our own included, are not delivered.
    """

    def __init__(self, ifname: str, *, promisc: bool = True, set_up: bool = True) -> None:
        _check_ifname(ifname)
        super().__init__(ifname)
        self.ifname = ifname
        try:
            self.ifindex = socket.if_nametoindex(ifname)
        except OSError:
            raise PortError(
                errno.ENODEV, f"network interface {ifname!r} does not exist (see `ip link`)"
            ) from None
        try:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        except PermissionError:
            raise PortError(
                errno.EPERM,
                f"no permission to open a raw socket on {ifname!r}: AF_PACKET needs root or CAP_NET_RAW",
            ) from None
        self._sock = sock
        self._wake_r, self._wake_w = os.pipe()
        try:
            sock.bind((ifname, ETH_P_ALL))
            if set_up:
                _set_if_up(ifname)
            if promisc:
                mreq = struct.pack("iHH8s", self.ifindex, PACKET_MR_PROMISC, 0, b"")
                sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
            _grow_rcvbuf(sock, PORT_RCVBUF)
            try:  # spares us copies of outgoing frames; pkttype filtering below stays as the guarantee
                sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            except OSError:
                pass
            sock.setblocking(False)
        except PermissionError:
            self._release()
            raise PortError(
                errno.EPERM, f"no permission to configure {ifname!r}: needs root or CAP_NET_ADMIN"
            ) from None
        except OSError as e:
            self._release()
            raise PortError(e.errno, f"cannot open port on {ifname!r}: {e.strerror or e}") from None
        self._poll = select.poll()
        self._poll.register(sock.fileno(), select.POLLIN)
        self._poll.register(self._wake_r, select.POLLIN)
        self._buf = bytearray(RX_BUFFER)
        self._view = memoryview(self._buf)

    def fileno(self) -> int:
        return self._sock.fileno()

    def send(self, data: bytes) -> None:
        """Transmit one Ethernet frame. Raises OSError (e.g. EMSGSIZE above the MTU); PortSet counts it."""
        self._sock.send(data)
        self.tx_frames += 1

    def read_frames(self, timeout: float) -> list[bytes]:
        if self._closed.is_set():
            return []
        events = self._poll.poll(timeout * 1000.0)
        if not events or self._closed.is_set():
            return []
        frames = []
        while len(frames) < RX_BATCH:  # one wake-up serves a burst, up to a batch of it
            try:
                n, addr = self._sock.recvfrom_into(self._buf, RX_BUFFER, socket.MSG_TRUNC)
            except (BlockingIOError, InterruptedError):
                return frames
            if addr[2] == PACKET_OUTGOING:
                continue
            if n > RX_BUFFER:  # MSG_TRUNC reports the real length of a frame we could not hold
                self.rx_dropped += 1
                log.warning("port %s: dropped a %d-byte frame (buffer %d)", self.name, n, RX_BUFFER)
                continue
            frames.append(bytes(self._view[:n]))
        return frames

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def _release(self) -> None:
        for closer in (self._sock.close, lambda: os.close(self._wake_r), lambda: os.close(self._wake_w)):
            try:
                closer()
            except OSError:
                pass


def parse_port_spec(spec: str) -> tuple[int, str]:
    """Parse bmv2's `-i` syntax, `PORT@IFNAME` (e.g. `1@veth1`), into (port number, interface)."""
    if not isinstance(spec, str) or spec.count("@") != 1:
        raise ValueError(f"bad port spec {spec!r}: expected PORT@IFNAME, e.g. 1@veth1")
    num, ifname = (part.strip() for part in spec.split("@"))
    if not num.isdigit():
        raise ValueError(f"bad port spec {spec!r}: port number {num!r} is not a non-negative integer")
    port_no = int(num)
    if port_no > MAX_PORT:
        raise ValueError(f"bad port spec {spec!r}: port {port_no} is out of range 0..{MAX_PORT} (bit<9>)")
    try:
        _check_ifname(ifname)
    except ValueError as e:
        raise ValueError(f"bad port spec {spec!r}: {e}") from None
    return port_no, ifname


def parse_port_specs(specs: Iterable[str]) -> list[tuple[int, str]]:
    """Parse several `PORT@IFNAME` specs; a port or an interface given twice is an error."""
    parsed: list[tuple[int, str]] = []
    for spec in specs:
        port_no, ifname = parse_port_spec(spec)
        if any(p == port_no for p, _ in parsed):
            raise ValueError(f"port {port_no} is given twice (in {spec!r})")
        if any(i == ifname for _, i in parsed):
            raise ValueError(f"interface {ifname!r} is bound to two ports (in {spec!r})")
        parsed.append((port_no, ifname))
    return parsed


class PortSet:
    """The switch's ports by number. The data path (`send`, receive threads) never raises."""

    def __init__(self, ports: Mapping[int, Port] | None = None) -> None:
        self._ports: dict[int, Port] = {}
        self._handler: PortHandler | None = None
        self.dropped_unknown_port = 0  # send() to a port number nobody bound
        self.tx_errors = 0  # send() that the back end refused (link down, frame too big, ...)
        for port_no, port in (ports or {}).items():
            self.add(port_no, port)

    @classmethod
    def from_specs(
        cls, specs: Iterable[str], port_factory: Callable[[str], Port] = AfPacketPort
    ) -> PortSet:
        """Open one port per `PORT@IFNAME` spec; on any error the ports opened so far are closed."""
        parsed = parse_port_specs(specs)
        ps = cls()
        try:
            for port_no, ifname in parsed:
                ps.add(port_no, port_factory(ifname))
        except BaseException:
            ps.close()
            raise
        return ps

    def add(self, port_no: int, port: Port) -> None:
        """Bind `port` to `port_no`; it starts receiving now if the set is already started."""
        if not isinstance(port_no, int) or not 0 <= port_no <= MAX_PORT:
            raise ValueError(f"port number {port_no!r} is out of range 0..{MAX_PORT} (bit<9>)")
        if port_no in self._ports:
            raise ValueError(f"port {port_no} is already bound to {self._ports[port_no]!r}")
        self._ports[port_no] = port
        if self._handler is not None:
            self._start_one(port_no, port)

    def start(self, handler: PortHandler) -> None:
        """Start one receive thread per port, each calling `handler(port_no, frame)`."""
        if self._handler is not None:
            raise RuntimeError("PortSet is already started")
        self._handler = handler
        for port_no, port in self._ports.items():
            self._start_one(port_no, port)

    def _start_one(self, port_no: int, port: Port) -> None:
        handler = self._handler
        assert handler is not None
        port.start(lambda frame: handler(port_no, frame))

    def send(self, port_no: int, data: bytes) -> bool:
        """Transmit on `port_no`; False (and a counter) when the port is unknown or the send fails."""
        port = self._ports.get(port_no)
        if port is None:
            self.dropped_unknown_port += 1
            return False
        try:
            port.send(data)
        except (OSError, ValueError) as e:
            self.tx_errors += 1
            log.debug("port %d (%s): send failed: %s", port_no, port.name, e)
            return False
        return True

    def close(self) -> None:
        """Stop all receive threads and close all ports. Idempotent."""
        for port in self._ports.values():
            port.close()

    def __getitem__(self, port_no: int) -> Port:
        return self._ports[port_no]

    def __contains__(self, port_no: object) -> bool:
        return port_no in self._ports

    def __len__(self) -> int:
        return len(self._ports)

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._ports))

    def items(self) -> list[tuple[int, Port]]:
        return sorted(self._ports.items())

    def __enter__(self) -> PortSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
