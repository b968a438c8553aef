"""A clone session's packet_length_bytes (P4Runtime's CloneSessionEntry, bmv2's mirroring
sessions with a truncation length): each clone made through the session leaves cut to that many
bytes; the original is whole, and 0 keeps clones whole. I2E (tests/p4/features/clone_i2e.p4)
and E2E (clone_e2e.p4) clones, on both backends, through the switch API and through P4Runtime."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2
from p4rt_raw import served

from p4compiler.python_backend import compile_file
from softswitch.api import CloneSession, Replica
from softswitch.native_switch import create_switch

FEATURES = Path(__file__).parent / "p4" / "features"
ETH = bytes.fromhex("000000000001000000000002" + "88b5")
PAYLOAD = bytes(range(40))  # after the program's headers: the clones' cut falls in here


@pytest.mark.parametrize("backend", ["python", "native"])
@pytest.mark.parametrize("kind, session, port, original, clone", [
    # ingress-to-egress: the clone is the packet as it entered (mark 00), instance_type 1
    ("i2e", 7, 4, "11 00 0001 99", "00 01 0004 99"),
    # egress-to-egress: the original after its egress, then the clone's own egress pass
    ("e2e", 8, 5, "22 00 0001 01", "22 02 0005 02"),
])
def test_clones_are_cut_to_the_session_length(backend, kind, session, port, original, clone) -> None:
    sw = create_switch(compile_file(str(FEATURES / f"clone_{kind}.p4")), backend)
    frame = ETH + bytes.fromhex("00 ff ffff 99" if kind == "i2e" else "00 ff ffff 00") + PAYLOAD
    want_original = ETH + bytes.fromhex(original) + PAYLOAD
    want_clone = ETH + bytes.fromhex(clone) + PAYLOAD
    for length, cut in ((0, len(want_clone)), (20, 20), (1000, len(want_clone))):
        sw.clone_session_set(CloneSession(session, [Replica(port, 0)], packet_length_bytes=length))
        out = dict(sw.process_packet(0, frame))
        assert out[1] == want_original  # the original is never cut
        assert out[port] == want_clone[:cut], f"packet_length_bytes {length}"
    # a session without a length again: whole clones
    sw.clone_session_set(CloneSession(session, [Replica(port, 0)]))
    assert dict(sw.process_packet(0, frame))[port] == want_clone


@pytest.mark.parametrize("backend", ["python", "native"])
def test_p4runtime_clone_session_length_cuts_clones(backend) -> None:
    sw = create_switch(compile_file(str(FEATURES / "clone_i2e.p4")), backend)
    with served(sw) as (client, server):
        upd = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
        cs = upd.entity.packet_replication_engine_entry.clone_session_entry
        cs.session_id = 7
        cs.replicas.add(egress_port=4, instance=0)
        cs.packet_length_bytes = 18
        client.write(upd)
        frame = ETH + bytes.fromhex("00 ff ffff 99") + PAYLOAD
        with server.lock:
            got = dict(sw.process_packet(0, frame))
        assert got[4] == (ETH + bytes.fromhex("00 01 0004"))[:18]
        assert len(got[1]) == len(frame)
