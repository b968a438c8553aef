"""P4Info generation: the control-plane description of a program, as p4c writes it.

`build_p4info(info)` turns the compiler's `ProgramInfo` into a `p4.config.v1.P4Info` message
with the ids p4c (`p4c-bm2-ss --p4runtime-files`) would assign, so a controller written against
a p4c-generated P4Info works unchanged against the software switch:

* top-level ids are `prefix << 24 | hash24`, where the prefix is the resource type from
  p4info.proto (`P4Ids.Prefix`) and hash24 the low 24 bits of the Jenkins one-at-a-time hash of
  the fully qualified name. Names are hashed in sorted order per resource type and a collision
  is resolved by linear probing of the hash value, which is what makes p4c's ids deterministic.
* `@id(N)` values are honoured first: N gets the type prefix unless it already carries the
  right one (a wrong prefix is an error), and two objects may not share an explicit id.
* the alias of an object is the shortest suffix of dot-separated name components that is
  unique among all control-plane names of the program (of every type).
* controller packet metadata are named after their `@controller_header("...")` argument,
  but their id hashes the header *type* name, as in p4c.

CLI: ``python -m p4compiler.p4info PROGRAM.p4 --out FILE [--format text|binary|json]``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Sequence

from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2, p4types_pb2

from p4compiler.errors import P4Error
from p4compiler.model import ActionRef, MatchField, ProgramInfo

# 8-bit resource type prefixes, p4info.proto's P4Ids.Prefix.
ACTION = p4info_pb2.P4Ids.ACTION
TABLE = p4info_pb2.P4Ids.TABLE
VALUE_SET = p4info_pb2.P4Ids.VALUE_SET
CONTROLLER_HEADER = p4info_pb2.P4Ids.CONTROLLER_HEADER
ACTION_PROFILE = p4info_pb2.P4Ids.ACTION_PROFILE
COUNTER = p4info_pb2.P4Ids.COUNTER
DIRECT_COUNTER = p4info_pb2.P4Ids.DIRECT_COUNTER
METER = p4info_pb2.P4Ids.METER
DIRECT_METER = p4info_pb2.P4Ids.DIRECT_METER
REGISTER = p4info_pb2.P4Ids.REGISTER
DIGEST = p4info_pb2.P4Ids.DIGEST

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}
_COUNTER_UNITS = {
    "BYTES": p4info_pb2.CounterSpec.BYTES,
    "PACKETS": p4info_pb2.CounterSpec.PACKETS,
    "BOTH": p4info_pb2.CounterSpec.BOTH,
}
_METER_UNITS = {"BYTES": p4info_pb2.MeterSpec.BYTES, "PACKETS": p4info_pb2.MeterSpec.PACKETS}
_SCOPES = {
    "TABLE_AND_DEFAULT": p4info_pb2.ActionRef.TABLE_AND_DEFAULT,
    "TABLE_ONLY": p4info_pb2.ActionRef.TABLE_ONLY,
    "DEFAULT_ONLY": p4info_pb2.ActionRef.DEFAULT_ONLY,
}


def jenkins_one_at_a_time(data: bytes) -> int:
    """Bob Jenkins' one-at-a-time hash over bytes, 32-bit (the hash p4c uses for ids)."""
    h = 0
    for b in data:
        h = (h + b) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    h = (h + (h << 15)) & 0xFFFFFFFF
    return h


class SymbolTable:
    """Control-plane names per resource type and their ids, assigned as p4c assigns them."""

    def __init__(self) -> None:
        self._explicit: dict[int, dict[str, int | None]] = {}
        self._ids: dict[tuple[int, str], int] = {}
        self._names: list[str] = []
        self._suffix_counts: dict[tuple[str, ...], int] = {}

    def add(self, prefix: int, name: str, explicit_id: int | None = None) -> None:
        table = self._explicit.setdefault(prefix, {})
        if name in table:  # the same object reached twice (e.g. an action used by two tables)
            return
        table[name] = explicit_id
        if name not in self._names:
            self._names.append(name)
            parts = name.split(".")
            for i in range(len(parts)):
                key = tuple(parts[i:])
                self._suffix_counts[key] = self._suffix_counts.get(key, 0) + 1

    def compute_ids(self) -> None:
        assigned: set[int] = set()
        # explicit @id first, so hashed ids probe around them
        for prefix, table in sorted(self._explicit.items()):
            for name, raw in table.items():
                if raw is None:
                    continue
                pid = _apply_prefix(prefix, raw, name)
                if pid in assigned:
                    raise P4Error(f"@id {pid:#010x} is assigned to multiple declarations ({name!r} is one)")
                assigned.add(pid)
                self._ids[(prefix, name)] = pid
        for prefix, table in sorted(self._explicit.items()):
            # sorted names: linear probing makes the result depend on the order of hashing
            for name in sorted((n for n, raw in table.items() if raw is None), key=lambda n: n.encode()):
                value = jenkins_one_at_a_time(name.encode())
                start = value
                while True:
                    pid = (prefix << 24) | (value & 0xFFFFFF)
                    if pid not in assigned:
                        break
                    value = (value + 1) & 0xFFFFFFFF
                    if value == start:
                        raise P4Error(f"no available id to represent {name!r} in P4Runtime")
                assigned.add(pid)
                self._ids[(prefix, name)] = pid

    def id(self, prefix: int, name: str) -> int:
        try:
            return self._ids[(prefix, name)]
        except KeyError:
            raise KeyError(f"no P4Runtime id for {name!r} (prefix {prefix:#04x})") from None

    def alias(self, name: str) -> str:
        """Shortest dot-separated suffix of `name` that no other symbol shares."""
        parts = name.split(".")
        for n in range(1, len(parts) + 1):
            if self._suffix_counts.get(tuple(parts[len(parts) - n :]), 0) < 2:
                return ".".join(parts[len(parts) - n :])
        return name


def _apply_prefix(prefix: int, raw: int, name: str) -> int:
    if not 0 < raw <= 0xFFFFFFFF:
        raise P4Error(f"{name}: @id should be an unsigned 32-bit integer other than 0, got {raw}")
    top = raw >> 24
    if top not in (0, prefix):
        raise P4Error(
            f"{name}: @id {raw:#010x} has the wrong 8-bit prefix {top:#04x} (expected {prefix:#04x})"
        )
    return raw | (prefix << 24)


_ANNOTATION_RE = re.compile(r"^\s*@\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.S)


def _annotation_name(text: str) -> str | None:
    m = _ANNOTATION_RE.match(text)
    return m.group(1) if m else None


def _string_arg(arg: str | None) -> str:
    if arg is None:
        return ""
    arg = arg.strip()
    if len(arg) >= 2 and arg[0] == '"' and arg[-1] == '"':
        return bytes(arg[1:-1], "utf-8").decode("unicode_escape")
    return arg


def _set_annotations(msg, annotations: Iterable[str], skip: Iterable[str] = ()) -> None:
    """Copy annotations into `msg.annotations`, as p4c does: @name and @id are represented
    elsewhere, @brief/@description go to `doc`."""
    skip = set(skip) | {"name", "id"}
    for text in annotations:
        m = _ANNOTATION_RE.match(text)
        kind = m.group(1) if m else None
        if kind in skip:
            continue
        if kind in ("brief", "description"):
            setattr(msg.doc, kind, _string_arg(m.group(2)))
            continue
        msg.annotations.append(text.strip())


def _preamble(pre: p4info_pb2.Preamble, pid: int, name: str, alias: str, annotations: Iterable[str]) -> None:
    pre.id = pid
    pre.name = name
    pre.alias = alias
    _set_annotations(pre, annotations)


def _match_field(out: p4info_pb2.MatchField, mf: MatchField) -> None:
    out.id = mf.id
    out.name = mf.name
    _set_annotations(out, mf.annotations)
    out.bitwidth = mf.bitwidth
    if mf.match_type in _MATCH_TYPES:
        out.match_type = _MATCH_TYPES[mf.match_type]
    else:
        out.other_match_type = mf.match_type


def _bitstring(spec: p4types_pb2.P4DataTypeSpec, bitwidth: int) -> None:
    spec.bitstring.bit.bitwidth = bitwidth


def build_symbols(info: ProgramInfo) -> SymbolTable:
    """Collect every control-plane name of `info` and assign ids."""
    st = SymbolTable()
    for a in info.actions:
        st.add(ACTION, a.name, a.id)
    for t in info.tables:
        st.add(TABLE, t.name, t.id)
    for vs in info.value_sets:
        st.add(VALUE_SET, vs.name, vs.id)
    for ap in info.action_profiles:
        st.add(ACTION_PROFILE, ap.name, ap.id)
    for c in info.counters:
        st.add(COUNTER, c.name, c.id)
    for dc in info.direct_counters:
        st.add(DIRECT_COUNTER, dc.name, dc.id)
    for m in info.meters:
        st.add(METER, m.name, m.id)
    for dm in info.direct_meters:
        st.add(DIRECT_METER, dm.name, dm.id)
    for r in info.registers:
        st.add(REGISTER, r.name, r.id)
    for d in info.digests:
        st.add(DIGEST, d.name, d.id)
    for ch in info.controller_headers:
        st.add(CONTROLLER_HEADER, ch.header_type, ch.id)
    st.compute_ids()
    return st


def _action_ref_annotations(ref: ActionRef) -> list[str]:
    anns = list(ref.annotations)
    names = {_annotation_name(a) for a in anns}
    # p4c keeps the scope annotation in the action ref's annotations as well as in `scope`
    if ref.scope == "DEFAULT_ONLY" and "defaultonly" not in names:
        anns.append("@defaultonly")
    if ref.scope == "TABLE_ONLY" and "tableonly" not in names:
        anns.append("@tableonly")
    return anns


def build_p4info(info: ProgramInfo) -> p4info_pb2.P4Info:
    """The P4Info message of a program, with p4c's ids, aliases and layout."""
    st = build_symbols(info)
    p4i = p4info_pb2.P4Info()
    p4i.pkg_info.arch = info.arch
    p4i.type_info.SetInParent()  # p4c always writes type_info, empty or not

    direct_counter_of = {dc.table: dc for dc in info.direct_counters}
    direct_meter_of = {dm.table: dm for dm in info.direct_meters}
    for t in info.tables:
        out = p4i.tables.add()
        _preamble(out.preamble, st.id(TABLE, t.name), t.name, st.alias(t.name), t.annotations)
        for mf in t.match_fields:
            if mf.match_type == "selector":  # p4c hides selector keys from the control plane
                continue
            _match_field(out.match_fields.add(), mf)
        for ref in t.action_refs:
            r = out.action_refs.add()
            r.id = st.id(ACTION, ref.name)
            _set_annotations(r, _action_ref_annotations(ref))
            if ref.scope not in _SCOPES:
                raise P4Error(f"table {t.name}: unknown action scope {ref.scope!r} for {ref.name}")
            r.scope = _SCOPES[ref.scope]
        if t.default_action_const:
            out.const_default_action_id = st.id(ACTION, t.default_action)
        if t.implementation:
            out.implementation_id = st.id(ACTION_PROFILE, t.implementation)
        dc_name = t.direct_counter or (
            direct_counter_of[t.name].name if t.name in direct_counter_of else None
        )
        if dc_name:
            out.direct_resource_ids.append(st.id(DIRECT_COUNTER, dc_name))
        dm_name = t.direct_meter or (direct_meter_of[t.name].name if t.name in direct_meter_of else None)
        if dm_name:
            out.direct_resource_ids.append(st.id(DIRECT_METER, dm_name))
        out.size = t.size
        out.idle_timeout_behavior = (
            p4info_pb2.Table.NOTIFY_CONTROL if t.idle_timeout else p4info_pb2.Table.NO_TIMEOUT
        )
        out.is_const_table = t.is_const_table
        out.has_initial_entries = t.has_initial_entries or t.is_const_table

    for a in info.actions:
        out = p4i.actions.add()
        _preamble(out.preamble, st.id(ACTION, a.name), a.name, st.alias(a.name), a.annotations)
        for prm in a.params:
            p = out.params.add()
            p.id = prm.id
            p.name = prm.name
            _set_annotations(p, prm.annotations)
            p.bitwidth = prm.bitwidth

    for ap in info.action_profiles:
        out = p4i.action_profiles.add()
        _preamble(out.preamble, st.id(ACTION_PROFILE, ap.name), ap.name, st.alias(ap.name), ap.annotations)
        out.table_ids.extend(st.id(TABLE, tn) for tn in ap.table_names)
        out.with_selector = ap.with_selector
        out.size = ap.size
        if ap.with_selector:  # as p4c writes selectors: @max_group_size, sum-of-weights semantics
            out.max_group_size = ap.max_group_size
            out.sum_of_weights.SetInParent()

    for c in info.counters:
        out = p4i.counters.add()
        _preamble(out.preamble, st.id(COUNTER, c.name), c.name, st.alias(c.name), c.annotations)
        out.spec.unit = _COUNTER_UNITS[c.unit]
        out.size = c.size

    for dc in info.direct_counters:
        out = p4i.direct_counters.add()
        _preamble(out.preamble, st.id(DIRECT_COUNTER, dc.name), dc.name, st.alias(dc.name), dc.annotations)
        out.spec.unit = _COUNTER_UNITS[dc.unit]
        out.direct_table_id = st.id(TABLE, dc.table)

    for m in info.meters:
        out = p4i.meters.add()
        _preamble(out.preamble, st.id(METER, m.name), m.name, st.alias(m.name), m.annotations)
        out.spec.unit = _METER_UNITS[m.unit]
        out.size = m.size

    for dm in info.direct_meters:
        out = p4i.direct_meters.add()
        _preamble(out.preamble, st.id(DIRECT_METER, dm.name), dm.name, st.alias(dm.name), dm.annotations)
        out.spec.unit = _METER_UNITS[dm.unit]
        out.direct_table_id = st.id(TABLE, dm.table)

    for ch in info.controller_headers:
        out = p4i.controller_packet_metadata.add()
        # name and alias are the annotation's argument, the id hashes the header type name
        anns = list(ch.annotations)
        if not any(_annotation_name(a) == "controller_header" for a in anns):
            anns.insert(0, f'@controller_header("{ch.name}")')
        _preamble(out.preamble, st.id(CONTROLLER_HEADER, ch.header_type), ch.name, ch.name, anns)
        for i, f in enumerate(ch.fields, start=1):
            md = out.metadata.add()
            md.id = i
            md.name = f.name
            md.bitwidth = f.bitwidth

    for vs in info.value_sets:
        out = p4i.value_sets.add()
        _preamble(out.preamble, st.id(VALUE_SET, vs.name), vs.name, st.alias(vs.name), vs.annotations)
        for mf in vs.match_fields:
            _match_field(out.match.add(), mf)
        out.size = vs.size

    for r in info.registers:
        out = p4i.registers.add()
        _preamble(out.preamble, st.id(REGISTER, r.name), r.name, st.alias(r.name), r.annotations)
        _bitstring(out.type_spec, r.bitwidth)
        out.size = r.size

    for d in info.digests:
        out = p4i.digests.add()
        _preamble(out.preamble, st.id(DIGEST, d.name), d.name, st.alias(d.name), d.annotations)
        out.type_spec.struct.name = d.name
        struct = p4i.type_info.structs[d.name]
        for f in d.fields:
            member = struct.members.add()
            member.name = f.name
            _bitstring(member.type_spec, f.bitwidth)

    return p4i


def p4info_to_text(p4info: p4info_pb2.P4Info) -> str:
    """Protobuf text format, as `p4c --p4runtime-files x.p4info.txt` writes it."""
    return text_format.MessageToString(p4info)


def p4info_from_text(text: str) -> p4info_pb2.P4Info:
    msg = p4info_pb2.P4Info()
    text_format.Merge(text, msg)
    return msg


def serialize(p4info: p4info_pb2.P4Info, fmt: str) -> bytes:
    if fmt == "text":
        return p4info_to_text(p4info).encode()
    if fmt == "binary":
        return p4info.SerializeToString()
    if fmt == "json":
        return json_format.MessageToJson(p4info, indent=2).encode() + b"\n"
    raise ValueError(f"unknown P4Info format {fmt!r}; expected text, binary or json")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m p4compiler.p4info", description="Write the P4Info of a P4-16 v1model program."
    )
    ap.add_argument("program", help="P4-16 source file")
    ap.add_argument("--out", required=True, help="output file ('-' for stdout)")
    ap.add_argument("--format", choices=("text", "binary", "json"), default="text")
    ap.add_argument("-I", dest="include_dirs", action="append", default=[], help="include directory")
    ap.add_argument(
        "-D", dest="defines", action="append", default=[], help="NAME[=VALUE] preprocessor define"
    )
    ap.add_argument("--allow-nonportable", action="store_true",
                    help="also accept what p4c-bm2-ss (v1model) refuses: / or %% by a non-constant value, a "
                         "table applied twice on one path, a select on an enum-typed key")
    args = ap.parse_args(argv)

    try:  # imported late: the CLI needs the compiler, the library does not
        from p4compiler.python_backend import compile_file
    except ImportError as e:
        print(f"error: the P4 compiler is not available: {e}", file=sys.stderr)
        return 2

    defines: dict[str, str] = {}
    for d in args.defines:
        name, _, value = d.partition("=")
        defines[name] = value or "1"
    try:
        program = compile_file(args.program, include_dirs=tuple(args.include_dirs), defines=defines or None,
                               allow_nonportable=args.allow_nonportable)
        data = serialize(build_p4info(program.info), args.format)
    except P4Error as e:
        print(str(e), file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.out == "-":
        sys.stdout.buffer.write(data)
    else:
        with open(args.out, "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
