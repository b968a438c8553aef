"""A P4Runtime v1 gRPC service over any `SwitchAPI` (the software switch, or a test double).

What it implements, following the P4Runtime specification (1.3/1.4):

* Capabilities.
* StreamChannel: client arbitration per (device_id, role) with election ids (the highest id
  ever seen wins; an equal id may reconnect), PacketOut/PacketIn through the
  `@controller_header` metadata, DigestList, and StreamError for bad PacketOuts.
* SetForwardingPipelineConfig (VERIFY, VERIFY_AND_SAVE, VERIFY_AND_COMMIT, COMMIT,
  RECONCILE_AND_COMMIT) and GetForwardingPipelineConfig (all response types).
* Write (primary only): table entries (with default entries and direct counter data),
  multicast groups, clone sessions, registers, counters, direct counters, meters, digest
  configs, parser value sets (ValueSetEntry: only MODIFY, which replaces the members). A failed
  batch is reported the standard way: gRPC UNKNOWN whose `grpc-status-details-bin` trailer holds
  a google.rpc.Status with one p4.v1.Error per update (what p4runtime-shell and other clients
  decode).
* Read: the same entities, with wildcards.

Numbers on the wire are P4Runtime bytestrings: `bytes_to_int` accepts canonical and padded
forms and checks the bit width, `int_to_bytes` writes the canonical (shortest) form.

The device config of SetForwardingPipelineConfig is handed, with the P4Info, to the
`load_pipeline` callback, which returns the new switch. An empty device config asks to keep the
current program, which is accepted when the P4Info matches it.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import TypeVar

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4compiler.p4info import build_p4info
from softswitch import api
from softswitch.api import SwitchAPI, SwitchError

log = logging.getLogger(__name__)

_READ_CHUNK = 1000  # entities per ReadResponse
P4RUNTIME_API_VERSION = "1.4.1"  # the version of the p4runtime protobufs this server is built on

LoadPipeline = Callable[[bytes, p4info_pb2.P4Info], SwitchAPI]
SendPackets = Callable[[list[tuple[int, bytes]]], None]


# --- bytestrings -------------------------------------------------------------------------


def bytes_to_int(data: bytes, bitwidth: int, what: str = "value") -> int:
    """Decode a P4Runtime bytestring for a field of `bitwidth` bits.

    Canonical (shortest) and zero-padded forms are accepted; an empty string, or a value that
    needs more than `bitwidth` bits, is an error (ValueError)."""
    if not data:
        raise ValueError(f"{what}: empty bytestring (a {bitwidth}-bit value needs at least one byte)")
    value = int.from_bytes(data, "big")
    if bitwidth > 0 and value >> bitwidth:
        raise ValueError(f"{what}: bytestring {data.hex()} (value {value}) does not fit in {bitwidth} bits")
    return value


def int_to_bytes(value: int, bitwidth: int | None = None) -> bytes:
    """The canonical P4Runtime bytestring of an unsigned value: big-endian, no leading zero
    bytes, at least one byte."""
    if value < 0:
        raise ValueError(f"negative value {value} has no P4Runtime bytestring")
    if bitwidth is not None and bitwidth > 0 and value >> bitwidth:
        raise ValueError(f"value {value} does not fit in {bitwidth} bits")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


# --- errors ------------------------------------------------------------------------------


class RequestError(Exception):
    """A request (or one update of a batch) the server refuses; `code` is a grpc.StatusCode."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


_HIDDEN = 1 << 32  # first id of the members and groups one-shot table entries create


def _watch_of(m) -> tuple[str, int | bytes] | None:
    """A group member's (or one-shot action's) watch port as written: ("watch", int) or
    ("watch_port", bytes); None when unset."""
    kind = m.WhichOneof("watch_kind")
    return None if kind is None else (kind, getattr(m, kind))


def _invalid(msg: str) -> RequestError:
    return RequestError(grpc.StatusCode.INVALID_ARGUMENT, msg)


def _status_code(name: str) -> grpc.StatusCode:
    try:
        return grpc.StatusCode[name]
    except KeyError:
        return grpc.StatusCode.UNKNOWN


def _canonical(code: grpc.StatusCode) -> int:
    return code.value[0]


def _as_request_error(exc: Exception) -> RequestError:
    if isinstance(exc, RequestError):
        return exc
    if isinstance(exc, SwitchError):
        return RequestError(_status_code(exc.code), str(exc))
    log.exception("internal error while serving a P4Runtime request")
    return RequestError(grpc.StatusCode.INTERNAL, f"internal error: {type(exc).__name__}: {exc}")


# --- P4Info index ------------------------------------------------------------------------


@dataclass
class _FieldMeta:
    id: int
    name: str
    bitwidth: int
    match_type: int  # p4info MatchField.MatchType; UNSPECIFIED for other match types
    other: str = ""


@dataclass
class _TableMeta:
    id: int
    name: str
    fields_by_id: dict[int, _FieldMeta]
    fields_by_name: dict[str, _FieldMeta]
    action_scopes: dict[int, int]  # action id -> ActionRef.Scope
    const_default_action_id: int
    is_const: bool
    direct_counter: int | None
    direct_meter: int | None
    implementation_id: int
    idle_timeout: bool

    @property
    def needs_priority(self) -> bool:
        kinds = (p4info_pb2.MatchField.TERNARY, p4info_pb2.MatchField.RANGE, p4info_pb2.MatchField.OPTIONAL)
        return any(f.match_type in kinds for f in self.fields_by_id.values())


@dataclass
class _ValueSetMeta:
    id: int
    name: str
    fields: list[_FieldMeta]  # in P4Info order: the order of the value set type's fields
    fields_by_id: dict[int, _FieldMeta]
    fields_by_name: dict[str, _FieldMeta]
    size: int


@dataclass
class _ActionMeta:
    id: int
    name: str
    params_by_id: dict[int, tuple[str, int]]
    params_by_name: dict[str, tuple[int, int]]


_T = TypeVar("_T")


def _by_id(entities: dict[int, _T], entity_id: int, what: str) -> _T:
    """The P4Info entity `entity_id` of one kind; NOT_FOUND names the kind and the id."""
    try:
        return entities[entity_id]
    except KeyError:
        raise RequestError(grpc.StatusCode.NOT_FOUND, f"{what} id {entity_id} is not in the P4Info") from None


class _Index:
    """Id <-> name maps of one P4Info."""

    def __init__(self, p4info: p4info_pb2.P4Info):
        self.p4info = p4info
        self.tables: dict[int, _TableMeta] = {}
        self.table_ids: dict[str, int] = {}
        self.actions: dict[int, _ActionMeta] = {}
        self.action_ids: dict[str, int] = {}
        self.registers: dict[int, tuple[str, int, int]] = {}  # id -> (name, bitwidth, size)
        self.counters: dict[int, tuple[str, int]] = {}  # id -> (name, size)
        self.direct_counters: dict[int, tuple[str, int]] = {}  # id -> (name, table id)
        self.meters: dict[int, tuple[str, int]] = {}
        self.direct_meters: dict[int, tuple[str, int]] = {}
        self.digests: dict[int, str] = {}
        self.digest_ids: dict[str, int] = {}
        self.packet_in: list[tuple[int, str, int]] = []  # (id, name, bitwidth)
        self.packet_out: dict[int, tuple[str, int]] = {}
        self.value_sets: dict[int, _ValueSetMeta] = {}
        # action profiles: id -> (name, table ids, with_selector)
        self.profiles: dict[int, tuple[str, list[int], bool]] = {
            ap.preamble.id: (ap.preamble.name, list(ap.table_ids), ap.with_selector)
            for ap in p4info.action_profiles
        }
        for a in p4info.actions:
            params = {p.id: (p.name, p.bitwidth) for p in a.params}
            self.actions[a.preamble.id] = _ActionMeta(
                a.preamble.id, a.preamble.name, params, {p.name: (p.id, p.bitwidth) for p in a.params}
            )
            self.action_ids[a.preamble.name] = a.preamble.id
        ids = {}
        for dc in p4info.direct_counters:
            self.direct_counters[dc.preamble.id] = (dc.preamble.name, dc.direct_table_id)
            ids[dc.preamble.id] = "dc"
        for dm in p4info.direct_meters:
            self.direct_meters[dm.preamble.id] = (dm.preamble.name, dm.direct_table_id)
            ids[dm.preamble.id] = "dm"
        for t in p4info.tables:
            fields = [
                _FieldMeta(mf.id, mf.name, mf.bitwidth, mf.match_type, mf.other_match_type)
                for mf in t.match_fields
            ]
            dres = {ids.get(r): r for r in t.direct_resource_ids}
            self.tables[t.preamble.id] = _TableMeta(
                id=t.preamble.id,
                name=t.preamble.name,
                fields_by_id={f.id: f for f in fields},
                fields_by_name={f.name: f for f in fields},
                action_scopes={r.id: r.scope for r in t.action_refs},
                const_default_action_id=t.const_default_action_id,
                is_const=t.is_const_table,
                direct_counter=dres.get("dc"),
                direct_meter=dres.get("dm"),
                implementation_id=t.implementation_id,
                idle_timeout=t.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL,
            )
            self.table_ids[t.preamble.name] = t.preamble.id
        for vs in p4info.value_sets:
            fields = [
                _FieldMeta(mf.id, mf.name, mf.bitwidth, mf.match_type, mf.other_match_type) for mf in vs.match
            ]
            self.value_sets[vs.preamble.id] = _ValueSetMeta(
                vs.preamble.id,
                vs.preamble.name,
                fields,
                {f.id: f for f in fields},
                {f.name: f for f in fields},
                vs.size,
            )
        for r in p4info.registers:
            spec = r.type_spec
            width = (
                spec.bitstring.bit.bitwidth
                or spec.bitstring.int.bitwidth
                or spec.bitstring.varbit.max_bitwidth
            )
            self.registers[r.preamble.id] = (r.preamble.name, width, r.size)
        for c in p4info.counters:
            self.counters[c.preamble.id] = (c.preamble.name, c.size)
        for m in p4info.meters:
            self.meters[m.preamble.id] = (m.preamble.name, m.size)
        for d in p4info.digests:
            self.digests[d.preamble.id] = d.preamble.name
            self.digest_ids[d.preamble.name] = d.preamble.id
        for cpm in p4info.controller_packet_metadata:
            if cpm.preamble.name == "packet_in":
                self.packet_in = [(md.id, md.name, md.bitwidth) for md in cpm.metadata]
            elif cpm.preamble.name == "packet_out":
                self.packet_out = {md.id: (md.name, md.bitwidth) for md in cpm.metadata}

    def table(self, table_id: int) -> _TableMeta:
        return _by_id(self.tables, table_id, "table")

    def profile(self, profile_id: int) -> tuple[str, list[int], bool]:
        return _by_id(self.profiles, profile_id, "action profile")

    def value_set(self, value_set_id: int) -> _ValueSetMeta:
        return _by_id(self.value_sets, value_set_id, "value set")

    def action(self, action_id: int) -> _ActionMeta:
        return _by_id(self.actions, action_id, "action")

    def signature(self) -> set[tuple]:
        """What must agree between two P4Infos for one program to serve both."""
        sig: set[tuple] = set()
        for t in self.tables.values():
            sig.add(
                (
                    "table",
                    t.id,
                    t.name,
                    tuple(sorted((f.id, f.name, f.bitwidth) for f in t.fields_by_id.values())),
                )
            )
        for a in self.actions.values():
            sig.add(("action", a.id, a.name, tuple(sorted(a.params_by_id.items()))))
        for v in self.value_sets.values():
            fields = tuple(sorted((f.id, f.name, f.bitwidth, f.match_type) for f in v.fields_by_id.values()))
            sig.add(("value_set", v.id, v.name, v.size, fields))
        for kind, d in (
            ("register", self.registers),
            ("counter", self.counters),
            ("direct_counter", self.direct_counters),
            ("meter", self.meters),
            ("direct_meter", self.direct_meters),
        ):
            sig.update((kind, k, v) for k, v in d.items())
        sig.add(("packet_in", tuple(self.packet_in)))
        sig.add(("packet_out", tuple(sorted(self.packet_out.items()))))
        return sig


def _check_program_matches(info, index: _Index) -> None:
    """The P4Info a client sends must describe the program it comes with."""
    tables = {t.name: t for t in info.tables}
    actions = {a.name: a for a in info.actions}
    for t in index.tables.values():
        if t.name not in tables:
            raise _invalid(f"P4Info table {t.name!r} is not in the program")
        prog = {mf.name: mf.bitwidth for mf in tables[t.name].match_fields}
        for f in t.fields_by_id.values():
            if prog.get(f.name) != f.bitwidth:
                raise _invalid(
                    f"P4Info match field {f.name!r} of table {t.name!r} does not match the program"
                )
    for a in index.actions.values():
        if a.name not in actions:
            raise _invalid(f"P4Info action {a.name!r} is not in the program")
        prog = {p.name: p.bitwidth for p in actions[a.name].params}
        for name, width in a.params_by_id.values():
            if prog.get(name) != width:
                raise _invalid(f"P4Info parameter {name!r} of action {a.name!r} does not match the program")
    value_sets = {v.name: v for v in info.value_sets}
    for v in index.value_sets.values():
        if v.name not in value_sets:
            raise _invalid(f"P4Info value set {v.name!r} is not in the program")
        # by position: p4c leaves the one field of a value_set<bit<W>> unnamed
        if [f.bitwidth for f in v.fields] != [mf.bitwidth for mf in value_sets[v.name].match_fields]:
            raise _invalid(f"P4Info match fields of value set {v.name!r} do not match the program")
    for kind, names in (
        ("register", {r.name for r in info.registers}),
        ("counter", {c.name for c in info.counters}),
    ):
        for entry in getattr(index, kind + "s").values():
            if entry[0] not in names:
                raise _invalid(f"P4Info {kind} {entry[0]!r} is not in the program")


# --- pipeline and sessions ---------------------------------------------------------------


@dataclass
class _Pipeline:
    switch: SwitchAPI
    index: _Index
    device_config: bytes
    cookie: int | None


@dataclass
class _Session:
    queue: queue.Queue = field(default_factory=queue.Queue)
    device_id: int | None = None
    role: str | None = None  # None until a successful arbitration
    election_id: int | None = None
    closed: bool = False

    def put(self, item) -> None:
        if not self.closed:
            self.queue.put(item)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put(None)


@dataclass
class _Abort:
    code: grpc.StatusCode
    message: str


def _election_id(msg) -> int | None:
    if not msg.HasField("election_id"):
        return None
    return (msg.election_id.high << 64) | msg.election_id.low


# --- the server --------------------------------------------------------------------------


class P4RuntimeServer(p4runtime_pb2_grpc.P4RuntimeServicer):
    """P4Runtime service for one device. Thread-safe: gRPC calls and packet-in callbacks may
    come from any thread; switch calls are serialised by `lock`."""

    def __init__(
        self,
        switch: SwitchAPI | None = None,
        device_id: int = 1,
        load_pipeline: LoadPipeline | None = None,
        send_packets: SendPackets | None = None,
        *,
        p4info: p4info_pb2.P4Info | None = None,
        device_config: bytes = b"",
        max_workers: int = 16,
    ):
        self.device_id = device_id
        self._load_pipeline = load_pipeline
        self._send_packets = send_packets
        self._max_workers = max_workers
        self.lock = threading.RLock()  # serialises access to the switch and the pipeline
        self._sessions_lock = threading.Lock()
        self._sessions: list[_Session] = []
        self._election_past: dict[str, int] = {}  # role -> highest election id ever seen
        self._primary: dict[str, _Session] = {}
        self._pipeline: _Pipeline | None = None
        self._saved: _Pipeline | None = None
        self._hooked: list[SwitchAPI] = []
        self._digest_list_id = 0
        self._digest_configs: dict[int, p4runtime_pb2.DigestEntry.Config] = {}
        self._meter_configs: dict[tuple[str, int], p4runtime_pb2.MeterConfig] = {}
        self._entry_extra: dict[tuple, tuple[bytes, bytes]] = {}  # key -> (controller_metadata, metadata)
        # action selector groups: watch ports as written (PI keeps and reads them back), and the
        # groups one-shot entries made (hidden group and member ids >= _HIDDEN, which a uint32
        # P4Runtime id cannot reach): gid -> (profile, [(action, args, weight, watch)]), and
        # entry key -> gid
        self._watch: dict[tuple[str, int], dict[int, tuple[str, int | bytes]]] = {}
        self._oneshot: dict[int, tuple[str, list[tuple[str, dict[str, int], int, tuple | None]]]] = {}
        self._oneshot_entries: dict[tuple, int] = {}
        self._hidden_next = _HIDDEN
        self._server: grpc.Server | None = None
        if switch is not None:
            info = p4info if p4info is not None else build_p4info(switch.info)
            self._activate(_Pipeline(switch, _Index(info), device_config, None))

    # -- lifecycle

    def start(self, addr: str = "127.0.0.1:0") -> int:
        """Serve on `addr` ("host:port"; port 0 picks a free one) and return the bound port."""
        if self._server is not None:
            raise RuntimeError("P4RuntimeServer already started")
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=self._max_workers, thread_name_prefix="p4rt")
        )
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self, server)
        port = server.add_insecure_port(addr)
        if port == 0:
            raise OSError(f"cannot bind the P4Runtime server to {addr}")
        server.start()
        self._server = server
        return port

    def stop(self, grace: float | None = 0.5) -> None:
        server, self._server = self._server, None
        with self._sessions_lock:
            sessions = list(self._sessions)
        for s in sessions:
            s.close()
        if server is not None:
            server.stop(grace).wait()

    @property
    def switch(self) -> SwitchAPI | None:
        p = self._pipeline
        return p.switch if p else None

    @property
    def p4info(self) -> p4info_pb2.P4Info | None:
        p = self._pipeline
        return p.index.p4info if p else None

    # -- Capabilities

    def Capabilities(self, request, context):
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=P4RUNTIME_API_VERSION)

    # -- arbitration and the stream

    def StreamChannel(self, request_iterator, context):
        session = _Session()
        with self._sessions_lock:
            self._sessions.append(session)
        context.add_callback(session.close)
        reader = threading.Thread(
            target=self._read_stream, args=(session, request_iterator), name="p4rt-stream", daemon=True
        )
        reader.start()
        try:
            while True:
                item = session.queue.get()
                if item is None:
                    return
                if isinstance(item, _Abort):
                    context.abort(item.code, item.message)
                yield item
        finally:
            session.closed = True
            self._drop_session(session)

    def _read_stream(self, session: _Session, requests: Iterator) -> None:
        try:
            for msg in requests:
                if session.closed:
                    break
                kind = msg.WhichOneof("update")
                try:
                    if kind == "arbitration":
                        self._arbitrate(session, msg.arbitration)
                    elif kind == "packet":
                        self._packet_out(session, msg.packet)
                    elif kind == "digest_ack":
                        pass  # digests are not rate-limited, so acks need no bookkeeping
                    else:
                        self._stream_error(session, grpc.StatusCode.UNIMPLEMENTED, f"stream message {kind!r}")
                except RequestError as e:
                    session.put(_Abort(e.code, e.message))
                    break
                except Exception as e:  # a bad message must not kill the server
                    err = _as_request_error(e)
                    self._stream_error(session, err.code, err.message)
        except grpc.RpcError:
            pass  # the client went away
        except Exception:
            log.exception("P4Runtime stream reader failed")
        finally:
            session.close()

    def _stream_error(self, session: _Session, code: grpc.StatusCode, message: str, packet=None) -> None:
        resp = p4runtime_pb2.StreamMessageResponse()
        resp.error.canonical_code = _canonical(code)
        resp.error.message = message
        if packet is not None:
            resp.error.packet_out.packet_out.CopyFrom(packet)
        session.put(resp)

    def _arbitration_reply(self, session: _Session) -> p4runtime_pb2.StreamMessageResponse:
        resp = p4runtime_pb2.StreamMessageResponse()
        arb = resp.arbitration
        arb.device_id = self.device_id
        if session.role:
            arb.role.name = session.role
        past = self._election_past.get(session.role or "")
        if past is not None:
            arb.election_id.high = past >> 64
            arb.election_id.low = past & ((1 << 64) - 1)
        primary = self._primary.get(session.role or "")
        if primary is session:
            arb.status.code = code_pb2.OK
            arb.status.message = "this client is the primary"
        elif primary is not None:
            arb.status.code = code_pb2.ALREADY_EXISTS
            arb.status.message = "a primary client exists; this client is a backup"
        else:
            arb.status.code = code_pb2.NOT_FOUND
            arb.status.message = "no primary client for this role"
        return resp

    def _arbitrate(self, session: _Session, arb) -> None:
        if arb.device_id != self.device_id:
            raise RequestError(grpc.StatusCode.NOT_FOUND, f"unknown device id {arb.device_id}")
        if arb.role.HasField("config"):
            raise RequestError(grpc.StatusCode.UNIMPLEMENTED, "role configs are not supported")
        role = arb.role.name
        eid = _election_id(arb)
        with self._sessions_lock:
            if session.role is not None and session.role != role:
                raise RequestError(grpc.StatusCode.FAILED_PRECONDITION, "a stream cannot change its role")
            if eid is not None:
                for other in self._sessions:
                    if (
                        other is not session
                        and not other.closed
                        and other.role == role
                        and other.election_id == eid
                    ):
                        raise _invalid(
                            f"election id {eid} is already used by another controller for this role"
                        )
            old_primary = self._primary.get(role)
            session.device_id = arb.device_id
            session.role = role
            session.election_id = eid
            past = self._election_past.get(role)
            if eid is not None and (past is None or eid >= past):
                self._election_past[role] = eid
                self._primary[role] = session
            elif old_primary is session:  # the primary lowered its election id
                del self._primary[role]
            if self._primary.get(role) is not old_primary:
                self._notify_role(role)
            else:
                session.put(self._arbitration_reply(session))

    def _notify_role(self, role: str) -> None:
        for s in self._sessions:
            if s.role == role and not s.closed:
                s.put(self._arbitration_reply(s))

    def _drop_session(self, session: _Session) -> None:
        with self._sessions_lock:
            if session in self._sessions:
                self._sessions.remove(session)
            role = session.role
            if role is not None and self._primary.get(role) is session:
                del self._primary[role]
                self._notify_role(role)

    def _check_primary(self, device_id: int, role: str, election_id: int | None) -> None:
        if device_id != self.device_id:
            raise RequestError(grpc.StatusCode.NOT_FOUND, f"unknown device id {device_id}")
        with self._sessions_lock:
            primary = self._primary.get(role)
            if primary is None or primary.election_id != election_id:
                raise RequestError(
                    grpc.StatusCode.PERMISSION_DENIED,
                    f"only the primary client of role {role or '<default>'!r} may write; election id "
                    f"{election_id} is not the primary's",
                )

    # -- packet I/O

    def _packet_out(self, session: _Session, packet) -> None:
        with self._sessions_lock:
            is_primary = session.role is not None and self._primary.get(session.role) is session
        if not is_primary:
            self._stream_error(
                session, grpc.StatusCode.PERMISSION_DENIED, "PacketOut from a non-primary client", packet
            )
            return
        pipeline = self._pipeline
        if pipeline is None:
            self._stream_error(session, grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline", packet)
            return
        try:
            metadata = {}
            for md in packet.metadata:
                if md.metadata_id not in pipeline.index.packet_out:
                    raise _invalid(f"packet_out has no metadata with id {md.metadata_id}")
                name, width = pipeline.index.packet_out[md.metadata_id]
                if name in metadata:
                    raise _invalid(f"packet_out metadata {name!r} given twice")
                metadata[name] = self._decode(md.value, width, f"packet_out metadata {name}")
            with self.lock:
                out = pipeline.switch.packet_out(packet.payload, metadata)
        except Exception as e:
            err = _as_request_error(e)
            self._stream_error(session, err.code, err.message, packet)
            return
        if out and self._send_packets is not None:
            self._send_packets(out)

    def _to_primaries(self, resp: p4runtime_pb2.StreamMessageResponse) -> None:
        with self._sessions_lock:
            targets = list(self._primary.values())
        for s in targets:
            s.put(resp)

    def _on_packet_in(self, switch: SwitchAPI, payload: bytes, metadata: dict[str, int]) -> None:
        pipeline = self._pipeline
        if pipeline is None or pipeline.switch is not switch:
            return  # a packet of a replaced pipeline
        resp = p4runtime_pb2.StreamMessageResponse()
        resp.packet.payload = payload
        for md_id, name, width in pipeline.index.packet_in:
            if name in metadata:
                resp.packet.metadata.add(
                    metadata_id=md_id, value=int_to_bytes(metadata[name] & ((1 << width) - 1))
                )
        self._to_primaries(resp)

    def _on_digest(self, switch: SwitchAPI, name: str, messages: list[dict[str, int]]) -> None:
        pipeline = self._pipeline
        if pipeline is None or pipeline.switch is not switch or name not in pipeline.index.digest_ids:
            return
        digest_id = pipeline.index.digest_ids[name]
        members = []
        for d in pipeline.index.p4info.digests:
            if d.preamble.id == digest_id:
                struct = pipeline.index.p4info.type_info.structs.get(d.type_spec.struct.name)
                members = (
                    [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in struct.members] if struct else []
                )
        resp = p4runtime_pb2.StreamMessageResponse()
        self._digest_list_id += 1
        resp.digest.digest_id = digest_id
        resp.digest.list_id = self._digest_list_id
        resp.digest.timestamp = time.time_ns()
        for msg in messages:
            data = resp.digest.data.add()
            for mname, width in members:
                value = msg.get(mname, 0)
                data.struct.members.add().bitstring = int_to_bytes(
                    value & ((1 << width) - 1) if width else value
                )
        self._to_primaries(resp)

    # -- pipeline config

    def _activate(self, pipeline: _Pipeline) -> None:
        sw = pipeline.switch
        if not any(s is sw for s in self._hooked):
            sw.add_packet_in_handler(lambda payload, md, _sw=sw: self._on_packet_in(_sw, payload, md))
            sw.add_digest_handler(lambda name, msgs, _sw=sw: self._on_digest(_sw, name, msgs))
            self._hooked.append(sw)
            del self._hooked[:-4]  # keep only recent switches referenced
        if self._pipeline is None or self._pipeline.switch is not sw:
            self._entry_extra.clear()
            self._meter_configs.clear()
            self._digest_configs.clear()
            self._clear_selector_state()
        self._pipeline = pipeline

    def _clear_selector_state(self) -> None:
        self._watch.clear()
        self._oneshot.clear()
        self._oneshot_entries.clear()

    def _verify(self, config: p4runtime_pb2.ForwardingPipelineConfig) -> tuple[_Pipeline, bool]:
        """Build (but do not install) the pipeline of `config`; True when it is the current one."""
        if not config.HasField("p4info"):
            raise _invalid("the forwarding pipeline config has no P4Info")
        index = _Index(config.p4info)
        cookie = config.cookie.cookie if config.HasField("cookie") else None
        current = self._pipeline
        if not config.p4_device_config:
            if current is None:
                raise _invalid("empty p4_device_config and no program is loaded")
            if index.signature() != current.index.signature():
                raise _invalid("empty p4_device_config, but the P4Info does not match the loaded program")
            return _Pipeline(current.switch, index, current.device_config, cookie), True
        if self._load_pipeline is None:
            raise RequestError(grpc.StatusCode.UNIMPLEMENTED, "this server cannot load new programs")
        try:
            switch = self._load_pipeline(bytes(config.p4_device_config), config.p4info)
        except Exception as e:  # compile errors come back to the client, not as a crash
            if isinstance(e, RequestError):
                raise
            raise _invalid(f"cannot load the P4 device config: {e}") from None
        _check_program_matches(switch.info, index)
        return _Pipeline(switch, index, bytes(config.p4_device_config), cookie), False

    def SetForwardingPipelineConfig(self, request, context):
        Req = p4runtime_pb2.SetForwardingPipelineConfigRequest
        try:
            self._check_primary(request.device_id, request.role, _election_id(request))
            with self.lock:
                action = request.action
                if action == Req.COMMIT:
                    if self._saved is None:
                        raise RequestError(
                            grpc.StatusCode.FAILED_PRECONDITION, "COMMIT without a saved config"
                        )
                    saved, self._saved = self._saved, None
                    if self._pipeline is not None and saved.switch is self._pipeline.switch:
                        self._reset_state(saved.switch)
                    self._activate(saved)
                elif action in (
                    Req.VERIFY,
                    Req.VERIFY_AND_SAVE,
                    Req.VERIFY_AND_COMMIT,
                    Req.RECONCILE_AND_COMMIT,
                ):
                    pipeline, same_switch = self._verify(request.config)
                    if action == Req.VERIFY_AND_SAVE:
                        self._saved = pipeline
                    elif action == Req.VERIFY_AND_COMMIT:
                        if same_switch:
                            self._reset_state(pipeline.switch)
                        self._activate(pipeline)
                    elif action == Req.RECONCILE_AND_COMMIT:
                        kept = None
                        if not same_switch and self._pipeline is not None:
                            self._migrate_state(self._pipeline.switch, pipeline.switch)
                            kept = self._kept_selector_state(pipeline.switch)
                        self._activate(pipeline)
                        if kept is not None:
                            self._watch, self._oneshot, self._oneshot_entries = kept
                else:
                    raise _invalid(f"unsupported SetForwardingPipelineConfig action {action}")
        except Exception as e:
            err = _as_request_error(e)
            context.abort(err.code, err.message)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        Req = p4runtime_pb2.GetForwardingPipelineConfigRequest
        if request.device_id != self.device_id:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown device id {request.device_id}")
        pipeline = self._pipeline
        if pipeline is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config has been set")
        resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        if pipeline.cookie is not None:
            resp.config.cookie.cookie = pipeline.cookie
        rt = request.response_type
        if rt in (Req.ALL, Req.P4INFO_AND_COOKIE):
            resp.config.p4info.CopyFrom(pipeline.index.p4info)
        if rt in (Req.ALL, Req.DEVICE_CONFIG_AND_COOKIE):
            resp.config.p4_device_config = pipeline.device_config
        return resp

    def _reset_state(self, sw: SwitchAPI) -> None:
        """Forwarding state back to the program's initial state (VERIFY_AND_COMMIT of the
        loaded program)."""
        for t in sw.info.tables:
            sw.clear_table(t.name)
            if not t.default_action_const:
                sw.reset_default_entry(t.name)
        for ap in sw.info.action_profiles:  # entries and defaults referring to them are gone
            for gid in list(sw.read_groups(ap.name)):
                sw.delete_group(ap.name, gid)
            for mid in list(sw.read_members(ap.name)):
                sw.delete_member(ap.name, mid)
        for gid in list(sw.mc_groups()):
            sw.mc_group_delete(gid)
        for sid in list(sw.clone_sessions()):
            sw.clone_session_delete(sid)
        for r in sw.info.registers:
            for i in range(r.size):
                sw.register_write(r.name, i, 0)
        for c in sw.info.counters:
            for i in range(c.size):
                sw.counter_write(c.name, i, 0, 0)
        for v in sw.info.value_sets:
            sw.value_set_write(v.name, [])
        self._entry_extra.clear()
        self._meter_configs.clear()
        self._clear_selector_state()

    def _kept_selector_state(self, new: SwitchAPI) -> tuple[dict, dict, dict]:
        """Watch ports and one-shot records of the groups _migrate_state carried over."""
        groups = {(ap.name, gid) for ap in new.info.action_profiles for gid in new.read_groups(ap.name)}
        watch = {k: v for k, v in self._watch.items() if k in groups}
        oneshot = {gid: v for gid, v in self._oneshot.items() if (v[0], gid) in groups}
        entries = {k: gid for k, gid in self._oneshot_entries.items() if gid in oneshot}
        return watch, oneshot, entries

    def _migrate_state(self, old: SwitchAPI, new: SwitchAPI) -> None:
        """RECONCILE_AND_COMMIT: carry over what still fits the new program."""
        new_tables = {t.name: t for t in new.info.tables}
        new_profiles = {ap.name for ap in new.info.action_profiles}
        for ap in old.info.action_profiles:  # before the entries that refer to them
            if ap.name not in new_profiles:
                continue
            for mid, (action, args) in old.read_members(ap.name).items():
                try:
                    new.insert_member(ap.name, mid, action, args)
                except SwitchError as err:
                    log.info("reconcile: dropping member %d of %s: %s", mid, ap.name, err)
            weights = old.read_group_weights(ap.name)
            for gid, (members, max_size) in old.read_groups(ap.name).items():
                try:
                    new.insert_group(ap.name, gid, members, max_size, [weights[gid][m] for m in members])
                except SwitchError as err:
                    log.info("reconcile: dropping group %d of %s: %s", gid, ap.name, err)
        for t in old.info.tables:
            if t.name not in new_tables:
                continue
            for e in old.read_entries(t.name):
                if e.is_const:
                    continue
                try:
                    new.insert_entry(api.TableEntry(e.table, dict(e.match), e.action, dict(e.args),
                                                    e.priority, member=e.member, group=e.group))
                except SwitchError as err:
                    log.info("reconcile: dropping an entry of %s: %s", t.name, err)
            try:
                ref = old.get_default_reference(t.name)
                action, args = old.get_default_entry(t.name)
                if new_tables[t.name].default_action_const:
                    pass
                elif ref is not None:
                    new.set_default_reference(t.name, **{ref[0]: ref[1]})
                else:
                    new.set_default_entry(t.name, action, args)
            except SwitchError as err:
                log.info("reconcile: keeping the default entry of %s: %s", t.name, err)
        for gid, replicas in old.mc_groups().items():
            new.mc_group_set(gid, replicas)
        for session in old.clone_sessions().values():
            new.clone_session_set(session)
        new_vsets = {v.name for v in new.info.value_sets}
        for v in old.info.value_sets:
            if v.name not in new_vsets:
                continue
            try:
                new.value_set_write(v.name, old.value_set_read(v.name))
            except SwitchError as err:
                log.info("reconcile: dropping the members of value set %s: %s", v.name, err)
        new_regs = {(r.name, r.bitwidth, r.size) for r in new.info.registers}
        for r in old.info.registers:
            if (r.name, r.bitwidth, r.size) in new_regs:
                for i in range(r.size):
                    new.register_write(r.name, i, old.register_read(r.name, i))

    # -- Write

    def Write(self, request, context):
        try:
            self._check_primary(request.device_id, request.role, _election_id(request))
            if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
                raise RequestError(
                    grpc.StatusCode.UNIMPLEMENTED, "only CONTINUE_ON_ERROR atomicity is supported"
                )
            if self._pipeline is None:
                raise RequestError(
                    grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config has been set"
                )
        except Exception as e:
            err = _as_request_error(e)
            context.abort(err.code, err.message)
        errors: list[RequestError | None] = []
        with self.lock:
            for update in request.updates:
                try:
                    self._apply_update(update)
                    errors.append(None)
                except Exception as e:
                    errors.append(_as_request_error(e))
        if any(errors):
            status = status_pb2.Status(code=code_pb2.UNKNOWN, message="Write failure.")
            for err in errors:
                p4err = p4runtime_pb2.Error()
                if err is None:
                    p4err.canonical_code = code_pb2.OK
                else:
                    p4err.canonical_code = _canonical(err.code)
                    p4err.message = err.message
                detail = any_pb2.Any()
                detail.Pack(p4err)
                status.details.append(detail)
            context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
            failed = [f"#{i}: {e.code.name}: {e.message}" for i, e in enumerate(errors) if e is not None]
            context.abort(grpc.StatusCode.UNKNOWN, "Write failure: " + "; ".join(failed))
        return p4runtime_pb2.WriteResponse()

    def _apply_update(self, update) -> None:
        U = p4runtime_pb2.Update
        if update.type not in (U.INSERT, U.MODIFY, U.DELETE):
            raise _invalid("update type must be INSERT, MODIFY or DELETE")
        kind = update.entity.WhichOneof("entity")
        if kind == "table_entry":
            self._write_table_entry(update.type, update.entity.table_entry)
        elif kind == "packet_replication_engine_entry":
            self._write_pre(update.type, update.entity.packet_replication_engine_entry)
        elif kind == "register_entry":
            self._write_register(update.type, update.entity.register_entry)
        elif kind == "counter_entry":
            self._write_counter(update.type, update.entity.counter_entry)
        elif kind == "direct_counter_entry":
            self._write_direct_counter(update.type, update.entity.direct_counter_entry)
        elif kind == "meter_entry":
            self._write_meter(update.type, update.entity.meter_entry)
        elif kind == "digest_entry":
            self._write_digest(update.type, update.entity.digest_entry)
        elif kind == "value_set_entry":
            self._write_value_set(update.type, update.entity.value_set_entry)
        elif kind == "action_profile_member":
            self._write_member(update.type, update.entity.action_profile_member)
        elif kind == "action_profile_group":
            self._write_group(update.type, update.entity.action_profile_group)
        elif kind is None:
            raise _invalid("update has no entity")
        else:
            raise RequestError(grpc.StatusCode.UNIMPLEMENTED, f"writing {kind} is not supported")

    @staticmethod
    def _decode(data: bytes, width: int, what: str) -> int:
        try:
            return bytes_to_int(data, width, what)
        except ValueError as e:
            raise _invalid(str(e)) from None

    def _parse_match(
        self, table: _TableMeta | _ValueSetMeta, matches: Iterable, owner: str = "table"
    ) -> dict[str, api.Match]:
        """FieldMatch messages of a table entry (or of a value set member: owner "value set")."""
        MF = p4info_pb2.MatchField
        out: dict[str, api.Match] = {}
        for fm in matches:
            f = table.fields_by_id.get(fm.field_id)
            if f is None:
                raise _invalid(f"{owner} {table.name!r} has no match field with id {fm.field_id}")
            if f.name in out:
                raise _invalid(f"match field {f.name!r} appears twice")
            kind = fm.WhichOneof("field_match_type")
            w = f.bitwidth
            what = f"match field {f.name!r}"
            expected = {
                MF.EXACT: "exact",
                MF.LPM: "lpm",
                MF.TERNARY: "ternary",
                MF.RANGE: "range",
                MF.OPTIONAL: "optional",
            }.get(f.match_type, "other")
            if kind != expected:
                raise _invalid(f"{what} is {expected}, but the request gives a {kind} match")
            if kind == "exact":
                out[f.name] = api.Exact(self._decode(fm.exact.value, w, what))
            elif kind == "lpm":
                plen = fm.lpm.prefix_len
                if plen == 0:
                    raise _invalid(f"{what}: a prefix length of 0 is a don't-care; omit the field")
                if not 0 < plen <= w:
                    raise _invalid(f"{what}: prefix length {plen} is outside 1..{w}")
                value = self._decode(fm.lpm.value, w, what)
                if value & ((1 << (w - plen)) - 1):
                    raise _invalid(f"{what}: lpm value {value:#x} has bits set beyond the /{plen} prefix")
                out[f.name] = api.Lpm(value, plen)
            elif kind == "ternary":
                value = self._decode(fm.ternary.value, w, what)
                mask = self._decode(fm.ternary.mask, w, what + " mask")
                if mask == 0:
                    raise _invalid(f"{what}: a ternary mask of 0 is a don't-care; omit the field")
                if value & ~mask:
                    raise _invalid(f"{what}: ternary value {value:#x} has bits set outside mask {mask:#x}")
                out[f.name] = api.Ternary(value, mask)
            elif kind == "range":
                low = self._decode(fm.range.low, w, what + " low")
                high = self._decode(fm.range.high, w, what + " high")
                if low > high:
                    raise _invalid(f"{what}: range low {low} is greater than high {high}")
                if low == 0 and high == (1 << w) - 1:
                    raise _invalid(f"{what}: the full range is a don't-care; omit the field")
                out[f.name] = api.Range(low, high)
            elif kind == "optional":
                out[f.name] = api.Optional_(self._decode(fm.optional.value, w, what))
            else:
                raise RequestError(
                    grpc.StatusCode.UNIMPLEMENTED, f"{what}: match kind {f.other!r} is not supported"
                )
        for f in table.fields_by_id.values():
            if f.match_type == MF.EXACT and f.name not in out:
                raise _invalid(f"exact match field {f.name!r} of {owner} {table.name!r} is missing")
        return out

    def _parse_action(self, table: _TableMeta, action, default: bool) -> tuple[str, dict[str, int]]:
        A = p4info_pb2.ActionRef
        if action.action_id not in table.action_scopes:
            raise _invalid(f"action id {action.action_id} is not an action of table {table.name!r}")
        meta = self._index().action(action.action_id)
        scope = table.action_scopes[action.action_id]
        if default and scope == A.TABLE_ONLY:
            raise _invalid(f"action {meta.name!r} is @tableonly in {table.name!r}, it cannot be the default")
        if not default and scope == A.DEFAULT_ONLY:
            raise _invalid(
                f"action {meta.name!r} is @defaultonly in {table.name!r}, it cannot be in an entry"
            )
        args: dict[str, int] = {}
        for p in action.params:
            if p.param_id not in meta.params_by_id:
                raise _invalid(f"action {meta.name!r} has no parameter with id {p.param_id}")
            name, width = meta.params_by_id[p.param_id]
            if name in args:
                raise _invalid(f"parameter {name!r} of action {meta.name!r} given twice")
            args[name] = self._decode(p.value, width, f"parameter {name!r} of {meta.name!r}")
        missing = [n for n, _ in meta.params_by_id.values() if n not in args]
        if missing:
            raise _invalid(f"action {meta.name!r} is missing parameter(s) {', '.join(missing)}")
        return meta.name, args

    def _index(self) -> _Index:
        assert self._pipeline is not None
        return self._pipeline.index

    def _entry_key(self, te) -> api.TableEntry:
        """The key part of a TableEntry message, for DELETE, direct counters and reads."""
        table = self._index().table(te.table_id)
        match = self._parse_match(table, te.match)
        self._check_priority(table, te.priority)
        return api.TableEntry(table.name, match, "", {}, te.priority)

    @staticmethod
    def _check_priority(table: _TableMeta, priority: int) -> None:
        if table.needs_priority and priority <= 0:
            raise _invalid(
                f"table {table.name!r} has ternary, range or optional fields: priority must be > 0"
            )
        if not table.needs_priority and priority != 0:
            raise _invalid(f"table {table.name!r} has only exact and lpm fields: priority must be 0")

    def _write_table_entry(self, utype: int, te) -> None:
        U = p4runtime_pb2.Update
        sw = self._pipeline.switch
        table = self._index().table(te.table_id)
        if te.HasField("meter_config") or te.HasField("meter_counter_data"):
            raise RequestError(grpc.StatusCode.UNIMPLEMENTED, "direct meter configs are not supported")
        if te.idle_timeout_ns and not table.idle_timeout:
            raise _invalid(f"table {table.name!r} does not support idle timeouts")
        if te.HasField("counter_data") and table.direct_counter is None:
            raise _invalid(f"table {table.name!r} has no direct counter")
        action_kind = te.action.WhichOneof("type")
        oneshot = action_kind == "action_profile_action_set"
        indirect = oneshot or action_kind in ("action_profile_member_id", "action_profile_group_id")
        if indirect and not table.implementation_id:
            raise _invalid(f"table {table.name!r} has no action profile: its entries take an action")
        if indirect and not oneshot and not te.is_default_action and utype != U.DELETE:
            self._check_selector_mode(self._index().profile(table.implementation_id)[0], "manual")
        if oneshot and te.is_default_action:
            raise RequestError(grpc.StatusCode.UNIMPLEMENTED,
                               "one-shot action selector programming of a default entry")
        ref = {}
        if action_kind == "action_profile_member_id":
            ref = {"member": te.action.action_profile_member_id}
        elif action_kind == "action_profile_group_id":
            ref = {"group": te.action.action_profile_group_id}
        if te.is_default_action:
            if utype != U.MODIFY:
                raise _invalid("the default entry can only be modified (use MODIFY)")
            if len(te.match) or te.priority:
                raise _invalid("the default entry has no match key and no priority")
            if table.const_default_action_id:
                raise RequestError(
                    grpc.StatusCode.PERMISSION_DENIED, f"table {table.name!r} has a const default action"
                )
            if action_kind is None:
                sw.reset_default_entry(table.name)
            elif ref:
                sw.set_default_reference(table.name, **ref)
            else:
                name, args = self._parse_action(table, te.action.action, default=True)
                sw.set_default_entry(table.name, name, args)
            return
        if table.is_const:
            raise RequestError(grpc.StatusCode.PERMISSION_DENIED, f"table {table.name!r} is const")
        match = self._parse_match(table, te.match)
        self._check_priority(table, te.priority)
        key = (table.name, _match_key(match), te.priority)
        if utype == U.DELETE:
            sw.delete_entry(api.TableEntry(table.name, match, "", {}, te.priority))
            self._entry_extra.pop(key, None)
            if key in self._oneshot_entries:  # PI deletes the group, then its members
                self._drop_oneshot(self._oneshot_entries.pop(key))
            return
        if action_kind is None:
            raise _invalid("a table entry needs an action")
        if oneshot:
            ref = {"group": self._oneshot_group(table, te.action.action_profile_action_set)}
        if ref:
            entry = api.TableEntry(table.name, match, "", {}, te.priority, **ref)
        else:
            name, args = self._parse_action(table, te.action.action, default=False)
            entry = api.TableEntry(table.name, match, name, args, te.priority)
        try:
            if utype == U.INSERT:
                sw.insert_entry(entry)
            else:
                sw.modify_entry(entry)
        except Exception:
            if oneshot:  # PI's cleanup of what the failed update created
                self._drop_oneshot(ref["group"])
            raise
        old = self._oneshot_entries.pop(key, None)
        if old is not None:  # MODIFY: the entry's previous one-shot group goes
            self._drop_oneshot(old)
        if oneshot:
            self._oneshot_entries[key] = ref["group"]
        if te.controller_metadata or te.metadata:
            self._entry_extra[key] = (te.controller_metadata, te.metadata)
        elif utype == U.INSERT:
            self._entry_extra.pop(key, None)
        if te.HasField("counter_data"):
            sw.write_direct_counter(entry, te.counter_data.byte_count, te.counter_data.packet_count)
        elif utype == U.INSERT and table.direct_counter is not None:
            sw.write_direct_counter(entry, 0, 0)

    def _write_member(self, utype: int, m) -> None:
        """ActionProfileMember: an action (checked against the profile's first table; the switch
        checks it against every table of the profile) under a member id."""
        U = p4runtime_pb2.Update
        sw = self._pipeline.switch
        name, table_ids, _ = self._index().profile(m.action_profile_id)
        self._check_selector_mode(name, "manual")
        if utype == U.DELETE:
            sw.delete_member(name, m.member_id)
            return
        if not m.HasField("action"):
            raise _invalid(f"member {m.member_id} of action profile {name!r} needs an action")
        if not table_ids:
            raise _invalid(f"action profile {name!r} has no table")
        action, args = self._parse_action(self._index().table(table_ids[0]), m.action, default=False)
        if utype == U.INSERT:
            sw.insert_member(name, m.member_id, action, args)
        else:
            sw.modify_member(name, m.member_id, action, args)

    def _write_group(self, utype: int, g) -> None:
        """ActionProfileGroup: members of a selector with weights, as PI programs them: a
        weight < 1 is INVALID_ARGUMENT, a member of weight w is w bmv2 members (the switch makes
        the copies), the sum of the weights is bounded by max_size (else max_group_size). Watch
        ports are kept and read back but not enforced (see softswitch/README.md)."""
        U = p4runtime_pb2.Update
        sw = self._pipeline.switch
        name, _, _ = self._index().profile(g.action_profile_id)
        self._check_selector_mode(name, "manual")
        if utype == U.DELETE:
            sw.delete_group(name, g.group_id)
            self._watch.pop((name, g.group_id), None)
            return
        for m in g.members:
            if m.weight <= 0:
                raise _invalid(f"group {g.group_id} of {name!r}: member {m.member_id} weight {m.weight}: "
                               "member weight must be a positive integer value")
        if g.max_size < 0:
            raise _invalid(f"group {g.group_id} of {name!r}: max_size cannot be less than 0")
        members = [m.member_id for m in g.members]
        weights = [m.weight for m in g.members]
        if utype == U.INSERT:
            sw.insert_group(name, g.group_id, members, g.max_size, weights)
        else:
            sw.modify_group(name, g.group_id, members, g.max_size, weights)
        watch = {m.member_id: w for m in g.members if (w := _watch_of(m)) is not None}
        if watch:
            self._watch[(name, g.group_id)] = watch
        else:
            self._watch.pop((name, g.group_id), None)

    def _check_selector_mode(self, profile: str, mode: str) -> None:
        """PI refuses to mix one-shot entries with members and groups in one profile until it is
        empty again (ActionProfMgr::check_selector_usage)."""
        sw = self._pipeline.switch
        ids = [*sw.read_members(profile), *sw.read_groups(profile)]
        if ids and (mode == "oneshot") != any(i >= _HIDDEN for i in ids):
            raise _invalid(f"action profile {profile!r}: invalid attempt to mix action selector "
                           "programming modes (one-shot entries and members/groups)")

    def _oneshot_group(self, table: _TableMeta, aset) -> int:
        """A one-shot ActionProfileActionSet as PI's ActionProfAccessOneshot makes it: a member per
        action and unit of weight, in order, then a group of them; the group's id."""
        index = self._index()
        name, _, selector = index.profile(table.implementation_id)
        if not selector:
            raise _invalid(f"table {table.name!r}: one-shot programming needs an action selector")
        if not aset.action_profile_actions:
            raise RequestError(grpc.StatusCode.UNIMPLEMENTED, "No support for empty action profile groups")
        acts = []
        for a in aset.action_profile_actions:
            action, args = self._parse_action(table, a.action, default=False)
            acts.append((action, args, a.weight, _watch_of(a)))
        if any(w <= 0 for _, _, w, _ in acts):
            raise _invalid("member weight must be a positive integer value")
        limit = next(ap.max_group_size for ap in index.p4info.action_profiles
                     if ap.preamble.id == table.implementation_id)
        if limit and sum(w for _, _, w, _ in acts) > limit:
            raise RequestError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                               f"sum of weights exceeds the max_group_size {limit} of {name!r}")
        self._check_selector_mode(name, "oneshot")
        sw = self._pipeline.switch
        mids: list[int] = []
        try:
            for action, args, w, _ in acts:
                for _ in range(w):
                    mid, self._hidden_next = self._hidden_next, self._hidden_next + 1
                    sw.insert_member(name, mid, action, args)
                    mids.append(mid)
            gid, self._hidden_next = self._hidden_next, self._hidden_next + 1
            sw.insert_group(name, gid, mids, 0)
        except Exception:
            for mid in mids:
                sw.delete_member(name, mid)
            raise
        self._oneshot[gid] = (name, acts)
        return gid

    def _drop_oneshot(self, gid: int) -> None:
        sw = self._pipeline.switch
        name, _ = self._oneshot.pop(gid)
        members, _ = sw.read_groups(name)[gid]
        sw.delete_group(name, gid)
        for mid in members:
            sw.delete_member(name, mid)

    def _read_members(self, req) -> Iterator[p4runtime_pb2.Entity]:
        sw = self._pipeline.switch
        index = self._index()
        ids = [req.action_profile_id] if req.action_profile_id else list(index.profiles)
        for pid in ids:
            name, _, _ = index.profile(pid)
            for mid, (action, args) in sorted(sw.read_members(name).items()):
                if (req.member_id and mid != req.member_id) or mid >= _HIDDEN:
                    continue
                out = p4runtime_pb2.Entity()
                out.action_profile_member.action_profile_id = pid
                out.action_profile_member.member_id = mid
                self._action_to_proto(action, args, out.action_profile_member.action)
                yield out

    def _read_groups(self, req) -> Iterator[p4runtime_pb2.Entity]:
        sw = self._pipeline.switch
        index = self._index()
        ids = [req.action_profile_id] if req.action_profile_id else list(index.profiles)
        for pid in ids:
            name, _, selector = index.profile(pid)
            if not selector:
                continue
            weights = sw.read_group_weights(name)
            for gid, (members, max_size) in sorted(sw.read_groups(name).items()):
                if (req.group_id and gid != req.group_id) or gid >= _HIDDEN:
                    continue
                out = p4runtime_pb2.Entity()
                g = out.action_profile_group
                g.action_profile_id, g.group_id, g.max_size = pid, gid, max_size
                watch = self._watch.get((name, gid), {})
                for mid in members:
                    m = g.members.add(member_id=mid, weight=weights[gid][mid])
                    if mid in watch:
                        setattr(m, *watch[mid])
                yield out

    def _write_pre(self, utype: int, pre) -> None:
        U = p4runtime_pb2.Update
        sw = self._pipeline.switch
        kind = pre.WhichOneof("type")
        if kind == "multicast_group_entry":
            g = pre.multicast_group_entry
            if g.multicast_group_id == 0:
                raise _invalid("multicast group id 0 is reserved")
            exists = g.multicast_group_id in sw.mc_groups()
            if utype == U.INSERT and exists:
                raise RequestError(
                    grpc.StatusCode.ALREADY_EXISTS, f"multicast group {g.multicast_group_id} exists"
                )
            if utype != U.INSERT and not exists:
                raise RequestError(grpc.StatusCode.NOT_FOUND, f"no multicast group {g.multicast_group_id}")
            if utype == U.DELETE:
                sw.mc_group_delete(g.multicast_group_id)
            else:
                sw.mc_group_set(g.multicast_group_id, _replicas(g.replicas))
        elif kind == "clone_session_entry":
            c = pre.clone_session_entry
            if c.session_id == 0:
                raise _invalid("clone session id 0 is reserved")
            exists = c.session_id in sw.clone_sessions()
            if utype == U.INSERT and exists:
                raise RequestError(grpc.StatusCode.ALREADY_EXISTS, f"clone session {c.session_id} exists")
            if utype != U.INSERT and not exists:
                raise RequestError(grpc.StatusCode.NOT_FOUND, f"no clone session {c.session_id}")
            if utype == U.DELETE:
                sw.clone_session_delete(c.session_id)
            else:
                sw.clone_session_set(
                    api.CloneSession(
                        c.session_id, _replicas(c.replicas), c.class_of_service, c.packet_length_bytes
                    )
                )
        else:
            raise _invalid("packet replication engine entry has no multicast group or clone session")

    def _indices(self, msg, size: int, what: str) -> range | list[int]:
        if not msg.HasField("index"):
            return range(size)
        i = msg.index.index
        if not 0 <= i < size:
            raise RequestError(grpc.StatusCode.OUT_OF_RANGE, f"{what}: index {i} is outside 0..{size - 1}")
        return [i]

    def _write_register(self, utype: int, e) -> None:
        if utype != p4runtime_pb2.Update.MODIFY:
            raise _invalid("register entries can only be modified (use MODIFY)")
        name, width, size = _by_id(self._index().registers, e.register_id, "register")
        if e.data.WhichOneof("data") != "bitstring":
            raise _invalid(f"register {name!r}: data must be a bitstring")
        value = self._decode(e.data.bitstring, width, f"register {name!r} value")
        for i in self._indices(e, size, f"register {name!r}"):
            self._pipeline.switch.register_write(name, i, value)

    def _write_counter(self, utype: int, e) -> None:
        if utype != p4runtime_pb2.Update.MODIFY:
            raise _invalid("counter entries can only be modified (use MODIFY)")
        name, size = _by_id(self._index().counters, e.counter_id, "counter")
        for i in self._indices(e, size, f"counter {name!r}"):
            self._pipeline.switch.counter_write(name, i, e.data.byte_count, e.data.packet_count)

    def _write_direct_counter(self, utype: int, e) -> None:
        if utype != p4runtime_pb2.Update.MODIFY:
            raise _invalid("direct counter entries can only be modified (use MODIFY)")
        table = self._index().table(e.table_entry.table_id)
        if table.direct_counter is None:
            raise _invalid(f"table {table.name!r} has no direct counter")
        key = self._entry_key(e.table_entry)
        self._pipeline.switch.write_direct_counter(key, e.data.byte_count, e.data.packet_count)

    def _write_meter(self, utype: int, e) -> None:
        if utype != p4runtime_pb2.Update.MODIFY:
            raise _invalid("meter entries can only be modified (use MODIFY)")
        name, size = _by_id(self._index().meters, e.meter_id, "meter")
        if not e.HasField("config"):
            raise RequestError(grpc.StatusCode.UNIMPLEMENTED, f"meter {name!r}: resetting a meter config")
        c = e.config
        for i in self._indices(e, size, f"meter {name!r}"):
            self._pipeline.switch.meter_set_config(name, i, c.cir, c.cburst, c.pir, c.pburst)
            self._meter_configs[(name, i)] = c

    def _write_value_set(self, utype: int, e) -> None:
        """P4Runtime 1.4 "ValueSetEntry": only MODIFY, which replaces all members (none empties
        the set); more members than the P4Info size is RESOURCE_EXHAUSTED, a repeated member
        ALREADY_EXISTS."""
        if utype != p4runtime_pb2.Update.MODIFY:
            raise _invalid("a value set can only be modified: MODIFY replaces its members")
        vs = self._index().value_set(e.value_set_id)
        if len(e.members) > vs.size:
            raise RequestError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"value set {vs.name!r} holds at most {vs.size} member(s); {len(e.members)} given",
            )
        names = self._vs_names(vs)
        members = []
        for i, m in enumerate(e.members):
            try:
                match = self._parse_match(vs, m.match, "value set")
            except RequestError as err:
                raise RequestError(err.code, f"member {i}: {err.message}") from None
            members.append({names.get(k, k): v for k, v in match.items()})
        self._pipeline.switch.value_set_write(vs.name, members)

    def _vs_names(self, vs: _ValueSetMeta) -> dict[str, str]:
        """P4Info field name -> the switch's field name, matched by position (p4c's P4Info
        leaves the one field of a value_set<bit<W>> unnamed; the switch names it)."""
        prog = next((v for v in self._pipeline.switch.info.value_sets if v.name == vs.name), None)
        if prog is None:
            return {f.name: f.name for f in vs.fields}
        return {f.name: mf.name for f, mf in zip(vs.fields, prog.match_fields, strict=False)}

    def _read_value_sets(self, req) -> Iterator[p4runtime_pb2.Entity]:
        sw = self._pipeline.switch
        index = self._index()
        if req.value_set_id == 0:
            vsets = list(index.value_sets.values())
        else:
            vsets = [index.value_set(req.value_set_id)]
        for vs in vsets:
            out = p4runtime_pb2.Entity()
            out.value_set_entry.value_set_id = vs.id
            by_switch_name = {sn: vs.fields_by_name[pn] for pn, sn in self._vs_names(vs).items()}
            for member in sw.value_set_read(vs.name):
                self._matches_to_proto(by_switch_name, member, out.value_set_entry.members.add().match)
            yield out

    def _write_digest(self, utype: int, e) -> None:
        U = p4runtime_pb2.Update
        _by_id(self._index().digests, e.digest_id, "digest")
        exists = e.digest_id in self._digest_configs
        if utype == U.INSERT and exists:
            raise RequestError(grpc.StatusCode.ALREADY_EXISTS, f"digest {e.digest_id} is already configured")
        if utype != U.INSERT and not exists:
            raise RequestError(grpc.StatusCode.NOT_FOUND, f"digest {e.digest_id} is not configured")
        if utype == U.DELETE:
            del self._digest_configs[e.digest_id]
        else:
            cfg = p4runtime_pb2.DigestEntry.Config()
            cfg.CopyFrom(e.config)
            self._digest_configs[e.digest_id] = cfg

    # -- Read

    def Read(self, request, context):
        if request.device_id != self.device_id:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown device id {request.device_id}")
        if self._pipeline is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config has been set")
        # Entities of all the request's entities go out in responses of up to 1000: a Read of
        # 8,192 single register cells is a few messages, not 8,192 (each costs a gRPC send).
        pending: list[p4runtime_pb2.Entity] = []
        for entity in request.entities:
            try:
                with self.lock:
                    pending += self._read_entity(entity)
            except Exception as e:
                err = _as_request_error(e)
                context.abort(err.code, err.message)
            while len(pending) >= _READ_CHUNK:
                yield p4runtime_pb2.ReadResponse(entities=pending[:_READ_CHUNK])
                del pending[:_READ_CHUNK]
        if pending:
            yield p4runtime_pb2.ReadResponse(entities=pending)

    def _read_entity(self, entity) -> Iterator[p4runtime_pb2.Entity]:
        kind = entity.WhichOneof("entity")
        if kind == "table_entry":
            yield from self._read_table_entries(entity.table_entry)
        elif kind == "packet_replication_engine_entry":
            yield from self._read_pre(entity.packet_replication_engine_entry)
        elif kind == "register_entry":
            yield from self._read_registers(entity.register_entry)
        elif kind == "counter_entry":
            yield from self._read_counters(entity.counter_entry)
        elif kind == "direct_counter_entry":
            yield from self._read_direct_counters(entity.direct_counter_entry)
        elif kind == "meter_entry":
            yield from self._read_meters(entity.meter_entry)
        elif kind == "value_set_entry":
            yield from self._read_value_sets(entity.value_set_entry)
        elif kind == "action_profile_member":
            yield from self._read_members(entity.action_profile_member)
        elif kind == "action_profile_group":
            yield from self._read_groups(entity.action_profile_group)
        elif kind == "digest_entry":
            for did, cfg in self._digest_configs.items():
                if entity.digest_entry.digest_id in (0, did):
                    out = p4runtime_pb2.Entity()
                    out.digest_entry.digest_id = did
                    out.digest_entry.config.CopyFrom(cfg)
                    yield out
        elif kind is None:
            raise _invalid("read entity has no type")
        else:
            raise RequestError(grpc.StatusCode.UNIMPLEMENTED, f"reading {kind} is not supported")

    @staticmethod
    def _matches_to_proto(fields_by_name: dict[str, _FieldMeta], match: dict[str, api.Match], out) -> None:
        """A match (field name -> Match) as FieldMatch messages in the empty repeated field
        `out`, in field id order, don't-care fields left out."""
        MF = p4info_pb2.MatchField
        for fname, m in match.items():
            f = fields_by_name.get(fname)
            if f is None or _is_dont_care(m, f.bitwidth):
                continue
            fm = out.add(field_id=f.id)
            if isinstance(m, api.Exact):
                fm.exact.value = int_to_bytes(m.value)
            elif isinstance(m, api.Lpm):
                fm.lpm.value = int_to_bytes(m.value)
                fm.lpm.prefix_len = m.prefix_len
            elif isinstance(m, api.Ternary):
                if f.match_type == MF.OPTIONAL:  # a const entry's optional given as value &&& mask
                    del out[-1]
                    out.add(field_id=f.id).optional.value = int_to_bytes(m.value)
                    continue
                fm.ternary.value = int_to_bytes(m.value)
                fm.ternary.mask = int_to_bytes(m.mask)
            elif isinstance(m, api.Range):
                fm.range.low = int_to_bytes(m.low)
                fm.range.high = int_to_bytes(m.high)
            elif isinstance(m, api.Optional_):
                fm.optional.value = int_to_bytes(m.value)
        out.sort(key=lambda fm: fm.field_id)

    def _entry_to_proto(self, table: _TableMeta, e: api.TableEntry, out: p4runtime_pb2.TableEntry) -> None:
        out.table_id = table.id
        self._matches_to_proto(table.fields_by_name, e.match, out.match)
        if e.member is not None:
            out.action.action_profile_member_id = e.member
        elif e.group is not None and e.group in self._oneshot:
            for action, args, weight, watch in self._oneshot[e.group][1]:
                a = out.action.action_profile_action_set.action_profile_actions.add(weight=weight)
                self._action_to_proto(action, args, a.action)
                if watch is not None:
                    setattr(a, *watch)
        elif e.group is not None:
            out.action.action_profile_group_id = e.group
        else:
            self._action_to_proto(e.action, e.args, out.action.action)
        out.priority = e.priority
        out.is_const = e.is_const
        extra = self._entry_extra.get((table.name, _match_key(e.match), e.priority))
        if extra:
            out.controller_metadata, out.metadata = extra

    def _action_to_proto(self, name: str, args: dict[str, int], out: p4runtime_pb2.Action) -> None:
        index = self._index()
        if name not in index.action_ids:
            raise RequestError(
                grpc.StatusCode.INTERNAL, f"the switch uses action {name!r}, unknown to the P4Info"
            )
        meta = index.actions[index.action_ids[name]]
        out.action_id = meta.id
        for pname, (pid, _width) in sorted(meta.params_by_name.items(), key=lambda kv: kv[1][0]):
            out.params.add(param_id=pid, value=int_to_bytes(args.get(pname, 0)))

    def _read_table_entries(self, req) -> Iterator[p4runtime_pb2.Entity]:
        sw = self._pipeline.switch
        index = self._index()
        if req.table_id == 0:
            tables = list(index.tables.values())
        else:
            tables = [index.table(req.table_id)]
        want_counters = req.HasField("counter_data")
        if req.is_default_action:
            if req.table_id == 0:
                raise _invalid("reading default entries needs a table id")
            table = tables[0]
            out = p4runtime_pb2.Entity()
            out.table_entry.table_id = table.id
            out.table_entry.is_default_action = True
            ref = sw.get_default_reference(table.name) if table.implementation_id else None
            if ref is not None:
                setattr(out.table_entry.action, f"action_profile_{ref[0]}_id", ref[1])
            else:
                action, args = sw.get_default_entry(table.name)
                self._action_to_proto(action, args, out.table_entry.action.action)
            yield out
            return
        want_key = None
        if req.table_id and len(req.match):
            key = self._entry_key(req)
            want_key = (_match_key(key.match), key.priority)
        for table in tables:
            for e in sw.read_entries(table.name):
                if want_key is not None and (_match_key(e.match), e.priority) != want_key:
                    continue
                if req.table_id and not len(req.match) and req.priority and e.priority != req.priority:
                    continue
                out = p4runtime_pb2.Entity()
                self._entry_to_proto(table, e, out.table_entry)
                if want_counters and table.direct_counter is not None:
                    byte_count, packet_count = sw.read_direct_counter(e)
                    out.table_entry.counter_data.byte_count = byte_count
                    out.table_entry.counter_data.packet_count = packet_count
                yield out

    def _read_pre(self, req) -> Iterator[p4runtime_pb2.Entity]:
        sw = self._pipeline.switch
        kind = req.WhichOneof("type")
        if kind == "multicast_group_entry":
            gid = req.multicast_group_entry.multicast_group_id
            for g, replicas in sorted(sw.mc_groups().items()):
                if gid in (0, g):
                    out = p4runtime_pb2.Entity()
                    entry = out.packet_replication_engine_entry.multicast_group_entry
                    entry.multicast_group_id = g
                    for r in replicas:
                        entry.replicas.add(egress_port=r.egress_port, instance=r.instance)
                    yield out
        elif kind == "clone_session_entry":
            sid = req.clone_session_entry.session_id
            for s, session in sorted(sw.clone_sessions().items()):
                if sid in (0, s):
                    out = p4runtime_pb2.Entity()
                    entry = out.packet_replication_engine_entry.clone_session_entry
                    entry.session_id = s
                    entry.class_of_service = session.class_of_service
                    entry.packet_length_bytes = session.packet_length_bytes
                    for r in session.replicas:
                        entry.replicas.add(egress_port=r.egress_port, instance=r.instance)
                    yield out
        else:
            raise _invalid("packet replication engine read has no multicast group or clone session")

    def _read_registers(self, req) -> Iterator[p4runtime_pb2.Entity]:
        index = self._index()
        if req.register_id:
            _by_id(index.registers, req.register_id, "register")
        for rid, (name, _width, size) in index.registers.items():
            if req.register_id not in (0, rid):
                continue
            for i in self._indices(req, size, f"register {name!r}") if req.register_id else range(size):
                out = p4runtime_pb2.Entity()
                out.register_entry.register_id = rid
                out.register_entry.index.index = i
                out.register_entry.data.bitstring = int_to_bytes(self._pipeline.switch.register_read(name, i))
                yield out

    def _read_counters(self, req) -> Iterator[p4runtime_pb2.Entity]:
        index = self._index()
        if req.counter_id:
            _by_id(index.counters, req.counter_id, "counter")
        for cid, (name, size) in index.counters.items():
            if req.counter_id not in (0, cid):
                continue
            for i in self._indices(req, size, f"counter {name!r}") if req.counter_id else range(size):
                byte_count, packet_count = self._pipeline.switch.counter_read(name, i)
                out = p4runtime_pb2.Entity()
                out.counter_entry.counter_id = cid
                out.counter_entry.index.index = i
                out.counter_entry.data.byte_count = byte_count
                out.counter_entry.data.packet_count = packet_count
                yield out

    def _read_direct_counters(self, req) -> Iterator[p4runtime_pb2.Entity]:
        sw = self._pipeline.switch
        index = self._index()
        te = req.table_entry
        tables = [index.table(te.table_id)] if te.table_id else list(index.tables.values())
        want_key = None
        if te.table_id and len(te.match):
            key = self._entry_key(te)
            want_key = (_match_key(key.match), key.priority)
        for table in tables:
            if table.direct_counter is None:
                if te.table_id:
                    raise _invalid(f"table {table.name!r} has no direct counter")
                continue
            for e in sw.read_entries(table.name):
                if want_key is not None and (_match_key(e.match), e.priority) != want_key:
                    continue
                byte_count, packet_count = sw.read_direct_counter(e)
                out = p4runtime_pb2.Entity()
                self._entry_to_proto(table, e, out.direct_counter_entry.table_entry)
                out.direct_counter_entry.table_entry.ClearField("action")
                out.direct_counter_entry.data.byte_count = byte_count
                out.direct_counter_entry.data.packet_count = packet_count
                yield out

    def _read_meters(self, req) -> Iterator[p4runtime_pb2.Entity]:
        index = self._index()
        if req.meter_id:
            _by_id(index.meters, req.meter_id, "meter")
        for mid, (name, size) in index.meters.items():
            if req.meter_id not in (0, mid):
                continue
            for i in self._indices(req, size, f"meter {name!r}") if req.meter_id else range(size):
                out = p4runtime_pb2.Entity()
                out.meter_entry.meter_id = mid
                out.meter_entry.index.index = i
                if (name, i) in self._meter_configs:
                    out.meter_entry.config.CopyFrom(self._meter_configs[(name, i)])
                yield out


def _is_dont_care(m: api.Match, width: int) -> bool:
    if isinstance(m, api.Lpm):
        return m.prefix_len == 0
    if isinstance(m, api.Ternary):
        return m.mask == 0
    if isinstance(m, api.Range):
        return m.low == 0 and m.high == (1 << width) - 1
    return False


def _match_key(match: dict[str, api.Match]) -> frozenset:
    """Hashable form of a match, without don't-care fields."""
    return frozenset(
        (name, m)
        for name, m in match.items()
        if not (isinstance(m, api.Lpm) and m.prefix_len == 0)
        and not (isinstance(m, api.Ternary) and m.mask == 0)
    )


def _replicas(replicas: Iterable) -> list[api.Replica]:
    out: list[api.Replica] = []
    seen: set[tuple[int, int]] = set()
    for r in replicas:
        if r.WhichOneof("port_kind") == "port":
            try:
                port = bytes_to_int(r.port, 32, "replica port")
            except ValueError as e:
                raise _invalid(str(e)) from None
        else:
            port = r.egress_port
        if (port, r.instance) in seen:
            raise _invalid(f"replica (port {port}, instance {r.instance}) appears twice")
        seen.add((port, r.instance))
        out.append(api.Replica(port, r.instance))
    return out


__all__ = [
    "P4RuntimeServer",
    "RequestError",
    "bytes_to_int",
    "int_to_bytes",
    "P4RUNTIME_API_VERSION",
]
