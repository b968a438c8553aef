"""IR -> one C translation unit against softswitch/native/include/ss_runtime.h.

Values of at most 64 bits are uint64_t reduced to their width (int<W> as masked two's
complement bits, sign-extended only where an operation needs it); bool is 0/1. Headers are C
structs with a `valid` byte and `f_<name>` fields; header stacks carry `e[N]` and `nxt`.
Everything is straight-line: extract/emit use constant byte offsets, controls are one C function
each with sub-controls, actions and functions inlined, table actions a `switch` on the action
number returned by ss_table_apply.
"""

from __future__ import annotations

from typing import Any, cast

from p4compiler import ir
from p4compiler.c_backend import wide
from p4compiler.lower import NativeUnsupported

PRELUDE = r"""
#include <stdint.h>
#include <string.h>
#include "ss_runtime.h"

/* sign-extend the low w bits of v (w 0..64; 0 bits are the value 0, not a shift by 64) */
static inline int64_t ss__sx(uint64_t v, unsigned w) {
    if (w == 0) return 0;
    return w >= 64 ? (int64_t)v : (int64_t)(v << (64 - w)) >> (64 - w);
}
static inline uint64_t ss__mask(unsigned w) { return w >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << w) - 1; }
/* big-endian load/store of n <= 8 bytes: whole 2/4/8-byte words through memcpy (no unaligned
 * access) and one byte swap on little-endian hosts (n is a constant at every call, so the
 * branches fold; a byte loop there was the parser's largest cost at 256 values per packet),
 * byte by byte otherwise */
static inline uint64_t ss__ld(const uint8_t *p, unsigned n) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n == 4) { uint32_t x; memcpy(&x, p, 4); return __builtin_bswap32(x); }
    if (n == 2) { uint16_t x; memcpy(&x, p, 2); return __builtin_bswap16(x); }
    if (n == 8) { uint64_t x; memcpy(&x, p, 8); return __builtin_bswap64(x); }
#endif
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}
static inline void ss__st(uint8_t *p, unsigned n, uint64_t v) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n == 4) { uint32_t x = __builtin_bswap32((uint32_t)v); memcpy(p, &x, 4); return; }
    if (n == 2) { uint16_t x = __builtin_bswap16((uint16_t)v); memcpy(p, &x, 2); return; }
    if (n == 8) { uint64_t x = __builtin_bswap64(v); memcpy(p, &x, 8); return; }
#endif
    for (unsigned i = n; i-- > 0;) { p[i] = (uint8_t)v; v >>= 8; }
}
/* Register cells inline.  A cell is a type of its own, and the generated code is compiled with
 * strict aliasing: a cell write then cannot alias a header or metadata field, a local or a
 * register descriptor (all uint64_t or pointers), so the compiler keeps those in registers
 * across the writes.  (With every access a plain uint64_t, a packet that adds 256 values to one
 * bank row reloaded the descriptor, the index and both masks after each of the 256 writes.)
 * ss__cell_read/ss__cell_write: the register's place (the bank's first register, the member,
 * the bank's width in members), size and mask are constants of the program's layout
 * (register_layout), which ss_switch_load checks.  An out-of-range index reads 0 and writes
 * nothing, as bmv2. */
#if defined(__GNUC__)
#define SS__HOT_INLINE static inline __attribute__((always_inline))
#else
#define SS__HOT_INLINE static inline
#endif
typedef struct ss__cell { uint64_t v; } ss__cell;
SS__HOT_INLINE uint64_t ss__cell_read(ss_ctx *c, uint32_t bank, uint64_t i, uint64_t size, uint64_t members,
                                      uint64_t member) {
    return i < size ? ((const ss__cell *)c->registers[bank]->cells)[i * members + member].v : 0;
}
SS__HOT_INLINE void ss__cell_write(ss_ctx *c, uint32_t bank, uint64_t i, uint64_t size, uint64_t members,
                                   uint64_t member, uint64_t mask, uint64_t v) {
    if (i < size) ((ss__cell *)c->registers[bank]->cells)[i * members + member].v = v & mask;
}
/* through the descriptor (the limbs of a register wider than 64 bits) */
SS__HOT_INLINE uint64_t ss__reg_read(ss_ctx *c, uint32_t reg, uint64_t i) {
    const ss_register *r = c->registers[reg];
    return i < r->size ? ((const ss__cell *)r->cells)[i * r->stride].v : 0;
}
SS__HOT_INLINE void ss__reg_write(ss_ctx *c, uint32_t reg, uint64_t i, uint64_t v) {
    const ss_register *r = c->registers[reg];
    if (i < r->size) ((ss__cell *)r->cells)[i * r->stride].v = v & r->mask;
}
/* w <= 64 bits at bit offset `bit` of p, MSB first */
static inline uint64_t ss__getbits(const uint8_t *p, uint64_t bit, unsigned w) {
    p += bit >> 3;
    unsigned sh = (unsigned)(bit & 7), span = (sh + w + 7) >> 3;
    if (span <= 8) return (ss__ld(p, span) >> (span * 8 - sh - w)) & ss__mask(w);
    return ((ss__ld(p, 8) << sh) | (uint64_t)(p[8] >> (8 - sh))) >> (64 - w);
}
static inline void ss__putbits(uint8_t *p, uint64_t bit, unsigned w, uint64_t v) {
    for (unsigned i = 0; i < w;) {
        uint64_t b = bit + i;
        unsigned sh = (unsigned)(b & 7), take = 8 - sh;
        if (take > w - i) take = w - i;
        unsigned down = w - i - take, pos = 8 - sh - take;
        unsigned chunk = (unsigned)((v >> down) & ((1u << take) - 1));
        unsigned m = ((1u << take) - 1) << pos;
        p[b >> 3] = (uint8_t)((p[b >> 3] & ~m) | (chunk << pos));
        i += take;
    }
}
static inline uint64_t ss__shl(uint64_t a, uint64_t n, unsigned w) {
    return n >= w ? 0 : (a << n) & ss__mask(w);
}
static inline uint64_t ss__shr_s(uint64_t a, uint64_t n, unsigned w) {
    int64_t x = ss__sx(a, w);
    if (n >= w) return x < 0 ? ss__mask(w) : 0;
    return (uint64_t)(x >> n) & ss__mask(w);
}
static inline uint64_t ss__addsat_u(uint64_t a, uint64_t b, unsigned w) {
    uint64_t s = a + b;
    if (w >= 64) return s < a ? ~UINT64_C(0) : s;
    return s > ss__mask(w) ? ss__mask(w) : s;
}
static inline uint64_t ss__subsat_u(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }
static inline uint64_t ss__sat_s(int64_t x, int overflow, int neg, unsigned w) {
    int64_t hi = (int64_t)(ss__mask(w) >> 1), lo = -hi - 1;
    if (overflow) return (uint64_t)(neg ? lo : hi) & ss__mask(w);
    if (x > hi) x = hi;
    if (x < lo) x = lo;
    return (uint64_t)x & ss__mask(w);
}
static inline uint64_t ss__addsat_s(uint64_t a, uint64_t b, unsigned w) {
    int64_t x = ss__sx(a, w), y = ss__sx(b, w), r;
    int o = __builtin_add_overflow(x, y, &r);
    return ss__sat_s(r, o, x < 0, w);
}
static inline uint64_t ss__subsat_s(uint64_t a, uint64_t b, unsigned w) {
    int64_t x = ss__sx(a, w), y = ss__sx(b, w), r;
    int o = __builtin_sub_overflow(x, y, &r);
    return ss__sat_s(r, o, x < 0, w);
}
"""

STD_META = (
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


def _u(v: int) -> str:
    return f"UINT64_C({v:#x})"


def _mask(w: int) -> int:
    return (1 << w) - 1


def _cstr(s: str) -> str:
    out = []
    for ch in s:
        if ch in '\\"':
            out.append("\\" + ch)
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        else:
            out.append(f"\\{ord(ch) & 0xFF:03o}")
    return '"' + "".join(out) + '"'


def ctype(t: ir.Type) -> str:
    if wide.is_wide(t):
        return wide.ctype(t)  # type: ignore[arg-type]
    if isinstance(t, (ir.Bits, ir.Bool)):
        return "uint64_t"
    if isinstance(t, (ir.Header, ir.Struct, ir.Union_, ir.Stack)):
        return t.name
    raise NativeUnsupported(f"the native backend does not support values of type {t} yet")


class _PCtx:
    """The (sub-)parser whose states are being emitted: its state labels' prefix, its accept,
    reject and error labels, the states transitions name, and whether anything goes to accept."""

    def __init__(self, prefix: str, accept: str, reject: str = "P_reject", error: str = "P_error") -> None:
        self.prefix = prefix
        self.accept = accept
        self.reject = reject
        self.error = error
        self.refs: set[str] = set()
        self.accept_used = False


class _Fn:
    """Per C function: locals to declare at the top, labels in use, temporaries."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.locals: dict[str, ir.Type] = {}
        self.used_labels: set[str] = set()
        self.n = 0

    def tmp(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}_"


class CEmitter:
    def __init__(self, prog: ir.Program, layout: list[Any]) -> None:
        self.p = prog
        self.layout = layout  # c_backend.RegisterSlot per register number
        self.lines: list[str] = []
        self.fn = _Fn("")
        self.pctx = _PCtx("ST_", "P_accept")
        self.in_parser = False
        self.lazy = 0  # > 0 while rendering an operand C may not evaluate (x, lazily)
        self.zero_objs: set[str] = set()
        self.sink_objs: set[str] = set()
        self.err = {n: i for i, n in enumerate(prog.errors)}
        self.wide = wide.Wide(self)  # values wider than 64 bits (c_backend.wide)

    # ------------------------------------------------------------------ entry
    def run(self) -> str:
        out = [PRELUDE]
        out.extend(self.type_decls())
        hdr, meta = self.p.headers_type.name, self.p.meta_type.name
        state_at = len(out)
        body: list[str] = []
        body.extend(self.parser_fn())
        roles = ("verify_checksum", "ingress", "egress", "compute_checksum", "deparser")
        for role in roles:
            body.extend(self.control_fn(role, self.p.controls[role]))
        body.extend(self.preserve_fn())
        for t in sorted(self.zero_objs):
            out.append(f"static const {t} ss__zero_{t};")
        # Writes through an out-of-range stack index go to a sink in the packet's own state, not
        # to a global: datapath threads run packets at once, and a shared sink would be a data
        # race (C11 UB). It is never read as a value, so ss_init leaves it as it is.
        state = ["typedef struct ss_state {", "    ss_std_meta sm;", f"    {hdr} hdr;", f"    {meta} meta;"]
        if self.sink_objs:
            state.append("    union { " + " ".join(f"{t} t_{t};" for t in sorted(self.sink_objs))
                         + " } ss__sink;  /* writes to out-of-range stack elements */")
        out[state_at:state_at] = state + ["} ss_state;", ""]
        out.extend(body)
        size = "offsetof(ss_state, ss__sink)" if self.sink_objs else "sizeof(ss_state)"
        out.append(f"static void ss_init(void *vs) {{ memset(vs, 0, {size}); }}")
        names = ", ".join(_cstr(e) for e in self.p.errors)
        out.append(f"static const char *const ss_error_names[] = {{{names}}};")
        if self.layout:  # a cell's width: a wide register keeps 64-bit limbs
            slots = ", ".join(f"{{{r.bank}, {r.member}, {r.members}, {min(r.width, 64)}, {_u(r.size)}}}"
                              for r in self.layout)
            out.append(f"static const ss_register_slot ss_register_layout[] = {{{slots}}};")
        out.append("const ss_program ss_program_desc = {")
        out.append("    .abi = SS_ABI_VERSION, .state_size = sizeof(ss_state), .init = ss_init,")
        out.append("    .parser = ss_parser, .verify_checksum = ss_verify_checksum, .ingress = ss_ingress,")
        out.append(
            "    .egress = ss_egress, .compute_checksum = ss_compute_checksum, .deparser = ss_deparser,"
        )
        out.append("    .preserve = ss_preserve,")
        if self.layout:
            out.append("    .register_layout = ss_register_layout,")
        p = self.p
        out.append(
            f"    .n_tables = {len(p.tables)}, .n_registers = {len(p.registers)}, "
            f".n_counters = {len(p.counters)}, .n_meters = {len(p.meters)},"
        )
        out.append(
            f"    .n_direct_meters = {len(p.direct_meters)}, .n_digests = {len(p.digests)}, "
            f".n_errors = {len(p.errors)}, .error_names = ss_error_names,"
        )
        out.append("};")
        if self.wide.used:  # the wide types' struct and helpers, before the first declaration
            out.insert(1, self.wide.prelude())
        return "\n".join(out) + "\n"

    def type_decls(self) -> list[str]:
        out = []
        for t in self.p.types:
            if isinstance(t, ir.Header):
                fields = ["    uint8_t valid;"]
                for n, ft in t.fields:
                    if isinstance(ft, ir.Varbit):
                        fields.append(f"    uint8_t f_{n}[{(ft.max_width + 7) // 8 or 1}];")
                        fields.append(f"    uint32_t f_{n}_bits;")
                    else:
                        fields.append(f"    {ctype(ft)} f_{n};")
            elif isinstance(t, (ir.Struct, ir.Union_)):
                fields = [f"    {ctype(ft)} f_{n};" for n, ft in t.fields] or ["    uint8_t unused_;"]
            elif isinstance(t, ir.Stack):
                fields = [f"    {t.element.name} e[{t.size}];", "    uint32_t nxt;"]
            else:
                continue
            out.append(f"typedef struct {t.name} {{\n" + "\n".join(fields) + f"\n}} {t.name};")
        return out

    # ------------------------------------------------------------------ emission helpers
    def line(self, s: str, lvl: int) -> None:
        self.lines.append("    " * lvl + s)

    def begin(self, name: str) -> None:
        self.fn = _Fn(name)
        self.lines = []

    def finish(self, sig: str, tail: list[str]) -> list[str]:
        decls = ["    ss_state *s = (ss_state *)vs;", "    (void)s; (void)c;"]
        for n, t in self.fn.locals.items():
            decls.append(f"    {self.ctype(t)} {n}; memset(&{n}, 0, sizeof {n}); (void){n};")
        return [sig + " {"] + decls + self.lines + tail + ["}", ""]

    # ------------------------------------------------------------------ expressions
    def x(self, e: ir.Expr) -> str:
        if self.wide.used and self.wide.handles(e):
            v = self.wide.x(e)
        else:
            v = getattr(self, "x_" + type(e).__name__)(e)
        if self.lazy and self.in_parser and isinstance(e, ir.Lookahead):
            # read only if this operand is evaluated (P4-16 8.5: `&&` `||` `?:` are lazy), so its
            # bounds check is too; GNU C lets a statement expression jump out (to P_error)
            return (f"({{ if ((uint64_t)c->off + {(e.width + 7) // 8} > c->len) "
                    f"{{ err = {self.err['PacketTooShort']}; goto P_error; }} {v}; }})")
        return v

    def lazily(self, e: ir.Expr) -> str:
        """`e` as an operand C evaluates only sometimes (right of && and ||, arms of ?:)."""
        self.lazy += 1
        try:
            return self.x(e)
        finally:
            self.lazy -= 1

    def lv(self, e: ir.Expr) -> str:
        """An lvalue: like x, but an out-of-range stack element is a write sink."""
        if isinstance(e, ir.Index):
            return self.index(e, write=True)
        if isinstance(e, ir.Member):
            return f"{self.lv(e.base)}.{self.field(e)}"
        return self.x(e)

    def field(self, e: ir.Member) -> str:
        """The C member a P4 field is: `f_<name>`, or the runtime's name in standard metadata (also
        in a copy of it, an aliased argument's: lower.settle_copies)."""
        b = e.base
        if b.type is self.p.std_meta_type or isinstance(b, ir.Var) and b.name == "sm":
            return e.field
        return f"f_{e.field}"

    def ctype(self, t: ir.Type) -> str:
        return "ss_std_meta" if t is self.p.std_meta_type else ctype(t)

    def x_Const(self, e: ir.Const) -> str:
        if isinstance(e.type, ir.Bool):
            return "1" if e.value else "0"
        return _u(e.value)

    def x_Var(self, e: ir.Var) -> str:
        if e.name in ("sm", "hdr", "meta"):
            return f"s->{e.name}"
        if e.name not in self.fn.locals:
            self.fn.locals[e.name] = e.type
        return e.name

    def x_Member(self, e: ir.Member) -> str:
        if isinstance(e.type, ir.Varbit):
            raise NativeUnsupported("the native backend does not support varbit values in expressions yet")
        return f"{self.x(e.base)}.{self.field(e)}"

    def index(self, e: ir.Index, write: bool) -> str:
        base = self.lv(e.base) if write else self.x(e.base)
        st = e.base.type
        assert isinstance(st, ir.Stack)
        objs = self.sink_objs if write else self.zero_objs
        if isinstance(e.index, ir.Const):
            if e.index.value >= st.size:
                objs.add(st.element.name)
                return f"s->ss__sink.t_{st.element.name}" if write else f"ss__zero_{st.element.name}"
            return f"{base}.e[{e.index.value}]"
        objs.add(st.element.name)
        i = self.x(e.index)
        other = f"&s->ss__sink.t_{st.element.name}" if write else f"&ss__zero_{st.element.name}"
        return f"(*((uint64_t)({i}) < {st.size} ? &{base}.e[{i}] : {other}))"

    def x_Index(self, e: ir.Index) -> str:
        v = self.index(e, write=False)
        if self.lazy and self.in_parser and (ref := ir.stack_ref(e)) is not None:
            # checked where it is read, as lookahead_checks would before the statement
            return f"(*({{ {self.stack_check(e, ref)} &{v}; }}))"
        return v

    def stack_check(self, e: ir.Index, ref: str) -> str:
        """StackOutOfBounds unless the element `hs.next` / `hs.last` names exists (P4-16 8.18)."""
        t = e.base.type
        assert isinstance(t, ir.Stack)
        nxt = f"{self.x(e.base)}.nxt"
        cond = f"{nxt} >= {t.size}" if ref == "next" else f"{nxt} == 0"
        return f"if ({cond}) {{ err = {self.err['StackOutOfBounds']}; goto P_error; }}"

    def x_StackNext(self, e: ir.StackNext) -> str:
        return f"((uint64_t){self.x(e.base)}.nxt)"

    def x_Unary(self, e: ir.Unary) -> str:
        a = self.x(e.expr)
        if e.op == "lnot":
            return f"(!{a})"
        w = e.type.width  # type: ignore[attr-defined]
        if e.op == "neg":
            return f"((UINT64_C(0) - {a}) & {_u(_mask(w))})"
        return f"(~{a} & {_u(_mask(w))})"

    def x_BinOp(self, e: ir.BinOp) -> str:
        op = e.op
        if isinstance(e.left.type, ir.Varbit):
            return self.varbit_eq(e)
        if op in ("land", "lor"):
            return f"({self.x(e.left)} {'&&' if op == 'land' else '||'} {self.lazily(e.right)})"
        a, b = self.x(e.left), self.x(e.right)
        if op in ("eq", "ne", "lt", "le", "gt", "ge"):
            c = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
            lt = e.left.type
            if isinstance(lt, ir.Bits) and lt.signed and op not in ("eq", "ne"):
                return f"(ss__sx({a}, {lt.width}) {c} ss__sx({b}, {lt.width}))"
            return f"({a} {c} {b})"
        t = e.type
        assert isinstance(t, ir.Bits), e
        w, m = t.width, _u(_mask(t.width))
        if op in ("add", "sub", "mul"):
            c = {"add": "+", "sub": "-", "mul": "*"}[op]
            return f"(({a} {c} {b}) & {m})" if w < 64 else f"({a} {c} {b})"
        if op in ("and", "or", "xor"):
            c = {"and": "&", "or": "|", "xor": "^"}[op]
            return f"({a} {c} {b})"
        if op in ("div", "mod"):
            c = "/" if op == "div" else "%"
            return f"({b} ? {a} {c} {b} : 0)"
        if op == "shl":
            if isinstance(e.right, ir.Const):
                n = e.right.value
                return "UINT64_C(0)" if n >= w else f"(({a} << {n}) & {m})"
            return f"ss__shl({a}, {b}, {w})"
        if op == "shr":
            if t.signed:
                return f"ss__shr_s({a}, {b}, {w})"
            if isinstance(e.right, ir.Const):
                n = e.right.value
                return "UINT64_C(0)" if n >= w else f"({a} >> {n})"
            return f"({b} >= {w} ? UINT64_C(0) : {a} >> {b})"
        if op == "addsat":
            return f"ss__addsat_{'s' if t.signed else 'u'}({a}, {b}, {w})"
        if op == "subsat":
            return f"ss__subsat_s({a}, {b}, {w})" if t.signed else f"ss__subsat_u({a}, {b})"
        raise NativeUnsupported(f"the native backend does not support the operator {op} yet")

    def x_Concat(self, e: ir.Concat) -> str:
        rw = e.right.type.width  # type: ignore[attr-defined]
        return f"(({self.x(e.left)} << {rw}) | {self.x(e.right)})"

    def x_Slice(self, e: ir.Slice) -> str:
        m = _u(_mask(e.hi - e.lo + 1))
        return f"(({self.x(e.expr)} >> {e.lo}) & {m})" if e.lo else f"({self.x(e.expr)} & {m})"

    def x_Cast(self, e: ir.Cast) -> str:
        a = self.x(e.expr)
        s, t = e.expr.type, e.type
        if isinstance(t, ir.Bool):
            return f"({a} != 0)" if isinstance(s, ir.Bits) else a
        assert isinstance(t, ir.Bits)
        if isinstance(s, ir.Bool):
            return f"((uint64_t)({a}))"
        assert isinstance(s, ir.Bits)
        if s.signed and t.width > s.width:
            return f"((uint64_t)ss__sx({a}, {s.width}) & {_u(_mask(t.width))})"
        if t.width < s.width:
            return f"({a} & {_u(_mask(t.width))})"
        return a

    def x_Mux(self, e: ir.Mux) -> str:
        return f"({self.x(e.cond)} ? {self.lazily(e.then)} : {self.lazily(e.other)})"

    def x_IsValid(self, e: ir.IsValid) -> str:
        b = self.x(e.expr)
        t = e.expr.type
        if isinstance(t, ir.Union_):
            return "(" + " || ".join(f"{b}.f_{n}.valid" for n, _ in t.fields) + ")" if t.fields else "0"
        return f"({b}.valid)"

    def x_Lookahead(self, e: ir.Lookahead) -> str:
        nb = (e.width + 7) // 8
        return f"(ss__ld(c->data + c->off, {nb}) >> {nb * 8 - e.width})"

    def x_PacketLength(self, e: ir.PacketLength) -> str:
        return "((uint64_t)c->len)"

    # ------------------------------------------------------------------ statements
    def block(self, ss: list[ir.Stmt], lvl: int) -> None:
        for s in ss:
            self.s(s, lvl)

    def s(self, st: ir.Stmt, lvl: int) -> None:
        if self.in_parser:
            self.lookahead_checks(st, lvl)
        getattr(self, "s_" + type(st).__name__)(st, lvl)

    def lookahead_checks(self, st: Any, lvl: int) -> None:
        """Bounds checks for the lookaheads a parser statement reads, and for the stack elements
        it names by `.next` / `.last` (StackOutOfBounds when absent, P4-16 8.18), before it runs.
        Reads in an operand evaluated only sometimes (right of `&&` / `||`, arms of `?:`) are
        checked where they are read instead (x, x_Index)."""
        widths: list[int] = []

        def walk(o: Any) -> None:
            if isinstance(o, ir.Lookahead):
                widths.append(o.width)
            elif isinstance(o, ir.Index) and (ref := ir.stack_ref(o)) is not None:
                self.line(self.stack_check(o, ref), lvl)
                walk(o.base)
            elif isinstance(o, ir.BinOp) and o.op in ("land", "lor"):
                walk(o.left)
            elif isinstance(o, ir.Mux):
                walk(o.cond)
            elif isinstance(o, ir.Expr):
                for v in vars(o).values():
                    walk(v)
            elif isinstance(o, list):
                for v in o:
                    walk(v)
            elif isinstance(o, ir.FieldListItem):
                walk(o.expr)

        if isinstance(st, (ir.If, ir.Switch, ir.Labeled)):
            walk(getattr(st, "cond", getattr(st, "expr", None)))
        else:
            for v in vars(st).values():
                walk(v)
        if widths:
            self.too_short(f"(uint64_t)c->off + {(max(widths) + 7) // 8} > c->len", lvl)

    def too_short(self, cond: str, lvl: int) -> None:
        self.fail_if(cond, self.err["PacketTooShort"], lvl)

    def fail_if(self, cond: str, err: Any, lvl: int) -> None:
        """End the (sub-)parser with parser error `err` (a number or C expression) when `cond`."""
        self.line(f"if ({cond}) {{ err = {err}; goto {self.pctx.error}; }}", lvl)

    def s_Declare(self, st: ir.Declare, lvl: int) -> None:
        n = self.x(st.var)
        if isinstance(st.var.type, (ir.Bits, ir.Bool)) and not wide.is_wide(st.var.type):
            self.line(f"{n} = {self.x(st.init) if st.init is not None else '0'};", lvl)
            return
        self.line(f"memset(&{n}, 0, sizeof {n});", lvl)
        if st.init is not None:
            self.line(f"{n} = {self.x(st.init)};", lvl)

    def s_Assign(self, st: ir.Assign, lvl: int) -> None:
        if isinstance(st.rhs.type, ir.Varbit):
            return self.assign_varbit(st, lvl)
        self.line(f"{self.lv(st.lhs)} = {self.x(st.rhs)};", lvl)

    # A varbit value is a header field: its bytes `f_<name>[]` and length `f_<name>_bits`
    # (c_backend.check refuses varbit values anywhere else).
    def varbit_field(self, e: ir.Expr, write: bool) -> str:
        assert isinstance(e, ir.Member), e
        return f"{self.lv(e.base) if write else self.x(e.base)}.f_{e.field}"

    def assign_varbit(self, st: ir.Assign, lvl: int) -> None:
        """A varbit field copied whole: its bytes (as many as both hold) and its length."""
        d, s = self.varbit_field(st.lhs, True), self.varbit_field(st.rhs, False)
        self.line(f"memcpy({d}, {s}, sizeof {d} < sizeof {s} ? sizeof {d} : sizeof {s});", lvl)
        self.line(f"{d}_bits = {s}_bits;", lvl)

    def varbit_eq(self, e: ir.BinOp) -> str:
        """== / != on varbit fields: equal lengths and equal bytes (the value's bits)."""
        a, b = self.varbit_field(e.left, False), self.varbit_field(e.right, False)
        eq = f"({a}_bits == {b}_bits && memcmp({a}, {b}, {a}_bits / 8) == 0)"
        return eq if e.op == "eq" else f"(!{eq})"

    def s_AssignSlice(self, st: ir.AssignSlice, lvl: int) -> None:
        if wide.is_wide(st.lhs.type):
            return self.wide.assign_slice(st, lvl)
        w = st.lhs.type.width  # type: ignore[attr-defined]
        m = _mask(st.hi - st.lo + 1)
        keep = _mask(w) ^ (m << st.lo)
        t = self.lv(st.lhs)
        self.line(f"{t} = ({t} & {_u(keep)}) | (({self.x(st.rhs)} & {_u(m)}) << {st.lo});", lvl)

    def s_StructInit(self, st: ir.StructInit, lvl: int) -> None:
        raise NativeUnsupported("the native backend does not support StructInit statements")

    def s_If(self, st: ir.If, lvl: int) -> None:
        self.line(f"if ({self.x(st.cond)}) {{", lvl)
        self.block(st.then, lvl + 1)
        if st.other:
            self.line("} else {", lvl)
            self.block(st.other, lvl + 1)
        self.line("}", lvl)

    def s_Switch(self, st: ir.Switch, lvl: int) -> None:
        if wide.is_wide(st.expr.type):
            return self.wide.switch(st, lvl)
        self.line(f"switch ({self.x(st.expr)}) {{", lvl)
        for case in st.cases:
            if not case.values:
                self.line("default: {", lvl)
            else:
                self.line(" ".join(f"case {_u(v)}:" for v in case.values) + " {", lvl)
            self.block(case.body, lvl + 1)
            self.line("    break;", lvl)
            self.line("}", lvl)
        if not any(not c.values for c in st.cases):
            self.line("default: break;", lvl)
        self.line("}", lvl)

    def s_Labeled(self, st: ir.Labeled, lvl: int) -> None:
        self.line("{", lvl)
        self.block(st.body, lvl + 1)
        self.line("}", lvl)
        if st.label in self.fn.used_labels:
            self.line(f"{st.label}: ;", lvl)

    def s_Leave(self, st: ir.Leave, lvl: int) -> None:
        self.fn.used_labels.add(st.label)
        self.line(f"goto {st.label};", lvl)

    def s_Loop(self, st: ir.Loop, lvl: int) -> None:
        """`for (;;)`: with a constant condition the C compiler may not assume that the loop
        ends (C11 6.8.5p6), whatever its body does. break and continue are gotos to labels after
        the loop and after the body: a C `break` in the body's `switch` statements would only
        leave the switch."""
        self.line("for (;;) {", lvl)
        self.block(st.body, lvl + 1)
        if f"{st.label}_c" in self.fn.used_labels:
            self.line(f"{st.label}_c: ;", lvl + 1)
        self.block(st.update, lvl + 1)
        self.line("}", lvl)
        if f"{st.label}_b" in self.fn.used_labels:
            self.line(f"{st.label}_b: ;", lvl)

    def s_Break(self, st: ir.Break, lvl: int) -> None:
        self.fn.used_labels.add(f"{st.label}_b")
        self.line(f"goto {st.label}_b;", lvl)

    def s_Continue(self, st: ir.Continue, lvl: int) -> None:
        self.fn.used_labels.add(f"{st.label}_c")
        self.line(f"goto {st.label}_c;", lvl)

    def s_Exit(self, st: ir.Exit, lvl: int) -> None:
        self.fn.used_labels.add("L_exit")
        self.line("c->exited = 1; goto L_exit;", lvl)

    def s_SetValid(self, st: ir.SetValid, lvl: int) -> None:
        h = self.lv(st.header)
        if st.valid and st.union is not None:
            u = self.lv(st.union)
            assert isinstance(st.union.type, ir.Union_)
            for n, _ in st.union.type.fields:
                self.line(f"{u}.f_{n}.valid = 0;", lvl)
        self.line(f"{h}.valid = {1 if st.valid else 0};", lvl)

    def s_StackShift(self, st: ir.StackShift, lvl: int) -> None:
        t = st.stack.type
        assert isinstance(t, ir.Stack)
        b = self.lv(st.stack)
        n, size = st.count, t.size
        if n <= 0:
            return
        if st.op == "push_front":
            for i in range(size - 1, n - 1, -1):
                self.line(f"{b}.e[{i}] = {b}.e[{i - n}];", lvl)
            for i in range(min(n, size)):
                self.line(f"memset(&{b}.e[{i}], 0, sizeof {b}.e[{i}]);", lvl)
            self.line(f"{b}.nxt = {b}.nxt + {n} > {size} ? {size} : {b}.nxt + {n};", lvl)
        else:
            for i in range(size - n):
                self.line(f"{b}.e[{i}] = {b}.e[{i + n}];", lvl)
            for i in range(max(size - n, 0), size):
                self.line(f"memset(&{b}.e[{i}], 0, sizeof {b}.e[{i}]);", lvl)
            self.line(f"{b}.nxt = {b}.nxt > {n} ? {b}.nxt - {n} : 0;", lvl)

    def s_TableApply(self, st: ir.TableApply, lvl: int) -> None:
        k, a, r, h = self.fn.tmp("k"), self.fn.tmp("act"), self.fn.tmp("args"), self.fn.tmp("hit")
        kws = [w for x in st.keys for w in self.wide.limbs(x)]  # a wide key: its limbs
        keys = ", ".join(kws) or "0"
        self.line("{", lvl)
        self.line(f"    uint64_t {k}[{max(len(kws), 1)}] = {{{keys}}};", lvl)
        self.line(f"    uint32_t {a} = 0; const uint64_t *{r} = 0;", lvl)
        self.line(f"    int {h} = ss_table_apply(c, {st.table}, {k}, &{a}, &{r});", lvl)
        self.line(f"    (void){h}; (void){r};", lvl)
        if st.selector:  # a group (SS_GROUP_ACTION): the selector keys' hash picks member hash % n
            self.line(f"    if ({a} == SS_GROUP_ACTION) {{", lvl)
            b = self.bits_input(st.selector, lvl + 2)
            self.line(f"uint64_t n_ = {r}[0];", lvl + 2)
            self.line(f"if (n_ == 0) {{ {a} = SS_NO_ACTION; }} else {{", lvl + 2)
            pick = f"ss_hash({st.selector_algo}, {b}.buf, {b}.nbits, NULL, 0) % n_"
            self.line(f"const uint64_t *m_ = {r} + 2 + ({pick}) * {r}[1];", lvl + 3)
            self.line(f"{a} = (uint32_t)m_[0]; {r} = m_ + 1;", lvl + 3)
            self.line("}", lvl + 2)
            self.line("    }", lvl)
        if st.hit is not None:
            self.line(f"    {self.x(st.hit)} = (uint64_t)({h} != 0);", lvl)
        if st.action_run is not None:
            self.line(f"    {self.x(st.action_run)} = {a};", lvl)
        self.line(f"    switch ({a}) {{", lvl)
        for case in st.cases:
            self.line(f"    case {case.action}: {{", lvl)
            i = 0  # the argument's first word (a wide parameter takes its limbs)
            for pv in case.params:
                t = pv.type
                if wide.is_wide(t):
                    self.line(f"{self.x(pv)} = {self.wide.from_args(r, i, t)};", lvl + 2)  # type: ignore
                    i += wide.nlimbs(t.width)  # type: ignore[attr-defined]
                    continue
                val = f"{r}[{i}]"
                i += 1
                if isinstance(t, ir.Bool):
                    val = f"({val} != 0)"
                elif isinstance(t, ir.Bits) and t.width < 64:
                    val = f"({val} & {_u(_mask(t.width))})"
                self.line(f"{self.x(pv)} = {val};", lvl + 2)
            self.block(case.body, lvl + 2)
            self.line("        break;", lvl)
            self.line("    }", lvl)
        self.line("    default: break;", lvl)
        self.line("    }", lvl)
        self.line("}", lvl)

    def bits_input(self, items: list[ir.FieldListItem], lvl: int) -> str:
        """Fill an ss_bits with the field list (fields of invalid headers left out); returns its name."""
        b = self.fn.tmp("bits")
        maxbits = sum(it.width if it.width >= 0 else it.expr.type.max_width for it in items)  # type: ignore
        if maxbits > 8 * 1024:
            raise NativeUnsupported("the native backend does not support hash inputs over 8192 bits yet")
        self.line(f"ss_bits {b}; {b}.nbits = 0; memset({b}.buf, 0, {(maxbits + 7) // 8 or 1});", lvl)
        # The leading fields under one validity test, none of variable width (e.g. an IPv4
        # header's, before its options): at constant bit offsets, stored straight into the
        # buffer (byte-aligned whole bytes as big-endian words), no runtime call per field; the
        # rest is appended after them with ss_bits_put.
        conds = [None if it.valid is None else self.x(it.valid) for it in items]
        k = 0
        while k < len(items) and 0 <= items[k].width <= wide.LIMB and conds[k] == conds[0]:
            k += 1
        if k >= 2:
            lines, off, i = [], 0, 0
            widths: list[int | None] = [it.width for it in items[:k]]
            values = [self.x(it.expr) for it in items[:k]]
            while i < k:
                stmt, used, nbits = self._field_store(f"{b}.buf", off, values, widths, i)
                if nbits:
                    lines.append(stmt)
                off, i = off + nbits, i + used
            lines.append(f"{b}.nbits = {off};")
            if conds[0] is not None:
                lines = [f"if ({conds[0]}) {{", *("    " + ln for ln in lines), "}"]
            for ln in lines:
                self.line(ln, lvl)
            items = items[k:]
        for it in items:
            if it.width > wide.LIMB:
                put = self.wide.bits_put(b, it)
            elif it.width >= 0:
                put = f"ss_bits_put(&{b}, {self.x(it.expr)}, {it.width});"
            else:
                assert isinstance(it.expr, ir.Member)
                f = f"{self.x(it.expr.base)}.f_{it.expr.field}"
                put = f"for (uint32_t i_ = 0; i_ < {f}_bits / 8; i_++) ss_bits_put(&{b}, {f}[i_], 8);"
            if it.valid is not None:
                self.line(f"if ({self.x(it.valid)}) {put}", lvl)
            else:
                self.line(put, lvl)
        return b

    def s_ExternCall(self, st: ir.ExternCall, lvl: int) -> None:
        k = st.kind
        args = [self.x(a) for a in st.args]
        dest = self.lv(st.dest) if st.dest is not None else ""
        if k == "register_read" and wide.is_wide(st.dest.type):  # type: ignore[union-attr]
            self.line(f"{dest} = {ctype(st.dest.type)}_regread(c, {st.obj}, {args[0]});", lvl)  # type: ignore
        elif k == "register_write" and wide.is_wide(st.args[1].type):
            self.line(f"{ctype(st.args[1].type)}_regwrite(c, {st.obj}, {args[0]}, {args[1]});", lvl)
        elif k == "register_read":
            r = self.layout[st.obj]
            self.line(f"{dest} = ss__cell_read(c, {r.bank}, {args[0]}, {_u(r.size)}, {r.members}, "
                      f"{r.member});", lvl)
        elif k == "register_write":
            r = self.layout[st.obj]
            self.line(f"ss__cell_write(c, {r.bank}, {args[0]}, {_u(r.size)}, {r.members}, {r.member}, "
                      f"{_u((1 << r.width) - 1)}, {args[1]});", lvl)
        elif k == "counter_count":
            self.line(f"ss_counter_count(c, {st.obj}, {args[0]});", lvl)
        elif k == "meter_execute":
            self.line(f"{dest} = ss_meter_execute(c, {st.obj}, {args[0]});", lvl)
        elif k == "direct_meter_read":
            self.line(f"{dest} = c->last_meter_color[{st.obj}];", lvl)
        elif k in ("hash", "csum"):
            w = st.dest.type.width if isinstance(st.dest.type, ir.Bits) else 1  # type: ignore[union-attr]
            self.line("{", lvl)
            b = self.bits_input(st.fields, lvl + 1)
            pay = "c->data + c->payload_off, c->len - c->payload_off" if st.payload else "NULL, 0"
            h = f"ss_hash({st.obj}, {b}.buf, {b}.nbits, {pay})"
            if k == "hash" and (wide.is_wide(st.dest.type) or any(wide.is_wide(a.type) for a in st.args)):
                self.wide.hash_result(dest, h, st, lvl + 1)  # type: ignore[arg-type]
            elif k == "hash":
                self.line(f"{dest} = ss_hash_result({h}, {args[0]}, {args[1]}, {w});", lvl + 1)
            else:
                self.line(f"{dest} = {h} & {_u(_mask(w))};", lvl + 1)
            self.line("}", lvl)
        elif k == "random" and wide.is_wide(st.dest.type):  # type: ignore[union-attr]
            w = st.dest.type.width  # type: ignore[union-attr]
            self.line(f"{dest} = {ctype(st.dest.type)}_random(c, {args[0]}, {args[1]}, {w});", lvl)  # type: ignore
        elif k == "random":
            self.line(f"{dest} = ss_random(c, {args[0]}, {args[1]});", lvl)
        elif k == "digest":
            args = [w for a in st.args for w in self.wide.limbs(a)]  # a wide field: its limbs
            f = self.fn.tmp("dg")
            self.line(
                f"{{ uint64_t {f}[{max(len(args), 1)}] = {{{', '.join(args) or '0'}}}; "
                f"ss_digest(c, {st.obj}, {f}, {len(args)}); }}",
                lvl,
            )
        elif k == "clone":
            self.line(f"ss_clone(c, (int){args[0]}, (uint32_t){args[1]}, {st.obj});", lvl)
        elif k in ("resubmit", "recirculate"):
            self.line(f"ss_{k}(c, {st.obj});", lvl)
        elif k == "truncate":
            self.line(f"ss_truncate(c, (uint32_t){args[0]});", lvl)
        elif k == "assert":
            self.line(f"if (!({args[0]})) ss_assert_failed(c, {_cstr(st.text)});", lvl)
        elif k == "log_msg":
            args = [self.wide.limbs(a)[-1] for a in st.args]  # a wide value: its low 64 bits
            f = self.fn.tmp("lg")
            self.line(
                f"{{ uint64_t {f}[{max(len(args), 1)}] = {{{', '.join(args) or '0'}}}; "
                f"ss_log_msg(c, {_cstr(st.text)}, {f}, {len(args)}); }}",
                lvl,
            )
        else:
            raise NativeUnsupported(f"the native backend does not support the extern {k} yet")

    # ------------------------------------------------------------------ parser statements
    def header_target(self, st: ir.Extract, lvl: int) -> str:
        if not st.next:
            return self.lv(st.header)
        t = st.header.type
        assert isinstance(t, ir.Stack)
        b = self.lv(st.header)
        self.fail_if(f"{b}.nxt >= {t.size}", self.err["StackOutOfBounds"], lvl)
        return f"{b}.e[{b}.nxt]"

    def load_fields(self, h: str, t: ir.Header, p: str, lvl: int) -> None:
        bit = 0
        for n, ft in t.fields:
            w = ir.wire_width(ft)
            if w > wide.LIMB:
                self.line(self.wide.load(f"{h}.f_{n}", p, bit, w), lvl)
            elif bit % 8 == 0 and w % 8 == 0:
                self.line(f"{h}.f_{n} = ss__ld({p} + {bit // 8}, {w // 8});", lvl)
            else:
                self.line(f"{h}.f_{n} = ss__getbits({p}, {bit}, {w});", lvl)
            bit += w

    def s_Extract(self, st: ir.Extract, lvl: int) -> None:
        t = st.type
        self.line("{", lvl)
        lvl += 1
        h = self.header_target(st, lvl)
        if t.has_varbit:
            self.extract_varbit(st, h, lvl)
        else:
            n = t.fixed_width() // 8
            self.too_short(f"(uint64_t)c->off + {n} > c->len", lvl)
            if n:
                self.line("const uint8_t *p_ = c->data + c->off;", lvl)
                self.load_fields(h, t, "p_", lvl)
            self.line(f"c->off += {n};", lvl)
        if st.union is not None:
            u = self.lv(st.union)
            for n_, _ in st.union.type.fields:  # type: ignore[attr-defined]
                self.line(f"{u}.f_{n_}.valid = 0;", lvl)
        self.line(f"{h}.valid = 1;", lvl)
        if st.next:
            self.line(f"{self.lv(st.header)}.nxt++;", lvl)
        self.line("}", lvl - 1)

    def extract_varbit(self, st: ir.Extract, h: str, lvl: int) -> None:
        t = st.type
        vb = next(ft for _, ft in t.fields if isinstance(ft, ir.Varbit))
        assert isinstance(vb, ir.Varbit)
        n = self.x(st.varbit_bits) if st.varbit_bits is not None else "0"
        fixed = t.fixed_width()
        # bmv2's extract_VL order: whole bytes (ParserInvalidArgument), then enough packet
        # (PacketTooShort, as P4-16's extract pseudo-code), then the varbit's maximum (HeaderTooShort)
        self.line(f"uint64_t vb_ = {n};", lvl)
        self.fail_if(f"(vb_ + {fixed}) % 8", self.err["ParserInvalidArgument"], lvl)
        self.too_short(f"(uint64_t)c->off + (vb_ + {fixed}) / 8 > c->len", lvl)
        self.fail_if(f"vb_ > {vb.max_width}", self.err["HeaderTooShort"], lvl)
        self.line("const uint8_t *p_ = c->data + c->off;", lvl)
        off = "0"
        for name, ft in t.fields:
            if isinstance(ft, ir.Varbit):
                self.line(f"{h}.f_{name}_bits = (uint32_t)vb_;", lvl)
                self.line(
                    f"for (uint32_t i_ = 0; i_ < vb_ / 8; i_++) "
                    f"{h}.f_{name}[i_] = (uint8_t)ss__getbits(p_, {off} + 8 * (uint64_t)i_, 8);",
                    lvl,
                )
                off = f"{off} + vb_"
            else:
                w = ir.wire_width(ft)
                if w > wide.LIMB:
                    self.line(self.wide.load(f"{h}.f_{name}", "p_", off, w), lvl)
                else:
                    self.line(f"{h}.f_{name} = ss__getbits(p_, {off}, {w});", lvl)
                off = f"{off} + {w}"
        self.line(f"c->off += (uint32_t)((vb_ + {fixed}) / 8);", lvl)

    def s_LookaheadHeader(self, st: ir.LookaheadHeader, lvl: int) -> None:
        n = st.type.fixed_width() // 8
        h = self.lv(st.dest)
        self.line("{", lvl)
        self.too_short(f"(uint64_t)c->off + {n} > c->len", lvl + 1)
        self.line("const uint8_t *p_ = c->data + c->off; (void)p_;", lvl + 1)
        self.load_fields(h, st.type, "p_", lvl + 1)
        self.line(f"{h}.valid = 1;", lvl + 1)
        self.line("}", lvl)

    def s_Advance(self, st: ir.Advance, lvl: int) -> None:
        self.line("{", lvl)
        self.line(f"uint64_t a_ = {self.x(st.bits)};", lvl + 1)
        self.fail_if("a_ % 8", self.err["ParserInvalidArgument"], lvl + 1)
        self.too_short("(uint64_t)c->off + a_ / 8 > c->len", lvl + 1)
        self.line("c->off += (uint32_t)(a_ / 8);", lvl + 1)
        self.line("}", lvl)

    def s_Verify(self, st: ir.Verify, lvl: int) -> None:
        self.fail_if(f"!({self.x(st.cond)})", self.x(st.error), lvl)

    def s_ParserError(self, st: ir.ParserError, lvl: int) -> None:
        self.line(f"err = {st.error}; goto {self.pctx.error};", lvl)

    def s_Emit(self, st: ir.Emit, lvl: int) -> None:
        t = st.type
        h = self.x(st.header)
        self.line(f"if ({h}.valid) {{", lvl)
        lvl += 1
        if t.has_varbit:
            vb = next(n for n, ft in t.fields if isinstance(ft, ir.Varbit))
            size = f"(({t.fixed_width()} + (uint64_t){h}.f_{vb}_bits) / 8)"
        else:
            size = str(t.fixed_width() // 8)
        self.line(f"if ((uint64_t)c->out_len + {size} > c->out_cap) return -1;", lvl)
        self.line("uint8_t *o_ = c->out + c->out_len;", lvl)
        fields = list(t.fields)
        widths = [None if isinstance(ft, ir.Varbit) else ir.wire_width(ft) for _, ft in fields]
        values = [f"{h}.f_{n}" for n, _ in fields]
        body: list[str] = []
        zero = False  # whether a store leaves bytes of the header to the others: zero them first
        bit: str | int = 0
        j = 0
        while j < len(fields):
            n, ft = fields[j]
            w = widths[j]
            if w is None:  # varbit
                body.append(f"for (uint32_t i_ = 0; i_ < {h}.f_{n}_bits / 8; i_++) "
                            f"ss__putbits(o_, {bit} + 8 * (uint64_t)i_, 8, {h}.f_{n}[i_]);")
                bit, zero, j = f"{bit} + {h}.f_{n}_bits", True, j + 1
                continue
            if w > wide.LIMB:
                body.append(self.wide.store("o_", bit, w, values[j]))
                used = 1
                zero = zero or not (isinstance(bit, int) and bit % 8 == 0 and w % 8 == 0)
            else:
                stmt, used, w = self._field_store("o_", bit, values, widths, j)
                body.append(stmt)
                zero = zero or stmt.startswith("ss__putbits")
            bit = bit + w if isinstance(bit, int) else f"{bit} + {w}"
            j += used
        if zero:
            self.line(f"memset(o_, 0, {size});", lvl)
        for stmt in body:
            self.line(stmt, lvl)
        self.line(f"c->out_len += (uint32_t){size};", lvl)
        self.line("}", lvl - 1)

    def _field_store(self, buf: str, bit: int | str, values: list[str], widths: list[int | None],
                     i: int) -> tuple[str, int, int]:
        """The C statement that puts field i (value values[i], widths[i] <= 64 bits) at bit
        `bit` of buf, MSB first, and how many fields and bits it covers: with the sub-byte fields
        after it when they fill whole bytes together (IPv4's version and ihl, flags and fragment
        offset), one composed word; whole bytes at a byte offset as a big-endian store; anything
        else bit by bit (ss__putbits keeps the buffer's other bits)."""
        w = widths[i]
        assert w is not None and w <= wide.LIMB
        run = self._byte_run(widths, i, bit) if w % 8 else 0
        if run:
            gw = cast("list[int]", widths[i : i + run])
            word = self._compose(values[i : i + run], gw)
            return f"ss__st({buf} + {cast(int, bit) // 8}, {sum(gw) // 8}, {word});", run, sum(gw)
        if isinstance(bit, int) and bit % 8 == 0 and w % 8 == 0:
            return f"ss__st({buf} + {bit // 8}, {w // 8}, {values[i]});", 1, w
        return f"ss__putbits({buf}, {bit}, {w}, {values[i]});", 1, w

    @staticmethod
    def _byte_run(widths: list[int | None], i: int, bit: int | str) -> int:
        """How many fields from widths[i] (None: variable width), starting at a constant
        byte-aligned bit offset, fill whole bytes together within 64 bits; 0 when they do not."""
        if not isinstance(bit, int) or bit % 8:
            return 0
        total = 0
        for k in range(i, len(widths)):
            w = widths[k]
            if w is None:
                return 0
            total += w
            if total > 64:
                return 0
            if total % 8 == 0:
                return k - i + 1 if k > i else 0
        return 0

    @staticmethod
    def _compose(values: list[str], widths: list[int]) -> str:
        """Fields of the given widths as one big-endian word (first field in the top bits)."""
        parts, shift = [], sum(widths)
        for v, w in zip(values, widths, strict=True):
            shift -= w
            parts.append(f"(({v} & {_u((1 << w) - 1)}) << {shift})")
        return " | ".join(parts)

    # ------------------------------------------------------------------ functions
    def parser_fn(self) -> list[str]:
        self.begin("ss_parser")
        self.in_parser = True
        self.line("    uint64_t err = 0; (void)err;", 0)
        self.line("    memset(&s->hdr, 0, sizeof s->hdr);", 0)
        self.parser_states(self.p.parser, _PCtx("ST_", "P_accept"), 1)
        text = "\n".join(self.lines)
        # an explicit reject leaves parser_error NoError, as bmv2 (softswitch/README.md, "the choices made")
        for lab, code in (
            ("P_accept", ["    return 0;"]),
            ("P_reject", ["    return 0;"]),
            ("P_error", ["    s->sm.parser_error = err;", "    return (int)err;"]),
        ):
            if f"goto {lab};" in text:
                self.lines.append(f"{lab}:")
                self.lines.extend(code)
        self.lines.append("    return 0;")
        self.in_parser = False
        return self.finish("static int ss_parser(ss_ctx *c, void *vs)", [])

    def parser_states(self, prs: ir.Parser, pc: _PCtx, lvl: int) -> None:
        """A parser's states in place, start first (entered by falling into it); a state's label
        only where a transition names it (gcc's -Wunused-label). Transitions go to this parser's
        states (`pc.prefix` + name), its accept (`pc.accept`) or its reject (`pc.reject`)."""
        outer, self.pctx = self.pctx, pc
        states = {st.name: st for st in prs.states}
        order = [prs.start] + [n for n in states if n != prs.start]
        chunks: list[tuple[str, list[str]]] = []
        for name in order:
            saved = self.lines
            self.lines = []
            self.block(states[name].body, lvl)
            self.transition(states[name].transition, pc.refs, lvl)
            chunks.append((name, self.lines))
            self.lines = saved
        for name, lines in chunks:
            if name in pc.refs:
                self.line(f"{pc.prefix}{name}: ;", max(lvl - 1, 0))
            self.lines.extend(lines)
        self.pctx = outer

    def s_SubParser(self, st: ir.SubParser, lvl: int) -> None:
        """P4-16 13.8.1 (invoking a sub-parser): the calling state is split at the call; the
        sub-parser's accept is the bottom half (the statements after this one), its reject and
        its errors are the caller's (they end the whole parse). Arguments: the lowering copies
        them in before this statement and out after it (lower.bind_params); a reject or an error
        first runs `reject_outs` (the copies of header/struct arguments go out all the same), at
        labels of this sub-parser's that then go on to the caller's reject or error."""
        self.fn.n += 1
        n = self.fn.n
        outer = self.pctx
        if st.reject_outs:
            pc = _PCtx(f"SP{n}_", f"SPA{n}", f"SPR{n}", f"SPE{n}")
        else:
            pc = _PCtx(f"SP{n}_", f"SPA{n}", outer.reject, outer.error)
        self.line(f"{{  /* sub-parser {_cstr(st.name)[1:-1]} */", lvl)
        start = len(self.lines)
        self.parser_states(st.parser, pc, lvl + 1)
        text = "\n".join(self.lines[start:])
        self.line("}", lvl)
        # every state ends in a goto: these are reached only by name
        for lab, then in ((pc.reject, outer.reject), (pc.error, outer.error)):
            if lab != then and f"goto {lab};" in text:
                self.line(f"{lab}: ;", lvl)
                self.block(st.reject_outs, lvl)
                self.line(f"goto {then};", lvl)
        if pc.accept_used:
            self.line(f"{pc.accept}: ;", lvl)

    def target(self, name: str, refs: set[str]) -> str:
        if name == "accept":
            self.pctx.accept_used = True
            return f"goto {self.pctx.accept};"
        if name == "reject":
            return f"goto {self.pctx.reject};"
        refs.add(name)
        return f"goto {self.pctx.prefix}{name};"

    def transition(self, tr: str | ir.Select, refs: set[str], lvl: int) -> None:
        if isinstance(tr, str):
            self.line(self.target(tr, refs), lvl)
            return
        for k in tr.keys:
            self.lookahead_checks(ir.Assign(k, k), lvl)
        kv = []
        self.line("{", lvl)
        for k in tr.keys:
            n = self.fn.tmp("sel")
            self.line(f"{ctype(k.type)} {n} = {self.x(k)}; (void){n};", lvl + 1)  # default-only: unread
            kv.append(n)
        kt = [k.type for k in tr.keys]
        for case in tr.cases:
            go = self.target(case.target, refs)
            if case.value_set >= 0:
                arr = self.fn.tmp("vs")
                words = [w for v, t in zip(kv, kt, strict=True) for w in self.wide.limbs_of(v, t)]
                self.line(
                    f"{{ uint64_t {arr}[] = {{{', '.join(words)}}}; "
                    f"if (ss_value_set_match(c, {case.value_set}, {arr})) {go} }}",
                    lvl + 1,
                )
                continue
            conds = []
            for v, ks, t in zip(kv, case.keysets, kt, strict=False):
                if wide.is_wide(t):
                    cond = self.wide.keyset_cond(v, ks, t)  # type: ignore[arg-type]
                    if cond is not None:
                        conds.append(cond)
                elif isinstance(ks, ir.KsValue):
                    conds.append(f"{v} == {_u(ks.value)}")
                elif isinstance(ks, ir.KsMask):
                    conds.append(f"({v} & {_u(ks.mask)}) == {_u(ks.value)}")
                elif isinstance(ks, ir.KsValueSet):  # one element of a tuple: its own value set
                    words = ", ".join(self.wide.limbs_of(v, t))
                    conds.append(f"ss_value_set_match(c, {ks.value_set}, (const uint64_t[]){{{words}}})")
                elif isinstance(ks, ir.KsRange):
                    parts = []
                    if ks.lo > 0:
                        parts.append(f"{v} >= {_u(ks.lo)}")
                    parts.append(f"{v} <= {_u(ks.hi)}")
                    conds.append("(" + " && ".join(parts) + ")")
            if conds:
                self.line(f"if ({' && '.join(conds)}) {go}", lvl + 1)
            else:
                self.line(go, lvl + 1)
                break
        else:
            # no case matched, no default: the parse ends as on an explicit reject, parser_error
            # NoError, as bmv2 runs p4c-bm2-ss's JSON (softswitch/README.md, "the choices made")
            self.line(f"goto {self.pctx.reject};", lvl + 1)
        self.line("}", lvl)

    def control_fn(self, role: str, body: list[ir.Stmt]) -> list[str]:
        self.begin("ss_" + role)
        self.block(body, 1)
        tail = []
        if "L_exit" in self.fn.used_labels:
            tail.append("L_exit: ;")
        if role == "deparser":
            tail.append("    return 0;")
            return self.finish("static int ss_deparser(ss_ctx *c, void *vs)", tail)
        return self.finish(f"static void ss_{role}(ss_ctx *c, void *vs)", tail)

    def preserve_fn(self) -> list[str]:
        out = [
            "static void ss_preserve(int32_t fl, const void *from_, void *to_) {",
            "    const ss_state *f = (const ss_state *)from_; ss_state *t = (ss_state *)to_;",
            "    (void)f; (void)t;",
            "    switch (fl) {",
        ]
        for fid, paths in sorted(self.p.field_lists.items()):
            out.append(f"    case {fid}:")
            for p in paths:
                if p[0] == "sm":
                    acc = "sm." + ".".join(p[1:])
                else:
                    acc = p[0] + "".join(f".f_{x}" for x in p[1:])
                out.append(f"        t->{acc} = f->{acc};")
            out.append("        break;")
        out += ["    default: break;", "    }", "}", ""]
        return out
