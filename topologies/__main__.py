"""``python -m topologies up|down|run FILE`` / ``check FILE...``: build, remove, run or validate."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from topologies.spec import SpecError, load

REPO = Path(__file__).resolve().parent.parent

EPILOG = """\
commands:
  check FILE...  validate the files; every error names its file and field (exit 2 on errors)
  up FILE      build the network (namespaces, veths, link emulation, switches, P4 program,
               routes) and leave it up; its state goes to /run/innet-topologies (else /tmp)
  down FILE    remove what `up` built for FILE's topology (and leftovers of killed launchers);
               `down --all` removes every one; a live `run` is left alone unless --force
  run FILE     build, start the scenario (replay server / redis, learner and actors, or
               data-parallel workers), stream their output prefixed with their names, wait
               for the learner (target return or time budget) or the workers to end, print a
               summary and a plot of the returns (runs/<run>/returns.png), and remove
               everything, also after Ctrl-C, SIGTERM, a crash or a launcher error

exit status of run: 0 done (target reached, or none set), 3 target not reached in the budget,
1 a process or the launcher failed (the failing process is named with its log tail),
2 a bad topology file or option, 130 interrupted. A lost actor is reported and the run goes
on; a lost replay server, redis, switch, learner or (data-parallel) worker stops it.

examples (as root):
  python -m topologies run topologies/star.yaml                  # the main job: Ape-X CartPole
  python -m topologies run topologies/star.yaml --time-budget-s 120 --no-target
  python -m topologies run topologies/two_tier.yaml              # hierarchical aggregation
  python -m topologies up topologies/edge_cloud.yaml && ip netns list
  python -m topologies down --all
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m topologies",
        description="Emulated in-network clusters from topology files (topologies/README.md).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="{check,up,down,run}")
    c = sub.add_parser("check", help="validate topology files")
    c.add_argument("files", type=Path, nargs="+", metavar="FILE")
    u = sub.add_parser("up", help="build the network and leave it up")
    u.add_argument("file", type=Path)
    d = sub.add_parser("down", help="remove a network left up (FILE's topology, or --all)")
    d.add_argument("file", type=Path, nargs="?")
    d.add_argument("--all", action="store_true", help="every network left up by `up` (and by killed runs)")
    d.add_argument(
        "--force",
        action="store_true",
        help="also stop a live `run` of the topology (it cleans up after itself)",
    )
    r = sub.add_parser(
        "run",
        help="build, run the scenario, summarize, clean up",
        description="Build FILE's network, run its scenario, print a summary, remove everything.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("file", type=Path, help="topology file (YAML, topologies/README.md)")
    r.add_argument("--time-budget-s", type=float, default=None, help="override scenario.time_budget_s")
    r.add_argument("--target-return", type=float, default=None, help="override scenario.target_return")
    r.add_argument(
        "--no-target", action="store_true", help="no target return: run to the step or time limits"
    )
    r.add_argument("--env", default=None, help="override scenario.env (e.g. ALE/Breakout-v5)")
    r.add_argument("--seed", type=int, default=None, help="override scenario.seed")
    r.add_argument(
        "--learner-args", default="", help="more learner flags, one shell-quoted string (last wins)"
    )
    r.add_argument("--actor-args", default="", help="more actor flags, one shell-quoted string")
    r.add_argument("--worker-args", default="", help="more worker flags, one shell-quoted string")
    r.add_argument(
        "--run-name", default=None, help="logs in <log-dir>/<run-name> (default: <topology>-<time>)"
    )
    r.add_argument("--quiet", action="store_true", help="only the launcher's own lines, not the agents'")
    r.add_argument("--no-report", action="store_true", help="skip the PNG report")
    for q in (u, r):
        q.add_argument("--log-dir", type=Path, default=REPO / "runs", help="(default: runs/)")
        q.add_argument(
            "--switch-target", choices=("softswitch", "bmv2", "auto"), default=None,
            help="override every switch's target (bmv2: simple_switch_grpc; needs it and p4c-bm2-ss on PATH)",
        )  # fmt: skip
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.cmd == "down" and not args.all and args.file is None:
        print("python -m topologies down: give a topology FILE or --all", file=sys.stderr)
        return 2
    if args.cmd == "check":
        code = 0
        for f in args.files:
            try:
                topo = load(f)
            except SpecError as e:
                print(str(e), file=sys.stderr)
                code = 2
                continue
            print(f"{f}: ok ({len(topo.switches)} switches, {len(topo.hosts)} hosts, "
                  f"{len(topo.links)} links, scenario {topo.scenario.kind})")  # fmt: skip
        return code
    topo = None
    if getattr(args, "file", None) is not None:
        try:
            topo = load(args.file)
        except SpecError as e:
            print(str(e), file=sys.stderr)
            return 2
    from topologies.netns import netns_unavailable

    if (reason := netns_unavailable()) is not None:
        print(f"python -m topologies {args.cmd}: {reason}", file=sys.stderr)
        return 2
    from topologies import launcher

    if args.cmd == "down":
        lines = launcher.down(None if args.all else topo.name, force=args.force)  # type: ignore[union-attr]
        for line in lines or ["nothing to remove"]:
            print(line)
        return 0
    assert topo is not None
    if args.cmd == "up":
        try:
            launcher.up(topo, args.log_dir, args.switch_target)
        except launcher.Interrupted as e:
            print(f"python -m topologies up: {e}: stopped and cleaned up", file=sys.stderr)
            return 130
        except RuntimeError as e:
            print(f"python -m topologies up: {e}", file=sys.stderr)
            return 1
        return 0
    opts = launcher.RunOptions(
        run_name=args.run_name,
        log_dir=args.log_dir.resolve(),
        target=args.switch_target,
        time_budget_s=args.time_budget_s,
        target_return=args.target_return,
        no_target=args.no_target,
        env=args.env,
        seed=args.seed,
        learner_args=shlex.split(args.learner_args),
        actor_args=shlex.split(args.actor_args),
        worker_args=shlex.split(args.worker_args),
        quiet=args.quiet,
        report=not args.no_report,
    )
    return launcher.run(topo, opts).exit_code


if __name__ == "__main__":
    sys.exit(main())
