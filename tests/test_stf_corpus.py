"""The feature corpus: every tests/p4/features/<name>.stf runs against <name>.p4 on the software
switch (softswitch.stf.run_stf) and must pass.

Each program checks one P4-16 / v1model concern; the expected packets were computed by hand
following the P4-16 specification and bmv2 simple_switch semantics (see the comments in each
.stf file and tests/p4/features/README.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softswitch import stf

pytestmark = pytest.mark.stf

FEATURES = Path(__file__).parent / "p4" / "features"
STF_FILES = sorted(FEATURES.glob("*.stf"))


def test_corpus_is_complete() -> None:
    """Every program has a test and every test a program, and the corpus is not empty."""
    programs = {p.stem for p in FEATURES.glob("*.p4")}
    tests = {p.stem for p in STF_FILES}
    assert len(tests) >= 25
    assert programs == tests, (
        f"without .stf: {sorted(programs - tests)}; without .p4: {sorted(tests - programs)}"
    )


@pytest.mark.parametrize("stf_path", STF_FILES, ids=[p.stem for p in STF_FILES])
def test_feature(stf_path: Path) -> None:
    program = stf_path.with_suffix(".p4")
    result = stf.run_stf(str(program), str(stf_path))
    assert result.ok, f"{stf_path.name} failed:\n" + "\n".join(result.failures)
