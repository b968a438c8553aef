"""The learner's update on each device (not a test): milliseconds per ``host_agents.apex.learn_step``
(Dueling Q network, Double-DQN loss on n-step targets, fused Adam, gradient clipping, new
priorities back on the host; the learner's defaults, ``QLearnerConfig``) for CartPole-sized
batches, per network width, on the CPU (one torch thread, as the learner runs) and on CUDA when
torch sees a GPU. The first update on every device starts from the same weights and batch and is
compared with the CPU's: its loss, its priorities and the network's parameters after the step
must agree within ``numpy.allclose(rtol=1e-4, atol=1e-5)`` (float32 kernels of two devices sum
in different orders, so they are not bit-equal).

    python -m bench.learn_step [--devices cpu,cuda] [--hidden 128,64] [--batch 128] [--updates 2000]

Prints a table and writes bench/results/learn-step.json (``--out``). Exit 0; 1 when a device's
first update differs from the CPU's; 2 for a device torch cannot run here (not cpu or cuda, no
GPU, a GPU index that is not there).
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from host_agents.apex import QLearnerConfig, learn_step, q_optimizer  # noqa: E402
from host_agents.cli import ConfigError  # noqa: E402
from host_agents.networks import DuelingQNetwork, select_device  # noqa: E402

OBS, ACTIONS = (4,), 2  # CartPole-v1
CFG = QLearnerConfig()  # the learner's lr, Adam eps, gradient clip and priority eps
RTOL, ATOL = 1e-4, 1e-5


def setup(device: torch.device, hidden: int, batch: int) -> tuple[Any, ...]:
    """Online and target networks, Adam and one batch, the same on every device (made on the CPU)."""
    torch.manual_seed(0)
    online = DuelingQNetwork(OBS, ACTIONS, hidden)
    target = copy.deepcopy(online)
    target.requires_grad_(False)
    online, target = online.to(device), target.to(device)
    opt = q_optimizer(online, CFG)
    g = torch.Generator().manual_seed(1)
    b = {
        "obs": torch.randn(batch, *OBS, generator=g),
        "actions": torch.randint(0, ACTIONS, (batch,), generator=g),
        "returns": torch.randn(batch, generator=g),
        "next_obs": torch.randn(batch, *OBS, generator=g),
        "discounts": torch.full((batch,), CFG.gamma**CFG.n_step),
    }
    weights = torch.rand(batch, generator=g)
    return online, target, opt, {k: v.to(device) for k, v in b.items()}, weights.to(device)


def measure(device: torch.device, hidden: int, batch: int, updates: int) -> tuple[dict, dict]:
    """(the point's figures, its first update: loss, priorities, parameters after the step)."""
    online, target, opt, b, w = setup(device, hidden, batch)

    def step() -> tuple[Any, np.ndarray]:
        return learn_step(online, target, opt, b, w, CFG.grad_clip, CFG.priority_eps)

    out, prios = step()
    params = np.concatenate([p.detach().cpu().numpy().ravel() for p in online.parameters()])
    first = {"loss": np.array([float(out.loss.detach())]), "priorities": prios, "parameters": params}
    for _ in range(min(200, updates)):  # warm-up: allocator, kernels, caches
        step()
    start = time.perf_counter()
    for _ in range(updates):
        step()  # the priorities come back to the host: every update is waited for
    ms = (time.perf_counter() - start) / updates * 1e3
    point = {"device": str(device), "hidden": hidden, "batch": batch, "updates": updates, "ms_per_update": ms}
    return point, first


def differences(first: dict, ref: dict) -> dict[str, float]:
    """Largest absolute difference per compared quantity, and whether all are within tolerance."""
    out: dict[str, Any] = {f"{k}_max_abs_diff": float(np.max(np.abs(first[k] - ref[k]))) for k in ref}
    out["same_update"] = all(np.allclose(first[k], ref[k], rtol=RTOL, atol=ATOL) for k in ref)
    return out


def parse_devices(text: str | None) -> list[torch.device]:
    """The devices asked for, the CPU first (the reference); ValueError for one torch cannot run
    here (the learner's own check, ``select_device``)."""
    names = [n.strip() for n in text.split(",") if n.strip()] if text else ["cpu", "auto"]
    devices: list[torch.device] = []
    for name in names:
        try:
            d = select_device(name)
        except ConfigError as e:
            raise ValueError(str(e)) from None
        if d not in devices:
            devices.append(d)
    if not any(d.type == "cpu" for d in devices):
        devices.append(torch.device("cpu"))  # the reference every other device is checked against
    return sorted(devices, key=lambda d: d.type != "cpu")  # stable: the CPU first, the rest as asked


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.learn_step", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    p.add_argument("--devices", default=None,
                   help="comma-separated: cpu, cuda, cuda:N or auto (default: cpu, and cuda when torch sees "
                        "a GPU); the CPU is always measured, as the reference")  # fmt: skip
    p.add_argument("--hidden", default="128,64", help="network widths (default: %(default)s)")
    p.add_argument("--batch", type=int, default=128, help="batch size (default: %(default)s)")
    p.add_argument("--updates", type=int, default=2000, help="timed updates per point (default: %(default)s)")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "learn-step.json"))
    args = p.parse_args(argv)
    if args.batch < 1 or args.updates < 1:
        p.error("--batch and --updates must be >= 1")
    try:
        hidden = [int(h) for h in args.hidden.split(",") if h.strip()]
    except ValueError:
        p.error(f"--hidden: not a comma-separated list of integers: {args.hidden!r}")
    if not hidden or min(hidden) < 1:
        p.error("--hidden needs widths >= 1")
    try:
        devices = parse_devices(args.devices)
    except ValueError as e:
        print(f"learn_step: {e}", file=sys.stderr)
        return 2

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the learner runs (--torch-threads 1)
    try:
        results, failed = [], []
        print(f"{'device':>8} {'hidden':>6} {'batch':>5} {'ms/update':>10} {'loss diff':>10} "
              f"{'prio diff':>10} {'param diff':>10}")  # fmt: skip
        for h in hidden:
            ref: dict | None = None
            for d in devices:
                r, first = measure(d, h, args.batch, args.updates)
                ref = ref or first
                r.update(differences(first, ref))
                if not r["same_update"]:
                    failed.append(f"{d} hidden {h}")
                results.append(r)
                print(f"{r['device']:>8} {h:>6} {args.batch:>5} {r['ms_per_update']:>10.3f} "
                      f"{r['loss_max_abs_diff']:>10.2e} {r['priorities_max_abs_diff']:>10.2e} "
                      f"{r['parameters_max_abs_diff']:>10.2e}")  # fmt: skip
    finally:
        torch.set_num_threads(threads)
    report = {
        "benchmark": "learn_step",
        "config": {**vars(args), "rtol": RTOL, "atol": ATOL},
        "machine": {"cpu": platform.processor() or platform.machine(), "torch": torch.__version__,
                    "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None},  # fmt: skip
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"JSON: {out}")
    if failed:
        print(f"learn_step: the first update differs from the CPU's on {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
