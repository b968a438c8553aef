"""Learning checks for issue 5 (not tests: they take minutes and their outcome is a figure).

    python -m bench.learning apex [options]   Ape-X, 4 actors + learner, CartPole to return 475,
                                              then the single-process DQN baseline
    python -m bench.learning dp [options]     data-parallel PPO: in-switch sync vs gloo, and
                                              in-switch async with vs without staleness scaling
    python -m bench.learning all              both, with their defaults

Each part prints its figures (environment steps, updates and wall-clock to the threshold) and
writes them to bench/results/learning-<part>-<timestamp>.json; ``<part> --help`` lists its
options. The work is in bench/learning_apex.py and bench/learning_dp.py.
"""

from __future__ import annotations

import importlib
import sys

PARTS = {"apex": "bench.learning_apex", "dp": "bench.learning_dp"}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    part, rest = argv[0], argv[1:]
    if part == "all":
        if rest:
            print(
                "bench.learning: 'all' takes no options; run the parts one by one to pass some",
                file=sys.stderr,
            )
            return 2
        codes = [importlib.import_module(PARTS[p]).main([]) for p in PARTS]
        return max(codes)
    if part not in PARTS:
        print(
            f"bench.learning: unknown part {part!r}; choose one of {', '.join(PARTS)} or all", file=sys.stderr
        )
        return 2
    return importlib.import_module(PARTS[part]).main(rest)


if __name__ == "__main__":
    sys.exit(main())
