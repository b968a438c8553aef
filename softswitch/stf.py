"""STF packet tests: parser, runner and command line.

STF ("simple test framework") is the packet-test format of p4c's testdata: p4c's bmv2 driver
(backends/bmv2/bmv2stf.py with tools/stf/stf_parser.py) turns each line into simple_switch_CLI
commands and pcap files. This module gives the same lines the same meaning on any `SwitchAPI`,
so third-party STF files run unchanged on the software switch.

    python -m softswitch.stf PROGRAM.p4 TEST.stf [TEST2.stf ...] [-I DIR] [-D NAME[=VAL]] [-v]

prints PASS/FAIL per STF file; exit status 0 when all pass, 1 when a packet check fails,
2 when a file is malformed, the program does not compile or the switch refuses a command.

Semantics, as bmv2stf defines them (differences are marked "extension"):

* `packet <port> <hex>`: hex digits, spaces anywhere.
* `expect <port> <hex>`: `*` is a don't-care nibble. Without a trailing `$` the received packet
  may be longer than the pattern (extra bytes are not checked); with `$` it must have exactly
  the pattern's length. `expect <port>` with no data lets that port receive any packets, any
  number of them, none included: the port is not checked at all (bmv2stf's expectedAny; its
  pattern-carrying expects are then ignored too, as bmv2stf skips the port).
  Expectations are matched per port in order, at the end of the file; order across ports does
  not matter. Only ports named by some `packet`/`expect` line are checked (bmv2 opens no other
  interface): every expected packet must arrive and any further packet on such a port fails
  the test. Packets on other ports are logged, not checked. `no_packet` is accepted as a no-op
  (unexpected packets on checked ports already fail).
* `add <table> [<prio>] <key>:<value> ... <action>(<param>:<value>, ...) [= <handle>]`.
  Names resolve leniently: exact name, else a unique dotted suffix ("t" -> "MyIngress.t",
  "ipv4.dstAddr" -> "hdr.ipv4.dstAddr"), else a unique plain suffix (bmv2stf's rule).
  `h$0.f` means `h[0].f`; `h.$valid$`, `h.$valid`, `h.valid` and `h.isValid()` all name the
  validity key of `h`. Values: decimal, 0x hex, 0b binary, 0o octal; in hex/bin/oct a `*` digit
  is a don't-care.
  - exact: a number. A key left out is 0 (bmv2stf fills in 0).
  - ternary: hex/bin/oct digits make the mask, one all-ones digit per digit written and zero for
    `*` (bmv2stf: `0x25**` on a 16-bit field is 0x2500&&&0xff00; note `0x1` is 0x1&&&0xf).
    Extensions: `v&&&m`; a decimal number (bmv2stf rejects it) means an exact match.
  - lpm: `v/len`; without `/`, the prefix length is the bits of the digits written minus the
    `*` digits (bmv2stf), capped at the field width; decimal means the full width.
  - range (extension): `lo->hi` or a single number. optional (extension): a number.
  - ternary, lpm, range and optional keys left out, or given as `*`, are wildcards.
  Priorities: in STF a LARGER number wins (bmv2stf sends 10000-p to bmv2, whose smaller value
  wins; p4c's ternary2-bmv2.stf relies on it). P4Runtime also lets larger win, so STF priority p
  becomes p+1 (P4Runtime needs > 0). A priority on a table without ternary/range/optional keys
  is dropped, as bmv2stf does. An entry without priority on a table that needs one (bmv2 would
  refuse it) gets AUTO_PRIORITY_BASE minus the number of such entries before it in that table,
  so among such entries the first added wins, like `const entries`.
* `setdefault <table> <action>(<args>)`; `remove all` clears every table's non-const entries.
* `mc_mgrp_create <g>`, `mc_mgrp_destroy <g>`, `mc_node_create <rid> <port>...` (handles 0, 1, 2,
  ... in creation order, as bmv2), `mc_node_update <h> <port>...`, `mc_node_associate <g> <h>`,
  `mc_node_dissociate <g> <h>`, `mc_node_destroy <h>`: kept as bmv2's two-level PRE and pushed
  to the switch as `mc_group_set(g, replicas)` (nodes in association order, ports ascending).
* `mirroring_add <session> <port>`, `mirroring_add_mc <session> <group>` (follows later changes
  of the group), `mirroring_delete <session>`, `mirroring_get <session>` (logged).
* `register_write <reg> <i> <v>`, `register_read` (logged), `register_reset <reg>`;
  `counter_write <c> <i> <packets> <bytes>`, `counter_read` (logged), `counter_reset <c>`;
  `meter_set_rates <m> <i> <r>:<b> <r>:<b>` and `meter_array_set_rates <m> <r>:<b> <r>:<b>` with
  bmv2's units (rate per microsecond, burst) -> `meter_set_config` (rate per second);
  `meter_get_rates` is logged.
* `check_counter <c>(<index>|<handle>) [packets|bytes] [==|!=|<|<=|>|>=] <value>`: an indexed
  counter by index, or a direct counter by the handle of an `add ... = handle` entry (written
  `$A` or `A`). Without a condition the counter is only read and logged (bmv2stf ignores
  check_counter altogether).
* `wait`: the switch is synchronous, so everything before it has already happened.
* `#` starts a comment; commands are case-insensitive; unknown commands are errors.
"""

from __future__ import annotations

import argparse
import operator
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from p4compiler.errors import not_utf8
from p4compiler.model import ProgramInfo, TableInfo
from softswitch.api import (
    CloneSession,
    Exact,
    Lpm,
    Match,
    Optional_,
    Range,
    Replica,
    SwitchAPI,
    SwitchError,
    TableEntry,
    Ternary,
)

AUTO_PRIORITY_BASE = 1 << 20
_PRIORITY_TYPES = {"ternary", "range", "optional"}


class StfError(Exception):
    """A malformed STF line, a name that does not resolve, or a command the switch refuses."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None):
        self.message = message
        self.file = file
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.file is None:
            return self.message
        return f"{self.file}:{self.line}: {self.message}"


# --- parsed commands --------------------------------------------------------------------


@dataclass
class StfCommand:
    """One STF line. `kind` is the lower-cased command word; `text` is the line without comment."""

    kind: str
    file: str
    line: int
    text: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class PacketCommand(StfCommand):
    port: int = 0
    data: bytes = b""


@dataclass
class ExpectCommand(StfCommand):
    port: int = 0
    pattern: str | None = None  # upper-case hex nibbles and "*"; None: a bare expect, port unchecked
    exact_length: bool = False  # trailing '$'


@dataclass(frozen=True)
class KeyValue:
    """A key value as written; its meaning depends on the field's match kind."""

    text: str
    kind: str  # "num" | "masked" | "prefix" | "range" | "any"
    value: int = 0
    mask: int | None = None  # num: care bits of the digits written (None for decimal); masked: mask
    digit_bits: int = 0  # num: bits covered by the digits written (0 for decimal)
    star_bits: int = 0  # num: bits of '*' digits
    prefix_len: int = 0  # prefix
    high: int = 0  # range


@dataclass
class ActionCall:
    name: str
    args: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class AddCommand(StfCommand):
    table: str = ""
    priority: int | None = None
    keys: list[tuple[str, KeyValue]] = field(default_factory=list)
    action: ActionCall = field(default_factory=lambda: ActionCall(""))
    handle: str | None = None


@dataclass
class SetDefaultCommand(StfCommand):
    table: str = ""
    action: ActionCall = field(default_factory=lambda: ActionCall(""))


@dataclass
class CheckCounterCommand(StfCommand):
    counter: str = ""
    index: int | str = 0  # int index, or the handle name of an added entry
    count_type: str = "packets"
    op: str | None = None  # None: read and log only
    value: int = 0


@dataclass
class DirectCommand(StfCommand):
    """A simple_switch_CLI-style command (mc_*, mirroring_*, register_*, counter_*, meter_*).
    `name` is the object name for register/counter/meter commands; `numbers` the rest."""

    name: str | None = None
    numbers: list[int] = field(default_factory=list)
    rates: list[tuple[float, int]] = field(default_factory=list)  # meter commands: (rate, burst)


# --- parser --------------------------------------------------------------------------------

_NAME_RE = r"[A-Za-z_$][\w$]*(?:\[\d+\])?(?:\.[A-Za-z_$][\w$]*(?:\[\d+\])?)*"
_ACTION_RE = re.compile(rf"(?P<name>{_NAME_RE})\s*\((?P<args>[^()]*)\)\s*$")
_HANDLE_RE = re.compile(r"\)\s*=\s*(?P<handle>[A-Za-z_$][\w$]*)\s*$")
_INT_RE = re.compile(r"0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|\d+")
_PATTERN_RE = re.compile(r"0[xX][0-9a-fA-F*]+|0[bB][01*]+|0[oO][0-7*]+|\d+")
_CHECK_RE = re.compile(
    rf"^(?P<name>{_NAME_RE})\s*\(\s*(?P<index>[^()\s]+)\s*\)"
    r"(?:\s*(?P<type>packets|bytes))?(?:\s*(?P<op>==|!=|<=|>=|<|>)\s*(?P<value>\S+))?\s*$",
    re.IGNORECASE,
)

_DIRECT_SHAPES: dict[str, str] = {
    # command -> argument shape: "N" numbers, "N+" one or more numbers, "name" an object name
    "mirroring_add": "NN",
    "mirroring_add_mc": "NN",
    "mirroring_delete": "N",
    "mirroring_get": "N",
    "mc_mgrp_create": "N",
    "mc_mgrp_destroy": "N",
    "mc_node_create": "NN*",
    "mc_node_update": "NN*",
    "mc_node_associate": "NN",
    "mc_node_dissociate": "NN",
    "mc_node_destroy": "N",
    "counter_read": "name N",
    "counter_write": "name NNN",
    "counter_reset": "name",
    "register_read": "name N",
    "register_write": "name NN",
    "register_reset": "name",
    "meter_get_rates": "name N",
    "meter_set_rates": "name N rates",
    "meter_array_set_rates": "name rates",
}
_SIMPLE_KINDS = {"wait", "no_packet"}
ALL_COMMANDS = sorted(
    {"packet", "expect", "add", "setdefault", "remove", "check_counter"} | _SIMPLE_KINDS | set(_DIRECT_SHAPES)
)


def parse_int(text: str) -> int:
    """An STF number: decimal, 0x hex, 0b binary or 0o octal."""
    if not _INT_RE.fullmatch(text):
        raise ValueError(f"{text!r} is not a number (decimal, 0x hex, 0b binary or 0o octal)")
    return int(text, 0) if not re.fullmatch(r"0\d+", text) else int(text, 10)


def parse_key_value(text: str) -> KeyValue:
    """Parse the value part of `key:value` (see the module docstring for the forms)."""
    t = text.strip()
    if t == "*":
        return KeyValue(t, "any")
    if "&&&" in t:
        v, _, m = t.partition("&&&")
        return KeyValue(t, "masked", value=parse_int(v.strip()), mask=parse_int(m.strip()))
    if "->" in t:
        lo, _, hi = t.partition("->")
        return KeyValue(t, "range", value=parse_int(lo.strip()), high=parse_int(hi.strip()))
    if "/" in t:
        v, _, plen = t.partition("/")
        base = parse_key_value(v)
        if base.kind != "num":
            raise ValueError(f"bad prefix value {text!r}")
        if not plen.strip().isdigit():
            raise ValueError(f"prefix length in {text!r} must be a decimal number")
        return KeyValue(t, "prefix", value=base.value, prefix_len=int(plen))
    if not _PATTERN_RE.fullmatch(t):
        raise ValueError(
            f"bad key value {text!r}: expected a number (decimal, 0x.., 0b.., 0o.., '*' digits allowed"
            " in hex/bin/oct), value&&&mask, value/prefix_len, low->high or *"
        )
    if t[:2].lower() in ("0x", "0b", "0o"):
        bits = {"x": 4, "b": 1, "o": 3}[t[1].lower()]
        digits = t[2:]
        value = care = 0
        stars = 0
        for d in digits:
            value <<= bits
            care <<= bits
            if d == "*":
                stars += 1
            else:
                value |= int(d, 16)
                care |= (1 << bits) - 1
        if stars == len(digits):
            return KeyValue(t, "any")
        return KeyValue(
            t, "num", value=value, mask=care, digit_bits=bits * len(digits), star_bits=bits * stars
        )
    return KeyValue(t, "num", value=int(t, 10))


def _parse_action_call(name: str, args_text: str) -> ActionCall:
    args: list[tuple[str, int]] = []
    seen: set[str] = set()
    if args_text.strip():
        for part in args_text.split(","):
            k, sep, v = part.partition(":")
            k, v = k.strip(), v.strip()
            if not sep or not re.fullmatch(r"[A-Za-z_$][\w$]*", k) or not v:
                raise ValueError(f"bad action argument {part.strip()!r}: expected name:value")
            if k in seen:
                raise ValueError(f"action argument {k!r} given twice")
            seen.add(k)
            args.append((k, parse_int(v)))
    return ActionCall(name, args)


def _split_action(rest: str, kind: str) -> tuple[str, ActionCall]:
    m = _ACTION_RE.search(rest)
    if not m:
        raise ValueError(f"{kind}: expected an action call like name(arg:value, ...) at the end")
    return rest[: m.start()].strip(), _parse_action_call(m.group("name"), m.group("args"))


def _parse_add(rest: str) -> tuple[str, int | None, list[tuple[str, KeyValue]], ActionCall, str | None]:
    handle = None
    hm = _HANDLE_RE.search(rest)
    if hm:
        handle = hm.group("handle").lstrip("$")  # check_counter writes the handle as $A
        rest = rest[: hm.start() + 1]
    head, action = _split_action(rest, "add")
    # allow spaces around ':' in keys (the p4c lexer ignores blanks between tokens)
    head = re.sub(r"\s*:\s*", ":", head)
    words = head.split()
    if not words:
        raise ValueError("add: missing table name")
    table = words.pop(0)
    if not re.fullmatch(_NAME_RE, table):
        raise ValueError(f"add: bad table name {table!r}")
    priority = None
    if words and words[0].isdigit():
        priority = int(words.pop(0))
    keys: list[tuple[str, KeyValue]] = []
    for w in words:
        # names never contain ':', so the first ':' separates name and value ('h.isValid():1')
        k, sep, v = w.partition(":")
        if not sep or not k or not v:
            raise ValueError(f"add: bad key {w!r}: expected field:value")
        keys.append((k, parse_key_value(v)))
    return table, priority, keys, action, handle


def _parse_data(text: str, allow_pattern: bool) -> tuple[str, bool]:
    data = "".join(text.split()).upper()
    exact = False
    if allow_pattern and data.endswith("$"):
        exact, data = True, data[:-1]
    allowed = "0123456789ABCDEF*" if allow_pattern else "0123456789ABCDEF"
    bad = sorted({c for c in data if c not in allowed})
    if bad:
        what = "hex digits, '*' and a final '$'" if allow_pattern else "hex digits"
        raise ValueError(f"bad packet data: unexpected {''.join(bad)!r} (allowed: {what})")
    return data, exact


def _parse_line(kind: str, rest: str, file: str, line: int, text: str) -> StfCommand:
    base = {"kind": kind, "file": file, "line": line, "text": text}
    if kind in ("packet", "expect"):
        port_text, data_text = (rest.split(None, 1) + ["", ""])[:2]
        if not port_text.isdigit():
            raise ValueError(f"{kind}: expected a decimal port number, got {port_text or 'nothing'!r}")
        port = int(port_text)
        if kind == "packet":
            data, _ = _parse_data(data_text, allow_pattern=False)
            return PacketCommand(**base, port=port, data=packet_bytes(data))
        data, exact = _parse_data(data_text, allow_pattern=True)
        return ExpectCommand(**base, port=port, pattern=data or None, exact_length=exact)
    if kind == "add":
        table, prio, keys, action, handle = _parse_add(rest)
        return AddCommand(**base, table=table, priority=prio, keys=keys, action=action, handle=handle)
    if kind == "setdefault":
        head, action = _split_action(rest, "setdefault")
        if not re.fullmatch(_NAME_RE, head):
            raise ValueError(f"setdefault: expected 'setdefault <table> <action>(<args>)', got {rest!r}")
        return SetDefaultCommand(**base, table=head, action=action)
    if kind == "remove":
        if rest.lower() != "all":
            raise ValueError("remove: only 'remove all' is supported")
        return StfCommand(**base)
    if kind in _SIMPLE_KINDS:
        if rest:
            raise ValueError(f"{kind} takes no arguments")
        return StfCommand(**base)
    if kind == "check_counter":
        m = _CHECK_RE.match(rest)
        if not m:
            raise ValueError(
                "check_counter: expected 'check_counter <name>(<index>|<handle>)"
                " [packets|bytes] [<op> <value>]'"
            )
        idx_text = m.group("index")
        index: int | str = parse_int(idx_text) if idx_text[0].isdigit() else idx_text.lstrip("$")
        op = m.group("op")
        return CheckCounterCommand(
            **base,
            counter=m.group("name"),
            index=index,
            count_type=(m.group("type") or "packets").lower(),
            op=op,
            value=parse_int(m.group("value")) if op else 0,
        )
    if kind in _DIRECT_SHAPES:
        return _parse_direct(kind, rest, base)
    raise ValueError(f"unknown command {kind!r} (known: {', '.join(ALL_COMMANDS)})")


def _parse_direct(kind: str, rest: str, base: dict) -> DirectCommand:
    shape = _DIRECT_SHAPES[kind]
    words = rest.split()
    usage = f"{kind}: expected '{kind} {shape.replace('N', '<n> ').replace('*', '...').strip()}'"
    name = None
    rates: list[tuple[float, int]] = []
    if shape.startswith("name"):
        if not words or not re.fullmatch(_NAME_RE, words[0]):
            raise ValueError(f"{kind}: expected an object name first")
        name = words.pop(0)
        shape = shape[4:].strip()
    if shape.endswith("rates"):
        shape = shape[: -len("rates")].strip()
        for w in words[len(shape) :]:
            r, sep, b = w.partition(":")
            try:
                rates.append((float(r), parse_int(b)))
            except ValueError:
                raise ValueError(f"{kind}: bad rate {w!r}: expected <rate>:<burst>") from None
            if not sep:
                raise ValueError(f"{kind}: bad rate {w!r}: expected <rate>:<burst>")
        words = words[: len(shape)]
        if len(rates) != 2:
            raise ValueError(f"{kind}: expected two <rate>:<burst> pairs (committed, peak)")
    if shape.endswith("*"):
        fixed = shape.rstrip("*")
        if len(words) < len(fixed):
            raise ValueError(usage)
    elif len(words) != len(shape):
        raise ValueError(usage)
    numbers = []
    for w in words:
        if w == "|":
            raise ValueError(f"{kind}: LAG lists are not supported")
        numbers.append(parse_int(w))
    return DirectCommand(**base, name=name, numbers=numbers, rates=rates)


def parse_stf(text: str, filename: str = "<stf>") -> list[StfCommand]:
    """Parse STF text into commands; a malformed line raises StfError naming file:line."""
    commands: list[StfCommand] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        word, rest = (line.split(None, 1) + [""])[:2]
        kind = word.lower()
        try:
            commands.append(_parse_line(kind, rest.strip(), filename, lineno, line))
        except ValueError as e:
            raise StfError(str(e), filename, lineno) from None
    return commands


# --- results and packet comparison ---------------------------------------------------------


@dataclass
class StfResult:
    ok: bool = True
    failures: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    outputs: dict[int, list[bytes]] = field(default_factory=dict)  # every packet out, per port


def packet_bytes(hex_digits: str) -> bytes:
    """A `packet` line's data as p4c's bmv2stf sends it (HexToByte): digit pairs from the left,
    a lone final digit d is the byte 0x0d, and no digits at all is an empty packet."""
    if len(hex_digits) % 2:
        hex_digits = hex_digits[:-1] + "0" + hex_digits[-1]
    return bytes.fromhex(hex_digits)


def match_packet(pattern: str | None, exact_length: bool, data: bytes) -> bool:
    """bmv2stf's rule: nibble by nibble, '*' matches anything, longer packets are fine
    unless `exact_length`."""
    if pattern is None:
        return True
    got = data.hex().upper()
    if len(got) < len(pattern) or (exact_length and len(got) != len(pattern)):
        return False
    return all(p == "*" or p == g for p, g in zip(pattern, got, strict=False))


def packet_diff(pattern: str, exact_length: bool, data: bytes, width: int = 64) -> list[str]:
    """Expected vs got, `width` nibbles per row, with '^' under each nibble that differs,
    is missing, or is extra when the length must be exact."""
    got = data.hex().upper()
    n = max(len(pattern), len(got) if exact_length else len(pattern))
    lines = []
    for start in range(0, max(n, 1), width):
        exp_row = pattern[start : start + width]
        got_row = got[start : start + width] if exact_length else got[start : min(start + width, n)]
        marks = []
        for i in range(max(len(exp_row), len(got_row))):
            e = exp_row[i] if i < len(exp_row) else None
            g = got_row[i] if i < len(got_row) else None
            marks.append("^" if e is None or g is None or (e != "*" and e != g) else " ")
        lines.append(f"    @{start // 2:<5d} expected: {exp_row}")
        lines.append(f"    {'':6s} got:      {got_row}")
        if "^" in marks:
            lines.append(f"    {'':6s}           {''.join(marks).rstrip()}")
    extra = len(got) - len(pattern)
    if extra > 0 and not exact_length:
        lines.append(f"    ({extra // 2} more bytes received, not checked: the pattern has no '$')")
    return lines


# --- name resolution -------------------------------------------------------------------------


def _resolve(what: str, wanted: str, candidates: Sequence[str], context: str = "") -> str:
    """Exact name, else a unique dotted suffix, else a unique plain suffix (bmv2stf's rule)."""
    if wanted in candidates:
        return wanted
    for matches in (
        [c for c in candidates if c.endswith("." + wanted)],
        [c for c in candidates if c.endswith(wanted)],
    ):
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise ValueError(f"{what} name {wanted!r} is ambiguous{context}: {', '.join(sorted(matches))}")
    known = ", ".join(sorted(candidates)) or "none"
    raise ValueError(f"no {what} named {wanted!r}{context} (known: {known})")


def _canon_key(name: str) -> str:
    """One spelling for validity keys: bmv2 JSON writes `h.$valid$`, P4Info `h.isValid()`."""
    name = re.sub(r"\$(\d+)", r"[\1]", name)  # STF writes stack elements as h$0
    for suffix in (".$valid$", ".$valid", "$valid$"):
        if name.endswith(suffix):
            base = name[: -len(suffix)].rstrip(".")
            return f"{base}.isValid()" if base else "isValid()"
    return name


def _resolve_key(table: TableInfo, wanted: str) -> str:
    names = [f.name for f in table.match_fields]
    canon = {_canon_key(n): n for n in names}
    ctx = f" in the key of table {table.name}"
    w = _canon_key(wanted)
    try:
        return canon[_resolve("key field", w, list(canon), ctx)]
    except ValueError:
        if w.endswith(".valid") or w == "valid":  # bmv2stf: `h.valid` also names h's validity key
            alt = w[: -len("valid")] + "isValid()"
            try:
                return canon[_resolve("key field", alt, list(canon), ctx)]
            except ValueError:
                pass
        raise


# --- runner ------------------------------------------------------------------------------------

_OPS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclass
class _McNode:
    rid: int
    ports: list[int]


class _Runner:
    def __init__(self, switch: SwitchAPI, result: StfResult):
        self.sw = switch
        self.info: ProgramInfo = switch.info
        self.result = result
        self.handles: dict[str, TableEntry] = {}
        self.auto_prio: dict[str, int] = {}
        self.mc_nodes: dict[int, _McNode] = {}
        self.next_node = 0
        self.mc_groups: dict[int, list[int]] = {}  # group -> node handles, association order
        self.mirror_to_group: dict[int, int] = {}  # session -> multicast group (mirroring_add_mc)
        self.expected: dict[int, list[ExpectCommand]] = {}
        self.watched: set[int] = set()
        self.got: dict[int, list[tuple[bytes, PacketCommand]]] = {}

    def log(self, msg: str) -> None:
        self.result.log.append(msg)

    # -- dispatch
    def run(self, commands: Iterable[StfCommand]) -> None:
        commands = list(commands)
        for c in commands:
            if isinstance(c, PacketCommand | ExpectCommand):
                self.watched.add(c.port)
        for c in commands:
            try:
                self.execute(c)
            except SwitchError as e:
                raise StfError(f"the switch refused `{c.text}`: {e} ({e.code})", c.file, c.line) from None
            except ValueError as e:
                raise StfError(str(e), c.file, c.line) from None
        self.check_outputs()

    def execute(self, c: StfCommand) -> None:
        if isinstance(c, PacketCommand):
            self.log(f"{c.where}: packet in port {c.port}: {c.data.hex()}")
            for port, data in self.sw.process_packet(c.port, c.data):
                self.result.outputs.setdefault(port, []).append(data)
                if port in self.watched:
                    self.got.setdefault(port, []).append((data, c))
                    self.log(f"    out port {port}: {data.hex()}")
                else:
                    self.log(
                        f"    out port {port} (not checked: no packet/expect line names it): {data.hex()}"
                    )
        elif isinstance(c, ExpectCommand):
            self.expected.setdefault(c.port, []).append(c)
        elif isinstance(c, AddCommand):
            self.do_add(c)
        elif isinstance(c, SetDefaultCommand):
            table = self.table(c.table)
            action, args = self.action_args(table, c.action)
            self.sw.set_default_entry(table.name, action, args)
            self.log(f"{c.where}: default of {table.name} = {action}{args}")
        elif isinstance(c, CheckCounterCommand):
            self.do_check_counter(c)
        elif isinstance(c, DirectCommand):
            self.do_direct(c)
        elif c.kind == "remove":
            for t in self.info.tables:
                if not t.is_const_table:
                    self.sw.clear_table(t.name)
            self.log(f"{c.where}: removed all entries")
        elif c.kind in _SIMPLE_KINDS:
            pass  # the switch is synchronous: `wait` has nothing to wait for
        else:  # parse_stf never produces this
            raise ValueError(f"unknown command {c.kind!r}")

    # -- tables
    def table(self, name: str) -> TableInfo:
        return self.info.table(_resolve("table", name, [t.name for t in self.info.tables]))

    def action_args(self, table: TableInfo, call: ActionCall) -> tuple[str, dict[str, int]]:
        allowed = [r.name for r in table.action_refs]
        name = _resolve("action", call.name, allowed, f" among the actions of table {table.name}")
        action = self.info.action(name)
        params = {p.name: p for p in action.params}
        args: dict[str, int] = {}
        for k, v in call.args:
            if k not in params:
                raise ValueError(
                    f"action {name} has no parameter {k!r} (parameters: {', '.join(params) or 'none'})"
                )
            args[k] = _fit(v, params[k].bitwidth, f"parameter {k} of {name}")
        missing = [p for p in params if p not in args]
        if missing:
            raise ValueError(f"action {name}: missing argument(s) {', '.join(missing)}")
        return name, args

    def do_add(self, c: AddCommand) -> None:
        table = self.table(c.table)
        fields = {f.name: f for f in table.match_fields}
        match: dict[str, Match] = {}
        given: set[str] = set()
        for key, kv in c.keys:
            fname = _resolve_key(table, key)
            if fname in given:
                raise ValueError(f"key field {fname} given twice")
            given.add(fname)
            m = _to_match(kv, fields[fname].match_type, fields[fname].bitwidth, fname)
            if m is not None:
                match[fname] = m
        for f in table.match_fields:
            if f.name not in given and f.match_type == "exact":
                match[f.name] = Exact(0)  # bmv2stf sends 0 for an exact key left out
        action, args = self.action_args(table, c.action)
        priority = 0
        if any(f.match_type in _PRIORITY_TYPES for f in table.match_fields):
            if c.priority is not None:
                priority = c.priority + 1
            else:
                n = self.auto_prio.get(table.name, 0)
                self.auto_prio[table.name] = n + 1
                priority = AUTO_PRIORITY_BASE - n
        entry = TableEntry(table=table.name, match=match, action=action, args=args, priority=priority)
        self.sw.insert_entry(entry)
        if c.handle:
            self.handles[c.handle] = entry
        self.log(f"{c.where}: add {table.name} {match} prio {priority} -> {action}{args}")

    # -- counters, registers, meters
    def do_check_counter(self, c: CheckCounterCommand) -> None:
        indexed = [x.name for x in self.info.counters]
        direct = [x.name for x in self.info.direct_counters]
        name = _resolve("counter", c.counter, indexed + direct)
        if name in direct:
            if not isinstance(c.index, str):
                raise ValueError(f"{name} is a direct counter: name an entry by its handle (add ... = h)")
            if c.index not in self.handles:
                raise ValueError(f"no entry with handle {c.index!r} (give one with `add ... = {c.index}`)")
            byte_count, packet_count = self.sw.read_direct_counter(self.handles[c.index])
        else:
            if isinstance(c.index, str):
                raise ValueError(f"{name} is an indexed counter: give a number, not {c.index!r}")
            byte_count, packet_count = self.sw.counter_read(name, c.index)
        got = packet_count if c.count_type == "packets" else byte_count
        self.log(f"{c.where}: {name}({c.index}) = {packet_count} packets, {byte_count} bytes")
        if c.op is not None and not _OPS[c.op](got, c.value):
            self.fail(
                f"{c.where}: check_counter {name}({c.index}): {c.count_type} is {got}, "
                f"expected {c.op} {c.value}"
            )

    def do_direct(self, c: DirectCommand) -> None:
        k, n = c.kind, c.numbers
        if k.startswith("mc_") or k.startswith("mirroring_"):
            self.do_pre(c)
        elif k.startswith("register_"):
            reg = self.info_obj("register", c.name or "", self.info.registers)
            if k == "register_write":
                self.sw.register_write(reg.name, n[0], _fit(n[1], reg.bitwidth, f"register {reg.name}"))
            elif k == "register_read":
                self.log(f"{c.where}: {reg.name}[{n[0]}] = {self.sw.register_read(reg.name, n[0])}")
            else:
                for i in range(reg.size):
                    self.sw.register_write(reg.name, i, 0)
        elif k.startswith("counter_"):
            ctr = self.info_obj("counter", c.name or "", self.info.counters)
            if k == "counter_write":  # simple_switch_CLI order: <index> <packets> <bytes>
                self.sw.counter_write(ctr.name, n[0], byte_count=n[2], packet_count=n[1])
            elif k == "counter_read":
                b, p = self.sw.counter_read(ctr.name, n[0])
                self.log(f"{c.where}: {ctr.name}[{n[0]}] = {p} packets, {b} bytes")
            else:
                for i in range(ctr.size):
                    self.sw.counter_write(ctr.name, i, 0, 0)
        elif k.startswith("meter_"):
            mtr = self.info_obj("meter", c.name or "", self.info.meters)
            if k == "meter_get_rates":
                self.log(f"{c.where}: meter_get_rates is not supported by SwitchAPI; ignored")
                return
            # bmv2 rates are units per microsecond; SwitchAPI takes units per second
            (cr, cb), (pr, pb) = c.rates
            indices = [n[0]] if k == "meter_set_rates" else range(mtr.size)
            for i in indices:
                self.sw.meter_set_config(mtr.name, i, round(cr * 1e6), cb, round(pr * 1e6), pb)
        self.log(f"{c.where}: {c.text}")

    def info_obj(self, what: str, name: str, objs: Sequence):
        chosen = _resolve(what, name, [o.name for o in objs])
        return next(o for o in objs if o.name == chosen)

    # -- packet replication engine, kept as bmv2's groups -> nodes -> (rid, ports)
    def do_pre(self, c: DirectCommand) -> None:
        k, n = c.kind, c.numbers
        if k == "mc_mgrp_create":
            if n[0] in self.mc_groups:
                raise ValueError(f"multicast group {n[0]} already exists")
            self.mc_groups[n[0]] = []
            self.push_group(n[0])
        elif k == "mc_mgrp_destroy":
            self.group(n[0])
            del self.mc_groups[n[0]]
            self.sw.mc_group_delete(n[0])
        elif k == "mc_node_create":
            self.mc_nodes[self.next_node] = _McNode(rid=n[0], ports=sorted(set(n[1:])))
            self.log(f"{c.where}: multicast node handle {self.next_node}")
            self.next_node += 1
        elif k == "mc_node_update":
            self.node(n[0]).ports = sorted(set(n[1:]))
            self.push_groups_with(n[0])
        elif k == "mc_node_associate":
            nodes = self.group(n[0])
            self.node(n[1])
            if any(n[1] in g for g in self.mc_groups.values()):
                raise ValueError(f"multicast node {n[1]} is already associated with a group")
            nodes.append(n[1])
            self.push_group(n[0])
        elif k == "mc_node_dissociate":
            nodes = self.group(n[0])
            if n[1] not in nodes:
                raise ValueError(f"multicast node {n[1]} is not associated with group {n[0]}")
            nodes.remove(n[1])
            self.push_group(n[0])
        elif k == "mc_node_destroy":
            self.node(n[0])
            if any(n[0] in g for g in self.mc_groups.values()):
                raise ValueError(f"multicast node {n[0]} is still associated with a group")
            del self.mc_nodes[n[0]]
        elif k == "mirroring_add":
            self.mirror_to_group.pop(n[0], None)
            self.sw.clone_session_set(CloneSession(n[0], [Replica(egress_port=n[1], instance=0)]))
        elif k == "mirroring_add_mc":
            self.group(n[1])
            self.mirror_to_group[n[0]] = n[1]
            self.sw.clone_session_set(CloneSession(n[0], self.replicas(n[1])))
        elif k == "mirroring_delete":
            self.mirror_to_group.pop(n[0], None)
            self.sw.clone_session_delete(n[0])
        elif k == "mirroring_get":
            self.log(f"{c.where}: clone session {n[0]}: {self.sw.clone_sessions().get(n[0])}")

    def group(self, gid: int) -> list[int]:
        if gid not in self.mc_groups:
            raise ValueError(f"no multicast group {gid} (create it with mc_mgrp_create {gid})")
        return self.mc_groups[gid]

    def node(self, handle: int) -> _McNode:
        if handle not in self.mc_nodes:
            raise ValueError(f"no multicast node with handle {handle} (handles count from 0)")
        return self.mc_nodes[handle]

    def replicas(self, gid: int) -> list[Replica]:
        out = []
        for h in self.mc_groups[gid]:
            node = self.mc_nodes[h]
            out.extend(Replica(egress_port=p, instance=node.rid) for p in node.ports)
        return out

    def push_group(self, gid: int) -> None:
        self.sw.mc_group_set(gid, self.replicas(gid))
        for session, g in self.mirror_to_group.items():
            if g == gid:
                self.sw.clone_session_set(CloneSession(session, self.replicas(gid)))

    def push_groups_with(self, handle: int) -> None:
        for gid, nodes in self.mc_groups.items():
            if handle in nodes:
                self.push_group(gid)

    # -- final check, as bmv2stf: per checked port, the expectations in order
    def fail(self, msg: str) -> None:
        self.result.ok = False
        self.result.failures.append(msg)

    def check_outputs(self) -> None:
        for port in sorted(self.watched):
            exps = self.expected.get(port, [])
            if any(e.pattern is None for e in exps):  # a bare `expect <port>`: anything goes there
                continue
            got = self.got.get(port, [])
            for i, exp in enumerate(exps):
                if i >= len(got):
                    self.fail(
                        f"{exp.where}: port {port}: expected packet #{i + 1} never arrived: "
                        f"{exp.pattern or '(any packet)'}{'$' if exp.exact_length else ''}"
                    )
                    continue
                data, sent = got[i]
                if not match_packet(exp.pattern, exp.exact_length, data):
                    assert exp.pattern is not None
                    why = "differs"
                    if len(data) * 2 < len(exp.pattern):
                        why = (
                            f"too short ({len(data)} bytes, expected at least {(len(exp.pattern) + 1) // 2})"
                        )
                    elif exp.exact_length and len(data) * 2 != len(exp.pattern):
                        why = f"has length {len(data)}, expected exactly {(len(exp.pattern) + 1) // 2} ('$')"
                    lines = [
                        f"{exp.where}: port {port}: packet #{i + 1} (caused by the packet at "
                        f"{sent.where}) {why}:"
                    ]
                    lines += packet_diff(exp.pattern, exp.exact_length, data)
                    self.fail("\n".join(lines))
            for j in range(len(exps), len(got)):
                data, sent = got[j]
                self.fail(
                    f"{sent.where}: port {port}: unexpected packet #{j + 1} (only {len(exps)} "
                    f"expected on this port): {data.hex().upper()}"
                )


def _fit(value: int, width: int, what: str) -> int:
    if value < 0 or value >> width:
        raise ValueError(f"value {value:#x} does not fit in the {width} bits of {what}")
    return value


def _to_match(kv: KeyValue, match_type: str, width: int, fname: str) -> Match | None:
    """The Match for one key value, or None for a wildcard (left out of the entry)."""
    full = (1 << width) - 1
    what = f"{match_type} key {fname} (bit<{width}>)"

    def bad(reason: str) -> ValueError:
        return ValueError(f"value {kv.text!r} for {what}: {reason}")

    if kv.kind == "any":
        if match_type == "exact":
            raise bad("an exact key cannot be a wildcard")
        return None
    if match_type == "exact":
        if kv.kind != "num" or kv.star_bits:
            raise bad("an exact key takes a plain number")
        return Exact(_fit(kv.value, width, what))
    if match_type == "ternary":
        if kv.kind == "masked":
            value, mask = _fit(kv.value, width, what), _fit(kv.mask or 0, width, what)
        elif kv.kind == "prefix":
            if kv.prefix_len > width:
                raise bad(f"prefix length exceeds {width}")
            mask = full ^ (full >> kv.prefix_len)
            value = _fit(kv.value, width, what)
        elif kv.kind == "num":
            value = _fit(kv.value, width, what)
            # the digits written make the mask (bmv2stf); decimal means every bit
            mask = full if kv.mask is None else kv.mask & full
        else:
            raise bad("a ternary key takes a number with optional '*' digits, or value&&&mask")
        return Ternary(value & mask, mask) if mask else None
    if match_type == "lpm":
        if kv.kind == "prefix":
            plen = kv.prefix_len
            if plen > width:
                raise bad(f"prefix length exceeds {width}")
        elif kv.kind == "num":
            plen = width if kv.mask is None else min(width, kv.digit_bits - kv.star_bits)
        else:
            raise bad("an lpm key takes value/prefix_len or a number")
        value = _fit(kv.value, width, what)
        mask = full ^ (full >> plen)
        return Lpm(value & mask, plen) if plen else None
    if match_type == "range":
        if kv.kind == "range":
            lo, hi = _fit(kv.value, width, what), _fit(kv.high, width, what)
            if lo > hi:
                raise bad("low end above high end")
            return Range(lo, hi)
        if kv.kind == "num" and not kv.star_bits:
            v = _fit(kv.value, width, what)
            return Range(v, v)
        raise bad("a range key takes low->high or a number")
    if match_type == "optional":
        if kv.kind == "num" and not kv.star_bits:
            return Optional_(_fit(kv.value, width, what))
        raise bad("an optional key takes a number or *")
    raise bad(f"match kind {match_type!r} is not supported in STF entries")


# --- public entry points ---------------------------------------------------------------------


def run_stf_commands(switch: SwitchAPI, commands: Iterable[StfCommand]) -> StfResult:
    """Run parsed commands on `switch` (its tables etc. as the STF leaves them)."""
    result = StfResult()
    _Runner(switch, result).run(commands)
    return result


def run_stf_on_switch(switch: SwitchAPI, stf_path: str) -> StfResult:
    """Run one STF file on an already loaded switch. Packet mismatches are reported in the
    result; a malformed file or a refused command raises StfError."""
    try:
        with open(stf_path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise StfError(f"cannot read STF file: {e}") from None
    except UnicodeDecodeError as e:
        raise StfError(f"{stf_path}: {not_utf8(e)}") from None
    return run_stf_commands(switch, parse_stf(text, stf_path))


def run_stf(
    program_path: str,
    stf_path: str,
    include_dirs: Sequence[str] = (),
    defines: dict[str, str] | None = None,
    cpu_port: int = 64,
    backend: str | None = None,
    allow_nonportable: bool = False,
) -> StfResult:
    """Compile `program_path` (`allow_nonportable`: also what p4c-bm2-ss refuses, see
    p4compiler.python_backend.portability), load it into a fresh software switch (`backend`: auto,
    native or python; default $INNET_SWITCH_BACKEND, else auto), run `stf_path`.
    Raises p4compiler.errors.P4Error when the program does not compile, StfError as above."""
    from p4compiler.python_backend import compile_file
    from softswitch.native_switch import create_switch  # late: the runner itself only needs SwitchAPI

    program = compile_file(program_path, include_dirs=tuple(include_dirs), defines=defines,
                           allow_nonportable=allow_nonportable)
    switch = create_switch(program, backend, cpu_port=cpu_port)
    return run_stf_on_switch(switch, stf_path)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m softswitch.stf", description="Run p4c STF packet tests on the software switch."
    )
    ap.add_argument("program", help="P4-16 v1model program")
    ap.add_argument("stf", nargs="+", help="STF test file(s); each runs on a freshly loaded switch")
    ap.add_argument(
        "-I",
        dest="include_dirs",
        action="append",
        default=[],
        metavar="DIR",
        help="include directory for the P4 preprocessor",
    )
    ap.add_argument(
        "-D", dest="defines", action="append", default=[], metavar="NAME[=VAL]", help="preprocessor define"
    )
    ap.add_argument("--cpu-port", type=int, default=64)
    ap.add_argument("--allow-nonportable", action="store_true",
                    help="also accept what p4c-bm2-ss (v1model) refuses: / or %% by a non-constant value, a "
                         "table applied twice on one path, a select on an enum-typed key")
    ap.add_argument("--backend", choices=["auto", "native", "python"], default=None,
                    help="switch backend: native (C), python (reference) or auto = native when the C emitter "
                         "handles the program (default: $INNET_SWITCH_BACKEND, else auto)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every command and packet")
    args = ap.parse_args(argv)

    from p4compiler.errors import P4Error

    defines = {}
    for d in args.defines:
        name, sep, val = d.partition("=")
        defines[name] = val if sep else "1"
    try:
        from p4compiler.python_backend import compile_file
        from softswitch.native_switch import create_switch

        program = compile_file(args.program, include_dirs=tuple(args.include_dirs), defines=defines or None,
                               allow_nonportable=args.allow_nonportable)
    except P4Error as e:
        print(e, file=sys.stderr)
        return 2
    except ImportError as e:
        print(f"error: the software switch is not available: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    status = 0
    for stf_path in args.stf:
        try:
            switch = create_switch(program, args.backend, cpu_port=args.cpu_port)
            result = run_stf_on_switch(switch, stf_path)
        except (StfError, P4Error, SwitchError) as e:
            print(f"ERROR {stf_path}\n{e}", file=sys.stderr)
            status = 2
            continue
        if args.verbose:
            print("\n".join(result.log))
        if result.ok:
            print(f"PASS {stf_path} ({switch.backend} backend)")
        else:
            print(f"FAIL {stf_path}")
            for msg in result.failures:
                print(msg)
            status = max(status, 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
