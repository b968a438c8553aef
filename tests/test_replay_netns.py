"""Prioritized replay across a real network: hosts in namespaces on the software switch running
p4/innet.p4 (topologies.testbed.star), one host serving, two acting, one learning.

The same scenario runs for every path a ReplayClient can take (parametrized):
- ``switch``: the C replay server holds the items, the switch's register sum-tree the
  priorities; SAMPLE and UPDATE_PRIORITY are served by the switch's data plane;
- ``host``: the C replay server (kernel sockets) does everything; the switch only routes;
- ``redis``: a real redis-server in the server's namespace, the sum-tree in the learner.
Scenario: two actors push 8 items each (3 KB: several datagrams each) with priorities 1..16; the
learner's sampled items follow those priorities (chi-square, fixed seeds); after it raises one
item's priority that item dominates; after 32 newer items evict the first 16 (FIFO, max_size
32) the learner's updates of the old keys are ignored and change nothing.
The DPDK path runs the same client code against the server's DPDK I/O
(tests/test_replay_dpdk_netns.py).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from topologies.netns import netns_unavailable
from topologies.replay_server import SERVER_BIN as SERVER
from topologies.replay_server import ReplayServerProcess
from topologies.testbed import star

pytestmark = [pytest.mark.netns, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
MAX_SIZE = 32
ITEM_BYTES = 3000

# Runs inside a host's namespace: one role of the scenario, JSON on stdout.
ROLE = r"""
import json, sys
import numpy as np
from host_agents.replay_client import ReplayConfig, make_replay_client

role, cfg = sys.argv[1], json.loads(sys.argv[2])
params = cfg.pop("params")
client = make_replay_client(ReplayConfig(**cfg))
fresh_cfg = dict(cfg)

def item(tag):
    return tag.encode().ljust(params["item_bytes"], b".")

def counts(batches, size):
    seen = {}
    for _ in range(batches):
        b = client.sample(size)
        for k, it, p in zip(b.keys.tolist(), b.items, b.probabilities.tolist()):
            tag = it.rstrip(b".").decode()
            e = seen.setdefault(tag, {"n": 0, "key": k, "p": p})
            e["n"] += 1
    return seen

with client:
    if role == "actor":
        a = params["actor"]
        keys = client.insert([item(f"a{a}i{i}") for i in range(8)], [a * 8 + i + 1.0 for i in range(8)])
        print(json.dumps({"keys": keys.tolist()}))
    else:
        out = {"before": counts(params["batches"], params["batch"])}
        keys = {tag: e["key"] for tag, e in out["before"].items()}
        hot = params["hot"]
        new_p = [100.0 if t == hot else 1.0 for t in keys]
        out["update"] = client.update_priorities([keys[t] for t in keys], new_p)
        out["after"] = counts(params["batches"] // 2, params["batch"])
        # 32 newer items evict all 16 old ones (FIFO); updates of the old keys are ignored
        client.insert([item(f"new{i}") for i in range(params["max_size"])], [1.0] * params["max_size"])
        # from a client that has not seen the new keys, so that the server (or the switch) must
        # tell the old keys apart (the Redis learner's replay is its own: the same client)
        stale_keys = [keys[t] for t in keys]
        if cfg["backend"] == "redis":
            out["stale_update"] = client.update_priorities(stale_keys, [1000.0] * len(keys))
        else:
            with make_replay_client(ReplayConfig(**fresh_cfg)) as fresh:
                out["stale_update"] = fresh.update_priorities(stale_keys, [1000.0] * len(keys))
        out["last"] = counts(4, params["batch"])
        print(json.dumps(out))
"""


def chi_square(observed: list[int], probs: list[float]) -> float:
    n = sum(observed)
    return sum((o - n * p) ** 2 / (n * p) for o, p in zip(observed, probs, strict=True))


def start_server(tb, switch_table: bool) -> ReplayServerProcess:
    host = tb.workers[0].host
    mode = "switch" if switch_table else "host"
    table = f"t:max_size={MAX_SIZE},alpha=1.0,priorities={mode}"
    return ReplayServerProcess(["--bind", host.ip, "--seed", "7", "--table", table], ns=host.ns)


@contextlib.contextmanager
def redis_in_server_ns(tb) -> Iterator[None]:
    """A real redis-server in host 0's namespace (RedisServer cannot: it would run in this one)."""
    ns, ip = tb.workers[0].host.ns, tb.workers[0].ip
    # protected mode would refuse clients from other addresses; this one lives in a private namespace
    argv = ["redis-server", "--bind", ip, "--port", "6379", "--protected-mode", "no", "--save", ""]
    proc = ns.popen([*argv, "--appendonly", "no"])
    try:
        ping = f"import redis; redis.Redis(host='{ip}', port=6379, socket_timeout=1).ping()"
        for _ in range(50):
            if ns.python(ping, check=False).returncode == 0:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("redis-server did not answer in the server namespace")
        yield
    finally:
        proc.kill()
        proc.communicate(timeout=10)


def run_role(worker, role: str, cfg: dict) -> subprocess.Popen[str]:
    return worker.host.ns.popen([sys.executable, "-c", ROLE, role, json.dumps(cfg)], cwd=REPO)


def finish(proc: subprocess.Popen[str], what: str) -> dict:
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, f"{what} failed:\n{err[-3000:]}"
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("path", ["switch", "host", "redis"])
def test_replay_over_the_network(path: str) -> None:
    reason = netns_unavailable()
    if reason:
        pytest.skip(reason)
    if path != "redis" and not SERVER.exists():
        pytest.skip(f"{SERVER} is not built (make -C dpdk_fallback)")
    if path == "redis" and subprocess.run(["which", "redis-server"], capture_output=True).returncode:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    with star(4) as tb:
        server_ip = tb.workers[0].ip
        service = redis_in_server_ns(tb) if path == "redis" else start_server(tb, path == "switch")
        with service:
            if path == "switch":
                tb.root.controller.replay.install_table(0, MAX_SIZE)
            base = {
                "backend": path,
                "server_ip": server_ip,
                "max_size": MAX_SIZE,
                "alpha": 1.0,
                "timeout_s": 0.5,
                "redis_url": f"redis://{server_ip}:6379/0",
            }
            common = {"item_bytes": ITEM_BYTES, "max_size": MAX_SIZE}
            actors = [
                run_role(tb.workers[1 + a], "actor", {**base, "seed": a, "params": {**common, "actor": a}})
                for a in range(2)
            ]
            pushed = [finish(p, f"actor {a}") for a, p in enumerate(actors)]
            learner_params = {**common, "batches": 40, "batch": 50, "hot": "a1i2"}
            learner = run_role(tb.workers[3], "learner", {**base, "seed": 11, "params": learner_params})
            out = finish(learner, "learner")
            if path == "switch":
                shown = tb.root.controller.replay.counters(0)
                rejected = tb.root.controller.replay.rejected()

    # every pushed key is distinct, and the sampled items are the pushed ones
    keys = pushed[0]["keys"] + pushed[1]["keys"]
    assert len(set(keys)) == 16
    before = out["before"]
    tags = [f"a{a}i{i}" for a in range(2) for i in range(8)]
    assert set(before) <= set(tags)
    prio = {f"a{a}i{i}": a * 8 + i + 1.0 for a in range(2) for i in range(8)}
    total = sum(prio.values())
    # probabilities reported with each item are p / sum(p) (alpha 1)
    for tag, e in before.items():
        assert e["p"] == pytest.approx(prio[tag] / total, rel=1e-3), tag
    observed = [before.get(t, {"n": 0})["n"] for t in tags]
    # df 15: P(chi2 > 37.7) = 0.001; a uniform sampler would score several hundred here
    stat = chi_square(observed, [prio[t] / total for t in tags])
    assert stat < 37.7, f"sampled counts {observed} do not follow priorities 1..16 (chi2 {stat:.1f})"
    assert chi_square(observed, [1 / 16] * 16) > 37.7  # the check can tell priorities from uniform

    # one key raised to 100, the others set to 1: it is drawn ~100/115 of the time
    assert out["update"] == [16, 0]
    after = out["after"]
    n_after = sum(e["n"] for e in after.values())
    hot_share = after["a1i2"]["n"] / n_after
    assert 0.8 < hot_share < 0.93, f"raised item drawn {hot_share:.2f} of the time, expected ~0.87"
    assert after["a1i2"]["p"] == pytest.approx(100 / 115, rel=1e-3)

    # after eviction the old keys' updates are ignored: only new items are drawn, all with p 1/32
    assert out["stale_update"] == [0, 16]
    last = out["last"]
    assert all(t.startswith("new") for t in last), sorted(last)
    assert all(e["p"] == pytest.approx(1 / MAX_SIZE, rel=1e-3) for e in last.values())
    if path == "switch":
        # the switch served every SAMPLE and UPDATE of the learner and the actors' inserts (and
        # the resends of those whose answer was late)
        assert shown["samples"] >= 40 * 50 + 20 * 50 + 4 * 50
        assert shown["updates"] >= 16 + 16 + MAX_SIZE
        # the stale updates reached the switch, which refused them by their keys
        assert rejected["key_mismatch"] >= 16


# Runs inside a host's namespace: the background pipeline of the agents (host_agents.replay_pipeline)
PIPELINE_ROLE = r"""
import json, sys
import numpy as np
from host_agents.replay_client import ReplayConfig, make_replay_client
from host_agents.replay_pipeline import BackgroundReplay

role, cfg = sys.argv[1], json.loads(sys.argv[2])
params = cfg.pop("params")
io = BackgroundReplay(make_replay_client(ReplayConfig(**cfg)), max_pending=2)
if role == "actor":  # as host_agents.actor does: queue pushes, never wait unless the queue is full
    for i in range(params["pushes"]):
        n = params["per_push"]
        io.insert([b"%d.%d" % (i, j) + b"." * 600 for j in range(n)], [1.0] * n)
    io.close()  # drained shutdown: returns when every push is stored
    print(json.dumps(io.stats))
else:  # as host_agents.learner does: one batch prefetched, updates not waited for
    sampled = []
    ahead = io.sample(params["batch"])
    for i in range(params["iterations"]):
        batch, ahead = ahead.result(), io.sample(params["batch"])
        sampled.append(sorted(set(batch.keys.tolist())))
        io.update_priorities(batch.keys, np.full(batch.keys.size, float(i + 2)))
    ahead.result()
    io.drain()
    check = io.sync.sample(params["check_batch"])
    probs = {}
    for k, p in zip(check.keys.tolist(), check.probabilities.tolist()):
        probs[str(k)] = p
    io.close()
    print(json.dumps({"sampled": sampled, "probs": probs, "stats": io.stats}))
"""


@pytest.mark.parametrize("path", ["switch", "host"])
def test_background_pipeline_over_a_lossy_network(path: str) -> None:
    """The agents' background replay calls across a switch that drops 5% of packets: every queued
    push is stored exactly once (the server's counters), and the learner's priority updates,
    sent without waiting while the next batch is already being drawn, are all applied, each
    after the sample it refers to and in order: every item ends with the priority of the last
    batch it was sampled in (read back from the reported sampling probabilities)."""
    reason = netns_unavailable()
    if reason:
        pytest.skip(reason)
    if not SERVER.exists():
        pytest.skip(f"{SERVER} is not built (make -C dpdk_fallback)")
    pushes, per_push, iterations = 20, 5, 30
    with star(3, loss_rate=0.05, loss_seed=5) as tb:
        host = tb.workers[0].host
        table = f"t:max_size=128,alpha=1.0,priorities={path}"
        with ReplayServerProcess(["--bind", host.ip, "--seed", "7", "--table", table], ns=host.ns):
            if path == "switch":
                tb.root.controller.replay.install_table(0, 128)
            base = {"backend": path, "server_ip": host.ip, "max_size": 128, "alpha": 1.0,
                    "timeout_s": 0.1, "max_tries": 20}  # fmt: skip
            actor = tb.workers[1].host.ns.popen(
                [sys.executable, "-c", PIPELINE_ROLE, "actor",
                 json.dumps({**base, "seed": 1, "params": {"pushes": pushes, "per_push": per_push}})],
                cwd=REPO,
            )  # fmt: skip
            pushed = finish(actor, "actor")
            params = {"iterations": iterations, "batch": 16, "check_batch": 2000}
            learner_cfg = json.dumps({**base, "seed": 2, "params": params})
            learner = tb.workers[2].host.ns.popen(
                [sys.executable, "-c", PIPELINE_ROLE, "learner", learner_cfg], cwd=REPO
            )
            out = finish(learner, "learner")
            info = json.loads(host.ns.python(
                "import json; from host_agents.replay_client import HostReplayClient, ReplayConfig; "
                f"print(json.dumps(HostReplayClient(ReplayConfig(**{base!r})).info()))"
            ).stdout)  # fmt: skip
    assert pushed["items_inserted"] == pushes * per_push
    counters, table = info["counters"], info["tables"][0]
    assert counters["pushes"] == pushes and table["inserts"] == pushes * per_push  # each push once
    # every key of every batch accounted for (applied; none evicted in a table of 128)
    assert out["stats"]["updates_applied"] == iterations * 16 and out["stats"]["updates_ignored"] == 0
    if path == "host":
        assert counters["updates"] == iterations  # each update executed once despite the losses
    # the priority each item must end with: that of the last batch it was in (1.0 if never sampled)
    final = {}
    for i, keys in enumerate(out["sampled"]):
        for k in keys:
            final[k] = float(i + 2)
    total = sum(final.get(k, 1.0) for k in range(pushes * per_push))
    assert out["probs"], "the check sample came back empty"
    for k, p in out["probs"].items():
        assert p == pytest.approx(final.get(int(k), 1.0) / total, rel=2e-3), k
