"""In-switch aggregation over real sockets: worker processes in network namespaces, each with
a veth into `python -m softswitch` running p4/innet.p4, jobs installed over P4Runtime by
control_plane, tensors allreduced by `python -m host_agents.allreduce`.

Every result is compared with the float64 sum of all workers' inputs (recomputed here from the
workers' seeds) within the fixed-point bound of docs/protocol.md.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from host_agents.agg_protocol import AGG_UDP_PORT, EXP_BIAS, HEADER_STRUCT, OP_DATA
from host_agents.agg_protocol import DEFAULT_VALUES_PER_PACKET as VALUES_PER_PACKET  # the testbeds' width
from host_agents.allreduce import input_array
from topologies.netns import create_namespace
from topologies.testbed import Testbed, star, switch_ip, two_level

pytestmark = [pytest.mark.netns, pytest.mark.slow]

SIZES = [1, 1000, 10003, 40000]  # 10003 and 1 are not multiples of the values per packet


def _netem_works() -> bool:
    """tc netem needs the sch_netem kernel module, which minimal kernels (e.g. Firecracker's) lack."""
    ns = create_namespace("nq")
    try:
        ns.run(["ip", "link", "set", "lo", "up"])
        return (
            ns.run(["tc", "qdisc", "add", "dev", "lo", "root", "netem", "loss", "1%"], check=False).returncode
            == 0
        )
    except (OSError, RuntimeError):
        return False
    finally:
        ns.delete()


def run_workers(
    tb: Testbed,
    tmp: Path,
    job: int,
    slots: int,
    sizes: list[int],
    seed: int = 0,
    workers: list | None = None,
    udp_port: int = 40000,
    switch_index: int | None = None,
    extra: list[str] | None = None,
    num_workers: int | None = None,
    per_packet_ranks: tuple[int, ...] = (),
) -> list[subprocess.Popen]:
    """Start one allreduce worker per host (not waited for)."""
    procs = []
    workers = tb.workers if workers is None else workers
    for rank, w in enumerate(workers):
        sw_ip = w.switch.ip if switch_index is None else switch_ip(switch_index)
        argv = [
            sys.executable,
            "-m",
            "host_agents.allreduce",
            "--switch",
            sw_ip,
            "--bind",
            f"{w.ip}:{udp_port}",
            "--job",
            str(job),
            "--worker",
            str(w.worker_id),
            "--workers",
            str(num_workers or len(workers)),
            "--slots",
            str(slots),
            "--sizes",
            ",".join(map(str, sizes)),
            "--seed",
            str(seed),
            "--timeout",
            "0.05",
            "--max-tries",
            "200",
            "--out",
            str(tmp / f"job{job}_r{rank}"),
        ]
        own = ["--per-packet"] if rank in per_packet_ranks else []
        procs.append(w.host.ns.popen(argv + (extra or []) + own))
    return procs


def wait_all(procs: list[subprocess.Popen], timeout: float = 180) -> list[list[dict]]:
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=timeout)
        assert p.returncode == 0, f"worker failed ({p.returncode}): {stderr[-3000:]}"
        out.append([json.loads(line) for line in stdout.splitlines() if line.startswith("{")])
    return out


def chunk_exponents(inputs: list[np.ndarray], vpp: int = VALUES_PER_PACKET) -> np.ndarray:
    """Per chunk of ``vpp`` values: the job-wide e with every |x| < 2^e (frexp's exponent)."""
    n, size = len(inputs), inputs[0].size
    chunks = -(-size // vpp)
    padded = np.zeros((n, chunks * vpp))
    for i, x in enumerate(inputs):
        padded[i, :size] = x
    return np.frexp(np.abs(padded).reshape(n, chunks, vpp).max(axis=(0, 2)))[1]


def quantization_bound(inputs: list[np.ndarray], vpp: int = VALUES_PER_PACKET,
                       exponents: np.ndarray | None = None) -> np.ndarray:
    """Per element: n contributions rounded at scale 2^(30 - e - ceil(log2 n)), e the chunk's
    job-wide exponent (chunks of ``vpp`` values; ``exponents`` when the job used others, as a
    predicted first round does), plus float32 rounding of the returned sum."""
    n = len(inputs)
    size = inputs[0].size
    chunks = -(-size // vpp)
    padded = np.zeros((n, chunks * vpp))
    for i, x in enumerate(inputs):
        padded[i, :size] = x
    e = chunk_exponents(inputs, vpp) if exponents is None else exponents
    headroom = math.ceil(math.log2(n)) if n > 1 else 0
    scale = np.ldexp(1.0, 30 - e - headroom)
    per_chunk = n * 0.5 / scale
    total = np.abs(padded).sum(axis=0)
    return np.repeat(per_chunk, vpp)[:size] + total[:size] * 2.0**-23


def check_results(
    tmp: Path,
    job: int,
    ranks_to_ids: list[int],
    sizes: list[int],
    seed: int = 0,
    vpp: int = VALUES_PER_PACKET,
    rep: int = 0,
    exponents: np.ndarray | None = None,
) -> None:
    for size in sizes:
        inputs = [input_array(seed, w, size, rep).astype(np.float64) for w in ranks_to_ids]
        expected = np.sum(inputs, axis=0)
        bound = quantization_bound(inputs, vpp, exponents)
        first = None
        for rank in range(len(ranks_to_ids)):
            got = np.load(tmp / f"job{job}_r{rank}" / f"result_{size}_{rep}.npy")
            assert got.shape == (size,)
            err = np.abs(got - expected)
            worst = int(np.argmax(err - bound))
            assert (err <= bound).all(), (
                f"job {job} size {size} rank {rank}: element {worst} is {got[worst]}, expected "
                f"{expected[worst]} within {bound[worst]:.3g}"
            )
            if first is None:
                first = got
            assert np.array_equal(got, first), "workers received different results"


@pytest.mark.e2e
def test_four_workers_sum_within_quantization_bound(tmp_path: Path) -> None:
    with star(4) as tb:
        tb.install_job(1, slot_base=0, num_slots=32)
        wait_all(run_workers(tb, tmp_path, 1, 32, SIZES))
        counters = tb.root.controller.jobs.counters(1)
    check_results(tmp_path, 1, [0, 1, 2, 3], SIZES)
    packets = sum(-(-s // VALUES_PER_PACKET) + min(32, -(-s // VALUES_PER_PACKET)) for s in SIZES)
    assert counters["aggregated"] == 4 * packets  # every chunk and bootstrap packet added exactly once


def test_lossy_links_still_give_the_exact_result(tmp_path: Path) -> None:
    """5% of packets dropped per link: tc netem on the switch's veth ends when the kernel has it,
    else the switch's own link-loss emulation (each frame in and out dropped with p = 0.05)."""
    use_netem = _netem_works()
    with star(4, loss_rate=0.0 if use_netem else 0.05, loss_seed=7) as tb:
        if use_netem:
            for w in tb.workers:
                subprocess.run(
                    ["tc", "qdisc", "add", "dev", w.host.pair.host_if, "root", "netem", "loss", "5%"],
                    check=True,
                )
                w.host.ns.run(["tc", "qdisc", "add", "dev", w.host.pair.ns_if, "root", "netem", "loss", "5%"])
        tb.install_job(1, slot_base=0, num_slots=32)
        stats = wait_all(run_workers(tb, tmp_path, 1, 32, [1000, 10003]))
        counters = tb.root.controller.jobs.counters(1)
    check_results(tmp_path, 1, [0, 1, 2, 3], [1000, 10003])
    assert sum(rec["retransmissions"] for w in stats for rec in w) > 0, (
        "no loss happened: the test tests nothing"
    )
    assert counters["retransmissions"] > 0


def test_batched_and_per_packet_workers_share_a_lossy_job(tmp_path: Path) -> None:
    """Two workers on the batched path (sendmmsg/recvmmsg, adaptive timeout) and two on the
    per-packet path in one job, the switch dropping 5% of frames each way: the same exact sums,
    losses recovered by retransmission, and every contribution added exactly once."""
    sizes = [1000, 10003]
    with star(4, loss_rate=0.05, loss_seed=11) as tb:
        tb.install_job(1, slot_base=0, num_slots=32)
        stats = wait_all(run_workers(tb, tmp_path, 1, 32, sizes, per_packet_ranks=(2, 3)))
        counters = tb.root.controller.jobs.counters(1)
    check_results(tmp_path, 1, [0, 1, 2, 3], sizes)
    assert all(sum(rec["retransmissions"] for rec in stats[r]) > 0 for r in (0, 1)), (
        "the batched workers lost nothing: the test tests nothing"
    )
    packets = sum(-(-s // VALUES_PER_PACKET) + min(32, -(-s // VALUES_PER_PACKET)) for s in sizes)
    assert counters["aggregated"] == 4 * packets


def test_predicted_exponents_redo_when_one_worker_does_not_fit(tmp_path: Path) -> None:
    """From the second call of a size on, each slot's first round goes out on the exponent the
    last call agreed plus one bit (no bootstrap round); a worker whose chunk does not fit (an
    outlier moved into it) announces the redo mark, and every worker, batched and per-packet,
    runs that slot's bootstrap and chunk again: the sums stay within the bound of the exponent
    each chunk was scaled with, over lossy links, and every contribution is added once."""
    size, slots, reps = 10003, 32, 4
    with star(4, loss_rate=0.03, loss_seed=5) as tb:
        tb.install_job(1, slot_base=0, num_slots=slots)
        stats = wait_all(run_workers(tb, tmp_path, 1, slots, [size], extra=["--repeat", str(reps)],
                                     per_packet_ranks=(3,)))
        counters = tb.root.controller.jobs.counters(1)
    redone = [[rec["redone"] for rec in w] for w in stats]
    assert all(r == redone[0] for r in redone), "the workers redid different rounds"
    assert redone[0][0] == 0 and sum(redone[0]) > 0, "no prediction missed: the test tests nothing"
    chunks = -(-size // VALUES_PER_PACKET)
    prev = None
    for rep in range(reps):
        inputs = [input_array(0, w, size, rep).astype(np.float64) for w in range(4)]
        e = chunk_exponents(inputs)
        used = e.copy()
        if prev is not None:  # predicted first rounds: the larger of the two (a miss is redone)
            used[:slots] = np.maximum(e[:slots], prev[:slots] + 1)
        check_results(tmp_path, 1, [0, 1, 2, 3], [size], rep=rep, exponents=used)
        prev = e
    # per call: one packet per chunk; a bootstrap per slot in the first call; per redo, the
    # missed round, a bootstrap and the chunk again
    assert counters["aggregated"] == 4 * (reps * chunks + slots + 2 * sum(redone[0]))


def test_256_values_per_packet_and_hosts_of_another_width(tmp_path: Path) -> None:
    """A switch compiled with -DAGG_VALUES_PER_PACKET=256, dropping 5% of frames each way: three
    workers at 256 values per packet get the exact sums, losses recovered by retransmission. A job
    for hosts of 64 is refused by the control plane, and a worker that sends 64 anyway sees every
    packet with values dropped as malformed and gives up with a message that says to check the
    values per packet (not a hang)."""
    from control_plane.aggregation import Job, Member
    from control_plane.p4runtime_client import ControlPlaneError

    sizes = [1000, 10003]
    with star(3, loss_rate=0.05, loss_seed=13, values_per_packet=256) as tb:
        assert tb.root.controller.jobs.values_per_packet == 256
        refused = "aggregates 256 values per packet, the job's hosts send 64"
        with pytest.raises(ControlPlaneError, match=refused):
            tb.install_job(3, slot_base=16, num_slots=8, udp_port=40001, values_per_packet=64)
        tb.install_job(1, slot_base=0, num_slots=16, values_per_packet=256)
        stats = wait_all(run_workers(tb, tmp_path, 1, 16, sizes, extra=["--values-per-packet", "256"]))
        counters = tb.root.controller.jobs.counters(1)
        # one worker of 64 values in a job of its own (the control plane not told its width)
        w = tb.workers[0]
        tb.root.controller.jobs.create(Job(2, 16, 8, [Member(w.worker_id, w.port, w.host.mac, w.ip, 40001)]))
        t0 = time.monotonic()
        wrong = w.host.ns.popen([
            sys.executable, "-m", "host_agents.allreduce", "--switch", w.switch.ip, "--bind", f"{w.ip}:40001",
            "--job", "2", "--worker", "0", "--workers", "1", "--slots", "8", "--sizes", "1000",
            "--values-per-packet", "64", "--timeout", "0.05", "--max-tries", "10",
        ])  # fmt: skip
        _, stderr = wrong.communicate(timeout=60)
        rejected = tb.root.controller.jobs.ingress.rejected()
    check_results(tmp_path, 1, [0, 1, 2], sizes, vpp=256)
    assert sum(rec["retransmissions"] for ws in stats for rec in ws) > 0, "no loss: the test tests nothing"
    packets = sum(-(-s // 256) + min(16, -(-s // 256)) for s in sizes)
    assert counters["aggregated"] == 3 * packets  # every chunk and bootstrap packet added exactly once
    assert wrong.returncode == 1 and time.monotonic() - t0 < 30, stderr
    assert "check values per packet: this worker sends 64 (UDP length 292)" in stderr, stderr
    assert rejected["malformed"] > 0, f"{rejected} {stderr}"


def _if_packets(host) -> tuple[int, int]:  # noqa: ANN001 (topologies.netns.Host)
    """(tx, rx) packets of the host's interface: skbs, so a super-frame counts once."""
    stats = f"/sys/class/net/{host.pair.ns_if}/statistics"
    out = host.ns.run(["cat", f"{stats}/tx_packets", f"{stats}/rx_packets"]).stdout.split()
    return int(out[0]), int(out[1])


_TCP_SINK = """
import hashlib, socket
s = socket.create_server(("0.0.0.0", 5201)); print("up", flush=True)
c, _ = s.accept(); h = hashlib.sha256(); n = 0
while b := c.recv(1 << 20):
    h.update(b); n += len(b)
print(n, h.hexdigest(), flush=True)
"""
_TCP_SOURCE = """
import hashlib, socket, sys
data = bytes(range(251)) * (4_000_000 // 251)
s = socket.create_connection((sys.argv[1], 5201)); s.sendall(data); s.shutdown(socket.SHUT_WR); s.recv(1)
print(len(data), hashlib.sha256(data).hexdigest(), flush=True)
"""


def test_offload_mode_moves_super_frames_and_keeps_every_result(tmp_path: Path) -> None:
    """Links with TSO and UDP segmentation on and the switch's ports in offload mode (`python -m
    softswitch --offloads`): the workers hand the switch UDP super-frames (fewer skbs leave each
    host than datagrams), the switch aggregates every wire packet exactly once (its counter) and
    merges results into super-frames (fewer skbs arrive than results), and every sum is right. A
    4 MB TCP stream between two hosts crosses the same switch intact, cut into wire segments for
    the pipeline and merged again on the way out."""
    sizes = [10003, 100000]
    with star(3, values_per_packet=256, offloads=True) as tb:
        tb.install_job(1, slot_base=0, num_slots=32, values_per_packet=256)
        before = [_if_packets(w.host) for w in tb.workers]
        stats = wait_all(run_workers(tb, tmp_path, 1, 32, sizes, extra=["--values-per-packet", "256"]))
        after = [_if_packets(w.host) for w in tb.workers]
        counters = tb.root.controller.jobs.counters(1)
        src, dst = tb.workers[0].host, tb.workers[1].host
        t_before = _if_packets(src)[0], _if_packets(dst)[1]
        sink = dst.ns.popen([sys.executable, "-c", _TCP_SINK])
        assert sink.stdout.readline().strip() == "up"
        sent = src.ns.run([sys.executable, "-c", _TCP_SOURCE, dst.ip], timeout=60).stdout.split()
        got = sink.communicate(timeout=60)[0].split()
        t_after = _if_packets(src)[0], _if_packets(dst)[1]
    check_results(tmp_path, 1, [0, 1, 2], sizes, vpp=256)
    packets = sum(-(-s // 256) + min(32, -(-s // 256)) for s in sizes)
    assert counters["aggregated"] == 3 * packets  # each wire packet of the super-frames, once
    for rank, recs in enumerate(stats):
        datagrams_out = sum(r["packets_sent"] for r in recs)
        datagrams_in = sum(r["packets_received"] for r in recs)
        skbs_out, skbs_in = after[rank][0] - before[rank][0], after[rank][1] - before[rank][1]
        assert skbs_out < datagrams_out, f"worker {rank}: no UDP GSO ({skbs_out} skbs, {datagrams_out})"
        assert skbs_in < datagrams_in, f"worker {rank}: no merged results ({skbs_in} skbs, {datagrams_in})"
    assert got == sent, "the TCP stream arrived changed"
    segments = 4_000_000 // 1448
    assert t_after[0] - t_before[0] < segments / 4, "no TSO on the sender's link"
    assert t_after[1] - t_before[1] < segments / 4, "the switch did not merge the stream's segments"


def test_two_jobs_at_once_stay_correct(tmp_path: Path) -> None:
    """Two jobs over the same four hosts (separate UDP ports, slot ranges and groups) run together."""
    with star(4) as tb:
        tb.install_job(1, slot_base=0, num_slots=16, udp_port=40000)
        tb.install_job(2, slot_base=16, num_slots=24, udp_port=40001)
        procs = run_workers(tb, tmp_path, 1, 16, [10003], seed=1, udp_port=40000)
        procs += run_workers(tb, tmp_path, 2, 24, [10003], seed=2, udp_port=40001)
        wait_all(procs)
    check_results(tmp_path, 1, [0, 1, 2, 3], [10003], seed=1)
    check_results(tmp_path, 2, [0, 1, 2, 3], [10003], seed=2)


def test_hierarchical_two_switches_give_the_same_result(tmp_path: Path) -> None:
    """Two child switches with two workers each under one parent switch."""
    with two_level(hosts_per_child=2, num_children=2) as tb:
        tb.install_job(3, slot_base=0, num_slots=16)
        # worker ids repeat per child (0, 1 on each); the inputs follow the global rank instead
        procs = []
        for rank, w in enumerate(tb.workers):
            argv = [
                sys.executable,
                "-m",
                "host_agents.allreduce",
                "--switch",
                w.switch.ip,
                "--bind",
                f"{w.ip}:40000",
                "--job",
                "3",
                "--worker",
                str(w.worker_id),
                "--workers",
                "4",
                "--slots",
                "16",
                "--sizes",
                "1000,10003",
                "--timeout",
                "0.05",
                "--max-tries",
                "200",
                "--out",
                str(tmp_path / f"job3_r{rank}"),
                "--seed",
                "0",
                "--input-id",
                str(rank),
            ]
            procs.append(w.host.ns.popen(argv))
        wait_all(procs)
        parent_counters = tb.root.controller.jobs.counters(3)
    check_results(tmp_path, 3, [0, 1, 2, 3], [1000, 10003])
    assert parent_counters["aggregated"] > 0 and parent_counters["results"] > 0


def test_bad_worker_cannot_corrupt_another_job(tmp_path: Path) -> None:
    """While job 1 (hosts 0-2) runs, host 3 -- a member of job 2, whose slots sit right after job 1's --
    sends garbage, an unknown job id, slots outside job 2's range, job 1 packets under a removed
    worker's id and under a member's id (spoofed: the member is bound to another port), and RESULT
    packets. Job 1's results stay exact; the rejects are counted by reason."""
    with star(4) as tb:
        tb.install_job(1, slot_base=0, num_slots=16)
        from control_plane.aggregation import Job, Member

        rogue = tb.workers[3]
        tb.root.controller.jobs.create(
            Job(2, 16, 8, [Member(0, rogue.port, rogue.host.mac, rogue.ip, 40000)])
        )
        # job 1 workers are hosts 0..2 with worker ids 0..2 (host 3 is not in job 1's member table)
        tb.root.controller.jobs.remove_worker(1, 3)
        vals = np.full(VALUES_PER_PACKET, 10**6, ">i4").tobytes()
        frames = [b"\x00" * 5, b"\xff" * 200]
        for rnd in range(1, 4):
            for slot in range(16):
                frames.append(
                    HEADER_STRUCT.pack(OP_DATA, 0, 9, 0, slot, rnd, EXP_BIAS, 0, 1, 0, 0, 0, 0) + vals
                )
                frames.append(
                    HEADER_STRUCT.pack(OP_DATA, 0, 2, 0, 8 + slot, rnd, EXP_BIAS, 0, 1, 0, 0, 0, 0) + vals
                )
                frames.append(
                    HEADER_STRUCT.pack(OP_DATA, 0, 1, 3, slot, rnd, EXP_BIAS, 0, 1, 0, 0, 0, 0) + vals
                )
                # job 1's worker 0, spoofed from host 3's port
                frames.append(
                    HEADER_STRUCT.pack(OP_DATA, 0, 1, 0, slot, rnd, EXP_BIAS, 0, 1, 0, 0, 0, 0) + vals
                )
                frames.append(HEADER_STRUCT.pack(2, 0, 1, 0, slot, rnd, EXP_BIAS, 0, 1, 0, 0, 0, 0) + vals)
                frames.append(
                    HEADER_STRUCT.pack(OP_DATA, 0, 2, 0, slot, rnd, EXP_BIAS, 0, 1, 0, 0, 0, 0) + vals[:-4]
                )
        frames_file = tmp_path / "rogue_frames.json"  # too big for a command-line argument
        frames_file.write_text(json.dumps([f.hex() for f in frames]))
        code = (
            "import json,socket,sys,time\n"
            f"frames=[bytes.fromhex(h) for h in json.load(open({str(frames_file)!r}))]\n"
            "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
            f"s.bind(('{rogue.ip}',40000))\n"
            "for _ in range(3):\n"
            f"    [s.sendto(f,('{switch_ip(0)}',{AGG_UDP_PORT})) for f in frames]\n"
            "    time.sleep(0.2)\n"
        )
        rogue_proc = rogue.host.ns.popen([sys.executable, "-c", code])
        procs = run_workers(tb, tmp_path, 1, 16, [1000, 10003], workers=tb.workers[:3])
        wait_all(procs)
        rogue_proc.communicate(timeout=30)
        rejected = tb.root.controller.jobs.ingress.rejected()
    check_results(tmp_path, 1, [0, 1, 2], [1000, 10003])
    for reason in ("malformed", "unknown_job", "not_member", "bad_slot", "bad_op"):
        assert rejected[reason] > 0, f"no packet rejected as {reason}: {rejected}"


def test_asynchronous_job_sums_exactly_the_contributors_it_names(tmp_path: Path) -> None:
    """Threshold 3 of 4 with a fixed exponent: every chunk a worker receives is the sum of exactly
    the 3 workers its bitmap names, every chunk reaches at least those 3, and workers that hold the
    same chunk hold the same values. A worker that falls a whole call behind gets its missed
    chunks marked missing (bitmap 0), not someone else's round."""
    size, exponent = 10003, 10  # inputs reach a few hundred (outliers x100): below 2**10
    with star(4) as tb:
        tb.install_job(5, slot_base=0, num_slots=16, threshold=3)
        extra = ["--threshold", "3", "--fixed-exponent", str(exponent)]
        wait_all(run_workers(tb, tmp_path, 5, 16, [size], extra=extra))
    inputs = np.stack([input_array(0, w, size).astype(np.float64) for w in range(4)])
    scale = 2.0 ** (30 - exponent - 2)
    chunks = -(-size // VALUES_PER_PACKET)
    results = [np.load(tmp_path / f"job5_r{r}" / f"result_{size}_0.npy") for r in range(4)]
    bitmaps = [np.load(tmp_path / f"job5_r{r}" / f"bitmap_{size}_0.npy") for r in range(4)]
    for c in range(chunks):
        lo, hi = c * VALUES_PER_PACKET, min(size, (c + 1) * VALUES_PER_PACKET)
        holders = [r for r in range(4) if bitmaps[r][c] != 0]
        assert len(holders) >= 3, f"chunk {c} reached only workers {holders}"
        bitmap = int(bitmaps[holders[0]][c])
        members = [w for w in range(4) if bitmap >> w & 1]
        assert len(members) == 3, f"chunk {c}: bitmap {bitmap:#x} should name exactly 3 workers"
        assert set(members) <= set(holders), f"chunk {c}: a contributor did not get the result"
        expected = inputs[members, lo:hi].sum(axis=0)
        bound = 3 * 0.5 / scale + np.abs(expected) * 2.0**-23
        for r in holders:
            assert int(bitmaps[r][c]) == bitmap and np.array_equal(
                results[r][lo:hi], results[holders[0]][lo:hi]
            )
        got = results[holders[0]][lo:hi]
        assert (np.abs(got - expected) <= bound).all(), f"chunk {c} differs from its contributors' sum"


def test_removing_a_failed_worker_lets_the_others_finish(tmp_path: Path) -> None:
    """A synchronous job of 3 whose worker 2 never shows up: the others wait (retransmitting)
    until the controller removes worker 2; then their rounds complete with the sum of the two."""
    with star(3) as tb:
        tb.install_job(1, slot_base=0, num_slots=16)
        procs = run_workers(tb, tmp_path, 1, 16, [1000], workers=tb.workers[:2], num_workers=3)
        time.sleep(1.5)  # every slot's first round now holds 2 of 3 contributions
        assert all(p.poll() is None for p in procs), "workers finished without worker 2"
        tb.root.controller.jobs.remove_worker(1, 2)
        wait_all(procs)
    inputs = [input_array(0, w, 1000).astype(np.float64) for w in (0, 1)]
    expected = np.sum(inputs, axis=0)
    bound = quantization_bound(inputs) * 2  # scaled for 3 workers: one more bit of headroom
    for rank in (0, 1):
        got = np.load(tmp_path / f"job1_r{rank}" / "result_1000_0.npy")
        assert (np.abs(got - expected) <= bound).all()
