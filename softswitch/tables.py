"""Match-action tables and the stateful v1model externs of the software switch."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from p4compiler.model import MatchField, TableInfo
from softswitch import api
from softswitch.api import (
    AlreadyExists,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    SwitchError,
    Unimplemented,
)

NEEDS_PRIORITY = {"ternary", "range", "optional"}


@dataclass
class Entry:
    key: tuple  # normalized match (one item per key field) + priority: the entry's identity
    match: dict[str, api.Match]
    action: str
    args: dict[str, int]
    priority: int
    fn: Any  # what the table's action_fns maps the action to (its number)
    argv: tuple
    checks: tuple  # (index, value, mask) for masked comparisons
    ranges: tuple  # (index, lo, hi)
    rank: tuple  # sort key: larger wins
    is_const: bool = False
    packets: int = 0
    bytes: int = 0
    meter: Any = None


class Table:
    """One table of a running program. Lookup strategy follows the key: dict for exact keys,
    per-prefix-length dicts for one lpm field (plus exact ones), a ranked scan otherwise."""

    def __init__(self, info: TableInfo, spec: Any, key_fn: Any, action_fns: dict[str, Any],
                 direct_counter: Any = None, direct_meter: Any = None):
        # key_fn: unused (the generated code computes the key); action_fns: action name -> what
        # `run` returns for it (the program's action number)
        self.info = info
        self.name = info.name
        self.spec = spec
        self.key_fn = key_fn
        self.action_fns = action_fns
        self.kinds = list(spec.key_kinds)
        self.widths = list(spec.key_widths)
        self.field_names = [m.name for m in info.match_fields]
        self.params = spec.action_params  # action -> [(name, width)]
        self.entries: dict[tuple, Entry] = {}
        self.direct_counter = direct_counter
        self.direct_meter = direct_meter
        self.needs_priority = any(k in NEEDS_PRIORITY for k in self.kinds)
        lpm = [i for i, k in enumerate(self.kinds) if k == "lpm"]
        if all(k == "exact" for k in self.kinds):
            self.mode = "exact"
        elif len(lpm) == 1 and all(k in ("exact", "lpm") for k in self.kinds):
            self.mode = "lpm"
            self.lpm_index = lpm[0]
        else:
            self.mode = "scan"
        self.allowed = {r.name: r.scope for r in info.action_refs}
        self._reset_default()
        self._rebuild()

    # ------------------------------------------------------------------ defaults
    def _reset_default(self) -> None:
        self.default_action = self.spec.default_action
        names = [n for n, _ in self.params[self.default_action]]
        self.default_args = dict(zip(names, self.spec.default_args, strict=False))
        self._default_call = (self.action_fns[self.default_action], tuple(self.spec.default_args))

    def set_default(self, action: str, args: dict[str, int]) -> None:
        if self.info.default_action_const and action != self.spec.default_action:
            raise PermissionDenied(
                f"table {self.name} has a const default action ({self.spec.default_action})")
        if action not in self.action_fns:
            raise NotFound(f"action {action} is not an action of table {self.name}")
        if self.allowed.get(action) == "TABLE_ONLY":
            raise SwitchError(f"action {action} is @tableonly in table {self.name} and cannot be the default")
        argv = self._check_args(action, args)
        self.default_action = action
        self.default_args = dict(args)
        self._default_call = (self.action_fns[action], argv)

    def reset_default(self) -> None:
        self._reset_default()

    # ------------------------------------------------------------------ entries
    def _check_args(self, action: str, args: dict[str, int]) -> tuple:
        params = self.params.get(action)
        if params is None:
            raise NotFound(f"action {action} is not an action of table {self.name}")
        names = [n for n, _ in params]
        for a in args:
            if a not in names:
                raise SwitchError(f"action {action} has no parameter {a}")
        argv = []
        for n, w in params:
            if n not in args:
                raise SwitchError(f"action {action} needs parameter {n}")
            v = args[n]
            if not isinstance(v, int) or v < 0 or v >> w:
                raise SwitchError(f"value {v} of parameter {n} of {action} does not fit in {w} bits")
            argv.append(v)
        return tuple(argv)

    def _normalize(self, entry: api.TableEntry) -> tuple[tuple, tuple, tuple, tuple, int]:
        unknown = set(entry.match) - set(self.field_names)
        if unknown:
            raise NotFound(f"table {self.name} has no key field {sorted(unknown)[0]}")
        norm: list[Any] = []
        checks: list[tuple[int, int, int]] = []
        ranges: list[tuple[int, int, int]] = []
        plen_total = 0
        for i, (fname, kind, w) in enumerate(zip(self.field_names, self.kinds, self.widths, strict=False)):
            m = entry.match.get(fname)
            full = (1 << w) - 1
            if m is None:
                if kind == "exact":
                    raise SwitchError(f"exact key field {fname} of table {self.name} needs a value")
                norm.append(None)
                continue
            if kind == "exact":
                if not isinstance(m, api.Exact):
                    raise SwitchError(f"key field {fname} of table {self.name} is exact")
                self._fits(m.value, w, fname)
                norm.append(("e", m.value))
                checks.append((i, m.value, full))
            elif kind == "lpm":
                if isinstance(m, api.Exact):
                    m = api.Lpm(m.value, w)
                if not isinstance(m, api.Lpm):
                    raise SwitchError(f"key field {fname} of table {self.name} is lpm")
                self._fits(m.value, w, fname)
                if not 0 <= m.prefix_len <= w:
                    raise SwitchError(f"prefix length {m.prefix_len} out of range for {fname} ({w} bits)")
                mask = full ^ ((1 << (w - m.prefix_len)) - 1)
                if m.value & ~mask:
                    raise SwitchError(f"lpm value of {fname} has bits set beyond its prefix length")
                plen_total += m.prefix_len
                norm.append(("l", m.value, m.prefix_len))
                checks.append((i, m.value, mask))
            elif kind in ("ternary", "optional"):
                if isinstance(m, api.Exact) or isinstance(m, api.Optional_):
                    m = api.Ternary(m.value, full)
                if not isinstance(m, api.Ternary):
                    raise SwitchError(f"key field {fname} of table {self.name} is {kind}")
                self._fits(m.value, w, fname)
                self._fits(m.mask, w, fname)
                if kind == "optional" and m.mask not in (0, full):
                    raise SwitchError(f"optional key field {fname} takes an exact value or a wildcard")
                if m.value & ~m.mask:
                    raise SwitchError(f"ternary value of {fname} has bits set outside its mask")
                norm.append(("t", m.value, m.mask))
                checks.append((i, m.value, m.mask))
            elif kind == "range":
                if isinstance(m, api.Exact):
                    m = api.Range(m.value, m.value)
                if not isinstance(m, api.Range):
                    raise SwitchError(f"key field {fname} of table {self.name} is range")
                self._fits(m.low, w, fname)
                self._fits(m.high, w, fname)
                if m.low > m.high:
                    raise SwitchError(f"range of {fname} has low > high")
                norm.append(("r", m.low, m.high))
                ranges.append((i, m.low, m.high))
            else:
                raise SwitchError(f"match kind {kind} is not supported")
        return tuple(norm), tuple(checks), tuple(ranges), (plen_total,), plen_total

    @staticmethod
    def _fits(v: int, w: int, name: str) -> None:
        if not isinstance(v, int) or v < 0 or v >> w:
            raise SwitchError(f"value {v!r} of {name} does not fit in {w} bits")

    def _make(self, entry: api.TableEntry) -> Entry:
        if entry.action not in self.action_fns:
            raise NotFound(f"action {entry.action} is not an action of table {self.name}")
        if self.allowed.get(entry.action) == "DEFAULT_ONLY":
            raise SwitchError(f"action {entry.action} is @defaultonly in table {self.name}")
        argv = self._check_args(entry.action, entry.args)
        norm, checks, ranges, _, plen = self._normalize(entry)
        if self.needs_priority:
            if entry.priority <= 0:
                raise SwitchError(
                    f"table {self.name} has ternary/range/optional keys: entries need a priority > 0")
            prio = entry.priority
        else:
            prio = 0
        rank = ((prio if self.spec.largest_priority_wins else -prio), plen)
        return Entry(norm + (prio,), dict(entry.match), entry.action, dict(entry.args), prio,
                     self.action_fns[entry.action], argv, checks, ranges, rank, entry.is_const)

    def insert(self, entry: api.TableEntry) -> None:
        if self.info.is_const_table and not entry.is_const:
            raise PermissionDenied(f"table {self.name} has const entries and cannot be changed")
        e = self._make(entry)
        if e.key in self.entries:
            raise AlreadyExists(f"table {self.name} already has an entry with this key")
        if len(self.entries) >= self.info.size and not entry.is_const:
            raise ResourceExhausted(f"table {self.name} is full ({self.info.size} entries)")
        self.entries[e.key] = e
        self._rebuild()

    def modify(self, entry: api.TableEntry) -> None:
        if self.info.is_const_table:
            raise PermissionDenied(f"table {self.name} has const entries and cannot be changed")
        e = self._make(entry)
        old = self.entries.get(e.key)
        if old is None:
            raise NotFound(f"table {self.name} has no entry with this key")
        e.packets, e.bytes, e.meter = old.packets, old.bytes, old.meter
        self.entries[e.key] = e
        self._rebuild()

    def delete(self, entry: api.TableEntry) -> None:
        if self.info.is_const_table:
            raise PermissionDenied(f"table {self.name} has const entries and cannot be changed")
        norm = self._normalize(entry)[0]
        prio = entry.priority if self.needs_priority else 0
        key = norm + (prio,)
        if key not in self.entries:
            raise NotFound(f"table {self.name} has no entry with this key")
        del self.entries[key]
        self._rebuild()

    def find(self, entry: api.TableEntry) -> Entry:
        norm = self._normalize(entry)[0]
        prio = entry.priority if self.needs_priority else 0
        e = self.entries.get(norm + (prio,))
        if e is None:
            raise NotFound(f"table {self.name} has no entry with this key")
        return e

    def clear(self) -> None:
        self.entries = {k: e for k, e in self.entries.items() if e.is_const}
        self._rebuild()

    def read(self) -> list[api.TableEntry]:
        return [api.TableEntry(self.name, dict(e.match), e.action, dict(e.args), e.priority, e.is_const)
                for e in self.entries.values()]

    # ------------------------------------------------------------------ lookup
    def _rebuild(self) -> None:
        ents = list(self.entries.values())
        if self.mode == "exact":
            self._exact = {tuple(c[1] for c in e.checks): e for e in ents}
        elif self.mode == "lpm":
            li = self.lpm_index
            w = self.widths[li]
            full = (1 << w) - 1
            by_len: dict[int, tuple[int, dict[tuple, Entry]]] = {}
            for e in ents:
                vals = [0] * len(self.kinds)
                for i, v, _ in e.checks:
                    vals[i] = v
                norm = e.key[li]
                plen = norm[2] if norm is not None else 0
                mask = full ^ ((1 << (w - plen)) - 1)
                by_len.setdefault(plen, (mask, {}))[1][tuple(vals)] = e
            self._lpm = [by_len[p] for p in sorted(by_len, reverse=True)]
        else:
            self._scan = sorted(ents, key=lambda e: e.rank, reverse=True)

    def lookup(self, k: tuple) -> Entry | None:
        if self.mode == "exact":
            return self._exact.get(k)
        if self.mode == "lpm":
            li = self.lpm_index
            for mask, d in self._lpm:
                kk = k[:li] + (k[li] & mask,) + k[li + 1:]
                e = d.get(kk)
                if e is not None:
                    return e
            return None
        for e in self._scan:
            for i, v, m in e.checks:
                if k[i] & m != v:
                    break
            else:
                for i, lo, hi in e.ranges:
                    if not lo <= k[i] <= hi:
                        break
                else:
                    return e
        return None

    def run(self, k: tuple, P: Any) -> tuple[bool, Any, tuple]:
        """Look up key `k` for the generated code, which runs the action itself: (hit, action,
        arguments), where action is what `action_fns` maps the action's name to (its number)."""
        e = self.lookup(k)
        if e is None:
            fn, argv = self._default_call
            return False, fn, argv
        e.packets += 1
        e.bytes += P.length
        if self.direct_meter is not None:
            P.meter_color[self.direct_meter.name] = self.direct_meter.execute_entry(e, P.length)
        return True, e.fn, e.argv


# ---------------------------------------------------------------------------- externs
class Register:
    def __init__(self, name: str, width: int, size: int, signed: bool = False):
        self.name = name
        self.width = width
        self.size = size
        self.signed = signed
        self.values = [0] * size

    def read(self, i: int) -> int:
        if 0 <= i < self.size:
            return self.values[i]
        return 0

    def write(self, i: int, v: int) -> None:
        if 0 <= i < self.size:
            self.values[i] = v

    def get(self, i: int) -> int:
        self._index(i)
        v = self.values[i]
        return v & ((1 << self.width) - 1)

    def set(self, i: int, v: int) -> None:
        self._index(i)
        if v < 0 or v >> self.width:
            raise SwitchError(f"value {v} does not fit in register {self.name} ({self.width} bits)")
        if self.signed and v >> (self.width - 1):
            v -= 1 << self.width
        self.values[i] = v

    def reset(self) -> None:
        self.values = [0] * self.size

    def _index(self, i: int) -> None:
        if not 0 <= i < self.size:
            raise SwitchError(f"index {i} out of range for register {self.name} (size {self.size})")


class Counter:
    def __init__(self, name: str, size: int, unit: str):
        self.name = name
        self.size = size
        self.unit = unit
        self.packets = [0] * size
        self.bytes = [0] * size

    def count(self, i: int, nbytes: int) -> None:
        if 0 <= i < self.size:
            self.packets[i] += 1
            self.bytes[i] += nbytes

    def check(self, i: int) -> None:
        if not 0 <= i < self.size:
            raise SwitchError(f"index {i} out of range for counter {self.name} (size {self.size})")


@dataclass
class MeterConfig:
    cir: int  # committed rate, units (packets or bytes) per second
    cburst: int
    pir: int
    pburst: int
    tc: float = 0.0  # committed bucket tokens
    tp: float = 0.0  # peak bucket tokens
    last: float = field(default_factory=time.monotonic)


GREEN, YELLOW, RED = 0, 1, 2


class Meter:
    """Two-rate three-colour meters (RFC 2698), as bmv2 implements v1model meters. An index
    without configuration always marks GREEN."""

    def __init__(self, name: str, size: int, unit: str):
        self.name = name
        self.size = size
        self.unit = unit
        self.configs: dict[int, MeterConfig] = {}

    def set_config(self, i: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        if not 0 <= i < self.size:
            raise SwitchError(f"index {i} out of range for meter {self.name} (size {self.size})")
        if pir < cir:
            raise SwitchError("meter peak rate must be at least the committed rate")
        self.configs[i] = MeterConfig(cir, cburst, pir, pburst, float(cburst), float(pburst))

    def execute(self, i: int, nbytes: int) -> int:
        cfg = self.configs.get(i)
        return self._mark(cfg, nbytes)

    def _mark(self, cfg: MeterConfig | None, nbytes: int) -> int:
        if cfg is None:
            return GREEN
        now = time.monotonic()
        dt = now - cfg.last
        cfg.last = now
        cfg.tc = min(cfg.cburst, cfg.tc + dt * cfg.cir)
        cfg.tp = min(cfg.pburst, cfg.tp + dt * cfg.pir)
        amount = nbytes if self.unit == "BYTES" else 1
        if cfg.tp < amount:
            return RED
        cfg.tp -= amount
        if cfg.tc < amount:
            return YELLOW
        cfg.tc -= amount
        return GREEN


class DirectMeter(Meter):
    def __init__(self, name: str, unit: str):
        super().__init__(name, 0, unit)

    def execute_entry(self, e: Entry, nbytes: int) -> int:
        return self._mark(e.meter, nbytes)


class ValueSet:
    """A parser value set (`value_set<T>(size)`): up to `size` members, each a value and mask per
    key field (the match fields of its P4Info entry, in select-key order). A key tuple matches
    when, for some member, every field masked equals that member's value (P4Runtime's
    ValueSetMember semantics; bmv2's parse_vset). Starts empty: matches nothing."""

    def __init__(self, name: str, size: int, fields: list[MatchField] | None = None):
        self.name = name
        self.size = size
        self.fields = list(fields or [])
        self.members: list[tuple[tuple, tuple]] = []  # (values, masks), values already masked
        self._given: list[dict[str, api.Match]] = []  # as written, for reading back

    def match(self, k: tuple) -> bool:
        for vals, masks in self.members:
            if all((a & m) == v for a, v, m in zip(k, vals, masks, strict=False)):
                return True
        return False

    def normalize(self, members: Sequence[Mapping[str, api.Match]]) -> list[tuple[tuple, tuple]]:
        """Check `members` (each maps field names to a Match; a missing field is a wildcard,
        except an exact one) and return them as (values, masks), values masked. Raises
        ResourceExhausted beyond `size` members, AlreadyExists for a member given twice and
        SwitchError (NotFound for an unknown field) for anything else."""
        if len(members) > self.size:
            raise ResourceExhausted(
                f"value set {self.name} holds at most {self.size} member(s); {len(members)} given")
        names = [f.name for f in self.fields]
        out: list[tuple[tuple, tuple]] = []
        seen: set[tuple[tuple, tuple]] = set()
        for i, member in enumerate(members):
            if not isinstance(member, Mapping):
                raise SwitchError(f"member {i} of value set {self.name}: expected a mapping of field "
                                  f"names to matches, got {type(member).__name__}")
            unknown = set(member) - set(names)
            if unknown:
                raise NotFound(f"value set {self.name} has no field {sorted(unknown)[0]!r} "
                               f"(fields: {', '.join(names)})")
            vals, masks = [], []
            for f in self.fields:
                v, m = self._field(f, member.get(f.name), i)
                vals.append(v & m)
                masks.append(m)
            key = (tuple(vals), tuple(masks))
            if key in seen:
                raise AlreadyExists(f"member {i} of value set {self.name} repeats an earlier member")
            seen.add(key)
            out.append(key)
        return out

    # what each match kind accepts (as Table._normalize): the kind's own Match, or Exact
    _ACCEPTS: dict[str, tuple[type, ...]] = {
        "exact": (api.Exact,),
        "ternary": (api.Exact, api.Optional_, api.Ternary),
        "optional": (api.Exact, api.Optional_, api.Ternary),
        "lpm": (api.Exact, api.Lpm),
        "range": (api.Exact, api.Range),
    }

    def _field(self, f: MatchField, m: api.Match | None, i: int) -> tuple[int, int]:
        """One field of member i as (value, mask)."""
        w, kind = f.bitwidth, f.match_type
        full = (1 << w) - 1
        what = f"field {f.name!r} of member {i} of value set {self.name}"
        if m is None:
            if kind == "exact":
                raise SwitchError(f"{what} is exact and needs a value")
            return 0, 0  # a wildcard
        if kind not in self._ACCEPTS:
            raise Unimplemented(f"{what}: match kind {kind} is not supported (only a wildcard)")
        if not isinstance(m, self._ACCEPTS[kind]):
            raise SwitchError(f"{what} is {kind} and cannot take {m!r}")

        def fits(v: int, part: str = "value") -> int:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v >> w:
                raise SwitchError(f"{what}: {part} {v!r} does not fit in {w} bits")
            return v

        if isinstance(m, (api.Exact, api.Optional_)):
            return fits(m.value), full
        if isinstance(m, api.Ternary):
            value, mask = fits(m.value), fits(m.mask, "mask")
            if kind == "optional" and mask not in (0, full):
                raise SwitchError(f"{what} is optional: it takes an exact value or a wildcard")
            if value & ~mask:
                raise SwitchError(f"{what}: value {value:#x} has bits set outside mask {mask:#x}")
            return value, mask
        if isinstance(m, api.Lpm):
            value = fits(m.value)
            if not 0 <= m.prefix_len <= w:
                raise SwitchError(f"{what}: prefix length {m.prefix_len} is outside 0..{w}")
            mask = full ^ ((1 << (w - m.prefix_len)) - 1)
            if value & ~mask:
                raise SwitchError(f"{what}: value {value:#x} has bits set beyond the /{m.prefix_len} prefix")
            return value, mask
        assert isinstance(m, api.Range)
        low, high = fits(m.low, "low"), fits(m.high, "high")
        if low > high:
            raise SwitchError(f"{what}: range low {low} is greater than high {high}")
        if low == 0 and high == full:
            return 0, 0
        if low == high:
            return low, full
        raise Unimplemented(f"{what}: a range other than one value or all values cannot be matched "
                            f"by a value set (its members are values and masks)")

    def write(self, members: Sequence[Mapping[str, api.Match]]) -> list[tuple[tuple, tuple]]:
        """Replace all members (checked first: on an error nothing changes); the normalized
        members are returned."""
        norm = self.normalize(members)
        self.members = norm
        self._given = [dict(m) for m in members]
        return norm

    def read(self) -> list[dict[str, api.Match]]:
        return [dict(m) for m in self._given]
