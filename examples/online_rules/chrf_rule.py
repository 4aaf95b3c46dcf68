"""Sentence chrF (sacrebleu's defaults: character 6-grams, beta 2, whitespace ignored) as the code of
an Opik online evaluation rule ("Python code" metric). Self-contained: Opik's rule sandbox has no
opik-metrics and no sacrebleu, so it uses only the standard library and Opik's own base classes.
It gives the same numbers as ``opik_metrics.CHRF()`` (0 to 1), so ``opik-metrics traces score -m chrf``
can backfill the traces logged before the rule existed (tests/examples/test_online_rule.py).
Paste everything below this docstring as the rule's code; map ``output`` and ``reference``."""
from collections import Counter
from typing import Any

from opik.evaluation.metrics import base_metric, score_result

CHAR_ORDER = 6
BETA = 2.0


def _char_ngrams(text: str) -> list:
    text = "".join(text.split())
    return [Counter(text[i:i + n] for i in range(len(text) - n + 1)) for n in range(1, CHAR_ORDER + 1)]


def _f_score(stats: list) -> float:
    eps, factor = 1e-16, BETA ** 2
    avg_prec = avg_rec = 0.0
    effective = 0
    for n_hyp, n_ref, n_match in stats:
        prec = n_match / n_hyp if n_hyp > 0 else eps
        rec = n_match / n_ref if n_ref > 0 else eps
        if n_hyp > 0 and n_ref > 0:
            avg_prec += prec
            avg_rec += rec
            effective += 1
    if effective == 0:
        return 0.0
    avg_prec, avg_rec = avg_prec / effective, avg_rec / effective
    if avg_prec + avg_rec == 0:
        return 0.0
    return (1 + factor) * avg_prec * avg_rec / (factor * avg_prec + avg_rec)


class SentenceChrF(base_metric.BaseMetric):
    def __init__(self, name: str = "chrf"):
        self.name = name

    def score(self, output: str, reference: Any, **ignored_kwargs: Any):
        references = [reference] if isinstance(reference, str) else list(reference)
        hyp = _char_ngrams(output)
        best = -1.0
        for ref_text in references:
            ref = _char_ngrams(ref_text)
            stats = [(sum(h.values()), sum(r.values()), sum(min(c, r[g]) for g, c in h.items()))
                     for h, r in zip(hyp, ref)]
            best = max(best, _f_score(stats))
        return score_result.ScoreResult(value=best, name=self.name, reason="sentence chrF (char 6-grams, beta 2)")
