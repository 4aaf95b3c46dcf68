"""Benchmark: our ROUGE against rouge-score 0.1.2 on the same realistic pairs.

Rows: the engine's ROUGE-1+2+L on short pairs (stemmer off and on); ROUGE-1/2/L/Lsum with the
stemmer through the Opik metric (``ROUGE(track=False).score_batch``) on summary-sized
multi-sentence pairs; and the ROUGE-Lsum scaling table, the engine on texts of 100 to 1,600
tokens (one sentence per line). Ours and rouge-score run interleaved, round after round, and each
side's median round counts (the machine is shared).

Run: ``python -m bench.bench_rouge``. Every precision / recall / F must be identical to rouge-score's.
"""
from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")   # importing opik needs no network

from tests.corpus import realistic_pairs  # noqa: E402

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
TARGET_RATIO = 5.0
SUMMARY_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
SUMMARY_TARGET = 10.0            # issue 16: ROUGE-1/2/L/Lsum, stemmer, summary pairs, through the metric
SCALING_TOKENS = (100, 200, 400, 800, 1600)
SCALING_TARGET = 10.0
# pairs per length (ours, rouge-score): rouge-score's summary-level LCS is O(n·m) in Python
_SCALING_PAIRS = {100: (40, 10), 200: (30, 6), 400: (20, 3), 800: (12, 2), 1600: (8, 1)}


def _timed(function) -> tuple:
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def _interleaved(ours, theirs, rounds: int) -> tuple:
    """Median seconds of each side over ``rounds`` rounds, the sides alternating who goes first;
    plus each side's last result."""
    times: tuple = ([], [])
    out = [None, None]
    for round_ in range(rounds):
        for side in ((0, 1) if round_ % 2 == 0 else (1, 0)):
            out[side], seconds = _timed((ours, theirs)[side])
            times[side].append(seconds)
    return statistics.median(times[0]), statistics.median(times[1]), out[0], out[1]


def _identical(ours: list, theirs: list, types=ROUGE_TYPES) -> bool:
    return all(
        (o[t].precision, o[t].recall, o[t].fmeasure) == tuple(r[t])
        for o, r in zip(ours, theirs) for t in types
    ) and len(ours) == len(theirs)


def _lines(text: str) -> str:
    """One sentence per line, as rougeLsum expects."""
    return text.replace(". ", ".\n").replace("! ", "!\n").replace("? ", "?\n")


def summary_pairs(n: int, seed: int = 3) -> tuple:
    """``n`` summary-sized pairs, one sentence per line: realistic pairs joined until the prediction
    has 80 to 150 words (about 140 words and 7 lines on average)."""
    preds, refs = realistic_pairs(4 * n, seed=seed)
    out_p, out_r, k = [], [], 0
    for i in range(n):
        p, r = [], []
        while sum(len(s.split()) for s in p) < 80 + 10 * (i % 8):
            p.append(_lines(preds[k]))
            r.append(_lines(refs[k]))
            k += 1
        out_p.append("\n".join(p))
        out_r.append("\n".join(r))
    return out_p, out_r


def long_pairs(tokens: int, count: int, seed: int = 0) -> list:
    """``count`` (prediction, reference) pairs of at least ``tokens`` words, one sentence per line."""
    preds, refs = realistic_pairs(count * (tokens // 20 + 5), seed=seed)
    out, k = [], 0
    for _ in range(count):
        p, r = [], []
        while sum(len(s.split()) for s in p) < tokens:
            p.append(_lines(preds[k]))
            r.append(_lines(refs[k]))
            k += 1
        out.append(("\n".join(p), "\n".join(r)))
    return out


def _print(row: dict) -> None:
    print(f"{row['benchmark']}: ours {row['ours_per_s']:,.1f} pairs/s, rouge-score "
          f"{row['reference_per_s']:,.1f} pairs/s, ratio {row['ratio']:.1f}x "
          f"(target {row['target']:.0f}x), identical: {row['identical']}", flush=True)


def short_pair_rows(n: int) -> list:
    """The engine's ROUGE-1+2+L on ``realistic_pairs(n)``, stemmer off and on."""
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
    return rows


def summary_metric_row(n: int = 120, rounds: int = 5) -> dict:
    """ROUGE-1/2/L/Lsum with the stemmer through the Opik metric on ``n`` summary-sized pairs."""
    import opik  # noqa: F401  (the metric runs where opik is imported, as in opik.evaluate)
    from rouge_score import rouge_scorer

    from opik_metrics import ROUGE

    predictions, references = summary_pairs(n)
    metric = ROUGE(rouge_types=SUMMARY_TYPES, use_stemmer=True, track=False)
    oracle = rouge_scorer.RougeScorer(list(SUMMARY_TYPES), use_stemmer=True)
    ours_s, ref_s, scored, theirs = _interleaved(
        lambda: metric.score_batch(predictions, references),
        lambda: [oracle.score(r, p) for p, r in zip(predictions, references)], rounds)
    identical = len(scored) == len(theirs) == n and all(
        [r.value for r in results] == [x for t in SUMMARY_TYPES for x in s[t]]
        for results, s in zip(scored, theirs))
    tokens = sum(len(p.split()) for p in predictions) / n
    return {"benchmark": f"ROUGE-1/2/L/Lsum metric.score_batch, stemmer, summary pairs (~{tokens:.0f} tokens, "
                         f"{sum(p.count(chr(10)) + 1 for p in predictions) / n:.1f} lines)",
            "ours_per_s": n / ours_s, "reference_per_s": n / ref_s, "ratio": ref_s / ours_s,
            "target": SUMMARY_TARGET, "identical": identical}


def scaling_rows(rounds: int = 3) -> list:
    """ROUGE-Lsum alone (engine, stemmer off) at 100 to 1,600 tokens: the scaling table."""
    from rouge_score import rouge_scorer

    from opik_metrics.text.rouge.scorer import RougeScorer

    ours = RougeScorer(("rougeLsum",))
    oracle = rouge_scorer.RougeScorer(["rougeLsum"])
    rows = []
    for tokens in SCALING_TOKENS:
        our_count, ref_count = _SCALING_PAIRS[tokens]
        pairs = long_pairs(tokens, our_count, seed=tokens)
        ref_pairs = pairs[:ref_count]
        ours_s, ref_s, mine, theirs = _interleaved(
            lambda: [ours.score(p, r) for p, r in pairs],
            lambda: [oracle.score(r, p) for p, r in ref_pairs], rounds)
        ours_per_s, ref_per_s = our_count / ours_s, ref_count / ref_s
        rows.append({"benchmark": f"ROUGE-Lsum engine, {tokens} tokens ({_mean_lines(pairs):.0f} lines)",
                     "ours_per_s": ours_per_s, "reference_per_s": ref_per_s, "ratio": ours_per_s / ref_per_s,
                     "target": SCALING_TARGET,
                     "identical": _identical(mine[:ref_count], theirs, ("rougeLsum",))})
        _print(rows[-1])
    return rows


def _mean_lines(pairs: list) -> float:
    return sum(p.count("\n") + 1 for p, _ in pairs) / len(pairs)


def main(n: int = 10_000) -> list:
    """The short-pair engine rows on ``realistic_pairs(n)``, the summary metric row and the
    ROUGE-Lsum scaling rows; print and return them."""
    rows = short_pair_rows(n)
    for row in rows:
        _print(row)
    rows.append(summary_metric_row())
    _print(rows[-1])
    rows += scaling_rows()
    return rows


if __name__ == "__main__":
    main()
