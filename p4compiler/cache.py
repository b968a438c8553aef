"""The project's cache folder, shared by the compiler and the targets: what any process may reuse
instead of building again (the P4 grammar's parse tables, the native switch's shared objects)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/innet-drl``, else ``~/.cache/innet-drl`` (not created here)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "innet-drl"
