"""The v1model software switch: runs a compiled P4 program over packets, as bmv2's
simple_switch does, and implements the control-plane API (`softswitch.api.SwitchAPI`).

Pipeline per packet (bmv2 simple_switch semantics):
  parser -> verify_checksum -> ingress -> [I2E clone] [resubmit] [multicast | drop | unicast]
  -> egress -> [E2E clone] [drop] -> compute_checksum -> deparser -> [truncate] [recirculate] -> port
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Any, Mapping, Sequence

from p4compiler.python_backend import CompiledProgram, compile_file
from p4compiler.python_backend.types import serial_width
from softswitch import algorithms, api, runtime
from softswitch.api import CloneSession, NotFound, Replica, SwitchError
from softswitch.runtime import AssertionFailed, ExitSignal, Packet, ParserError
from softswitch.tables import ActionProfile, Counter, DirectMeter, Meter, Register, Table, ValueSet

log = logging.getLogger("softswitch")

DROP_PORT = 511
# instance_type values of bmv2's simple_switch
NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 3, 4, 5, 6
# Largest frame in or out, as the native backend's SS_MAX_FRAME: an input frame longer than this
# is refused (SwitchError); an output whose deparsed headers alone, or whose whole frame after
# truncation, is longer is dropped (the native backend counts those in stats()["too_long"]).
# Below it a frame may grow by any amount.
MAX_FRAME = 65535
MAX_LOOPS = 64  # resubmit/recirculate passes per packet (a replay batch: one per entry); ends a loop
# egress copies E2E clones may make per input packet (clone-of-clone loops end here); the native
# backend's SS_MAX_E2E_COPIES: a clone that would pass it makes no copy
MAX_E2E_COPIES = 1024


class _Runtime:
    """What the generated code asks for: stateful objects, random numbers, digests, logs."""

    def __init__(self, switch: "Switch"):
        self.sw = switch

    def extern(self, kind: str, name: str, args: dict[str, Any]) -> Any:
        sw = self.sw
        if kind == "register":
            obj: Any = Register(name, args["width"], args["size"], args.get("signed", False))
            sw.registers[name] = obj
        elif kind == "counter":
            obj = Counter(name, args["size"], args["unit"])
            sw.counters[name] = obj
        elif kind == "meter":
            obj = Meter(name, args["size"], args["unit"])
            sw.meters[name] = obj
        elif kind == "direct_meter":
            obj = DirectMeter(name, args["unit"])
            sw.direct_meters[name] = obj
        else:
            obj = None  # direct_counter lives in table entries; action profiles are not supported
        return obj

    def table(self, name: str) -> Table:
        return self.sw._make_table(name)

    def value_set(self, name: str, size: int) -> ValueSet:
        fields = next((v.match_fields for v in self.sw.info.value_sets if v.name == name), [])
        vs = ValueSet(name, size, fields)
        self.sw.value_sets[name] = vs
        return vs

    def random(self, lo: int, hi: int) -> int:
        if lo >= hi:
            return lo
        return self.sw.rng.randint(lo, hi)

    def digest(self, name: str, data: dict[str, int]) -> None:
        self.sw._pending_digests.append((name, dict(data)))

    def log_msg(self, msg: str, data: tuple = ()) -> None:
        text = msg
        for v in data:
            text = text.replace("{}", str(v), 1)
        log.info("log_msg: %s", text)


class Switch:
    """A software switch running one compiled P4 program (implements SwitchAPI)."""

    backend = "python"  # the executable reference; softswitch.native_switch.NativeSwitch runs C

    def __init__(self, program: CompiledProgram, cpu_port: int = 64, seed: int | None = None):
        self.cpu_port = cpu_port
        self.lock = threading.RLock()
        self.rng = algorithms.Xoshiro256(seed)  # the native runtime's generator: same seed, same draws
        self._packet_in_handlers: list[api.PacketInHandler] = []
        self._digest_handlers: list[api.DigestHandler] = []
        self.load(program)

    @classmethod
    def from_file(cls, path: str, include_dirs: Sequence[str] = (), defines: Mapping[str, str] | None = None,
                  cpu_port: int = 64, *, allow_nonportable: bool = False) -> "Switch":
        """A switch running the program at `path` (compile_file's arguments; `allow_nonportable`:
        also what p4c-bm2-ss refuses, see p4compiler/python_backend/portability.py)."""
        return cls(compile_file(path, include_dirs, defines, allow_nonportable=allow_nonportable),
                   cpu_port=cpu_port)

    # ------------------------------------------------------------------ program
    def load(self, program: CompiledProgram) -> None:
        """Install a program; all tables, registers, groups and sessions start empty."""
        with self.lock:
            self.program = program
            self.info = program.info
            self.registers: dict[str, Register] = {}
            self.counters: dict[str, Counter] = {}
            self.meters: dict[str, Meter] = {}
            self.direct_meters: dict[str, DirectMeter] = {}
            self.value_sets: dict[str, ValueSet] = {}
            self.tables: dict[str, Table] = {}
            self.mc: dict[int, list[Replica]] = {}
            self.sessions: dict[int, CloneSession] = {}
            self._pending_digests: list[tuple[str, dict[str, int]]] = []
            self._action_no = {a.name: i for i, a in enumerate(program.info.actions)}
            built = runtime.instantiate(program, _Runtime(self))
            blocks = built["blocks"]
            self._parser = blocks["parser"]
            self._verify = blocks["verify_checksum"]
            self._ingress = blocks["ingress"]
            self._egress = blocks["egress"]
            self._compute = blocks["compute_checksum"]
            self._deparser = blocks["deparser"]
            for tinfo in program.info.tables:
                t = self.tables.get(tinfo.name) or self._make_table(tinfo.name)
                for entry in t.initial_entries():
                    t.insert(entry, initial=True)
            self._make_profiles()
            self._H, self._M, self._SM = built["classes"]
            # error values are numbers; the run-time helpers raise ParserError by name
            self._errno: dict[Any, int] = {n: i for i, n in enumerate(built["errors"])}
            self._pkt_in = program.controller_headers.get("packet_in")
            self._pkt_out = program.controller_headers.get("packet_out")

    def _make_table(self, name: str) -> Table:
        """A table for the generated code (which runs the actions itself): its actions map to the
        program's action numbers."""
        tinfo = self.info.table(name)
        spec = next(t for t in self.program.tables if t.p4name == name)
        dm = self.direct_meters.get(spec.direct_meter) if spec.direct_meter else None
        acts = {a: self._action_no[a] for a in spec.action_fns}
        t = Table(tinfo, spec, None, acts, spec.direct_counter, dm)  # type: ignore[arg-type]
        self.tables[name] = t
        return t

    def _make_profiles(self) -> None:
        self.profiles: dict[str, ActionProfile] = {
            p.name: ActionProfile(p, [self.tables[t] for t in p.table_names])
            for p in self.info.action_profiles}

    # ------------------------------------------------------------------ action profiles
    def _profile(self, name: str) -> ActionProfile:
        p = self.profiles.get(name)
        if p is None:
            raise NotFound(f"no action profile named {name}")
        return p

    def _apply_changes(self, changes: list) -> None:
        """Members or groups changed: (table, entries resolved again, default too). The Python
        tables already run the new actions; the native backend pushes them to C."""

    def _default_changed(self, t: Table) -> None:
        """A table's default changed (the native backend pushes it to C)."""

    def insert_member(self, profile: str, member_id: int, action: str, args: dict[str, int]) -> None:
        with self.lock:
            self._profile(profile).insert_member(member_id, action, args)

    def modify_member(self, profile: str, member_id: int, action: str, args: dict[str, int]) -> None:
        with self.lock:
            self._apply_changes(self._profile(profile).modify_member(member_id, action, args))

    def delete_member(self, profile: str, member_id: int) -> None:
        with self.lock:
            self._profile(profile).delete_member(member_id)

    def read_members(self, profile: str) -> dict[int, tuple[str, dict[str, int]]]:
        with self.lock:
            return self._profile(profile).read_members()

    def insert_group(self, profile: str, group_id: int, members: Sequence[int], max_size: int = 0,
                     weights: Sequence[int] | None = None) -> None:
        with self.lock:
            self._profile(profile).insert_group(group_id, members, max_size, weights)

    def modify_group(self, profile: str, group_id: int, members: Sequence[int], max_size: int = 0,
                     weights: Sequence[int] | None = None) -> None:
        with self.lock:
            self._apply_changes(self._profile(profile).modify_group(group_id, members, max_size, weights))

    def delete_group(self, profile: str, group_id: int) -> None:
        with self.lock:
            self._profile(profile).delete_group(group_id)

    def read_groups(self, profile: str) -> dict[int, tuple[list[int], int]]:
        with self.lock:
            return self._profile(profile).read_groups()

    def read_group_weights(self, profile: str) -> dict[int, dict[int, int]]:
        with self.lock:
            return self._profile(profile).read_group_weights()

    def set_default_reference(self, table: str, member: int | None = None, group: int | None = None) -> None:
        with self.lock:
            t = self._table(table)
            if (member is None) == (group is None):
                raise SwitchError(f"the default of table {table}: give a member or a group")
            t.set_default_reference(("member", member) if member is not None else ("group", group))  # type: ignore
            self._default_changed(t)

    def get_default_reference(self, table: str) -> tuple[str, int] | None:
        with self.lock:
            return self._table(table).default_ref

    # ------------------------------------------------------------------ tables
    def _table(self, name: str) -> Table:
        t = self.tables.get(name)
        if t is None:
            raise NotFound(f"no table named {name}")
        return t

    def insert_entry(self, entry: api.TableEntry) -> None:
        with self.lock:
            self._table(entry.table).insert(entry)

    def modify_entry(self, entry: api.TableEntry) -> None:
        with self.lock:
            self._table(entry.table).modify(entry)

    def delete_entry(self, entry: api.TableEntry) -> None:
        with self.lock:
            self._table(entry.table).delete(entry)

    def read_entries(self, table: str) -> list[api.TableEntry]:
        with self.lock:
            return self._table(table).read()

    def set_default_entry(self, table: str, action: str, args: dict[str, int]) -> None:
        with self.lock:
            self._table(table).set_default(action, args)

    def get_default_entry(self, table: str) -> tuple[str, dict[str, int]]:
        with self.lock:
            t = self._table(table)
            return t.default_action, dict(t.default_args)

    def reset_default_entry(self, table: str) -> None:
        with self.lock:
            self._table(table).reset_default()

    def clear_table(self, table: str) -> None:
        with self.lock:
            self._table(table).clear()

    def read_direct_counter(self, entry: api.TableEntry) -> tuple[int, int]:
        with self.lock:
            t = self._table(entry.table)
            if t.direct_counter is None:
                raise NotFound(f"table {t.name} has no direct counter")
            e = t.find(entry)
            return e.bytes, e.packets

    def write_direct_counter(self, entry: api.TableEntry, byte_count: int, packet_count: int) -> None:
        with self.lock:
            t = self._table(entry.table)
            if t.direct_counter is None:
                raise NotFound(f"table {t.name} has no direct counter")
            e = t.find(entry)
            e.bytes, e.packets = byte_count, packet_count

    # ------------------------------------------------------------------ externs
    def _get(self, kind: dict, what: str, name: str) -> Any:
        obj = kind.get(name)
        if obj is None:
            raise NotFound(f"no {what} named {name}")
        return obj

    def register_read(self, name: str, index: int) -> int:
        with self.lock:
            return self._get(self.registers, "register", name).get(index)

    def register_write(self, name: str, index: int, value: int) -> None:
        with self.lock:
            self._get(self.registers, "register", name).set(index, value)

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        with self.lock:
            c = self._get(self.counters, "counter", name)
            c.check(index)
            return c.bytes[index], c.packets[index]

    def counter_write(self, name: str, index: int, byte_count: int, packet_count: int) -> None:
        with self.lock:
            c = self._get(self.counters, "counter", name)
            c.check(index)
            c.bytes[index], c.packets[index] = byte_count, packet_count

    def meter_set_config(self, name: str, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        with self.lock:
            self._get(self.meters, "meter", name).set_config(index, cir, cburst, pir, pburst)

    def value_set_write(self, name: str, members: Sequence[Mapping[str, api.Match]]) -> None:
        with self.lock:
            self._get(self.value_sets, "value set", name).write(members)

    def value_set_read(self, name: str) -> list[dict[str, api.Match]]:
        with self.lock:
            return self._get(self.value_sets, "value set", name).read()

    # ------------------------------------------------------------------ packet replication engine
    def mc_group_set(self, group_id: int, replicas: list[Replica]) -> None:
        if not 0 < group_id < 65536:
            raise SwitchError(f"multicast group id {group_id} must be in 1..65535")
        with self.lock:
            self.mc[group_id] = [Replica(r.egress_port, r.instance) for r in replicas]

    def mc_group_delete(self, group_id: int) -> None:
        with self.lock:
            if self.mc.pop(group_id, None) is None:
                raise NotFound(f"no multicast group {group_id}")

    def mc_group_get(self, group_id: int) -> list[Replica]:
        with self.lock:
            if group_id not in self.mc:
                raise NotFound(f"no multicast group {group_id}")
            return list(self.mc[group_id])

    def mc_groups(self) -> dict[int, list[Replica]]:
        with self.lock:
            return {g: list(r) for g, r in self.mc.items()}

    def clone_session_set(self, session: CloneSession) -> None:
        if session.session_id <= 0:
            raise SwitchError("clone session ids start at 1")
        with self.lock:
            self.sessions[session.session_id] = session

    def clone_session_delete(self, session_id: int) -> None:
        with self.lock:
            if self.sessions.pop(session_id, None) is None:
                raise NotFound(f"no clone session {session_id}")

    def clone_sessions(self) -> dict[int, CloneSession]:
        with self.lock:
            return dict(self.sessions)

    # ------------------------------------------------------------------ handlers
    def add_packet_in_handler(self, handler: api.PacketInHandler) -> None:
        self._packet_in_handlers.append(handler)

    def add_digest_handler(self, handler: api.DigestHandler) -> None:
        self._digest_handlers.append(handler)

    # ------------------------------------------------------------------ packets
    def packet_out(self, payload: bytes, metadata: dict[str, int]) -> list[tuple[int, bytes]]:
        hdr = b""
        if self._pkt_out is not None:
            acc, total = 0, 0
            for fname, ft in self._pkt_out.fields:
                w = serial_width(ft) or 0
                v = int(metadata.get(fname, 0))
                if v < 0 or v >> w:
                    raise SwitchError(f"packet_out metadata {fname}={v} does not fit in {w} bits")
                acc = (acc << w) | v
                total += w
            hdr = acc.to_bytes(total // 8, "big")
        return self.process_packet(self.cpu_port, hdr + payload)

    def process_packet(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        api.check_ingress_port(ingress_port)  # bit<9>, as the native backend checks it
        if len(data) > MAX_FRAME:  # as the native backend refuses it
            raise SwitchError(f"frame of {len(data)} bytes refused (at most {MAX_FRAME})")
        with self.lock:
            outputs: list[tuple[int, bytes]] = []
            ingress_q: deque = deque([(bytes(data), ingress_port, NORMAL, ())])
            loops = 0
            self._e2e_copies = 0
            while ingress_q:
                loops += 1
                if loops > MAX_LOOPS:
                    log.warning("packet dropped after %d resubmit/recirculate passes", MAX_LOOPS)
                    break
                item = ingress_q.popleft()
                egress_q: deque = deque(self._run_ingress(*item, ingress_q))
                while egress_q:
                    self._run_egress(egress_q.popleft(), outputs, egress_q, ingress_q)
            if self._pending_digests:
                digests, self._pending_digests = self._pending_digests, []
                for name, data_ in digests:
                    for h in self._digest_handlers:
                        h(name, [data_])
            return outputs

    def _parse(self, data: bytes, port: int, itype: int, preserved: tuple) -> tuple[Any, Any, Any, Packet]:
        hdr, meta, sm = self._H(), self._M(), self._SM()
        sm.ingress_port = port
        sm.instance_type = itype
        sm.packet_length = len(data)
        _restore(preserved, meta, sm)
        P = Packet(data, sm)
        try:
            self._parser(P, hdr, meta, sm)
        except ParserError as e:
            # bmv2: the packet still enters ingress, with the error recorded
            sm.parser_error = self._errno.get(e.error, e.error) if e.error is not None else 0
        return hdr, meta, sm, P

    def _run_ingress(self, data: bytes, port: int, itype: int, preserved: tuple, ingress_q: deque) -> list:
        hdr, meta, sm, P = self._parse(data, port, itype, preserved)
        try:
            self._verify(P, hdr, meta)
            self._ingress(P, hdr, meta, sm)
        except ExitSignal:
            pass
        except AssertionFailed as e:
            log.error("%s; packet dropped", e)
            return []
        out = []
        if P.clone is not None and not P.clone[0]:
            _, sid, paths = P.clone
            saved = _capture(paths, meta, sm)
            reps, cut = self._session(sid)
            for r in reps:
                h2, m2, s2, P2 = self._parse(data, port, INGRESS_CLONE, saved)
                out.append((h2, m2, s2, P2, r.egress_port, r.instance, INGRESS_CLONE, cut))
        if P.resubmit is not None:
            # port 0: simple_switch sets ingress_port only for packets it receives (its docs:
            # "For resubmitted and recirculated packets, the ingress_port is 0")
            ingress_q.append((data, 0, RESUBMIT, _capture(P.resubmit, meta, sm)))
            return out
        if sm.mcast_grp:
            reps = self.mc.get(sm.mcast_grp)
            if reps is None:
                log.debug("multicast group %d does not exist; packet dropped", sm.mcast_grp)
            else:
                for r in reps:
                    copy = (hdr._copy(), meta._copy(), sm._copy())
                    out.append((*copy, P, r.egress_port, r.instance, REPLICATION, 0))
        elif sm.egress_spec != DROP_PORT:
            # bmv2 leaves instance_type as ingress ends with it (recirculated: 4, resubmitted: 6)
            out.append((hdr, meta, sm, P, sm.egress_spec, 0, sm.instance_type, 0))
        return out

    def _session(self, sid: int) -> tuple[list[Replica], int]:
        """A clone session's replicas and the length its clones are cut to (packet_length_bytes,
        0: whole)."""
        s = self.sessions.get(sid)
        if s is None:
            log.debug("clone session %d does not exist; no clone made", sid)
            return [], 0
        return s.replicas, s.packet_length_bytes

    def _run_egress(self, item: tuple, outputs: list, egress_q: deque, ingress_q: deque) -> None:
        hdr, meta, sm, Pin, port, rid, itype, cut = item
        sm.egress_port = port
        sm.egress_rid = rid
        sm.instance_type = itype
        sm.egress_spec = port
        P = Packet(Pin.data, sm)
        P.off = Pin.off
        P.length = Pin.length
        P.truncate = Pin.truncate  # truncate() may be called in ingress
        try:
            self._egress(P, hdr, meta, sm)
        except ExitSignal:
            pass
        except AssertionFailed as e:
            log.error("%s; packet dropped", e)
            return
        if P.clone is not None and P.clone[0]:
            _, sid, paths = P.clone
            saved = _capture(paths, meta, sm)
            reps, clone_cut = self._session(sid)
            if self._e2e_copies + len(reps) > MAX_E2E_COPIES:
                log.debug("E2E clone to session %d not made: over %d copies for this packet", sid,
                          MAX_E2E_COPIES)
                reps = []
            self._e2e_copies += len(reps)
            for r in reps:
                m2, s2 = self._M(), self._SM()
                s2.ingress_port = sm.ingress_port
                s2.packet_length = sm.packet_length
                _restore(saved, m2, s2)
                egress_q.append((hdr._copy(), m2, s2, P, r.egress_port, r.instance, EGRESS_CLONE, clone_cut))
        if sm.egress_spec == DROP_PORT:
            return
        try:
            self._compute(P, hdr, meta)
        except ExitSignal:
            pass
        P.out = []
        self._deparser(P, hdr)
        headers = b"".join(P.out)
        if len(headers) > MAX_FRAME:
            return
        data = headers + P.data[P.off:]
        if P.truncate:
            data = data[: P.truncate]
        if cut:  # a clone of a session with packet_length_bytes (bmv2's mirroring truncation)
            data = data[:cut]
        if len(data) > MAX_FRAME:
            return
        if P.recirculate is not None:
            ingress_q.append((data, 0, RECIRC, _capture(P.recirculate, meta, sm)))  # port 0, as resubmit
            return
        if port == self.cpu_port and self._pkt_in is not None and self._packet_in_handlers:
            self._deliver_packet_in(data)
            return
        outputs.append((port, data))

    def _deliver_packet_in(self, data: bytes) -> None:
        assert self._pkt_in is not None
        widths = [(n, serial_width(ft) or 0) for n, ft in self._pkt_in.fields]
        total = sum(w for _, w in widths) // 8
        v = int.from_bytes(data[:total], "big")
        shift = total * 8
        meta = {}
        for n, w in widths:
            shift -= w
            meta[n] = (v >> shift) & ((1 << w) - 1)
        for h in self._packet_in_handlers:
            h(data[total:], meta)


def _capture(paths: tuple, meta: Any, sm: Any) -> tuple:
    out = []
    for path in paths:
        obj = meta if path[0] == "m" else sm
        for a in path[1:-1]:
            obj = getattr(obj, a)
        v = getattr(obj, path[-1])
        out.append((path, v._copy() if hasattr(v, "_copy") else v))
    return tuple(out)


def _restore(saved: tuple, meta: Any, sm: Any) -> None:
    for path, v in saved:
        obj = meta if path[0] == "m" else sm
        for a in path[1:-1]:
            obj = getattr(obj, a)
        if hasattr(v, "_copy"):
            getattr(obj, path[-1])._set(v)
        else:
            setattr(obj, path[-1], v)
