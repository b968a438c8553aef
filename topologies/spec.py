"""Topology files: load a YAML description and validate every field.

A topology file is data: switches (P4 program, target), hosts (roles), links (endpoints, rate,
delay, loss) and the scenario to run on them. :func:`load` returns a :class:`Topology` or raises
:class:`SpecError` whose lines each name the file and the field, e.g.::

    topologies/star.yaml: links[2].delay: '5 ms' is not a duration like 5ms or 50us

Unknown keys are errors as well (a typo must not be silently ignored). The schema, field by
field, is in topologies/README.md; the files next to this module are examples of every part.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from host_agents.agg_protocol import DEFAULT_VALUES_PER_PACKET, SUPPORTED_VALUES_PER_PACKET
from p4compiler.errors import not_utf8

REPO = Path(__file__).resolve().parent.parent
DEFAULT_P4 = REPO / "p4" / "innet.p4"

TARGETS = ("softswitch", "bmv2", "auto")
ROLES = ("replay_server", "learner", "actor", "worker", "controller", "redis")
KINDS = ("apex", "dataparallel", "none")
REPLAY_BACKENDS = ("switch", "host", "redis")
AGG_COMMS = ("switch", "gloo")
AGG_MODES = ("sync", "async")
MAX_HOSTS = 250  # host i is 10.0.<i+1>.1/24
MAX_SWITCHES = 100  # switch j is 10.<100+j>.0.254 (the testbed's addressing)
MAX_WORKERS = 32  # bits of the switch's worker bitmap
SWITCH_LEAVES = 1 << 14  # replay priorities the switch holds per table (control_plane.replay)

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,15}$")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(us|ms|s)$")
_RATE = re.compile(r"^(\d+(?:\.\d+)?)(bit|kbit|mbit|gbit)$")
_FLAG = re.compile(r"^[a-z][a-z0-9-]*$")
_DURATION_UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
_RATE_UNIT = {"bit": 1, "kbit": 1_000, "mbit": 1_000_000, "gbit": 1_000_000_000}


class SpecError(ValueError):
    """A topology file that cannot be used; ``errors`` holds one line per problem."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


@dataclass
class SwitchSpec:
    name: str
    index: int  # its addresses: topologies.testbed.switch_mac(index) / switch_ip(index)
    p4: Path
    target: str  # softswitch | bmv2 | auto


@dataclass
class HostSpec:
    name: str
    index: int  # its address: 10.0.<index+1>.1/24
    roles: dict[str, int]  # role -> processes of that role on this host
    args: list[str] = field(default_factory=list)  # more flags for the agents on this host

    @property
    def ip(self) -> str:
        return f"10.0.{self.index + 1}.1"


@dataclass
class LinkSpec:
    where: str  # the field path, e.g. "links[2]" (host groups expand: "links[2] (actor1)")
    a: str
    b: str
    rate_bps: int | None = None
    rate: str | None = None  # as written, for tc
    delay_s: float = 0.0
    delay: str | None = None  # as written
    loss: float = 0.0


@dataclass
class AggregationSpec:
    comm: str = "switch"  # in-switch aggregation, or the gloo ring-allreduce baseline
    mode: str = "sync"
    threshold: int | None = None  # async: contributions per chunk at the root switch
    slots: int = 32
    job: int = 1
    root: str | None = None  # the switch at the top of the aggregation tree
    # int32 values per aggregation packet: every switch's program is compiled with
    # -DAGG_VALUES_PER_PACKET=<it> and the workers get --values-per-packet <it>
    values_per_packet: int = DEFAULT_VALUES_PER_PACKET


@dataclass
class ScenarioSpec:
    kind: str = "none"
    env: str = "CartPole-v1"
    seed: int = 0
    target_return: float | None = None
    time_budget_s: float = 600.0
    replay_backend: str = "switch"
    replay_max_size: int = 16384
    replay_alpha: float = 0.6
    replay_switch: str | None = None  # which switch holds the priorities (switch backend)
    aggregation: AggregationSpec = field(default_factory=AggregationSpec)
    learner_args: list[str] = field(default_factory=list)
    actor_args: list[str] = field(default_factory=list)
    worker_args: list[str] = field(default_factory=list)
    replay_server_args: list[str] = field(default_factory=list)
    # a reference run of this scenario, for the summary of a run that misses its target:
    # updates_per_s (lo, hi), env_steps_per_s (all actors), time_to_target_s, note
    reference: dict[str, Any] = field(default_factory=dict)


@dataclass
class Topology:
    name: str
    path: Path
    description: str
    switches: dict[str, SwitchSpec]
    hosts: dict[str, HostSpec]
    links: list[LinkSpec]
    scenario: ScenarioSpec

    def hosts_with(self, role: str) -> list[HostSpec]:
        return [h for h in self.hosts.values() if role in h.roles]

    def access_switch(self, host: str) -> str:
        """The switch a host is cabled to (every host has exactly one link, to a switch)."""
        for link in self.links:
            if host in (link.a, link.b):
                return link.b if link.a == host else link.a
        raise KeyError(host)


def parse_duration(text: str) -> float:
    m = _DURATION.match(text)
    if not m:
        raise ValueError(text)
    return float(m.group(1)) * _DURATION_UNIT[m.group(2)]


def parse_rate(text: str) -> int:
    m = _RATE.match(text)
    if not m:
        raise ValueError(text)
    return int(float(m.group(1)) * _RATE_UNIT[m.group(2)])


class _Checker:
    """Collects errors, each prefixed with the file and the field path."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: list[str] = []

    def err(self, path: str, msg: str) -> None:
        self.errors.append(f"{self.source}: {path}: {msg}" if path else f"{self.source}: {msg}")

    def mapping(self, value: Any, path: str, allowed: dict[str, str], required: tuple[str, ...] = ()) -> dict:
        """``value`` must be a mapping whose keys are in ``allowed`` (key -> what it is, for the
        message); returns it (or {} after an error)."""
        if value is None:
            value = {}
        if not isinstance(value, dict):
            self.err(path, f"must be a mapping, not {type(value).__name__} {value!r}")
            return {}
        for key in value:
            if key not in allowed:
                known = ", ".join(allowed)
                self.err(_join(path, str(key)), f"unknown key (known here: {known})")
        for key in required:
            if key not in value:
                self.err(_join(path, key), f"is required ({allowed[key]})")
        return value

    def typed(self, value: Any, path: str, kind: type | tuple[type, ...], what: str) -> Any:
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            self.err(path, f"must be {what}, not {value!r}")
            return None
        if not isinstance(value, kind):
            self.err(path, f"must be {what}, not {value!r}")
            return None
        return value

    def choice(self, value: Any, path: str, choices: tuple[str, ...]) -> str | None:
        if value not in choices:
            self.err(path, f"{value!r} is not one of {', '.join(choices)}")
            return None
        return value

    def switch_name(self, value: Any, path: str, switches: Any) -> str | None:
        """``value`` must name one of ``switches``."""
        if value not in switches:
            self.err(path, f"{value!r} is not a switch of this topology")
            return None
        return value

    def number(
        self, value: Any, path: str, lo: float | None = None, hi: float | None = None, integer: bool = False
    ) -> float | int | None:
        kind: tuple[type, ...] = (int,) if integer else (int, float)
        what = "an integer" if integer else "a number"
        if self.typed(value, path, kind, what) is None:
            return None
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = f"{lo if lo is not None else '-inf'}..{hi if hi is not None else 'inf'}"
            self.err(path, f"{value!r} is outside {bounds}")
            return None
        return value

    def args(self, value: Any, path: str) -> list[str]:
        """Extra command-line flags: a mapping flag -> value (true: --flag, false: --no-flag,
        null: --flag alone) or a list of strings as they would be typed."""
        if value is None:
            return []
        if isinstance(value, list):
            out = []
            for i, item in enumerate(value):
                if isinstance(item, str | int | float) and not isinstance(item, bool):
                    out.append(str(item))
                else:
                    self.err(f"{path}[{i}]", f"must be a string, not {item!r}")
            return out
        if not isinstance(value, dict):
            self.err(path, "must be a mapping of flag: value (e.g. batch-size: 128) or a list of strings")
            return []
        out = []
        for key, v in value.items():
            p = _join(path, str(key))
            if not isinstance(key, str) or not _FLAG.match(key):
                self.err(p, "is not a flag name like batch-size (no leading dashes)")
                continue
            if v is True or v is None:
                out.append(f"--{key}")
            elif v is False:
                out.append(f"--no-{key}")
            elif isinstance(v, str | int | float):
                out += [f"--{key}", str(v)]
            else:
                self.err(p, f"must be a string, number or boolean, not {v!r}")
        return out


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last one
    silently, so a typo'd duplicate would override the first value unseen)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the base class reports it
                continue
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first given on line {first})", key_node.start_mark
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def load(path: str | Path) -> Topology:
    """Read and validate a topology file; raises SpecError (all problems, each naming its field)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SpecError([f"{path}: cannot read: {e.strerror or e}"]) from None
    except UnicodeDecodeError as e:
        raise SpecError([f"{path}: {not_utf8(e)}"]) from None
    return loads(text, path)


def loads(text: str, path: str | Path = "<string>") -> Topology:
    path = Path(path)
    c = _Checker(str(path))
    try:
        doc = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise SpecError([f"{path}: {where}not valid YAML: {getattr(e, 'problem', None) or e}"]) from None
    top = c.mapping(
        doc,
        "",
        {
            "name": "the topology's name",
            "description": "free text",
            "switches": "switch name -> {p4, target}",
            "hosts": "host name -> {roles, count}",
            "links": "list of {endpoints, rate, delay, loss}",
            "scenario": "what `run` starts",
        },
        required=("switches", "hosts", "links"),
    )
    if c.errors:
        raise SpecError(c.errors)
    name = top.get("name", re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem)[:64] or "topology")
    if not isinstance(name, str) or not re.match(r"^[A-Za-z0-9_.-]{1,64}$", name):
        c.err("name", f"{name!r} is not a name of letters, digits, '_', '.' or '-'")
        name = path.stem
    description = top.get("description", "")
    if not isinstance(description, str):
        c.err("description", "must be a string")
        description = ""

    switches = _switches(c, top.get("switches"), path)
    hosts, groups = _hosts(c, top.get("hosts"))
    links = _links(c, top.get("links"), switches, hosts, groups)
    scenario = _scenario(c, top.get("scenario"), switches)
    if not c.errors:
        _check_roles(c, hosts, switches, links, scenario)
    if c.errors:
        raise SpecError(c.errors)
    return Topology(name, path, description, switches, hosts, links, scenario)


def _switches(c: _Checker, raw: Any, path: Path) -> dict[str, SwitchSpec]:
    raw = c.mapping(raw, "switches", {}) if not isinstance(raw, dict) else raw
    if not raw:
        if not c.errors:
            c.err("switches", "needs at least one switch")
        return {}
    if len(raw) > MAX_SWITCHES:
        c.err("switches", f"{len(raw)} switches; at most {MAX_SWITCHES}")
    out = {}
    for index, (sname, sw) in enumerate(raw.items()):
        p = f"switches.{sname}"
        if not isinstance(sname, str) or not _NAME.match(sname):
            c.err(
                p, "a switch name is lower-case letters, digits and '_', starting with a letter, 16 at most"
            )
            continue
        sw = c.mapping(sw, p, {"p4": "P4-16 program (path)", "target": "softswitch, bmv2 or auto"})
        p4 = DEFAULT_P4
        if "p4" in sw:
            if c.typed(sw["p4"], f"{p}.p4", str, "a path to a P4 program") is not None:
                cand = Path(sw["p4"])
                # relative to the repository (the examples), else to the topology file
                found = [q for q in (REPO / cand, path.parent / cand, cand) if q.is_file()]
                if not found:
                    c.err(f"{p}.p4", f"{sw['p4']!r} does not exist (relative to the repository or the file)")
                else:
                    p4 = found[0].resolve()
        target = c.choice(sw.get("target", "softswitch"), f"{p}.target", TARGETS) or "softswitch"
        out[sname] = SwitchSpec(sname, index, p4, target)
    return out


def _hosts(c: _Checker, raw: Any) -> tuple[dict[str, HostSpec], dict[str, list[str]]]:
    """Hosts by name; a host with ``count: N`` becomes hosts <name>0..<name>N-1 (its group)."""
    if not isinstance(raw, dict) or not raw:
        c.err("hosts", "must be a mapping of host name -> {roles: [...], count: N}, with at least one host")
        return {}, {}
    hosts: dict[str, HostSpec] = {}
    groups: dict[str, list[str]] = {}
    for hname, h in raw.items():
        p = f"hosts.{hname}"
        if not isinstance(hname, str) or not _NAME.match(hname):
            c.err(p, "a host name is lower-case letters, digits and '_', starting with a letter, 16 at most")
            continue
        h = c.mapping(
            h,
            p,
            {
                "roles": f"list of {', '.join(ROLES)} (or {{actor: N}} for N processes)",
                "count": "hosts",
                "args": "more flags for the agents (learner, actors, workers) on this host",
            },
        )
        host_args = c.args(h.get("args"), f"{p}.args")
        count = 1
        if "count" in h and (v := c.number(h["count"], f"{p}.count", 1, MAX_HOSTS, integer=True)) is not None:
            count = int(v)
        roles: dict[str, int] = {}
        raw_roles = h.get("roles", [])
        if not isinstance(raw_roles, list):
            c.err(f"{p}.roles", f"must be a list like [actor] or [{{actor: 2}}], not {raw_roles!r}")
            raw_roles = []
        for i, r in enumerate(raw_roles):
            rp = f"{p}.roles[{i}]"
            if isinstance(r, dict) and len(r) == 1:
                ((role, n),) = r.items()
                n = c.number(n, f"{rp}.{role}", 1, 64, integer=True)
                if n is None:
                    continue
            else:
                role, n = r, 1
            if not isinstance(role, str) or role not in ROLES:
                c.err(rp, f"{role!r} is not a role: {', '.join(ROLES)}")
                continue
            if n > 1 and role not in ("actor", "worker"):
                c.err(rp, f"only actor and worker may run several processes on one host, not {role}")
                continue
            if role in roles:
                c.err(rp, f"role {role} is listed twice")
                continue
            roles[role] = n
        names = [hname] if "count" not in h else [f"{hname}{i}" for i in range(count)]
        groups[hname] = names
        for n in names:
            if n in hosts:
                c.err(p, f"host {n!r} is defined twice (count expands {hname} to {names[0]}..{names[-1]})")
                continue
            hosts[n] = HostSpec(n, len(hosts), dict(roles), list(host_args))
    if len(hosts) > MAX_HOSTS:
        c.err("hosts", f"{len(hosts)} hosts; at most {MAX_HOSTS}")
    return hosts, groups


def _links(
    c: _Checker,
    raw: Any,
    switches: dict[str, SwitchSpec],
    hosts: dict[str, HostSpec],
    groups: dict[str, list[str]],
) -> list[LinkSpec]:
    if not isinstance(raw, list) or not raw:
        c.err("links", "must be a list of {endpoints: [a, b], rate, delay, loss}")
        return []
    out: list[LinkSpec] = []
    for i, ln in enumerate(raw):
        p = f"links[{i}]"
        ln = c.mapping(
            ln,
            p,
            {
                "endpoints": "[a, b]: a host (or host group) and a switch, or two switches",
                "rate": "like 100mbit",
                "delay": "one-way, like 5ms or 50us",
                "loss": "probability per frame and direction, like 0.01 or 1%",
            },
            required=("endpoints",),
        )
        if "endpoints" not in ln:
            continue
        ends = ln["endpoints"]
        if not (isinstance(ends, list) and len(ends) == 2 and all(isinstance(e, str) for e in ends)):
            c.err(f"{p}.endpoints", f"must be a list of two names, not {ends!r}")
            continue
        bad = False
        for j, e in enumerate(ends):
            if e not in switches and e not in groups and e not in hosts:
                c.err(f"{p}.endpoints[{j}]", f"{e!r} is neither a switch nor a host")
                bad = True
        if bad:
            continue
        a, b = ends
        if a in switches and b not in switches:
            a, b = b, a  # host first
        if a == b:
            c.err(f"{p}.endpoints", f"a link from {a!r} to itself")
            continue
        if a not in switches and b not in switches:
            c.err(f"{p}.endpoints", f"{a!r} and {b!r} are both hosts; a host is cabled to a switch")
            continue
        rate_bps = delay_s = None
        loss = 0.0
        if "rate" in ln:
            try:
                rate_bps = parse_rate(str(ln["rate"]))
                if rate_bps < 8000:
                    c.err(f"{p}.rate", f"{ln['rate']!r} is below 8kbit")
            except ValueError:
                c.err(f"{p}.rate", f"{ln['rate']!r} is not a rate like 100mbit, 1gbit or 500kbit")
        if "delay" in ln:
            try:
                delay_s = parse_duration(str(ln["delay"]))
                if delay_s > 10:
                    c.err(f"{p}.delay", f"{ln['delay']!r} is longer than 10s")
            except ValueError:
                c.err(f"{p}.delay", f"{ln['delay']!r} is not a duration like 5ms or 50us")
        if "loss" in ln:
            v = ln["loss"]
            if isinstance(v, str) and v.endswith("%"):
                try:
                    loss = float(v[:-1]) / 100
                except ValueError:
                    loss = -1.0
            elif isinstance(v, int | float) and not isinstance(v, bool):
                loss = float(v)
            else:
                loss = -1.0
            if not 0.0 <= loss < 1.0:
                c.err(f"{p}.loss", f"{v!r} is not a probability in [0, 1) like 0.01 or 1%")
                loss = 0.0
        members = groups.get(a, [a]) if a not in switches else [a]
        for m in members:
            where = p if len(members) == 1 and m == a else f"{p} ({m})"
            out.append(
                LinkSpec(
                    where,
                    m,
                    b,
                    rate_bps,
                    str(ln["rate"]) if rate_bps else None,
                    delay_s or 0.0,
                    str(ln["delay"]) if delay_s else None,
                    loss,
                )  # fmt: skip
            )
    # every host has exactly one link; no two links join the same pair
    seen: dict[frozenset[str], str] = {}
    for ln in out:
        key = frozenset((ln.a, ln.b))
        if key in seen:
            c.err(ln.where, f"{ln.a} and {ln.b} are already linked by {seen[key]}")
        seen[key] = ln.where
    for h in hosts:
        mine = [ln.where for ln in out if h in (ln.a, ln.b)]
        if not mine:
            c.err("links", f"host {h} has no link (cable it to a switch)")
        elif len(mine) > 1:
            c.err(mine[1], f"host {h} has a second link ({', '.join(mine)}); hosts have one interface")
    if switches and out and not c.errors:
        _check_connected(c, switches, out)
    return out


def _check_connected(c: _Checker, switches: dict[str, SwitchSpec], links: list[LinkSpec]) -> None:
    adj: dict[str, set[str]] = {s: set() for s in switches}
    for ln in links:
        if ln.a in switches and ln.b in switches:
            adj[ln.a].add(ln.b)
            adj[ln.b].add(ln.a)
    first = next(iter(switches))
    seen, todo = {first}, [first]
    while todo:
        for n in adj[todo.pop()] - seen:
            seen.add(n)
            todo.append(n)
    if missing := [s for s in switches if s not in seen]:
        c.err("links", f"switches {', '.join(missing)} are not connected to {first}")


def _scenario(c: _Checker, raw: Any, switches: dict[str, SwitchSpec]) -> ScenarioSpec:
    fields: dict[str, str] = {
        "kind": f"{', '.join(KINDS)}",
        "env": "Gymnasium id",
        "seed": "integer",
        "target_return": "number or null",
        "time_budget_s": "seconds",
        "replay_backend": ", ".join(REPLAY_BACKENDS),
        "replay_max_size": "integer",
        "replay_alpha": "number",
        "replay_switch": "switch name",
        "aggregation": "{comm, mode, threshold, slots, job, root, values_per_packet}",
        "learner_args": "flags",
        "actor_args": "flags",
        "worker_args": "flags",
        "replay_server_args": "flags",
        "reference": "{updates_per_s, env_steps_per_s, time_to_target_s, note} of a reference run",
    }
    raw = c.mapping(raw, "scenario", fields)
    s = ScenarioSpec()
    p = "scenario"
    if "kind" in raw:
        s.kind = c.choice(raw["kind"], f"{p}.kind", KINDS) or s.kind
    if "env" in raw and c.typed(raw["env"], f"{p}.env", str, "a Gymnasium id like CartPole-v1"):
        s.env = raw["env"]
    if "seed" in raw and (v := c.number(raw["seed"], f"{p}.seed", 0, 2**31 - 1, integer=True)) is not None:
        s.seed = int(v)
    if raw.get("target_return") is not None:
        v = c.number(raw["target_return"], f"{p}.target_return")
        s.target_return = None if v is None else float(v)
    if (
        "time_budget_s" in raw
        and (v := c.number(raw["time_budget_s"], f"{p}.time_budget_s", 1, 7 * 86400)) is not None
    ):
        s.time_budget_s = float(v)
    if "replay_backend" in raw:
        s.replay_backend = c.choice(raw["replay_backend"], f"{p}.replay_backend", REPLAY_BACKENDS) or "switch"
    if "replay_max_size" in raw:
        v = c.number(raw["replay_max_size"], f"{p}.replay_max_size", 1, 10**8, integer=True)
        if v is not None:
            s.replay_max_size = int(v)
    if s.replay_backend == "switch" and s.replay_max_size > SWITCH_LEAVES:
        c.err(
            f"{p}.replay_max_size",
            f"{s.replay_max_size} is more than the {SWITCH_LEAVES} priorities a switch tree holds "
            "(use replay_backend: host for a larger table)",
        )
    if "replay_alpha" in raw and (v := c.number(raw["replay_alpha"], f"{p}.replay_alpha", 0, 4)) is not None:
        s.replay_alpha = float(v)
    if raw.get("replay_switch") is not None:
        if (name := c.switch_name(raw["replay_switch"], f"{p}.replay_switch", switches)) is not None:
            s.replay_switch = name
    s.aggregation = _aggregation(c, raw.get("aggregation"), switches)
    for key in ("learner_args", "actor_args", "worker_args", "replay_server_args"):
        setattr(s, key, c.args(raw.get(key), f"{p}.{key}"))
    if "--values-per-packet" in s.worker_args:
        c.err(
            f"{p}.worker_args",
            "--values-per-packet must agree with the switches' program: set "
            "scenario.aggregation.values_per_packet instead (it compiles the switches and sets the workers)",
        )
    s.reference = _reference(c, raw.get("reference"))
    return s


def _reference(c: _Checker, raw: Any) -> dict[str, Any]:
    p = "scenario.reference"
    raw = c.mapping(
        raw,
        p,
        {
            "updates_per_s": "learner updates per second: a number or [low, high]",
            "env_steps_per_s": "env steps per second of all actors together",
            "time_to_target_s": "seconds to the target return",
            "note": "where the numbers come from",
        },
    )
    out: dict[str, Any] = {}
    if "updates_per_s" in raw:
        v = raw["updates_per_s"]
        pair = v if isinstance(v, list) else [v, v]
        if len(pair) != 2:
            c.err(f"{p}.updates_per_s", f"must be a number or [low, high], not {v!r}")
        else:
            nums = [c.number(x, f"{p}.updates_per_s", 0) for x in pair]
            if None not in nums:
                out["updates_per_s"] = (float(nums[0]), float(nums[1]))  # type: ignore[arg-type]
    for key in ("env_steps_per_s", "time_to_target_s"):
        if key in raw and (v := c.number(raw[key], f"{p}.{key}", 0)) is not None:
            out[key] = float(v)
    if "note" in raw and c.typed(raw["note"], f"{p}.note", str, "a string") is not None:
        out["note"] = raw["note"]
    return out


def _aggregation(c: _Checker, raw: Any, switches: dict[str, SwitchSpec]) -> AggregationSpec:
    p = "scenario.aggregation"
    raw = c.mapping(
        raw,
        p,
        {
            "comm": ", ".join(AGG_COMMS),
            "mode": ", ".join(AGG_MODES),
            "threshold": "async contributions",
            "slots": "integer",
            "job": "integer",
            "root": "switch name",
            "values_per_packet": "32, 64 or 256 (the switches' AGG_VALUES_PER_PACKET)",
        },
    )
    a = AggregationSpec()
    if "comm" in raw:
        a.comm = c.choice(raw["comm"], f"{p}.comm", AGG_COMMS) or a.comm
    if "mode" in raw:
        a.mode = c.choice(raw["mode"], f"{p}.mode", AGG_MODES) or a.mode
    if raw.get("threshold") is not None:
        v = c.number(raw["threshold"], f"{p}.threshold", 1, MAX_WORKERS, integer=True)
        a.threshold = None if v is None else int(v)
    if "slots" in raw and (v := c.number(raw["slots"], f"{p}.slots", 1, 1024, integer=True)) is not None:
        a.slots = int(v)
    if "job" in raw and (v := c.number(raw["job"], f"{p}.job", 0, 255, integer=True)) is not None:
        a.job = int(v)
    if raw.get("root") is not None:
        if (name := c.switch_name(raw["root"], f"{p}.root", switches)) is not None:
            a.root = name
    if "values_per_packet" in raw:
        v = c.typed(raw["values_per_packet"], f"{p}.values_per_packet", int, "an integer")
        if v is not None and v not in SUPPORTED_VALUES_PER_PACKET:
            c.err(
                f"{p}.values_per_packet",
                f"{v} is not one of {', '.join(map(str, SUPPORTED_VALUES_PER_PACKET))} (the widths "
                "p4/innet.p4 can be compiled with; 64, the default, fits a Tofino pipeline, 256 is for "
                "software switches: docs/deploy.md)",
            )
        elif v is not None:
            a.values_per_packet = v
    return a


def _check_roles(
    c: _Checker,
    hosts: dict[str, HostSpec],
    switches: dict[str, SwitchSpec],
    links: list[LinkSpec],
    s: ScenarioSpec,
) -> None:
    """What the scenario needs of the hosts' roles."""

    def with_role(role: str) -> list[str]:
        return [h.name for h in hosts.values() if role in h.roles]

    def count(role: str) -> int:
        return sum(h.roles.get(role, 0) for h in hosts.values())

    for role in ("replay_server", "learner", "controller", "redis"):
        if len(with_role(role)) > 1:
            c.err(
                "hosts",
                f"role {role} is on {len(with_role(role))} hosts ({', '.join(with_role(role))}); one at most",
            )
    need: Callable[[str, str], None] = lambda role, why: c.err(  # noqa: E731
        "hosts", f"scenario.kind {s.kind} needs a host with role {role} ({why})"
    )
    if s.kind == "apex":
        if count("learner") != 1:
            need("learner", "exactly one")
        if count("actor") < 1:
            need("actor", "one or more")
        if s.replay_backend in ("switch", "host") and count("replay_server") != 1:
            need("replay_server", f"replay_backend {s.replay_backend} keeps the items on the replay server")
        if s.replay_backend == "redis" and count("redis") != 1:
            need("redis", "replay_backend redis")
    elif s.kind == "dataparallel":
        n = count("worker")
        if n < 1:
            need("worker", "one or more")
        elif n > MAX_WORKERS:
            c.err("hosts", f"{n} workers; a switch job has at most {MAX_WORKERS}")
        a = s.aggregation
        if n + 2 > a.values_per_packet:
            c.err(
                "scenario.aggregation.values_per_packet",
                f"{n} workers need at least {n + 2} values per packet (the workers' control chunk "
                "holds a flag per worker and two more)",
            )
        if a.mode == "async":
            if a.comm != "switch":
                c.err("scenario.aggregation.mode", "async aggregation needs comm: switch")
            if a.threshold is None or not 1 <= a.threshold < max(n, 2):
                c.err("scenario.aggregation.threshold", f"async needs a threshold in 1..{max(n - 1, 1)}")
        worker_switches = {_access(links, h) for h in with_role("worker")}
        if a.comm == "switch" and len(worker_switches) > 1 and a.root is None:
            c.err(
                "scenario.aggregation.root",
                f"workers hang off several switches ({', '.join(sorted(worker_switches))}): "
                "name the switch at the top of the aggregation tree",
            )
        if a.mode == "async" and len(worker_switches) > 1:
            # the threshold is applied at the root only; a child switch forwards its partial sum
            # only when all its own members contributed, which asynchronous workers never promise
            c.err(
                "scenario.aggregation.mode",
                f"async aggregation needs every worker on one switch; these hang off "
                f"{', '.join(sorted(worker_switches))} (use mode: sync for hierarchical aggregation)",
            )
    if s.kind == "apex" and s.replay_backend == "switch" and s.replay_switch is not None:
        servers = with_role("replay_server")
        if len(servers) == 1:
            hops = switch_next_hops(list(switches), links)
            dst = _access(links, servers[0])
            for h in with_role("learner") + with_role("actor"):
                path = switch_path(hops, _access(links, h), dst)
                if s.replay_switch not in path:
                    c.err(
                        "scenario.replay_switch",
                        f"{s.replay_switch} is not on the path from {h} to the replay server "
                        f"{servers[0]} ({' -> '.join(path)}); the switch holding the priorities must "
                        f"see every actor's and the learner's replay packets (e.g. {dst}, the server's "
                        "own switch)",
                    )


def switch_next_hops(switches: list[str], links: list[LinkSpec]) -> dict[str, dict[str, str]]:
    """For each switch, the neighbour switch on a shortest path toward every other switch (BFS
    in link order: the launcher routes along these, so the spec's path checks match the build)."""
    adj: dict[str, list[str]] = {s: [] for s in switches}
    for ln in links:
        if ln.a in adj and ln.b in adj:
            adj[ln.a].append(ln.b)
            adj[ln.b].append(ln.a)
    hops: dict[str, dict[str, str]] = {}
    for src in switches:
        first: dict[str, str] = {}
        todo = [src]
        seen = {src}
        while todo:
            cur = todo.pop(0)
            for nb in adj[cur]:
                if nb not in seen:
                    seen.add(nb)
                    first[nb] = nb if cur == src else first[cur]
                    todo.append(nb)
        hops[src] = first
    return hops


def switch_path(hops: dict[str, dict[str, str]], src: str, dst: str) -> list[str]:
    """The switches a packet crosses from switch ``src`` to switch ``dst``, both included."""
    path = [src]
    while path[-1] != dst:
        path.append(hops[path[-1]][dst])
    return path


def _access(links: list[LinkSpec], host: str) -> str:
    for ln in links:
        if host in (ln.a, ln.b):
            return ln.b if ln.a == host else ln.a
    raise KeyError(host)
