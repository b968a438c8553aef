"""The native backend of the software switch: the same SwitchAPI as `softswitch.switch.Switch`,
with the pipeline compiled to C (p4compiler.c_backend) and run by the C runtime
(softswitch/native/src) through cffi.

The control plane's checks stay in Python and are the Python backend's own: each table keeps a
`softswitch.tables.Table` as a mirror that validates and normalises entries (same errors, same
read-back), and only then is the entry written to the C table. Registers, counters, meters,
groups and sessions are written straight through. Packets go through C: `process_packet` for
one frame in-process (STF, tests), `start()` for the C data-path threads over AF_PACKET ports.

    switch = create_switch(program, backend="auto")   # NativeSwitch, or Switch when C cannot run it
"""

from __future__ import annotations

import logging
import os
import random
import sys
import threading
from typing import Any, Mapping, Sequence

from p4compiler.c_backend import wide
from p4compiler.errors import P4Error
from p4compiler.ir import GROUP_ACTION
from p4compiler.python_backend import CompiledProgram
from p4compiler.python_backend.types import serial_width
from softswitch import api
from softswitch.api import CloneSession, NotFound, Replica, SwitchError, check_ingress_port
from softswitch.switch import Switch
from softswitch.tables import Table, ValueSet

log = logging.getLogger("softswitch")

BACKENDS = ("auto", "native", "python")
_KIND = {"exact": 0, "lpm": 1, "ternary": 2, "range": 3, "optional": 4, "range_next": 5, "lpm_next": 6}
_ERRORS = {-1: SwitchError, -2: NotFound, -3: api.AlreadyExists, -4: api.ResourceExhausted,
           -5: api.ResourceExhausted, -6: SwitchError}
DIGEST_ROOM = 64  # SS_MAX_DIGEST_FIELDS: a poll with this much room never drops a digest
POLL_MS = 100  # how long a poll thread blocks in C before it looks at the stop flag


def _register_banks(registers: list[dict]) -> list[tuple[int, list[dict]]]:
    """The manifest's registers grouped by the bank the compiler put them in (c_backend's
    register_layout), as (number of the bank's first register, members in order)."""
    banks: dict[int, list[dict]] = {}
    for r in registers:
        banks.setdefault(r["bank"], []).append(r)
    return sorted(banks.items())


def default_backend() -> str:
    """$INNET_SWITCH_BACKEND, else auto."""
    b = os.environ.get("INNET_SWITCH_BACKEND", "auto").strip().lower() or "auto"
    if b not in BACKENDS:
        raise SwitchError(f"INNET_SWITCH_BACKEND={b!r}: choose one of {', '.join(BACKENDS)}")
    return b


def create_switch(program: CompiledProgram, backend: str | None = None, cpu_port: int = 64,
                  seed: int | None = None, announce: bool = True) -> Switch:
    """A switch for `program` on the chosen backend. With `auto`, a program the C emitter cannot
    handle (or a missing C compiler) runs on the Python backend, and one line says why."""
    backend = backend or default_backend()
    if backend not in BACKENDS:
        raise SwitchError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    if backend == "python":
        return Switch(program, cpu_port=cpu_port, seed=seed)
    try:
        return NativeSwitch(program, cpu_port=cpu_port, seed=seed)
    except P4Error as e:
        if backend == "native":
            raise
        if announce:  # stderr: stdout's first lines are what launchers wait for
            print(f"softswitch: native backend unavailable, running the Python backend: {e}", file=sys.stderr,
                  flush=True)
        return Switch(program, cpu_port=cpu_port, seed=seed)


class NativeSwitch(Switch):
    """A Switch whose pipeline runs in C (see the module docstring)."""

    backend = "native"

    def __init__(self, program: CompiledProgram, cpu_port: int = 64, seed: int | None = None):
        self._sw = None
        self._started = False
        self._poller: threading.Thread | None = None  # packet-in
        self._digest_poller: threading.Thread | None = None
        self._stop_poll = threading.Event()
        self._seed = seed if seed is not None else random.SystemRandom().getrandbits(63)
        super().__init__(program, cpu_port=cpu_port, seed=seed)

    @classmethod
    def from_file(cls, path: str, include_dirs: Sequence[str] = (), defines: Mapping[str, str] | None = None,
                  cpu_port: int = 64, *, allow_nonportable: bool = False) -> "NativeSwitch":
        """As Switch.from_file, on the native back end."""
        from p4compiler.python_backend import compile_file

        return cls(compile_file(path, include_dirs, defines, allow_nonportable=allow_nonportable),
                   cpu_port=cpu_port)

    # ------------------------------------------------------------------ program
    def load(self, program: CompiledProgram) -> None:
        from softswitch.native import build_native

        native = build_native(program)
        with self.lock:
            self._free()
            self.program = program
            self.info = program.info
            self.native = native
            self.ffi, self.lib = native.ffi, native.lib
            # looked up now, not in __del__: a garbage collection inside cffi's lazy symbol lookup
            # (another switch's load) runs __del__ there, and a first lookup would then wait on
            # the FFI's lock, which that thread already holds, for ever
            self._ss_stop, self._ss_switch_free = native.lib.ss_stop, native.lib.ss_switch_free
            m = native.manifest
            self.manifest = m
            self._action_no = {a["name"]: i for i, a in enumerate(m["actions"])}
            self._table_no = {t["name"]: i for i, t in enumerate(m["tables"])}
            self._reg = {r["name"]: (i, r) for i, r in enumerate(m["registers"])}
            self._ctr = {c["name"]: (i, c) for i, c in enumerate(m["counters"])}
            self._mtr = {x["name"]: (i, x) for i, x in enumerate(m["meters"])}
            self._digests = m.get("digests", [])
            sw = self.lib.ss_switch_new(self.cpu_port, self._seed & ((1 << 64) - 1))
            if sw == self.ffi.NULL:
                raise SwitchError("the native runtime could not allocate a switch")
            self._sw = sw
            self._define(m)
            self._check(self.lib.ss_switch_load(sw, self.ffi.addressof(self.lib, "ss_program_desc")),
                        "loading the program")
            # control-plane state kept in Python, as the Python backend keeps it
            self.registers, self.counters, self.meters, self.direct_meters = {}, {}, {}, {}
            # value sets: checked and read back through these mirrors, matched in C
            self.value_sets = {
                v.name: ValueSet(v.name, v.size, v.match_fields) for v in program.info.value_sets
            }
            self._vs_no = {v["name"]: i for i, v in enumerate(m.get("value_sets", []))}
            self.mc: dict[int, list[Replica]] = {}
            self.sessions: dict[int, CloneSession] = {}
            self._pending_digests = []
            self.tables: dict[str, Table] = {}
            specs = {t.p4name: t for t in program.tables}
            for tinfo in program.info.tables:
                spec = specs[tinfo.name]
                fns = {a: a for a in spec.action_fns}  # the mirror's "action" is its name
                t = Table(tinfo, spec, None, fns, spec.direct_counter, None)  # type: ignore[arg-type]
                self.tables[tinfo.name] = t
                self._push_default(t)
                for entry in t.initial_entries():
                    self._insert(t, entry, initial=True)
            self._make_profiles()
            self._pkt_in = program.controller_headers.get("packet_in")
            self._pkt_out = program.controller_headers.get("packet_out")
            self._outs_p = self.ffi.new("const ss_out **")
            self._obuf_p = self.ffi.new("const uint8_t **")

    def _define(self, m: dict) -> None:
        lib, ffi, sw = self.lib, self.ffi, self._sw
        for i, a in enumerate(m["actions"]):
            n_words = sum(len(wide.limb_widths(p["width"])) for p in a["params"])  # wide: its limbs
            self._check(lib.ss_define_action(sw, i, n_words), f"action {a['name']}")
        for i, t in enumerate(m["tables"]):
            # a key wider than 64 bits is its limbs, most significant first, each of the key's kind
            # (a range's or lpm's further limbs are SS_MATCH_RANGE_NEXT / SS_MATCH_LPM_NEXT: one key)
            nxt = {"range": "range_next", "lpm": "lpm_next"}
            limbs = [(nxt.get(k["match_kind"], k["match_kind"]) if j else k["match_kind"], lw)
                     for k in t["keys"] for j, lw in enumerate(wide.limb_widths(k["width"]))]
            kinds = ffi.new("uint8_t[]", [_KIND[k] for k, _ in limbs] or [0])
            widths = ffi.new("uint16_t[]", [lw for _, lw in limbs] or [0])
            self._check(lib.ss_define_table(sw, i, len(limbs), kinds, widths, t["size"],
                                            int(t["direct_counter"]), t["direct_meter"],
                                            int(t["largest_priority_wins"])), f"table {t['name']}")
        for first, regs in _register_banks(m["registers"]):
            if len(regs) == 1:
                r = regs[0]
                n = len(wide.limb_widths(r["width"]))  # a wide register: n 64-bit cells per index
                self._check(lib.ss_define_register(sw, first, min(r["width"], 64), r["size"] * n),
                            f"register {r['name']}")
            else:
                widths = ffi.new("uint32_t[]", [r["width"] for r in regs])
                self._check(lib.ss_define_register_bank(sw, first, len(regs), widths, regs[0]["size"]),
                            f"registers {regs[0]['name']}..{regs[-1]['name']}")
        for i, c in enumerate(m["counters"]):
            unit = c["unit"].upper()
            self._check(lib.ss_define_counter(sw, i, c["size"], int(unit != "PACKETS"), int(unit != "BYTES")),
                        f"counter {c['name']}")
        for i, x in enumerate(m["meters"]):
            self._check(lib.ss_define_meter(sw, i, x["size"], int(x["unit"].upper() == "BYTES")),
                        f"meter {x['name']}")
        for i, x in enumerate(m.get("direct_meters", [])):
            self._check(lib.ss_define_direct_meter(sw, i, int(x["unit"].upper() == "BYTES")),
                        f"direct meter {x['name']}")
        for i, v in enumerate(m.get("value_sets", [])):
            n = sum(len(wide.limb_widths(w)) for w in v["keys"])
            self._check(lib.ss_define_value_set(sw, i, n, v["size"]), f"value set {v['name']}")

    def _check(self, rc: int, what: str) -> None:
        if rc < 0:
            msg = ""
            if self._sw:
                msg = self.ffi.string(self.lib.ss_last_error(self._sw)).decode(errors="replace")
            raise _ERRORS.get(rc, SwitchError)(f"native switch refused {what}: {msg or rc}")

    def _free(self) -> None:
        if getattr(self, "_sw", None) is not None:
            self.stop()
            self._ss_switch_free(self._sw)
            self._sw = None

    def close(self) -> None:
        with self.lock:
            self._free()

    def __del__(self) -> None:  # the C switch owns threads and sockets
        try:
            self._free()
        except Exception:  # interpreter shutdown: nothing useful to report
            pass

    # ------------------------------------------------------------------ tables
    def _entry_arrays(self, t: Table, entry: api.TableEntry) -> tuple[Any, Any, int]:
        norm = t._normalize(entry)[0]
        vals, masks = [], []
        for item, kind, w in zip(norm, t.kinds, t.widths, strict=False):
            full = (1 << w) - 1
            if item is None:  # wildcard
                v, mk = 0, full if kind == "range" else 0
            elif item[0] == "e":
                v, mk = item[1], full
            else:
                v, mk = item[1], item[2]
            for lv, lm in wide.split_match(kind, v, mk, w):  # a key wider than 64 bits: its limbs
                vals.append(lv)
                masks.append(lm)
        prio = entry.priority if t.needs_priority else 0
        return (self.ffi.new("uint64_t[]", vals or [0]), self.ffi.new("uint64_t[]", masks or [0]), prio)

    def _words(self, t: Table, action: str, argv: Sequence[int]) -> list[int]:
        return [x for (_, w), v in zip(t.params[action], argv, strict=True) for x in wide.split(v, w)]

    def _call(self, t: Table, fn: Any, argv: tuple) -> tuple[int, Any, int]:
        """What C runs for a mirror table's resolved call (Entry.fn/argv, Table._default_call):
        (action number, argument words, their count). A selector's group is SS_GROUP_ACTION with
        [n, stride, (action, params padded to stride - 1) per member], members in bmv2's order."""
        if fn == GROUP_ACTION:
            stride = 1 + max(sum(len(wide.limb_widths(w)) for _, w in ps) for ps in t.params.values())
            words = [len(argv), stride]
            for name, av in argv:
                m = [self._action_no[name], *self._words(t, name, av)]
                words += m + [0] * (stride - len(m))
        else:
            words = self._words(t, fn, argv)
        action = GROUP_ACTION if fn == GROUP_ACTION else self._action_no[fn]
        return action, self.ffi.new("uint64_t[]", words or [0]), len(words)

    def _push_default(self, t: Table) -> None:
        no = self._table_no[t.name]
        self._check(self.lib.ss_table_set_default(self._sw, no, *self._call(t, *t._default_call)),
                    f"the default action of {t.name}")

    def _push_entry(self, t: Table, e: Any, add: bool) -> None:
        vals, masks, prio = self._entry_arrays(t, t.as_api(e))
        fn = self.lib.ss_table_add if add else self.lib.ss_table_modify
        self._check(fn(self._sw, self._table_no[t.name], vals, masks, prio, *self._call(t, e.fn, e.argv)),
                    f"an entry of {t.name}")

    def _apply_changes(self, changes: list) -> None:
        for t, entries, default in changes:
            for e in entries:
                self._push_entry(t, e, False)
            if default:
                self._push_default(t)

    def _default_changed(self, t: Table) -> None:
        self._push_default(t)

    def insert_entry(self, entry: api.TableEntry) -> None:
        with self.lock:
            self._insert(self._table(entry.table), entry)

    def _insert(self, t: Table, entry: api.TableEntry, initial: bool = False) -> None:
        t.insert(entry, initial=initial)
        try:
            self._push_entry(t, t.find(entry), True)
        except SwitchError:
            t.discard(entry)
            raise

    def modify_entry(self, entry: api.TableEntry) -> None:
        with self.lock:
            t = self._table(entry.table)
            t.modify(entry)
            self._push_entry(t, t.find(entry), False)

    def delete_entry(self, entry: api.TableEntry) -> None:
        with self.lock:
            t = self._table(entry.table)
            t.delete(entry)
            vals, masks, prio = self._entry_arrays(t, entry)
            self._check(self.lib.ss_table_delete(self._sw, self._table_no[t.name], vals, masks, prio),
                        f"an entry of {t.name}")

    def set_default_entry(self, table: str, action: str, args: dict[str, int]) -> None:
        with self.lock:
            t = self._table(table)
            t.set_default(action, args)
            self._push_default(t)

    def reset_default_entry(self, table: str) -> None:
        with self.lock:
            t = self._table(table)
            t.reset_default()
            self._push_default(t)

    def clear_table(self, table: str) -> None:
        with self.lock:
            t = self._table(table)
            t.clear()
            self._check(self.lib.ss_table_clear(self._sw, self._table_no[t.name]), f"clearing {t.name}")
            for e in t.entries.values():  # const entries stay
                self._push_entry(t, e, True)

    def _direct_counter(self, entry: api.TableEntry, write: tuple[int, int] | None) -> tuple[int, int]:
        t = self._table(entry.table)
        if t.direct_counter is None:
            raise NotFound(f"table {t.name} has no direct counter")
        t.find(entry)
        vals, masks, prio = self._entry_arrays(t, entry)
        b = self.ffi.new("uint64_t *", write[0] if write else 0)
        p = self.ffi.new("uint64_t *", write[1] if write else 0)
        rc = self.lib.ss_table_direct_counter(self._sw, self._table_no[t.name], vals, masks, prio, b, p,
                                              int(write is not None))
        self._check(rc, f"the direct counter of {t.name}")
        return int(b[0]), int(p[0])

    def read_direct_counter(self, entry: api.TableEntry) -> tuple[int, int]:
        with self.lock:
            return self._direct_counter(entry, None)

    def write_direct_counter(self, entry: api.TableEntry, byte_count: int, packet_count: int) -> None:
        with self.lock:
            self._direct_counter(entry, (byte_count, packet_count))

    # ------------------------------------------------------------------ externs
    def _lookup(self, d: dict, what: str, name: str, index: int) -> tuple[int, dict]:
        if name not in d:
            raise NotFound(f"no {what} named {name}")
        no, rec = d[name]
        if not 0 <= index < rec["size"]:
            raise SwitchError(f"index {index} out of range for {what} {name} (size {rec['size']})")
        return no, rec

    def register_read(self, name: str, index: int) -> int:
        with self.lock:
            no, rec = self._lookup(self._reg, "register", name, index)
            v = self.ffi.new("uint64_t *")
            n = len(wide.limb_widths(rec["width"]))  # a wide register: n cells per index
            limbs = []
            for i in range(n):
                self._check(self.lib.ss_register_get(self._sw, no, index * n + i, v), f"register {name}")
                limbs.append(int(v[0]))
            return wide.join(limbs, rec["width"])

    def register_write(self, name: str, index: int, value: int) -> None:
        with self.lock:
            no, rec = self._lookup(self._reg, "register", name, index)
            if value < 0 or value >> rec["width"]:
                raise SwitchError(f"value {value} does not fit in register {name} ({rec['width']} bits)")
            limbs = wide.split(value, rec["width"])
            for i, x in enumerate(limbs):
                self._check(self.lib.ss_register_set(self._sw, no, index * len(limbs) + i, x),
                            f"register {name}")

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        with self.lock:
            no, _ = self._lookup(self._ctr, "counter", name, index)
            b, p = self.ffi.new("uint64_t *"), self.ffi.new("uint64_t *")
            self._check(self.lib.ss_counter_get(self._sw, no, index, b, p), f"counter {name}")
            return int(b[0]), int(p[0])

    def counter_write(self, name: str, index: int, byte_count: int, packet_count: int) -> None:
        with self.lock:
            no, _ = self._lookup(self._ctr, "counter", name, index)
            self._check(self.lib.ss_counter_set(self._sw, no, index, byte_count, packet_count),
                        f"counter {name}")

    def meter_set_config(self, name: str, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        with self.lock:
            no, _ = self._lookup(self._mtr, "meter", name, index)
            if pir < cir:
                raise SwitchError("meter peak rate must be at least the committed rate")
            self._check(self.lib.ss_meter_config(self._sw, no, index, cir, cburst, pir, pburst),
                        f"meter {name}")

    def value_set_write(self, name: str, members: Sequence[Mapping[str, api.Match]]) -> None:
        with self.lock:
            vs = self._get(self.value_sets, "value set", name)
            norm = vs.normalize(members)
            vals: list[int] = []
            masks: list[int] = []
            for values, mks in norm:  # a field wider than 64 bits: its limbs, as the select key
                for v, mk, f in zip(values, mks, vs.fields, strict=True):
                    vals.extend(wide.split(v, f.bitwidth))
                    masks.extend(wide.split(mk, f.bitwidth))
            self._check(self.lib.ss_value_set_replace(self._sw, self._vs_no[name], len(norm),
                                                      self.ffi.new("uint64_t[]", vals or [0]),
                                                      self.ffi.new("uint64_t[]", masks or [0])),
                        f"the members of value set {name}")
            vs.write(members)

    # ------------------------------------------------------------------ packet replication engine
    def mc_group_set(self, group_id: int, replicas: list[Replica]) -> None:
        super().mc_group_set(group_id, replicas)
        with self.lock:
            ports = self.ffi.new("uint32_t[]", [r.egress_port for r in replicas] or [0])
            rids = self.ffi.new("uint32_t[]", [r.instance for r in replicas] or [0])
            self._check(self.lib.ss_mc_group_set(self._sw, group_id, ports, rids, len(replicas)),
                        f"multicast group {group_id}")

    def mc_group_delete(self, group_id: int) -> None:
        super().mc_group_delete(group_id)
        with self.lock:
            self._check(self.lib.ss_mc_group_delete(self._sw, group_id), f"multicast group {group_id}")

    def clone_session_set(self, session: CloneSession) -> None:
        super().clone_session_set(session)
        with self.lock:
            reps = session.replicas
            ports = self.ffi.new("uint32_t[]", [r.egress_port for r in reps] or [0])
            rids = self.ffi.new("uint32_t[]", [r.instance for r in reps] or [0])
            self._check(self.lib.ss_clone_session_set(self._sw, session.session_id, ports, rids, len(reps),
                                                      session.packet_length_bytes),
                        f"clone session {session.session_id}")

    def clone_session_delete(self, session_id: int) -> None:
        super().clone_session_delete(session_id)
        with self.lock:
            self._check(self.lib.ss_clone_session_delete(self._sw, session_id), f"clone session {session_id}")

    # ------------------------------------------------------------------ packets
    def process_packet(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        check_ingress_port(ingress_port)
        with self.lock:
            # outputs in arrays the C switch owns and grows: no cap of ours on their number
            n = self.lib.ss_process_all(self._sw, ingress_port, data, len(data), self._outs_p, self._obuf_p)
            if n < 0:
                self._check(n, "a packet")
            outs, base = self._outs_p[0], self._obuf_p[0]
            outputs = []
            for i in range(n):
                o = outs[i]
                frame = bytes(self.ffi.buffer(base + o.offset, o.length))
                if o.port == self.cpu_port and self._pkt_in is not None and self._packet_in_handlers:
                    self._deliver_packet_in(frame)
                else:
                    outputs.append((int(o.port), frame))
            # under the lock: a close() in another thread cannot free the switch under it
            self._drain_digests(0)
        return outputs

    def process_batch(self, ingress_port: int, frames: Sequence[bytes], repeat: int = 1) -> int:
        """Run frames through the pipeline in C, `repeat` times over, outputs counted and not
        returned (the in-process benchmark: no Python per packet). Returns the outputs."""
        keep = [self.ffi.from_buffer(f) for f in frames]
        ptrs = self.ffi.new("const uint8_t *[]", keep)
        lens = self.ffi.new("uint32_t[]", [len(f) for f in frames])
        n_out = self.ffi.new("uint64_t *")
        total = 0
        for _ in range(repeat):
            with self.lock:
                self._check(self.lib.ss_process_batch(self._sw, ingress_port, ptrs, lens, len(frames), n_out),
                            "a batch")
            total += int(n_out[0])
        return total

    def packet_out(self, payload: bytes, metadata: dict[str, int]) -> list[tuple[int, bytes]]:
        if not self._started:
            return super().packet_out(payload, metadata)
        hdr = self._packet_out_header(metadata)
        frame = hdr + payload
        with self.lock:
            self._check(self.lib.ss_packet_out(self._sw, frame, len(frame)), "a packet-out")
        return []  # the C data path sent what the pipeline made of it

    def _packet_out_header(self, metadata: dict[str, int]) -> bytes:
        if self._pkt_out is None:
            return b""
        acc, total = 0, 0
        for fname, ft in self._pkt_out.fields:
            w = serial_width(ft) or 0
            v = int(metadata.get(fname, 0))
            if v < 0 or v >> w:
                raise SwitchError(f"packet_out metadata {fname}={v} does not fit in {w} bits")
            acc = (acc << w) | v
            total += w
        return acc.to_bytes(total // 8, "big")

    def _drain_digests(self, timeout_ms: int, stop: threading.Event | None = None) -> None:
        """Deliver the queued digests to the handlers: wait up to timeout_ms for the first, then
        take what is there. Stops when a handler closed the switch, or set `stop`."""
        sw = self._sw
        if not self._digests or sw is None:
            return
        num, nf = self.ffi.new("uint32_t *"), self.ffi.new("uint32_t *")
        fields = self.ffi.new("uint64_t[]", DIGEST_ROOM)
        while True:
            n = self.lib.ss_digest_poll(sw, num, fields, DIGEST_ROOM, nf, timeout_ms)
            if n <= 0:  # timeout, or the switch is being freed (SS_EIO)
                return
            d = self._digests[num[0]]
            data, i = {}, 0
            signed = d.get("signed") or []
            for f, (name, w) in enumerate(d["fields"]):  # a field wider than 64 bits: its limbs
                k = len(wide.limb_widths(w))
                if i + k > nf[0]:
                    break
                v = wide.join([int(fields[i + j]) for j in range(k)], w)
                if f < len(signed) and signed[f] and v >> (w - 1):  # int<W>: signed, as in Python
                    v -= 1 << w
                data[name] = v
                i += k
            for h in self._digest_handlers:
                h(d["name"], [data])
            if self._sw is not sw or (stop is not None and stop.is_set()):
                return  # a handler closed or stopped the switch: do not touch it again
            timeout_ms = 0

    # ------------------------------------------------------------------ the C data path
    def start(self, interfaces: Sequence[tuple[int, str]], netem: Mapping[int, Any] | None = None,
              loss_rate: float = 0.0, loss_seed: int | None = None, offloads: bool = False) -> None:
        """Bind ports (AF_PACKET) and run receive, pipeline and transmit in C threads; ``offloads``:
        the ports exchange super-frames with the kernel (ss_set_port_offloads, --offloads)."""
        from softswitch.netem import LinkParams  # noqa: F401 (the type of netem's values)

        with self.lock:
            if offloads:
                self._check(self.lib.ss_set_port_offloads(self._sw, 1), "--offloads")
            for port_no, ifname in interfaces:
                self._check(self.lib.ss_port_add(self._sw, port_no, ifname.encode()),
                            f"port {port_no}@{ifname}")
            seed = loss_seed if loss_seed is not None else random.SystemRandom().getrandbits(63)
            for port_no, p in (netem or {}).items():
                for direction in (0, 1):
                    self._check(self.lib.ss_port_netem(
                        self._sw, port_no, direction, int(p.delay_s * 1e9), int(p.jitter_s * 1e9),
                        min(int(p.loss * 2**32), 2**32 - 1), int(p.rate_bps or 0), int(p.limit),
                        int(p.backlog_s * 1e9), seed + 2 * port_no + direction), f"--netem of port {port_no}")
            if loss_rate:
                self._check(self.lib.ss_set_loss_rate(self._sw, loss_rate, seed), "--loss-rate")
            self._check(self.lib.ss_start(self._sw), "starting the data path")
            self._started = True
        self._stop_poll.clear()
        self._poller = threading.Thread(target=self._poll_loop, name="native-packet-in", daemon=True)
        self._poller.start()
        # digests get their own thread: a digest is delivered when it is made, not when the
        # packet-in poll next times out
        self._digest_poller = None
        if self._digests:
            self._digest_poller = threading.Thread(target=self._digest_loop, name="native-digests",
                                                   daemon=True)
            self._digest_poller.start()

    def _poll_loop(self) -> None:
        buf = self.ffi.new("uint8_t[]", 65536)  # >= SS_MAX_FRAME: no frame is too big for it
        sw = self._sw
        while not self._stop_poll.is_set():
            n = self.lib.ss_packet_in_poll(sw, buf, 65536, POLL_MS)
            if n > 0:
                frame = bytes(self.ffi.buffer(buf, n))
                if self._pkt_in is not None and self._packet_in_handlers:
                    self._deliver_packet_in(frame)
            elif n < 0:  # the switch is being freed
                break

    def _digest_loop(self) -> None:
        while not self._stop_poll.is_set() and self._sw is not None:
            self._drain_digests(POLL_MS, self._stop_poll)

    def stop(self) -> None:
        if self._started and self._sw is not None:
            self._stop_poll.set()
            # The pollers call into the C switch without self.lock: they must be gone before the
            # switch can be freed (close, load).  A handler running in a poller may itself call
            # stop()/close(): then that poller leaves its loop when the handler returns.
            for poller in (self._poller, self._digest_poller):
                if poller is not None and poller is not threading.current_thread():
                    poller.join(timeout=2)
                    if poller.is_alive():
                        log.warning("waiting for a packet-in/digest handler to return before stopping the "
                                    "switch")
                        poller.join()
            self._ss_stop(self._sw)
            self._started = False

    def stats(self) -> dict[str, int]:
        s = self.ffi.new("ss_stats *")
        with self.lock:  # not while close() frees the switch
            self._check(self.lib.ss_get_stats(self._sw, s), "stats")
        names = ("packets", "passes", "outputs", "pipeline_drops", "assert_drops", "parser_errors",
                 "too_long", "clone_drops", "output_drops", "pktin_dropped", "digest_dropped")
        return {k: int(getattr(s, k)) for k in names}

    def port_stats(self, port: int) -> dict[str, int]:
        s = self.ffi.new("ss_port_stats *")
        with self.lock:
            self._check(self.lib.ss_get_port_stats(self._sw, port, s), f"stats of port {port}")
        names = ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "rx_dropped", "tx_dropped", "netem_lost",
                 "netem_qdrop")
        return {k: int(getattr(s, k)) for k in names}
