"""The runtime interface of the software switch, as the control plane sees it.

`softswitch.switch.Switch` implements `SwitchAPI`; the P4Runtime server and the STF runner
use only what is declared here, so they cannot reach into the interpreter.

Values are plain Python ints (unsigned, already fitted to the field's bit width). Errors are
raised as `SwitchError` subclasses whose message says what is wrong; the P4Runtime server
maps them to gRPC status codes through `code`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Callable, Protocol

from p4compiler.model import Exact, Lpm, Match, Optional_, ProgramInfo, Range, Ternary  # noqa: F401 (re-exported)


class SwitchError(Exception):
    """A request the switch refuses. `code` is a grpc.StatusCode name."""

    code = "INVALID_ARGUMENT"


class NotFound(SwitchError):
    code = "NOT_FOUND"


class AlreadyExists(SwitchError):
    code = "ALREADY_EXISTS"


class ResourceExhausted(SwitchError):
    code = "RESOURCE_EXHAUSTED"


class PermissionDenied(SwitchError):  # e.g. writing a const table or a const default action
    code = "PERMISSION_DENIED"


class Unimplemented(SwitchError):
    code = "UNIMPLEMENTED"


class InUse(SwitchError):  # e.g. deleting an action-profile member a table entry or group refers to
    # PI answers UNKNOWN ("Error when deleting member/group on target"): bmv2 refuses with
    # MBR_STILL_USED / GRP_STILL_USED and PI's action_prof_mgr maps any target error to UNKNOWN
    code = "UNKNOWN"


MAX_PORT = 511  # v1model's standard_metadata ports are bit<9>


def check_ingress_port(port: int) -> None:
    """Refuse an ingress port that standard_metadata.ingress_port (bit<9>) cannot hold, before
    a backend truncates it (C) or runs the program with it anyway (Python)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= MAX_PORT:
        raise SwitchError(f"ingress port {port!r} is out of range 0..{MAX_PORT} (bit<9>)")


# match values, one per key field: defined with the compiler's model (const entries use them)


@dataclass
class TableEntry:
    """One table entry. `match` maps key field names (MatchField.name) to a Match; a field
    missing from the dict is a wildcard (allowed for lpm, ternary, range, optional only).
    `priority` is required (> 0) when the table has ternary, range or optional fields;
    a larger value wins, as in P4Runtime."""

    table: str
    match: dict[str, Match]
    action: str
    args: dict[str, int] = field(default_factory=dict)
    priority: int = 0
    is_const: bool = False  # came from `const entries` in the program
    # A table with an action profile (`implementation`) refers to one of its members or, with a
    # selector, groups instead of an action (then `action` is "" and `args` empty).
    member: int | None = None
    group: int | None = None


@dataclass
class Replica:
    egress_port: int
    instance: int  # egress_rid seen by the egress pipeline


@dataclass
class CloneSession:
    session_id: int
    replicas: list[Replica]
    class_of_service: int = 0
    packet_length_bytes: int = 0  # 0 = do not truncate


PacketInHandler = Callable[[bytes, dict[str, int]], None]  # payload, packet_in metadata
DigestHandler = Callable[[str, list[dict[str, int]]], None]  # digest name, list of messages


class SwitchAPI(Protocol):
    info: ProgramInfo
    cpu_port: int  # packets to/from the controller use this port (bmv2: --cpu-port)

    # tables
    def insert_entry(self, entry: TableEntry) -> None: ...
    def modify_entry(self, entry: TableEntry) -> None: ...  # same key (match+priority), new action
    def delete_entry(self, entry: TableEntry) -> None: ...  # matched by key only
    def read_entries(self, table: str) -> list[TableEntry]: ...
    def set_default_entry(self, table: str, action: str, args: dict[str, int]) -> None: ...
    def get_default_entry(self, table: str) -> tuple[str, dict[str, int]]: ...
    def reset_default_entry(self, table: str) -> None: ...  # back to the program's default
    def clear_table(self, table: str) -> None: ...  # removes non-const entries
    # the default of a table with an action profile may be a member or a group (one of them)
    def set_default_reference(self, table: str, member: int | None = None,
                              group: int | None = None) -> None: ...
    def get_default_reference(self, table: str) -> tuple[str, int] | None: ...  # ("member"|"group", id)

    # action profiles and selectors (by their P4Info name): members are (action, args) shared by
    # the profile's tables; groups (selectors only) are sets of members of which the selector's
    # hash picks one per packet. Errors: NotFound, AlreadyExists, InUse (still referred to),
    # ResourceExhausted (profile size, group max_size).
    def insert_member(self, profile: str, member_id: int, action: str, args: dict[str, int]) -> None: ...
    def modify_member(self, profile: str, member_id: int, action: str, args: dict[str, int]) -> None: ...
    def delete_member(self, profile: str, member_id: int) -> None: ...
    def read_members(self, profile: str) -> dict[int, tuple[str, dict[str, int]]]: ...
    # weights (one per member, default 1) as PI programs them: a member of weight w is w bmv2
    # members (copies) of the group, so the hash picks it w times out of the sum of weights
    def insert_group(self, profile: str, group_id: int, members: Sequence[int],
                     max_size: int = 0, weights: Sequence[int] | None = None) -> None: ...
    def modify_group(self, profile: str, group_id: int, members: Sequence[int],
                     max_size: int = 0, weights: Sequence[int] | None = None) -> None: ...
    def delete_group(self, profile: str, group_id: int) -> None: ...
    def read_groups(self, profile: str) -> dict[int, tuple[list[int], int]]: ...  # members, max_size
    def read_group_weights(self, profile: str) -> dict[int, dict[int, int]]: ...  # member -> weight

    # direct counters and meters, addressed by the entry's key
    def read_direct_counter(self, entry: TableEntry) -> tuple[int, int]: ...  # (bytes, packets)
    def write_direct_counter(self, entry: TableEntry, byte_count: int, packet_count: int) -> None: ...

    # indexed externs
    def register_read(self, name: str, index: int) -> int: ...
    def register_write(self, name: str, index: int, value: int) -> None: ...
    def counter_read(self, name: str, index: int) -> tuple[int, int]: ...  # (bytes, packets)
    def counter_write(self, name: str, index: int, byte_count: int, packet_count: int) -> None: ...
    def meter_set_config(
        self, name: str, index: int, cir: int, cburst: int, pir: int, pburst: int
    ) -> None: ...

    # parser value sets: each member maps the value set's match fields (ValueSetInfo.match_fields,
    # by name) to a Match, as a TableEntry's match does (a missing field is a wildcard, except an
    # exact one). A member matches a select key when every field does (exact: equal; ternary:
    # equal under the mask; lpm and optional as masks; a range only as one value or all values).
    # Writing replaces all members at once (an empty list empties the set; on an error nothing
    # changes): more than the declared size raises ResourceExhausted, a member given twice
    # AlreadyExists, a value wider than its field SwitchError. Reading gives the members as written.
    def value_set_write(self, name: str, members: Sequence[Mapping[str, Match]]) -> None: ...
    def value_set_read(self, name: str) -> list[dict[str, Match]]: ...

    # packet replication engine
    def mc_group_set(self, group_id: int, replicas: list[Replica]) -> None: ...  # create or replace
    def mc_group_delete(self, group_id: int) -> None: ...
    def mc_group_get(self, group_id: int) -> list[Replica]: ...
    def mc_groups(self) -> dict[int, list[Replica]]: ...
    def clone_session_set(self, session: CloneSession) -> None: ...
    def clone_session_delete(self, session_id: int) -> None: ...
    def clone_sessions(self) -> dict[int, CloneSession]: ...

    # packets
    def process_packet(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one packet through the whole pipeline (with its clones, resubmits,
        recirculations and multicast copies) and return the packets sent out, in order, as
        (egress_port, bytes). Packets for `cpu_port` go to the packet-in handlers instead
        when the program has a packet_in controller header. An ingress port outside 0..511 is
        refused (check_ingress_port)."""
        ...

    def packet_out(self, payload: bytes, metadata: dict[str, int]) -> list[tuple[int, bytes]]:
        """Inject a controller packet: the packet_out header built from `metadata` is
        prepended and the packet enters ingress on `cpu_port`, as in bmv2."""
        ...

    def add_packet_in_handler(self, handler: PacketInHandler) -> None: ...
    def add_digest_handler(self, handler: DigestHandler) -> None: ...
