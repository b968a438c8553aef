"""The P4Runtime gRPC server, driven by p4runtime-shell and by raw gRPC requests.

Every test runs the real software switch with tests/p4/p4rt_basic.p4 on both backends (the
Python reference and the native one, whose tables, registers, counters, meters, groups, packet-in
and digests live in C), behind a real `P4RuntimeServer` on a local port; the pipeline is pushed by
the client as P4 source (the device config), which the server's loader compiles.
"""

from __future__ import annotations

import queue
import time
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from p4rt_raw import RawClient

from p4compiler.p4info import build_p4info, p4info_to_text
from p4compiler.python_backend import compile_file, compile_text
from softswitch import api
from softswitch.native_switch import create_switch
from softswitch.p4runtime_server import P4RuntimeServer, bytes_to_int, int_to_bytes
from softswitch.switch import Switch

P4_FILE = Path(__file__).parent / "p4" / "p4rt_basic.p4"
CPU_PORT = 64

import p4runtime_sh.shell as sh  # noqa: E402
from p4runtime_sh.p4runtime import P4RuntimeWriteException  # noqa: E402


class Backend:
    """tests/p4/p4rt_basic.p4 compiled once, and the loader the server uses for device configs
    (P4 source, compiled with the test program's file name so errors point at it)."""

    def __init__(self, kind: str = "python"):
        self.kind = kind
        self.info = compile_file(str(P4_FILE)).info
        self.device_config = P4_FILE.read_bytes()

    def load(self, config: bytes, p4info) -> Switch:
        return create_switch(compile_text(config.decode(), str(P4_FILE)), self.kind, cpu_port=CPU_PORT)

    @staticmethod
    def trigger_packet_in(server: P4RuntimeServer, ingress_port: int, frame: bytes) -> None:
        """Make the switch send `frame` to the controller: an acl entry sends IPv4 to the CPU."""
        te = sh.TableEntry("MyIngress.acl")(action="MyIngress.send_to_cpu")
        te.match["hdr.ethernet.etherType"] = "0x0800&&&0xffff"
        te.priority = 10
        te.insert()
        with server.lock:
            server.switch.process_packet(ingress_port, frame)


# Ethernet + IPv4 (10.0.1.1 -> 10.0.2.2, correct header checksum, so a deparser that
# recomputes it gives the same bytes back) + 8 bytes of payload
IPV4_FRAME = bytes.fromhex(
    "00000000000200000000000108004500001c00010000401163ce0a0001010a000202" + "0000000000000000"
)


@pytest.fixture(scope="module", params=["python", "native"])
def backend(request) -> Backend:
    return Backend(request.param)


@pytest.fixture
def env(backend, tmp_path):
    """A server with the pipeline pushed by p4runtime-shell (which stays connected as primary)."""
    sent: list[tuple[int, bytes]] = []
    server = P4RuntimeServer(None, device_id=1, load_pipeline=backend.load, send_packets=sent.extend)
    port = server.start("127.0.0.1:0")
    p4info_path = tmp_path / "p4rt_basic.p4info.txt"
    p4info_path.write_text(p4info_to_text(build_p4info(backend.info)))
    bin_path = tmp_path / "p4rt_basic.bin"
    bin_path.write_bytes(backend.device_config)
    sh.setup(
        device_id=1,
        grpc_addr=f"127.0.0.1:{port}",
        election_id=(0, 10),
        config=sh.FwdPipeConfig(str(p4info_path), str(bin_path)),
        verbose=False,
    )
    try:
        yield server, port, sent, backend
    finally:
        sh.teardown()
        server.stop()


def write_error_codes(exc: P4RuntimeWriteException) -> list[tuple[int, str, str]]:
    return [(i, code_pb2.Code.Name(e.canonical_code), e.message) for i, e in exc.errors]


# --- p4runtime-shell ---------------------------------------------------------------------


def test_capabilities_and_pipeline(env):
    server, port, _sent, backend = env
    assert sh.APIVersion() == "1.4.1"
    # the shell read the P4Info back from the server after pushing it
    assert "MyIngress.ipv4_lpm" in dict(sh.context.get_tables())
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
        Req = p4runtime_pb2.GetForwardingPipelineConfigRequest
        full = stub.GetForwardingPipelineConfig(Req(device_id=1, response_type=Req.ALL))
        assert full.config.p4_device_config == backend.device_config
        assert full.config.p4info == build_p4info(backend.info)
        cookie_only = stub.GetForwardingPipelineConfig(Req(device_id=1, response_type=Req.COOKIE_ONLY))
        assert not cookie_only.config.HasField("p4info") and not cookie_only.config.p4_device_config
        dev = stub.GetForwardingPipelineConfig(Req(device_id=1, response_type=Req.DEVICE_CONFIG_AND_COOKIE))
        assert dev.config.p4_device_config == backend.device_config and not dev.config.HasField("p4info")
        with pytest.raises(grpc.RpcError) as err:
            stub.GetForwardingPipelineConfig(Req(device_id=7))
        assert err.value.code() == grpc.StatusCode.NOT_FOUND


def _lpm_entry(port: str = "2") -> object:
    te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.ipv4_forward")
    te.match["standard_metadata.ingress_port"] = "1"
    te.match["hdr.ipv4.dstAddr"] = "10.0.1.0/24"
    te.action["dstAddr"] = "00:00:00:00:01:01"
    te.action["port"] = port
    return te


def test_table_entry_insert_read_modify_delete(env):
    server, port, *_ = env
    _lpm_entry().insert()
    entries = list(sh.TableEntry("MyIngress.ipv4_lpm").read())
    assert len(entries) == 1
    e = entries[0]
    assert e.match["hdr.ipv4.dstAddr"].lpm.value == bytes([10, 0, 1, 0])
    assert e.match["hdr.ipv4.dstAddr"].lpm.prefix_len == 24
    assert e.match["standard_metadata.ingress_port"].exact.value == b"\x01"
    assert e.action.action_name == "MyIngress.ipv4_forward"
    assert e.action["port"].value == b"\x02"  # canonical: no leading zero bytes
    assert e.action["dstAddr"].value == b"\x01\x01"
    stored = server.switch.read_entries("MyIngress.ipv4_lpm")
    assert stored[0].match["hdr.ipv4.dstAddr"] == api.Lpm(0x0A000100, 24)

    with pytest.raises(P4RuntimeWriteException) as exc:
        _lpm_entry().insert()
    assert write_error_codes(exc.value)[0][1] == "ALREADY_EXISTS"

    _lpm_entry(port="5").modify()
    (e,) = list(sh.TableEntry("MyIngress.ipv4_lpm").read())
    assert e.action["port"].value == b"\x05"

    # a wildcard read over all tables (table_id 0) sees it too
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
        req = p4runtime_pb2.ReadRequest(device_id=1)
        req.entities.add().table_entry.SetInParent()
        got = [ent for resp in stub.Read(req) for ent in resp.entities]
    assert [g.table_entry.table_id for g in got] == [sh.context.get_table_id("MyIngress.ipv4_lpm")]

    _lpm_entry().delete()
    assert list(sh.TableEntry("MyIngress.ipv4_lpm").read()) == []
    with pytest.raises(P4RuntimeWriteException) as exc:
        _lpm_entry().delete()
    assert write_error_codes(exc.value)[0][1] == "NOT_FOUND"


def test_default_action(env):
    te = sh.TableEntry("MyIngress.ipv4_lpm")(is_default=True, action="MyIngress.drop")
    te.modify()
    (d,) = list(sh.TableEntry("MyIngress.ipv4_lpm")(is_default=True).read())
    assert d.is_default and d.action.action_name == "MyIngress.drop"
    # MODIFY without an action restores the program's default action
    sh.TableEntry("MyIngress.ipv4_lpm")(is_default=True).modify()
    (d,) = list(sh.TableEntry("MyIngress.ipv4_lpm")(is_default=True).read())
    assert d.action.action_name == "NoAction"
    # default entries are not part of a wildcard read
    assert list(sh.TableEntry("MyIngress.ipv4_lpm").read()) == []
    with pytest.raises(P4RuntimeWriteException) as exc:
        sh.TableEntry("MyIngress.ipv4_lpm")(is_default=True, action="MyIngress.drop").insert()
    assert write_error_codes(exc.value)[0][1] == "INVALID_ARGUMENT"


def test_ternary_priority_and_direct_counter(env):
    te = sh.TableEntry("MyIngress.acl")(action="MyIngress.drop")
    te.match["hdr.ethernet.etherType"] = "0x0800&&&0xffff"
    with pytest.raises(P4RuntimeWriteException) as exc:
        te.insert()  # priority 0 in a ternary table
    (_, code, msg) = write_error_codes(exc.value)[0]
    assert code == "INVALID_ARGUMENT" and "priority" in msg
    te.priority = 7
    te.counter_data.packet_count = 5
    te.counter_data.byte_count = 300
    te.insert()

    reader = sh.TableEntry("MyIngress.acl")
    reader.counter_data  # noqa: B018 - asking for counter data in the read
    (e,) = list(reader.read())
    assert e.priority == 7
    assert e.match["hdr.ethernet.etherType"].ternary.mask == b"\xff\xff"
    assert "hdr.ipv4.srcAddr" not in e.match._mk  # don't-care fields are omitted
    assert (e.counter_data.packet_count, e.counter_data.byte_count) == (5, 300)

    dc = sh.DirectCounterEntry("MyIngress.acl_counter")
    dc.table_entry.match["hdr.ethernet.etherType"] = "0x0800&&&0xffff"
    dc.table_entry.priority = 7
    dc.packet_count = 9
    dc.byte_count = 900
    dc.modify()
    (d,) = list(sh.DirectCounterEntry("MyIngress.acl_counter").read())
    assert (d.packet_count, d.byte_count) == (9, 900)


def test_multicast_group_and_clone_session(env):
    server, *_ = env
    sh.MulticastGroupEntry(1).add(1, 1).add(2, 1).insert()
    assert server.switch.mc_groups() == {1: [api.Replica(1, 1), api.Replica(2, 1)]}
    (g,) = list(sh.MulticastGroupEntry(1).read())
    replicas = g.msg().multicast_group_entry.replicas
    assert [(r.egress_port, r.instance) for r in replicas] == [(1, 1), (2, 1)]
    sh.MulticastGroupEntry(1).add(3, 2).modify()
    assert server.switch.mc_groups() == {1: [api.Replica(3, 2)]}
    with pytest.raises(P4RuntimeWriteException) as exc:
        sh.MulticastGroupEntry(1).add(3, 2).insert()
    assert write_error_codes(exc.value)[0][1] == "ALREADY_EXISTS"
    sh.MulticastGroupEntry(1).delete()
    assert server.switch.mc_groups() == {}

    cs = sh.CloneSessionEntry(5).add(CPU_PORT, 1)
    cs.packet_length_bytes = 128
    cs.insert()
    (c,) = list(sh.CloneSessionEntry(5).read())
    assert c.packet_length_bytes == 128
    assert [(r.egress_port, r.instance) for r in c.msg().clone_session_entry.replicas] == [(CPU_PORT, 1)]


def test_register_and_counter(env):
    server, *_ = env
    reg_id = sh.context.p4info.registers[0].preamble.id
    upd = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
    upd.entity.register_entry.register_id = reg_id
    upd.entity.register_entry.index.index = 3
    upd.entity.register_entry.data.bitstring = b"\x00\x00\xbe\xef"  # padded input is accepted
    sh.client.write_update(upd)
    assert server.switch.register_read("MyIngress.last_seen", 3) == 0xBEEF

    ent = p4runtime_pb2.Entity()
    ent.register_entry.register_id = reg_id
    ent.register_entry.index.index = 3
    (resp,) = list(sh.client.read_one(ent))
    assert resp.entities[0].register_entry.data.bitstring == b"\xbe\xef"
    ent.register_entry.ClearField("index")  # all cells
    cells = [e.register_entry for r in sh.client.read_one(ent) for e in r.entities]
    assert len(cells) == 16 and cells[3].data.bitstring == b"\xbe\xef" and cells[0].data.bitstring == b"\x00"

    upd.entity.register_entry.data.bitstring = b"\x01\x00\x00\x00\x00"  # 33 bits in a bit<32>
    with pytest.raises(P4RuntimeWriteException) as exc:
        sh.client.write_update(upd)
    assert write_error_codes(exc.value)[0][1] == "INVALID_ARGUMENT"

    ce = sh.CounterEntry("MyIngress.port_counter")
    ce.index = 4
    ce.packet_count = 7
    ce.byte_count = 700
    ce.modify()
    assert server.switch.counter_read("MyIngress.port_counter", 4) == (700, 7)
    got = sh.CounterEntry("MyIngress.port_counter")
    got.index = 4
    (c,) = list(got.read())
    assert (c.packet_count, c.byte_count) == (7, 700)
    assert len(list(sh.CounterEntry("MyIngress.port_counter").read())) == 64


def test_packet_out_and_packet_in(env):
    server, _port, sent, backend = env
    frame = IPV4_FRAME
    sh.PacketOut(payload=frame, egress_port="2").send()
    deadline = time.time() + 5
    while not sent and time.time() < deadline:
        time.sleep(0.01)
    assert sent == [(2, frame)]

    packet_in = sh.PacketIn()
    backend.trigger_packet_in(server, 1, frame)
    msgs = list(packet_in.sniff(timeout=3))
    assert len(msgs) == 1
    pkt = msgs[0].packet
    assert pkt.payload == frame
    md = {m.metadata_id: m.value for m in pkt.metadata}
    assert md[1] == b"\x01"  # ingress_port


# --- raw gRPC ----------------------------------------------------------------------------


def details(err: grpc.RpcError) -> list[p4runtime_pb2.Error]:
    for key, value in err.trailing_metadata():
        if key == "grpc-status-details-bin":
            st = status_pb2.Status.FromString(value)
            out = []
            for d in st.details:
                e = p4runtime_pb2.Error()
                assert d.Unpack(e)
                out.append(e)
            return out
    raise AssertionError("no grpc-status-details-bin trailer")


def _exact_update(port_bytes: bytes, table_id: int | None = None) -> p4runtime_pb2.Update:
    upd = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = upd.entity.table_entry
    te.table_id = table_id if table_id is not None else sh.context.get_table_id("MyIngress.ipv4_lpm")
    te.match.add(field_id=1).exact.value = port_bytes
    lpm = te.match.add(field_id=2).lpm
    lpm.value = bytes([10, 0, 0, 0])
    lpm.prefix_len = 8
    te.action.action.action_id = sh.context.get_action_id("MyIngress.drop")
    return upd


def _still_serving(port: int) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        caps = p4runtime_pb2_grpc.P4RuntimeStub(ch).Capabilities(p4runtime_pb2.CapabilitiesRequest())
        assert caps.p4runtime_api_version == "1.4.1"


def test_bad_requests_are_rejected_and_server_keeps_serving(env):
    server, port, *_ = env
    primary = RawClient(port, election_id=11)  # above the shell's 10: this client is primary now
    try:
        assert primary.next().arbitration.status.code == code_pb2.OK
        # field too wide: 512 does not fit in the 9-bit ingress_port; unknown table; a good one
        with pytest.raises(grpc.RpcError) as err:
            primary.write(
                _exact_update(b"\x02\x00"),
                _exact_update(b"\x01", table_id=0x02000001),
                _exact_update(b"\x01"),
            )
        assert err.value.code() == grpc.StatusCode.UNKNOWN
        errs = details(err.value)
        assert [code_pb2.Code.Name(e.canonical_code) for e in errs] == ["INVALID_ARGUMENT", "NOT_FOUND", "OK"]
        assert "does not fit in 9 bits" in errs[0].message
        assert "table id" in errs[1].message
        assert len(server.switch.read_entries("MyIngress.ipv4_lpm")) == 1  # the good update went in

        bad_lpm = _exact_update(b"\x03")
        bad_lpm.entity.table_entry.match[1].lpm.value = bytes([10, 0, 0, 1])  # bits past the /8
        bad_ternary = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
        t = bad_ternary.entity.table_entry
        t.table_id = sh.context.get_table_id("MyIngress.acl")
        t.priority = 1
        t.match.add(field_id=1).ternary.value = b"\x08\x01"
        t.match[0].ternary.mask = b"\xff\x00"
        t.action.action.action_id = sh.context.get_action_id("MyIngress.drop")
        with pytest.raises(grpc.RpcError) as err:
            primary.write(bad_lpm, bad_ternary)
        msgs = [e.message for e in details(err.value)]
        assert "beyond the /8 prefix" in msgs[0] and "outside mask" in msgs[1]
        with pytest.raises(grpc.RpcError) as err:
            primary.write(p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT))  # no entity at all
        assert details(err.value)[0].canonical_code == code_pb2.INVALID_ARGUMENT
        _still_serving(port)
    finally:
        primary.close()


def test_arbitration_and_non_primary_write(env):
    _server, port, *_ = env
    # the shell holds election id 10; 5 is a backup
    backup = RawClient(port, election_id=5)
    try:
        reply = backup.next().arbitration
        assert reply.status.code == code_pb2.ALREADY_EXISTS
        assert reply.election_id.low == 10  # the highest election id seen
        with pytest.raises(grpc.RpcError) as err:
            backup.write(_exact_update(b"\x01"))
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "primary" in err.value.details()

        # a client with a higher id takes over; everybody in the role is told
        usurper = RawClient(port, election_id=20)
        assert usurper.next().arbitration.status.code == code_pb2.OK
        note = backup.next().arbitration
        assert note.status.code == code_pb2.ALREADY_EXISTS and note.election_id.low == 20
        shell_note = sh.client.get_stream_packet("arbitration", timeout=3)
        assert shell_note.arbitration.status.code == code_pb2.ALREADY_EXISTS
        usurper.close()
        # the primary left: no primary until someone with id >= 20 shows up
        assert backup.next().arbitration.status.code == code_pb2.NOT_FOUND

        # reusing a live client's election id ends that stream with INVALID_ARGUMENT
        dup = RawClient(port, election_id=5)
        err = dup.next()
        assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.INVALID_ARGUMENT
        dup.close()
        wrong_device = RawClient(port, election_id=30, device_id=9)
        err = wrong_device.next()
        assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.NOT_FOUND
        wrong_device.close()
        _still_serving(port)
    finally:
        backup.close()


def test_pipeline_actions(env):
    server, port, _sent, backend = env
    Req = p4runtime_pb2.SetForwardingPipelineConfigRequest
    old_switch = server.switch
    _lpm_entry().insert()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)

        def req(action, device_config=backend.device_config, cookie=None, election=10):
            r = Req(device_id=1, action=action)
            r.election_id.low = election
            r.config.p4info.CopyFrom(build_p4info(backend.info))
            r.config.p4_device_config = device_config
            if cookie is not None:
                r.config.cookie.cookie = cookie
            return r

        stub.SetForwardingPipelineConfig(req(Req.VERIFY))
        assert server.switch is old_switch
        # empty device config + same P4Info: keep the program and its state
        stub.SetForwardingPipelineConfig(req(Req.RECONCILE_AND_COMMIT, b"", cookie=42))
        assert server.switch is old_switch and len(old_switch.read_entries("MyIngress.ipv4_lpm")) == 1
        Get = p4runtime_pb2.GetForwardingPipelineConfigRequest
        assert (
            stub.GetForwardingPipelineConfig(
                Get(device_id=1, response_type=Get.COOKIE_ONLY)
            ).config.cookie.cookie
            == 42
        )
        # a new program through RECONCILE_AND_COMMIT keeps the entries that still fit
        stub.SetForwardingPipelineConfig(req(Req.RECONCILE_AND_COMMIT))
        assert server.switch is not old_switch
        assert len(server.switch.read_entries("MyIngress.ipv4_lpm")) == 1
        # VERIFY_AND_SAVE changes nothing until COMMIT, which starts from a clean state
        current = server.switch
        stub.SetForwardingPipelineConfig(req(Req.VERIFY_AND_SAVE))
        assert server.switch is current
        stub.SetForwardingPipelineConfig(Req(device_id=1, action=Req.COMMIT, election_id={"low": 10}))
        assert server.switch is not current and server.switch.read_entries("MyIngress.ipv4_lpm") == []
        with pytest.raises(grpc.RpcError) as err:
            stub.SetForwardingPipelineConfig(Req(device_id=1, action=Req.COMMIT, election_id={"low": 10}))
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        with pytest.raises(grpc.RpcError) as err:
            stub.SetForwardingPipelineConfig(req(Req.VERIFY_AND_COMMIT, election=3))
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        other = build_p4info(backend.info)
        other.tables[0].preamble.name = "MyIngress.no_such_table"
        bad = req(Req.VERIFY)
        bad.config.p4info.CopyFrom(other)
        with pytest.raises(grpc.RpcError) as err:
            stub.SetForwardingPipelineConfig(bad)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "no_such_table" in err.value.details()


def test_compile_error_is_invalid_argument(backend):
    """A device config that does not compile is refused with the compiler's file:line; with no
    pipeline loaded, writes are FAILED_PRECONDITION, and then a good config still loads."""
    server = P4RuntimeServer(None, load_pipeline=backend.load)
    port = server.start("127.0.0.1:0")
    client = RawClient(port, election_id=1)
    try:
        assert client.next().arbitration.status.code == code_pb2.OK
        r = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=1, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
        )
        r.election_id.low = 1
        r.config.p4info.CopyFrom(build_p4info(backend.info))
        r.config.p4_device_config = b"#include <core.p4>\n\nheader h_t { bit<8> f }\n"  # no ';'
        with pytest.raises(grpc.RpcError) as err:
            client.stub.SetForwardingPipelineConfig(r)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert f"{P4_FILE}:3:" in err.value.details() and "error:" in err.value.details()
        assert server.switch is None
        with pytest.raises(grpc.RpcError) as err:
            client.write(_exact_update_raw())
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        r.config.p4_device_config = backend.device_config
        client.stub.SetForwardingPipelineConfig(r)
        assert isinstance(server.switch, Switch) and server.switch.info.table("MyIngress.acl")
        _still_serving(port)
    finally:
        client.close()
        server.stop()


def _exact_update_raw() -> p4runtime_pb2.Update:
    upd = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    upd.entity.table_entry.table_id = 1
    return upd


# --- bytestrings -------------------------------------------------------------------------


def test_bytestring_helpers():
    assert int_to_bytes(0) == b"\x00"
    assert int_to_bytes(1) == b"\x01"
    assert int_to_bytes(0x100) == b"\x01\x00"
    assert int_to_bytes(0x0A000100, 32) == bytes([10, 0, 1, 0])
    with pytest.raises(ValueError):
        int_to_bytes(512, 9)
    with pytest.raises(ValueError):
        int_to_bytes(-1)
    assert bytes_to_int(b"\x01\xff", 9) == 511
    assert bytes_to_int(b"\x00\x00\x00\x05", 9) == 5  # legacy padding is accepted
    with pytest.raises(ValueError, match="does not fit in 9 bits"):
        bytes_to_int(b"\x02\x00", 9)
    with pytest.raises(ValueError, match="empty"):
        bytes_to_int(b"", 8)
    for v in (0, 1, 255, 256, 2**47 + 3):
        assert bytes_to_int(int_to_bytes(v), 48) == v


def test_server_built_on_a_switch_streams_digests(backend):
    """A server given a switch up front serves its generated P4Info and streams the digests
    the program sends (p4rt_basic.p4: learn_t for frames with etherType 0x88b5)."""
    sw = Switch(compile_file(str(P4_FILE)), cpu_port=CPU_PORT)
    server = P4RuntimeServer(sw)
    port = server.start("127.0.0.1:0")
    client = RawClient(port, election_id=1)
    try:
        assert client.next().arbitration.status.code == code_pb2.OK
        Get = p4runtime_pb2.GetForwardingPipelineConfigRequest
        got = client.stub.GetForwardingPipelineConfig(Get(device_id=1, response_type=Get.P4INFO_AND_COOKIE))
        assert got.config.p4info == build_p4info(backend.info)
        (learn,) = got.config.p4info.digests
        assert learn.preamble.name == "learn_t"

        def frame(src: str, ethertype: str) -> bytes:
            return bytes.fromhex("000000000002" + src + ethertype + "00" * 8)

        list_ids = []
        for in_port, src in ((3, "0a0b0c0d0e0f"), (0, "000000000001")):
            with server.lock:
                sw.process_packet(in_port, frame(src, "88b5"))
            msg = client.next().digest
            assert msg.digest_id == learn.preamble.id
            members = [[m.bitstring for m in d.struct.members] for d in msg.data]
            assert members == [[int_to_bytes(int(src, 16)), int_to_bytes(in_port)]]
            list_ids.append(msg.list_id)
        assert list_ids[1] > list_ids[0]
        with server.lock:
            sw.process_packet(3, frame("0a0b0c0d0e0f", "88b6"))  # no digest for other frames
        with pytest.raises(queue.Empty):
            client.next(timeout=0.2)
        # a PacketOut with an unknown metadata id comes back as a StreamError
        bad = p4runtime_pb2.StreamMessageRequest()
        bad.packet.payload = b"x"
        bad.packet.metadata.add(metadata_id=99, value=b"\x01")
        client._out.put(bad)
        err = client.next().error
        assert err.canonical_code == code_pb2.INVALID_ARGUMENT and "99" in err.message
        assert err.packet_out.packet_out.payload == b"x"
        _still_serving(port)
    finally:
        client.close()
        server.stop()


# --- parser value sets (ValueSetEntry) ---------------------------------------------------

VALUE_SET_P4 = Path(__file__).parent / "p4" / "value_set.p4"


def _vs_frame(etype: int, a: int = 0, b: int = 0) -> bytes:
    return bytes.fromhex("000000000001000000000002") + etype.to_bytes(2, "big") + bytes([a]) + \
        b.to_bytes(2, "big") + bytes(10) + b"payload"


def _vs_update(vs_id: int, *members: list[tuple], utype=p4runtime_pb2.Update.MODIFY) -> p4runtime_pb2.Update:
    """A ValueSetEntry update; each member a list of (field id, value bytes[, mask bytes])."""
    upd = p4runtime_pb2.Update(type=utype)
    entry = upd.entity.value_set_entry
    entry.value_set_id = vs_id
    for member in members:
        m = entry.members.add()
        for fid, value, *mask in member:
            fm = m.match.add(field_id=fid)
            if mask:
                fm.ternary.value, fm.ternary.mask = value, mask[0]
            else:
                fm.exact.value = value
    return upd


def test_value_set_entry_write_read_and_errors(backend):
    """tests/p4/value_set.p4 behind a real server: MODIFY writes a value set's members (which
    decide the parser's select, exact and ternary members), a later MODIFY replaces them, Read
    gives them back; INSERT and DELETE, too many members, duplicates and bad fields are refused
    with the codes the P4Runtime spec gives, and leave the members as they were."""
    sw = create_switch(compile_file(str(VALUE_SET_P4)), backend.kind, cpu_port=CPU_PORT)
    server = P4RuntimeServer(sw)
    port = server.start("127.0.0.1:0")
    client = RawClient(port, election_id=1)

    def out_port(data: bytes) -> int:
        with server.lock:
            ((p, out),) = sw.process_packet(0, data)
        return p if p == 2 else out[26]  # tag.res: 1 | 2 when (a, b) is in pairs

    def read(vs_id: int) -> list[p4runtime_pb2.ValueSetEntry]:
        req = p4runtime_pb2.ReadRequest(device_id=1)
        req.entities.add().value_set_entry.value_set_id = vs_id
        return [e.value_set_entry for resp in client.stub.Read(req) for e in resp.entities]

    try:
        assert client.next().arbitration.status.code == code_pb2.OK
        Get = p4runtime_pb2.GetForwardingPipelineConfigRequest
        p4info = client.stub.GetForwardingPipelineConfig(
            Get(device_id=1, response_type=Get.P4INFO_AND_COOKIE)).config.p4info
        vsets = {v.preamble.name: v for v in p4info.value_sets}
        assert set(vsets) == {"MyParser.etypes", "MyParser.pairs", "MyParser.wides"}
        pairs = vsets["MyParser.pairs"]
        assert pairs.size == 2
        assert [(m.id, m.name, m.bitwidth, m.match_type) for m in pairs.match] == [
            (1, "a", 8, p4info_pb2.MatchField.EXACT), (2, "b", 16, p4info_pb2.MatchField.TERNARY)]
        etypes, pairs_id = vsets["MyParser.etypes"].preamble.id, pairs.preamble.id
        assert vsets["MyParser.etypes"].size == 4 and vsets["MyParser.etypes"].match[0].bitwidth == 16

        assert [len(e.members) for e in read(etypes)] == [0]
        assert out_port(_vs_frame(0x22F3)) == 2  # empty: the select falls to default
        client.write(_vs_update(etypes, [(1, b"\x22\xf3")], [(1, b"\x89\x3b")]))
        assert out_port(_vs_frame(0x22F3)) == 1 and out_port(_vs_frame(0x893B)) == 1
        assert out_port(_vs_frame(0x0800)) == 2
        (entry,) = read(etypes)
        assert entry.value_set_id == etypes
        assert [[(fm.field_id, fm.exact.value) for fm in m.match] for m in entry.members] == [
            [(1, b"\x22\xf3")], [(1, b"\x89\x3b")]]

        # ternary: (a == 5, b == 0x12**), and a member with b left out (don't care)
        client.write(_vs_update(pairs_id, [(1, b"\x05"), (2, b"\x12\x00", b"\xff\x00")], [(1, b"\x07")]))
        assert out_port(_vs_frame(0x22F3, 5, 0x1234)) == 3 and out_port(_vs_frame(0x22F3, 5, 0x1334)) == 1
        assert out_port(_vs_frame(0x22F3, 7, 0xFFFF)) == 3 and out_port(_vs_frame(0x22F3, 6, 0x1234)) == 1
        (entry,) = read(pairs_id)
        m0, m1 = entry.members
        assert [fm.field_id for fm in m0.match] == [1, 2] and m0.match[1].ternary.mask == b"\xff\x00"
        assert [fm.field_id for fm in m1.match] == [1]

        # MODIFY replaces: 0x22f3 and 0x893b stop matching
        client.write(_vs_update(etypes, [(1, b"\x08\x00")]))
        assert out_port(_vs_frame(0x22F3)) == 2 and out_port(_vs_frame(0x893B)) == 2
        assert out_port(_vs_frame(0x0800, 5, 0x1200)) == 3

        U = p4runtime_pb2.Update
        bad = [
            _vs_update(etypes, [(1, b"\x00\x01")], utype=U.INSERT),
            _vs_update(etypes, utype=U.DELETE),
            _vs_update(etypes, *[[(1, bytes([0, i]))] for i in range(5)]),  # size 4
            _vs_update(etypes, [(1, b"\x00\x01")], [(1, b"\x00\x01")]),  # a duplicate
            _vs_update(0x03FFFFFF, [(1, b"\x00\x01")]),
            _vs_update(etypes, [(1, b"\x01\x00\x00")]),  # 17 bits
            _vs_update(etypes, [(1, b"\x00\x01", b"\xff\xff")]),  # ternary on an exact field
            _vs_update(pairs_id, [(2, b"\x12\x00", b"\xff\x00")]),  # exact field a missing
            _vs_update(pairs_id, [(1, b"\x01"), (2, b"\x00\x01", b"\x00\x00")]),  # mask 0: omit it
            _vs_update(pairs_id, [(3, b"\x01")]),
        ]
        with pytest.raises(grpc.RpcError) as err:
            client.write(*bad)
        errs = details(err.value)
        assert [code_pb2.Code.Name(e.canonical_code) for e in errs] == [
            "INVALID_ARGUMENT", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "ALREADY_EXISTS", "NOT_FOUND",
        ] + ["INVALID_ARGUMENT"] * 5
        assert "only be modified" in errs[0].message and "at most 4" in errs[2].message
        assert "repeats" in errs[3].message and "does not fit in 16 bits" in errs[5].message
        assert "is missing" in errs[7].message and "no match field with id 3" in errs[9].message
        # nothing changed
        assert [[fm.exact.value for fm in m.match] for m in read(etypes)[0].members] == [[b"\x08\x00"]]
        assert len(read(pairs_id)[0].members) == 2

        # a wildcard read gives every value set; an empty MODIFY empties one
        assert sorted(e.value_set_id for e in read(0)) == sorted(v.preamble.id for v in vsets.values())
        client.write(_vs_update(etypes))
        assert [len(e.members) for e in read(etypes)] == [0]
        assert out_port(_vs_frame(0x0800)) == 2
        with pytest.raises(grpc.RpcError) as rerr:
            read(0x03FFFFFF)
        assert rerr.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        client.close()
        server.stop()
