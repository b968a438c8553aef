"""host_agents.replay_client: HostReplayClient against the real C server
(dpdk_fallback/build/replay_server) and against a scripted Python server that loses datagrams
on purpose (resends, RESEND, NOT_CACHED); SwitchReplayClient's datagrams (fixed-point
priorities, leaf indexes, stratified draws) and a run against a Python model of the switch;
RedisReplayClient through the same API; the config and factory."""

from __future__ import annotations

import contextlib
import errno
import math
import os
import select
import socket
import struct
import threading
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from host_agents import replay_protocol as rp
from host_agents.netutil import free_port
from host_agents.replay_client import (
    HostReplayClient,
    RedisReplayClient,
    ReplayConfig,
    ReplayError,
    ReplayTimeout,
    SwitchReplayClient,
    make_replay_client,
    stratified_draws,
    switch_priorities,
)
from host_agents.replay_protocol import (
    BATCH_DTYPE,
    ENTRY_DTYPE,
    HEADER_BYTES,
    EntryResult,
    Flag,
    Header,
    Op,
    ProtocolError,
    Reassembler,
    SampledItem,
    Status,
    decode_push_leaves_request,
    decode_push_request,
    decode_resend,
    decode_sample_request,
    decode_set_params,
    decode_update_request,
    encode_error,
    encode_get_params_reply,
    encode_info_reply,
    encode_push_reply,
    encode_sample_reply,
    encode_set_params_reply,
    encode_update_reply,
    fragment,
)
from host_agents.sum_tree import PrioritizedReplay, SumTree
from topologies.replay_server import SERVER_BIN, ReplayServerProcess

CHI2_999 = {3: 16.27, 4: 18.47}


def chi_square(counts: np.ndarray, probabilities: np.ndarray) -> float:
    expected = counts.sum() * probabilities
    return float(((counts - expected) ** 2 / expected).sum())


# --- a scripted server (and switch model) in Python ------------------------------------------


class ScriptedServer:
    """A replay server after docs/replay_protocol.md in a thread, whose losses a test scripts:
    ``drop_requests`` complete requests are dropped before execution, ``drop_reply_frags`` reply
    fragment indexes are left out of each reply's first sending, ``forget_replies`` makes the
    reply cache forget everything (RESEND then gets NOT_CACHED). With ``switch=True`` it also
    plays the switch: UPDATE_PRIORITY datagrams set fixed-point leaves, SAMPLE datagrams walk
    them with their draw, as p4/replay.p4 does."""

    def __init__(
        self, max_size: int = 64, alpha: float = 1.0, switch: bool = False, leaves: int = 64
    ) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.replay = PrioritizedReplay(max_size, alpha, seed=0)
        self.items: dict[int, bytes] = {}  # switch mode: slot -> item
        self.keys: dict[int, int] = {}  # switch mode: slot -> key
        self.leaf_keys: dict[int, int] = {}  # switch mode: leaf -> key (mod 2^32) its UPDATEs must carry
        self.switch = switch
        self.tree = SumTree(leaves)
        self.params: dict[int, tuple[int, bytes]] = {}
        self.cache: dict[tuple[object, int], list[bytes]] = {}
        self.executed: list[int] = []  # ops executed, in order
        self.seen: list[Header] = []  # every datagram's header
        self.drop_requests = 0
        self.drop_reply_frags: set[int] = set()
        self.forget_replies = False
        self.lossy_forever = False
        self.resends_asked: list[list[int]] = []
        self._reasm = Reassembler()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()

    def _loop(self) -> None:
        while not self._stop.is_set():
            if not select.select([self.sock], [], [], 0.01)[0]:
                continue
            data, addr = self.sock.recvfrom(65536)
            header = Header.unpack(data)
            self.seen.append(header)
            if self.switch and header.op in (Op.UPDATE_PRIORITY, Op.SAMPLE) and header.frag_count == 1:
                if self._switch(header, data, addr):
                    continue
            if header.op == Op.RESEND:
                wanted = decode_resend(data[HEADER_BYTES:])
                self.resends_asked.append(wanted)
                cached = None if self.forget_replies else self.cache.get((addr, header.request_id))
                if cached is None:
                    self._send(addr, header, Op.ERROR, encode_error("not cached"), Status.NOT_CACHED)
                else:
                    for k in wanted:
                        self.sock.sendto(cached[k], addr)
                continue
            done = self._reasm.add(data, addr)
            if done is None:
                continue
            h, body = done
            if (addr, h.request_id) in self.cache and not self.forget_replies:
                for d in self.cache[(addr, h.request_id)]:
                    self.sock.sendto(d, addr)
                continue
            if self.drop_requests > 0:
                self.drop_requests -= 1
                continue
            self.executed.append(h.op)
            op, rbody, status = self._execute(h, body)
            # a PUSH with leaves: the model has set them, as the switch would on the reply's way
            leaves = op == Op.PUSH_REPLY and h.flags & Flag.MULTI
            drop = self.drop_reply_frags
            if not self.lossy_forever:  # one lossy reply per setting, consumed before replying
                self.drop_reply_frags = set()
            flags = h.flags | Flag.SWITCH_UPDATED if leaves else 0
            self._send(addr, h, op, rbody, status, drop=drop, flags=flags)

    def _send(
        self,
        addr: object,
        h: Header,
        op: int,
        body: bytes,
        status: int = 0,
        drop: set[int] = frozenset(),  # noqa: B006
        flags: int = 0,
    ) -> None:
        reply = Header(op=op, flags=flags, table_id=h.table_id, request_id=h.request_id, status=status)
        datagrams = fragment(reply, body)
        self.cache[(addr, h.request_id)] = datagrams
        for k, d in enumerate(datagrams):
            if k not in drop:
                self.sock.sendto(d, addr)

    def _execute(self, h: Header, body: bytes) -> tuple[int, bytes, int]:
        try:
            if h.op == Op.PUSH and self.switch and h.flags & Flag.MULTI:
                return Op.PUSH_REPLY, self._push_leaves(h, body), 0
            if h.op == Op.PUSH:
                pushed = decode_push_request(body)
                keys = self.replay.insert([d for _, d in pushed], [p for p, _ in pushed])
                if self.switch:
                    for k, (_, d) in zip(keys.tolist(), pushed, strict=True):
                        self.items[k % self.replay.max_size] = d
                        self.keys[k % self.replay.max_size] = k
                return Op.PUSH_REPLY, encode_push_reply(keys.tolist()), 0
            if h.op == Op.SAMPLE:
                b, beta = decode_sample_request(body)
                batch = self.replay.sample(b, beta)
                items = [
                    SampledItem(int(k), float(p), float(w), d)
                    for k, p, w, d in zip(
                        batch.keys, batch.probabilities, batch.weights, batch.items, strict=True
                    )
                ]
                return Op.SAMPLE_REPLY, encode_sample_reply(batch.table_size, items), 0
            if h.op == Op.UPDATE_PRIORITY:
                entries = decode_update_request(body)
                u, i = self.replay.update_priorities([k for k, _ in entries], [p for _, p in entries])
                return Op.UPDATE_REPLY, encode_update_reply(u, i), 0
            if h.op == Op.SET_PARAMS:
                self.params[h.table_id] = decode_set_params(body)
                return Op.SET_PARAMS_REPLY, encode_set_params_reply(self.params[h.table_id][0]), 0
            if h.op == Op.GET_PARAMS:
                return Op.GET_PARAMS_REPLY, encode_get_params_reply(*self.params.get(h.table_id, (0, b""))), 0
            if h.op == Op.INFO:
                return Op.INFO_REPLY, encode_info_reply({"tables": [{"size": len(self.replay)}]}), 0
            return Op.ERROR, encode_error(f"unknown op {h.op}"), Status.UNKNOWN_OP
        except ValueError as e:
            status = Status.EMPTY if "sample" in str(e) else Status.MALFORMED
            return Op.ERROR, encode_error(str(e)), status

    def _push_leaves(self, h: Header, body: bytes) -> bytes:
        """A PUSH with leaves: the server stores the items, the switch sets each one's leaf (an
        INSERT) as the reply passes; the reply's batch with every result and total, first key."""
        pushed = decode_push_leaves_request(body)
        count = len(pushed)
        leaves, data = [leaf for leaf, _ in pushed], [d for _, d in pushed]
        keys = self.replay.insert(data, [1.0] * count).tolist()
        e = np.zeros(count, ENTRY_DTYPE)
        for k, (key, leaf, item) in enumerate(zip(keys, leaves, data, strict=True)):
            slot = key % self.replay.max_size
            self.items[slot], self.keys[slot] = item, key
            e[k]["index"], e[k]["priority"], e[k]["draw"] = slot, leaf, (key + 1) & 0xFFFFFFFF
            e[k]["result"] = self._set_leaf(h, slot, (key + 1) & 0xFFFFFFFF, leaf)
            e[k]["total"] = int(self.tree.total())
        batch = np.array([(count, count, 0.0)], BATCH_DTYPE)
        return batch.tobytes() + e.tobytes() + struct.pack("!Q", keys[0])

    def _set_leaf(self, h: Header, index: int, key: int, priority: int) -> EntryResult:
        """One UPDATE, alone or a batch's entry (p4/replay.p4): INSERT sets the leaf's key; any
        other UPDATE must name that key."""
        if index >= self.tree.leaves:
            return EntryResult.BAD_INDEX
        if h.flags & Flag.INSERT:
            self.leaf_keys[index] = key
        if self.leaf_keys.get(index) != key:
            return EntryResult.KEY_MISMATCH
        self.tree.update([index], [priority])
        return EntryResult.APPLIED

    def _switch(self, h: Header, data: bytes, addr: object) -> bool:
        """The switch's part: True when the datagram was handled here."""
        if h.op == Op.UPDATE_PRIORITY and h.flags & Flag.MULTI:
            # a batch: each entry as a lone UPDATE, its result and the total written into it
            b = np.frombuffer(data, BATCH_DTYPE, 1, HEADER_BYTES)[0]
            e = np.frombuffer(data, ENTRY_DTYPE, int(b["count"]), HEADER_BYTES + 8).copy()
            for k, ent in enumerate(e.tolist()):  # (index, priority, draw, total, result, reserved)
                e["result"][k] = self._set_leaf(h, ent[0], ent[2], ent[1])
                if e["result"][k] != EntryResult.BAD_INDEX:
                    e["total"][k] = int(self.tree.total())
            done = np.array([(b["count"], b["count"], b["beta"])], BATCH_DTYPE)
            reply = Header(
                op=Op.UPDATE_REPLY, flags=h.flags | Flag.SWITCH_UPDATED, table_id=h.table_id,
                request_id=h.request_id, total=int(self.tree.total()),
            )  # fmt: skip
            self.sock.sendto(reply.pack() + done.tobytes() + e.tobytes(), addr)
            return True
        if h.op == Op.UPDATE_PRIORITY:
            result = self._set_leaf(h, h.index, h.draw, h.priority)
            if result == EntryResult.BAD_INDEX:
                self._send(addr, h, Op.ERROR, b"", Status.BAD_INDEX)
                return True
            flags = Flag.SWITCH_UPDATED
            if result == EntryResult.KEY_MISMATCH:
                flags |= Flag.KEY_MISMATCH
            reply = Header(
                op=Op.UPDATE_REPLY, flags=flags, table_id=h.table_id, request_id=h.request_id,
                index=h.index, priority=h.priority, draw=h.draw, total=int(self.tree.total()),
            )  # fmt: skip
            self.sock.sendto(reply.pack(), addr)
            return True
        total = int(self.tree.total())
        n = len(self.replay)
        if h.flags & Flag.MULTI:  # a batch: the switch walks once per entry, the server answers all
            b = np.frombuffer(data, BATCH_DTYPE, 1, HEADER_BYTES)[0]
            e = np.frombuffer(data, ENTRY_DTYPE, int(b["count"]), HEADER_BYTES + 8)
            beta = float(b["beta"])
            draws = e["draw"].astype(np.int64).tolist()
        else:
            _, beta = decode_sample_request(data[HEADER_BYTES:])
            draws = [h.draw]
        if h.flags & Flag.RANDOM_DRAW:
            draws = np.random.default_rng().integers(0, 1 << 32, len(draws)).tolist()
        items = []
        for draw in draws:
            index = int(self.tree.find_prefixsum([(draw * total) >> 32])[0])
            priority = int(self.tree[index])
            prob = priority / total
            items.append(SampledItem(self.keys[index], prob, (n * prob) ** -beta, self.items[index]))
        if h.flags & Flag.MULTI:  # (each entry's leaf is in the request's body, not the header)
            index = priority = draw = 0
        reply = Header(
            op=Op.SAMPLE_REPLY, flags=h.flags | Flag.SWITCH_SAMPLED, table_id=h.table_id,
            request_id=h.request_id, index=index, priority=priority, draw=draw, total=total,
        )  # fmt: skip
        if self.drop_requests > 0:  # lost on the way in
            self.drop_requests -= 1
            return True
        # the server's reply, in fragments when the item is long (its header fields kept)
        drop = self.drop_reply_frags
        if not self.lossy_forever:
            self.drop_reply_frags = set()
        for k, d in enumerate(fragment(reply, encode_sample_reply(n, items))):
            if k not in drop:
                self.sock.sendto(d, addr)
        return True


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    s = ScriptedServer()
    yield s
    s.close()


def client_for(server: ScriptedServer, **kw: object) -> HostReplayClient:
    return HostReplayClient(ReplayConfig(server_port=server.port, timeout_s=0.05, seed=1, **kw))  # type: ignore[arg-type]


# --- HostReplayClient against the scripted server --------------------------------------------


def test_host_client_round_trip(scripted: ScriptedServer) -> None:
    with client_for(scripted) as c:
        if os.geteuid() == 0:  # SO_RCVBUFFORCE passes rmem_max; Linux reports twice the size
            assert c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) >= 8 << 20
        keys = c.insert([b"a", b"bb", b"ccc"], [1.0, 2.0, 0.0])
        np.testing.assert_array_equal(keys, [0, 1, 2])
        assert keys.dtype == np.uint64
        batch = c.sample(30, beta=0.5)
        assert batch.table_size == 3 and len(batch) == 30
        assert set(batch.items) == {b"a", b"bb"}
        assert c.update_priorities([0, 1, 1000], [0.0, 1.0, 1.0]) == (2, 1)
        assert set(c.sample(10).items) == {b"bb"}
        assert c.get_params() == (0, b"")
        assert c.set_params(b"w" * 5000, 3, slot=1) == 3
        assert c.get_params(1) == (3, b"w" * 5000)
        assert c.info()["tables"][0]["size"] == 3


def test_lost_request_is_resent_and_executed_once(scripted: ScriptedServer) -> None:
    scripted.drop_requests = 1  # the first copy is lost; the resend (same request id) goes through
    with client_for(scripted) as c:
        keys = c.insert([b"x"] * 3, [1.0] * 3)
        assert c.stats["resent_requests"] >= 1
    np.testing.assert_array_equal(keys, [0, 1, 2])
    assert scripted.executed == [Op.PUSH]  # executed once: later copies got the cached reply
    pushes = [h for h in scripted.seen if h.op == Op.PUSH]
    assert len({h.request_id for h in pushes}) == 1 and len(pushes) >= 2


def test_missing_reply_fragments_are_asked_for(scripted: ScriptedServer) -> None:
    items = [bytes([i]) * 3000 for i in range(8)]
    with client_for(scripted) as c:
        c.insert(items, [1.0] * 8)
        scripted.drop_reply_frags = {1, 4, 5}
        batch = c.sample(8)
        assert c.stats["resend_asks"] >= 1
    assert [1, 4, 5] in scripted.resends_asked
    for k, item in zip(batch.keys.tolist(), batch.items, strict=True):
        assert item == items[k]


def test_reply_gone_from_cache_means_the_request_again(scripted: ScriptedServer) -> None:
    with client_for(scripted) as c:
        c.insert([b"y" * 3000] * 4, [1.0] * 4)
        scripted.drop_reply_frags = {2}
        scripted.forget_replies = True  # RESEND gets NOT_CACHED; the request runs again
        batch = c.sample(4)
    assert len(batch) == 4 and set(batch.items) == {b"y" * 3000}
    assert scripted.executed.count(Op.SAMPLE) >= 2


def test_a_reply_that_never_completes_is_a_timeout(scripted: ScriptedServer) -> None:
    with client_for(scripted, max_tries=3) as c:
        c.insert([b"z" * 3000] * 2, [1.0] * 2)
        scripted.drop_reply_frags = {1}
        scripted.lossy_forever = True  # fragment 1 never comes and RESEND gets NOT_CACHED
        scripted.forget_replies = True
        with pytest.raises(ReplayTimeout, match="NOT_CACHED") as e:
            c.sample(2)
    assert e.value.op == "SAMPLE" and scripted.executed.count(Op.SAMPLE) == 3


def test_error_reply_raises_replay_error(scripted: ScriptedServer) -> None:
    with client_for(scripted) as c:
        with pytest.raises(ReplayError) as e:
            c.sample(4)
    assert e.value.status == Status.EMPTY and "EMPTY" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_no_server_is_a_timeout_naming_the_request() -> None:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nobody listens on this port now
    c = HostReplayClient(ReplayConfig(server_port=port, timeout_s=0.02, max_tries=3))
    with c, pytest.raises(ReplayTimeout) as e:
        c.insert([b"a"], [1.0])
    assert e.value.op == "PUSH" and e.value.tries == 3 and e.value.server == ("127.0.0.1", port)
    assert f"request {e.value.request_id}" in str(e.value) and f"127.0.0.1:{port}" in str(e.value)


def test_client_side_validation_sends_nothing(scripted: ScriptedServer) -> None:
    with client_for(scripted) as c:
        with pytest.raises(ValueError, match="finite"):
            c.insert([b"a"], [math.nan])
        with pytest.raises(ValueError, match=">= 0"):
            c.insert([b"a"], [-1.0])
        with pytest.raises(ValueError, match="2 items but 1"):
            c.insert([b"a", b"b"], [1.0])
        with pytest.raises(ValueError, match="f32"):
            c.insert([b"a"], [1e39])
        with pytest.raises(ValueError, match="batch_size"):
            c.sample(0)
        with pytest.raises(ValueError, match="beta"):
            c.sample(2, beta=-1)
        with pytest.raises(ValueError, match="keys"):
            c.update_priorities([-1], [1.0])
    assert scripted.seen == []


def test_large_inserts_are_split_by_max_message_bytes(scripted: ScriptedServer) -> None:
    items = [bytes([i % 256]) * 30_000 for i in range(20)]
    with client_for(scripted, max_message_bytes=100_000) as c:
        keys = c.insert(items, np.ones(20))
        np.testing.assert_array_equal(keys, np.arange(20))
        assert scripted.executed.count(Op.PUSH) == 7  # 3 items of 30 KB per 100 KB message
        batch = c.sample(40)
    assert all(item == items[k] for k, item in zip(batch.keys.tolist(), batch.items, strict=True))


# --- switch path -----------------------------------------------------------------------------


def test_switch_fixed_point_priorities() -> None:
    p = np.array([0.0, 1.0, 2.0, 1e-9, 1e6, 0.5])
    got = switch_priorities(p, alpha=0.5, leaves=1 << 10)
    cap = (1 << 32) // (1 << 10) - 1  # 4194303
    assert got.dtype == np.uint32
    assert got.tolist() == [0, 4096, round(math.sqrt(2) * 4096), 1, 4096000, round(math.sqrt(0.5) * 4096)]
    assert switch_priorities(np.array([1e9]), 1.0, 1 << 10).tolist() == [cap]
    assert switch_priorities(np.array([3.0]), 1.0, 1 << 20).tolist() == [4095]  # cap 2^12 - 1
    # the array form is the protocol's scalar rule, item for item (ties round to even, caps, 0)
    rng = np.random.default_rng(5)
    wide = np.concatenate([rng.random(500) * 10.0 ** rng.uniform(-8, 8, 500),
                           [0.0, 1e-300, 1e300, 0.5 / 4096, 1.5 / 4096, 2.5 / 4096, 1.0]])  # fmt: skip
    for alpha, leaves in ((0.0, 64), (0.6, 1 << 14), (1.0, 1 << 20), (2.5, 1 << 32)):
        scalar = [rp.fixed_point_priority(float(x), alpha, leaves) for x in wide]
        assert switch_priorities(wide, alpha, leaves).tolist() == scalar
    with pytest.raises(ValueError, match="finite"):
        switch_priorities(np.array([1.0, math.inf]), 0.6, 64)
    with pytest.raises(ValueError, match=">= 0"):
        switch_priorities(np.array([-1.0]), 0.6, 64)


def test_stratified_draws_fall_in_their_strata() -> None:
    rng = np.random.default_rng(0)
    for b in (1, 3, 512):
        u = stratified_draws(b, rng).astype(np.float64)
        lo = np.arange(b) * 2.0**32 / b
        assert np.all(u >= np.floor(lo)) and np.all(u < lo + 2.0**32 / b)
    assert stratified_draws(4, np.random.default_rng(5)).dtype == np.uint32


class Capture:
    """A UDP socket that records what a client sends and answers with ``reply(header, data)``."""

    def __init__(self, reply: Callable[[Header, bytes], bytes | None]) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.got: list[tuple[Header, bytes]] = []
        self.reply = reply
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)
        self._t.start()

    def _loop(self) -> None:
        while True:
            if not select.select([self.sock], [], [], 0.01)[0]:
                if self._stop.is_set():
                    return  # stops only once nothing is queued: close() sees every datagram
                continue
            data, addr = self.sock.recvfrom(65536)
            h = Header.unpack(data)
            self.got.append((h, data[HEADER_BYTES:]))
            out = self.reply(h, data)
            if out is not None:
                self.sock.sendto(out, addr)

    def close(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._t.join()
        self.sock.close()


def test_switch_client_datagrams() -> None:
    """UPDATE datagrams carry leaf key % max_size and the fixed-point priority; SAMPLE datagrams
    carry one stratified draw each (or RANDOM_DRAW), body (1, beta); weights are normalized by the
    batch's largest."""
    weights = iter([0.5, 2.0, 1.0, 4.0])

    def reply(h: Header, data: bytes) -> bytes | None:
        if h.op == Op.UPDATE_PRIORITY:
            return Header(op=Op.UPDATE_REPLY, flags=Flag.SWITCH_UPDATED, request_id=h.request_id).pack()
        if h.op == Op.SAMPLE:
            item = SampledItem(h.request_id % 7, 0.25, next(weights), b"it")
            return Header(op=Op.SAMPLE_REPLY, request_id=h.request_id).pack() + encode_sample_reply(9, [item])
        return None

    cap = Capture(reply)
    cfg = ReplayConfig(
        backend="switch", server_port=cap.port, max_size=10, alpha=0.5, seed=3, timeout_s=0.05, switch_batch=1
    )
    try:
        with SwitchReplayClient(cfg) as c:
            assert c.update_priorities(np.array([3, 14, 25, 14], dtype=np.uint64), [4.0, 9.0, 0.0, 1.0]) == (
                4,
                0,
            )
            updates = [h for h, _ in cap.got if h.op == Op.UPDATE_PRIORITY]
            # key 14 twice: one datagram, the last priority (1.0 -> 4096); key + 1 rides in `draw`
            assert sorted((h.index, h.priority, h.draw) for h in updates) == [
                (3, 8192, 4),
                (4, 4096, 15),
                (5, 0, 26),
            ]
            assert all(h.flags == 0 for h in updates)  # a learner's update: no INSERT
            assert all(h.table_id == 0 and h.frag_count == 1 for h in updates)
            cap.got.clear()
            batch = c.sample(4, beta=0.3)
            samples = [(h, body) for h, body in cap.got if h.op == Op.SAMPLE]
            assert len(samples) == 4
            draws = sorted(h.draw for h, _ in samples)
            for i, u in enumerate(draws):
                assert i * 2**30 <= u < (i + 1) * 2**30
            assert all(decode_sample_request(body) == (1, pytest.approx(0.3)) for _, body in samples)
            assert all(h.flags == 0 for h, _ in samples)
            np.testing.assert_allclose(sorted(batch.weights), [0.125, 0.25, 0.5, 1.0])
            assert batch.table_size == 9 and batch.items == [b"it"] * 4
            # items of several sizes in one batch come back whole, each with its own key
            sized = {}

            def sized_reply(h: Header, data: bytes) -> bytes | None:
                body = bytes([65 + h.request_id % 26]) * (1 + h.request_id % 5)
                sized[h.request_id % 7] = body
                item = encode_sample_reply(9, [SampledItem(h.request_id % 7, 0.25, 1.0, body)])
                return Header(op=Op.SAMPLE_REPLY, request_id=h.request_id).pack() + item

            cap.reply = sized_reply
            batch = c.sample(5)
            assert len({len(it) for it in batch.items}) > 1
            assert [sized[int(k)] for k in batch.keys] == batch.items
            cap.reply = reply
        cap.got.clear()
        weights = iter([1.0, 1.0])
        cfg.random_draw = True
        with SwitchReplayClient(cfg) as c:
            c.sample(2)
        assert [h.flags for h, _ in cap.got if h.op == Op.SAMPLE] == [Flag.RANDOM_DRAW] * 2
    finally:
        cap.close()


def test_switch_client_refuses_replies_the_switch_did_not_make() -> None:
    # The server (not the switch) answered: the table is not installed in the switch.
    cap = Capture(
        lambda h, d: Header(op=Op.UPDATE_REPLY, request_id=h.request_id).pack() + encode_update_reply(0, 1)
    )
    try:
        with SwitchReplayClient(ReplayConfig(server_port=cap.port, max_size=8)) as c:
            with pytest.raises(ReplayError, match="SWITCH_UPDATED"):
                c.update_priorities([1], [1.0])
    finally:
        cap.close()


def test_switch_client_refuses_push_replies_without_every_leaf_set() -> None:
    """A PUSH with leaves is answered by the server; the switch sets the leaves on the reply's
    way. A reply the switch did not touch (table not installed), one it stopped short of the last
    entry, or one that holds fewer entries than items pushed is an error, never a silent insert."""
    def leaves_reply(h: Header, data: bytes, flags: int, done: int | None = None, drop: int = 0) -> bytes:
        leaves = [leaf for leaf, _ in decode_push_leaves_request(data[HEADER_BYTES:])]
        n = len(leaves) - drop
        e = np.zeros(n, ENTRY_DTYPE)
        e["index"], e["draw"] = np.arange(n) + 5, np.arange(n) + 6  # keys 5, 6, ..
        e["priority"] = leaves[:n]
        batch = np.array([(n if done is None else done, n, 0.0)], BATCH_DTYPE)
        head = Header(op=Op.PUSH_REPLY, flags=flags, request_id=h.request_id, table_id=h.table_id)
        return head.pack() + batch.tobytes() + e.tobytes() + struct.pack("!Q", 5)

    sent = Flag.MULTI | Flag.INSERT
    cases = [
        (ReplayError, "without SWITCH_UPDATED", {"flags": sent}),  # the switch did not touch it
        (ProtocolError, "leaves pushed, all set", {"flags": sent | Flag.SWITCH_UPDATED, "done": 1}),
        (ProtocolError, "leaves pushed, all set", {"flags": sent | Flag.SWITCH_UPDATED, "drop": 1}),
        (None, "", {"flags": sent | Flag.SWITCH_UPDATED}),  # every leaf set: the keys come back
    ]
    for error, message, how in cases:
        cap = Capture(lambda h, d, how=how: leaves_reply(h, d, **how))
        try:
            with SwitchReplayClient(ReplayConfig(server_port=cap.port, max_size=1000)) as c:
                if error is None:
                    assert c.insert([b"a", b"b", b"c"], [1.0, 2.0, 3.0]).tolist() == [5, 6, 7]
                else:
                    with pytest.raises(error, match=message):
                        c.insert([b"a", b"b", b"c"], [1.0, 2.0, 3.0])
            (h, _), *_ = cap.got
            assert h.op == Op.PUSH and h.flags == sent
        finally:
            cap.close()


def test_switch_client_times_out_when_nobody_answers() -> None:
    cap = Capture(lambda h, d: None)
    try:
        cfg = ReplayConfig(
            server_port=cap.port, max_size=8, timeout_s=0.02, max_tries=2, window=2, switch_batch=1
        )
        with SwitchReplayClient(cfg) as c, pytest.raises(ReplayTimeout, match="UPDATE_PRIORITY"):
            c.update_priorities([1, 2, 3], [1.0, 1.0, 1.0])
        cap.close()  # joins the capture thread: everything sent has been recorded
        assert len([h for h, _ in cap.got if h.op == Op.UPDATE_PRIORITY]) == 4  # window 2, 2 tries each
    finally:
        cap.close()


def test_switch_client_update_batches() -> None:
    """UPDATEs go out switch_batch entries per datagram (flag MULTI, the last datagram shorter);
    each entry's result comes back in the reply: KEY_MISMATCH entries count as ignored, a
    BAD_INDEX entry raises, and a reply that does not hold the batch is refused."""
    mismatch = {7}  # slots the model answers KEY_MISMATCH for
    bad_index: set[int] = set()
    cut = [False]

    def reply(h: Header, data: bytes) -> bytes | None:
        b = np.frombuffer(data, BATCH_DTYPE, 1, HEADER_BYTES)[0]
        e = np.frombuffer(data, ENTRY_DTYPE, int(b["count"]), HEADER_BYTES + 8).copy()
        e["result"] = [
            EntryResult.BAD_INDEX if i in bad_index else EntryResult.KEY_MISMATCH if i in mismatch else 0
            for i in e["index"].tolist()
        ]
        done = np.array([(b["count"], b["count"], b["beta"])], BATCH_DTYPE).tobytes()
        head = Header(op=Op.UPDATE_REPLY, flags=h.flags | Flag.SWITCH_UPDATED, request_id=h.request_id)
        body = done + e.tobytes()
        return head.pack() + (body[:-1] if cut[0] else body)

    cap = Capture(reply)
    cfg = ReplayConfig(backend="switch", server_port=cap.port, max_size=100, alpha=1.0, seed=3,
                       timeout_s=0.05, switch_batch=4)  # fmt: skip
    try:
        with SwitchReplayClient(cfg) as c:
            keys = np.array([5, 7, 1, 2, 3, 4, 105, 8, 9, 10], np.uint64)  # 105: slot 5 again
            assert c.update_priorities(keys, np.arange(1.0, 11.0)) == (9, 1)
            sent = [(h, d) for h, d in cap.got if h.op == Op.UPDATE_PRIORITY]
            assert [len(d) for _, d in sent] == [8 + 20 * n for n in (4, 4, 1)]  # 9 slots
            assert all(h.flags == Flag.MULTI and h.frag_count == 1 for h, _ in sent)
            entries = np.concatenate([np.frombuffer(d, ENTRY_DTYPE, (len(d) - 8) // 20, 8) for _, d in sent])
            got = {int(e["index"]): (int(e["priority"]), int(e["draw"])) for e in entries}
            assert sorted(got) == [1, 2, 3, 4, 5, 7, 8, 9, 10]
            assert got[5] == (7 * 4096, 106)  # slot 5 keeps its last key (105) and priority (7.0)
            assert got[10] == (10 * 4096, 11)
            assert all(np.frombuffer(d, BATCH_DTYPE, 1)["next"][0] == 0 for _, d in sent)
            bad_index.add(3)
            with pytest.raises(ReplayError, match="leaf 3 is beyond") as err:
                c.update_priorities([1, 3], [1.0, 1.0])
            assert err.value.status == Status.BAD_INDEX
            bad_index.clear()
            cut[0] = True
            with pytest.raises(ProtocolError, match="bytes, not 80"):
                c.update_priorities([1, 3], [1.0, 1.0])
    finally:
        cap.close()


@pytest.mark.parametrize("path", ["engine", "numpy", "per-datagram"])
def test_switch_path_end_to_end_with_a_model_switch(path: str) -> None:
    """The datagram paths of the switch client (the exchange loop in C; a window per
    sendmmsg/recvmmsg, matched as NumPy arrays; one socket call per datagram) against a model of
    the switch."""
    server = ScriptedServer(max_size=8, switch=True, leaves=8)
    try:
        cfg = ReplayConfig(backend="switch", server_port=server.port, max_size=8, alpha=1.0, seed=7)
        with make_replay_client(cfg) as c:
            assert isinstance(c, SwitchReplayClient)
            assert c._rx is not None  # the C helper builds here
            c.use_engine = path == "engine"
            if path == "per-datagram":
                c._rx = None
            assert c.insert([], []).size == 0  # nothing to push, no leaf to set
            keys = c.insert([b"a", b"b", b"c", b"d", b"e"], [1.0, 2.0, 3.0, 4.0, 0.0])
            np.testing.assert_array_equal(keys, np.arange(5))
            assert server.tree.total() == 10 * 4096
            counts = np.zeros(4)
            for _ in range(20):
                batch = c.sample(50, beta=0.4)
                counts += np.bincount(batch.keys.astype(np.int64), minlength=5)[:4]
                assert b"e" not in batch.items and batch.weights.max() == 1.0
            assert chi_square(counts, np.array([1, 2, 3, 4]) / 10) < CHI2_999[3]
            np.testing.assert_allclose(batch.probabilities, (batch.keys + 1.0) / 10, rtol=1e-6)
            c.update_priorities([0, 3], [0.0, 0.0])
            assert set(c.sample(40).items) == {b"b", b"c"}
            # 9 more items evict keys 0..5; updating key 1 (gone) must not touch key 9's leaf 1
            c.insert([b"n"] * 9, [1.0] * 9)
            assert c.update_priorities([1, 9], [100.0, 2.0]) == (1, 1)
            assert server.tree[1] == 2 * 4096
            # items of several sizes in one reply come back whole, each with its own key
            new_items = [bytes([65 + i]) * (i + 1) for i in range(8)]
            sized = {int(k): it for k, it in zip(c.insert(new_items, [1.0] * 8), new_items, strict=True)}
            batch = c.sample(64)
            assert len({len(it) for it in batch.items}) > 1
            assert [sized[int(k)] for k in batch.keys] == batch.items
    finally:
        server.close()


# --- Redis path through the same API ---------------------------------------------------------


def test_redis_client_through_the_factory() -> None:
    from host_agents.redis_replay import RedisServer

    if RedisServer.available() is None:
        pytest.skip("redis-server not installed (apt-get install redis-server)")
    with RedisServer() as server:
        cfg = ReplayConfig(backend="redis", redis_url=server.url, max_size=16, alpha=1.0, seed=2)
        with make_replay_client(cfg) as c:
            assert isinstance(c, RedisReplayClient)
            np.testing.assert_array_equal(c.insert([b"a", b"b"], [1.0, 3.0]), [0, 1])
            batch = c.sample(8)
            assert batch.table_size == 2 and set(batch.items) == {b"a", b"b"}
            keys = c.insert([b"c"], [1.0])
            assert c.update_priorities([0, int(keys[0])], [0.0, 0.0]) == (2, 0)
            assert set(c.sample(8).items) == {b"b"}
            assert c.set_params(b"p", 4) == 4 and c.get_params() == (4, b"p")
            assert c.info()["size"] == 3


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="backend"):
        ReplayConfig(backend="tcp")
    with pytest.raises(ValueError, match="switch_leaves"):
        ReplayConfig(max_size=100, switch_leaves=96)
    with pytest.raises(ValueError, match="switch_leaves"):
        ReplayConfig(max_size=100, switch_leaves=64)
    assert ReplayConfig(max_size=100).leaves == 128
    assert ReplayConfig(max_size=128, switch_leaves=1024).leaves == 1024
    with pytest.raises(ValueError, match="table_id"):
        ReplayConfig(table_id=1 << 16)
    with pytest.raises(ValueError, match="beta"):
        ReplayConfig(beta=math.nan)
    with pytest.raises(ValueError, match="server_port"):
        ReplayConfig(server_port=70000)  # would silently become port 4464 on the wire


# --- HostReplayClient against the real C server ----------------------------------------------


@contextlib.contextmanager
def real_server(*args: str) -> Iterator[int]:
    """dpdk_fallback/build/replay_server on 127.0.0.1 (sockets I/O); yields its port once it
    printed its ready line."""
    if not SERVER_BIN.exists():
        pytest.skip(f"{SERVER_BIN} not built (make -C dpdk_fallback)")
    port = free_port("udp")
    argv = ["--bind", "127.0.0.1", "--port", str(port), "--seed", "7", "--quiet", *args]
    with ReplayServerProcess(argv, timeout=10.0):
        yield port


@pytest.fixture(scope="module")
def c_server() -> Iterator[int]:
    with real_server(
        "--table", "main:max_size=1000,alpha=0.6",
        "--table", "small:max_size=4,alpha=1",
        "--table", "frames:max_size=600,alpha=1",
        "--table", "sw:max_size=16,priorities=switch",
        "--max-item-bytes", "64k",
    ) as port:  # fmt: skip
        yield port


def real_client(port: int, table_id: int = 0, **kw: object) -> HostReplayClient:
    return HostReplayClient(ReplayConfig(server_port=port, table_id=table_id, seed=3, **kw))  # type: ignore[arg-type]


def test_real_server_round_trip_and_weights(c_server: int) -> None:
    alpha, beta = 0.6, 0.4
    with real_client(c_server) as c:
        before = int(c.info()["tables"][0]["next_key"])
        priorities = np.array([0.5, 1.0, 2.0, 4.0, 0.0])
        keys = c.insert([f"item{i}".encode() * 10 for i in range(5)], priorities)
        assert keys.dtype == np.uint64 and np.all(np.diff(keys.astype(np.int64)) == 1)
        assert int(keys[0]) == before
        assert c.info()["tables"][0]["size"] == before + 5
        batch = c.sample(200, beta=beta)
        assert batch.table_size == 5
        idx = (batch.keys - keys[0]).astype(np.int64)
        assert 4 not in idx  # priority 0: never sampled
        for i, item in zip(idx.tolist(), batch.items, strict=True):
            assert item == f"item{i}".encode() * 10
        scaled = np.where(priorities > 0, priorities**alpha, 0)
        prob = scaled / scaled.sum()
        n = 5
        w = (n * prob[:4]) ** -beta / ((n * prob[:4]) ** -beta).max()
        np.testing.assert_allclose(batch.probabilities, prob[idx], rtol=1e-5)
        np.testing.assert_allclose(batch.weights, w[idx], rtol=1e-5)


def test_real_server_distribution_and_updates(c_server: int) -> None:
    with real_client(c_server, table_id=1) as c:  # "small": max_size 4, alpha 1
        keys = c.insert([b"a", b"b", b"c", b"d"], [1.0, 2.0, 3.0, 4.0])
        counts = np.zeros(4)
        for _ in range(10):
            batch = c.sample(100)
            counts += np.bincount((batch.keys - keys[0]).astype(np.int64), minlength=4)
        assert chi_square(counts, np.array([1, 2, 3, 4]) / 10) < CHI2_999[3]
        assert chi_square(counts, np.full(4, 0.25)) > CHI2_999[3]  # the check has teeth
        assert c.update_priorities(keys[[0, 3]], [5.0, 0.0]) == (2, 0)
        assert set(c.sample(100).items) == {b"a", b"b", b"c"}
        newer = c.insert([b"e", b"f"], [1.0, 1.0])  # evicts keys[0] and keys[1] (FIFO)
        assert c.update_priorities([keys[0], keys[2], newer[1]], [1.0, 1.0, 1.0]) == (2, 1)
        assert set(c.sample(100).items) <= {b"c", b"e", b"f"}


def test_real_server_atari_sized_batches(c_server: int) -> None:
    """600 frames of 30 KB in (18 MB: three PUSH messages of at most 8 MiB), then a 512-item
    batch (~15 MB of reply, ~11000 datagrams)."""
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, 30_000, dtype=np.uint8).tobytes() for _ in range(8)]
    items = [frames[i % 8] + i.to_bytes(4, "big") for i in range(600)]
    with real_client(c_server, table_id=2, timeout_s=0.2) as c:
        keys = c.insert(items, np.ones(600))
        assert c.stats["requests"] == 3
        assert keys.tolist() == list(range(int(keys[0]), int(keys[0]) + 600))
        batch = c.sample(512)
        assert len(batch) == 512 and batch.table_size == 600
        for k, item in zip(batch.keys.tolist(), batch.items, strict=True):
            assert item == items[k - int(keys[0])]


def test_real_server_params(c_server: int) -> None:
    blob = np.random.default_rng(1).integers(0, 256, 2_000_000, dtype=np.uint8).tobytes()
    with real_client(c_server) as c:
        assert c.get_params(slot=3) == (0, b"")
        assert c.set_params(blob, 12, slot=2) == 12
        assert c.get_params(slot=2) == (12, blob)
        with pytest.raises(ReplayError) as e:
            c.get_params(slot=9)  # 4 slots
        assert e.value.status == Status.UNKNOWN_TABLE


def test_real_server_errors(c_server: int) -> None:
    with real_client(c_server, table_id=9) as c, pytest.raises(ReplayError) as e:
        c.insert([b"x"], [1.0])
    assert e.value.status == Status.UNKNOWN_TABLE
    with real_client(c_server, table_id=1) as c, pytest.raises(ReplayError) as e:
        c.insert([b"x" * 70_000], [1.0])  # above --max-item-bytes 64k
    assert e.value.status == Status.TOO_LARGE
    with real_client(c_server, table_id=3) as c:  # switch table: priorities live in the switch
        c.insert([b"s"], [1.0])
        with pytest.raises(ReplayError) as e:
            c.sample(1)
    assert e.value.status == Status.NOT_SWITCH_SAMPLED


def test_real_server_empty_table() -> None:
    with real_server("--table", "t:max_size=8") as port, real_client(port) as c:
        with pytest.raises(ReplayError) as e:
            c.sample(2)
        assert e.value.status == Status.EMPTY
        info = c.info()
        assert isinstance(info, dict) and info


@pytest.mark.parametrize("path", ["engine", "numpy"])
def test_switch_path_long_items_in_fragments_with_losses(path: str) -> None:
    """Items longer than one datagram come back in fragments, which the C exchange loop hands to
    the reassembler; lost requests and replies missing a fragment are resent until whole. Every
    sampled item is the one its key names, on both batched paths."""
    server = ScriptedServer(max_size=8, switch=True, leaves=8)
    try:
        cfg = ReplayConfig(backend="switch", server_port=server.port, max_size=8, alpha=1.0, seed=3,
                           timeout_s=0.05)  # fmt: skip
        with make_replay_client(cfg) as c:
            assert isinstance(c, SwitchReplayClient)
            c.use_engine = path == "engine"
            data = [bytes([k]) * (3000 + k) for k in range(6)]  # 3 fragments each
            keys = c.insert(data, [1.0] * 6)
            for _ in range(3):
                server.drop_requests = 2
                server.drop_reply_frags = {1}
                batch = c.sample(12)
                assert [len(x) for x in batch.items] == [3000 + int(k) for k in batch.keys]
                assert all(x == data[int(k)] for k, x in zip(batch.keys, batch.items, strict=True))
            assert set(batch.keys.tolist()) <= set(keys.tolist())
            assert c.stats["resent"] > 0
    finally:
        server.close()


class _NoGsoSocket:
    """A client socket whose kernel refuses UDP GSO (sendmsg with a UDP_SEGMENT message: EIO),
    everything else the real socket's; counts the refusals."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.refused = 0

    def sendmsg(self, *args: object) -> int:
        self.refused += 1
        raise OSError(errno.EIO, "no UDP GSO here")

    def __getattr__(self, name: str) -> object:
        return getattr(self._sock, name)


def test_long_messages_go_out_as_gso_sends_or_one_datagram_each(c_server: int) -> None:
    """A PUSH of 32 x 4 KB (94 fragments) reaches the server whole through UDP GSO sends; where
    the kernel refuses GSO the client says so once and sends one datagram each from then on."""
    rng = np.random.default_rng(2)
    items = [rng.integers(0, 256, 4096, dtype=np.uint8).tobytes() for _ in range(32)]
    with real_client(c_server, table_id=2) as c:
        keys = c.insert(items, np.ones(32))
        assert c._gso  # loopback takes GSO sends
        real = c.sock
        c.sock = _NoGsoSocket(real)  # type: ignore[assignment]
        try:
            more = c.insert(items, np.ones(32))
            again = c.insert(items[:8], np.ones(8))
        finally:
            refused, c.sock = c.sock.refused, real  # type: ignore[attr-defined]
        assert refused == 1 and not c._gso
        assert more.tolist() == list(range(int(keys[-1]) + 1, int(keys[-1]) + 33))
        assert len(again) == 8
        got = c.sample(64)
        by_key = {int(k): it for k, it in zip(got.keys.tolist(), got.items, strict=True)}
        for k, item in by_key.items():
            if int(keys[0]) <= k <= int(keys[-1]):
                assert item == items[k - int(keys[0])]
