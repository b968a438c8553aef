"""Syntax tree of a P4-16 program, as the parser builds it.

Plain dataclasses: the compiler walks them once and produces closures; nothing walks them
per packet. Every node keeps its source location for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Loc:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass
class Node:
    loc: Loc | None = field(default=None, kw_only=True, repr=False, compare=False)


@dataclass
class Annotation(Node):
    name: str
    body: str  # raw text between the parentheses ("" when there are none)

    def string_arg(self) -> str:
        """The body as a single string literal, e.g. @name("x") -> x."""
        b = self.body.strip()
        if len(b) >= 2 and b[0] == '"' and b[-1] == '"':
            return b[1:-1]
        return b

    def source(self) -> str:
        return f"@{self.name}({self.body})" if self.body else f"@{self.name}"


def find_annotation(annotations: list[Annotation], name: str) -> Annotation | None:
    for a in annotations:
        if a.name == name:
            return a
    return None


# ---------------------------------------------------------------- types (syntax)
class TypeRef(Node):
    pass


@dataclass
class BitTypeRef(TypeRef):
    width: Expr  # an expression that must be a compile-time constant
    signed: bool = False


@dataclass
class VarbitTypeRef(TypeRef):
    width: Expr


@dataclass
class IntTypeRef(TypeRef):  # infinite-precision `int`
    pass


@dataclass
class BoolTypeRef(TypeRef):
    pass


@dataclass
class ErrorTypeRef(TypeRef):
    pass


@dataclass
class MatchKindTypeRef(TypeRef):
    pass


@dataclass
class StringTypeRef(TypeRef):
    pass


@dataclass
class VoidTypeRef(TypeRef):
    pass


@dataclass
class DontCareTypeRef(TypeRef):
    pass


@dataclass
class NamedTypeRef(TypeRef):
    name: str
    args: list[TypeRef] = field(default_factory=list)


@dataclass
class StackTypeRef(TypeRef):
    element: TypeRef
    size: Expr


@dataclass
class TupleTypeRef(TypeRef):
    elements: list[TypeRef]


# ---------------------------------------------------------------- expressions
class Expr(Node):
    pass


@dataclass
class IntLit(Expr):
    value: int
    width: int | None = None  # None: infinite-precision int
    signed: bool = False


@dataclass
class BoolLit(Expr):
    value: bool


@dataclass
class StringLit(Expr):
    value: str


@dataclass
class NameExpr(Expr):
    name: str  # a leading "." means top-level scope


@dataclass
class TypeMember(Expr):
    """`T.m` where T parsed as a type name: enum member, error member, or (when T turns
    out to be a value in scope) an ordinary member access."""

    type: TypeRef
    member: str


@dataclass
class Member(Expr):
    expr: Expr
    member: str


@dataclass
class Index(Expr):
    expr: Expr
    index: Expr


@dataclass
class Slice(Expr):
    expr: Expr
    hi: Expr
    lo: Expr


@dataclass
class Arg(Node):
    value: Expr | None  # None = don't care `_`
    name: str | None = None


@dataclass
class Call(Expr):
    callee: Expr
    type_args: list[TypeRef]
    args: list[Arg]


@dataclass
class Construct(Expr):
    """`T(args)`: instantiation of an extern, parser, control or package."""

    type: TypeRef
    args: list[Arg]


@dataclass
class Unary(Expr):
    op: str  # "-", "~", "!", "+"
    expr: Expr


@dataclass
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass
class Cast(Expr):
    type: TypeRef
    expr: Expr


@dataclass
class ListExpr(Expr):
    items: list[Expr]


@dataclass
class StructExpr(Expr):
    fields: list[tuple[str, Expr]]


@dataclass
class Mask(Expr):  # keyset `value &&& mask`
    value: Expr
    mask: Expr


@dataclass
class RangeExpr(Expr):  # keyset `lo .. hi`
    lo: Expr
    hi: Expr


@dataclass
class DefaultExpr(Expr):  # `default`
    pass


@dataclass
class DontCare(Expr):  # `_`
    pass


@dataclass
class TupleKeyset(Expr):
    items: list[Expr]


# ---------------------------------------------------------------- statements
class Stmt(Node):
    pass


@dataclass
class Assign(Stmt):
    lhs: Expr
    rhs: Expr


@dataclass
class CallStmt(Stmt):
    call: Expr


@dataclass
class If(Stmt):
    cond: Expr
    then: Stmt
    other: Stmt | None


@dataclass
class Block(Stmt):
    stmts: list[Stmt]
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class Exit(Stmt):
    pass


@dataclass
class Return(Stmt):
    value: Expr | None


@dataclass
class SwitchCase(Node):
    label: Expr  # NameExpr (action), DefaultExpr, or a constant expression
    body: Block | None  # None: falls through to the next case


@dataclass
class Switch(Stmt):
    expr: Expr
    cases: list[SwitchCase]


@dataclass
class EmptyStmt(Stmt):
    pass


@dataclass
class For(Stmt):
    """`for (init; cond; update) body` (P4-16 v1.2.5, "For statement"): `init` runs once, `cond`
    is tested before each iteration, `update` runs after the body (and after `continue`)."""

    init: list[Stmt]  # VarDecl, Assign or CallStmt; declarations are local to the loop
    cond: Expr
    update: list[Stmt]  # Assign or CallStmt
    body: Stmt
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class ForIn(Stmt):
    """`for (T name in collection) body`: the body runs once per value of a range `lo .. hi`
    (a RangeExpr, both ends included) or per element of a header stack or list expression; the
    collection is evaluated once, before the first iteration."""

    type: TypeRef
    name: str
    collection: Expr
    body: Stmt
    annotations: list[Annotation] = field(default_factory=list)
    var_annotations: list[Annotation] = field(default_factory=list)


@dataclass
class Break(Stmt):
    pass


@dataclass
class Continue(Stmt):
    pass


# ---------------------------------------------------------------- declarations
class Decl(Node):
    pass


@dataclass
class Param(Node):
    direction: str  # "in" | "out" | "inout" | "" (directionless)
    type: TypeRef
    name: str
    default: Expr | None = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class VarDecl(Decl, Stmt):
    type: TypeRef
    name: str
    init: Expr | None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class ConstDecl(Decl, Stmt):
    type: TypeRef
    name: str
    value: Expr
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class Instance(Decl):
    type: TypeRef
    args: list[Arg]
    name: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class StructField(Node):
    type: TypeRef
    name: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class HeaderDecl(Decl):
    name: str
    fields: list[StructField]
    annotations: list[Annotation] = field(default_factory=list)
    type_params: list[str] = field(default_factory=list)


@dataclass
class HeaderUnionDecl(Decl):
    name: str
    fields: list[StructField]
    annotations: list[Annotation] = field(default_factory=list)
    type_params: list[str] = field(default_factory=list)


@dataclass
class StructDecl(Decl):
    name: str
    fields: list[StructField]
    annotations: list[Annotation] = field(default_factory=list)
    type_params: list[str] = field(default_factory=list)


@dataclass
class EnumDecl(Decl):
    name: str
    members: list[str]
    underlying: TypeRef | None = None  # serializable enum
    values: list[Expr] | None = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class ErrorDecl(Decl):
    members: list[str]


@dataclass
class MatchKindDecl(Decl):
    members: list[str]


@dataclass
class TypedefDecl(Decl):
    type: TypeRef
    name: str
    newtype: bool = False  # `type` rather than `typedef`
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class MethodDecl(Node):
    name: str
    return_type: TypeRef | None  # None: constructor
    type_params: list[str]
    params: list[Param]
    annotations: list[Annotation] = field(default_factory=list)
    abstract: bool = False


@dataclass
class ExternDecl(Decl):
    name: str
    type_params: list[str]
    methods: list[MethodDecl]
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class ExternFunctionDecl(Decl):
    proto: MethodDecl


@dataclass
class FunctionDecl(Decl):
    proto: MethodDecl
    body: Block


@dataclass
class ParserTypeDecl(Decl):
    name: str
    type_params: list[str]
    params: list[Param]
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class ControlTypeDecl(Decl):
    name: str
    type_params: list[str]
    params: list[Param]
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class PackageDecl(Decl):
    name: str
    type_params: list[str]
    params: list[Param]
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class SelectCase(Node):
    keyset: Expr
    state: str


@dataclass
class SelectExpr(Node):
    exprs: list[Expr]
    cases: list[SelectCase]


@dataclass
class ParserState(Node):
    name: str
    stmts: list[Stmt]
    transition: str | SelectExpr | None  # None: implicit reject... (only accept/reject have none)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class ValueSetDecl(Decl):
    type: TypeRef
    size: Expr
    name: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class ParserDecl(Decl):
    name: str
    type_params: list[str]
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Decl]
    states: list[ParserState]
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class ActionDecl(Decl):
    name: str
    params: list[Param]
    body: Block
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class KeyElement(Node):
    expr: Expr
    match_kind: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class ActionRefExpr(Node):
    name: str
    args: list[Arg]
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class EntryDecl(Node):
    keyset: Expr  # a TupleKeyset, or a single keyset expression
    action: ActionRefExpr
    priority: Expr | None = None
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class TableProperty(Node):
    name: str  # "key", "actions", "entries", or any other property name
    value: Any  # list[KeyElement] | list[ActionRefExpr] | list[EntryDecl] | Expr
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class TableDecl(Decl):
    name: str
    properties: list[TableProperty]
    annotations: list[Annotation] = field(default_factory=list)

    def prop(self, name: str) -> TableProperty | None:
        for p in self.properties:
            if p.name == name:
                return p
        return None


@dataclass
class ControlDecl(Decl):
    name: str
    type_params: list[str]
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Decl]
    apply: Block
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class Program(Node):
    decls: list[Decl]
