"""The native runtime's own C tests, run by `make test`: the match engine, externs, pipeline
driver, hash vectors, concurrency and table fuzzing (softswitch/native/Makefile's `test`), and
the data-path I/O over veth pairs in a private network namespace with a 1,000,000-frame flood
(tests/io_run.sh) -- all built with AddressSanitizer + UndefinedBehaviorSanitizer, so a
sanitizer report or a failed check fails the test with the C test's output.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "softswitch" / "native"


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, **kwargs)  # type: ignore[call-overload]


def _needs_cc() -> None:
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler")


def test_runtime_unit_tests_under_sanitizers() -> None:
    _needs_cc()
    r = _run(["make", "-C", str(NATIVE), "test", f"PYTHON={sys.executable}"])
    out = r.stdout[-4000:] + r.stderr[-4000:]
    assert r.returncode == 0, out
    assert "fuzz_tables:" in r.stdout and "algorithms:" in r.stdout, out


@pytest.mark.slow
def test_data_path_io_under_sanitizers(tmp_path: Path) -> None:
    _needs_cc()
    if os.geteuid() != 0:
        pytest.skip("needs root (io_test makes a network namespace of its own, raw sockets)")
    r = _run(["sh", str(NATIVE / "tests" / "io_run.sh")], env={**os.environ, "OUT_DIR": str(tmp_path)})
    out = r.stdout[-4000:] + r.stderr[-4000:]
    assert r.returncode == 0, out
    assert "io_test against the runtime core" in r.stdout, out  # not only the stub core
    assert "io_test: ok" in r.stdout, out
    assert "ERROR: AddressSanitizer" not in out and "runtime error:" not in out, out
