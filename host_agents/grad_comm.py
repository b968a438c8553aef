"""One interface over the gradient transports the data-parallel workers can use.

``GradComm.allreduce(flat, version)`` returns the elementwise SUM of ``flat`` over the workers
and, for the switch, the per-chunk ``ChunkInfo`` (count, bitmap, versions) of the result:

- ``switch``: in-network aggregation (``AggregationClient``), synchronous or asynchronous;
- ``ps``: the TCP parameter server baseline (``ParameterServerClient``);
- ``gloo``: torch.distributed ring allreduce (``GlooAllreduce``);
- ``local``: one process, no communication (the sum of one tensor is itself).

Host-side transports report ``info = None``: every worker's tensor is in every sum.
"""

from __future__ import annotations

import torch

from host_agents.agg_client import AggregationClient, ChunkInfo
from host_agents.agg_protocol import AGG_UDP_PORT, DEFAULT_VALUES_PER_PACKET

__all__ = [
    "GradComm",
    "GlooComm",
    "LocalComm",
    "PSComm",
    "SwitchComm",
    "parse_addr",
]


def parse_addr(text: str, default_port: int) -> tuple[str, int]:
    """``"ip"`` or ``"ip:port"`` -> (ip, port); ValueError on a bad port."""
    host, sep, port = text.rpartition(":")
    if not sep:
        return text, default_port
    try:
        return host, int(port)
    except ValueError:
        raise ValueError(f"bad address {text!r}: port {port!r} is not a number") from None


class GradComm:
    """Base: ``allreduce`` -> (sum, per-chunk info or None); counters of what was sent.
    ``values_per_chunk``: the chunk size of the per-chunk info (the switch's values per packet)."""

    name = "base"

    def __init__(self, num_workers: int, values_per_chunk: int = DEFAULT_VALUES_PER_PACKET) -> None:
        self.num_workers = num_workers
        self.values_per_chunk = values_per_chunk
        self.calls = 0

    def allreduce(self, flat: torch.Tensor, version: int) -> tuple[torch.Tensor, ChunkInfo | None]:
        raise NotImplementedError

    def counters(self) -> dict[str, float]:
        return {"allreduce_calls": self.calls}

    def close(self) -> None:
        pass


class LocalComm(GradComm):
    name = "local"

    def __init__(self) -> None:
        super().__init__(1)

    def allreduce(self, flat: torch.Tensor, version: int) -> tuple[torch.Tensor, ChunkInfo | None]:
        self.calls += 1
        return flat.clone(), None


class SwitchComm(GradComm):
    name = "switch"

    def __init__(
        self,
        switch: str,
        job_id: int,
        worker_id: int,
        num_workers: int,
        num_slots: int,
        bind: str,
        threshold: int | None,
        fixed_exponent: int | None,
        timeout: float,
        max_tries: int,
        values_per_packet: int = DEFAULT_VALUES_PER_PACKET,
    ) -> None:
        super().__init__(num_workers, values_per_packet)
        self.client = AggregationClient(
            parse_addr(switch, AGG_UDP_PORT),
            job_id,
            worker_id,
            num_workers,
            num_slots,
            bind=parse_addr(bind, 0),
            threshold=threshold,
            fixed_exponent=fixed_exponent,
            timeout=timeout,
            max_tries=max_tries,
            values_per_packet=values_per_packet,
        )

    def allreduce(self, flat: torch.Tensor, version: int) -> tuple[torch.Tensor, ChunkInfo | None]:
        out = self.client.allreduce(flat, version=version)
        self.calls += 1
        return out, self.client.last_info

    def call_index(self, numel: int) -> int:
        """Asynchronous jobs: the job-wide call number the last result of a ``numel``-element
        tensor belongs to. Every call runs ceil(chunks / slots) rounds on each slot, and a slot
        that fell behind (STALE) skips ahead to a later call, so the furthest slot's round
        count names the call. This is the model version a worker reaches by applying it: a
        worker that skipped calls is that many updates behind the others."""
        chunks = self.client.format.chunks(numel)
        active = self.client.slots[: min(self.client.num_slots, chunks)]
        rounds_per_call = -(-chunks // self.client.num_slots)
        return max(slot.round for slot in active) // rounds_per_call

    def counters(self) -> dict[str, float]:
        t = self.client.totals
        return {
            "allreduce_calls": self.calls,
            "packets_sent": t.packets_sent,
            "packets_received": t.packets_received,
            "retransmissions": t.retransmissions,
            "stale": t.stale,
            "redone": t.redone,  # predicted first rounds a chunk did not fit (docs/protocol.md)
            "bytes_sent": t.bytes_sent,
        }

    def close(self) -> None:
        self.client.close()


class PSComm(GradComm):
    name = "ps"

    def __init__(self, address: str, worker_id: int, num_workers: int, timeout: float) -> None:
        from host_agents.param_server import ParameterServerClient

        super().__init__(num_workers)
        host, port = parse_addr(address, 5555)
        self.client = ParameterServerClient(host, port, worker_id, num_workers, timeout=timeout)

    def allreduce(self, flat: torch.Tensor, version: int) -> tuple[torch.Tensor, ChunkInfo | None]:
        out = self.client.allreduce(flat.contiguous())
        self.calls += 1
        return out, None

    def counters(self) -> dict[str, float]:
        return {
            "allreduce_calls": self.calls,
            "bytes_sent": self.client.bytes_sent,
            "bytes_received": self.client.bytes_received,
        }

    def close(self) -> None:
        self.client.close()


class GlooComm(GradComm):
    name = "gloo"

    def __init__(self, init: str, rank: int, world_size: int, timeout: float, ifname: str | None) -> None:
        from host_agents.gloo_allreduce import GlooAllreduce

        super().__init__(world_size)
        host, port = parse_addr(init, 29500)
        try:
            self.group = GlooAllreduce(rank, world_size, host, port, timeout_s=timeout, ifname=ifname)
        except RuntimeError as e:  # torch reports a failed rendezvous as RuntimeError/DistStoreError
            raise ConnectionError(f"gloo rendezvous at {host}:{port} failed: {str(e).splitlines()[0]}") from e

    def allreduce(self, flat: torch.Tensor, version: int) -> tuple[torch.Tensor, ChunkInfo | None]:
        out = self.group.allreduce(flat)
        self.calls += 1
        return out, None

    def close(self) -> None:
        self.group.close()
