"""Types of the P4-16 compiler, and the Python classes that hold header and struct values.

Runtime representation (chosen for speed of the generated code):
  bit<W>/int<W>/serializable enum -> Python int (int<W> kept in signed range)
  bool -> Python bool; error / plain enum / match_kind -> str
  header / struct / header_union -> instance of a generated class with __slots__
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
    cls_name: str = ""
    cls: Any = None  # the generated Python class, set when the module is built

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
    return None


def same_type(a: Type, b: Type) -> bool:
    if a is b:
        return True
    if isinstance(a, BitT) and isinstance(b, BitT):
        return a == b
    if isinstance(a, _Singleton) and isinstance(b, _Singleton):
        return a == b
    if isinstance(a, StackT) and isinstance(b, StackT):
        return same_type(a.element, b.element) and a.size == b.size
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
            self.h[i]._v = False
        self.nxt = min(self.nxt + count, n)

    def pop_front(self, count: int) -> None:
        n = len(self.h)
        count = min(count, n)
        if count <= 0:
            return
        for i in range(n - count):
            self.h[i]._set(self.h[i + count])
        for i in range(n - count, n):
            self.h[i]._v = False
        self.nxt = max(self.nxt - count, 0)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stack) and self.h == other.h


def make_class(t: StructLikeT) -> type:
    """Build the Python class holding values of a header/struct/union type."""
    names = [pyname(n) for n, _ in t.fields]
    base = P4Header if t.is_header else P4Struct
    slots = tuple(names)
    init_lines = []
    copy_lines = []
    set_lines = []
    eq_terms = []
    ns: dict[str, Any] = {"Stack": Stack}
    for (_fname, ftype), attr in zip(t.fields, names, strict=False):
        default = _default_expr(ftype, ns, attr)
        init_lines.append(f"    self.{attr} = {default}")
        if isinstance(ftype, (StructLikeT, StackT)):
            copy_lines.append(f"    n.{attr} = self.{attr}._copy()")
            set_lines.append(f"    self.{attr}._set(o.{attr})")
        else:
            copy_lines.append(f"    n.{attr} = self.{attr}")
            set_lines.append(f"    self.{attr} = o.{attr}")
        eq_terms.append(f"self.{attr} == o.{attr}")
    if t.is_header:
        init_lines.insert(0, "    self._v = False")
        copy_lines.insert(0, "    n._v = self._v")
        set_lines.insert(0, "    self._v = o._v")
    cls_name = t.cls_name or ("H_" + t.type_name)
    src = ["def __init__(self):"] + (init_lines or ["    pass"])
    src += ["def _copy(self):", f"    n = {cls_name}.__new__({cls_name})"] + copy_lines + ["    return n"]
    src += ["def _set(self, o):"] + (set_lines or ["    pass"])
    if t.is_header:
        # two headers are equal when both are invalid, or both valid with equal fields
        eq = " and ".join(eq_terms) or "True"
        src += ["def __eq__(self, o):",
                f"    return (not self._v and not o._v) or (self._v == o._v and {eq})"]
    else:
        src += ["def __eq__(self, o):", f"    return {' and '.join(eq_terms) or 'True'}"]
    body = "\n".join(src)
    exec(compile(body, f"<class {cls_name}>", "exec"), ns)
    cls = type(
        cls_name,
        (base,),
        {
            "__slots__": slots,
            "__init__": ns["__init__"],
            "_copy": ns["_copy"],
            "_set": ns["_set"],
            "__eq__": ns["__eq__"],
            "__hash__": None,
            "_p4type": t,
        },
    )
    ns[cls_name] = cls
    return cls


def _default_expr(t: Type, ns: dict[str, Any], attr: str) -> str:
    if isinstance(t, BoolT):
        return "False"
    if isinstance(t, (BitT, VarbitT)):
        return "0"
    if isinstance(t, EnumT):
        if t.underlying is not None:
            return "0"
        return repr(f"{t.enum_name}.{t.members[0]}") if t.members else "None"
    if isinstance(t, ErrorT):
        return "'NoError'"
    if isinstance(t, StructLikeT):
        if t.cls is None:
            t.cls = make_class(t)
        key = f"_C_{attr}"
        ns[key] = t.cls
        return f"{key}()"
    if isinstance(t, StackT):
        if t.element.cls is None:
            t.element.cls = make_class(t.element)
        key = f"_C_{attr}"
        ns[key] = t.element.cls
        return f"Stack([{key}() for _ in range({t.size})])"
    return "None"


def default_value(t: Type) -> Any:
    """A fresh default value of type t (0, False, an invalid header, ...)."""
    if isinstance(t, BoolT):
        return False
    if isinstance(t, (BitT, VarbitT, IntT)):
        return 0
    if isinstance(t, EnumT):
        if t.underlying is not None:
            return 0
        return f"{t.enum_name}.{t.members[0]}" if t.members else None
    if isinstance(t, ErrorT):
        return "NoError"
    if isinstance(t, StructLikeT):
        if t.cls is None:
            t.cls = make_class(t)
        return t.cls()
    if isinstance(t, StackT):
        if t.element.cls is None:
            t.element.cls = make_class(t.element)
        return Stack([t.element.cls() for _ in range(t.size)])
    return None
