"""The spec corpus: small v1model programs written the way third-party programs are (p4c's
p4_16_samples, the P4 tutorials), each checking language and v1model idioms against hand-computed
packets. Every tests/p4/spec/<name>.stf runs against <name>.p4 on the software switch."""

from __future__ import annotations

from pathlib import Path

import pytest

from softswitch import stf

pytestmark = pytest.mark.stf

SPEC = Path(__file__).parent / "p4" / "spec"
STF_FILES = sorted(SPEC.glob("*.stf"))


def test_corpus_is_complete() -> None:
    """Every program has a test and every test a program."""
    programs = {p.stem for p in SPEC.glob("*.p4")}
    tests = {p.stem for p in STF_FILES}
    assert tests, "no spec programs found"
    assert programs == tests, f"unpaired: {sorted(programs ^ tests)}"


@pytest.mark.parametrize("stf_path", STF_FILES, ids=[p.stem for p in STF_FILES])
def test_spec_program(stf_path: Path) -> None:
    result = stf.run_stf(str(stf_path.with_suffix(".p4")), str(stf_path))
    assert result.ok, f"{stf_path.name} failed:\n" + "\n".join(result.failures)
