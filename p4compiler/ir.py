"""The typed, lowered intermediate form of a v1model program (the middle of p4c's front/mid/back split).

`p4compiler.lower` builds it from the syntax tree after the front end has resolved names and
types; back ends only walk it. By the time a program is in this form:

- names are resolved: every value is a `Var` (a root of the state: "sm", "hdr", "meta", or a
  unique local) followed by `Member`/`Index` steps; constants are folded into `Const`;
- types are explicit on every expression (`Bits(width, signed)`, `Bool`, header/struct/union/
  stack types with their field layouts); `error` and plain `enum` values are `Bits(32)` numbers
  (error = index in `Program.errors`, enum = member index, as p4c gives bmv2);
- the P4 operator semantics are explicit: `BinOp.op` says wrapping add, saturating add, signed or
  unsigned comparison (from the operand type), shifts with the P4 out-of-range rule, `Cast`
  says which extension applies (from the source type);
- sub-controls, functions and directly called actions are inlined (their `return` is a `Leave`
  of a `Labeled` block; `exit` is `Exit`), their arguments copied in and out by plain
  statements around them (P4-16 6.8; a header/struct argument only where the callee could tell
  a copy from the argument itself: `lower.Lower.settle_copies`); `for` loops are `Loop`s (with
  `Break`/`Continue`), run at packet time, never unrolled; tables are `TableApply` statements
  whose per-action bodies bind the control-plane arguments to locals; every stateful object is
  a number (the manifest order: `Program.tables`, `.actions`, `.registers`, ...);
- expressions have no side effects: what an operand does (a call, a table apply) is statements
  before it, in evaluation order (P4-16 8.x), and a lazy operand's (`&&`, `||`, `?:`) under an
  `If`.

Parser-only nodes: `SubParser` (a sub-parser's states run in place), `KsValueSet` (a value set
as one element of a tuple keyset). Everything the Python
back end runs lowers (tests/test_lower.py); a back end refuses what it cannot represent
(`c_backend.check`: varbit locals, exit in a parser, wide extern indexes, ...). `walk`/`children`
visit the nodes generically.

Both emitters consume it: `c_backend.emit` (C) and `python_backend.emit` (Python, the executable
reference). The front end's checks and the control-plane facts (ProgramInfo, TableSpec,
ExternSpec) come from `python_backend`'s type-check walk, which `lower.Lower` reruns with its
expression methods overridden (and takes its object numbering from).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Union

# Every node may carry `loc` (the front end's source location, set by the lowering on types and
# statements) so that a back end refusing a construct can point at it.

# ---------------------------------------------------------------------------- types
class Type:
    loc: Any = None


@dataclass(frozen=True)
class Bits(Type):
    width: int
    signed: bool = False

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


@dataclass(frozen=True)
class Bool(Type):
    pass


@dataclass(frozen=True)
class Varbit(Type):
    max_width: int


@dataclass(eq=False)
class Header(Type):
    """A header: fields in wire order; `width` in bits (varbit fields count their maximum)."""

    name: str  # unique C-safe name
    fields: list[tuple[str, Type]]

    @property
    def has_varbit(self) -> bool:
        return any(isinstance(t, Varbit) for _, t in self.fields)

    def fixed_width(self) -> int:
        return sum(wire_width(t) for _, t in self.fields if not isinstance(t, Varbit))


@dataclass(eq=False)
class Struct(Type):
    name: str
    fields: list[tuple[str, Type]]


@dataclass(eq=False)
class Union_(Type):
    name: str
    fields: list[tuple[str, Header]]


@dataclass(eq=False)
class Stack(Type):
    element: Header | Union_
    size: int
    name: str = ""


BOOL = Bool()


def wire_width(t: Type) -> int:
    if isinstance(t, Bits):
        return t.width
    if isinstance(t, Bool):
        return 1
    if isinstance(t, Varbit):
        return t.max_width
    raise TypeError(f"{t} has no wire width")


# ---------------------------------------------------------------------------- expressions
class Expr:
    type: Type
    loc: Any = None


@dataclass(eq=False)
class Const(Expr):
    value: int  # reduced to the type's width (two's complement bits for int<W>); bool 0/1
    type: Type


@dataclass(eq=False)
class Var(Expr):
    """A root of storage: "sm", "hdr", "meta" (the v1model state), or a local's unique name."""

    name: str
    type: Type


@dataclass(eq=False)
class Member(Expr):
    base: Expr
    field: str
    type: Type


@dataclass(eq=False)
class Index(Expr):
    """Element of a header stack; a non-constant index is checked by the back end
    (reads of an out-of-range element see an invalid header, writes go nowhere)."""

    base: Expr
    index: Expr
    type: Type


@dataclass(eq=False)
class StackNext(Expr):
    """The stack's nextIndex (bit<32>)."""

    base: Expr
    type: Type = field(default_factory=lambda: Bits(32))


def stack_ref(e: Index) -> str | None:
    """"next" or "last" when `e` is the lowering of `hs.next` / `hs.last` (an element at
    nextIndex or nextIndex - 1): in a parser, either raises StackOutOfBounds when that element
    does not exist (P4-16 8.18); None for any other index."""
    i = e.index
    if isinstance(i, StackNext):
        return "next"
    if (isinstance(i, BinOp) and i.op == "sub" and isinstance(i.left, StackNext)
            and isinstance(i.right, Const) and i.right.value == 1):
        return "last"
    return None


@dataclass(eq=False)
class ActionArg(Expr):
    """Control-plane argument `index` of the table entry being run (inside TableApply bodies)."""

    index: int
    type: Type


@dataclass(eq=False)
class Unary(Expr):
    op: str  # "neg" (wrapping), "not" (bitwise), "lnot" (bool)
    expr: Expr
    type: Type


# BinOp ops: "add" "sub" "mul" (wrap-around), "addsat" "subsat" (saturating, signed by type),
# "div" "mod" (unsigned; x/0 = 0), "and" "or" "xor", "shl" "shr" (amount >= width -> 0, or the
# sign for signed shr), "eq" "ne" "lt" "le" "gt" "ge" (signedness of the operands' type),
# "land" "lor" (bool, short-circuit).
@dataclass(eq=False)
class BinOp(Expr):
    op: str
    left: Expr
    right: Expr
    type: Type


@dataclass(eq=False)
class Concat(Expr):
    left: Expr
    right: Expr
    type: Type


@dataclass(eq=False)
class Slice(Expr):
    expr: Expr
    hi: int
    lo: int
    type: Type


@dataclass(eq=False)
class Cast(Expr):
    """Convert expr to type: bool<->bit<1>, and between Bits (sign-extends a signed source,
    zero-extends an unsigned one, then reduces to the target width)."""

    expr: Expr
    type: Type


@dataclass(eq=False)
class Mux(Expr):
    cond: Expr
    then: Expr
    other: Expr
    type: Type


@dataclass(eq=False)
class IsValid(Expr):
    """Validity of a header, or of a union (any member valid)."""

    expr: Expr
    type: Type = field(default_factory=Bool)


@dataclass(eq=False)
class Lookahead(Expr):
    """Peek `width` bits at the parser cursor (PacketTooShort when absent)."""

    width: int
    type: Type


@dataclass(eq=False)
class PacketLength(Expr):
    type: Type = field(default_factory=lambda: Bits(32))


# ---------------------------------------------------------------------------- statements
class Stmt:
    loc: Any = None


@dataclass(eq=False)
class Declare(Stmt):
    """A local comes into scope here with its initial value (None: zero / headers invalid)."""

    var: Var
    init: Expr | None = None


@dataclass(eq=False)
class Assign(Stmt):
    lhs: Expr  # Var/Member/Index path; composites copy whole
    rhs: Expr


@dataclass(eq=False)
class AssignSlice(Stmt):
    lhs: Expr
    hi: int
    lo: int
    rhs: Expr


@dataclass(eq=False)
class StructInit(Stmt):
    """lhs = {values...} for a struct or header (a header becomes valid)."""

    lhs: Expr
    values: list[tuple[str, Expr | None]]  # None: nested initializer already assigned


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: list[Stmt]
    other: list[Stmt]


@dataclass(eq=False)
class SwitchCase:
    values: list[int]  # empty: default
    body: list[Stmt]


@dataclass(eq=False)
class Switch(Stmt):
    expr: Expr
    cases: list[SwitchCase]


@dataclass(eq=False)
class Labeled(Stmt):
    label: str
    body: list[Stmt]


@dataclass(eq=False)
class Leave(Stmt):
    """Jump to the end of the enclosing Labeled block `label` (inlined return)."""

    label: str


@dataclass(eq=False)
class Loop(Stmt):
    """A `for` loop (P4-16 v1.2.5): runs `body`, then `update`, again and again until a `Break`
    of this loop; `Continue` skips the rest of `body` to `update`. The loop's condition is a
    `Break` under an `If` in `body` (the lowering writes it first). Nothing bounds the number
    of iterations: a loop that never ends is the program's."""

    label: str  # unique in the program; Break/Continue name it
    body: list[Stmt]
    update: list[Stmt] = field(default_factory=list)


@dataclass(eq=False)
class Break(Stmt):
    """Leave loop `label` (always the innermost loop around it: inlined calls cannot break)."""

    label: str


@dataclass(eq=False)
class Continue(Stmt):
    """Go to loop `label`'s update statements, then on to its next iteration."""

    label: str


@dataclass(eq=False)
class Exit(Stmt):
    """`exit`: ends the current top-level control (in a parser, the Python reference raises its
    exit signal there too; the C back end refuses it)."""


@dataclass(eq=False)
class SetValid(Stmt):
    header: Expr
    valid: bool
    union: Expr | None = None  # the union the header belongs to: other members become invalid


@dataclass(eq=False)
class StackShift(Stmt):
    stack: Expr
    op: str  # "push_front" | "pop_front"
    count: int


@dataclass(eq=False)
class ActionCase:
    action: int  # action number
    params: list[Var]  # locals that receive the entry's arguments (ActionArg i)
    body: list[Stmt]


@dataclass(eq=False)
class TableApply(Stmt):
    table: int
    keys: list[Expr]  # each Bits or Bool
    cases: list[ActionCase]
    hit: Var | None = None  # bool local set to hit
    action_run: Var | None = None  # bit<32> local set to the action number
    # A table with an action profile or selector (`implementation`): a hit may also return a
    # group (GROUP_ACTION, see below); with a selector, the hash of `selector` (algorithm
    # number `selector_algo`) picks its member. An empty group runs no action, not even a case.
    indirect: bool = False
    selector_algo: int = -1
    selector: list[FieldListItem] = field(default_factory=list)


# The action number a table returns for an entry (or default) that refers to a group of an
# action selector; its arguments are then the group: [n, stride, (action, params...) * n] with
# each member's words padded to `stride` (1 + the most parameter words of the table's actions),
# members in the order bmv2 keeps them (by member handle). The chosen one is hash % n.
GROUP_ACTION = 0xFFFFFFFE


@dataclass(eq=False)
class FieldListItem:
    """One element of a hash/checksum/digest input: a value, or a header's fields when valid."""

    expr: Expr
    width: int
    valid: Expr | None = None  # the enclosing header's validity, if any


# ExternCall kinds and args:
#  register_read(obj, [index], dest)   register_write(obj, [index, value])
#  counter_count(obj, [index])        meter_execute(obj, [index], dest)   direct_meter_read(obj, [], dest)
#  hash(algo, [base, max], dest, fields)    checksum_verify(algo, [cond, value], None, fields, payload)
#  checksum_update(algo, [cond], dest, fields, payload)    checksum16_get(algo, [], dest, fields)
#  random(0, [lo, hi], dest)   digest(obj, [], None, fields)   clone(obj=session expr in args)
#  resubmit / recirculate(field_list)  truncate([len])  log_msg(text, args)  assert(where, [cond])
@dataclass(eq=False)
class ExternCall(Stmt):
    kind: str
    obj: int  # object number, algorithm number or field list id
    args: list[Expr] = field(default_factory=list)
    dest: Expr | None = None
    fields: list[FieldListItem] = field(default_factory=list)
    payload: bool = False
    text: str = ""


# parser statements
@dataclass(eq=False)
class Extract(Stmt):
    header: Expr  # a header path; for stack.next: the stack with next=True
    type: Header
    varbit_bits: Expr | None = None
    next: bool = False
    union: Expr | None = None


@dataclass(eq=False)
class LookaheadHeader(Stmt):
    dest: Expr
    type: Header


@dataclass(eq=False)
class Advance(Stmt):
    bits: Expr


@dataclass(eq=False)
class Verify(Stmt):
    cond: Expr
    error: Expr


@dataclass(eq=False)
class Emit(Stmt):
    header: Expr
    type: Header


@dataclass(eq=False)
class SubParser(Stmt):
    """Run a sub-parser's states here (its `accept` continues after this statement, `reject` and
    errors end the caller too). Arguments are copied in/out by the statements around it; when
    it rejects or fails, `reject_outs` (the copy-outs of its header/struct arguments that were
    copied) run before the caller ends."""

    parser: "Parser"
    name: str  # P4Info-style instance name, for messages
    reject_outs: list[Stmt] = field(default_factory=list)


@dataclass(eq=False)
class ParserError(Stmt):
    """Raise a parser error (e.g. NoMatch, StackOutOfBounds) by its number."""

    error: int


# ---------------------------------------------------------------------------- parser transitions
@dataclass(eq=False)
class KsValue:
    value: int


@dataclass(eq=False)
class KsMask:
    value: int
    mask: int


@dataclass(eq=False)
class KsRange:
    lo: int
    hi: int


@dataclass(eq=False)
class KsDefault:
    pass


@dataclass(eq=False)
class KsValueSet:
    """One element of a tuple keyset that is a value_set: matches when the key is in the set."""

    value_set: int


Keyset = Union[KsValue, KsMask, KsRange, KsDefault, KsValueSet]


@dataclass(eq=False)
class SelectCase:
    keysets: list[Keyset]  # one per key (ignored when value_set >= 0)
    target: str  # state name, "accept" or "reject"
    value_set: int = -1


@dataclass(eq=False)
class Select:
    keys: list[Expr]
    cases: list[SelectCase]  # no match: the parse ends as on `reject` (bmv2: NoError)


@dataclass(eq=False)
class ParserState:
    name: str
    body: list[Stmt]
    transition: str | Select  # a state name, "accept" or "reject"


@dataclass(eq=False)
class Parser:
    start: str
    states: list[ParserState]


# ---------------------------------------------------------------------------- program
@dataclass(eq=False)
class Program:
    headers_type: Struct
    meta_type: Struct
    std_meta_type: Struct
    parser: Parser
    controls: dict[str, list[Stmt]]  # verify_checksum, ingress, egress, compute_checksum, deparser
    types: list[Type]  # every header/struct/union/stack type, dependencies first
    errors: list[str]  # index = error number, NoError first
    tables: list[str]  # object numbering: index = number (P4Info names)
    actions: list[str]
    registers: list[str]
    counters: list[str]
    meters: list[str]
    direct_meters: list[str]
    value_sets: list[str]
    digests: list[str]
    field_lists: dict[int, list[list[str]]]  # id -> paths ("sm"/"meta", field, ...)


_NODE_FIELDS: dict[type, tuple[str, ...]] = {}


def node_fields(node: Any) -> tuple[str, ...]:
    """The names of the fields of an IR node that may hold other nodes (all but type and loc)."""
    names = _NODE_FIELDS.get(type(node))
    if names is None:
        names = tuple(f.name for f in fields(node) if f.name not in ("type", "loc"))
        _NODE_FIELDS[type(node)] = names
    return names


def children(node: Any) -> list[Any]:
    """The IR nodes directly inside `node` (statements, expressions, cases, keysets), in field order."""
    out: list[Any] = []
    for name in node_fields(node):
        v = getattr(node, name)
        if isinstance(v, list):
            for x in v:
                if isinstance(x, tuple):  # StructInit values
                    out.extend(y for y in x if is_node(y))
                elif is_node(x):
                    out.append(x)
        elif is_node(v):
            out.append(v)
    return out


_IS_NODE: dict[type, bool] = {}


def is_node(x: Any) -> bool:
    """Whether `x` is an IR node (a statement, expression, case, keyset...; not a type)."""
    t = type(x)
    got = _IS_NODE.get(t)
    if got is None:
        got = _IS_NODE[t] = is_dataclass(t) and not issubclass(t, Type)
    return got


def walk(node: Any) -> Any:
    """Every IR node under `node` (itself first), depth first; a list walks each element."""
    stack = list(reversed(node)) if isinstance(node, list) else [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(children(n)))
