"""Small socket helpers shared by agents, tests and benchmarks."""

from __future__ import annotations

import socket

__all__ = ["free_port"]


def free_port(kind: str = "tcp", host: str = "127.0.0.1") -> int:
    """A port on ``host`` where nothing listens now (bound once, then released; another process
    could take it in between, which is good enough for starting our own servers)."""
    if kind not in ("tcp", "udp"):
        raise ValueError(f"kind must be tcp or udp, got {kind!r}")
    sock_type = socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM
    with socket.socket(socket.AF_INET, sock_type) as s:
        s.bind((host, 0))
        return s.getsockname()[1]
