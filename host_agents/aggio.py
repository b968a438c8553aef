"""Batched UDP I/O for the aggregation client: host_agents/aggio.c (sendmmsg/recvmmsg) built with
the system C compiler into a cached shared object and opened with cffi in ABI mode, the way
softswitch.native builds the switch's data plane (its `build_helper` compiles and caches it).
cffi releases the GIL during each call, so a wait for packets blocks no other thread.

``load()`` returns the opened library, or raises ``AggIOUnavailable`` (no compiler, no cffi, a
build error); the client then falls back to one socket call per packet.
"""

from __future__ import annotations

import errno
import os
import re
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SOURCE = Path(__file__).resolve().parent / "aggio.c"
# -fno-trapping-math: the value loops' selects become vector blends (aggio.c, encode_values);
# nothing here reads floating-point exception flags
CFLAGS = ["-std=gnu11", "-O2", "-ftree-vectorize", "-fno-trapping-math", "-fPIC", "-shared", "-Wall",
          "-Wextra"]

HEADER = SOURCE.with_name("aggio.h")


def _cdef() -> str:
    """aggio.h as cffi's cdef takes it: without comments and preprocessor lines."""
    text = re.sub(r"/\*.*?\*/", " ", HEADER.read_text(), flags=re.S)
    return "\n".join(line for line in text.splitlines() if not line.strip().startswith("#"))


class AggIOUnavailable(RuntimeError):
    """The batched I/O helper cannot be built or opened here."""


@dataclass
class AggIO:
    ffi: Any
    lib: Any
    path: Path


_LOCK = threading.Lock()
_LOADED: AggIO | AggIOUnavailable | None = None


def _build() -> Path:
    from softswitch.native import (  # the project's one C build recipe
        NativeBuildError,
        build_helper,
        compiler,
        sanitize_cflags,
        sanitizers_active,
    )

    try:
        # under tests/test_native_sanitizers.py's child run, with ASan + UBSan like the switch's C
        flags = CFLAGS + sanitize_cflags(compiler()) if sanitizers_active() else CFLAGS
        return build_helper(SOURCE, flags, "compiling host_agents/aggio.c", libs=("-lm",), depends=(HEADER,))
    except (NativeBuildError, OSError) as e:
        raise AggIOUnavailable(str(e)) from None


def load() -> AggIO:
    """The helper, built on first use (cached across processes); AggIOUnavailable if it cannot be."""
    global _LOADED
    with _LOCK:
        if _LOADED is None:
            try:
                import cffi

                path = _build()
                f = cffi.FFI()
                f.cdef(_cdef())
                _LOADED = AggIO(f, f.dlopen(str(path)), path)
            except (ImportError, OSError, AggIOUnavailable) as e:
                _LOADED = e if isinstance(e, AggIOUnavailable) else AggIOUnavailable(str(e))
        if isinstance(_LOADED, AggIOUnavailable):
            raise _LOADED
        return _LOADED


class BatchSocket:
    """A bound, non-blocking UDP socket that sends rows of a packet table and receives into
    another, a batch per call. ``tx`` and ``rx`` are uint8 arrays of shape (rows, stride) that
    this object keeps alive for as long as the C side may read or write them."""

    def __init__(self, sock: socket.socket, dest: tuple[str, int], tx: np.ndarray, rx: np.ndarray) -> None:
        io = load()
        self._io = io
        self._lib = io.lib
        self.sock = sock
        self._fd = sock.fileno()
        # 1 while UDP GSO sends work on this socket's route (aggio_send turns it to 0 where the
        # kernel refuses them: no checksum offload on the link); shared with the C loop (aggc_run)
        self.gso = io.ffi.new("int32_t *", 1)
        ip = socket.gethostbyname(dest[0])
        self._ip_be = int.from_bytes(socket.inet_aton(ip), "little")  # the bytes as they lie in memory
        self._port_be = int.from_bytes(dest[1].to_bytes(2, "big"), "little")
        assert tx.dtype == np.uint8 and tx.ndim == 2 and tx.flags.c_contiguous
        assert rx.dtype == np.uint8 and rx.ndim == 2 and rx.flags.c_contiguous
        self.tx, self.rx = tx, rx
        self.tx_len = np.zeros(tx.shape[0], np.uint32)
        self.rx_len = np.zeros(rx.shape[0], np.uint32)
        f = io.ffi
        self._tx_p = f.cast("uint8_t *", f.from_buffer(tx))
        self._rx_p = f.cast("uint8_t *", f.from_buffer(rx, require_writable=True))
        self._tx_len_p = f.cast("uint32_t *", f.from_buffer(self.tx_len))
        self._rx_len_p = f.cast("uint32_t *", f.from_buffer(self.rx_len, require_writable=True))
        self._keep = (tx, rx, self.tx_len, self.rx_len)

    def send_rows(self, rows: np.ndarray) -> None:
        """Send rows ``rows`` of ``tx``, each ``tx_len[row]`` bytes long. OSError if the kernel
        refuses them (a socket buffer that stays full for a second counts as refusal)."""
        rows = np.ascontiguousarray(rows, np.int32)
        n = int(rows.size)
        done = 0
        while done < n:
            part = rows[done:]
            r = self._lib.aggio_send(
                self._fd,
                self._tx_p,
                self.tx.shape[1],
                self._io.ffi.cast("int32_t *", part.ctypes.data),
                self._tx_len_p,
                n - done,
                self._ip_be,
                self._port_be,
                1_000_000_000,
                self.gso,
            )
            if r <= 0:
                code = -r if r < 0 else errno.EAGAIN
                raise OSError(code, f"sendmmsg: {os.strerror(code)}")
            done += r

    def recv(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for packets and receive what has arrived (at most the
        table's rows) into ``rx``/``rx_len``; 0 when none came."""
        ns = max(0, int(timeout * 1e9))
        r = self._lib.aggio_recv(self._fd, self._rx_p, self.rx.shape[1], self._rx_len_p, self.rx.shape[0], ns)
        if r < 0:
            raise OSError(-r, f"recvmmsg: {os.strerror(-r)}")
        return int(r)
