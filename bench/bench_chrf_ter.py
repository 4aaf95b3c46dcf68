"""Speed of the CHRF (chrF, chrF++) and TER metrics against sacrebleu 2.6.0 on realistic pairs.

Ours runs through the Opik metric (``CHRF(...).score_batch`` / ``TER(...).score_batch``: input
checks, one ScoreResult an item with its statistics and signature), sacrebleu through its
fastest sentence-level use (one ``CHRF`` / ``TER`` object, ``sentence_score`` a pair); the corpus
rows time ``metric.corpus_score`` against ``sacrebleu``'s ``corpus_score`` on the same pairs.
TER runs on a fifth of the pairs (sacrebleu's TER takes ~15 ms a 40-word pair here).

Fair timing: sacrebleu's TER tokenizer memoises with ``functools.lru_cache`` on the class method
(shared by every instance), so that cache is cleared before each timed run of either side. The
sides are timed alternately (swapping who goes first), ``repeats`` times, chunk by chunk, and the
best run of each chunk counts. ``identical``: every value equals sacrebleu's / 100 within 1e-12
(ours is computed on the 0..1 scale, so the last bit may differ from sacrebleu's x100 / 100).

Run: ``python -m bench.bench_chrf_ter`` or ``python -m bench --only chrf_ter``.
"""
from __future__ import annotations

import os
import time
from typing import Callable

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")   # importing opik needs no network

from tests.corpus import realistic_pairs  # noqa: E402

TARGET = 1.0
TOLERANCE = 1e-12


def _clear_caches() -> None:
    from sacrebleu.tokenizers.tokenizer_ter import TercomTokenizer
    TercomTokenizer.__call__.cache_clear()


def _race(mine: Callable[[], object], theirs: Callable[[], object], repeats: int):
    """Best-of-``repeats`` time of each side, alternating, plus each side's last result."""
    best = [float("inf"), float("inf")]
    out = [None, None]
    for rep in range(repeats):
        for side in ((0, 1) if rep % 2 == 0 else (1, 0)):
            _clear_caches()
            start = time.perf_counter()
            out[side] = (mine, theirs)[side]()
            best[side] = min(best[side], time.perf_counter() - start)
    return best[0], best[1], out[0], out[1]


def _row(name: str, n: int, ours_s: float, ref_s: float, identical: bool) -> dict:
    return {"benchmark": name, "ours_per_s": n / ours_s, "reference_per_s": n / ref_s, "ratio": ref_s / ours_s,
            "target": TARGET, "identical": identical}


def _close(ours: float, theirs: float) -> bool:
    return abs(ours - theirs / 100) <= TOLERANCE


def _sentence_row(name, metric, oracle, preds, refs, repeats, chunk):
    """Sentence scores of every pair, raced chunk by chunk (a burst of load hits both sides alike)."""
    ours_s = ref_s = 0.0
    identical = True
    for start in range(0, len(preds), chunk):
        hyps, golds = preds[start:start + chunk], refs[start:start + chunk]
        mine, theirs, ours_out, ref_out = _race(
            lambda: metric.score_batch(hyps, golds),
            lambda: [oracle.sentence_score(h, [r]) for h, r in zip(hyps, golds)], repeats)
        ours_s += mine
        ref_s += theirs
        identical = identical and len(ours_out) == len(ref_out) and all(
            _close(results[0].value, score.score) for results, score in zip(ours_out, ref_out))
    return _row(name, len(preds), ours_s, ref_s, identical)


def _corpus_row(name, metric, oracle, preds, refs, repeats):
    mine, theirs, ours_out, ref_out = _race(lambda: metric.corpus_score(preds, refs),
                                            lambda: oracle.corpus_score(preds, [refs]), repeats)
    return _row(name, len(preds), mine, theirs, _close(ours_out.value, ref_out.score))


def main(n: int = 2000, repeats: int = 3) -> list[dict]:
    """Time sentence and corpus chrF, chrF++ (``n`` pairs) and TER (``n // 5`` pairs); print and
    return one row each."""
    import opik  # noqa: F401  (the metric runs in a process where opik is imported, as in opik.evaluate)
    from sacrebleu.metrics import CHRF as SacreCHRF
    from sacrebleu.metrics import TER as SacreTER

    from opik_metrics.metrics.chrf import CHRF
    from opik_metrics.metrics.ter import TER

    preds, refs = realistic_pairs(n)
    chunk = max(1, min(1000, n // 4))
    rows = []
    for label, word_order in (("chrF", 0), ("chrF++", 2)):
        metric = CHRF(word_order=word_order, track=False)
        oracle = SacreCHRF(word_order=word_order)
        rows.append(_sentence_row(f"sentence {label} (metric.score_batch)", metric, oracle, preds, refs,
                                  repeats, chunk))
        rows.append(_corpus_row(f"corpus {label}", metric, oracle, preds, refs, repeats))
    m = max(1, n // 5)
    metric, oracle = TER(track=False), SacreTER()
    rows.append(_sentence_row("sentence TER (metric.score_batch)", metric, oracle, preds[:m], refs[:m], repeats,
                              max(1, min(200, m // 2))))
    rows.append(_corpus_row("corpus TER", metric, oracle, preds[:m], refs[:m], repeats))

    for row in rows:
        print(f"{row['benchmark']:38s} ours {row['ours_per_s']:9.0f} pairs/s  sacrebleu {row['reference_per_s']:9.0f} "
              f"pairs/s  ratio {row['ratio']:.2f}x (target {row['target']}x)  identical={row['identical']}")
    return rows


if __name__ == "__main__":
    main()
