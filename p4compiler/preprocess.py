"""The C preprocessor subset that P4 programs use, as p4c runs `cpp` before parsing.

Supported: ``#include "f"`` / ``#include <f>``, object- and function-like ``#define`` (with ``#``,
``##`` and ``__VA_ARGS__``), ``#undef``, ``#if/#ifdef/#ifndef/#elif/#else/#endif`` with integer
constant expressions, ``#error``, ``#warning``, ``#pragma`` (``once`` honoured, the rest ignored),
``#line`` and gcc line markers, backslash line continuation, and comment removal.

Output format (the lexer relies on it): the expanded text, where a line ``# <line> "<path>"``
says that the NEXT output line is line <line> of <path>. Between two markers, output lines map
one to one onto source lines: directives, comments and skipped regions leave blank lines, so
line numbers stay right; only columns can shift where a macro expanded. In <path>, backslash
and double quote are escaped with a backslash, as cpp does.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from p4compiler.errors import P4Error, not_utf8

__all__ = ["preprocess", "preprocess_text", "BUNDLED_INCLUDE_DIR", "PREDEFINED"]

log = logging.getLogger(__name__)

BUNDLED_INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "p4include")

# What p4c-bm2-ss defines before the program's own text: the p4c driver's version macros and the
# backend's -D__TARGET_BMV2__ (programs test these to pick target-specific code).
PREDEFINED: dict[str, str] = {
    "__p4c__": "1",
    "__p4c_major__": "1",
    "__p4c_minor__": "2",
    "__p4c_patchlevel__": "5",
    "__p4c_version__": '"1.2.5"',
    "__TARGET_BMV2__": "1",
}

_MAX_INCLUDE_DEPTH = 200  # cpp's own limit; deeper nesting is a cycle in practice

# Strings first so that comment openers inside them are left alone; a `//` comment continues
# over a backslash-newline, as in C.
_COMMENT_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"?|//(?:\\\n|[^\n])*|/\*.*?\*/|/\*', re.DOTALL)

_TOKEN_RE = re.compile(
    r"""(?P<ws>[ \t\f\v\r\n]+)
      | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<num>\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.])*)
      | (?P<str>"(?:[^"\\]|\\.)*")
      | (?P<punct>\#\#|&&|\|\||==|!=|<=|>=|<<|>>|.)""",
    re.VERBOSE | re.DOTALL,
)
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DIRECTIVE_RE = re.compile(r"\s*#\s*([A-Za-z_]\w*|[0-9]+)?")


@dataclass(eq=False)
class _Tok:
    kind: str  # ws, id, num, str, punct
    text: str
    hide: frozenset[str] = frozenset()  # macros that may not expand this token again


@dataclass
class _Macro:
    name: str
    body: list[_Tok]
    params: list[str] | None = None  # None: object-like
    variadic: bool = False


@dataclass
class _Line:
    number: int  # physical line where the logical line starts (1-based)
    text: str
    span: int  # physical lines it covers (more than 1 after backslash continuation)


@dataclass
class _Cond:
    taken: bool  # some branch of this #if group was already selected
    active: bool  # the current branch is being emitted
    parent_active: bool
    seen_else: bool
    line: int


class _NeedMore(Exception):
    """A function-like macro call runs past the end of the line."""


def _tokenize(text: str) -> list[_Tok]:
    return [_Tok(m.lastgroup or "punct", m.group()) for m in _TOKEN_RE.finditer(text)]


def _strip_comments(text: str, filename: str) -> str:
    def repl(m: re.Match[str]) -> str:
        s = m.group()
        if s.startswith('"'):
            return s
        if s == "/*" and not s.endswith("*/"):
            line = text.count("\n", 0, m.start()) + 1
            col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            raise P4Error("unterminated /* comment", filename, line, col)
        # Keep the newlines a comment spans, so later lines keep their numbers.
        return " " + "\n" * s.count("\n")

    return _COMMENT_RE.sub(repl, text)


def _logical_lines(text: str) -> list[_Line]:
    physical = text.split("\n")
    if physical and physical[-1] == "":
        physical.pop()
    out: list[_Line] = []
    i = 0
    while i < len(physical):
        start = i
        parts = []
        line = physical[i]
        while line.rstrip(" \t\r").endswith("\\") and i + 1 < len(physical):
            parts.append(line.rstrip(" \t\r")[:-1])
            i += 1
            line = physical[i]
        parts.append(line.rstrip("\r"))
        out.append(_Line(start + 1, "".join(parts), i - start + 1))
        i += 1
    return out


def _quote_path(path: str) -> str:
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _marker(line: int, path: str) -> str:
    return f"# {line} {_quote_path(path)}"


@dataclass
class _FileState:
    path: str  # as reported in markers and errors
    real: str  # realpath, for cycle detection and #pragma once
    presumed: str  # name after #line
    line_offset: int = 0  # presumed line = physical line + offset (#line)
    conds: list[_Cond] = field(default_factory=list)


class _Preprocessor:
    def __init__(self, include_dirs: Sequence[str], defines: Mapping[str, str | None] | None):
        self.include_dirs = [str(d) for d in include_dirs]
        self.macros: dict[str, _Macro] = {}
        self.out: list[str] = []
        self.stack: list[_FileState] = []
        self.once: set[str] = set()
        self.guards: dict[str, str | None] = {}  # realpath -> include-guard macro (None: no guard)
        self.next_line_opens = False  # the line after the current one starts with '('
        for name, value in PREDEFINED.items():
            self._define_text(f"{name} {value}", "<built-in>", 0)
        for name, value in (defines or {}).items():
            self._define_text(f"{name} {'1' if value is None else value}", "<command-line>", 0)

    # ---- files -------------------------------------------------------------------------------

    def run_file(self, path: str, text: str | None = None, from_file: str | None = None,
                 from_line: int | None = None) -> None:
        real = os.path.realpath(path)
        if text is None:
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise P4Error(f"cannot read {path}: {e.strerror}", from_file, from_line) from None
            except UnicodeDecodeError as e:
                raise P4Error(not_utf8(e), path) from None
        if any(s.real == real for s in self.stack):
            chain = " -> ".join(s.path for s in self.stack) + f" -> {path}"
            raise P4Error(f"#include cycle: {chain}", from_file, from_line)
        if len(self.stack) >= _MAX_INCLUDE_DEPTH:
            raise P4Error(f"#include nested more than {_MAX_INCLUDE_DEPTH} deep", from_file, from_line)
        text = text.replace("\r\n", "\n")
        lines = _logical_lines(_strip_comments(text, path))
        self.guards.setdefault(real, _guard_macro(lines))
        state = _FileState(path, real, path)
        self.stack.append(state)
        try:
            self.out.append(_marker(1, path))
            self._run_lines(state, lines)
            if state.conds:
                raise P4Error("unterminated #if (no matching #endif)", path, state.conds[-1].line, 1)
        finally:
            self.stack.pop()

    def _run_lines(self, st: _FileState, lines: list[_Line]) -> None:
        i = 0
        while i < len(lines):
            ln = lines[i]
            i += 1
            d = _DIRECTIVE_RE.match(ln.text)
            if d:
                self._directive(st, ln, d)
                continue
            if st.conds and not st.conds[-1].active:
                self.out.extend([""] * ln.span)
                continue
            # Ordinary line: a function-like macro call may continue on the next lines.
            text, span = ln.text, ln.span
            while True:
                nxt = lines[i].text if i < len(lines) and not _DIRECTIVE_RE.match(lines[i].text) else None
                self.next_line_opens = nxt is not None and nxt.lstrip().startswith("(")
                try:
                    expanded = self._expand_line(text, st, ln.number, more=nxt is not None)
                    break
                except _NeedMore:
                    if i >= len(lines) or _DIRECTIVE_RE.match(lines[i].text):
                        raise P4Error("unterminated argument list of a macro call",
                                      st.path, ln.number, 1) from None
                    text = text + "\n" + lines[i].text
                    span += lines[i].span
                    i += 1
            self.out.append(expanded.replace("\n", " "))
            self.out.extend([""] * (span - 1))

    # ---- directives --------------------------------------------------------------------------

    def _directive(self, st: _FileState, ln: _Line, d: re.Match[str]) -> None:
        name = d.group(1) or ""
        rest = ln.text[d.end():]
        col = ln.text.index("#") + 1
        conds = st.conds
        active = not conds or conds[-1].active

        def err(msg: str) -> P4Error:
            return P4Error(msg, st.path, ln.number, col)

        if name in ("if", "ifdef", "ifndef"):
            if not active:
                conds.append(_Cond(True, False, False, False, ln.number))
            else:
                if name == "if":
                    value = self._eval(rest, st, ln.number, col)
                else:
                    ident = _IDENT_RE.match(rest.strip())
                    if not ident:
                        raise err(f"#{name} expects a macro name")
                    value = (ident.group() in self.macros) == (name == "ifdef")
                conds.append(_Cond(bool(value), bool(value), True, False, ln.number))
        elif name == "elif":
            if not conds:
                raise err("#elif without #if")
            c = conds[-1]
            if c.seen_else:
                raise err("#elif after #else")
            if c.taken or not c.parent_active:
                c.active = False
            else:
                c.active = bool(self._eval(rest, st, ln.number, col))
                c.taken = c.active
        elif name == "else":
            if not conds:
                raise err("#else without #if")
            c = conds[-1]
            if c.seen_else:
                raise err("#else after #else")
            c.seen_else = True
            c.active = c.parent_active and not c.taken
            c.taken = True
        elif name == "endif":
            if not conds:
                raise err("#endif without #if")
            conds.pop()
        elif not active:
            pass  # other directives in skipped regions are not even checked, as in cpp
        elif name == "define":
            self._define_text(rest, st.path, ln.number, col)
        elif name == "undef":
            ident = _IDENT_RE.match(rest.strip())
            if not ident:
                raise err("#undef expects a macro name")
            self.macros.pop(ident.group(), None)
        elif name == "include":
            self._include(st, ln, rest, col)
            return
        elif name == "error":
            raise err(f"#error {rest.strip()}".rstrip())
        elif name == "warning":
            log.warning("%s:%d:%d: warning: #warning %s", st.path, ln.number, col, rest.strip())
        elif name == "pragma":
            if rest.split() == ["once"]:
                self.once.add(st.real)
        elif name == "line" or name.isdigit():
            self._line_directive(st, ln, (name + " " + rest) if name.isdigit() else rest, col)
            return
        elif name:
            raise err(f"unknown preprocessor directive #{name}")
        self.out.extend([""] * ln.span)

    def _line_directive(self, st: _FileState, ln: _Line, rest: str, col: int) -> None:
        toks = [t for t in self._expand_tokens(_tokenize(rest), st, ln.number) if t.kind != "ws"]
        if not toks or toks[0].kind != "num" or not toks[0].text.isdigit():
            raise P4Error("#line expects a line number", st.path, ln.number, col)
        new_line = int(toks[0].text)
        if len(toks) > 1 and toks[1].kind == "str":
            st.presumed = _unquote(toks[1].text)
        st.line_offset = new_line - (ln.number + ln.span)
        self.out.append(_marker(new_line, st.presumed))
        self.out.extend([""] * (ln.span - 1))  # unreachable in practice; keeps the count honest

    def _include(self, st: _FileState, ln: _Line, rest: str, col: int) -> None:
        spec = rest.strip()
        if not spec.startswith(('"', "<")):
            # #include MACRO: the expansion must give one of the two forms.
            spec = "".join(t.text for t in self._expand_tokens(_tokenize(spec), st, ln.number)).strip()
        m = re.fullmatch(r'"([^"]+)"(.*)|<([^>]+)>(.*)', spec)
        if not m or (m.group(2) or m.group(4) or "").strip():
            raise P4Error(f'#include expects "file" or <file>, got {rest.strip()!r}', st.path, ln.number, col)
        quoted = m.group(1) is not None
        name = m.group(1) if quoted else m.group(3)
        target = self._find_include(name, st.path, quoted)
        if target is None:
            where = ([os.path.dirname(st.path) or "."] if quoted else []) + self.include_dirs
            where.append(BUNDLED_INCLUDE_DIR)
            raise P4Error(f"#include file {name!r} not found (searched: {', '.join(where)})",
                          st.path, ln.number, col)
        real = os.path.realpath(target)
        guard = self.guards.get(real)
        if real in self.once or (guard is not None and guard in self.macros):
            # Nothing would come out of it; skipping also lets guarded files include each other.
            self.out.extend([""] * ln.span)
            return
        self.run_file(target, from_file=st.path, from_line=ln.number)
        self.out.append(_marker(ln.number + ln.span + st.line_offset, st.presumed))

    def _find_include(self, name: str, current: str, quoted: bool) -> str | None:
        if os.path.isabs(name):
            return name if os.path.isfile(name) else None
        dirs = [os.path.dirname(current) or "."] if quoted else []
        dirs += self.include_dirs + [BUNDLED_INCLUDE_DIR]
        for d in dirs:
            candidate = os.path.normpath(os.path.join(d, name))
            if os.path.isfile(candidate):
                return candidate
        return None

    def _define_text(self, text: str, file: str, line: int, col: int = 1) -> None:
        m = re.match(r"\s*([A-Za-z_]\w*)", text)
        if not m:
            raise P4Error("#define expects a macro name", file, line, col)
        name = m.group(1)
        if name == "defined":
            raise P4Error('"defined" cannot be used as a macro name', file, line, col)
        rest = text[m.end():]
        params: list[str] | None = None
        variadic = False
        if rest.startswith("("):  # no space before '(' makes it function-like
            close = rest.find(")")
            if close < 0:
                raise P4Error(f"missing ')' in parameter list of macro {name}", file, line, col)
            params = [p.strip() for p in rest[1:close].split(",")]
            if params == [""]:
                params = []
            if params and params[-1] == "...":
                params[-1] = "__VA_ARGS__"
                variadic = True
            for p in params:
                if not _IDENT_RE.fullmatch(p):
                    raise P4Error(f"bad parameter {p!r} of macro {name}", file, line, col)
            if len(set(params)) != len(params):
                raise P4Error(f"duplicate parameter of macro {name}", file, line, col)
            rest = rest[close + 1:]
        body = _tokenize(rest.strip())
        if body and (body[0].text == "##" or body[-1].text == "##"):
            raise P4Error(f"'##' cannot be at either end of the body of macro {name}", file, line, col)
        self.macros[name] = _Macro(name, body, params, variadic)

    # ---- #if expressions ---------------------------------------------------------------------

    def _eval(self, text: str, st: _FileState, line: int, col: int) -> int:
        # `defined` is resolved before macro expansion, as in C.
        nonws = [t for t in _tokenize(text) if t.kind != "ws"]
        resolved: list[_Tok] = []
        i = 0
        while i < len(nonws):
            t = nonws[i]
            if t.kind == "id" and t.text == "defined":
                nxt = nonws[i + 1] if i + 1 < len(nonws) else None
                if nxt is not None and nxt.text == "(":
                    if i + 3 >= len(nonws) or nonws[i + 2].kind != "id" or nonws[i + 3].text != ")":
                        raise P4Error("bad defined(...) in #if", st.path, line, col)
                    name = nonws[i + 2].text
                    i += 4
                elif nxt is not None and nxt.kind == "id":
                    name = nxt.text
                    i += 2
                else:
                    raise P4Error("'defined' expects a macro name", st.path, line, col)
                resolved.append(_Tok("num", "1" if name in self.macros else "0"))
                continue
            resolved.append(t)
            i += 1
        expanded = self._expand_tokens(resolved, st, line)
        try:
            return _ExprParser([t for t in expanded if t.kind != "ws"]).parse()
        except _ExprError as e:
            raise P4Error(f"in #if expression {text.strip()!r}: {e}", st.path, line, col) from None

    # ---- macro expansion ---------------------------------------------------------------------

    def _expand_line(self, text: str, st: _FileState, line: int, more: bool) -> str:
        # Fast path: most lines name no macro at all and are passed through untouched.
        if not any(w in self.macros or w in ("__LINE__", "__FILE__") for w in _IDENT_RE.findall(text)):
            return text
        toks = _tokenize(text)
        out = self._expand_tokens(toks, st, line, allow_more=more)
        return "".join(t.text for t in out)

    def _expand_tokens(self, toks: list[_Tok], st: _FileState, line: int,
                       allow_more: bool = False) -> list[_Tok]:
        """Expand macros in toks, rescanning each replacement together with what follows it.

        Every token carries the set of macros whose expansion produced it; a macro never
        expands a token that already carries its name (the usual guard against recursion).
        """
        toks = list(toks)
        out: list[_Tok] = []
        i = 0
        while i < len(toks):
            t = toks[i]
            if t.kind != "id" or t.text in t.hide:
                out.append(t)
                i += 1
                continue
            if t.text == "__LINE__":
                out.append(_Tok("num", str(line + st.line_offset)))
                i += 1
                continue
            if t.text == "__FILE__":
                out.append(_Tok("str", _quote_path(st.presumed)))
                i += 1
                continue
            m = self.macros.get(t.text)
            if m is None:
                out.append(t)
                i += 1
                continue
            if m.params is None:
                hide = t.hide | {m.name}
                repl = [_Tok(b.kind, b.text, b.hide | hide) for b in self._paste(m.body, m.name)]
                toks[i:i + 1] = repl
                continue
            # Function-like: only a call when '(' follows (whitespace allowed in between).
            j = i + 1
            while j < len(toks) and toks[j].kind == "ws":
                j += 1
            if j >= len(toks):
                if allow_more and self.next_line_opens:
                    raise _NeedMore
                out.append(t)
                i += 1
                continue
            if toks[j].text != "(":
                out.append(t)
                i += 1
                continue
            args, end = self._collect_args(toks, j, m, st, line, allow_more)
            hide = t.hide | {m.name}
            body = self._substitute(m, args, st, line)
            toks[i:end + 1] = [_Tok(b.kind, b.text, b.hide | hide) for b in body]
        return out

    def _collect_args(self, toks: list[_Tok], j: int, m: _Macro, st: _FileState, line: int,
                      allow_more: bool) -> tuple[list[list[_Tok]], int]:
        depth = 0
        args: list[list[_Tok]] = [[]]
        k = j
        while True:
            k += 1
            if k >= len(toks):
                if allow_more:
                    raise _NeedMore
                raise P4Error(f"unterminated argument list invoking macro {m.name}", st.path, line, 1)
            tk = toks[k]
            if tk.text == "(":
                depth += 1
            elif tk.text == ")":
                if depth == 0:
                    break
                depth -= 1
            elif tk.text == "," and depth == 0 and not (m.variadic and len(args) == len(m.params or [])):
                args.append([])
                continue
            args[-1].append(tk)
        args = [_trim(a) for a in args]
        params = m.params or []
        if not params and args == [[]]:
            args = []
        if m.variadic and len(args) == len(params) - 1:
            args.append([])
        if len(args) != len(params):
            raise P4Error(f"macro {m.name} takes {len(params)} argument(s), {len(args)} given",
                          st.path, line, 1)
        return args, k

    def _substitute(self, m: _Macro, args: list[list[_Tok]], st: _FileState, line: int) -> list[_Tok]:
        params = {p: i for i, p in enumerate(m.params or [])}
        body = m.body
        out: list[_Tok] = []
        expanded_cache: dict[int, list[_Tok]] = {}
        n = len(body)
        for idx, b in enumerate(body):
            if b.kind == "id" and b.text in params:
                prev = _neighbour(body, idx, -1)
                nxt = _neighbour(body, idx, 1)
                if prev is not None and prev.text == "#":
                    continue  # handled when the '#' was seen
                a = params[b.text]
                if (prev is not None and prev.text == "##") or (nxt is not None and nxt.text == "##"):
                    out.extend(args[a] or [_Tok("placemarker", "")])
                else:
                    if a not in expanded_cache:
                        expanded_cache[a] = self._expand_tokens(args[a], st, line)
                    out.extend(expanded_cache[a])
            elif b.text == "#" and m.params is not None:
                nxt_i = idx + 1
                while nxt_i < n and body[nxt_i].kind == "ws":
                    nxt_i += 1
                if nxt_i < n and body[nxt_i].kind == "id" and body[nxt_i].text in params:
                    out.append(_Tok("str", _stringize(args[params[body[nxt_i].text]])))
                    # skip the whitespace between '#' and the parameter
                    continue
                out.append(b)
            elif b.kind == "ws" and idx > 0 and body[idx - 1].text == "#" and m.params is not None:
                continue
            else:
                out.append(b)
        return self._paste(out, m.name)

    def _paste(self, toks: list[_Tok], name: str) -> list[_Tok]:
        if not any(t.text == "##" for t in toks):
            return [t for t in toks if t.kind != "placemarker"]
        out: list[_Tok] = []
        i = 0
        while i < len(toks):
            t = toks[i]
            if t.text == "##" and t.kind == "punct":
                while out and out[-1].kind == "ws":
                    out.pop()
                j = i + 1
                while j < len(toks) and toks[j].kind == "ws":
                    j += 1
                left = out.pop() if out else _Tok("placemarker", "")
                right = toks[j] if j < len(toks) else _Tok("placemarker", "")
                joined = left.text + right.text
                new = _tokenize(joined) if joined else []
                out.extend(new if new else [_Tok("placemarker", "")])
                i = j + 1
                continue
            out.append(t)
            i += 1
        return [t for t in out if t.kind != "placemarker"]


def _neighbour(body: list[_Tok], idx: int, step: int) -> _Tok | None:
    j = idx + step
    while 0 <= j < len(body) and body[j].kind == "ws":
        j += step
    return body[j] if 0 <= j < len(body) else None


def _trim(toks: list[_Tok]) -> list[_Tok]:
    a, b = 0, len(toks)
    while a < b and toks[a].kind == "ws":
        a += 1
    while b > a and toks[b - 1].kind == "ws":
        b -= 1
    return toks[a:b]


def _stringize(toks: list[_Tok]) -> str:
    parts: list[str] = []
    for t in toks:
        if t.kind == "ws":
            if parts and parts[-1] != " ":
                parts.append(" ")
        elif t.kind == "str":
            parts.append(t.text.replace("\\", "\\\\").replace('"', '\\"'))
        else:
            parts.append(t.text)
    return '"' + "".join(parts).strip().replace("\n", " ") + '"'


def _unquote(s: str) -> str:
    return re.sub(r"\\(.)", r"\1", s[1:-1])


def _guard_macro(lines: list[_Line]) -> str | None:
    """The X of a file wrapped entirely in `#ifndef X` (or `#if !defined X`) ... `#endif`."""
    significant = [ln for ln in lines if ln.text.strip()]
    if len(significant) < 2:
        return None
    m = re.fullmatch(r"\s*#\s*(?:ifndef\s+([A-Za-z_]\w*)|if\s+!\s*defined\s*\(?\s*([A-Za-z_]\w*)\s*\)?)\s*",
                     significant[0].text)
    if not m or not re.fullmatch(r"\s*#\s*endif\b.*", significant[-1].text):
        return None
    depth = 0
    for ln in significant:
        d = _DIRECTIVE_RE.match(ln.text)
        if not d:
            continue
        if d.group(1) in ("if", "ifdef", "ifndef"):
            depth += 1
        elif d.group(1) == "endif":
            depth -= 1
            if depth == 0 and ln is not significant[-1]:
                return None  # the first #if closes before the end: not a guard
        elif d.group(1) in ("else", "elif") and depth == 1:
            return None
    return m.group(1) or m.group(2)


# ---- integer constant expressions -----------------------------------------------------------


class _ExprError(Exception):
    pass


_BINARY_PREC: dict[str, int] = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6,
    "<": 7, "<=": 7, ">": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _int_literal(text: str) -> int:
    s = text.rstrip("uUlL")
    try:
        if s.lower().startswith("0x"):
            return int(s[2:], 16)
        if s.lower().startswith("0b"):
            return int(s[2:], 2)
        if len(s) > 1 and s.startswith("0"):
            return int(s[1:], 8)
        return int(s, 10)
    except ValueError:
        raise _ExprError(f"bad integer literal {text!r}") from None


class _ExprParser:
    """Precedence climbing over the preprocessor's operators; unknown identifiers are 0."""

    def __init__(self, toks: list[_Tok]):
        merged: list[str | int] = []
        for t in toks:
            if t.kind == "num":
                merged.append(_int_literal(t.text))
            elif t.kind == "id":
                merged.append(0)
            elif t.kind == "str":
                raise _ExprError("string literal in #if expression")
            else:
                merged.append(t.text)
        self.toks = merged
        self.pos = 0

    def parse(self) -> int:
        if not self.toks:
            raise _ExprError("empty expression")
        v = self._ternary()
        if self.pos != len(self.toks):
            raise _ExprError(f"unexpected {self.toks[self.pos]!r}")
        return v

    def _peek(self) -> str | int | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def _take(self, what: str) -> None:
        if self._peek() != what:
            raise _ExprError(f"expected {what!r}")
        self.pos += 1

    def _ternary(self) -> int:
        cond = self._binary(1)
        if self._peek() == "?":
            self.pos += 1
            a = self._ternary()
            self._take(":")
            b = self._ternary()
            return a if cond else b
        return cond

    def _binary(self, min_prec: int) -> int:
        left = self._unary()
        while True:
            op = self._peek()
            if not isinstance(op, str) or _BINARY_PREC.get(op, 0) < min_prec:
                return left
            prec = _BINARY_PREC[op]
            self.pos += 1
            right = self._binary(prec + 1)
            left = self._apply(op, left, right)

    @staticmethod
    def _apply(op: str, a: int, b: int) -> int:
        if op in ("/", "%") and b == 0:
            raise _ExprError("division by zero")
        ops: dict[str, Callable[[int, int], int]] = {
            "||": lambda x, y: int(bool(x) or bool(y)),
            "&&": lambda x, y: int(bool(x) and bool(y)),
            "|": lambda x, y: x | y, "^": lambda x, y: x ^ y, "&": lambda x, y: x & y,
            "==": lambda x, y: int(x == y), "!=": lambda x, y: int(x != y),
            "<": lambda x, y: int(x < y), "<=": lambda x, y: int(x <= y),
            ">": lambda x, y: int(x > y), ">=": lambda x, y: int(x >= y),
            "<<": lambda x, y: x << y, ">>": lambda x, y: x >> y,
            "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
            "/": _c_div, "%": lambda x, y: x - _c_div(x, y) * y,
        }
        return ops[op](a, b)

    def _unary(self) -> int:
        t = self._peek()
        if t is None:
            raise _ExprError("unexpected end of expression")
        self.pos += 1
        if isinstance(t, int):
            return t
        if t == "(":
            v = self._ternary()
            self._take(")")
            return v
        if t == "!":
            return int(not self._unary())
        if t == "~":
            return ~self._unary()
        if t == "-":
            return -self._unary()
        if t == "+":
            return self._unary()
        raise _ExprError(f"unexpected {t!r}")


# ---- public API -----------------------------------------------------------------------------


def preprocess_text(text: str, filename: str, include_dirs: Sequence[str] = (),
                    defines: Mapping[str, str] | None = None) -> str:
    """Preprocess P4 source given as text; filename names it in markers, errors and "" includes."""
    pp = _Preprocessor(include_dirs, defines)
    pp.run_file(filename, text=text)
    return "\n".join(pp.out) + "\n"


def preprocess(path: str, include_dirs: Sequence[str] = (), defines: Mapping[str, str] | None = None) -> str:
    """Preprocess the P4 file at path (see the module docstring for the output format)."""
    pp = _Preprocessor(include_dirs, defines)
    pp.run_file(str(path))
    return "\n".join(pp.out) + "\n"
