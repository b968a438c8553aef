"""The native back end's C emitter (p4compiler.c_backend), and the sweep of every P4 file of the
tree (tests/, p4/, bench/) through both back ends: every whole program (one with a `main`
instance) compiles on the Python back end (type check, lowering, Python emission) and to C that
gcc accepts with -Wall -Wextra -Werror, or is refused with one located line (P4Error:
file:line:col), never another exception; an include-only fragment compiled alone is refused
with one line naming the file. Generated agg32 runs the runtime's own agg test under
ASan+UBSan; STF files run through the native loader when it can open a program.

Compiled objects are cached in $TMPDIR/innet-c-backend-tests by a hash of the C source, so a
second run only regenerates C.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from backends import allow_nonportable

from p4compiler.c_backend import NativeProgram, NativeUnsupported, emit_c
from p4compiler.errors import P4Error
from p4compiler.python_backend import compile_file
from softswitch.native import sanitize_cflags

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = ROOT / "softswitch/native/include"
CACHE = Path(tempfile.gettempdir()) / "innet-c-backend-tests"
GCC = shutil.which("gcc") or shutil.which("cc")
CFLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", f"-I{INCLUDE}"]

CORE_PROGRAMS = ["bench/p4/agg32.p4", "p4/examples/basic_router.p4", "p4/innet.p4"]
# every .p4 of the tree outside the compiler's own includes (core.p4, v1model.p4)
ALL_P4 = sorted(
    os.path.relpath(p, ROOT)
    for top in ("tests", "p4", "bench")
    for p in glob.glob(str(ROOT / top / "**" / "*.p4"), recursive=True)
)
_MAIN = re.compile(r"\)\s*main\s*;")
# whole programs (they instantiate `main`); the rest are fragments that p4/innet.p4 includes
PROGRAMS = [p for p in ALL_P4 if _MAIN.search((ROOT / p).read_text(encoding="utf-8"))]
FRAGMENTS = [p for p in ALL_P4 if p not in PROGRAMS]

# Programs the native back end refuses today (they run on the Python back end), with the
# construct named in the message. A program leaving or joining this list must be a decision.
EXPECTED_UNSUPPORTED: dict[str, str] = {}

LOCATED = re.compile(r"^[^\s:]+\.p4:\d+:\d+: error: the native backend does not support .+ yet$")
# one P4Error line with a location (what every refusal of the front end must look like)
LOCATED_ERROR = re.compile(r"^[^\s:]+\.p4:\d+:\d+: error: \S.*$")


@functools.lru_cache(maxsize=None)
def _native(path: str) -> NativeProgram | P4Error:
    """The program through both back ends (the Python one inside compile_file), or the P4Error
    that refused it; any other exception propagates and fails the test that asked."""
    try:
        # a corpus program marked `# options: allow-nonportable` in its .stf takes the opt-in
        cp = compile_file(str(ROOT / path), allow_nonportable=allow_nonportable(ROOT / path))
        return emit_c(cp)
    except P4Error as e:
        return e


def _gcc(source: str, *extra: str) -> None:
    """Compile one translation unit (cached by the hash of source and flags); fail with gcc's output."""
    if GCC is None:
        pytest.skip("no C compiler")
    flags = CFLAGS + list(extra)
    key = hashlib.sha256((source + "\0".join(flags)).encode()).hexdigest()[:24]
    CACHE.mkdir(parents=True, exist_ok=True)
    done = CACHE / f"{key}.ok"
    if done.exists():
        return
    c = CACHE / f"{key}.c"
    c.write_text(source)
    r = subprocess.run(
        [GCC, *flags, "-c", str(c), "-o", str(CACHE / f"{key}.o")], capture_output=True, text=True
    )
    assert r.returncode == 0, f"gcc rejected the generated C ({c}):\n{r.stderr[:4000]}"
    done.write_text("")


def test_sweep_covers_the_tree() -> None:
    """The sweep finds the corpora, the project's programs and the fragments they include."""
    for p in CORE_PROGRAMS + ["tests/p4/p4rt_basic.p4", "tests/p4/hammer.p4", "tests/p4/value_set.p4"]:
        assert p in PROGRAMS, p
    assert sum(p.startswith("tests/p4/features/") for p in PROGRAMS) >= 50
    assert "p4/parser.p4" in FRAGMENTS and "p4/include/headers.p4" in FRAGMENTS


@pytest.mark.parametrize("path", PROGRAMS)
def test_program_compiles_or_is_refused(path: str) -> None:
    res = _native(path)
    if isinstance(res, P4Error) and not isinstance(res, NativeUnsupported):
        msg = str(res)
        assert "\n" not in msg and LOCATED_ERROR.match(msg), f"refusal without a location: {msg}"
        pytest.fail(f"the front end refuses a corpus program: {msg}")
    if path in EXPECTED_UNSUPPORTED:
        assert isinstance(res, NativeUnsupported), (
            f"{path} now compiles natively: update EXPECTED_UNSUPPORTED"
        )
        msg = str(res)
        assert "\n" not in msg and LOCATED.match(msg), msg
        assert EXPECTED_UNSUPPORTED[path] in msg
        return
    assert not isinstance(res, NativeUnsupported), str(res)
    assert '#include "ss_runtime.h"' in res.source
    assert "const ss_program ss_program_desc" in res.source
    json.dumps(res.manifest)  # the loader reads it as JSON
    _gcc(res.source)


@pytest.mark.parametrize("path", FRAGMENTS)
def test_fragment_alone_is_refused_with_one_line(path: str) -> None:
    """A file meant to be included (no `main`) compiled alone: one P4Error line that names the
    file (a syntax error where a type of the including file is missing, or no `main`)."""
    res = _native(path)
    assert isinstance(res, P4Error), f"{path} compiles alone"
    msg = str(res)
    assert "\n" not in msg and msg.startswith(str(ROOT / path) + ":"), msg
    assert re.match(r"^\S+\.p4(:\d+:\d+)?: error: \S", msg), msg


def test_manifest_numbering_basic_router() -> None:
    res = _native("p4/examples/basic_router.p4")
    assert not isinstance(res, NativeUnsupported)
    m = res.manifest
    assert m["abi"] == 2 and m["errors"][0] == "NoError"
    names = [a["name"] for a in m["actions"]]
    for t in m["tables"]:
        assert all(0 <= a < len(names) for a in t["actions"])
        assert t["default_action"] in t["actions"] or names[t["default_action"]] == "NoAction"
        for k in t["keys"]:
            assert 0 < k["width"] <= 64 and k["match_kind"] in (
                "exact",
                "lpm",
                "ternary",
                "range",
                "optional",
            )
    lpm = [t for t in m["tables"] if any(k["match_kind"] == "lpm" for k in t["keys"])]
    assert lpm, "basic_router has an LPM table"


def test_const_entries_in_manifest() -> None:
    res = _native("tests/p4/features/table_const_entries.p4")
    assert not isinstance(res, NativeUnsupported)
    entries = [e for t in res.manifest["tables"] for e in t["const_entries"]]
    assert entries
    for e in entries:
        assert all(len(k) == 2 for k in e["keys"])
        assert 0 <= e["action"] < len(res.manifest["actions"])


UNSUPPORTED_SRC = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<128> wide; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { bit<0> nothing = 0; hdr.h.wide = hdr.h.wide + 1; }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""


def test_unsupported_construct_gives_one_located_line(tmp_path: Path) -> None:
    src = tmp_path / "wide.p4"
    src.write_text(UNSUPPORTED_SRC)
    cp = compile_file(str(src))
    with pytest.raises(NativeUnsupported) as ei:
        emit_c(cp)
    msg = str(ei.value)
    assert "\n" not in msg
    assert re.match(
        r"^\S*wide\.p4:\d+:\d+: error: the native backend does not support bit<0> values", msg
    ), msg


AGG_TEST = ROOT / "softswitch/native/tests/test_agg.c"
RUNTIME_SRC = ROOT / "softswitch/native/src"


@pytest.mark.skipif(not AGG_TEST.exists(), reason="the runtime's agg test is not in this tree")
def test_generated_agg32_passes_runtime_agg_test_under_sanitizers(tmp_path: Path) -> None:
    """The runtime's own correctness test for its hand-written agg32-like program, run against
    the generated agg32 (same ABI symbol under the harness's name), under ASan+UBSan."""
    if GCC is None:
        pytest.skip("no C compiler")
    res = _native("bench/p4/agg32.p4")
    assert not isinstance(res, NativeUnsupported)
    srcs = sorted(str(p) for p in RUNTIME_SRC.glob("*.c"))
    gen = tmp_path / "agg32.c"
    gen.write_text(res.source)
    exe = tmp_path / "test_agg"
    cmd = [
        GCC,
        "-std=c11",
        "-D_GNU_SOURCE",
        *sanitize_cflags(GCC),
        "-fno-sanitize-recover=all",
        "-pthread",
        f"-I{INCLUDE}",
        f"-I{RUNTIME_SRC}",
        "-o",
        str(exe),
        str(AGG_TEST),
        "-Dss_program_desc=agg_program",
        str(gen),
        *srcs,
        "-lm",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 and "sanitizer" in r.stderr.lower():
        pytest.skip(f"no sanitizer runtime: {r.stderr[:200]}")
    assert r.returncode == 0, r.stderr[:4000]
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    r = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "correctness ok" in r.stdout


STF_SMOKE = [
    "tests/p4/features/arith_wrap.stf",
    "tests/p4/features/table_lpm.stf",
    "tests/p4/features/header_stack.stf",
    "tests/p4/features/parser_select_tuple.stf",
]


@functools.lru_cache(maxsize=None)
def _loader_problem() -> str | None:
    """Why the native loader cannot run a program here (None when it can)."""
    try:
        from softswitch.native_switch import NativeSwitch

        NativeSwitch(compile_file(str(ROOT / "bench/p4/agg32.p4")))
    except NativeUnsupported:
        raise
    except Exception as e:  # the loader/runtime is someone else's; report, do not fail here
        return f"{type(e).__name__}: {str(e)[:200]}"
    return None


@pytest.mark.parametrize("stf", STF_SMOKE)
def test_stf_on_native_backend(stf: str) -> None:
    problem = _loader_problem()
    if problem is not None:
        pytest.skip(f"native loader unavailable: {problem}")
    from softswitch.stf import run_stf

    res = run_stf(str(ROOT / stf.replace(".stf", ".p4")), str(ROOT / stf), backend="native")
    assert res.ok, "\n".join(res.failures)


RETURN_IN_PARSER = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
header x_t { bit<8> x; }
struct headers_t { h_t h; x_t x; }
struct meta_t { bit<8> n; }
parser Sub(packet_in pkt, out x_t x, out bit<8> n) {
    state start { n = 1; pkt.extract(x); SUB_RETURN transition accept; }
}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    state start {
        pkt.extract(hdr.h);
        TOP_RETURN
        sub.apply(pkt, hdr.x, meta.n);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""


@pytest.mark.parametrize("where,stmt", [
    ("TOP_RETURN", "if (hdr.h.a == 0) { return; }"),
    ("TOP_RETURN", "{ return; }"),
    ("SUB_RETURN", "if (x.x == 0) { return; } else { n = 2; }"),
])
def test_return_in_a_parser_state_is_refused(where: str, stmt: str, tmp_path: Path) -> None:
    """P4-16 v1.2.4 section 12.4: parserStatement has no return (p4c: "'return' statements not
    allowed in parsers"); it used to end the (sub-)parser in accept. One located line, for
    both back ends (the shared type check), in the state and in a sub-parser's state."""
    src = RETURN_IN_PARSER.replace(where, stmt).replace("TOP_RETURN", "").replace("SUB_RETURN", "")
    p4 = tmp_path / "ret.p4"
    p4.write_text(src)
    with pytest.raises(P4Error) as ei:
        compile_file(str(p4))
    msg = str(ei.value)
    line = next(n for n, t in enumerate(src.splitlines(), start=1) if "return;" in t)
    assert re.match(rf"^\S*ret\.p4:{line}:\d+: error: return is not allowed in a parser state", msg), msg
    assert "\n" not in msg
    # without the return the same program compiles on both back ends
    p4.write_text(RETURN_IN_PARSER.replace("TOP_RETURN", "").replace("SUB_RETURN", ""))
    emit_c(compile_file(str(p4)))


def test_prelude_helpers_have_no_undefined_shifts(tmp_path: Path) -> None:
    """The generated code's helpers under -fsanitize=undefined for every width: ss__sx(v, 0)
    used to shift a uint64_t by 64."""
    if GCC is None:
        pytest.skip("no C compiler")
    from p4compiler.c_backend.emit import PRELUDE

    src = tmp_path / "prelude.c"
    src.write_text(PRELUDE + r"""
#include <stdio.h>
int main(void) {
    volatile unsigned zero = 0;
    printf("%lld\n", (long long)ss__sx(5, zero));
    for (unsigned w = 1; w <= 64; w++)
        printf("%lld %llu\n", (long long)ss__sx(~UINT64_C(0) >> (64 - w), w),
               (unsigned long long)ss__shr_s(ss__mask(w), 1, w));
    return 0;
}
""")
    exe = tmp_path / "prelude"
    r = subprocess.run([GCC, "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{INCLUDE}",
                        "-fsanitize=undefined", "-fno-sanitize-recover=all", str(src), "-o", str(exe)],
                       capture_output=True, text=True)
    if r.returncode != 0 and "ubsan" in r.stderr:
        pytest.skip(f"no UBSan runtime: {r.stderr[:200]}")
    assert r.returncode == 0, r.stderr[:4000]
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "runtime error" not in r.stderr, r.stderr
    assert r.stdout.split("\n")[:65] == ["0"] + [f"-1 {(1 << w) - 1}" for w in range(1, 65)]


def test_out_of_range_writes_go_to_the_packets_state_not_a_global() -> None:
    """Writes through an out-of-range stack index land in a sink inside the packet's ss_state:
    datapath threads run packets at once, and a sink shared by them (a writable global) would be
    a data race, undefined in C11. The generated C has no writable object at file scope."""
    res = _native("tests/p4/spec/stack_runtime_index.p4")
    assert not isinstance(res, P4Error), res
    src = res.source.split("typedef struct ss_state {", 1)[1]
    assert "ss__sink;" in src.split("} ss_state;")[0]
    assert "&s->ss__sink.t_" in src
    writable = [ln for ln in src.splitlines()
                if re.match(r"static (?!const )[^(]*;", ln)]
    assert writable == [], writable
    _gcc(res.source)
