"""Compiler diagnostics and acceptance: errors in a program raise p4compiler.errors.P4Error whose
text starts with file:line:col of the offending construct; valid programs compile."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from p4compiler.errors import P4Error
from p4compiler.python_backend import compile_file

HEAD = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; int<8> s; }
struct headers_t { h_t h; }
struct meta_t { bit<8> m; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
"""
HEAD_LINES = HEAD.count("\n")
TAIL = "V1Switch(P(), VC(), I(), E(), CC(), D()) main;\n"


def ingress(body: str, locals_: str = "") -> str:
    """A program whose ingress apply block is `body`; its first line is HEAD_LINES + 3."""
    return (HEAD + "control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {\n"
            + locals_ + "    apply {\n" + body + "\n    }\n}\n" + TAIL)


def compile_src(tmp_path: Path, src: str) -> object:
    path = tmp_path / "prog.p4"
    path.write_text(src)
    return compile_file(str(path))


def error_at(tmp_path: Path, src: str) -> tuple[int, int, str]:
    """Compile src, expect a P4Error in prog.p4, return (line, col, message)."""
    with pytest.raises(P4Error) as ei:
        compile_src(tmp_path, src)
    text = str(ei.value)
    m = re.match(r"(.+?):(\d+):(\d+): error: (.*)", text, re.S)
    assert m, f"no file:line:col prefix: {text!r}"
    assert m.group(1).endswith("prog.p4"), text
    return int(m.group(2)), int(m.group(3)), m.group(4)


BODY_LINE = HEAD_LINES + 3  # line of the first statement in ingress()'s apply block


@pytest.mark.parametrize(
    "stmt, col, words",
    [
        ("        hdr.h.b = hdr.h.a + hdr.h.b;", None, "bit<8>"),          # width mismatch
        ("        hdr.h.a = true;", None, "bool"),                         # bool into bit<8>
        ("        hdr.h.a = nosuch;", None, "nosuch"),                     # unknown name
        ("        hdr.h.zz = 1;", None, "zz"),                             # unknown field
        ("        if (hdr.h.a) { }", None, "bool"),                        # non-bool condition
        ("        hdr.h.a = hdr.h.s;", None, "int<8>"),                    # signed into unsigned
        ("        hdr.h.a = hdr.h.a[8:1];", None, "slice"),                # slice out of range
        ("        undefined_fn(hdr.h.a);", None, "undefined_fn"),          # unknown function
    ],
)
def test_type_and_name_errors_point_at_the_statement(tmp_path: Path, stmt: str, col: int | None,
                                                     words: str) -> None:
    line, c, msg = error_at(tmp_path, ingress("        meta.m = 1;\n" + stmt))
    assert line == BODY_LINE + 1, msg
    assert c >= 9, msg  # inside the statement, not at the start of the line
    assert words in msg, msg


def test_syntax_error_location(tmp_path: Path) -> None:
    line, col, msg = error_at(tmp_path, ingress("        meta.m = 1;\n        meta.m = (1 + ;"))
    assert (line, col) == (BODY_LINE + 1, 23)
    assert "syntax error" in msg


def test_lexer_error_location(tmp_path: Path) -> None:
    line, col, _ = error_at(tmp_path, ingress("        meta.m = 1 $ 2;"))
    assert (line, col) == (BODY_LINE, 20)


def test_unknown_type(tmp_path: Path) -> None:
    src = ingress("        meta.m = 1;", locals_="    nosuch_t x;\n")
    line, _, msg = error_at(tmp_path, src)
    assert line == HEAD_LINES + 2
    assert "nosuch_t" in msg


def test_unknown_action_in_table(tmp_path: Path) -> None:
    locals_ = ("    table t {\n        key = { hdr.h.a : exact; }\n"
               "        actions = { missing_action; }\n    }\n")
    line, _, msg = error_at(tmp_path, ingress("        t.apply();", locals_))
    assert line == HEAD_LINES + 4
    assert "missing_action" in msg


def test_unknown_match_kind(tmp_path: Path) -> None:
    locals_ = "    table t {\n        key = { hdr.h.a : fuzzy; }\n        actions = { NoAction; }\n    }\n"
    line, _, msg = error_at(tmp_path, ingress("        t.apply();", locals_))
    assert line == HEAD_LINES + 3
    assert "fuzzy" in msg


def test_error_in_an_included_file_names_that_file(tmp_path: Path) -> None:
    (tmp_path / "inc.p4").write_text("// included\nconst bit<8> BAD = ;\n")
    src = "#include \"inc.p4\"\n" + ingress("        meta.m = 1;")
    with pytest.raises(P4Error) as ei:
        compile_src(tmp_path, src)
    assert str(ei.value).startswith(f"{tmp_path / 'inc.p4'}:2:")


def test_valid_program_compiles(tmp_path: Path) -> None:
    body = """        bit<16> w = (bit<16>)hdr.h.a + hdr.h.b;
        hdr.h.b = w |+| 16w1;
        hdr.h.s = hdr.h.s |-| 8s1;
        if (hdr.h.isValid() && meta.m == 0) { hdr.h.a = hdr.h.a[3:0] ++ 4w0; }"""
    prog = compile_src(tmp_path, ingress(body))
    assert "def " in prog.source


def test_int_literal_too_wide_for_width(tmp_path: Path) -> None:
    line, _, msg = error_at(tmp_path, ingress("        meta.m = 1;\n        hdr.h.a = 8w256;"))
    assert line == BODY_LINE + 1, msg


def test_transition_to_unknown_state(tmp_path: Path) -> None:
    src = ingress("        meta.m = 1;").replace("transition accept; }\n}", "transition nowhere; }\n}", 1)
    line, _, msg = error_at(tmp_path, src)
    assert line == 7
    assert "nowhere" in msg


def test_action_call_with_wrong_argument_count(tmp_path: Path) -> None:
    locals_ = "    action set(bit<8> v) { hdr.h.a = v; }\n"
    line, _, msg = error_at(tmp_path, ingress("        meta.m = 1;\n        set(1, 2);", locals_))
    assert line == BODY_LINE + 2
    assert "set" in msg


def test_bad_implementation_is_reported_at_the_property(tmp_path: Path) -> None:
    """`implementation` must name or instantiate an action_profile / action_selector."""
    locals_ = ("    register<bit<8>>(4) r;\n"
               "    table t {\n        key = { hdr.h.a : exact; }\n        actions = { NoAction; }\n"
               "        implementation = r;\n    }\n")
    line, _, msg = error_at(tmp_path, ingress("        t.apply();", locals_))
    assert line == HEAD_LINES + 6  # the `implementation = r;` line
    assert "not an action_profile or action_selector" in msg, msg


def test_exit_copies_out_and_out_headers_start_invalid(tmp_path: Path) -> None:
    """`exit` in a callee still hands its inout values back; an `out` header argument starts
    invalid."""
    from softswitch.switch import Switch

    locals_ = ("    action ex(inout bit<8> v) { v = 3; exit; }\n")
    src = ingress("        if (hdr.h.b == 1) { ex(hdr.h.a); }\n        clear(hdr.h);", locals_).replace(
        "control I(", "void clear(out h_t x) { }\ncontrol I(")
    path = tmp_path / "prog.p4"
    path.write_text(src)
    sw = Switch(compile_file(str(path)))
    assert sw.process_packet(1, bytes([7, 0, 1, 0])) == [(0, bytes([3, 0, 1, 0]))]  # exit: a = 3
    assert sw.process_packet(1, bytes([7, 0, 2, 0])) == [(0, b"")]  # h invalid: not emitted


@pytest.mark.parametrize(
    "stmt, words",
    [
        ("        break;", "break is only allowed inside a for loop"),
        ("        if (hdr.h.a == 0) { continue; }", "continue is only allowed inside a for loop"),
        ("        for (bit<8> i = 0; i; i = i + 1) { }", "condition must be a bool"),
        ("        for (bool v in 1 .. 2) { }", "must be bit<W> or int<W>"),
        ("        for (bit<8> v in 1 .. hdr.h.b) { }", "bit<16>"),
        ("        for (bit<8> v in hdr.h.a) { }", "iterates over a range"),
        ("        for (bit<16> v in {hdr.h.a}) { }", "bit<8>"),
    ],
)
def test_for_loop_errors_point_at_the_loop(tmp_path: Path, stmt: str, words: str) -> None:
    line, c, msg = error_at(tmp_path, ingress("        meta.m = 1;\n" + stmt))
    assert line == BODY_LINE + 1, msg
    assert c >= 9, msg
    assert words in msg, msg


def test_break_in_a_function_does_not_reach_the_callers_loop(tmp_path: Path) -> None:
    """break/continue belong to the loop around them in the same body (P4-16 v1.2.5)."""
    src = ingress("        for (bit<8> i in 1 .. 2) { f(); }").replace(
        "control I(", "void f() {\n    break;\n}\ncontrol I(")
    line, _, msg = error_at(tmp_path, src)
    assert line == HEAD_LINES + 2 and "break is only allowed inside a for loop" in msg, msg


def test_for_loop_in_a_parser_state_is_refused(tmp_path: Path) -> None:
    src = ingress("").replace(
        "state start { pkt.extract(hdr.h); transition accept; }",
        "state start {\n        for (bit<8> i in 1 .. 2) { }\n        transition accept; }")
    line, _, msg = error_at(tmp_path, src)
    assert line == 8 and "not allowed in parser states" in msg, msg


def test_selector_keys_need_an_action_selector(tmp_path: Path) -> None:
    """A `selector` key is hashed by the table's action_selector: without one it is an error at
    the key; a selector without selector keys is an error at the property."""
    for impl, where, text in (("", 4, "no action_selector"),
                              ("implementation = action_profile(32w4);", 4, "need an action_selector")):
        locals_ = ("    table t {\n        actions = { NoAction; }\n"
                   f"        key = {{ hdr.h.a : selector; }}\n        {impl}\n    }}\n")
        line, _, msg = error_at(tmp_path, ingress("        t.apply();", locals_))
        assert line == HEAD_LINES + where and text in msg, msg
    locals_ = ("    table t {\n        key = { hdr.h.a : exact; }\n        actions = { NoAction; }\n"
               "        implementation = action_selector(HashAlgorithm.crc16, 32w4, 32w8);\n    }\n")
    line, _, msg = error_at(tmp_path, ingress("        t.apply();", locals_))
    assert line == HEAD_LINES + 5 and "no selector keys" in msg, msg


def test_direct_counter_on_two_tables_is_refused(tmp_path: Path) -> None:
    """A direct counter's cells are one table's entries: a second table naming it is an error
    (as in p4c's bmv2 back end), also for one declared at the top level."""
    tables = ("    table t1 { key = { hdr.h.a : exact; } actions = { NoAction; } counters = dc; }\n"
              "    table t2 { key = { hdr.h.b : exact; } actions = { NoAction; } counters = dc; }\n")
    for top, local in (("", "    direct_counter(CounterType.packets) dc;\n"),
                       ("direct_counter(CounterType.packets) dc;\n", "")):
        src = ingress("        t1.apply();\n        t2.apply();", local + tables).replace(
            "control I(", top + "control I(")
        line, _, msg = error_at(tmp_path, src)
        assert "dc is already attached to table I.t1" in msg, msg
        assert line == HEAD_LINES + 4, msg  # the t2 line


def test_extern_constructor_argument_count_is_checked(tmp_path: Path) -> None:
    for top, local in (("register<bit<8>>() r;\n", ""), ("", "    counter(4) c;\n")):
        src = ingress("        meta.m = 1;", local).replace("control I(", top + "control I(")
        line, _, msg = error_at(tmp_path, src)
        assert "constructor argument" in msg and "given" in msg, msg
        assert line == HEAD_LINES + (1 if top else 2), msg


def test_two_externs_with_one_control_plane_name_are_refused(tmp_path: Path) -> None:
    """A top-level `r` and a control's `@name(".r")` register would share the P4Info name r."""
    src = ingress("        r.write(0, 8w1);\n        q.write(0, 8w2);",
                  '    @name(".r") register<bit<8>>(4) q;\n').replace(
        "control I(", "register<bit<8>>(4) r;\ncontrol I(")
    line, _, msg = error_at(tmp_path, src)
    assert line == HEAD_LINES + 3 and "already named r" in msg, msg
