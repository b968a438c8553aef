"""Aggregation jobs on one switch: the Aggregation control (p4/aggregation.p4), the
AggregationEgress control (p4/aggregation_egress.p4), and the job operations built on both.

A job is a slot range of the switch's pool, a member set, a threshold (all members:
synchronous; fewer: asynchronous), a multicast group and, on a child switch of a hierarchical
job, a parent. Everything a job owns is keyed by its job id or lies in its slot range, so
creating, resetting or deleting one job never touches another's state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from control_plane.addresses import int_to_ip, int_to_mac, ip_to_int, mac_to_int
from control_plane.p4runtime_client import ControlPlaneError, P4InfoIndex, P4RuntimeClient
from host_agents.agg_protocol import (
    AGG_UDP_PORT,
    MAX_JOBS,
    MAX_WORKERS,
    POOL_SLOTS,
    REJECT_REASONS,
    check_values_per_packet,
)

# Multicast groups of aggregation jobs: AGG_MGID_BASE + job id (forwarding's flood groups stay below).
AGG_MGID_BASE = 0x1000
# Switch ports are 9 bits in v1model; 511 is the drop port.
MAX_PORT = 510


@dataclass
class Member:
    """A job member as the switch sees it: a worker host, or a child switch at its parent."""

    worker_id: int
    port: int  # switch port toward the member
    mac: str
    ip: str
    udp_port: int = AGG_UDP_PORT  # where results go (a child switch listens on AGG_UDP_PORT)


@dataclass
class Parent:
    """Where a child switch sends its partial aggregates."""

    mac: str
    ip: str
    port: int  # this switch's port toward the parent
    id_at_parent: int  # this switch's worker id in the parent's job


@dataclass
class Job:
    job_id: int
    slot_base: int
    num_slots: int
    members: list[Member]
    threshold: int | None = None  # None: all members (synchronous)
    parent: Parent | None = None
    mgid: int | None = None  # None: AGG_MGID_BASE + job_id
    # the width its hosts send: checked against the switch's program (None: not checked)
    values_per_packet: int | None = None

    @property
    def effective_threshold(self) -> int:
        return len(self.members) if self.threshold is None else self.threshold

    @property
    def group_id(self) -> int:
        return AGG_MGID_BASE + self.job_id if self.mgid is None else self.mgid

    @property
    def synchronous(self) -> bool:
        return self.effective_threshold == len(self.members)

    def validate(self) -> None:
        if not 0 <= self.job_id < MAX_JOBS:
            raise ValueError(f"job id {self.job_id} is outside 0..{MAX_JOBS - 1}")
        if self.num_slots < 1 or self.slot_base < 0 or self.slot_base + self.num_slots > POOL_SLOTS:
            raise ValueError(
                f"job {self.job_id}: slots {self.slot_base}..{self.slot_base + self.num_slots - 1} "
                f"are outside the switch's pool of {POOL_SLOTS}"
            )
        if not self.members:
            raise ValueError(f"job {self.job_id} has no members")
        ids = [m.worker_id for m in self.members]
        if len(set(ids)) != len(ids):
            raise ValueError(f"job {self.job_id}: worker ids repeat: {sorted(ids)}")
        bad = [i for i in ids if not 0 <= i < MAX_WORKERS]
        if bad:
            raise ValueError(f"job {self.job_id}: worker ids {bad} are outside 0..{MAX_WORKERS - 1}")
        if not 1 <= self.effective_threshold <= len(self.members):
            raise ValueError(f"job {self.job_id}: threshold {self.threshold} must be 1..{len(self.members)}")
        if not 1 <= self.group_id < 1 << 16:
            raise ValueError(f"job {self.job_id}: multicast group {self.group_id} is not 1..65535")
        if self.values_per_packet is not None:
            check_values_per_packet(self.values_per_packet)
        for m in self.members:
            mac_to_int(m.mac)
            ip_to_int(m.ip)
            if not 0 <= m.port <= MAX_PORT:
                raise ValueError(
                    f"job {self.job_id}: member {m.worker_id}'s port {m.port} is not 0..{MAX_PORT}"
                )
            if not 1 <= m.udp_port <= 65535:
                raise ValueError(
                    f"job {self.job_id}: member {m.worker_id}'s UDP port {m.udp_port} is not 1..65535"
                )
        if self.parent is not None:
            mac_to_int(self.parent.mac)
            ip_to_int(self.parent.ip)
            if not 0 <= self.parent.port <= MAX_PORT:
                raise ValueError(f"job {self.job_id}: parent port {self.parent.port} is not 0..{MAX_PORT}")
            if not 0 <= self.parent.id_at_parent < MAX_WORKERS:
                raise ValueError(f"job {self.job_id}: id at parent {self.parent.id_at_parent} is not 0..31")


def program_values_per_packet(info: P4InfoIndex, prefix: str = "InnetIngress.aggregation.") -> int | None:
    """The values per packet a loaded program aggregates (its AGG_VALUES_PER_PACKET, read from
    the P4Info: one ``agg_value_*`` register per value); None when it has no aggregation."""
    return sum(1 for name in info.registers if name.startswith(prefix + "agg_value_")) or None


class Aggregation:
    """Owns ``InnetIngress.aggregation``: tables agg_jobs, agg_members, agg_parent, the slot
    registers and the per-job counters."""

    PREFIX = "InnetIngress.aggregation."
    # Registers that decide a cell's state; the others are overwritten by a round's first packet.
    STATE_REGISTERS = ("agg_round", "agg_count", "agg_bitmap", "agg_result_bitmap")
    COUNTERS = ("agg_aggregated", "agg_retransmissions", "agg_stale")

    def __init__(self, client: P4RuntimeClient, prefix: str = PREFIX) -> None:
        self.client = client
        self.p = prefix

    def set_job(self, job: Job, switch_mac: str, switch_ip: str, modify: bool = False) -> None:
        params = {
            "slot_base": job.slot_base,
            "num_slots": job.num_slots,
            "threshold": job.effective_threshold,
            "mgid": job.group_id,
            "switch_mac": mac_to_int(switch_mac),
            "switch_ip": ip_to_int(switch_ip),
        }
        write = self.client.modify_entry if modify else self.client.insert_entry
        write(self.p + "agg_jobs", {"hdr.agg.job_id": job.job_id}, self.p + "set_job", params)

    def delete_job_entry(self, job_id: int) -> None:
        self.client.delete_entry(self.p + "agg_jobs", {"hdr.agg.job_id": job_id})

    def add_member(self, job_id: int, worker_id: int, port: int) -> None:
        """Admit ``worker_id`` to the job, from switch port ``port`` only."""
        self.client.insert_entry(
            self.p + "agg_members",
            {"hdr.agg.job_id": job_id, "hdr.agg.worker_id": worker_id},
            self.p + "set_member",
            {"worker_bit": 1 << worker_id, "port": port},
        )

    def delete_member(self, job_id: int, worker_id: int) -> None:
        self.client.delete_entry(
            self.p + "agg_members", {"hdr.agg.job_id": job_id, "hdr.agg.worker_id": worker_id}
        )

    def set_parent(self, job_id: int, parent: Parent) -> None:
        self.client.insert_entry(
            self.p + "agg_parent",
            {"hdr.agg.job_id": job_id},
            self.p + "set_parent",
            {
                "parent_mac": mac_to_int(parent.mac),
                "parent_ip": ip_to_int(parent.ip),
                "parent_port": parent.port,
                "id_at_parent": parent.id_at_parent,
            },
        )

    def delete_parent(self, job_id: int) -> None:
        self.client.delete_entry(self.p + "agg_parent", {"hdr.agg.job_id": job_id})

    def jobs(self) -> dict[int, dict[str, int]]:
        """job id -> set_job parameters, as installed."""
        return {e.match["hdr.agg.job_id"]: e.params for e in self.client.read_entries(self.p + "agg_jobs")}

    def member_ports(self, job_id: int) -> dict[int, int]:
        """worker id -> the switch port the member is bound to, as installed."""
        return {
            e.match["hdr.agg.worker_id"]: e.params["port"]
            for e in sorted(
                self.client.read_entries(self.p + "agg_members"), key=lambda e: e.match["hdr.agg.worker_id"]
            )
            if e.match["hdr.agg.job_id"] == job_id
        }

    def parent(self, job_id: int) -> Parent | None:
        for e in self.client.read_entries(self.p + "agg_parent"):
            if e.match["hdr.agg.job_id"] == job_id:
                a = e.params
                return Parent(
                    int_to_mac(a["parent_mac"]),
                    int_to_ip(a["parent_ip"]),
                    a["parent_port"],
                    a["id_at_parent"],
                )
        return None

    def reset_cells(self, slot_base: int, num_slots: int) -> None:
        """Zero the state of the cells of slots [slot_base, slot_base + num_slots) only."""
        zeros = {cell: 0 for cell in range(2 * slot_base, 2 * (slot_base + num_slots))}
        for reg in self.STATE_REGISTERS:
            self.client.write_registers(self.p + reg, zeros)

    def counters(self, job_id: int) -> dict[str, int]:
        """Packets per counter for one job (see p4/aggregation.p4)."""
        return {
            name.removeprefix("agg_"): self.client.read_counter(self.p + name, job_id)[0]
            for name in self.COUNTERS
        }

    def rejected(self) -> dict[str, int]:
        """Packets dropped before touching any job, by reason (all jobs together)."""
        return {
            reason: self.client.read_counter(self.p + "agg_rejected", i)[0]
            for i, reason in enumerate(REJECT_REASONS)
        }


class AggregationEgress:
    """Owns ``InnetEgress.aggregation_egress``: member addresses and the results counter."""

    PREFIX = "InnetEgress.aggregation_egress."

    def __init__(self, client: P4RuntimeClient, prefix: str = PREFIX) -> None:
        self.client = client
        self.p = prefix

    def add_member_addr(self, job_id: int, m: Member) -> None:
        self.client.insert_entry(
            self.p + "agg_member_addr",
            {"hdr.agg.job_id": job_id, "meta.agg.reply_member": m.worker_id},
            self.p + "set_member_addr",
            {"mac": mac_to_int(m.mac), "ip": ip_to_int(m.ip), "udp_port": m.udp_port},
        )

    def delete_member_addr(self, job_id: int, worker_id: int) -> None:
        self.client.delete_entry(
            self.p + "agg_member_addr", {"hdr.agg.job_id": job_id, "meta.agg.reply_member": worker_id}
        )

    def member_addrs(self, job_id: int) -> dict[int, dict[str, int]]:
        return {
            e.match["meta.agg.reply_member"]: e.params
            for e in self.client.read_entries(self.p + "agg_member_addr")
            if e.match["hdr.agg.job_id"] == job_id
        }

    def results(self, job_id: int) -> int:
        return self.client.read_counter(self.p + "agg_results", job_id)[0]


@dataclass
class JobManager:
    """Job operations on one switch, through the two aggregation controls."""

    client: P4RuntimeClient
    switch_mac: str | None = None  # source addresses of the packets the switch generates;
    switch_ip: str | None = None  # needed to create jobs (other operations read them back)
    ingress: Aggregation = field(init=False)
    egress: AggregationEgress = field(init=False)

    def __post_init__(self) -> None:
        self.ingress = Aggregation(self.client)
        self.egress = AggregationEgress(self.client)

    @property
    def values_per_packet(self) -> int | None:
        """The width the switch's program aggregates (from its P4Info); None without aggregation."""
        return program_values_per_packet(self.client.info, self.ingress.p)

    def check_values_per_packet(self, wanted: int) -> None:
        """ControlPlaneError unless the switch's program takes ``wanted`` values per packet: hosts
        of another width would have every packet with values dropped as malformed."""
        have = self.values_per_packet
        if have != wanted:
            raise ControlPlaneError(
                f"{self.client.address}: the switch's program aggregates "
                f"{have if have is not None else 'no'} values per packet, the job's hosts send {wanted}: "
                f"load p4/innet.p4 compiled with -DAGG_VALUES_PER_PACKET={wanted}, or start the hosts "
                f"with --values-per-packet {have}"
            )

    def create(self, job: Job) -> None:
        """Install ``job``. Refuses a job id in use, a slot range that overlaps another job's, and
        a job whose ``values_per_packet`` is not the switch program's."""
        job.validate()
        if self.switch_mac is None or self.switch_ip is None:
            raise ControlPlaneError(
                "creating a job needs the switch's own MAC and IP (switch_mac, switch_ip)"
            )
        if job.values_per_packet is not None:
            self.check_values_per_packet(job.values_per_packet)
        existing = self.ingress.jobs()
        if job.job_id in existing:
            raise ControlPlaneError(f"job {job.job_id} exists already; delete it first")
        lo, hi = job.slot_base, job.slot_base + job.num_slots
        for other, p in existing.items():
            if lo < p["slot_base"] + p["num_slots"] and p["slot_base"] < hi:
                raise ControlPlaneError(
                    f"job {job.job_id}'s slots {lo}..{hi - 1} overlap job {other}'s "
                    f"{p['slot_base']}..{p['slot_base'] + p['num_slots'] - 1}"
                )
            if p["mgid"] == job.group_id:
                raise ControlPlaneError(
                    f"job {job.job_id}: multicast group {job.group_id} belongs to job {other}"
                )
        if self.client.multicast_group(job.group_id):
            raise ControlPlaneError(
                f"job {job.job_id}: multicast group {job.group_id} exists already (a flood group?); "
                f"pick another mgid"
            )
        # State first, the job entry last: no packet can reach the job before it is complete.
        # A refused write undoes the ones before it, so a failed create leaves nothing behind.
        undo: list = []
        try:
            self.ingress.reset_cells(job.slot_base, job.num_slots)
            for m in job.members:
                self.egress.add_member_addr(job.job_id, m)
                undo.append(lambda w=m.worker_id: self.egress.delete_member_addr(job.job_id, w))
                self.ingress.add_member(job.job_id, m.worker_id, m.port)
                undo.append(lambda w=m.worker_id: self.ingress.delete_member(job.job_id, w))
            self.client.set_multicast_group(job.group_id, [(m.port, m.worker_id) for m in job.members])
            undo.append(lambda: self.client.delete_multicast_group(job.group_id))
            if job.parent is not None:
                self.ingress.set_parent(job.job_id, job.parent)
                undo.append(lambda: self.ingress.delete_parent(job.job_id))
            self.ingress.set_job(job, self.switch_mac, self.switch_ip)
        except BaseException:
            for step in reversed(undo):
                try:
                    step()
                except ControlPlaneError:
                    pass  # keep undoing; the original error is the one to report
            raise

    def read(self, job_id: int) -> Job:
        """The job as installed on the switch (so a CLI run needs no memory of earlier ones)."""
        params = self.ingress.jobs().get(job_id)
        if params is None:
            raise ControlPlaneError(f"no job {job_id} on {self.client.address}")
        addrs = self.egress.member_addrs(job_id)
        members = [
            Member(
                w,
                port,
                int_to_mac(addrs[w]["mac"]),
                int_to_ip(addrs[w]["ip"]),
                addrs[w]["udp_port"],
            )
            for w, port in self.ingress.member_ports(job_id).items()
            if w in addrs
        ]
        threshold = params["threshold"]
        return Job(
            job_id,
            params["slot_base"],
            params["num_slots"],
            members,
            threshold=None if threshold == len(members) else threshold,
            parent=self.ingress.parent(job_id),
            mgid=params["mgid"],
            values_per_packet=self.values_per_packet,
        )

    def delete(self, job_id: int) -> None:
        job = self.read(job_id)
        self.ingress.delete_job_entry(job_id)  # first: the job stops taking packets
        if job.parent is not None:
            self.ingress.delete_parent(job_id)
        for m in job.members:
            self.ingress.delete_member(job_id, m.worker_id)
            self.egress.delete_member_addr(job_id, m.worker_id)
        self.client.delete_multicast_group(job.group_id)
        self.ingress.reset_cells(job.slot_base, job.num_slots)

    def reset(self, job_id: int) -> None:
        """Forget the job's rounds in progress (hosts start again at round 1); other jobs keep theirs."""
        job = self.read(job_id)
        self.ingress.reset_cells(job.slot_base, job.num_slots)

    def remove_worker(self, job_id: int, worker_id: int) -> Job:
        """Take a failed worker out of a job: it no longer counts, receives or is awaited.
        A synchronous job waits for the remaining members; an asynchronous one keeps its
        threshold (and is synchronous once that equals the members left).

        Rounds in flight keep the contributions they hold (the removed worker's included); one
        that already holds the new threshold is complete, and its result reaches each waiting
        worker as the reply to its next retransmission, with the members seen as its bitmap.
        Cells are not reset here: a reset racing live packets could strand a round."""
        job = self.read(job_id)
        if worker_id not in {m.worker_id for m in job.members}:
            raise ControlPlaneError(f"worker {worker_id} is not a member of job {job_id}")
        if len(job.members) == 1:
            raise ControlPlaneError(
                f"worker {worker_id} is job {job_id}'s last member; delete the job instead"
            )
        was_sync = job.synchronous
        job.members = [m for m in job.members if m.worker_id != worker_id]
        if not was_sync and job.threshold == len(job.members):
            job.threshold = None  # k of the remaining k: synchronous from now on
        installed = self.ingress.jobs()[job_id]
        self.ingress.delete_member(job_id, worker_id)
        self.ingress.set_job(
            job, int_to_mac(installed["switch_mac"]), int_to_ip(installed["switch_ip"]), modify=True
        )
        self.client.set_multicast_group(job.group_id, [(m.port, m.worker_id) for m in job.members])
        self.egress.delete_member_addr(job_id, worker_id)
        return job

    def counters(self, job_id: int) -> dict[str, int]:
        out = self.ingress.counters(job_id)
        out["results"] = self.egress.results(job_id)
        return out
