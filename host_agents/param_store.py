"""The shared parameter store the Ape-X learner publishes to and the actors pull from: a
parameter slot of the replay (the C server's SET_PARAMS / GET_PARAMS, or Redis on the Redis
path), so that the same configuration that reaches the replay reaches the parameters."""

from __future__ import annotations

from torch import nn

from host_agents.cli import ConfigError
from host_agents.networks import load_flat_params, params_from_bytes, params_to_bytes
from host_agents.replay_client import ReplayClient
from host_agents.replay_pipeline import ReplayPipeline

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
        held = self.client.set_params(blob, version, self.slot)
        if held != version:  # the server keeps the newer of two versions (docs/replay_protocol.md)
            raise ConfigError(
                f"the parameter store already holds version {held} > {version}, from an earlier "
                "run: continue that run with --resume, or restart the replay server"
            )
        self.version = version
        self.bytes_moved += len(blob)

    def publish_queued(self, model: nn.Module, version: int, io: ReplayPipeline) -> None:
        """:meth:`publish` without waiting: the parameters are serialized now and sent by ``io``,
        in order with its other calls (a refusal surfaces at its next call)."""
        blob = params_to_bytes(model)
        io.set_params(blob, version, self.slot)
        self.version = version
        self.bytes_moved += len(blob)

    def pull(self, model: nn.Module) -> bool:
        """Load the stored parameters into ``model`` when their version differs from the one it
        has (not only when greater: a store restored from a checkpoint may hold an older one);
        False when nothing was published yet or nothing new is there. ConfigError when the
        stored network is not this one (actor and learner with other --env or --hidden)."""
        version, blob = self.client.get_params(self.slot)  # version 0: never published
        self.bytes_moved += len(blob)
        if not blob or version == 0 or version == self.version:
            return False
        flat = params_from_bytes(blob)
        size = sum(p.numel() for p in model.parameters())
        if flat.size != size:
            raise ConfigError(
                f"the parameter store holds a network of {flat.size} values, this one has {size}: "
                "do the publisher and this process use the same --env and --hidden?"
            )
        load_flat_params(model, flat)
        self.version = version
        return True
