"""Build a topology file's network, run its scenario, and always tear it down.

- :func:`build` (``python -m topologies up``): one network namespace and veth pair per host,
  veth pairs between switches, link emulation (rate: ``tc tbf``; delay and loss: ``tc netem``
  where the kernel has sch_netem, else the software switch's per-port ``--netem``), one switch
  process per switch, the P4 program loaded and routes installed between every pair of hosts.
  What it created is written to a state file (``/run/innet-topologies``, else ``/tmp``) so that
  ``down`` removes it, and a run killed with SIGKILL is cleaned up by the next launch.
- :func:`run` (``python -m topologies run``): the network, then the scenario's control-plane
  state (replay table in the switch, aggregation jobs), servers and agents in their namespaces;
  their output is streamed with role prefixes; it waits for the learner (or the workers) to end,
  prints a summary and tears everything down whatever happens (agent crash, Ctrl-C, SIGTERM,
  an exception in the launcher).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from topologies import netns
from topologies.spec import HostSpec, LinkSpec, SwitchSpec, Topology, switch_next_hops

REPO = Path(__file__).resolve().parent.parent
REPLAY_PORT = 47100
REDIS_PORT = 6379
AGG_BIND_PORT = 40000  # a worker's aggregation socket (its job member entry names it)
GLOO_PORT = 29500
HOST_PREFIX = "tp"  # namespaces tp<pid>x<n>, host veths tph.../tpn...
TRUNK_PREFIX = "tq"  # switch-to-switch veths tqh.../tqn...
STOP_GRACE_S = 20.0  # SIGTERM -> SIGKILL


def state_dir() -> Path:
    """Where launches record what they created: /run when writable (tmpfs, gone at reboot like
    the namespaces themselves), else the temp directory."""
    for base in (Path("/run"), Path(tempfile.gettempdir())):
        d = base / "innet-topologies"
        try:
            d.mkdir(parents=True, exist_ok=True)
            if os.access(d, os.W_OK):
                return d
        except OSError:
            continue
    raise RuntimeError("no writable directory for the launcher's state (/run or the temp dir)")


# ---------------------------------------------------------------------------------------------
# output


class Console:
    """Prefixed, timestamped lines on stdout, one writer at a time (reader threads share it)."""

    def __init__(self, quiet: bool = False) -> None:
        self.t0 = time.monotonic()
        self.quiet = quiet
        self.broken = False  # stdout went away (EPIPE after `| head`, EIO after SIGHUP)
        self._lock = threading.Lock()

    def line(self, who: str, text: str, force: bool = False) -> None:
        if (self.quiet and not force) or self.broken:
            return
        el = int(time.monotonic() - self.t0)
        with self._lock:
            try:
                print(f"[{el // 60:3d}:{el % 60:02d}] {who:>13} | {text}", flush=True)
            except (OSError, ValueError):
                # the run goes on (and cleans up) without a terminal; the logs have everything
                self.broken = True

    def say(self, text: str) -> None:
        self.line("topologies", text, force=True)


# ---------------------------------------------------------------------------------------------
# processes


def _pdeathsig_prefix(sig: str = "TERM") -> list[str]:
    """``setpriv --pdeathsig SIG``: the child gets SIG when the launcher dies (even by SIGKILL),
    so a killed launcher leaves no agent running (`ip netns exec` and setpriv exec the command,
    which keeps the setting). Done by a wrapper, not preexec_fn, because a Python-level fork in a
    process with gRPC threads (the controllers) trips gRPC's fork handlers."""
    exe = shutil.which("setpriv")
    return [exe, "--pdeathsig", sig] if exe else []


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks (/proc/PID/stat field 22): a pid plus this names
    one process, not a later one that reuses the pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


class Proc:
    """A process of the run: output (stdout and stderr together) to ``log`` and, prefixed with
    ``name``, to the console; the last lines kept for a failure report."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        console: Console,
        log: Path,
        ns: netns.NetNS | None = None,
        ready: str | None = None,
        stream: bool = True,
        detach: bool = False,
        env: dict[str, str] | None = None,
        tier: int = 0,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = log
        self.console = console
        self.stopping = False  # set before we stop it: its exit is then not a failure
        self.tail: deque[str] = deque(maxlen=25)
        self._ready_pattern = ready
        self.ready = threading.Event()
        wrapped = self.argv if detach else [*_pdeathsig_prefix(), *self.argv]
        full = ns.cmd(wrapped) if ns is not None else wrapped
        self.detach = detach
        self.tier = tier
        # detached (`up`): output straight to the log, which outlives this process; else a pipe
        self._log_file: IO[str] = open(log, "a", buffering=1)  # noqa: SIM115
        self.proc = subprocess.Popen(
            full,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file if detach else subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            cwd=REPO,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            start_new_session=True,  # out of reach of the terminal's Ctrl-C: we stop it in order
        )
        self.pid = self.proc.pid
        self.start_time = _start_time(self.pid)
        self._stream = stream
        self._reader = threading.Thread(target=self._read, name=f"read-{name}", daemon=True)
        self._reader.start()

    def _lines(self) -> Iterator[str]:
        if not self.detach:
            assert self.proc.stdout is not None
            yield from self.proc.stdout
            return
        with open(self.log, errors="replace") as f:  # follow the log file
            while True:
                line = f.readline()
                if line:
                    yield line
                elif self.proc.poll() is not None:
                    return
                else:
                    time.sleep(0.1)

    def _read(self) -> None:
        """Drain the process's output until it ends, whatever happens to the log or the
        console: a reader that stopped would leave the process blocked on a full pipe."""
        for raw in self._lines():
            line = raw.rstrip("\n")
            if not self.detach:
                try:
                    self._log_file.write(line + "\n")
                except (OSError, ValueError):
                    pass  # a full disk: the console and the tail still get the line
            self.tail.append(line)
            if self._ready_pattern and not self.ready.is_set() and self._ready_pattern in line:
                self.ready.set()
            # the agents' final one-line JSON summary is in their summary.json: keep it out
            if self._stream and line and not line.startswith('{"summary"'):
                try:
                    self.console.line(self.name, line)
                except Exception:  # noqa: BLE001 - keep draining the pipe
                    pass
        with contextlib.suppress(OSError, ValueError):
            self._log_file.close()

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ready.wait(0.2):
                return
            if self.proc.poll() is not None:
                self._reader.join(2)
                raise RuntimeError(
                    f"{self.name} exited {self.proc.returncode} before it was ready:\n{self.tail_text()}"
                )
        raise RuntimeError(f"{self.name} was not ready within {timeout:.0f}s:\n{self.tail_text()}")

    def poll(self) -> int | None:
        return self.proc.poll()

    def tail_text(self, n: int = 12) -> str:
        self._reader.join(1) if self.proc.poll() is not None else None
        lines = list(self.tail)[-n:]
        return "\n".join(f"    {ln}" for ln in lines) if lines else "    (no output)"

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            self.stopping = True
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)


def stop_procs(procs: Sequence[Proc], grace: float = STOP_GRACE_S) -> None:
    """SIGTERM all (they write their summaries), wait up to ``grace``, SIGKILL the rest."""
    for p in procs:
        p.signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.signal(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.proc.wait(timeout=10)


# ---------------------------------------------------------------------------------------------
# link emulation


def _tc(ns: netns.NetNS | None, *args: str) -> subprocess.CompletedProcess[str]:
    tc = shutil.which("tc") or "/usr/sbin/tc"
    argv = [tc, *args]
    return subprocess.run(ns.cmd(argv) if ns else argv, capture_output=True, text=True, timeout=30)


_probe_cache: dict[str, str | None] = {}


def qdisc_unavailable(kind: str, ns: netns.NetNS) -> str | None:
    """Why ``tc qdisc add ... <kind>`` does not work on this kernel (None: it does). Probed once
    on a namespace's loopback, which nothing else uses."""
    if kind not in _probe_cache:
        if shutil.which("tc") is None and not Path("/usr/sbin/tc").exists():
            _probe_cache[kind] = "tc (iproute2) is not installed"
        else:
            args = {"netem": ["delay", "1ms"], "tbf": ["rate", "1gbit", "burst", "32kb", "latency", "50ms"]}[
                kind
            ]
            res = _tc(ns, "qdisc", "add", "dev", "lo", "root", kind, *args)
            _tc(ns, "qdisc", "del", "dev", "lo", "root")
            _probe_cache[kind] = (
                None if res.returncode == 0 else (res.stderr.strip() or f"exit {res.returncode}")
            )
    return _probe_cache[kind]


def _tbf_args(rate_bps: int) -> list[str]:
    # burst: 4 ms at the rate, at least a few full frames (tbf needs one MTU at the very least)
    burst = max(16_000, rate_bps // 8 // 250)
    return ["rate", f"{rate_bps}bit", "burst", str(burst), "latency", "100ms"]


# ---------------------------------------------------------------------------------------------
# the network


@dataclass
class BuiltHost:
    spec: HostSpec
    host: netns.Host
    switch: str
    port: int  # the switch's port toward this host

    @property
    def ns(self) -> netns.NetNS:
        return self.host.ns

    @property
    def ip(self) -> str:
        return self.host.ip

    @property
    def mac(self) -> str:
        return self.host.mac

    @property
    def ifname(self) -> str:
        return self.host.pair.ns_if


@dataclass
class BuiltSwitch:
    spec: SwitchSpec
    target: str  # softswitch or bmv2, after `auto`
    ports: dict[int, str] = field(default_factory=dict)  # port -> interface in the root namespace
    netem: dict[int, dict[str, str]] = field(default_factory=dict)  # port -> delay/loss/rate
    proc: Proc | None = None
    address: str = ""  # P4Runtime
    controller: Any = None  # control_plane.SwitchController
    backend: str = ""  # the software switch's backend for this program: native or python

    @property
    def mac(self) -> str:
        from topologies.testbed import switch_mac  # the testbed's addressing (imports gRPC: lazily)

        return switch_mac(self.spec.index)

    @property
    def ip(self) -> str:
        from topologies.testbed import switch_ip

        return switch_ip(self.spec.index)


@dataclass
class BuiltLink:
    spec: LinkSpec
    ends: list[tuple[str, int, str, netns.NetNS | None]]  # (node, switch port or 0, ifname, its ns)
    mechanism: list[str] = field(default_factory=list)


class Network:
    """A built topology. ``close()`` removes everything; safe to call twice and after a
    failure half-way through building."""

    def __init__(self, topo: Topology, run_dir: Path, console: Console, detach: bool = False) -> None:
        self.topo = topo
        self.run_dir = run_dir
        self.console = console
        self.detach = detach  # `up`: processes must outlive the launcher
        self.hosts: dict[str, BuiltHost] = {}
        self.switches: dict[str, BuiltSwitch] = {}
        self.links: list[BuiltLink] = []
        self.procs: list[Proc] = []  # agents and servers, in start order
        self.namespaces: list[str] = []
        self.veths: list[str] = []  # root-namespace ends
        self._trunks: list[netns.VethPair] = []
        self.state_file: Path | None = None
        self.closed = False
        self.port_of: dict[tuple[str, str], int] = {}  # (switch, neighbour) -> port
        self.lost: list[dict[str, Any]] = []  # processes that died while the run went on

    # ---- state file ----
    def write_state(self, mode: str) -> None:
        if self.state_file is None:
            self.state_file = state_dir() / f"{self.topo.name}-{os.getpid()}.json"
        procs = [p for p in self.procs if p.poll() is None]
        procs += [s.proc for s in self.switches.values() if s.proc is not None and s.proc.poll() is None]
        state = {
            "topology": self.topo.name,
            "file": str(self.topo.path),
            "mode": mode,
            "launcher_pid": os.getpid(),
            "launcher_start": _start_time(os.getpid()),
            "run_dir": str(self.run_dir),
            "namespaces": self.namespaces,
            "veths": self.veths,
            "processes": [{"name": p.name, "pid": p.pid, "start": p.start_time} for p in procs],
            "hosts": {n: {"ip": h.ip, "namespace": h.ns.name, "switch": h.switch}
                      for n, h in self.hosts.items()},
            "switches": {n: {"p4runtime": s.address, "log": str(s.proc.log) if s.proc else None}
                         for n, s in self.switches.items()},
        }  # fmt: skip
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1) + "\n")
        tmp.replace(self.state_file)

    # ---- teardown ----
    def close(self) -> None:
        """Agents first (they flush to the servers as they stop), then servers, controllers,
        switches, then veths and namespaces. Every step runs even when one before it raised
        (a second Ctrl-C included); the first exception is re-raised at the end. ``closed``
        (and the state file's removal) only follow a teardown that finished, so a close that
        was cut short can be called again and the state file keeps naming what is left."""
        if self.closed:
            return

        def controllers() -> None:
            for sw in self.switches.values():
                if sw.controller is not None:
                    with contextlib.suppress(Exception):
                        sw.controller.close()

        steps = [
            lambda: stop_procs([p for p in reversed(self.procs) if p.tier == 0]),
            lambda: stop_procs([p for p in reversed(self.procs) if p.tier > 0], grace=10),
            controllers,
            lambda: stop_procs([sw.proc for sw in self.switches.values() if sw.proc is not None], grace=10),
            lambda: teardown(self.namespaces, self.veths),
        ]
        first: BaseException | None = None
        for step in steps:
            try:
                step()
            except BaseException as e:  # noqa: BLE001 - the remaining steps must still run
                first = first or e
        if first is not None:
            raise first
        self.closed = True
        if self.state_file is not None:
            with contextlib.suppress(OSError):
                self.state_file.unlink()


def teardown(namespaces: Sequence[str], veths: Sequence[str], processes: Sequence[dict] = ()) -> list[str]:
    """Kill recorded processes (when pid and start time still match), anything left running in
    the namespaces, then delete veths and namespaces. Returns what it did, for `down`."""
    done = []
    for p in processes:
        if p.get("start") and _start_time(p["pid"]) == p["start"]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p["pid"], signal.SIGTERM)
            done.append(f"stopped {p['name']} (pid {p['pid']})")
    deadline = time.monotonic() + 10
    for p in processes:
        while p.get("start") and _start_time(p["pid"]) == p["start"] and time.monotonic() < deadline:
            time.sleep(0.1)
        if p.get("start") and _start_time(p["pid"]) == p["start"]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p["pid"], signal.SIGKILL)
    for name in namespaces:
        res = netns.ip("netns", "pids", name, check=False)
        for pid in res.stdout.split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
                done.append(f"killed pid {pid} left in {name}")
    for v in veths:
        if netns.ip("link", "del", v, check=False).returncode == 0:
            done.append(f"deleted veth {v}")
    for name in namespaces:
        if netns.ip("netns", "del", name, check=False).returncode == 0:
            done.append(f"deleted namespace {name}")
    netns.forget(namespaces, veths)
    return done


def _alive(pid: int, start: str | None) -> bool:
    return start is not None and _start_time(pid) == start


def cleanup_dead_runs(console: Console | None = None) -> None:
    """Remove what `run` launches killed with SIGKILL left behind (their launcher is gone)."""
    try:
        d = state_dir()
    except RuntimeError:
        return
    for f in sorted(d.glob("*.json")):
        try:
            st = json.loads(f.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        # `up` networks outlive their launcher on purpose; anything else whose launcher is gone
        # (a run, or a build interrupted by SIGKILL) is a leftover
        if st.get("mode") != "up" and not _alive(st["launcher_pid"], st.get("launcher_start")):
            did = teardown(st["namespaces"], st["veths"], st["processes"])
            with contextlib.suppress(OSError):
                f.unlink()
            if console and did:
                console.say(f"removed the leftovers of a killed run ({f.name}): {len(did)} objects")


def down(topology_name: str | None, force: bool = False) -> list[str]:
    """Remove networks left up by `up` and the leftovers of launchers that are gone: those of
    ``topology_name``, or all. A live `run` (or a build in progress) is left alone: it removes
    its network itself; with ``force`` it is asked to stop (SIGTERM) and does so."""
    out = []
    d = state_dir()
    for f in sorted(d.glob("*.json")):
        try:
            st = json.loads(f.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if topology_name is not None and st.get("topology") != topology_name:
            continue
        if st.get("mode") != "up" and _alive(st["launcher_pid"], st.get("launcher_start")):
            # a live launcher owns this network and removes it itself
            if force:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(st["launcher_pid"], signal.SIGTERM)
                out.append(f"{st['topology']}: asked the running launcher (pid {st['launcher_pid']}) to stop")
            else:
                out.append(
                    f"{st['topology']}: left alone: a live launcher (pid {st['launcher_pid']}, "
                    f"{st.get('mode')}) owns it and cleans up when it ends; --force stops it"
                )
            continue
        did = teardown(st["namespaces"], st["veths"], st["processes"])
        with contextlib.suppress(OSError):
            f.unlink()
        out.append(f"{st['topology']} ({f.name}): " + ("; ".join(did) if did else "nothing was left"))
    return out


def _pick_target(sw: SwitchSpec, override: str | None) -> str:
    want = override or sw.target
    have_bmv2 = shutil.which("simple_switch_grpc") is not None and shutil.which("p4c-bm2-ss") is not None
    if want == "auto":
        return "bmv2" if have_bmv2 else "softswitch"
    if want == "bmv2" and not have_bmv2:
        raise RuntimeError(
            f"switch {sw.name}: target bmv2 needs simple_switch_grpc and p4c-bm2-ss on PATH "
            "(use target: auto or softswitch, or install bmv2 and p4c)"
        )
    return want


def build(
    topo: Topology,
    run_dir: Path,
    console: Console,
    target: str | None = None,
    detach: bool = False,
    stack: contextlib.ExitStack | None = None,
) -> Network:
    """Build ``topo``'s network (see the module docstring). With ``stack``, ``net.close`` is
    registered on it first thing and the stack removes a half-built network (the caller unwinds
    it after ignoring further signals, so a second Ctrl-C cannot cut the cleanup short); without
    one, everything built so far is removed here before the exception propagates."""
    cleanup_dead_runs(console)
    run_dir.mkdir(parents=True, exist_ok=True)
    net = Network(topo, run_dir, console, detach)
    if stack is not None:
        stack.callback(net.close)
        _build(net, target)
        return net
    try:
        _build(net, target)
    except BaseException:
        net.close()
        raise
    return net


def _build(net: Network, target: str | None) -> None:
    topo, console = net.topo, net.console
    for sw in topo.switches.values():
        net.switches[sw.name] = BuiltSwitch(sw, _pick_target(sw, target))
    next_port = dict.fromkeys(topo.switches, 1)
    net.write_state("building")  # from here on, a killed launcher leaves a record

    def take_port(switch: str) -> int:
        port = next_port[switch]
        next_port[switch] += 1
        return port

    for ln in topo.links:
        if ln.a in topo.hosts:  # host link: a is the host, b its switch
            hs = topo.hosts[ln.a]
            sw = net.switches[ln.b]
            gw = f"10.0.{hs.index + 1}.254"
            host = netns.create_routed_host(f"{hs.ip}/24", gw, sw.mac, prefix=HOST_PREFIX)
            net.namespaces.append(host.ns.name)
            net.veths.append(host.pair.host_if)
            port = take_port(ln.b)
            sw.ports[port] = host.pair.host_if
            net.hosts[hs.name] = BuiltHost(hs, host, ln.b, port)
            net.port_of[(ln.b, hs.name)] = port
            ends = [(hs.name, 0, host.pair.ns_if, host.ns), (ln.b, port, host.pair.host_if, None)]
        else:  # trunk between two switches, both ends in the root namespace
            pair = netns.create_veth_pair(None, prefix=TRUNK_PREFIX)
            net.veths.append(pair.host_if)
            pa, pb = take_port(ln.a), take_port(ln.b)
            net.switches[ln.a].ports[pa] = pair.host_if
            net.switches[ln.b].ports[pb] = pair.ns_if
            net.port_of[(ln.a, ln.b)] = pa
            net.port_of[(ln.b, ln.a)] = pb
            ends = [(ln.a, pa, pair.host_if, None), (ln.b, pb, pair.ns_if, None)]
        net.links.append(BuiltLink(ln, ends))
        net.write_state("building")
    if net.hosts:
        _emulate_links(net, next(iter(net.hosts.values())).ns)
    for bl in net.links:
        if bl.mechanism:
            console.say(f"{bl.spec.where} {bl.spec.a}<->{bl.spec.b}: " + "; ".join(bl.mechanism))
    _start_switches(net)
    _install_routes(net)
    net.write_state("building")


def _emulate_links(net: Network, probe_ns: netns.NetNS) -> None:
    """Rate: tc tbf on both ends (each direction). Delay and loss: tc netem on both ends when
    the kernel has it (so one-way delay = delay, RTT = 2 x delay), else the software switch's
    --netem on the link's (first) switch port, which delays and drops both directions there."""
    for bl in net.links:
        ln = bl.spec
        if not (ln.rate_bps or ln.delay_s or ln.loss):
            continue
        need_netem = bool(ln.delay_s or ln.loss)
        netem_why = qdisc_unavailable("netem", probe_ns) if need_netem else None
        tbf_why = qdisc_unavailable("tbf", probe_ns) if ln.rate_bps else None
        sw_end = next(e for e in bl.ends if e[1] > 0)  # a switch port of this link
        sw = net.switches[sw_end[0]]
        soft: dict[str, str] = {}
        if need_netem and netem_why is None:
            args = ["delay", f"{ln.delay_s * 1e6:.0f}us"] if ln.delay_s else []
            if ln.loss:
                args += ["loss", f"{ln.loss * 100:g}%"]
            if ln.rate_bps:
                args += ["rate", f"{ln.rate_bps}bit"]
            for _, _, ifname, ns in bl.ends:
                _tc_or_raise(ns, ln, "qdisc", "replace", "dev", ifname, "root", "netem", *args)
            what = " ".join(args)
            bl.mechanism.append(f"{what} via tc netem on both ends")
            continue
        if ln.rate_bps and tbf_why is None:
            for _, _, ifname, ns in bl.ends:
                _tc_or_raise(
                    ns, ln, "qdisc", "replace", "dev", ifname, "root", "tbf", *_tbf_args(ln.rate_bps)
                )
            bl.mechanism.append(f"rate {ln.rate} via tc tbf on both ends")
        elif ln.rate_bps:
            soft["rate"] = ln.rate or f"{ln.rate_bps}bit"
        if need_netem:
            if ln.delay_s:
                soft["delay"] = ln.delay or f"{ln.delay_s * 1e6:.0f}us"
            if ln.loss:
                soft["loss"] = f"{ln.loss:g}"
        if soft:
            if sw.target != "softswitch":
                raise RuntimeError(
                    f"{ln.where}: {', '.join(soft)} needs tc netem ({netem_why or tbf_why}) or the software "
                    f"switch's --netem, but switch {sw.spec.name} is {sw.target}"
                )
            sw.netem[sw_end[1]] = soft
            why = netem_why or tbf_why
            spec = ",".join(f"{k}={v}" for k, v in soft.items())
            bl.mechanism.append(
                f"{spec} via softswitch {sw.spec.name} --netem {sw_end[1]}:{spec} (kernel: {why})"
            )


def _tc_or_raise(ns: netns.NetNS | None, ln: LinkSpec, *args: str) -> None:
    res = _tc(ns, *args)
    if res.returncode != 0:
        raise RuntimeError(f"{ln.where}: `tc {' '.join(args)}` failed: {res.stderr.strip()}")


def softswitch_has_netem() -> bool:
    res = subprocess.run(
        [sys.executable, "-m", "softswitch", "--help"], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    return "--netem" in res.stdout


_pipelines: dict[tuple[str, str, tuple[tuple[str, str], ...]], tuple[Any, bytes]] = {}


def switch_defines(topo: Topology) -> dict[str, str]:
    """The -D settings every switch's program is compiled with: the aggregation width the file
    asks for (innet.p4's AGG_VALUES_PER_PACKET; the workers get the same --values-per-packet)."""
    return {"AGG_VALUES_PER_PACKET": str(topo.scenario.aggregation.values_per_packet)}


def _pipeline(p4: Path, target: str, defines: dict[str, str]) -> tuple[Any, bytes]:
    """P4Info and device config, compiled once per program, target and -D settings."""
    key = (str(p4), target, tuple(sorted(defines.items())))
    if key not in _pipelines:
        if target == "softswitch":
            from control_plane.p4runtime_client import device_config_for

            _pipelines[key] = device_config_for(p4, defines)
        else:
            _pipelines[key] = _bmv2_pipeline(p4, defines)
    return _pipelines[key]


def _bmv2_pipeline(p4: Path, defines: dict[str, str]) -> tuple[Any, bytes]:
    """p4c-bm2-ss's JSON and P4Info for simple_switch_grpc."""
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    with tempfile.TemporaryDirectory(prefix="innet-p4c-") as tmp:
        out = Path(tmp)
        res = subprocess.run(
            ["p4c-bm2-ss", "--p4v", "16", "--p4runtime-files", str(out / "p4info.txt"),
             *(f"-D{k}={v}" for k, v in sorted(defines.items())),
             "-o", str(out / "prog.json"), str(p4)],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        if res.returncode != 0:
            raise RuntimeError(f"p4c-bm2-ss {p4} failed:\n{res.stderr[-3000:]}")
        info = text_format.Parse((out / "p4info.txt").read_text(), p4info_pb2.P4Info())
        return info, (out / "prog.json").read_bytes()


def _start_switches(net: Network) -> None:
    """Start every switch process, then load each one's program, all at once: each load is the
    switch's own work (a few seconds of CPU for the software switch), so a topology of three
    switches comes up in about the time of the slowest instead of the sum."""
    from control_plane.switch_controller import SwitchController

    if any(sw.netem for sw in net.switches.values()) and not softswitch_has_netem():
        raise RuntimeError(
            "this kernel has no sch_netem and `python -m softswitch` has no --netem option yet: "
            "links with delay or loss cannot be emulated here"
        )
    switches = list(net.switches.values())
    for sw in switches:
        log = net.run_dir / f"switch-{sw.spec.name}.log"
        if sw.target == "softswitch":
            argv = [sys.executable, "-m", "softswitch", "--grpc-addr", "127.0.0.1:0"]
            for port, ifname in sorted(sw.ports.items()):
                argv += ["-i", f"{port}@{ifname}"]
            for port, em in sorted(sw.netem.items()):
                argv += ["--netem", f"{port}:" + ",".join(f"{k}={v}" for k, v in em.items())]
            sw.proc = Proc(f"switch {sw.spec.name}", argv, net.console, log, ready="softswitch running",
                           stream=False, detach=net.detach)  # fmt: skip
        else:
            from host_agents.netutil import free_port

            port = free_port("tcp")
            argv = ["simple_switch_grpc", "--device-id", "1", "--no-p4"]
            for p, ifname in sorted(sw.ports.items()):
                argv += ["-i", f"{p}@{ifname}"]
            argv += ["--", "--grpc-server-addr", f"127.0.0.1:{port}", "--cpu-port", "64"]
            sw.proc = Proc(f"switch {sw.spec.name}", argv, net.console, log, ready="Server listening",
                           stream=False, detach=net.detach)  # fmt: skip
            sw.address = f"127.0.0.1:{port}"
        net.write_state("building")  # the state file names every process started so far
    for sw in switches:
        assert sw.proc is not None
        sw.proc.wait_ready(60)
        if sw.target == "softswitch":
            m = next((re.search(r"listening on (127\.0\.0\.1:\d+)", ln) for ln in sw.proc.tail
                      if "listening on" in ln), None)  # fmt: skip
            if m is None:
                raise RuntimeError(
                    f"switch {sw.spec.name}: no P4Runtime address in its output:\n{sw.proc.tail_text()}"
                )
            sw.address = m.group(1)
        ports = ", ".join(f"{p}@{i}" for p, i in sorted(sw.ports.items()))
        net.console.say(
            f"switch {sw.spec.name} ({sw.target}, pid {sw.proc.pid}): P4Runtime {sw.address}, ports {ports}"
        )
        sw.controller = SwitchController(sw.address, sw.mac, sw.ip)
    # compiled here once per program (cached), then pushed to every switch at the same time
    pipelines = [_pipeline(sw.spec.p4, sw.target, switch_defines(net.topo)) for sw in switches]
    t0 = time.monotonic()

    def load(sw: BuiltSwitch, pipeline: tuple[Any, bytes]) -> float:
        assert sw.controller is not None
        sw.controller.client.set_pipeline(*pipeline)
        return time.monotonic() - t0

    with ThreadPoolExecutor(max(1, len(switches)), thread_name_prefix="load") as pool:
        futures = [pool.submit(load, sw, pl) for sw, pl in zip(switches, pipelines, strict=True)]
    # (leaving the pool's block waited for every load)
    failed = [(sw, f.exception()) for sw, f in zip(switches, futures, strict=True) if f.exception()]
    if failed:  # every switch that could not load, by name (the others are stopped with the run)
        raise RuntimeError("; ".join(f"switch {sw.spec.name}: {err}" for sw, err in failed))
    for sw, fut in zip(switches, futures, strict=True):
        seconds = fut.result()
        assert sw.controller is not None
        prog = sw.spec.p4.relative_to(REPO) if sw.spec.p4.is_relative_to(REPO) else sw.spec.p4
        sw.backend = _loaded_backend(sw) if sw.target == "softswitch" else "bmv2"
        width = sw.controller.jobs.values_per_packet
        what = f"{sw.backend} backend" + (f", {width} values per aggregation packet" if width else "")
        net.console.say(f"switch {sw.spec.name}: {prog} loaded in {seconds:.1f}s ({what})")


def _loaded_backend(sw: BuiltSwitch, wait_s: float = 5.0) -> str:
    """The backend the software switch said it loaded the program on (its 'pipeline loaded' line;
    the fallback reason, when auto fell back, is in the same log)."""
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        for ln in list(sw.proc.tail):  # type: ignore[union-attr]
            m = re.search(r"pipeline loaded, (\w+) backend", ln)
            if m:
                return m.group(1)
        time.sleep(0.05)
    return "unknown"


def next_hops(net: Network) -> dict[str, dict[str, str]]:
    """For each switch, the neighbour switch on a shortest path toward every other switch (the
    same paths topologies.spec checks replay_switch against)."""
    return switch_next_hops(list(net.switches), [bl.spec for bl in net.links])


def _install_routes(net: Network) -> None:
    hops = next_hops(net)
    for sname, sw in net.switches.items():
        for h in net.hosts.values():
            prefix = f"10.0.{h.spec.index + 1}.0/24"
            if h.switch == sname:
                sw.controller.forwarding.add_route(prefix, h.mac, sw.mac, h.port)
            else:
                nb = hops[sname][h.switch]
                sw.controller.forwarding.add_route(
                    prefix, net.switches[nb].mac, sw.mac, net.port_of[(sname, nb)]
                )


def describe(net: Network) -> list[str]:
    out = []
    for h in net.hosts.values():
        roles = ", ".join(r if n == 1 else f"{r} x{n}" for r, n in h.spec.roles.items()) or "-"
        out.append(
            f"host {h.spec.name:<8} {h.ip:<11} on {h.switch}:{h.port:<3} netns {h.ns.name:<13} roles: {roles}"
        )
    return out


# ---------------------------------------------------------------------------------------------
# scenarios


class Interrupted(BaseException):
    """SIGINT or SIGTERM: unwind and clean up."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def interrupts_unwind() -> Iterator[None]:
    """SIGINT and SIGTERM raise Interrupted in the main thread while inside; the old handlers
    come back after (a second signal during the cleanup is then ignored by the caller)."""
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}

    def handler(signum: int, frame: object) -> None:
        raise Interrupted(signum)

    for s in old:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s in old:
            signal.signal(s, signal.SIG_IGN)


def _default_signals() -> None:
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.default_int_handler if s == signal.SIGINT else signal.SIG_DFL)


@dataclass
class RunOptions:
    run_name: str | None = None
    log_dir: Path = REPO / "runs"
    target: str | None = None  # switch target override
    time_budget_s: float | None = None
    target_return: float | None = None
    no_target: bool = False
    env: str | None = None
    seed: int | None = None
    learner_args: list[str] = field(default_factory=list)
    actor_args: list[str] = field(default_factory=list)
    worker_args: list[str] = field(default_factory=list)
    quiet: bool = False
    report: bool = True
    grace_s: float = 180.0  # past the time budget before the launcher stops everything itself


@dataclass
class RunResult:
    exit_code: int
    summary: dict[str, Any]
    run_dir: Path


def _apex_argv(
    net: Network, opts: RunOptions, run_name: str
) -> tuple[list[tuple[str, BuiltHost, list[str]]], dict]:
    """(name, host, argv) for the learner and every actor, and the replay settings."""
    topo, s = net.topo, net.topo.scenario
    py = sys.executable
    env = opts.env or s.env
    budget = opts.time_budget_s or s.time_budget_s
    target = (
        None
        if opts.no_target
        else (opts.target_return if opts.target_return is not None else s.target_return)
    )
    common = [
        "--env", env, "--seed", str(opts.seed if opts.seed is not None else s.seed), "--run-name", run_name,
        "--log-dir", str(opts.log_dir), "--time-budget-s", str(budget),
    ]  # fmt: skip
    if s.replay_backend == "redis":
        redis_host = net.hosts[topo.hosts_with("redis")[0].name]
        replay = [
            "--replay-backend", "redis", "--replay-redis-url", f"redis://{redis_host.ip}:{REDIS_PORT}/0",
            "--replay-max-size", str(s.replay_max_size), "--replay-alpha", str(s.replay_alpha),
        ]  # fmt: skip
    else:
        server = net.hosts[topo.hosts_with("replay_server")[0].name]
        replay = [
            "--replay-backend", s.replay_backend, "--replay-server-ip", server.ip,
            "--replay-server-port", str(REPLAY_PORT), "--replay-max-size", str(s.replay_max_size),
            "--replay-alpha", str(s.replay_alpha), "--replay-timeout-s", "0.5",
        ]  # fmt: skip
    learner_host = net.hosts[topo.hosts_with("learner")[0].name]
    learner = [py, "-m", "host_agents.learner", *common, *replay]
    if target is not None:
        learner += ["--target-return", str(target)]
    learner += [*s.learner_args, *learner_host.spec.args, *opts.learner_args]
    out = [("learner", learner_host, learner)]
    actor_hosts = [(h, n) for h in topo.hosts.values() for n in range(h.roles.get("actor", 0))]
    for i, (h, _) in enumerate(actor_hosts):
        argv = [py, "-m", "host_agents.actor", *common, *replay, "--actor-index", str(i),
                "--num-actors", str(len(actor_hosts)), *s.actor_args, *h.args, *opts.actor_args]  # fmt: skip
        out.append((f"actor{i}", net.hosts[h.name], argv))
    return out, {"target_return": target, "time_budget_s": budget, "env": env}


def _worker_list(net: Network) -> list[tuple[int, BuiltHost, int]]:
    """(global worker index, host, its aggregation UDP port) in host order."""
    out = []
    for h in net.topo.hosts.values():
        for k in range(h.roles.get("worker", 0)):
            out.append((len(out), net.hosts[h.name], AGG_BIND_PORT + k))
    return out


def install_aggregation(net: Network) -> list[str]:
    """One job per switch of the aggregation tree: local workers as members (id = their global
    index), child switches as members (free ids) with this switch as their parent; the
    async threshold at the root only. Returns a description per switch."""
    from control_plane.aggregation import Job, Member, Parent
    from host_agents.agg_protocol import AGG_UDP_PORT

    a = net.topo.scenario.aggregation
    workers = _worker_list(net)
    worker_switches = {h.switch for _, h, _ in workers}
    root = a.root or next(iter(worker_switches))
    # BFS tree from the root; keep the switches on a path to some worker
    parent: dict[str, str | None] = {root: None}
    hops = next_hops(net)
    for sname in net.switches:
        if sname == root:
            continue
        # parent = the first hop from this switch toward the root
        parent[sname] = hops[sname][root]
    needed = set()
    for ws in worker_switches:
        cur: str | None = ws
        while cur is not None and cur not in needed:
            needed.add(cur)
            cur = parent[cur]
    order = sorted(needed, key=lambda s: _depth(parent, s), reverse=True)  # leaves first
    desc = []
    ids_at: dict[str, int] = {}
    for sname in sorted(needed, key=lambda s: _depth(parent, s)):  # ids from the top down
        children = sorted(c for c in needed if parent.get(c) == sname)
        local_ids = {i for i, h, _ in workers if h.switch == sname}
        free = (i for i in range(32) if i not in local_ids)
        for c in children:
            ids_at[c] = next(free)
    for sname in order:
        sw = net.switches[sname]
        members = [Member(i, h.port, h.mac, h.ip, port) for i, h, port in workers if h.switch == sname]
        children = sorted(c for c in needed if parent.get(c) == sname)
        for c in children:
            members.append(Member(ids_at[c], net.port_of[(sname, c)], net.switches[c].mac, net.switches[c].ip,
                                  AGG_UDP_PORT))  # fmt: skip
        up = None
        if parent[sname] is not None:
            p = net.switches[parent[sname]]
            up = Parent(p.mac, p.ip, net.port_of[(sname, p.spec.name)], ids_at[sname])
        threshold = a.threshold if (sname == root and a.mode == "async") else None
        # the job names its hosts' width: a switch whose program aggregates another one is refused
        # here, before any worker starts (they would time out on packets dropped as malformed)
        sw.controller.jobs.create(Job(a.job, 0, a.slots, members, threshold=threshold, parent=up,
                                      values_per_packet=a.values_per_packet))
        ms = ", ".join(f"{m.worker_id}@port{m.port}" for m in members)
        desc.append(
            f"switch {sname}: job {a.job}, {a.slots} slots, {a.values_per_packet} values per packet, "
            f"members {ms}"
            + (f", parent {parent[sname]} as {ids_at[sname]}" if up else " (root)")
            + (f", threshold {threshold}" if threshold else "")
        )
    return desc


def _depth(parent: dict[str, str | None], s: str) -> int:
    d = 0
    cur = parent.get(s)
    while cur is not None:
        d += 1
        cur = parent.get(cur)
    return d


def _dp_argv(
    net: Network, opts: RunOptions, run_name: str
) -> tuple[list[tuple[str, BuiltHost, list[str]]], dict]:
    s = net.topo.scenario
    a = s.aggregation
    budget = opts.time_budget_s or s.time_budget_s
    target = (
        None
        if opts.no_target
        else (opts.target_return if opts.target_return is not None else s.target_return)
    )
    workers = _worker_list(net)
    out = []
    for i, h, port in workers:
        argv = [
            sys.executable, "-m", "host_agents.worker",
            "--worker", str(i), "--num-workers", str(len(workers)),
            "--env", opts.env or s.env, "--seed", str(opts.seed if opts.seed is not None else s.seed),
            "--run-name", run_name, "--log-dir", str(opts.log_dir), "--time-budget-s", str(budget),
        ]  # fmt: skip
        if target is not None:
            argv += ["--target-return", str(target)]
        if a.comm == "switch":
            sw = net.switches[h.switch]
            argv += ["--comm", "switch", "--switch", sw.ip, "--bind", f"{h.ip}:{port}", "--job", str(a.job),
                     "--slots", str(a.slots)]  # fmt: skip
            if a.mode == "async":
                argv += ["--mode", "async", "--threshold", str(a.threshold)]
        else:
            w0 = workers[0][1]
            argv += ["--comm", "gloo", "--gloo-init", f"{w0.ip}:{GLOO_PORT}", "--gloo-ifname", h.ifname,
                     "--comm-timeout-s", "120"]  # fmt: skip
        # the chunk size of every transport's tensor layout; the switch's packet width for comm switch
        argv += ["--values-per-packet", str(a.values_per_packet)]
        argv += [*s.worker_args, *h.spec.args, *opts.worker_args]
        out.append((f"worker{i}", h, argv))
    return out, {"target_return": target, "time_budget_s": budget, "env": opts.env or s.env}


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def run(topo: Topology, opts: RunOptions) -> RunResult:
    """Build, run the scenario, summarize, tear down (always). See the module docstring."""
    console = Console(opts.quiet)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_name = opts.run_name or f"{topo.name}-{stamp}"
    run_dir = Path(opts.log_dir) / run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"topology": topo.name, "file": str(topo.path), "run_dir": str(run_dir),
                               "scenario": topo.scenario.kind}  # fmt: skip
    summary["reference"] = topo.scenario.reference
    if topo.scenario.kind == "dataparallel":
        summary["aggregation_mode"] = topo.scenario.aggregation.mode
    failures: list[str] = []
    interrupted: str | None = None
    t_start = time.monotonic()
    net: Network | None = None
    with contextlib.ExitStack() as stack:
        try:
            with interrupts_unwind():
                console.say(f"building {topo.name} from {topo.path} (logs in {run_dir})")
                net = build(topo, run_dir, console, target=opts.target, stack=stack)
                net.write_state("run")
                for line in describe(net):
                    console.say(line)
                summary.update(_run_scenario(net, opts, run_name, console, failures))
        except Interrupted as e:
            interrupted = str(e)
            console.say(f"{interrupted}: stopping everything and cleaning up")
        except Exception as e:  # noqa: BLE001 - reported, then the stack cleans up
            failures.append(f"launcher error: {type(e).__name__}: {e}")
            console.say(f"launcher error: {type(e).__name__}: {e}")
            if os.environ.get("INNET_DEBUG"):
                import traceback

                traceback.print_exc()
        finally:
            if net is not None:
                summary["switch_counters"] = _switch_counters(net)
                summary["switch_backends"] = {n: sw.backend for n, sw in net.switches.items() if sw.backend}
            console.say("cleaning up: stopping processes, removing namespaces and veths")
    # the stack closed the network (signals are ignored until here so the cleanup finishes)
    _default_signals()
    summary["wall_s"] = round(time.monotonic() - t_start, 1)
    summary["failures"] = failures
    summary["interrupted"] = interrupted
    if net is not None and topo.scenario.kind != "none":
        summary.update(_collect(net, run_dir))
    code = 0
    if interrupted:
        code = 130
    elif failures:
        code = 1
    elif summary.get("target_return") is not None and not summary.get("reached_target"):
        code = 3
    summary["exit_code"] = code
    (run_dir / "run_summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    _print_summary(console, summary)
    if opts.report and topo.scenario.kind != "none":
        _report(console, run_dir)
    return RunResult(code, summary, run_dir)


def _switch_counters(net: Network) -> dict[str, Any]:
    out: dict[str, Any] = {}
    s = net.topo.scenario
    for name, sw in net.switches.items():
        if sw.controller is None or sw.proc is None or sw.proc.poll() is not None:
            continue
        with contextlib.suppress(Exception):
            if s.kind == "apex" and s.replay_backend == "switch" and 0 in sw.controller.replay.tables():
                out[name] = {"replay": sw.controller.replay.counters(0)}
            elif s.kind == "dataparallel" and s.aggregation.comm == "switch":
                out[name] = {"aggregation": sw.controller.jobs.counters(s.aggregation.job)}
    return out


def _run_scenario(
    net: Network, opts: RunOptions, run_name: str, console: Console, failures: list[str]
) -> dict:
    topo, s = net.topo, net.topo.scenario
    if s.kind == "none":
        console.say("scenario kind none: the network is up and routed; nothing to run")
        return {}
    info: dict[str, Any] = {}
    servers: list[Proc] = []
    if s.kind == "apex":
        if s.replay_backend in ("switch", "host"):
            host = net.hosts[topo.hosts_with("replay_server")[0].name]
            from topologies.replay_server import SERVER_BIN

            if not SERVER_BIN.exists():
                raise RuntimeError(
                    f"{SERVER_BIN} is not built: run `make replay-server` (make -C dpdk_fallback)"
                )
            table = f"apex:max_size={s.replay_max_size},alpha={s.replay_alpha},priorities={s.replay_backend}"
            argv = [str(SERVER_BIN), "--bind", host.ip, "--port", str(REPLAY_PORT), "--table", table,
                    "--quiet", *s.replay_server_args]  # fmt: skip
            p = Proc("replay_server", argv, console, net.run_dir / "replay_server.log", ns=host.ns,
                     ready="replay_server: ready", tier=1)  # fmt: skip
            net.procs.append(p)
            p.wait_ready(30)
            servers.append(p)
            console.say(
                f"replay server on {host.spec.name} ({host.ip}:{REPLAY_PORT}), table {table}, pid {p.pid}"
            )
            if s.replay_backend == "switch":
                sname = s.replay_switch or host.switch
                t = net.switches[sname].controller.replay.install_table(0, s.replay_max_size)
                console.say(
                    f"switch {sname} holds replay table 0's priorities (tree {t.tree}, {t.num_leaves} leaves)"
                )
        else:
            host = net.hosts[topo.hosts_with("redis")[0].name]
            rdir = net.run_dir / "redis"  # its working directory (nothing is saved: --save "")
            rdir.mkdir(exist_ok=True)
            argv = ["redis-server", "--bind", host.ip, "--port", str(REDIS_PORT), "--save", "",
                    "--appendonly", "no", "--protected-mode", "no", "--dir", str(rdir)]  # fmt: skip
            p = Proc("redis", argv, console, net.run_dir / "redis.log", ns=host.ns, ready="Ready to accept",
                     stream=False, tier=1)  # fmt: skip
            net.procs.append(p)
            p.wait_ready(30)
            servers.append(p)
            console.say(f"redis on {host.spec.name} ({host.ip}:{REDIS_PORT}), pid {p.pid}")
        agents, info = _apex_argv(net, opts, run_name)
    else:
        if s.aggregation.comm == "switch":
            for line in install_aggregation(net):
                console.say(line)
        agents, info = _dp_argv(net, opts, run_name)
    net.write_state("run")
    procs: dict[str, Proc] = {}
    for name, host, argv in agents:
        p = Proc(name, argv, console, net.run_dir / f"{name}.log", ns=host.ns)
        net.procs.append(p)
        procs[name] = p
        console.say(f"started {name} on {host.spec.name} ({host.ip}), pid {p.pid}")
    net.write_state("run")
    tgt = info["target_return"]
    console.say(
        f"{s.kind} on {info['env']}: "
        + (f"until the return reaches {tgt} or " if tgt is not None else "for ")
        + f"{info['time_budget_s']:.0f}s"
    )
    _watch(net, procs, servers, console, failures, info["time_budget_s"] + opts.grace_s)
    stop_procs([p for p in reversed(net.procs) if p.tier == 0])
    stop_procs([p for p in reversed(net.procs) if p.tier > 0], grace=10)
    info["exit_codes"] = {p.name: p.poll() for p in net.procs}
    return info


def _watch(
    net: Network,
    procs: dict[str, Proc],
    servers: list[Proc],
    console: Console,
    failures: list[str],
    backstop_s: float,
) -> None:
    """Until the scenario ends. Apex: the learner's exit ends it; a dead actor is reported and
    the run goes on (unless none is left); a dead server or switch stops it. Data-parallel:
    all workers' exits end it; a failed worker stops it (its peers would wait for it)."""
    s = net.topo.scenario
    deadline = time.monotonic() + backstop_s
    reported: set[str] = set()

    def died(p: Proc, what: str) -> str:
        msg = f"{p.name} (pid {p.pid}) {what} with exit code {p.poll()}; last lines of {p.log}:\n"
        msg += p.tail_text()
        console.say(msg)
        return msg

    while time.monotonic() < deadline:
        time.sleep(0.5)
        for sw in net.switches.values():
            if sw.proc is not None and sw.proc.poll() is not None:
                failures.append(died(sw.proc, "died"))
                return
        for p in servers:
            if p.poll() is not None:
                failures.append(died(p, "died"))
                return
        if s.kind == "apex":
            learner = procs["learner"]
            actors = [p for n, p in procs.items() if n != "learner"]
            for a in actors:
                if a.poll() is not None and a.name not in reported:
                    reported.add(a.name)
                    if a.poll() != 0:
                        died(a, "died")
                        net.lost.append({"name": a.name, "exit_code": a.poll(), "log": str(a.log)})
                        console.say(f"{a.name} is gone; the run goes on with the other actors")
            if learner.poll() is not None:
                if learner.poll() != 0:
                    failures.append(died(learner, "failed"))
                else:
                    console.say("learner finished")
                return
            # actors that exited 0 finished (their --max-steps or time budget): the learner ends
            # by itself; if every actor died instead, nothing feeds it any more
            if all(a.poll() not in (None, 0) for a in actors):
                failures.append("every actor died; stopping the learner")
                console.say(failures[-1])
                return
        else:
            for p in procs.values():
                if p.poll() not in (None, 0) and p.name not in reported:
                    reported.add(p.name)
                    failures.append(died(p, "failed"))
                    return
            if all(p.poll() is not None for p in procs.values()):
                console.say("all workers finished")
                return
    failures.append(f"the scenario did not end within its time budget plus {backstop_s:.0f}s; stopped it")
    console.say(failures[-1])


def _collect(net: Network, run_dir: Path) -> dict[str, Any]:
    """What the agents' summary.json files say, in one place."""
    s = net.topo.scenario
    out: dict[str, Any] = {"lost_processes": net.lost}
    if s.kind == "apex":
        ls = _read_json(run_dir / "learner" / "summary.json") or {}
        n_actors = sum(h.roles.get("actor", 0) for h in net.topo.hosts.values())
        acts = [_read_json(run_dir / f"actor{i}" / "summary.json") or {} for i in range(n_actors)]
        reached = ls.get("reached_at") or {}
        evals = ls.get("evaluations") or []
        shares = [a["communication_share"] for a in acts if a.get("communication_share") is not None]
        rates = [a["env_steps_per_s"] for a in acts if isinstance(a.get("env_steps_per_s"), int | float)]
        out.update(
            reached_target=bool(ls.get("reached_target")),
            stopped_by=ls.get("stopped_by"),
            learner_wall_s=ls.get("wall_time_s"),
            learner_updates_per_s=ls.get("updates_per_s"),
            env_steps_per_s=sum(rates) if rates else None,
            actors_reporting_rate=len(rates),
            time_to_target_s=reached.get("wall_time_s"),
            env_steps_to_target=reached.get("replay_inserts"),
            updates_to_target=reached.get("updates"),
            best_eval_return=max((e["return_mean"] for e in evals), default=None),
            final_eval_return=ls.get("eval_return_mean"),
            learner_updates=ls.get("updates"),
            env_steps=sum(a.get("env_steps", 0) for a in acts),
            learner_communication_share=ls.get("communication_share"),
            actor_communication_share=(sum(shares) / len(shares)) if shares else None,
        )
    else:
        n = sum(h.roles.get("worker", 0) for h in net.topo.hosts.values())
        ws = [_read_json(run_dir / f"worker-{i}" / "summary.json") or {} for i in range(n)]
        w0 = ws[0] if ws else {}
        reached = w0.get("reached_target") or {}
        shares = [w["communication_share"] for w in ws if w.get("communication_share") is not None]
        wall = w0.get("wall_s")
        out.update(
            reached_target=bool(reached),
            stopped_by=w0.get("stop_reason"),
            worker_wall_s=wall,
            updates_per_s=(w0["updates"] / wall) if w0.get("updates") and wall else None,
            env_steps_per_s=(sum(w.get("env_steps", 0) for w in ws) / wall) if wall else None,
            time_to_target_s=reached.get("wall_s") if reached else None,
            env_steps_to_target=reached.get("env_steps_total") if reached else None,
            updates_to_target=reached.get("updates") if reached else None,
            final_eval_return=w0.get("eval_return_mean"),
            updates=w0.get("updates"),
            env_steps=sum(w.get("env_steps", 0) for w in ws),
            identical_params=len({w.get("params_sha256") for w in ws if w}) == 1 if all(ws) else None,
            communication_share=(sum(shares) / len(shares)) if shares else None,
        )
    return out


def _fmt(v: Any, unit: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3g}{unit}" if abs(v) < 10 else f"{v:.1f}{unit}"
    return f"{v}{unit}"


def _print_summary(console: Console, s: dict[str, Any]) -> None:
    lines = [f"summary of {s['topology']} ({s['scenario']}), logs in {s['run_dir']}"]
    if s["scenario"] != "none" and "reached_target" in s:
        tgt = s.get("target_return")
        if tgt is None:
            lines.append("target return: none (ran to its step or time limit)")
        elif s["reached_target"]:
            lines.append(
                f"target return {tgt} REACHED after {_fmt(s.get('time_to_target_s'), ' s')} "
                f"({_fmt(s.get('env_steps_to_target'))} env steps, "
                f"{_fmt(s.get('updates_to_target'))} updates)"
            )
        else:
            lines.append(f"target return {tgt} NOT reached within the {s.get('time_budget_s')} s budget")
            lines += [f"  why: {w}" for w in why_not_reached(s)]
        best = s.get("best_eval_return")
        lines.append(
            f"final evaluation return {_fmt(s.get('final_eval_return'))}"
            + (f", best periodic {_fmt(best)}" if best is not None else "")
        )
        if s["scenario"] == "apex":
            lines.append(
                f"env steps {_fmt(s.get('env_steps'))}, learner updates {_fmt(s.get('learner_updates'))}; "
                f"communication share: learner {_pct(s.get('learner_communication_share'))}, "
                f"actors {_pct(s.get('actor_communication_share'))}"
            )
        else:
            same = s.get("identical_params")
            if s.get("aggregation_mode") == "async":
                # async workers apply partial sums at their own pace: different parameters are expected
                same_text = (
                    f"{'identical' if same else 'different'} parameters on the workers (expected: async)"
                )
            else:
                shown = "yes" if same else "NO" if same is False else "-"
                same_text = f"identical parameters on all workers: {shown}"
            lines.append(
                f"env steps {_fmt(s.get('env_steps'))}, updates {_fmt(s.get('updates'))}, "
                f"communication share {_pct(s.get('communication_share'))}, {same_text}"
            )
        for lp in s.get("lost_processes") or []:
            lines.append(f"lost during the run: {lp['name']} (exit code {lp['exit_code']}, log {lp['log']})")
    backends = s.get("switch_backends") or {}
    if backends:
        lines.append("switch backend: " + ", ".join(f"{n} {b}" for n, b in backends.items()))
    for name, c in (s.get("switch_counters") or {}).items():
        lines.append(f"switch {name} counters: {c}")
    lines.append(f"wall time {s['wall_s']} s (build, run and teardown)")
    if s.get("interrupted"):
        lines.append(f"interrupted by {s['interrupted']}")
    for f in s.get("failures") or []:
        lines.append("FAILED: " + f.splitlines()[0])
    lines.append(f"exit code {s['exit_code']}; summary in {s['run_dir']}/run_summary.json")
    for ln in lines:
        console.say(ln)


def why_not_reached(s: dict[str, Any]) -> list[str]:
    """What a run summary says about a missed target: the best evaluation, how the run ended
    (time budget, step limit, a failure), and the speeds against the scenario's reference run."""
    out = []
    tgt = s.get("target_return")
    best = s.get("best_eval_return")
    final = s.get("final_eval_return")
    if best is not None or final is not None:
        got = max(v for v in (best, final) if v is not None)
        out.append(f"best evaluation {_fmt(got)} of the {_fmt(tgt)} needed")
    else:
        out.append("no evaluation finished (the learner's eval-interval was not reached?)")
    stopped = s.get("stopped_by")
    budget = s.get("time_budget_s")
    if stopped == "time_budget":
        out.append(f"the time budget of {_fmt(budget)} s ran out")
    elif stopped == "max_steps":
        out.append("the step limit (--max-steps) was reached before the target")
    elif s.get("failures") or s.get("interrupted"):
        out.append("the run was stopped early (see FAILED / interrupted below)")
    elif stopped:
        out.append(f"stopped by {stopped}")
    ref = s.get("reference") or {}
    ups = s.get("learner_updates_per_s", s.get("updates_per_s"))
    if ups is not None:
        text = f"learner {_fmt(ups)} updates/s"
        if "updates_per_s" in ref:
            lo, hi = ref["updates_per_s"]
            text += f" (reference {lo:g}-{hi:g})"
            if ups < 0.75 * lo:
                text += ": slower than the reference run, the machine is busy or slower"
        out.append(text)
    eps = s.get("env_steps_per_s")
    if eps is not None:
        text = f"actors {_fmt(eps)} env steps/s together"
        if "env_steps_per_s" in ref:
            text += f" (reference {ref['env_steps_per_s']:g})"
            if eps < 0.75 * ref["env_steps_per_s"]:
                text += ": the actors did not get the CPU they need"
        out.append(text)
    if "time_to_target_s" in ref:
        out.append(
            f"the reference run reached the target after about {ref['time_to_target_s']:g} s"
            + (f"; {ref['note']}" if ref.get("note") else "")
        )
    return out


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _report(console: Console, run_dir: Path) -> None:
    """topologies.report.write_report: the plot of the returns (PNG) next to the logs."""
    from topologies.report import write_report

    png = run_dir / "returns.png"
    try:
        write_report(run_dir, png)
        console.say(f"returns plotted in {png}")
    except Exception as e:  # noqa: BLE001 - the run's result stands without its plot
        console.say(f"the report failed: {type(e).__name__}: {e}")


def up(topo: Topology, log_dir: Path, target: str | None = None) -> Network:
    """Build and leave the network up (switch processes detached); `down` removes it."""
    console = Console()
    for f in state_dir().glob("*.json"):
        st = _read_json(f) or {}
        if st.get("topology") == topo.name and st.get("mode") == "up":
            raise RuntimeError(
                f"{topo.name} is already up ({f}); `python -m topologies down {topo.path}` first"
            )
    run_dir = log_dir / f"{topo.name}-up-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        with contextlib.ExitStack() as stack:
            # a failed or interrupted build is removed by the stack, after interrupts_unwind
            # has set SIGINT/SIGTERM/SIGHUP to be ignored
            with interrupts_unwind():
                net = build(topo, run_dir, console, target=target, detach=True, stack=stack)
            stack.pop_all()  # built: the network stays up
    finally:
        _default_signals()
    net.write_state("up")
    # from now on the state file owns them: this process's atexit must not delete them
    netns.forget(net.namespaces, net.veths)
    for sw in net.switches.values():
        with contextlib.suppress(Exception):
            sw.controller.close()
    for line in describe(net):
        console.say(line)
    console.say(
        f"{topo.name} is up; state in {net.state_file}; `python -m topologies down {topo.path}` removes it"
    )
    return net
