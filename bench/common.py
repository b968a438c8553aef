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


def run_and_report(
    cfg, run: Callable[[object], None], format_table: Callable[[list[dict], dict], str]
) -> int:
    """Run the benchmark; on Ctrl-C or SIGTERM keep what was measured. Saves the JSON, prints the
    table. Exit status 130 when interrupted, 1 when a configuration ended in an error."""

    def on_term(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
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
