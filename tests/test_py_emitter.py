"""The Python back end's IR emitter (p4compiler.python_backend.emit): the Python the switch runs,
written from the lowered program (p4compiler.ir), is the default; the type checker's own Python
text (INNET_PY_EMITTER=ast) is the former reference.

The STF corpora run on the IR emitter's code wherever they run the Python backend
(tests/test_stf_corpus.py, tests/test_innet_stf.py); here every STF file also runs on the type
checker's code, which must keep agreeing as long as it exists, and every whole program of the
tree goes through the IR emitter to a loadable switch.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import pytest

from p4compiler.errors import P4Error
from p4compiler.python_backend import compile_file
from softswitch import stf
from softswitch.switch import Switch

ROOT = Path(__file__).resolve().parent.parent
P4_DIR = ROOT / "tests" / "p4"
STF_CASES = [(f.with_suffix(".p4"), f) for c in ("features", "spec")
             for f in sorted((P4_DIR / c).glob("*.stf"))]
STF_CASES += [(ROOT / "p4" / "innet.p4", f) for f in sorted((P4_DIR / "innet").glob("*.stf"))]
PROGRAMS = sorted(
    os.path.relpath(p, ROOT)
    for pat in ("tests/p4/*/*.p4", "tests/p4/*.p4", "p4/*.p4", "p4/examples/*.p4", "bench/p4/*.p4")
    for p in glob.glob(str(ROOT / pat))
    if re.search(r"\)\s*main\s*;", Path(p).read_text())  # whole programs, not included pieces
)


@pytest.mark.stf
@pytest.mark.parametrize(("program", "stf_path"), STF_CASES,
                         ids=[f"{s.parent.name}/{s.stem}" for _, s in STF_CASES])
def test_stf_on_ast_emitter(program: Path, stf_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INNET_PY_EMITTER", "ast")
    result = stf.run_stf(str(program), str(stf_path), backend="python")
    assert result.ok, f"{stf_path.name} failed on the type checker's Python:\n" + "\n".join(result.failures)


@pytest.mark.parametrize("path", PROGRAMS)
def test_every_program_emits(path: str) -> None:
    cp = compile_file(str(ROOT / path), emitter="ir")
    assert cp.emitter == "ir" and cp.ir is not None and "def __build(RT):" in cp.source
    sw = Switch(cp)
    assert set(sw.tables) == {t.name for t in cp.info.tables}


def test_choice_of_emitter(monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(P4_DIR / "features" / "drop.p4")
    monkeypatch.delenv("INNET_PY_EMITTER", raising=False)
    assert compile_file(path).emitter == "ir"
    monkeypatch.setenv("INNET_PY_EMITTER", "ast")
    assert compile_file(path).emitter == "ast"
    assert compile_file(path, emitter="ir").emitter == "ir"
    monkeypatch.setenv("INNET_PY_EMITTER", "fast")
    with pytest.raises(P4Error, match="INNET_PY_EMITTER='fast'"):
        compile_file(path)
