"""Match-action tables and the stateful v1model externs of the software switch."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from p4compiler.ir import GROUP_ACTION
from p4compiler.model import ActionProfileInfo, MatchField, TableInfo
from softswitch import api
from softswitch.api import (
    AlreadyExists,
    InUse,
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
    ref: tuple[str, int] | None = None  # ("member" | "group", id) in a table with an action profile


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
        self.profile: ActionProfile | None = None  # set by ActionProfile for `implementation` tables
        self.default_ref: tuple[str, int] | None = None
        self._reset_default()
        self._rebuild()

    # ------------------------------------------------------------------ defaults
    def _reset_default(self) -> None:
        self._set_default_ref(None)
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
        self._set_default_ref(None)
        self.default_action = action
        self.default_args = dict(args)
        self._default_call = (self.action_fns[action], argv)

    def reset_default(self) -> None:
        self._reset_default()

    def set_default_reference(self, ref: tuple[str, int]) -> None:
        """The default of a table with an action profile: one of its members or groups."""
        if self.profile is None:
            raise SwitchError(f"table {self.name} has no action profile; its default is an action")
        if self.info.default_action_const:
            raise PermissionDenied(
                f"table {self.name} has a const default action ({self.spec.default_action})")
        call = self.profile.resolve(self, ref)
        self._set_default_ref(ref)
        self.default_action, self.default_args = "", {}
        self._default_call = call

    def _set_default_ref(self, ref: tuple[str, int] | None) -> None:
        if self.profile is not None:
            self.profile.count_ref(self.default_ref, -1)
            self.profile.count_ref(ref, 1)
        self.default_ref = ref

    def refresh(self, ref: tuple[str, int]) -> tuple[list[Entry], bool]:
        """Resolve again the entries (and the default) that refer to member or group `ref` after
        it changed: (the entries changed, whether the default did)."""
        assert self.profile is not None
        changed = [e for e in self.entries.values() if e.ref == ref]
        for e in changed:
            e.fn, e.argv = self.profile.resolve(self, ref)
        if self.default_ref == ref:
            self._default_call = self.profile.resolve(self, ref)
        return changed, self.default_ref == ref

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
        ref = _entry_ref(entry)
        if ref is not None or self.profile is not None:
            return self._make_indirect(entry, ref)
        if entry.action not in self.action_fns:
            raise NotFound(f"action {entry.action} is not an action of table {self.name}")
        if self.allowed.get(entry.action) == "DEFAULT_ONLY":
            raise SwitchError(f"action {entry.action} is @defaultonly in table {self.name}")
        argv = self._check_args(entry.action, entry.args)
        norm, checks, ranges, _, plen = self._normalize(entry)
        prio = self._priority(entry)
        rank = ((prio if self.spec.largest_priority_wins else -prio), plen)
        return Entry(norm + (prio,), dict(entry.match), entry.action, dict(entry.args), prio,
                     self.action_fns[entry.action], argv, checks, ranges, rank, entry.is_const)

    def _make_indirect(self, entry: api.TableEntry, ref: tuple[str, int] | None) -> Entry:
        if self.profile is None:
            raise SwitchError(f"table {self.name} has no action profile: its entries name an action, "
                              "not a member or group")
        if ref is None or entry.action or entry.args:
            raise SwitchError(f"table {self.name} uses action profile {self.profile.name}: an entry "
                              "refers to one of its members or groups, not to an action")
        fn, argv = self.profile.resolve(self, ref)
        norm, checks, ranges, _, plen = self._normalize(entry)
        prio = self._priority(entry)
        rank = ((prio if self.spec.largest_priority_wins else -prio), plen)
        return Entry(norm + (prio,), dict(entry.match), "", {}, prio, fn, argv, checks, ranges, rank,
                     entry.is_const, ref=ref)

    def _priority(self, entry: api.TableEntry) -> int:
        if not self.needs_priority:
            return 0
        if entry.priority <= 0:
            raise SwitchError(
                f"table {self.name} has ternary/range/optional keys: entries need a priority > 0")
        return entry.priority

    def _count(self, e: Entry | None, delta: int) -> None:
        if self.profile is not None and e is not None:
            self.profile.count_ref(e.ref, delta)

    def initial_entries(self) -> list[api.TableEntry]:
        """The entries the program's `entries` / `const entries` install when it loads (an entry
        of `const entries`, or one marked `const`, has is_const set)."""
        out = []
        for keys, action, args, prio, const in self.spec.const_entries:
            match = {f: m for f, m in zip(self.field_names, keys, strict=False) if m is not None}
            argd = dict(zip([n for n, _ in self.params[action]], args, strict=False))
            out.append(api.TableEntry(self.name, match, action, argd, prio or 0, is_const=const))
        return out

    def insert(self, entry: api.TableEntry, initial: bool = False) -> None:
        """Add an entry; `initial`: one of the program's own entries, installed when it loads
        (the control plane adds none to a table with `const entries`)."""
        if self.info.is_const_table and not initial:
            raise PermissionDenied(f"table {self.name} has const entries and cannot be changed")
        if entry.is_const and not initial:
            raise PermissionDenied(f"only the program's own entries of table {self.name} are const")
        e = self._make(entry)
        if e.key in self.entries:
            raise AlreadyExists(f"table {self.name} already has an entry with this key")
        if len(self.entries) >= self.info.size and not initial:
            raise ResourceExhausted(f"table {self.name} is full ({self.info.size} entries)")
        self.entries[e.key] = e
        self._count(e, 1)
        self._rebuild()

    def _changeable(self, key: tuple) -> Entry:
        """The entry with this identity, which the control plane may modify or delete."""
        if self.info.is_const_table:
            raise PermissionDenied(f"table {self.name} has const entries and cannot be changed")
        old = self.entries.get(key)
        if old is None:
            raise NotFound(f"table {self.name} has no entry with this key")
        if old.is_const:
            raise PermissionDenied(f"this entry of table {self.name} is const (the program's)")
        return old

    def modify(self, entry: api.TableEntry) -> None:
        if self.info.is_const_table:
            raise PermissionDenied(f"table {self.name} has const entries and cannot be changed")
        e = self._make(entry)
        old = self._changeable(e.key)
        e.packets, e.bytes, e.meter = old.packets, old.bytes, old.meter
        self.entries[e.key] = e
        self._count(old, -1)
        self._count(e, 1)
        self._rebuild()

    def delete(self, entry: api.TableEntry) -> None:
        key = self._identity(entry)
        self._changeable(key)
        self._count(self.entries.pop(key), -1)
        self._rebuild()

    def discard(self, entry: api.TableEntry) -> None:
        """Take an entry out whatever it is (undoing an insert the native table refused)."""
        self._count(self.entries.pop(self._identity(entry), None), -1)
        self._rebuild()

    def _identity(self, entry: api.TableEntry) -> tuple:
        norm = self._normalize(entry)[0]
        return norm + (entry.priority if self.needs_priority else 0,)

    def find(self, entry: api.TableEntry) -> Entry:
        e = self.entries.get(self._identity(entry))
        if e is None:
            raise NotFound(f"table {self.name} has no entry with this key")
        return e

    def clear(self) -> None:
        for e in self.entries.values():
            if not e.is_const:
                self._count(e, -1)
        self.entries = {k: e for k, e in self.entries.items() if e.is_const}
        self._rebuild()

    def read(self) -> list[api.TableEntry]:
        return [self.as_api(e) for e in self.entries.values()]

    def as_api(self, e: Entry) -> api.TableEntry:
        ref = e.ref or ("", None)
        return api.TableEntry(self.name, dict(e.match), e.action, dict(e.args), e.priority, e.is_const,
                              ref[1] if ref[0] == "member" else None, ref[1] if ref[0] == "group" else None)

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


def _entry_ref(entry: api.TableEntry) -> tuple[str, int] | None:
    if entry.member is not None and entry.group is not None:
        raise SwitchError(f"an entry of table {entry.table} refers to a member or a group, not both")
    if entry.member is not None:
        return ("member", entry.member)
    if entry.group is not None:
        return ("group", entry.group)
    return None


@dataclass
class Member:
    action: str
    args: dict[str, int]
    handle: int  # bmv2's member handle: the lowest free one when created; orders group members
    # handles of the copies a group weight w > 1 needs (w - 1 of them, the largest weight of any
    # group): PI adds a member of weight w to a group as w bmv2 members with the same action
    copies: list[int] = field(default_factory=list)


@dataclass
class Group:
    members: dict[int, int]  # member id -> weight (>= 1)
    max_size: int = 0


class ActionProfile:
    """An action profile or selector (bmv2's ActionProfile): members (an action and its
    arguments, shared by every table of the profile) and, for a selector, groups of members.
    Table entries and defaults refer to them; this object resolves a reference to what a table
    runs (Table.run's (action, arguments)), counts references (a member or group still referred
    to cannot be deleted) and tells the tables to resolve again when one changes
    (`changed(ref)` returns what changed so that the native backend can push it to C).

    A group resolves to (GROUP_ACTION, ((action, arguments), ...)) with its members ordered by
    member handle, as bmv2's group (a set of handles) keeps them; the generated code picks
    member hash % n (bmv2's ActionProfile::GroupMgr::get_from_hash).

    Weights are PI's (p4lang/PI proto/frontend action_prof_mgr.cpp, ActionProfAccessManual):
    a member of weight w in a group is w bmv2 members, the member's own handle and w - 1 copies
    with the same action, so hash % (sum of weights) picks among the handles in handle order.
    Copies are created when a group needs them (lowest free handle, in member id order, before
    the group changes) and shared by the member's groups; those no group needs any more are
    deleted after the change. They count against the profile's size like members."""

    def __init__(self, info: ActionProfileInfo, tables: list[Table]):
        self.info = info
        self.name = info.name
        self.tables = tables
        self.members: dict[int, Member] = {}
        self.groups: dict[int, Group] = {}
        self.refs: dict[tuple[str, int], int] = {}  # entries, defaults and groups referring
        for t in tables:
            t.profile = self

    # ------------------------------------------------------------------ references
    def count_ref(self, ref: tuple[str, int] | None, delta: int) -> None:
        if ref is not None:
            self.refs[ref] = self.refs.get(ref, 0) + delta

    def resolve(self, table: Table, ref: tuple[str, int]) -> tuple[Any, tuple]:
        kind, rid = ref
        if kind == "member":
            m = self.members.get(rid)
            if m is None:
                raise NotFound(f"action profile {self.name} has no member {rid}")
            return table.action_fns[m.action], table._check_args(m.action, m.args)
        if not self.info.with_selector:
            raise SwitchError(f"action profile {self.name} has no selector: entries refer to members only")
        g = self.groups.get(rid)
        if g is None:
            raise NotFound(f"action profile {self.name} has no group {rid}")
        return GROUP_ACTION, tuple(self.resolve(table, ("member", mid)) for mid in self.ordered(g))

    def ordered(self, g: Group) -> list[int]:
        """The group's bmv2 members (a member id once per unit of weight) in handle order."""
        hs = []
        for mid, w in g.members.items():
            m = self.members[mid]
            hs += [(h, mid) for h in [m.handle, *m.copies][:w]]
        return [mid for _, mid in sorted(hs)]

    def _used_handles(self) -> set[int]:
        return {h for m in self.members.values() for h in (m.handle, *m.copies)}

    def _new_handle(self) -> int:
        used = self._used_handles()
        if len(used) >= self.info.size:
            raise ResourceExhausted(f"action profile {self.name} is full ({self.info.size} members, "
                                    "copies for weights included)")
        return next(h for h in range(len(used) + 1) if h not in used)

    def _grow(self, new: Mapping[int, int], old: Mapping[int, int]) -> None:
        """Create the copies `new`'s weights need; on failure none of them is left."""
        try:
            for mid in sorted({*new, *old}):
                m = self.members[mid]
                while 1 + len(m.copies) < new.get(mid, 0):
                    m.copies.append(self._new_handle())
        except ResourceExhausted:
            self._purge(new)
            raise

    def _purge(self, mids) -> None:
        """Delete the copies of these members that no group needs any more."""
        for mid in sorted(mids):
            m = self.members.get(mid)
            if m is not None:
                need = max([1, *(g.members.get(mid, 0) for g in self.groups.values())])
                del m.copies[need - 1:]

    def changed(self, ref: tuple[str, int]) -> list[tuple[Table, list[Entry], bool]]:
        out = []
        for t in self.tables:
            entries, default = t.refresh(ref)
            out.append((t, entries, default))
        return out

    # ------------------------------------------------------------------ members
    def _check_member(self, member_id: int, action: str, args: dict[str, int]) -> None:
        if isinstance(member_id, bool) or not isinstance(member_id, int) or member_id < 0:
            raise SwitchError(f"member id {member_id!r} of action profile {self.name} is not an int >= 0")
        for t in self.tables:
            if action not in t.action_fns:
                raise NotFound(f"action {action} is not an action of table {t.name} "
                               f"(action profile {self.name})")
            if t.allowed.get(action) == "DEFAULT_ONLY":
                raise SwitchError(f"action {action} is @defaultonly in table {t.name}")
            t._check_args(action, args)

    def insert_member(self, member_id: int, action: str, args: dict[str, int]) -> None:
        self._check_member(member_id, action, args)
        if member_id in self.members:
            raise AlreadyExists(f"action profile {self.name} already has member {member_id}")
        self.members[member_id] = Member(action, dict(args), self._new_handle())

    def modify_member(self, member_id: int, action: str, args: dict[str, int]) -> list:
        self._check_member(member_id, action, args)
        m = self.members.get(member_id)
        if m is None:
            raise NotFound(f"action profile {self.name} has no member {member_id}")
        m.action, m.args = action, dict(args)
        out = self.changed(("member", member_id))
        for gid, g in self.groups.items():
            if member_id in g.members:
                out += self.changed(("group", gid))
        return out

    def delete_member(self, member_id: int) -> None:
        if member_id not in self.members:
            raise NotFound(f"action profile {self.name} has no member {member_id}")
        if self.refs.get(("member", member_id)):
            raise InUse(f"member {member_id} of action profile {self.name} is still referred to by "
                        "a table entry, a default or a group")
        del self.members[member_id]
        self.refs.pop(("member", member_id), None)

    def read_members(self) -> dict[int, tuple[str, dict[str, int]]]:
        return {mid: (m.action, dict(m.args)) for mid, m in self.members.items()}

    # ------------------------------------------------------------------ groups
    def _group_members(self, group_id: int, members: Sequence[int], max_size: int,
                       weights: Sequence[int] | None) -> dict[int, int]:
        if not self.info.with_selector:
            raise SwitchError(f"action profile {self.name} has no selector: it has no groups")
        if isinstance(group_id, bool) or not isinstance(group_id, int) or group_id < 0:
            raise SwitchError(f"group id {group_id!r} of action profile {self.name} is not an int >= 0")
        if not isinstance(max_size, int) or max_size < 0:
            raise SwitchError(f"max_size {max_size!r} of group {group_id} is negative")
        limit = self.info.max_group_size
        if limit and max_size > limit:
            raise ResourceExhausted(f"group {group_id}: max_size {max_size} is over the max_group_size "
                                    f"{limit} of action profile {self.name}")
        ids = list(members)
        ws = [1] * len(ids) if weights is None else list(weights)
        if len(ws) != len(ids):
            raise SwitchError(f"group {group_id}: {len(ws)} weights for {len(ids)} members")
        for w in ws:  # as PI checks them, before the group's size
            if isinstance(w, bool) or not isinstance(w, int) or w < 1:
                raise SwitchError(f"group {group_id} of action profile {self.name}: member weight {w!r} "
                                  "is not a positive integer")
        cap = max_size or limit  # the sum of the weights is what a group's size bounds (PI)
        if cap and sum(ws) > cap:
            raise ResourceExhausted(f"group {group_id} of action profile {self.name} holds at most "
                                    f"{cap} members (sum of weights); {sum(ws)} given")
        for mid in ids:
            if mid not in self.members:
                raise NotFound(f"action profile {self.name} has no member {mid} (group {group_id})")
        if len(set(ids)) != len(ids):
            raise SwitchError(f"group {group_id} of action profile {self.name} lists a member twice "
                              "(use weights instead)")
        return dict(zip(ids, ws, strict=True))

    def insert_group(self, group_id: int, members: Sequence[int], max_size: int = 0,
                     weights: Sequence[int] | None = None) -> None:
        ms = self._group_members(group_id, members, max_size, weights)
        if group_id in self.groups:
            raise AlreadyExists(f"action profile {self.name} already has group {group_id}")
        if len(self.groups) >= self.info.size:
            raise ResourceExhausted(f"action profile {self.name} is full ({self.info.size} groups)")
        self._grow(ms, {})
        self.groups[group_id] = Group(ms, max_size)
        for mid in ms:
            self.count_ref(("member", mid), 1)

    def modify_group(self, group_id: int, members: Sequence[int], max_size: int = 0,
                     weights: Sequence[int] | None = None) -> list:
        g = self.groups.get(group_id) if self.info.with_selector else None
        if g is None and self.info.with_selector:
            raise NotFound(f"action profile {self.name} has no group {group_id}")
        if g is not None and g.max_size and max_size and max_size != g.max_size:
            raise SwitchError(f"group {group_id}: max_size cannot change ({g.max_size} to {max_size})")
        max_size = max_size or (g.max_size if g is not None else 0)  # 0: the group's own
        ms = self._group_members(group_id, members, max_size, weights)
        assert g is not None
        self._grow(ms, g.members)
        for mid in g.members:
            self.count_ref(("member", mid), -1)
        for mid in ms:
            self.count_ref(("member", mid), 1)
        old, g.members = g.members, ms
        g.max_size = max_size
        self._purge({*old, *ms})
        return self.changed(("group", group_id))

    def delete_group(self, group_id: int) -> None:
        g = self.groups.get(group_id)
        if g is None:
            raise NotFound(f"action profile {self.name} has no group {group_id}")
        if self.refs.get(("group", group_id)):
            raise InUse(f"group {group_id} of action profile {self.name} is still referred to by a "
                        "table entry or a default")
        for mid in g.members:
            self.count_ref(("member", mid), -1)
        del self.groups[group_id]
        self.refs.pop(("group", group_id), None)
        self._purge(g.members)

    def read_groups(self) -> dict[int, tuple[list[int], int]]:
        """Each group's member ids (once each, in the order of their own handles), max_size."""
        return {gid: (sorted(g.members, key=lambda mid: self.members[mid].handle), g.max_size)
                for gid, g in self.groups.items()}

    def read_group_weights(self) -> dict[int, dict[int, int]]:
        return {gid: dict(g.members) for gid, g in self.groups.items()}


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
