"""Tokenizer for preprocessed P4-16 source.

P4's grammar is only unambiguous when the lexer knows which identifiers name types (as in
the spec's grammar, where the lexer returns TYPE_IDENTIFIER). So after splitting the text we
run two passes over the tokens:
  1. classify identifiers as TYPE_IDENT when they name a type declared in the program or a
     type parameter in scope;
  2. mark `<` / `>` that bracket type arguments (TLT/TGT) and merge adjacent `> >` outside
     them into a right shift (SHR), since `bit<8>>` must not lex as a shift.
Tokens carry an index into `locations` (in start_pos) so the parser can report file:line:col.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lark import Token

from p4compiler.errors import P4Error
from p4compiler.frontend.ast import Loc

KEYWORDS = {
    "abstract": "ABSTRACT", "action": "ACTION", "actions": "ACTIONS", "apply": "APPLY",
    "bool": "BOOL", "bit": "BIT", "break": "BREAK", "const": "CONST", "continue": "CONTINUE",
    "control": "CONTROL", "default": "DEFAULT", "for": "FOR",
    "else": "ELSE", "entries": "ENTRIES", "enum": "ENUM", "error": "ERROR", "exit": "EXIT",
    "extern": "EXTERN", "false": "FALSE", "header": "HEADER", "header_union": "HEADER_UNION",
    "if": "IF", "in": "IN", "inout": "INOUT", "int": "INT", "key": "KEY", "match_kind": "MATCH_KIND",
    "out": "OUT", "parser": "PARSER", "package": "PACKAGE", "return": "RETURN", "select": "SELECT",
    "state": "STATE", "string": "STRING", "struct": "STRUCT", "switch": "SWITCH", "table": "TABLE",
    "this": "THIS", "transition": "TRANSITION", "true": "TRUE", "tuple": "TUPLE", "typedef": "TYPEDEF",
    "type": "TYPE", "value_set": "VALUESET", "varbit": "VARBIT", "void": "VOID", "priority": "PRIORITY",
    "list": "LIST",
}

# longest first
PUNCT = [
    ("&&&", "MASK"), ("|+|", "SATADD"), ("|-|", "SATSUB"),
    ("..", "RANGE"), ("<=", "LE"), (">=", "GE"), ("==", "EQ"), ("!=", "NE"), ("&&", "ANDAND"),
    ("||", "OROR"), ("++", "PP"), ("<<", "SHL"),
    ("(", "_LPAR"), (")", "_RPAR"), ("{", "_LBRACE"), ("}", "_RBRACE"), ("[", "_LSQB"), ("]", "_RSQB"),
    (";", "_SEMI"), (":", "_COLON"), (",", "_COMMA"), (".", "DOT"), ("=", "_ASSIGN"), ("?", "_QMARK"),
    ("<", "LT"), (">", "GT"), ("+", "PLUS"), ("-", "MINUS"), ("*", "STAR"), ("/", "SLASH"),
    ("%", "PERCENT"), ("&", "AMP"), ("|", "PIPE"), ("^", "CARET"), ("~", "TILDE"), ("!", "BANG"),
]
_PUNCT_RE = "|".join(re.escape(p) for p, _ in PUNCT)
_PUNCT_TYPES = dict(PUNCT)

_INT_BODY = r"(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9][0-9_]*)"
_TOKEN_RE = re.compile(
    r"(?P<ws>[ \t\r\f\v]+)"
    r"|(?P<nl>\n)"
    r"|(?P<linemark>^[ \t]*\#[^\n]*)"
    r"|(?P<comment>//[^\n]*|/\*(?:.|\n)*?\*/)"
    r"|(?P<annotation>@[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<int>(?P<width>[0-9]+)(?P<ws_kind>[ws])(?P<wbody>" + _INT_BODY + r")|" + _INT_BODY + r")"
    r"|(?P<string>\"(?:\\.|[^\"\\\n])*\")"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<punct>" + _PUNCT_RE + r")",
    re.MULTILINE,
)

_LINEMARK = re.compile(r'[ \t]*\#[ \t]*(?:line[ \t]+)?(\d+)(?:[ \t]+"([^"]*)")?')

TYPE_START = {"TYPE_IDENT", "BIT", "INT", "VARBIT", "BOOL", "TUPLE", "ERROR", "VOID", "STRING", "DONTCARE",
              "MATCH_KIND", "LIST"}


@dataclass
class IntValue:
    """Value of an integer literal token: `8w5` -> IntValue(5, 8, False)."""

    value: int
    width: int | None
    signed: bool


def parse_int_body(text: str) -> int:
    t = text.replace("_", "")
    if len(t) > 1 and t[0] == "0" and t[1] in "xXbBoOdD":
        base = {"x": 16, "b": 2, "o": 8, "d": 10}[t[1].lower()]
        return int(t[2:], base)
    return int(t, 10)


class TokenStream:
    def __init__(self, tokens: list[Token], locations: list[Loc]):
        self.tokens = tokens
        self.locations = locations

    def loc(self, tok: Token) -> Loc:
        return self.locations[tok.start_pos]


def tokenize(text: str, filename: str) -> TokenStream:
    tokens: list[Token] = []
    locations: list[Loc] = []
    file = filename
    line = 1
    line_start = 0
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise P4Error(f"unexpected character {text[pos]!r}", file, line, pos - line_start + 1)
        kind = m.lastgroup
        start = pos
        pos = m.end()
        col = start - line_start + 1
        if kind == "ws":
            continue
        if kind == "nl":
            line += 1
            line_start = pos
            continue
        if kind == "comment":
            nls = m.group().count("\n")
            if nls:
                line += nls
                line_start = start + m.group().rfind("\n") + 1
            continue
        # linemark groups are nested inside the alternation; find which matched
        if m.group("linemark") is not None:
            lm = _LINEMARK.match(m.group())
            if lm:  # `# N "file"`: the next line is line N of file
                line = int(lm.group(1)) - 1  # the newline that ends this marker adds one
                if lm.group(2) is not None:
                    file = lm.group(2)
            continue  # other directives (#pragma) are ignored
        loc = Loc(file, line, col)
        if m.group("annotation") is not None:
            name = m.group()[1:]
            body, pos, line, line_start = _annotation_body(text, pos, name, file, line, line_start)
            tok = Token("ANNOTATION", (name, body), len(locations), loc.line, loc.col)
        elif m.group("int") is not None:
            if m.group("width") is not None:
                width = int(m.group("width"))
                signed = m.group("ws_kind") == "s"
                value = IntValue(parse_int_body(m.group("wbody")), width, signed)
            else:
                value = IntValue(parse_int_body(m.group()), None, False)
            tok = Token("INTEGER", value, len(locations), loc.line, loc.col)
        elif m.group("string") is not None:
            tok = Token("STRING_LITERAL", m.group()[1:-1], len(locations), loc.line, loc.col)
        elif m.group("ident") is not None:
            word = m.group()
            if word == "_":
                ttype = "DONTCARE"
            else:
                ttype = KEYWORDS.get(word, "IDENT")
            tok = Token(ttype, word, len(locations), loc.line, loc.col)
        else:
            p = m.group()
            tok = Token(_PUNCT_TYPES[p], p, len(locations), loc.line, loc.col)
        tokens.append(tok)
        locations.append(loc)
    stream = TokenStream(tokens, locations)
    _classify_type_names(stream)
    _mark_angles(stream)
    return stream


def _annotation_body(text: str, pos: int, name: str, file: str, line: int, line_start: int):
    """Raw text of an annotation's (...) body, or to the end of the line for @pragma."""
    if name == "pragma":
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        return text[pos:end].strip(), end, line, line_start
    p = pos
    while p < len(text) and text[p] in " \t":
        p += 1
    if p >= len(text) or text[p] not in "([":
        return "", pos, line, line_start
    open_ch = text[p]
    close_ch = ")" if open_ch == "(" else "]"
    depth = 0
    i = p
    in_str = False
    while i < len(text):
        c = text[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                body = text[p + 1 : i]
                nls = text.count("\n", pos, i)
                if nls:
                    line += nls
                    line_start = text.rfind("\n", pos, i) + 1
                return body, i + 1, line, line_start
        i += 1
    raise P4Error(f"unterminated annotation @{name}", file, line, pos - line_start + 1)


def _classify_type_names(stream: TokenStream) -> None:
    toks = stream.tokens
    n = len(toks)
    global_types: set[str] = set()

    def next_sig(i: int, ttype: str) -> int:
        while i < n and toks[i].type != ttype:
            i += 1
        return i

    # pass 1: names declared as types anywhere at top level or in blocks
    for i, t in enumerate(toks):
        tt = t.type
        if tt in ("HEADER", "STRUCT", "HEADER_UNION", "PARSER", "CONTROL", "PACKAGE"):
            j = i + 1
            if j < n and toks[j].type == "IDENT":
                global_types.add(toks[j].value)
        elif tt == "EXTERN":
            j = i + 1
            if j + 1 < n and toks[j].type == "IDENT" and toks[j + 1].type in ("LT", "_LBRACE"):
                global_types.add(toks[j].value)
        elif tt == "ENUM":
            j = next_sig(i, "_LBRACE")
            if j < n and toks[j - 1].type == "IDENT":
                global_types.add(toks[j - 1].value)
        elif tt in ("TYPEDEF", "TYPE"):
            j = next_sig(i, "_SEMI")
            if j < n and toks[j - 1].type == "IDENT":
                global_types.add(toks[j - 1].value)

    # pass 2: classify, with type parameters scoped to their declaration
    scoped: dict[str, int] = {}
    scopes: list[tuple[int, list[str]]] = []  # (brace depth at declaration, names)
    depth = 0

    def close_scopes(at_depth: int) -> None:
        while scopes and scopes[-1][0] == at_depth:
            _, names = scopes.pop()
            for nm in names:
                scoped[nm] -= 1

    i = 0
    while i < n:
        t = toks[i]
        tt = t.type
        if tt == "_LBRACE":
            depth += 1
        elif tt == "_RBRACE":
            depth -= 1
            if scopes and scopes[-1][0] == depth:  # the generic declaration's body ends
                close_scopes(depth)
        elif tt == "_SEMI":
            if scopes and scopes[-1][0] == depth:
                close_scopes(depth)
        elif tt == "IDENT":
            if t.value in global_types or scoped.get(t.value, 0) > 0:
                t.type = "TYPE_IDENT"
            # a declaration with type parameters: NAME < A, B > ( or {
            if i + 1 < n and toks[i + 1].type == "LT":
                # In a declaration (after `parser`, `extern`, a return type...) type parameters
                # may shadow global types (`parser Parser<H, M>` in a program with `header H`);
                # elsewhere `f<H>(...)` is a call with type arguments.
                decl = i > 0 and toks[i - 1].type in _DECL_BEFORE_NAME
                params = _type_param_list(toks, i + 1, global_types, scoped, decl)
                if params is not None:
                    names, end = params
                    for nm in names:
                        scoped[nm] = scoped.get(nm, 0) + 1
                    scopes.append((depth, names))
                    # a return type written before the name is a type too: `T f<T>(...)`, also
                    # `Pair<A, B> mk<A, B>(...)` or `tuple<T, T> f<T>(...)`: back to where the
                    # declaration starts (after the previous `;`, `{` or `}`)
                    k = i - 1
                    while k >= 0 and toks[k].type not in ("_SEMI", "_LBRACE", "_RBRACE"):
                        if toks[k].type == "IDENT" and toks[k].value in names:
                            toks[k].type = "TYPE_IDENT"
                        k -= 1
                    for k in range(i + 2, end):
                        if toks[k].type == "IDENT":
                            toks[k].type = "TYPE_IDENT"
                    i = end
                    continue
        i += 1


# Tokens that can precede the name of a generic declaration: a declaration keyword or a return type.
_DECL_BEFORE_NAME = {"PARSER", "CONTROL", "PACKAGE", "EXTERN", "STRUCT", "HEADER", "HEADER_UNION",
                     "TYPE_IDENT", "IDENT", "VOID", "BOOL", "GT", "ERROR", "STRING", "MATCH_KIND"}


def _type_param_list(toks: list[Token], lt: int, global_types: set[str], scoped: dict[str, int],
                     decl: bool = False):
    """If toks[lt] starts `< A, B, ... >` followed by `(` or `{`, with A, B... not already
    types (unless `decl`: a declaration may shadow them), return (names, index after `>`)."""
    names: list[str] = []
    j = lt + 1
    n = len(toks)
    while j < n:
        t = toks[j]
        if t.type not in ("IDENT", "TYPE_IDENT"):
            return None
        if not decl and (t.value in global_types or scoped.get(t.value, 0) > 0):
            return None
        names.append(t.value)
        j += 1
        if j < n and toks[j].type == "_COMMA":
            j += 1
            continue
        break
    if j < n and toks[j].type == "GT" and j + 1 < n and toks[j + 1].type in ("_LPAR", "_LBRACE"):
        return names, j
    return None


def _mark_angles(stream: TokenStream) -> None:
    toks = stream.tokens
    n = len(toks)
    open_stack: list[int] = []  # paren depth at each open type-argument `<`
    paren = 0
    out: list[Token] = []
    locs = stream.locations
    i = 0
    while i < n:
        t = toks[i]
        tt = t.type
        if tt in ("_LPAR", "_LSQB"):
            paren += 1
        elif tt in ("_RPAR", "_RSQB"):
            paren -= 1
        elif tt == "LT":
            prev = toks[i - 1].type if i > 0 else ""
            nxt = toks[i + 1].type if i + 1 < n else ""
            if prev in ("BIT", "INT", "VARBIT", "TUPLE", "TYPE_IDENT", "VALUESET", "LIST") or (
                prev == "IDENT" and nxt in TYPE_START
            ):
                t.type = "TLT"
                open_stack.append(paren)
        elif tt == "GT":
            if open_stack and open_stack[-1] == paren:
                t.type = "TGT"
                open_stack.pop()
            elif i + 1 < n and toks[i + 1].type == "GT" and _adjacent(locs, t, toks[i + 1]):
                merged = Token("SHR", ">>", t.start_pos, t.line, t.column)
                out.append(merged)
                i += 2
                continue
            elif i + 1 < n and toks[i + 1].type == "GE" and _adjacent(locs, t, toks[i + 1]):
                # `>>=` came out as `>` `>=`: a compound shift assignment (P4-16 v1.2.4)
                out.append(Token("SHR", ">>", t.start_pos, t.line, t.column))
                nxt = toks[i + 1]
                out.append(Token("_ASSIGN", "=", nxt.start_pos, nxt.line, nxt.column))
                i += 2
                continue
        out.append(t)
        i += 1
    stream.tokens = out


def _adjacent(locs: list[Loc], a: Token, b: Token) -> bool:
    la, lb = locs[a.start_pos], locs[b.start_pos]
    return la.file == lb.file and la.line == lb.line and lb.col == la.col + 1
