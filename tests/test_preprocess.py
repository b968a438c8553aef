"""The P4 preprocessor: directives, macro expansion, comments and the line-marker contract."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from p4compiler.errors import P4Error
from p4compiler.preprocess import BUNDLED_INCLUDE_DIR, preprocess, preprocess_text

MARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"$')


def located(out: str) -> list[tuple[str, int, str]]:
    """(file, line, text) of every non-blank output line, following the markers as a lexer would."""
    result = []
    file, line = "?", 1
    for text in out.split("\n"):
        m = MARKER.match(text)
        if m:
            line, file = int(m.group(1)), m.group(2)
            continue
        if text.strip():
            result.append((file, line, text.strip()))
        line += 1
    return result


def pp(text: str, **kw) -> str:
    return preprocess_text(text, "main.p4", **kw)


def code(text: str, **kw) -> list[str]:
    return [t for _, _, t in located(pp(text, **kw))]


def test_object_macro_and_identifier_boundaries():
    out = code("#define W 8\nbit<W> a; bit<WW> b; W_x; x.W; \"W\"\n")
    assert out == ['bit<8> a; bit<WW> b; W_x; x.8; "W"']


def test_p4_literals_are_not_expanded_inside():
    # 8w5 and 0xW1 are pp-numbers: the w/x inside must not be treated as identifiers.
    assert code("#define w 9\n#define x 7\nbit<8> a = 8w5 + 0x1;\n") == ["bit<8> a = 8w5 + 0x1;"]


def test_function_like_macro_and_nested_args():
    out = code("#define ADD(a, b) ((a) + (b))\nx = ADD(f(1, 2), (3, 4));\n")
    assert out == ["x = ((f(1, 2)) + ((3, 4)));"]


def test_function_like_name_without_parens_is_left_alone():
    assert code("#define F(a) a\nF; F (1);\n") == ["F; 1;"]


def test_macro_call_spanning_lines_keeps_following_line_numbers():
    out = pp("#define ADD(a, b) a + b\nx = ADD(1,\n  2);\ny;\n")
    loc = located(out)
    assert loc[0][2].replace(" ", "") == "x=1+2;"
    assert loc[0][1] == 2
    assert loc[1] == ("main.p4", 4, "y;")


def test_self_and_mutual_recursion_stop():
    assert code("#define A A + 1\nA;\n") == ["A + 1;"]
    assert code("#define A B\n#define B A\nA; B;\n") == ["A; B;"]


def test_rescan_with_following_tokens():
    assert code("#define f g\n#define g(x) x * 2\nf(3);\n") == ["3 * 2;"]


def test_args_are_expanded_before_substitution():
    assert code("#define N 4\n#define SQ(x) x * x\nSQ(N);\n") == ["4 * 4;"]


def test_stringize_and_paste():
    out = code('#define S(x) #x\n#define CAT(a, b) a ## b\nS(hello  world); CAT(foo, _t) v; CAT(, z);\n')
    assert out == ['"hello world"; foo_t v; z;']


def test_variadic():
    assert code("#define V(a, ...) a(__VA_ARGS__)\nV(f, 1, 2);\n") == ["f(1, 2);"]


def test_wrong_argument_count_is_an_error():
    with pytest.raises(P4Error, match="takes 2 argument"):
        pp("#define F(a, b) a\nF(1);\n")


def test_undef():
    assert code("#define X 1\n#undef X\nX;\n") == ["X;"]


@pytest.mark.parametrize(
    "expr, taken",
    [
        ("1", True), ("0", False), ("UNKNOWN", False), ("!UNKNOWN", True),
        ("defined(A)", True), ("defined A", True), ("defined(B)", False), ("!defined B", True),
        ("A == 3", True), ("A != 3", False), ("A < 4 && A > 2", True), ("A <= 2 || A >= 4", False),
        ("(A + 1) * 2 == 8", True), ("7 / 2 == 3 && 7 % 2 == 1", True), ("-7 / 2 == -3", True),
        ("1 << 4 == 16", True), ("0x10 >> 4", True), ("(6 & 3) == 2 && (6 | 1) == 7 && (6 ^ 5) == 3", True),
        ("~0 == -1", True), ("0x7fffffffUL > 0", True), ("010 == 8", True), ("A ? 1 : 0", True),
        ("V1MODEL_VERSION >= 20200408", False),
    ],
)
def test_if_expressions(expr, taken):
    out = code(f"#define A 3\n#if {expr}\nyes;\n#else\nno;\n#endif\n")
    assert out == (["yes;"] if taken else ["no;"])


def test_elif_chain_and_nesting():
    src = (
        "#define X 2\n"
        "#if X == 1\none;\n#elif X == 2\n"
        "  #ifdef Y\n  y;\n  #else\n  two;\n  #endif\n"
        "#elif X == 2\nagain;\n#else\nother;\n#endif\n"
        "#ifndef Y\nnoy;\n#endif\n"
    )
    assert code(src) == ["two;", "noy;"]


def test_skipped_region_ignores_other_directives_and_bad_expressions():
    assert code("#if 0\n#error never\n#include \"missing.p4\"\n#if 1/0\n#endif\n#endif\nok;\n") == ["ok;"]


def test_division_by_zero_in_active_if_is_an_error():
    with pytest.raises(P4Error, match="division by zero"):
        pp("#if 1 / 0\n#endif\n")


@pytest.mark.parametrize(
    "src, msg",
    [
        ("#if 1\n", "unterminated #if"),
        ("#endif\n", "#endif without #if"),
        ("#else\n", "#else without #if"),
        ("#if 1\n#else\n#else\n#endif\n", "#else after #else"),
        ("#if 1\n#else\n#elif 1\n#endif\n", "#elif after #else"),
        ("#frobnicate\n", "unknown preprocessor directive"),
        ("/* open\n", "unterminated /\\* comment"),
    ],
)
def test_structural_errors(src, msg):
    with pytest.raises(P4Error, match=msg):
        pp(src)


def test_error_directive_reports_location():
    with pytest.raises(P4Error) as ei:
        pp("ok;\n  #error stop here\n")
    assert ei.value.file == "main.p4" and ei.value.line == 2 and ei.value.col == 3
    assert "stop here" in ei.value.message


def test_warning_pragma_and_line():
    out = pp('#warning careful\n#pragma foo bar\na;\n#line 100 "other.p4"\nb;\n# 7 "third.p4" 2\nc;\n')
    assert located(out) == [("main.p4", 3, "a;"), ("other.p4", 100, "b;"), ("third.p4", 7, "c;")]


def test_comments_keep_line_numbers_and_strings():
    src = 'a; // c "x"\n/* one\n two\n three */ b; /* x */ c;\n@n("/* no */ // no") d;\ne;\n'
    assert located(pp(src)) == [
        ("main.p4", 1, "a;"),
        ("main.p4", 4, "b;   c;"),
        ("main.p4", 5, '@n("/* no */ // no") d;'),
        ("main.p4", 6, "e;"),
    ]


def test_backslash_continuation_in_define_keeps_line_numbers():
    src = "#define LONG 1 + \\\n  2 + \\\n  3\nx = LONG;\n"
    [(file, line, text)] = located(pp(src))
    assert (file, line, " ".join(text.split())) == ("main.p4", 4, "x = 1 + 2 + 3;")


def test_line_mapping_is_one_to_one_between_markers():
    src = "\n".join(f"l{i};" for i in range(1, 11)) + "\n"
    out = pp(src)
    assert located(out) == [("main.p4", i, f"l{i};") for i in range(1, 11)]


def test_includes_quote_and_angle_with_markers(tmp_path: Path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (tmp_path / "local.h").write_text("local;\n")
    (inc / "lib.h").write_text("\n\nlib;\n")
    main = tmp_path / "main.p4"
    main.write_text('#include "local.h"\n#include <lib.h>\nafter;\n')
    out = preprocess(str(main), include_dirs=[str(inc)])
    assert located(out) == [
        (str(tmp_path / "local.h"), 1, "local;"),
        (str(inc / "lib.h"), 3, "lib;"),
        (str(main), 3, "after;"),
    ]


def test_angle_include_does_not_search_the_including_files_directory(tmp_path: Path):
    (tmp_path / "only_here.h").write_text("x;\n")
    main = tmp_path / "main.p4"
    main.write_text("#include <only_here.h>\n")
    with pytest.raises(P4Error, match="not found"):
        preprocess(str(main))


def test_include_from_macro(tmp_path: Path):
    (tmp_path / "a.h").write_text("from_a;\n")
    main = tmp_path / "main.p4"
    main.write_text('#define HDR "a.h"\n#include HDR\n')
    assert [t for _, _, t in located(preprocess(str(main)))] == ["from_a;"]


def test_include_guards_and_mutual_guarded_includes(tmp_path: Path):
    (tmp_path / "a.h").write_text('#ifndef A_H\n#define A_H\n#include "b.h"\na;\n#endif\n')
    (tmp_path / "b.h").write_text('#ifndef B_H\n#define B_H\n#include "a.h"\nb;\n#endif\n')
    main = tmp_path / "main.p4"
    main.write_text('#include "a.h"\n#include "a.h"\n#include "b.h"\nm;\n')
    assert [t for _, _, t in located(preprocess(str(main)))] == ["b;", "a;", "m;"]


def test_pragma_once(tmp_path: Path):
    (tmp_path / "o.h").write_text("#pragma once\nonce;\n")
    main = tmp_path / "main.p4"
    main.write_text('#include "o.h"\n#include "o.h"\n')
    assert [t for _, _, t in located(preprocess(str(main)))] == ["once;"]


def test_include_cycle_is_detected(tmp_path: Path):
    (tmp_path / "a.h").write_text('#include "b.h"\n')
    (tmp_path / "b.h").write_text('#include "a.h"\n')
    main = tmp_path / "main.p4"
    main.write_text('#include "a.h"\n')
    with pytest.raises(P4Error, match="#include cycle: .*a.h -> .*b.h -> .*a.h"):
        preprocess(str(main))


def test_missing_include_names_the_file():
    with pytest.raises(P4Error, match="'nope.p4' not found") as ei:
        pp('\n#include "nope.p4"\n')
    assert ei.value.line == 2


def test_defines_argument_and_predefined():
    out = code("#if __p4c__ && defined(__TARGET_BMV2__)\nW = X;\n#endif\nV = F(2);\n",
               defines={"X": "42", "F(a)": "a + a", "FLAG": None})
    assert out == ["W = 42;", "V = 2 + 2;"]
    assert code("#ifdef FLAG\nf;\n#endif\n", defines={"FLAG": None}) == ["f;"]


def test_bundled_v1model_default_and_new_version():
    old = pp("#include <core.p4>\n#include <v1model.p4>\n")
    assert "const bit<32> __v1model_version = 20180101;" in old
    assert "void read(out T result, in bit<32> index);" in old
    assert "PortId_t" not in old
    new = pp("#include <v1model.p4>\n", defines={"V1MODEL_VERSION": "20200408"})
    assert "const bit<32> __v1model_version = 20200408;" in new
    assert "extern register<T, I>" in new and "void count(in I index);" in new
    assert "typedef bit<9>  PortId_t;" in new
    # core.p4 comes in exactly once even though v1model.p4 includes it again.
    assert old.count("extern packet_in") == 1


def test_bundled_v1model_declares_the_standard_names():
    text = open(os.path.join(BUNDLED_INCLUDE_DIR, "v1model.p4")).read()
    for name in [
        "counter", "direct_counter", "meter", "direct_meter", "register", "action_profile",
        "action_selector", "random", "digest", "mark_to_drop", "hash", "verify_checksum",
        "update_checksum", "verify_checksum_with_payload", "update_checksum_with_payload",
        "resubmit", "resubmit_preserving_field_list", "recirculate", "recirculate_preserving_field_list",
        "clone", "clone3", "clone_preserving_field_list", "truncate", "assert", "assume", "log_msg",
        "Checksum16", "V1Switch", "standard_metadata_t",
    ]:
        assert re.search(rf"\b{name}\b", text), name
    body = text.split("struct standard_metadata_t")[1].split("}")[0]
    fields = re.findall(r"^\s*(?:bit<\d+>|PortId_t|error)\s+(\w+);", body, re.M)
    # 20180101 flavour: each port field appears twice (both #if branches), so drop duplicates in order.
    seen = list(dict.fromkeys(fields))
    assert seen == [
        "ingress_port", "egress_spec", "egress_port", "instance_type", "packet_length", "enq_timestamp",
        "enq_qdepth", "deq_timedelta", "deq_qdepth", "ingress_global_timestamp", "egress_global_timestamp",
        "mcast_grp", "egress_rid", "checksum_error", "parser_error", "priority",
    ]


def test_function_like_call_with_paren_on_next_line():
    loc = located(pp("#define F(a) [a]\nx = F\n  (1);\ny = F\nz;\n"))
    assert [(line, " ".join(t.split())) for _, line, t in loc] == [(2, "x = [1];"), (4, "y = F"), (5, "z;")]


def test_line_and_file_macros():
    assert code('a\nb = __LINE__; c = __FILE__;\n') == ["a", 'b = 2; c = "main.p4";']


def test_large_input_keeps_every_line_and_location():
    # 20,000 lines, each with a macro and a comment (its speed is not asserted here: tests do not
    # time; a quadratic preprocessor would show as a slow test, not as a failure)
    src = "#define W 32\n" + "".join(f"const bit<W> c{i} = {i}; // note\n" for i in range(20000))
    out = pp(src)
    assert located(out)[-1] == ("main.p4", 20001, "const bit<32> c19999 = 19999;")
    assert located(out)[1000] == ("main.p4", 1002, "const bit<32> c1000 = 1000;")
