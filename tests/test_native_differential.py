"""Differential test of the two switch backends: the same frames, random and mutated (hypothesis),
with the same random table entries, through p4/innet.p4 and p4/examples/basic_router.p4 on the
Python backend (the reference) and the native one (C). Output frames and ports, the outcome of
every control call, and register/counter state must be identical.

Each program's pair of switches lives for the whole test (state carries over between
examples: both see the same sequence, so they must stay equal). innet.p4 starts from the
control-plane setup of its STF scenarios (jobs, routes, groups, replay tables) so that frames
reach the aggregation and replay logic, not only the forwarding tables.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4compiler.python_backend import compile_file
from softswitch import api, stf
from softswitch.api import SwitchError
from softswitch.native_switch import NativeSwitch
from softswitch.switch import Switch

pytestmark = pytest.mark.stf

ROOT = Path(__file__).resolve().parent.parent
INNET = ROOT / "p4" / "innet.p4"
ROUTER = ROOT / "p4" / "examples" / "basic_router.p4"
INNET_STF = sorted((ROOT / "tests" / "p4" / "innet").glob("*.stf"))
SAMPLED_CELLS = 48  # register/counter cells compared per array and example (plus the first 16)


def _setup_and_templates(paths: list[Path]) -> tuple[list[stf.StfCommand], list[tuple[int, bytes]]]:
    setup: list[stf.StfCommand] = []
    frames: list[tuple[int, bytes]] = []
    for p in paths:
        for c in stf.parse_stf(p.read_text(), str(p)):
            if isinstance(c, stf.PacketCommand):
                frames.append((c.port, bytes(c.data)))
            elif not isinstance(c, (stf.ExpectCommand, stf.CheckCounterCommand)):
                setup.append(c)
    return setup, frames


def _router_templates() -> list[tuple[int, bytes]]:
    def ipv4(dst: bytes, ttl: int) -> bytes:
        hdr = bytearray(bytes.fromhex("450000280001000040110000") + bytes([10, 0, 1, 1]) + dst)
        hdr[8] = ttl
        s = sum(int.from_bytes(hdr[i:i + 2], "big") for i in range(0, 20, 2))
        s = (s & 0xFFFF) + (s >> 16)
        hdr[10:12] = (~s & 0xFFFF).to_bytes(2, "big")
        return bytes.fromhex("0200000000010200000000020800") + bytes(hdr) + bytes(20)

    arp = bytes.fromhex("ffffffffffff0200000000030806") + bytes(28)
    return [(1, ipv4(bytes([10, 0, 2, 2]), 64)), (2, ipv4(bytes([10, 0, 1, 7]), 1)),
            (1, ipv4(bytes([192, 168, 3, 4]), 9)), (3, arp)]


class Pair:
    """The same program on both backends, driven in lockstep."""

    def __init__(self, path: Path, setup: list[stf.StfCommand], templates: list[tuple[int, bytes]],
                 sequence: list[tuple[int, bytes]]):
        program = compile_file(str(path))
        self.ref = Switch(program, seed=7)
        self.nat = NativeSwitch(program, seed=7)
        self.info = program.info
        self.templates = templates  # frames to mutate (every scenario's)
        self.sequence = sequence  # the scenario's own frames, in order: drives the protocol
        self.ports = sorted({p for p, _ in templates} | {1, 2, 3})
        for sw in (self.ref, self.nat):
            stf.run_stf_commands(sw, setup)

    def both(self, method: str, *args: object) -> object:
        """Call one control method on both; they must agree on the result or the error."""
        outcome = []
        for sw in (self.ref, self.nat):
            try:
                outcome.append(("ok", getattr(sw, method)(*args)))
            except SwitchError as e:
                outcome.append(("error", type(e).__name__))
        assert outcome[0] == outcome[1], f"{method}{args}: python {outcome[0]} vs native {outcome[1]}"
        return outcome[0][1]

    def compare_state(self, rng: random.Random) -> None:
        for r in self.info.registers:
            cells = set(range(min(16, r.size))) | {rng.randrange(r.size) for _ in range(SAMPLED_CELLS)}
            for i in sorted(cells):
                assert self.ref.register_read(r.name, i) == self.nat.register_read(r.name, i), (r.name, i)
        for c in self.info.counters:
            cells = set(range(min(16, c.size))) | {rng.randrange(c.size) for _ in range(SAMPLED_CELLS)}
            for i in sorted(cells):
                assert self.ref.counter_read(c.name, i) == self.nat.counter_read(c.name, i), (c.name, i)
        for t in self.info.tables:
            if t.direct_counter is None:
                continue
            for e in self.ref.read_entries(t.name):
                assert self.ref.read_direct_counter(e) == self.nat.read_direct_counter(e), t.name


def random_entry(info_table: object, rng: random.Random) -> api.TableEntry:
    """An entry of any match kind with random keys, a random allowed action and random args."""
    t = info_table
    match: dict[str, api.Match] = {}
    for f in t.match_fields:  # type: ignore[attr-defined]
        w = f.bitwidth
        v = rng.getrandbits(w)
        if f.match_type == "exact":
            match[f.name] = api.Exact(v)
        elif f.match_type == "lpm":
            plen = rng.randint(0, w)
            mask = ((1 << w) - 1) ^ ((1 << (w - plen)) - 1)
            match[f.name] = api.Lpm(v & mask, plen)
        elif f.match_type == "ternary":
            m = rng.choice([0, (1 << w) - 1, rng.getrandbits(w)])
            match[f.name] = api.Ternary(v & m, m)
        elif f.match_type == "range":
            lo, hi = sorted((v, rng.getrandbits(w)))
            match[f.name] = api.Range(lo, hi)
        elif f.match_type == "optional":
            match[f.name] = api.Optional_(v)
    refs = [r for r in t.action_refs if r.scope != "DEFAULT_ONLY"] or t.action_refs  # type: ignore[attr-defined]
    return api.TableEntry(t.name, match, rng.choice(refs).name, {}, rng.randint(1, 1000))  # type: ignore[attr-defined]


def fill_args(entry: api.TableEntry, info: object, rng: random.Random) -> api.TableEntry:
    action = next(a for a in info.actions if a.name == entry.action)  # type: ignore[attr-defined]
    entry.args = {p.name: rng.getrandbits(p.bitwidth) for p in action.params}
    return entry


def mutate(frame: bytes, rng: random.Random) -> bytes:
    kind = rng.randrange(5)
    b = bytearray(frame)
    if kind == 0:
        return bytes(b)
    if kind == 1 and b:  # flip a few bytes
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.getrandbits(8)
        return bytes(b)
    if kind == 2:  # truncate
        return bytes(b[: rng.randint(0, len(b))])
    if kind == 3:  # extend with garbage
        return bytes(b) + rng.randbytes(rng.randint(1, 64))
    return rng.randbytes(rng.randint(0, 200))  # pure garbage


_PAIRS: dict[str, Pair] = {}


# innet.p4 scenarios whose control-plane setup a pair starts from (frames: every scenario's)
SCENARIOS = ["two_jobs", "async_threshold", "hierarchical_child", "replay_update_sample", "forwarding"]


def pair(name: str) -> Pair:
    if name not in _PAIRS:
        if name == "router":
            _PAIRS[name] = Pair(ROUTER, [], _router_templates(), _router_templates())
        else:
            setup, own = _setup_and_templates([p for p in INNET_STF if p.stem == name])
            _, templates = _setup_and_templates(INNET_STF)
            _PAIRS[name] = Pair(INNET, setup, templates, own)
    return _PAIRS[name]


@pytest.mark.parametrize("program", SCENARIOS + ["router"])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n_frames=st.integers(1, 40), n_entries=st.integers(0, 6))
def test_backends_agree(program: str, seed: int, n_frames: int, n_entries: int) -> None:
    p = pair(program)
    rng = random.Random(seed)
    for _ in range(n_entries):
        t = rng.choice(p.info.tables)
        if t.is_const_table:
            continue
        p.both("insert_entry", fill_args(random_entry(t, rng), p.info, rng))
    frames: list[tuple[int, bytes]] = []
    for port, frame in p.sequence:  # the scenario in order, with mutated and garbage frames between
        frames.append((port, frame))
        for _ in range(rng.randint(0, 2) if rng.random() < n_frames / 40 else 0):
            t_port, tmpl = rng.choice(p.templates)
            frames.append((t_port if rng.random() < 0.8 else rng.choice(p.ports), mutate(tmpl, rng)))
    for in_port, frame in frames:
        ref = p.ref.process_packet(in_port, frame)
        nat = p.nat.process_packet(in_port, frame)
        assert ref == nat, f"frame {frame.hex()} on port {in_port}: python {ref} vs native {nat}"
    p.compare_state(rng)
