"""Control-plane view of a compiled P4 program.

The compiler (p4compiler.python_backend) fills these records from the P4 source; the P4Info
generator, the P4Runtime server and the STF runner read them. Names are final: fully
qualified the way p4c writes them into P4Info ("MyIngress.ipv4_lpm", "NoAction",
"hdr.ipv4.dstAddr" for key fields), with @name annotations already applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


@dataclass
class Annotated:
    """Mixin: `annotations` are the source text of annotations that P4Info carries
    (e.g. '@brief("x")'); @name/@id are already consumed into name/id."""


@dataclass
class MatchField:
    name: str
    bitwidth: int
    match_type: str  # "exact" | "lpm" | "ternary" | "range" | "optional" | other match_kind name
    id: int  # 1-based position in the key, or @id
    annotations: list[str] = field(default_factory=list)


@dataclass
class ActionParam:
    name: str
    bitwidth: int
    id: int  # 1-based position, or @id
    annotations: list[str] = field(default_factory=list)


@dataclass
class ActionInfo:
    name: str
    params: list[ActionParam]
    id: int | None = None  # from @id, else assigned by the P4Info generator
    annotations: list[str] = field(default_factory=list)


@dataclass
class ActionRef:
    name: str
    scope: str = "TABLE_AND_DEFAULT"  # "TABLE_ONLY" (@tableonly) | "DEFAULT_ONLY" (@defaultonly)
    annotations: list[str] = field(default_factory=list)


@dataclass
class TableInfo:
    name: str
    match_fields: list[MatchField]
    action_refs: list[ActionRef]
    size: int
    default_action: str  # action name
    default_action_args: dict[str, int] = field(default_factory=dict)
    default_action_const: bool = False  # `const default_action = ...`
    is_const_table: bool = False  # `const entries = {...}` (or `entries` with const)
    has_initial_entries: bool = False
    direct_counter: str | None = None  # name of the direct_counter bound via `counters =`
    direct_meter: str | None = None  # name of the direct_meter bound via `meters =`
    implementation: str | None = None  # action_profile / action_selector name
    idle_timeout: bool = False  # support_timeout = true
    id: int | None = None
    annotations: list[str] = field(default_factory=list)


@dataclass
class RegisterInfo:
    name: str
    bitwidth: int  # width of the element type
    size: int
    id: int | None = None
    annotations: list[str] = field(default_factory=list)


@dataclass
class CounterInfo:
    name: str
    unit: str  # "PACKETS" | "BYTES" | "BOTH"
    size: int
    id: int | None = None
    annotations: list[str] = field(default_factory=list)


@dataclass
class DirectCounterInfo:
    name: str
    unit: str
    table: str  # table name it is attached to
    id: int | None = None
    annotations: list[str] = field(default_factory=list)


@dataclass
class MeterInfo:
    name: str
    unit: str  # "PACKETS" | "BYTES"
    size: int
    id: int | None = None
    annotations: list[str] = field(default_factory=list)


@dataclass
class DirectMeterInfo:
    name: str
    unit: str
    table: str
    id: int | None = None
    annotations: list[str] = field(default_factory=list)


@dataclass
class StructField:
    name: str
    bitwidth: int


@dataclass
class DigestInfo:
    """One `digest<T>(receiver, data)` call site type; name is the type name of T."""

    name: str
    fields: list[StructField]
    id: int | None = None
    annotations: list[str] = field(default_factory=list)


@dataclass
class ControllerHeaderInfo:
    """A header type annotated @controller_header("packet_in"|"packet_out")."""

    name: str  # the annotation's argument: "packet_in" / "packet_out"
    header_type: str  # the P4 header type name
    fields: list[StructField]  # metadata fields in order (ids are 1-based positions)
    id: int | None = None
    annotations: list[str] = field(default_factory=list)


@dataclass
class ValueSetInfo:
    name: str
    size: int
    match_fields: list[MatchField]
    id: int | None = None
    annotations: list[str] = field(default_factory=list)


@dataclass
class ActionProfileInfo:
    """An `action_profile(size)` or `action_selector(algo, size, outputWidth)`: a table whose
    `implementation` it is holds member or group references instead of actions."""

    name: str
    table_names: list[str]
    with_selector: bool
    size: int
    id: int | None = None
    annotations: list[str] = field(default_factory=list)
    max_group_size: int = 0  # @max_group_size(N) (selectors; 0: no limit declared)
    algorithm: str = ""  # a selector's HashAlgorithm member name (crc16, crc32, identity, ...)
    output_width: int = 0  # a selector's outputWidth (bmv2 ignores it: the whole hash picks)


@dataclass
class ProgramInfo:
    """Everything the control plane can see of one P4 program."""

    arch: str = "v1model"
    tables: list[TableInfo] = field(default_factory=list)
    actions: list[ActionInfo] = field(default_factory=list)
    registers: list[RegisterInfo] = field(default_factory=list)
    counters: list[CounterInfo] = field(default_factory=list)
    direct_counters: list[DirectCounterInfo] = field(default_factory=list)
    meters: list[MeterInfo] = field(default_factory=list)
    direct_meters: list[DirectMeterInfo] = field(default_factory=list)
    digests: list[DigestInfo] = field(default_factory=list)
    controller_headers: list[ControllerHeaderInfo] = field(default_factory=list)
    value_sets: list[ValueSetInfo] = field(default_factory=list)
    action_profiles: list[ActionProfileInfo] = field(default_factory=list)

    def table(self, name: str) -> TableInfo:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(f"no table named {name!r}")

    def action(self, name: str) -> ActionInfo:
        for a in self.actions:
            if a.name == name:
                return a
        raise KeyError(f"no action named {name!r}")


# --- match values, one per key field ---------------------------------------------------


@dataclass(frozen=True)
class Exact:
    value: int


@dataclass(frozen=True)
class Lpm:
    value: int
    prefix_len: int


@dataclass(frozen=True)
class Ternary:
    value: int
    mask: int


@dataclass(frozen=True)
class Range:
    low: int
    high: int


@dataclass(frozen=True)
class Optional_:
    value: int


Match = Union[Exact, Lpm, Ternary, Range, Optional_]
