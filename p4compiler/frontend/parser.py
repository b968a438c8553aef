"""P4-16 parser: preprocessed text -> tokens (lexer.py) -> lark LALR(1) -> syntax tree (ast.py)."""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput, UnexpectedToken, VisitError
from lark.lexer import Lexer

from p4compiler.cache import cache_root
from p4compiler.errors import P4Error
from p4compiler.frontend import ast as A
from p4compiler.frontend.lexer import TokenStream, tokenize

GRAMMAR_PATH = Path(__file__).with_name("p4.lark")


class _PassThroughLexer(Lexer):
    """The token list is built by lexer.py; lark only parses it."""

    def __init__(self, lexer_conf: Any) -> None:
        pass

    def lex(self, data: Any, *args: Any) -> Any:  # data is a list of Tokens
        yield from data


def _has_call(node: Any) -> bool:
    """Whether an expression contains a call anywhere (its evaluation has side effects)."""
    if isinstance(node, A.Call):
        return True
    if isinstance(node, A.Node):
        return any(_has_call(getattr(node, f)) for f in node.__dataclass_fields__ if f != "loc")
    if isinstance(node, (list, tuple)):
        return any(_has_call(x) for x in node)
    return False


def _lark_cache_path() -> str:
    """Where lark keeps the grammar's LALR tables between processes: building them costs ~1.5 s
    per process (every launcher, CLI and test process that parses P4), loading them ~0.1 s.
    lark checks the file against a hash of the grammar, its options and its own version, and
    rebuilds (and rewrites) it when they differ or the file cannot be read."""
    folder = str(cache_root())
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        folder = tempfile.gettempdir()
    return os.path.join(folder, "p4-grammar.lark-cache")


@functools.lru_cache(maxsize=1)
def _lark() -> Lark:
    return Lark(GRAMMAR_PATH.read_text(), parser="lalr", lexer=_PassThroughLexer, maybe_placeholders=False,
                cache=_lark_cache_path())  # fmt: skip


def parse_text(text: str, filename: str = "<input>") -> A.Program:
    """Parse already-preprocessed P4-16 text."""
    stream = tokenize(text, filename)
    try:
        tree = _lark().parse(stream.tokens)
    except UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            last = stream.locations[-1] if stream.locations else A.Loc(filename, 1, 1)
            raise P4Error("unexpected end of input", last.file, last.line, last.col) from None
        loc = stream.locations[tok.start_pos]
        expected = sorted(_pretty(x) for x in e.expected)[:8]
        raise P4Error(
            f"syntax error at {tok.value!r}; expected one of: {', '.join(expected)}",
            loc.file, loc.line, loc.col,
        ) from None
    except UnexpectedInput as e:
        raise P4Error(f"syntax error: {e}", filename) from None
    try:
        return _ToAst(stream).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, P4Error):
            raise e.orig_exc from None
        raise


def parse_file(path: str, include_dirs: Sequence[str] = (),
               defines: Mapping[str, str] | None = None) -> A.Program:
    """Preprocess and parse a P4-16 source file."""
    from p4compiler.preprocess import preprocess

    return parse_text(preprocess(path, include_dirs, defines), path)


def parse_source(
    text: str, filename: str, include_dirs: Sequence[str] = (), defines: Mapping[str, str] | None = None
) -> A.Program:
    """Preprocess and parse P4-16 source given as text."""
    from p4compiler.preprocess import preprocess_text

    return parse_text(preprocess_text(text, filename, include_dirs, defines), filename)


_PRETTY = {
    "_LPAR": "'('", "_RPAR": "')'", "_LBRACE": "'{'", "_RBRACE": "'}'", "_LSQB": "'['", "_RSQB": "']'",
    "_SEMI": "';'", "_COLON": "':'", "_COMMA": "','", "_ASSIGN": "'='", "_QMARK": "'?'", "TLT": "'<'",
    "TGT": "'>'", "IDENT": "identifier", "TYPE_IDENT": "type name", "INTEGER": "integer",
}


def _pretty(term: str) -> str:
    return _PRETTY.get(term, term.lower())


class TParams(list):
    """Type parameters of a declaration (distinguishes them from a parameter list)."""


def _split(children: list, kind: str = "ANNOTATION"):
    """Separate leading ANNOTATION tokens from the other children."""
    anns = []
    rest = []
    for c in children:
        if isinstance(c, Token) and c.type == kind:
            anns.append(c)
        else:
            rest.append(c)
    return anns, rest


def _tokens(children: list, *types: str) -> list[Token]:
    return [c for c in children if isinstance(c, Token) and c.type in types]


class _ToAst(Transformer):
    def __init__(self, stream: TokenStream):
        super().__init__()
        self.s = stream

    # ---- helpers
    def _loc(self, item: Any) -> A.Loc | None:
        if isinstance(item, Token):
            return self.s.locations[item.start_pos]
        if isinstance(item, A.Node):
            return item.loc
        if isinstance(item, list):
            for x in item:
                loc = self._loc(x)
                if loc is not None:
                    return loc
        return None

    def _at(self, node: A.Node, *items: Any) -> A.Node:
        for it in items:
            loc = self._loc(it)
            if loc is not None:
                node.loc = loc
                break
        return node

    def _anns(self, toks: list[Token]) -> list[A.Annotation]:
        return [self._at(A.Annotation(t.value[0], t.value[1]), t) for t in toks]

    def _name(self, x: Any) -> str:
        return str(x)

    # ---- names and types
    def name(self, c):
        return c[0]

    def nontype_name(self, c):
        return c[0]

    def member_name(self, c):
        return c[0]

    def type_name(self, c):
        if len(c) == 2:
            return self._at(A.NamedTypeRef("." + str(c[1])), c[0])
        return self._at(A.NamedTypeRef(str(c[0])), c[0])

    def named_type(self, c):
        return c[0]

    def type_ref(self, c):
        return c[0]

    def specialized_type(self, c):
        base, args = c[0], c[2]
        return self._at(A.NamedTypeRef(base.name, args), base)

    def stack_type(self, c):
        return self._at(A.StackTypeRef(c[0], c[1]), c[0])

    def tuple_type(self, c):
        return self._at(A.TupleTypeRef(c[2]), c[0])

    def bool_type(self, c):
        return self._at(A.BoolTypeRef(), c[0])

    def error_type(self, c):
        return self._at(A.ErrorTypeRef(), c[0])

    def match_kind_type(self, c):
        return self._at(A.MatchKindTypeRef(), c[0])

    def string_type(self, c):
        return self._at(A.StringTypeRef(), c[0])

    def int_type(self, c):
        return self._at(A.IntTypeRef(), c[0])

    def bit_type_plain(self, c):
        return self._at(A.BitTypeRef(A.IntLit(1)), c[0])

    def bit_type(self, c):
        return self._at(A.BitTypeRef(c[2]), c[0])

    def int_w_type(self, c):
        return self._at(A.BitTypeRef(c[2], signed=True), c[0])

    def varbit_type(self, c):
        return self._at(A.VarbitTypeRef(c[2]), c[0])

    def width_int(self, c):
        v = c[0].value
        return self._at(A.IntLit(v.value, v.width, v.signed), c[0])

    def width(self, c):
        return c[0]

    def type_args(self, c):
        return list(c)

    def void_type(self, c):
        return self._at(A.VoidTypeRef(), c[0])

    def dontcare_type(self, c):
        return self._at(A.DontCareTypeRef(), c[0])

    def type_or_void(self, c):
        return c[0]

    def type_params(self, c):
        return TParams(str(t) for t in c if isinstance(t, Token) and t.type == "TYPE_IDENT")

    # ---- parameters
    def params(self, c):
        return [p for p in c if p is not None]

    def direction(self, c):
        return str(c[0]) if c else ""

    def param(self, c):
        anns, rest = _split(c)
        direction, type_, name = rest[0], rest[1], rest[2]
        default = rest[3] if len(rest) > 3 else None
        return self._at(A.Param(direction, type_, str(name), default, self._anns(anns)), type_, name)

    def ctor_params(self, c):
        return c[0]

    # ---- declarations
    def empty_decl(self, c):
        return None

    def start(self, c):
        return A.Program([d for d in c if d is not None])

    def const_decl(self, c):
        anns, rest = _split(c)
        return self._at(A.ConstDecl(rest[1], str(rest[2]), rest[3], self._anns(anns)), rest[0])

    def instantiation(self, c):
        anns, rest = _split(c)
        return self._at(A.Instance(rest[0], rest[1], str(rest[2]), self._anns(anns)), rest[0])

    def var_decl(self, c):
        anns, rest = _split(c)
        init = rest[2] if len(rest) > 2 else None
        return self._at(A.VarDecl(rest[0], str(rest[1]), init, self._anns(anns)), rest[0], rest[1])

    def _fields_decl(self, cls, c):
        anns, rest = _split(c)
        kw, name = rest[0], rest[1]
        tparams: list[str] = []
        fields = []
        for x in rest[2:]:
            if isinstance(x, TParams):
                tparams = list(x)
            else:
                fields.append(x)
        node = cls(str(name), fields, self._anns(anns), tparams)
        return self._at(node, kw)

    def header_decl(self, c):
        return self._fields_decl(A.HeaderDecl, c)

    def header_union_decl(self, c):
        return self._fields_decl(A.HeaderUnionDecl, c)

    def struct_decl(self, c):
        return self._fields_decl(A.StructDecl, c)

    def struct_field(self, c):
        anns, rest = _split(c)
        return self._at(A.StructField(rest[0], str(rest[1]), self._anns(anns)), rest[0], rest[1])

    def name_list(self, c):
        return [str(x) for x in c]

    def enum_decl(self, c):
        anns, rest = _split(c)
        return self._at(A.EnumDecl(str(rest[1]), rest[2], annotations=self._anns(anns)), rest[0])

    def ser_enum_decl(self, c):
        anns, rest = _split(c)
        members = rest[3]
        return self._at(
            A.EnumDecl(str(rest[2]), [m for m, _ in members], rest[1], [v for _, v in members],
                       self._anns(anns)),
            rest[0],
        )

    def spec_members(self, c):
        return list(c)

    def spec_member(self, c):
        return (str(c[0]), c[1])

    def typedef_decl(self, c):
        anns, rest = _split(c)
        return self._at(A.TypedefDecl(rest[1], str(rest[2]), False, self._anns(anns)), rest[0])

    def newtype_decl(self, c):
        anns, rest = _split(c)
        return self._at(A.TypedefDecl(rest[1], str(rest[2]), True, self._anns(anns)), rest[0])

    def error_decl(self, c):
        return self._at(A.ErrorDecl(c[1]), c[0])

    def match_kind_decl(self, c):
        return self._at(A.MatchKindDecl(c[1]), c[0])

    def function_proto(self, c):
        ret, name = c[0], c[1]
        tparams: list[str] = []
        params = []
        for x in c[2:]:
            if isinstance(x, TParams):
                tparams = list(x)
            else:
                params = x
        return self._at(A.MethodDecl(str(name), ret, tparams, params), ret, name)

    def method_proto(self, c):
        anns, rest = _split(c)
        m = rest[0]
        m.annotations = self._anns(anns)
        return m

    def abstract_method(self, c):
        anns, rest = _split(c)
        m = rest[1]
        m.annotations = self._anns(anns)
        m.abstract = True
        return m

    def constructor_proto(self, c):
        anns, rest = _split(c)
        return self._at(A.MethodDecl(str(rest[0]), None, [], rest[1], self._anns(anns)), rest[0])

    def extern_decl(self, c):
        anns, rest = _split(c)
        name = rest[1]
        tparams: list[str] = []
        methods = []
        for x in rest[2:]:
            if isinstance(x, TParams):
                tparams = list(x)
            else:
                methods.append(x)
        return self._at(A.ExternDecl(str(name), tparams, methods, self._anns(anns)), rest[0])

    def extern_function_decl(self, c):
        anns, rest = _split(c)
        proto = rest[1]
        proto.annotations = self._anns(anns)
        return self._at(A.ExternFunctionDecl(proto), rest[0])

    def function_decl(self, c):
        anns, rest = _split(c)
        proto = rest[0]
        proto.annotations = self._anns(anns)
        return self._at(A.FunctionDecl(proto, rest[1]), proto)

    def _typedecl(self, cls, c):
        anns, rest = _split(c)
        name, tparams, params, _, _ = self._split_header(rest)
        return self._at(cls(str(name), tparams, params, self._anns(anns)), rest[0])

    def parser_type_decl(self, c):
        return self._typedecl(A.ParserTypeDecl, c)

    def control_type_decl(self, c):
        return self._typedecl(A.ControlTypeDecl, c)

    def package_decl(self, c):
        return self._typedecl(A.PackageDecl, c)

    def value_set_decl(self, c):
        anns, rest = _split(c)
        # VALUESET TLT type TGT size name
        kw = rest[0]
        return self._at(A.ValueSetDecl(rest[2], rest[4], str(rest[5]), self._anns(anns)), kw)

    # ---- parsers
    def _split_header(self, rest: list):
        """NAME, [type_params], params, [ctor_params] from a parser/control header."""
        name = rest[1]
        i = 2
        tparams: list[str] = []
        if isinstance(rest[i], TParams):
            tparams = list(rest[i])
            i += 1
        params = rest[i]
        i += 1
        ctor: list[A.Param] = []
        if i < len(rest) and isinstance(rest[i], list):
            ctor = rest[i]
            i += 1
        return name, tparams, params, ctor, rest[i:]

    def parser_decl(self, c):
        anns, rest = _split(c)
        name, tparams, params, ctor, body = self._split_header(rest)
        locals_ = [x for x in body if not isinstance(x, A.ParserState)]
        states = [x for x in body if isinstance(x, A.ParserState)]
        decl = A.ParserDecl(str(name), tparams, params, ctor, locals_, states, self._anns(anns))
        return self._at(decl, rest[0])

    def parser_state(self, c):
        anns, rest = _split(c)
        name = rest[1]
        stmts = []
        trans = None
        for x in rest[2:]:
            if isinstance(x, tuple) and x and x[0] == "transition":
                trans = x[1]
            else:
                stmts.append(x)
        return self._at(A.ParserState(str(name), stmts, trans, self._anns(anns)), rest[0])

    def transition_name(self, c):
        return ("transition", str(c[1]))

    def transition_select(self, c):
        return ("transition", c[1])

    def select_expr(self, c):
        return self._at(A.SelectExpr(c[1], c[2:]), c[0])

    def select_case(self, c):
        return self._at(A.SelectCase(c[0], str(c[1])), c[0], c[1])

    def tuple_keyset(self, c):
        return self._at(A.TupleKeyset(list(c)), c[0])

    def mask(self, c):
        return self._at(A.Mask(c[0], c[2]), c[0])

    def range(self, c):
        return self._at(A.RangeExpr(c[0], c[2]), c[0])

    def default_expr(self, c):
        return self._at(A.DefaultExpr(), c[0])

    def dontcare(self, c):
        return self._at(A.DontCare(), c[0])

    # ---- controls
    def control_decl(self, c):
        anns, rest = _split(c)
        apply_idx = next(i for i, x in enumerate(rest)
                         if isinstance(x, Token) and x.type == "APPLY" and i > 1)
        head = rest[:apply_idx]
        body_block = rest[apply_idx + 1]
        name, tparams, params, ctor, locals_ = self._split_header(head)
        return self._at(
            A.ControlDecl(str(name), tparams, params, ctor, locals_, body_block, self._anns(anns)), rest[0]
        )

    def action_decl(self, c):
        anns, rest = _split(c)
        return self._at(A.ActionDecl(str(rest[1]), rest[2], rest[3], self._anns(anns)), rest[0])

    def table_decl(self, c):
        anns, rest = _split(c)
        return self._at(A.TableDecl(str(rest[1]), rest[2:], self._anns(anns)), rest[0])

    def key_property(self, c):
        anns, rest = _split(c)
        return self._at(A.TableProperty("key", rest[1:], False, self._anns(anns)), rest[0])

    def actions_property(self, c):
        anns, rest = _split(c)
        return self._at(A.TableProperty("actions", rest[1:], False, self._anns(anns)), rest[0])

    def entries_property(self, c):
        anns, rest = _split(c)
        is_const = bool(rest) and isinstance(rest[0], Token) and rest[0].type == "CONST"
        if is_const:
            rest = rest[1:]
        return self._at(A.TableProperty("entries", rest[1:], is_const, self._anns(anns)), rest[0])

    def generic_property(self, c):
        anns, rest = _split(c)
        is_const = isinstance(rest[0], Token) and rest[0].type == "CONST"
        if is_const:
            rest = rest[1:]
        return self._at(A.TableProperty(str(rest[0]), rest[1], is_const, self._anns(anns)), rest[0])

    def key_element(self, c):
        expr, kind = c[0], c[1]
        anns = [x for x in c[2:] if isinstance(x, Token)]
        return self._at(A.KeyElement(expr, str(kind), self._anns(anns)), expr)

    def action_item(self, c):
        anns, rest = _split(c)
        ref = rest[0]
        ref.annotations = self._anns(anns)
        return ref

    def action_ref(self, c):
        name = c[0]
        args = c[1] if len(c) > 1 else []
        return self._at(A.ActionRefExpr(name, args), name)

    def prefixed_name(self, c):
        # keep a Token (a str) so that nodes built from the name get its location
        first = c[0]
        text = "." + str(c[1]) if len(c) == 2 else str(c[0])
        if isinstance(first, Token):
            return Token("IDENT", text, first.start_pos, first.line, first.column)
        return text

    def entry(self, c):
        anns, rest = _split(c)
        is_const = bool(rest) and isinstance(rest[0], Token) and rest[0].type == "CONST"
        if is_const:
            rest = rest[1:]
        prio = None
        if rest and isinstance(rest[0], tuple) and rest[0][0] == "priority":
            prio = rest[0][1]
            rest = rest[1:]
        keyset, action = rest[0], rest[1]
        return self._at(A.EntryDecl(keyset, action, prio, is_const, self._anns(anns)), keyset)

    def entry_priority(self, c):
        return ("priority", c[1])

    # ---- statements
    def block(self, c):
        anns, rest = _split(c)
        stmts = [s for s in rest if s is not None and not isinstance(s, A.EmptyStmt)]
        node = A.Block(stmts, self._anns(anns))
        return self._at(node, anns, rest)

    def assignment(self, c):
        return self._at(A.Assign(c[0], c[1]), c[0])

    def compound_assignment(self, c):
        """`a op= b` is `a = a op b` with `a` evaluated once (P4-16 v1.2.4): the same AST node
        stands on both sides, so an l-value with a call in it (evaluated twice) is refused."""
        lhs, op, rhs = c[0], str(c[1].children[0]), c[2]
        if _has_call(lhs):
            loc = self._loc(lhs) or A.Loc("<input>", 1, 1)
            raise P4Error(f"a compound assignment ({op}=) to an l-value that calls something is not "
                          "supported; assign the call's result to a local first", loc.file, loc.line, loc.col)
        return self._at(A.Assign(lhs, self._at(A.Binary(op, lhs, rhs), lhs)), lhs)

    def call_statement(self, c):
        return self._at(A.CallStmt(c[0]), c[0])

    def if_statement(self, c):
        other = c[4] if len(c) > 4 else None
        return self._at(A.If(c[1], c[2], other), c[0])

    def exit_stmt(self, c):
        return self._at(A.Exit(), c[0])

    def return_stmt(self, c):
        return self._at(A.Return(c[1] if len(c) > 1 else None), c[0])

    def empty_stmt(self, c):
        return A.EmptyStmt()

    def break_stmt(self, c):
        return self._at(A.Break(), c[0])

    def continue_stmt(self, c):
        return self._at(A.Continue(), c[0])

    def for_stmt(self, c):
        anns, rest = _split(c)
        kw, init, cond, update, body = rest
        return self._at(A.For(init, cond, update, body, self._anns(anns)), kw)

    def for_in_stmt(self, c):
        at = next(i for i, x in enumerate(c) if isinstance(x, Token) and x.type == "FOR")
        var_anns, rest = _split(c[at + 1:])
        type_, name, coll = rest[0], rest[1], rest[3]
        if len(rest) == 7:  # lo RANGE hi
            coll = self._at(A.RangeExpr(rest[3], rest[5]), rest[3])
        node = A.ForIn(type_, str(name), coll, rest[-1], self._anns(c[:at]), self._anns(var_anns))
        return self._at(node, c[at])

    def for_inits(self, c):
        return list(c)

    def for_updates(self, c):
        return list(c)

    def for_var(self, c):
        anns, rest = _split(c)
        init = rest[2] if len(rest) > 2 else None
        return self._at(A.VarDecl(rest[0], str(rest[1]), init, self._anns(anns)), rest[0], rest[1])

    def for_assign(self, c):
        return self.assignment(c)

    def for_compound(self, c):
        return self.compound_assignment(c)

    def for_call(self, c):
        if not isinstance(c[0], A.Call):
            loc = self._loc(c[0]) or A.Loc("<input>", 1, 1)
            raise P4Error("a for loop's initializations and updates must be assignments, method calls "
                          "or (initializations) variable declarations", loc.file, loc.line, loc.col)
        return self.call_statement(c)

    def switch_statement(self, c):
        return self._at(A.Switch(c[1], c[2:]), c[0])

    def switch_case(self, c):
        return self._at(A.SwitchCase(c[0], c[1]), c[0])

    def switch_fallthrough(self, c):
        return self._at(A.SwitchCase(c[0], None), c[0])

    # ---- expressions
    def expr_list(self, c):
        return [x for x in c if x is not None]

    def ternary_expr(self, c):
        return self._at(A.Ternary(c[0], c[1], c[2]), c[0])

    def binop(self, c):
        return self._at(A.Binary(str(c[1]), c[0], c[2]), c[0])

    def unop(self, c):
        return self._at(A.Unary(str(c[0]), c[1]), c[0])

    def cast(self, c):
        return self._at(A.Cast(c[0], c[1]), c[0])

    def member(self, c):
        return self._at(A.Member(c[0], str(c[2])), c[0])

    def index(self, c):
        return self._at(A.Index(c[0], c[1]), c[0])

    def slice(self, c):
        return self._at(A.Slice(c[0], c[1], c[2]), c[0])

    def call(self, c):
        return self._at(A.Call(c[0], [], c[1]), c[0])

    def call_targs(self, c):
        return self._at(A.Call(c[0], c[2], c[4]), c[0])

    def int_lit(self, c):
        v = c[0].value
        return self._at(A.IntLit(v.value, v.width, v.signed), c[0])

    def true_lit(self, c):
        return self._at(A.BoolLit(True), c[0])

    def false_lit(self, c):
        return self._at(A.BoolLit(False), c[0])

    def string_lit(self, c):
        return self._at(A.StringLit(str(c[0])), c[0])

    def this_expr(self, c):
        return self._at(A.NameExpr("this"), c[0])

    def name_expr(self, c):
        return self._at(A.NameExpr(str(c[0])), c[0])

    def dot_name_expr(self, c):
        return self._at(A.NameExpr("." + str(c[1])), c[0])

    def list_expr(self, c):
        return self._at(A.ListExpr(c[0]), c[0])

    def struct_expr(self, c):
        return self._at(A.StructExpr(c[0]), c[0][0][1] if c[0] else None)

    def kv_list(self, c):
        return list(c)

    def kv(self, c):
        return (str(c[0]), c[1])

    def error_member(self, c):
        return self._at(A.TypeMember(A.ErrorTypeRef(), str(c[2])), c[0])

    def type_member(self, c):
        return self._at(A.TypeMember(c[0], str(c[2])), c[0])

    def construct(self, c):
        return self._at(A.Construct(c[0], c[1]), c[0])

    def args(self, c):
        return [a for a in c if a is not None]

    def pos_arg(self, c):
        return self._at(A.Arg(c[0]), c[0])

    def named_arg(self, c):
        return self._at(A.Arg(c[1], str(c[0])), c[0])

    def dontcare_arg(self, c):
        return self._at(A.Arg(None), c[0])

    def named_dontcare_arg(self, c):
        return self._at(A.Arg(None, str(c[0])), c[0])

