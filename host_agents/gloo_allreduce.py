"""Host-only ring allreduce via `torch.distributed` with the gloo backend: the strong baseline.

Gloo's CPU allreduce (what `ProcessGroupGloo` runs for dense CPU tensors) is a ring algorithm: a
reduce-scatter followed by an allgather, each over `n - 1` steps, pipelined in segments. It is what
PyTorch users get by default without special hardware, so in-switch aggregation has to beat it,
not only the parameter server.
"""

from __future__ import annotations

import os
from datetime import timedelta

import torch
import torch.distributed as dist


def bytes_on_wire_estimate(numel: int, world_size: int, element_size: int = 4) -> int:
    """ANALYTIC ESTIMATE (not a measurement) of the payload bytes one worker sends per allreduce.

    Gloo exposes no byte counters, so benchmarks use this model. Ring allreduce splits the tensor
    into `world_size` chunks; in the reduce-scatter each worker sends `n - 1` chunks, and in the
    allgather another `n - 1` chunks, i.e. `2 * (n - 1) / n * size` bytes sent (and as many
    received) per worker, where `size = numel * element_size`. It counts tensor payload only: gloo's
    per-message framing and TCP/IP/Ethernet headers and ACKs are not included, and when `numel` is
    not divisible by `n` the per-rank amounts differ by up to one segment (this is the average over
    ranks, rounded down). With `world_size == 1` nothing is sent.

    To measure real bytes instead, run each rank in its own network namespace (see
    `topologies.netns`) and read `/sys/class/net/<ifname>/statistics/{tx,rx}_bytes` (or the
    namespace's `/proc/net/dev`) before and after the allreduce; that counts every frame on that
    interface, headers and ACKs included. On a shared loopback interface that is not possible,
    because all ranks' traffic is mixed on `lo`.
    """
    if numel < 0 or world_size < 1 or element_size < 1:
        raise ValueError(
            f"need numel >= 0, world_size >= 1, element_size >= 1; got {numel}, {world_size}, {element_size}"
        )
    return 2 * (world_size - 1) * numel * element_size // world_size


class GlooAllreduce:
    """One rank of a gloo process group; `allreduce` returns the SUM over all ranks.

    This owns the process-wide default process group (torch.distributed allows one per process),
    so create one instance per process and `close()` it when done.
    """

    bytes_on_wire_estimate = staticmethod(bytes_on_wire_estimate)

    def __init__(
        self,
        rank: int,
        world_size: int,
        master_addr: str,
        master_port: int,
        timeout_s: float = 60.0,
        ifname: str | None = None,
    ) -> None:
        """Rendezvous with the other ranks over TCP at `master_addr:master_port` (rank 0 listens).

        `ifname` sets GLOO_SOCKET_IFNAME, the interface gloo binds its data connections to (e.g.
        "lo" for loopback tests or a namespace's veth); without it gloo resolves the hostname,
        which can pick an unreachable address.
        """
        if not dist.is_available() or not dist.is_gloo_available():
            raise RuntimeError("torch.distributed with the gloo backend is not available in this torch build")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank must be in 0..{world_size - 1}, got {rank}")
        if dist.is_initialized():
            raise RuntimeError("a default torch.distributed process group already exists in this process")
        if ifname is not None:
            os.environ["GLOO_SOCKET_IFNAME"] = ifname
        host = f"[{master_addr}]" if ":" in master_addr and not master_addr.startswith("[") else master_addr
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://{host}:{master_port}",
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=timeout_s),
        )
        self.rank = rank
        self.world_size = world_size
        self._open = True

    def allreduce(self, tensor: torch.Tensor) -> torch.Tensor:
        """Return the elementwise SUM over all ranks as a new CPU tensor; `tensor` is not modified."""
        if not self._open:
            raise RuntimeError("GlooAllreduce is closed")
        out = tensor.detach().to(device="cpu", copy=True, memory_format=torch.contiguous_format)
        dist.all_reduce(out, op=dist.ReduceOp.SUM)
        return out

    def close(self) -> None:
        """Destroy the process group (idempotent) so the process can exit or re-initialise."""
        if self._open:
            self._open = False
            if dist.is_initialized():
                dist.destroy_process_group()

    def __enter__(self) -> GlooAllreduce:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
