"""The P4 packet-test corpora, run on the software switch (softswitch.stf.run_stf):

Each runs on both backends (tests/backends.py).

- tests/p4/features: one P4-16 / v1model concern per program;
- tests/p4/spec: programs written the way third-party programs are (p4c's p4_16_samples, the
  P4 tutorials), checking language and v1model idioms.

Every <name>.stf runs against <name>.p4 and must pass. The expected packets were computed by
hand following the P4-16 specification and bmv2 simple_switch semantics (see the comments in
each .stf file and tests/p4/features/README.md). A program whose .stf says
`# options: allow-nonportable` is compiled with the opt-in, and must be refused without it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from backends import BACKENDS, run_stf, stf_options

from p4compiler.errors import P4Error
from p4compiler.python_backend import compile_file

pytestmark = pytest.mark.stf

P4_DIR = Path(__file__).parent / "p4"
CORPORA = {"features": 25, "spec": 10}  # folder -> minimum number of programs
STF_FILES = sorted(f for corpus in CORPORA for f in (P4_DIR / corpus).glob("*.stf"))
NONPORTABLE = [f for f in STF_FILES if "allow-nonportable" in stf_options(f)]


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_corpus_is_complete(corpus: str) -> None:
    """Every program has a test and every test a program, and the corpus is not empty."""
    folder = P4_DIR / corpus
    programs = {p.stem for p in folder.glob("*.p4")}
    tests = {p.stem for p in folder.glob("*.stf")}
    assert len(tests) >= CORPORA[corpus]
    assert programs == tests, (
        f"without .stf: {sorted(programs - tests)}; without .p4: {sorted(tests - programs)}"
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("stf_path", STF_FILES, ids=[f"{p.parent.name}/{p.stem}" for p in STF_FILES])
def test_program(stf_path: Path, backend: str) -> None:
    result = run_stf(stf_path.with_suffix(".p4"), stf_path, backend)
    assert result.ok, f"{stf_path.name} failed:\n" + "\n".join(result.failures)


@pytest.mark.parametrize("stf_path", NONPORTABLE, ids=[f"{p.parent.name}/{p.stem}" for p in NONPORTABLE])
def test_nonportable_mark_is_needed(stf_path: Path) -> None:
    """A program marked allow-nonportable is refused without the opt-in (the mark stays true),
    with one located line (file:line:col)."""
    p4 = stf_path.with_suffix(".p4")
    with pytest.raises(P4Error, match="is not portable") as ei:
        compile_file(str(p4))
    msg = str(ei.value)
    assert "\n" not in msg and re.match(rf"^{re.escape(str(p4))}:\d+:\d+: error: ", msg), msg
