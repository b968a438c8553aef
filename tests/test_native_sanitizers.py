"""The native backend's C (runtime + generated programs) and the aggregation client's
(host_agents/aggio.c) under AddressSanitizer and
UndefinedBehaviorSanitizer: the STF corpora, the differential test, the garbage flood, the
switch's lifecycle and switch processes forwarding over veth pairs run in a child pytest whose
native programs are built with -fsanitize=address,undefined (and -fno-sanitize-recover, so any
report aborts), with libasan preloaded into Python. A sanitizer
report fails this test and shows in its output.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from softswitch.native import sanitizer_runtime

ROOT = Path(__file__).resolve().parent.parent
# Two children run at once (the parent only waits; the machine has 2 cores): the in-process
# packet tests in one, everything that starts processes or uses namespaces in the other, so that
# the two never touch the same network objects.
CHILD_GROUPS = [
    ["tests/test_stf_corpus.py", "tests/test_innet_stf.py", "tests/test_native_differential.py",
     "tests/test_wide_differential.py"],
    ["tests/test_native_robustness.py", "tests/test_native_lifecycle.py",
     # `python -m softswitch` processes (sanitized too: they inherit the environment) whose
     # C data path forwards pings and emulates links over veth pairs
     "tests/test_softswitch_netns.py", "tests/test_softswitch_netem.py",
     # the aggregation client's C (host_agents/aggio.c: batched I/O, the protocol loop)
     "tests/test_agg_client.py",
     # the replay switch path's exchange loop (aggio.c rexc_run), fragments and losses
     "tests/test_replay_client.py"],
]
# the native cases of the files above, and the namespace tests that start a switch process
CHILD_SELECT = ("native or backends_agree or wide or garbage or device_config or warm_load or handler or "
                "pings_cross or bad_requests or each_direction or saturating_burst or given_share or "
                "loss_duplicates or agree_to_the_bit or stale_round_is or block_exponents_match or "
                "end_to_end_with_a_model_switch or fragments_with_losses")


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_native_under_asan_and_ubsan() -> None:
    if os.environ.get("INNET_NATIVE_SANITIZE") == "1":
        pytest.skip("already the sanitizer run")
    libasan = sanitizer_runtime()
    if libasan is None:
        pytest.skip("the C compiler has no libasan (gcc's libasan8 / clang's compiler-rt)")
    env = {**os.environ, "INNET_NATIVE_SANITIZE": "1", "LD_PRELOAD": libasan,
           # Python's own allocations are not ours to judge; halt on the first C error
           "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:halt_on_error=1",
           "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1", "INNET_SWITCH_BACKEND": "native"}
    argv = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-k", CHILD_SELECT]
    with tempfile.TemporaryDirectory() as tmp:
        logs = [Path(tmp) / f"child{i}.log" for i in range(len(CHILD_GROUPS))]
        procs = []
        try:
            for group, log in zip(CHILD_GROUPS, logs, strict=True):
                with log.open("w") as f:  # a file, not a pipe: neither child can block on its output
                    procs.append(subprocess.Popen([*argv, *group], cwd=ROOT, env=env, stdout=f,
                                                  stderr=subprocess.STDOUT, text=True))
            codes = [p.wait(timeout=1400) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        for code, log in zip(codes, logs, strict=True):
            out = log.read_text()[-12000:]
            assert "ERROR: AddressSanitizer" not in out and "runtime error:" not in out, out
            assert code == 0, out
            assert " passed" in out, out
