"""AggregationClient's refusals, checked before any packet is sent (the client is bound to
loopback; its allreduce over a real switch is tested in test_aggregation_netns.py)."""

from __future__ import annotations

import pytest
import torch

from host_agents.agg_client import AggregationClient, AllreduceStats, _Slot
from host_agents.agg_protocol import VALUES_PER_PACKET

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


def test_async_slot_rejoins_at_the_round_the_switch_holds() -> None:
    """After STALE a slot takes part in the held round with this tensor's chunk for that round's
    position in the call, not in the next call (whose first round would restart a cell the in-step
    workers are still filling)."""
    with client(threshold=3, fixed_exponent=1, num_slots=4) as c:
        c._async_size = 10 * VALUES_PER_PACKET  # 10 chunks on 4 slots: 3 rounds per call
        slot = _Slot(1, rounds=[5, 9], round=1)  # call 1, sent chunk 1 in round 1; chunks 5, 9 to come
        stats = AllreduceStats()
        c._on_stale(slot, 8, 3, stats)  # the switch holds round 8: call 3, second position
        assert (slot.round, slot.rounds, stats.stale) == (7, [5, 9], 1)
        slot = _Slot(3, rounds=[7, -1], round=1)
        c._on_stale(slot, 9, 3, AllreduceStats())  # call 3's last round: slot 3 pads there
        assert (slot.round, slot.rounds) == (8, [-1])
        slot = _Slot(2, rounds=[6], round=1)
        c._on_stale(slot, 3, 3, AllreduceStats())  # same call, last position: chunk 10 -> padding
        assert (slot.round, slot.rounds) == (2, [-1])


def test_synchronous_stale_is_an_error() -> None:
    with client() as c:
        with pytest.raises(RuntimeError, match="round counters disagree"):
            c._on_stale(_Slot(0, round=1), 3, 1, AllreduceStats())
