"""A raw P4Runtime client for tests (its own stream and arbitration, no client library between
the test and the wire), and a switch served over P4Runtime on loopback with a primary client."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import grpc
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softswitch.p4runtime_server import P4RuntimeServer


class RawClient:
    """A minimal P4Runtime client with its own stream: arbitration with ``election_id`` (None:
    none sent), writes, stream messages in ``incoming``."""

    def __init__(self, port: int, election_id: int | None, device_id: int = 1):
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.election_id = election_id
        self.device_id = device_id
        self._out: queue.Queue = queue.Queue()
        self.incoming: queue.Queue = queue.Queue()
        self.stream = self.stub.StreamChannel(iter(self._out.get, None))
        self._t = threading.Thread(target=self._recv, daemon=True)
        self._t.start()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = device_id
        if election_id is not None:
            req.arbitration.election_id.low = election_id
        self._out.put(req)

    def _recv(self) -> None:
        try:
            for msg in self.stream:
                self.incoming.put(msg)
        except grpc.RpcError as e:
            self.incoming.put(e)

    def next(self, timeout: float = 3) -> Any:
        return self.incoming.get(timeout=timeout)

    def write(self, *updates: p4runtime_pb2.Update) -> None:
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        if self.election_id is not None:
            req.election_id.low = self.election_id
        req.updates.extend(updates)
        self.stub.Write(req)

    def set_pipeline(self, source: bytes, p4info: Any) -> None:
        Req = p4runtime_pb2.SetForwardingPipelineConfigRequest
        r = Req(device_id=self.device_id, action=Req.VERIFY_AND_COMMIT)
        if self.election_id is not None:
            r.election_id.low = self.election_id
        r.config.p4info.CopyFrom(p4info)
        r.config.p4_device_config = source
        self.stub.SetForwardingPipelineConfig(r)

    def close(self) -> None:
        self._out.put(None)
        self.channel.close()


@contextmanager
def served(sw: Any) -> Iterator[tuple[RawClient, P4RuntimeServer]]:
    """``sw`` served over P4Runtime on a free loopback port, with a client that is primary for
    device 1 (its arbitration answered OK); both stopped afterwards."""
    server = P4RuntimeServer(sw)
    port = server.start("127.0.0.1:0")
    client = RawClient(port, election_id=1)
    try:
        msg = client.next()
        assert not isinstance(msg, Exception), msg
        assert msg.arbitration.status.code == code_pb2.OK
        yield client, server
    finally:
        client.close()
        server.stop()
