"""Name bindings of the compiler: what an identifier means at a point of the program."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from p4compiler.python_backend.types import Type


@dataclass
class Var:
    """A run-time value reachable through the Python expression `code`."""

    code: str
    type: Type
    lvalue: bool = True
    direction: str = ""


@dataclass
class Const:
    value: Any
    type: Type


@dataclass
class TypeBind:
    decl: Any  # ast declaration, or a compiler Type for built-ins / type parameters
    resolved: Type | None = None


@dataclass
class ActionBind:
    decl: Any
    fn: str  # Python function name
    p4name: str
    scope: "Scope"


@dataclass
class FuncBind:
    decl: Any
    fn: str
    scope: "Scope"


@dataclass
class ExternFuncBind:
    decls: list[Any]  # overloads


@dataclass
class ExternInst:
    code: str
    type: Type  # ExternT
    p4name: str
    decl: Any = None


@dataclass
class TableBind:
    code: str
    decl: Any
    p4name: str


@dataclass
class StateBind:
    fn: str


@dataclass
class BlockInst:
    """An instance of a parser or control inside another block."""

    decl: Any
    kind: str
    fn: str  # Python function running the instance


@dataclass
class ValueSetBind:
    code: str
    type: Type
    p4name: str


class Scope:
    def __init__(self, parent: "Scope | None" = None, kind: str = "block"):
        self.parent = parent
        self.kind = kind
        self.names: dict[str, Any] = {}
        self.instance_name: str | None = None  # a parser or control instance's own scope: its name

    def enclosing_instance(self) -> str:
        """The control-plane name of the parser or control instance this scope is in."""
        s: Scope | None = self
        while s is not None:
            if s.instance_name is not None:
                return s.instance_name
            s = s.parent
        return ""

    def lookup(self, name: str) -> Any:
        if name.startswith("."):
            return self.root().lookup_local(name[1:])
        s: Scope | None = self
        while s is not None:
            b = s.names.get(name)
            if b is not None:
                return b
            s = s.parent
        return None

    def lookup_local(self, name: str) -> Any:
        return self.names.get(name)

    def root(self) -> "Scope":
        s = self
        while s.parent is not None:
            s = s.parent
        return s

    def add(self, name: str, binding: Any) -> None:
        self.names[name] = binding

    def find_kind(self, kind: str) -> "Scope | None":
        s: Scope | None = self
        while s is not None:
            if s.kind == kind:
                return s
            s = s.parent
        return None
