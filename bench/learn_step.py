"""The learner's update on each device (not a test): milliseconds per ``host_agents.apex.learn_step``
(Dueling Q network, Double-DQN loss on n-step targets, fused Adam, gradient clipping, new
priorities back on the host) for CartPole-sized batches, per network width, on the CPU (one torch
thread, as the learner runs) and on CUDA when torch sees a GPU. The first update of every device
starts from the same weights and batch, and its loss and priorities are compared with the CPU's:
the devices must compute the same update.

    python -m bench.learn_step [--devices cpu,cuda] [--hidden 128,64] [--batch 128] [--updates 2000]

Prints a table and writes bench/results/learn-step.json (``--out``). Exit 1 when a device's update
differs from the CPU's beyond float32 rounding, 2 for a device torch does not have.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from host_agents.apex import learn_step  # noqa: E402
from host_agents.networks import DuelingQNetwork  # noqa: E402

OBS, ACTIONS = (4,), 2  # CartPole-v1


def setup(device: torch.device, hidden: int, batch: int) -> tuple:
    """Online and target networks, Adam and one batch, the same on every device (seeded on the CPU)."""
    torch.manual_seed(0)
    online = DuelingQNetwork(OBS, ACTIONS, hidden)
    target = copy.deepcopy(online)
    target.requires_grad_(False)
    online, target = online.to(device), target.to(device)
    opt = torch.optim.Adam(online.parameters(), lr=5e-4, fused=True)
    g = torch.Generator().manual_seed(1)
    b = {
        "obs": torch.randn(batch, *OBS, generator=g),
        "actions": torch.randint(0, ACTIONS, (batch,), generator=g),
        "returns": torch.randn(batch, generator=g),
        "next_obs": torch.randn(batch, *OBS, generator=g),
        "discounts": torch.full((batch,), 0.99**3),
    }
    weights = torch.rand(batch, generator=g)
    return online, target, opt, {k: v.to(device) for k, v in b.items()}, weights.to(device)


def measure(device: torch.device, hidden: int, batch: int, updates: int) -> dict:
    online, target, opt, b, w = setup(device, hidden, batch)
    out, prios = learn_step(online, target, opt, b, w, 10.0, 1e-6)
    first = {"loss": float(out.loss.detach()), "priorities": prios}
    for _ in range(min(200, updates)):  # warm-up: allocator, kernels, caches
        learn_step(online, target, opt, b, w, 10.0, 1e-6)
    start = time.perf_counter()
    for _ in range(updates):
        learn_step(online, target, opt, b, w, 10.0, 1e-6)  # priorities come back to the host: synchronised
    ms = (time.perf_counter() - start) / updates * 1e3
    return {"device": str(device), "hidden": hidden, "batch": batch, "updates": updates, "ms_per_update": ms,
            "first": first}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.learn_step", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    p.add_argument("--devices", default=None,
                   help="comma-separated: cpu, cuda, cuda:N (default: cpu, and cuda when torch sees a GPU)")
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
    gpu = ["cuda"] if torch.cuda.is_available() else []
    names = args.devices.split(",") if args.devices else ["cpu", *gpu]
    devices = []
    for name in (n.strip() for n in names if n.strip()):
        try:
            d = torch.device(name)
        except RuntimeError:
            print(f"learn_step: unknown device {name!r}", file=sys.stderr)
            return 2
        if d.type == "cuda" and not torch.cuda.is_available():
            print(f"learn_step: {name}: torch sees no CUDA device", file=sys.stderr)
            return 2
        devices.append(d)
    if torch.device("cpu") not in devices:
        devices.insert(0, torch.device("cpu"))  # the reference every other device is checked against
    torch.set_num_threads(1)  # as the learner runs (--torch-threads 1)

    results, failed = [], []
    print(f"{'device':>8} {'hidden':>6} {'batch':>5} {'ms/update':>10} {'loss diff':>10} {'prio diff':>10}")
    for h in hidden:
        ref = None
        for d in devices:
            r = measure(d, h, args.batch, args.updates)
            first = r.pop("first")
            if ref is None:
                ref = first
            r["loss_diff"] = abs(first["loss"] - ref["loss"])
            r["priority_max_rel_diff"] = float(np.max(np.abs(first["priorities"] - ref["priorities"])
                                                      / np.maximum(ref["priorities"], 1e-6)))  # fmt: skip
            if r["loss_diff"] > 1e-4 * max(1.0, abs(ref["loss"])) or r["priority_max_rel_diff"] > 1e-4:
                failed.append(f"{d} hidden {h}")
            results.append(r)
            print(f"{r['device']:>8} {h:>6} {args.batch:>5} {r['ms_per_update']:>10.3f} "
                  f"{r['loss_diff']:>10.2e} {r['priority_max_rel_diff']:>10.2e}")  # fmt: skip
    report = {
        "benchmark": "learn_step",
        "config": vars(args),
        "machine": {"cpu": platform.processor() or platform.machine(), "torch": torch.__version__,
                    "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None},  # fmt: skip
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"JSON: {out}")
    if failed:
        print(f"learn_step: the update differs from the CPU's on {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
