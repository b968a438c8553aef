"""What the IR can express but the C back end cannot compile (yet): refused before emitting.

The lowering (p4compiler.lower) expresses every construct the Python reference runs; the limits
of the C representation live here (sub-parsers are emitted inline,
c_backend.emit.CEmitter.s_SubParser), each refusal a `NativeUnsupported` located at the statement
(or type declaration) that needs it, so the switch falls back to the Python back end.
Values wider than 64 bits compile (c_backend.wide); `_check_wide` lists where they cannot go yet.
"""

from __future__ import annotations

from typing import Any

from p4compiler import ir
from p4compiler.c_backend.wide import is_wide, nlimbs
from p4compiler.lower import STD_META_FIELDS, NativeUnsupported

# values wider than 64 bits are c_backend.wide's; these extern operands must still be narrow
# (register values, digest fields, log_msg arguments, hash and random results and bounds may be wide)
_WIDE_OK = {"register_read": ("dest",), "register_write": (1,), "digest": "all", "log_msg": "all",
            "hash": ("dest", 0, 1), "random": ("dest", 0, 1)}


def _refuse(what: str, loc: Any) -> NativeUnsupported:
    msg = f"the native backend does not support {what} yet"
    if loc is None:
        return NativeUnsupported(msg)
    return NativeUnsupported(msg, loc.file, loc.line, loc.col)


def _check_type(t: ir.Type, loc: Any, seen: set[int]) -> None:
    if isinstance(t, ir.Bits):
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


def _check_wide(n: Any, loc: Any) -> None:
    """The places a value wider than 64 bits cannot go yet."""
    if isinstance(n, ir.ExternCall):
        if n.kind == "digest" and sum(nlimbs(a.type.width) if is_wide(a.type) else 1 for a in n.args) > 64:
            raise _refuse("digests of more than 64 words (a field wider than 64 bits counts its limbs)", loc)
        ok = _WIDE_OK.get(n.kind, ())
        if ok != "all":
            if n.dest is not None and is_wide(n.dest.type) and "dest" not in ok:
                raise _refuse(f"{n.kind} results wider than 64 bits", loc)
            for i, a in enumerate(n.args):
                if is_wide(a.type) and i not in ok:
                    raise _refuse(f"{n.kind} operands wider than 64 bits", loc)
    elif isinstance(n, ir.Index) and is_wide(n.index.type):
        raise _refuse("stack indexes wider than 64 bits", loc)
    elif isinstance(n, ir.Advance) and is_wide(n.bits.type):
        raise _refuse("advance by an amount wider than 64 bits", loc)
    elif isinstance(n, ir.Extract) and n.varbit_bits is not None and is_wide(n.varbit_bits.type):
        raise _refuse("a varbit length wider than 64 bits", loc)


def _field(*es: Any) -> bool:
    return all(isinstance(e, ir.Member) for e in es)


def _visit(n: Any, loc: Any, in_parser: bool, seen: set[int]) -> None:
    """Check one IR node and everything under it; `loc` is the nearest statement's location."""
    loc = getattr(n, "loc", None) or loc
    _check_wide(n, loc)
    if in_parser and isinstance(n, ir.Exit):
        raise _refuse("exit in a parser", loc)
    # varbit values live in header fields only (emit.CEmitter.assign_varbit, varbit_eq)
    if isinstance(n, ir.Assign) and isinstance(n.rhs.type, ir.Varbit) and not _field(n.lhs, n.rhs):
        raise _refuse("varbit values outside header fields", loc)
    if isinstance(n, ir.BinOp) and isinstance(n.left.type, ir.Varbit) and not _field(n.left, n.right):
        raise _refuse("== on varbit values outside header fields", loc)
    if isinstance(n, ir.Declare) and isinstance(n.var.type, ir.Varbit):
        raise _refuse("varbit locals", loc)
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
