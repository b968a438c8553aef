"""The C helpers for values wider than 64 bits (p4compiler/c_backend/wide.py), checked one
operation at a time against Python integers, built with -Wall -Wextra -Werror and run under
AddressSanitizer + UndefinedBehaviorSanitizer: widths at, around and between limb boundaries
(65 .. 200 bits), operands at the edges (0, 1, all ones, the sign bit, 2^64 +- 1) and random ones,
shift amounts around the width and the 64-bit limb size.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from p4compiler.c_backend import wide
from p4compiler.c_backend.emit import PRELUDE
from softswitch.native import sanitize_cflags

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = ROOT / "softswitch/native/include"
GCC = shutil.which("gcc") or shutil.which("cc")
WIDTHS = [65, 72, 100, 127, 128, 129, 150, 192, 200]

STUBS = r"""
#include <stdio.h>
void ss_bits_put(ss_bits *b, uint64_t v, uint32_t width) {
    for (uint32_t i = width; i-- > 0;) {
        if ((v >> i) & 1u) b->buf[b->nbits >> 3] |= (uint8_t)(0x80u >> (b->nbits & 7u));
        b->nbits++;
    }
}
/* one 64-cell register for the helpers' inline accesses (ss__reg_read/ss__reg_write) */
static uint64_t cells[64];
static ss_register reg0 = {.width = 64, .owns_cells = 1, .mask = ~UINT64_C(0), .size = 64, .stride = 1,
                           .cells = cells};
static ss_register *const regs[] = {&reg0};
static ss_ctx ctx0 = {.registers = regs};
"""


def _sx(v: int, w: int) -> int:
    v &= (1 << w) - 1
    return v - (1 << w) if v >> (w - 1) else v


def _cases(rng: random.Random) -> tuple[list[str], list[str]]:
    """C statements printing one line each, and the lines Python expects."""
    code: list[str] = []
    want: list[str] = []
    for w in WIDTHS:
        n, m = wide.nlimbs(w), (1 << w) - 1
        T = f"ss_w{n}"

        def c(v: int, T: str = T, n: int = n) -> str:
            limbs = [(v >> (64 * i)) & ((1 << 64) - 1) for i in range(n)]
            return f"(({T}){{{{{', '.join(f'UINT64_C({x:#x})' for x in limbs)}}}}})"

        def out(expr: str, T: str = T) -> None:
            code.append(f"pr{T[4:]}({expr});")

        edges = [0, 1, m, m >> 1, 1 << (w - 1), (1 << 64) - 1, 1 << 64, (1 << 64) + 1, m ^ (1 << 63)]
        vals = [e & m for e in edges] + [rng.getrandbits(w) for _ in range(6)]
        pairs = [(rng.choice(vals), rng.choice(vals)) for _ in range(14)]
        for a, b in pairs:
            sa, sb = _sx(a, w), _sx(b, w)
            for op, r in (("add", a + b), ("sub", a - b), ("mul", a * b)):
                out(f"{T}_{op}({c(a)}, {c(b)}, {w})")
                want.append(f"{r & m:x}")
            for op, r in (("and", a & b), ("or", a | b), ("xor", a ^ b),
                          ("div", a // b if b else 0), ("mod", a % b if b else 0)):
                out(f"{T}_{op}({c(a)}, {c(b)})")
                want.append(f"{r:x}")
            out(f"{T}_addsat_u({c(a)}, {c(b)}, {w})")
            want.append(f"{min(a + b, m):x}")
            out(f"{T}_subsat_u({c(a)}, {c(b)})")
            want.append(f"{max(a - b, 0):x}")
            lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
            out(f"{T}_addsat_s({c(a)}, {c(b)}, {w})")
            want.append(f"{min(max(sa + sb, lo), hi) & m:x}")
            out(f"{T}_subsat_s({c(a)}, {c(b)}, {w})")
            want.append(f"{min(max(sa - sb, lo), hi) & m:x}")
            code.append(f'printf("%d %d %d\\n", {T}_eq({c(a)}, {c(b)}), {T}_cmp({c(a)}, {c(b)}), '
                        f"{T}_cmp_s({c(a)}, {c(b)}, {w}));")
            want.append(f"{int(a == b)} {(a > b) - (a < b)} {(sa > sb) - (sa < sb)}")
        for a in vals:
            sa = _sx(a, w)
            out(f"{T}_not({c(a)}, {w})")
            want.append(f"{~a & m:x}")
            out(f"{T}_neg({c(a)}, {w})")
            want.append(f"{-a & m:x}")
            for s in sorted({0, 1, 63, 64, 65, w - 1, w, w + 1, 64 * n, 64 * n + 1, rng.randrange(w)}):
                out(f"{T}_shl({c(a)}, {s}, {w})")
                want.append(f"{(a << s) & m:x}")
                out(f"{T}_shr({c(a)}, {s})")
                want.append(f"{a >> s:x}")
                out(f"{T}_shr_s({c(a)}, {s}, {w})")
                want.append(f"{(sa >> s) & m:x}")
            code.append(f'printf("%llx\\n", (unsigned long long){T}_sat64({c(a)}));')
            want.append(f"{a if a < (1 << 64) else (1 << 64) - 1:x}")
            lo = rng.randrange(w)
            bw = rng.randint(1, min(64, w - lo))
            code.append(f'printf("%llx\\n", (unsigned long long){T}_bits({c(a)}, {lo}, {bw}));')
            want.append(f"{(a >> lo) & ((1 << bw) - 1):x}")
            frm = rng.randint(1, w)
            out(f"{T}_sext({c(a & ((1 << frm) - 1))}, {frm}, {w})")
            want.append(f"{_sx(a, frm) & m:x}")
            x = rng.getrandbits(w)
            lo = rng.randrange(w)
            bw = rng.randint(1, w - lo)
            keep = m ^ (((1 << bw) - 1) << lo)
            out(f"{T}_setbits({c(a)}, {lo}, {bw}, {c(x)})")
            want.append(f"{(a & keep) | ((x & ((1 << bw) - 1)) << lo):x}")
            # packet bits: put at an odd bit offset, read back, and the bytes around untouched
            off = rng.randrange(0, 16)
            nbytes = (off + w + 7) // 8 + 1
            code.append(f"{{ uint8_t buf[{nbytes}]; memset(buf, 0xa5, sizeof buf); "
                        f"{T}_put(buf, {off}, {w}, {c(a)}); pr{n}({T}_get(buf, {off}, {w})); "
                        f'for (unsigned i = 0; i < sizeof buf; i++) printf("%02x", buf[i]); '
                        f'printf("\\n"); }}')
            total = nbytes * 8
            pat = int.from_bytes(b"\xa5" * nbytes, "big")
            field_mask = m << (total - off - w)
            exp = (pat & ~field_mask) | (a << (total - off - w))
            want.append(f"{a:x}")
            want.append(exp.to_bytes(nbytes, "big").hex())
            code.append(f"{{ ss_bits bb; memset(&bb, 0, sizeof bb); {T}_bitsput(&bb, {c(a)}, {w}); "
                        f'for (unsigned i = 0; i < {(w + 7) // 8}; i++) printf("%02x", bb.buf[i]); '
                        f'printf(" %u\\n", bb.nbits); }}')
            want.append(f"{(a << ((-w) % 8)).to_bytes((w + 7) // 8, 'big').hex()} {w}")
        # registers and action arguments: limbs most significant first
        a = vals[-1]
        code.append(f"{T}_regwrite(&ctx0, 0, 3, {c(a)}); pr{n}({T}_regread(&ctx0, 0, 3));")
        want.append(f"{a:x}")
        limbs = wide.split(a, w)
        code.append(f"{{ uint64_t r[] = {{{', '.join(f'UINT64_C({x:#x})' for x in limbs)}}}; "
                    f"pr{n}({T}_args(r, {w})); }}")
        want.append(f"{a:x}")
    return code, want


def _printers(ns: list[int]) -> str:
    out = []
    for n in ns:
        out.append(f"static void pr{n}(ss_w{n} a) {{")
        out.append("    int started = 0;")
        out.append(f"    for (unsigned i = {n}; i-- > 0;) {{")
        out.append('        if (started) printf("%016llx", (unsigned long long)a.v[i]);')
        out.append('        else if (a.v[i] || i == 0) {')
        out.append('            printf("%llx", (unsigned long long)a.v[i]);')
        out.append('            started = 1;')
        out.append('        }')
        out.append("    }")
        out.append('    printf("\\n");')
        out.append("}")
    return "\n".join(out)


@pytest.mark.slow
@pytest.mark.timeout(600)  # one large file through gcc -O1 with ASan+UBSan: ~20 s on the 2-core VM
def test_wide_helpers_match_python_under_sanitizers(tmp_path: Path) -> None:
    if GCC is None:
        pytest.skip("no C compiler")
    rng = random.Random(14)
    code, want = _cases(rng)
    ns = sorted({wide.nlimbs(w) for w in WIDTHS})
    prelude = wide.PRELUDE + "".join(wide.PER_N.format(N=n) for n in ns)
    src = tmp_path / "wide.c"
    # The cases in functions of 50 statements, not one main(): gcc -O1 with ASan is superlinear in
    # a function's size (one 6,855-statement main took ~90 s to compile, these parts ~16 s).
    parts = [code[i : i + 50] for i in range(0, len(code), 50)]
    funcs = "".join(f"\n__attribute__((noinline)) static void part{j}(void) {{\n    " + "\n    ".join(c)
                    + "\n}\n" for j, c in enumerate(parts))  # fmt: skip
    calls = "".join(f"    part{j}();\n" for j in range(len(parts)))
    src.write_text(PRELUDE + prelude + STUBS + _printers(ns) + funcs + "\nint main(void) {\n"
                   + calls + "    return 0;\n}\n")  # fmt: skip
    exe = tmp_path / "wide"
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{INCLUDE}", *sanitize_cflags(GCC),
             "-fno-sanitize-recover=all"]
    r = subprocess.run([GCC, *flags, str(src), "-o", str(exe)], capture_output=True, text=True)
    if r.returncode != 0 and ("asan" in r.stderr or "ubsan" in r.stderr):
        pytest.skip(f"no sanitizer runtime: {r.stderr[:200]}")
    assert r.returncode == 0, r.stderr[:4000]
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "runtime error" not in r.stderr, r.stderr[:4000]
    got = r.stdout.splitlines()
    assert len(got) == len(want)
    bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
    assert not bad, f"{len(bad)} mismatches, first: {bad[:3]}"
