"""Declaration before use for the program's top-level names and for the local declarations of
controls and parsers.

P4-16 names must be declared before they are used ("P4 requires definitions to precede uses",
v1.2.4 section 12.10, Sub-parsers); p4c refuses a use that precedes the
declaration (a type name there is a syntax error, since its lexer only knows the types declared
so far; another name is not found). The type check binds every top-level name before it looks
at any block (codegen.Compiler.declare_globals), so without this pass the switch would accept a
program that p4c refuses. Checked here on the parsed program, before any binding:

- a top-level declaration's position is that of the first declaration of its name (overloaded
  extern functions and functions are declared again later);
- a use is a type name (`NamedTypeRef`, also inside instantiations and casts), a value name
  (`NameExpr`) or an action named in a table (`ActionRefExpr`);
- a name that the declaration also binds locally (a parameter, local, table, action, state,
  type parameter, ...) is left alone: the check never guesses which one a use means.

Inside a control or parser the same holds for its local declarations (actions, tables,
instances, variables, constants, value sets): the type check binds the actions, tables and
instances of a block before it looks at any of them, so an action named in a table declared
before the action, or a variable used in an action declared before the variable, would
otherwise be accepted; p4c refuses both. A local's name that is also a parameter of the block
or a top-level name is left alone (a use before the local may mean the outer one). Statements
(apply blocks, parser states, action bodies) bind their variables in order already.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator

from p4compiler.frontend import ast as A
from p4compiler.python_backend.codegen import err

# the node fields that are names a declaration binds (not uses)
_BINDING_NODES = (A.Param, A.VarDecl, A.ConstDecl, A.Instance, A.TableDecl, A.ActionDecl,
                  A.ValueSetDecl, A.ParserState, A.ForIn, A.MethodDecl, A.HeaderDecl,
                  A.HeaderUnionDecl, A.StructDecl, A.EnumDecl, A.TypedefDecl, A.ExternDecl,
                  A.ParserTypeDecl, A.ControlTypeDecl, A.PackageDecl, A.ParserDecl, A.ControlDecl)


def top_level_name(d: A.Decl) -> str | None:
    """The name a top-level declaration binds (None: error/match_kind members, nothing)."""
    if isinstance(d, (A.ExternFunctionDecl, A.FunctionDecl)):
        return d.proto.name
    return getattr(d, "name", None)


def check_declaration_order(program: A.Program) -> None:
    """Refuse the first use of a top-level name that comes before its declaration."""
    first: dict[str, tuple[int, A.Decl]] = {}
    for i, d in enumerate(program.decls):
        name = top_level_name(d)
        if name is not None:
            first.setdefault(name, (i, d))
    _refuse_early_uses(program.decls, first, "", top_level=True)
    for d in program.decls:
        if isinstance(d, (A.ControlDecl, A.ParserDecl)):
            _check_locals(d, set(first))


def _check_locals(block: A.ControlDecl | A.ParserDecl, top: set[str]) -> None:
    """Refuse a use, in one of `block`'s local declarations, of a local declared after it."""
    outer = top | {p.name for p in block.params + block.ctor_params} | set(block.type_params)
    first: dict[str, tuple[int, A.Decl]] = {}
    for i, d in enumerate(block.locals):
        name = getattr(d, "name", None)
        if name is not None and name not in outer:
            first.setdefault(name, (i, d))
    _refuse_early_uses(block.locals, first, f" in {block.name}", top_level=False)


def _refuse_early_uses(decls: list, first: dict[str, tuple[int, A.Decl]], where_block: str,
                       top_level: bool) -> None:
    """Refuse the first use, in one of `decls`, of a name of `first` (name -> index and
    declaration of its first declaration in `decls`) declared after that use. A name bound inside
    the using declaration shadows; at the top level `.name` names the same thing as `name`."""
    for i, d in enumerate(decls):
        inside = _bound_inside(d)
        for name, node in _uses(d):
            if top_level:
                name = name.lstrip(".")
            if name in inside or name not in first:
                continue
            j, decl = first[name]
            if j > i:
                where = f" (declared at line {decl.loc.line})" if decl.loc is not None else ""
                raise err(f"{name} is used before its declaration{where}{where_block}: P4-16 needs a "
                          "name declared before it is used, and p4c refuses this", node if node.loc else d)


def _nodes(n: Any) -> Iterator[Any]:
    """`n` and every AST node below it."""
    if isinstance(n, (list, tuple)):
        for x in n:
            yield from _nodes(x)
        return
    if not isinstance(n, A.Node):
        return
    yield n
    for f in dataclasses.fields(n):
        if f.name not in ("loc", "annotations"):
            yield from _nodes(getattr(n, f.name))


def _bound_inside(d: A.Decl) -> set[str]:
    """The names `d` binds below its own name: parameters, locals, type parameters, ..."""
    out: set[str] = set()
    for n in _nodes(d):
        if n is not d and isinstance(n, _BINDING_NODES):
            out.add(n.name)
        for tp in getattr(n, "type_params", None) or ():
            out.add(tp)
    return out


def _uses(d: A.Decl) -> Iterator[tuple[str, A.Node]]:
    for n in _nodes(d):
        if isinstance(n, (A.NamedTypeRef, A.NameExpr, A.ActionRefExpr)):
            yield n.name, n
