"""The shared parameter store the Ape-X learner publishes to and the actors pull from: a
parameter slot of the replay (the C server's SET_PARAMS / GET_PARAMS, or Redis on the Redis
path), so that the same configuration that reaches the replay reaches the parameters."""

from __future__ import annotations

from torch import nn

from host_agents.networks import load_flat_params, params_from_bytes, params_to_bytes
from host_agents.replay_client import ReplayClient

__all__ = ["ParamStore"]


class ParamStore:
    """Publish and pull one network's parameters through ``client`` (slot ``slot``)."""

    def __init__(self, client: ReplayClient, slot: int = 0) -> None:
        self.client = client
        self.slot = slot
        self.version = 0  # version of the parameters last published or pulled
        self.bytes_moved = 0

    def publish(self, model: nn.Module, version: int) -> None:
        blob = params_to_bytes(model)
        self.client.set_params(blob, version, self.slot)
        self.version = version
        self.bytes_moved += len(blob)

    def pull(self, model: nn.Module) -> bool:
        """Load the stored parameters into ``model`` when they are newer than the ones it has;
        False when nothing was published yet or nothing newer is there."""
        version, blob = self.client.get_params(self.slot)  # version 0: never published
        self.bytes_moved += len(blob)
        if not blob or version <= self.version:
            return False
        load_flat_params(model, params_from_bytes(blob))
        self.version = version
        return True
