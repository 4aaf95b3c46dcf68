"""``agreement`` at Flickr8K-CF's shape (issue 49): 47,830 rated captions, five metrics, 1,000 item
resamples, all four correlations (Kendall tau-b and tau-c, Spearman, Pearson) with intervals and
each metric's paired test against the best, timed as one run of ``agreement_from_scores``.

Synthetic data of that shape: the human score is the mean of three yes/no votes (0, 1/3, 2/3, 1, as
Flickr8K-CF's crowd judgements), the metrics follow it with more or less noise, one with many ties
(a BLEU-like score, zero on a third of the captions), one lower-is-better.

The reference is scipy.stats' own point estimates (``kendalltau`` b and c, ``spearmanr``,
``pearsonr``) on the same resampled items: timed on the first ``SCIPY_RESAMPLES`` resamples of one
metric and scaled to the whole run (5 metrics x 1,000 resamples x 4 correlations; the paired tests
reuse the intervals' resamples, so scipy would need no more); ``identical`` says our values on those
resamples equal scipy's to 1e-12.

Rows (costs, ``lower_is_better``): wall seconds against the issue's 300 s target on two cores, and
the scaled scipy cost beside it (``reference_per_s``: resamples per second).

    python -m bench.bench_agreement [N]
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from opik_metrics.compare.statistics.bootstrap import resample_indices
from opik_metrics.compare.statistics.correlation import resampled_correlations_together
from opik_metrics.meta_evaluation.metric_agreement import AgreementSettings, agreement_from_scores

N_ROWS = 47_830
RESAMPLES = 1_000
TARGET_S = 300.0
SCIPY_RESAMPLES = 5
METHODS = ("kendall_c", "kendall_b", "spearman", "pearson")


def _data(n: int, seed: int = 3) -> tuple[dict[str, list[float]], dict[str, dict[str, float]]]:
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=n)
    votes = (quality[:, None] + rng.normal(size=(n, 3)) > 0).mean(axis=1)
    keys = [f"c{k}" for k in range(n)]
    scores = {
        "clip_s": np.round(quality + 0.8 * rng.normal(size=n), 4),
        "refclip_s": np.round(quality + 0.6 * rng.normal(size=n), 4),
        "cider": np.round(np.maximum(0, quality + 1.5 * rng.normal(size=n)), 3),
        "bleu": np.where(rng.random(n) < 0.33, 0.0, np.round(np.clip(0.3 + 0.1 * quality + 0.2 * rng.normal(size=n),
                                                                        0, 1), 3)),
        "ter": np.round(1 - 0.2 * quality + 0.5 * rng.normal(size=n), 3),        # lower is better
    }
    human = {k: [float(v)] for k, v in zip(keys, votes)}
    return human, {name: dict(zip(keys, values.tolist())) for name, values in scores.items()}


def _scipy(method: str, x: np.ndarray, y: np.ndarray) -> float:
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method.startswith("kendall"):
            return float(stats.kendalltau(x, y, variant=method[-1]).statistic)
        if method == "spearman":
            return float(stats.spearmanr(x, y).statistic)
        return float(stats.pearsonr(x, y).statistic)


def main(n: int = N_ROWS) -> list[dict]:
    """``n``: rated captions (default 47,830); 5 metrics, 1,000 resamples."""
    human, scores = _data(n)
    print(f"{n:,} rated captions, {len(scores)} metrics, {RESAMPLES:,} resamples, {', '.join(METHODS)}", flush=True)
    settings = AgreementSettings(methods=METHODS, resamples=RESAMPLES)
    start, cpu = time.perf_counter(), time.process_time()
    result = agreement_from_scores(human, scores, settings, lower_is_better={"ter"})
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"ours: {seconds:.1f} s wall, {cpu:.1f} s CPU; best by kendall_c: {result.best['kendall_c']}", flush=True)

    # scipy on the first resamples of one metric, the same items drawn (resample_indices, same seed)
    keys = list(human)
    x = np.array([scores["clip_s"][k] for k in keys])
    y = np.array([human[k][0] for k in keys])
    idx = resample_indices(n, SCIPY_RESAMPLES, settings.seed)
    weights = np.stack([np.bincount(row, minlength=n) for row in idx])
    ours = resampled_correlations_together(METHODS, x, y, weights)
    t = time.perf_counter()
    theirs = {m: [_scipy(m, x[row], y[row]) for row in idx] for m in METHODS}
    scipy_one = (time.perf_counter() - t) / SCIPY_RESAMPLES          # all four correlations, one resample
    identical = all(abs(a - b) <= 1e-12 for m in METHODS for a, b in zip(ours[m], theirs[m]))
    scipy_total = scipy_one * RESAMPLES * len(scores)
    print(f"scipy: {1000 * scipy_one:.0f} ms per resample for the four correlations; x {RESAMPLES:,} resamples x "
          f"{len(scores)} metrics = {scipy_total:.0f} s (scaled from {SCIPY_RESAMPLES} resamples); equal to ours "
          f"on them: {identical}", flush=True)
    done = RESAMPLES * len(scores)
    return [{"benchmark": f"agreement: {n:,} captions x {len(scores)} metrics, {RESAMPLES:,} resamples, 4 "
                          f"correlations + paired tests, wall s ({cpu:.0f} s CPU; scipy's point estimates on the "
                          f"same resamples: {scipy_total:.0f} s)",
             "ours_per_s": done / seconds, "reference_per_s": done / scipy_total, "ratio": seconds,
             "target": TARGET_S, "identical": identical, "lower_is_better": True}]


if __name__ == "__main__":
    import sys
    print(main(int(sys.argv[1])) if len(sys.argv) > 1 else main())
