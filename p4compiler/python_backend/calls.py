"""The type check of calls: methods of headers, stacks, packets, tables and externs, actions,
functions, and the v1model/core extern functions (the Python that runs is written from the IR)."""

from __future__ import annotations

from typing import Any

from p4compiler.frontend import ast as A
from p4compiler.python_backend import types as T
from p4compiler.python_backend.codegen import Compiler, Emitter, V, err
from p4compiler.python_backend.scope import (
    ActionBind,
    BlockInst,
    ExternFuncBind,
    ExternInst,
    FuncBind,
    Scope,
)

TABLE_RESULT = T.ExternT("__table_result")


def ordered_args(call: A.Call, params: list[A.Param], what: str) -> list[A.Expr | None]:
    """Arguments in parameter order (named arguments allowed; missing ones use defaults).
    `_` comes back as None, as an omitted optional one: it only discards an out parameter's
    value (p4c: "don't care argument only allowed for out parameters")."""
    params_by_name = {p.name: p for p in params}
    for i, a in enumerate(call.args):
        p = params_by_name.get(a.name) if a.name is not None else (params[i] if i < len(params) else None)
        if a.value is None and p is not None and p.direction != "out":
            kind = f"{p.direction} parameter" if p.direction else "parameter"
            raise err(f"call of {what}: _ (don't care) passed to {kind} {p.name}; only an out "
                      "parameter takes it", call)
    named = [a for a in call.args if a.name is not None]
    if named and len(named) != len(call.args):
        raise err(f"call of {what} mixes named and positional arguments", call)
    if named:
        by_name = {a.name: a.value for a in call.args}
        out: list[A.Expr | None] = []
        for p in params:
            if p.name in by_name:
                out.append(by_name.pop(p.name))
            elif p.default is not None:
                out.append(p.default)
            elif A.find_annotation(p.annotations, "optional") is not None:
                out.append(None)
            else:
                raise err(f"call of {what} lacks argument {p.name}", call)
        if by_name:
            raise err(f"{what} has no parameter {next(iter(by_name))}", call)
        return out
    values: list[A.Expr | None] = [a.value for a in call.args]
    if len(values) > len(params):
        raise err(f"{what} takes {len(params)} arguments, {len(values)} given", call)
    for p in params[len(values):]:
        if p.default is not None:
            values.append(p.default)
        elif A.find_annotation(p.annotations, "optional") is not None:
            values.append(None)
        else:
            raise err(f"{what} takes {len(params)} arguments, {len(call.args)} given", call)
    return values


def compile_call(cp: Compiler, e: A.Call, scope: Scope, em: Emitter, want: Any) -> V:
    callee = e.callee
    if isinstance(callee, A.Member):
        tb = cp.table_of_apply(e, scope)
        if tb is not None:
            return V("", TABLE_RESULT, bind=("apply", tb))
        method = callee.member
        base = cp.expr(callee.expr, scope, em)
        b = base.bind
        if isinstance(b, ExternInst):
            return extern_method(cp, b, method, e, scope, em)
        if isinstance(b, BlockInst):
            if method != "apply":
                raise err(f"{b.decl.name} instances only have apply()", e)
            return call_block(cp, b, e, scope, em)
        if b is not None:
            raise err(f"{cp.text(callee.expr)} has no method {method}", e)
        bt = base.type
        if method in _SIZE_METHODS and isinstance(bt, (T.StructLikeT, T.StackT)):
            if e.args:
                raise err(f"{method}() takes no arguments", e)
            bits = _size_bits(bt, method.startswith("max"))
            n = (bits + 7) // 8 if method.endswith("Bytes") else bits
            return V(str(n), T.INT, const=n)
        if isinstance(bt, T.ExternT):
            if bt.extern_name == "packet_in":
                return packet_in_method(cp, base, method, e, scope, em)
            if bt.extern_name == "packet_out":
                return packet_out_method(cp, base, method, e, scope, em)
            raise err(f"unsupported method {bt.extern_name}.{method}", e)
        if isinstance(bt, T.StructLikeT) and bt.is_header:
            if e.args:
                raise err(f"{method}() takes no arguments", e)
            if method == "isValid":
                return V("", T.BOOL)
            if method in ("setValid", "setInvalid"):
                from p4compiler.python_backend.stmts import refuse_stack_last

                refuse_stack_last(cp, callee.expr, scope, f"{method}() on")
                return V("", T.VOID)
            raise err(f"headers have no method {method}", e)
        if isinstance(bt, T.StructLikeT) and bt.is_union:
            if method == "isValid":
                return V("", T.BOOL)
            raise err(f"header unions have no method {method}", e)
        if isinstance(bt, T.StackT):
            if method in ("push_front", "pop_front"):
                if scope.find_kind("state") is not None:  # as p4c's type check
                    raise err(f"{method} cannot be used on a header stack in a parser", e)
                if len(e.args) != 1:
                    raise err(f"{method} takes one argument", e)
                n = cp.const_int(e.args[0].value, scope)
                return V("", T.VOID)
            raise err(f"header stacks have no method {method}", e)
        raise err(f"values of type {bt} have no method {method}", e)
    if isinstance(callee, A.TypeMember) and callee.member == "apply":
        return call_block(cp, direct_instance(cp, e, scope), e, scope, em)
    if isinstance(callee, A.NameExpr):
        b = scope.lookup(callee.name)
        if b is None:
            raise err(f"unknown function or action {callee.name}", e)
        if isinstance(b, ActionBind):
            return call_action(cp, b, e, scope, em)
        if isinstance(b, FuncBind):
            return call_function(cp, b, e, scope, em)
        if isinstance(b, ExternFuncBind):
            return extern_function(cp, callee.name, b, e, scope, em)
        raise err(f"{callee.name} is not callable", e)
    raise err("unsupported call", e)


# ---------------------------------------------------------------------------- user calls
def bind_args(cp: Compiler, params: list[A.Param], args: list[A.Expr | None], pscope: Scope, scope: Scope,
              em: Emitter, what: str, call: Any) -> list[tuple[A.Expr, T.Type]]:
    """Check the arguments against the parameters; returns the (lvalue, type) pairs scalar
    out/inout results are copied out to."""
    outs: list[tuple[A.Expr, T.Type]] = []
    for p, a in zip(params, args, strict=False):
        pt = cp.resolve_type(p.type, pscope)
        if a is None:
            continue
        scalar = not isinstance(pt, (T.StructLikeT, T.StackT))
        if p.direction in ("out", "inout"):
            from p4compiler.python_backend.stmts import refuse_non_lvalue, refuse_stack_last

            refuse_non_lvalue(cp, a, f"{p.direction} argument")
            refuse_stack_last(cp, a, scope, f"{p.direction} argument")
            if scalar:
                outs.append((a, pt))
        if p.direction == "out" and scalar:
            continue
        v = cp.value(a, scope, em, want=pt)
        if scalar:
            cp.coerce(v, pt, a)
    return outs


def finish_call(cp: Compiler, outs: list, ret_type: T.Type, scope: Scope, em: Emitter) -> V:
    """Check that the scalar out/inout arguments can take the values copied out to them."""
    from p4compiler.python_backend.stmts import assign_code

    for lv, t in outs:
        assign_code(cp, lv, V("", t), scope, em)
    return V("", ret_type)


def call_action(cp: Compiler, b: ActionBind, e: A.Call, scope: Scope, em: Emitter) -> V:
    from p4compiler.python_backend.blocks import ensure_action

    ensure_action(cp, b)
    s: Scope | None = scope
    while s is not None and s.kind not in ("action", "function"):
        s = s.parent
    if s is None:  # called from a control's apply block: P4Info lists it, as p4c does
        cp.direct_actions.setdefault(b.p4name, None)
    args = ordered_args(e, b.decl.params, f"action {b.decl.name}")
    outs = bind_args(cp, b.decl.params, args, b.scope, scope, em, b.decl.name, e)
    return finish_call(cp, outs, T.VOID, scope, em)


def call_function(cp: Compiler, b: FuncBind, e: A.Call, scope: Scope, em: Emitter) -> V:
    from p4compiler.python_backend.blocks import ensure_function

    fscope = cp.function_scope(b, e, scope)
    ensure_function(cp, b, fscope)
    proto = b.decl.proto
    args = ordered_args(e, proto.params, f"function {proto.name}")
    outs = bind_args(cp, proto.params, args, fscope, scope, em, proto.name, e)
    rt = cp.resolve_type(proto.return_type, fscope)
    return finish_call(cp, outs, rt, scope, em)


def direct_block(cp: Compiler, e: A.Call, scope: Scope) -> Any:
    """The parser or control declaration a direct type invocation `T.apply(...)` applies."""
    callee = e.callee
    assert isinstance(callee, A.TypeMember)
    t = cp.resolve_type(callee.type, scope)
    if not isinstance(t, T.BlockT) or t.kind not in ("control", "parser"):
        raise err(f"{cp.text(callee)}: only a control or parser type can be applied directly", e)
    decl = t.decl
    if not isinstance(decl, (A.ControlDecl, A.ParserDecl)):
        raise err(f"{decl.name} has no body to apply", e)
    if decl.ctor_params:
        raise err(f"{decl.name} has constructor parameters: declare an instance to apply it "
                  "(P4-16 applies only types without them directly)", e)
    return decl


def direct_instance(cp: Compiler, e: A.Call, scope: Scope) -> BlockInst:
    """P4-16 v1.2.4 "Direct type invocation": `T.apply(...)` applies an instance of T of its own,
    one per call site, as if `T() T_n;` were declared in the enclosing block. Its control-plane
    name is the type's (as p4c names it), then T_1, T_2, ... for further call sites in the same
    block. The name is kept on the call (`direct_name`) for the lowering."""
    decl = direct_block(cp, e, scope)
    outer = scope.enclosing_instance()
    local = getattr(e, "direct_name", None)
    if local is None:
        used = cp.direct_names.setdefault(outer, set())
        local, k = decl.name, 0
        while local in used:
            k += 1
            local = f"{decl.name}_{k}"
        used.add(local)
        e.direct_name = local  # type: ignore[attr-defined]
    from p4compiler.python_backend.blocks import compile_block

    p4name = f"{outer}.{local}" if outer else local
    kind = "parser" if isinstance(decl, A.ParserDecl) else "control"
    return BlockInst(decl, kind, compile_block(cp, decl, p4name, [], scope))


def call_block(cp: Compiler, b: BlockInst, e: A.Call, scope: Scope, em: Emitter) -> V:
    params = b.decl.params
    args = ordered_args(e, params, f"{b.decl.name}.apply")
    outs: list[tuple[A.Expr, T.Type]] = []
    inner = cp.blocks[b.fn]
    for p, a in zip(params, args, strict=False):
        pt = cp.resolve_type(p.type, inner)
        if isinstance(pt, T.ExternT) and pt.extern_name in ("packet_in", "packet_out"):
            continue  # the packet is implicit
        if a is None:
            continue
        if isinstance(pt, T.ExternT):
            from p4compiler.python_backend.blocks import extern_arg

            extern_arg(cp, a, pt, scope, p)
            continue
        scalar = not isinstance(pt, (T.StructLikeT, T.StackT))
        if p.direction in ("out", "inout"):
            from p4compiler.python_backend.stmts import refuse_non_lvalue

            refuse_non_lvalue(cp, a, f"{p.direction} argument")
        v = cp.value(a, scope, em, want=pt)
        if scalar and p.direction in ("out", "inout"):
            outs.append((a, pt))
        if scalar and p.direction != "out":
            cp.coerce(v, pt, a)
    return finish_call(cp, outs, T.VOID, scope, em)


# ---------------------------------------------------------------------------- packets
def packet_in_method(cp: Compiler, pkt: V, method: str, e: A.Call, scope: Scope, em: Emitter) -> V:
    if method == "extract":
        if len(e.args) not in (1, 2):
            raise err("extract takes one or two arguments", e)
        target = e.args[0].value
        if isinstance(target, A.Member) and target.member == "next":
            stack = cp.value(target.expr, scope, em)
            if not isinstance(stack.type, T.StackT):
                raise err("next is only defined on header stacks", target)
            if len(e.args) == 2:
                cp.value(e.args[1].value, scope, em)
            return V("None", T.VOID)
        from p4compiler.python_backend.stmts import refuse_stack_last

        refuse_stack_last(cp, target, scope, "extract into")
        h = cp.value(target, scope, em)
        if not (isinstance(h.type, T.StructLikeT) and h.type.is_header):
            raise err(f"extract needs a header, not {h.type}", target)
        if len(e.args) == 2:
            cp.value(e.args[1].value, scope, em)
        return V("None", T.VOID)
    if method == "lookahead":
        if len(e.type_args) != 1 or e.args:
            raise err("lookahead takes one type argument and no arguments", e)
        t = cp.resolve_type(e.type_args[0], scope)
        problem = lookahead_problem(t, str(t))
        if problem is not None:
            where = e.type_args[0] if getattr(e.type_args[0], "loc", None) is not None else e
            raise err(f"lookahead<{t}> is not supported: {problem}; T must be fixed-width: bit<W>, "
                      "int<W>, bool, a serializable enum, or a header or struct of those", where)
        return V("", t)
    if method == "advance":
        if len(e.args) != 1:
            raise err("advance takes one argument", e)
        cp.value(e.args[0].value, scope, em)
        return V("", T.VOID)
    if method == "length":
        return V("", T.BitT(32))
    raise err(f"packet_in has no method {method}", e)


def lookahead_problem(t: T.Type, what: str) -> str | None:
    """Why `lookahead<t>()` cannot be read from a packet (None: it can). P4-16 v1.2.4 section
    12.8.3 asks for a fixed-width type; as p4c's bmv2 back end (ExpandLookahead), a struct or
    header is read field by field in declaration order, nested ones included. `what` names t
    (a field path) in the answer."""
    if T.serial_width(t) is not None:
        return None  # bit<W>, int<W>, bool, a serializable enum (typedefs already resolved)
    if isinstance(t, T.StructLikeT) and t.kind in ("header", "struct"):
        for n, ft in t.fields:
            if isinstance(ft, T.VarbitT):
                return f"{what}.{n} is a varbit"
            problem = lookahead_problem(ft, f"{what}.{n}")
            if problem is not None:
                return problem
        return None
    if isinstance(t, T.StructLikeT):
        return f"{what} is a header_union"
    if isinstance(t, T.StackT):
        return f"{what} is a header stack"
    if isinstance(t, T.VarbitT):
        return f"{what} is a varbit"
    if isinstance(t, T.IntT):
        return f"{what} is an integer of unknown width"
    return f"{what} has no fixed width"


def packet_out_method(cp: Compiler, pkt: V, method: str, e: A.Call, scope: Scope, em: Emitter) -> V:
    if method != "emit":
        raise err(f"packet_out has no method {method}", e)
    if len(e.args) != 1:
        raise err("emit takes one argument", e)
    v = cp.value(e.args[0].value, scope, em)
    check_emit(v.type, e)
    return V("None", T.VOID)


def check_emit(t: T.Type, node: Any) -> None:
    """emit takes headers, and structs, unions and stacks made of them."""
    if isinstance(t, T.StructLikeT):
        if not t.is_header:
            for _, ft in t.fields:
                check_emit(ft, node)
        return
    if isinstance(t, T.StackT):
        check_emit(t.element, node)
        return
    raise err(f"emit needs a header, header stack, header union or struct, not {t}", node)


_SIZE_METHODS = ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes")


def _size_bits(t: T.Type, largest: bool) -> int:
    """Serialized size of a type in bits: varbit fields count 0 (min) or their bound (max)."""
    if isinstance(t, T.VarbitT):
        return t.max_width if largest else 0
    if isinstance(t, T.StackT):
        return t.size * _size_bits(t.element, largest)
    if isinstance(t, T.StructLikeT):
        sizes = [_size_bits(ft, largest) for _, ft in t.fields]
        if t.is_union:
            return (max(sizes) if largest else min(sizes)) if sizes else 0
        return sum(sizes)
    return T.serial_width(t) or 0


# ---------------------------------------------------------------------------- field lists
def check_fields(cp: Compiler, e: A.Expr | None, scope: Scope, em: Emitter) -> None:
    """Check a hash/checksum field list: values of known width, headers, structs, stacks."""
    if e is None:
        return
    items = e.items if isinstance(e, A.ListExpr) else [e]
    for it in items:
        if isinstance(it, A.ListExpr):
            check_fields(cp, it, scope, em)
            continue
        v = cp.value(it, scope, em)
        _check_field(v.type, it)


def _check_field(t: T.Type, node: Any) -> None:
    if isinstance(t, (T.BitT, T.BoolT, T.VarbitT)) or (isinstance(t, T.EnumT) and t.underlying is not None):
        return
    if isinstance(t, T.StructLikeT):
        for _, ft in t.fields:
            _check_field(ft, node)
        return
    if isinstance(t, T.StackT):
        _check_field(t.element, node)
        return
    if isinstance(t, T.IntT):
        raise err("a field list needs values of known width", node)
    raise err(f"cannot use a {t} value in a field list", node)


# ---------------------------------------------------------------------------- externs
def _lv_assign(cp: Compiler, lv: A.Expr, t: T.Type, scope: Scope, em: Emitter) -> None:
    """Check that `lv` can take a value of type t (an extern's result)."""
    from p4compiler.python_backend.stmts import assign_code

    assign_code(cp, lv, V("", t), scope, em)


def _target_type(cp: Compiler, lv: A.Expr, scope: Scope) -> T.Type:
    return cp.value(lv, scope, Emitter()).type


def _width(t: T.Type, node: Any) -> int:
    w = T.serial_width(t)
    if w is None:
        raise err(f"expected a bit<> value, not {t}", node)
    return w


def _algo(cp: Compiler, e: A.Expr, scope: Scope) -> str:
    v = cp.value(e, scope, Emitter())
    if not v.is_const or not isinstance(v.const, str):
        raise err("the hash algorithm must be a HashAlgorithm constant", e)
    return v.const.split(".")[-1]


def extern_method(cp: Compiler, inst: ExternInst, method: str, e: A.Call, scope: Scope, em: Emitter) -> V:
    kind = inst.type.extern_name if isinstance(inst.type, T.ExternT) else ""
    args = [a.value for a in e.args]
    _no_dont_care(args, f"{kind} {inst.p4name}.{method}", e)
    if kind == "register":
        et = inst.type.type_args[0] if inst.type.type_args else T.BitT(32)
        if method == "read" and len(args) == 2:
            cp.value(args[1], scope, em, want=T.BitT(32))
            _lv_assign(cp, args[0], et, scope, em)
            return V("None", T.VOID)
        if method == "write" and len(args) == 2:
            cp.value(args[0], scope, em, want=T.BitT(32))
            val = cp.value(args[1], scope, em, want=et)
            cp.coerce(val, et, args[1])
            return V("", T.VOID)
    elif kind == "counter":
        if method == "count" and len(args) == 1:
            cp.value(args[0], scope, em, want=T.BitT(32))
            return V("", T.VOID)
    elif kind == "direct_counter":
        if method == "count" and not args:
            return V("None", T.VOID)  # the table counts every hit already
    elif kind == "meter":
        if method == "execute_meter" and len(args) == 2:
            cp.value(args[0], scope, em, want=T.BitT(32))
            t = _target_type(cp, args[1], scope)
            _lv_assign(cp, args[1], t, scope, em)
            return V("None", T.VOID)
    elif kind == "direct_meter":
        if method == "read" and len(args) == 1:
            t = _target_type(cp, args[0], scope)
            _lv_assign(cp, args[0], t, scope, em)
            return V("None", T.VOID)
    elif kind == "Checksum16":
        if method == "get" and len(args) == 1:
            check_fields(cp, args[0], scope, em)
            return V("", T.BitT(16))
    raise err(f"{kind} {inst.p4name} has no method {method} with {len(args)} arguments", e)


def _no_dont_care(args: list[A.Expr | None], what: str, e: A.Call) -> None:
    """`_` (an Arg without a value) is not taken by the built-in externs' calls (P4-16 allows it
    for their out parameters, where it discards the value: not implemented here)."""
    if any(a is None for a in args):
        raise err(f"{what}: _ (don't care) is not supported as an extern call's argument here; "
                  "pass a variable", e)


def extern_function(cp: Compiler, name: str, b: ExternFuncBind, e: A.Call, scope: Scope, em: Emitter) -> V:
    args = [a.value for a in e.args]
    _no_dont_care(args, name, e)
    n = len(args)

    def need(k: int) -> None:
        if n != k:
            raise err(f"{name} takes {k} arguments, {n} given", e)

    if name == "verify":
        need(2)
        cp.value(args[0], scope, em)
        cp.value(args[1], scope, em)
        return V("None", T.VOID)
    if name == "mark_to_drop":
        if n == 1:
            cp.value(args[0], scope, em)
        return V("", T.VOID)
    if name == "hash":
        need(5)
        t = _target_type(cp, args[0], scope)
        _width(t, args[0])
        _algo(cp, args[1], scope)
        cp.value(args[2], scope, em)
        cp.value(args[4], scope, em)
        check_fields(cp, args[3], scope, em)
        _lv_assign(cp, args[0], t, scope, em)
        return V("None", T.VOID)
    if name == "random":
        need(3)
        t = _target_type(cp, args[0], scope)
        cp.value(args[1], scope, em, want=t)
        cp.value(args[2], scope, em, want=t)
        _lv_assign(cp, args[0], t, scope, em)
        return V("None", T.VOID)
    if name in ("verify_checksum", "verify_checksum_with_payload", "update_checksum",
                "update_checksum_with_payload"):
        need(4)
        cp.value(args[0], scope, em)
        check_fields(cp, args[1], scope, em)
        _algo(cp, args[3], scope)
        t = _target_type(cp, args[2], scope)
        _width(t, args[2])
        if name.startswith("verify"):
            cp.value(args[2], scope, em)
        else:
            _lv_assign(cp, args[2], t, scope, em)
        return V("None", T.VOID)
    if name == "digest":
        need(2)
        # digest<T>(r, {a, b}): the type argument turns a list expression into the struct T
        want = cp.resolve_type(e.type_args[0], scope) if e.type_args else None
        v = cp.value(args[1], scope, em, want=want)
        if isinstance(v.type, T.StructLikeT):
            cp.digests.setdefault(v.type.type_name, v.type)
            return V("", T.VOID)
        raise err("digest data must be a struct", args[1])
    if name in ("clone", "clone3", "clone_preserving_field_list"):
        cp.value(args[0], scope, em)
        cp.value(args[1], scope, em)
        need(2 if name == "clone" else 3)
        if name == "clone_preserving_field_list":
            cp.const_int(args[2], scope)
        return V("", T.VOID)
    if name in ("resubmit", "recirculate", "truncate", "assert", "assume"):
        need(1)
        if name in ("truncate", "assert", "assume"):
            cp.value(args[0], scope, em)
        return V("", T.VOID)
    if name in ("resubmit_preserving_field_list", "recirculate_preserving_field_list"):
        need(1)
        cp.const_int(args[0], scope)
        return V("", T.VOID)
    if name == "log_msg":
        cp.value(args[0], scope, em)
        if n > 1:
            for it in args[1].items if isinstance(args[1], A.ListExpr) else [args[1]]:
                cp.value(it, scope, em)
        return V("", T.VOID)
    if name == "static_assert":
        cond = cp.value(args[0], scope, em)
        if not cond.is_const:
            raise err("static_assert needs a compile-time condition", e)
        if not cond.const:
            msg = cp.value(args[1], scope, em).const if n > 1 else "static_assert failed"
            raise err(str(msg), e)
        return V("True", T.BOOL, True)
    raise err(f"extern function {name} is not supported by this switch", e)
