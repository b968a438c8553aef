"""The native back end's build and binding: generated C + the C runtime -> a cached shared object,
opened with cffi (ABI mode: no CPython extension is compiled, and cffi releases the GIL in every
call, so the C data-path threads and blocking polls never hold it).

    native = build_native(compiled_program)        # NativeProgram -> .so (cached) -> NativeLibrary
    lib, ffi = native.lib, native.ffi

Build: the runtime sources (softswitch/native/src/*.c) are compiled once into a static archive
of position-independent objects, cached by a hash of their text, the compiler and the flags; each
program's generated C is compiled and linked against it into `<cache>/<hash>.so`, cached by the
hash of the generated C, the archive's hash and the flags. A reload of the same program costs a
dlopen. The cache lives in $INNET_NATIVE_CACHE, else $XDG_CACHE_HOME/innet-drl/native, else
~/.cache/innet-drl/native.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from p4compiler.cache import cache_root
from p4compiler.errors import P4Error

HERE = Path(__file__).resolve().parent
INCLUDE_DIR = HERE / "include"
SRC_DIR = HERE / "src"
HEADER = INCLUDE_DIR / "ss_runtime.h"

# -O2 for speed; -fvisibility=hidden + -Bsymbolic so that two programs' objects loaded in one
# process never resolve each other's runtime symbols.
BASE_CFLAGS = ["-std=gnu11", "-O2", "-fPIC", "-pthread", "-Wall", "-Wextra", "-fvisibility=default"]
# The runtime is built without type-based alias analysis; the generated code with it, which it is
# written for (a register cell has a type of its own, emit.py's prelude): that is what lets the
# compiler keep fields and indexes in registers across a packet's cell writes.
RUNTIME_CFLAGS = [*BASE_CFLAGS, "-fno-strict-aliasing"]
PROGRAM_CFLAGS = [*BASE_CFLAGS, "-fstrict-aliasing"]
# --whole-archive: the control API (ss_switch_new, ...) is called from Python, not from the
# program, and must be in the object all the same; part of the cache key like the flags
LINK_FLAGS = ["-shared", "-Wl,-Bsymbolic", "-Wl,--whole-archive", "{archive}", "-Wl,--no-whole-archive",
              "-lm"]
SANITIZE_CFLAGS = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
                   "-fno-omit-frame-pointer"]
# GCC only (clang has no such option): -g without variable locations, which sanitizer reports do
# not use (they print functions, files and lines). Tracking them made the sanitized build of
# innet.p4 at 256 values per packet take 85 s instead of 15, most of `make test`'s sanitizer run.
GCC_SANITIZE_CFLAGS = ["-fno-var-tracking"]


def sanitize_cflags(cc: str) -> list[str]:
    """The sanitizer flags for compiler `cc`."""
    gcc = "clang" not in _compiler_id(cc).lower()
    return SANITIZE_CFLAGS + (GCC_SANITIZE_CFLAGS if gcc else [])


class NativeBuildError(P4Error):
    """The C compiler is missing or refused the generated code (the switch says which)."""


@dataclass
class NativeLibrary:
    """An opened program: `lib` has the control API of ss_runtime.h and `ss_program_desc`."""

    path: Path
    ffi: Any
    lib: Any
    manifest: dict
    sanitized: bool


_FFI_LOCK = threading.Lock()
_FFI: Any = None


def cache_dir() -> Path:
    env = os.environ.get("INNET_NATIVE_CACHE")
    if env:
        return Path(env)
    return cache_root() / "native"


def compiler() -> str:
    """The system C compiler ($CC, else cc/gcc/clang on PATH)."""
    for cand in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cand and shutil.which(cand.split()[0]):
            return cand
    raise NativeBuildError("no C compiler found (set CC or install gcc) for the native backend")


def _cdef_text() -> str:
    """ss_runtime.h as cffi's cdef accepts it: no preprocessor lines but integer #defines."""
    out = []
    # comments first: one that starts on a #define line and goes on would leave its tail behind
    text = re.sub(r"/\*.*?\*/", " ", HEADER.read_text(), flags=re.S)
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            m = re.match(r"#define\s+(SS_\w+)\s+\(?(-?\d+)u?\)?\s*(/\*.*)?$", s)
            if m:
                out.append(f"#define {m.group(1)} {m.group(2)}")
            continue
        out.append(line)
    # cffi's ABI mode reads `const` globals as constants, which it cannot do for a struct
    text = "\n".join(out)
    return text.replace("extern const ss_program ss_program_desc;", "extern ss_program ss_program_desc;")


def ffi() -> Any:
    """One cffi FFI for every native program (the declarations are the same for all)."""
    global _FFI
    with _FFI_LOCK:
        if _FFI is None:
            import cffi

            f = cffi.FFI()
            f.cdef(_cdef_text())
            _FFI = f
        return _FFI


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:24]


@functools.lru_cache(maxsize=8)
def _compiler_id(cc: str) -> str:
    """The compiler's first --version line (part of every cache key); asked once per process,
    not once per key (a pipeline load computes three)."""
    try:
        r = subprocess.run(cc.split() + ["--version"], capture_output=True, text=True, timeout=30)
        return r.stdout.splitlines()[0] if r.stdout else cc
    except (OSError, subprocess.SubprocessError):
        return cc


def _run(cmd: list[str], what: str) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        errs = [ln for ln in r.stderr.splitlines() if "error" in ln] or r.stderr.splitlines()
        first = errs[0] if errs else f"exit code {r.returncode}"
        raise NativeBuildError(f"{what} failed: {first} (command: {' '.join(cmd[:3])} ...)")


def _atomic_place(tmp: Path, final: Path) -> None:
    os.replace(tmp, final)  # concurrent builders of the same key write the same bytes


def runtime_archive(sanitize: bool = False) -> Path:
    """The runtime's objects as a static archive, built once per (sources, compiler, flags)."""
    cc = compiler()
    flags = RUNTIME_CFLAGS + (sanitize_cflags(cc) if sanitize else [])
    srcs = sorted(SRC_DIR.glob("*.c"))
    if not srcs:
        raise NativeBuildError(f"the native runtime sources are missing ({SRC_DIR})")
    texts = [HEADER.read_bytes()] + [p.read_bytes() for p in sorted(SRC_DIR.glob("*.h"))] + \
        [p.name.encode() + p.read_bytes() for p in srcs]
    key = _digest(*texts, _compiler_id(cc), " ".join(flags))
    out = cache_dir() / f"ssrt-{key}.a"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as td:
        objs = []
        for src in srcs:
            obj = Path(td) / (src.stem + ".o")
            _run(cc.split() + flags + ["-I", str(INCLUDE_DIR), "-I", str(SRC_DIR), "-c", str(src), "-o",
                                       str(obj)], f"compiling the native runtime ({src.name})")
            objs.append(str(obj))
        tmp = Path(td) / "lib.a"
        _run(["ar", "rcs", str(tmp)] + objs, "archiving the native runtime")
        _atomic_place(tmp, out)
    return out


def build_shared_object(c_source: str, sanitize: bool = False) -> Path:
    """Compile one program's generated C and link it with the runtime archive (cached)."""
    cc = compiler()
    archive = runtime_archive(sanitize)
    flags = PROGRAM_CFLAGS + (sanitize_cflags(cc) if sanitize else [])
    key = _digest(c_source, archive.name, _compiler_id(cc), " ".join(flags + LINK_FLAGS))
    out = cache_dir() / f"prog-{key}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as td:
        src = Path(td) / "program.c"
        src.write_text(c_source)
        tmp = Path(td) / "program.so"
        link = [str(archive) if f == "{archive}" else f for f in LINK_FLAGS]
        _run(cc.split() + flags + ["-I", str(INCLUDE_DIR), str(src), "-o", str(tmp)] + link,
             "compiling the generated C of the program")
        _atomic_place(tmp, out)
        # keep the source next to the object: what a user reads when a packet surprises them
        (out.with_suffix(".c")).write_text(c_source)
    return out


def build_helper(
    source: Path, cflags: list[str], what: str, libs: tuple[str, ...] = (), depends: tuple[Path, ...] = ()
) -> Path:
    """A standalone C file of the project (e.g. host_agents/aggio.c) built into a shared object
    with the system C compiler, cached like the switch's programs by its text, the compiler and
    the flags (``libs`` go after the source, e.g. ``-lm``; ``depends``: headers it includes, part
    of the key). Raises NativeBuildError (no compiler, a compile error)."""
    cc = compiler()
    text = source.read_bytes() + b"".join(d.read_bytes() for d in depends)
    key = _digest(text, _compiler_id(cc), " ".join([*cflags, *libs]))
    out = cache_dir() / f"{source.stem}-{key}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as td:
        tmp = Path(td) / f"{source.stem}.so"
        _run(cc.split() + cflags + [str(source), "-o", str(tmp), *libs], what)
        _atomic_place(tmp, out)
    return out


def sanitizer_runtime() -> str | None:
    """libasan's path, which must be preloaded into Python to open a sanitized program."""
    try:
        r = subprocess.run(compiler().split() + ["-print-file-name=libasan.so"], capture_output=True,
                           text=True, timeout=30)
    except (OSError, subprocess.SubprocessError, NativeBuildError):
        return None
    path = r.stdout.strip()
    return path if path and os.path.isabs(path) and os.path.exists(path) else None


def sanitizers_active() -> bool:
    """True when this process runs with libasan preloaded (INNET_NATIVE_SANITIZE=1 builds)."""
    return os.environ.get("INNET_NATIVE_SANITIZE") == "1" and "libasan" in os.environ.get("LD_PRELOAD", "")


_COMPILER_FINGERPRINT: str | None = None


def _compiler_fingerprint() -> str:
    """A hash of the P4 compiler's own sources (p4compiler/): a change to the front end, the
    lowering or the C emitter invalidates every emitted program."""
    global _COMPILER_FINGERPRINT
    if _COMPILER_FINGERPRINT is None:
        import p4compiler

        root = Path(p4compiler.__file__).resolve().parent
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".py", ".p4", ".lark"))
        _COMPILER_FINGERPRINT = _digest(*[str(p.relative_to(root)).encode() + p.read_bytes() for p in files])
    return _COMPILER_FINGERPRINT


def _emit_memo_path(program: Any, sanitize: bool) -> Path | None:
    text = getattr(program, "p4_source", "")
    if not text:  # a program built from an AST alone: nothing to key the memo on
        return None
    # the runtime archive's name hashes the runtime's sources, the C compiler and its flags
    key = _digest(text, _compiler_fingerprint(), runtime_archive(sanitize).name, " ".join(LINK_FLAGS))
    return cache_dir() / f"emit-{key}.json"


def _read_emit_memo(memo: Path | None) -> tuple[Path, dict[str, Any]] | None:
    if memo is None or not memo.exists():
        return None
    try:
        doc = json.loads(memo.read_text())
        path = memo.parent / doc["shared_object"]
        return (path, doc["manifest"]) if path.exists() else None
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a damaged memo: emit again


def _write_emit_memo(memo: Path | None, path: Path, manifest: dict[str, Any]) -> None:
    if memo is None:
        return
    text = json.dumps({"shared_object": path.name, "manifest": manifest})
    if json.loads(text)["manifest"] != manifest:  # not plain JSON (e.g. int dict keys): do not memoize
        return
    tmp = memo.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(text)
    _atomic_place(tmp, memo)


def build_native(program: Any, sanitize: bool | None = None) -> NativeLibrary:
    """Emit C for a compiled program, build (or reuse) its shared object and open it.

    Raises p4compiler's NativeUnsupported (a construct the C emitter cannot handle, with its
    P4 location) or NativeBuildError (no compiler, or the generated code did not compile)."""
    try:
        from p4compiler.c_backend import emit_c
    except ImportError as e:  # a tree without the C emitter: say so, the switch falls back
        raise NativeBuildError(f"the C emitter cannot be imported: {e}") from None

    if sanitize is None:
        sanitize = sanitizers_active()
    # A warm load skips the lowering and the C emitter (a fifth of innet.p4's load time): the
    # emitted program is cached by the P4 text and the compiler's own sources.
    memo = _emit_memo_path(program, sanitize)
    cached = _read_emit_memo(memo)
    if cached is not None:
        path, manifest = cached
    else:
        native = emit_c(program)
        path, manifest = build_shared_object(native.source, sanitize), native.manifest
        _write_emit_memo(memo, path, manifest)
    f = ffi()
    lib = f.dlopen(str(path))
    abi = int(lib.ss_program_desc.abi)
    if abi != int(lib.SS_ABI_VERSION):
        raise NativeBuildError(f"{path} was built for runtime ABI {abi}, not {int(lib.SS_ABI_VERSION)}")
    return NativeLibrary(path, f, lib, manifest, sanitize)
