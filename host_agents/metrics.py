"""What the agents report: TensorBoard scalars (plus the same records as JSON lines, for plots
without TensorBoard), a timer that splits time into computation and named communication phases,
a steady one-line progress report, and atomic checkpoints.

Run directory layout (``runs/<run name>/<role>``, one per process)::

    events.out.tfevents.*   TensorBoard
    metrics.jsonl           {"tag": ..., "value": ..., "step": ..., "time": ...} per scalar
    checkpoint.pt           latest checkpoint (written to a temporary file, then renamed)
    summary.json            final figures (written once, at the end)
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import torch

__all__ = [
    "PhaseTimer",
    "Progress",
    "RunLogger",
    "communication_share",
    "load_checkpoint",
    "read_metrics",
    "save_checkpoint",
]

COMPUTATION = "computation"
# phases that are neither computation nor communication
NOT_COMMUNICATION = frozenset({COMPUTATION, "evaluate", "checkpoint"})


class RunLogger:
    """Scalars to TensorBoard and ``metrics.jsonl`` in ``run_dir``."""

    def __init__(self, run_dir: Path | str, tensorboard: bool = True, resume: bool = False) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        # a resumed run appends; a fresh one must not mix its records with an older run's
        mode = "a" if resume else "w"
        self._jsonl: IO[str] = open(self.run_dir / "metrics.jsonl", mode, buffering=1)  # noqa: SIM115
        self._tb = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(str(self.run_dir), flush_secs=10)
        self._start = time.time()

    def scalar(self, tag: str, value: float, step: int) -> None:
        value = float(value)
        if self._tb is not None:
            self._tb.add_scalar(tag, value, step)
        self._jsonl.write(
            json.dumps(
                {"tag": tag, "value": value, "step": int(step), "time": round(time.time() - self._start, 3)}
            )
            + "\n"
        )

    def scalars(self, values: dict[str, float], step: int, prefix: str = "") -> None:
        for tag, value in values.items():
            self.scalar(prefix + tag, value, step)

    def write_json(self, name: str, data: dict[str, Any]) -> Path:
        path = self.run_dir / name
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)
        return path

    def flush(self) -> None:
        self._jsonl.flush()
        if self._tb is not None:
            self._tb.flush()

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
            self._tb = None
        if not self._jsonl.closed:
            self._jsonl.close()

    def __enter__(self) -> RunLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_metrics(run_dir: Path | str) -> dict[str, list[tuple[int, float]]]:
    """``metrics.jsonl`` of a run directory as {tag: [(step, value), ...]}."""
    out: dict[str, list[tuple[int, float]]] = {}
    with open(Path(run_dir) / "metrics.jsonl") as f:
        for line in f:
            rec = json.loads(line)
            out.setdefault(rec["tag"], []).append((rec["step"], rec["value"]))
    return out


class PhaseTimer:
    """Wall-clock seconds per phase. Time inside ``with timer.phase("push_experiences")`` goes to
    that phase; all other time since the timer started goes to "computation", so the phases
    always add up to the elapsed time. ``interval()`` returns the split since the last call;
    ``totals()`` since the start."""

    def __init__(self) -> None:
        now = time.perf_counter()
        self._start = self._mark = now
        self._total: dict[str, float] = {}
        self._since: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            dt = time.perf_counter() - t0
            self._total[name] = self._total.get(name, 0.0) + dt
            self._since[name] = self._since.get(name, 0.0) + dt

    @staticmethod
    def _with_computation(phases: dict[str, float], elapsed: float) -> dict[str, float]:
        out = dict(phases)
        out[COMPUTATION] = max(0.0, elapsed - sum(phases.values()))
        return out

    def interval(self) -> dict[str, float]:
        now = time.perf_counter()
        out = self._with_computation(self._since, now - self._mark)
        self._since = {}
        self._mark = now
        return out

    def totals(self) -> dict[str, float]:
        return self._with_computation(self._total, time.perf_counter() - self._start)


def communication_share(split: dict[str, float], communication: Iterable[str] | None = None) -> float:
    """Share of working time spent communicating: the ``communication`` phases over those
    phases plus computation. Other named phases (evaluation, checkpoints) count for neither
    side. ``communication=None`` takes every named phase but ``NOT_COMMUNICATION``."""
    if communication is None:
        communication = [p for p in split if p not in NOT_COMMUNICATION]
    comm = sum(split.get(p, 0.0) for p in communication)
    total = comm + split.get(COMPUTATION, 0.0)
    return 0.0 if total <= 0 else comm / total


class Progress:
    """Prints one line every ``interval_s`` seconds (and at the end), prefixed with the role."""

    def __init__(self, role: str, interval_s: float = 10.0, stream: IO[str] | None = None) -> None:
        self.role = role
        self.interval_s = interval_s
        self.stream = stream or sys.stdout
        self.start = time.monotonic()
        self._next = self.start + interval_s

    def due(self) -> bool:
        return self.interval_s > 0 and time.monotonic() >= self._next

    def print(self, text: str) -> None:
        elapsed = time.monotonic() - self.start
        print(f"[{self.role} {elapsed:7.1f}s] {text}", file=self.stream, flush=True)
        self._next = time.monotonic() + self.interval_s

    def maybe(self, text_fn) -> None:  # type: ignore[no-untyped-def]
        """Print ``text_fn()`` when due (the text is built only then)."""
        if self.due():
            self.print(text_fn())


def save_checkpoint(path: Path | str, state: dict[str, Any]) -> Path:
    """``torch.save`` to a temporary file, then rename: a crash never leaves half a checkpoint."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(path: Path | str) -> dict[str, Any]:
    """A checkpoint written by ``save_checkpoint`` (FileNotFoundError when absent)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}")
    return torch.load(path, map_location="cpu", weights_only=False)
