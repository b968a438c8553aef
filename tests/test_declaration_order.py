"""Top-level declarations come before their uses, and parsers and controls are not instantiated
at the top level: what p4c refuses, the front end refuses too, for both back ends (the shared
type check), with one located line (p4compiler/python_backend/declorder.py and
python_backend._Build.toplevel_externs).

P4-16 requires a name to be declared before it is used ("P4 requires definitions to precede
uses", v1.2.4 section 12.10; p4c: a type name used earlier is a syntax
error, another name is "not found"); P4-16 v1.2.4 section 10.3.2 allows only packages and
externs to be instantiated at the top level (p4c: "cannot instantiate at top-level"). Before,
every top-level name was bound before any block was checked, and a top-level parser or control
instance could be passed to V1Switch by name.
"""

from __future__ import annotations

import re

import pytest

from p4compiler.c_backend import emit_c
from p4compiler.errors import P4Error
from p4compiler.python_backend import compile_text

HEAD = """#include <core.p4>
#include <v1model.p4>
"""

DECLS = """header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { bit<8> m; }
const bit<8> K = 3;
action set_b(inout headers_t hdr, bit<8> v) { hdr.h.b = v; }
bit<8> twice(in bit<8> x) { return x + x; }
"""

BLOCKS = """parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action put(bit<8> v) { hdr.h.a = v; }
    table t { key = { hdr.h.a : exact; } actions = { put; NoAction; } default_action = NoAction(); }
    apply {
        sm.egress_spec = 1;
        t.apply();
        hdr.h.b = twice(hdr.h.a) + K;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
"""

MAIN = "V1Switch(P(), VC(), I(), E(), CC(), D()) main;\n"


def refused(text: str) -> tuple[int, int, str]:
    """Compile `text`: one located line; returns (line, column, message)."""
    with pytest.raises(P4Error) as ei:
        compile_text(text, "prog.p4")
    msg = str(ei.value)
    assert "\n" not in msg, msg
    m = re.match(r"^prog\.p4:(\d+):(\d+): error: (.+)$", msg)
    assert m, msg
    return int(m.group(1)), int(m.group(2)), m.group(3)


def line_of(text: str, needle: str) -> int:
    return next(n for n, t in enumerate(text.splitlines(), start=1) if needle in t)


def test_the_ordered_program_compiles_on_both_backends() -> None:
    emit_c(compile_text(HEAD + DECLS + BLOCKS + MAIN, "prog.p4"))


@pytest.mark.parametrize("moved,use", [
    # a constant declared after the control that reads it
    ("const bit<8> K = 3;\n", "+ K;"),
    # a function declared after the control that calls it
    ("bit<8> twice(in bit<8> x) { return x + x; }\n", "twice(hdr.h.a)"),
])
def test_a_value_used_before_its_declaration_is_refused(moved: str, use: str) -> None:
    text = HEAD + DECLS.replace(moved, "") + BLOCKS + moved + MAIN
    line, _, msg = refused(text)
    name = moved.split("(")[0].split()[-1] if "(" in moved else moved.split()[2]
    assert line == line_of(text, use), (line, msg)
    assert msg.startswith(f"{name} is used before its declaration (declared at line "
                          f"{line_of(text, moved.strip())})"), msg
    assert "p4c refuses" in msg


def test_an_action_named_in_a_table_before_its_declaration_is_refused() -> None:
    blocks = BLOCKS.replace("actions = { put; NoAction; }", "actions = { put; set_b; NoAction; }")
    moved = "action set_b(inout headers_t hdr, bit<8> v) { hdr.h.b = v; }\n"
    text = HEAD + DECLS.replace(moved, "") + blocks + moved + MAIN
    line, _, msg = refused(text)
    assert line == line_of(text, "set_b; NoAction;")
    assert msg.startswith("set_b is used before its declaration"), msg


def test_a_type_used_before_its_declaration_is_refused() -> None:
    """A struct field of a header type declared further down (p4c: a syntax error there)."""
    decls = DECLS.replace("header h_t { bit<8> a; bit<8> b; }\n", "")
    early = "header h_t { bit<8> a; bit<8> b; }\nstruct x_t { later_t l; }\nstruct headers_t"
    text = (HEAD + decls.replace("struct headers_t", early) + "header later_t { bit<8> z; }\n"
            + BLOCKS + MAIN)
    line, _, msg = refused(text)
    assert line == line_of(text, "struct x_t")
    assert "later_t" in msg and ("before its declaration" in msg or "syntax" in msg), msg


def test_a_local_name_that_a_later_declaration_also_has_is_not_a_use() -> None:
    """A parameter, a local variable and an action of a block may have the name of a later
    top-level declaration: the uses inside mean the local ones."""
    blocks = BLOCKS.replace("action put(bit<8> v) { hdr.h.a = v; }",
                            "action put(bit<8> late) { bit<8> later = late; hdr.h.a = later; }")
    text = HEAD + DECLS + blocks + "const bit<8> late = 1;\nconst bit<8> later = 2;\n" + MAIN
    compile_text(text, "prog.p4")


@pytest.mark.parametrize("kind,decl,arg", [
    ("control", "I() ing;", "ing"),
    ("parser", "P() prs;", "prs"),
])
def test_a_parser_or_control_instantiated_at_the_top_level_is_refused(kind: str, decl: str,
                                                                      arg: str) -> None:
    main = MAIN.replace("I()" if kind == "control" else "P()", arg)
    text = HEAD + DECLS + BLOCKS + decl + "\n" + main
    line, col, msg = refused(text)
    assert (line, col) == (line_of(text, decl), 1), msg
    assert msg.startswith(f"{kind} {arg} is instantiated at the top level"), msg
    # unused, it is refused all the same (p4c checks the declaration)
    line, _, msg = refused(HEAD + DECLS + BLOCKS + decl + "\n" + MAIN)
    assert f"{kind} {arg} is instantiated at the top level" in msg


def test_a_program_without_main_names_its_file() -> None:
    with pytest.raises(P4Error) as ei:
        compile_text(HEAD + DECLS + BLOCKS, "nomain.p4")
    assert str(ei.value).startswith("nomain.p4: error: the program has no `main`"), str(ei.value)


# Local declarations of a control or parser (P4-16 12.10, and p4c: "not found"): the type check
# binds a block's actions, tables and instances before it looks at them, so these used to compile.
def with_locals(text: str) -> str:
    """BLOCKS with `text` declared first in control I."""
    return BLOCKS.replace("    action put(bit<8> v)", f"    {text}\n    action put(bit<8> v)")


LOCAL_CASES = [
    # (what the control I declares before `apply`, the use's text, the declaration's text, name)
    ("table t2 { key = { hdr.h.a : exact; } actions = { late; } } action late() { }",
     "actions = { late; }", "action late()", "late"),
    ("table t2 { key = { hdr.h.a : exact; } actions = { NoAction; } default_action = late(); }"
     " action late() { }", "default_action = late()", "action late()", "late"),
    ("action early() { late(); } action late() { }", "late();", "action late()", "late"),
    ("action early() { lv = 1; } bit<8> lv = 0;", "lv = 1;", "bit<8> lv", "lv"),
    ("table t2 { key = { lv : exact; } actions = { NoAction; } } bit<8> lv = 0;", "lv : exact",
     "bit<8> lv", "lv"),
    ("action early() { r.write(0, 1); } register<bit<8>>(4) r;", "r.write", "register<bit<8>>(4) r",
     "r"),
    ("bit<8> y = lv; bit<8> lv = 1;", "y = lv", "bit<8> lv", "lv"),
]


@pytest.mark.parametrize("locals_,use,decl,name", LOCAL_CASES)
def test_a_control_local_used_before_its_declaration_is_refused(locals_: str, use: str, decl: str,
                                                                name: str) -> None:
    # each on its own line, so the line numbers tell the use from the declaration
    split = locals_.replace(" action ", "\n    action ").replace(" bit<8> lv", "\n    bit<8> lv")
    split = split.replace(" register<", "\n    register<")
    text = HEAD + DECLS + with_locals(split) + MAIN
    line, _, msg = refused(text)
    assert line == line_of(text, use), (line, msg)
    assert msg.startswith(f"{name} is used before its declaration (declared at line "
                          f"{line_of(text, decl)}) in I"), msg


@pytest.mark.parametrize("locals_", [
    "action late() { } table t2 { key = { hdr.h.a : exact; } actions = { late; } }",
    "bit<8> lv = 0; action early() { lv = 1; }",
    "register<bit<8>>(4) r; action early() { r.write(0, 1); }",
    # a block-level variable of the action has the name of a later local: the use means its own
    "action early() { bit<8> lv = 2; hdr.h.b = lv; } bit<8> lv = 0;",
])
def test_control_locals_in_order_compile_on_both_backends(locals_: str) -> None:
    text = HEAD + DECLS + with_locals(locals_) + MAIN
    emit_c(compile_text(text, "prog.p4"))


def test_a_parser_local_used_before_its_declaration_is_refused() -> None:
    text = HEAD + DECLS + BLOCKS.replace(
        "    state start {", "    bit<8> y = lv;\n    bit<8> lv = 1;\n    state start {") + MAIN
    line, _, msg = refused(text)
    assert line == line_of(text, "y = lv"), msg
    assert msg.startswith(f"lv is used before its declaration (declared at line "
                          f"{line_of(text, 'bit<8> lv')}) in P"), msg
