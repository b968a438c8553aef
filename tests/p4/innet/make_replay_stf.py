"""Generate the STF packet tests of p4/innet.p4's replay control (replay_*.stf in this folder).

    .venv/bin/python tests/p4/innet/make_replay_stf.py     # rewrites tests/p4/innet/replay_*.stf

Expected packets come from `SumTreeModel` below, a model of docs/replay_protocol.md ("The switch
path") written from the document, not from running the switch: a sum-tree of bit<32> leaves per
installed table; UPDATE_PRIORITY sets a leaf and is reflected to its sender as UPDATE_REPLY
(addresses and UDP ports swapped, TTL 64, UDP checksum 0, flag SWITCH_UPDATED, `total` the new
root), but only when it carries INSERT (the leaf then remembers the key in `draw`) or the key the
leaf remembers (else KEY_MISMATCH, nothing changed); SAMPLE descends with
floor(draw * total / 2^32) (go left while the draw is below the left child's mass), writes
index/priority/total, sets SWITCH_SAMPLED, UDP checksum 0 and is routed to the server by ipv4_lpm.
A batch (flag MULTI: an 8-byte batch header `next, count, beta`, then `count` 20-byte entries
`index, priority, draw, total, result`) does the same per entry, in order: an UPDATE batch comes
back once with every entry's result and total, a SAMPLE batch goes to the server once with every
entry's leaf, priority and total (the switch recirculates it for each entry; the file sees only
what leaves the switch). A PUSH_REPLY from the server with flags MULTI + INSERT carries an
UPDATE batch of the pushed items' leaves and the u64 first key: the switch sets the leaves as
it passes and routes it on to the actor with SWITCH_UPDATED and every entry's result and total.
Packets of tables the switch does not hold are routed unchanged.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from make_stf import FWD, Out, StfFile, ip_int, mac_int  # noqa: E402
from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402
from scapy.packet import Raw  # noqa: E402

REPLAY_PORT = 47100
DEPTH = 14  # REPLAY_TREE_DEPTH in p4/include/types.p4
TREES = 4  # REPLAY_TREES
OP_PUSH, OP_PUSH_REPLY, OP_SAMPLE, OP_SAMPLE_REPLY, OP_UPDATE, OP_UPDATE_REPLY, OP_ERROR = (
    1,
    2,
    3,
    4,
    5,
    6,
    255,
)
F_SAMPLED, F_RANDOM, F_UPDATED, F_INSERT, F_MISMATCH, F_MULTI = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
R_APPLIED, R_MISMATCH, R_BAD_INDEX = 0, 1, 2  # a batch entry's result
BATCH = struct.Struct("!HHf")  # next, count, beta
ENTRY = struct.Struct("!IIIIB3x")  # index, priority, draw, total, result
MAX_ENTRIES = 64
BAD_INDEX = 4
HEADER = struct.Struct("!BBHIHHIIIIBBH")  # 32 bytes, docs/replay_protocol.md
RP = "InnetIngress.replay."
M32 = 0xFFFFFFFF

ROUTER = "02:00:00:00:aa:01"
SERVER_NH = "02:00:00:00:bb:02"  # the replay server's MAC (next hop of its route)
SERVER_IP = "10.0.1.2"
SERVER_PORT = 2
LEARNER_MAC, LEARNER_IP, LEARNER_PORT = "02:00:00:00:11:05", "10.0.0.5", 1
LEARNER_UDP = 40000
LEARNER_NH = "02:00:00:00:bb:01"  # the learner's (or actor's) MAC as the next hop of its route


def header(
    op: int,
    table: int,
    req: int,
    index: int = 0,
    priority: int = 0,
    draw: int = 0,
    total: int = 0,
    flags: int = 0,
    status: int = 0,
    version: int = 1,
    frag: tuple[int, int] = (0, 1),
) -> bytes:
    return HEADER.pack(
        op, flags, table, req, frag[0], frag[1], index, priority, draw, total, status, version, 0
    )


def request(hdr: bytes, body: bytes = b"") -> bytes:
    """Learner -> replay server (through the switch, whose router MAC is the next hop)."""
    return bytes(
        Ether(dst=ROUTER, src=LEARNER_MAC)
        / IP(src=LEARNER_IP, dst=SERVER_IP, ttl=64, id=0x4242)
        / UDP(sport=LEARNER_UDP, dport=REPLAY_PORT, chksum=0)
        / Raw(hdr + body)
    )


def routed(
    frame: bytes, new_hdr: bytes | None = None, body: bytes | None = None, next_hop: str = SERVER_NH
) -> bytes:
    """The frame as ipv4_lpm forwards it (to the server unless ``next_hop`` says): MACs
    rewritten, TTL - 1, checksum redone; with new_hdr the replay header as the switch rewrote it
    (and UDP checksum 0), followed by ``body`` when given (else the frame's own body)."""
    p = Ether(frame)
    p[Ether].dst, p[Ether].src = next_hop, ROUTER
    p[IP].ttl -= 1
    p[IP].chksum = None
    if new_hdr is not None:
        payload = bytes(p[UDP].payload)
        p[UDP].remove_payload()
        p[UDP].chksum = 0
        p = p / Raw(new_hdr + (payload[32:] if body is None else body))
    return bytes(p)


def reflected(frame: bytes, new_hdr: bytes, body: bytes | None = None) -> bytes:
    """The frame sent back to its sender: addresses and ports swapped, TTL 64, UDP checksum 0;
    ``body`` replaces the body after the replay header when given."""
    p = Ether(frame)
    if body is None:
        body = bytes(p[UDP].payload)[32:]
    out = (
        Ether(dst=p[Ether].src, src=p[Ether].dst)
        / IP(src=p[IP].dst, dst=p[IP].src, ttl=64, id=p[IP].id, flags=p[IP].flags, tos=p[IP].tos)
        / UDP(sport=p[UDP].dport, dport=p[UDP].sport, chksum=0)
        / Raw(new_hdr + body)
    )
    return bytes(out)


class SumTreeModel:
    """The switch's trees: TREES trees of 2^DEPTH bit<32> leaves, sums mod 2^32."""

    def __init__(self) -> None:
        self.leaves = [[0] * (1 << DEPTH) for _ in range(TREES)]
        self.keys = [[0] * (1 << DEPTH) for _ in range(TREES)]  # key (mod 2^32) each leaf stands for
        self.tables: dict[int, tuple[int, int]] = {}  # table id -> (tree, num_leaves)
        self.counters = {("samples", t): 0 for t in range(TREES)} | {("updates", t): 0 for t in range(TREES)}
        self.bad_index = 0
        self.key_mismatch = 0

    def total(self, tree: int) -> int:
        return sum(self.leaves[tree]) & M32

    def update(self, frame: bytes) -> bytes:
        op, flags, table, req, fi, fc, index, prio, draw, total, status, ver, res = HEADER.unpack(
            bytes(Ether(frame)[UDP].payload)[:32]
        )
        tree, num_leaves = self.tables[table]
        result = self.update_entry(tree, num_leaves, flags, index, prio, draw)
        if result == R_BAD_INDEX:  # an ERROR back, the header otherwise as it came
            fields = (flags, table, req, fi, fc, index, prio, draw, total, BAD_INDEX, ver, res)
            return reflected(frame, HEADER.pack(OP_ERROR, *fields))
        flags |= F_UPDATED | (F_MISMATCH if result == R_MISMATCH else 0)
        new = HEADER.pack(
            OP_UPDATE_REPLY, flags, table, req, fi, fc, index, prio, draw, self.total(tree), status, ver, res
        )
        return reflected(frame, new)

    def update_entry(self, tree: int, num_leaves: int, flags: int, index: int, prio: int, key: int) -> int:
        """One UPDATE (of a batch or alone); its result."""
        if index >= num_leaves:
            self.bad_index += 1
            return R_BAD_INDEX
        if flags & F_INSERT:
            self.keys[tree][index] = key
        elif key == 0 or self.keys[tree][index] != key:  # keys travel as key + 1
            self.key_mismatch += 1
            return R_MISMATCH
        self.leaves[tree][index] = prio
        self.counters["updates", tree] += 1
        return R_APPLIED

    def _apply_batch(self, frame: bytes, reply_op: int | None) -> tuple[bytes, bytes, int]:
        """An UPDATE batch's entries, each applied in order: the new header (op ``reply_op``, or
        the frame's own when None; SWITCH_UPDATED; the last total), the batch with its results,
        and where the entries end in the payload."""
        payload = bytes(Ether(frame)[UDP].payload)
        op, flags, table, req, fi, fc, index, prio, draw, _total, status, ver, res = HEADER.unpack(
            payload[:32]
        )
        _next, count, beta = BATCH.unpack(payload[32:40])
        tree, num_leaves = self.tables[table]
        entries = b""
        for k in range(count):
            i, p, key, _t, _r = ENTRY.unpack_from(payload, 40 + ENTRY.size * k)
            result = self.update_entry(tree, num_leaves, flags, i, p, key)
            entries += ENTRY.pack(i, p, key, self.total(tree), result)
        new = HEADER.pack(
            op if reply_op is None else reply_op, flags | F_UPDATED, table, req, fi, fc, index, prio, draw,
            self.total(tree), status, ver, res,
        )  # fmt: skip
        return new, BATCH.pack(count, count, beta) + entries, 40 + ENTRY.size * count

    def update_batch(self, frame: bytes) -> bytes:
        new, batch, _ = self._apply_batch(frame, OP_UPDATE_REPLY)
        return reflected(frame, new, batch)

    def push_leaves(self, frame: bytes) -> bytes:
        """A PUSH_REPLY with leaves: each entry applied as an INSERT, routed on to the actor."""
        new, batch, end = self._apply_batch(frame, None)
        first_key = bytes(Ether(frame)[UDP].payload)[end:]
        return routed(frame, new, batch + first_key, LEARNER_NH)

    def sample_batch(self, frame: bytes, random_draw: bool = False) -> Out:
        payload = bytes(Ether(frame)[UDP].payload)
        op, flags, table, req, fi, fc, index, prio, draw, _t, status, ver, res = HEADER.unpack(payload[:32])
        _next, count, beta = BATCH.unpack(payload[32:40])
        tree, _ = self.tables[table]
        entries = b""
        free: set[int] = set()
        for k in range(count):
            _i, _p, u, _tt, r = ENTRY.unpack_from(payload, 40 + ENTRY.size * k)
            self.counters["samples", tree] += 1
            i, p = (0, 0) if random_draw else self.choose(tree, u)
            entries += ENTRY.pack(i, p, u, self.total(tree), r)
            if random_draw:  # index and priority depend on the switch's random numbers
                start = 14 + 20 + 8 + 40 + ENTRY.size * k
                free |= set(range(start, start + 8))
        new = HEADER.pack(
            op, flags | F_SAMPLED, table, req, fi, fc, index, prio, draw, self.total(tree), status, ver, res
        )
        return Out(SERVER_PORT, routed(frame, new, BATCH.pack(count, count, beta) + entries), frozenset(free))

    def choose(self, tree: int, u: int) -> tuple[int, int]:
        """Leaf index and value for fraction u: the first leaf whose prefix sum exceeds the draw;
        with nothing to choose (total 0) the descent ends at the last leaf."""
        total = self.total(tree)
        d = (u * total) >> 32
        acc = 0
        for i, v in enumerate(self.leaves[tree]):
            if d < acc + v:
                return i, v
            acc += v
        last = (1 << DEPTH) - 1
        return last, self.leaves[tree][last]

    def sample(self, frame: bytes, random_draw: bool = False) -> Out:
        payload = bytes(Ether(frame)[UDP].payload)
        op, flags, table, req, fi, fc, _i, _p, u, _t, status, ver, res = HEADER.unpack(payload[:32])
        tree, _ = self.tables[table]
        self.counters["samples", tree] += 1
        total = self.total(tree)
        if random_draw:
            index, prio = 0, 0
        else:
            index, prio = self.choose(tree, u)
        new = HEADER.pack(op, flags | F_SAMPLED, table, req, fi, fc, index, prio, u, total, status, ver, res)
        data = routed(frame, new)
        free: frozenset[int] = frozenset()
        if random_draw:  # index and priority depend on the switch's random number
            start = 14 + 20 + 8
            free = frozenset(range(start + 12, start + 20))
        return Out(SERVER_PORT, data, free)


def hexed(data: bytes, free: frozenset[int] = frozenset()) -> str:
    """Hex with a space after Ethernet, IPv4, UDP and the 32-byte replay header."""
    cuts = [14, 34, 42, 74]
    parts, prev = [], 0
    for c in [c for c in cuts if c < len(data)] + [len(data)]:
        parts.append("".join("**" if i in free else f"{data[i]:02x}" for i in range(prev, c)))
        prev = c
    return " ".join(p for p in parts if p)


class ReplayStf(StfFile):
    def __init__(self, name: str, title: list[str]):
        super().__init__(name, title)
        self.lines[1:3] = [
            "# GENERATED by tests/p4/innet/make_replay_stf.py: do not edit by hand; change the script and",
            "# run  .venv/bin/python tests/p4/innet/make_replay_stf.py",
        ]
        self.lines[3:7] = [  # (the aggregation files' packet layout lines do not apply)
            "# Expected packets and counters come from the script's model of docs/replay_protocol.md,",
            "# not from running the switch. Packet hex: Ethernet | IPv4 | UDP | replay header | body.",
        ]

    def packet(self, port: int, data: bytes) -> None:
        self.raw(f"packet {port} {hexed(data)}")

    def expect(self, out: Out) -> None:
        if out.note:
            self.raw(f"# {out.note}")
        self.raw(f"expect {out.port} {hexed(out.data, out.free)} $")

    def route_to_server(self) -> None:
        self.c(f"Route: {SERVER_IP}/32 -> port {SERVER_PORT} (the replay server, MAC {SERVER_NH}).")
        self.raw(
            f"add {FWD}ipv4_lpm hdr.ipv4.dst_addr:0x{ip_int(SERVER_IP):08x}/32 {FWD}set_nhop("
            f"dst_mac:0x{mac_int(SERVER_NH):012x}, src_mac:0x{mac_int(ROUTER):012x}, port:{SERVER_PORT})"
        )

    def hold(self, model: SumTreeModel, table: int, tree: int, num_leaves: int) -> None:
        model.tables[table] = (tree, num_leaves)
        self.c(f"Replay table {table}: tree {tree}, {num_leaves} leaves.")
        self.raw(
            f"add {RP}replay_tables hdr.replay.table_id:{table} {RP}set_replay_table(tree:{tree}, "
            f"num_leaves:{num_leaves})"
        )

    def update(
        self,
        model: SumTreeModel,
        table: int,
        req: int,
        index: int,
        prio: int,
        *why: str,
        key: int | None = None,
        insert: bool | None = None,
    ) -> None:
        """An UPDATE carrying ``key`` in draw (default: the leaf index), INSERT unless a ``key`` is
        given (a learner's) or ``insert`` says otherwise."""
        flags = F_INSERT if (key is None if insert is None else insert) else 0
        key = index if key is None else key
        frame = request(header(OP_UPDATE, table, req, index=index, priority=prio, draw=key, flags=flags))
        kind = "INSERT" if flags else "learner"
        self.c(*why) if why else self.c(f"UPDATE ({kind}, key {key}) table {table} leaf {index} := {prio}")
        self.packet(LEARNER_PORT, frame)
        self.expect(Out(LEARNER_PORT, model.update(frame)))

    def sample(
        self, model: SumTreeModel, table: int, req: int, u: int, *why: str, random_draw: bool = False
    ) -> None:
        flags = F_RANDOM if random_draw else 0
        frame = request(header(OP_SAMPLE, table, req, draw=u, flags=flags), struct.pack("!If", 1, 0.4))
        out = model.sample(frame, random_draw)
        tree = model.tables[table][0]
        if not random_draw:
            idx, prio = model.choose(tree, u)
            d = (u * model.total(tree)) >> 32
            why = why or (
                f"SAMPLE table {table}, u = 0x{u:08x}: draw {d} of total {model.total(tree)} -> leaf "
                f"{idx} (priority {prio})",
            )
        self.c(*why)
        self.packet(LEARNER_PORT, frame)
        self.expect(out)

    def update_batch(
        self,
        model: SumTreeModel,
        table: int,
        req: int,
        entries: list[tuple[int, int, int]],
        insert: bool,
        *why: str,
    ) -> None:
        """An UPDATE batch of (index, priority, key + 1) entries."""
        body = BATCH.pack(0, len(entries), 0.0) + b"".join(ENTRY.pack(i, p, k, 0, 0) for i, p, k in entries)
        flags = F_MULTI | (F_INSERT if insert else 0)
        frame = request(header(OP_UPDATE, table, req, flags=flags), body)
        self.c(*why) if why else self.c(
            f"UPDATE batch ({'INSERT' if insert else 'learner'}) table {table}: "
            f"(leaf, priority, key+1) {entries}"
        )
        self.packet(LEARNER_PORT, frame)
        self.expect(Out(LEARNER_PORT, model.update_batch(frame)))

    def sample_batch(
        self, model: SumTreeModel, table: int, req: int, us: list[int], *why: str, random_draw: bool = False
    ) -> None:
        body = BATCH.pack(0, len(us), 0.4) + b"".join(ENTRY.pack(0, 0, u, 0, 0) for u in us)
        flags = F_MULTI | (F_RANDOM if random_draw else 0)
        frame = request(header(OP_SAMPLE, table, req, flags=flags), body)
        out = model.sample_batch(frame, random_draw)
        self.c(*why) if why else self.c(f"SAMPLE batch table {table}, u = {[hex(u) for u in us]}")
        self.packet(LEARNER_PORT, frame)
        self.expect(out)

    def replay_counters(self, model: SumTreeModel) -> None:
        self.c("Counters (from the model):")
        for t in range(TREES):
            self.raw(f"check_counter {RP}replay_updates({t}) packets == {model.counters['updates', t]}")
            self.raw(f"check_counter {RP}replay_samples({t}) packets == {model.counters['samples', t]}")
        self.raw(f"check_counter {RP}replay_rejected(0) packets == {model.bad_index}   # bad index")
        self.raw(f"check_counter {RP}replay_rejected(1) packets == {model.key_mismatch}   # key mismatch")


def u_for(model: SumTreeModel, tree: int, draw: int) -> int:
    """The smallest fraction u whose scaled draw floor(u * total / 2^32) is `draw`."""
    total = model.total(tree)
    u = -(-(draw << 32) // total)  # ceil
    assert (u * total) >> 32 == draw and u <= M32
    return u


def replay_update_sample() -> StfFile:
    f = ReplayStf(
        "replay_update_sample",
        [
            "Priorities in the switch: UPDATE_PRIORITY sets leaves of table 0 (tree 1, 1000 leaves) and",
            "comes back as UPDATE_REPLY with the new total; a smaller priority lowers the total (the",
            "difference is added mod 2^32); an index at or beyond the table's leaves comes back as ERROR",
            "BAD_INDEX and changes nothing. SAMPLE descends by the draw, at and around every prefix-sum",
            "boundary (a draw equal to a prefix sum picks the next non-empty leaf), and is routed to the",
            "server with index, priority, total and SWITCH_SAMPLED. With RANDOM_DRAW the switch draws.",
        ],
    )
    m = SumTreeModel()
    f.route_to_server()
    f.hold(m, 0, 1, 1000)
    f.watch_port0()
    req = 100
    for index, prio in ((0, 5), (1, 3), (7, 10), (999, 7), (500, 1 << 20), (7, 4)):
        req += 1
        f.update(m, 0, req, index, prio)
    f.update(
        m, 0, 200, 1000, 9, "UPDATE leaf 1000 of a 1000-leaf table: ERROR BAD_INDEX back, nothing changed"
    )
    f.update(m, 0, 201, 0xFFFFFFFF, 9, "UPDATE leaf 2^32-1: ERROR BAD_INDEX (no wrap into another tree)")
    # leaves now: 0:5 1:3 7:4 500:2^20 999:7  -> prefix sums 5, 8, 12, 12+2^20, ...
    boundaries = [0, 4, 5, 7, 8, 11, 12, 12 + (1 << 20) - 1, 12 + (1 << 20), m.total(1) - 1]
    for k, d in enumerate(boundaries):
        f.sample(m, 0, 300 + k, u_for(m, 1, d))
    f.sample(m, 0, 320, 0xFFFFFFFF)
    f.sample(
        m,
        0,
        321,
        0,
        "SAMPLE with RANDOM_DRAW: the leaf depends on the switch's random number "
        "(index and priority bytes are don't-care); total is known",
        random_draw=True,
    )
    f.replay_counters(m)
    return f


def replay_full_depth() -> StfFile:
    f = ReplayStf(
        "replay_full_depth",
        [
            "A table of 2^14 leaves (every leaf of tree 3): the first and last leaves and ones whose",
            "paths differ at the top and at the bottom of the tree; updates that replace values, one",
            "that sets a leaf to 0 (never sampled afterwards), and leaves at the largest value the protocol",
            "allows for 2^14 leaves (2^32 / 2^14 - 1).",
            "A tree whose total is 0 ends its descent at the last leaf with priority 0.",
        ],
    )
    m = SumTreeModel()
    f.route_to_server()
    f.hold(m, 2, 3, 1 << DEPTH)
    f.hold(m, 1, 0, 16)
    f.sample(
        m,
        1,
        1,
        0x80000000,
        "SAMPLE of table 1 (tree 0), nothing set: total 0 -> last leaf "
        f"{(1 << DEPTH) - 1}, priority 0 (the server answers EMPTY)",
    )
    big = (1 << 18) - 1
    leaves = [
        (0, big),
        ((1 << DEPTH) - 1, big),
        ((1 << (DEPTH - 1)) - 1, 3),
        (1 << (DEPTH - 1), 11),
        (1, 2),
        (8190, big),
        (8194, 1),
    ]
    for k, (i, p) in enumerate(leaves):
        f.update(m, 2, 10 + k, i, p)
    for k, d in enumerate([0, big - 1, big, big + 1, big + 2, big + 4, big + 5, m.total(3) - 1]):
        f.sample(m, 2, 40 + k, u_for(m, 3, d))
    f.update(m, 2, 60, 0, 0, "UPDATE leaf 0 := 0: it can no longer be drawn")
    for k, d in enumerate([0, 1, 2, m.total(3) - 1]):
        f.sample(m, 2, 61 + k, u_for(m, 3, d))
    f.replay_counters(m)
    return f


def replay_isolation() -> StfFile:
    f = ReplayStf(
        "replay_isolation",
        [
            "Two tables in two trees (table 4 -> tree 0, table 5 -> tree 2, 64 leaves each): the same leaf",
            "index in each holds its own value, each total counts only its own tree, and samples of one",
            "table never return the other's leaves.",
        ],
    )
    m = SumTreeModel()
    f.route_to_server()
    f.hold(m, 4, 0, 64)
    f.hold(m, 5, 2, 64)
    f.update(m, 4, 1, 5, 100)
    f.update(m, 5, 2, 5, 1)
    f.update(m, 5, 3, 63, 50)
    f.update(m, 4, 4, 63, 7)
    for k, (t, tree) in enumerate(((4, 0), (5, 2))):
        for j, d in enumerate((0, m.total(tree) - 1)):
            f.sample(m, t, 10 + 2 * k + j, u_for(m, tree, d))
    f.replay_counters(m)
    return f


def replay_passthrough() -> StfFile:
    f = ReplayStf(
        "replay_passthrough",
        [
            "Replay packets the switch does not act on are routed to the server unchanged (MACs, TTL - 1,",
            "IPv4 checksum): SAMPLE and UPDATE of a table it does not hold (the server's host path),",
            "PUSH and other ops of a held table, host-path forms of UPDATE/SAMPLE of a held table (a body,",
            "a fragment, another protocol version: the server answers them), and a datagram too short",
            "for the replay header.",
        ],
    )
    m = SumTreeModel()
    f.route_to_server()
    f.hold(m, 0, 0, 128)
    f.watch_port0()
    cases = [
        (
            "SAMPLE of table 7 (not held)",
            request(header(OP_SAMPLE, 7, 1, draw=5), struct.pack("!If", 32, 0.4)),
        ),
        (
            "UPDATE_PRIORITY of table 7 (not held), host-path body",
            request(header(OP_UPDATE, 7, 2), struct.pack("!IQf", 1, 3, 2.0)),
        ),
        (
            "PUSH to table 0 (held: PUSH is the server's)",
            request(header(OP_PUSH, 0, 3), struct.pack("!IfI", 1, 1.5, 4) + b"item"),
        ),
        ("op 11 INFO of table 0", request(header(11, 0, 4))),
        (
            "UPDATE_PRIORITY of held table 0 with a host-path body (a batch of entries)",
            request(header(OP_UPDATE, 0, 5), struct.pack("!IQf", 1, 3, 2.0)),
        ),
        (
            "SAMPLE of held table 0 with a host-path batch of 32 and a 4-byte extra body",
            request(header(OP_SAMPLE, 0, 6, draw=5), struct.pack("!IfI", 32, 0.4, 0)),
        ),
        (
            "UPDATE_PRIORITY of held table 0, fragment 0 of 2",
            request(header(OP_UPDATE, 0, 7, index=1, priority=5, frag=(0, 2))),
        ),
        (
            "UPDATE_PRIORITY of held table 0 with protocol version 2",
            request(header(OP_UPDATE, 0, 8, index=1, priority=5, version=2)),
        ),
        (
            "10 bytes of UDP payload: no replay header",
            bytes(
                Ether(dst=ROUTER, src=LEARNER_MAC)
                / IP(src=LEARNER_IP, dst=SERVER_IP, ttl=9)
                / UDP(sport=LEARNER_UDP, dport=REPLAY_PORT, chksum=0)
                / Raw(b"0123456789")
            ),
        ),
    ]
    for why, frame in cases:
        f.c(why + ": routed unchanged")
        f.packet(LEARNER_PORT, frame)
        f.expect(Out(SERVER_PORT, routed(frame)))
    f.replay_counters(m)
    return f


def replay_keys() -> StfFile:
    f = ReplayStf(
        "replay_keys",
        [
            "Each leaf remembers the key of the item it stands for (INSERT sets it). A learner's UPDATE",
            "with that key changes the priority; one with another key -- the item was evicted since it",
            "was sampled and the slot now holds a newer one -- comes back with KEY_MISMATCH and changes",
            "nothing, not even after the slot's new item has been inserted with a larger key.",
        ],
    )
    m = SumTreeModel()
    f.route_to_server()
    f.hold(m, 0, 2, 8)
    f.update(m, 0, 1, 3, 100, "INSERT key 3 in leaf 3 (max_size 8): priority 100")
    f.update(m, 0, 2, 3, 40, "learner UPDATE key 3 := 40: applied", key=3)
    f.update(m, 0, 3, 3, 900, "learner UPDATE key 11 (= 3 + 8, not inserted yet): ignored", key=11)
    f.update(
        m,
        0,
        4,
        3,
        7,
        "INSERT key 11 in leaf 3 (the item with key 3 evicted): priority 7",
        key=11,
        insert=True,
    )
    f.update(m, 0, 5, 3, 500, "learner UPDATE of the evicted key 3 := 500: ignored, leaf keeps 7", key=3)
    f.update(m, 0, 6, 3, 9, "learner UPDATE key 11 := 9: applied", key=11)
    f.update(
        m, 0, 7, 5, 60, "learner UPDATE key 0x80000005 of leaf 5, never inserted: ignored", key=0x80000005
    )
    f.sample(m, 0, 8, 0)
    f.replay_counters(m)
    return f


def replay_batch() -> StfFile:
    f = ReplayStf(
        "replay_batch",
        [
            f"Batches (flag MULTI): one datagram of up to {MAX_ENTRIES} UPDATEs or SAMPLE draws, done",
            "entry by entry in order. An UPDATE batch comes back once, every entry with its result",
            "(applied, KEY_MISMATCH, BAD_INDEX) and the total after it; a leaf named twice keeps the later",
            "value. A SAMPLE batch goes to the server once with each entry's leaf, priority and total.",
            f"Batches the switch does not take (count 0 or above {MAX_ENTRIES}, a length that does not fit",
            "the count, `next` not 0, entries cut short, a table it does not hold) are routed to the",
            "server unchanged.",
        ],
    )
    m = SumTreeModel()
    f.route_to_server()
    f.hold(m, 0, 1, 1000)
    f.watch_port0()
    f.update_batch(m, 0, 1, [(0, 5, 1), (1, 3, 2), (7, 10, 8)], True)
    f.update_batch(
        m,
        0,
        2,
        [(1, 30, 2), (7, 40, 99), (1000, 1, 1001), (0, 6, 1), (1, 31, 2)],
        False,
        "learner UPDATE batch: leaf 1 := 30, leaf 7 with another key (ignored), leaf 1000 (BAD_INDEX),",
        "leaf 0 := 6, leaf 1 again := 31 (the later value stays)",
    )
    full = [(100 + 13 * k, 1 + k * k, 200 + k) for k in range(MAX_ENTRIES)]
    f.update_batch(m, 0, 3, full, True, f"a full batch: {MAX_ENTRIES} INSERTs, one recirculation pass each")
    f.sample_batch(m, 0, 4, [u_for(m, 1, d) for d in (0, 5, 6, 36)] + [M32])
    f.sample_batch(
        m,
        0,
        5,
        [0] * 3,
        "SAMPLE batch with RANDOM_DRAW: the leaves depend on the switch's random numbers "
        "(index and priority bytes are don't-care)",
        random_draw=True,
    )
    f.sample_batch(m, 0, 6, [u_for(m, 1, d) for d in range(0, 2 * MAX_ENTRIES, 2)], "a full SAMPLE batch")

    def batch_frame(
        op: int, req: int, count: int, entries: int, next_: int = 0, table: int = 0, **udp: int
    ) -> bytes:
        body = BATCH.pack(next_, count, 0.0) + b"".join(ENTRY.pack(k, 1, k + 1, 0, 0) for k in range(entries))
        return bytes(
            Ether(dst=ROUTER, src=LEARNER_MAC)
            / IP(src=LEARNER_IP, dst=SERVER_IP, ttl=64, id=0x4242)
            / UDP(sport=LEARNER_UDP, dport=REPLAY_PORT, chksum=0, **udp)
            / Raw(header(op, table, req, flags=F_MULTI | F_INSERT) + body)
        )

    cases = [
        ("UPDATE batch of count 0", batch_frame(OP_UPDATE, 10, 0, 0)),
        (
            f"UPDATE batch of count {MAX_ENTRIES + 1} ({MAX_ENTRIES + 1} entries)",
            batch_frame(OP_UPDATE, 11, MAX_ENTRIES + 1, MAX_ENTRIES + 1),
        ),
        ("UPDATE batch of count 3 holding 4 entries", batch_frame(OP_UPDATE, 12, 3, 4)),
        (
            "SAMPLE batch of count 4 holding 3 entries, UDP length saying 4",
            batch_frame(OP_SAMPLE, 13, 4, 3, len=8 + 32 + 8 + 4 * ENTRY.size),
        ),
        (
            "UPDATE batch with next = 1 from a host (only the switch's recirculated passes go on)",
            batch_frame(OP_UPDATE, 14, 2, 2, next_=1),
        ),
        ("UPDATE with MULTI and no batch header", request(header(OP_UPDATE, 0, 15, flags=F_MULTI))),
        ("UPDATE batch of table 7 (not held: no SWITCH_UPDATED)", batch_frame(OP_UPDATE, 16, 3, 3, table=7)),
        ("SAMPLE batch of table 7 (not held)", batch_frame(OP_SAMPLE, 17, 2, 2, table=7)),
    ]
    for why, frame in cases:
        f.c(why + ": routed unchanged")
        f.packet(LEARNER_PORT, frame)
        f.expect(Out(SERVER_PORT, routed(frame)))
    f.replay_counters(m)
    return f


def server_reply(hdr: bytes, body: bytes = b"", **udp: int) -> bytes:
    """Replay server -> learner or actor (a reply, through the switch)."""
    return bytes(
        Ether(dst=ROUTER, src=SERVER_NH)
        / IP(src=SERVER_IP, dst=LEARNER_IP, ttl=64, id=0x4343)
        / UDP(sport=REPLAY_PORT, dport=LEARNER_UDP, chksum=0, **udp)
        / Raw(hdr + body)
    )


def push_leaves_body(entries: list[tuple[int, int, int]], first_key: int, count: int | None = None) -> bytes:
    """A PUSH_REPLY with leaves: batch header, (slot, leaf, key + 1) entries, u64 first key."""
    n = len(entries) if count is None else count
    return (
        BATCH.pack(0, n, 0.0)
        + b"".join(ENTRY.pack(i, p, k, 0, 0) for i, p, k in entries)
        + struct.pack("!Q", first_key)
    )


def replay_push_leaves() -> StfFile:
    f = ReplayStf(
        "replay_push_leaves",
        [
            "The server's answer to a switch-path PUSH (PUSH_REPLY, flags MULTI + INSERT) carries the",
            "pushed items' leaves as an UPDATE batch, then the u64 first key: the switch sets them one",
            "per pass as the reply goes by and routes it on to the actor with SWITCH_UPDATED, each",
            "entry's result and total, `next` = count and UDP checksum 0. Every other reply (a host-path",
            "PUSH_REPLY, one without INSERT, of a table it does not hold, of the wrong length, a",
            "SAMPLE_REPLY with MULTI) is routed unchanged; a SAMPLE then finds the leaves set.",
        ],
    )
    m = SumTreeModel()
    f.route_to_server()
    f.c(f"Route: {LEARNER_IP}/32 -> port {LEARNER_PORT} (the actor, MAC {LEARNER_NH}).")
    f.raw(
        f"add {FWD}ipv4_lpm hdr.ipv4.dst_addr:0x{ip_int(LEARNER_IP):08x}/32 {FWD}set_nhop("
        f"dst_mac:0x{mac_int(LEARNER_NH):012x}, src_mac:0x{mac_int(ROUTER):012x}, port:{LEARNER_PORT})"
    )
    f.hold(m, 0, 2, 100)
    f.watch_port0()
    leaves = F_MULTI | F_INSERT

    def push_reply(why: str, req: int, entries: list[tuple[int, int, int]], first_key: int) -> None:
        frame = server_reply(
            header(OP_PUSH_REPLY, 0, req, flags=leaves), push_leaves_body(entries, first_key)
        )
        f.c(why)
        f.packet(SERVER_PORT, frame)
        f.expect(Out(LEARNER_PORT, m.push_leaves(frame)))

    push_reply(
        "PUSH_REPLY with the leaves of keys 0..2 (slots 0..2)", 1, [(0, 40, 1), (1, 50, 2), (2, 60, 3)], 0
    )
    push_reply(
        "keys 99..101 of a 100-slot table: slots 99, 0, 1 (the newer items take them); slot 100 of a "
        "101st leaf would be BAD_INDEX",
        2,
        [(99, 7, 100), (0, 8, 101), (1, 9, 102), (100, 1, 103)],
        99,
    )
    full = [(k % 100, 1 + k, 200 + k) for k in range(MAX_ENTRIES)]
    push_reply(f"a full PUSH_REPLY: {MAX_ENTRIES} leaves, one pass each", 3, full, 199)
    f.sample(m, 0, 4, u_for(m, 2, 0))
    f.sample(m, 0, 5, u_for(m, 2, m.total(2) - 1))
    cases = [
        (
            "host-path PUSH_REPLY (no MULTI): u32 count, u64 keys",
            server_reply(header(OP_PUSH_REPLY, 0, 10), struct.pack("!IQ", 1, 7)),
        ),
        (
            "PUSH_REPLY with MULTI and no INSERT",
            server_reply(header(OP_PUSH_REPLY, 0, 11, flags=F_MULTI), push_leaves_body([(5, 5, 6)], 5)),
        ),
        (
            "PUSH_REPLY with leaves of table 7 (not held)",
            server_reply(header(OP_PUSH_REPLY, 7, 12, flags=leaves), push_leaves_body([(5, 5, 6)], 5)),
        ),
        (
            "PUSH_REPLY with leaves but no first key (UDP length 8 short)",
            server_reply(header(OP_PUSH_REPLY, 0, 13, flags=leaves), push_leaves_body([(5, 5, 6)], 5)[:-8]),
        ),
        (
            "PUSH_REPLY whose count says 2 with one entry",
            server_reply(
                header(OP_PUSH_REPLY, 0, 14, flags=leaves), push_leaves_body([(5, 5, 6)], 5, count=2)
            ),
        ),
        (
            "PUSH_REPLY with leaves, fragment 0 of 2",
            server_reply(
                header(OP_PUSH_REPLY, 0, 15, flags=leaves, frag=(0, 2)), push_leaves_body([(5, 5, 6)], 5)
            ),
        ),
        (
            "SAMPLE_REPLY with MULTI + SWITCH_SAMPLED (an answer to a SAMPLE batch)",
            server_reply(header(OP_SAMPLE_REPLY, 0, 16, flags=F_MULTI | F_SAMPLED), bytes(range(60))),
        ),
    ]
    for why, frame in cases:
        f.c(why + ": routed unchanged")
        f.packet(SERVER_PORT, frame)
        f.expect(Out(LEARNER_PORT, routed(frame, next_hop=LEARNER_NH)))
    f.replay_counters(m)
    return f


SCENARIOS = [
    replay_update_sample,
    replay_batch,
    replay_push_leaves,
    replay_keys,
    replay_full_depth,
    replay_isolation,
    replay_passthrough,
]


def main() -> None:
    for make in SCENARIOS:
        path = make().write()
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
