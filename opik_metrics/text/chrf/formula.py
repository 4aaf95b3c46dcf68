"""chrF from its statistics (per n-gram order: hypothesis n-grams, reference n-grams, matches),
with sacrebleu 2.6's ``CHRF._compute_f_score`` float operations in the same order: the scalar
form for one item or a corpus, the numpy form for many rows at once (bit-identical to it).

sacrebleu returns 100 * F; ``percent=True`` gives that number (what sacrebleu compares to pick the
best reference), ``percent=False`` the F itself in [0, 1] (our scale).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

EPS = 1e-16    # sacrebleu's (and chrF++.py's, Moses', NLTK's) epsilon


def f_score(stats: Sequence[float], order: int, beta: float, eps_smoothing: bool, percent: bool = False) -> float:
    """chrF of flat statistics ``[hyp_1, ref_1, match_1, hyp_2, ...]`` over ``order`` orders."""
    eps = EPS
    score = 0.0
    effective_order = 0
    factor = beta ** 2
    avg_prec, avg_rec = 0.0, 0.0
    for i in range(order):
        n_hyp, n_ref, n_match = stats[3 * i: 3 * i + 3]
        prec = n_match / n_hyp if n_hyp > 0 else eps
        rec = n_match / n_ref if n_ref > 0 else eps
        denom = factor * prec + rec
        score += ((1 + factor) * prec * rec / denom) if denom > 0 else eps
        if n_hyp > 0 and n_ref > 0:
            avg_prec += prec
            avg_rec += rec
            effective_order += 1
    if eps_smoothing:
        return 100 * score / order if percent else score / order
    if effective_order == 0:
        avg_prec = avg_rec = 0.0
    else:
        avg_prec /= effective_order
        avg_rec /= effective_order
    if avg_prec + avg_rec:
        score = (1 + factor) * avg_prec * avg_rec
        score /= ((factor * avg_prec) + avg_rec)
        return 100 * score if percent else score
    return 0.0


def f_scores(stats: np.ndarray, beta: float, eps_smoothing: bool, percent: bool = False) -> np.ndarray:
    """``f_score`` of every row of ``stats`` (shape rows x orders x 3), the same operations
    element-wise, so each value equals the scalar form's exactly."""
    rows, order, _ = stats.shape
    hyp = stats[:, :, 0].astype(np.float64)
    ref = stats[:, :, 1].astype(np.float64)
    match = stats[:, :, 2].astype(np.float64)
    factor = beta ** 2
    score = np.zeros(rows)
    avg_prec = np.zeros(rows)
    avg_rec = np.zeros(rows)
    effective = np.zeros(rows, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(order):
            h, r, m = hyp[:, i], ref[:, i], match[:, i]
            prec = np.where(h > 0, m / h, EPS)
            rec = np.where(r > 0, m / r, EPS)
            denom = factor * prec + rec
            score = score + np.where(denom > 0, (1 + factor) * prec * rec / denom, EPS)
            both = (h > 0) & (r > 0)
            avg_prec = avg_prec + np.where(both, prec, 0.0)
            avg_rec = avg_rec + np.where(both, rec, 0.0)
            effective += both
        if eps_smoothing:
            return 100 * score / order if percent else score / order
        some = effective > 0
        avg_prec = np.where(some, avg_prec / np.maximum(effective, 1), 0.0)
        avg_rec = np.where(some, avg_rec / np.maximum(effective, 1), 0.0)
        total = avg_prec + avg_rec
        value = (1 + factor) * avg_prec * avg_rec
        value = value / ((factor * avg_prec) + avg_rec)
        value = np.where(total != 0, value, 0.0)
    return 100 * value if percent else value
