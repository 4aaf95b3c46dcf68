"""``make bench``: every benchmark runs our code and its reference library on the same inputs in
one run and prints the speed ratio (ours / reference) beside the target the issues name.

    python -m bench [--only rouge,bleu] [--n N]
"""
from __future__ import annotations

import argparse
import importlib
import sys

from opik_metrics.table import format_table

BENCHMARKS = ["bench_rouge", "bench_bleu", "bench_bertscore", "bench_perplexity"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--only", help="comma-separated subset, e.g. rouge,bleu")
    parser.add_argument("--n", type=int, help="number of pairs (default: each benchmark's own)")
    args = parser.parse_args(argv)
    wanted = [f"bench_{x.strip()}" for x in args.only.split(",")] if args.only else BENCHMARKS
    rows = []
    for name in wanted:
        module = importlib.import_module(f"bench.{name}")
        print(f"== {name}", flush=True)
        rows += module.main(args.n) if args.n else module.main()
    table = [[r["benchmark"], r["ours_per_s"], r["reference_per_s"], r["ratio"], r["target"],
              "yes" if r["identical"] else "NO", "met" if r["ratio"] >= r["target"] else "MISSED"]
             for r in rows]
    print()
    print(format_table(["benchmark", "ours/s", "reference/s", "ratio", "target", "identical", "target"],
                       table, digits=2))
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
