"""The front end refuses what p4c-bm2-ss (v1model) refuses, unless the program opts in
(p4compiler/python_backend/portability.py):

* `/` or `%` that p4c-bm2-ss cannot reduce at compile time: by a value that is not a
  compile-time constant, or a run-time value by a constant that is not a power of two (p4c's
  StrengthReduction makes those shifts and masks, CompileTimeOperations refuses what is left),
  or by the constant 0; constants fold (on signed values / and % are refused outright);
* a table applied twice on one execution path of a control (exclusive branches are fine);
* a `select` on a key of enum type, alone or in a tuple.

Each refusal is one `file:line:col: error:` line naming the construct; the refusal is part of
the shared type check, so both backends refuse (the STF runner and the switch CLI are checked
on each). With allow_nonportable=True (`--allow-nonportable`) the programs compile and run.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from backends import BACKENDS, STF_OPTIONS, stf_options

from p4compiler.errors import P4Error
from p4compiler.python_backend import compile_file, compile_text
from softswitch import stf

REPO = Path(__file__).resolve().parent.parent

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
enum bit<8> kind_t { A = 1, B = 2 }
header h_t { bit<8> a; bit<8> b; kind_t k; }
struct headers_t { h_t h; }
struct meta_t { bit<8> m; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition PARSER_TRANSITION;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action inc() { hdr.h.b = hdr.h.b + 1; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { inc; NoAction; }
        default_action = NoAction();
    }
    table u {
        key = { hdr.h.a : exact; }
        actions = { inc; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
INGRESS
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
# the line of the program where INGRESS starts
INGRESS_LINE = PROGRAM.splitlines().index("INGRESS") + 1
ERROR = re.compile(r"^prog\.p4:(\d+):(\d+): error: (.+)$")


def program(ingress: str = "", transition: str = "accept") -> str:
    return PROGRAM.replace("INGRESS", ingress.strip("\n")).replace("PARSER_TRANSITION", transition)


def refusal(text: str) -> tuple[int, str]:
    """Compile `text` without the opt-in: it must be refused with one located line, which must
    say that the construct is not portable and name the opt-in; returns (line, message)."""
    with pytest.raises(P4Error) as ei:
        compile_text(text, "prog.p4")
    msg = str(ei.value)
    assert "\n" not in msg, msg
    m = ERROR.match(msg)
    assert m is not None, msg
    assert "not portable" in m.group(3) and "--allow-nonportable" in m.group(3), msg
    compile_text(text, "prog.p4", allow_nonportable=True)  # the opt-in takes it
    return int(m.group(1)), m.group(3)


# --- division ---------------------------------------------------------------------------------


@pytest.mark.parametrize("op, name", [("/", "division (/)"), ("%", "modulo (%)")])
def test_division_by_a_runtime_value_is_refused(op: str, name: str) -> None:
    line, msg = refusal(program(f"        hdr.h.b = hdr.h.a {op} hdr.h.b;"))
    assert line == INGRESS_LINE
    assert msg.startswith(f"{name} by a value that is not a compile-time constant is not portable")


@pytest.mark.parametrize("ingress", [
    "        hdr.h.b = 7 / hdr.h.a;",  # a constant divided by a run-time value
    "        hdr.h.b /= hdr.h.a;",  # compound assignment
    "        bit<8> d = hdr.h.a; hdr.h.b = hdr.h.b % d;",
])
def test_division_forms_by_a_runtime_value_are_refused(ingress: str) -> None:
    line, _ = refusal(program(ingress))
    assert line == INGRESS_LINE


@pytest.mark.parametrize("ingress, why", [
    ("        hdr.h.b = hdr.h.a / 3;", "division (/) of a run-time value by 3, which is not a power of two"),
    ("        const bit<8> THREE = 3;\n        hdr.h.b = hdr.h.a % THREE;",
     "modulo (%) of a run-time value by 3, which is not a power of two"),
    ("        hdr.h.b = hdr.h.b % (bit<8>)(8w3 + 2);", "modulo (%) of a run-time value by 5"),
    ("        hdr.h.b /= 6;", "division (/) of a run-time value by 6"),
    ("        hdr.h.b = hdr.h.a / 0;", "division (/) by zero"),
    ("        hdr.h.b = hdr.h.a % 8w0;", "modulo (%) by zero"),
])
def test_division_by_a_constant_that_is_not_a_power_of_two_is_refused(ingress: str, why: str) -> None:
    """p4c-bm2-ss (v1model) has no run-time division: what StrengthReduction does not turn into
    a shift or a mask is refused by CompileTimeOperations ("could not evaluate expression at
    compilation time"); a constant 0 divisor is "Division by zero" there."""
    text = program(ingress)
    line, msg = refusal(text)
    assert line == INGRESS_LINE + ingress.count("\n")
    assert msg.startswith(f"{why}") and "is not portable" in msg, msg


def test_division_that_p4c_reduces_is_accepted() -> None:
    """Constants fold; by a power of two (1 too) it is a shift or a mask; 0 / x is 0."""
    compile_text(program("""
        const bit<8> FOUR = 4;
        hdr.h.b = hdr.h.a / 4;
        hdr.h.b = hdr.h.a % FOUR;
        hdr.h.b /= 1;
        hdr.h.b %= 1;
        hdr.h.b = hdr.h.b % (bit<8>)(FOUR + 4);
        hdr.h.b = hdr.h.b / 8w128;
        hdr.h.b = 0 / hdr.h.a;
        hdr.h.b = (bit<8>)(8w200 / 8w7);
        hdr.h.b = 8w200 % 8w7;
    """), "prog.p4")


@pytest.mark.parametrize("expr", ["hdr.h.s / 2", "hdr.h.s % 4", "hdr.h.s / hdr.h.s", "-8s6 / 8s2"])
def test_division_of_signed_values_is_refused_even_with_the_opt_in(expr: str) -> None:
    """P4-16 v1.2.4 defines / and % on bit<W> only; p4c: "Cannot operate on signed values"."""
    text = program(f"        hdr.h.s = {expr};").replace("kind_t k; }", "kind_t k; int<8> s; }")
    for nonportable in (False, True):
        with pytest.raises(P4Error) as ei:
            compile_text(text, "prog.p4", allow_nonportable=nonportable)
        m = ERROR.match(str(ei.value))
        assert m and int(m.group(1)) == INGRESS_LINE, str(ei.value)
        assert "is not defined on signed values (int<8>)" in m.group(3)


# --- tables applied twice ---------------------------------------------------------------------


@pytest.mark.parametrize("ingress, second", [
    ("t.apply();\nt.apply();", 2),
    ("t.apply();\nif (hdr.h.a == 1) { t.apply(); }", 2),
    ("if (t.apply().hit) { } else { t.apply(); }", 1),  # the condition's apply, then the branch's
    ("if (hdr.h.a == 1) { t.apply(); } else { u.apply(); }\nt.apply();", 2),
    ("switch (t.apply().action_run) { inc: { t.apply(); } default: { } }", 1),
    ("hdr.h.b = t.apply().hit ? 8w1 : 8w2;\nif (!t.apply().miss) { }", 2),
    ("if (hdr.h.a == 1 && t.apply().hit && t.apply().miss) { }", 1),
])
def test_table_applied_twice_on_one_path_is_refused(ingress: str, second: int) -> None:
    line, msg = refusal(program(ingress))
    assert line == INGRESS_LINE + second - 1
    assert msg.startswith("table I.t is applied twice on one execution path of control I "
                          f"(first at prog.p4:{INGRESS_LINE}:"), msg


@pytest.mark.parametrize("ingress", [
    "if (hdr.h.a == 1) { t.apply(); } else { t.apply(); }",
    "if (hdr.h.a == 1) { t.apply(); } else if (hdr.h.a == 2) { t.apply(); } else { u.apply(); }",
    "switch (hdr.h.a) { 1: { t.apply(); } 2: { t.apply(); } default: { u.apply(); } }",
    "switch (u.apply().action_run) { inc: { t.apply(); } NoAction: { t.apply(); } }",
    "hdr.h.b = hdr.h.a == 1 ? (t.apply().hit ? 8w1 : 8w0) : (t.apply().hit ? 8w2 : 8w0);",
    "if (hdr.h.a == 1) { t.apply(); return; }\nt.apply();",
    "if (hdr.h.a == 1) { t.apply(); exit; }\nt.apply();",
    "t.apply();\nu.apply();",
])
def test_table_applied_once_per_path_is_accepted(ingress: str) -> None:
    compile_text(program(ingress), "prog.p4")


SUB_CONTROL = """control Sub(inout headers_t hdr) {
    action inc() { hdr.h.b = hdr.h.b + 1; }
    table s { key = { hdr.h.a : exact; } actions = { inc; NoAction; } default_action = NoAction(); }
    apply { s.apply(); }
}
"""


def test_sub_control_instances_apply_their_own_tables() -> None:
    """Two instances of one control: each has its own table (I.s1.s, I.s2.s), applied once."""
    text = program("        s1.apply(hdr);\n        s2.apply(hdr);")
    text = text.replace("control I(", SUB_CONTROL + "control I(")
    text = text.replace("    table t {", "    Sub() s1;\n    Sub() s2;\n    table t {")
    compile_text(text, "prog.p4")


def test_one_sub_control_instance_applied_twice_is_refused() -> None:
    text = program("        s1.apply(hdr);\n        if (hdr.h.a == 1) { s1.apply(hdr); }")
    text = text.replace("control I(", SUB_CONTROL + "control I(")
    text = text.replace("    table t {", "    Sub() s1;\n    table t {")
    line, msg = refusal(text)
    assert text.splitlines()[line - 1].strip().startswith("if (hdr.h.a == 1) { s1.apply"), (line, msg)
    assert msg.startswith("control instance s1 (with table s) is applied twice on one execution path "
                          "of control I"), msg


# --- select on an enum ------------------------------------------------------------------------


@pytest.mark.parametrize("transition, what", [
    ("select(hdr.h.k) { kind_t.A: accept; default: reject; }", "a select key of enum type kind_t"),
    ("select(hdr.h.a, hdr.h.k) { (1, kind_t.B): accept; default: reject; }",
     "a component of a tuple select key of enum type kind_t"),
])
def test_select_on_an_enum_key_is_refused(transition: str, what: str) -> None:
    text = program(transition=transition)
    line, msg = refusal(text)
    assert text.splitlines()[line - 1].strip().startswith("transition select("), (line, msg)
    assert msg.startswith(f"{what} is not portable"), msg


def test_select_on_a_cast_enum_is_accepted() -> None:
    compile_text(program(transition="select((bit<8>)hdr.h.k, hdr.h.a) { (1, 2): accept; default: reject; }"),
                 "prog.p4")


# --- the opt-in through the entry points, on both backends ------------------------------------

NONPORTABLE = program("        hdr.h.b = hdr.h.a / hdr.h.b;")
# a = 7, b = 2 -> b = 3 (the opt-in runs the division as before)
NONPORTABLE_STF = "packet 0 07 02 01\nexpect 1 07 03 01 $\n"


@pytest.fixture()
def nonportable_files(tmp_path: Path) -> tuple[Path, Path]:
    p4, stf_path = tmp_path / "prog.p4", tmp_path / "prog.stf"
    p4.write_text(NONPORTABLE)
    stf_path.write_text(NONPORTABLE_STF)
    return p4, stf_path


@pytest.mark.parametrize("backend", BACKENDS)
def test_stf_runner_refuses_and_opts_in(nonportable_files: tuple[Path, Path], backend: str) -> None:
    p4, stf_path = nonportable_files
    with pytest.raises(P4Error, match=r"prog\.p4:\d+:\d+: error: division \(/\) by a value"):
        stf.run_stf(str(p4), str(stf_path), backend=backend)
    result = stf.run_stf(str(p4), str(stf_path), backend=backend, allow_nonportable=True)
    assert result.ok, result.failures


def test_compile_file_opt_in(nonportable_files: tuple[Path, Path]) -> None:
    p4, _ = nonportable_files
    with pytest.raises(P4Error, match="not portable"):
        compile_file(str(p4))
    assert compile_file(str(p4), allow_nonportable=True).allow_nonportable


@pytest.mark.parametrize("backend", BACKENDS)
def test_switch_from_file_opt_in(nonportable_files: tuple[Path, Path], backend: str) -> None:
    """Switch.from_file and NativeSwitch.from_file take the opt-in as compile_file does."""
    from softswitch.native_switch import NativeSwitch
    from softswitch.switch import Switch

    cls = Switch if backend == "python" else NativeSwitch
    p4, _ = nonportable_files
    with pytest.raises(P4Error, match=r"prog\.p4:\d+:\d+: error: division \(/\) by a value"):
        cls.from_file(str(p4))
    sw = cls.from_file(str(p4), allow_nonportable=True)
    assert sw.program.allow_nonportable
    assert sw.process_packet(0, bytes([7, 2, 1])) == [(1, bytes([7, 3, 1]))]  # 7 / 2 = 3


def test_device_config_for_opt_in(nonportable_files: tuple[Path, Path]) -> None:
    """control_plane.p4runtime_client.device_config_for (SwitchController.load) takes the opt-in;
    the P4Info is the program's either way."""
    from control_plane.p4runtime_client import device_config_for
    from control_plane.switch_controller import SwitchController

    p4, _ = nonportable_files
    with pytest.raises(P4Error, match="not portable"):
        device_config_for(p4)
    p4info, config = device_config_for(p4, allow_nonportable=True)
    assert {t.preamble.name for t in p4info.tables} == {"I.t", "I.u"}
    assert b"hdr.h.a / hdr.h.b" in config

    pushed = []

    class Client:
        def set_pipeline(self, info: object, cfg: bytes) -> None:
            pushed.append(cfg)

    sc = SwitchController.__new__(SwitchController)
    sc.client = Client()  # type: ignore[assignment]
    with pytest.raises(P4Error, match="not portable"):
        sc.load(p4)
    sc.load(p4, allow_nonportable=True)
    assert pushed == [config]


def test_stf_cli_flag(nonportable_files: tuple[Path, Path]) -> None:
    p4, stf_path = nonportable_files
    run = [sys.executable, "-m", "softswitch.stf", "--backend", "python", str(p4), str(stf_path)]
    refused = subprocess.run(run, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "not portable" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    ok = subprocess.run(run + ["--allow-nonportable"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "PASS" in ok.stdout, ok.stdout + ok.stderr


def test_cli_help_names_the_flag() -> None:
    from softswitch.__main__ import build_parser

    assert "--allow-nonportable" in build_parser().format_help()
    out = subprocess.run([sys.executable, "-m", "softswitch.stf", "--help"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert "--allow-nonportable" in out.stdout


# --- the STF options line ---------------------------------------------------------------------


def test_stf_options_line(tmp_path: Path) -> None:
    f = tmp_path / "x.stf"
    f.write_text("# a comment\n#options: allow-nonportable,newer-syntax\npacket 0 00\n")
    assert stf_options(f) == STF_OPTIONS
    f.write_text("# options: allow-nonportabel\n")
    with pytest.raises(ValueError, match=r"x\.stf:1: unknown STF option 'allow-nonportabel'"):
        stf_options(f)
