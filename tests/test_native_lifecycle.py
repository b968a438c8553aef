"""The native switch's threads and its lifetime: a packet-in handler (run by the poll thread)
may stop or close the switch, and close() never frees the C switch under a running poll."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from p4compiler.python_backend import compile_file
from softswitch.native_switch import NativeSwitch

ROOT = Path(__file__).resolve().parent.parent
P4RT_BASIC = ROOT / "tests" / "p4" / "p4rt_basic.p4"
FRAME = bytes(range(6)) + bytes(range(6, 12)) + b"\x08\x00" + bytes(46)


def _started_switch() -> NativeSwitch:
    sw = NativeSwitch(compile_file(str(P4RT_BASIC)), seed=1)
    sw.start([])  # no ports: packet-out's outputs to the CPU port reach the poll thread
    return sw


def test_packet_in_handler_may_close_the_switch() -> None:
    sw = _started_switch()
    done = threading.Event()
    errors: list[BaseException] = []

    def handler(payload: bytes, meta: dict[str, int]) -> None:
        try:
            sw.close()  # from the poll thread itself: must not join itself
        except BaseException as e:  # noqa: BLE001 (reported by the assertion below)
            errors.append(e)
        finally:
            done.set()

    sw.add_packet_in_handler(handler)
    sw.packet_out(FRAME, {"egress_port": 64})
    assert done.wait(10), "no packet-in reached the handler"
    assert not errors, errors
    assert sw._sw is None
    assert sw._poller is not None
    sw._poller.join(5)
    assert not sw._poller.is_alive()


def test_close_waits_for_a_slow_packet_in_handler() -> None:
    sw = _started_switch()
    entered, release = threading.Event(), threading.Event()
    after: list[int] = []

    def handler(payload: bytes, meta: dict[str, int]) -> None:
        entered.set()
        release.wait(10)
        after.append(1)

    sw.add_packet_in_handler(handler)
    sw.packet_out(FRAME, {"egress_port": 64})
    assert entered.wait(10)
    t = threading.Timer(2.5, release.set)  # longer than stop()'s first 2 s join
    t.start()
    t0 = time.monotonic()
    sw.close()
    assert time.monotonic() - t0 >= 2.0
    assert after == [1], "the switch was freed while its poll thread still ran a handler"
    assert sw._sw is None
    t.join()


def test_a_device_config_with_includes_loads_natively() -> None:
    """P4Runtime hands the switch the program's text as sent (with its #include lines): the
    native build must see the preprocessed program, as the Python backend does."""
    from p4compiler.python_backend import compile_text

    text = (ROOT / "p4" / "examples" / "basic_router.p4").read_text()
    assert "#include" in text
    sw = NativeSwitch(compile_text(text, "<device config>"), seed=1)
    try:
        assert sw.backend == "native"
        assert "#include" not in sw.program.p4_source
    finally:
        sw.close()


def test_a_warm_load_skips_the_emitter_and_a_damaged_memo_does_not_matter(tmp_path, monkeypatch) -> None:
    """The second load of the same program reuses the emitted program (no lowering, no C
    emitter); a damaged memo is ignored and rewritten."""
    import p4compiler.c_backend as cb
    from softswitch import native

    monkeypatch.setenv("INNET_NATIVE_CACHE", str(tmp_path))
    program = compile_file(str(P4RT_BASIC))
    native.build_native(program, sanitize=False)
    memos = list(tmp_path.glob("emit-*.json"))
    assert len(memos) == 1

    def no_emitter(_program: object) -> None:
        raise AssertionError("the C emitter ran on a warm load")

    real_emit = cb.emit_c
    monkeypatch.setattr(cb, "emit_c", no_emitter)
    lib = native.build_native(program, sanitize=False)
    assert lib.manifest["tables"]

    memos[0].write_text("{not json")
    monkeypatch.setattr(cb, "emit_c", real_emit)
    lib = native.build_native(program, sanitize=False)
    assert lib.manifest["tables"]
    assert memos[0].read_text().startswith("{\"shared_object\"")


def test_without_a_c_compiler_auto_says_why_and_native_refuses(tmp_path) -> None:
    """No C compiler (and nothing cached): `--backend auto` runs the Python backend and says why
    in one line; `--backend native` refuses to start with that line and exit code 2."""
    import subprocess
    import sys

    env = {**os.environ, "PATH": str(tmp_path), "INNET_NATIVE_CACHE": str(tmp_path / "cache")}
    env.pop("CC", None)
    env.pop("INNET_SWITCH_BACKEND", None)
    base = [sys.executable, "-m", "softswitch", "--p4", str(ROOT / "p4" / "examples" / "basic_router.p4"),
            "--no-grpc"]
    r = subprocess.run(base + ["--backend", "native"], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "no C compiler" in r.stderr, r.stderr
    p = subprocess.Popen(base + ["--backend", "auto"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env, cwd=ROOT)
    try:
        running = p.stdout.readline()  # type: ignore[union-attr]
        assert "on the python backend" in running, running
    finally:
        p.terminate()
        _, err = p.communicate(timeout=30)
    lines = [ln for ln in err.splitlines() if "native backend unavailable" in ln]
    assert len(lines) == 1 and "no C compiler" in lines[0], err


def test_offloads_need_the_native_backend(tmp_path) -> None:
    """`--offloads` is a mode of the native data path's ports: with `--backend python`, or when
    `auto` falls back to Python (no C compiler), the switch refuses to start (exit code 2, one
    line that says why) instead of running without it."""
    import subprocess
    import sys

    base = [sys.executable, "-m", "softswitch", "--p4", str(ROOT / "p4" / "examples" / "basic_router.p4"),
            "--no-grpc", "--offloads"]
    r = subprocess.run(base + ["--backend", "python"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and "--offloads needs the native backend" in r.stderr, r.stdout + r.stderr
    env = {**os.environ, "PATH": str(tmp_path), "INNET_NATIVE_CACHE": str(tmp_path / "cache")}
    env.pop("CC", None)
    env.pop("INNET_SWITCH_BACKEND", None)
    r = subprocess.run(base + ["--backend", "auto"], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=120)
    assert r.returncode == 2 and "--offloads needs the native backend" in r.stderr, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
