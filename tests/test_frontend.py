"""Front end: the lexer's type-name and angle-bracket classification, the grammar on P4-16
constructs third-party programs use, and syntax errors located at file:line:col."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from p4compiler.errors import P4Error
from p4compiler.frontend import ast as A
from p4compiler.frontend.lexer import tokenize
from p4compiler.frontend.parser import parse_text


def types_of(src: str) -> list[tuple[str, str]]:
    return [(t.type, str(t.value)) for t in tokenize(src, "t.p4").tokens]


def test_shift_versus_nested_type_arguments() -> None:
    toks = types_of("register<bit<8>>(4) r; x = a >> 2; y = a > > 2;")
    kinds = [k for k, _ in toks]
    assert kinds.count("TGT") == 2  # both '>' of bit<8>> close type arguments
    assert kinds.count("SHR") == 1  # a >> 2 is a shift
    assert kinds.count("GT") == 2   # '> >' with a space stays two comparisons


def test_declared_names_become_type_names() -> None:
    toks = dict((v, k) for k, v in types_of("header h_t { bit<8> a; } typedef bit<4> nib_t; h_t x; nib_t y;"))
    assert toks["h_t"] == "TYPE_IDENT"
    assert toks["nib_t"] == "TYPE_IDENT"
    assert toks["x"] == "IDENT"


def test_type_parameters_may_shadow_global_types() -> None:
    """v1model's `parser Parser<H, M>(...)` after a program declares `header H`."""
    src = """header H { bit<8> a; }
struct M { bit<8> b; }
parser Parser<H, M>(out H parsedHdr, inout M meta);
extern void digest<T>(in bit<32> receiver, in T data);
"""
    prog = parse_text(src, "t.p4")
    ptype = [d for d in prog.decls if isinstance(d, A.ParserTypeDecl)][0]
    assert ptype.type_params == ["H", "M"]


def test_call_with_type_argument_is_not_a_declaration() -> None:
    src = """extern packet_in { T lookahead<T>(); }
header H { bit<8> a; }
control C(packet_in pkt) { apply { H h = pkt.lookahead<H>(); } }
"""
    parse_text(src, "t.p4")  # must not treat lookahead<H> as a generic declaration


def test_annotations_with_parentheses_and_strings() -> None:
    src = '@brief("a (nested) \\"quoted\\" note") @name(".top") header h_t { bit<8> a; }\n'
    prog = parse_text(src, "t.p4")
    anns = {a.name: a.body for a in prog.decls[0].annotations}
    assert anns["brief"] == '"a (nested) \\"quoted\\" note"'
    assert anns["name"] == '".top"'


def test_comments_in_odd_places() -> None:
    src = "header /* a */ h_t /* b */ { bit< /* c */ 8> // d\n a; }\nconst bit<8> X = /* e */ 8w1;\n"
    prog = parse_text(src, "t.p4")
    assert len(prog.decls) == 2


def test_priority_and_list_are_usable_as_identifiers() -> None:
    parse_text("struct s { bit<8> priority; bit<8> list; }\n", "t.p4")


def test_entries_with_explicit_priorities_parse() -> None:
    src = """control C(in bit<8> k) {
    action a() { }
    table t {
        key = { k : ternary; }
        actions = { a; }
        entries = {
            priority = 10: 0x01 &&& 0x0f : a();
            0x02 &&& 0xff : a();
        }
    }
    apply { t.apply(); }
}
"""
    parse_text(src, "t.p4")


@pytest.mark.parametrize(
    "src, line, col",
    [
        ("header h_t { bit<8> a }\n", 1, 23),               # missing ';'
        ("const bit<8> X = 1;\nconst bit<8> Y = X +;\n", 2, 21),
        ("control C() {\n    apply {\n        if (true) { } else\n    }\n}\n", 4, 5),
    ],
)
def test_syntax_errors_are_located(src: str, line: int, col: int) -> None:
    with pytest.raises(P4Error) as ei:
        parse_text(src, "prog.p4")
    assert str(ei.value).startswith(f"prog.p4:{line}:{col}: error: "), str(ei.value)


def test_unterminated_comment_or_bad_character() -> None:
    with pytest.raises(P4Error) as ei:
        parse_text("const bit<8> X = 1;\nconst bit<8> Y = `;\n", "prog.p4")
    assert str(ei.value).startswith("prog.p4:2:18: error:"), str(ei.value)


def test_line_markers_map_locations_back_to_the_source() -> None:
    src = '# 1 "top.p4"\nconst bit<8> X = 1;\n# 7 "inc.p4"\nconst bit<8> Y = ;\n'
    with pytest.raises(P4Error) as ei:
        parse_text(src, "pre.p4")
    assert str(ei.value).startswith("inc.p4:7:"), str(ei.value)


def _apply_stmts(body: str) -> list[A.Stmt]:
    prog = parse_text("control C(inout bit<8> x, inout bit<8> y) { apply { " + body + " } }")
    ctl = next(d for d in prog.decls if isinstance(d, A.ControlDecl))
    return ctl.apply.stmts


def test_compound_assignment_is_an_assignment_of_the_operation() -> None:
    """`a op= b` parses as `a = a op b` (P4-16 v1.2.4); `>>=` is a shift, not `>` then `>=`, and
    `x >= y` stays a comparison."""
    ops = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "|+|", "|-|"]
    stmts = _apply_stmts(" ".join(f"x {op}= y;" for op in ops) + " if (x >= y) { x = 1; }")
    for op, s in zip(ops, stmts, strict=False):
        assert isinstance(s, A.Assign) and isinstance(s.rhs, A.Binary), s
        assert s.rhs.op == op and s.rhs.left is s.lhs and s.lhs.name == "x", s  # type: ignore[attr-defined]
    cond = stmts[len(ops)].cond  # type: ignore[attr-defined]
    assert isinstance(cond, A.Binary) and cond.op == ">="


def test_compound_assignment_to_an_lvalue_with_a_call_is_refused() -> None:
    with pytest.raises(P4Error, match=r"compound assignment \(\+=\) to an l-value that calls"):
        parse_text("control C(inout bit<8> x) { apply { s[f()].a += 1; } }")


def test_for_loops_parse_in_both_forms() -> None:
    """P4-16 v1.2.5 `for`: three clauses (declarations or assignments, comma-separated; empty
    clauses but the condition), for-in over `lo .. hi` or an expression, annotations, break and
    continue; `for`, `break` and `continue` are keywords."""
    stmts = _apply_stmts(
        "for (bit<8> i = 0, y = 1; i < x; i = i + 1, y += 2, f(y)) { break; }"
        " for (; x < 3; ) continue;"
        " @unroll for (@a bit<8> v in 1 .. x) { x = v; }"
        " for (bit<8> v in {x, y}) ;"
    )
    three, bare, rng, lst = stmts
    assert isinstance(three, A.For) and isinstance(bare, A.For)
    assert [type(s).__name__ for s in three.init] == ["VarDecl", "Assign"]
    assert [type(s).__name__ for s in three.update] == ["Assign", "Assign", "CallStmt"]
    assert isinstance(three.body, A.Block) and isinstance(three.body.stmts[0], A.Break)
    assert bare.init == [] and bare.update == [] and isinstance(bare.body, A.Continue)
    assert isinstance(rng, A.ForIn) and isinstance(rng.collection, A.RangeExpr)
    assert [a.name for a in rng.annotations] == ["unroll"] and [a.name for a in rng.var_annotations] == ["a"]
    assert isinstance(lst, A.ForIn) and isinstance(lst.collection, A.ListExpr)
    prefix = "control C(inout bit<8> x, inout bit<8> y) { apply { "
    assert three.loc is not None and (three.loc.line, three.loc.col) == (1, len(prefix) + 1)


@pytest.mark.parametrize("body, words", [
    ("for (bit<8> i = 0; ; i = i + 1) { }", "syntax error"),  # the condition is not optional
    ("for (bit<8> i = 0; i < 3; x) { }", "assignments, method calls"),
    ("bit<8> for = 1;", "syntax error"),
])
def test_malformed_for_loops_are_located_errors(body: str, words: str) -> None:
    with pytest.raises(P4Error, match=words) as ei:
        _apply_stmts(body)
    assert str(ei.value).startswith("<input>:1:"), str(ei.value)


def test_grammar_tables_cached_between_processes(tmp_path: Path) -> None:
    """The LALR tables go to a cache file that a later process loads; a damaged file is rebuilt,
    never trusted (lark checks it against the grammar's hash)."""
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": str(repo)}
    code = (
        "from p4compiler.frontend.parser import parse_text; "
        "print(len(parse_text('header h_t { bit<8> f; }').decls))"
    )
    cache = tmp_path / "innet-drl" / "p4-grammar.lark-cache"
    for damage in (None, b"not a cache\n", b""):
        if damage is not None:
            cache.write_bytes(damage)
        argv = [sys.executable, "-c", code]
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and out.stdout.strip() == "1", out.stderr
        assert cache.stat().st_size > 10_000  # written (again) whole
