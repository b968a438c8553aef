"""IR -> Python: the Python back end's emitter over `p4compiler.ir` (the counterpart of
`c_backend.emit`), so that a fix in the front end or the lowering reaches both back ends.

    cp = compile_file("prog.p4")        # type check, lower, then this emitter
    cp.source                          # the Python this module wrote

The module it writes defines one class per header/struct/union type and the per-header
extract/emit functions at module level, and `__build(RT)`, which binds the program's stateful
objects from the switch's runtime `RT` and returns the six v1model block functions (one Python
function each: sub-controls, actions and functions are already inlined by the lowering) and the
state classes (their run-time support: softswitch.runtime and the switch's tables). Values:
bit<W> a Python int in 0..2^W-1, int<W> a Python int in the signed range (the IR's constants and
the control plane's values are two's complement bits, converted where they enter), bool a Python
bool, error and plain enum values their numbers (the IR's), varbit values (value, bits) once
extracted.

The IR's `Labeled`/`Leave` (inlined `return`) become a flag per label: a `Leave` sets it, and
the statements after one that may leave run under `if not flag:`. A `Loop` is a `while True:`
(its update statements at the top, skipped the first time, so that `continue` runs them);
`Break`/`Continue` are Python's, and a `Leave` out of a loop also breaks out of it (and out of
each loop around it, tested after the inner loop ends). Parsers are one function
with a loop over a state number; a sub-parser is a nested loop (`accept` breaks out of it; its
`reject_outs` run in an `except ParserError` that raises again).
"""

from __future__ import annotations

from typing import Any

from p4compiler import ir
from p4compiler.errors import P4Error
from p4compiler.lower import ALGORITHMS
from p4compiler.python_backend.types import pyname

_ALGO_NAMES = {n: name for name, n in ALGORITHMS.items()}  # the IR's algorithm numbers -> names
_COMPOSITE = (ir.Header, ir.Struct, ir.Union_, ir.Stack)


def _sext(v: int, w: int) -> int:
    return v - (1 << w) if w and v >> (w - 1) else v


def _mask(w: int) -> int:
    return (1 << w) - 1


def _wrap(code: str, t: ir.Type) -> str:
    """Reduce a Python int expression to the range of bit<W>/int<W>."""
    assert isinstance(t, ir.Bits)
    if t.signed:
        h = 1 << (t.width - 1)
        return f"((({code}) + {h:#x} & {_mask(t.width):#x}) - {h:#x})"
    return f"(({code}) & {_mask(t.width):#x})"


class PyEmitter:
    """Writes the Python module of one lowered program (see the module docstring)."""

    def __init__(self, prog: ir.Program, info: Any, externs: list[Any]) -> None:
        self.p = prog
        self.info = info
        self.externs = externs
        self.lines: list[str] = []
        self.n = 0
        self.in_parser = False
        self.accept = "return"  # what `accept` does in the (sub-)parser being written
        self.state_var = ""
        self.states: dict[str, int] = {}
        self._leaves: dict[int, frozenset[str]] = {}
        self.loops: list[set[str]] = []  # per loop being written, innermost last: labels inside it

    # ------------------------------------------------------------------ entry
    def run(self) -> str:
        out: list[str] = []
        for t in self.p.types:
            out.extend(self.class_src(t))
        for t in self.p.types:
            if isinstance(t, ir.Header):
                out.extend(self.extract_src(t))
                out.extend(self.emit_src(t))
        out.append("def __build(RT):")
        body: list[str] = []
        body.extend(self.objects())
        self.lines = []
        self.parser_fn()
        for role, params in (
            ("verify_checksum", "P, hdr, meta"),
            ("ingress", "P, hdr, meta, sm"),
            ("egress", "P, hdr, meta, sm"),
            ("compute_checksum", "P, hdr, meta"),
            ("deparser", "P, hdr"),
        ):
            self.line(f"def _{role}({params}):", 0)
            if "sm" not in params:
                self.line("sm = P.sm", 1)  # mark_to_drop and checksum_error name it
            self.block(self.p.controls[role], 1)
            self.line("", 0)
        body.extend(self.lines)
        roles = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")
        blocks = ", ".join(f"{r!r}: _{r}" for r in roles)
        hdr, meta, sm = self.p.headers_type.name, self.p.meta_type.name, self.p.std_meta_type.name
        body.append(
            f"return {{'blocks': {{{blocks}}}, 'classes': ({hdr}, {meta}, {sm}), "
            f"'errors': {list(self.p.errors)!r}}}"
        )
        out.extend("    " + ln if ln else "" for ln in body)
        return "\n".join(out) + "\n"

    # ------------------------------------------------------------------ classes and header I/O
    def default(self, t: ir.Type) -> str:
        if isinstance(t, ir.Bool):
            return "False"
        if isinstance(t, (ir.Bits, ir.Varbit)):
            return "0"
        if isinstance(t, ir.Stack):
            return f"_Stack([{t.element.name}() for _ in range({t.size})])"
        return f"{t.name}()"  # type: ignore[attr-defined]

    def class_src(self, t: ir.Type) -> list[str]:
        if not isinstance(t, (ir.Header, ir.Struct, ir.Union_)):
            return []
        name = t.name
        attrs = [(pyname(n), ft) for n, ft in t.fields]
        hdr = isinstance(t, ir.Header)
        out = [f"class {name}({'_P4Header' if hdr else '_P4Struct'}):"]
        out.append(f"    __slots__ = {tuple(a for a, _ in attrs)!r}")
        out.append("    def __init__(self):")
        init = ["        self._v = False"] if hdr else []
        init += [f"        self.{a} = {self.default(ft)}" for a, ft in attrs]
        out.extend(init or ["        pass"])
        out.append("    def _copy(self):")
        out.append(f"        n = {name}.__new__({name})")
        if hdr:
            out.append("        n._v = self._v")
        for a, ft in attrs:
            comp = isinstance(ft, _COMPOSITE)
            out.append(f"        n.{a} = self.{a}._copy()" if comp else f"        n.{a} = self.{a}")
        out.append("        return n")
        out.append("    def _set(self, o):")
        sets = ["        self._v = o._v"] if hdr else []
        for a, ft in attrs:
            comp = isinstance(ft, _COMPOSITE)
            sets.append(f"        self.{a}._set(o.{a})" if comp else f"        self.{a} = o.{a}")
        out.extend(sets or ["        pass"])
        out.append("")
        return out

    @staticmethod
    def _varbit_spec(t: ir.Header) -> list[tuple[str, int | None, bool, bool]]:
        """runtime._extract_varbit/_pack_varbit's field spec: (attribute, width or None for the
        varbit field, signed, bool)."""
        return [
            (
                pyname(n),
                None if isinstance(ft, ir.Varbit) else ir.wire_width(ft),
                isinstance(ft, ir.Bits) and ft.signed,
                isinstance(ft, ir.Bool),
            )
            for n, ft in t.fields
        ]

    def extract_src(self, t: ir.Header) -> list[str]:
        name = f"_ex_{t.name}"
        if t.has_varbit:
            vb = next(ft for _, ft in t.fields if isinstance(ft, ir.Varbit))
            assert isinstance(vb, ir.Varbit)
            return [f"def {name}(P, h, varbits=None):",
                    f"    _extract_varbit(P, h, {self._varbit_spec(t)!r}, varbits, {vb.max_width})", ""]
        width = t.fixed_width()
        nbytes = width // 8
        out = [f"def {name}(P, h, varbits=None):", "    o = P.off", f"    e = o + {nbytes}",
               "    if e > P.n:", "        raise ParserError('PacketTooShort')"]
        if nbytes:
            out.append("    v = int.from_bytes(P.data[o:e], 'big')")
        shift = width
        for n, ft in t.fields:
            w = ir.wire_width(ft)
            shift -= w
            if shift == 0 and w == width:
                raw = "v"
            elif shift == 0:
                raw = f"(v & {_mask(w):#x})"
            elif shift + w == width:
                raw = f"(v >> {shift})"
            else:
                raw = f"((v >> {shift}) & {_mask(w):#x})"
            if isinstance(ft, ir.Bool):
                raw = f"bool({raw})"
            elif isinstance(ft, ir.Bits) and ft.signed:
                raw = f"_sext({raw}, {w})"
            out.append(f"    h.{pyname(n)} = {raw}")
        out += ["    h._v = True", "    P.off = e", ""]
        return out

    def emit_src(self, t: ir.Header) -> list[str]:
        name = f"_em_{t.name}"
        if t.has_varbit:
            return [f"def {name}(out, h):", "    if h._v:",
                    f"        out.append(_pack_varbit(h, {self._varbit_spec(t)!r}))", ""]
        width = t.fixed_width()
        terms = []
        shift = width
        for n, ft in t.fields:
            w = ir.wire_width(ft)
            shift -= w
            val = f"h.{pyname(n)}"
            if isinstance(ft, ir.Bool):
                val = f"int({val})"
            elif isinstance(ft, ir.Bits) and ft.signed:
                val = f"({val} & {_mask(w):#x})"
            terms.append(f"({val} << {shift})" if shift else val)
        out = [f"def {name}(out, h):", "    if h._v:"]
        out.append(f"        out.append(({' | '.join(terms)}).to_bytes({width // 8}, 'big'))" if terms
                   else "        pass")
        return out + [""]

    # ------------------------------------------------------------------ stateful objects
    def objects(self) -> list[str]:
        """Bind the program's externs, tables and value sets (by IR number) from the runtime."""
        out = []
        numbered = {
            "register": ("_R", self.p.registers),
            "counter": ("_C", self.p.counters),
            "meter": ("_M", self.p.meters),
            "direct_meter": ("_DM", self.p.direct_meters),
        }
        for x in self.externs:
            call = f"RT.extern({x.kind!r}, {x.p4name!r}, {x.args!r})"
            pre, names = numbered.get(x.kind, ("", []))
            if x.p4name in names:
                out.append(f"{pre}{names.index(x.p4name)} = {call}")
            else:
                out.append(call)
        # tables after the externs: a table's direct meter must exist when the table is made
        for i, name in enumerate(self.p.tables):
            out.append(f"_T{i} = RT.table({name!r}).run")
        sizes = {v.name: v.size for v in self.info.value_sets}
        for i, name in enumerate(self.p.value_sets):
            out.append(f"_VS{i} = RT.value_set({name!r}, {sizes[name]})")
        return out

    # ------------------------------------------------------------------ helpers
    def line(self, s: str, lvl: int) -> None:
        self.lines.append("    " * lvl + s)

    def tmp(self, prefix: str) -> str:
        self.n += 1
        return f"_{prefix}{self.n}"

    def leaves(self, s: Any) -> frozenset[str]:
        """Labels that `s` may leave to that are not inside it (so code after `s` may not run)."""
        got = self._leaves.get(id(s))
        if got is not None:
            return got
        if isinstance(s, ir.Leave):
            res = frozenset([s.label])
        elif isinstance(s, ir.Labeled):
            res = self.leaves_all(s.body) - {s.label}
        elif isinstance(s, ir.If):
            res = self.leaves_all(s.then) | self.leaves_all(s.other)
        elif isinstance(s, ir.Switch):
            res = frozenset().union(*(self.leaves_all(c.body) for c in s.cases))
        elif isinstance(s, ir.TableApply):
            res = frozenset().union(*(self.leaves_all(c.body) for c in s.cases))
        elif isinstance(s, ir.Loop):
            res = self.leaves_all(s.body) | self.leaves_all(s.update)
        else:
            res = frozenset()
        self._leaves[id(s)] = res
        return res

    def leaves_all(self, ss: list[ir.Stmt]) -> frozenset[str]:
        return frozenset().union(*(self.leaves(s) for s in ss))

    # ------------------------------------------------------------------ expressions
    def x(self, e: ir.Expr) -> str:
        return getattr(self, "x_" + type(e).__name__)(e)

    def x_Const(self, e: ir.Const) -> str:
        t = e.type
        if isinstance(t, ir.Bool):
            return "True" if e.value else "False"
        if isinstance(t, ir.Bits) and t.signed:
            return repr(_sext(e.value, t.width))
        return repr(e.value) if e.value < 1 << 16 else f"{e.value:#x}"

    def x_Var(self, e: ir.Var) -> str:
        return e.name

    def x_Member(self, e: ir.Member) -> str:
        return f"{self.x(e.base)}.{pyname(e.field)}"

    def x_Index(self, e: ir.Index) -> str:
        b = self.x(e.base)
        st = e.base.type
        assert isinstance(st, ir.Stack)
        i = e.index
        if isinstance(i, ir.Const):
            return f"{b}.h[{i.value}]" if i.value < st.size else f"_stack_at({b}, {i.value})"
        ref = ir.stack_ref(e) if self.in_parser else None
        if ref is not None:  # stack.next / stack.last in a parser: StackOutOfBounds when absent
            return f"_stack_{ref}({b})"
        return f"_stack_at({b}, {self.x(i)})"

    def x_StackNext(self, e: ir.StackNext) -> str:
        return f"{self.x(e.base)}.nxt"

    def x_ActionArg(self, e: ir.ActionArg) -> str:
        raise P4Error("internal error: ActionArg outside a table's action binding")

    def x_Unary(self, e: ir.Unary) -> str:
        a = self.x(e.expr)
        if e.op == "lnot":
            return f"(not {a})"
        t = e.type
        assert isinstance(t, ir.Bits)
        if e.op == "neg":
            return _wrap(f"-{a}", t)
        return f"(~{a})" if t.signed else f"({a} ^ {_mask(t.width):#x})"

    def x_BinOp(self, e: ir.BinOp) -> str:
        op = e.op
        a, b = self.x(e.left), self.x(e.right)
        if op == "land":
            return f"({a} and {b})"
        if op == "lor":
            return f"({a} or {b})"
        if op in ("eq", "ne", "lt", "le", "gt", "ge"):  # int<W> values are signed Python ints
            c = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
            return f"({a} {c} {b})"
        t = e.type
        assert isinstance(t, ir.Bits), e
        w = t.width
        if op in ("add", "sub", "mul"):
            return _wrap(f"{a} {'+' if op == 'add' else '-' if op == 'sub' else '*'} {b}", t)
        if op in ("and", "or", "xor"):  # closed over both ranges (Python's ints are two's complement)
            return f"({a} {'&' if op == 'and' else '|' if op == 'or' else '^'} {b})"
        if op in ("div", "mod"):
            c = "//" if op == "div" else "%"
            if isinstance(e.right, ir.Const) and e.right.value:
                return f"({a} {c} {b})"
            return f"({a} {c} {b} if {b} else 0)"  # x/0 = 0, as the C back end
        if op == "shl":
            if isinstance(e.right, ir.Const):
                return "0" if e.right.value >= w else _wrap(f"{a} << {b}", t)
            return f"({_wrap(f'{a} << {b}', t)} if {b} < {w} else 0)"
        if op == "shr":
            if isinstance(e.right, ir.Const) and e.right.value >= w:
                return f"(-1 if {a} < 0 else 0)" if t.signed else "0"
            return f"({a} >> {b})"  # Python's >> is arithmetic on signed values, 0 past the width
        if op in ("addsat", "subsat"):
            c = "+" if op == "addsat" else "-"
            if t.signed:
                h = 1 << (w - 1)
                return f"max(min({a} {c} {b}, {h - 1}), {-h})"
            return f"min({a} + {b}, {_mask(w):#x})" if op == "addsat" else f"max({a} - {b}, 0)"
        raise P4Error(f"internal error: the Python emitter has no operator {op}")

    def x_Concat(self, e: ir.Concat) -> str:
        lt, rt = e.left.type, e.right.type
        assert isinstance(lt, ir.Bits) and isinstance(rt, ir.Bits)
        a, b = self.x(e.left), self.x(e.right)
        if lt.signed:
            a = f"({a} & {_mask(lt.width):#x})"
        if rt.signed:
            b = f"({b} & {_mask(rt.width):#x})"
        code = f"(({a} << {rt.width}) | {b})"
        t = e.type
        return _wrap(code, t) if isinstance(t, ir.Bits) and t.signed else code

    def x_Slice(self, e: ir.Slice) -> str:
        a = self.x(e.expr)
        w = e.hi - e.lo + 1
        st = e.expr.type
        if e.lo == 0 and isinstance(st, ir.Bits) and w == st.width and not st.signed:
            return a
        return f"(({a} >> {e.lo}) & {_mask(w):#x})" if e.lo else f"({a} & {_mask(w):#x})"

    def x_Cast(self, e: ir.Cast) -> str:
        a = self.x(e.expr)
        s, t = e.expr.type, e.type
        if isinstance(t, ir.Bool):
            return f"({a} != 0)" if isinstance(s, ir.Bits) else a
        assert isinstance(t, ir.Bits)
        if isinstance(s, ir.Bool):
            return f"int({a})"
        assert isinstance(s, ir.Bits), e
        if not t.signed:
            if not s.signed and s.width <= t.width:
                return a
            return f"({a} & {_mask(t.width):#x})"
        if s.signed and s.width <= t.width:
            return a
        return _wrap(a, t)

    def x_Mux(self, e: ir.Mux) -> str:
        return f"({self.x(e.then)} if {self.x(e.cond)} else {self.x(e.other)})"

    def x_IsValid(self, e: ir.IsValid) -> str:
        b = self.x(e.expr)
        if isinstance(e.expr.type, ir.Union_):
            return f"_union_valid({b})"
        return f"{b}._v"

    def x_Lookahead(self, e: ir.Lookahead) -> str:
        return f"_peek(P, {e.width})"

    def x_PacketLength(self, e: ir.PacketLength) -> str:
        return "P.n"

    def fields(self, items: list[ir.FieldListItem]) -> str:
        """A tuple of (value, width) pairs as the hash/checksum helpers take them; the fields of
        an invalid header are left out (one validity test per header, not per field)."""
        parts: list[str] = []
        group: list[str] = []
        gvalid: Any = None

        def flush() -> None:
            if group:
                parts.append(f"*(({', '.join(group)},) if {self.x(gvalid)} else ())")
                group.clear()

        for it in items:
            v = self.x(it.expr)
            t = it.expr.type
            if it.width < 0:  # varbit: (value, bits) once extracted, nothing before
                code = f"({v} if type({v}) is tuple else (0, 0))"
            elif isinstance(t, ir.Bool):
                code = f"(int({v}), 1)"
            elif isinstance(t, ir.Bits) and t.signed:
                code = f"({v} & {_mask(t.width):#x}, {it.width})"
            else:
                code = f"({v}, {it.width})"
            if it.valid is None:
                flush()
                parts.append(code)
            else:
                if it.valid is not gvalid:
                    flush()
                    gvalid = it.valid
                group.append(code)
        flush()
        return "(" + "".join(p + ", " for p in parts) + ")"

    # ------------------------------------------------------------------ statements
    def block(self, ss: list[ir.Stmt], lvl: int) -> None:
        start = len(self.lines)
        guard = -1
        for i, s in enumerate(ss):
            self.s(s, lvl)
            if isinstance(s, (ir.Leave, ir.Exit, ir.ParserError, ir.Break, ir.Continue)):
                break  # the rest cannot run
            lv = self.leaves(s)
            out = lv - self.loops[-1] if self.loops and isinstance(s, ir.Loop) else frozenset()
            if out:  # an inner loop ended by a return out of this loop too
                self.line(f"if {' or '.join(f'_f_{x}' for x in sorted(out))}:", lvl)
                self.line("break", lvl + 1)
            if lv and i + 1 < len(ss):
                flags = " or ".join(f"_f_{x}" for x in sorted(lv))
                self.line(f"if not ({flags}):", lvl)
                lvl += 1
                guard = len(self.lines)
        if len(self.lines) == start or len(self.lines) == guard:
            self.line("pass", lvl)

    def s(self, st: ir.Stmt, lvl: int) -> None:
        getattr(self, "s_" + type(st).__name__)(st, lvl)

    def lv(self, e: ir.Expr) -> str:
        return self.x(e)

    def store(self, lhs: ir.Expr, rhs: str, lvl: int) -> None:
        if isinstance(lhs.type, _COMPOSITE):
            self.line(f"{self.lv(lhs)}._set({rhs})", lvl)
        else:
            self.line(f"{self.lv(lhs)} = {rhs}", lvl)

    def s_Declare(self, st: ir.Declare, lvl: int) -> None:
        t = st.var.type
        n = st.var.name
        if isinstance(t, _COMPOSITE):
            init = f"{self.x(st.init)}._copy()" if st.init is not None else self.default(t)
            self.line(f"{n} = {init}", lvl)
        else:
            self.line(f"{n} = {self.x(st.init) if st.init is not None else self.default(t)}", lvl)

    def s_Assign(self, st: ir.Assign, lvl: int) -> None:
        self.store(st.lhs, self.x(st.rhs), lvl)

    def s_AssignSlice(self, st: ir.AssignSlice, lvl: int) -> None:
        t = st.lhs.type
        assert isinstance(t, ir.Bits)
        m = _mask(st.hi - st.lo + 1)
        keep = _mask(t.width) ^ (m << st.lo)
        target = self.lv(st.lhs)
        new = f"(({target} & {keep:#x}) | (({self.x(st.rhs)} & {m:#x}) << {st.lo}))"
        self.line(f"{target} = {_wrap(new, t) if t.signed else new}", lvl)

    def s_StructInit(self, st: ir.StructInit, lvl: int) -> None:
        t = st.lhs.type
        for n, v in st.values:
            if v is not None:
                ft = dict(t.fields)[n]  # type: ignore[attr-defined]
                self.store(ir.Member(st.lhs, n, ft), self.x(v), lvl)
        if isinstance(t, ir.Header):
            self.line(f"{self.lv(st.lhs)}._v = True", lvl)

    def s_If(self, st: ir.If, lvl: int) -> None:
        self.line(f"if {self.x(st.cond)}:", lvl)
        self.block(st.then, lvl + 1)
        if st.other:
            self.line("else:", lvl)
            self.block(st.other, lvl + 1)

    def s_Switch(self, st: ir.Switch, lvl: int) -> None:
        key = self.x(st.expr)
        t = st.expr.type
        if isinstance(t, ir.Bits) and t.signed:  # case values are two's complement bits
            key = f"({key} & {_mask(t.width):#x})"
        cases = [c for c in st.cases if c.values]
        default = next((c for c in st.cases if not c.values), None)
        if not cases:
            if default is not None:
                self.block(default.body, lvl)
            return
        v = self.tmp("sw")
        self.line(f"{v} = {key}", lvl)
        for i, c in enumerate(cases):
            cond = f"{v} == {c.values[0]}" if len(c.values) == 1 else f"{v} in {tuple(c.values)!r}"
            self.line(f"{'if' if i == 0 else 'elif'} {cond}:", lvl)
            self.block(c.body, lvl + 1)
        if default is not None:
            self.line("else:", lvl)
            self.block(default.body, lvl + 1)

    def s_Labeled(self, st: ir.Labeled, lvl: int) -> None:
        if self.loops:
            self.loops[-1].add(st.label)
        if st.label in self.leaves_all(st.body):
            self.line(f"_f_{st.label} = False", lvl)
        self.block(st.body, lvl)

    def s_Leave(self, st: ir.Leave, lvl: int) -> None:
        self.line(f"_f_{st.label} = True", lvl)
        if self.loops and st.label not in self.loops[-1]:
            self.line("break", lvl)  # the label is outside the loop being written

    def s_Loop(self, st: ir.Loop, lvl: int) -> None:
        again = self.tmp("again") if st.update else ""
        if again:
            self.line(f"{again} = False", lvl)
        self.line("while True:", lvl)
        self.loops.append(set())
        if again:
            self.line(f"if {again}:", lvl + 1)
            self.block(st.update, lvl + 2)
            self.line(f"{again} = True", lvl + 1)
        self.block(st.body, lvl + 1)
        self.loops.pop()

    def s_Break(self, st: ir.Break, lvl: int) -> None:
        self.line("break", lvl)

    def s_Continue(self, st: ir.Continue, lvl: int) -> None:
        self.line("continue", lvl)

    def s_Exit(self, st: ir.Exit, lvl: int) -> None:
        self.line("raise _EXIT", lvl)

    def s_SetValid(self, st: ir.SetValid, lvl: int) -> None:
        h = self.lv(st.header)
        if st.valid and st.union is not None:
            self.line(f"_union_set_valid({self.lv(st.union)}, {h})", lvl)
        else:
            self.line(f"{h}._v = {st.valid}", lvl)

    def s_StackShift(self, st: ir.StackShift, lvl: int) -> None:
        self.line(f"{self.lv(st.stack)}.{st.op}({st.count})", lvl)

    def s_TableApply(self, st: ir.TableApply, lvl: int) -> None:
        keys = []
        for k in st.keys:
            c = self.x(k)
            t = k.type
            if isinstance(t, ir.Bool):
                c = f"int({c})"
            elif isinstance(t, ir.Bits) and t.signed:
                c = f"({c} & {_mask(t.width):#x})"
            keys.append(c)
        hit = self.x(st.hit) if st.hit is not None else "_"
        act = self.x(st.action_run) if st.action_run is not None else self.tmp("a")
        args = self.tmp("g")
        self.line(f"{hit}, {act}, {args} = _T{st.table}(({''.join(k + ', ' for k in keys)}), P)", lvl)
        if st.selector:  # a group: the hash of the selector keys picks its member
            self.line(f"if {act} == {ir.GROUP_ACTION}: {act}, {args} = _pick({args}, "
                      f"_hash({_ALGO_NAMES[st.selector_algo]!r}, {self.fields(st.selector)}))", lvl)
        for i, case in enumerate(st.cases):
            if len(st.cases) == 1 and not st.indirect:
                inner = lvl
            else:  # an indirect table's empty group runs no case: no catch-all `else`
                last = i == len(st.cases) - 1 and not st.indirect
                head = "else:" if last else f"{'if' if i == 0 else 'elif'} {act} == {case.action}:"
                self.line(head, lvl)
                inner = lvl + 1
            n0 = len(self.lines)
            if case.params:  # unpacked at once; bool and int<W> parameters converted after
                self.line(f"{''.join(pv.name + ', ' for pv in case.params)}= {args}", inner)
            for pv in case.params:
                t = pv.type
                if isinstance(t, ir.Bool):
                    self.line(f"{pv.name} = {pv.name} != 0", inner)
                elif isinstance(t, ir.Bits) and t.signed:
                    self.line(f"{pv.name} = _sext({pv.name}, {t.width})", inner)
            if case.body:
                self.block(case.body, inner)
            elif len(self.lines) == n0 and inner != lvl:
                self.line("pass", inner)

    def s_ExternCall(self, st: ir.ExternCall, lvl: int) -> None:
        k = st.kind
        a = [self.x(x) for x in st.args]
        dest = self.lv(st.dest) if st.dest is not None else ""
        o = st.obj
        if k == "register_read":
            self.line(f"{dest} = _R{o}.read({a[0]})", lvl)
        elif k == "register_write":
            self.line(f"_R{o}.write({a[0]}, {a[1]})", lvl)
        elif k == "counter_count":
            self.line(f"_C{o}.count({a[0]}, P.length)", lvl)
        elif k == "meter_execute":
            self.line(f"{dest} = _M{o}.execute({a[0]}, P.length)", lvl)
        elif k == "direct_meter_read":
            self.line(f"{dest} = P.meter_color.get({self.p.direct_meters[o]!r}, 0)", lvl)
        elif k in ("hash", "csum"):
            assert st.dest is not None
            dt = st.dest.type
            w = dt.width if isinstance(dt, ir.Bits) else 1
            algo = _ALGO_NAMES[o]
            if k == "hash":
                self.line(f"{dest} = _hash_result(_hash({algo!r}, {self.fields(st.fields)}), "
                          f"{a[0]}, {a[1]}, {w})", lvl)
            else:
                pay = ", P.data[P.off:]" if st.payload else ""
                self.line(f"{dest} = _csum({algo!r}, {self.fields(st.fields)}{pay}) & {_mask(w):#x}", lvl)
        elif k == "random":
            self.line(f"{dest} = RT.random({a[0]}, {a[1]})", lvl)
        elif k == "digest":
            d = self.info.digests[o]
            vals = ", ".join(f"{f.name!r}: {v}" for f, v in zip(d.fields, a, strict=False))
            self.line(f"RT.digest({d.name!r}, {{{vals}}})", lvl)
        elif k == "clone":
            e2e = st.args[0]
            flag = bool(e2e.value) if isinstance(e2e, ir.Const) else f"bool({a[0]})"
            self.line(f"P.clone = ({flag}, {a[1]}, {self.field_list(o)!r})", lvl)
        elif k in ("resubmit", "recirculate"):
            self.line(f"P.{k} = {self.field_list(o)!r}", lvl)
        elif k == "truncate":
            self.line(f"P.truncate = {a[0]}", lvl)
        elif k == "assert":
            self.line(f"_assert({a[0]}, {st.text!r})", lvl)
        elif k == "log_msg":
            self.line(f"RT.log_msg({st.text!r}, ({''.join(x + ', ' for x in a)}))", lvl)
        else:
            raise P4Error(f"internal error: the Python emitter has no extern {k}")

    def field_list(self, fid: int) -> tuple:
        """A field list as the switch's _capture/_restore paths: ("m"|"s", attribute, ...)."""
        paths = self.p.field_lists.get(fid, [])
        return tuple(("m" if p[0] == "meta" else "s", *(pyname(x) for x in p[1:])) for p in paths)

    # ------------------------------------------------------------------ parser statements
    def s_Extract(self, st: ir.Extract, lvl: int) -> None:
        fn = f"_ex_{st.type.name}"
        bits = f", {self.x(st.varbit_bits)}" if st.varbit_bits is not None else ""
        if st.next:
            b = self.lv(st.header)
            h = self.tmp("h")
            self.line(f"{h} = _stack_next({b})", lvl)
            self.line(f"{fn}(P, {h}{bits})", lvl)
            self.line(f"{b}.nxt += 1", lvl)
            return
        h = self.lv(st.header)
        self.line(f"{fn}(P, {h}{bits})", lvl)
        if st.union is not None:
            self.line(f"_union_set_valid({self.lv(st.union)}, {h})", lvl)

    def s_LookaheadHeader(self, st: ir.LookaheadHeader, lvl: int) -> None:
        o = self.tmp("o")
        self.line(f"{o} = P.off", lvl)
        self.line(f"_ex_{st.type.name}(P, {self.lv(st.dest)})", lvl)
        self.line(f"P.off = {o}", lvl)

    def s_Advance(self, st: ir.Advance, lvl: int) -> None:
        self.line(f"_advance(P, {self.x(st.bits)})", lvl)

    def s_Verify(self, st: ir.Verify, lvl: int) -> None:
        self.line(f"if not {self.x(st.cond)}:", lvl)
        self.line(f"raise ParserError({self.x(st.error)})", lvl + 1)

    def s_ParserError(self, st: ir.ParserError, lvl: int) -> None:
        self.line(f"raise ParserError({st.error})", lvl)

    def s_Emit(self, st: ir.Emit, lvl: int) -> None:
        self.line(f"_em_{st.type.name}(P.out, {self.x(st.header)})", lvl)

    def s_SubParser(self, st: ir.SubParser, lvl: int) -> None:
        saved = (self.accept, self.state_var, self.states)
        self.accept = "break"
        if st.reject_outs:  # a reject or an error ends the parse after these copy-outs
            self.line("try:", lvl)
            self.states_loop(st.parser, lvl + 1)
        else:
            self.states_loop(st.parser, lvl)
        self.accept, self.state_var, self.states = saved
        if st.reject_outs:
            self.line("except ParserError:", lvl)
            self.block(st.reject_outs, lvl + 1)
            self.line("raise", lvl + 1)

    # ------------------------------------------------------------------ parser
    def parser_fn(self) -> None:
        self.line("def _parser(P, hdr, meta, sm):", 0)
        self.in_parser = True
        self.accept = "return"
        self.states_loop(self.p.parser, 1)
        self.in_parser = False
        self.line("", 0)

    def states_loop(self, prs: ir.Parser, lvl: int) -> None:
        """The states as one loop over a state number, the start state first."""
        order = sorted(prs.states, key=lambda s: s.name != prs.start)  # stable: the rest keep their order
        self.state_var = self.tmp("st")
        self.states = {s.name: i for i, s in enumerate(order)}
        self.line(f"{self.state_var} = 0", lvl)
        self.line("while True:", lvl)
        for i, st in enumerate(order):
            if len(order) > 1:
                self.line(f"{'if' if i == 0 else 'elif'} {self.state_var} == {i}:", lvl + 1)
                inner = lvl + 2
            else:
                inner = lvl + 1
            ends = any(isinstance(s, (ir.Exit, ir.ParserError)) for s in st.body)
            if st.body or ends:
                self.block(st.body, inner)
            if not ends:
                self.transition(st.transition, inner)

    def goto(self, target: str) -> str:
        if target == "accept":
            return self.accept
        if target == "reject":
            return "raise ParserError(None)"
        return f"{self.state_var} = {self.states[target]}"

    def transition(self, tr: str | ir.Select, lvl: int) -> None:
        if isinstance(tr, str):
            self.line(self.goto(tr), lvl)
            return
        keys = []
        for k in tr.keys:
            v = self.tmp("k")
            c = self.x(k)
            t = k.type
            if isinstance(t, ir.Bits) and t.signed:  # keysets hold two's complement bits
                c = f"({c} & {_mask(t.width):#x})"
            self.line(f"{v} = {c}", lvl)
            keys.append(v)
        first = True
        for case in tr.cases:
            if case.value_set >= 0:
                cond = f"_VS{case.value_set}.match(({''.join(k + ', ' for k in keys)}))"
            else:
                conds = []
                for k, ks in zip(keys, case.keysets, strict=False):
                    if isinstance(ks, ir.KsValue):
                        conds.append(f"{k} == {ks.value}")
                    elif isinstance(ks, ir.KsMask):
                        conds.append(f"({k} & {ks.mask:#x}) == {ks.value:#x}")
                    elif isinstance(ks, ir.KsRange):
                        conds.append(f"{ks.lo} <= {k} <= {ks.hi}")
                    elif isinstance(ks, ir.KsValueSet):
                        conds.append(f"_VS{ks.value_set}.match(({k},))")
                cond = " and ".join(conds)
            if not cond:
                if first:
                    self.line(self.goto(case.target), lvl)
                else:
                    self.line("else:", lvl)
                    self.line(self.goto(case.target), lvl + 1)
                return
            self.line(f"{'if' if first else 'elif'} {cond}:", lvl)
            self.line(self.goto(case.target), lvl + 1)
            first = False
        # no case matches and there is no default: as bmv2 runs p4c-bm2-ss's JSON (no default
        # transition: the parse ends, parser_error NoError), like an explicit reject; the spec's
        # error.NoMatch is not raised (softswitch/README.md, "the choices made")
        if first:
            self.line(self.goto("reject"), lvl)
        else:
            self.line("else:", lvl)
            self.line(self.goto("reject"), lvl + 1)


def emit_python(cp: Any, tree: Any = None) -> None:
    """Lower a type-checked program to the IR and write its Python (`cp.ir`, `cp.source`,
    `cp.code`). `tree` is the program's syntax tree (the type check leaves it unchanged); without
    it the source text is parsed again."""
    from p4compiler.frontend.parser import parse_text
    from p4compiler.lower import Lower

    if tree is None:
        tree = parse_text(cp.p4_source, cp.filename or "<program>")
    try:
        prog = Lower(cp, tree).lower()
    except P4Error as e:  # the type checker accepted the program: a gap of the lowering
        msg = e.message.replace("the native backend does not support", "the IR lowering does not support")
        raise P4Error(msg, e.file, e.line, e.col) from None
    source = PyEmitter(prog, cp.info, cp.externs).run()
    try:
        code = compile(source, "<p4 generated from the IR>", "exec")
    except SyntaxError as e:  # a bug in this emitter, not in the user's program
        raise P4Error(f"internal error: generated code does not compile: {e}") from None
    cp.source, cp.code, cp.ir = source, code, prog
