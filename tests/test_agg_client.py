"""AggregationClient's refusals, checked before any packet is sent (the client is bound to
loopback; its allreduce over a real switch is tested in test_aggregation_netns.py)."""

from __future__ import annotations

import pytest
import torch

from host_agents.agg_client import AggregationClient

SWITCH = ("127.0.0.1", 9)  # never contacted: every call below is refused first


def client(**kwargs: object) -> AggregationClient:
    args = {"job_id": 1, "worker_id": 0, "num_workers": 4, "num_slots": 8, "bind": ("127.0.0.1", 0)}
    args.update(kwargs)
    return AggregationClient(SWITCH, **args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"worker_id": 32}, "worker id 32 is outside 0..31"),
        ({"num_workers": 0}, "num_workers 0 must be 1..255"),
        ({"num_slots": 0}, "num_slots must be at least 1"),
        ({"threshold": 3}, "asynchronous job needs fixed_exponent"),
        ({"fixed_exponent": 121}, "fixed_exponent 121 must be -120..120"),
    ],
)
def test_constructor_refusals(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        client(**kwargs)


def test_bad_tensors_are_refused() -> None:
    with client() as c:
        with pytest.raises(TypeError, match="takes a torch.Tensor, not list"):
            c.allreduce([1.0, 2.0])  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="NaN or infinity"):
            c.allreduce(torch.tensor([1.0, float("nan")]))
        assert c.totals.packets_sent == 0


def test_asynchronous_job_refuses_a_second_tensor_size() -> None:
    with client(threshold=3, fixed_exponent=4) as c:
        c._async_size = 100  # as after a first call of 100 elements
        with pytest.raises(ValueError, match="first sent 100 elements, now 50"):
            c.allreduce(torch.zeros(50))
        assert c.totals.packets_sent == 0
