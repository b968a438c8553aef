"""The type check of statements and assignments (the Python that runs is written from the IR;
`em` only passes on to the expression checks)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from p4compiler.frontend import ast as A
from p4compiler.python_backend import types as T
from p4compiler.python_backend.codegen import Compiler, Emitter, V, err
from p4compiler.python_backend.scope import ActionBind, Const, Scope, Var


@dataclass
class FnContext:
    """What a `return` in the code being checked must give."""

    outs: list[str] = field(default_factory=list)  # scalar out/inout parameters
    ret_type: T.Type | None = None  # a function's return type (None: void, actions, controls)
    in_parser: bool = False
    local_prefix: str = "v_"  # prefix of the names given to block-level variables
    in_loop: bool = False  # inside a for loop's body (break/continue allowed)


def refuse_stack_last(cp: Compiler, e: A.Expr, scope: Scope, what: str) -> None:
    """`hs.last` (and a field, slice or member under it) is no l-value: p4c's type check makes
    only `hs.next` one (P4-16 8.18: next is where extract writes). `what` names the use."""
    x = e
    while isinstance(x, (A.Member, A.Index, A.Slice)):
        if isinstance(x, A.Member) and x.member == "last" and isinstance(
                cp.value(x.expr, scope, Emitter()).type, T.StackT):
            raise err(f"{what} {cp.text(e)}: a stack's last element is not an l-value "
                      "(only next is, as p4c)", e)
        x = x.expr


def refuse_non_lvalue(cp: Compiler, e: A.Expr, what: str) -> None:
    """P4-16 6.7: an l-value is a name, a field of one, an element of a stack or array (`[i]`,
    `next`) or a slice of one, nested; a literal, an operation, a cast or a call's result is not
    (the left side of an assignment, an out or inout argument). `_` passes (an ignored out)."""
    if isinstance(e, A.DontCare):
        return
    root = e
    while isinstance(root, (A.Member, A.Index, A.Slice)):
        root = root.expr
    if not isinstance(root, A.NameExpr):
        raise err(f"{what} {cp.text(e)}: not an l-value (P4-16 6.7: a name, a field, an element "
                  "or a slice of one)", e)


def lvalue(cp: Compiler, e: A.Expr, scope: Scope, em: Emitter) -> V:
    refuse_non_lvalue(cp, e, "cannot assign to")
    refuse_stack_last(cp, e, scope, "cannot assign to")
    v = cp.expr(e, scope, em)
    if v.bind is not None:
        raise err(f"cannot assign to {cp.text(e)}", e)
    root = e
    while isinstance(root, (A.Member, A.Index, A.Slice)):
        root = root.expr
    if isinstance(root, A.NameExpr):
        b = scope.lookup(root.name)
        if isinstance(b, Const):
            raise err(f"cannot assign to constant {root.name}", e)
        if isinstance(b, Var) and not b.lvalue:
            raise err(f"cannot assign to {root.name} (an 'in' parameter or read-only value)", e)
    return v


def assign_code(cp: Compiler, lhs: A.Expr, rhs: V, scope: Scope, em: Emitter) -> None:
    """Check `lhs = rhs` where rhs is already checked."""
    if isinstance(lhs, A.Slice):
        inner = lhs.expr
        while isinstance(inner, A.Slice):
            inner = inner.expr
        if isinstance(inner, A.Index) and isinstance(cp.value(inner.expr, scope, Emitter()).type, T.ArrayT) \
                and not cp.value(inner.index, scope, Emitter()).is_const:
            raise err(f"a slice of an array element with a run-time index ({cp.text(lhs)}) is not "
                      "supported as an l-value (assign the element whole)", lhs)
        base = lvalue(cp, lhs.expr, scope, em)
        if not isinstance(base.type, T.BitT):
            raise err("slices need a bit<> value", lhs)
        hi = cp.const_int(lhs.hi, scope)
        lo = cp.const_int(lhs.lo, scope)
        if not (0 <= lo <= hi < base.type.width):
            raise err(f"slice [{hi}:{lo}] out of range for {base.type}", lhs)
        cp.coerce(rhs, T.BitT(hi - lo + 1), lhs)
        return
    target = lvalue(cp, lhs, scope, em)
    t = target.type
    if isinstance(t, (T.StructLikeT, T.StackT)):
        if rhs.init:  # a struct initializer built for this type
            return
        if not isinstance(rhs.type, (T.StructLikeT, T.StackT)) or (
                rhs.type is not t and not T.same_type(rhs.type, t)):
            raise err(f"cannot assign a {rhs.type} value to {t}", lhs)
        return
    cp.coerce(rhs, t, lhs)


def stmt(cp: Compiler, s: A.Stmt, scope: Scope, em: Emitter, fc: FnContext) -> None:
    if isinstance(s, A.Assign):
        target_t = cp.value(s.lhs, scope, Emitter()).type if not isinstance(s.lhs, A.Slice) else None
        rhs = cp.value(s.rhs, scope, em, want=target_t)
        assign_code(cp, s.lhs, rhs, scope, em)
    elif isinstance(s, A.CallStmt):
        cp.expr(s.call, scope, em)
    elif isinstance(s, A.Block):
        inner = Scope(scope)
        for x in s.stmts:
            stmt(cp, x, inner, em, fc)
    elif isinstance(s, A.If):
        c = cp.value(s.cond, scope, em)
        if not isinstance(c.type, T.BoolT):
            raise err(f"if condition must be a bool, not {c.type}", s.cond)
        body(cp, s.then, scope, em, fc)
        if s.other is not None:
            body(cp, s.other, scope, em, fc)
    elif isinstance(s, (A.Exit, A.Return)) and fc.in_parser:
        # P4-16's grammar (v1.2.4 section 12.4, parserStatement) has neither exit nor return;
        # p4c refuses both (a return reaches a parser only through an if's branch)
        word = "exit" if isinstance(s, A.Exit) else "return"
        raise err(f"{word} is not allowed in a parser state "
                  "(end parsing with transition accept or reject)", s)
    elif isinstance(s, (A.Exit, A.EmptyStmt)):
        pass
    elif isinstance(s, A.Return):
        if s.value is not None:
            v = cp.value(s.value, scope, em, want=fc.ret_type)
            if fc.ret_type is not None:
                cp.coerce(v, fc.ret_type, s.value)
    elif isinstance(s, A.VarDecl):
        declare_var(cp, s, scope, em, fc)
    elif isinstance(s, A.ConstDecl):
        t = cp.resolve_type(s.type, scope)
        v = cp.value(s.value, scope, em, want=t)
        if not v.is_const:
            raise err(f"constant {s.name} needs a compile-time value", s)
        scope.add(s.name, Const(cp.coerce_const(v, t, s), t))
    elif isinstance(s, A.Switch):
        switch_stmt(cp, s, scope, em, fc)
    elif isinstance(s, (A.For, A.ForIn)):
        for_stmt(cp, s, scope, em, fc)
    elif isinstance(s, (A.Break, A.Continue)):
        if not fc.in_loop:
            word = "break" if isinstance(s, A.Break) else "continue"
            raise err(f"{word} is only allowed inside a for loop", s)
    else:
        raise err(f"unsupported statement {type(s).__name__}", s)


def body(cp: Compiler, s: A.Stmt, scope: Scope, em: Emitter, fc: FnContext) -> None:
    stmt(cp, s, Scope(scope), em, fc)


def declare_var(cp: Compiler, s: A.VarDecl, scope: Scope, em: Emitter, fc: FnContext) -> None:
    t = cp.resolve_type(s.type, scope)
    name = f"{fc.local_prefix}{cp.safe(s.name)}_{cp.uid('')}"
    if fc.local_prefix.startswith("c."):
        cp.ctx_slots.setdefault("__current__", []).append(name[2:])
    if s.init is not None:
        v = cp.value(s.init, scope, em, want=t)
        if not isinstance(t, (T.StructLikeT, T.StackT)):
            cp.coerce(v, t, s.init)
    scope.add(s.name, Var(name, t))


def switch_stmt(cp: Compiler, s: A.Switch, scope: Scope, em: Emitter, fc: FnContext) -> None:
    v = cp.expr(s.expr, scope, em)
    on_action = isinstance(v.bind, tuple) and v.bind[0] == "action_run"
    if not on_action and v.bind is not None:
        raise err("switch needs a value or table.apply().action_run", s.expr)
    for case in s.cases:
        if isinstance(case.label, A.DefaultExpr):
            if case.body is None:
                raise err("the default label needs a body", case)
        elif on_action:
            if not isinstance(case.label, A.NameExpr):
                raise err("switch on action_run needs action names as labels", case.label)
            b = scope.lookup(case.label.name)
            if not isinstance(b, ActionBind):
                raise err(f"{case.label.name} is not an action", case.label)
        else:
            lv = cp.value(case.label, scope, em, want=v.type)
            if not lv.is_const:
                raise err("switch labels must be compile-time constants", case.label)
            cp.coerce(lv, v.type, case.label)
        if case.body is not None:
            body(cp, case.body, scope, em, fc)



def for_stmt(cp: Compiler, s: A.For | A.ForIn, scope: Scope, em: Emitter, fc: FnContext) -> None:
    """Check a `for` loop (P4-16 v1.2.5, "For statement"); its declarations are local to it."""
    if fc.in_parser:  # the spec's parserStatement has no forStatement
        raise err("for loops are not allowed in parser states (P4-16 has none among the parser "
                  "statements; loop over states with transitions instead)", s)
    inner = Scope(scope)
    if isinstance(s, A.For):
        for x in s.init:
            stmt(cp, x, inner, em, fc)
        c = cp.value(s.cond, inner, em)
        if not isinstance(c.type, T.BoolT):
            raise err(f"a for loop's condition must be a bool, not {c.type}", s.cond)
        body(cp, s.body, inner, em, replace(fc, in_loop=True))
        for x in s.update:
            stmt(cp, x, inner, em, fc)
        return
    t = for_in_type(cp, s, scope, em)
    inner.add(s.name, Var(f"{fc.local_prefix}{cp.safe(s.name)}_{cp.uid('')}", t))
    body(cp, s.body, inner, em, replace(fc, in_loop=True))


def for_in_type(cp: Compiler, s: A.ForIn, scope: Scope, em: Emitter) -> T.Type:
    """The loop variable's type, checked against the collection's (evaluated in the scope around
    the loop: the variable may shadow a name the collection uses)."""
    t = cp.resolve_type(s.type, scope)
    coll = s.collection
    if isinstance(coll, A.RangeExpr):
        if not isinstance(t, T.BitT):
            raise err(f"the variable of a for loop over a range must be bit<W> or int<W>, not {t}", s)
        for bound in (coll.lo, coll.hi):
            cp.coerce(cp.value(bound, scope, em, want=t), t, bound)
        return t
    if isinstance(coll, A.ListExpr):
        for x in coll.items:
            loop_element(cp, cp.value(x, scope, em, want=t), t, x)
        return t
    v = cp.value(coll, scope, em)
    if isinstance(v.type, T.StackT):
        loop_element(cp, V("", v.type.element), t, coll)
    elif isinstance(v.type, T.TupleT):
        for et in v.type.elements:
            loop_element(cp, V("", et), t, coll)
    else:
        raise err(f"a for-in loop iterates over a range (lo .. hi), a header stack or a list, "
                  f"not a {v.type} value", coll)
    return t


def loop_element(cp: Compiler, v: V, t: T.Type, node: A.Node) -> None:
    """An element of a for-in collection must be assignable to the loop variable as it is."""
    if isinstance(t, (T.StructLikeT, T.StackT)):
        if not v.init and not (v.type is t or T.same_type(v.type, t)):
            raise err(f"the loop variable has type {t}, the collection's elements {v.type}", node)
        return
    if isinstance(t, T.BitT) and isinstance(v.type, T.BitT) and v.type != t:
        raise err(f"the loop variable has type {t}, the collection's elements {v.type}", node)
    cp.coerce(v, t, node)
