"""python -m host_agents.allreduce: one worker allreduces reproducible random tensors through the
switch and saves the results, so a job can be checked (tests) and timed (bench/aggregation.py).

Worker w's input for size n and repetition r is ``input_array(seed, w, n, r)``: anyone can
recompute every worker's input and so the exact float sum the switch should return. The worker
moves NumPy arrays (``allreduce_array``) and does not import torch: a worker process starts in
~0.2 s instead of ~2 s.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from host_agents.agg_client import AggregationClient, AggregationTimeout
from host_agents.agg_protocol import AGG_UDP_PORT, DEFAULT_VALUES_PER_PACKET, SUPPORTED_VALUES_PER_PACKET

if TYPE_CHECKING:
    import torch


def input_array(seed: int, worker: int, numel: int, repetition: int = 0) -> np.ndarray:
    """Reproducible gradient-like input (float32): normal values with a few large outliers."""
    rng = np.random.default_rng([seed, worker, numel, repetition])
    x = rng.standard_normal(numel).astype(np.float32)
    x[rng.integers(0, numel, size=max(1, numel // 1000))] *= 100.0
    return x


def input_tensor(seed: int, worker: int, numel: int, repetition: int = 0) -> torch.Tensor:
    """:func:`input_array` as a torch tensor (bench.aggregation's methods move tensors)."""
    import torch

    return torch.from_numpy(input_array(seed, worker, numel, repetition))


def _addr(text: str, default_port: int) -> tuple[str, int]:
    host, _, port = text.partition(":")
    return host, int(port) if port else default_port


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m host_agents.allreduce",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--switch",
        required=True,
        metavar="IP[:PORT]",
        help=f"address of the switch's aggregation service (port default {AGG_UDP_PORT})",
    )
    p.add_argument(
        "--bind", required=True, metavar="IP:PORT", help="this worker's address (its member entry's)"
    )
    p.add_argument("--job", type=int, required=True, help="job id")
    p.add_argument("--worker", type=int, required=True, help="this worker's id in the job")
    p.add_argument("--workers", type=int, required=True, help="number of workers whose gradients are summed")
    p.add_argument("--slots", type=int, required=True, help="the job's slot count (= window)")
    p.add_argument(
        "--values-per-packet",
        type=int,
        default=DEFAULT_VALUES_PER_PACKET,
        choices=SUPPORTED_VALUES_PER_PACKET,
        help="int32 values per packet: the width the switch's p4/innet.p4 was compiled with "
        "(-DAGG_VALUES_PER_PACKET; default %(default)s, the program's default). The switch drops "
        "packets of another width as malformed and this worker then times out",
    )
    p.add_argument(
        "--threshold",
        type=int,
        default=None,
        help="the job's threshold when it is asynchronous (fewer than --workers); required for "
        "such jobs, as is --fixed-exponent",
    )
    p.add_argument(
        "--fixed-exponent",
        type=int,
        default=None,
        help="clip values to 2**E and scale for that bound (required for asynchronous jobs)",
    )
    p.add_argument(
        "--no-predict-exponent",
        action="store_true",
        help="(agreed exponents) run a header-only bootstrap round on every slot in every call "
        "instead of predicting each slot's first exponent from the last call's; every worker of "
        "a job must set this alike (docs/protocol.md)",
    )
    p.add_argument("--sizes", default="1000", help="comma-separated tensor sizes in elements")
    p.add_argument("--repeat", type=int, default=1, help="allreduce calls per size")
    p.add_argument("--seed", type=int, default=0, help="seed of the inputs")
    p.add_argument(
        "--input-id",
        type=int,
        default=None,
        help="which input stream to use (default: the worker id; set it where ids repeat, "
        "as on the child switches of a hierarchical job)",
    )
    p.add_argument("--timeout", type=float, default=0.2, help="retransmission timeout in seconds")
    p.add_argument("--max-tries", type=int, default=50, help="tries per packet before giving up")
    p.add_argument(
        "--per-packet",
        action="store_true",
        help="one socket call per packet (the fallback when the batched I/O helper cannot be built)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="directory for result_<size>_<rep>.npy and stats.json (default: print only)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s]
    except ValueError:
        print(f"error: --sizes {args.sizes!r} must be comma-separated integers", file=sys.stderr)
        return 2
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    records = []
    input_id = args.worker if args.input_id is None else args.input_id
    try:
        with AggregationClient(
            _addr(args.switch, AGG_UDP_PORT),
            args.job,
            args.worker,
            args.workers,
            args.slots,
            bind=_addr(args.bind, 0),
            threshold=args.threshold,
            fixed_exponent=args.fixed_exponent,
            timeout=args.timeout,
            max_tries=args.max_tries,
            batched=False if args.per_packet else None,
            values_per_packet=args.values_per_packet,
            predict_exponent=not args.no_predict_exponent,
        ) as client:
            for size in sizes:
                for rep in range(args.repeat):
                    x = input_array(args.seed, input_id, size, rep)
                    t0 = time.perf_counter()
                    y = client.allreduce_array(x)
                    seconds = time.perf_counter() - t0
                    st = client.last_stats
                    info = client.last_info
                    rec = {
                        "size": size,
                        "rep": rep,
                        "seconds": seconds,
                        "bytes_sent": st.bytes_sent,
                        "bytes_received": st.bytes_received,
                        "packets_sent": st.packets_sent,
                        "packets_received": st.packets_received,
                        "retransmissions": st.retransmissions,
                        "stale": st.stale,
                        "redone": st.redone,
                        "min_count": int(info.count.min()) if info is not None else 0,
                    }
                    records.append(rec)
                    print(json.dumps(rec), flush=True)
                    if args.out is not None:
                        np.save(args.out / f"result_{size}_{rep}.npy", y)
                        if info is not None:
                            np.save(args.out / f"bitmap_{size}_{rep}.npy", info.bitmap)
    except (AggregationTimeout, ValueError, OSError) as e:
        print(f"error: worker {args.worker}: {e}", file=sys.stderr)
        return 1
    if args.out is not None:
        (args.out / "stats.json").write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
