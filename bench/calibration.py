"""The calibration table of docs/compare.md: on seeded null experiments (no true difference), how
often each test says "significant" at alpha = 0.05, how often the gate (``--fail-on worse``) fails,
and how often a significant verdict sits beside an interval that holds 0; then power against a known
shift. The designs are tests/compare/test_calibration.py's, with more seeds.

    python -m bench.calibration [--nulls 1000]
"""
from __future__ import annotations

import argparse
import sys


from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.gate.gating import gate_comparison
from tests.compare.test_calibration import _null

ALPHA = 0.05
TESTS = {"auto (default)": {}, "bootstrap, calibrated p": {"test": "bootstrap"},
         "bootstrap, sacrebleu's p": {"test": "bootstrap", "p_value": "sacrebleu"}}


def rates(design: str, options: dict, nulls: int, shift: float = 0.0) -> tuple[float, float, float]:
    """(share significant, share the gate failed, share significant beside an interval holding 0)."""
    significant = failed = contradicted = 0
    for seed in range(nulls):
        base, new, settings = _null(design, seed, shift)
        settings = CompareSettings(**{**settings.__dict__, "resamples": 1000, "permutations": 1000, **options})
        comparison = compare_experiments([base, new], settings, created_at="t")
        entry = comparison.pairs[0].metrics["score"]
        significant += bool(entry.significant)
        failed += not gate_comparison(comparison, mode="worse").result.passed
        contradicted += bool(entry.significant) and entry.delta_low <= 0.0 <= entry.delta_high
    return significant / nulls, failed / nulls, contradicted / nulls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.calibration", description=__doc__)
    parser.add_argument("--nulls", type=int, default=1000)
    args = parser.parse_args(argv)
    sd = (ALPHA * (1 - ALPHA) / args.nulls) ** 0.5
    print(f"{args.nulls} nulls per design, alpha {ALPHA}; a rate's standard error about {sd:.3f}\n")
    print("| design | test | significant (two-sided) | gate failed (one-sided) | significant, interval holds 0 |")
    print("|---|---|---:|---:|---:|")
    for design in ("simple", "trials", "clusters", "small", "pass/fail"):
        for label, options in TESTS.items():
            sig, gate, contra = rates(design, options, args.nulls)
            print(f"| {design} | {label} | {sig:.3f} | {gate:.3f} | {contra:.3f} |", flush=True)
    print("\npower, simple design, shift 0.45 (3.2 standard errors):")
    for label, options in TESTS.items():
        sig, _, _ = rates("simple", options, min(args.nulls, 300), shift=0.45)
        print(f"- {label}: {sig:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
