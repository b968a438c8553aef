"""The agents' networks and how their parameters travel.

- ``DuelingQNetwork``: Dueling DQN (Wang et al. 2016). Atari frames go through the Nature-CNN
  torso (Mnih et al. 2015) and two 512-unit streams (value, advantage): about 3.3M parameters,
  13 MB as float32, the size the seed measured. Flat observations go through an MLP.
- ``ActorCritic``: policy logits and a state value for A2C / PPO (separate MLP or a shared CNN).

Parameters are shipped as one float32 vector in ``parameters()`` order (``params_to_bytes``),
with a small header that names the count so that a blob from another network is refused.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import torch
from torch import nn

from host_agents.cli import ConfigError

__all__ = [
    "ActorCritic",
    "DuelingQNetwork",
    "flat_gradients",
    "load_flat_gradients",
    "load_flat_params",
    "flat_params",
    "params_from_bytes",
    "params_to_bytes",
    "select_device",
]

_PARAMS_MAGIC = b"INP1"
_PARAMS_HEADER = struct.Struct("!4sII")  # magic, float count, crc32 of the floats


def select_device(name: str) -> torch.device:
    """``auto`` takes CUDA when present, else the CPU; ``cpu`` / ``cuda`` / ``cuda:N`` as asked
    (ConfigError for a name torch does not know, or CUDA asked for and absent)."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ConfigError(f"unknown device {name!r}: use auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"device {name!r} asked for, but torch sees no CUDA device")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ConfigError(f"device {name!r}: only {torch.cuda.device_count()} CUDA devices")
    elif device.type != "cpu":
        raise ConfigError(f"device {name!r} is not supported: use auto, cpu, cuda or cuda:N")
    return device


def _mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers)


class NatureTorso(nn.Sequential):
    """Three convolutions of the Nature DQN over 4x84x84 uint8 frames; output 3136 features."""

    out_features = 3136

    def __init__(self, in_channels: int = 4) -> None:
        super().__init__(
            nn.Conv2d(in_channels, 32, 8, stride=4),
            nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1),
            nn.ReLU(),
            nn.Flatten(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return super().forward(x.float() / 255.0)


def _is_image(obs_shape: tuple[int, ...]) -> bool:
    return len(obs_shape) == 3


class DuelingQNetwork(nn.Module):
    """Q(s, a) = V(s) + A(s, a) - mean_a A(s, a)."""

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, hidden: int = 128) -> None:
        super().__init__()
        if _is_image(obs_shape):
            self.torso: nn.Module = NatureTorso(obs_shape[0])
            features, stream = NatureTorso.out_features, 512
        elif len(obs_shape) == 1:
            self.torso = _mlp([obs_shape[0], hidden])
            features, stream = hidden, hidden
        else:
            raise ValueError(f"no network for observations of shape {obs_shape}")
        self.value = nn.Sequential(nn.Linear(features, stream), nn.ReLU(), nn.Linear(stream, 1))
        self.advantage = nn.Sequential(nn.Linear(features, stream), nn.ReLU(), nn.Linear(stream, num_actions))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        h = self.torso(obs)
        a = self.advantage(h)
        return self.value(h) + a - a.mean(dim=1, keepdim=True)


class ActorCritic(nn.Module):
    """Policy logits and V(s). Flat observations: two separate tanh MLPs (the usual choice for
    classic control); images: the Nature torso shared by both heads."""

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, hidden: int = 64) -> None:
        super().__init__()
        self.shared = _is_image(obs_shape)
        if self.shared:
            self.torso: nn.Module = nn.Sequential(
                NatureTorso(obs_shape[0]), nn.Linear(NatureTorso.out_features, 512), nn.ReLU()
            )
            self.policy: nn.Module = nn.Linear(512, num_actions)
            self.critic: nn.Module = nn.Linear(512, 1)
        elif len(obs_shape) == 1:
            n = obs_shape[0]
            self.torso = nn.Identity()
            self.policy = nn.Sequential(
                nn.Linear(n, hidden),
                nn.Tanh(),
                nn.Linear(hidden, hidden),
                nn.Tanh(),
                nn.Linear(hidden, num_actions),
            )
            self.critic = nn.Sequential(
                nn.Linear(n, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1)
            )
        else:
            raise ValueError(f"no network for observations of shape {obs_shape}")

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits [B, A], values [B])."""
        h = self.torso(obs)
        return self.policy(h), self.critic(h).squeeze(-1)


class GreedyPolicy:
    """argmax_a Q(s, a) of a :class:`DuelingQNetwork` for one observation, as an actor picks its
    action every environment step. For an MLP network the layers that decide it run in NumPy
    (Q's value stream and mean term are the same for every action, so the advantage stream
    alone orders the actions): ~10 us per step against ~120 us for a torch forward of a single
    observation, whose per-call overhead is most of an actor's CPU. Image networks use torch.
    Call :meth:`refresh` after the network's parameters change."""

    def __init__(self, net: DuelingQNetwork) -> None:
        self.net = net
        self._mlp = isinstance(net.torso, nn.Sequential) and not isinstance(net.torso, NatureTorso)
        self.refresh()

    def refresh(self) -> None:
        if not self._mlp:
            return
        torso = [m for m in self.net.torso if isinstance(m, nn.Linear)]
        adv = [m for m in self.net.advantage if isinstance(m, nn.Linear)]

        def wb(m: nn.Linear) -> tuple[np.ndarray, np.ndarray]:
            return (m.weight.detach().cpu().numpy().T.copy(), m.bias.detach().cpu().numpy().copy())

        self._layers = [wb(m) for m in torso + adv]

    def act(self, obs: np.ndarray) -> int:
        if not self._mlp:
            with torch.no_grad():
                q = self.net(torch.from_numpy(np.asarray(obs)[None]).to(next(self.net.parameters()).device))
            return int(q.argmax(dim=1).item())
        x = np.asarray(obs, np.float32)
        last = len(self._layers) - 1
        for i, (w, b) in enumerate(self._layers):
            x = x @ w + b
            if i != last:
                np.maximum(x, 0.0, out=x)
        return int(np.argmax(x))


def flat_params(model: nn.Module) -> np.ndarray:
    """All parameters as one float32 vector (a copy, on the CPU)."""
    with torch.no_grad():
        return torch.cat([p.detach().reshape(-1).float().cpu() for p in model.parameters()]).numpy()


def load_flat_params(model: nn.Module, flat: np.ndarray) -> None:
    """Copy a ``flat_params`` vector into ``model`` (ValueError when the size differs)."""
    params = list(model.parameters())
    total = sum(p.numel() for p in params)
    if flat.size != total:
        raise ValueError(f"parameter vector has {flat.size} values, the network {total}")
    src = torch.from_numpy(np.ascontiguousarray(flat, dtype=np.float32))
    offset = 0
    with torch.no_grad():
        for p in params:
            n = p.numel()
            p.copy_(src[offset : offset + n].view_as(p))
            offset += n


def flat_gradients(model: nn.Module) -> torch.Tensor:
    """All parameter gradients as one float32 CPU vector (zeros where a gradient is None)."""
    return torch.cat(
        [
            (p.grad if p.grad is not None else torch.zeros_like(p)).detach().reshape(-1).float().cpu()
            for p in model.parameters()
        ]
    )


def load_flat_gradients(model: nn.Module, flat: torch.Tensor) -> None:
    """Set each parameter's ``.grad`` from a ``flat_gradients``-shaped vector."""
    total = sum(p.numel() for p in model.parameters())
    if flat.numel() != total:
        raise ValueError(f"gradient vector has {flat.numel()} values, the network {total}")
    offset = 0
    for p in model.parameters():
        n = p.numel()
        chunk = flat[offset : offset + n].view_as(p).to(device=p.device, dtype=p.dtype)
        if p.grad is None:
            p.grad = chunk.clone()
        else:
            p.grad.copy_(chunk)
        offset += n


def params_to_bytes(model: nn.Module) -> bytes:
    """The parameter blob published to the parameter store."""
    flat = flat_params(model).astype("<f4", copy=False)
    body = flat.tobytes()
    return _PARAMS_HEADER.pack(_PARAMS_MAGIC, flat.size, zlib.crc32(body)) + body


def params_from_bytes(blob: bytes) -> np.ndarray:
    """The float32 vector in a ``params_to_bytes`` blob (ValueError when it is not one)."""
    if len(blob) < _PARAMS_HEADER.size:
        raise ValueError(f"parameter blob of {len(blob)} bytes is too short")
    magic, count, crc = _PARAMS_HEADER.unpack_from(blob)
    body = memoryview(blob)[_PARAMS_HEADER.size :]
    if magic != _PARAMS_MAGIC or len(body) != 4 * count:
        raise ValueError("not a parameter blob (bad magic or length)")
    if zlib.crc32(body) != crc:
        raise ValueError("parameter blob is corrupt (crc32 mismatch)")
    return np.frombuffer(body, dtype="<f4").astype(np.float32)
