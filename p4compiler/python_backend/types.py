"""Types of the P4-16 compiler's type check, and the run-time bases of the Python that emit.py
writes (P4Header, P4Struct, Stack).

Runtime representation (chosen for speed of the generated code):
  bit<W>/int<W>/serializable enum -> Python int (int<W> kept in signed range)
  bool -> Python bool; error / plain enum -> its number (the IR's)
  header / struct / header_union -> instance of a generated class with __slots__ (its base
  P4Header / P4Struct)
  header stack -> Stack
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass, field
from typing import Any


class Type:
    def __str__(self) -> str:
        return self.name()

    def name(self) -> str:
        return type(self).__name__


@dataclass(frozen=True, eq=True)
class BitT(Type):
    width: int
    signed: bool = False

    def name(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


@dataclass(frozen=True, eq=True)
class VarbitT(Type):
    max_width: int

    def name(self) -> str:
        return f"varbit<{self.max_width}>"


class _Singleton(Type):
    _label = ""

    def name(self) -> str:
        return self._label

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


class IntT(_Singleton):
    _label = "int"


class BoolT(_Singleton):
    _label = "bool"


class StringT(_Singleton):
    _label = "string"


class VoidT(_Singleton):
    _label = "void"


class ErrorT(_Singleton):
    _label = "error"


class MatchKindT(_Singleton):
    _label = "match_kind"


class DontCareT(_Singleton):
    _label = "_"


INT = IntT()
BOOL = BoolT()
STRING = StringT()
VOID = VoidT()
ERROR = ErrorT()
MATCH_KIND = MatchKindT()
DONTCARE = DontCareT()


@dataclass(eq=False)
class EnumT(Type):
    enum_name: str
    members: list[str]
    underlying: BitT | None = None
    values: dict[str, int] = field(default_factory=dict)

    def name(self) -> str:
        return self.enum_name


@dataclass(eq=False)
class StructLikeT(Type):
    """header, header_union or struct. `fields` in declaration order."""

    kind: str  # "header" | "header_union" | "struct"
    type_name: str
    fields: list[tuple[str, Type]]
    annotations: list[Any] = field(default_factory=list)
    field_annotations: dict[str, list[Any]] = field(default_factory=dict)
    cls_name: str = ""  # a unique identifier (the IR's type name)
    # a specialization of a generic declaration (`S<bit<8>>`): (the declaration, the type
    # arguments); type inference of generic functions matches against it
    generic: tuple[Any, tuple["Type", ...]] | None = None

    def name(self) -> str:
        return self.type_name

    def field_type(self, name: str) -> Type | None:
        for n, t in self.fields:
            if n == name:
                return t
        return None

    @property
    def is_header(self) -> bool:
        return self.kind == "header"

    @property
    def is_union(self) -> bool:
        return self.kind == "header_union"

    def bit_width(self) -> int | None:
        """Width of a header in bits (None if it has a varbit field)."""
        total = 0
        for _, t in self.fields:
            w = serial_width(t)
            if w is None:
                return None
            total += w
        return total


@dataclass(eq=False)
class StackT(Type):
    element: StructLikeT
    size: int

    def name(self) -> str:
        return f"{self.element.name()}[{self.size}]"


@dataclass(eq=False)
class ArrayT(Type):
    """`T[N]` of a non-header element type: bit<W>, int<W>, bool or a serializable enum (arrays of
    non-header types, p4-spec PR 1360, newer than v1.2.5; header stacks stay StackT). Its value
    is the elements' bits side by side, element 0 the most significant (first on the wire)."""

    element: Type
    size: int

    def name(self) -> str:
        return f"{self.element.name()}[{self.size}]"

    @property
    def elem_width(self) -> int:
        w = serial_width(self.element)
        assert w is not None
        return w

    @property
    def width(self) -> int:
        return self.elem_width * self.size


@dataclass(eq=False)
class TupleT(Type):
    elements: list[Type]

    def name(self) -> str:
        return "tuple<" + ", ".join(e.name() for e in self.elements) + ">"


@dataclass(eq=False)
class ExternT(Type):
    extern_name: str
    type_args: list[Type] = field(default_factory=list)
    decl: Any = None

    def name(self) -> str:
        if self.type_args:
            return f"{self.extern_name}<{', '.join(t.name() for t in self.type_args)}>"
        return self.extern_name


@dataclass(eq=False)
class BlockT(Type):
    """A parser, control or package type (for instances and constructor arguments)."""

    kind: str
    decl: Any

    def name(self) -> str:
        return getattr(self.decl, "name", self.kind)


@dataclass(eq=False)
class ListT(Type):
    """Type of a `{a, b, c}` list expression."""

    elements: list[Type]

    def name(self) -> str:
        return "{" + ", ".join(e.name() for e in self.elements) + "}"


def serial_width(t: Type) -> int | None:
    """Width of a type as it appears on the wire (header fields)."""
    if isinstance(t, BitT):
        return t.width
    if isinstance(t, BoolT):
        return 1
    if isinstance(t, EnumT) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, ArrayT):
        return t.width
    return None


def type_key(t: Type) -> Any:
    """A hashable key equal for two types exactly when same_type holds (and for tuples of equal
    elements): what specializations of generic declarations are cached by."""
    if isinstance(t, (BitT, VarbitT, _Singleton)):
        return t
    if isinstance(t, StackT):
        return ("stack", type_key(t.element), t.size)
    if isinstance(t, ArrayT):
        return ("array", type_key(t.element), t.size)
    if isinstance(t, (TupleT, ListT)):
        return ("tuple", tuple(type_key(e) for e in t.elements))
    return ("id", id(t))


def same_type(a: Type, b: Type) -> bool:
    if a is b:
        return True
    if isinstance(a, BitT) and isinstance(b, BitT):
        return a == b
    if isinstance(a, _Singleton) and isinstance(b, _Singleton):
        return a == b
    if isinstance(a, StackT) and isinstance(b, StackT):
        return same_type(a.element, b.element) and a.size == b.size
    if isinstance(a, ArrayT) and isinstance(b, ArrayT):
        return a.size == b.size and (a.element is b.element or same_type(a.element, b.element))
    if isinstance(a, VarbitT) and isinstance(b, VarbitT):
        return a.max_width == b.max_width
    return False


def pyname(name: str) -> str:
    """A safe Python attribute name for a P4 field/member name."""
    if keyword.iskeyword(name) or name.startswith("_") or name in ("None", "True", "False"):
        return "f_" + name
    return name


# ------------------------------------------------------------------ runtime value classes
class P4Header:
    __slots__ = ("_v",)


class P4Struct:
    __slots__ = ()


def _invalidate(e: P4Header | P4Struct) -> None:
    """Make a stack element invalid: a header, or every member of a header union."""
    if isinstance(e, P4Header):
        e._v = False
    else:
        for n in e.__slots__:
            getattr(e, n)._v = False


class Stack:
    """A header stack: elements `h`, and `nxt` = nextIndex."""

    __slots__ = ("h", "nxt")

    def __init__(self, elements: list) -> None:
        self.h = elements
        self.nxt = 0

    def _copy(self) -> "Stack":
        s = Stack([e._copy() for e in self.h])
        s.nxt = self.nxt
        return s

    def _set(self, other: "Stack") -> None:
        for a, b in zip(self.h, other.h, strict=False):
            a._set(b)
        self.nxt = other.nxt

    def push_front(self, count: int) -> None:
        n = len(self.h)
        count = min(count, n)
        if count <= 0:
            return
        # shift right by count; the first `count` elements become invalid
        for i in range(n - 1, count - 1, -1):
            self.h[i]._set(self.h[i - count])
        for i in range(count):
            _invalidate(self.h[i])
        self.nxt = min(self.nxt + count, n)

    def pop_front(self, count: int) -> None:
        n = len(self.h)
        count = min(count, n)
        if count <= 0:
            return
        for i in range(n - count):
            self.h[i]._set(self.h[i + count])
        for i in range(n - count, n):
            _invalidate(self.h[i])
        self.nxt = max(self.nxt - count, 0)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stack) and self.h == other.h
