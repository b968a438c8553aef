"""control_plane.replay against a real software switch (no ports: P4Runtime only): replay tables
take free trees, installing clears the tree's registers (and only that tree's), refusals are
clear errors, and the CLI's replay commands; the constants mirror p4/include/types.p4."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from control_plane import replay as cp_replay
from control_plane.p4runtime_client import ControlPlaneError
from control_plane.switch_controller import SwitchController
from topologies.testbed import SwitchProcess

REPO = Path(__file__).resolve().parent.parent
RP = "InnetIngress.replay."


@pytest.fixture(scope="module")
def switch() -> Iterator[SwitchProcess]:
    proc = SwitchProcess({})
    yield proc
    proc.stop()


@pytest.fixture()
def sc(switch: SwitchProcess) -> Iterator[SwitchController]:
    with SwitchController(switch.address) as ctl:
        ctl.load()  # empty tables and registers for every test
        yield ctl


def test_constants_mirror_types_p4() -> None:
    text = (REPO / "p4" / "include" / "types.p4").read_text()
    defines = dict(re.findall(r"#define (REPLAY_\w+) (\d+)\b", text))
    assert int(defines["REPLAY_TREE_DEPTH"]) == cp_replay.TREE_DEPTH
    assert int(defines["REPLAY_TREES"]) == cp_replay.TREES
    levels = re.search(r"#define REPLAY_LEVEL_LIST\(X\) \\\n(.*)\n", text).group(1)
    assert re.findall(r"X\((\d+)\)", levels) == [str(i) for i in range(1, cp_replay.TREE_DEPTH + 1)]


def test_tables_take_free_trees_and_read_back(sc: SwitchController) -> None:
    a = sc.replay.install_table(3, 1000)
    b = sc.replay.install_table(9, cp_replay.LEAVES)
    c = sc.replay.install_table(1, 16, tree=3)
    assert (a.tree, b.tree, c.tree) == (0, 1, 3)
    assert sc.replay.tables() == {3: a, 9: b, 1: c}
    d = sc.replay.install_table(2, 8)
    assert d.tree == 2
    with pytest.raises(ControlPlaneError, match="all 4 replay trees"):
        sc.replay.install_table(4, 8)
    sc.replay.remove_table(9)
    assert sc.replay.install_table(4, 8).tree == 1  # the freed tree is reused


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0, 0), "leaves do not fit"),
        ((0, cp_replay.LEAVES + 1), "leaves do not fit"),
        ((0x10000, 8), "outside 0..65535"),
        ((0, 8, 4), "tree 4 is outside"),
    ],
)
def test_install_refusals(sc: SwitchController, args: tuple[int, ...], message: str) -> None:
    with pytest.raises(ControlPlaneError, match=message):
        sc.replay.install_table(*args)
    assert sc.replay.tables() == {}


def test_refuses_a_held_table_and_a_used_tree(sc: SwitchController) -> None:
    sc.replay.install_table(5, 64, tree=2)
    with pytest.raises(ControlPlaneError, match="already held in tree 2"):
        sc.replay.install_table(5, 64)
    with pytest.raises(ControlPlaneError, match="tree 2 already holds"):
        sc.replay.install_table(6, 64, tree=2)
    with pytest.raises(ControlPlaneError, match="not held"):
        sc.replay.remove_table(6)


def write_leaf_path(sc: SwitchController, tree: int, leaf: int, value: int) -> None:
    """Set ``leaf`` of ``tree`` and add ``value`` along its path, as UPDATE_PRIORITY would."""
    depth = cp_replay.TREE_DEPTH
    c = sc.client
    for level in range(depth, 0, -1):
        node = leaf >> (depth - level)
        cell = (tree << (level - 1)) | (node >> 1)
        name = RP + ("replay_right_" if node & 1 else "replay_left_") + str(level)
        c.write_registers(name, {cell: c.read_register(name, cell) + value})
    c.write_registers(RP + "replay_root", {tree: sc.replay.total(tree) + value})


def test_install_clears_only_its_own_tree(sc: SwitchController) -> None:
    """Leftover priorities in tree 1 (a table removed by a crashed controller) are zeroed when a
    table takes tree 1, down to the last leaf; trees 0 and 2 keep theirs."""
    last = cp_replay.LEAVES - 1
    for tree, leaf, value in ((1, 0, 7), (1, 5, 11), (1, last, 9), (0, 0, 3), (2, last, 10)):
        write_leaf_path(sc, tree, leaf, value)
    assert sc.replay.total(1) == 27 and sc.replay.leaves(1, 8).tolist() == [7, 0, 0, 0, 0, 11, 0, 0]
    assert sc.replay.leaf(1, last) == 9
    sc.replay.install_table(0, 100, tree=1)
    assert sc.replay.total(1) == 0
    assert sc.replay.leaves(1, 8).sum() == 0 and sc.replay.leaf(1, last) == 0
    assert sc.client.read_register(RP + "replay_left_1", 1) == 0
    assert sc.client.read_register(RP + "replay_right_1", 1) == 0
    assert sc.replay.total(0) == 3 and sc.replay.leaf(0, 0) == 3
    assert sc.replay.total(2) == 10 and sc.replay.leaf(2, last) == 10


def test_full_clear_zeroes_cells_outside_any_sum(sc: SwitchController) -> None:
    """Values written straight into registers, with no sum above them, survive the default
    clear (it trusts the sums) and are zeroed by a full one."""
    depth = cp_replay.TREE_DEPTH
    half = 1 << (depth - 1)
    sc.client.write_registers(RP + f"replay_left_{depth}", {half + 3: 5})  # tree 1, leaf 6
    sc.replay.clear_tree(1)
    assert sc.replay.leaf(1, 6) == 5
    sc.replay.clear_tree(1, full=True)
    assert sc.replay.leaf(1, 6) == 0


def test_reads_of_more_cells_than_one_request_or_response_holds_return_every_cell(
    sc: SwitchController,
) -> None:
    """The client splits a Read into requests of READ_BATCH entities and the switch answers in
    responses of up to 1000; neither split may lose, repeat or shift a cell."""
    from control_plane.p4runtime_client import READ_BATCH

    name = RP + f"replay_left_{cp_replay.TREE_DEPTH}"
    cells = list(range(READ_BATCH + 1500))
    sc.client.write_registers(name, {c: 7 * c + 1 for c in cells})
    got = sc.client.read_registers(name, cells)
    assert got == {c: 7 * c + 1 for c in cells}


def test_leaves_interleave_left_and_right_arrays(sc: SwitchController) -> None:
    depth = cp_replay.TREE_DEPTH
    half = 1 << (depth - 1)
    sc.client.write_registers(RP + f"replay_left_{depth}", {3 * half + 2: 40})  # tree 3, leaf 4
    sc.client.write_registers(RP + f"replay_right_{depth}", {3 * half + 2: 50})  # tree 3, leaf 5
    leaves = sc.replay.leaves(3, 8)
    assert leaves.tolist() == [0, 0, 0, 0, 40, 50, 0, 0]


def cli(switch: SwitchProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "control_plane", "--switch", switch.address, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )


def test_cli_install_show_remove(switch: SwitchProcess, sc: SwitchController) -> None:
    sc.close()  # the CLI becomes the primary controller
    r = cli(switch, "replay", "install", "--table", "7", "--leaves", "4096")
    assert r.returncode == 0, r.stderr
    assert "tree 0" in r.stdout
    r = cli(switch, "replay", "show", "--json")
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    assert shown["tables"] == {"7": {"tree": 0, "num_leaves": 4096, "total": 0, "samples": 0, "updates": 0}}
    assert shown["rejected"] == {"bad_index": 0, "key_mismatch": 0}
    r = cli(switch, "replay", "install", "--table", "8", "--leaves", "20000")
    assert r.returncode == 1 and r.stderr.startswith("error: ") and "do not fit" in r.stderr
    assert "Traceback" not in r.stderr
    r = cli(switch, "replay", "remove", "--table", "7")
    assert r.returncode == 0, r.stderr
    r = cli(switch, "replay", "show")
    assert r.returncode == 0 and "no replay table held" in r.stdout
