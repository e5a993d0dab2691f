"""``python -m benchmarks EXPERIMENT [options]``: run one benchmark of the product's own code paths.

Run it from the repository root (the ``benchmarks`` package sits beside ``core``, outside the product).
Errors are one line on stderr and exit status 1, as with ``dcstudio``.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks import EXPERIMENTS, run_benchmark
from core.cli import exit_code

PROG = "python -m benchmarks"


class _Given(argparse.Action):
    """Store the value and note that it was given (``seeds_given``): an experiment may default differently."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Run one benchmark of the product's own code paths.",
        epilog="experiments:\n" + "\n".join(f"  {n:<14}{d}" for n, d in EXPERIMENTS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", choices=list(EXPERIMENTS), metavar="EXPERIMENT",
                   help="one of: " + ", ".join(EXPERIMENTS))
    p.add_argument("--dataset", action="append", help="a benchmark data set (repeatable; default: all)")
    p.add_argument("--seeds", type=int, default=10, action=_Given,
                   help="repetitions with seeds 0 … N−1 (default 10; clinical: 5)")
    p.add_argument("--data-dir", help="folder of the benchmark data sets")
    p.add_argument("--json", help="also write the record as JSON (and markdown/SVG beside it)")
    p.add_argument("--rows", type=int, help="export: rows of the synthetic CSV")
    p.add_argument("--quick", action="store_true", help="the main table only (skip the longer extensions); "
                   "privacy --rows: the assessment alone, beside an export of 10,000 of the rows")
    p.add_argument("--classes", type=int, help="scale: classes of the synthetic sites (default 7; 2: a yes/no outcome)")
    p.add_argument("--cases", type=int, help="fuzz: number of mutated files (default 5000)")
    p.add_argument("--seed", type=int, default=0, help="fuzz/kill: random seed")
    p.add_argument("--kills", type=int, help="kill: number of SIGKILLs per operation")
    p.add_argument("--sites", help="scale, report-size: comma-separated site counts (default 10,30,100,300,1000; "
                   "report-size: 100,1000,10000); import-scale: bundle counts (default 100,1000,3000)")
    p.add_argument("--method", action="append",
                   help="clinical, small-sites, fuzz, privacy --rows: a method to run (repeatable; default clinical: "
                   "dccfl, dc, meta-lr, and clinical takes NAME:key=value,… for kit settings, e.g. "
                   "meta-lr:effects=fixed; small-sites: every classification method; fuzz: all; privacy --rows: "
                   "dccfl)")
    p.add_argument("--site-impute", choices=("auto", "mean", "none"), default="auto",
                   help="clinical: how sites read empty cells (auto: as the product's error says, only if needed)")
    p.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    return p


def say(*lines: str) -> None:
    for line in lines:
        print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return exit_code(lambda: run_benchmark(args.experiment, args, say), PROG, debug=args.debug)


if __name__ == "__main__":
    sys.exit(main())
