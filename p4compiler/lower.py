"""Lowering: syntax tree -> p4compiler.ir (typed, inlined, numbered).

The front end's typing rules are reused, not restated: `Lower` subclasses the Python back end's
`_Build`/`codegen.Compiler` and keeps its name resolution (`Scope`), type resolution
(`resolve_type`), constant folding (`fold`, `const_int`, `declare_globals`), operand unification
(`unify`) and P4Info naming (`p4_name`). It overrides only the methods that produced Python
text, so that an expression's `V.code` is an `ir.Expr` instead. The program has been compiled
by the Python back end first (it is a `CompiledProgram`), so it is known to type-check; the
checks here are the ones the IR itself needs.

The IR covers what the Python back end runs (any bit width, sub-parsers, `return`/`exit` in
parsers, value sets in tuple keysets, varbit values, unions in field lists, tables applied inside
`&&`/`||`/`?:`); the C back end's own limits are refused by `c_backend.check`, not here. What the
lowering still cannot express raises `NativeUnsupported` with the construct's source location;
every statement and composite type carries that location (`loc`) for the back ends.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any

from p4compiler import ir
from p4compiler.errors import P4Error
from p4compiler.frontend import ast as A
from p4compiler.python_backend import CompiledProgram, _Build
from p4compiler.python_backend import types as T
from p4compiler.python_backend.calls import _SIZE_METHODS, _size_bits, direct_block, ordered_args
from p4compiler.python_backend.codegen import V, fit
from p4compiler.python_backend.scope import (
    ActionBind,
    Const,
    ExternFuncBind,
    ExternInst,
    FuncBind,
    Scope,
    Var,
)

# v1model HashAlgorithm members -> SS_ALGO_* numbers of ss_runtime.h
ALGORITHMS = {
    "crc32": 0,
    "crc32_custom": 1,
    "crc16": 2,
    "crc16_custom": 3,
    "random": 4,
    "identity": 5,
    "csum16": 6,
    "xor16": 7,
}

# standard_metadata_t fields the native runtime's ss_std_meta carries
STD_META_FIELDS = (
    "ingress_port",
    "egress_spec",
    "egress_port",
    "instance_type",
    "packet_length",
    "enq_timestamp",
    "enq_qdepth",
    "deq_timedelta",
    "deq_qdepth",
    "ingress_global_timestamp",
    "egress_global_timestamp",
    "mcast_grp",
    "egress_rid",
    "checksum_error",
    "parser_error",
    "priority",
)

SYNTH_FIELD_LIST_BASE = 1 << 20  # ids of field lists made up for clone3/resubmit/recirculate lists


class NativeUnsupported(P4Error):
    """A construct the native (C) back end cannot compile yet; the switch falls back to Python."""


def unsupported(what: str, node: Any) -> NativeUnsupported:
    loc = getattr(node, "loc", None)
    msg = f"the native backend does not support {what} yet"
    if loc is None:
        return NativeUnsupported(msg)
    return NativeUnsupported(msg, loc.file, loc.line, loc.col)


def _at(node: Any) -> tuple:
    loc = getattr(node, "loc", None)
    return () if loc is None else (loc.file, loc.line, loc.col)


def _lookahead_width(t: ir.Type, node: Any) -> int:
    """Bits a lookahead of `t` reads: the sum of its (nested) fields' wire widths."""
    if isinstance(t, (ir.Struct, ir.Header)):
        return sum(_lookahead_width(ft, node) for _, ft in t.fields)
    if isinstance(t, (ir.Bits, ir.Bool)):
        return ir.wire_width(t)
    raise unsupported(f"lookahead of a value with a {type(t).__name__} field", node)


def _look_cast(x: ir.Expr, t: ir.Type) -> ir.Expr:
    """Unsigned bits read from the packet as a value of type t (bool, int<W> or bit<W>)."""
    if isinstance(t, ir.Bool):
        return ir.Cast(x, ir.BOOL)
    if isinstance(t, ir.Bits) and t.signed:
        return ir.Cast(x, t)
    return x


# The standard metadata as the architecture writes it behind the program's back (mark_to_drop()
# without an argument, verify_checksum's checksum_error): not an access through any argument, so
# no reason to copy one (the storage analysis below leaves it out).
_ARCH_SM = ir.Var("sm", ir.Bits(64))

# ---------------------------------------------------------------------------- storage analysis
# A path names storage: a root variable's name, then field names (str) and stack indexes (int,
# or None for a run-time index: any element). The stack's next-index counter is the step "#nxt".
_Path = tuple


def _path(e: ir.Expr) -> _Path | None:
    """The storage `e` names (a Var/Member/Index chain, or a stack's nextIndex), else None."""
    steps: list[Any] = []
    if isinstance(e, ir.StackNext):
        steps.append("#nxt")
        e = e.base
    while isinstance(e, (ir.Member, ir.Index)):
        if isinstance(e, ir.Member):
            steps.append(e.field)
        else:
            steps.append(e.index.value if isinstance(e.index, ir.Const) else None)
        e = e.base
    if not isinstance(e, ir.Var):
        return None
    return (e.name, *reversed(steps))


def _overlap(p: _Path, q: _Path) -> bool:
    """Whether two paths can name common storage: one is a prefix of the other (a run-time index
    matches every element)."""
    if p[0] != q[0]:
        return False
    return all(a == b or a is None or b is None for a, b in zip(p[1:], q[1:], strict=False))


def _accesses(nodes: Any, skip: frozenset[int] = frozenset()) -> list[_Path]:
    """The storage every read and write under `nodes` names (statements with their expressions,
    nested bodies, sub-parsers' states), except under the nodes whose id() is in `skip`."""
    out: list[_Path] = []
    stack = list(nodes) if isinstance(nodes, list) else [nodes]
    while stack:
        n = stack.pop()
        if id(n) in skip:
            continue
        if isinstance(n, (ir.Var, ir.Member, ir.Index, ir.StackNext)):
            root = n.base if isinstance(n, ir.StackNext) else n
            while isinstance(root, (ir.Member, ir.Index)):
                root = root.base
            if root is _ARCH_SM:
                continue
            p = _path(n)
            if p is not None:
                out.append(p)
                e = n.base if isinstance(n, ir.StackNext) else n
                while isinstance(e, (ir.Member, ir.Index)):  # the indexes are reads of their own
                    if isinstance(e, ir.Index):
                        stack.append(e.index)
                    e = e.base
                continue
        stack.extend(ir.children(n))
    return out


def _touches(nodes: Any, x: ir.Expr) -> bool:
    """Whether anything under `nodes` reads or writes storage that expression `x` reads."""
    mine = _accesses(x)
    if not mine:
        return False
    return any(_overlap(p, q) for q in _accesses(nodes) for p in mine)


def _rewrite(nodes: list, subst: dict[int, ir.Expr], drop: set[int]) -> None:
    """In place under `nodes`: replace each variable whose id() is a key of `subst` by its
    expression, and remove the statements whose id() is in `drop` from every statement list."""
    stack: list[Any] = [nodes]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            if drop:
                n[:] = [x for x in n if id(x) not in drop]
            for i, x in enumerate(n):
                if id(x) in subst:
                    n[i] = subst[id(x)]
                elif isinstance(x, tuple):  # StructInit values
                    n[i] = tuple(subst.get(id(y), y) for y in x)
                    stack.extend(y for y in n[i] if ir.is_node(y))
                elif ir.is_node(x):
                    stack.append(x)
            continue
        for name in ir.node_fields(n):
            v = getattr(n, name)
            if id(v) in subst:
                setattr(n, name, subst[id(v)])
            elif isinstance(v, list) or ir.is_node(v):
                stack.append(v)


def _has_lookahead(x: Any) -> bool:
    """Whether evaluating expression `x` peeks at the packet (which fails past its end)."""
    return any(isinstance(n, ir.Lookahead) for n in ir.walk(x))


@dataclass
class _Copy:
    """A composite out/inout argument's copy (P4-16 6.8), until `Lower.settle_copies` decides
    whether the call needs it."""

    tmp: ir.Var  # the parameter, as the callee sees it
    target: ir.Expr  # the argument's l-value, fixed when the call starts
    t: T.Type
    copy_in: ir.Declare  # tmp = target (inout), or tmp with its headers invalid (out)
    copy_out: ir.Assign  # target = tmp, among the call's copy-outs


@dataclass
class _OutArg:
    """An extern's out/inout argument, its l-value evaluated at its turn (`Lower.out_arg`);
    `Lower.put_out` stores the result into it."""

    target: ir.Expr  # the l-value (a slice's: the value sliced)
    t: T.Type  # the type the extern writes
    n: int  # len(em) once the l-value was evaluated
    node: Any
    hi: int = -1  # a slice target[hi:lo]
    lo: int = -1


@dataclass
class _Elem:
    """An element of an array of bits as an l-value: the array's bits (an IR l-value of type
    Bits(N*W)) and the index, a constant or a local holding the run-time index."""

    base: ir.Expr
    arr: T.ArrayT
    index: ir.Expr


@dataclass
class _Init:
    """A struct/header initializer not yet stored anywhere: (field name, V) pairs."""

    items: list[tuple[str, V]]


@dataclass
class _Table:
    decl: A.TableDecl
    scope: Scope
    p4name: str
    number: int


@dataclass
class _SubBlock:
    decl: Any
    p4name: str
    ctor_args: list[A.Arg]
    outer: Scope


@dataclass
class _ValueSet:
    number: int
    type: T.Type


@dataclass
class _Ctx:
    """Where `return` and `exit` go in the code being lowered."""

    label: str | None = None  # Labeled block a `return` leaves
    ret: ir.Var | None = None  # function result local
    ret_type: T.Type | None = None
    in_parser: bool = False
    loop: str | None = None  # label of the innermost `for` loop (where break/continue go)


class Lower(_Build):
    def __init__(self, compiled: CompiledProgram, prog: A.Program):
        super().__init__(prog, getattr(compiled, "allow_nonportable", False))
        self.cp = compiled
        self.n = itertools.count(1)
        self.types: dict[int, ir.Type] = {}
        self.type_order: list[ir.Type] = []
        self.stack_types: dict[tuple, Any] = {}  # stacks and tuples, by structure
        self.table_no = {t.p4name: i for i, t in enumerate(compiled.tables)}
        self.action_no = {a.name: i for i, a in enumerate(compiled.info.actions)}
        self.reg_no = {r.name: i for i, r in enumerate(compiled.info.registers)}
        self.counter_no = {r.name: i for i, r in enumerate(compiled.info.counters)}
        self.meter_no = {r.name: i for i, r in enumerate(compiled.info.meters)}
        self.dmeter_no = {r.name: i for i, r in enumerate(compiled.info.direct_meters)}
        self.vs_no = {r.name: i for i, r in enumerate(compiled.info.value_sets)}
        self.digest_no = {d.name: i for i, d in enumerate(compiled.info.digests)}
        self.field_lists: dict[int, list[list[str]]] = {
            k: [["sm" if p[0] == "s" else "meta", *p[1:]] for p in v]
            for k, v in _declared_field_lists(compiled).items()
        }
        self.synth_fl: dict[tuple, int] = {}
        # copy-outs of the calls being inlined, innermost last: `exit` runs them all first (P4-16
        # 6.8: copy-out happens up the whole call stack), whatever inlined the exit (an action a
        # table runs, a sub-control, a function)
        self.pending_outs: list[list[ir.Stmt]] = []
        self.n_copy = itertools.count(1)  # names of argument copies (their own: most are dropped)

    # ------------------------------------------------------------------ entry
    def lower(self) -> ir.Program:
        self.declare_globals()
        for d in self.toplevel_externs():  # one object each, shared by every block naming it
            self.instance(d, self.g, "")
        main = self._find_main()
        block_decls = [self._block_arg(a.value, main) for a in main.args]
        parser_decl = block_decls[0][0]
        hdr_t = self.resolve_type(parser_decl.params[1].type, self.g)
        meta_t = self.resolve_type(parser_decl.params[2].type, self.g)
        sm_t = self.resolve_type(parser_decl.params[3].type, self.g)
        roots = {"hdr": hdr_t, "meta": meta_t, "sm": sm_t}
        self.meta_type = meta_t
        for name in ("hdr", "meta"):
            self.irt(roots[name], parser_decl)
        roles = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")
        parser: ir.Parser | None = None
        controls: dict[str, list[ir.Stmt]] = {}
        for role, (decl, name, args) in zip(roles, block_decls, strict=False):
            binds: dict[str, V] = {}
            kinds = {
                "parser": [None, "hdr", "meta", "sm"],
                "verify_checksum": ["hdr", "meta"],
                "compute_checksum": ["hdr", "meta"],
                "ingress": ["hdr", "meta", "sm"],
                "egress": ["hdr", "meta", "sm"],
                "deparser": [None, "hdr"],
            }[role]
            for p, root in zip(decl.params, kinds, strict=False):
                if root is not None:
                    binds[p.name] = V(ir.Var(root, self.irt(roots[root], p)), roots[root])
            if role == "parser":
                parser = self.lower_parser(decl, name, args, binds)
            else:
                out: list[ir.Stmt] = []
                self.inline_control(decl, name, args, self.g, binds, out, _Ctx(), top=True)
                controls[role] = out
        assert parser is not None
        return ir.Program(
            headers_type=self.irt(hdr_t, parser_decl),
            meta_type=self.irt(meta_t, parser_decl),
            std_meta_type=self.irt(sm_t, parser_decl),  # type: ignore[arg-type]
            parser=parser,
            controls=controls,
            types=self.type_order,
            errors=list(self.errors),
            tables=[t.p4name for t in self.cp.tables],
            actions=[a.name for a in self.cp.info.actions],
            registers=[r.name for r in self.cp.info.registers],
            counters=[c.name for c in self.cp.info.counters],
            meters=[m.name for m in self.cp.info.meters],
            direct_meters=[m.name for m in self.cp.info.direct_meters],
            value_sets=[v.name for v in self.cp.info.value_sets],
            digests=[d.name for d in self.cp.info.digests],
            field_lists=self.field_lists,
        )

    # ------------------------------------------------------------------ helpers
    def uniq(self, name: str) -> str:
        return f"{self.safe(name)}_{next(self.n)}"

    def irt(self, t: T.Type, node: Any) -> ir.Type:
        """The IR type of a front-end type (cached: one IR type object per P4 type)."""
        if isinstance(t, T.BitT):  # any width (the C back end's wider than 64 bits: c_backend.wide)
            return ir.Bits(t.width, t.signed)
        if isinstance(t, T.BoolT):
            return ir.BOOL
        if isinstance(t, T.ArrayT):  # the elements' bits side by side, element 0 the top ones
            return ir.Bits(t.width)
        if isinstance(t, (T.ErrorT, T.MatchKindT)):
            return ir.Bits(32)
        if isinstance(t, T.EnumT):
            if t.underlying is not None:
                return self.irt(t.underlying, node)
            return ir.Bits(32)
        if isinstance(t, T.VarbitT):
            return ir.Varbit(t.max_width)
        got = self.types.get(id(t))
        if got is not None:
            return got
        if isinstance(t, T.StructLikeT):
            name = t.cls_name or self.uniq(t.type_name)
            if t.kind == "header":
                res: ir.Type = ir.Header(name, [])
            elif t.kind == "header_union":
                res = ir.Union_(name, [])
            else:
                res = ir.Struct(name, [])
            self.types[id(t)] = res
            res.loc = getattr(node, "loc", None)
            res.fields = [(n, self.irt(ft, node)) for n, ft in t.fields]  # type: ignore[attr-defined]
            self.type_order.append(res)
            return res
        if isinstance(t, T.TupleT):  # a struct with fields t0, t1, ... (indexed by constants only)
            els = tuple(self.irt(x, node) for x in t.elements)
            tkey = ("tuple", els)
            if tkey not in self.stack_types:
                tt = ir.Struct(f"TUP_{len(self.stack_types)}", [(f"t{i}", x) for i, x in enumerate(els)])
                self.stack_types[tkey] = tt  # type: ignore[assignment]
                self.type_order.append(tt)
            return self.stack_types[tkey]
        if isinstance(t, T.StackT):
            el = self.irt(t.element, node)
            key = ("stack", id(el), t.size)
            if key in self.stack_types:
                return self.stack_types[key]
            res = ir.Stack(el, t.size, f"STK_{el.name}_{t.size}")  # type: ignore[attr-defined, arg-type]
            self.stack_types[key] = res
            self.type_order.append(res)
            return res
        raise unsupported(f"values of type {t}", node)

    def const_ir(self, v: V, t: T.Type | None, node: Any) -> ir.Const:
        val = v.const
        tt = t if t is not None and not isinstance(t, T.IntT) else v.type
        if isinstance(tt, T.IntT):
            raise unsupported("an integer constant of unknown width here", node)
        if isinstance(tt, T.EnumT) and tt.underlying is not None and isinstance(val, int):
            tt = tt.underlying
        it = self.irt(tt, node)
        if isinstance(val, bool):
            return ir.Const(int(val), it)
        if isinstance(val, str):
            if isinstance(tt, T.ErrorT) or isinstance(v.type, T.ErrorT):
                return ir.Const(self.errors.index(val), ir.Bits(32))
            if isinstance(v.type, T.EnumT):
                return ir.Const(v.type.members.index(val.split(".", 1)[1]), ir.Bits(32))
            raise unsupported("string values outside log_msg", node)
        if isinstance(val, int) and isinstance(it, ir.Bits):
            return ir.Const(val & it.mask, it)
        raise unsupported(f"a constant of type {tt}", node)

    def to_ir(self, v: V, node: Any, want: T.Type | None = None) -> ir.Expr:
        if v.bind is not None:
            raise unsupported(f"{self.text(node)} as a value", node)
        if v.is_const:
            return self.const_ir(v, want, node)
        if isinstance(v.code, _Init):
            raise unsupported("a struct initializer here", node)
        assert isinstance(v.code, ir.Expr), v
        return v.code

    def rv(self, e: A.Expr, scope: Scope, em: Any, want: T.Type | None = None) -> ir.Expr:
        v = self.value(e, scope, em, want)
        if want is not None and not isinstance(want, (T.StructLikeT, T.StackT)):
            return self.coerce(v, want, e)
        return self.to_ir(v, e, want)

    def scratch(self) -> Any:
        return []  # IR of an expression evaluated for its type only (generic calls), dropped

    def emit(self, em: Any, s: ir.Stmt, node: Any) -> None:
        if not isinstance(em, list):
            raise unsupported("a statement inside a compile-time expression", node)
        em.append(s)

    def local(self, name: str, t: T.Type, em: Any, node: Any, init: ir.Expr | None = None) -> ir.Var:
        var = ir.Var(self.uniq("l_" + name), self.irt(t, node))
        self.emit(em, ir.Declare(var, init), node)
        return var

    # ------------------------------------------------------------------ expressions (IR-producing)
    def bound(self, b: Any, e: Any) -> V:
        if isinstance(b, Var):
            return V(b.code, b.type)
        if isinstance(b, Const):
            return V(repr(b.value), b.type, b.value)
        return V("None", T.VOID, None, bind=b)

    def coerce(self, v: V, t: T.Type, node: Any) -> ir.Expr:  # type: ignore[override]
        s = v.type
        if v.is_const:
            if isinstance(t, T.BitT) and isinstance(v.const, int) and not isinstance(v.const, bool):
                return ir.Const(fit(v.const, t) & t.mask, self.irt(t, node))
            return self.const_ir(v, t, node)
        if isinstance(s, T.IntT):
            raise unsupported("a run-time value of unknown width", node)
        return self.to_ir(v, node, t)

    def x_Member(self, e: A.Member, scope: Scope, em: Any, want: Any) -> V:
        if isinstance(e.expr, A.Call) and e.member in ("hit", "miss", "action_run"):
            tb = self.table_of_apply(e.expr, scope)
            if tb is not None:
                hit = self.local("hit", T.BOOL, em, e)
                act = self.local("action_run", T.BitT(32), em, e)
                self.apply_table(tb, scope, em, e, hit=hit, action_run=act)
                if e.member == "hit":
                    return V(hit, T.BOOL)
                if e.member == "miss":
                    return V(ir.Unary("lnot", hit, ir.BOOL), T.BOOL)
                return V(act, T.BitT(32), bind=("action_run", tb))
        base = self.expr(e.expr, scope, em)
        if base.bind is not None:
            raise unsupported(f"member {e.member} of {self.text(e.expr)}", e)
        bt = base.type
        if isinstance(bt, T.StructLikeT):
            ft = bt.field_type(e.member)
            if ft is None:
                raise unsupported(f"field {e.member}", e)
            if isinstance(base.code, _Init):
                return dict(base.code.items)[e.member]
            b = self.to_ir(base, e.expr)
            return V(ir.Member(b, e.member, self.irt(ft, e)), ft)
        if isinstance(bt, T.ArrayT) and e.member == "size":
            return V(repr(bt.size), T.BitT(32), bt.size)
        if isinstance(bt, T.StackT):
            b = self.to_ir(base, e.expr)
            if e.member == "size":
                return V(repr(bt.size), T.BitT(32), bt.size)
            nxt = ir.StackNext(b)
            last = ir.BinOp("sub", nxt, ir.Const(1, ir.Bits(32)), ir.Bits(32))
            if e.member == "lastIndex":
                return V(last, T.BitT(32))
            if e.member == "last":
                return V(ir.Index(b, last, self.irt(bt.element, e)), bt.element)
            if e.member == "next":
                return V(ir.Index(b, nxt, self.irt(bt.element, e)), bt.element)
        raise unsupported(f"member {e.member} of a {bt} value", e)

    def x_Index(self, e: A.Index, scope: Scope, em: Any, want: Any) -> V:
        base = self.value(e.expr, scope, em)
        if isinstance(base.type, T.TupleT):
            i = self.const_int(e.index, scope)
            et = base.type.elements[i]
            if isinstance(base.code, _Init):
                return base.code.items[i][1]
            if base.is_const:
                return V(repr(base.const[i]), et, base.const[i])
            return V(ir.Member(self.to_ir(base, e.expr), f"t{i}", self.irt(et, e)), et)
        if isinstance(base.type, T.ArrayT):
            idx = self.value(e.index, scope, em)
            el = _Elem(self.to_ir(base, e.expr), base.type, self.index_ir(idx, e.index))
            return V(self.elem_read(el, e), base.type.element)
        if not isinstance(base.type, T.StackT):
            raise unsupported(f"indexing a {base.type} value", e)
        idx = self.value(e.index, scope, em)
        b = self.to_ir(base, e.expr)
        et = base.type.element
        if idx.is_const:
            return V(ir.Index(b, ir.Const(int(idx.const), ir.Bits(32)), self.irt(et, e)), et)
        return V(ir.Index(b, self.to_ir(idx, e.index), self.irt(et, e)), et)

    def x_Slice(self, e: A.Slice, scope: Scope, em: Any, want: Any) -> V:
        base = self.value(e.expr, scope, em)
        hi = self.const_int(e.hi, scope)
        lo = self.const_int(e.lo, scope)
        w = hi - lo + 1
        if base.is_const:
            val = (int(base.const) >> lo) & ((1 << w) - 1)
            return V(repr(val), T.BitT(w), val)
        if not isinstance(base.type, T.BitT):
            raise unsupported(f"slicing a {base.type} value", e)
        t = T.BitT(w)
        return V(ir.Slice(self.to_ir(base, e.expr), hi, lo, self.irt(t, e)), t)

    def x_Unary(self, e: A.Unary, scope: Scope, em: Any, want: Any) -> V:
        v = self.value(e.expr, scope, em, want)
        if v.is_const or e.op == "+":
            return super().x_Unary(e, scope, em, want) if v.is_const else v
        t = v.type
        op = {"!": "lnot", "-": "neg", "~": "not"}[e.op]
        return V(ir.Unary(op, self.to_ir(v, e.expr), self.irt(t, e)), t)

    def x_Binary(self, e: A.Binary, scope: Scope, em: Any, want: Any) -> V:
        op = e.op
        if op in ("&&", "||"):
            lv = self.value(e.left, scope, em)
            # the right operand may not run: its hoisted statements must stay conditional
            rem: list[ir.Stmt] = []
            r = self.value(e.right, scope, rem if isinstance(em, list) else em)
            if lv.is_const and r.is_const and not rem:
                val = (lv.const and r.const) if op == "&&" else (lv.const or r.const)
                return V(repr(val), T.BOOL, bool(val))
            if lv.is_const:  # the left operand decides at compile time whether the right one runs
                if bool(lv.const) == (op == "||"):
                    return V(repr(lv.const), T.BOOL, bool(lv.const))
                if rem:  # (em is a list whenever rem is not empty)
                    em.extend(rem)
                return r
            ri = self.to_ir(r, e.right)
            if rem or _has_lookahead(ri):
                # the right operand has statements (table apply, call) or may fail (a lookahead
                # past the end of the packet): evaluate it only when needed
                res = self.local("sc", T.BOOL, em, e)
                em.append(ir.Assign(res, self.to_ir(lv, e.left)))
                cond: ir.Expr = res if op == "&&" else ir.Unary("lnot", res, ir.BOOL)
                em.append(ir.If(cond, [*rem, ir.Assign(res, ri)], []))
                return V(res, T.BOOL)
            return V(ir.BinOp("land" if op == "&&" else "lor", self.to_ir(lv, e.left), ri, ir.BOOL), T.BOOL)
        lv = self.value(e.left, scope, em)
        n = len(em) if isinstance(em, list) else 0
        r = self.value(e.right, scope, em, want=lv.type if not isinstance(lv.type, T.IntT) else None)
        lv = self.keep_v(lv, em, n)  # read before what the right operand's calls change
        if lv.is_const and r.is_const:
            return super().x_Binary(e, scope, [], want)  # folds with the front end's rules
        if op == "++":
            lt, rt = lv.type, r.type
            t = T.BitT(lt.width + rt.width, lt.signed)  # type: ignore[union-attr]
            return V(ir.Concat(self.to_ir(lv, e.left), self.to_ir(r, e.right), self.irt(t, e)), t)
        if op in ("<<", ">>"):
            lt = lv.type
            if isinstance(lt, T.IntT):
                raise unsupported("shifting a value of unknown width", e)
            amount = self.coerce(r, r.type if not isinstance(r.type, T.IntT) else T.BitT(32), e.right)
            cap = max(64, getattr(lt, "width", 64))  # amounts >= the width all give the same result
            if isinstance(amount, ir.Const) and amount.value >= cap:
                amount = ir.Const(cap, ir.Bits(32))
            return V(
                ir.BinOp("shl" if op == "<<" else "shr", self.to_ir(lv, e.left), amount, self.irt(lt, e)), lt
            )
        t = self.unify(lv, r, e, op)
        if isinstance(t, (T.StructLikeT, T.StackT)):
            a, b = (
                self.to_ir(lv, e.left) if not isinstance(lv.code, _Init) else None,
                self.to_ir(r, e.right) if not isinstance(r.code, _Init) else None,
            )
        else:
            a = self.coerce(lv, t, e.left)
            b = self.coerce(r, t, e.right)
        if op in ("==", "!=") and isinstance(t, (T.StructLikeT, T.StackT)):
            if isinstance(lv.code, _Init) or isinstance(r.code, _Init):
                a, b = self.materialize(lv, t, em, e.left), self.materialize(r, t, em, e.right)
            eq = self.composite_eq(a, b, t, e)
            return V(eq if op == "==" else ir.Unary("lnot", eq, ir.BOOL), T.BOOL)
        if op in ("==", "!=", "<", ">", "<=", ">="):
            irop = {"==": "eq", "!=": "ne", "<": "lt", ">": "gt", "<=": "le", ">=": "ge"}[op]
            return V(ir.BinOp(irop, a, b, ir.BOOL), T.BOOL)
        irop = {
            "+": "add",
            "-": "sub",
            "*": "mul",
            "/": "div",
            "%": "mod",
            "&": "and",
            "|": "or",
            "^": "xor",
            "|+|": "addsat",
            "|-|": "subsat",
        }.get(op)
        if irop is None:
            raise unsupported(f"operator {op}", e)
        return V(ir.BinOp(irop, a, b, self.irt(t, e)), t)

    def materialize(self, v: V, t: T.Type, em: Any, node: Any) -> ir.Expr:
        if isinstance(v.code, _Init):
            if not isinstance(em, list):
                raise unsupported("a struct initializer in a compile-time expression", node)
            tmp = self.local("init", t, em, node)
            self.init_into(tmp, t, v.code, em, node)  # type: ignore[arg-type]
            return tmp
        return self.to_ir(v, node)

    def composite_eq(self, a: ir.Expr, b: ir.Expr, t: T.Type, node: Any) -> ir.Expr:
        """== on headers, structs, unions and stacks (P4-16 8.9/8.12: headers are equal when both
        are invalid, or both valid with equal fields)."""
        terms: list[ir.Expr] = []
        if isinstance(t, T.StackT):
            et = self.irt(t.element, node)
            for i in range(t.size):
                idx = ir.Const(i, ir.Bits(32))
                terms.append(self.composite_eq(ir.Index(a, idx, et), ir.Index(b, idx, et), t.element, node))
        else:
            assert isinstance(t, T.StructLikeT)
            for n, ft in t.fields:
                it = self.irt(ft, node)
                fa, fb = ir.Member(a, n, it), ir.Member(b, n, it)
                if isinstance(ft, (T.StructLikeT, T.StackT)):
                    terms.append(self.composite_eq(fa, fb, ft, node))
                else:  # varbit fields too: equal values of equal lengths
                    terms.append(ir.BinOp("eq", fa, fb, ir.BOOL))
        eq: ir.Expr = ir.Const(1, ir.BOOL)
        for x in terms:
            eq = x if isinstance(eq, ir.Const) else ir.BinOp("land", eq, x, ir.BOOL)
        if isinstance(t, T.StructLikeT) and t.is_header:
            va, vb = ir.IsValid(a), ir.IsValid(b)
            both_invalid = ir.BinOp(
                "land", ir.Unary("lnot", va, ir.BOOL), ir.Unary("lnot", vb, ir.BOOL), ir.BOOL
            )
            valid_eq = ir.BinOp("land", ir.BinOp("land", va, vb, ir.BOOL), eq, ir.BOOL)
            return ir.BinOp("lor", both_invalid, valid_eq, ir.BOOL)
        return eq

    def x_Ternary(self, e: A.Ternary, scope: Scope, em: Any, want: Any) -> V:
        c = self.value(e.cond, scope, em)
        if c.is_const:
            return self.value(e.then if c.const else e.other, scope, em, want)
        ta: list[ir.Stmt] = []
        tb: list[ir.Stmt] = []
        a = self.value(e.then, scope, ta if isinstance(em, list) else em, want)
        b = self.value(e.other, scope, tb if isinstance(em, list) else em, want)
        t = self.unify(a, b, e, "?:")
        if isinstance(t, T.IntT) and isinstance(want, T.BitT):
            t = want
        if isinstance(t, T.IntT):
            raise unsupported("?: of unknown width", e)
        lazy = any(isinstance(v.code, ir.Expr) and _has_lookahead(v.code) for v in (a, b))
        if ta or tb or lazy or isinstance(t, (T.StructLikeT, T.StackT, T.TupleT)):
            # statements in a branch (table apply, call), a branch that may fail (a lookahead past
            # the end of the packet) or a composite result: an if into a local
            if not isinstance(em, list):
                raise unsupported("a table apply or call inside ?: in a compile-time expression", e)
            res = self.local("mux", t, em, e)
            self.store(res, t, a, ta, e.then)
            self.store(res, t, b, tb, e.other)
            em.append(ir.If(self.to_ir(c, e.cond), ta, tb))
            return V(res, t)
        return V(
            ir.Mux(
                self.to_ir(c, e.cond), self.coerce(a, t, e.then), self.coerce(b, t, e.other), self.irt(t, e)
            ),
            t,
        )

    def cast(self, v: V, t: T.Type, e: Any) -> V:  # type: ignore[override]
        if v.is_const or isinstance(v.code, str):
            return super().cast(v, t, e)
        s = v.type
        if isinstance(t, T.StructLikeT) and isinstance(v.code, _Init):
            return V(v.code, t)
        if T.same_type(s, t) or s is t:
            return V(v.code, t)
        if isinstance(t, T.EnumT) and t.underlying is not None:
            inner = self.cast(v, t.underlying, e)
            return V(inner.code, t)
        if isinstance(s, T.EnumT) and s.underlying is not None:
            s = s.underlying
        if isinstance(t, (T.BitT, T.BoolT)) and isinstance(s, (T.BitT, T.BoolT)):
            return V(ir.Cast(self.to_ir(v, e), self.irt(t, e)), t)
        raise unsupported(f"a cast from {s} to {t}", e)

    def x_ListExpr(self, e: A.ListExpr, scope: Scope, em: Any, want: Any) -> V:
        if isinstance(want, T.StructLikeT):
            return self.build_struct(want, [(None, x) for x in e.items], scope, em, e)
        if isinstance(want, T.TupleT) and len(want.elements) == len(e.items):
            vals = self.in_order(
                em,
                [
                    lambda x=x, et=et: self.value(x, scope, em, want=et)
                    for x, et in zip(e.items, want.elements, strict=True)
                ],
            )
            return V(_Init([(f"t{i}", v) for i, v in enumerate(vals)]), want)
        raise unsupported("a list expression here", e)

    def build_struct(self, t: T.StructLikeT, items: list, scope: Scope, em: Any, e: Any) -> V:  # type: ignore
        """A struct/header initializer: its items evaluated left to right as written (named ones
        too: `{b = f(), a = g()}` calls f first), each kept from what later items' calls change."""
        if any(n is not None for n, _ in items):
            order = [(n, x) for n, x in items]
        else:
            order = [(fname, x) for (fname, _), (_, x) in zip(t.fields, items, strict=False)]
        vals = self.in_order(
            em, [lambda n=n, x=x: self.value(x, scope, em, want=t.field_type(n)) for n, x in order]
        )
        got = {n: v for (n, _), v in zip(order, vals, strict=True)}
        return V(_Init([(fname, got[fname]) for fname, _ in t.fields]), t)

    def x_Call(self, e: A.Call, scope: Scope, em: Any, want: Any) -> V:
        return self.call(e, scope, em, want)

    # ------------------------------------------------------------------ arrays of bits
    # An array bit<W>[N] (also int<W>, bool, serializable enums) is a Bits(N*W) value, element 0
    # in the top W bits, so that a header's array field is extracted and emitted element 0 first
    # and copies and == are those of the bits. A constant index is a slice; a run-time one shifts
    # by (N-1-i)*W. Out of range (p4-spec PR 1360 extends the header stack rules of P4-16 v1.2.4
    # section 8.18 to arrays): a read gives an unspecified value, here 0, and a write changes
    # nothing.
    def index_ir(self, idx: V, node: Any) -> ir.Expr:
        if idx.is_const:
            return ir.Const(int(idx.const), ir.Bits(32))
        x = self.to_ir(idx, node)
        t = x.type
        assert isinstance(t, ir.Bits)
        if t.signed:  # a negative index is out of range: as unsigned bits it is large
            x = ir.Cast(x, ir.Bits(t.width))
        return x

    def _elem_parts(self, el: _Elem) -> tuple[ir.Expr | None, ir.Expr]:
        """(the guard `index < N`, None when always true, and the shift (N-1-i)*W as bit<32>)."""
        n, w, i = el.arr.size, el.arr.elem_width, el.index
        if isinstance(i, ir.Const):
            return None, ir.Const((n - 1 - i.value) * w, ir.Bits(32))
        it = i.type
        assert isinstance(it, ir.Bits)
        guard = None if n > it.mask else ir.BinOp("lt", i, ir.Const(n, it), ir.BOOL)
        i32 = i if it.width == 32 else ir.Cast(i, ir.Bits(32))
        pos = ir.BinOp("sub", ir.Const(n - 1, ir.Bits(32)), i32, ir.Bits(32))
        return guard, ir.BinOp("mul", pos, ir.Const(w, ir.Bits(32)), ir.Bits(32))

    def _from_bits(self, x: ir.Expr, et: T.Type, node: Any) -> ir.Expr:
        t = self.irt(et, node)
        return x if t == x.type else ir.Cast(x, t)

    def _to_bits(self, x: ir.Expr, w: int, width: int) -> ir.Expr:
        """An element value as unsigned bits of `width` (zero-extended)."""
        t = x.type
        if isinstance(t, ir.Bool) or (isinstance(t, ir.Bits) and t.signed):
            x = ir.Cast(x, ir.Bits(w))
        return x if width == w else ir.Cast(x, ir.Bits(width))

    def elem_read(self, el: _Elem, node: Any) -> ir.Expr:
        n, w = el.arr.size, el.arr.elem_width
        et = el.arr.element
        if isinstance(el.index, ir.Const):
            if not 0 <= el.index.value < n:
                raise P4Error(f"index {el.index.value} out of bounds for {el.arr}")
            lo = (n - 1 - el.index.value) * w
            return self._from_bits(ir.Slice(el.base, lo + w - 1, lo, ir.Bits(w)), et, node)
        guard, sh = self._elem_parts(el)
        bits: ir.Expr = ir.Cast(ir.BinOp("shr", el.base, sh, ir.Bits(n * w)), ir.Bits(w))
        if guard is not None:
            bits = ir.Mux(guard, bits, ir.Const(0, ir.Bits(w)), ir.Bits(w))
        return self._from_bits(bits, et, node)

    def elem_write(self, el: _Elem, val: ir.Expr, em: list, node: Any) -> None:
        n, w = el.arr.size, el.arr.elem_width
        if isinstance(el.index, ir.Const):
            lo = (n - 1 - el.index.value) * w
            em.append(ir.AssignSlice(el.base, lo + w - 1, lo, self._to_bits(val, w, w)))
            return
        guard, sh = self._elem_parts(el)
        bt = ir.Bits(n * w)
        hole = ir.Unary("not", ir.BinOp("shl", ir.Const((1 << w) - 1, bt), sh, bt), bt)
        put = ir.BinOp("shl", self._to_bits(val, w, n * w), sh, bt)
        st: ir.Stmt = ir.Assign(el.base, ir.BinOp("or", ir.BinOp("and", el.base, hole, bt), put, bt))
        em.append(st if guard is None else ir.If(guard, [st], []))

    def elem_target(self, e: A.Expr, scope: Scope, em: list) -> _Elem | None:
        """`a[i]` of an array as an l-value (its index read now), else None."""
        if not isinstance(e, A.Index):
            return None
        bt = self.value(e.expr, scope, [], None).type if isinstance(e.expr, (A.NameExpr, A.Member, A.Index)) \
            else None
        if not isinstance(bt, T.ArrayT):
            return None
        base, _ = self.lvalue_ir(e.expr, scope, em)
        idx = self.index_ir(self.value(e.index, scope, em), e.index)
        if not isinstance(idx, ir.Const):
            it = idx.type
            assert isinstance(it, ir.Bits)
            idx = self.local("idx", T.BitT(it.width), em, e, init=idx)
        return _Elem(self.pin_indices(base, em, e), bt, idx)

    # ------------------------------------------------------------------ assignment
    def lvalue_ir(self, e: A.Expr, scope: Scope, em: Any) -> tuple[ir.Expr, T.Type]:
        v = self.value(e, scope, em)
        return self.to_ir(v, e), v.type

    def assign(self, lhs: A.Expr, rhs: V, scope: Scope, em: list, node: Any) -> None:
        if isinstance(lhs, A.Slice):
            base, hi, lo = self.slice_target(lhs, scope, em)
            em.append(ir.AssignSlice(base, hi, lo, self.coerce(rhs, T.BitT(hi - lo + 1), node)))
            return
        el = self.elem_target(lhs, scope, em)
        if el is not None:
            self.elem_write(el, self.coerce(rhs, el.arr.element, node), em, node)
            return
        target, t = self.lvalue_ir(lhs, scope, em)
        self.store(target, t, rhs, em, node)

    def slice_target(self, lhs: A.Slice, scope: Scope, em: list) -> tuple[ir.Expr, int, int]:
        """The bit<> l-value under a (nested) slice l-value and the absolute bits it denotes:
        `n[7:4][2:1]` is `n[6:5]`."""
        hi, lo = self.const_int(lhs.hi, scope), self.const_int(lhs.lo, scope)
        e = lhs.expr
        while isinstance(e, A.Slice):
            inner_lo = self.const_int(e.lo, scope)
            hi, lo = hi + inner_lo, lo + inner_lo
            e = e.expr
        el = self.elem_target(e, scope, em)
        if el is not None:  # a slice of an array element: a slice of the array's bits
            if not isinstance(el.index, ir.Const):
                raise P4Error(f"a slice of an array element with a run-time index as an l-value "
                              f"({self.text(lhs)}) is not supported", *_at(lhs))
            elo = (el.arr.size - 1 - el.index.value) * el.arr.elem_width
            return el.base, hi + elo, lo + elo
        base, _ = self.lvalue_ir(e, scope, em)
        return base, hi, lo

    def pin_indices(self, e: ir.Expr, pre: list, node: Any) -> ir.Expr:
        """`e` with each run-time stack index read into a local now (declared in `pre`), so that
        the l-value keeps denoting the same element whatever runs before it is written."""
        if isinstance(e, ir.Member):
            b = self.pin_indices(e.base, pre, node)
            return e if b is e.base else ir.Member(b, e.field, e.type)
        if isinstance(e, ir.Index):
            b = self.pin_indices(e.base, pre, node)
            idx = e.index
            if not isinstance(idx, ir.Const):
                it = idx.type
                assert isinstance(it, ir.Bits)
                idx = self.local("idx", T.BitT(it.width, it.signed), pre, node, init=idx)
            if b is e.base and idx is e.index:
                return e
            return ir.Index(b, idx, e.type)
        return e

    def pin_before(self, e: ir.Expr, em: list, n: int, node: Any) -> ir.Expr:
        """`e` as an l-value evaluated before em[n:] ran: when those statements (side effects of a
        later expression) may change a run-time stack index of it, its run-time indices are read
        into locals before them."""
        idx: list[ir.Expr] = []
        x = e
        while isinstance(x, (ir.Member, ir.Index)):
            if isinstance(x, ir.Index) and not isinstance(x.index, ir.Const):
                idx.append(x.index)
            x = x.base
        if not any(_touches(em[n:], i) for i in idx):
            return e
        pre: list[ir.Stmt] = []
        e = self.pin_indices(e, pre, node)
        em[n:n] = pre
        return e

    def keep(self, x: ir.Expr, em: Any, n: int) -> ir.Expr:
        """The value of `x` as evaluated before em[n:] ran (P4-16 8.x: operands and arguments are
        evaluated left to right): when what a later operand put there (a call, a table apply)
        may change storage `x` reads, `x` is read into a local at em[n] first."""
        if not isinstance(em, list) or len(em) == n or not _touches(em[n:], x):
            return x
        tmp = ir.Var(self.uniq("l_val"), x.type)
        em.insert(n, ir.Declare(tmp, x))
        return tmp

    def keep_v(self, v: V, em: Any, n: int) -> V:
        """`keep` for a checked value (a struct initializer: each of its items)."""
        if v.is_const or v.bind is not None or not isinstance(em, list) or len(em) == n:
            return v
        if isinstance(v.code, _Init):
            return V(_Init([(f, self.keep_v(x, em, n)) for f, x in v.code.items]), v.type)
        if isinstance(v.code, ir.Expr):
            return V(self.keep(v.code, em, n), v.type)
        return v

    def in_order(self, em: Any, evals: list[Any]) -> list[Any]:
        """Evaluate `evals` (functions returning an ir.Expr, a V or a field list) one after the
        other, left to right; an earlier result is then kept (`keep`) from what the later ones
        emitted, so that each is the value at its own turn."""
        out: list[Any] = []
        ends: list[int] = []
        for f in evals:
            out.append(f())
            ends.append(len(em) if isinstance(em, list) else 0)
        for k in range(len(out) - 2, -1, -1):  # the last emitted first: insertions keep ends[k]
            x, n = out[k], ends[k]
            if isinstance(x, V):
                out[k] = self.keep_v(x, em, n)
            elif isinstance(x, ir.Expr):
                out[k] = self.keep(x, em, n)
            elif isinstance(x, list):  # a field list
                for it in x:
                    it.expr = self.keep(it.expr, em, n)
                    if it.valid is not None:
                        it.valid = self.keep(it.valid, em, n)
        return out

    def table_of_apply(self, call: A.Call, scope: Scope) -> Any:
        if (
            isinstance(call.callee, A.Member)
            and call.callee.member == "apply"
            and isinstance(call.callee.expr, A.NameExpr)
        ):
            b = scope.lookup(call.callee.expr.name)
            if isinstance(b, _Table):
                return b
        return None

    def store(self, target: ir.Expr, t: T.Type, rhs: V, em: list, node: Any) -> None:
        if isinstance(t, T.VarbitT):
            em.append(ir.Assign(target, self.to_ir(rhs, node)))
            return
        if isinstance(t, (T.StructLikeT, T.StackT, T.TupleT)):
            if isinstance(rhs.code, _Init):
                assert isinstance(t, (T.StructLikeT, T.TupleT))
                tmp = self.local("init", t, em, node)
                self.init_into(tmp, t, rhs.code, em, node)
                em.append(ir.Assign(target, tmp))
            else:
                em.append(ir.Assign(target, self.to_ir(rhs, node)))
            if isinstance(target, ir.Member) and isinstance(target.base.type, ir.Union_):
                # P4-16 8.19: `u.h = e` is `u.h.setValid(); u.h = e` when e is valid, so the
                # union's other members become invalid (bmv2's assign_header does the same);
                # an invalid e leaves u.h invalid (bmv2: the others as they were)
                em.append(ir.If(ir.IsValid(target), [ir.SetValid(target, True, target.base)], []))
            return
        em.append(ir.Assign(target, self.coerce(rhs, t, node)))

    def init_into(self, target: ir.Expr, t: Any, init: _Init, em: list, node: Any) -> None:
        for i, (fname, v) in enumerate(init.items):
            ft = t.elements[i] if isinstance(t, T.TupleT) else t.field_type(fname)
            assert ft is not None
            self.store(ir.Member(target, fname, self.irt(ft, node)), ft, v, em, node)
        if isinstance(t, T.StructLikeT) and t.is_header:
            em.append(ir.SetValid(target, True))

    # ------------------------------------------------------------------ statements
    def stmts(self, ss: list[A.Stmt], scope: Scope, em: list, fc: _Ctx) -> None:
        for s in ss:
            self.stmt(s, scope, em, fc)

    def stmt(self, s: A.Stmt, scope: Scope, em: list, fc: _Ctx) -> None:
        n = len(em)
        self._stmt(s, scope, em, fc)
        loc = getattr(s, "loc", None)
        for x in em[n:]:  # where a back end that refuses something points
            if x.loc is None:
                x.loc = loc

    def _stmt(self, s: A.Stmt, scope: Scope, em: list, fc: _Ctx) -> None:
        if isinstance(s, A.Assign):
            # P4-16 12.1: the left-hand side is evaluated to an l-value first, then the right-hand
            # side, then the value is copied into the l-value
            if isinstance(s.lhs, A.Slice):
                base, hi, lo = self.slice_target(s.lhs, scope, em)
                n = len(em)
                rhs = self.value(s.rhs, scope, em)
                base = self.pin_before(base, em, n, s)
                em.append(ir.AssignSlice(base, hi, lo, self.coerce(rhs, T.BitT(hi - lo + 1), s)))
            elif (el := self.elem_target(s.lhs, scope, em)) is not None:
                n = len(em)
                rhs = self.value(s.rhs, scope, em, want=el.arr.element)
                el.base = self.pin_before(el.base, em, n, s)
                self.elem_write(el, self.coerce(rhs, el.arr.element, s), em, s)
            else:
                target, tt = self.lvalue_ir(s.lhs, scope, em)
                n = len(em)
                rhs = self.value(s.rhs, scope, em, want=tt)
                self.store(self.pin_before(target, em, n, s), tt, rhs, em, s)
        elif isinstance(s, A.CallStmt):
            v = self.expr(s.call, scope, em)
            if v.bind is not None and isinstance(v.bind, tuple) and v.bind[0] == "apply":
                self.apply_table(v.bind[1], scope, em, s)
        elif isinstance(s, A.Block):
            self.stmts(s.stmts, Scope(scope), em, fc)
        elif isinstance(s, A.If):
            c = self.value(s.cond, scope, em)
            then: list[ir.Stmt] = []
            other: list[ir.Stmt] = []
            if c.is_const:
                self.stmt(s.then if c.const else (s.other or A.EmptyStmt()), Scope(scope), em, fc)
                return
            self.stmt(s.then, Scope(scope), then, fc)
            if s.other is not None:
                self.stmt(s.other, Scope(scope), other, fc)
            em.append(ir.If(self.to_ir(c, s.cond), then, other))
        elif isinstance(s, A.Exit):
            for outs in reversed(self.pending_outs):
                em.extend(outs)
            em.append(ir.Exit())
        elif isinstance(s, A.Return):
            if s.value is not None:
                assert fc.ret is not None and fc.ret_type is not None
                v = self.value(s.value, scope, em, want=fc.ret_type)
                self.store(fc.ret, fc.ret_type, v, em, s)
            if fc.label is None:
                raise unsupported("return here", s)
            em.append(ir.Leave(fc.label))
        elif isinstance(s, A.EmptyStmt):
            pass
        elif isinstance(s, A.VarDecl):
            t = self.resolve_type(s.type, scope)
            var = self.local(s.name, t, em, s)
            if s.init is not None:
                v = self.value(s.init, scope, em, want=t)
                self.store(var, t, v, em, s)
            scope.add(s.name, Var(var, t))  # type: ignore[arg-type]
        elif isinstance(s, A.ConstDecl):
            t = self.resolve_type(s.type, scope)
            v = self.value(s.value, scope, em, want=t)
            if not v.is_const:
                raise unsupported(f"a non-constant const {s.name}", s)
            scope.add(s.name, Const(self.coerce_const(v, t, s), t))
        elif isinstance(s, A.Switch):
            self.switch(s, scope, em, fc)
        elif isinstance(s, A.For):
            self.for_loop(s, scope, em, fc)
        elif isinstance(s, A.ForIn):
            self.for_in_loop(s, scope, em, fc)
        elif isinstance(s, (A.Break, A.Continue)):
            if fc.loop is None:  # the type check refuses it first
                raise unsupported("break or continue outside a loop", s)
            em.append(ir.Break(fc.loop) if isinstance(s, A.Break) else ir.Continue(fc.loop))
        else:
            raise unsupported(f"the statement {type(s).__name__}", s)

    def for_loop(self, s: A.For, scope: Scope, em: list, fc: _Ctx) -> None:
        """`for (init; cond; update) body` (P4-16 v1.2.5): init once, then a Loop whose body
        tests cond first (with whatever its evaluation runs: a table apply, a call)."""
        inner = Scope(scope)
        self.stmts(s.init, inner, em, fc)
        label = self.uniq("L_loop")
        body: list[ir.Stmt] = []
        c = self.value(s.cond, inner, body)
        if c.is_const and not c.const:  # never runs: only the condition's evaluation does
            em.extend(body)
            return
        if not c.is_const:
            test = ir.If(ir.Unary("lnot", self.to_ir(c, s.cond), ir.BOOL), [ir.Break(label)], [])
            test.loc = s.cond.loc
            body.append(test)
        self.stmt(s.body, Scope(inner), body, replace(fc, loop=label))
        update: list[ir.Stmt] = []
        self.stmts(s.update, inner, update, fc)
        em.append(ir.Loop(label, body, update))

    def for_in_loop(self, s: A.ForIn, scope: Scope, em: list, fc: _Ctx) -> None:
        """`for (T v in collection) body`: the collection (a range's bounds, a list's elements, a
        header stack's path) is evaluated once, before the loop, in the scope around it; then a
        hidden counter walks it and `v` gets each value at the start of an iteration (so the
        body assigning `v` does not change the iteration). A range `lo .. hi` includes both
        ends and is empty when lo > hi; the counter never steps past hi (no wrap-around at the
        type's largest value)."""
        t = self.resolve_type(s.type, scope)
        coll = s.collection
        label = self.uniq("L_loop")
        u32 = ir.Bits(32)
        if isinstance(coll, A.RangeExpr):
            it = self.irt(t, s)
            lo = self.pinned(self.rv(coll.lo, scope, em, t), t, "lo", em, s)
            hi = self.pinned(self.rv(coll.hi, scope, em, t), t, "hi", em, s)
            var = self.local(s.name, t, em, s)
            k = self.local("k", t, em, s, init=lo)
            more = self.local("more", T.BOOL, em, s, init=ir.BinOp("le", lo, hi, ir.BOOL))
            head: list[ir.Stmt] = [
                ir.If(ir.Unary("lnot", more, ir.BOOL), [ir.Break(label)], []),
                ir.Assign(var, k),
                ir.Assign(more, ir.BinOp("ne", k, hi, ir.BOOL)),
            ]
            update = [ir.Assign(k, ir.BinOp("add", k, ir.Const(1, it), it))]
        else:
            items = self.loop_items(coll, t, scope, em, s)
            n = len(items) if isinstance(items, list) else items.type.size  # type: ignore[attr-defined]
            if n == 0:
                return  # an empty list: the body never runs
            var = self.local(s.name, t, em, s)
            k = self.local("k", T.BitT(32), em, s, init=ir.Const(0, u32))
            head = [ir.If(ir.BinOp("ge", k, ir.Const(n, u32), ir.BOOL), [ir.Break(label)], [])]
            if not isinstance(items, list):  # a header stack: its element k (always in range)
                et = items.type.element  # type: ignore[attr-defined]
                self.store(var, t, V(ir.Index(items, k, et), t), head, s)
            elif len(items) == 1:
                self.store(var, t, V(items[0], t), head, s)
            else:
                cases = []
                for i, x in enumerate(items):
                    one: list[ir.Stmt] = []
                    self.store(var, t, V(x, t), one, s)
                    cases.append(ir.SwitchCase([i], one))
                head.append(ir.Switch(k, cases))
            update = [ir.Assign(k, ir.BinOp("add", k, ir.Const(1, u32), u32))]
        for x in head:
            x.loc = s.loc
        inner = Scope(scope)
        inner.add(s.name, Var(var, t))  # type: ignore[arg-type]
        self.stmt(s.body, Scope(inner), head, replace(fc, loop=label))
        em.append(ir.Loop(label, head, update))

    def pinned(self, x: ir.Expr, t: T.Type, name: str, em: list, node: Any) -> ir.Expr:
        """`x` itself when it is a constant, else a local holding its value now."""
        return x if isinstance(x, ir.Const) else self.local(name, t, em, node, init=x)

    def loop_items(
        self, coll: A.Expr, t: T.Type, scope: Scope, em: list, s: A.ForIn
    ) -> list[ir.Expr] | ir.Expr:
        """What a for-in loop over a list expression, a tuple or a header stack visits: the
        elements, each an expression that stays valid through the loop (a list's are evaluated
        now, in order, into locals; constants stay constants), or for a stack the stack itself.
        A stack's or tuple's elements are read at their iteration (its path, stack indexes
        included, is fixed now)."""
        if isinstance(coll, A.ListExpr):
            out: list[ir.Expr] = []
            for x in coll.items:
                v = self.value(x, scope, em, want=t)
                if v.is_const and not isinstance(t, (T.StructLikeT, T.StackT)):
                    out.append(self.coerce(v, t, x))
                    continue
                tmp = self.local("el", t, em, x)
                self.store(tmp, t, v, em, x)
                out.append(tmp)
            return out
        v = self.value(coll, scope, em)
        base = self.pin_indices(self.to_ir(v, coll), em, coll)
        if isinstance(v.type, T.StackT):
            return base
        if isinstance(v.type, T.TupleT):
            return [ir.Member(base, f"t{i}", self.irt(x, coll)) for i, x in enumerate(v.type.elements)]
        raise unsupported(f"a for-in loop over a {v.type} value", coll)

    def switch(self, s: A.Switch, scope: Scope, em: list, fc: _Ctx) -> None:
        v = self.expr(s.expr, scope, em)
        on_action = isinstance(v.bind, tuple) and v.bind[0] == "action_run"
        key = v.code if on_action else self.to_ir(v, s.expr)
        assert isinstance(key, ir.Expr)
        cases: list[ir.SwitchCase] = []
        pending: list[int] = []
        for case in s.cases:
            if isinstance(case.label, A.DefaultExpr):
                body: list[ir.Stmt] = []
                if case.body is not None:
                    self.stmt(case.body, Scope(scope), body, fc)
                cases.append(ir.SwitchCase([], body))
                pending = []
                continue
            if on_action:
                b = scope.lookup(case.label.name)  # type: ignore[union-attr]
                assert isinstance(b, ActionBind)
                if b.p4name not in self.action_no:
                    raise unsupported(f"action {b.p4name} in this switch", case.label)
                pending.append(self.action_no[b.p4name])
            else:
                lv = self.value(case.label, scope, [], want=v.type)
                c = self.coerce(lv, v.type, case.label)
                assert isinstance(c, ir.Const)
                pending.append(c.value)
            if case.body is None:
                continue
            body = []
            self.stmt(case.body, Scope(scope), body, fc)
            cases.append(ir.SwitchCase(pending, body))
            pending = []
        em.append(ir.Switch(key, cases))

    # ------------------------------------------------------------------ blocks
    def bind_ctor(self, decl: Any, p4name: str, ctor_args: list[A.Arg], outer: Scope, scope: Scope) -> None:
        if not decl.ctor_params:
            return
        args = ordered_args(
            A.Call(A.NameExpr(decl.name), [], ctor_args, loc=decl.loc), decl.ctor_params, decl.name
        )
        for p, a in zip(decl.ctor_params, args, strict=False):
            if a is None:
                continue
            pt = self.resolve_type(p.type, scope)
            if isinstance(a, A.Construct):
                bt = self.resolve_type(a.type, outer)
                if isinstance(bt, T.BlockT):
                    scope.add(p.name, _SubBlock(bt.decl, f"{p4name}.{p.name}", a.args, outer))
                    continue
            if isinstance(pt, T.ExternT):  # an extern instance: the argument names it
                scope.add(p.name, self.expr(a, outer, []).bind)
                continue
            v = self.value(a, outer, [], want=pt)
            scope.add(p.name, Const(self.coerce_const(v, pt, a), pt))

    def block_locals(self, decl: Any, p4name: str, scope: Scope, em: list, fc: _Ctx) -> None:
        for loc in decl.locals:
            if isinstance(loc, (A.ConstDecl, A.VarDecl)):
                self.stmt(loc, scope, em, fc)
            elif isinstance(loc, A.Instance):
                self.instance(loc, scope, p4name)
            elif isinstance(loc, A.ActionDecl):
                scope.add(
                    loc.name, ActionBind(loc, "", self.p4_name(loc.name, loc.annotations, p4name), scope)
                )
            elif isinstance(loc, A.TableDecl):
                tn = self.p4_name(loc.name, loc.annotations, p4name)
                scope.add(loc.name, _Table(loc, scope, tn, self.table_no[tn]))
            elif isinstance(loc, A.ValueSetDecl):
                vn = self.p4_name(loc.name, loc.annotations, p4name)
                scope.add(loc.name, _ValueSet(self.vs_no[vn], self.resolve_type(loc.type, scope)))
            else:
                raise unsupported(f"the declaration {type(loc).__name__}", loc)

    def instance(self, d: A.Instance, scope: Scope, prefix: str) -> None:
        t = self.resolve_type(d.type, scope)
        p4name = self.p4_name(d.name, d.annotations, prefix)
        if isinstance(t, T.BlockT):
            scope.add(d.name, _SubBlock(t.decl, p4name, d.args, scope))
            return
        assert isinstance(t, T.ExternT)
        scope.add(d.name, ExternInst(p4name, t, p4name, d))

    def inline_control(
        self,
        decl: Any,
        p4name: str,
        ctor_args: list[A.Arg],
        outer: Scope,
        binds: dict[str, V],
        em: list,
        fc: _Ctx,
        top: bool = False,
    ) -> None:
        if not isinstance(decl, A.ControlDecl):
            raise unsupported(f"applying {getattr(decl, 'name', '?')} here", decl)
        scope = Scope(self.g, kind="block")
        scope.instance_name = p4name
        self.bind_ctor(decl, p4name, ctor_args, outer, scope)
        for p in decl.params:
            if isinstance(binds.get(p.name), ExternInst):
                scope.add(p.name, binds[p.name])
            elif p.name in binds:
                b = binds[p.name]
                scope.add(p.name, Var(b.code, b.type, True, p.direction))
            else:
                scope.add(p.name, Var(None, self.resolve_type(p.type, scope), False, p.direction))  # type: ignore
        label = self.uniq("L_ctl")
        body: list[ir.Stmt] = []
        inner = _Ctx(label=label)
        self.block_locals(decl, p4name, scope, body, inner)
        self.stmts(decl.apply.stmts, scope, body, inner)
        em.append(ir.Labeled(label, body))

    def lower_parser(
        self,
        decl: A.ParserDecl,
        p4name: str,
        ctor_args: list[A.Arg],
        binds: dict[str, V],
        outer: Scope | None = None,
    ) -> ir.Parser:
        scope = Scope(self.g, kind="block")
        scope.instance_name = p4name
        self.bind_ctor(decl, p4name, ctor_args, outer or self.g, scope)
        for p in decl.params:
            t = self.resolve_type(p.type, scope)
            if isinstance(binds.get(p.name), ExternInst):
                scope.add(p.name, binds[p.name])
            elif p.name in binds:
                scope.add(p.name, Var(binds[p.name].code, t, True, p.direction))
            else:
                scope.add(p.name, Var("packet", t, False, p.direction))  # type: ignore[arg-type]
        fc = _Ctx(in_parser=True)
        init: list[ir.Stmt] = []
        self.block_locals(decl, p4name, scope, init, fc)
        names = {s.name for s in decl.states}
        states = []
        for s in decl.states:
            body: list[ir.Stmt] = list(init) if s.name == "start" else []
            st_scope = Scope(scope, kind="state")
            self.stmts(s.stmts, st_scope, body, fc)
            st = ir.ParserState(s.name, body, self.transition(s, st_scope, body, names))
            st.loc = s.loc  # type: ignore[attr-defined]
            states.append(st)
        return ir.Parser("start", states)

    def transition(self, s: A.ParserState, scope: Scope, em: list, names: set[str]) -> str | ir.Select:
        tr = s.transition
        if tr is None:
            return "reject"
        if isinstance(tr, str):
            return tr
        keys = self.in_order(em, [lambda x=x: self.value(x, scope, em) for x in tr.exprs])
        kir = [self.to_ir(k, x) for k, x in zip(keys, tr.exprs, strict=False)]
        cases = []
        for case in tr.cases:
            ks = case.keyset.items if isinstance(case.keyset, A.TupleKeyset) else [case.keyset]
            if len(ks) == 1 and len(keys) > 1 and isinstance(ks[0], (A.DefaultExpr, A.DontCare)):
                ks = ks * len(keys)
            if (
                len(ks) == 1
                and isinstance(ks[0], A.NameExpr)
                and isinstance(scope.lookup(ks[0].name), _ValueSet)
            ):
                cases.append(ir.SelectCase([], case.state, scope.lookup(ks[0].name).number))
                continue
            sets = [self.keyset(x, k.type, scope) for x, k in zip(ks, keys, strict=False)]
            cases.append(ir.SelectCase(sets, case.state))
        return ir.Select(kir, cases)

    def keyset(self, x: A.Expr, kt: T.Type, scope: Scope) -> ir.Keyset:
        if isinstance(x, (A.DefaultExpr, A.DontCare)):
            return ir.KsDefault()

        def c(e: A.Expr) -> int:
            v = self.coerce(self.value(e, scope, [], want=kt), kt, e)
            if not isinstance(v, ir.Const):
                raise unsupported("a non-constant select case", e)
            return v.value

        if isinstance(x, A.Mask):
            m = c(x.mask)
            return ir.KsMask(c(x.value) & m, m)
        if isinstance(x, A.RangeExpr):
            return ir.KsRange(c(x.lo), c(x.hi))
        if isinstance(x, A.NameExpr) and isinstance(scope.lookup(x.name), _ValueSet):
            return ir.KsValueSet(scope.lookup(x.name).number)
        return ir.KsValue(c(x))

    # ------------------------------------------------------------------ tables
    def apply_table(
        self,
        tb: Any,
        scope: Scope,
        em: list,
        node: Any,
        hit: ir.Var | None = None,
        action_run: ir.Var | None = None,
    ) -> None:
        assert isinstance(tb, _Table), tb
        d = tb.decl
        spec = self.cp.tables[tb.number]
        key_prop = d.prop("key")
        key_list = key_prop.value if key_prop is not None else []

        def key_value(k: Any) -> Any:
            v = self.value(k.expr, tb.scope, em)
            if k.match_kind == "selector":  # hashed, in key order, as bmv2's selector input
                items: list[ir.FieldListItem] = []
                self.flatten_value(self.to_ir(v, k.expr), v.type, None, items, k.expr)
                return items
            return self.to_ir(v, k.expr)

        vals = self.in_order(em, [lambda k=k: key_value(k) for k in key_list])
        keys = [x for k, x in zip(key_list, vals, strict=True) if k.match_kind != "selector"]
        selector: list[ir.FieldListItem] = [
            it for k, x in zip(key_list, vals, strict=True) if k.match_kind == "selector" for it in x
        ]
        refs = {}
        act_prop = d.prop("actions")
        for r in act_prop.value if act_prop is not None else []:
            b = tb.scope.lookup(r.name)
            refs[b.p4name] = (b, r)
        cases = []
        for aname in spec.action_fns:
            if aname in refs:
                b, r = refs[aname]
            else:
                b, r = tb.scope.lookup("NoAction"), None
            cparams = [p for p in b.decl.params if p.direction == ""]
            dparams = [p for p in b.decl.params if p.direction != ""]
            pvars = []
            args: dict[str, Any] = {}
            body: list[ir.Stmt] = []
            for p in cparams:
                pt = self.resolve_type(p.type, b.scope)
                var = ir.Var(self.uniq("a_" + p.name), self.irt(pt, p))
                pvars.append(var)
                args[p.name] = V(var, pt)
            if dparams:
                for p, a in zip(dparams, r.args if r is not None else [], strict=False):
                    args[p.name] = a.value
            self.inline_action(b, args, tb.scope, body, _Ctx(), node)
            cases.append(ir.ActionCase(self.action_no[aname], pvars, body))
        algo = ALGORITHMS[spec.selector_algo] if spec.selector_algo is not None else -1
        em.append(ir.TableApply(tb.number, keys, cases, hit, action_run, spec.implementation is not None,
                                algo, selector))

    # ------------------------------------------------------------------ calls
    def call(self, e: A.Call, scope: Scope, em: Any, want: Any) -> V:
        callee = e.callee
        if isinstance(callee, A.Member):
            tb = self.table_of_apply(e, scope)
            if tb is not None:
                return V("None", T.VOID, bind=("apply", tb))
            method = callee.member
            if method == "apply" and isinstance(callee.expr, A.NameExpr):
                b = scope.lookup(callee.expr.name)
                if isinstance(b, _SubBlock):
                    self.apply_sub(b, e, scope, em)
                    return V("None", T.VOID)
            base = self.expr(callee.expr, scope, em)
            if isinstance(base.bind, ExternInst):
                return self.extern_method(base.bind, method, e, scope, em)
            if base.bind is not None:
                raise unsupported(f"the method {method} of {self.text(callee.expr)}", e)
            bt = base.type
            if method in _SIZE_METHODS and isinstance(bt, (T.StructLikeT, T.StackT)):
                bits = _size_bits(bt, method.startswith("max"))
                n = (bits + 7) // 8 if method.endswith("Bytes") else bits
                return V(str(n), T.INT, const=n)
            if isinstance(bt, T.ExternT) and bt.extern_name == "packet_in":
                return self.packet_in(method, e, scope, em)
            if isinstance(bt, T.ExternT) and bt.extern_name == "packet_out":
                for a in e.args:
                    v = self.value(a.value, scope, em)
                    self.emit_value(self.to_ir(v, a.value), v.type, em, e)
                return V("None", T.VOID)
            b_ir = self.to_ir(base, callee.expr)
            if isinstance(bt, T.StructLikeT) and bt.is_header:
                if method == "isValid":
                    return V(ir.IsValid(b_ir), T.BOOL)
                union = self.union_of(callee.expr, scope)
                self.emit(em, ir.SetValid(b_ir, method == "setValid", union), e)
                return V("None", T.VOID)
            if isinstance(bt, T.StructLikeT) and bt.is_union and method == "isValid":
                return V(ir.IsValid(b_ir), T.BOOL)
            if isinstance(bt, T.StackT) and method in ("push_front", "pop_front"):
                self.emit(em, ir.StackShift(b_ir, method, self.const_int(e.args[0].value, scope)), e)
                return V("None", T.VOID)
            raise unsupported(f"the method {method} of {bt} values", e)
        if isinstance(callee, A.TypeMember) and callee.member == "apply":
            # a direct type invocation: the instance the type check made for this call site
            decl = direct_block(self, e, scope)
            local = getattr(e, "direct_name", None)
            if local is None:
                raise unsupported("this direct type invocation", e)
            outer = scope.enclosing_instance()
            self.apply_sub(_SubBlock(decl, f"{outer}.{local}" if outer else local, [], scope), e, scope, em)
            return V("None", T.VOID)
        if isinstance(callee, A.NameExpr):
            b = scope.lookup(callee.name)
            if isinstance(b, ActionBind):
                args = ordered_args(e, b.decl.params, f"action {b.decl.name}")
                self.inline_action(
                    b,
                    {p.name: a for p, a in zip(b.decl.params, args, strict=False)},
                    scope,
                    em,
                    _Ctx(),
                    e,
                )
                return V("None", T.VOID)
            if isinstance(b, FuncBind):
                return self.inline_function(b, e, scope, em)
            if isinstance(b, ExternFuncBind):
                return self.extern_function(callee.name, e, scope, em)
        raise unsupported("this call", e)

    def union_of(self, e: A.Expr, scope: Scope) -> ir.Expr | None:
        if isinstance(e, A.Member):
            base = self.expr(e.expr, scope, [])
            if isinstance(base.type, T.StructLikeT) and base.type.is_union:
                return self.to_ir(base, e.expr)
        return None

    def bind_params(
        self,
        params: list[A.Param],
        args: dict[str, Any],
        pscope: Scope,
        caller: Scope,
        inner: Scope,
        em: list,
        node: Any,
    ) -> tuple[list[ir.Stmt], list[_Copy]]:
        """Bind callee parameters in `inner` by copy-in/copy-out (P4-16 6.8): the arguments are
        evaluated left to right, an out/inout argument's l-value once, when its turn comes (its
        stack indexes read then); an in argument is copied then, an inout one copied in then; an
        out one starts uninitialized (headers invalid). Returns the copy-out statements, in
        parameter order, and the copies of header/struct/stack/union arguments, which the caller
        hands to `settle_copies` once the callee's body is lowered (most need no copy)."""
        outs: list[ir.Stmt] = []
        copies: list[_Copy] = []
        for p in params:
            pt = self.resolve_type(p.type, pscope)
            if isinstance(pt, T.ExternT):
                if pt.extern_name in ("packet_in", "packet_out"):
                    inner.add(p.name, Var("packet", pt, False, p.direction))  # type: ignore[arg-type]
                    continue
                a = args.get(p.name)
                if isinstance(a, A.Expr):
                    inner.add(p.name, self.expr(a, caller, em).bind)
                    continue
                raise unsupported(f"the extern parameter {p.name}", p)
            a = args.get(p.name)
            composite = isinstance(pt, (T.StructLikeT, T.StackT))
            if isinstance(a, V):  # already lowered (control-plane action arguments)
                inner.add(p.name, Var(a.code, pt, True, p.direction))
                continue
            if a is None:
                var = self.local(p.name, pt, em, p)
                inner.add(p.name, Var(var, pt, True, p.direction))  # type: ignore[arg-type]
                continue
            if composite and p.direction in ("out", "inout"):
                target, _ = self.lvalue_ir(a, caller, em)
                target = self.pin_indices(target, em, a)  # the element named at call time
                tmp = ir.Var(f"cp_{self.safe(p.name)}_{next(self.n_copy)}", self.irt(pt, p))
                copy_in = ir.Declare(tmp, target if p.direction == "inout" else None)
                copy_out = ir.Assign(target, tmp)
                em.append(copy_in)
                outs.append(copy_out)
                copies.append(_Copy(tmp, target, pt, copy_in, copy_out))
                inner.add(p.name, Var(tmp, pt, True, p.direction))  # type: ignore[arg-type]
                continue
            var = self.local(p.name, pt, em, p)
            inner.add(p.name, Var(var, pt, True, p.direction))  # type: ignore[arg-type]
            if p.direction not in ("out", "inout"):
                self.store(var, pt, self.value(a, caller, em, want=pt), em, a)
                continue
            if isinstance(a, A.Slice):
                base, hi, lo = self.slice_target(a, caller, em)
                base = self.pin_indices(base, em, a)
                st = T.BitT(hi - lo + 1)
                if p.direction == "inout":
                    self.store(var, pt, V(ir.Slice(base, hi, lo, self.irt(st, a)), st), em, a)
                outs.append(ir.AssignSlice(base, hi, lo, self.coerce(V(var, pt), st, a)))
                continue
            el = self.elem_target(a, caller, em)
            if el is not None:  # an array element: its index was fixed above, when the call started
                if p.direction == "inout":
                    self.store(var, pt, V(self.elem_read(el, a), el.arr.element), em, a)
                self.elem_write(el, self.coerce(V(var, pt), el.arr.element, a), outs, a)
                continue
            target, at = self.lvalue_ir(a, caller, em)
            target = self.pin_indices(target, em, a)
            if p.direction == "inout":
                self.store(var, pt, V(target, at), em, a)
            self.store(target, at, V(var, pt), outs, a)
        return outs, copies

    def settle_copies(self, copies: list[_Copy], em: list) -> list[_Copy]:
        """Drop the copies a call does not need, once `em` holds the whole call (its copy-ins,
        the rest of its arguments, the callee's body, its copy-outs): a copy is needed only when
        something there other than the parameter itself (the callee writing the data directly,
        another argument naming the same data, a later argument's side effect) reads or writes
        storage the argument names. Otherwise the callee works on the argument in place (the
        fast path: no copy), an out argument's headers made invalid where the copy was made.
        Returns the copies kept, in parameter order."""
        if not copies:
            return []
        at = {id(s): k for k, s in enumerate(em)}
        starts = [at[id(c.copy_in)] for c in copies]
        # what each statement after the first copy-in reads and writes, this call's copy-outs
        # apart (each copy's own does not count) and, where an exit repeats them, those of the
        # calls around it (they run once this call is over)
        outs = frozenset(id(s) for s in [*(c.copy_out for c in copies), *itertools.chain(*self.pending_outs)])
        seen = [(k, _accesses(em[k], outs)) for k in range(min(starts) + 1, len(em))]
        kept: list[_Copy] = []
        elided: list[tuple[int, _Copy]] = []
        for c, i in zip(copies, starts, strict=True):
            mine = _path(c.target)
            assert mine is not None
            others = [p for d in copies if d is not c for p in _accesses(d.copy_out)]
            later = [p for k, ps in seen if k > i for p in ps]
            if any(_overlap(mine, p) for p in later + others):
                kept.append(c)
            else:
                elided.append((i, c))
        for i, c in reversed(elided):  # the last first: the indexes before it stay
            init: list[ir.Stmt] = []
            if c.copy_in.init is None:  # out: starts uninitialized
                self.invalidate(c.target, c.t, init)
            for x in init:
                x.loc = c.copy_in.loc
            em[i : i + 1] = init
        if elided:
            _rewrite(em, {id(c.tmp): c.target for _, c in elided}, {id(c.copy_out) for _, c in elided})
        return kept

    def invalidate(self, target: ir.Expr, t: T.Type, em: list) -> None:
        if isinstance(t, T.StructLikeT):
            if t.is_header:
                em.append(ir.SetValid(target, False))
                return
            for n, ft in t.fields:
                if isinstance(ft, (T.StructLikeT, T.StackT)):
                    self.invalidate(ir.Member(target, n, self.irt(ft, None)), ft, em)
        elif isinstance(t, T.StackT):
            for i in range(t.size):
                self.invalidate(
                    ir.Index(target, ir.Const(i, ir.Bits(32)), self.irt(t.element, None)), t.element, em
                )

    def inline_action(
        self, b: ActionBind, args: dict[str, Any], caller: Scope, em: list, fc: _Ctx, node: Any
    ) -> None:
        inner = Scope(b.scope, kind="action")
        body: list[ir.Stmt] = []
        outs, copies = self.bind_params(b.decl.params, args, b.scope, caller, inner, body, node)
        label = self.uniq("L_act")
        code: list[ir.Stmt] = []
        self.pending_outs.append(outs)
        self.stmts(b.decl.body.stmts, inner, code, _Ctx(label=label))
        self.pending_outs.pop()
        body.append(ir.Labeled(label, code))
        body.extend(outs)
        self.settle_copies(copies, body)
        em.extend(body)

    def inline_function(self, b: FuncBind, e: A.Call, scope: Scope, em: Any) -> V:
        if not isinstance(em, list):
            raise unsupported("a function call in a compile-time expression", e)
        proto = b.decl.proto
        args = ordered_args(e, proto.params, f"function {proto.name}")
        fscope = self.function_scope(b, e, scope)  # a generic one's type parameters bound
        inner = Scope(fscope, kind="function")
        call: list[ir.Stmt] = []
        outs, copies = self.bind_params(
            proto.params,
            {p.name: a for p, a in zip(proto.params, args, strict=False)},
            fscope,
            scope,
            inner,
            call,
            e,
        )
        rt = self.resolve_type(proto.return_type, fscope)
        ret = None if isinstance(rt, T.VoidT) else self.local("ret", rt, call, e)
        label = self.uniq("L_fn")
        code: list[ir.Stmt] = []
        self.pending_outs.append(outs)
        self.stmts(
            b.decl.body.stmts,
            inner,
            code,
            _Ctx(label=label, ret=ret, ret_type=None if ret is None else rt),
        )
        self.pending_outs.pop()
        call.append(ir.Labeled(label, code))
        call.extend(outs)
        self.settle_copies(copies, call)
        em.extend(call)
        return V(ret, rt) if ret is not None else V("None", T.VOID)

    def apply_sub(self, b: _SubBlock, e: A.Call, scope: Scope, em: list) -> None:
        params = b.decl.params
        args = ordered_args(e, params, f"{b.decl.name}.apply")
        binds: dict[str, V] = {}
        call: list[ir.Stmt] = []
        tmp_scope = Scope(self.g)
        outs, copies = self.bind_params(
            params,
            {p.name: a for p, a in zip(params, args, strict=False)},
            tmp_scope,
            scope,
            tmp_scope,
            call,
            e,
        )
        for p in params:
            v = tmp_scope.lookup_local(p.name)
            if isinstance(v, Var) and v.code != "packet":
                binds[p.name] = V(v.code, v.type)
            elif isinstance(v, ExternInst):  # an extern instance passed to the block
                binds[p.name] = v  # type: ignore[assignment]
        if isinstance(b.decl, A.ParserDecl):
            sub = self.lower_parser(b.decl, b.p4name, b.ctor_args, binds, b.outer)
            sp = ir.SubParser(sub, b.p4name)
            self.emit(call, sp, e)
            call.extend(outs)
            # a sub-parser that rejects (or fails) copies its composite arguments out all the
            # same, its bit<W> ones not (p4-spec#880 leaves it to the architecture: README)
            sp.reject_outs = [c.copy_out for c in self.settle_copies(copies, call)]
        else:
            self.pending_outs.append(outs)
            self.inline_control(b.decl, b.p4name, b.ctor_args, b.outer, binds, call, _Ctx())
            self.pending_outs.pop()
            call.extend(outs)
            self.settle_copies(copies, call)
        em.extend(call)

    # ------------------------------------------------------------------ packets
    def size_arg(self, e: A.Expr, scope: Scope, em: Any) -> ir.Expr:
        """A size in bits (extract's second argument, advance's): core.p4 types it bit<32>, so
        a plain constant such as `advance(16)` is a bit<32> constant."""
        v = self.value(e, scope, em)
        return self.to_ir(v, e, T.BitT(32) if v.is_const else None)

    def packet_in(self, method: str, e: A.Call, scope: Scope, em: Any) -> V:
        if method == "extract":
            target = e.args[0].value
            bits = self.size_arg(e.args[1].value, scope, em) if len(e.args) == 2 else None
            if isinstance(target, A.Member) and target.member == "next":
                stack = self.value(target.expr, scope, em)
                ht = self.irt(stack.type.element, e)  # type: ignore[union-attr]
                if not isinstance(ht, ir.Header):
                    raise unsupported("extracting into a stack of header unions", e)
                self.emit(em, ir.Extract(self.to_ir(stack, target.expr), ht, bits, next=True), e)
                return V("None", T.VOID)
            h = self.value(target, scope, em)
            ht = self.irt(h.type, e)
            assert isinstance(ht, ir.Header)
            self.emit(em, ir.Extract(self.to_ir(h, target), ht, bits, union=self.union_of(target, scope)), e)
            return V("None", T.VOID)
        if method == "lookahead":
            return self.lookahead(self.resolve_type(e.type_args[0], scope), e, em)
        if method == "advance":
            self.emit(em, ir.Advance(self.size_arg(e.args[0].value, scope, em)), e)
            return V("None", T.VOID)
        if method == "length":
            return V(ir.PacketLength(), T.BitT(32))
        raise unsupported(f"packet_in.{method}", e)

    def lookahead(self, t: T.Type, e: A.Call, em: Any) -> V:
        """`pkt.lookahead<t>()` (P4-16 v1.2.4 section 12.8.3): the next bits of the packet, the
        cursor left where it is; PacketTooShort when the packet ends first. A header comes back
        valid; a struct is read as one bit string cut into its fields in declaration order
        (nested structs and headers too, each header valid), as p4c's bmv2 back end does."""
        it = self.irt(t, e)
        if isinstance(it, ir.Header) and not it.has_varbit:
            tmp = self.local("look", t, em, e)
            self.emit(em, ir.LookaheadHeader(tmp, it), e)
            return V(tmp, t)
        if isinstance(it, ir.Struct):
            width = _lookahead_width(it, e)
            tmp = self.local("look", t, em, e)
            if width:
                bits = ir.Var(self.uniq("l_lookbits"), ir.Bits(width))
                self.emit(em, ir.Declare(bits, ir.Lookahead(width, bits.type)), e)
                self.split_bits(tmp, it, bits, width, em, e)
            return V(tmp, t)
        if isinstance(it, (ir.Bits, ir.Bool)):
            return V(_look_cast(ir.Lookahead(ir.wire_width(it), ir.Bits(ir.wire_width(it))), it), t)
        raise unsupported(f"lookahead of {t}", e)  # the type check refuses these first

    def split_bits(self, dest: ir.Expr, t: ir.Struct | ir.Header, bits: ir.Var, top: int,
                   em: Any, node: Any) -> int:
        """Assign the fields of `dest` (a struct or header) from `bits`, the first field from
        bit `top - 1` down; a header also becomes valid. Returns the bit below the last field."""
        if isinstance(t, ir.Header):
            self.emit(em, ir.SetValid(dest, True), node)
        for n, ft in t.fields:
            m = ir.Member(dest, n, ft)
            if isinstance(ft, (ir.Struct, ir.Header)):
                top = self.split_bits(m, ft, bits, top, em, node)
                continue
            w = ir.wire_width(ft)
            self.emit(em, ir.Assign(m, _look_cast(ir.Slice(bits, top - 1, top - w, ir.Bits(w)), ft)), node)
            top -= w
        return top

    def emit_value(self, x: ir.Expr, t: T.Type, em: Any, node: Any) -> None:
        if isinstance(t, T.StructLikeT):
            if t.is_header:
                ht = self.irt(t, node)
                assert isinstance(ht, ir.Header)
                self.emit(em, ir.Emit(x, ht), node)
                return
            for n, ft in t.fields:
                self.emit_value(ir.Member(x, n, self.irt(ft, node)), ft, em, node)
            return
        if isinstance(t, T.StackT):
            for i in range(t.size):
                self.emit_value(
                    ir.Index(x, ir.Const(i, ir.Bits(32)), self.irt(t.element, node)), t.element, em, node
                )
            return
        raise unsupported(f"emitting a {t} value", node)

    # ------------------------------------------------------------------ field lists
    def flatten(self, e: A.Expr | None, scope: Scope, em: list, node: Any) -> list[ir.FieldListItem]:
        if e is None:
            return []
        items = e.items if isinstance(e, A.ListExpr) else [e]
        out: list[ir.FieldListItem] = []
        for it in items:
            if isinstance(it, A.ListExpr):
                out.extend(self.flatten(it, scope, em, node))
                continue
            v = self.value(it, scope, em)
            if isinstance(v.code, _Init):
                for _, fv in v.code.items:
                    self.flatten_value(self.to_ir(fv, it), fv.type, None, out, it)
                continue
            if v.is_const and isinstance(v.type, T.IntT):
                raise unsupported("an integer of unknown width in a field list", it)
            self.flatten_value(self.to_ir(v, it), v.type, None, out, it)
        return out

    def flatten_value(
        self, x: ir.Expr, t: T.Type, valid: ir.Expr | None, out: list[ir.FieldListItem], node: Any
    ) -> None:
        if isinstance(t, T.StructLikeT):
            if t.is_header:
                valid = ir.IsValid(x) if valid is None else ir.BinOp("land", valid, ir.IsValid(x), ir.BOOL)
            for n, ft in t.fields:
                self.flatten_value(ir.Member(x, n, self.irt(ft, node)), ft, valid, out, node)
            return
        if isinstance(t, T.StackT):
            for i in range(t.size):
                self.flatten_value(
                    ir.Index(x, ir.Const(i, ir.Bits(32)), self.irt(t.element, node)),
                    t.element,
                    valid,
                    out,
                    node,
                )
            return
        it = self.irt(t, node)
        if valid is None and isinstance(x, ir.Member) and isinstance(x.base.type, ir.Header):
            # a single field of a header: bmv2's BufBuilder leaves out a field whose header is
            # invalid (as it does a whole header), for hash(), checksums and selectors alike
            valid = ir.IsValid(x.base)
        out.append(ir.FieldListItem(x, -1 if isinstance(it, ir.Varbit) else ir.wire_width(it), valid))

    def field_list_id(self, e: A.Expr | None, scope: Scope) -> int:
        """A field list id for clone3/resubmit/recirculate given a list of metadata fields."""
        paths: list[list[str]] = []
        items = [] if e is None else (e.items if isinstance(e, A.ListExpr) else [e])
        for it in items:
            x = self.to_ir(self.value(it, scope, []), it)
            path: list[str] = []
            while isinstance(x, ir.Member):
                path.insert(0, x.field)
                x = x.base
            if isinstance(x, ir.Var) and x.name in ("meta", "sm"):
                paths.append([x.name, *path])
        key = tuple(tuple(p) for p in paths)
        if key not in self.synth_fl:
            fid = SYNTH_FIELD_LIST_BASE + len(self.synth_fl)
            self.synth_fl[key] = fid
            self.field_lists[fid] = paths
        return self.synth_fl[key]

    # ------------------------------------------------------------------ externs
    def algo(self, e: A.Expr, scope: Scope) -> int:
        v = self.value(e, scope, [])
        name = str(v.const).split(".")[-1]
        if name not in ALGORITHMS:
            raise unsupported(f"the hash algorithm {name}", e)
        return ALGORITHMS[name]

    def out_arg(self, lhs: A.Expr, scope: Scope, em: list) -> _OutArg:
        """An extern's out argument: its l-value evaluated now, in argument order (P4-16 6.8)."""
        if isinstance(lhs, A.Slice):
            base, hi, lo = self.slice_target(lhs, scope, em)
            return _OutArg(base, T.BitT(hi - lo + 1), len(em), lhs, hi, lo)
        target, t = self.lvalue_ir(lhs, scope, em)
        return _OutArg(target, t, len(em), lhs)

    def put_out(self, o: _OutArg, v: V, em: list, out: list) -> None:
        """Store `v` into out argument `o` (its stack indexes as they were at its turn), in `out`."""
        target = self.pin_before(o.target, em, o.n, o.node)
        if o.hi >= 0:
            out.append(ir.AssignSlice(target, o.hi, o.lo, self.coerce(v, o.t, o.node)))
        else:
            self.store(target, o.t, v, out, o.node)

    def call_into(self, o: _OutArg, call: ir.ExternCall, em: list, node: Any) -> None:
        """Run an extern whose result goes to an out argument: into a fresh local, then stored."""
        tmp = self.local("x", o.t, em, node)
        call.dest = tmp
        em.append(call)
        self.put_out(o, V(tmp, o.t), em, em)

    def extern_method(self, inst: ExternInst, method: str, e: A.Call, scope: Scope, em: Any) -> V:
        kind = inst.type.extern_name  # type: ignore[attr-defined]
        args = [a.value for a in e.args]
        u32 = T.BitT(32)
        if kind == "register":
            no = self.reg_no[inst.p4name]
            if method == "read":
                o, idx = self.in_order(
                    em, [lambda: self.out_arg(args[0], scope, em), lambda: self.rv(args[1], scope, em, u32)]
                )
                self.call_into(o, ir.ExternCall("register_read", no, [idx]), em, e)
                return V("None", T.VOID)
            et = inst.type.type_args[0] if inst.type.type_args else u32  # type: ignore[attr-defined]
            vals = self.in_order(
                em, [lambda: self.rv(args[0], scope, em, u32), lambda: self.rv(args[1], scope, em, et)]
            )
            self.emit(em, ir.ExternCall("register_write", no, vals), e)
            return V("None", T.VOID)
        if kind == "counter" and method == "count":
            self.emit(
                em,
                ir.ExternCall(
                    "counter_count", self.counter_no[inst.p4name], [self.rv(args[0], scope, em, u32)]
                ),
                e,
            )
            return V("None", T.VOID)
        if kind == "direct_counter":
            return V("None", T.VOID)  # counted by the table on every hit
        if kind == "meter" and method == "execute_meter":
            idx, o = self.in_order(
                em, [lambda: self.rv(args[0], scope, em, u32), lambda: self.out_arg(args[1], scope, em)]
            )
            self.call_into(o, ir.ExternCall("meter_execute", self.meter_no[inst.p4name], [idx]), em, e)
            return V("None", T.VOID)
        if kind == "direct_meter" and method == "read":
            o = self.out_arg(args[0], scope, em)
            self.call_into(o, ir.ExternCall("direct_meter_read", self.dmeter_no[inst.p4name]), em, e)
            return V("None", T.VOID)
        if kind == "Checksum16" and method == "get":
            tmp = self.local("csum", T.BitT(16), em, e)
            self.emit(
                em,
                ir.ExternCall("csum", ALGORITHMS["csum16"], [], tmp, self.flatten(args[0], scope, em, e)),
                e,
            )
            return V(tmp, T.BitT(16))
        raise unsupported(f"{kind}.{method}", e)

    def extern_function(self, name: str, e: A.Call, scope: Scope, em: Any) -> V:
        args = [a.value for a in e.args]
        none = V("None", T.VOID)
        if name == "static_assert":
            return V("True", T.BOOL, True)
        if not isinstance(em, list):
            raise unsupported(f"{name} in a compile-time expression", e)
        if name == "verify":
            cond, error = self.in_order(
                em, [lambda: self.rv(args[0], scope, em), lambda: self.rv(args[1], scope, em, T.ERROR)]
            )
            em.append(ir.Verify(cond, error))
            return none
        if name == "mark_to_drop":
            sm = self.rv(args[0], scope, em) if args else _ARCH_SM
            em.append(ir.Assign(ir.Member(sm, "egress_spec", ir.Bits(9)), ir.Const(511, ir.Bits(9))))
            em.append(ir.Assign(ir.Member(sm, "mcast_grp", ir.Bits(16)), ir.Const(0, ir.Bits(16))))
            return none
        if name == "hash":

            def bound(x: A.Expr) -> ir.Expr:  # base and max: an untyped constant as bit<64>
                untyped = isinstance(self.value(x, scope, []).type, T.IntT)
                return self.rv(x, scope, em, T.BitT(64) if untyped else None)

            o, base, data, mx = self.in_order(
                em,
                [
                    lambda: self.out_arg(args[0], scope, em),
                    lambda: bound(args[2]),
                    lambda: self.flatten(args[3], scope, em, e),
                    lambda: bound(args[4]),
                ],
            )
            self.call_into(o, ir.ExternCall("hash", self.algo(args[1], scope), [base, mx], None, data), em, e)
            return none
        if name == "random":
            o = self.out_arg(args[0], scope, em)
            lo, hi = self.in_order(
                em, [lambda: self.rv(args[1], scope, em, o.t), lambda: self.rv(args[2], scope, em, o.t)]
            )
            self.call_into(o, ir.ExternCall("random", 0, [lo, hi]), em, e)
            return none
        if name in (
            "verify_checksum",
            "verify_checksum_with_payload",
            "update_checksum",
            "update_checksum_with_payload",
        ):
            t = self.value(args[2], scope, []).type
            verify = name.startswith("verify")
            cond, data, ck = self.in_order(
                em,
                [
                    lambda: self.rv(args[0], scope, em),
                    lambda: self.flatten(args[1], scope, em, e),
                    lambda: self.rv(args[2], scope, em, t) if verify else self.out_arg(args[2], scope, em),
                ],
            )
            tmp = self.local("csum", t, em, e)
            body: list[ir.Stmt] = [
                ir.ExternCall(
                    "csum", self.algo(args[3], scope), [], tmp, data, payload=name.endswith("_with_payload")
                )
            ]
            if verify:
                sm = _ARCH_SM
                body.append(
                    ir.If(
                        ir.BinOp("ne", tmp, ck, ir.BOOL),
                        [ir.Assign(ir.Member(sm, "checksum_error", ir.Bits(1)), ir.Const(1, ir.Bits(1)))],
                        [],
                    )
                )
            else:
                self.put_out(ck, V(tmp, t), em, body)
            em.append(ir.If(cond, body, []))
            return none
        if name == "digest":
            want = self.resolve_type(e.type_args[0], scope) if e.type_args else None
            v = self.value(args[1], scope, em, want=want)
            if not isinstance(v.type, T.StructLikeT):
                raise unsupported("digest data that is not a struct", e)
            if isinstance(v.code, _Init):
                vals = [self.coerce(fv, v.type.field_type(n), e) for n, fv in v.code.items]  # type: ignore
            else:
                base = self.to_ir(v, args[1])
                vals = [ir.Member(base, n, self.irt(ft, e)) for n, ft in v.type.fields]
            for n, ft in v.type.fields:
                if not isinstance(self.irt(ft, e), (ir.Bits, ir.Bool)):
                    raise unsupported(f"digest field {n} of type {ft}", e)
            em.append(ir.ExternCall("digest", self.digest_no[v.type.type_name], vals))
            return none
        if name in ("clone", "clone3", "clone_preserving_field_list"):
            ctype = self.value(args[0], scope, [])
            e2e = int(str(ctype.const).endswith("E2E"))
            session = self.rv(args[1], scope, em, T.BitT(32))
            if name == "clone":
                fl = self.field_list_id(None, scope)
            elif name == "clone3":
                fl = self.field_list_id(args[2], scope)
            else:
                fl = self.const_int(args[2], scope)
                self.field_lists.setdefault(fl, [])
            em.append(ir.ExternCall("clone", fl, [ir.Const(e2e, ir.Bits(1)), session]))
            return none
        if name in ("resubmit", "recirculate"):
            em.append(ir.ExternCall(name, self.field_list_id(args[0] if args else None, scope)))
            return none
        if name in ("resubmit_preserving_field_list", "recirculate_preserving_field_list"):
            fl = self.const_int(args[0], scope)
            self.field_lists.setdefault(fl, [])
            em.append(ir.ExternCall(name.split("_")[0], fl))
            return none
        if name == "truncate":
            em.append(ir.ExternCall("truncate", 0, [self.rv(args[0], scope, em, T.BitT(32))]))
            return none
        if name in ("assert", "assume"):
            em.append(ir.ExternCall("assert", 0, [self.rv(args[0], scope, em)], text=str(e.loc)))
            return none
        if name == "log_msg":
            msg = self.value(args[0], scope, [])
            vals = []
            if len(args) > 1:
                items = args[1].items if isinstance(args[1], A.ListExpr) else [args[1]]

                def item(it: A.Expr) -> ir.Expr:
                    v = self.value(it, scope, em)
                    return self.to_ir(v, it, T.BitT(64) if isinstance(v.type, T.IntT) else None)

                vals = self.in_order(em, [lambda it=it: item(it) for it in items])
            em.append(ir.ExternCall("log_msg", 0, vals, text=str(msg.const)))
            return none
        raise unsupported(f"the extern function {name}", e)


def _declared_field_lists(cp: CompiledProgram) -> dict[int, list[tuple[str, ...]]]:
    from p4compiler.python_backend import _field_lists

    return _field_lists(cp.meta_type)


def lower_program(compiled: CompiledProgram) -> ir.Program:
    """Lower a program the Python back end has compiled (and so type-checked) into the IR."""
    from p4compiler.frontend.parser import parse_text

    if getattr(compiled, "ir", None) is not None:  # the Python emitter lowered it already
        return compiled.ir
    if not compiled.p4_source:
        raise NativeUnsupported("the program's P4 source text is not available")
    prog = parse_text(compiled.p4_source, compiled.filename or "<program>")
    lw = Lower(compiled, prog)
    try:
        return lw.lower()
    except NativeUnsupported:
        raise
    except P4Error as e:  # the Python back end accepted it, so this is a gap of the lowering
        raise NativeUnsupported(
            f"the native backend cannot lower this program yet: {e.message}", e.file, e.line, e.col
        ) from None


__all__ = ["NativeUnsupported", "lower_program", "Lower"]
