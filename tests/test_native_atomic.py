"""Packets from several ports at once never interleave a register's read-modify-write on the
native switch (as bmv2 guarantees for @atomic blocks, which in-switch aggregation depends on).

Four ports hammer one register cell (tests/p4/hammer.p4) at full speed, each port's frames
carrying their own value, from bench/blast.c (batched AF_PACKET sends on four veth pairs). The
program adds each value into the cell and counts the packet per ingress port; afterwards the
cell must equal sum over ports of (packets counted on the port) x (the port's value) exactly.
The values occupy separate bit ranges, so a lost addition cannot hide behind another port's.
"""

from __future__ import annotations

import shutil
import struct
import time
from pathlib import Path

import pytest

from control_plane.p4runtime_client import P4RuntimeClient
from topologies.netns import create_namespace, create_veth_pair
from topologies.testbed import SwitchProcess

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "tests" / "p4" / "hammer.p4"
PORTS = (1, 2, 3, 4)


def port_value(port: int) -> int:
    return (port << 40) | (port * 7919)


def frame(port: int) -> bytes:
    hdr = bytes.fromhex("02000000aa01") + bytes.fromhex(f"0200000001{port:02x}") + b"\x88\xb6"
    return (hdr + struct.pack("!QI", port_value(port), 0)).ljust(60, b"\0")


def _counts(client: P4RuntimeClient) -> tuple[int, dict[int, int]]:
    total = client.read_register("HammerIngress.total", 0)
    return total, {p: client.read_counter("HammerIngress.added", p)[0] for p in PORTS}


@pytest.mark.netns
@pytest.mark.slow
def test_one_register_cell_hammered_from_four_ports_holds_the_exact_sum(monkeypatch) -> None:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    from bench.softswitch_pps import build_blast

    blast = build_blast()
    monkeypatch.setenv("INNET_SWITCH_BACKEND", "native")
    ns = create_namespace("ham")
    pairs = []
    switch = None
    try:
        pairs = [create_veth_pair(peer_ns=ns, prefix="ham") for _ in PORTS]
        switch = SwitchProcess({p: pair.host_if for p, pair in zip(PORTS, pairs, strict=True)}, p4=PROGRAM)
        with P4RuntimeClient(switch.address) as client:
            client.fetch_pipeline()
            argv = [str(blast), "1.0", "1", "22", "24"]  # slot/round land in the ignored bytes
            for p, pair in zip(PORTS, pairs, strict=True):
                argv += [pair.ns_if, frame(p).hex()]
            sender = ns.popen(argv)
            out, err = sender.communicate(timeout=60)
            assert sender.returncode == 0, err
            # the switch drains its rings: wait until the counts stop moving
            before, deadline = _counts(client), time.monotonic() + 20
            while time.monotonic() < deadline:
                time.sleep(0.3)
                now = _counts(client)
                if now == before:
                    break
                before = now
            total, counted = before
        print(f"packets added per port: {counted}; sender: {out.strip()}")
        assert switch.proc.poll() is None, switch.stderr_tail()
        assert all(n >= 1000 for n in counted.values()), f"some port was not hammered: {counted} ({out})"
        expected = sum(n * port_value(p) for p, n in counted.items()) % (1 << 64)
        assert total == expected, (
            f"register holds {total:#x}, the counted packets add up to {expected:#x}: {counted}"
        )
    finally:
        if switch is not None:
            switch.stop()
        for pair in pairs:
            pair.delete()
        ns.delete()
