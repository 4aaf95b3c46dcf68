"""From match counts to precision / recall / F: the one place where every ROUGE type becomes a Score."""
from __future__ import annotations

import math
from typing import Iterable, NamedTuple, Optional


class Score(NamedTuple):
    """Precision, recall and F-measure of one ROUGE type for one item: a named tuple, as
    rouge-score's ``Score`` (``precision, recall, fmeasure = score`` works the same)."""

    precision: float
    recall: float
    fmeasure: float


class Counts(NamedTuple):
    """Matches and the two totals they are divided by (ROUGE-W: weighted, before f^-1)."""

    hits: float
    prediction_total: float
    reference_total: float


def pool(counts: Iterable[Counts]) -> Counts:
    """Sum counts over references: ROUGE-1.5.5's model averaging (``-f A``)."""
    hits: float = 0
    prediction_total: float = 0
    reference_total: float = 0
    for c in counts:
        hits += c.hits
        prediction_total += c.prediction_total
        reference_total += c.reference_total
    return Counts(hits, prediction_total, reference_total)


def resolve_alpha(alpha: Optional[float], beta: Optional[float]) -> Optional[float]:
    """ROUGE-1.5.5 ``-p`` alpha from alpha or beta; None for the balanced F1. ValueError on bad values."""
    if alpha is not None and beta is not None:
        raise ValueError("give alpha or beta, not both (beta is alpha = 1 / (1 + beta**2))")
    if beta is not None:
        if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not beta >= 0:
            raise ValueError(f"beta must be a number >= 0, got {beta!r}")
        alpha = 0.0 if math.isinf(beta) else 1.0 / (1.0 + beta * beta)
        return None if beta == 1 else alpha
    if alpha is not None:
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
            raise ValueError(f"alpha must be a number in [0, 1], got {alpha!r}")
        return None if alpha == 0.5 else float(alpha)
    return None


class FMeasure:
    """F = P*R / ((1-alpha)*P + alpha*R); alpha None is rouge-score's 2PR/(P+R), bit for bit."""

    def __init__(self, alpha: Optional[float] = None):
        self.alpha = alpha

    def __call__(self, precision: float, recall: float) -> float:
        alpha = self.alpha
        if alpha is None:
            total = precision + recall
            return 2 * precision * recall / total if total > 0 else 0.0
        if alpha == 1:
            return precision
        if alpha == 0:
            return recall
        denominator = (1 - alpha) * precision + alpha * recall
        return precision * recall / denominator if denominator > 0 else 0.0


def counts_to_values(counts: Counts, fmeasure: FMeasure, root: float = 1.0) -> tuple[float, float, float]:
    """(P, R, F) from counts: P = hits/prediction_total, R = hits/reference_total (0 if a total is 0).

    ``root`` undoes ROUGE-W's weighting: P = (hits/prediction_total) ** (1/root).
    """
    hits, prediction_total, reference_total = counts
    precision = hits / prediction_total if prediction_total else 0.0
    recall = hits / reference_total if reference_total else 0.0
    if root != 1.0:
        precision **= 1.0 / root
        recall **= 1.0 / root
    return precision, recall, fmeasure(precision, recall)


def counts_to_score(counts: Counts, fmeasure: FMeasure, root: float = 1.0) -> Score:
    """``counts_to_values`` as a Score."""
    return Score(*counts_to_values(counts, fmeasure, root))
