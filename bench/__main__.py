"""``make bench``: every benchmark runs our code and its reference library on the same inputs in
one run and prints the speed ratio (ours / reference) beside the target the issues name.
Rows marked ``"informational": True`` (optional peers with no target, or that disagree with ours)
are shown but do not count against the exit status.

Each benchmark module runs in its own process, so that models, caches and global torch state of
one cannot affect another. ``gpu`` (bench/gpu.py: the model-backed races on one GPU) runs only when
asked for, ``--only gpu``; its rows name the card they ran on. ``install`` (bench/install.py: a
fresh venv of the core against one of ``[all]``) likewise, ``--only install``.

    python -m bench [--only rouge,bleu] [--n N]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from opik_metrics.core.table import format_table

BENCHMARKS = ["bench_rouge", "bench_rouge_compiled", "bench_adapter", "bench_bleu", "bench_chrf_ter", "bench_cider", "bench_meteor",
              "bench_bertscore", "bench_clipscore", "bench_caption", "bench_perplexity", "bench_bartscore", "bench_lm_memory", "bench_scale",
              "bench_gate", "bench_compare_gate", "bench_rescore", "bench_agreement", "bench_traces"]
ON_REQUEST = ["gpu", "install"]  # modules run only when --only names them (no bench_ prefix)
_MARK = "@@bench-rows@@"
_CHILD = ("import json, sys, importlib; m = importlib.import_module('bench.' + sys.argv[1]); "
          "rows = m.main(int(sys.argv[2])) if sys.argv[2] != '0' else m.main(); "
          f"print({_MARK!r} + json.dumps(rows), flush=True)")


def run_one(name: str, n: int | None) -> list[dict]:
    """Run ``bench.<name>.main`` in a child process, streaming its output; return its rows."""
    env = {**os.environ, "OPIK_ANALYTICS_ENABLE": "false", "OPIK_SENTRY_ENABLE": "false",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, name, str(n or 0)], stdout=subprocess.PIPE,
                            text=True, env=env)
    rows: list[dict] = []
    for line in proc.stdout:
        if line.startswith(_MARK):
            rows = json.loads(line[len(_MARK):])
        else:
            sys.stdout.write(line)
    if proc.wait() != 0:
        print(f"!! {name} failed (exit status {proc.returncode})", flush=True)
    return rows


def _met(row: dict) -> bool:
    """A speed ratio meets its target; a cost ratio (``lower_is_better``) stays under it."""
    return row["ratio"] <= row["target"] if row.get("lower_is_better") else row["ratio"] >= row["target"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--only", help="comma-separated subset, e.g. rouge,bleu")
    parser.add_argument("--n", type=int, help="number of pairs (default: each benchmark's own)")
    args = parser.parse_args(argv)
    wanted = ([x.strip() if x.strip() in ON_REQUEST else f"bench_{x.strip()}" for x in args.only.split(",")]
              if args.only else BENCHMARKS)
    rows, failed = [], []
    for name in wanted:
        print(f"== {name}", flush=True)
        got = run_one(name, args.n)
        rows += got
        if not got:
            failed.append(name)
    table = [[r["benchmark"] + (f" [{r['device']}]" if r.get("device") else ""), r["ours_per_s"], "-" if r["reference_per_s"] is None else r["reference_per_s"],
              r["ratio"], "-" if r["target"] is None else r["target"], "yes" if r["identical"] else "NO",
              "info" if r.get("informational") else "met" if _met(r) else "MISSED"]
             for r in rows]
    print()
    print(format_table(["benchmark", "ours/s", "reference/s", "ratio", "target", "identical", "target"],
                       table, digits=2))
    for name in failed:
        print(f"{name}: no result (see its output above)")
    return 0 if rows and not failed and all(r["identical"] or r.get("informational") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
