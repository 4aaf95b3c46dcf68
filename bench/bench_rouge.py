"""Benchmark: our ROUGE-1+2+L against rouge-score 0.1.2 on the same realistic pairs, stemmer off and on.

Run: ``python -m bench.bench_rouge``. Every precision / recall / F must be identical to rouge-score's.
"""
from __future__ import annotations

import time

from tests.corpus import realistic_pairs

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
TARGET_RATIO = 5.0


def _timed(function) -> tuple:
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def _identical(ours: list, theirs: list) -> bool:
    return all(
        (o[t].precision, o[t].recall, o[t].fmeasure) == tuple(r[t])
        for o, r in zip(ours, theirs) for t in ROUGE_TYPES
    ) and len(ours) == len(theirs)


def main(n: int = 10_000) -> list:
    """Time both scorers on ``realistic_pairs(n)`` for stemmer off and on; return and print one row each."""
    from rouge_score import rouge_scorer

    from opik_metrics.text.rouge.scorer import RougeScorer

    predictions, references = realistic_pairs(n)
    pairs = list(zip(predictions, references))
    rows = []
    for use_stemmer in (False, True):
        reference_scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=use_stemmer)
        our_scorer = RougeScorer(ROUGE_TYPES, use_stemmer=use_stemmer)
        theirs, reference_seconds = _timed(
            lambda: [reference_scorer.score(ref, pred) for pred, ref in pairs])  # score(target, prediction)
        ours, our_seconds = _timed(lambda: [our_scorer.score(pred, ref) for pred, ref in pairs])
        ours_per_s, reference_per_s = n / our_seconds, n / reference_seconds
        rows.append({
            "benchmark": f"ROUGE-1+2+L (stemmer {'on' if use_stemmer else 'off'})",
            "ours_per_s": ours_per_s,
            "reference_per_s": reference_per_s,
            "ratio": ours_per_s / reference_per_s,
            "target": TARGET_RATIO,
            "identical": _identical(ours, theirs),
        })
    for row in rows:
        print(f"{row['benchmark']}: ours {row['ours_per_s']:,.0f} pairs/s, rouge-score "
              f"{row['reference_per_s']:,.0f} pairs/s, ratio {row['ratio']:.1f}x "
              f"(target {row['target']:.0f}x), identical: {row['identical']}")
    return rows


if __name__ == "__main__":
    main()
