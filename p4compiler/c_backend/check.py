"""What the IR can express but the C back end cannot compile (yet): refused before emitting.

The lowering (p4compiler.lower) expresses every construct the Python reference runs; the limits
of the C representation live here (sub-parsers and `return` in parser states are emitted inline,
c_backend.emit.CEmitter.s_SubParser), each refusal a `NativeUnsupported` located at the statement
(or type declaration) that needs it, so the switch falls back to the Python back end.
"""

from __future__ import annotations

from typing import Any

from p4compiler import ir
from p4compiler.lower import STD_META_FIELDS, NativeUnsupported

MAX_WIDTH = 64  # widest bit<W> a scalar carries (uint64_t)


def _refuse(what: str, loc: Any) -> NativeUnsupported:
    msg = f"the native backend does not support {what} yet"
    if loc is None:
        return NativeUnsupported(msg)
    return NativeUnsupported(msg, loc.file, loc.line, loc.col)


def _check_type(t: ir.Type, loc: Any, seen: set[int]) -> None:
    if isinstance(t, ir.Bits):
        if t.width > MAX_WIDTH:
            raise _refuse(f"bit<{t.width}> values (wider than 64 bits)", loc)
        if t.width == 0:
            raise _refuse("bit<0> values", loc)
    elif isinstance(t, (ir.Header, ir.Struct, ir.Union_)):
        if id(t) in seen:
            return
        seen.add(id(t))
        for _, ft in t.fields:
            _check_type(ft, t.loc or loc, seen)
    elif isinstance(t, ir.Stack):
        _check_type(t.element, t.loc or loc, seen)


def _visit(n: Any, loc: Any, in_parser: bool, seen: set[int]) -> None:
    """Check one IR node and everything under it; `loc` is the nearest statement's location."""
    loc = getattr(n, "loc", None) or loc
    if in_parser and isinstance(n, ir.Exit):
        raise _refuse("exit in a parser", loc)
    if isinstance(n, ir.Assign) and isinstance(n.rhs.type, ir.Varbit):
        raise _refuse("assigning a varbit value", loc)
    if isinstance(n, ir.KsValueSet):
        raise _refuse("a value_set inside a tuple keyset", loc)
    if isinstance(n, ir.BinOp) and isinstance(n.left.type, ir.Varbit):
        raise _refuse("== on varbit values", loc)
    if isinstance(n, ir.Declare):
        _check_type(n.var.type, loc, seen)
    t = getattr(n, "type", None)
    if isinstance(t, ir.Type):
        _check_type(t, loc, seen)
    for c in ir.children(n):
        _visit(c, loc, in_parser, seen)


def check_native(prog: ir.Program) -> None:
    """Raise NativeUnsupported (one located line) for the first construct the C back end lacks."""
    seen: set[int] = set()
    for fname, _ in prog.std_meta_type.fields:
        if fname not in STD_META_FIELDS:
            raise _refuse(f"standard_metadata_t field {fname}", prog.std_meta_type.loc)
    for t in prog.types:
        _check_type(t, t.loc, seen)
    for st in prog.parser.states:
        _visit(st, None, True, seen)
    for body in prog.controls.values():
        for x in body:
            _visit(x, None, False, seen)
