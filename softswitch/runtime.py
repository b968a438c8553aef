"""Run-time support of generated pipeline code: the per-packet context and small helpers.

The names here are what p4compiler.python_backend.emit writes; keep them short and cheap,
they run per packet.
"""

from __future__ import annotations

from typing import Any

from p4compiler.python_backend.types import P4Header, P4Struct, Stack
from softswitch import algorithms


class ParserError(Exception):
    """The parser ended in reject; `error` is the error name (None: explicit reject)."""

    def __init__(self, error: str | None):
        super().__init__(error)
        self.error = error


class ExitSignal(Exception):
    """`exit` statement: ends the current top-level control block."""


class AssertionFailed(Exception):
    pass


_EXIT = ExitSignal()


class Packet:
    """Per-packet state the pipeline functions share (the `P` of generated code)."""

    __slots__ = ("data", "off", "n", "out", "sm", "length", "resubmit", "recirculate", "clone", "truncate",
                 "meter_color", "digests")

    def __init__(self, data: bytes, sm: Any):
        self.data = data
        self.off = 0
        self.n = len(data)
        self.out: list[bytes] = []
        self.sm = sm
        self.length = len(data)
        self.resubmit: tuple | None = None
        self.recirculate: tuple | None = None
        self.clone: tuple | None = None
        self.truncate = 0
        self.meter_color: dict[str, int] = {}


def _stack_next(s: Stack) -> Any:
    if s.nxt >= len(s.h):
        raise ParserError("StackOutOfBounds")
    return s.h[s.nxt]


def _stack_last(s: Stack) -> Any:
    if s.nxt == 0:
        raise ParserError("StackOutOfBounds")
    return s.h[s.nxt - 1]


def _stack_at(s: Stack, i: int) -> Any:
    if 0 <= i < len(s.h):
        return s.h[i]
    # out of bounds: reads see an invalid header, writes go nowhere (bmv2 reports an error)
    return s.h[0].__class__()


def _union_members(u: Any) -> list:
    return [getattr(u, n) for n in u.__slots__]


def _union_set_valid(u: Any, h: Any) -> None:
    for m in _union_members(u):
        if m is not h:
            m._v = False
    h._v = True


def _union_valid(u: Any) -> bool:
    return any(m._v for m in _union_members(u))


def _sext(v: int, w: int) -> int:
    return v - (1 << w) if v >> (w - 1) else v


def _peek(P: Packet, w: int) -> int:
    nbytes = (w + 7) // 8
    if P.off + nbytes > P.n:
        raise ParserError("PacketTooShort")
    v = int.from_bytes(P.data[P.off:P.off + nbytes], "big")
    return v >> (nbytes * 8 - w)


def _advance(P: Packet, bits: int) -> None:
    if bits % 8:
        raise ParserError("ParserInvalidArgument")  # only whole bytes, as bmv2
    if P.off + bits // 8 > P.n:
        raise ParserError("PacketTooShort")
    P.off += bits // 8


def _hash(algo: str, fields: Any) -> int:
    return algorithms.compute_hash(algo, fields)


def _pick(group: tuple, h: int) -> tuple[Any, tuple]:
    """An action selector's choice: member h % n of a group's (action, arguments) pairs, in
    bmv2's member order; an empty group runs no action (bmv2 logs an error and runs none)."""
    if not group:
        return None, ()
    return group[h % len(group)]


def _hash_result(h: int, base: int, mx: int, w: int) -> int:
    return algorithms.hash_result(h, base, mx, w)


def _csum(algo: str, fields: Any, payload: bytes = b"") -> int:
    if algo == "csum16":
        return algorithms.checksum16(fields, payload)
    return algorithms.compute_hash(algo, fields, payload)


def _assert(cond: bool, where: str) -> None:
    if not cond:
        raise AssertionFailed(f"assert failed at {where}")


def _bits_reader(data: bytes, off_bytes: int):
    """Return a reader over data from a byte offset; reads big-endian bit fields."""
    state = {"bit": off_bytes * 8}

    def read(w: int) -> int:
        start = state["bit"]
        end = start + w
        if end > len(data) * 8:
            raise ParserError("PacketTooShort")
        b0, b1 = start // 8, (end + 7) // 8
        v = int.from_bytes(data[b0:b1], "big")
        v >>= (b1 * 8 - end)
        state["bit"] = end
        return v & ((1 << w) - 1)

    return read, state


def _extract_varbit(P: Packet, h: Any, spec: list, varbits: int | None, max_bits: int) -> None:
    """Extract a header that has a varbit field (slow path; only such headers use it).

    Errors in bmv2's extract_VL order (also the P4-16 extract pseudo-code's, and the C back
    end's): not whole bytes, then a packet too short, then more bits than the varbit holds."""
    n = varbits or 0
    total = n + sum(w for _, w, _, _ in spec if w is not None)
    if total % 8:
        raise ParserError("ParserInvalidArgument")
    if P.off + total // 8 > P.n:
        raise ParserError("PacketTooShort")
    if n > max_bits:
        raise ParserError("HeaderTooShort")
    read, state = _bits_reader(P.data, P.off)
    for attr, w, signed, is_bool in spec:
        if w is None:  # the varbit field
            setattr(h, attr, (read(n) if n else 0, n))
        else:
            v = read(w)
            setattr(h, attr, bool(v) if is_bool else (_sext(v, w) if signed else v))
    h._v = True
    P.off = state["bit"] // 8


def _pack_varbit(h: Any, spec: list) -> bytes:
    acc = 0
    total = 0
    for attr, w, _signed, _is_bool in spec:
        v = getattr(h, attr)
        if w is None:
            val, n = v if isinstance(v, tuple) else (v, 0)
            acc = (acc << n) | (val & ((1 << n) - 1))
            total += n
        else:
            acc = (acc << w) | (int(v) & ((1 << w) - 1))
            total += w
    return acc.to_bytes((total + 7) // 8, "big")


def module_globals() -> dict[str, Any]:
    """The global namespace of a module written by p4compiler.python_backend.emit."""
    g: dict[str, Any] = {
        "__builtins__": __builtins__,
        "_Stack": Stack,
        "_P4Header": P4Header,
        "_P4Struct": P4Struct,
        "ParserError": ParserError,
        "_EXIT": _EXIT,
    }
    for name in ("_stack_next", "_stack_last", "_stack_at", "_union_set_valid", "_union_valid", "_sext",
                 "_peek", "_advance", "_hash", "_pick", "_hash_result", "_csum", "_assert", "_extract_varbit",
                 "_pack_varbit"):
        g[name] = globals()[name]
    return g


def instantiate(program: Any, rt: Any) -> dict[str, Any]:
    """Run a compiled program's generated module against a runtime; returns the pipeline's functions,
    the state classes and the error names."""
    g = module_globals()
    exec(program.code, g)
    return g["__build"](rt)
