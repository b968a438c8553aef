"""Replay tables held by one switch: the Replay control (p4/replay.p4).

A replay table whose priorities live in the switch gets one of the switch's REPLAY_TREES
sum-trees (table id -> tree, number of leaves = the table's max_size). Installing a table
clears its tree first, so that a tree used before by another table cannot leak priorities.
Everything a table owns lies in its own tree's register range, so installing or removing one
table never touches another's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from control_plane.p4runtime_client import ControlPlaneError, P4RuntimeClient

# Mirrors p4/include/types.p4 (tests/test_control_plane_replay.py checks that they agree).
TREE_DEPTH = 14  # REPLAY_TREE_DEPTH
TREES = 4  # REPLAY_TREES
LEAVES = 1 << TREE_DEPTH
MAX_TABLE_ID = 0xFFFF  # table_id is 16 bits on the wire
REJECT_REASONS = ("bad_index", "key_mismatch")  # REPLAY_REJECT_* in types.p4


@dataclass(frozen=True)
class ReplayTable:
    table_id: int
    tree: int
    num_leaves: int


class Replay:
    """Owns ``InnetIngress.replay``: table replay_tables, the tree registers and the counters."""

    PREFIX = "InnetIngress.replay."

    def __init__(self, client: P4RuntimeClient, prefix: str = PREFIX) -> None:
        self.client = client
        self.p = prefix

    # ---- tables ----
    def tables(self) -> dict[int, ReplayTable]:
        """table id -> its tree and number of leaves, as installed."""
        out = {}
        for e in self.client.read_entries(self.p + "replay_tables"):
            tid = e.match["hdr.replay.table_id"]
            out[tid] = ReplayTable(tid, e.params["tree"], e.params["num_leaves"])
        return out

    def install_table(self, table_id: int, num_leaves: int, tree: int | None = None) -> ReplayTable:
        """Hold the priorities of replay table ``table_id`` (``num_leaves`` = its max_size) in a
        free tree (or ``tree``), cleared first. Refuses a table already held, a tree in use, a
        table larger than a tree."""
        if not 0 <= table_id <= MAX_TABLE_ID:
            raise ControlPlaneError(f"replay table id {table_id} is outside 0..{MAX_TABLE_ID}")
        if not 1 <= num_leaves <= LEAVES:
            raise ControlPlaneError(
                f"replay table {table_id}: {num_leaves} leaves do not fit a switch tree of {LEAVES} "
                "(keep the table on the replay server's host path instead)"
            )
        held = self.tables()
        if table_id in held:
            raise ControlPlaneError(f"replay table {table_id} is already held in tree {held[table_id].tree}")
        used = {t.tree for t in held.values()}
        if tree is None:
            free = [t for t in range(TREES) if t not in used]
            if not free:
                raise ControlPlaneError(f"all {TREES} replay trees of the switch are in use: {sorted(held)}")
            tree = free[0]
        elif not 0 <= tree < TREES:
            raise ControlPlaneError(f"tree {tree} is outside 0..{TREES - 1}")
        elif tree in used:
            raise ControlPlaneError(f"tree {tree} already holds another replay table")
        self.clear_tree(tree)
        self.client.insert_entry(
            self.p + "replay_tables",
            {"hdr.replay.table_id": table_id},
            self.p + "set_replay_table",
            {"tree": tree, "num_leaves": num_leaves},
        )
        return ReplayTable(table_id, tree, num_leaves)

    def remove_table(self, table_id: int) -> None:
        """Stop holding ``table_id`` (its packets then pass to the server) and clear its tree."""
        held = self.tables()
        if table_id not in held:
            raise ControlPlaneError(f"replay table {table_id} is not held by this switch")
        self.client.delete_entry(self.p + "replay_tables", {"hdr.replay.table_id": table_id})
        self.clear_tree(held[table_id].tree)

    # ---- tree registers ----
    def _level_cells(self, tree: int, level: int) -> range:
        n = 1 << (level - 1)  # cells per tree in each of the level's two arrays
        return range(tree * n, (tree + 1) * n)

    def clear_tree(self, tree: int, full: bool = False) -> None:
        """Zero every cell of ``tree``.

        By default from the root down, reading only the children of cells that were not zero:
        each inner cell is the sum of its two children, so a zero cell has no value below it
        (leaves capped as the protocol's fixed point says, 2^32 / leaves - 1, cannot wrap a
        sum to zero). An empty tree costs one read, a tree with k leaves set about 2k per
        level. ``full`` reads every cell instead (2^15 of them: seconds on the software
        switch), for a tree written other than through UPDATE_PRIORITY."""
        if not self._zero_cells("replay_root", [tree]) and not full:
            return
        frontier = [0]  # nodes of the previous level that were not zero
        for level in range(1, TREE_DEPTH + 1):
            base = tree << (level - 1)
            cells = list(self._level_cells(tree, level)) if full else [base + n for n in frontier]
            nxt = []
            for side, name in ((0, f"replay_left_{level}"), (1, f"replay_right_{level}")):
                nxt += [((c - base) << 1) | side for c in self._zero_cells(name, cells)]
            if not nxt and not full:
                return
            frontier = sorted(nxt)

    def _zero_cells(self, name: str, cells: list[int]) -> list[int]:
        """Zero those of ``cells`` of register array ``name`` that are not zero; returns them."""
        got = self.client.read_registers(self.p + name, cells)
        nonzero = [c for c, v in got.items() if v]
        if nonzero:
            self.client.write_registers(self.p + name, dict.fromkeys(nonzero, 0))
        return nonzero

    def leaves(self, tree: int, count: int = LEAVES) -> np.ndarray:
        """The first ``count`` leaf values of ``tree`` (fixed point), in leaf order."""
        if not 0 <= count <= LEAVES:
            raise ControlPlaneError(f"a tree has {LEAVES} leaves, not {count}")
        cells = self._level_cells(tree, TREE_DEPTH)[: (count + 1) // 2]
        left = self.client.read_registers(self.p + f"replay_left_{TREE_DEPTH}", list(cells))
        right = self.client.read_registers(self.p + f"replay_right_{TREE_DEPTH}", list(cells))
        out = np.zeros(2 * len(cells), dtype=np.uint64)
        out[0::2] = [left.get(c, 0) for c in cells]
        out[1::2] = [right.get(c, 0) for c in cells]
        return out[:count]

    def leaf(self, tree: int, index: int) -> int:
        """One leaf of ``tree``."""
        if not 0 <= index < LEAVES:
            raise ControlPlaneError(f"leaf {index} is outside 0..{LEAVES - 1}")
        side = "right" if index & 1 else "left"
        cell = (tree << (TREE_DEPTH - 1)) | (index >> 1)
        return self.client.read_register(self.p + f"replay_{side}_{TREE_DEPTH}", cell)

    def total(self, tree: int) -> int:
        """The tree's root: the sum of its leaves mod 2^32."""
        return self.client.read_register(self.p + "replay_root", tree)

    # ---- counters ----
    def counters(self, tree: int) -> dict[str, int]:
        return {
            "samples": self.client.read_counter(self.p + "replay_samples", tree)[0],
            "updates": self.client.read_counter(self.p + "replay_updates", tree)[0],
        }

    def rejected(self) -> dict[str, int]:
        return {
            reason: self.client.read_counter(self.p + "replay_rejected", i)[0]
            for i, reason in enumerate(REJECT_REASONS)
        }
