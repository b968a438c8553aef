"""The type check of blocks: parsers and their states, controls, actions, functions, tables;
collects the control-plane view (ProgramInfo, TableSpec, ExternSpec). The Python that runs is
written from the IR (emit.py)."""

from __future__ import annotations

from typing import Any

from p4compiler import model as M
from p4compiler.frontend import ast as A
from p4compiler.model import Exact, Lpm, Optional_, Range, Ternary
from p4compiler.python_backend import types as T
from p4compiler.python_backend.calls import ordered_args
from p4compiler.python_backend.codegen import Compiler, Emitter, TableSpec, V, err, fit
from p4compiler.python_backend.portability import check_table_applies, select_keys
from p4compiler.python_backend.scope import (
    ActionBind,
    BlockInst,
    Const,
    ExternInst,
    FuncBind,
    Scope,
    StateBind,
    TableBind,
    ValueSetBind,
    Var,
)
from p4compiler.python_backend.stmts import FnContext, stmt


# ---------------------------------------------------------------------------- params
def bind_params(cp: Compiler, params: list[A.Param], pscope: Scope, scope: Scope, prefix: str,
                readonly_in: bool = True) -> list[str]:
    """Add parameters to scope as Python locals named prefix+name; returns the local names."""
    names = []
    for p in params:
        t = cp.resolve_type(p.type, pscope)
        local = f"{prefix}{cp.safe(p.name)}"
        lvalue = p.direction in ("out", "inout") or p.direction == "" or not readonly_in
        if isinstance(t, T.ExternT) and t.extern_name in ("packet_in", "packet_out"):
            scope.add(p.name, Var("c.P", t, False, p.direction))  # the packet is implicit
            continue
        if isinstance(t, T.ExternT):
            # an extern instance passed in (P4-16: directionless); the calls are checked against
            # its type here, and each call site binds the instance it passes (lower.py)
            if p.direction:
                raise err(f"parameter {p.name} of extern type {t.name()} cannot have a direction", p)
            scope.add(p.name, ExternInst("", t, p.name, p))
            continue
        scope.add(p.name, Var(local, t, lvalue, p.direction))
        names.append(local)
    return names


def extern_arg(cp: Compiler, a: A.Expr, pt: T.ExternT, scope: Scope, p: A.Param) -> ExternInst:
    """The extern instance an argument for a parameter of extern type names."""
    b = cp.expr(a, scope, Emitter()).bind
    if not isinstance(b, ExternInst) or not isinstance(b.type, T.ExternT):
        raise err(f"{p.name} takes an instance of {pt.name()}", a)
    if b.type.extern_name != pt.extern_name or (
            pt.type_args and [t.name() for t in b.type.type_args] != [t.name() for t in pt.type_args]):
        raise err(f"{p.name} takes an instance of {pt.name()}, not of {b.type.name()}", a)
    return b


def scalar_outs(cp: Compiler, params: list[A.Param], pscope: Scope, prefix: str) -> list[str]:
    outs = []
    for p in params:
        t = cp.resolve_type(p.type, pscope)
        if p.direction in ("out", "inout") and not isinstance(t, (T.StructLikeT, T.StackT, T.ExternT)):
            outs.append(f"{prefix}{cp.safe(p.name)}")
    return outs


# ---------------------------------------------------------------------------- actions, functions
def ensure_action(cp: Compiler, b: ActionBind) -> str:
    if b.fn:
        return b.fn
    d: A.ActionDecl = b.decl
    b.fn = f"a_{cp.safe(b.p4name)}_{cp.uid('')}"
    scope = Scope(b.scope, kind="action")
    bind_params(cp, d.params, b.scope, scope, "p_")
    fc = FnContext(outs=scalar_outs(cp, d.params, b.scope, "p_"))
    em = Emitter()  # the text the checks write is not kept
    for s in d.body.stmts:
        stmt(cp, s, scope, em, fc)
    params = []
    for p in d.params:
        if p.direction == "":
            t = cp.resolve_type(p.type, b.scope)
            w = T.serial_width(t)
            if w is None:
                raise err(f"action parameter {p.name} must be bit<>, bool or a serializable enum", p)
            params.append((p.name, w, p.annotations))
    cp.info_actions.setdefault(b.p4name, (d, params))
    return b.fn


def ensure_function(cp: Compiler, b: FuncBind, fscope: Scope | None = None) -> str:
    """Check a function's body once, or a generic function's once per instantiation (`fscope`,
    from Compiler.function_scope, binds its type parameters)."""
    fscope = b.scope if fscope is None else fscope
    if id(fscope) in cp.checked_fns:
        return b.fn
    cp.checked_fns.add(id(fscope))
    proto = b.decl.proto
    b.fn = b.fn or f"f_{cp.safe(proto.name)}_{cp.uid('')}"
    scope = Scope(fscope, kind="function")
    bind_params(cp, proto.params, fscope, scope, "p_")
    ret_type = cp.resolve_type(proto.return_type, fscope)
    fc = FnContext(outs=scalar_outs(cp, proto.params, fscope, "p_"),
                   ret_type=None if isinstance(ret_type, T.VoidT) else ret_type)
    em = Emitter()  # the text the checks write is not kept
    for s in b.decl.body.stmts:
        stmt(cp, s, scope, em, fc)
    return b.fn


# ---------------------------------------------------------------------------- instances
def extern_instance(cp: Compiler, d: A.Instance, scope: Scope, prefix: str) -> None:
    t = cp.resolve_type(d.type, scope)
    p4name = cp.p4_name(d.name, d.annotations, prefix)
    if isinstance(t, T.BlockT):
        sub_block(cp, d, t, scope, p4name)
        return
    if not isinstance(t, T.ExternT):
        raise err(f"cannot instantiate {t}", d)
    code = f"X_{cp.safe(p4name)}_{cp.uid('')}"
    kind = t.extern_name
    _check_ctor_arity(t, d)
    args = [cp.value(a.value, scope, Emitter()) for a in d.args] if d.args else []
    consts = [a.const for a in args]
    if kind in ("register", "counter", "meter") and (
            not isinstance(consts[0], int) or isinstance(consts[0], bool) or consts[0] < 0):
        raise err(f"the size of {kind} {d.name} must be a compile-time non-negative integer", d)
    spec_args: dict[str, Any] = {}
    anns = [a.source() for a in d.annotations if a.name not in ("name", "id")]
    idann = A.find_annotation(d.annotations, "id")
    pid = int(idann.body, 0) if idann is not None else None
    if kind == "register":
        et = t.type_args[0] if t.type_args else T.BitT(32)
        w = T.serial_width(et)
        if w is None:
            raise err(f"register elements must be bit<>/int<>, not {et}", d)
        spec_args = {"width": w, "size": consts[0], "signed": isinstance(et, T.BitT) and et.signed}
        cp.info.registers.append(M.RegisterInfo(p4name, w, consts[0], pid, anns))
    elif kind == "counter":
        unit = _counter_unit(consts[1])
        spec_args = {"size": consts[0], "unit": unit}
        cp.info.counters.append(M.CounterInfo(p4name, unit, consts[0], pid, anns))
    elif kind == "direct_counter":
        unit = _counter_unit(consts[0])
        spec_args = {"unit": unit}
        cp.direct_counters[p4name] = (unit, pid, anns)
    elif kind == "meter":
        unit = "BYTES" if str(consts[1]).endswith("bytes") else "PACKETS"
        spec_args = {"size": consts[0], "unit": unit}
        cp.info.meters.append(M.MeterInfo(p4name, unit, consts[0], pid, anns))
    elif kind == "direct_meter":
        unit = "BYTES" if str(consts[0]).endswith("bytes") else "PACKETS"
        spec_args = {"unit": unit}
        cp.direct_meters[p4name] = (unit, pid, anns)
    elif kind in ("action_profile", "action_selector"):
        cp.action_profile_decls[p4name] = _action_profile(cp, kind, consts, d, p4name, d.annotations)
        spec_args = {"args": consts}
    elif kind == "Checksum16":
        spec_args = {"args": consts}
    else:
        raise err(f"extern {kind} is not supported by this switch", d)
    from p4compiler.python_backend.codegen import ExternSpec

    if any(x.kind == kind and x.p4name == p4name for x in cp.externs):
        # e.g. a top-level `r` and a control's @name(".r") instance: the control plane could not
        # tell them apart
        raise err(f"another {kind} is already named {p4name} (its control-plane name)", d)
    cp.externs.append(ExternSpec(kind, p4name, code, spec_args))
    scope.add(d.name, ExternInst(code, t, p4name, d))


def _check_ctor_arity(t: T.ExternT, d: A.Instance) -> None:
    """Refuse an instantiation whose argument count matches none of the extern's constructors."""
    decl = t.decl
    if not isinstance(decl, A.ExternDecl):
        return
    ctors = [m for m in decl.methods if m.return_type is None and m.name == decl.name]
    if not ctors:
        return
    n = len(d.args)
    for c in ctors:
        required = sum(1 for p in c.params if p.default is None)
        if required <= n <= len(c.params):
            return
    counts = sorted({len(c.params) for c in ctors})
    raise err(f"{decl.name} takes {' or '.join(map(str, counts))} constructor argument"
              f"{'' if counts == [1] else 's'}, {n} given", d)


def _counter_unit(v: Any) -> str:
    s = str(v)
    if s.endswith("packets_and_bytes"):
        return "BOTH"
    if s.endswith("bytes"):
        return "BYTES"
    return "PACKETS"


def sub_block(cp: Compiler, d: A.Instance, t: T.BlockT, scope: Scope, p4name: str) -> None:
    decl = t.decl
    if isinstance(decl, (A.ParserTypeDecl, A.ControlTypeDecl)):
        raise err(f"{decl.name} has no body to instantiate", d)
    fn = compile_block(cp, decl, p4name, d.args, scope)
    scope.add(d.name, BlockInst(decl, t.kind, fn))


# ---------------------------------------------------------------------------- blocks
def compile_block(cp: Compiler, decl: Any, p4name: str, ctor_args: list[A.Arg], outer: Scope) -> str:
    """Compile one instance of a parser or control; returns its Python function name."""
    fn = f"{'prs' if isinstance(decl, A.ParserDecl) else 'ctl'}_{cp.safe(p4name)}_{cp.uid('')}"
    scope = Scope(cp.g, kind="block")
    scope.instance_name = p4name
    cp.blocks[fn] = scope
    # constructor parameters are compile-time constants (or instances)
    if decl.ctor_params:
        args = ordered_args(A.Call(A.NameExpr(decl.name), [], ctor_args, loc=decl.loc), decl.ctor_params,
                            decl.name)
        for p, a in zip(decl.ctor_params, args, strict=False):
            pt = cp.resolve_type(p.type, scope)
            if a is None:
                continue
            if isinstance(a, A.Construct):
                bt = cp.resolve_type(a.type, outer)
                if isinstance(bt, T.BlockT):
                    sub = compile_block(cp, bt.decl, f"{p4name}.{p.name}", a.args, outer)
                    scope.add(p.name, BlockInst(bt.decl, bt.kind, sub))
                    continue
            if isinstance(pt, T.ExternT):
                scope.add(p.name, extern_arg(cp, a, pt, outer, p))
                continue
            v = cp.value(a, outer, Emitter(), want=pt)
            if not v.is_const:
                raise err(f"constructor argument {p.name} must be a compile-time constant", a)
            scope.add(p.name, Const(cp.coerce_const(v, pt, a), pt))
    bind_params(cp, decl.params, scope, scope, "p_")
    for p in decl.params:
        b = scope.lookup_local(p.name)
        if isinstance(b, Var) and b.code.startswith("p_"):
            b.code = "c." + b.code
    em_init = Emitter()
    fc_ctl = FnContext(local_prefix="c.l_")
    # locals: constants, variables, instances, actions, tables, value sets
    prev_current = cp.ctx_slots.pop("__current__", None)
    for loc in decl.locals:
        if isinstance(loc, A.ConstDecl):
            stmt(cp, loc, scope, em_init, fc_ctl)
        elif isinstance(loc, A.VarDecl):
            stmt(cp, loc, scope, em_init, fc_ctl)
        elif isinstance(loc, A.Instance):
            extern_instance(cp, loc, scope, p4name)
        elif isinstance(loc, A.ActionDecl):
            scope.add(loc.name, ActionBind(loc, "", cp.p4_name(loc.name, loc.annotations, p4name), scope))
        elif isinstance(loc, A.TableDecl):
            table_decl(cp, loc, scope, p4name)
        elif isinstance(loc, A.ValueSetDecl):
            value_set(cp, loc, scope, p4name)
        else:
            raise err(f"unsupported declaration {type(loc).__name__} in {decl.name}", loc)
    for pending in [t for t in cp.pending_tables if t[1] is scope]:
        finish_table(cp, *pending)
    cp.pending_tables = [t for t in cp.pending_tables if t[1] is not scope]
    cp.ctx_slots.pop("__current__", None)
    if prev_current is not None:
        cp.ctx_slots["__current__"] = prev_current
    em = Emitter()  # the text the checks write is not kept
    if isinstance(decl, A.ParserDecl):
        parser_body(cp, decl, scope, em, p4name)
    else:
        fc = FnContext(outs=scalar_outs(cp, decl.params, scope, "c.p_"))
        for s in decl.apply.stmts:
            stmt(cp, s, scope, em, fc)
        check_table_applies(cp, decl, scope)
    return fn


def parser_body(cp: Compiler, decl: A.ParserDecl, scope: Scope, em: Emitter, p4name: str) -> None:
    names = {s.name for s in decl.states}
    if "start" not in names:
        raise err(f"parser {decl.name} has no start state", decl)
    fns = {s.name: f"st_{cp.safe(p4name)}_{cp.safe(s.name)}_{cp.uid('')}" for s in decl.states}
    for s in decl.states:
        scope.add(s.name, StateBind(fns[s.name]))
    for s in decl.states:
        if s.name in ("accept", "reject"):
            raise err(f"state {s.name} cannot be redefined", s)
        st_scope = Scope(scope, kind="state")
        fc = FnContext(in_parser=True)
        for x in s.stmts:
            stmt(cp, x, st_scope, em, fc)
        transition(cp, s, st_scope, em, fns)


def _target(name: str, fns: dict[str, str], node: Any) -> None:
    if name not in ("accept", "reject") and name not in fns:
        raise err(f"unknown parser state {name}", node)


def transition(cp: Compiler, s: A.ParserState, scope: Scope, em: Emitter, fns: dict[str, str]) -> None:
    """Check a state's transition: its targets, select keys and keysets (up to the first
    case that always matches)."""
    tr = s.transition
    if tr is None:
        return  # a state without transition goes to reject
    if isinstance(tr, str):
        _target(tr, fns, s)
        return
    keys = [cp.value(x, scope, em) for x in tr.exprs]
    for k, x in zip(keys, tr.exprs, strict=False):
        if isinstance(k.type, T.IntT):
            raise err("select keys need a known width", x)
    select_keys(cp, keys, tr.exprs)
    for case in tr.cases:
        _target(case.state, fns, case)
        ks = case.keyset.items if isinstance(case.keyset, A.TupleKeyset) else [case.keyset]
        if len(ks) == 1 and len(keys) > 1 and isinstance(ks[0], (A.DefaultExpr, A.DontCare)):
            ks = ks * len(keys)
        if len(ks) != len(keys):
            # a value_set used for a tuple of keys
            if len(ks) == 1 and isinstance(ks[0], A.NameExpr) and isinstance(scope.lookup(ks[0].name),
                                                                               ValueSetBind):
                continue
            raise err(f"select case has {len(ks)} values for {len(keys)} keys", case)
        always = True
        for k, x in zip(keys, ks, strict=False):
            always &= keyset_check(cp, k.type, x, scope)
        if always:
            return


def keyset_check(cp: Compiler, kt: T.Type, x: A.Expr, scope: Scope) -> bool:
    """Check one keyset element against a key of type kt; True when it matches any value."""
    if isinstance(x, (A.DefaultExpr, A.DontCare)):
        return True
    if isinstance(x, A.Mask):
        _const_of(cp, cp.value(x.value, scope, Emitter(), want=kt), kt, x)
        _const_of(cp, cp.value(x.mask, scope, Emitter(), want=kt), kt, x)
        return False
    if isinstance(x, A.RangeExpr):
        _const_of(cp, cp.value(x.lo, scope, Emitter(), want=kt), kt, x)
        _const_of(cp, cp.value(x.hi, scope, Emitter(), want=kt), kt, x)
        return False
    if isinstance(x, A.NameExpr) and isinstance(scope.lookup(x.name), ValueSetBind):
        return False
    _const_of(cp, cp.value(x, scope, Emitter(), want=kt), kt, x)
    return False


def _const_of(cp: Compiler, v: V, kt: T.Type, node: Any) -> Any:
    if not v.is_const:
        raise err("select cases need compile-time values", node)
    if isinstance(kt, T.BitT) and isinstance(v.const, int) and not isinstance(v.const, bool):
        return fit(v.const, kt)
    return v.const


def value_set(cp: Compiler, d: A.ValueSetDecl, scope: Scope, prefix: str) -> None:
    t = cp.resolve_type(d.type, scope)
    size = cp.const_int(d.size, scope)
    p4name = cp.p4_name(d.name, d.annotations, prefix)
    code = f"VS_{cp.safe(p4name)}_{cp.uid('')}"
    if isinstance(t, T.StructLikeT):
        fields = [M.MatchField(n, T.serial_width(ft) or 0, _vs_kind(t, n), i + 1)
                  for i, (n, ft) in enumerate(t.fields)]
    else:
        fields = [M.MatchField(d.name, T.serial_width(t) or 0, "exact", 1)]
    cp.info.value_sets.append(M.ValueSetInfo(p4name, size, fields))
    scope.add(d.name, ValueSetBind(code, t, p4name))


def _vs_kind(t: T.StructLikeT, field: str) -> str:
    for a in t.field_annotations.get(field, []):
        if a.name == "match":
            return a.body.strip()
    return "exact"


# ---------------------------------------------------------------------------- tables
def table_decl(cp: Compiler, d: A.TableDecl, scope: Scope, prefix: str) -> None:
    p4name = cp.p4_name(d.name, d.annotations, prefix)
    code = f"T_{cp.safe(p4name)}_{cp.uid('')}"
    scope.add(d.name, TableBind(code, d, p4name))
    cp.pending_tables.append((d, scope, p4name, code))


def finish_table(cp: Compiler, d: A.TableDecl, scope: Scope, p4name: str, code: str) -> None:
    key_prop = d.prop("key")
    keys = key_prop.value if key_prop is not None else []
    kinds, widths, mfs = [], [], []
    selector_keys: list[A.KeyElement] = []
    em = Emitter()
    for i, k in enumerate(keys, start=1):
        if k.match_kind not in cp.match_kinds:
            raise err(f"unknown match kind {k.match_kind}", k)
        v = cp.value(k.expr, scope, em)
        t = v.type
        if isinstance(t, T.BoolT):
            w = 1
        elif isinstance(t, T.BitT):
            w = t.width
        elif isinstance(t, T.EnumT) and t.underlying is not None:
            w = t.underlying.width
        elif isinstance(t, (T.ErrorT, T.EnumT)):
            w = 32  # p4c gives bmv2 errors and plain enums as 32-bit numbers (member index)
        else:
            raise err(f"table key of type {t} is not supported", k.expr)
        if k.match_kind == "selector":
            selector_keys.append(k)
            continue
        nm = A.find_annotation(k.annotations, "name")
        fname = nm.string_arg() if nm is not None else cp.text(k.expr)
        anns = [a.source() for a in k.annotations if a.name not in ("name", "id")]
        kinds.append(k.match_kind)
        widths.append(w)
        mfs.append(M.MatchField(fname, w, k.match_kind, i, anns))
    key_fn = f"k_{code}"

    # actions
    act_prop = d.prop("actions")
    refs = act_prop.value if act_prop is not None else []
    action_fns: dict[str, str] = {}
    action_params: dict[str, list[tuple[str, int]]] = {}
    arefs = []
    for r in refs:
        b = scope.lookup(r.name)
        if not isinstance(b, ActionBind):
            raise err(f"{r.name} is not an action", r)
        fn = ensure_action(cp, b)
        cp_params = [p for p in b.decl.params if p.direction == ""]
        dir_params = [p for p in b.decl.params if p.direction != ""]
        if len(r.args) > len(dir_params) and r.args:
            raise err(f"action {r.name} in table {d.name} binds {len(r.args)} arguments, "
                      f"it has {len(dir_params)} directional parameters", r)
        if dir_params:
            if len(r.args) != len(dir_params):
                raise err(f"action {r.name} needs its directional arguments bound in the actions list", r)
            from p4compiler.python_backend.calls import bind_args

            # type-check the directional arguments the actions list binds
            call = A.Call(A.NameExpr(r.name), [], list(r.args), loc=r.loc)
            bind_args(cp, dir_params, [a.value for a in call.args], b.scope, scope, Emitter(), r.name, call)
        action_fns[b.p4name] = fn
        action_params[b.p4name] = [(p.name, _param_width(cp, p, b.scope)) for p in cp_params]
        scope_s = "TABLE_AND_DEFAULT"
        if A.find_annotation(r.annotations, "tableonly"):
            scope_s = "TABLE_ONLY"
        elif A.find_annotation(r.annotations, "defaultonly"):
            scope_s = "DEFAULT_ONLY"
        arefs.append(M.ActionRef(b.p4name, scope_s, [a.source() for a in r.annotations]))

    # default action
    dprop = d.prop("default_action")
    if dprop is not None:
        dname, dargs = _action_call(cp, dprop.value, scope, d)
        if dname not in action_fns:
            # p4c requires default actions to be listed; NoAction is implicit only when listed
            raise err(f"default action {dname} of table {d.name} is not in its actions list", dprop)
        dconst = dprop.is_const
    else:
        noaction = scope.lookup("NoAction")
        if isinstance(noaction, ActionBind):
            ensure_action(cp, noaction)
            dname, dargs = noaction.p4name, []
            if dname not in action_fns:
                action_fns[dname] = noaction.fn
                action_params[dname] = []
        else:
            raise err(f"table {d.name} has no default_action and NoAction is not declared", d)
        dconst = False
    if len(dargs) != len(action_params[dname]):
        raise err(f"default action {dname} of table {d.name} needs {len(action_params[dname])} arguments", d)

    # size and other properties
    size = 1024
    sp = d.prop("size")
    if sp is not None:
        size = cp.const_int(sp.value, scope)
    dcounter = dmeter = impl = impl_prop = None
    idle = False
    largest_wins = True
    delta = 1
    for p in d.properties:
        if p.name == "counters":
            dcounter = _instance_name(cp, p.value, scope, "direct_counter")
        elif p.name == "meters":
            dmeter = _instance_name(cp, p.value, scope, "direct_meter")
        elif p.name == "implementation":
            impl, impl_prop = _implementation(cp, p, scope, p4name), p
        elif p.name == "support_timeout":
            idle = bool(cp.value(p.value, scope, Emitter()).const)
        elif p.name == "largest_priority_wins":
            largest_wins = bool(cp.value(p.value, scope, Emitter()).const)
        elif p.name == "priority_delta":
            delta = cp.const_int(p.value, scope)
            if delta < 1:
                raise err(f"priority_delta of table {d.name} must be a positive integer", p)

    # const entries
    entries_prop = d.prop("entries")
    entries = []
    if entries_prop is not None:
        ents = entries_prop.value
        prios = _entry_priorities(cp, d, ents, entries_prop.is_const, kinds, largest_wins, delta, scope)
        for ent, prio in zip(ents, prios, strict=True):
            ks = ent.keyset.items if isinstance(ent.keyset, A.TupleKeyset) else [ent.keyset]
            if len(ks) == 1 and len(kinds) > 1 and isinstance(ks[0], (A.DefaultExpr, A.DontCare)):
                ks = ks * len(kinds)
            if len(ks) != len(kinds):
                raise err(f"entry has {len(ks)} key values, table {d.name} has {len(kinds)} keys", ent)
            mvals = [_entry_match(cp, x, kind, w, scope)
                     for x, kind, w in zip(ks, kinds, widths, strict=False)]
            aname, aargs = _action_call(cp, ent.action, scope, d)
            if aname not in action_fns:
                raise err(f"action {aname} is not in the actions of table {d.name}", ent)
            if len(aargs) != len(action_params[aname]):
                raise err(f"action {aname} needs {len(action_params[aname])} arguments", ent)
            entries.append((mvals, aname, aargs, prio, entries_prop.is_const or ent.is_const))
    is_const = entries_prop is not None and entries_prop.is_const
    idann = A.find_annotation(d.annotations, "id")
    info = M.TableInfo(
        name=p4name, match_fields=mfs, action_refs=arefs, size=size, default_action=dname,
        default_action_args={n: v for (n, _), v in zip(action_params[dname], dargs, strict=False)},
        default_action_const=dconst, is_const_table=is_const and entries_prop is not None,
        has_initial_entries=entries_prop is not None, direct_counter=dcounter, direct_meter=dmeter,
        implementation=impl, idle_timeout=idle, id=int(idann.body, 0) if idann else None,
        annotations=[a.source() for a in d.annotations if a.name not in ("name", "id")],
    )
    # a direct counter or meter belongs to one table: its cells are that table's entries (p4c's
    # bmv2 back end refuses one attached to two tables too)
    for what, name, used in (("direct_counter", dcounter, cp.info.direct_counters),
                             ("direct_meter", dmeter, cp.info.direct_meters)):
        if name and any(x.name == name for x in used):
            other = next(x.table for x in used if x.name == name)
            raise err(f"{what} {name} is already attached to table {other}; a direct counter or "
                      "meter belongs to one table", d)
    profile = None
    if impl is not None:
        profile = cp.action_profile_decls[impl]
        if not profile.with_selector and selector_keys:
            raise err(f"table {d.name} has selector keys but its implementation {impl} is an "
                      "action_profile; selector keys need an action_selector", selector_keys[0].expr)
        if profile.with_selector and not selector_keys:
            raise err(f"table {d.name} uses action_selector {impl} but has no selector keys", impl_prop)
        if entries_prop is not None:
            raise err(f"table {d.name} has an implementation ({impl}) and entries; entries of such "
                      "a table are member or group references, which a program cannot write", entries_prop)
        if profile not in cp.info.action_profiles:
            cp.info.action_profiles.append(profile)
        else:  # members are shared: each must be an action of every table (p4c checks the same)
            first = next(s for s in cp.tables if s.p4name == profile.table_names[0])
            if set(first.action_fns) != set(action_fns):
                raise err(f"table {d.name} shares {impl} with table {first.p4name} but not its actions", d)
        profile.table_names.append(p4name)
    elif selector_keys:
        raise err(f"table {d.name} has selector keys but no action_selector implementation",
                  selector_keys[0].expr)
    cp.info.tables.append(info)
    if dcounter:
        unit, pid, anns = cp.direct_counters[dcounter]
        cp.info.direct_counters.append(M.DirectCounterInfo(dcounter, unit, p4name, pid, anns))
    if dmeter:
        unit, pid, anns = cp.direct_meters[dmeter]
        cp.info.direct_meters.append(M.DirectMeterInfo(dmeter, unit, p4name, pid, anns))
    spec = TableSpec(p4name, key_fn, kinds, widths, action_fns, action_params, dname, dargs, entries,
                     dcounter, dmeter, size, largest_wins, impl,
                     profile.algorithm if profile is not None and profile.with_selector else None)
    cp.tables.append(spec)


def _action_profile(cp: Compiler, kind: str, consts: list[Any], d: Any, p4name: str,
                    annotations: list[A.Annotation]) -> M.ActionProfileInfo:
    """The control-plane record of `action_profile(size)` / `action_selector(algo, size,
    outputWidth)` (v1model.p4), declared as an instance or inline in a table's `implementation`.
    p4c reads @max_group_size into P4Info's max_group_size instead of an annotation."""
    want = 1 if kind == "action_profile" else 3
    if len(consts) != want:
        raise err(f"{kind} takes {want} argument(s), {len(consts)} given", d)
    ints = consts[-2:] if kind == "action_selector" else consts
    for c in ints:
        if not isinstance(c, int) or isinstance(c, bool) or c < 0:
            raise err(f"the size arguments of {kind} {p4name} must be compile-time non-negative integers", d)
    algo = ""
    if kind == "action_selector":
        from p4compiler.lower import ALGORITHMS

        algo = str(consts[0]).split(".")[-1]
        if algo not in ALGORITHMS:
            raise err(f"action_selector {p4name}: hash algorithm {consts[0]} is not supported", d)
    mg = A.find_annotation(annotations, "max_group_size")
    idann = A.find_annotation(annotations, "id")
    anns = [a.source() for a in annotations if a.name not in ("name", "id", "max_group_size")]
    return M.ActionProfileInfo(
        p4name, [], kind == "action_selector", ints[0], int(idann.body, 0) if idann else None, anns,
        int(mg.body, 0) if mg is not None else 0, algo, ints[1] if kind == "action_selector" else 0)


def _implementation(cp: Compiler, p: A.TableProperty, scope: Scope, table: str) -> str:
    """The name of the action profile a table's `implementation` property names, or instantiates
    there (`implementation = action_selector(...)`: named by the property's @name, else after
    the table, as p4c names it)."""
    e = p.value
    if isinstance(e, A.NameExpr):
        name = _instance_name(cp, e, scope, None)
        if name not in cp.action_profile_decls:
            raise err(f"{e.name} is not an action_profile or action_selector", e)
        return name
    ctype = args = None
    if isinstance(e, A.Construct):
        ctype, args = e.type, e.args
    elif isinstance(e, A.Call) and isinstance(e.callee, A.NameExpr):
        ctype, args = A.NamedTypeRef(e.callee.name), e.args
    if ctype is not None:
        t = cp.resolve_type(ctype, scope)
        if isinstance(t, T.ExternT) and t.extern_name in ("action_profile", "action_selector"):
            nm = A.find_annotation(p.annotations, "name")
            name = nm.string_arg().lstrip(".") if nm is not None else table
            if name in cp.action_profile_decls:
                raise err(f"another action profile is already named {name}", p)
            consts = [cp.value(a.value, scope, Emitter()).const for a in args]
            cp.action_profile_decls[name] = _action_profile(cp, t.extern_name, consts, p, name, p.annotations)
            return name
    raise err("implementation must name or instantiate an action_profile or action_selector", p)


MAX_PRIORITY = 2**31 - 1  # P4Runtime's priorities are int32 (and at least 1)


def _entry_priorities(cp: Compiler, d: Any, ents: list, is_const: bool, kinds: list[str],
                      largest_wins: bool, delta: int, scope: Scope) -> list[int | None]:
    """The priority of each entry of a table's `entries`, in P4Runtime's numbers (the table's
    largest_priority_wins says which end wins); None for a table with only exact and lpm keys.

    - `priority = N:` on some entries (P4-16 v1.2.4, 14.2.1.4): the first entry must have one; an
      entry without one continues from the entry before it by priority_delta, towards losing.
    - p4c's `@priority(N)` annotations (p4c-bm2-ss): N is bmv2's priority (the smallest wins), an
      entry without one gets its position 1, 2, ...; P4Runtime sees what PI reports for it on
      simple_switch_grpc, INT32_MAX - N (or N itself where the smallest priority wins).
    - neither, `const entries`: as p4c-bm2-ss and PI give them (positions, INT32_MAX - 1, - 2,
      ...: p4c's EntryPriorities pass leaves const entries to the back end).
    - neither, `entries`: the spec's numbering: the last entry gets 1, each one before it
      priority_delta more (1, 1 + delta, ... from the first where the smallest wins).
    Either way the entry listed first wins among entries without a priority of their own."""
    needs = any(k in ("ternary", "range", "optional") for k in kinds)
    explicit = [e for e in ents if e.priority is not None]
    annotated = [(e, A.find_annotation(e.annotations, "priority")) for e in ents]
    annotated = [(e, a) for e, a in annotated if a is not None]
    if explicit and annotated:
        raise err("an entry's @priority annotation (p4c's) and `priority =` (P4-16 v1.2.4) "
                  f"cannot be mixed in one table ({d.name})", annotated[0][1])
    if (explicit or annotated) and not needs:
        what = explicit[0] if explicit else annotated[0][1]
        raise err(f"table {d.name} has only exact and lpm keys, which take no entry priorities",
                  what)
    if not needs:
        return [None] * len(ents)
    n = len(ents)
    if explicit:
        if ents[0].priority is None:
            raise err("the first entry must have a priority when other entries have one", ents[0])
        out: list[int | None] = []
        p = 0
        for ent in ents:
            if ent.priority is not None:
                p = cp.const_int(ent.priority, scope)
            else:
                p = p - delta if largest_wins else p + delta
            if not 1 <= p <= MAX_PRIORITY:
                how = "given" if ent.priority is not None else "computed from the entry before it"
                raise err(f"entry priority {p} ({how}) is out of range: P4Runtime takes 1 to "
                          f"{MAX_PRIORITY}", ent)
            out.append(p)
        return out
    if annotated or is_const:
        out = []
        for i, ent in enumerate(ents):
            a = A.find_annotation(ent.annotations, "priority")
            b = i + 1
            if a is not None:
                try:
                    b = int(a.body.strip(), 0)
                except ValueError:
                    raise err(f"@priority takes an integer, not {a.body.strip()!r}", a) from None
            p = MAX_PRIORITY - b if largest_wins else b
            if not 1 <= p <= MAX_PRIORITY:
                raise err(f"@priority({b}) is out of range: P4Runtime takes 1 to {MAX_PRIORITY} "
                          f"(here {p})", a or ent)
            out.append(p)
        return out
    if delta < 1:
        raise err(f"priority_delta of table {d.name} must be positive", d)
    return [(n - i) * delta if largest_wins else 1 + i * delta for i in range(n)]


def _param_width(cp: Compiler, p: A.Param, scope: Scope) -> int:
    t = cp.resolve_type(p.type, scope)
    w = T.serial_width(t)
    if w is None:
        raise err(f"action parameter {p.name} must be bit<>, bool or a serializable enum", p)
    return w


def _instance_name(cp: Compiler, e: A.Expr, scope: Scope, kind: str | None) -> str:
    if isinstance(e, A.NameExpr):
        b = scope.lookup(e.name)
        if isinstance(b, ExternInst):
            if kind is not None and b.type.extern_name != kind:
                raise err(f"{e.name} is a {b.type.extern_name}, not a {kind}", e)
            return b.p4name
    raise err("expected the name of an extern instance", e)


def _action_call(cp: Compiler, e: Any, scope: Scope, table: Any) -> tuple[str, list[int]]:
    if isinstance(e, A.ActionRefExpr):
        name, args = e.name, [a.value for a in e.args]
    elif isinstance(e, A.Call) and isinstance(e.callee, A.NameExpr):
        name, args = e.callee.name, [a.value for a in e.args]
    elif isinstance(e, A.NameExpr):
        name, args = e.name, []
    else:
        raise err("expected an action call", e)
    b = scope.lookup(name)
    if not isinstance(b, ActionBind):
        raise err(f"{name} is not an action", e)
    cparams = [p for p in b.decl.params if p.direction == ""]
    vals = []
    cargs = args[len(b.decl.params) - len(cparams):] if len(args) > len(cparams) else args
    for p, a in zip(cparams, cargs, strict=False):
        pt = cp.resolve_type(p.type, b.scope)
        v = cp.value(a, scope, Emitter(), want=pt)
        if not v.is_const:
            raise err("action arguments in entries and default actions must be constants", a)
        vals.append(fit(int(v.const), pt) if isinstance(pt, T.BitT) else int(v.const))
    if len(args) < len(cparams):
        raise err(f"action {name} needs {len(cparams)} arguments, {len(args)} given", e)
    return b.p4name, vals


def _entry_match(cp: Compiler, x: A.Expr, kind: str, w: int, scope: Scope) -> Any:
    """A const entry's key value as (kind, a, b): exact (v), ternary (v, mask), lpm (v, plen),
    range (lo, hi), optional (v) or None for a wildcard."""
    mask = (1 << w) - 1
    kt = T.BitT(w)
    if isinstance(x, (A.DefaultExpr, A.DontCare)):
        if kind == "exact":
            raise err("an exact key cannot be a wildcard", x)
        return None
    if isinstance(x, A.Mask):
        v = _const_of(cp, cp.value(x.value, scope, Emitter(), want=kt), kt, x) & mask
        m = _const_of(cp, cp.value(x.mask, scope, Emitter(), want=kt), kt, x) & mask
        if kind == "lpm":
            plen = bin(m).count("1")
            if m != (mask ^ ((1 << (w - plen)) - 1)):
                raise err("lpm entry mask must be a prefix", x)
            return Lpm(v & m, plen)
        if kind in ("ternary", "optional"):
            return Ternary(v & m, m)
        raise err(f"&&& is not allowed for {kind} keys", x)
    if isinstance(x, A.RangeExpr):
        lo = _const_of(cp, cp.value(x.lo, scope, Emitter(), want=kt), kt, x)
        hi = _const_of(cp, cp.value(x.hi, scope, Emitter(), want=kt), kt, x)
        if kind != "range":
            raise err(f".. is not allowed for {kind} keys", x)
        return Range(lo, hi)
    v = cp.value(x, scope, Emitter(), want=kt)
    if isinstance(v.const, bool):
        val = int(v.const)
    elif isinstance(v.type, T.EnumT) and v.type.underlying is None and isinstance(v.const, str):
        val = v.type.members.index(v.const.split(".", 1)[1])
    else:
        val = _const_of(cp, v, v.type if isinstance(v.type, T.BitT) else kt, x)
        if isinstance(v.type, T.EnumT) and v.type.underlying is None:
            raise err("plain enum values cannot be table keys", x)
    val &= mask
    if kind == "exact":
        return Exact(val)
    if kind == "lpm":
        return Lpm(val, w)
    if kind == "ternary":
        return Ternary(val, mask)
    if kind == "range":
        return Range(val, val)
    if kind == "optional":
        return Optional_(val)
    raise err(f"match kind {kind} is not supported", x)

