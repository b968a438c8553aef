"""Link emulation on switch ports (`python -m softswitch --netem PORT:delay=5ms,loss=0.01,rate=100mbit`).

The kernels this project runs on often lack `sch_netem` (`tc qdisc add ... netem` answers
"Specified qdisc kind is unknown"), so the switch emulates the link behind a port itself, in
both directions: frames received on the port (before the pipeline) and frames sent out of it
(after the pipeline). Per direction, in this order:

1. loss: the frame is dropped with probability `loss` (its own seeded random stream);
2. rate: the frame is serialized at `rate` bit/s behind the frames before it (departure-time
   scheduling: it starts when the link is free, takes len(frame) * 8 / rate seconds); a frame
   that would wait more than `backlog` before its serialization starts, or finds `limit`
   frames queued, is tail-dropped;
3. delay: the frame is held `delay` (± uniform `jitter`) after its serialization ends.

Frames leave in the order they arrived (jitter never reorders, as netem with a rate). One
scheduler thread per emulated direction hands due frames on, so the thread that submits a
frame (a port's receive thread, or the pipeline) never waits. A direction with loss only needs
no thread: the frame goes on at once in the caller's thread.
"""

from __future__ import annotations

import logging
import random
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 1000  # frames queued per direction (tc netem's default limit)
DEFAULT_BACKLOG_S = 0.1  # longest wait for the serializer before a frame is tail-dropped

_TIME_UNITS = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "msec": 1e-3, "us": 1e-6, "usec": 1e-6}
_RATE_UNITS = {"bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
_NUM = r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_VALUE_RE = re.compile(rf"^({_NUM})([a-zA-Z%]*)$")

SYNTAX = "PORT:key=value[,key=value...] with keys delay, jitter, loss, rate, limit, backlog"
EXAMPLE = "3:delay=5ms,loss=0.01,rate=100mbit"


@dataclass(frozen=True)
class LinkParams:
    """What one emulated link does to each frame, in each direction."""

    delay_s: float = 0.0
    jitter_s: float = 0.0
    loss: float = 0.0  # probability in [0, 1)
    rate_bps: float = 0.0  # 0: no rate limit
    limit: int = DEFAULT_LIMIT
    backlog_s: float = DEFAULT_BACKLOG_S

    @property
    def needs_scheduler(self) -> bool:
        return self.delay_s > 0 or self.jitter_s > 0 or self.rate_bps > 0

    def describe(self) -> str:
        parts = []
        if self.delay_s:
            parts.append(f"delay {self.delay_s * 1e3:g}ms")
        if self.jitter_s:
            parts.append(f"jitter {self.jitter_s * 1e3:g}ms")
        if self.loss:
            parts.append(f"loss {self.loss:g}")
        if self.rate_bps:
            parts.append(f"rate {self.rate_bps / 1e6:g}mbit")
        return ", ".join(parts) or "no impairment"


class NetemSpecError(ValueError):
    """A --netem spec that cannot be parsed; the message names the spec, the key and the fix."""


def _value(spec: str, key: str, text: str) -> tuple[float, str]:
    if not text:
        raise NetemSpecError(f"bad --netem spec {spec!r}: {key} has no value (e.g. {EXAMPLE})")
    if any(c.isspace() for c in text):
        raise NetemSpecError(
            f"bad --netem spec {spec!r}: {key} value {text!r} contains a space; "
            f"write the number and its unit together, e.g. {key}={''.join(text.split())}"
        )
    m = _VALUE_RE.match(text)
    if not m:
        raise NetemSpecError(f"bad --netem spec {spec!r}: {key} value {text!r} is not a non-negative number")
    return float(m.group(1)), m.group(2).lower()


def _duration(spec: str, key: str, text: str) -> float:
    number, unit = _value(spec, key, text)
    if unit not in _TIME_UNITS:
        what = "has no unit" if not unit else f"has unknown unit {unit!r}"
        raise NetemSpecError(
            f"bad --netem spec {spec!r}: {key} value {text!r} {what}; use s, ms or us (e.g. {key}=5ms)"
        )
    return number * _TIME_UNITS[unit]


def _rate(spec: str, text: str) -> float:
    number, unit = _value(spec, "rate", text)
    if unit not in _RATE_UNITS:
        what = "has no unit" if not unit else f"has unknown unit {unit!r}"
        raise NetemSpecError(
            f"bad --netem spec {spec!r}: rate value {text!r} {what}; use bit, kbit, mbit or gbit "
            f"(bits per second, e.g. rate=100mbit)"
        )
    bps = number * _RATE_UNITS[unit]
    if bps <= 0:
        raise NetemSpecError(f"bad --netem spec {spec!r}: rate must be positive (leave it out for no limit)")
    return bps


def _loss(spec: str, text: str) -> float:
    number, unit = _value(spec, "loss", text)
    if unit == "%":
        number /= 100.0
    elif unit:
        raise NetemSpecError(
            f"bad --netem spec {spec!r}: loss value {text!r}: "
            "give a probability (loss=0.01) or a percentage (loss=1%)"
        )
    if not 0.0 <= number < 1.0:
        raise NetemSpecError(f"bad --netem spec {spec!r}: loss {text!r} must be a probability in [0, 1)")
    return number


def parse_netem_spec(spec: str) -> tuple[int, LinkParams]:
    """`PORT:delay=5ms,jitter=1ms,loss=0.01,rate=100mbit,limit=1000,backlog=100ms` -> (port, params).

    Every key is optional (`3:` alone is a transparent link); raises NetemSpecError naming the
    spec, the offending key and the accepted form.
    """
    from softswitch.ports import MAX_PORT

    if not isinstance(spec, str) or ":" not in spec:
        raise NetemSpecError(f"bad --netem spec {spec!r}: expected {SYNTAX}, e.g. {EXAMPLE}")
    num, _, rest = spec.partition(":")
    num = num.strip()
    if not num.isdigit() or int(num) > MAX_PORT:
        raise NetemSpecError(f"bad --netem spec {spec!r}: port {num!r} is not a port number 0..{MAX_PORT}")
    fields: dict[str, object] = {}
    seen: set[str] = set()
    for item in rest.split(","):
        if not item.strip():
            continue
        key, eq, text = item.partition("=")
        key, text = key.strip().lower(), text.strip()
        if not eq:
            raise NetemSpecError(f"bad --netem spec {spec!r}: {item!r} is not key=value (e.g. {EXAMPLE})")
        if key in seen:
            raise NetemSpecError(f"bad --netem spec {spec!r}: {key} is given twice")
        seen.add(key)
        if key in ("delay", "jitter", "backlog"):
            fields[f"{key}_s"] = _duration(spec, key, text)
        elif key == "loss":
            fields["loss"] = _loss(spec, text)
        elif key == "rate":
            fields["rate_bps"] = _rate(spec, text)
        elif key == "limit":
            if not text.isdigit() or int(text) < 1:
                raise NetemSpecError(
                    f"bad --netem spec {spec!r}: limit {text!r} must be a positive number of frames"
                )
            fields["limit"] = int(text)
        else:
            raise NetemSpecError(
                f"bad --netem spec {spec!r}: unknown key {key!r}; "
                "keys are delay, jitter, loss, rate, limit, backlog"
            )
    return int(num), LinkParams(**fields)  # type: ignore[arg-type]


def parse_netem_specs(specs: Iterable[str]) -> dict[int, LinkParams]:
    """Several --netem specs; a port given twice is an error."""
    out: dict[int, LinkParams] = {}
    for spec in specs:
        port, params = parse_netem_spec(spec)
        if port in out:
            raise NetemSpecError(f"bad --netem spec {spec!r}: port {port} already has a --netem spec")
        out[port] = params
    return out


class LinkDirection:
    """One direction of an emulated link: `submit(frame)` now, `deliver(frame)` when it is due.

    Counters (plain ints, statistics): `passed` frames handed on, `lost` by the loss emulation,
    `overflow` tail-dropped because the queue was full. `clock` (seconds, monotonic) schedules
    the frames; tests pass one they control.
    """

    def __init__(
        self,
        params: LinkParams,
        deliver: Callable[[bytes], None],
        rng: random.Random,
        name: str = "link",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.params = params
        self._clock = clock
        self.name = name
        self._deliver = deliver
        self._rng = rng
        self.passed = 0
        self.lost = 0
        self.overflow = 0
        self._queue: deque[tuple[float, bytes]] = deque()
        self._cv = threading.Condition(threading.Lock())
        self._next_free = 0.0  # when the serializer finishes the last queued frame
        self._last_due = 0.0  # departure time of the last queued frame (order is kept)
        self._closed = False
        self._thread: threading.Thread | None = None
        if params.needs_scheduler:
            self._thread = threading.Thread(target=self._run, name=f"netem-{name}", daemon=True)
            self._thread.start()

    def submit(self, frame: bytes) -> bool:
        """Put `frame` on the link; False when it is lost or tail-dropped. Never blocks for long."""
        p = self.params
        if p.loss and self._rng.random() < p.loss:
            self.lost += 1
            return False
        if self._thread is None:
            self.passed += 1
            self._deliver(frame)
            return True
        now = self._clock()
        with self._cv:
            if self._closed or len(self._queue) >= p.limit:
                self.overflow += 1
                return False
            due = now
            if p.rate_bps:
                start = self._next_free if self._next_free > now else now
                if start - now > p.backlog_s:
                    self.overflow += 1
                    return False
                due = self._next_free = start + len(frame) * 8.0 / p.rate_bps
            due += p.delay_s
            if p.jitter_s:
                due += self._rng.uniform(-p.jitter_s, p.jitter_s)
            if due < self._last_due:
                due = self._last_due
            self._last_due = due
            self._queue.append((due, frame))
            if len(self._queue) == 1:  # later frames are never due earlier than the head
                self._cv.notify()
        return True

    def _run(self) -> None:
        queue, cv = self._queue, self._cv
        while True:
            with cv:
                while not queue and not self._closed:
                    cv.wait(0.5)
                if self._closed:
                    return
                now = self._clock()
                wait = queue[0][0] - now
                if wait > 0:
                    cv.wait(wait)
                    continue
                batch = []
                while queue and queue[0][0] <= now:
                    batch.append(queue.popleft()[1])
            for frame in batch:
                self.passed += 1
                try:
                    self._deliver(frame)
                except Exception:  # a failing receiver must not stop the link
                    log.exception("netem %s: delivering a frame failed; frame dropped", self.name)

    def queued(self) -> int:
        return len(self._queue)

    def close(self) -> None:
        """Stop the scheduler thread; frames still queued are discarded. Idempotent."""
        with self._cv:
            self._closed = True
            self._queue.clear()
            self._cv.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)


class NetemPorts:
    """Both directions of the emulated link behind each port listed in `links`.

    `ingress[port].submit(frame)` holds a received frame and then calls `to_pipeline(port, frame)`;
    `egress[port].submit(frame)` holds an outgoing frame and then calls `to_wire(port, frame)`.
    The loss streams are seeded from `seed` per port and direction (random when None), so a
    seeded run drops the same frames whatever the thread timing.
    """

    def __init__(
        self,
        links: dict[int, LinkParams],
        to_pipeline: Callable[[int, bytes], object],
        to_wire: Callable[[int, bytes], object],
        seed: int | None = None,
    ) -> None:
        self.links = dict(links)
        self.ingress: dict[int, LinkDirection] = {}
        self.egress: dict[int, LinkDirection] = {}
        for port, params in sorted(self.links.items()):
            for direction, target, table in (
                ("in", to_pipeline, self.ingress),
                ("out", to_wire, self.egress),
            ):
                rng = random.Random(None if seed is None else f"{seed}:{port}:{direction}")
                table[port] = LinkDirection(
                    params, (lambda frame, _p=port, _t=target: _t(_p, frame)), rng, name=f"{port}-{direction}"
                )

    def line(self) -> str:
        """Counters for the switch's stats line: frames lost and tail-dropped per port and direction."""
        parts = []
        for port in sorted(self.links):
            i, o = self.ingress[port], self.egress[port]
            parts.append(f"{port}: in lost {i.lost} qdrop {i.overflow}, out lost {o.lost} qdrop {o.overflow}")
        return "netem " + "; ".join(parts)

    def close(self) -> None:
        for d in (*self.ingress.values(), *self.egress.values()):
            d.close()
