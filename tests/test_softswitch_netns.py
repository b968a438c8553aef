"""The switch as users run it: `python -m softswitch` with AF_PACKET ports on veth pairs into
network namespaces, p4runtime-shell as the controller, real pings between the namespaces."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4compiler.p4info import build_p4info, p4info_to_text
from p4compiler.python_backend import compile_file
from topologies.netns import Host, create_routed_host
from topologies.testbed import SwitchProcess

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "p4" / "examples" / "basic_router.p4"
GW_MAC = "02:00:00:00:00:fe"

pytestmark = pytest.mark.netns


@pytest.fixture
def two_hosts(netns_ok: None):
    made: list[Host] = []
    try:
        for ip_, gw in (("10.0.1.1/24", "10.0.1.254"), ("10.0.2.2/24", "10.0.2.254")):
            made.append(create_routed_host(ip_, gw, GW_MAC, prefix="ts"))
        yield [(h.ns, h.pair, h.ip, h.mac) for h in made]
    finally:
        for h in made:
            h.delete()


@pytest.fixture
def switch_proc(two_hosts):
    (_, p1, _, _), (_, p2, _, _) = two_hosts
    switch = SwitchProcess({1: p1.host_if, 2: p2.host_if}, p4=PROGRAM)  # raises if it does not start
    try:
        yield switch.proc, int(switch.address.rsplit(":", 1)[1])
    finally:
        switch.stop()


def _install_routes(port: int, hosts, tmp_path: Path) -> None:
    import p4runtime_sh.shell as sh

    p4info = tmp_path / "p4info.txt"
    p4info.write_text(p4info_to_text(build_p4info(compile_file(str(PROGRAM)).info)))
    with contextlib.redirect_stdout(io.StringIO()):
        sh.setup(device_id=1, grpc_addr=f"127.0.0.1:{port}", election_id=(0, 1),
                 config=sh.FwdPipeConfig(str(p4info), str(PROGRAM)))
        try:
            for n, (_, _, ip_, mac) in enumerate(hosts, start=1):
                te = sh.TableEntry("RouterIngress.ipv4_lpm")(action="RouterIngress.set_nhop")
                te.match["hdr.ipv4.dst"] = f"{ip_}/32"
                te.action["dst_mac"] = mac
                te.action["src_mac"] = GW_MAC
                te.action["port"] = str(n)
                te.insert()
            entries = list(sh.TableEntry("RouterIngress.ipv4_lpm").read())
            assert len(entries) == 2
        finally:
            sh.teardown()


def test_pings_cross_the_switch(two_hosts, switch_proc, tmp_path):
    proc, port = switch_proc
    (h1, _, _, _), (_, _, h2_ip, _) = two_hosts
    # without routes the default action sends packets to the CPU port: pings fail
    before = h1.run(["ping", "-c", "1", "-W", "1", h2_ip], check=False, timeout=10)
    assert before.returncode != 0
    _install_routes(port, two_hosts, tmp_path)
    res = h1.run(["ping", "-c", "3", "-i", "0.2", "-W", "2", h2_ip], check=False, timeout=20)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "3 received" in res.stdout
    assert "ttl=63" in res.stdout  # the switch decremented the TTL (and fixed the checksum)


def test_bad_requests_leave_the_switch_running(two_hosts, switch_proc, tmp_path):
    proc, port = switch_proc
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    # a write that names no known table, from a client that never became primary
    req = p4runtime_pb2.WriteRequest(device_id=1)
    upd = req.updates.add()
    upd.type = p4runtime_pb2.Update.INSERT
    upd.entity.table_entry.table_id = 12345
    with pytest.raises(grpc.RpcError) as info:
        stub.Write(req, timeout=5)
    assert info.value.code() in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.FAILED_PRECONDITION,
                                 grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT)
    assert info.value.details()
    channel.close()
    assert proc.poll() is None
    # and it still forwards once a controller installs routes
    _install_routes(port, two_hosts, tmp_path)
    (h1, _, _, _), (_, _, h2_ip, _) = two_hosts
    res = h1.run(["ping", "-c", "1", "-W", "2", h2_ip], check=False, timeout=10)
    assert res.returncode == 0, res.stdout
