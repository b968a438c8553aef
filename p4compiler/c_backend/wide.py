"""Values wider than 64 bits in the C back end (bit<W>/int<W>, W > 64).

Representation: `ss_wN` (N = ceil(W/64)), a struct of N uint64_t limbs, `v[0]` the least
significant; the bits at and above W are 0 (int<W> holds its two's complement bits, masked, as
the narrow uint64_t values do), so `==` compares limbs and copies are struct assignments. Every
operation is a static inline function over these structs (value semantics: an expression of a
wide type is a C expression of type ss_wN), generated into the prelude only for the limb counts
the program uses; a program without wide values gets none of it, and the narrow (<= 64 bits)
code is unchanged.

Where a wide value crosses ss_runtime.h it travels as its limbs, most significant first, each a
uint64_t (`limb_widths`): a wide table key is that many key fields (an lpm prefix and a ternary
mask are split with it; an lpm or range field is followed by SS_MATCH_LPM_NEXT / RANGE_NEXT fields
that the runtime treats with it as one number: a 128-bit lpm table keeps its hash-per-prefix-
length lookup, a range compares 128-bit bounds), a wide action parameter that many
arguments, a wide digest field that many fields, a wide register N 64-bit cells per index. The
loader (softswitch/native_switch.py) splits and joins with `split`, `join` and `split_match`.

Not covered (refused by c_backend.check with a located line): wide indexes and amounts of
externs. log_msg prints a wide argument's low 64 bits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from p4compiler import ir

if TYPE_CHECKING:
    from p4compiler.c_backend.emit import CEmitter

LIMB = 64


def is_wide(t: Any) -> bool:
    return isinstance(t, ir.Bits) and t.width > LIMB


def nlimbs(width: int) -> int:
    return (width + LIMB - 1) // LIMB


def ctype(t: ir.Bits) -> str:
    return f"ss_w{nlimbs(t.width)}"


# ---------------------------------------------------------------------------- runtime crossing
def limb_widths(width: int) -> list[int]:
    """The widths of the limbs a `width`-bit value crosses the runtime as, most significant first."""
    if width <= LIMB:
        return [width]
    n = nlimbs(width)
    return [width - LIMB * (n - 1)] + [LIMB] * (n - 1)


def split(value: int, width: int) -> list[int]:
    """A value as its limbs, most significant first."""
    ws = limb_widths(width)
    out, sh = [], width
    for w in ws:
        sh -= w
        out.append((value >> sh) & ((1 << w) - 1))
    return out


def join(limbs: list[int], width: int) -> int:
    v = 0
    for x, w in zip(limbs, limb_widths(width), strict=True):
        v = (v << w) | (x & ((1 << w) - 1))
    return v


def split_match(kind: str, value: int, mask: int, width: int) -> list[tuple[int, int]]:
    """One key's (value, mask | prefix length | range high) as the runtime's per-limb pairs."""
    if width <= LIMB:
        return [(value, mask)]
    if kind == "lpm":
        out, left = [], mask
        for v, w in zip(split(value, width), limb_widths(width), strict=True):
            p = min(max(left, 0), w)
            out.append((v, p))
            left -= w
        return out
    # exact/ternary/optional: value and mask limbs; range: low and high limbs (the runtime compares
    # a range's limbs as one number: SS_MATCH_RANGE_NEXT)
    return list(zip(split(value, width), split(mask, width), strict=True))


# ---------------------------------------------------------------------------- C helpers
PRELUDE = r"""
/* ---- values wider than 64 bits (p4compiler/c_backend/wide.py): n limbs, [0] least significant */
__extension__ typedef unsigned __int128 ss__u128;
static inline void ss__wtrim(uint64_t *a, unsigned n, unsigned w) {
    for (unsigned i = 0; i < n; i++) {
        if (64u * i >= w) a[i] = 0;
        else if (w - 64u * i < 64u) a[i] &= (UINT64_C(1) << (w - 64u * i)) - 1;
    }
}
/* sign-extend the low w bits (1 <= w <= 64n) to all n limbs */
static inline void ss__wsext(uint64_t *a, unsigned n, unsigned w) {
    unsigned top = (w - 1) / 64u, b = (w - 1) % 64u;
    uint64_t fill = ((a[top] >> b) & 1u) ? ~UINT64_C(0) : 0;
    if (b < 63u) {
        uint64_t keep = (UINT64_C(1) << (b + 1)) - 1;
        a[top] = (a[top] & keep) | (fill & ~keep);
    }
    for (unsigned i = top + 1; i < n; i++) a[i] = fill;
}
static inline void ss__wshl(uint64_t *r, const uint64_t *a, unsigned n, uint64_t s) {
    for (unsigned i = 0; i < n; i++) r[i] = 0;
    if (s >= 64u * (uint64_t)n) return;
    unsigned q = (unsigned)(s / 64u), b = (unsigned)(s % 64u);
    for (unsigned i = q; i < n; i++) {
        uint64_t v = a[i - q] << b;
        if (b && i > q) v |= a[i - q - 1] >> (64u - b);
        r[i] = v;
    }
}
/* r = a >> s; the bits coming in from above the top limb are `fill` (0, or ~0 for a negative) */
static inline void ss__wshr(uint64_t *r, const uint64_t *a, unsigned n, uint64_t s, uint64_t fill) {
    for (unsigned i = 0; i < n; i++) r[i] = fill;
    if (s >= 64u * (uint64_t)n) return;
    unsigned q = (unsigned)(s / 64u), b = (unsigned)(s % 64u);
    for (unsigned i = 0; i + q < n; i++) {
        uint64_t hi = i + q + 1 < n ? a[i + q + 1] : fill;
        r[i] = b ? (a[i + q] >> b) | (hi << (64u - b)) : a[i + q];
    }
}
static inline uint64_t ss__wadd(uint64_t *r, const uint64_t *a, const uint64_t *b, unsigned n) {
    uint64_t c = 0;
    for (unsigned i = 0; i < n; i++) {
        uint64_t s = a[i] + c, t;
        c = s < c;
        t = s + b[i];
        c += t < s;
        r[i] = t;
    }
    return c;
}
static inline void ss__wsub(uint64_t *r, const uint64_t *a, const uint64_t *b, unsigned n) {
    uint64_t br = 0;
    for (unsigned i = 0; i < n; i++) {
        uint64_t d = a[i] - b[i], nb = a[i] < b[i];
        nb |= d < br;
        r[i] = d - br;
        br = nb;
    }
}
static inline void ss__wmul(uint64_t *r, const uint64_t *a, const uint64_t *b, unsigned n) {
    for (unsigned i = 0; i < n; i++) r[i] = 0;
    for (unsigned i = 0; i < n; i++) {
        ss__u128 carry = 0;
        for (unsigned j = 0; i + j < n; j++) {
            ss__u128 t = (ss__u128)a[i] * b[j] + r[i + j] + carry;
            r[i + j] = (uint64_t)t;
            carry = t >> 64;
        }
    }
}
static inline int ss__wcmp(const uint64_t *a, const uint64_t *b, unsigned n) {
    for (unsigned i = n; i-- > 0;)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}
/* unsigned a / b and a % b (both 0 when b is 0, as for narrow values) */
static inline void ss__wdivmod(uint64_t *q, uint64_t *rem, const uint64_t *a, const uint64_t *b,
                               unsigned n) {
    int nz = 0;
    for (unsigned i = 0; i < n; i++) { q[i] = 0; rem[i] = 0; nz |= b[i] != 0; }
    if (!nz) return;
    for (unsigned bit = 64u * n; bit-- > 0;) {
        uint64_t out = rem[n - 1] >> 63;  /* shifted out of the top: rem is then above b */
        for (unsigned i = n; i-- > 1;) rem[i] = (rem[i] << 1) | (rem[i - 1] >> 63);
        rem[0] = (rem[0] << 1) | ((a[bit / 64u] >> (bit % 64u)) & 1u);
        if (out || ss__wcmp(rem, b, n) >= 0) {
            ss__wsub(rem, rem, b, n);
            q[bit / 64u] |= UINT64_C(1) << (bit % 64u);
        }
    }
}
/* w <= 64 bits of a starting at bit lo */
static inline uint64_t ss__wbits(const uint64_t *a, unsigned n, unsigned lo, unsigned w) {
    unsigned q = lo / 64u, b = lo % 64u;
    uint64_t v = q < n ? a[q] >> b : 0;
    if (b && q + 1 < n) v |= a[q + 1] << (64u - b);
    return v & ss__mask(w);
}
/* w bits at bit offset `bit` of p, MSB first (packet order) */
static inline void ss__wget(uint64_t *r, unsigned n, const uint8_t *p, uint64_t bit, unsigned w) {
    for (unsigned i = 0; i < n; i++) {
        if (64u * i >= w) { r[i] = 0; continue; }
        unsigned cw = w - 64u * i < 64u ? w - 64u * i : 64u;
        r[i] = ss__getbits(p, bit + (w - 64u * i - cw), cw);
    }
}
static inline void ss__wput(uint8_t *p, uint64_t bit, unsigned w, const uint64_t *a, unsigned n) {
    for (unsigned i = 0; i < n && 64u * i < w; i++) {
        unsigned cw = w - 64u * i < 64u ? w - 64u * i : 64u;
        ss__putbits(p, bit + (w - 64u * i - cw), cw, a[i]);
    }
}
static inline void ss__wbitsput(ss_bits *b, const uint64_t *a, unsigned n, unsigned w) {
    for (unsigned i = n; i-- > 0;) {
        if (64u * i >= w) continue;
        ss_bits_put(b, a[i], w - 64u * i < 64u ? w - 64u * i : 64u);
    }
}
"""

# one set per limb count N (value semantics: the structs are small and everything inlines)
PER_N = r"""
typedef struct ss_w{N} {{ uint64_t v[{N}]; }} ss_w{N};
static inline ss_w{N} ss_w{N}_trim(ss_w{N} a, unsigned w) {{ ss__wtrim(a.v, {N}, w); return a; }}
static inline ss_w{N} ss_w{N}_from64(uint64_t x) {{
    ss_w{N} r; memset(&r, 0, sizeof r); r.v[0] = x; return r;
}}
static inline ss_w{N} ss_w{N}_sext(ss_w{N} a, unsigned from, unsigned to) {{
    ss__wsext(a.v, {N}, from); ss__wtrim(a.v, {N}, to); return a;
}}
static inline uint64_t ss_w{N}_bits(ss_w{N} a, unsigned lo, unsigned w) {{
    return ss__wbits(a.v, {N}, lo, w);
}}
static inline uint64_t ss_w{N}_limb(ss_w{N} a, unsigned i) {{ return a.v[i]; }}
/* saturated to 64 bits (shift amounts) */
static inline uint64_t ss_w{N}_sat64(ss_w{N} a) {{
    for (unsigned i = 1; i < {N}; i++) if (a.v[i]) return ~UINT64_C(0);
    return a.v[0];
}}
static inline int ss_w{N}_eq(ss_w{N} a, ss_w{N} b) {{ return ss__wcmp(a.v, b.v, {N}) == 0; }}
static inline int ss_w{N}_cmp(ss_w{N} a, ss_w{N} b) {{ return ss__wcmp(a.v, b.v, {N}); }}
static inline int ss_w{N}_cmp_s(ss_w{N} a, ss_w{N} b, unsigned w) {{
    ss__wsext(a.v, {N}, w); ss__wsext(b.v, {N}, w);
    a.v[{N} - 1] ^= UINT64_C(1) << 63; b.v[{N} - 1] ^= UINT64_C(1) << 63;
    return ss__wcmp(a.v, b.v, {N});
}}
static inline ss_w{N} ss_w{N}_add(ss_w{N} a, ss_w{N} b, unsigned w) {{
    ss_w{N} r; ss__wadd(r.v, a.v, b.v, {N}); ss__wtrim(r.v, {N}, w); return r;
}}
static inline ss_w{N} ss_w{N}_sub(ss_w{N} a, ss_w{N} b, unsigned w) {{
    ss_w{N} r; ss__wsub(r.v, a.v, b.v, {N}); ss__wtrim(r.v, {N}, w); return r;
}}
static inline ss_w{N} ss_w{N}_mul(ss_w{N} a, ss_w{N} b, unsigned w) {{
    ss_w{N} r; ss__wmul(r.v, a.v, b.v, {N}); ss__wtrim(r.v, {N}, w); return r;
}}
static inline ss_w{N} ss_w{N}_div(ss_w{N} a, ss_w{N} b) {{
    ss_w{N} q, r; ss__wdivmod(q.v, r.v, a.v, b.v, {N}); return q;
}}
static inline ss_w{N} ss_w{N}_mod(ss_w{N} a, ss_w{N} b) {{
    ss_w{N} q, r; ss__wdivmod(q.v, r.v, a.v, b.v, {N}); return r;
}}
static inline ss_w{N} ss_w{N}_and(ss_w{N} a, ss_w{N} b) {{
    for (unsigned i = 0; i < {N}; i++) a.v[i] &= b.v[i];
    return a;
}}
static inline ss_w{N} ss_w{N}_or(ss_w{N} a, ss_w{N} b) {{
    for (unsigned i = 0; i < {N}; i++) a.v[i] |= b.v[i];
    return a;
}}
static inline ss_w{N} ss_w{N}_xor(ss_w{N} a, ss_w{N} b) {{
    for (unsigned i = 0; i < {N}; i++) a.v[i] ^= b.v[i];
    return a;
}}
static inline ss_w{N} ss_w{N}_not(ss_w{N} a, unsigned w) {{
    for (unsigned i = 0; i < {N}; i++) a.v[i] = ~a.v[i];
    ss__wtrim(a.v, {N}, w); return a;
}}
static inline ss_w{N} ss_w{N}_neg(ss_w{N} a, unsigned w) {{
    ss_w{N} z, r; memset(&z, 0, sizeof z); ss__wsub(r.v, z.v, a.v, {N}); ss__wtrim(r.v, {N}, w); return r;
}}
static inline ss_w{N} ss_w{N}_shl(ss_w{N} a, uint64_t s, unsigned w) {{
    ss_w{N} r; ss__wshl(r.v, a.v, {N}, s); ss__wtrim(r.v, {N}, w); return r;
}}
static inline ss_w{N} ss_w{N}_shr(ss_w{N} a, uint64_t s) {{
    ss_w{N} r; ss__wshr(r.v, a.v, {N}, s, 0); return r;
}}
static inline ss_w{N} ss_w{N}_shr_s(ss_w{N} a, uint64_t s, unsigned w) {{
    ss_w{N} r; ss__wsext(a.v, {N}, w);
    ss__wshr(r.v, a.v, {N}, s, (a.v[{N} - 1] >> 63) ? ~UINT64_C(0) : 0);
    ss__wtrim(r.v, {N}, w); return r;
}}
static inline ss_w{N} ss_w{N}_addsat_u(ss_w{N} a, ss_w{N} b, unsigned w) {{
    ss_w{N} r; uint64_t c = ss__wadd(r.v, a.v, b.v, {N}); ss_w{N} t = ss_w{N}_trim(r, w);
    if (c || ss__wcmp(r.v, t.v, {N}) != 0) {{ memset(&r, 0xff, sizeof r); r = ss_w{N}_trim(r, w); }}
    return r;
}}
static inline ss_w{N} ss_w{N}_subsat_u(ss_w{N} a, ss_w{N} b) {{
    ss_w{N} r; memset(&r, 0, sizeof r);
    if (ss__wcmp(a.v, b.v, {N}) > 0) ss__wsub(r.v, a.v, b.v, {N});
    return r;
}}
/* signed saturation: sa, sb, sr the sign bits of a, b (b negated for sub) and the wrapped result */
static inline ss_w{N} ss_w{N}_sat_s(ss_w{N} r, int over, int neg, unsigned w) {{
    if (!over) return r;
    memset(&r, neg ? 0 : 0xff, sizeof r);
    r.v[(w - 1) / 64u] ^= UINT64_C(1) << ((w - 1) % 64u);
    return ss_w{N}_trim(r, w);
}}
static inline ss_w{N} ss_w{N}_addsat_s(ss_w{N} a, ss_w{N} b, unsigned w) {{
    ss_w{N} r = ss_w{N}_add(a, b, w);
    int sa = (int)ss__wbits(a.v, {N}, w - 1, 1), sb = (int)ss__wbits(b.v, {N}, w - 1, 1);
    int sr = (int)ss__wbits(r.v, {N}, w - 1, 1);
    return ss_w{N}_sat_s(r, sa == sb && sr != sa, sa, w);
}}
static inline ss_w{N} ss_w{N}_subsat_s(ss_w{N} a, ss_w{N} b, unsigned w) {{
    ss_w{N} r = ss_w{N}_sub(a, b, w);
    int sa = (int)ss__wbits(a.v, {N}, w - 1, 1), sb = (int)ss__wbits(b.v, {N}, w - 1, 1);
    int sr = (int)ss__wbits(r.v, {N}, w - 1, 1);
    return ss_w{N}_sat_s(r, sa != sb && sr != sa, sa, w);
}}
/* t with bits lo .. lo+width-1 replaced by the low width bits of x */
static inline ss_w{N} ss_w{N}_setbits(ss_w{N} t, unsigned lo, unsigned width, ss_w{N} x) {{
    ss_w{N} m; memset(&m, 0xff, sizeof m); m = ss_w{N}_trim(m, width);
    x = ss_w{N}_shl(ss_w{N}_and(x, m), lo, 64u * {N});
    m = ss_w{N}_shl(m, lo, 64u * {N});
    for (unsigned i = 0; i < {N}; i++) t.v[i] = (t.v[i] & ~m.v[i]) | x.v[i];
    return t;
}}
static inline ss_w{N} ss_w{N}_get(const uint8_t *p, uint64_t bit, unsigned w) {{
    ss_w{N} r; ss__wget(r.v, {N}, p, bit, w); return r;
}}
static inline void ss_w{N}_put(uint8_t *p, uint64_t bit, unsigned w, ss_w{N} a) {{
    ss__wput(p, bit, w, a.v, {N});
}}
static inline void ss_w{N}_bitsput(ss_bits *b, ss_w{N} a, unsigned w) {{ ss__wbitsput(b, a.v, {N}, w); }}
/* from the runtime's limbs, most significant first (action arguments) */
static inline ss_w{N} ss_w{N}_args(const uint64_t *r, unsigned w) {{
    ss_w{N} a;
    for (unsigned i = 0; i < {N}; i++) a.v[{N} - 1 - i] = r[i];
    return ss_w{N}_trim(a, w);
}}
/* v1model random(): uniform in [lo, hi] (lo when lo >= hi), as softswitch.algorithms.Xoshiro256
 * .randint: a span of k 64-bit words draws k words per try (the first the most significant) and
 * rejects the low tail; one word is the runtime's own ss_random */
static inline ss_w{N} ss_w{N}_random(ss_ctx *c, ss_w{N} lo, ss_w{N} hi, unsigned w) {{
    if (ss__wcmp(lo.v, hi.v, {N}) >= 0) return lo;
    uint64_t span[{N}], rng[{N}], t[{N}], th[{N}], q[{N}], r[{N}], m[{N}], z[{N}];
    memset(r, 0, sizeof r);
    ss__wsub(span, hi.v, lo.v, {N});
    unsigned k = {N};
    while (k > 1 && !span[k - 1]) k--;
    ss_w{N} x; memset(&x, 0, sizeof x);
    if (k == 1) {{
        x.v[0] = ss_random(c, 0, span[0]);
        return ss_w{N}_add(lo, x, w);
    }}
    int whole = 1;  /* span = 2^(64k) - 1: every draw is in range */
    for (unsigned i = 0; i < k; i++) whole &= span[i] == ~UINT64_C(0);
    memset(z, 0, sizeof z);
    memset(rng, 0, sizeof rng);
    rng[0] = 1;
    ss__wadd(rng, span, rng, k);  /* span + 1 (wraps to 0 when whole) */
    ss__wsub(t, z, rng, k);  /* 2^(64k) - rng */
    memset(th, 0, sizeof th);
    if (!whole) ss__wdivmod(q, th, t, rng, k);  /* threshold: (2^(64k) - rng) % rng */
    for (;;) {{
        for (unsigned i = 0; i < k; i++) r[k - 1 - i] = ss_random(c, 0, ~UINT64_C(0));
        if (ss__wcmp(r, th, k) >= 0) break;
    }}
    if (whole) memcpy(m, r, sizeof m); else ss__wdivmod(q, m, r, rng, k);
    for (unsigned i = 0; i < k; i++) x.v[i] = m[i];
    return ss_w{N}_add(lo, x, w);
}}
/* a register of wide values: {N} cells per index, most significant first */
static inline ss_w{N} ss_w{N}_regread(ss_ctx *c, uint32_t reg, uint64_t index) {{
    ss_w{N} a; memset(&a, 0, sizeof a);
    if (index > UINT64_MAX / {N} - 1) return a;
    for (unsigned i = 0; i < {N}; i++) a.v[{N} - 1 - i] = ss__reg_read(c, reg, index * {N} + i);
    return a;
}}
static inline void ss_w{N}_regwrite(ss_ctx *c, uint32_t reg, uint64_t index, ss_w{N} a) {{
    if (index > UINT64_MAX / {N} - 1) return;
    for (unsigned i = 0; i < {N}; i++) ss__reg_write(c, reg, index * {N} + i, a.v[{N} - 1 - i]);
}}
"""

RESIZE = r"""
static inline ss_w{M} ss_w{M}_from_w{N}(ss_w{N} a) {{
    ss_w{M} r; memset(&r, 0, sizeof r);
    for (unsigned i = 0; i < {K}; i++) r.v[i] = a.v[i];
    return r;
}}
"""


def _u(v: int) -> str:
    return f"UINT64_C({v:#x})"


def widths_in(prog: ir.Program) -> set[int]:
    """Every limb count (> 1) of a wide type the program's IR mentions."""
    found: set[int] = set()
    seen: set[int] = set()

    def typ(t: Any) -> None:
        if is_wide(t):
            found.add(nlimbs(t.width))
        elif isinstance(t, (ir.Header, ir.Struct, ir.Union_)) and id(t) not in seen:
            seen.add(id(t))
            for _, ft in t.fields:
                typ(ft)
        elif isinstance(t, ir.Stack):
            typ(t.element)

    for t in prog.types:
        typ(t)
    everything: list[Any] = [*prog.parser.states, *[s for b in prog.controls.values() for s in b]]
    for n in ir.walk(everything):
        typ(getattr(n, "type", None))
        if isinstance(n, ir.Declare):
            typ(n.var.type)
    return found


class Wide:
    """The wide-value half of CEmitter: expressions and the statements that touch wide values."""

    def __init__(self, em: CEmitter) -> None:
        self.em = em
        self.used: set[int] = widths_in(em.p)
        self.pairs: set[tuple[int, int]] = set()

    def prelude(self) -> str:
        if not self.used:
            return ""
        parts = [PRELUDE]
        parts.extend(PER_N.format(N=n) for n in sorted(self.used))
        for m, n in sorted(self.pairs):
            parts.append(RESIZE.format(M=m, N=n, K=min(m, n)))
        return "".join(parts)

    def t(self, width: int) -> str:
        n = nlimbs(width)
        self.used.add(n)
        return f"ss_w{n}"

    # ------------------------------------------------------------------ conversions
    def resize(self, a: str, frm: int, to: int) -> str:
        """A wide value of `frm` bits as the struct of a `to`-bit value (limbs dropped or zeroed)."""
        n, m = nlimbs(frm), nlimbs(to)
        if n == m:
            return a
        self.used.update((n, m))
        self.pairs.add((m, n))
        return f"ss_w{m}_from_w{n}({a})"

    def widen(self, e: ir.Expr, to: int) -> str:
        """Any Bits expression as the struct of a `to`-bit value, zero-extended (its bits as-is)."""
        t = e.type
        assert isinstance(t, ir.Bits)
        if not is_wide(t):
            return f"{self.t(to)}_from64({self.em.x(e)})"
        return self.resize(self.em.x(e), t.width, to)

    def amount(self, e: ir.Expr) -> str:
        """A shift amount as uint64_t (a wide one saturates)."""
        if is_wide(e.type):
            return f"{self.t(e.type.width)}_sat64({self.em.x(e)})"  # type: ignore[attr-defined]
        return self.em.x(e)

    # ------------------------------------------------------------------ expressions
    @staticmethod
    def handles(e: ir.Expr) -> bool:
        if isinstance(e, (ir.Const, ir.Unary, ir.Concat, ir.Lookahead)):
            return is_wide(e.type)
        if isinstance(e, ir.BinOp):
            return is_wide(e.type) or is_wide(e.left.type) or is_wide(e.right.type)
        if isinstance(e, (ir.Cast, ir.Slice)):
            return is_wide(e.type) or is_wide(e.expr.type)
        return False

    def x(self, e: ir.Expr) -> str:
        return getattr(self, "x_" + type(e).__name__)(e)

    def x_Const(self, e: ir.Const) -> str:
        w = e.type.width  # type: ignore[attr-defined]
        limbs = [(e.value >> (LIMB * i)) & ((1 << LIMB) - 1) for i in range(nlimbs(w))]
        return f"(({self.t(w)}){{{{{', '.join(_u(v) for v in limbs)}}}}})"

    def x_Lookahead(self, e: ir.Lookahead) -> str:
        return f"{self.t(e.width)}_get(c->data + c->off, 0, {e.width})"

    def x_Unary(self, e: ir.Unary) -> str:
        w = e.type.width  # type: ignore[attr-defined]
        return f"{self.t(w)}_{'neg' if e.op == 'neg' else 'not'}({self.em.x(e.expr)}, {w})"

    def x_BinOp(self, e: ir.BinOp) -> str:
        op, em = e.op, self.em
        if op in ("shl", "shr"):
            n = self.amount(e.right)
            t = e.type
            assert isinstance(t, ir.Bits)
            a, w = em.x(e.left), t.width
            if not is_wide(t):  # a narrow value shifted by a wide amount
                if op == "shl":
                    return f"ss__shl({a}, {n}, {w})"
                if t.signed:
                    return f"ss__shr_s({a}, {n}, {w})"
                return f"({n} >= {w} ? UINT64_C(0) : {a} >> {n})"
            if op == "shl":
                return f"{self.t(w)}_shl({a}, {n}, {w})"
            if t.signed:
                return f"{self.t(w)}_shr_s({a}, {n}, {w})"
            return f"{self.t(w)}_shr({a}, {n})"
        a, b = em.x(e.left), em.x(e.right)
        lt = e.left.type
        assert isinstance(lt, ir.Bits)
        T, w = self.t(lt.width), lt.width
        if op == "eq":
            return f"{T}_eq({a}, {b})"
        if op == "ne":
            return f"(!{T}_eq({a}, {b}))"
        if op in ("lt", "le", "gt", "ge"):
            c = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
            if lt.signed:
                return f"({T}_cmp_s({a}, {b}, {w}) {c} 0)"
            return f"({T}_cmp({a}, {b}) {c} 0)"
        if op in ("add", "sub", "mul"):
            return f"{T}_{op}({a}, {b}, {w})"
        if op in ("and", "or", "xor", "div", "mod"):
            return f"{T}_{op}({a}, {b})"
        if op == "addsat":
            return f"{T}_addsat_{'s' if lt.signed else 'u'}({a}, {b}, {w})"
        if op == "subsat":
            return f"{T}_subsat_s({a}, {b}, {w})" if lt.signed else f"{T}_subsat_u({a}, {b})"
        from p4compiler.lower import NativeUnsupported

        raise NativeUnsupported(f"the native backend does not support the operator {op} on wide values yet")

    def x_Concat(self, e: ir.Concat) -> str:
        w = e.type.width  # type: ignore[attr-defined]
        rw = e.right.type.width  # type: ignore[attr-defined]
        T = self.t(w)
        return f"{T}_or({T}_shl({self.widen(e.left, w)}, {rw}, {w}), {self.widen(e.right, w)})"

    def x_Slice(self, e: ir.Slice) -> str:
        st = e.expr.type
        assert isinstance(st, ir.Bits)
        a, width = self.em.x(e.expr), e.hi - e.lo + 1
        S = self.t(st.width)
        if width <= LIMB:
            return f"{S}_bits({a}, {e.lo}, {width})"
        shifted = f"{S}_shr({a}, {e.lo})" if e.lo else a
        return f"{self.t(width)}_trim({self.resize(shifted, st.width, width)}, {width})"

    def x_Cast(self, e: ir.Cast) -> str:
        s, t = e.expr.type, e.type
        assert isinstance(s, ir.Bits) and isinstance(t, ir.Bits), e
        a = self.em.x(e.expr)
        if not is_wide(t):  # truncation of a wide value
            return f"{self.t(s.width)}_bits({a}, 0, {t.width})"
        T = self.t(t.width)
        if not is_wide(s):
            base = f"{T}_from64({a})"
        else:
            base = self.resize(a, s.width, t.width)
        if s.signed and t.width > s.width:
            return f"{T}_sext({base}, {s.width}, {t.width})"
        if t.width < s.width:
            return f"{T}_trim({base}, {t.width})"
        return base

    # ------------------------------------------------------------------ statements
    def assign_slice(self, st: ir.AssignSlice, lvl: int) -> None:
        w = st.lhs.type.width  # type: ignore[attr-defined]
        t = self.em.lv(st.lhs)
        x = self.widen(st.rhs, w)
        self.em.line(f"{t} = {self.t(w)}_setbits({t}, {st.lo}, {st.hi - st.lo + 1}, {x});", lvl)

    def load(self, dst: str, p: str, bit: Any, w: int) -> str:
        return f"{dst} = {self.t(w)}_get({p}, {bit}, {w});"

    def store(self, p: str, bit: Any, w: int, src: str) -> str:
        return f"{self.t(w)}_put({p}, {bit}, {w}, {src});"

    def limbs(self, e: ir.Expr) -> list[str]:
        """A value as the runtime's uint64_t words: one for a narrow value, else its limbs MS first."""
        return self.limbs_of(self.em.x(e), e.type)

    def limbs_of(self, a: str, t: ir.Type) -> list[str]:
        if not is_wide(t):
            return [a]
        w = t.width  # type: ignore[attr-defined]
        T, n = self.t(w), nlimbs(w)
        return [f"{T}_limb({a}, {n - 1 - i})" for i in range(n)]

    def from_args(self, r: str, off: int, t: ir.Bits) -> str:
        return f"{self.t(t.width)}_args({r} + {off}, {t.width})"

    def bits_put(self, b: str, it: ir.FieldListItem) -> str:
        return f"{self.t(it.width)}_bitsput(&{b}, {self.em.x(it.expr)}, {it.width});"

    def hash_result(self, dest: str, h: str, st: ir.ExternCall, lvl: int) -> None:
        """v1model hash() where the result, base or max is wider than 64 bits: as bmv2 (and
        softswitch.algorithms.hash_result), base + (h mod max) computed in 64 bits (base when max
        is 0), then zero-extended or cut to the result's width. A max of 2^64 or more leaves h."""
        em = self.em
        base, mx = st.args
        lo = self.limbs(base)[-1]  # base mod 2^64 is all that reaches the 64-bit sum
        em.line(f"uint64_t h_ = {h};", lvl)
        if is_wide(mx.type):
            T = self.t(mx.type.width)  # type: ignore[attr-defined]
            em.line(f"{T} m_ = {em.x(mx)};", lvl)
            em.line(f"uint64_t v_ = {T}_sat64({T}_shr(m_, 64)) ? {lo} + h_ : "
                    f"ss_hash_result(h_, {lo}, {T}_limb(m_, 0), 64);", lvl)
        else:
            em.line(f"uint64_t v_ = ss_hash_result(h_, {lo}, {em.x(mx)}, 64);", lvl)
        t = st.dest.type  # type: ignore[union-attr]
        if is_wide(t):
            em.line(f"{dest} = {self.t(t.width)}_from64(v_);", lvl)  # type: ignore[attr-defined]
        else:
            w = t.width if isinstance(t, ir.Bits) else 1
            em.line(f"{dest} = v_ & {_u((1 << w) - 1)};", lvl)

    def keyset_cond(self, v: str, ks: Any, t: ir.Bits) -> str | None:
        """The C condition of one select keyset element on a wide key held in `v` (None: always)."""
        T, w = self.t(t.width), t.width

        def c(x: int) -> str:
            return self.x_Const(ir.Const(x & t.mask, t))

        if isinstance(ks, ir.KsValue):
            return f"{T}_eq({v}, {c(ks.value)})"
        if isinstance(ks, ir.KsMask):
            return f"{T}_eq({T}_and({v}, {c(ks.mask)}), {c(ks.value & ks.mask)})"
        if isinstance(ks, ir.KsValueSet):
            words = ", ".join(self.limbs_of(v, t))
            return f"ss_value_set_match(c, {ks.value_set}, (const uint64_t[]){{{words}}})"
        if isinstance(ks, ir.KsRange):
            if t.signed:
                return f"({T}_cmp_s({v}, {c(ks.lo)}, {w}) >= 0 && {T}_cmp_s({v}, {c(ks.hi)}, {w}) <= 0)"
            return f"({T}_cmp({v}, {c(ks.lo)}) >= 0 && {T}_cmp({v}, {c(ks.hi)}) <= 0)"
        return None

    def switch(self, st: ir.Switch, lvl: int) -> None:
        """`switch` on a wide value: an if/else chain (the IR's cases never fall through)."""
        t = st.expr.type
        assert isinstance(t, ir.Bits)
        em, T = self.em, self.t(t.width)
        v = em.fn.tmp("sw")
        em.line("{", lvl)
        em.line(f"{T} {v} = {em.x(st.expr)};", lvl + 1)
        first = True
        default = None
        for case in st.cases:
            if not case.values:
                default = case
                continue
            cond = " || ".join(f"{T}_eq({v}, {self.x_Const(ir.Const(x & t.mask, t))})" for x in case.values)
            em.line(f"{'if' if first else '} else if'} ({cond}) {{", lvl + 1)
            em.block(case.body, lvl + 2)
            first = False
        if default is not None:
            em.line("{" if first else "} else {", lvl + 1)
            em.block(default.body, lvl + 2)
            first = False
        if not first:
            em.line("}", lvl + 1)
        em.line("}", lvl)
