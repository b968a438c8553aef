"""The two software-switch backends every P4 packet test runs on (softswitch.native_switch).

The Python backend is the executable reference; the native one runs the same program compiled
to C. Both must give the same result for every STF file. A program the C emitter refuses
(NativeUnsupported: one line naming the construct and its location) is listed in
NATIVE_PENDING with that construct; the list is strict: when such a program starts to run
natively, its test fails until it is taken off the list.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4compiler.errors import P4Error
from softswitch import stf

BACKENDS = ("python", "native")

# program stem -> the construct the C emitter does not handle yet
NATIVE_PENDING: dict[str, str] = {}


def run_stf(
    program: Path, stf_path: Path, backend: str, defines: dict[str, str] | None = None
) -> stf.StfResult:
    """run_stf on one backend (the program preprocessed with ``defines``); a pending program's
    refusal becomes an xfail that names it."""
    pending = NATIVE_PENDING.get(program.stem) if backend == "native" else None
    try:
        result = stf.run_stf(str(program), str(stf_path), backend=backend, defines=defines)
    except P4Error as e:
        if pending is not None and "native backend" in str(e):
            pytest.xfail(f"native backend: {e}")
        raise
    if pending is not None:
        pytest.fail(f"{program.name} now runs on the native backend: take it off NATIVE_PENDING "
                    f"(listed for: {pending})")
    return result
