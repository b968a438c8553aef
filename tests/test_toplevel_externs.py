"""Extern instances declared at the top level (tests/p4/features/toplevel_externs.p4), reached
by the control plane through P4Runtime under their P4Info names, on both backends. The packet
behaviour (one register shared by ingress and egress, one counter array) is the .stf's."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2
from p4rt_raw import served

from p4compiler.p4info import build_p4info
from p4compiler.python_backend import compile_file
from softswitch.native_switch import create_switch

P4_FILE = Path(__file__).parent / "p4" / "features" / "toplevel_externs.p4"


def _frame(idx: int) -> bytes:
    """Ethernet + data_t (idx, mark, ing, egr)."""
    return bytes.fromhex("000000000001000000000002" + "88b5") + bytes([idx, 0]) + bytes(8)


@pytest.mark.parametrize("backend", ["python", "native"])
def test_p4runtime_reads_and_writes_toplevel_register_and_counter(backend: str) -> None:
    program = compile_file(str(P4_FILE))
    p4info = build_p4info(program.info)
    ids = {x.preamble.name: x.preamble.id for x in (*p4info.registers, *p4info.counters)}
    assert set(ids) == {"seen", "hits"}
    sw = create_switch(program, backend)
    with served(sw) as (client, server):
        stub = client.stub

        upd = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
        upd.entity.register_entry.register_id = ids["seen"]
        upd.entity.register_entry.index.index = 2
        upd.entity.register_entry.data.bitstring = b"\x01\x00"
        client.write(upd)
        assert sw.register_read("seen", 2) == 0x100

        with server.lock:
            (port_out, data), = sw.process_packet(0, _frame(2))
        assert port_out == 1 and data[-8:] == bytes.fromhex("00000101" "00000101")

        def read(entity: p4runtime_pb2.Entity) -> p4runtime_pb2.Entity:
            req = p4runtime_pb2.ReadRequest(device_id=1)
            req.entities.append(entity)
            (resp,) = stub.Read(req)
            (got,) = resp.entities
            return got

        ent = p4runtime_pb2.Entity()
        ent.register_entry.register_id = ids["seen"]
        ent.register_entry.index.index = 2
        assert read(ent).register_entry.data.bitstring == b"\x01\x01"
        ent = p4runtime_pb2.Entity()
        ent.counter_entry.counter_id = ids["hits"]
        ent.counter_entry.index.index = 3  # counted in egress
        data = read(ent).counter_entry.data
        assert (data.packet_count, data.byte_count) == (1, 24)
