"""The front end's type check: name and type resolution, constant folding, the checks of
expressions (errors are one located line), and the walk that collects the control-plane view.

`p4compiler.lower` subclasses `Compiler` to produce the IR with the same rules (`V.code` holds
the ir.Expr there; the checks leave it empty); the Python the switch runs is written from that
IR (emit.py).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from p4compiler.errors import P4Error
from p4compiler.frontend import ast as A
from p4compiler.python_backend import types as T
from p4compiler.python_backend.scope import (
    ActionBind,
    Const,
    ExternFuncBind,
    FuncBind,
    Scope,
    TableBind,
    TypeBind,
    Var,
)
from p4compiler.python_backend.types import type_key


class CompileError(P4Error):
    pass


def err(msg: str, node: Any = None) -> CompileError:
    loc = getattr(node, "loc", None)
    if loc is None:
        return CompileError(msg)
    return CompileError(msg, loc.file, loc.line, loc.col)


@dataclass
class V:
    """A checked expression: its P4 type, its value if constant, and `code` (what the lowering
    makes of it: an ir.Expr; the type check leaves it empty)."""

    code: str
    type: T.Type
    const: Any = None
    bind: Any = None  # for names that are not values (tables, externs, actions, ...)
    init: bool = False  # a struct/header initializer of this type (not stored anywhere yet)

    @property
    def is_const(self) -> bool:
        return self.const is not None


class Emitter:
    """Where the type check's statements would go: nowhere, the Python that runs is written from
    the IR. The lowering passes a list of IR statements where the checks pass an Emitter, so an
    Emitter also marks a context without statements (constant expressions, declarations)."""


@dataclass
class TableSpec:
    """What the runtime needs to build a table (besides its ProgramInfo record)."""

    p4name: str
    key_fn: str  # a name left from the former generator (the emitted code computes keys itself)
    key_kinds: list[str]
    key_widths: list[int]
    action_fns: dict[str, str]  # the table's actions in order (p4 name -> a name left from the former
    # generator; the keys are what the lowering, the switch and the C manifest use)
    action_params: dict[str, list[tuple[str, int]]]
    default_action: str
    default_args: list[int]
    # the table's `entries`: (keys, action, args, priority, const: not to be changed by the control plane)
    const_entries: list[tuple[list[Any], str, list[int], int | None, bool]]
    direct_counter: str | None = None
    direct_meter: str | None = None
    size: int = 1024
    largest_priority_wins: bool = True
    implementation: str | None = None  # the action profile / selector holding its actions
    selector_algo: str | None = None  # a selector's hash algorithm (HashAlgorithm member name)


@dataclass
class ExternSpec:
    kind: str  # register | counter | direct_counter | meter | direct_meter | action_profile | ...
    p4name: str
    code: str
    args: dict[str, Any] = field(default_factory=dict)


def unwrap_signed(v: int, w: int) -> int:
    v &= (1 << w) - 1
    return v - (1 << w) if v >> (w - 1) else v


def fit(value: int, t: T.Type) -> int:
    if isinstance(t, T.BitT):
        if t.signed:
            return unwrap_signed(value, t.width)
        return value & t.mask
    if isinstance(t, T.EnumT) and t.underlying is not None:
        return value & t.underlying.mask
    return value


# v1model externs implemented by the switch runtime, keyed by extern name
STATEFUL_EXTERNS = {"register", "counter", "direct_counter", "meter", "direct_meter", "action_profile",
                    "action_selector", "Checksum16"}


# how each refusal of what p4c-bm2-ss (v1model) refuses ends (portability.py): the opt-in
NONPORTABLE_HINT = "allow_nonportable=True or --allow-nonportable accepts it here"


class Compiler:
    def __init__(self, program: A.Program, allow_nonportable: bool = False):
        self.program = program
        # accept what the reference toolchain (p4c-bm2-ss v1.2.4 for v1model) refuses: run-time
        # division, a table applied twice on one path, a select on an enum-typed key
        self.allow_nonportable = allow_nonportable
        self.g = Scope(kind="global")
        self.em = Emitter()  # the global declarations' context
        self.ids = itertools.count(1)
        self.struct_types: dict[int, T.StructLikeT] = {}
        # specializations of generic structs/headers: (id(decl), type_key of each argument) -> type
        self.generic_types: dict[Any, T.StructLikeT] = {}
        # instantiations of generic functions: (id(decl), type_key of each argument) -> the scope
        # binding the type parameters
        self.generic_fn_scopes: dict[Any, Scope] = {}
        self.checked_fns: set[int] = set()  # ids of the function scopes whose bodies are checked
        self.errors: list[str] = []
        self.match_kinds: list[str] = []
        self.tables: list[TableSpec] = []
        self.externs: list[ExternSpec] = []
        self.value_sets: list[tuple[str, str, T.Type, int]] = []
        self.info_actions: dict[str, Any] = {}  # p4name -> (decl, params)
        self.direct_actions: dict[str, None] = {}  # actions called from apply blocks, in order
        self.info_tables: list[Any] = []
        self.digests: dict[str, T.StructLikeT] = {}
        self.emitted_actions: dict[int, str] = {}
        self.ctx_slots: dict[str, list[str]] = {}
        self.meta_type: T.StructLikeT | None = None
        self.blocks: dict[str, Any] = {}
        # direct type invocations (`Ctl.apply(...)`): instance -> the local names given in it
        self.direct_names: dict[str, set[str]] = {}

    # ------------------------------------------------------------------ helpers
    def uid(self, prefix: str) -> str:
        return f"{prefix}{next(self.ids)}"

    def safe(self, name: str) -> str:
        return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)

    # ------------------------------------------------------------------ declarations
    def declare_globals(self) -> None:
        g = self.g
        for d in self.program.decls:
            if isinstance(d, A.ErrorDecl):
                for m in d.members:
                    if m not in self.errors:
                        self.errors.append(m)
            elif isinstance(d, A.MatchKindDecl):
                for m in d.members:
                    if m not in self.match_kinds:
                        self.match_kinds.append(m)
            elif isinstance(d, (A.HeaderDecl, A.HeaderUnionDecl, A.StructDecl, A.EnumDecl, A.TypedefDecl,
                                A.ExternDecl, A.ParserTypeDecl, A.ControlTypeDecl, A.PackageDecl,
                                A.ParserDecl, A.ControlDecl)):
                g.add(d.name, TypeBind(d))
            elif isinstance(d, A.ConstDecl):
                t = self.resolve_type(d.type, g)
                v = self.expr(d.value, g, self.em, want=t)
                if not v.is_const:
                    raise err(f"constant {d.name} needs a compile-time value", d)
                g.add(d.name, Const(self.coerce_const(v, t, d), t))
            elif isinstance(d, A.ExternFunctionDecl):
                prev = g.lookup_local(d.proto.name)
                if isinstance(prev, ExternFuncBind):
                    prev.decls.append(d.proto)
                else:
                    g.add(d.proto.name, ExternFuncBind([d.proto]))
            elif isinstance(d, A.ActionDecl):
                g.add(d.name, ActionBind(d, "", self.p4_name(d.name, d.annotations, ""), g))
            elif isinstance(d, A.FunctionDecl):
                g.add(d.proto.name, FuncBind(d, "", g))
            elif isinstance(d, A.Instance):
                g.add(d.name, ("instance", d))
            elif isinstance(d, A.ValueSetDecl):
                raise err("value_set at top level is not supported; declare it in a parser", d)

    def p4_name(self, name: str, annotations: list[A.Annotation], prefix: str) -> str:
        ann = A.find_annotation(annotations, "name")
        if ann is not None:
            n = ann.string_arg()
            if n.startswith("."):
                return n[1:]
            name = n
        return f"{prefix}.{name}" if prefix else name

    # ------------------------------------------------------------------ types
    def resolve_type(self, t: A.TypeRef | T.Type, scope: Scope) -> T.Type:
        if isinstance(t, T.Type):
            return t
        if isinstance(t, A.BitTypeRef):
            w = self.const_int(t.width, scope)
            if w <= 0 and not (w == 0 and not t.signed):
                raise err(f"bad width {w}", t)
            return T.BitT(w, t.signed)
        if isinstance(t, A.BoolTypeRef):
            return T.BOOL
        if isinstance(t, A.IntTypeRef):
            return T.INT
        if isinstance(t, A.ErrorTypeRef):
            return T.ERROR
        if isinstance(t, A.StringTypeRef):
            return T.STRING
        if isinstance(t, A.VoidTypeRef):
            return T.VOID
        if isinstance(t, A.MatchKindTypeRef):
            return T.MATCH_KIND
        if isinstance(t, A.DontCareTypeRef):
            return T.DONTCARE
        if isinstance(t, A.VarbitTypeRef):
            return T.VarbitT(self.const_int(t.width, scope))
        if isinstance(t, A.StackTypeRef):
            el = self.resolve_type(t.element, scope)
            n = self.const_int(t.size, scope)
            if n <= 0:
                raise err(f"the size of {el}[{n}] must be a positive integer", t)
            if isinstance(el, T.StructLikeT) and el.kind != "struct":
                return T.StackT(el, n)  # P4-16 v1.2.4 section 7.2.3, header stacks
            # arrays of other element types: p4-spec PR 1360 (after v1.2.5; p4c accepts them
            # since 2025); covered: arrays of bit<W>, int<W>, bool and serializable enums
            if isinstance(el, (T.StackT, T.ArrayT)):
                raise err(f"arrays of arrays ({el}[{n}]) are not supported", t)
            if isinstance(el, T.StructLikeT):
                raise err(f"arrays of structs ({el}[{n}]) are not supported (only header stacks and "
                          "arrays of bit<W>, int<W>, bool or serializable enums)", t)
            if T.serial_width(el) is None or (isinstance(el, T.BitT) and el.width == 0):
                raise err(f"arrays of {el} ({el}[{n}]) are not supported (only header stacks and "
                          "arrays of bit<W>, int<W>, bool or serializable enums)", t)
            return T.ArrayT(el, n)
        if isinstance(t, A.TupleTypeRef):
            return T.TupleT([self.resolve_type(e, scope) for e in t.elements])
        if isinstance(t, A.NamedTypeRef):
            b = scope.lookup(t.name)
            if b is None:
                raise err(f"unknown type {t.name}", t)
            if not isinstance(b, TypeBind):
                raise err(f"{t.name} is not a type", t)
            if isinstance(b.decl, T.Type):
                return b.decl
            d = b.decl
            if isinstance(d, A.ExternDecl):
                args = [self.resolve_type(a, scope) for a in t.args]
                return T.ExternT(d.name, args, d)
            if getattr(d, "type_params", None) and isinstance(
                    d, (A.HeaderDecl, A.HeaderUnionDecl, A.StructDecl)):
                return self.specialize(d, t, scope)
            if t.args:
                raise err(f"{t.name} is not generic: it takes no type arguments", t)
            if b.resolved is not None:
                return b.resolved
            r = self.resolve_decl_type(d, scope, t)
            b.resolved = r
            return r
        raise err(f"unsupported type {type(t).__name__}", t)

    def specialize(self, d: Any, t: A.NamedTypeRef, scope: Scope) -> T.StructLikeT:
        """`S<A, B>` of a generic struct, header or header union (P4-16 v1.2.4 section 7.2.12,
        generic types): one StructLikeT per distinct list of type arguments (the same object for
        every use, so that values of `S<bit<8>>` assign to each other), its fields resolved with
        the type parameters bound to the arguments. It is named as p4c's SpecializeGenericTypes
        names the specialized declaration (`S_bit8`)."""
        if not t.args:
            raise err(f"{d.name} is generic: give its type arguments ({d.name}<...>)", t)
        if len(t.args) != len(d.type_params):
            raise err(f"{d.name} takes {len(d.type_params)} type argument(s), {len(t.args)} given", t)
        args = [self.resolve_type(a, scope) for a in t.args]
        for a, at in zip(t.args, args, strict=True):
            if isinstance(at, (T.VoidT, T.DontCareT, T.StringT, T.ExternT, T.BlockT, T.MatchKindT)):
                raise err(f"{at} cannot be a type argument of {d.name}", a)
        key = (id(d), tuple(type_key(a) for a in args))
        st = self.generic_types.get(key)
        if st is not None:
            return st
        bound = Scope(self.g, kind="generic")
        for name, at in zip(d.type_params, args, strict=True):
            bound.add(name, TypeBind(at))
        name = d.name + "".join("_" + "".join(ch for ch in a.name() if ch not in "<> ").replace(",", "_")
                                .replace(".", "_") for a in args)
        st = self.resolve_decl_type(d, bound, t, name=name, key=key)
        assert isinstance(st, T.StructLikeT)
        st.generic = (d, tuple(args))
        return st

    def resolve_decl_type(self, d: Any, scope: Scope, where: Any, *, name: str | None = None,
                          key: Any = None) -> T.Type:
        """The type a declaration names. For a generic struct/header (`specialize`), `scope`
        binds its type parameters, `name` names the specialization and `key` caches it."""
        if isinstance(d, (A.HeaderDecl, A.HeaderUnionDecl, A.StructDecl)):
            if d.type_params and key is None:
                raise err(f"{d.name} is generic: give its type arguments ({d.name}<...>)", where)
            cache = self.struct_types if key is None else self.generic_types
            key = id(d) if key is None else key
            if key in cache:
                return cache[key]
            kind = {A.HeaderDecl: "header", A.HeaderUnionDecl: "header_union",
                    A.StructDecl: "struct"}[type(d)]
            tname = name or d.name
            st = T.StructLikeT(kind, tname, [], d.annotations)
            n = len(self.struct_types) + len(self.generic_types)
            st.cls_name = f"{'H' if kind == 'header' else 'S'}_{self.safe(tname)}_{n}"
            cache[key] = st
            fscope = self.g if not d.type_params else scope
            for f in d.fields:
                ft = self.resolve_type(f.type, fscope)
                if kind == "header" and T.serial_width(ft) is None and not isinstance(ft, T.VarbitT):
                    raise err(f"header field {d.name}.{f.name} must be bit<>, int<>, bool, varbit or a "
                              f"serializable enum, not {ft}", f)
                if kind == "header_union" and not (isinstance(ft, T.StructLikeT) and ft.is_header):
                    raise err(f"header_union members must be headers ({d.name}.{f.name})", f)
                st.fields.append((f.name, ft))
                st.field_annotations[f.name] = f.annotations
            if kind == "header":
                # p4c-bm2-ss refuses such a header type (HeaderConverter::addHeaderType: "BMv2
                # target only supports headers with fields totaling a multiple of 8 bits"; a
                # varbit field counts with its maximum width), and bmv2 extracts, emits and
                # sizes headers in whole bytes; structs are padded instead, so metadata may be
                # any width
                w = sum(ft.max_width if isinstance(ft, T.VarbitT) else (T.serial_width(ft) or 0)
                        for _, ft in st.fields)
                if w % 8 != 0:
                    what = f"header {d.name}" if name is None else f"header {d.name} specialized as {tname}"
                    raise err(f"{what} has fields totaling {w} bits; p4c-bm2-ss (bmv2) accepts only headers "
                              "with fields totaling a multiple of 8 bits (pad it, or use a struct for "
                              "metadata)", d if name is None else where)
            return st
        if isinstance(d, A.EnumDecl):
            if d.underlying is None:
                return T.EnumT(d.name, list(d.members))
            ut = self.resolve_type(d.underlying, scope)
            if not isinstance(ut, T.BitT):
                raise err("serializable enum needs a bit<> or int<> underlying type", d)
            vals = {}
            for m, e in zip(d.members, d.values or [], strict=False):
                vals[m] = fit(self.const_int(e, scope), ut)
            return T.EnumT(d.name, list(d.members), ut, vals)
        if isinstance(d, A.TypedefDecl):
            return self.resolve_type(d.type, self.g)
        if isinstance(d, (A.ParserTypeDecl, A.ParserDecl)):
            return T.BlockT("parser", d)
        if isinstance(d, (A.ControlTypeDecl, A.ControlDecl)):
            return T.BlockT("control", d)
        if isinstance(d, A.PackageDecl):
            return T.BlockT("package", d)
        raise err(f"cannot use {type(d).__name__} as a type", where)

    # ------------------------------------------------------------------ generic functions
    def scratch(self) -> Any:
        """Where an expression evaluated only for its type goes (the lowering: a list it drops)."""
        return Emitter()

    def function_scope(self, b: FuncBind, e: A.Call, scope: Scope) -> Scope:
        """The scope a call of function `b` checks and lowers its signature and body in: the
        function's own for a plain function; for a generic one (`T f<T>(in T x)`, P4-16 v1.2.4
        section 7.2.12 and 10.1) a scope that binds its type parameters to the call's explicit
        type arguments (`f<bit<8>>(x)`) or to the types the arguments give them (`f(x)`, x of
        type bit<8>), one per distinct binding: the function is monomorphised per instantiation."""
        proto = b.decl.proto
        tps = list(proto.type_params)
        if not tps:
            if e.type_args:
                raise err(f"function {proto.name} is not generic: it takes no type arguments", e)
            return b.scope
        found: dict[str, T.Type] = {}
        if e.type_args:
            if len(e.type_args) != len(tps):
                raise err(f"function {proto.name} takes {len(tps)} type argument(s), "
                          f"{len(e.type_args)} given", e)
            for name, tr in zip(tps, e.type_args, strict=True):
                at = self.resolve_type(tr, scope)
                if not isinstance(at, T.DontCareT):  # `_`: inferred like an omitted one
                    found[name] = at
        if len(found) < len(tps):
            from p4compiler.python_backend.calls import ordered_args

            args = ordered_args(e, proto.params, f"function {proto.name}")
            for p, a in zip(proto.params, args, strict=False):
                if a is None or not _mentions(p.type, tps):
                    continue
                v = self.value(a, scope, self.scratch())
                self._unify_param(p.type, v.type, tps, found, b.scope, a, proto.name)
        missing = [t for t in tps if t not in found]
        if missing:
            raise err(f"cannot infer type parameter {missing[0]} of function {proto.name} from the "
                      f"arguments; give it explicitly ({proto.name}<...>(...))", e)
        targs = [found[t] for t in tps]
        for name, at in zip(tps, targs, strict=True):
            if isinstance(at, (T.IntT, T.VoidT, T.DontCareT, T.StringT, T.ExternT, T.BlockT, T.ListT,
                               T.MatchKindT)):
                raise err(f"type parameter {name} of function {proto.name} cannot be {at}"
                          + ("; give the argument a width (e.g. 8w1) or the type argument explicitly"
                             if isinstance(at, T.IntT) else ""), e)
        key = (id(b.decl), tuple(type_key(a) for a in targs))
        fs = self.generic_fn_scopes.get(key)
        if fs is None:
            fs = Scope(b.scope, kind="generic")
            for name, at in zip(tps, targs, strict=True):
                fs.add(name, TypeBind(at))
            self.generic_fn_scopes[key] = fs
        return fs

    def _unify_param(self, ref: Any, actual: T.Type, tps: list[str], found: dict[str, T.Type],
                     fscope: Scope, node: Any, fname: str) -> None:
        """Bind the type parameters `ref` (a parameter's declared type) mentions so that it is
        `actual` (an argument's type). An untyped integer binds nothing (its width is unknown)."""
        if isinstance(actual, (T.IntT, T.DontCareT, T.ListT)):
            return
        if isinstance(ref, A.NamedTypeRef) and ref.name in tps and not ref.args:
            prev = found.get(ref.name)
            if prev is None:
                found[ref.name] = actual
            elif type_key(prev) != type_key(actual):
                raise err(f"type parameter {ref.name} of function {fname} is {prev} from an earlier "
                          f"argument but {actual} here", node)
            return
        if isinstance(ref, A.NamedTypeRef) and ref.args and isinstance(actual, T.StructLikeT) \
                and actual.generic is not None:
            b = fscope.lookup(ref.name)
            decl, targs = actual.generic
            if isinstance(b, TypeBind) and b.decl is decl and len(targs) == len(ref.args):
                for r, a in zip(ref.args, targs, strict=True):
                    self._unify_param(r, a, tps, found, fscope, node, fname)
            return
        if isinstance(ref, A.StackTypeRef) and isinstance(actual, (T.StackT, T.ArrayT)):
            self._unify_param(ref.element, actual.element, tps, found, fscope, node, fname)
            return
        if isinstance(ref, A.TupleTypeRef) and isinstance(actual, T.TupleT) \
                and len(ref.elements) == len(actual.elements):
            for r, a in zip(ref.elements, actual.elements, strict=True):
                self._unify_param(r, a, tps, found, fscope, node, fname)

    # ------------------------------------------------------------------ constants
    def const_int(self, e: A.Expr, scope: Scope) -> int:
        v = self.expr(e, scope, Emitter())
        if not v.is_const or isinstance(v.const, bool) or not isinstance(v.const, int):
            raise err("expected a compile-time integer", e)
        return v.const

    def coerce_const(self, v: V, t: T.Type, node: Any) -> Any:
        if isinstance(t, T.BitT) and isinstance(v.const, int) and not isinstance(v.const, bool):
            return fit(v.const, t)
        return v.const

    # ------------------------------------------------------------------ expressions
    def expr(self, e: A.Expr, scope: Scope, em: Emitter, want: T.Type | None = None) -> V:
        m = getattr(self, "x_" + type(e).__name__, None)
        if m is None:
            raise err(f"unsupported expression {type(e).__name__}", e)
        v = m(e, scope, em, want)
        return v

    def value(self, e: A.Expr, scope: Scope, em: Emitter, want: T.Type | None = None) -> V:
        """Like expr, but the result must be a value (not a table, extern, ...)."""
        v = self.expr(e, scope, em, want)
        if v.bind is not None:
            raise err(f"{self.text(e)} is not a value", e)
        return v

    def x_IntLit(self, e: A.IntLit, scope, em, want) -> V:
        if e.width is None:
            return V(repr(e.value), T.INT, e.value)
        t = T.BitT(e.width, e.signed)
        if not e.signed and e.value >> e.width:
            raise err(f"value {e.value} does not fit in {t}", e)
        val = fit(e.value, t)
        return V(repr(val), t, val)

    def x_BoolLit(self, e, scope, em, want) -> V:
        return V(repr(e.value), T.BOOL, e.value)

    def x_StringLit(self, e, scope, em, want) -> V:
        return V(repr(e.value), T.STRING, e.value)

    def x_DefaultExpr(self, e, scope, em, want) -> V:
        return V("None", T.DONTCARE, None, bind="default")

    def x_DontCare(self, e, scope, em, want) -> V:
        return V("None", T.DONTCARE, None, bind="default")

    def x_NameExpr(self, e: A.NameExpr, scope: Scope, em, want) -> V:
        b = scope.lookup(e.name)
        if b is None:
            raise err(f"unknown name {e.name}", e)
        return self.bound(b, e)

    def bound(self, b: Any, e: Any) -> V:
        if isinstance(b, Var):
            return V(b.code, b.type)
        if isinstance(b, Const):
            if isinstance(b.value, (int, bool, str)):
                return V(repr(b.value), b.type, b.value)
            return V(repr(b.value), b.type, b.value)
        return V("None", T.VOID, None, bind=b)

    def x_TypeMember(self, e: A.TypeMember, scope: Scope, em, want) -> V:
        if isinstance(e.type, A.ErrorTypeRef):
            if e.member not in self.errors:
                raise err(f"unknown error {e.member}", e)
            return V(repr(e.member), T.ERROR, e.member)
        if isinstance(e.type, A.NamedTypeRef):
            b = scope.lookup(e.type.name)
            if b is not None and not isinstance(b, TypeBind):
                # a value whose name happened to be lexed as a type name
                return self.x_Member(A.Member(A.NameExpr(e.type.name, loc=e.loc), e.member, loc=e.loc),
                                     scope, em, want)
        t = self.resolve_type(e.type, scope)
        if isinstance(t, T.EnumT):
            if e.member not in t.members:
                raise err(f"{t.enum_name} has no member {e.member}", e)
            if t.underlying is not None:
                val = t.values[e.member]
                return V(repr(val), t, val)
            s = f"{t.enum_name}.{e.member}"
            return V(repr(s), t, s)
        raise err(f"cannot take member {e.member} of type {t}", e)

    def x_Member(self, e: A.Member, scope: Scope, em, want) -> V:
        # table.apply().hit / .miss / .action_run
        if isinstance(e.expr, A.Call) and e.member in ("hit", "miss", "action_run"):
            tb = self.table_of_apply(e.expr, scope)
            if tb is not None:
                if e.member in ("hit", "miss"):
                    return V("", T.BOOL)
                return V("", T.STRING, bind=("action_run", tb))
        base = self.expr(e.expr, scope, em)
        if base.bind is not None:
            raise err(f"cannot take member {e.member} of {self.text(e.expr)}", e)
        bt = base.type
        if isinstance(bt, T.StructLikeT):
            ft = bt.field_type(e.member)
            if ft is None:
                raise err(f"{bt.name()} has no field {e.member}", e)
            return V("", ft)
        if isinstance(bt, T.StackT):
            if e.member == "size":
                return V(repr(bt.size), T.BitT(32), bt.size)
            if e.member in ("lastIndex", "last", "next") and scope.find_kind("state") is None:
                # P4-16 8.18 (and p4c's type check): they name the parser's place in the stack
                raise err(f"{self.text(e)}: a stack's {e.member} can only be used in a parser", e)
            if e.member == "lastIndex":
                return V("", T.BitT(32))
            if e.member == "last":
                return V("", bt.element)
            if e.member == "next":
                return V("", bt.element, bind=None)
            raise err(f"header stack has no member {e.member}", e)
        if isinstance(bt, T.ArrayT):
            if e.member == "size":
                return V(repr(bt.size), T.BitT(32), bt.size)
            if e.member in ("next", "last", "lastIndex"):
                raise err(f"{e.member} is only defined for header stacks, not for the array type {bt}", e)
            raise err(f"arrays have no member {e.member} (an array {bt} has .size)", e)
        raise err(f"cannot take member {e.member} of a value of type {bt}", e)

    def table_of_apply(self, call: A.Call, scope: Scope) -> TableBind | None:
        if isinstance(call.callee, A.Member) and call.callee.member == "apply" and isinstance(
            call.callee.expr, A.NameExpr
        ):
            b = scope.lookup(call.callee.expr.name)
            if isinstance(b, TableBind):
                return b
        return None

    def x_Index(self, e: A.Index, scope, em, want) -> V:
        base = self.value(e.expr, scope, em)
        if isinstance(base.type, T.TupleT):  # tuples (Python tuples) take constant indexes
            i = self.const_int(e.index, scope)
            if not 0 <= i < len(base.type.elements):
                raise err(f"index {i} out of range for {base.type}", e)
            et = base.type.elements[i]
            return V("", et, base.const[i] if isinstance(base.const, tuple) else None)
        if not isinstance(base.type, (T.StackT, T.ArrayT)):
            raise err(f"cannot index a value of type {base.type}", e)
        idx = self.value(e.index, scope, em)
        if not isinstance(idx.type, (T.BitT, T.IntT)):
            raise err(f"an index must be an integer, not {idx.type}", e.index)
        if isinstance(base.type, T.ArrayT):
            if idx.is_const and not 0 <= idx.const < base.type.size:
                raise err(f"index {idx.const} out of bounds for {base.type}", e)
            return V("", base.type.element)
        if idx.is_const:
            if not 0 <= idx.const < base.type.size:
                raise err(f"index {idx.const} out of bounds for {base.type}", e)
            return V("", base.type.element)
        return V("", base.type.element)

    def x_Slice(self, e: A.Slice, scope, em, want) -> V:
        base = self.value(e.expr, scope, em)
        hi = self.const_int(e.hi, scope)
        lo = self.const_int(e.lo, scope)
        if isinstance(base.type, T.IntT) and base.is_const:
            w = hi - lo + 1
            val = (base.const >> lo) & ((1 << w) - 1)
            return V(repr(val), T.BitT(w), val)
        if not isinstance(base.type, T.BitT):
            raise err(f"cannot slice a value of type {base.type}", e)
        if not (0 <= lo <= hi < base.type.width):
            raise err(f"slice [{hi}:{lo}] out of range for {base.type}", e)
        w = hi - lo + 1
        if base.is_const:
            val = (base.const >> lo) & ((1 << w) - 1)
            return V(repr(val), T.BitT(w), val)
        return V("", T.BitT(w))

    def x_Unary(self, e: A.Unary, scope, em, want) -> V:
        v = self.value(e.expr, scope, em, want)
        t = v.type
        if e.op == "!":
            if not isinstance(t, T.BoolT):
                raise err(f"! needs a bool, not {t}", e)
            if v.is_const:
                return V(repr(not v.const), T.BOOL, not v.const)
            return V("", T.BOOL)
        if e.op == "+":
            return v
        if isinstance(t, T.IntT):
            if not v.is_const:
                raise err("operand of unknown width", e)
            val = -v.const if e.op == "-" else ~v.const
            return V(repr(val), T.INT, val)
        if not isinstance(t, T.BitT):
            raise err(f"{e.op} needs an integer, not {t}", e)
        if v.is_const:
            val = fit(-v.const if e.op == "-" else ~v.const, t)
            return V(repr(val), t, val)
        return V("", t)

    def unify(self, lv: V, r: V, e: Any, op: str) -> T.Type:
        lt, rt = lv.type, r.type
        if isinstance(lt, T.IntT) and isinstance(rt, T.IntT):
            return T.INT
        if isinstance(lt, T.IntT):
            return rt
        if isinstance(rt, T.IntT):
            return lt
        if isinstance(lt, T.BitT) and isinstance(rt, T.BitT):
            if lt != rt:
                raise err(f"operands of {op} have different types: {lt} and {rt}", e)
            return lt
        if T.same_type(lt, rt):
            return lt
        if isinstance(lt, T.EnumT) and lt is rt:
            return lt
        if isinstance(lt, T.EnumT) and isinstance(rt, T.EnumT) and lt.enum_name == rt.enum_name:
            return lt
        if isinstance(lt, T.StructLikeT) and isinstance(rt, T.StructLikeT) and lt is rt:
            return lt
        if isinstance(lt, T.StructLikeT) and isinstance(rt, T.ListT):
            return lt
        raise err(f"operands of {op} have incompatible types: {lt} and {rt}", e)

    def x_Binary(self, e: A.Binary, scope, em, want) -> V:
        op = e.op
        if op in ("&&", "||"):
            lv = self.value(e.left, scope, em)
            r = self.value(e.right, scope, em)
            for x, side in ((lv, e.left), (r, e.right)):
                if not isinstance(x.type, T.BoolT):
                    raise err(f"{op} needs bool operands, not {x.type}", side)
            if lv.is_const and r.is_const:
                val = (lv.const and r.const) if op == "&&" else (lv.const or r.const)
                return V(repr(val), T.BOOL, val)
            return V("", T.BOOL)
        lv = self.value(e.left, scope, em)
        r = self.value(e.right, scope, em, want=lv.type if not isinstance(lv.type, T.IntT) else None)
        if op == "++":
            return self.concat(lv, r, e)
        if op in ("<<", ">>"):
            return self.shift(lv, r, op, e)
        t = self.unify(lv, r, e, op)
        if op in ("==", "!=", "<", ">", "<=", ">="):
            if op not in ("==", "!=") and not isinstance(t, (T.BitT, T.IntT)):
                raise err(f"{op} needs integer operands, not {t}", e)
            self.coerce(lv, t, e.left)
            self.coerce(r, t, e.right)
            if lv.is_const and r.is_const:
                val = _CMP[op](lv.const, r.const)
                return V(repr(val), T.BOOL, val)
            return V("", T.BOOL)
        if not isinstance(t, (T.BitT, T.IntT)):
            raise err(f"{op} needs integer operands, not {t}", e)
        if op in ("/", "%"):
            self.check_division(op, lv, r, t, e)
        if lv.is_const and r.is_const:
            val = self.fold(op, lv.const, r.const, t, e)
            return V(repr(val), t, val)
        if isinstance(t, T.IntT):
            raise err(f"operands of {op} need a known width", e)
        self.coerce(lv, t, e.left)
        self.coerce(r, t, e.right)
        if op in ("&", "|", "^", "+", "-", "*", "/", "%", "|+|", "|-|"):
            return V("", t)
        raise err(f"unsupported operator {op}", e)

    def check_division(self, op: str, lv: V, r: V, t: T.Type, e: Any) -> None:
        """P4-16 v1.2.4 defines / and % on unsigned values only (section 8.6; p4c: "Cannot
        operate on signed values"). What p4c-bm2-ss keeps of the rest: its mid end folds
        constants, rewrites a division or modulo by a power of two (1 included) as a shift or
        a mask and one of the constant 0 as 0 (StrengthReduction), then refuses any / or % left
        ("could not evaluate expression at compilation time", CompileTimeOperations): bmv2
        never divides at run time. So a run-time divisor, a constant divisor that is not a
        power of two (with a run-time dividend) and a constant 0 divisor are not portable."""
        what = "division (/)" if op == "/" else "modulo (%)"
        if isinstance(t, T.BitT) and t.signed:
            raise err(f"{what} is not defined on signed values ({t}); P4-16 divides bit<W> "
                      "values only, and p4c refuses it", e)
        if lv.is_const and r.is_const or self.allow_nonportable:
            return  # folded (a negative or zero constant is refused by `fold`)
        if r.is_const and r.const > 0 and r.const & (r.const - 1) == 0:
            return  # p4c-bm2-ss makes it a shift (/) or a mask (%)
        if lv.is_const and lv.const == 0 and not r.is_const:
            return  # 0 / x is 0 for p4c-bm2-ss
        if not r.is_const:
            why = "by a value that is not a compile-time constant"
        elif r.const == 0:
            why = "by zero"
        else:
            why = f"of a run-time value by {r.const}, which is not a power of two,"
        raise err(f"{what} {why} is not portable: p4c-bm2-ss (v1model) divides only constants, "
                  f"and by powers of two (shifts and masks) ({NONPORTABLE_HINT})", e)

    def fold(self, op: str, a: int, b: int, t: T.Type, e: Any) -> int:
        if op in ("/", "%") and b == 0:
            raise err("division by zero", e)
        if op == "/":
            if a < 0 or b < 0:
                raise err("division of negative values is not allowed", e)
            val = a // b
        elif op == "%":
            if a < 0 or b < 0:
                raise err("modulo of negative values is not allowed", e)
            val = a % b
        elif op == "|+|":
            val = a + b
            if isinstance(t, T.BitT):
                lo, hi = (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed else (0, t.mask)
                return max(min(val, hi), lo)
        elif op == "|-|":
            val = a - b
            if isinstance(t, T.BitT):
                lo, hi = (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed else (0, t.mask)
                return max(min(val, hi), lo)
        else:
            val = {"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b}[op]
        return fit(val, t) if isinstance(t, T.BitT) else val

    def shift(self, lv: V, r: V, op: str, e: Any) -> V:
        lt = lv.type
        if isinstance(r.type, T.BitT) and r.type.signed:
            raise err("shift amount must be unsigned", e.right)
        if isinstance(r.type, T.IntT) and r.is_const and r.const < 0:
            raise err("shift amount must not be negative", e.right)
        if isinstance(lt, T.IntT):
            if not (lv.is_const and r.is_const):
                raise err("left operand of a shift needs a known width", e.left)
            val = lv.const << r.const if op == "<<" else lv.const >> r.const
            return V(repr(val), T.INT, val)
        if not isinstance(lt, T.BitT):
            raise err(f"cannot shift a value of type {lt}", e)
        if r.is_const and lv.is_const:
            n = r.const
            val = fit(lv.const << n, lt) if op == "<<" else lv.const >> n
            return V(repr(val), lt, val)
        return V("", lt)

    def concat(self, lv: V, r: V, e: Any) -> V:
        lt, rt = lv.type, r.type
        if not isinstance(lt, T.BitT) or not isinstance(rt, T.BitT):
            raise err(f"++ needs bit<> or int<> operands with known widths, not {lt} and {rt}", e)
        t = T.BitT(lt.width + rt.width, lt.signed)
        if lv.is_const and r.is_const:
            val = fit(((lv.const & lt.mask) << rt.width) | (r.const & rt.mask), t)
            return V(repr(val), t, val)
        return V("", t)

    def x_Ternary(self, e: A.Ternary, scope, em, want) -> V:
        c = self.value(e.cond, scope, em)
        if not isinstance(c.type, T.BoolT):
            raise err("condition must be a bool", e.cond)
        a = self.value(e.then, scope, em, want)
        b = self.value(e.other, scope, em, want)
        t = self.unify(a, b, e, "?:")
        if isinstance(t, T.IntT) and want is not None and isinstance(want, T.BitT):
            t = want
        if c.is_const:
            return a if c.const else b
        self.coerce(a, t, e.then)
        self.coerce(b, t, e.other)
        return V("", t)

    def x_Cast(self, e: A.Cast, scope, em, want) -> V:
        t = self.resolve_type(e.type, scope)
        v = self.value(e.expr, scope, em, want=t)
        return self.cast(v, t, e)

    def cast(self, v: V, t: T.Type, e: Any) -> V:
        s = v.type
        if T.same_type(s, t) or s is t:
            return V(v.code, t, v.const)
        if isinstance(t, T.BitT):
            if isinstance(s, T.BoolT):
                if t.width != 1:
                    raise err(f"cannot cast bool to {t} (only to bit<1>)", e)
                if v.is_const:
                    return V(repr(int(v.const)), t, int(v.const))
                return V("", t)
            if isinstance(s, T.EnumT) and s.underlying is not None:
                s = s.underlying
            if isinstance(s, T.IntT):
                if v.is_const:
                    val = fit(v.const, t)
                    return V(repr(val), t, val)
                return V("", t)
            if isinstance(s, T.BitT):
                if v.is_const:
                    val = fit(v.const, t)
                    return V(repr(val), t, val)
                if not t.signed:
                    if not s.signed and s.width <= t.width:
                        return V(v.code, t)
                    return V("", t)
                if s.signed and s.width <= t.width:
                    return V(v.code, t)
                return V("", t)
            raise err(f"cannot cast {s} to {t}", e)
        if isinstance(t, T.BoolT):
            if isinstance(s, T.BitT) and s.width == 1:
                if v.is_const:
                    return V(repr(bool(v.const)), T.BOOL, bool(v.const))
                return V("", T.BOOL)
            if isinstance(s, T.IntT) and v.is_const and v.const in (0, 1):
                return V(repr(bool(v.const)), T.BOOL, bool(v.const))
            raise err(f"cannot cast {s} to bool", e)
        if isinstance(t, T.EnumT) and t.underlying is not None:
            inner = self.cast(v, t.underlying, e)
            return V(inner.code, t, inner.const)
        if isinstance(t, T.IntT) and v.is_const:
            return V(repr(v.const), T.INT, v.const)
        if isinstance(t, T.StructLikeT) and isinstance(s, T.ListT):
            return V(v.code, t, bind=v.bind)
        raise err(f"cannot cast {s} to {t}", e)

    def coerce(self, v: V, t: T.Type, node: Any) -> str:
        """Python code for v converted implicitly to type t (constants only change width)."""
        s = v.type
        if isinstance(t, T.BitT):
            if isinstance(s, T.IntT):
                if v.is_const:
                    val = v.const
                    if not t.signed and (val < 0 or val >> t.width):
                        # p4c warns and truncates; do the same
                        val = fit(val, t)
                    return repr(fit(val, t))
                return v.code
            if isinstance(s, T.BitT):
                if s != t:
                    raise err(f"cannot use a {s} value where {t} is expected (add a cast)", node)
                return v.code
            if isinstance(s, T.EnumT) and s.underlying is not None and s.underlying == t:
                return v.code
            raise err(f"cannot use a {s} value where {t} is expected", node)
        if isinstance(t, T.BoolT):
            if not isinstance(s, T.BoolT):
                raise err(f"cannot use a {s} value where bool is expected", node)
            return v.code
        if isinstance(t, T.EnumT) and t.underlying is not None and isinstance(s, T.IntT) and v.is_const:
            return repr(fit(v.const, t.underlying))
        if isinstance(t, T.VarbitT):
            return v.code
        if isinstance(t, T.ArrayT) and not (isinstance(s, T.ArrayT) and T.same_type(s, t)):
            raise err(f"cannot use a {s} value where {t} is expected", node)
        return v.code

    def x_ListExpr(self, e: A.ListExpr, scope, em, want) -> V:
        if isinstance(want, T.StructLikeT):
            return self.build_struct(want, [(None, x) for x in e.items], scope, em, e)
        items = [self.value(x, scope, em) for x in e.items]
        return V("", T.ListT([i.type for i in items]))

    def x_StructExpr(self, e: A.StructExpr, scope, em, want) -> V:
        if not isinstance(want, T.StructLikeT):
            raise err("a struct initializer needs a known target type here", e)
        return self.build_struct(want, [(n, x) for n, x in e.fields], scope, em, e)

    def build_struct(self, t: T.StructLikeT, items: list, scope, em, e) -> V:
        if len(items) != len(t.fields):
            raise err(f"{t.name()} has {len(t.fields)} fields, the initializer gives {len(items)}", e)
        named = {n: x for n, x in items if n is not None}
        for i, (fname, ftype) in enumerate(t.fields):
            x = named.get(fname) if named else items[i][1]
            if x is None:
                raise err(f"initializer for {t.name()} lacks field {fname}", e)
            v = self.value(x, scope, em, want=ftype)
            if not isinstance(ftype, (T.StructLikeT, T.StackT)):
                self.coerce(v, ftype, x)
        return V("", t, init=True)

    def x_Mask(self, e, scope, em, want) -> V:
        raise err("&&& is only allowed in select cases and table entries", e)

    def x_RangeExpr(self, e, scope, em, want) -> V:
        raise err(".. is only allowed in select cases and table entries", e)

    def x_Construct(self, e, scope, em, want) -> V:
        raise err("constructor calls are only allowed in instantiations", e)

    def x_Call(self, e: A.Call, scope: Scope, em: Emitter, want) -> V:
        from p4compiler.python_backend.calls import compile_call

        return compile_call(self, e, scope, em, want)

    # ------------------------------------------------------------------ text of expressions (P4Info names)
    def text(self, e: Any) -> str:
        if isinstance(e, A.NameExpr):
            return e.name
        if isinstance(e, A.Member):
            return f"{self.text(e.expr)}.{e.member}"
        if isinstance(e, A.TypeMember):
            tn = "error" if isinstance(e.type, A.ErrorTypeRef) else getattr(e.type, "name", "?")
            return f"{tn}.{e.member}"
        if isinstance(e, A.Index):
            return f"{self.text(e.expr)}[{self.text(e.index)}]"
        if isinstance(e, A.Slice):
            return f"{self.text(e.expr)}[{self.text(e.hi)}:{self.text(e.lo)}]"
        if isinstance(e, A.Call):
            args = ", ".join(self.text(a.value) if a.value is not None else "_" for a in e.args)
            return f"{self.text(e.callee)}({args})"
        if isinstance(e, A.IntLit):
            if e.width is None:
                return str(e.value)
            return f"{e.width}{'s' if e.signed else 'w'}{e.value}"
        if isinstance(e, A.BoolLit):
            return "true" if e.value else "false"
        if isinstance(e, A.Binary):
            return f"{self.text(e.left)} {e.op} {self.text(e.right)}"
        if isinstance(e, A.Unary):
            return f"{e.op}{self.text(e.expr)}"
        if isinstance(e, A.Cast):
            return f"({self.type_text(e.type)}){self.text(e.expr)}"
        if isinstance(e, A.Ternary):
            return f"{self.text(e.cond)} ? {self.text(e.then)} : {self.text(e.other)}"
        if isinstance(e, A.StructExpr):
            return "{" + ", ".join(f"{n} = {self.text(v)}" for n, v in e.fields) + "}"
        if isinstance(e, A.ListExpr):
            return "{" + ", ".join(self.text(v) for v in e.items) + "}"
        if isinstance(e, A.StringLit):
            return f'"{e.value}"'
        return type(e).__name__

    def type_text(self, t: Any) -> str:
        if isinstance(t, A.BitTypeRef):
            return f"{'int' if t.signed else 'bit'}<{self.text(t.width)}>"
        if isinstance(t, A.NamedTypeRef):
            return t.name
        if isinstance(t, A.BoolTypeRef):
            return "bool"
        return "?"


_CMP = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
}


def _mentions(ref: Any, names: list[str]) -> bool:
    """Whether a type reference names one of the type parameters `names`."""
    if isinstance(ref, A.NamedTypeRef):
        return (ref.name in names and not ref.args) or any(_mentions(a, names) for a in ref.args)
    if isinstance(ref, A.StackTypeRef):
        return _mentions(ref.element, names)
    if isinstance(ref, A.TupleTypeRef):
        return any(_mentions(x, names) for x in ref.elements)
    return False
