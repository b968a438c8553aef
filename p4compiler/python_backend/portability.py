"""The front end's refusals of what the reference toolchain refuses for v1model (p4c-bm2-ss
v1.2.4 and bmv2), so that a program developed on the software switch also compiles there.

Both back ends run them (they are part of the type check). `allow_nonportable=True` (compile_file,
compile_text, Switch/NativeSwitch.from_file, control_plane's device_config_for and
SwitchController.load) or `--allow-nonportable` (python -m softswitch, python -m softswitch.stf, python -m
p4compiler.p4info) turns them off, and the program runs as the switch always ran it:

- division or modulo that p4c-bm2-ss cannot reduce at compile time (codegen.Compiler.
  check_division): by a value that is not a compile-time constant, of a run-time value by a
  constant that is not a power of two, or by the constant 0 (its mid end folds constants and
  turns / and % by powers of two into shifts and masks, then refuses any division left: bmv2
  divides nothing at run time). On signed values / and % are refused with or without the
  opt-in (P4-16 defines them on bit<W> only);
- a `select` on a key of enum type, alone or in a tuple (`select_keys` below);
- a table applied twice on one execution path of a control (`check_table_applies` below), also
  through one instance of a control with tables applied twice; a table applied in exclusive
  branches (if/else, switch cases, ?:) is one apply per path. A table applied in a `for` body
  counts as applied twice (the body runs more than once); `for` is newer than p4c-bm2-ss v1.2.4
  (`# options: newer-syntax`), and a newer p4c's bmv2 back end refuses the loops that reach it
  ("BMV2 does not support loops"), so no p4c-bm2-ss decides this case: kept as is.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from p4compiler.frontend import ast as A
from p4compiler.python_backend import types as T
from p4compiler.python_backend.codegen import NONPORTABLE_HINT, Compiler, V, err
from p4compiler.python_backend.scope import BlockInst, Scope, TableBind

# what some path to a point may have applied ("table I.t", "control instance ..."): the first
# apply's node; None when no path reaches the point (after return or exit)
_Applied = dict[str, A.Node] | None


def select_keys(cp: Compiler, keys: list[V], exprs: list[A.Expr]) -> None:
    """Refuse a select key of enum type (p4c's select takes a list of keys; bmv2 needs bits)."""
    if cp.allow_nonportable:
        return
    for k, x in zip(keys, exprs, strict=False):
        if isinstance(k.type, T.EnumT):
            what = "a select key" if len(keys) == 1 else "a component of a tuple select key"
            u = k.type.underlying
            instead = f"; select on (bit<{u.width}>) of it instead" if u is not None else ""
            raise err(f"{what} of enum type {k.type.enum_name} is not portable: p4c-bm2-ss (v1model) "
                      f"refuses it{instead} ({NONPORTABLE_HINT})", x)


def check_table_applies(cp: Compiler, decl: A.ControlDecl, scope: Scope) -> None:
    """Refuse a table of `decl` (the control whose locals `scope` holds) applied twice on one
    execution path of its apply block."""
    if cp.allow_nonportable:
        return
    _Paths(cp, scope, decl.name).stmts(decl.apply.stmts, {})


def _merge(*states: _Applied) -> _Applied:
    live = [s for s in states if s is not None]
    if not live:
        return None
    out: dict[str, A.Node] = {}
    for s in live:
        for name, node in s.items():
            out.setdefault(name, node)
    return out


def _flat(v: Any) -> list[Any]:
    """A field's value as a flat list (lists of nodes, of (name, expr) pairs, ...)."""
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _flat(item)]
    return [v]


class _Paths:
    """Walks an apply block in evaluation order with the set of tables some path to the current
    point may have applied (conditions are not evaluated: both branches of an if are possible)."""

    def __init__(self, cp: Compiler, scope: Scope, control: str):
        self.cp = cp
        self.scope = scope
        self.control = control

    def stmts(self, ss: list[A.Stmt], state: _Applied) -> _Applied:
        for s in ss:
            if state is None:
                break  # unreachable after return/exit
            state = self.stmt(s, state)
        return state

    def stmt(self, s: A.Stmt, state: dict[str, A.Node]) -> _Applied:
        if isinstance(s, A.Block):
            return self.stmts(s.stmts, state)
        if isinstance(s, A.If):
            state = self.expr(s.cond, state)
            then = self.stmt(s.then, dict(state))
            other = self.stmt(s.other, dict(state)) if s.other is not None else state
            return _merge(then, other)
        if isinstance(s, A.Switch):
            state = self.expr(s.expr, state)
            outs: list[_Applied] = [self.stmt(c.body, dict(state)) for c in s.cases if c.body is not None]
            if not any(isinstance(c.label, A.DefaultExpr) for c in s.cases):
                outs.append(state)  # no label matches
            return _merge(*outs)
        if isinstance(s, (A.Return, A.Exit)):
            if isinstance(s, A.Return) and s.value is not None:
                self.expr(s.value, state)
            return None
        if type(s).__name__ in ("For", "ForIn"):  # a loop's body runs more than once on a path
            return self._loop(s, state)
        return self.children(s, state)

    def _loop(self, s: Any, state: dict[str, A.Node]) -> _Applied:
        for x in getattr(s, "init", []):
            state = self.stmt(x, state) or state
        if hasattr(s, "collection"):
            state = self.expr(s.collection, state)
        after_first = self.iteration(s, dict(state))
        self.iteration(s, after_first or dict(state))
        return _merge(state, after_first)

    def iteration(self, s: Any, state: dict[str, A.Node]) -> _Applied:
        if hasattr(s, "cond"):
            state = self.expr(s.cond, state)
        out = self.stmt(s.body, state)
        for x in getattr(s, "update", []):
            out = self.stmt(x, out) if out is not None else None
        return out

    def children(self, node: Any, state: dict[str, A.Node]) -> dict[str, A.Node]:
        """Walk a node's statement and expression fields in declaration order."""
        for f in dataclasses.fields(node):
            if f.name == "loc":
                continue
            for x in _flat(getattr(node, f.name)):
                if isinstance(x, A.Stmt):
                    state = self.stmt(x, state) or state
                elif isinstance(x, (A.Expr, A.Arg)):
                    state = self.expr(x, state)
        return state

    def expr(self, e: Any, state: dict[str, A.Node]) -> dict[str, A.Node]:
        if isinstance(e, A.Ternary):
            state = self.expr(e.cond, state)
            return _merge(self.expr(e.then, dict(state)), self.expr(e.other, dict(state))) or state
        if isinstance(e, (A.Expr, A.Arg)):
            state = self.children(e, state)
        if isinstance(e, A.Call):
            what = self.applied(e)
            if what is not None:
                first = state.get(what)
                if first is not None:
                    raise err(f"{what} is applied twice on one execution path of control {self.control} "
                              f"(first at {first.loc}), which is not portable: p4c-bm2-ss (v1model) "
                              f"applies a table at most once per path ({NONPORTABLE_HINT})", e)
                state = {**state, what: e}
        return state

    def applied(self, call: A.Call) -> str | None:
        """What `call` applies that may be applied once per path: a table, or an instance of a
        control that declares tables (applying the instance applies them)."""
        b = self.cp.table_of_apply(call, self.scope)
        if isinstance(b, TableBind):
            return f"table {b.p4name}"
        callee = call.callee
        if isinstance(callee, A.Member) and callee.member == "apply" and isinstance(callee.expr, A.NameExpr):
            inst = self.scope.lookup(callee.expr.name)
            if isinstance(inst, BlockInst) and isinstance(inst.decl, A.ControlDecl):
                tables = [d.name for d in inst.decl.locals if isinstance(d, A.TableDecl)]
                if tables:
                    return f"control instance {callee.expr.name} (with table {', '.join(tables)})"
        return None
