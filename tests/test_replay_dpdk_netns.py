"""The replay server's DPDK I/O path (dpdk_fallback/src/io_dpdk.c) over a veth pair.

Topology: two network namespaces joined by one veth pair. In the server namespace the veth is up
with no kernel address: ``replay_server --io dpdk`` opens it through DPDK's af_packet vdev and
owns 10.<a>.<b>.2 itself (it answers ARP for it, builds and checks IPv4/UDP in software). The
client namespace has 10.<a>.<b>.1/24 and talks to the server with the ordinary kernel UDP stack:
host_agents.replay_client.HostReplayClient for whole requests, the codec
(host_agents.replay_protocol) for hand-made datagrams, and an AF_PACKET socket for frames the
kernel would never send (bad checksums, a bad IP length, a VLAN tag).

EAL arguments that work on a VM without hugepages or a DPDK-bound NIC (see EAL_BASE):
``--no-huge -m 256 --no-pci -l <cpu> --no-shconf``. ``--in-memory`` is refused together with
``--no-huge`` ("--legacy-mem is not compatible with --in-memory"); ``--no-shconf`` alone keeps
several servers (and restarts) from colliding on /var/run/dpdk/rte.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from topologies.netns import NetNS, create_namespace, create_veth_pair, ip
from topologies.replay_server import SERVER_BIN as SERVER
from topologies.replay_server import ReplayServerProcess

pytestmark = [pytest.mark.netns, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
PORT = 47100
ITEMS = 16
ITEM_BYTES = 3000  # a PUSH of 16 is ~35 datagrams, a SAMPLE reply of 50 ~108


def _first_cpu() -> int:
    return min(os.sched_getaffinity(0))


EAL_BASE = f"--no-huge -m 256 --no-pci -l {_first_cpu()} --no-shconf"


def _dpdk_unavailable() -> str | None:
    """Why the DPDK path cannot be tested here (a skip reason), or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, AF_PACKET)"
    if shutil.which("ip") is None and not os.path.exists("/usr/sbin/ip"):
        return "`ip` (iproute2) is not installed"
    if not SERVER.exists():
        res = subprocess.run(["make", "-C", str(SERVER.parent.parent)], capture_output=True, text=True)
        if res.returncode != 0 or not SERVER.exists():
            return f"{SERVER} is not built and make -C dpdk_fallback failed: {res.stderr[-500:]}"
    # A build without libdpdk links a stub that says so; a DPDK build rejects the bogus EAL option.
    res = subprocess.run(
        [str(SERVER), "--io", "dpdk", "--dpdk-ip", "10.0.0.2", "--dpdk-args", "--rs-probe-not-an-eal-option"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if "without DPDK" in res.stderr:
        return "replay_server was built without DPDK (install libdpdk-dev and pkg-config, then rebuild)"
    return None


@pytest.fixture(scope="module")
def dpdk_ok() -> None:
    reason = _dpdk_unavailable()
    if reason:
        pytest.skip(reason)


class DpdkServer(ReplayServerProcess):
    """replay_server --io dpdk inside a namespace; stderr goes to a file (EAL logs, counters)."""

    def __init__(self, ns: NetNS, eal_args: str, server_ip: str, log: Path, *extra: str) -> None:
        argv = ["--io", "dpdk", "--dpdk-args", eal_args, "--dpdk-ip", server_ip, *extra]
        super().__init__(argv, ns=ns, log=log, timeout=30.0, binary=SERVER)

    def stop(self) -> str:  # type: ignore[override]
        """SIGTERM, wait, return the whole stderr log."""
        super().stop()
        return self.stderr()


_COUNTERS = re.compile(
    r"dpdk: rx (\d+) frames, (\d+) datagrams, (\d+) ARP replies; tx (\d+) datagrams, (\d+) not sent; "
    r"dropped: l2 (\d+), arp (\d+), ip (\d+), not ours (\d+), udp (\d+)"
)
_COUNTER_NAMES = (
    "rx_frames rx_datagrams arp_replies tx_datagrams tx_failed "
    "drop_l2 drop_arp drop_ip drop_not_ours drop_udp"
).split()


def dpdk_counters(log: str) -> dict[str, int]:
    m = _COUNTERS.search(log)
    assert m, f"no DPDK counter line in the server log:\n{log[-3000:]}"
    return dict(zip(_COUNTER_NAMES, map(int, m.groups()), strict=True))


@contextlib.contextmanager
def server_and_client_ns() -> Iterator[tuple[NetNS, str, NetNS, str, str]]:
    """(server ns, its veth, client ns, its veth, subnet prefix "10.a.b"), all removed after."""
    with contextlib.ExitStack() as stack:
        srv = create_namespace()
        stack.callback(srv.delete)
        cli = create_namespace()
        stack.callback(cli.delete)
        # a pair between the root namespace and the client, offloads off on both ends; then the
        # root end moves into the server namespace (a move takes the link down: up again there)
        pair = create_veth_pair(peer_ns=cli)
        stack.callback(pair.delete)  # a no-op once moved: deleting the namespaces removes it
        srv.run(["sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6"], check=False)
        srv.run(["sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6"], check=False)
        ip("link", "set", pair.host_if, "netns", srv.name)
        srv.run(["ip", "link", "set", pair.host_if, "up"])
        if shutil.which("ethtool"):  # af_packet sees the sender's frames: checksums must be final
            for ns, dev in ((srv, pair.host_if), (cli, pair.ns_if)):
                ns.run(
                    ["ethtool", "-K", dev, "tx", "off", "rx", "off", "tso", "off", "gso", "off"], check=False
                )
        pid = os.getpid()
        subnet = f"10.{200 + (pid >> 8) % 50}.{pid % 256}"
        cli.run(["ip", "addr", "add", f"{subnet}.1/24", "dev", pair.ns_if])
        yield srv, pair.host_if, cli, pair.ns_if, subnet


# Runs in the client namespace: the whole scenario, one JSON object on stdout.
CLIENT = r"""
import json, socket, struct, subprocess, sys, time
import numpy as np
from host_agents import replay_protocol as rp
from host_agents.replay_client import HostReplayClient, ReplayConfig, ReplayError

cfg = json.loads(sys.argv[1])
server_ip, port, dev, n_items, item_bytes = (
    cfg["server_ip"], cfg["port"], cfg["dev"], cfg["items"], cfg["item_bytes"])
out = {}

def neigh():
    return subprocess.run(["ip", "neigh", "show", server_ip, "dev", dev],
                          capture_output=True, text=True).stdout.strip()

out["neigh_before"] = neigh()
client = HostReplayClient(ReplayConfig(server_ip=server_ip, server_port=port, max_size=1024,
                                       alpha=1.0, timeout_s=0.5, seed=5))
t0 = time.monotonic()
out["info_before"] = client.info()
out["first_rtt_s"] = time.monotonic() - t0
out["neigh_after"] = neigh()

def item(i):
    return f"item{i:02d}".encode().ljust(item_bytes, b"#")

keys = client.insert([item(i) for i in range(n_items)], [float(i + 1) for i in range(n_items)])
out["keys"] = keys.tolist()

def counts(batches, size):
    seen = {}
    for _ in range(batches):
        b = client.sample(size, beta=0.4)
        assert len(b) == size and b.table_size == n_items
        for k, data, p in zip(b.keys.tolist(), b.items, b.probabilities.tolist()):
            i = out["keys"].index(k)
            assert data == item(i), f"key {k} came back with other bytes"
            e = seen.setdefault(i, {"n": 0, "p": p})
            e["n"] += 1
    return seen

out["before"] = counts(40, 50)
out["update"] = client.update_priorities(keys, [100.0 if i == 3 else 1.0 for i in range(n_items)])
out["after"] = counts(20, 50)

# malformed requests through the kernel's UDP stack: ERROR replies, or silence for a runt
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind((cfg["client_ip"], 0))
sock.settimeout(2.0)

def exchange(datagram, expect_reply=True):
    sock.sendto(datagram, (server_ip, port))
    try:
        data, addr = sock.recvfrom(65536)
    except socket.timeout:
        return None
    assert addr == (server_ip, port), addr
    return data

h = rp.Header(op=rp.Op.PUSH, table_id=0, request_id=0x5150)
bad = h.pack() + struct.pack("!I", 5)  # five items announced, none there
reply = exchange(bad)
rh, body = rp.split_datagram(reply)
out["malformed"] = {"op": rh.op, "status": rh.status, "rid": rh.request_id,
                    "message": rp.decode_error(body)}
h = rp.Header(op=rp.Op.INFO, request_id=0x5151, version=7)
rh, body = rp.split_datagram(exchange(h.pack()))
out["bad_version"] = {"op": rh.op, "status": rh.status}
sock.settimeout(0.5)
out["runt_reply"] = exchange(b"\x0b\x00short") is not None

# hand-made frames from an AF_PACKET socket: only the well-formed ones may be answered
server_mac = bytes.fromhex(neigh().split("lladdr")[1].split()[0].replace(":", ""))
client_mac = bytes.fromhex(open(f"/sys/class/net/{dev}/address").read().strip().replace(":", ""))
src_ip, dst_ip = socket.inet_aton(cfg["client_ip"]), socket.inet_aton(server_ip)
raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
raw.bind((dev, 0))
rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rx.bind((cfg["client_ip"], 0))
rx.settimeout(0.1)
sport = rx.getsockname()[1]

def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF

def frame(payload, bad_ip=False, bad_udp=False, zero_udp=False, long_ip=False, dport=port, vlan=False):
    ulen = 8 + len(payload)
    udp = struct.pack("!HHHH", sport, dport, ulen, 0) + payload
    ck = csum(src_ip + dst_ip + struct.pack("!BBH", 0, 17, ulen) + udp) or 0xFFFF
    if zero_udp:
        ck = 0
    elif bad_udp:
        ck ^= 0x1234
    udp = udp[:6] + struct.pack("!H", ck) + udp[8:]
    total = 20 + ulen + (100 if long_ip else 0)  # long_ip: the header claims more than the frame
    iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 7, 0x4000, 64, 17, 0, src_ip, dst_ip)
    ick = csum(iph) ^ (0x0F0F if bad_ip else 0)
    iph = iph[:10] + struct.pack("!H", ick) + iph[12:]
    l2 = server_mac + client_mac + (b"\x81\x00\x00\x05" if vlan else b"") + b"\x08\x00"
    return l2 + iph + udp

def info_req(rid):
    return rp.Header(op=rp.Op.INFO, request_id=rid).pack()

variants = {"ok": {}, "udp_csum_zero": {"zero_udp": True}, "bad_ip_csum": {"bad_ip": True},
            "bad_udp_csum": {"bad_udp": True}, "ip_too_long": {"long_ip": True},
            "other_port": {"dport": port + 1}, "vlan_tagged": {"vlan": True}}
rids = {name: 0x7000 + n for n, name in enumerate(variants)}
for name, kw in variants.items():
    raw.send(frame(info_req(rids[name]), **kw))
answered = set()
deadline = time.monotonic() + 1.5
while time.monotonic() < deadline:
    try:
        data, addr = rx.recvfrom(65536)
    except socket.timeout:
        continue
    rh = rp.Header.unpack(data)
    answered.update(n for n, r in rids.items() if r == rh.request_id and rh.op == rp.Op.INFO_REPLY)
out["raw_answered"] = sorted(answered)

out["info_after"] = client.info()
out["client_stats"] = client.stats
snmp = open("/proc/net/snmp").read().split("\n")
udp_rows = [line.split() for line in snmp if line.startswith("Udp:")]
out["udp_snmp"] = dict(zip(udp_rows[0][1:], map(int, udp_rows[1][1:])))
print(json.dumps(out))
"""


def chi_square(observed: list[int], probs: list[float]) -> float:
    n = sum(observed)
    return sum((o - n * p) ** 2 / (n * p) for o, p in zip(observed, probs, strict=True))


def test_replay_over_dpdk_af_packet(dpdk_ok: None, tmp_path: Path) -> None:
    with server_and_client_ns() as (srv_ns, srv_dev, cli_ns, cli_dev, subnet):
        server_ip, client_ip = f"{subnet}.2", f"{subnet}.1"
        eal = f"{EAL_BASE} --vdev=net_af_packet0,iface={srv_dev}"
        server_mac = srv_ns.run(["cat", f"/sys/class/net/{srv_dev}/address"]).stdout.strip()
        server = DpdkServer(
            srv_ns,
            eal,
            server_ip,
            tmp_path / "server.log",
            "--seed",
            "7",
            "--table",
            "t:max_size=1024,alpha=1.0",
        )
        try:
            assert server.ready_line.startswith("replay_server: ready io=dpdk port=47100 tables=t")
            cfg = {
                "server_ip": server_ip,
                "client_ip": client_ip,
                "port": PORT,
                "dev": cli_dev,
                "items": ITEMS,
                "item_bytes": ITEM_BYTES,
            }
            res = cli_ns.run([sys.executable, "-c", CLIENT, json.dumps(cfg)], timeout=240, check=False)
        finally:
            log = server.stop()
    assert res.returncode == 0, f"client failed:\n{res.stderr[-4000:]}\nserver log:\n{log[-3000:]}"
    out = json.loads(res.stdout.strip().splitlines()[-1])
    counters = dpdk_counters(log)

    # ARP: no neighbour entry before, the server's own answer (the veth's MAC) after
    assert "lladdr" not in out["neigh_before"], out["neigh_before"]
    assert f"lladdr {server_mac}" in out["neigh_after"], (out["neigh_after"], server_mac)
    assert counters["arp_replies"] >= 1
    assert out["info_before"]["server"]["io"] == "dpdk"
    assert out["info_before"]["server"]["port"] == PORT

    # a multi-fragment PUSH stores every item; samples return their bytes (checked in the client)
    assert out["keys"] == list(range(ITEMS))
    before = out["before"]
    prio = [i + 1.0 for i in range(ITEMS)]
    total = sum(prio)
    for i, e in before.items():
        assert e["p"] == pytest.approx(prio[int(i)] / total, rel=1e-3)
    observed = [before.get(str(i), {"n": 0})["n"] for i in range(ITEMS)]
    # df 15: P(chi2 > 37.7) = 0.001; a uniform draw scores several hundred here
    stat = chi_square(observed, [p / total for p in prio])
    assert stat < 37.7, f"sampled counts {observed} do not follow priorities 1..16 (chi2 {stat:.1f})"
    assert chi_square(observed, [1 / ITEMS] * ITEMS) > 37.7

    # UPDATE_PRIORITY: item 3 at 100, the rest at 1 -> drawn ~100/115 of the time
    assert out["update"] == [ITEMS, 0]
    after = out["after"]
    share = after["3"]["n"] / sum(e["n"] for e in after.values())
    assert 0.8 < share < 0.93, f"raised item drawn {share:.2f} of the time, expected ~0.87"

    # bad requests get an ERROR (a runt datagram gets nothing) and the server keeps serving
    assert out["malformed"]["op"] == 255 and out["malformed"]["status"] == 1, out["malformed"]
    assert out["malformed"]["rid"] == 0x5150
    assert out["bad_version"] == {"op": 255, "status": 9}
    assert out["runt_reply"] is False
    assert out["info_after"]["server"]["io"] == "dpdk"

    # hand-made frames: well-formed ones (UDP checksum 0 means "none") are answered, the rest
    # dropped by io_dpdk.c and counted where they belong
    assert out["raw_answered"] == ["ok", "udp_csum_zero"]
    # (no IP fragment among them: af_packet's fanout asks the kernel to defragment, so a lone
    # fragment never reaches DPDK; io_dpdk.c still drops any that would)
    assert counters["drop_ip"] >= 2, str(counters)  # bad header checksum, length beyond the frame
    assert counters["drop_udp"] >= 1  # bad UDP checksum
    assert counters["drop_not_ours"] >= 1  # another UDP port
    assert counters["drop_l2"] >= 1  # VLAN tag
    # every reply the server built passed the client kernel's UDP checksum check; no loss
    assert out["udp_snmp"].get("InCsumErrors", 0) == 0, out["udp_snmp"]
    assert counters["tx_failed"] == 0
    assert out["client_stats"]["resent_requests"] == 0, out["client_stats"]
    assert out["client_stats"]["resend_asks"] == 0, out["client_stats"]
    assert "dpdk" in log and "rte_eal_init failed" not in log


def test_other_vdevs_open_and_servers_coexist(dpdk_ok: None, tmp_path: Path) -> None:
    """net_null and net_tap ports open; two servers with the same EAL arguments run at once
    (--no-shconf), and a third starts after they stop."""
    with contextlib.ExitStack() as stack:
        ns = create_namespace()
        stack.callback(ns.delete)
        servers = []
        for n, vdev in enumerate(("net_null0", "net_null1")):
            s = DpdkServer(ns, f"{EAL_BASE} --vdev={vdev}", "10.99.0.2", tmp_path / f"null{n}.log")
            stack.callback(s.stop)
            servers.append(s)
        logs = [s.stop() for s in servers]
        for log in logs:
            assert "(net_null)" in log
        if os.path.exists("/dev/net/tun"):
            tap = DpdkServer(
                ns, f"{EAL_BASE} --vdev=net_tap0,iface=rstap0", "10.99.0.2", tmp_path / "tap.log"
            )
            assert "(net_tap)" in tap.stop()


def test_dpdk_errors_are_one_clear_line(dpdk_ok: None) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SERVER), "--io", "dpdk", *args], capture_output=True, text=True, timeout=60
        )

    res = run("--dpdk-ip", "10.99.0.2", "--dpdk-args", EAL_BASE)
    assert res.returncode == 2
    assert "no DPDK port: give a --vdev, e.g. --vdev=net_af_packet0,iface=veth0" in res.stderr
    res = run("--dpdk-ip", "10.99.0.2", "--dpdk-args", f"{EAL_BASE} stray")
    assert res.returncode == 2 and "'stray' is not an EAL option" in res.stderr, res.stderr[-500:]
    res = run("--dpdk-ip", "10.99.0.2", "--dpdk-args", f"{EAL_BASE} --vdev=net_af_packet0,iface=rsnosuch0")
    assert res.returncode == 2, res.stderr[-500:]
    assert "rte_eal_init failed" in res.stderr or "no DPDK port" in res.stderr, res.stderr[-500:]
    res = run("--dpdk-ip", "224.0.0.1", "--dpdk-args", EAL_BASE)
    assert res.returncode == 2 and "cannot be a host's address" in res.stderr
