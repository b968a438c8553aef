"""What the benchmarks share: the driver <-> worker protocol (JSON lines on the worker's stdout,
"go" lines on its stdin), the group of worker processes in namespaces, progress output, list
options, and a main loop that keeps what was measured when interrupted."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class BenchError(RuntimeError):
    pass


def progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---- CPU accounting from /proc ----


def parse_proc_stat(text: str) -> tuple[int, int]:
    """(busy, total) jiffies of the aggregate ``cpu`` line of /proc/stat. Total is user + nice +
    system + idle + iowait + irq + softirq + steal (guest time is already inside user and nice);
    busy is total less idle and iowait."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            values = [int(x) for x in fields[1:9]] + [0] * (8 - len(fields[1:9]))
            total = sum(values)
            return total - values[3] - values[4], total
    raise ValueError("no aggregate 'cpu' line in /proc/stat text")


def parse_pid_times(text: str) -> tuple[int, int, int, int, int]:
    """(ppid, utime, stime, cutime, cstime) from /proc/<pid>/stat text, times in clock ticks
    (cutime and cstime: the children it has waited for; a child that exits hands its time to its
    parent there). The command name (field 2) may hold spaces and parentheses, so fields are
    counted after its last ')'; ppid is field 4, the times fields 14 to 17."""
    rest = text[text.rindex(")") + 1 :].split()  # rest[0] is field 3 (state)
    return int(rest[1]), int(rest[11]), int(rest[12]), int(rest[13]), int(rest[14])


def parse_pid_stat(text: str) -> int:
    """utime + stime (clock ticks) from /proc/<pid>/stat text."""
    _, user, system, _, _ = parse_pid_times(text)
    return user + system


def _all_pid_times() -> dict[int, tuple[int, int, int]]:
    """{pid: (ppid, user ticks, system ticks)} of every process, the ticks with those of the
    children it has waited for."""
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                ppid, user, system, cuser, csystem = parse_pid_times((d / "stat").read_text())
                out[int(d.name)] = (ppid, user + cuser, system + csystem)
    return out


def _thread_ns(pid: int) -> dict[int, int]:
    """{thread id: nanoseconds it has run} of a process's live threads (/proc/<pid>/task/*/
    schedstat: exact, where utime and stime count 10 ms ticks); empty when it is gone."""
    out: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError, IndexError):
                out[int(task.name)] = int((task / "schedstat").read_text().split()[0])
    return out


def cpu_snapshot(roles: dict[str, Sequence[int]]) -> dict[str, object]:
    """CPU used so far by each role's processes and their descendants (e.g. under `ip netns
    exec`), except the subtrees of another role's processes (the driver's role does not count
    the workers it started): (user ticks, system ticks, {thread: nanoseconds run}), with the
    machine's busy and total jiffies. Two snapshots give :func:`cpu_per_call`."""
    procs = _all_pid_times()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    snap: dict[str, object] = {}
    for role, pids in roles.items():
        others = {p for r, ps in roles.items() if r != role for p in ps}
        user = system = 0
        ns: dict[int, int] = {}
        todo, seen = list(pids), set()
        while todo:
            pid = todo.pop()
            if pid in seen or pid not in procs:
                continue
            seen.add(pid)
            user, system = user + procs[pid][1], system + procs[pid][2]
            ns.update(_thread_ns(pid))
            todo += [c for c in children.get(pid, []) if c not in others]
        snap[role] = (user, system, ns)
    snap["machine"] = parse_proc_stat(Path("/proc/stat").read_text())
    return snap


def cpu_per_call(before: dict[str, object], after: dict[str, object], calls: int) -> dict[str, object]:
    """Per call between two snapshots (:func:`cpu_snapshot`): each role's CPU in ms (exact), split
    into user and system by the tick counts (a role with no tick in the window shows all of it
    as system), and how busy the whole machine was (all cores, everything on it) over that time."""
    out: dict[str, object] = {}
    for role in before:
        if role == "machine":
            continue
        (u0, s0, n0), (u1, s1, n1) = before[role], after[role]  # type: ignore[misc]
        ticks = max(0, (u1 - u0) + (s1 - s0))
        if n1 and n0.keys() <= n1.keys():
            # every thread is still there: the scheduler's nanoseconds, thread by thread (one that
            # started in the window counts whole); the ticks only split them into user and system
            total = sum(v - n0.get(t, 0) for t, v in n1.items()) / 1e6 / calls
        else:
            # a thread ended in the window (a server's per-connection thread): its nanoseconds are
            # gone with it, while the process's ticks still count them (and a child process's,
            # once waited for); so do they where schedstat cannot be read
            total = ticks * 1000.0 / os.sysconf("SC_CLK_TCK") / calls
        user = min(total, total * max(0, u1 - u0) / ticks) if ticks > 0 else 0.0
        out[role] = {"user_ms": user, "sys_ms": total - user, "total_ms": total}
    (b0, t0), (b1, t1) = before["machine"], after["machine"]  # type: ignore[misc]
    out["machine_busy"] = (b1 - b0) / (t1 - t0) if t1 > t0 else None
    out["cores"] = os.cpu_count()
    return out


def format_cpu(cpu: dict[str, object], per: str = "per call") -> str:
    """One line: each role's CPU ms ``per`` call (or over the window ``per`` names; user share in
    brackets) and the machine's load."""
    parts = [
        f"{role} {v['total_ms']:.2f} ms ({v['user_ms']:.2f} user)"  # type: ignore[index]
        for role, v in cpu.items()
        if isinstance(v, dict)
    ]
    busy = cpu.get("machine_busy")
    load = "?" if busy is None else f"{busy:.0%}"
    return f"CPU {per}: {', '.join(parts)}; machine {load} busy of {cpu.get('cores')} cores"


# ---- worker side ----


def emit(**record: object) -> None:
    """One JSON record to the driver."""
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


class StdinLines:
    """Lines from fd 0 with a timeout (the driver's go signals)."""

    def __init__(self) -> None:
        self.buf = b""

    def readline(self, timeout: float) -> str | None:
        """The next line; None when the driver closed stdin (it is gone, or it is done with us)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no go signal from the benchmark within {timeout:g} s")
            ready, _, _ = select.select([0], [], [], left)
            if ready:
                chunk = os.read(0, 4096)
                if not chunk:
                    return None
                self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode()

    def ready(self) -> bool:
        """Whether a line (or end of input) is waiting, without blocking."""
        while b"\n" not in self.buf:
            if not select.select([0], [], [], 0)[0]:
                return False
            chunk = os.read(0, 4096)
            if not chunk:
                return True  # end of input: readline returns None at once
            self.buf += chunk
        return True


# ---- driver side ----


class ProcessGroup:
    """Named worker processes in namespaces whose JSON lines arrive on one queue."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.procs: list[subprocess.Popen[str]] = []
        self.stderr: list[deque[str]] = []
        self.events: queue.Queue[tuple[int, dict | None]] = queue.Queue()
        self.exited: set[int] = set()  # processes whose stdout has closed

    def start(self, name: str, ns, argv: list[str]) -> int:
        # one thread per worker process: they share few CPUs with the switch
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
        }
        proc = ns.popen(argv, stdin=subprocess.PIPE, cwd=str(ROOT), env=env, start_new_session=True)
        idx = len(self.procs)
        self.names.append(name)
        self.procs.append(proc)
        tail: deque[str] = deque(maxlen=40)
        self.stderr.append(tail)
        threading.Thread(target=self._read_out, args=(idx, proc), daemon=True).start()
        threading.Thread(target=lambda: tail.extend(proc.stderr), daemon=True).start()
        return idx

    def _read_out(self, idx: int, proc: subprocess.Popen[str]) -> None:
        for line in proc.stdout:
            line = line.strip()
            if line.startswith("{"):
                with contextlib.suppress(json.JSONDecodeError):
                    self.events.put((idx, json.loads(line)))
        self.events.put((idx, None))

    def _tail(self, idx: int) -> str:
        return "".join(self.stderr[idx]).strip()[-1500:] or "no output"

    def go(self, which: Sequence[int] | None = None) -> None:
        """Send a go line to the processes in ``which`` (all when None)."""
        for idx in range(len(self.procs)) if which is None else which:
            try:
                self.procs[idx].stdin.write("go\n")
                self.procs[idx].stdin.flush()
            except OSError as e:  # the process is gone
                raise BenchError(f"{self.names[idx]} is gone ({e}): {self._tail(idx)}") from e

    def wait_for(
        self,
        event: str,
        timeout: float,
        which: Sequence[int] | None = None,
        collect: list[dict] | None = None,
    ) -> dict[int, dict]:
        """Until every process in ``which`` (all when None) has sent ``event``; other records go
        to ``collect``. Raises BenchError on an error record, an early exit or the timeout."""
        which = list(range(len(self.procs))) if which is None else list(which)
        got: dict[int, dict] = {}
        deadline = time.monotonic() + timeout
        while len(got) < len(which):
            gone = sorted((self.exited & set(which)) - set(got))
            if gone:
                idx = gone[0]
                time.sleep(0.2)  # let the stderr reader catch up
                rc = self.procs[idx].poll()
                raise BenchError(f"{self.names[idx]} exited (rc {rc}) before '{event}': {self._tail(idx)}")
            left = deadline - time.monotonic()
            if left <= 0:
                missing = [self.names[i] for i in which if i not in got]
                raise BenchError(f"timed out after {timeout:.0f} s waiting for '{event}' from {missing}")
            try:
                idx, rec = self.events.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            if rec is None:  # a process that has sent its last record may exit while others work
                self.exited.add(idx)
                continue
            if rec.get("event") == "error":
                raise BenchError(rec.get("message", f"{self.names[idx]}: error"))
            if rec.get("event") == event and idx in which:
                got[idx] = rec
            elif collect is not None:
                collect.append(rec)
        return got

    def stop(self) -> None:
        for p in self.procs:
            with contextlib.suppress(OSError, ValueError):
                p.stdin.close()
        deadline = time.monotonic() + 5
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@contextlib.contextmanager
def process_group() -> Iterator[ProcessGroup]:
    g = ProcessGroup()
    try:
        yield g
    finally:
        g.stop()


# ---- options and main ----


def int_list(text: str) -> list[int]:
    """argparse type: comma-separated positive integers."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: need positive integers")
    return values


def choice_list(choices: Sequence[str], what: str) -> Callable[[str], list[str]]:
    """argparse type: a comma-separated subset of ``choices`` (``what``: "method", "path")."""

    def parse(text: str) -> list[str]:
        values = [v.strip() for v in text.split(",") if v.strip()]
        bad = [v for v in values if v not in choices]
        if bad or not values:
            raise argparse.ArgumentTypeError(f"unknown {what}(s) {bad}; choose from {','.join(choices)}")
        return list(dict.fromkeys(values))

    return parse


def sigterm_as_interrupt() -> None:
    """Make SIGTERM raise KeyboardInterrupt in the main thread, as Ctrl-C does: the benchmark's
    `finally` blocks then stop what it started (processes, namespaces) and keep what it measured.
    Without it SIGTERM (a CI timeout, `kill`) ends the process on the spot and orphans them."""

    def on_term(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)


def stop_process(proc: subprocess.Popen, group: bool = False, grace_s: float = 60.0) -> None:
    """SIGINT to ``proc`` (``group``: to the process group it leads, a benchmark started in its
    own session), which cleans up and keeps what it measured as on Ctrl-C; SIGKILL if it is still
    there after ``grace_s``, or at once on a second Ctrl-C (raised on after the kill)."""
    if proc.poll() is not None:
        return

    def send(sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)

    send(signal.SIGINT)
    try:
        proc.wait(timeout=grace_s)
    except (subprocess.TimeoutExpired, KeyboardInterrupt) as e:
        send(signal.SIGKILL)
        proc.wait()
        if isinstance(e, KeyboardInterrupt):
            raise


def wait_or_stop(proc: subprocess.Popen, grace_s: float = 60.0) -> int:
    """``proc.wait()``; on Ctrl-C or SIGTERM (KeyboardInterrupt) :func:`stop_process` it (it may
    have had SIGINT already from the terminal), then raise on. subprocess.call would SIGKILL it
    at once, in the middle of removing its namespaces."""
    try:
        return proc.wait()
    except KeyboardInterrupt:
        stop_process(proc, grace_s=grace_s)
        raise


def run_and_report(
    cfg, run: Callable[[object], None], format_table: Callable[[list[dict], dict], str]
) -> int:
    """Run the benchmark; on Ctrl-C or SIGTERM keep what was measured. Saves the JSON, prints the
    table. Exit status 130 when interrupted, 1 when a configuration ended in an error."""

    sigterm_as_interrupt()
    rc = 0
    try:
        run(cfg)
    except KeyboardInterrupt:
        progress("interrupted: cleaning up, keeping what was measured")
        cfg.meta["interrupted"] = True
        rc = 130
    cfg.meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    cfg.save()
    print(format_table(cfg.results, cfg.meta))
    print(f"\nJSON: {cfg.out}")
    # "not applicable" points (async with one worker) are recorded, not failed
    if rc == 0 and any(r.get("error") and not r.get("not_applicable") for r in cfg.results):
        rc = 1
    return rc
