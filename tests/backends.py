"""The two software-switch backends every P4 packet test runs on (softswitch.native_switch).

The Python backend is the executable reference; the native one runs the same program compiled
to C. Both must give the same result for every STF file. A program the C emitter refuses
(NativeUnsupported: one line naming the construct and its location) is listed in
NATIVE_PENDING with that construct; the list is strict: when such a program starts to run
natively, its test fails until it is taken off the list.

An .stf file's `# options: allow-nonportable` line compiles its program with the opt-in for what
p4c-bm2-ss refuses (p4compiler/python_backend/portability.py); `# options: newer-syntax` marks
syntax newer than p4c-bm2-ss v1.2.4 (no effect here). See tests/p4/features/README.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from p4compiler.errors import P4Error
from softswitch import stf

BACKENDS = ("python", "native")

# program stem -> the construct the C emitter does not handle yet
NATIVE_PENDING: dict[str, str] = {}

# What an `# options: WORD[, WORD...]` line of an .stf file may say (tests/p4/features/README.md)
STF_OPTIONS = {
    # the program uses what p4c-bm2-ss (v1model) refuses: compile it with allow_nonportable=True
    "allow-nonportable",
    # the program uses P4-16 syntax newer than p4c-bm2-ss v1.2.4 accepts (the switch runs it as is)
    "newer-syntax",
}
_OPTIONS_LINE = re.compile(r"#\s*options:(.*)$")


def stf_options(stf_path: Path) -> set[str]:
    """The options an .stf file's `# options:` lines give; an unknown one is an error."""
    found: set[str] = set()
    for n, line in enumerate(stf_path.read_text(encoding="utf-8").splitlines(), start=1):
        m = _OPTIONS_LINE.match(line.strip())
        if m is None:
            continue
        for word in filter(None, re.split(r"[\s,]+", m.group(1).strip())):
            if word not in STF_OPTIONS:
                raise ValueError(f"{stf_path}:{n}: unknown STF option {word!r} "
                                 f"(known: {', '.join(sorted(STF_OPTIONS))})")
            found.add(word)
    return found


def allow_nonportable(program: Path) -> bool:
    """Whether the .stf next to `program` says it needs the opt-in (allow-nonportable)."""
    stf_path = program.with_suffix(".stf")
    return stf_path.exists() and "allow-nonportable" in stf_options(stf_path)


def run_stf(
    program: Path, stf_path: Path, backend: str, defines: dict[str, str] | None = None
) -> stf.StfResult:
    """run_stf on one backend (the program preprocessed with ``defines``; compiled with the
    opt-in when the .stf has `# options: allow-nonportable`); a pending program's refusal becomes
    an xfail that names it."""
    pending = NATIVE_PENDING.get(program.stem) if backend == "native" else None
    nonportable = "allow-nonportable" in stf_options(stf_path)
    try:
        result = stf.run_stf(str(program), str(stf_path), backend=backend, defines=defines,
                             allow_nonportable=nonportable)
    except P4Error as e:
        if pending is not None and "native backend" in str(e):
            pytest.xfail(f"native backend: {e}")
        raise
    if pending is not None:
        pytest.fail(f"{program.name} now runs on the native backend: take it off NATIVE_PENDING "
                    f"(listed for: {pending})")
    return result
