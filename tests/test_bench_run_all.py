"""bench.run_all's handling of an interrupt: the benchmark it runs sits in a session of its own
(out of the terminal's reach), so run_all must stop it, not leave it running with its processes
and namespaces."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A stand-in benchmark: records its pid, then sleeps; on SIGINT (what run_all sends, as Ctrl-C
# would) it notes that it cleaned up and exits 130, as the real benchmarks do.
SLEEPER = '''
import signal, sys, time
from pathlib import Path
out = Path(sys.argv[sys.argv.index("--out") + 1])
def on_int(*_):
    out.with_suffix(".cleaned").write_text("yes")
    sys.exit(130)
signal.signal(signal.SIGINT, on_int)
out.with_suffix(".pid").write_text(str(__import__("os").getpid()))
time.sleep(120)
'''

DRIVER = '''
import sys
import bench.run_all as r
r.switch_backend = lambda: {"requested": "test", "ran": "test"}
r.BENCHES = [r.Bench("sleeper", "sleeper_bench", "sleeper.json")]
sys.exit(r.main(["--results-dir", sys.argv[1], "--report-out", sys.argv[2]]))
'''


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) counts as gone
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_sigterm_stops_the_running_benchmark(tmp_path: Path) -> None:
    (tmp_path / "sleeper_bench.py").write_text(SLEEPER)
    results = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(results), str(tmp_path / "report.md")],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pid_file = results / "sleeper.pid"
    try:
        deadline = time.monotonic() + 60  # bounds the test only: the stand-in starts in well under it
        while not pid_file.exists() and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pid_file.exists(), driver.communicate(timeout=10)[0] if driver.poll() is not None else "no pid"
        bench_pid = int(pid_file.read_text())
        driver.send_signal(signal.SIGTERM)
        out, _ = driver.communicate(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode != 0
    assert (results / "sleeper.cleaned").read_text() == "yes", out  # it got SIGINT and cleaned up
    assert not _alive(bench_pid), out
    assert "sleeper: interrupted, stopping it" in out
