"""Benchmark: what the Opik adapter costs. ``ROUGE(...).score_batch`` (the path a user calls: input
checks, nine ScoreResults a pair with metadata) against the engine's own ``RougeScorer.score_batch``
on the same short pairs, stemmer off and on; the target is at most 1.2x the engine's time. Then
the same ``score_batch`` on both cores (``workers=2``: worker processes run ROUGE's kernel, this
process builds the results) against ``workers=1`` on 200,000 short pairs; target at least 1.7x.
That row runs on our engine (``engine="python"``): on rouge-score-rs a batch stays in this process
and spreads over the cores by its own threads, so ``workers`` does not apply there
(``bench_rouge_compiled`` measures its two threads against one).

Run: ``python -m bench.bench_adapter``. The values must be identical.
"""
from __future__ import annotations

import gc
import os
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")   # importing opik needs no network

from tests.corpus import realistic_pairs  # noqa: E402

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
TARGET = 1.2


def _timed(call) -> tuple:
    """``call()`` as a user calls it, and its seconds: from a collected heap, so that neither side
    pays for collecting objects the other left. The metric pauses the collector while it scores
    and pays the collection of its new objects on leaving; the engine runs with it as it is."""
    gc.collect()
    start = time.perf_counter()
    result = call()
    return result, time.perf_counter() - start


def main(n: int = 10_000) -> list:
    import opik  # noqa: F401  (the metric runs in a process where opik is imported, as in opik.evaluate)

    from opik_metrics import ROUGE
    from opik_metrics.text.rouge import RougeScorer

    predictions, references = realistic_pairs(n, seed=5)
    predictions = [" ".join(p.split()[:12]) for p in predictions]    # short pairs: the adapter's share is largest
    references = [" ".join(r.split()[:12]) for r in references]
    rows = []
    for use_stemmer in (False, True):
        engine = RougeScorer(ROUGE_TYPES, use_stemmer=use_stemmer)
        metric = ROUGE(rouge_types=ROUGE_TYPES, use_stemmer=use_stemmer, track=False)
        engine_call = lambda: engine.score_batch(predictions, [[r] for r in references])  # noqa: E731
        metric_call = lambda: metric.score_batch(predictions, references)  # noqa: E731
        engine_seconds = metric_seconds = float("inf")
        for _ in range(5):     # interleaved, best of five: drift of the machine hits both alike
            raw, seconds = _timed(engine_call)
            engine_seconds = min(engine_seconds, seconds)
            scored, seconds = _timed(metric_call)
            metric_seconds = min(metric_seconds, seconds)
        identical = all([r.value for r in results] == [getattr(s[t], a) for t in ROUGE_TYPES
                                                       for a in ("precision", "recall", "fmeasure")]
                        for results, s in zip(scored, raw))
        rows.append({"benchmark": f"ROUGE-1+2+L metric.score_batch vs engine, short pairs, stemmer "
                                  f"{'on' if use_stemmer else 'off'}",
                     "ours_per_s": n / metric_seconds, "reference_per_s": n / engine_seconds,
                     "ratio": metric_seconds / engine_seconds, "target": TARGET, "identical": identical,
                     "lower_is_better": True})
        del raw, scored
    for row in rows:
        print(f"{row['benchmark']}: metric {row['ours_per_s']:,.0f} pairs/s, engine {row['reference_per_s']:,.0f} "
              f"pairs/s, metric time / engine time {row['ratio']:.2f} (target <= {TARGET}), identical: {row['identical']}")
    rows += both_cores_rows(predictions, references)
    return rows


def both_cores_rows(predictions: list, references: list, n: int = 200_000, rounds: int = 3) -> list:
    """``score_batch(workers=2)`` against ``workers=1``, interleaved, best of ``rounds`` each."""
    from opik_metrics import ROUGE
    from opik_metrics.execution import ScoringContext
    from opik_metrics.execution.worker_pools import available_cores

    if available_cores() < 2:
        print("both cores: skipped, this machine lets the process use one core")
        return []
    preds = (predictions * (n // len(predictions) + 1))[:n]
    refs = (references * (n // len(references) + 1))[:n]
    rows = []
    for use_stemmer in (False, True):
        metric = ROUGE(rouge_types=ROUGE_TYPES, use_stemmer=use_stemmer, engine="python", track=False)
        with ScoringContext():    # a session's pool: started once, here, and kept for the timed batches
            metric.score_batch(preds[:40_000], refs[:40_000], workers=2)
            one = two = float("inf")
            spread = None
            for _ in range(rounds):
                del spread    # each call from a collected heap, as in _timed (and its own results' collection included)
                serial, seconds = _timed(lambda: metric.score_batch(preds, refs, workers=1))
                one = min(one, seconds)
                del serial
                spread, seconds = _timed(lambda: metric.score_batch(preds, refs, workers=2))
                two = min(two, seconds)
        serial = metric.score_batch(preds[:20_000], refs[:20_000], workers=1)
        identical = all([r.value for r in a] == [r.value for r in b] for a, b in zip(serial, spread))
        del spread, serial
        row = {"benchmark": f"ROUGE-1+2+L metric.score_batch (our engine), {n:,} short pairs, stemmer "
                            f"{'on' if use_stemmer else 'off'}, workers=2 vs 1 (speed-up)",
               "ours_per_s": n / two, "reference_per_s": n / one, "ratio": one / two, "target": 1.7,
               "identical": identical}
        print(f"{row['benchmark']}: {row['ours_per_s']:,.0f} vs {row['reference_per_s']:,.0f} pairs/s, "
              f"{row['ratio']:.2f}x (target >= 1.7), identical: {identical}", flush=True)
        rows.append(row)
    return rows


if __name__ == "__main__":
    main()
