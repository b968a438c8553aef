"""Topology files and the launcher (issue 6): spec errors name their field; every example file
comes up and goes down without leftovers (namespaces, veths, processes); hosts reach each other
through the switches; link delay and rate are measured, not assumed; short scenarios run end to
end on star (Ape-X, switch-path sampling) and two_tier (hierarchical aggregation); a killed
actor is reported and the run goes on, a killed replay server stops it, SIGTERM cleans up.

Wall-clock durations are never asserted; measured delay and rate are link properties, checked
with generous margins.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from host_agents.agg_protocol import DEFAULT_VALUES_PER_PACKET
from topologies import launcher, spec
from topologies.netns import ip

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
EXAMPLES = ["star", "two_tier", "edge_cloud"]


# ---------------------------------------------------------------------------------------------
# helpers


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "topologies", *args], capture_output=True, text=True, cwd=REPO, timeout=timeout
    )


def our_objects(pid: int) -> tuple[list[str], list[str]]:
    """Namespaces and root-namespace interfaces a launcher with this pid named."""
    tag = f"{pid:x}x"
    spaces = [
        ln.split()[0]
        for ln in ip("netns", "list", check=False).stdout.splitlines()
        if ln.split() and ln.split()[0].startswith(launcher.HOST_PREFIX + tag)
    ]
    links = []
    for ln in ip("-o", "link", "show", check=False).stdout.splitlines():
        parts = ln.split(":", 2)
        name = parts[1].strip().split("@")[0] if len(parts) > 1 else ""
        if any(name.startswith(p + s + tag) for p in ("tp", "tq") for s in ("h", "n")):
            links.append(name)
    return spaces, links


def alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(pid)
    return out


def assert_clean(launcher_pid: int, output: str) -> None:
    """Nothing the launcher named or started is left: namespaces, veths, processes."""
    spaces, links = our_objects(launcher_pid)
    assert not spaces and not links, (spaces, links)
    pids = [int(p) for p in re.findall(r"\bpid (\d+)\b", output)]
    assert pids, "the launcher printed no pids"
    deadline = time.monotonic() + 10
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(pids), f"processes left running: {alive(pids)}"
    for f in launcher.state_dir().glob(f"*-{launcher_pid}.json"):
        pytest.fail(f"state file left behind: {f}")


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def ping_rtts(ns_name: str, dst: str, count: int = 10) -> list[float]:
    """RTTs in seconds of ``count`` pings (a first one to warm up is not counted)."""
    argv = ["ip", "netns", "exec", ns_name, "ping", "-c", "1", "-W", "3", dst]
    for _ in range(3):  # the first packets after a switch starts may be slow
        if subprocess.run(argv, capture_output=True, timeout=10).returncode == 0:
            break
    res = subprocess.run(
        ["ip", "netns", "exec", ns_name, "ping", "-c", str(count), "-i", "0.05", "-W", "3", dst],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    rtts = [float(m) / 1000 for m in re.findall(r"time=([\d.]+) ms", res.stdout)]
    assert rtts, f"no ping reply from {dst}: {res.stdout} {res.stderr}"
    return rtts


# ---------------------------------------------------------------------------------------------
# spec


@pytest.mark.parametrize("name", EXAMPLES + ["star_redis", "star_dataparallel", "star_async"])
def test_example_files_are_valid(name: str) -> None:
    path = REPO / "topologies" / f"{name}.yaml"
    if not path.exists():
        pytest.skip(f"{path.name} is not there")
    topo = spec.load(path)
    assert topo.hosts and topo.switches and topo.links
    for h in topo.hosts:  # every host cabled once, to a switch
        assert topo.access_switch(h) in topo.switches


BASE = """
switches:
  s0: {}
  s1: {}
hosts:
  h0: {roles: [replay_server]}
  h1: {roles: [learner]}
  a: {count: 2, roles: [actor]}
links:
  - {endpoints: [h0, s0]}
  - {endpoints: [h1, s1]}
  - {endpoints: [s0, s1], delay: 5ms, rate: 100mbit, loss: 0.01}
  - {endpoints: [a, s0]}
scenario: {kind: apex, replay_backend: switch}
"""

BAD = [
    ("links[2].delay: '5 ms' is not a duration like 5ms or 50us", ("delay: 5ms", "delay: 5 ms")),
    ("links[2].rate: 'fast' is not a rate like 100mbit", ("rate: 100mbit", "rate: fast")),
    ("links[2].loss: 1.5 is not a probability", ("loss: 0.01", "loss: 1.5")),
    ("links[2].jitter: unknown key", ("loss: 0.01}", "loss: 0.01, jitter: 1ms}")),
    ("bogus: unknown key", ("scenario:", "bogus: 1\nscenario:")),
    ("switches.s0.target: 'tofino' is not one of", ("s0: {}", "s0: {target: tofino}")),
    ("switches.s1.p4: 'nope.p4' does not exist", ("s1: {}", "s1: {p4: nope.p4}")),
    ("hosts.h1.roles[0]: 'trainer' is not a role", ("roles: [learner]", "roles: [trainer]")),
    ("hosts.a.count: 0 is outside 1", ("count: 2", "count: 0")),
    ("links[1].endpoints[0]: 'h9' is neither a switch nor a host", ("[h1, s1]", "[h9, s1]")),
    ("links[1].endpoints: 'h1' and 'h0' are both hosts", ("[h1, s1]", "[h1, h0]")),
    ("scenario.kind: 'ppo' is not one of", ("kind: apex", "kind: ppo")),
    ("scenario.replay_max_size: 100000 is more than", ("replay_backend: switch", "replay_max_size: 100000")),
    (
        "hosts: scenario.kind apex needs a host with role learner",
        ("h1: {roles: [learner]}", "h1: {roles: []}"),
    ),
    ("scenario.learner_args.--lr: is not a flag name", ("replay_backend: switch", "learner_args: {--lr: 1}")),
    (
        "scenario.replay_switch: 's9' is not a switch of this topology",
        ("replay_backend: switch", "replay_backend: switch, replay_switch: s9"),
    ),
    (
        "scenario.aggregation.root: 's9' is not a switch of this topology",
        ("replay_backend: switch", "replay_backend: switch, aggregation: {root: s9}"),
    ),
    (
        "scenario.aggregation.values_per_packet: 48 is not one of 32, 64, 256 (the widths p4/innet.p4",
        ("replay_backend: switch", "replay_backend: switch, aggregation: {values_per_packet: 48}"),
    ),
    (
        "scenario.aggregation.values_per_packet: must be an integer, not '64'",
        ("replay_backend: switch", "replay_backend: switch, aggregation: {values_per_packet: '64'}"),
    ),
    (
        "scenario.worker_args: --values-per-packet must agree with the switches' program",
        ("replay_backend: switch", "replay_backend: switch, worker_args: {values-per-packet: 256}"),
    ),
]


@pytest.mark.parametrize(("expected", "edit"), BAD, ids=[b[0].split(":")[0] for b in BAD])
def test_spec_errors_name_the_field(tmp_path: Path, expected: str, edit: tuple[str, str]) -> None:
    assert spec.loads(BASE, "ok.yaml").hosts  # the base is valid
    old, new = edit
    assert old in BASE
    path = write(tmp_path, "bad.yaml", BASE.replace(old, new, 1))
    with pytest.raises(spec.SpecError) as err:
        spec.load(path)
    assert f"{path}: {expected}" in str(err.value), str(err.value)


def test_spec_errors_more(tmp_path: Path) -> None:
    # several errors at once, each on its own line
    path = write(
        tmp_path, "two.yaml", BASE.replace("delay: 5ms", "delay: 5 ms").replace("rate: 100mbit", "rate: x")
    )
    with pytest.raises(spec.SpecError) as err:
        spec.load(path)
    assert len(err.value.errors) == 2 and all(e.startswith(f"{path}: links[2].") for e in err.value.errors)
    # a host without a link, YAML syntax, workers on several switches without a root
    path = write(tmp_path, "nolink.yaml", BASE.replace("  - {endpoints: [h1, s1]}\n", ""))
    with pytest.raises(spec.SpecError, match=r"links: host h1 has no link"):
        spec.load(path)
    path = write(tmp_path, "syntax.yaml", "switches: {s0: {}\nhosts: [")
    with pytest.raises(spec.SpecError, match=r"syntax.yaml: line \d+, column \d+: not valid YAML"):
        spec.load(path)
    dp = BASE.replace("roles: [replay_server]", "roles: [worker]").replace(
        "roles: [learner]", "roles: [worker]"
    )
    dp = dp.replace("roles: [actor]", "roles: []").replace(
        "kind: apex, replay_backend: switch", "kind: dataparallel"
    )
    path = write(tmp_path, "dp.yaml", dp)
    with pytest.raises(spec.SpecError, match=r"scenario.aggregation.root: workers hang off several switches"):
        spec.load(path)
    # the CLI: exit 2, the message on stderr
    path = write(tmp_path, "cli.yaml", BASE.replace("delay: 5ms", "delay: 5 ms"))
    res = cli("check", str(path))
    assert res.returncode == 2
    assert f"{path}: links[2].delay: '5 ms' is not a duration like 5ms or 50us" in res.stderr
    # several files: each checked, the bad one named, exit 2
    res = cli(
        "check", str(REPO / "topologies" / "star.yaml"), str(path), str(REPO / "topologies" / "two_tier.yaml")
    )
    assert res.returncode == 2, res.stderr
    assert "star.yaml: ok" in res.stdout and "two_tier.yaml: ok" in res.stdout
    assert f"{path}: links[2].delay" in res.stderr


def test_spec_keeps_valid_zeros() -> None:
    """A zero that the schema allows is kept, not replaced by the default."""
    text = BASE.replace(
        "kind: apex, replay_backend: switch", "kind: apex, replay_backend: switch, replay_alpha: 0"
    )
    assert spec.loads(text).scenario.replay_alpha == 0.0
    dp = """
switches: {s0: {}}
hosts: {w: {count: 2, roles: [worker]}}
links: [{endpoints: [w, s0]}]
scenario: {kind: dataparallel, seed: 0, aggregation: {job: 0}}
"""
    topo = spec.loads(dp)
    assert topo.scenario.aggregation.job == 0 and topo.scenario.seed == 0
    assert topo.scenario.aggregation.values_per_packet == DEFAULT_VALUES_PER_PACKET
    wide = spec.loads(dp.replace("{job: 0}", "{job: 0, values_per_packet: 256}"))
    assert wide.scenario.aggregation.values_per_packet == 256
    assert launcher.switch_defines(wide) == {"AGG_VALUES_PER_PACKET": "256"}
    # the workers' control chunk holds a flag per worker and two more
    many = dp.replace("count: 2", "count: 31").replace("{job: 0}", "{job: 0, values_per_packet: 32}")
    with pytest.raises(spec.SpecError, match=r"values_per_packet: 31 workers need at least 33 values"):
        spec.loads(many)


def test_spec_duplicate_keys_are_errors(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "dup.yaml",
        BASE.replace("  h1: {roles: [learner]}\n", "  h1: {roles: [learner]}\n  h1: {}\n"),
    )
    with pytest.raises(
        spec.SpecError,
        match=r"dup.yaml: line 8, column 3: not valid YAML: duplicate key 'h1' "
        r"\(first given on line 7\)",
    ):
        spec.load(path)
    path = write(tmp_path, "dup2.yaml", BASE.replace("delay: 5ms,", "delay: 5ms, delay: 1ms,"))
    with pytest.raises(spec.SpecError, match=r"duplicate key 'delay'"):
        spec.load(path)


TWO_SWITCH_DP = """
switches: {spine: {}, l1: {}, l2: {}}
hosts:
  a: {count: 2, roles: [worker]}
  b: {count: 2, roles: [worker]}
links:
  - {endpoints: [a, l1]}
  - {endpoints: [b, l2]}
  - {endpoints: [l1, spine]}
  - {endpoints: [l2, spine]}
scenario: {kind: dataparallel, aggregation: {root: spine, mode: async, threshold: 3}}
"""


def test_spec_async_needs_one_switch() -> None:
    with pytest.raises(
        spec.SpecError,
        match=r"scenario.aggregation.mode: async aggregation needs every worker "
        r"on one switch; these hang off l1, l2",
    ):
        spec.loads(TWO_SWITCH_DP)
    assert spec.loads(TWO_SWITCH_DP.replace("mode: async, threshold: 3", "mode: sync")).hosts


def test_spec_replay_switch_must_be_on_the_replay_path() -> None:
    # BASE: replay server on s0, learner on s1, actors on s0: s1 sees only the learner's packets
    text = BASE.replace("replay_backend: switch}", "replay_backend: switch, replay_switch: s1}")
    with pytest.raises(
        spec.SpecError,
        match=r"scenario.replay_switch: s1 is not on the path from a0 to the "
        r"replay server h0 \(s0\)",
    ):
        spec.loads(text)
    ok = BASE.replace("replay_backend: switch}", "replay_backend: switch, replay_switch: s0}")
    assert spec.loads(ok).scenario.replay_switch == "s0"
    assert spec.load(REPO / "topologies" / "edge_cloud.yaml").scenario.replay_switch == "edge"


def test_missed_target_says_why() -> None:
    """Exit 3's summary: best evaluation, the time budget, speeds against star.yaml's reference."""
    ref = spec.load(REPO / "topologies" / "star.yaml").scenario.reference
    assert ref["updates_per_s"] and ref["env_steps_per_s"]
    s = {"target_return": 475, "time_budget_s": 660.0, "best_eval_return": 212.3, "final_eval_return": 180.0,
         "stopped_by": "time_budget", "learner_updates_per_s": 11.2, "env_steps_per_s": 640.0,
         "reference": ref}  # fmt: skip
    why = launcher.why_not_reached(s)
    assert why[0] == "best evaluation 212.3 of the 475 needed"
    assert "the time budget of 660.0 s ran out" in why
    assert any(w.startswith("learner 11.2 updates/s (reference 90-115): slower") for w in why), why
    assert any(w.startswith("actors 640.0 env steps/s together (reference 1000)") for w in why), why


# ---------------------------------------------------------------------------------------------
# networks (namespaces)


EDGE_TEST_DELAY_S = 5e-3  # edge_cloud's 50 us fibre is below the Python switch's own latency


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", EXAMPLES)
def test_up_ping_down(name: str, tmp_path: Path) -> None:
    """`up` builds the file's network and exits leaving it up; every host reaches the next one
    (a ring over all hosts, so every switch and trunk is crossed); `down` removes all of it.
    edge_cloud runs with its fibre's delay raised to 5 ms (a software switch hop alone takes a
    few hundred us, more than the file's 50 us), so a delay not applied would show."""
    path = REPO / "topologies" / f"{name}.yaml"
    if name == "edge_cloud":
        text = path.read_text()
        assert "delay: 50us" in text
        path = write(tmp_path, "edge_cloud.yaml", text.replace("delay: 50us", "delay: 5ms"))
    topo = spec.load(path)
    cli("down", str(path))  # a leftover of an interrupted earlier run (a live `run` is left alone)
    up = subprocess.Popen(
        [PY, "-m", "topologies", "up", str(path), "--log-dir", "/tmp/innet-topologies-test"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
    )  # fmt: skip
    try:
        out, _ = up.communicate(timeout=120)
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
    try:
        assert up.returncode == 0, out
        spaces, links = our_objects(up.pid)
        assert len(spaces) == len(topo.hosts), out
        state = json.loads(next(launcher.state_dir().glob(f"{topo.name}-{up.pid}.json")).read_text())
        assert state["mode"] == "up" and set(state["hosts"]) == set(topo.hosts)
        assert all(p["pid"] in alive([p["pid"]]) for p in state["processes"])  # the switches run on
        hosts = list(state["hosts"].values())
        for i, h in enumerate(hosts):
            nxt = hosts[(i + 1) % len(hosts)]
            ping_rtts(h["namespace"], nxt["ip"], count=2)
        if name == "edge_cloud":  # learner -> replay crosses the fibre once each way
            rtts = ping_rtts(state["hosts"]["learner"]["namespace"], state["hosts"]["replay"]["ip"])
            assert min(rtts) >= 2 * EDGE_TEST_DELAY_S, rtts
            assert statistics.median(rtts) < 2 * EDGE_TEST_DELAY_S + 10e-3, rtts  # applied once
            near = ping_rtts(state["hosts"]["actor0"]["namespace"], state["hosts"]["replay"]["ip"])
            assert statistics.median(near) < EDGE_TEST_DELAY_S, near  # the edge itself: no delay
    finally:
        res = cli("down", str(path))
    assert res.returncode == 0, res.stderr
    assert topo.name in res.stdout
    assert_clean(up.pid, out)


def _build(tmp_path: Path, text: str) -> launcher.Network:
    topo = spec.load(write(tmp_path, "t.yaml", text))
    return launcher.build(topo, tmp_path / "run", launcher.Console(quiet=True))


DELAY = """
switches: {edge: {}, cloud: {}}
hosts:
  near: {}
  server: {}
  far: {}
links:
  - {endpoints: [near, edge]}
  - {endpoints: [server, edge]}
  - {endpoints: [edge, cloud], delay: 10ms}
  - {endpoints: [far, cloud]}
"""


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_link_delay_is_measured(tmp_path: Path) -> None:
    """RTT across a link with 10 ms one-way delay is at least 20 ms and (median) below 30 ms, so
    a delay applied twice fails; between hosts of one switch it is far lower."""
    net = _build(tmp_path, DELAY)
    try:
        mech = " ".join(m for bl in net.links for m in bl.mechanism)
        assert "delay" in mech and ("tc netem" in mech or "softswitch" in mech), mech
        far = ping_rtts(net.hosts["far"].ns.name, net.hosts["server"].ip)
        near = ping_rtts(net.hosts["near"].ns.name, net.hosts["server"].ip)
    finally:
        net.close()
    assert min(far) >= 2 * 10e-3, far
    assert statistics.median(far) < 2 * 10e-3 + 10e-3, far
    assert sorted(near)[len(near) // 2] < 10e-3, near  # median: well under one delay
    spaces, links = our_objects(os.getpid())
    assert not set(spaces) & set(net.namespaces) and not set(links) & set(net.veths)


RATE = """
switches: {s0: {}}
hosts:
  src: {}
  dst: {}
links:
  - {endpoints: [src, s0]}
  - {endpoints: [dst, s0], rate: 8mbit}
"""

RECEIVER = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 5001)); s.listen(1); s.settimeout(60)
print("listening", flush=True)
c, _ = s.accept(); c.settimeout(60)
n, t0 = 0, None
while True:
    b = c.recv(65536)
    if not b:
        break
    if t0 is None:
        t0, first = time.monotonic(), len(b)
    n += len(b)
print(n - first, time.monotonic() - t0, flush=True)
"""

SENDER = """
import socket, sys
c = socket.create_connection((sys.argv[1], 5001), timeout=60)
c.sendall(b"x" * int(sys.argv[2])); c.close()
"""


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_link_rate_is_measured(tmp_path: Path) -> None:
    """A timed 1.5 MB TCP transfer into a host behind an 8 Mbit/s link: goodput within 30% of
    the rate (TCP/IP headers take ~4% of a full frame)."""
    net = _build(tmp_path, RATE)
    try:
        mech = " ".join(m for bl in net.links for m in bl.mechanism)
        assert "rate 8mbit" in mech, mech
        dst, src = net.hosts["dst"], net.hosts["src"]
        ping_rtts(src.ns.name, dst.ip, count=1)
        rx = dst.ns.popen([PY, "-c", RECEIVER, dst.ip])
        try:
            assert rx.stdout.readline().strip() == "listening"
            src.ns.run([PY, "-c", SENDER, dst.ip, str(1_500_000)], timeout=90)
            out, err = rx.communicate(timeout=90)
        finally:
            if rx.poll() is None:
                rx.kill()
                rx.wait()
        nbytes, secs = out.split()
        rate = int(nbytes) * 8 / float(secs)
    finally:
        net.close()
    assert 0.7 * 8e6 <= rate <= 1.3 * 8e6, f"measured {rate / 1e6:.2f} Mbit/s"


# ---------------------------------------------------------------------------------------------
# scenarios end to end (the CLI as users run it)


def _run(args: list[str], timeout: float = 300) -> tuple[int, str, int]:
    p = subprocess.Popen(
        [PY, "-m", "topologies", "run", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        cwd=REPO,
    )  # fmt: skip
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)  # the launcher cleans up
        out, _ = p.communicate(timeout=60)
        pytest.fail(f"the launcher did not finish:\n{out[-5000:]}")
    finally:
        _stop(p)
    return p.returncode, out, p.pid


def _stop(p: subprocess.Popen[str]) -> None:
    """A launcher the test did not see end (a failed assertion, pytest-timeout): SIGTERM (it
    cleans up), then SIGKILL (the next launch removes what it left, via its state file)."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _summary(tmp_path: Path, run_name: str) -> dict:
    return json.loads((tmp_path / run_name / "run_summary.json").read_text())


APEX_SHORT = [
    "--no-target", "--time-budget-s", "150", "--no-report", "--actor-args", "--progress-interval-s 5",
    "--learner-args", "--max-steps 300 --eval-interval 0 --eval-episodes 1 --learning-starts 500",
]  # fmt: skip


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.timeout(360)
def test_two_tier_hierarchical_end_to_end(tmp_path: Path) -> None:
    """two_tier.yaml with aggregation.values_per_packet 256 (not the default 64, so that the
    launcher's -D to every switch and --values-per-packet to every worker are exercised): 4 PPO
    workers on two leaves, gradients summed per leaf and at the spine; 4 iterations; every
    worker ends with the same parameters."""
    text = (REPO / "topologies" / "two_tier.yaml").read_text()
    assert "root: spine}" in text
    text = text.replace("root: spine}", "root: spine, values_per_packet: 256}")
    wide = write(tmp_path, "two_tier_256.yaml", text)
    rc, out, pid = _run([
        str(wide), "--log-dir", str(tmp_path), "--run-name", "t", "--no-target",
        "--no-report",
        "--worker-args", "--max-steps 512 --rollout-steps 128 --eval-interval 0 --eval-episodes 1",
    ])  # fmt: skip
    assert rc == 0, out[-5000:]
    s = _summary(tmp_path, "t")
    assert s["updates"] and s["updates"] >= 4, s
    assert s["identical_params"] is True, s
    counters = s["switch_counters"]
    assert set(counters) == {"spine", "leaf1", "leaf2"}, counters
    assert all(c["aggregation"]["aggregated"] > 0 for c in counters.values()), counters
    assert "parent spine" in out and "(root)" in out
    assert out.count("256 values per aggregation packet") == 3 and "slots, 256 values per packet" in out, out
    assert_clean(pid, out)


def _start_run(tmp_path: Path, run_name: str, extra: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "topologies", "run", "topologies/star.yaml", "--log-dir", str(tmp_path),
         "--run-name", run_name, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
    )  # fmt: skip


def _read_until(p: subprocess.Popen[str], pattern: str, lines: list[str], timeout: float = 120) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([p.stdout], [], [], 1.0)
        if r:
            line = p.stdout.readline()
            if not line:
                break
            lines.append(line)
            if m := re.search(pattern, line):
                return m
    p.kill()
    p.wait()
    pytest.fail(f"no line matching {pattern!r}:\n{''.join(lines)[-5000:]}")


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.timeout(360)
def test_star_apex_end_to_end_with_a_killed_actor(tmp_path: Path) -> None:
    """star.yaml: replay server, learner and 4 actors in their namespaces, priorities in the
    switch; actor1 killed (SIGKILL) once the learner learns is reported and the run goes on with
    the others; 300 learner updates, then a summary, then nothing left. One run for both (such a
    scenario is the slowest kind of test)."""
    p = _start_run(tmp_path, "s", APEX_SHORT)
    try:
        lines: list[str] = []
        pid = int(_read_until(p, r"started actor1 on .* pid (\d+)", lines).group(1))
        _read_until(p, r"learner \| .*learning", lines)
        os.kill(pid, signal.SIGKILL)
        out, _ = p.communicate(timeout=240)
    finally:
        _stop(p)
    out = "".join(lines) + out
    assert p.returncode == 0, out[-5000:]
    assert f"actor1 (pid {pid}) died with exit code -9" in out
    assert "the run goes on with the other actors" in out
    s = _summary(tmp_path, "s")
    assert s["learner_updates"] == 300 and s["env_steps"] > 500, s
    assert s["switch_counters"]["s0"]["replay"]["samples"] >= 300 * 128, s  # sampled in the switch
    assert [lp["name"] for lp in s["lost_processes"]] == ["actor1"] and not s["failures"], s
    for role in ("learner", "actor0", "actor3", "replay_server"):  # streamed with role prefixes
        assert re.search(rf"^\[.*\]\s+{role} \| ", out, re.M), role
    assert "exit code 0" in out
    assert_clean(p.pid, out)


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.timeout(360)
def test_killed_replay_server_stops_the_run(tmp_path: Path) -> None:
    p = _start_run(tmp_path, "r", ["--no-target", "--time-budget-s", "150", "--no-report"])
    try:
        lines: list[str] = []
        pid = int(_read_until(p, r"replay server on .* pid (\d+)", lines).group(1))
        _read_until(p, r"started actor3", lines)
        os.kill(pid, signal.SIGKILL)
        out, _ = p.communicate(timeout=120)
    finally:
        _stop(p)
    out = "".join(lines) + out
    assert p.returncode == 1, out[-5000:]
    assert f"replay_server (pid {pid}) died with exit code -9" in out
    assert "FAILED: replay_server" in out
    assert_clean(p.pid, out)


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.timeout(360)
def test_sigterm_cleans_up(tmp_path: Path) -> None:
    p = _start_run(tmp_path, "i", ["--no-target", "--time-budget-s", "150", "--no-report"])
    try:
        lines: list[str] = []
        _read_until(p, r"started actor3", lines)
        # `down FILE` leaves a live run alone (it cleans up itself); only --force stops it
        res = cli("down", "topologies/star.yaml")
        assert res.returncode == 0 and "left alone: a live launcher" in res.stdout, res.stdout
        assert p.poll() is None
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=120)
    finally:
        _stop(p)
    out = "".join(lines) + out
    assert p.returncode == 130, out[-5000:]
    assert "SIGTERM: stopping everything and cleaning up" in out
    assert_clean(p.pid, out)


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.timeout(360)
def test_crashing_learner_and_launcher_errors_clean_up(tmp_path: Path) -> None:
    """An agent that fails (a bad learner flag) is named with its exit code and log tail, the run
    stops with exit 1; a launcher error half-way through the build (a P4 program that does not
    compile, after namespaces and the switch exist) also exits 1 and leaves nothing."""
    rc, out, pid = _run([
        "topologies/star.yaml", "--log-dir", str(tmp_path), "--run-name", "c", "--no-report",
        "--learner-args", "--no-such-flag 1",
    ])  # fmt: skip
    assert rc == 1, out[-5000:]
    assert re.search(r"learner \(pid \d+\) failed with exit code 2; last lines of", out), out[-5000:]
    assert "--no-such-flag" in out
    assert_clean(pid, out)

    bad_p4 = write(tmp_path, "broken.p4", "control Broken( {\n")
    topo = write(tmp_path, "broken.yaml", RATE.replace("s0: {}", f"s0: {{p4: {bad_p4}}}"))
    rc, out, pid = _run([str(topo), "--log-dir", str(tmp_path), "--run-name", "b", "--no-report"])
    assert rc == 1, out[-5000:]
    assert "launcher error" in out and "broken.p4" in out, out[-3000:]
    assert_clean(pid, out)


@pytest.mark.netns
def test_stale_sweep_spares_up_networks() -> None:
    """netns.cleanup_stale removes launcher-named namespaces (tp...) whose pid is dead, but not
    those a state file lists (a network left up by `up`, whose launcher has exited)."""
    from topologies import netns

    if (reason := netns.netns_unavailable()) is not None:
        pytest.skip(reason)
    dead = next(p for p in range(4_194_000, 4_194_300) if not os.path.exists(f"/proc/{p}"))
    gone, kept = f"tp{dead:x}x0", f"tp{dead:x}x1"
    state = launcher.state_dir() / f"sweep-test-{dead}.json"
    try:
        for name in (gone, kept):
            ip("netns", "add", name)
        state.write_text(
            json.dumps(
                {"topology": "sweep-test", "mode": "up", "namespaces": [kept], "veths": [], "processes": []}
            )
        )
        netns.cleanup_stale()
        names = [ln.split()[0] for ln in ip("netns", "list").stdout.splitlines() if ln.split()]
        assert gone not in names and kept in names, names
    finally:
        state.unlink(missing_ok=True)
        for name in (gone, kept):
            ip("netns", "del", name, check=False)
