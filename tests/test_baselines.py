"""The two host-only allreduce baselines: the TCP parameter server and gloo's ring allreduce.

Everything runs over real sockets on 127.0.0.1; every blocking step has a timeout.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist

from host_agents.gloo_allreduce import GlooAllreduce, bytes_on_wire_estimate
from host_agents.netutil import free_port
from host_agents.param_server import (
    DTYPE_BYTES,
    DTYPE_F32,
    HEADER,
    MAGIC,
    OP_ERROR,
    OP_HELLO,
    OP_PUSH,
    OP_WELCOME,
    ParameterServer,
    ParameterServerClient,
)

REPO = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
WAIT_S = 20.0  # upper bound for any single blocking step in these tests


@pytest.fixture
def make_server() -> Iterator[Callable[..., ParameterServer]]:
    servers: list[ParameterServer] = []

    def make(num_workers: int, **kwargs: object) -> ParameterServer:
        kwargs.setdefault("round_timeout_s", 10.0)
        server = ParameterServer(HOST, 0, num_workers, **kwargs)  # type: ignore[arg-type]
        server.start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()


def _client(server: ParameterServer, worker: int, num_workers: int | None = None) -> ParameterServerClient:
    return ParameterServerClient(HOST, server.port, worker, num_workers or server.num_workers, timeout=WAIT_S)


def _run_workers(server: ParameterServer, inputs: list[list[torch.Tensor]]) -> list[list[torch.Tensor]]:
    """inputs[w][r] is worker w's tensor in round r; returns outputs[w][r]. One thread per worker."""

    def work(worker: int) -> list[torch.Tensor]:
        with _client(server, worker) as client:
            return [client.allreduce(t) for t in inputs[worker]]

    with ThreadPoolExecutor(max_workers=len(inputs)) as pool:
        futures = [pool.submit(work, w) for w in range(len(inputs))]
        return [f.result(timeout=WAIT_S) for f in futures]


def _f32_sum_in_worker_order(tensors: list[torch.Tensor]) -> np.ndarray:
    acc = tensors[0].numpy().astype(np.float32).copy()
    for t in tensors[1:]:
        acc += t.numpy()
    return acc


# ---------------------------------------------------------------------------- parameter server


@pytest.mark.parametrize("num_workers", [1, 2, 4])
def test_ps_sum_several_rounds_and_sizes(
    make_server: Callable[..., ParameterServer], num_workers: int
) -> None:
    server = make_server(num_workers)
    gen = torch.Generator().manual_seed(num_workers)
    shapes = [(1,), (1000,), (100003,), (7, 13), (1000,)]  # odd sizes, a 2-D shape, a repeated size
    inputs = [[torch.randn(*s, generator=gen) * (w + 1) for s in shapes] for w in range(num_workers)]
    originals = [[t.clone() for t in row] for row in inputs]

    outputs = _run_workers(server, inputs)

    for r, shape in enumerate(shapes):
        contributions = [inputs[w][r] for w in range(num_workers)]
        exact = np.sum([c.numpy().astype(np.float64) for c in contributions], axis=0)
        scale = np.sum([np.abs(c.numpy().astype(np.float64)) for c in contributions], axis=0)
        for w in range(num_workers):
            out = outputs[w][r]
            assert out.dtype == torch.float32 and out.shape == torch.Size(shape)
            bound = 4 * np.finfo(np.float32).eps * scale + 1e-30
            np.testing.assert_array_less(np.abs(out.numpy() - exact), bound)
            assert torch.equal(out, outputs[0][r]), "workers got different sums"
        # Summed in worker-id order, so the float32 result is exactly reproducible.
        np.testing.assert_array_equal(outputs[0][r].numpy(), _f32_sum_in_worker_order(contributions))
    for w in range(num_workers):  # inputs untouched
        for r in range(len(shapes)):
            assert torch.equal(inputs[w][r], originals[w][r])
    assert server.rounds_completed == len(shapes)


def test_ps_bytes_on_wire_counters(make_server: Callable[..., ParameterServer]) -> None:
    server = make_server(2)
    numel = 100003

    def work(worker: int) -> tuple[int, int]:
        with _client(server, worker) as client:
            assert client.bytes_sent == HEADER.size and client.bytes_received == HEADER.size  # handshake
            client.reset_counters()
            for _ in range(3):
                client.allreduce(torch.ones(numel))
            return client.bytes_sent, client.bytes_received

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = [f.result(timeout=WAIT_S) for f in [pool.submit(work, w) for w in range(2)]]
    per_round = HEADER.size + 4 * numel
    assert results == [(3 * per_round, 3 * per_round)] * 2


def test_ps_client_rejects_bad_arguments(make_server: Callable[..., ParameterServer]) -> None:
    server = make_server(2)
    with pytest.raises(ValueError, match="worker_id"):
        ParameterServerClient(HOST, server.port, 2, 2, timeout=WAIT_S)
    with pytest.raises(RuntimeError, match="expects 3 workers"):
        ParameterServerClient(HOST, server.port, 0, 3, timeout=WAIT_S)
    with _client(server, 0) as client:
        with pytest.raises(ValueError, match="float32"):
            client.allreduce(torch.ones(4, dtype=torch.float64))


def _raw_exchange(port: int, data: bytes) -> tuple[int, str]:
    """Send raw bytes; return (op, text) of the first reply frame that is not a WELCOME (the
    answer to a HELLO), and check that the server then closes the connection."""

    def recv_exact(sock: socket.socket, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            assert chunk, "server closed before a complete reply frame"
            buf += chunk
        return buf

    with socket.create_connection((HOST, port), timeout=WAIT_S) as sock:
        sock.sendall(data)
        while True:
            magic, op, _dtype, _worker, _rnd, _count, nbytes = HEADER.unpack(recv_exact(sock, HEADER.size))
            assert magic == MAGIC
            body = recv_exact(sock, nbytes)
            if op != OP_WELCOME:
                break
        assert sock.recv(1) == b"", "server kept the connection open after an error"
        return op, body.decode()


def _hello(worker: int, num_workers: int) -> bytes:
    return HEADER.pack(MAGIC, OP_HELLO, DTYPE_BYTES, worker, 0, num_workers, 0)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\xde\xad\xbe\xef" * 8, "bad magic"),
        (b"\xde\xad\xbe\xef" * 5000, "bad magic"),  # more garbage than one header
        (HEADER.pack(MAGIC, 99, DTYPE_F32, 0, 0, 0, 0), "unexpected op 99"),
        (HEADER.pack(MAGIC, OP_WELCOME, DTYPE_BYTES, 0, 0, 2, 0), "unexpected op"),  # server-only op
        (HEADER.pack(MAGIC, OP_PUSH, DTYPE_F32, 0, 0, 1 << 40, 4 << 40), "exceeds"),  # oversized prefix
        (_hello(0, 2) + HEADER.pack(MAGIC, OP_PUSH, DTYPE_F32, 0, 0, 1 << 40, 4 << 40), "exceeds"),
        (HEADER.pack(MAGIC, OP_PUSH, DTYPE_F32, 0, 0, 1, 4) + b"\0" * 4, "PUSH before HELLO"),
        (_hello(5, 2), "out of range"),
        (_hello(0, 2) + HEADER.pack(MAGIC, OP_PUSH, DTYPE_F32, 0, 0, 3, 8) + b"\0" * 8, "does not hold"),
        (_hello(0, 2) + HEADER.pack(MAGIC, OP_PUSH, 7, 0, 0, 2, 8) + b"\0" * 8, "dtype"),
        (_hello(0, 2) + HEADER.pack(MAGIC, OP_PUSH, DTYPE_F32, 1, 0, 2, 8) + b"\0" * 8, "worker 1"),
        (_hello(0, 2) + HEADER.pack(MAGIC, OP_PUSH, DTYPE_F32, 0, 9, 2, 8) + b"\0" * 8, "round 9"),
    ],
    ids=[
        "garbage", "lots-of-garbage", "unknown-op", "server-op", "oversized", "oversized-after-hello",
        "push-before-hello", "worker-out-of-range", "count-vs-bytes", "dtype", "other-worker", "wrong-round",
    ],
)
def test_ps_bad_input_gets_error_and_server_keeps_serving(
    make_server: Callable[..., ParameterServer], data: bytes, expected: str
) -> None:
    server = make_server(2)
    op, text = _raw_exchange(server.port, data)
    assert op == OP_ERROR and expected in text
    x = [torch.arange(5, dtype=torch.float32), torch.full((5,), 0.5)]
    outputs = _run_workers(server, [[x[0]], [x[1]]])
    for w in range(2):
        assert torch.equal(outputs[w][0], x[0] + x[1])


def test_ps_bad_client_does_not_disturb_a_round_in_progress(
    make_server: Callable[..., ParameterServer],
) -> None:
    server = make_server(2)
    with ThreadPoolExecutor(max_workers=1) as pool, _client(server, 0) as c0:
        pending = pool.submit(c0.allreduce, torch.ones(10))
        _wait_until(lambda: server._round is not None, "worker 0's push to arrive")
        op, text = _raw_exchange(server.port, b"x" * HEADER.size)  # garbage while worker 0 waits
        assert op == OP_ERROR and "bad magic" in text
        with _client(server, 1) as c1:
            out1 = c1.allreduce(torch.full((10,), 2.0))
        out0 = pending.result(timeout=WAIT_S)
    assert torch.equal(out0, torch.full((10,), 3.0)) and torch.equal(out1, out0)


def _wait_until(cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def test_ps_mismatched_element_count_rejects_only_the_offender(
    make_server: Callable[..., ParameterServer],
) -> None:
    server = make_server(2)
    with ThreadPoolExecutor(max_workers=1) as pool, _client(server, 0) as c0:
        pending = pool.submit(c0.allreduce, torch.ones(10))
        _wait_until(lambda: server._round is not None, "worker 0's push to arrive")
        with _client(server, 1) as bad:
            with pytest.raises(RuntimeError, match="11 elements, but other workers sent 10"):
                bad.allreduce(torch.ones(11))
            with pytest.raises(RuntimeError, match="closed"):  # the rejected client is unusable
                bad.allreduce(torch.ones(10))
        with _client(server, 1) as good:  # the worker reconnects and joins the same round
            out1 = good.allreduce(torch.full((10,), 4.0))
        out0 = pending.result(timeout=WAIT_S)
    assert torch.equal(out0, torch.full((10,), 5.0)) and torch.equal(out1, out0)


def test_ps_duplicate_worker_in_a_round_is_rejected(make_server: Callable[..., ParameterServer]) -> None:
    server = make_server(2)
    with ThreadPoolExecutor(max_workers=1) as pool, _client(server, 0) as c0:
        pending = pool.submit(c0.allreduce, torch.ones(3))
        _wait_until(lambda: server._round is not None, "worker 0's push to arrive")
        with _client(server, 0) as dup, pytest.raises(RuntimeError, match="worker 0 already contributed"):
            dup.allreduce(torch.full((3,), 100.0))
        with _client(server, 1) as c1:
            out1 = c1.allreduce(torch.full((3,), 2.0))
        out0 = pending.result(timeout=WAIT_S)
    assert torch.equal(out0, torch.full((3,), 3.0)) and torch.equal(out1, out0)  # the duplicate was not added


def test_ps_round_timeout_reports_missing_workers_then_recovers(
    make_server: Callable[..., ParameterServer],
) -> None:
    server = make_server(3, round_timeout_s=0.3)
    with _client(server, 1) as lonely:
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match=r"timed out .*missing workers \[0, 2\]"):
            lonely.allreduce(torch.ones(4))
        assert time.monotonic() - t0 < 5.0
    outputs = _run_workers(server, [[torch.full((4,), float(w))] for w in range(3)])
    assert all(torch.equal(o[0], torch.full((4,), 3.0)) for o in outputs)


def test_ps_idle_client_is_timed_out_without_blocking_others(
    make_server: Callable[..., ParameterServer],
) -> None:
    server = make_server(1, idle_timeout_s=0.2)
    with socket.create_connection((HOST, server.port), timeout=WAIT_S) as silent:
        outputs = _run_workers(server, [[torch.ones(2)]])  # served while the silent client idles
        assert torch.equal(outputs[0][0], torch.ones(2))
        hdr = silent.recv(HEADER.size)  # the server tells it why, then closes
        assert len(hdr) == HEADER.size and HEADER.unpack(hdr)[1] == OP_ERROR


def test_ps_close_fails_waiting_client_promptly(make_server: Callable[..., ParameterServer]) -> None:
    server = make_server(2, round_timeout_s=60.0)
    with _client(server, 0) as c0, ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(c0.allreduce, torch.ones(3))
        _wait_until(lambda: server._round is not None, "worker 0's push to arrive")
        t0 = time.monotonic()
        server.close()
        with pytest.raises(RuntimeError):
            pending.result(timeout=WAIT_S)
        assert time.monotonic() - t0 < 10.0
    assert not any(t.is_alive() for t in threading.enumerate() if t.name.startswith("ps-"))


def test_ps_command_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "host_agents.param_server", "--host", HOST, "--port", "0", "--workers", "1"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith(f"parameter server listening on {HOST}:"), line
        port = int(line.rsplit(":", 1)[1])
        assert port > 0
        with ParameterServerClient(HOST, port, 0, 1, timeout=WAIT_S) as client:
            assert torch.equal(client.allreduce(torch.tensor([1.5, -2.0])), torch.tensor([1.5, -2.0]))
        proc.terminate()
        assert proc.wait(timeout=WAIT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=WAIT_S)
    helped = subprocess.run(
        [sys.executable, "-m", "host_agents.param_server", "--help"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=WAIT_S, check=True,
    )
    for flag in ("--host", "--port", "--workers", "--round-timeout", "--idle-timeout", "--max-message-bytes"):
        assert flag in helped.stdout


# ---------------------------------------------------------------------------- gloo


def test_bytes_on_wire_estimate() -> None:
    assert bytes_on_wire_estimate(1000, 1) == 0
    assert bytes_on_wire_estimate(1000, 2) == 4000  # 2 * 1/2 * 4000 bytes
    assert bytes_on_wire_estimate(1000, 4) == 6000  # 2 * 3/4 * 4000 bytes
    assert bytes_on_wire_estimate(100003, 3) == 2 * 2 * 100003 * 4 // 3
    assert bytes_on_wire_estimate(10, 2, element_size=8) == 80
    assert GlooAllreduce.bytes_on_wire_estimate(1000, 4) == 6000
    with pytest.raises(ValueError):
        bytes_on_wire_estimate(10, 0)


_GLOO_RANK = textwrap.dedent(
    """
    import json, sys, torch
    from host_agents.gloo_allreduce import GlooAllreduce
    rank, world, port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    g = GlooAllreduce(rank, world, "127.0.0.1", port, timeout_s=30.0, ifname="lo")
    results = []
    for numel in (1, 1000, 100003):
        x = torch.arange(numel, dtype=torch.float32) * (rank + 1) + 0.25
        before = x.clone()
        y = g.allreduce(x)
        results.append({"unchanged": bool(torch.equal(x, before)), "distinct": y.data_ptr() != x.data_ptr(),
                        "head": y[:3].tolist(), "tail": y[-2:].tolist(), "sum": float(y.double().sum())})
    g.close()
    print(json.dumps(results))
    """
)



@pytest.mark.skipif(
    not (dist.is_available() and dist.is_gloo_available()),
    reason="this torch build has no torch.distributed gloo backend",
)
def test_gloo_allreduce_two_ranks() -> None:
    world, port = 2, free_port("tcp", HOST)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _GLOO_RANK, str(rank), str(world), str(port)],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for rank in range(world)
    ]
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, err[-2000:]
            outs.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=WAIT_S)
    assert outs[0] == outs[1]  # identical on both ranks
    for numel, res in zip((1, 1000, 100003), outs[0], strict=True):
        assert res["unchanged"] and res["distinct"]
        # sum over ranks of (arange * (rank + 1) + 0.25) == arange * 3 + 0.5
        idx = np.arange(numel, dtype=np.float64)
        assert res["head"] == pytest.approx((idx[:3] * 3 + 0.5).tolist())
        assert res["tail"] == pytest.approx((idx[-2:] * 3 + 0.5).tolist(), rel=1e-6)
        assert res["sum"] == pytest.approx(float(np.sum(idx * 3 + 0.5)), rel=1e-6)
