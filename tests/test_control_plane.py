"""The control plane (control_plane/) against a real software switch.

Two ``python -m softswitch`` processes without ports serve P4Runtime on loopback: one is driven
in-process through ``SwitchController`` (p4/innet.p4 loaded once; every test uses its own job ids
and slot ranges, and the tests that need empty tables reload the pipeline), the other by the
``python -m control_plane`` CLI as subprocesses, so that the two never compete for election id 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from control_plane.addresses import ip_to_int, mac_to_int
from control_plane.aggregation import AGG_MGID_BASE, Job, JobManager, Member, Parent
from control_plane.p4runtime_client import ControlPlaneError, Lpm
from control_plane.switch_controller import SwitchController
from host_agents.agg_protocol import AGG_UDP_PORT, DEFAULT_VALUES_PER_PACKET, REJECT_REASONS
from host_agents.netutil import free_port
from topologies.testbed import SwitchProcess

REPO = Path(__file__).resolve().parent.parent

SWITCH_MAC = "02:00:00:00:00:fe"
SWITCH_IP = "10.100.0.254"

AGG = "InnetIngress.aggregation."
EGR = "InnetEgress.aggregation_egress."
FWD = "InnetIngress.forwarding."
STATE_REGISTERS = ("agg_round", "agg_count", "agg_bitmap", "agg_result_bitmap")


def member(worker_id: int, port: int | None = None, udp_port: int = AGG_UDP_PORT, net: int = 0) -> Member:
    return Member(
        worker_id,
        worker_id + 1 if port is None else port,
        f"02:00:00:00:{net:02x}:{worker_id + 1:02x}",
        f"10.{net}.{worker_id + 1}.1",
        udp_port,
    )


def cli_argv(switch: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "control_plane", "--switch", switch, *args]


def run_cli(switch: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli_argv(switch, *args), capture_output=True, text=True, cwd=REPO, timeout=timeout)


def switch_addrs() -> list[str]:
    return ["--switch-mac", SWITCH_MAC, "--switch-ip", SWITCH_IP]


def describe(r: subprocess.CompletedProcess[str]) -> str:
    return f"rc {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"


def assert_cli_error(rc: int, stderr: str, *fragments: str) -> None:
    """Exit status 1, and stderr is exactly one ``error: ...`` line naming the cause."""
    assert rc == 1, stderr
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    for fragment in fragments:
        assert fragment in lines[0], stderr


# ---- fixtures ----


@pytest.fixture(scope="module", autouse=True)
def unreachable_cli() -> Iterator[tuple[subprocess.Popen[str], int]]:
    """``python -m control_plane`` against a port where nothing listens. The CLI has no timeout
    option (the client's default is 10 s), so it starts with the module and runs alongside the
    other tests; test_cli_unreachable_switch collects it."""
    port = free_port("tcp")
    proc = subprocess.Popen(
        cli_argv(f"127.0.0.1:{port}", "counters"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    yield proc, port
    if proc.poll() is None:
        proc.kill()
    proc.communicate()


@pytest.fixture(scope="module")
def switches() -> Iterator[tuple[SwitchProcess, SwitchProcess]]:
    """Two switches without ports (started side by side): one for SwitchController, one for the CLI."""
    with ThreadPoolExecutor(2) as pool:
        procs = list(pool.map(lambda _: SwitchProcess({}), range(2)))
    yield procs[0], procs[1]
    for p in procs:
        p.stop()


@pytest.fixture(scope="module")
def sc(switches: tuple[SwitchProcess, SwitchProcess]) -> Iterator[SwitchController]:
    with SwitchController(switches[0].address, SWITCH_MAC, SWITCH_IP) as ctl:
        ctl.load()
        yield ctl


@pytest.fixture
def fresh(sc: SwitchController) -> SwitchController:
    """The controller, with innet.p4 reloaded: every table, group, register and counter empty."""
    sc.load()
    return sc


# ---- helpers reading the switch ----


def entries(sc: SwitchController, table: str, job_id: int) -> list:
    return [e for e in sc.client.read_entries(table) if e.match["hdr.agg.job_id"] == job_id]


def fill_cells(sc: SwitchController, cells: range) -> dict[str, dict[int, int]]:
    """Distinct nonzero values in ``cells`` of every state register; returns what was written."""
    written = {}
    for k, reg in enumerate(STATE_REGISTERS):
        values = {c: 1 + c + 3000 * k for c in cells}
        sc.client.write_registers(AGG + reg, values)
        written[reg] = values
    return written


def read_cells(sc: SwitchController, cells: range) -> dict[str, dict[int, int]]:
    return {reg: sc.client.read_registers(AGG + reg, cells) for reg in STATE_REGISTERS}


def job_cells(slot_base: int, num_slots: int) -> range:
    return range(2 * slot_base, 2 * (slot_base + num_slots))


def assert_job_gone(sc: SwitchController, job_id: int, mgid: int | None) -> None:
    """No entry of ``job_id`` is left, nor multicast group ``mgid`` (unless None)."""
    assert job_id not in sc.jobs.ingress.jobs()
    assert entries(sc, AGG + "agg_members", job_id) == []
    assert entries(sc, AGG + "agg_parent", job_id) == []
    assert sc.jobs.egress.member_addrs(job_id) == {}
    if mgid is not None:
        assert sc.client.multicast_group(mgid) == []


# ---- load and jobs ----


def test_create_and_read_jobs(fresh: SwitchController) -> None:
    sc = fresh
    sync = Job(1, 0, 64, [member(0, udp_port=40000), member(3, port=2)])
    async_ = Job(2, 64, 32, [member(0, 5, net=2), member(1, 6, net=2), member(2, 7, net=2)], threshold=2)
    parent = Parent("02:00:00:00:aa:fe", "10.200.0.254", 100, 7)
    child = Job(3, 96, 8, [member(4, 9, net=3), member(9, 10, net=3)], parent=parent, mgid=555)
    for job in (sync, async_, child):
        sc.jobs.create(job)

    got = sc.jobs.read(1)
    width = DEFAULT_VALUES_PER_PACKET  # read back from the program's P4Info
    assert got == Job(1, 0, 64, sync.members, threshold=None, parent=None, mgid=AGG_MGID_BASE + 1,
                      values_per_packet=width)
    assert got.members[0] == Member(0, 1, "02:00:00:00:00:01", "10.0.1.1", 40000)
    assert got.members[1].udp_port == AGG_UDP_PORT and got.synchronous
    got = sc.jobs.read(2)
    assert got == Job(2, 64, 32, async_.members, threshold=2, mgid=4098, values_per_packet=width)
    assert not got.synchronous and got.effective_threshold == 2
    got = sc.jobs.read(3)
    assert got == Job(3, 96, 8, child.members, parent=parent, mgid=555, values_per_packet=width)

    # the P4Runtime entries behind them
    jobs = {e.match["hdr.agg.job_id"]: e for e in sc.client.read_entries(AGG + "agg_jobs")}
    assert sorted(jobs) == [1, 2, 3]
    assert all(e.action == AGG + "set_job" for e in jobs.values())
    switch_addrs = {"switch_mac": mac_to_int(SWITCH_MAC), "switch_ip": ip_to_int(SWITCH_IP)}
    assert jobs[1].params == {"slot_base": 0, "num_slots": 64, "threshold": 2, "mgid": 4097, **switch_addrs}
    assert jobs[2].params == {"slot_base": 64, "num_slots": 32, "threshold": 2, "mgid": 4098, **switch_addrs}
    assert jobs[3].params == {"slot_base": 96, "num_slots": 8, "threshold": 2, "mgid": 555, **switch_addrs}

    members = {
        (e.match["hdr.agg.job_id"], e.match["hdr.agg.worker_id"]): e
        for e in sc.client.read_entries(AGG + "agg_members")
    }
    assert sorted(members) == [(1, 0), (1, 3), (2, 0), (2, 1), (2, 2), (3, 4), (3, 9)]
    ports = {(j, m.worker_id): m.port for j in (1, 2, 3) for m in sc.jobs.read(j).members}
    for (job, worker), e in members.items():
        assert e.action == AGG + "set_member"
        assert e.params == {"worker_bit": 1 << worker, "port": ports[job, worker]}

    addrs = {
        (e.match["hdr.agg.job_id"], e.match["meta.agg.reply_member"]): e.params
        for e in sc.client.read_entries(EGR + "agg_member_addr")
    }
    assert addrs[(1, 0)] == {"mac": 0x020000000001, "ip": ip_to_int("10.0.1.1"), "udp_port": 40000}
    assert addrs[(1, 3)] == {"mac": 0x020000000004, "ip": ip_to_int("10.0.4.1"), "udp_port": AGG_UDP_PORT}
    assert addrs[(3, 9)] == {"mac": 0x02000000030A, "ip": ip_to_int("10.3.10.1"), "udp_port": AGG_UDP_PORT}
    assert sorted(addrs) == sorted(members)

    parents = sc.client.read_entries(AGG + "agg_parent")
    assert [(e.match, e.action, e.params) for e in parents] == [
        (
            {"hdr.agg.job_id": 3},
            AGG + "set_parent",
            {
                "parent_mac": mac_to_int(parent.mac),
                "parent_ip": ip_to_int(parent.ip),
                "parent_port": 100,
                "id_at_parent": 7,
            },
        )
    ]

    # one replica per member, instance = worker id, egress port = the member's port
    assert sorted(sc.client.multicast_group(4097)) == [(1, 0), (2, 3)]
    assert sorted(sc.client.multicast_group(4098)) == [(5, 0), (6, 1), (7, 2)]
    assert sorted(sc.client.multicast_group(555)) == [(9, 4), (10, 9)]
    assert sc.client.multicast_group(AGG_MGID_BASE + 3) == []


def test_create_zeroes_only_its_cells(sc: SwitchController) -> None:
    cells = job_cells(200, 4)
    window = range(cells.start - 3, cells.stop + 3)
    written = fill_cells(sc, window)
    sc.jobs.create(Job(61, 200, 4, [member(0, net=61), member(1, net=61)]))
    after = read_cells(sc, window)
    for reg in STATE_REGISTERS:
        for c in window:
            assert after[reg][c] == (0 if c in cells else written[reg][c]), (reg, c)


# ---- refusals ----

BASE_JOB = Job(20, 300, 16, [member(0, net=20), member(1, net=20)])
REFUSED = 21  # the job id the refused jobs use (unless the test is about job 20's id)


def ensure_base_job(sc: SwitchController) -> None:
    if BASE_JOB.job_id not in sc.jobs.ingress.jobs():
        sc.jobs.create(Job(**vars(BASE_JOB)))


REFUSALS: list[tuple[str, Callable[[], Job], type[Exception], str]] = [
    ("duplicate job id", lambda: Job(20, 900, 4, [member(0)]), ControlPlaneError, r"job 20 exists already"),
    (
        "overlapping slots",
        lambda: Job(REFUSED, 310, 10, [member(0)]),
        ControlPlaneError,
        r"slots 310\.\.319 overlap job 20's 300\.\.315",
    ),
    (
        "overlap at the start",
        lambda: Job(REFUSED, 290, 11, [member(0)]),
        ControlPlaneError,
        r"overlap job 20",
    ),
    ("slots beyond the pool", lambda: Job(REFUSED, 1020, 8, [member(0)]), ValueError, r"pool of 1024"),
    ("negative slot base", lambda: Job(REFUSED, -1, 8, [member(0)]), ValueError, r"pool of 1024"),
    ("no slots", lambda: Job(REFUSED, 900, 0, [member(0)]), ValueError, r"pool of 1024"),
    ("job id 256", lambda: Job(256, 900, 4, [member(0)]), ValueError, r"job id 256 is outside 0\.\.255"),
    ("no members", lambda: Job(REFUSED, 900, 4, []), ValueError, r"no members"),
    ("worker id 32", lambda: Job(REFUSED, 900, 4, [member(0), member(32)]), ValueError, r"\[32\].*0\.\.31"),
    (
        "duplicate worker ids",
        lambda: Job(REFUSED, 900, 4, [member(1), member(1, port=7)]),
        ValueError,
        r"worker ids repeat",
    ),
    (
        "threshold 0",
        lambda: Job(REFUSED, 900, 4, [member(0), member(1)], threshold=0),
        ValueError,
        r"threshold 0 must be 1\.\.2",
    ),
    (
        "threshold above members",
        lambda: Job(REFUSED, 900, 4, [member(0), member(1)], threshold=3),
        ValueError,
        r"threshold 3 must be 1\.\.2",
    ),
    (
        "bad MAC",
        lambda: Job(REFUSED, 900, 4, [Member(0, 1, "02:00:00:00:00", "10.0.0.1")]),
        ValueError,
        r"not a MAC address: '02:00:00:00:00'",
    ),
    (
        "bad MAC digits",
        lambda: Job(REFUSED, 900, 4, [Member(0, 1, "02:00:00:00:00:zz", "10.0.0.1")]),
        ValueError,
        r"not a MAC address",
    ),
    (
        "bad IP",
        lambda: Job(REFUSED, 900, 4, [Member(0, 1, "02:00:00:00:00:01", "10.0.0.256")]),
        ValueError,
        r"not an IPv4 address: '10\.0\.0\.256'",
    ),
    (
        "bad parent IP",
        lambda: Job(REFUSED, 900, 4, [member(0)], parent=Parent("02:00:00:00:00:aa", "10.0.0", 1, 0)),
        ValueError,
        r"not an IPv4 address",
    ),
    (
        "id at parent 32",
        lambda: Job(REFUSED, 900, 4, [member(0)], parent=Parent("02:00:00:00:00:aa", "10.0.0.9", 1, 32)),
        ValueError,
        r"id at parent 32",
    ),
    (
        "multicast group 0",
        lambda: Job(REFUSED, 900, 4, [member(0)], mgid=0),
        ValueError,
        r"multicast group 0",
    ),
    (
        "another job's multicast group",
        lambda: Job(REFUSED, 900, 4, [member(0)], mgid=AGG_MGID_BASE + 20),
        ControlPlaneError,
        r"multicast group 4116 belongs to job 20",
    ),
    (
        "hosts of another width than the program's",
        lambda: Job(REFUSED, 900, 4, [member(0)], values_per_packet=256),
        ControlPlaneError,
        rf"aggregates {DEFAULT_VALUES_PER_PACKET} values per packet, the job's hosts send 256: load "
        r"p4/innet\.p4 compiled with -DAGG_VALUES_PER_PACKET=256",
    ),
    (
        "a width no program has",
        lambda: Job(REFUSED, 900, 4, [member(0)], values_per_packet=48),
        ValueError,
        r"48 values per packet: p4/innet\.p4 is built for 32, 64, 256",
    ),
]


@pytest.mark.parametrize(("make", "exc", "message"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_create_refusals(
    sc: SwitchController, make: Callable[[], Job], exc: type[Exception], message: str
) -> None:
    ensure_base_job(sc)
    base = sc.jobs.read(20)
    job = make()
    with pytest.raises(exc, match=message):
        sc.jobs.create(job)
    # nothing was written: job 20 is as it was, the refused job has no trace
    assert sc.jobs.read(20) == base
    if job.job_id != 20:
        # (group 0 is not checked: reading multicast group 0 is a wildcard read of all groups)
        mgid = None if job.group_id in (0, base.group_id) else job.group_id
        assert_job_gone(sc, job.job_id, mgid)


def test_create_refuses_an_existing_flood_group(sc: SwitchController) -> None:
    """A job's group must be its own: an L2 flood group with that id stays as it was."""
    sc.client.set_multicast_group(77, [(3, 0), (4, 0)])
    try:
        with pytest.raises(ControlPlaneError, match="multicast group 77 exists already"):
            sc.jobs.create(Job(60, 960, 4, [member(0), member(1)], mgid=77))
        assert sorted(sc.client.multicast_group(77)) == [(3, 0), (4, 0)]
        assert 60 not in sc.jobs.ingress.jobs() and not entries(sc, AGG + "agg_members", 60)
    finally:
        sc.client.delete_multicast_group(77)


def test_create_needs_switch_addresses(sc: SwitchController) -> None:
    jobs = JobManager(sc.client)  # no switch_mac / switch_ip
    with pytest.raises(ControlPlaneError, match=r"switch's own MAC and IP"):
        jobs.create(Job(22, 920, 4, [member(0), member(1)]))
    assert_job_gone(sc, 22, AGG_MGID_BASE + 22)


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(Job(23, 940, 4, [member(0), member(1, udp_port=70000)]), id="udp_port 70000"),
        pytest.param(Job(24, 944, 4, [member(0), member(1, port=-1)]), id="port -1"),
        pytest.param(
            Job(25, 948, 4, [member(0), member(1)], parent=Parent("02:00:00:00:00:aa", "10.0.0.9", 600, 0)),
            id="parent port 600",
        ),
    ],
)
def test_refused_create_leaves_nothing_behind(sc: SwitchController, bad: Job) -> None:
    with pytest.raises((ControlPlaneError, ValueError)):
        sc.jobs.create(bad)
    assert_job_gone(sc, bad.job_id, bad.group_id)


@pytest.mark.parametrize(
    "text", ["+1:00:00:00:00:00", " 1:00:00:00:00:00", "1_:00:00:00:00:00", "0x:12:34:56:78:9a"]
)
def test_mac_text_with_int_syntax_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a MAC address"):
        mac_to_int(text)


def test_address_parsing() -> None:
    assert mac_to_int("02:00:00:00:00:0a") == mac_to_int("2-0-0-0-0-A") == 0x02000000000A
    assert ip_to_int("10.1.2.3") == 0x0A010203
    for bad in ("", "02:00:00:00:00:00:00", "02:00:00:00:00:001", 1 << 48, -1):
        with pytest.raises(ValueError):
            mac_to_int(bad)
    for bad in ("10.0.0", "10.0.0.1/24", "::1", "10.0.0.01", 1 << 32):
        with pytest.raises(ValueError):
            ip_to_int(bad)


def l2_insert(match: dict | None = None, action: str = FWD + "l2_forward", **params: int) -> dict:
    """insert_entry() arguments for l2_exact (a valid entry unless overridden)."""
    match = {"hdr.ethernet.dst_addr": 1} if match is None else match
    return dict(table=FWD + "l2_exact", match=match, action=action, params=params or {"port": 1})


NAME_ERRORS = [
    (
        "table without its control",
        dict(table="ipv4_lpm", match={}, action=FWD + "set_nhop"),
        r"no table named 'ipv4_lpm'; did you mean InnetIngress\.forwarding\.ipv4_lpm\?",
    ),
    (
        "action without its control",
        l2_insert(action="l2_forward"),
        r"no action named 'l2_forward'; did you mean InnetIngress\.forwarding\.l2_forward\?",
    ),
    (
        "unknown table",
        dict(table="InnetIngress.nothing", match={}, action=FWD + "drop"),
        r"no table named 'InnetIngress\.nothing'",
    ),
    (
        "key field typo",
        l2_insert({"hdr.ethernet.dst": 1}),
        r"no key field \['hdr\.ethernet\.dst'\]; keys: \['hdr\.ethernet\.dst_addr'\]",
    ),
    (
        "parameter typo",
        l2_insert(prot=1),
        r"needs parameter 'port'",
    ),
    (
        "extra parameter",
        l2_insert(port=1, vlan=2),
        r"has no parameter \['vlan'\]",
    ),
    (
        "parameter too wide",
        l2_insert(port=512),
        r"l2_forward\(port\): 512 does not fit in 9 bits",
    ),
    (
        "key too wide",
        l2_insert({"hdr.ethernet.dst_addr": 1 << 48}),
        r"key hdr\.ethernet\.dst_addr: \d+ does not fit in 48 bits",
    ),
    (
        "negative value",
        l2_insert(port=-1),
        r"-1 does not fit in 9 bits",
    ),
    (
        "missing exact key (refused by the switch)",
        l2_insert({}),
        r"cannot insert into InnetIngress\.forwarding\.l2_exact: .*hdr\.ethernet\.dst_addr.* is missing",
    ),
    (
        "prefix length 33 (refused by the switch)",
        dict(
            table=FWD + "ipv4_lpm",
            match={"hdr.ipv4.dst_addr": Lpm(0, 33)},
            action=FWD + "set_nhop",
            params={"dst_mac": 1, "src_mac": 2, "port": 3},
        ),
        r"INVALID_ARGUMENT.*prefix length 33",
    ),
]


@pytest.mark.parametrize(("kwargs", "message"), [r[1:] for r in NAME_ERRORS], ids=[r[0] for r in NAME_ERRORS])
def test_insert_entry_refusals(sc: SwitchController, kwargs: dict, message: str) -> None:
    before = sc.client.read_entries(kwargs["table"]) if kwargs["table"] in sc.client.info.tables else None
    with pytest.raises(ControlPlaneError, match=message):
        sc.client.insert_entry(**kwargs)
    if before is not None:
        assert sc.client.read_entries(kwargs["table"]) == before


def test_register_and_counter_refusals(sc: SwitchController) -> None:
    with pytest.raises(ControlPlaneError, match=r"no register named 'agg_round'; did you mean InnetIngress"):
        sc.client.write_registers("agg_round", {0: 1})
    with pytest.raises(ControlPlaneError, match=r"has 2048 cells; index 2048 is outside"):
        sc.client.write_registers(AGG + "agg_round", {2048: 1})
    with pytest.raises(ControlPlaneError, match=r"agg_round\[5\]: 65536 does not fit in 16 bits"):
        sc.client.write_registers(AGG + "agg_round", {5: 1 << 16})
    with pytest.raises(ControlPlaneError, match=r"OUT_OF_RANGE"):
        sc.client.read_register(AGG + "agg_round", 2048)
    with pytest.raises(ControlPlaneError, match=r"no counter named"):
        sc.client.read_counter("agg_stale", 0)


# ---- isolation of job operations ----


def test_reset_and_delete_touch_only_their_job(sc: SwitchController) -> None:
    a = Job(40, 500, 8, [member(0, net=40), member(1, net=40), member(2, net=40)], threshold=2)
    b = Job(41, 508, 8, [member(0, port=11, net=41), member(5, port=12, net=41)])
    sc.jobs.create(a)
    sc.jobs.create(b)
    b_before = sc.jobs.read(41)
    a_cells, b_cells = job_cells(500, 8), job_cells(508, 8)
    window = range(a_cells.start - 4, b_cells.stop + 4)  # both jobs' cells and neighbours on each side

    written = fill_cells(sc, window)
    assert read_cells(sc, window) == written
    sc.jobs.reset(40)
    after = read_cells(sc, window)
    for reg in STATE_REGISTERS:
        for c in window:
            assert after[reg][c] == (0 if c in a_cells else written[reg][c]), (reg, c)
    assert sc.jobs.read(40).members == a.members  # reset keeps the job
    assert sc.jobs.read(41) == b_before

    written = fill_cells(sc, window)
    sc.jobs.delete(40)
    assert_job_gone(sc, 40, AGG_MGID_BASE + 40)
    with pytest.raises(ControlPlaneError, match=r"no job 40"):
        sc.jobs.read(40)
    after = read_cells(sc, window)
    for reg in STATE_REGISTERS:
        for c in window:
            assert after[reg][c] == (0 if c in a_cells else written[reg][c]), (reg, c)
    # job b keeps its entries, addresses and group
    assert sc.jobs.read(41) == b_before
    assert sorted(sc.client.multicast_group(AGG_MGID_BASE + 41)) == [(11, 0), (12, 5)]
    assert sorted(sc.jobs.egress.member_addrs(41)) == [0, 5]
    # nothing of job a is left over: its id and slots can be used again
    sc.jobs.create(a)
    assert sc.jobs.read(40).members == a.members


def test_operations_on_unknown_job(sc: SwitchController) -> None:
    for op in (sc.jobs.read, sc.jobs.delete, sc.jobs.reset):
        with pytest.raises(ControlPlaneError, match=r"no job 77 on 127\.0\.0\.1:\d+"):
            op(77)
    with pytest.raises(ControlPlaneError, match=r"no job 77"):
        sc.jobs.remove_worker(77, 0)


# ---- removing a failed worker ----


def test_remove_worker_from_synchronous_job(sc: SwitchController) -> None:
    job = Job(50, 600, 4, [member(0, net=50), member(1, net=50), member(2, net=50)])
    sc.jobs.create(job)
    # remove_worker needs no switch addresses: it keeps the installed ones
    got = JobManager(sc.client).remove_worker(50, 1)
    assert [m.worker_id for m in got.members] == [0, 2] and got.synchronous
    assert sc.jobs.read(50) == got
    params = sc.jobs.ingress.jobs()[50]
    assert params["threshold"] == 2
    assert params["switch_mac"] == mac_to_int(SWITCH_MAC) and params["switch_ip"] == ip_to_int(SWITCH_IP)
    assert list(sc.jobs.ingress.member_ports(50)) == [0, 2]
    assert sorted(sc.jobs.egress.member_addrs(50)) == [0, 2]
    assert sorted(sc.client.multicast_group(AGG_MGID_BASE + 50)) == [(1, 0), (3, 2)]

    got = sc.jobs.remove_worker(50, 0)
    assert [m.worker_id for m in got.members] == [2]
    assert sc.jobs.ingress.jobs()[50]["threshold"] == 1
    assert sc.client.multicast_group(AGG_MGID_BASE + 50) == [(3, 2)]


def test_remove_worker_from_asynchronous_job(sc: SwitchController) -> None:
    job = Job(51, 610, 4, [member(w, net=51) for w in (0, 1, 2, 3)], threshold=2)
    sc.jobs.create(job)
    got = sc.jobs.remove_worker(51, 3)
    assert [m.worker_id for m in got.members] == [0, 1, 2]
    assert got.threshold == 2 and not got.synchronous
    assert sc.jobs.read(51) == got
    assert sc.jobs.ingress.jobs()[51]["threshold"] == 2
    # down to the threshold: all members left are awaited
    got = sc.jobs.remove_worker(51, 0)
    assert [m.worker_id for m in got.members] == [1, 2]
    assert got.effective_threshold == 2 and got.synchronous
    assert sc.jobs.ingress.jobs()[51]["threshold"] == 2
    assert list(sc.jobs.ingress.member_ports(51)) == [1, 2]
    assert sorted(sc.jobs.egress.member_addrs(51)) == [1, 2]
    assert sorted(sc.client.multicast_group(AGG_MGID_BASE + 51)) == [(2, 1), (3, 2)]


def test_remove_worker_keeps_low_threshold(sc: SwitchController) -> None:
    sc.jobs.create(Job(52, 620, 4, [member(w, net=52) for w in (4, 5, 6)], threshold=1))
    got = sc.jobs.remove_worker(52, 5)
    assert got.threshold == 1 and len(got.members) == 2
    assert sc.jobs.ingress.jobs()[52]["threshold"] == 1


def test_remove_worker_refusals(sc: SwitchController) -> None:
    sc.jobs.create(Job(53, 630, 4, [member(0, net=53), member(1, net=53)]))
    before = sc.jobs.read(53)
    with pytest.raises(ControlPlaneError, match=r"worker 7 is not a member of job 53"):
        sc.jobs.remove_worker(53, 7)
    assert sc.jobs.read(53) == before
    sc.jobs.remove_worker(53, 0)
    before = sc.jobs.read(53)
    with pytest.raises(ControlPlaneError, match=r"worker 1 is job 53's last member; delete the job instead"):
        sc.jobs.remove_worker(53, 1)
    assert sc.jobs.read(53) == before


# ---- counters ----


def test_counters_on_fresh_pipeline(fresh: SwitchController) -> None:
    sc = fresh
    sc.jobs.create(Job(5, 0, 8, [member(0), member(1)]))
    zeros = {"aggregated": 0, "retransmissions": 0, "stale": 0, "results": 0}
    for job_id in (0, 5, 255):  # counters exist for every job id, installed or not
        assert sc.jobs.counters(job_id) == zeros
    assert sc.jobs.ingress.rejected() == dict.fromkeys(REJECT_REASONS, 0)
    for bad in (256, -1):
        with pytest.raises(ControlPlaneError, match=rf"has 256 cells; index {bad} is outside"):
            sc.jobs.counters(bad)
        with pytest.raises(ControlPlaneError, match=rf"agg_results has 256 cells; index {bad} is outside"):
            sc.jobs.egress.results(bad)
    with pytest.raises(ControlPlaneError, match=r"agg_rejected has 8 cells; index 8 is outside"):
        sc.client.read_counter(AGG + "agg_rejected", 8)


# ---- forwarding ----


def test_forwarding_routes_and_l2(fresh: SwitchController) -> None:
    fw = fresh.forwarding
    assert fw.routes() == []
    fw.add_route("10.0.1.0/24", "02:00:00:00:01:01", "02:00:00:00:00:fe", 1)
    fw.add_route("10.0.2.77/16", 0x020000000201, 0x0200000000FE, 2)  # host bits are dropped
    fw.add_host_route("10.9.9.9", "02:00:00:00:09:09", SWITCH_MAC, 9)
    routes = dict(fw.routes())
    assert routes == {
        "10.0.1.0/24": {"dst_mac": 0x020000000101, "src_mac": 0x0200000000FE, "port": 1},
        "10.0.0.0/16": {"dst_mac": 0x020000000201, "src_mac": 0x0200000000FE, "port": 2},
        "10.9.9.9/32": {"dst_mac": 0x020000000909, "src_mac": 0x0200000000FE, "port": 9},
    }
    with pytest.raises(ControlPlaneError, match=r"ALREADY_EXISTS"):
        fw.add_route("10.0.1.0/24", "02:00:00:00:01:02", SWITCH_MAC, 3)
    fw.delete_route("10.0.1.5/24")
    assert sorted(dict(fw.routes())) == ["10.0.0.0/16", "10.9.9.9/32"]
    with pytest.raises(ControlPlaneError, match=r"NOT_FOUND"):
        fw.delete_route("10.0.1.0/24")

    # refused before anything is written
    with pytest.raises(ValueError, match=r"not an IPv4 address: '10\.0\.3\.300'"):
        fw.add_host_route("10.0.3.300", "02:00:00:00:03:01", SWITCH_MAC, 3)
    with pytest.raises(ValueError, match=r"not a MAC address"):
        fw.add_host_route("10.0.3.3", "02:00:00:00:03", SWITCH_MAC, 3)
    with pytest.raises(ValueError):
        fw.add_route("10.0.4.0/33", "02:00:00:00:04:01", SWITCH_MAC, 4)
    assert sorted(dict(fw.routes())) == ["10.0.0.0/16", "10.9.9.9/32"]

    fw.add_l2("02:00:00:00:05:05", 5)
    fw.add_flood("ff:ff:ff:ff:ff:ff", 7)
    l2 = {
        e.match["hdr.ethernet.dst_addr"]: (e.action, e.params)
        for e in fresh.client.read_entries(FWD + "l2_exact")
    }
    assert l2 == {
        0x020000000505: (FWD + "l2_forward", {"port": 5}),
        0xFFFFFFFFFFFF: (FWD + "l2_flood", {"mgid": 7}),
    }
    with pytest.raises(ControlPlaneError, match=r"512 does not fit in 9 bits"):
        fw.add_l2("02:00:00:00:05:06", 512)


# ---- connections ----


def test_unreachable_switch_in_process() -> None:
    start = time.monotonic()
    with pytest.raises(
        ControlPlaneError, match=r"no P4Runtime server answers at 127\.0\.0\.1:\d+ within 0\.5 s"
    ):
        SwitchController(f"127.0.0.1:{free_port('tcp')}", timeout=0.5)
    assert time.monotonic() - start < 5


def test_second_controller_with_same_election_id_is_refused(sc: SwitchController, switches) -> None:
    with pytest.raises(ControlPlaneError):
        SwitchController(switches[0].address, timeout=5)
    # the first controller is still the primary
    sc.jobs.create(Job(62, 710, 2, [member(0, net=62)]))
    assert 62 in sc.jobs.ingress.jobs()


def test_second_controller_error_names_the_cause(sc: SwitchController, switches) -> None:
    with pytest.raises(ControlPlaneError, match=r"election id"):
        SwitchController(switches[0].address, timeout=5)


def test_missing_p4_file(sc: SwitchController, tmp_path: Path) -> None:
    with pytest.raises(ControlPlaneError, match=r"P4 program .*nothing\.p4 does not exist"):
        sc.load(tmp_path / "nothing.p4")


# ---- the CLI ----


def test_cli_help_and_malformed_member(switches) -> None:
    addr = switches[1].address
    create = [*"job create --job 1 --slots 0:4".split(), *switch_addrs()]
    # neither connects to the switch: run them side by side
    procs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
        for argv in (cli_argv(addr, "--help"), cli_argv(addr, *create, "--member", "0,1,02:00:00:00:00:01"))
    ]
    (help_out, _), (_, member_err) = (p.communicate(timeout=60) for p in procs)

    assert procs[0].returncode == 0
    for sub in ("load", "route", "l2", "job", "counters"):
        assert sub in help_out

    assert procs[1].returncode == 2, member_err
    assert "Traceback" not in member_err, member_err
    errors = [line for line in member_err.splitlines() if "error:" in line]
    assert len(errors) == 1, member_err
    assert "--member '0,1,02:00:00:00:00:01': expected ID,PORT,MAC,IP[,UDP_PORT]" in errors[0]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--member", "0,one,02:00:00:00:00:01,10.0.0.1", "--slots", "0:4"], "--member '0,one,"),
        (["--member", "0,1,02:00:00:00:00:01,10.0.0.1,udp", "--slots", "0:4"], "--member '0,1,"),
        (["--member", "0,1,02:00:00:00:00:01,10.0.0.1", "--slots", "4"], "--slots '4': expected BASE:COUNT"),
        (["--member", "0,1,02:00:00:00:00:01,10.0.0.1", "--slots", "0:4", "--parent", "x,y,1"], "--parent"),
    ],
    ids=["member port", "member udp port", "slots", "parent"],
)
def test_cli_argument_errors_in_process(
    args: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused by argparse before any connection (main() in this process: no CLI start-up cost)."""
    from control_plane.__main__ import main

    argv = ["--switch", "127.0.0.1:1", *"job create --job 1".split(), *switch_addrs(), *args]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and fragment in errors[0], errors


def test_cli_job_lifecycle(switches) -> None:
    addr = switches[1].address

    # before anything is loaded, attaching (what every command but load does) fails clearly
    with SwitchController(addr) as ctl:
        with pytest.raises(ControlPlaneError, match=r"FAILED_PRECONDITION: no forwarding pipeline"):
            ctl.attach()

    r = run_cli(addr, "load")
    assert r.returncode == 0 and f"({DEFAULT_VALUES_PER_PACKET} values per aggregation packet)" in r.stdout, (
        describe(r)
    )

    r = run_cli(
        addr,
        *"job create --job 3 --slots 16:8 --threshold 2".split(),
        *("--member", "0,1,02:00:00:00:00:01,10.0.1.1,40000"),
        *("--member", "2,2,02:00:00:00:00:02,10.0.2.1"),
        *("--member", "5,4,02:00:00:00:00:05,10.0.5.1,40005"),
        *switch_addrs(),
    )
    assert r.returncode == 0, describe(r)
    assert "job 3 created: 3 members, slots 16..23, asynchronous (threshold 2)" in r.stdout

    r = run_cli(addr, "job", "show", "--job", "3")
    assert r.returncode == 0, describe(r)
    assert json.loads(r.stdout) == {
        "job_id": 3,
        "slot_base": 16,
        "num_slots": 8,
        "threshold": 2,
        "synchronous": False,
        "mgid": AGG_MGID_BASE + 3,
        "values_per_packet": DEFAULT_VALUES_PER_PACKET,
        "members": [
            {"worker_id": 0, "port": 1, "mac": "02:00:00:00:00:01", "ip": "10.0.1.1", "udp_port": 40000},
            {
                "worker_id": 2,
                "port": 2,
                "mac": "02:00:00:00:00:02",
                "ip": "10.0.2.1",
                "udp_port": AGG_UDP_PORT,
            },
            {"worker_id": 5, "port": 4, "mac": "02:00:00:00:00:05", "ip": "10.0.5.1", "udp_port": 40005},
        ],
        "parent": None,
    }

    r = run_cli(addr, "counters", "--json")
    assert r.returncode == 0, describe(r)
    assert json.loads(r.stdout) == {
        "jobs": {"3": {"aggregated": 0, "retransmissions": 0, "stale": 0, "results": 0}},
        "rejected": dict.fromkeys(REJECT_REASONS, 0),
    }

    r = run_cli(addr, "job", "remove-worker", "--job", "3", "--worker", "2")
    assert r.returncode == 0, describe(r)
    assert "worker 2 removed from job 3: 2 members, threshold 2" in r.stdout

    with SwitchController(addr) as ctl:  # check the switch itself, then let the CLI in again
        ctl.attach()
        job = ctl.jobs.read(3)
        assert [m.worker_id for m in job.members] == [0, 5] and job.effective_threshold == 2
        assert sorted(ctl.client.multicast_group(AGG_MGID_BASE + 3)) == [(1, 0), (4, 5)]

    r = run_cli(addr, "job", "delete", "--job", "3")
    assert r.returncode == 0 and "job 3 deleted" in r.stdout, describe(r)

    r = run_cli(addr, "job", "show", "--job", "3")
    assert_cli_error(r.returncode, r.stderr, "no job 3")


def test_cli_unreachable_switch(unreachable_cli: tuple[subprocess.Popen[str], int]) -> None:
    """Started with the module (see the fixture); gives up by itself after the client's 10 s
    default timeout (a CLI that hangs fails the communicate below). No wall-clock assertion: the
    time since the fixture started includes the module's other tests."""
    proc, port = unreachable_cli
    _, stderr = proc.communicate(timeout=120)
    assert_cli_error(proc.returncode, stderr, f"no P4Runtime server answers at 127.0.0.1:{port} within 10 s")


def test_cli_load_p4_with_error(switches, tmp_path: Path) -> None:
    bad = tmp_path / "bad.p4"
    bad.write_text("this is not P4;\n")
    r = run_cli(switches[1].address, "load", "--p4", str(bad))
    assert_cli_error(r.returncode, r.stderr, "bad.p4:1:1", "syntax error")


def test_cli_load_with_another_width_and_jobs_checked_against_it(switches) -> None:
    """`load -D AGG_VALUES_PER_PACKET=256` compiles innet.p4 for 256 values per packet (the P4Info
    says so: one agg_value register per value); `job create --values-per-packet` is refused
    unless it names that width, with a line that says what to do."""
    addr = switches[1].address
    r = run_cli(addr, "load", "-D", "AGG_VALUES_PER_PACKET=256")
    assert r.returncode == 0 and "(256 values per aggregation packet)" in r.stdout, describe(r)
    job = [*"job create --job 4 --slots 0:4".split(), "--member", "0,1,02:00:00:00:00:01,10.0.1.1"]
    job += switch_addrs()
    r = run_cli(addr, *job, "--values-per-packet", "64")
    assert_cli_error(
        r.returncode, r.stderr, "aggregates 256 values per packet, the job's hosts send 64",
        "-DAGG_VALUES_PER_PACKET=64", "--values-per-packet 256",
    )
    r = run_cli(addr, *job, "--values-per-packet", "256")
    assert r.returncode == 0, describe(r)
    r = run_cli(addr, "job", "show", "--job", "4")
    assert r.returncode == 0 and json.loads(r.stdout)["values_per_packet"] == 256, describe(r)
    r = run_cli(addr, "load", "-D", "AGG_VALUES_PER_PACKET=48")
    assert_cli_error(r.returncode, r.stderr, "types.p4:", "AGG_VALUES_PER_PACKET must be 32, 64 or 256")
