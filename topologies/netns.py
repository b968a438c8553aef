"""Network namespaces and veth pairs for test networks, always cleaned up.

Names carry this process's pid (in hex) so parallel test runs on one machine never clash, and
stay within Linux's 15-character interface-name limit. Everything created here is registered
for deletion at interpreter exit as well, as a second line of defence behind the fixtures'
finalizers (a test killed by pytest-timeout still runs atexit handlers). What a killed run
(SIGKILL) leaves behind is removed by the next run, whose pid check shows the owner is gone.

    if (reason := netns_unavailable()) is None:
        with namespace() as ns, veth_pair(peer_ns=ns) as v:
            ns.run(["ip", "addr"])
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

IFNAME_MAX = 15
_counter = itertools.count()
_lock = threading.Lock()
_created_ns: set[str] = set()
_created_links: set[str] = set()
_probe_result: list[str | None] = []  # memo: [reason] once probed


def unique_name(prefix: str) -> str:
    """A name like `<prefix><pid hex>x<n>` that is unique on this host and at most 15 characters."""
    with _lock:
        n = next(_counter)
    name = f"{prefix}{os.getpid():x}x{n:x}"
    if len(name) > IFNAME_MAX:
        raise ValueError(f"name {name!r} is longer than {IFNAME_MAX} characters; use a shorter prefix")
    return name


def _ip() -> str | None:
    return shutil.which("ip") or next((p for p in ("/usr/sbin/ip", "/sbin/ip") if os.path.exists(p)), None)


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `ip ARGS...`; on failure raise with ip's own message."""
    exe = _ip()
    if exe is None:
        raise RuntimeError("`ip` (iproute2) is not installed")
    res = subprocess.run([exe, *args], capture_output=True, text=True, timeout=30)
    if check and res.returncode != 0:
        raise RuntimeError(f"`ip {' '.join(args)}` failed: {res.stderr.strip() or res.stdout.strip()}")
    return res


def netns_unavailable() -> str | None:
    """Why namespace tests cannot run here (a skip reason), or None when they can."""
    if _probe_result:
        return _probe_result[0]
    reason: str | None = None
    if sys.platform != "linux":
        reason = "network namespaces need Linux"
    elif os.geteuid() != 0:
        reason = "network namespace tests need root (ip netns / veth / AF_PACKET)"
    elif _ip() is None:
        reason = "`ip` from iproute2 is not installed (make test installs it when run as root)"
    else:  # a container may refuse namespaces even to root: try once
        name = unique_name("prb")
        res = ip("netns", "add", name, check=False)
        if res.returncode != 0:
            reason = f"`ip netns add` is not permitted here: {res.stderr.strip()}"
        else:
            ip("netns", "del", name, check=False)
            cleanup_stale()
    _probe_result.append(reason)
    return reason


# this module's default names, and the topology launcher's (hosts tp/tph/tpn, trunks tqh/tqn)
_OUR_NAME = re.compile(r"^(?:ins|ivh|ivn|prb|tp|tph|tpn|tqh|tqn)([0-9a-f]+)x[0-9a-f]+$")
_STATE_DIRS = ("/run/innet-topologies", "/tmp/innet-topologies")  # topologies.launcher.state_dir()


def _kept_by_state_files() -> set[str]:
    """Names that a launcher's state file still lists: networks left up by `python -m topologies
    up` outlive their launcher's pid on purpose (`down` removes them). Also names of any other
    state (a run or build whose launcher died): `down`/the next launch removes those with the
    processes they record, which a blind sweep here would leave running."""
    import json
    import tempfile

    keep: set[str] = set()
    for d in {*_STATE_DIRS, os.path.join(tempfile.gettempdir(), "innet-topologies")}:
        try:
            files = [f for f in os.listdir(d) if f.endswith(".json")]
        except OSError:
            continue
        for f in files:
            try:
                with open(os.path.join(d, f)) as fh:
                    st = json.load(fh)
                keep.update(st.get("namespaces") or [])
                keep.update(st.get("veths") or [])
            except (OSError, ValueError, AttributeError, TypeError):
                continue
    return keep


def cleanup_stale() -> None:
    """Delete namespaces and veths that earlier, killed test runs or launchers left behind (their
    pid is gone), except those a topology state file lists (`up` networks; `down` owns them)."""
    keep = _kept_by_state_files()

    def stale(name: str) -> bool:
        m = _OUR_NAME.match(name)
        return bool(m) and name not in keep and not os.path.exists(f"/proc/{int(m.group(1), 16)}")

    for line in ip("-o", "link", "show", check=False).stdout.splitlines():
        parts = line.split(":", 2)  # "7: ivh1a2bx0@if6: <...>", or "@tqh1a2bx3" (peer in this ns)
        if len(parts) < 2:
            continue
        name, _, peer = parts[1].strip().partition("@")
        # a veth whose peer is kept (a trunk of an `up` network lists one end only) stays
        if stale(name) and peer not in keep:
            ip("link", "del", name, check=False)
    for line in ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if stale(name):
            ip("netns", "del", name, check=False)


@dataclass
class NetNS:
    """A named network namespace (`ip netns`); `run`/`popen` execute commands inside it."""

    name: str

    def cmd(self, argv: Sequence[str]) -> list[str]:
        return [_ip() or "ip", "netns", "exec", self.name, *argv]

    def run(
        self, argv: Sequence[str], timeout: float = 30, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(self.cmd(argv), capture_output=True, text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise RuntimeError(
                f"in netns {self.name}: {' '.join(argv)!r} exited {res.returncode}: {res.stderr.strip()}"
            )
        return res

    def python(self, code: str, timeout: float = 30, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a Python snippet inside the namespace with this interpreter (and its packages)."""
        return self.run([sys.executable, "-c", code], timeout=timeout, check=check)

    def popen(self, argv: Sequence[str], **kwargs: object) -> subprocess.Popen[str]:
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
        return subprocess.Popen(self.cmd(argv), text=True, **kwargs)  # type: ignore[call-overload]

    def delete(self) -> None:
        ip("netns", "del", self.name, check=False)
        with _lock:
            _created_ns.discard(self.name)


@dataclass
class VethPair:
    """Two ends of a veth cable: `host_if` stays in the root namespace, `ns_if` may live in `ns`."""

    host_if: str
    ns_if: str
    ns: NetNS | None

    def delete(self) -> None:
        # Deleting one end removes both; the peer vanishes with its namespace too.
        ip("link", "del", self.host_if, check=False)
        with _lock:
            _created_links.discard(self.host_if)


def create_namespace(prefix: str = "ins") -> NetNS:
    ns = NetNS(unique_name(prefix))
    ip("netns", "add", ns.name)
    with _lock:
        _created_ns.add(ns.name)
    ns.run(["ip", "link", "set", "lo", "up"])
    return ns


def create_veth_pair(
    peer_ns: NetNS | None = None, prefix: str = "iv", mtu: int | None = None, disable_offloads: bool = True,
    offloads: bool = False,
) -> VethPair:
    """A veth pair, both ends up, IPv6 off on the host end (no router/neighbour chatter on the port).

    With `disable_offloads` (ethtool required) checksum/segmentation offloads are turned off on
    both ends, so frames captured by AF_PACKET carry finished checksums and wire-sized lengths.
    With `offloads` they are turned on instead (checksum, scatter-gather, TSO, GSO, UDP
    segmentation; ethtool required): the hosts' kernels then pass TCP and UDP super-frames of up to
    64 KiB, for a switch whose ports run in offload mode (`python -m softswitch --offloads`).
    """
    if (offloads or disable_offloads) and not shutil.which("ethtool"):
        # left as the kernel makes them, a veth has TSO/GSO on: its host would hand the switch
        # super-frames that only a switch in offload mode can cut into wire frames
        raise RuntimeError("setting a veth's offloads needs ethtool (apt install ethtool; make installs it)")
    host_if, ns_if = unique_name(prefix + "h"), unique_name(prefix + "n")
    ip("link", "add", host_if, "type", "veth", "peer", "name", ns_if)
    with _lock:
        _created_links.add(host_if)
    pair = VethPair(host_if, ns_if, peer_ns)
    try:
        if peer_ns is not None:
            ip("link", "set", ns_if, "netns", peer_ns.name)
        _sysctl_ipv6_off(host_if, None)
        _sysctl_ipv6_off(ns_if, peer_ns)
        for ifname, ns in ((host_if, None), (ns_if, peer_ns)):
            argv = ["ip", "link", "set", ifname]
            if mtu is not None:
                argv += ["mtu", str(mtu)]
            _run_in(ns, [*argv, "up"])
            if offloads:
                _run_in(ns, ["ethtool", "-K", ifname, "tx", "on", "rx", "on", "sg", "on", "tso", "on",
                             "gso", "on", "tx-udp-segmentation", "on", "gro", "off"])
            elif disable_offloads:
                _run_in(ns, ["ethtool", "-K", ifname, "tx", "off", "rx", "off", "tso", "off",
                             "gso", "off", "gro", "off"], check=False)
    except BaseException:
        pair.delete()
        raise
    return pair


def _run_in(ns: NetNS | None, argv: list[str], check: bool = True) -> None:
    if ns is not None:
        ns.run(argv, check=check)
        return
    if argv[0] == "ip":
        ip(*argv[1:], check=check)
    else:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        if check and res.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)!r} failed: {res.stderr.strip()}")


def _sysctl_ipv6_off(ifname: str, ns: NetNS | None) -> None:
    path = f"/proc/sys/net/ipv6/conf/{ifname}/disable_ipv6"
    if ns is None:
        with contextlib.suppress(OSError):
            with open(path, "w") as f:
                f.write("1")
    else:  # /proc/sys/net is per namespace, so write it from inside
        ns.run(["sh", "-c", f"[ -w {path} ] && echo 1 > {path} || true"], check=False)


@contextlib.contextmanager
def namespace(prefix: str = "ins") -> Iterator[NetNS]:
    ns = create_namespace(prefix)
    try:
        yield ns
    finally:
        ns.delete()


@contextlib.contextmanager
def veth_pair(peer_ns: NetNS | None = None, **kwargs: object) -> Iterator[VethPair]:
    pair = create_veth_pair(peer_ns, **kwargs)  # type: ignore[arg-type]
    try:
        yield pair
    finally:
        pair.delete()


def cleanup_all() -> None:
    """Delete whatever this process created and has not deleted yet."""
    with _lock:
        links, spaces = list(_created_links), list(_created_ns)
    for link in links:
        ip("link", "del", link, check=False)
    for name in spaces:
        ip("netns", "del", name, check=False)
    with _lock:
        _created_links.clear()
        _created_ns.clear()


atexit.register(cleanup_all)


def forget(namespaces: Sequence[str] = (), links: Sequence[str] = ()) -> None:
    """Stop tracking these names: they must outlive this process (``python -m topologies up``
    leaves its network up; ``down`` removes it later from its state file)."""
    with _lock:
        _created_ns.difference_update(namespaces)
        _created_links.difference_update(links)


@dataclass
class Host:
    """A host in its own namespace, cabled to the switch by a veth pair (switch end: pair.host_if)."""

    ns: NetNS
    pair: VethPair
    ip: str
    mac: str

    def delete(self) -> None:
        self.pair.delete()
        self.ns.delete()


def create_routed_host(ip_cidr: str, gateway: str, gateway_mac: str, prefix: str = "rh",
                       mtu: int | None = None, offloads: bool = False) -> Host:
    """A namespace with one interface addressed `ip_cidr`, a default route via `gateway`, and a
    static neighbour entry for the gateway (the switch answers no ARP), cabled by a veth pair
    (`mtu`: both ends', None for the kernel's 1500)."""
    ns = create_namespace(prefix)
    try:
        pair = create_veth_pair(peer_ns=ns, prefix=prefix, mtu=mtu, offloads=offloads)
    except BaseException:
        ns.delete()
        raise
    host = Host(ns, pair, ip_cidr.split("/")[0], "")
    try:
        ns.run(["ip", "addr", "add", ip_cidr, "dev", pair.ns_if])
        ns.run(["ip", "route", "add", "default", "via", gateway])
        ns.run(["ip", "neigh", "replace", gateway, "lladdr", gateway_mac, "dev", pair.ns_if])
        host.mac = ns.run(["cat", f"/sys/class/net/{pair.ns_if}/address"]).stdout.strip()
    except BaseException:
        host.delete()
        raise
    return host
