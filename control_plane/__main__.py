"""python -m control_plane: load innet.p4, install routes, aggregation jobs and replay tables,
read counters.

Each run connects to one switch as its primary P4Runtime controller, does one thing and exits;
job operations read the job back from the switch, so no state is kept between runs.
"""

from __future__ import annotations

import argparse
import json
import sys

from control_plane.aggregation import Job, Member, Parent
from control_plane.p4runtime_client import ControlPlaneError
from control_plane.switch_controller import DEFAULT_P4, SwitchController
from p4compiler.errors import P4Error


def _member(text: str) -> Member:
    parts = text.split(",")
    if len(parts) not in (4, 5):
        raise argparse.ArgumentTypeError(f"--member {text!r}: expected ID,PORT,MAC,IP[,UDP_PORT]")
    try:
        return Member(int(parts[0]), int(parts[1]), parts[2], parts[3], *(int(p) for p in parts[4:]))
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"--member {text!r}: {e}") from None


def _parent(text: str) -> Parent:
    parts = text.split(",")
    if len(parts) != 4:
        raise argparse.ArgumentTypeError(f"--parent {text!r}: expected MAC,IP,PORT,ID_AT_PARENT")
    try:
        return Parent(parts[0], parts[1], int(parts[2]), int(parts[3]))
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"--parent {text!r}: {e}") from None


def _define(text: str) -> tuple[str, str]:
    name, _, value = text.partition("=")
    return name, value or "1"


def _slots(text: str) -> tuple[int, int]:
    try:
        base, _, count = text.partition(":")
        return int(base), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--slots {text!r}: expected BASE:COUNT, e.g. 0:64") from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m control_plane",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--switch", default="127.0.0.1:9559", help="P4Runtime address (default %(default)s)")
    p.add_argument("--device-id", type=int, default=1, help="P4Runtime device id (default %(default)s)")
    p.add_argument("--election-id", type=int, default=1, help="election id (default %(default)s)")
    sub = p.add_subparsers(dest="command", required=True)

    load = sub.add_parser("load", help="make a P4 program the switch's pipeline (state starts empty)")
    load.add_argument("--p4", default=str(DEFAULT_P4), help="P4-16 program (default p4/innet.p4)")
    load.add_argument(
        "-D",
        dest="defines",
        action="append",
        default=[],
        metavar="NAME[=VALUE]",
        help="preprocessor definition (repeatable), e.g. -D AGG_VALUES_PER_PACKET=256: innet.p4's "
        "values per aggregation packet, 32, 64 (its default) or 256; the hosts must send the same",
    )

    route = sub.add_parser("route", help="add an IPv4 route: PREFIX via PORT with MAC rewrite")
    route.add_argument("prefix", help="e.g. 10.0.1.0/24")
    route.add_argument("--port", type=int, required=True)
    route.add_argument("--dst-mac", required=True, help="next hop's MAC")
    route.add_argument("--src-mac", required=True, help="switch port's MAC")

    l2 = sub.add_parser("l2", help="forward non-IPv4 frames for MAC out of PORT")
    l2.add_argument("mac")
    l2.add_argument("port", type=int)

    job = sub.add_parser("job", help="aggregation jobs: create, show, delete, reset, remove-worker")
    jsub = job.add_subparsers(dest="job_command", required=True)
    create = jsub.add_parser("create", help="install a job")
    create.add_argument("--job", type=int, required=True, help="job id 0..255")
    create.add_argument(
        "--slots",
        type=_slots,
        required=True,
        metavar="BASE:COUNT",
        help="the job's slots in the switch's pool of 1024 (COUNT = the hosts' window)",
    )
    create.add_argument(
        "--member",
        type=_member,
        action="append",
        required=True,
        metavar="ID,PORT,MAC,IP[,UDP_PORT]",
        help="a worker (or child switch, UDP port 47000), repeatable",
    )
    create.add_argument(
        "--threshold",
        type=int,
        default=None,
        help="contributions per result (default: all members = synchronous)",
    )
    create.add_argument(
        "--parent",
        type=_parent,
        default=None,
        metavar="MAC,IP,PORT,ID_AT_PARENT",
        help="make this switch a child that sends partial aggregates to its parent",
    )
    create.add_argument("--switch-mac", required=True, help="source MAC of the packets the switch sends")
    create.add_argument("--switch-ip", required=True, help="source IP of the packets the switch sends")
    create.add_argument("--mgid", type=int, default=None, help="multicast group (default 4096 + job id)")
    create.add_argument(
        "--values-per-packet",
        type=int,
        default=None,
        help="the values per packet the job's hosts send: refused unless the loaded program "
        "aggregates that many (default: not checked)",
    )
    for name, text in (
        ("show", "print a job as installed"),
        ("delete", "remove a job and its state"),
        ("reset", "forget a job's rounds in progress"),
    ):
        sp = jsub.add_parser(name, help=text)
        sp.add_argument("--job", type=int, required=True)
    rw = jsub.add_parser("remove-worker", help="take a failed worker out of a job")
    rw.add_argument("--job", type=int, required=True)
    rw.add_argument("--worker", type=int, required=True)

    replay = sub.add_parser("replay", help="replay tables whose priorities the switch holds")
    rsub = replay.add_subparsers(dest="replay_command", required=True)
    rin = rsub.add_parser("install", help="hold a replay table's priorities in a switch tree (cleared first)")
    rin.add_argument("--table", type=int, required=True, help="replay table id (the server's table order)")
    rin.add_argument(
        "--leaves", type=int, required=True, help="the table's max_size (at most 16384, the tree's leaves)"
    )
    rin.add_argument("--tree", type=int, default=None, help="which of the 4 trees (default: the first free)")
    rrm = rsub.add_parser(
        "remove", help="stop holding a table (its packets go on to the server) and clear its tree"
    )
    rrm.add_argument("--table", type=int, required=True)
    rshow = rsub.add_parser("show", help="held tables, their totals and counters")
    rshow.add_argument("--json", action="store_true", help="print JSON")

    counters = sub.add_parser("counters", help="per-job aggregation counters and rejected packets")
    counters.add_argument("--job", type=int, action="append", default=[], help="job id (repeatable)")
    counters.add_argument("--json", action="store_true", help="print JSON")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with SwitchController(args.switch, device_id=args.device_id, election_id=args.election_id) as sc:
            if args.command == "load":
                defines = dict(_define(d) for d in args.defines)
                sc.load(args.p4, defines or None)
                width = sc.jobs.values_per_packet
                print(f"loaded {args.p4} on {args.switch}"
                      + (f" ({width} values per aggregation packet)" if width else ""))
                return 0
            sc.attach()
            if args.command == "route":
                sc.forwarding.add_route(args.prefix, args.dst_mac, args.src_mac, args.port)
                print(f"route {args.prefix} -> port {args.port}")
            elif args.command == "l2":
                sc.forwarding.add_l2(args.mac, args.port)
                print(f"l2 {args.mac} -> port {args.port}")
            elif args.command == "job":
                return _job(sc, args)
            elif args.command == "replay":
                return _replay(sc, args)
            elif args.command == "counters":
                installed = sc.jobs.ingress.jobs()
                missing = sorted(set(args.job) - set(installed))
                if missing:
                    raise ControlPlaneError(f"no job {', '.join(map(str, missing))} on {args.switch}")
                jobs = args.job or sorted(installed)
                out = {"jobs": {j: sc.jobs.counters(j) for j in jobs}, "rejected": sc.jobs.ingress.rejected()}
                if args.json:
                    print(json.dumps(out, indent=2))
                else:
                    for j, c in out["jobs"].items():
                        print(f"job {j}: " + "  ".join(f"{k} {v}" for k, v in c.items()))
                    print("rejected: " + "  ".join(f"{k} {v}" for k, v in out["rejected"].items()))
    except (ControlPlaneError, ValueError, P4Error, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def _job(sc: SwitchController, args: argparse.Namespace) -> int:
    if args.job_command == "create":
        base, count = args.slots
        job = Job(
            args.job, base, count, args.member, threshold=args.threshold, parent=args.parent, mgid=args.mgid,
            values_per_packet=args.values_per_packet,
        )
        sc.jobs.switch_mac, sc.jobs.switch_ip = args.switch_mac, args.switch_ip
        sc.jobs.create(job)
        mode = "synchronous" if job.synchronous else f"asynchronous (threshold {job.effective_threshold})"
        print(
            f"job {job.job_id} created: {len(job.members)} members, slots {base}..{base + count - 1}, {mode}"
        )
    elif args.job_command == "show":
        job = sc.jobs.read(args.job)
        print(
            json.dumps(
                {
                    "job_id": job.job_id,
                    "slot_base": job.slot_base,
                    "num_slots": job.num_slots,
                    "threshold": job.effective_threshold,
                    "synchronous": job.synchronous,
                    "mgid": job.group_id,
                    "values_per_packet": job.values_per_packet,
                    "members": [vars(m) for m in job.members],
                    "parent": vars(job.parent) if job.parent else None,
                },
                indent=2,
            )
        )
    elif args.job_command == "delete":
        sc.jobs.delete(args.job)
        print(f"job {args.job} deleted")
    elif args.job_command == "reset":
        sc.jobs.reset(args.job)
        print(f"job {args.job} reset")
    elif args.job_command == "remove-worker":
        job = sc.jobs.remove_worker(args.job, args.worker)
        print(
            f"worker {args.worker} removed from job {args.job}: {len(job.members)} members, "
            f"threshold {job.effective_threshold}"
        )
    return 0


def _replay(sc: SwitchController, args: argparse.Namespace) -> int:
    if args.replay_command == "install":
        t = sc.replay.install_table(args.table, args.leaves, args.tree)
        print(f"replay table {t.table_id} held in tree {t.tree} ({t.num_leaves} leaves)")
    elif args.replay_command == "remove":
        sc.replay.remove_table(args.table)
        print(f"replay table {args.table} removed")
    else:
        out = {
            "tables": {
                t.table_id: {
                    "tree": t.tree,
                    "num_leaves": t.num_leaves,
                    "total": sc.replay.total(t.tree),
                    **sc.replay.counters(t.tree),
                }
                for t in sc.replay.tables().values()
            },
            "rejected": sc.replay.rejected(),
        }
        if args.json:
            print(json.dumps(out, indent=2))
        else:
            if not out["tables"]:
                print("no replay table held")
            for tid, t in sorted(out["tables"].items()):
                print(f"table {tid}: " + "  ".join(f"{k} {v}" for k, v in t.items()))
            print("rejected: " + "  ".join(f"{k} {v}" for k, v in out["rejected"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
