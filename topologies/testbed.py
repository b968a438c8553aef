"""Test networks for aggregation: software switches (``python -m softswitch`` processes with
AF_PACKET ports on veth pairs) and worker hosts in network namespaces.

- :func:`star`: N hosts on one switch, routed to each other (host i: 10.0.<i+1>.1/24 on port i+1).
- :func:`two_level`: hosts on child switches, the children cabled to one parent switch.

Everything is removed when the context manager exits, including on errors.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from control_plane.aggregation import Job, Member, Parent
from control_plane.switch_controller import DEFAULT_P4, SwitchController
from host_agents.agg_protocol import AGG_UDP_PORT
from topologies.netns import Host, VethPair, create_routed_host, create_veth_pair

REPO = Path(__file__).resolve().parent.parent


class SwitchProcess:
    """``python -m softswitch`` with the given ports (port number -> interface), P4Runtime on a free
    loopback port, optionally running ``p4`` from the start (else a controller loads one) and
    emulating lossy links."""

    def __init__(
        self,
        ports: dict[int, str],
        loss_rate: float = 0.0,
        loss_seed: int | None = None,
        p4: str | Path | None = None,
        offloads: bool = False,
    ) -> None:
        argv = [sys.executable, "-m", "softswitch", "--grpc-addr", "127.0.0.1:0"]
        if offloads:
            argv.append("--offloads")
        if p4 is not None:
            argv += ["--p4", str(p4)]
        for number, ifname in sorted(ports.items()):
            argv += ["-i", f"{number}@{ifname}"]
        if loss_rate:
            argv += ["--loss-rate", str(loss_rate)]
            if loss_seed is not None:
                argv += ["--loss-seed", str(loss_seed)]
        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (127\.0\.0\.1:\d+)", line)
        if not m:
            self.stop()
            raise RuntimeError(f"softswitch did not start: {line!r} {self.stderr_tail()}")
        self.address = m.group(1)
        running = self.proc.stdout.readline()
        if "softswitch running" not in running:
            self.stop()
            raise RuntimeError(f"softswitch did not bind its ports: {running!r} {self.stderr_tail()}")

    def stderr_tail(self) -> str:
        if self.proc.poll() is None:
            return ""
        return self.proc.stderr.read()[-2000:]

    def stop(self) -> str:
        """Stop the switch; returns its last output line (packet counts)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                out, _ = self.proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out, _ = self.proc.communicate()
            return out.strip().splitlines()[-1] if out.strip() else ""
        return ""


@dataclass
class Switch:
    name: str
    process: SwitchProcess
    controller: SwitchController
    mac: str
    ip: str


@dataclass
class Worker:
    """A worker host: namespace, its address, and where it hangs in the topology."""

    host: Host
    worker_id: int  # id in its switch's job
    switch: Switch
    port: int  # switch port

    @property
    def ip(self) -> str:
        return self.host.ip


@dataclass
class Testbed:
    __test__ = False  # not a pytest test class, despite the name
    switches: list[Switch]
    workers: list[Worker]
    links: list[VethPair] = field(default_factory=list)

    @property
    def root(self) -> Switch:
        return self.switches[0]

    def install_job(
        self,
        job_id: int,
        slot_base: int,
        num_slots: int,
        threshold: int | None = None,
        udp_port: int = 40000,
        values_per_packet: int | None = None,
    ) -> None:
        """One aggregation job over all workers: on a star, members are the hosts; on two levels,
        each child aggregates its hosts and the parent its children. ``values_per_packet``: the
        hosts' width, refused unless the switches' program has it (None: not checked)."""
        children = self.switches[1:]
        if not children:
            members = [Member(w.worker_id, w.port, w.host.mac, w.ip, udp_port) for w in self.workers]
            job = Job(job_id, slot_base, num_slots, members, threshold, values_per_packet=values_per_packet)
            self.root.controller.jobs.create(job)
            return
        parent = self.root
        child_members = []
        for child_id, child in enumerate(children):
            local = [w for w in self.workers if w.switch is child]
            members = [Member(w.worker_id, w.port, w.host.mac, w.ip, udp_port) for w in local]
            uplink = CHILD_UPLINK_PORT
            child.controller.jobs.create(
                Job(
                    job_id,
                    slot_base,
                    num_slots,
                    members,
                    parent=Parent(parent.mac, parent.ip, uplink, child_id),
                    values_per_packet=values_per_packet,
                )
            )
            child_members.append(Member(child_id, child_id + 1, child.mac, child.ip, AGG_UDP_PORT))
        parent.controller.jobs.create(
            Job(job_id, slot_base, num_slots, child_members, threshold=threshold,
                values_per_packet=values_per_packet)
        )


# The switch's own addresses (answering no ARP: hosts get a static neighbour entry for them).
def switch_mac(index: int) -> str:
    return f"02:00:00:00:{index:02x}:fe"


def switch_ip(index: int) -> str:
    return f"10.{100 + index}.0.254"


CHILD_UPLINK_PORT = 100


def _start_switch(
    name: str,
    index: int,
    ports: dict[int, str],
    loss_rate: float,
    seed: int | None,
    stack: contextlib.ExitStack,
    p4: str | Path,
    values_per_packet: int | None = None,
    offloads: bool = False,
) -> Switch:
    proc = SwitchProcess(ports, loss_rate, seed, offloads=offloads)
    stack.callback(proc.stop)
    ctl = SwitchController(proc.address, switch_mac(index), switch_ip(index))
    stack.callback(ctl.close)
    ctl.load(p4, None if values_per_packet is None else {"AGG_VALUES_PER_PACKET": str(values_per_packet)})
    return Switch(name, proc, ctl, switch_mac(index), switch_ip(index))


@contextlib.contextmanager
def star(
    num_hosts: int,
    loss_rate: float = 0.0,
    loss_seed: int | None = None,
    p4: str | Path = DEFAULT_P4,
    values_per_packet: int | None = None,
    mtu: int | None = None,
    offloads: bool = False,
) -> Iterator[Testbed]:
    """``num_hosts`` hosts on one switch; host i is 10.0.<i+1>.1 on port i+1, routes between all.
    ``values_per_packet``: compile the program with -DAGG_VALUES_PER_PACKET=<it> (None: its default);
    ``mtu``: every link's (None: 1500; the switch sizes its port rings from it when it starts);
    ``offloads``: checksum and segmentation offloads on every link and the switch's ports in offload
    mode (``python -m softswitch --offloads``: super-frames between hosts and switch, wire frames in
    the pipeline)."""
    with contextlib.ExitStack() as stack:
        hosts = []
        for i in range(num_hosts):
            h = create_routed_host(
                f"10.0.{i + 1}.1/24", f"10.0.{i + 1}.254", switch_mac(0), prefix="ag", mtu=mtu,
                offloads=offloads,
            )
            stack.callback(h.delete)
            hosts.append(h)
        sw = _start_switch(
            "s0", 0, {i + 1: h.pair.host_if for i, h in enumerate(hosts)}, loss_rate, loss_seed, stack, p4,
            values_per_packet, offloads,
        )
        for i, h in enumerate(hosts):
            sw.controller.forwarding.add_route(f"10.0.{i + 1}.0/24", h.mac, sw.mac, i + 1)
        yield Testbed([sw], [Worker(h, i, sw, i + 1) for i, h in enumerate(hosts)])


@contextlib.contextmanager
def two_level(
    hosts_per_child: int,
    num_children: int = 2,
    loss_rate: float = 0.0,
    loss_seed: int | None = None,
    p4: str | Path = DEFAULT_P4,
    values_per_packet: int | None = None,
) -> Iterator[Testbed]:
    """A parent switch (s0) with ``num_children`` child switches, each with ``hosts_per_child``
    hosts. Child c's host h is 10.<c+1>.<h+1>.1 on the child's port h+1; the child's uplink is
    its port 100, cabled to the parent's port c+1. Only aggregation crosses the levels.
    ``values_per_packet``: every switch's program compiled with -DAGG_VALUES_PER_PACKET=<it>."""
    with contextlib.ExitStack() as stack:
        uplinks = []
        for _ in range(num_children):
            pair = create_veth_pair(peer_ns=None, prefix="up")
            stack.callback(pair.delete)
            uplinks.append(pair)
        parent = _start_switch(
            "s0", 0, {c + 1: p.host_if for c, p in enumerate(uplinks)}, loss_rate, loss_seed, stack, p4,
            values_per_packet,
        )
        switches = [parent]
        workers = []
        for c in range(num_children):
            hosts = []
            for h in range(hosts_per_child):
                host = create_routed_host(
                    f"10.{c + 1}.{h + 1}.1/24", f"10.{c + 1}.{h + 1}.254", switch_mac(c + 1), prefix="ag"
                )
                stack.callback(host.delete)
                hosts.append(host)
            ports = {h + 1: host.pair.host_if for h, host in enumerate(hosts)}
            ports[CHILD_UPLINK_PORT] = uplinks[c].ns_if
            child = _start_switch(
                f"s{c + 1}",
                c + 1,
                ports,
                loss_rate,
                None if loss_seed is None else loss_seed + c + 1,
                stack,
                p4,
                values_per_packet,
            )
            switches.append(child)
            workers += [Worker(host, h, child, h + 1) for h, host in enumerate(hosts)]
        yield Testbed(switches, workers, uplinks)
