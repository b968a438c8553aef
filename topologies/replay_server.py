"""The C replay memory server (``dpdk_fallback/build/replay_server``) as a process that tests and
benchmarks start for real: on this host or inside a network namespace, up once it has printed
its ready line, stopped with SIGTERM (which writes its checkpoint) or a given signal."""

from __future__ import annotations

import selectors
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parent.parent
SERVER_BIN = REPO / "dpdk_fallback" / "build" / "replay_server"


class ReplayServerProcess:
    """``replay_server *args`` (in ``ns`` when given). stderr goes to ``log`` (a file: the
    server's DPDK/EAL lines and exit counters can be long) or to a temporary file; stdout is
    read up to the ready line, then drained in the background.

    Raises RuntimeError with the server's stderr when it does not get ready within ``timeout``.
    """

    def __init__(
        self,
        args: Sequence[str],
        ns=None,  # topologies.netns.NetNS
        log: Path | None = None,
        timeout: float = 30.0,
        binary: Path = SERVER_BIN,
        new_session: bool = False,
    ) -> None:
        if not binary.exists():
            raise FileNotFoundError(f"{binary} is not built (make -C dpdk_fallback)")
        self.argv = [str(binary), *args]
        self._log_file: IO[str] = open(log, "w") if log else tempfile.TemporaryFile("w+")  # noqa: SIM115
        self.log = log
        popen_kw = {
            "stdin": subprocess.DEVNULL,
            "stdout": subprocess.PIPE,
            "stderr": self._log_file,
            "start_new_session": new_session,  # e.g. out of reach of a terminal's Ctrl-C
        }
        if ns is None:
            self.proc = subprocess.Popen(self.argv, text=True, cwd=REPO, **popen_kw)
        else:
            self.proc = ns.popen(self.argv, cwd=REPO, **popen_kw)
        self.ready_line = self._wait_ready(timeout)
        # anything printed later must not fill the pipe and stall the server
        threading.Thread(target=lambda: deque(self.proc.stdout, maxlen=0), daemon=True).start()

    def _wait_ready(self, timeout: float) -> str:
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        try:
            while (left := deadline - time.monotonic()) > 0:
                if sel.select(left):
                    line = self.proc.stdout.readline()
                    if line.startswith("replay_server: ready"):
                        return line.strip()
                    if not line:  # exited
                        break
        finally:
            sel.close()
        self.stop(signal.SIGKILL)
        raise RuntimeError(
            f"replay_server did not get ready (rc {self.proc.returncode}): {' '.join(self.argv[1:])}\n"
            f"{self.stderr()[-3000:]}"
        )

    def stderr(self) -> str:
        """Everything the server wrote to stderr so far."""
        self._log_file.flush()
        if self.log is not None:
            return self.log.read_text()
        self._log_file.seek(0)
        text = self._log_file.read()
        self._log_file.seek(0, 2)
        return text

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        """Send ``sig`` (SIGTERM: the server checkpoints and exits), wait, kill if it hangs;
        returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self) -> ReplayServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
