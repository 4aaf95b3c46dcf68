"""A statistic's resamples computed once per index matrix (``ResampledOnce``): the same values as
the statistic alone, computed once for an interval and a paired test's side sharing them, and a
paired test over wrapped statistics equal to one over the bare ones (means and corpus BLEU)."""
from __future__ import annotations

import numpy as np

from opik_metrics.compare.statistics.bootstrap import (CorpusStatistic, MeanStatistic, ResampledOnce, bootstrap_interval,
                                            paired_bootstrap, resample_indices)
from opik_metrics.text.bleu import bleu_from_statistics


class Counting:
    def __init__(self, statistic):
        self.statistic, self.n_items, self.value, self.calls = statistic, statistic.n_items, statistic.value, 0

    def resampled(self, idx):
        self.calls += 1
        return self.statistic.resampled(idx)


def _bleu_rows(rng, n):
    hyp = rng.integers(4, 30, n)
    totals = [np.maximum(hyp - k, 0) for k in range(4)]
    correct = [rng.binomial(t, 0.5 * 0.6 ** k) for k, t in enumerate(totals)]
    return np.column_stack([*correct, *totals, hyp, np.maximum(hyp + rng.integers(-2, 3, n), 1)]).tolist()


def test_an_interval_and_a_paired_side_share_one_computation():
    rng = np.random.default_rng(3)
    counting = Counting(MeanStatistic(rng.random(300)))
    once = ResampledOnce(counting)
    idx = resample_indices(300, 200, 5)
    interval = bootstrap_interval(once, idx)
    paired_bootstrap(once, MeanStatistic(rng.random(300)), idx)
    assert counting.calls == 1
    assert interval == bootstrap_interval(counting.statistic, idx)
    assert np.array_equal(once.resampled(idx), counting.statistic.resampled(idx))
    assert once.resampled(idx.copy()) is not None and counting.calls == 2      # another matrix: computed again
    other = MeanStatistic(rng.random(300))
    assert paired_bootstrap(ResampledOnce(counting.statistic), other, idx) == paired_bootstrap(
        counting.statistic, other, idx)


def test_wrapped_paired_tests_equal_bare_ones():
    rng = np.random.default_rng(11)
    n, idx = 400, resample_indices(400, 300, 9)
    means = (MeanStatistic(rng.random(n)), MeanStatistic(rng.random(n)))
    corpora = (CorpusStatistic(_bleu_rows(rng, n), bleu_from_statistics),
               CorpusStatistic(_bleu_rows(rng, n), bleu_from_statistics))
    for a, b in (means, corpora):
        bare = paired_bootstrap(a, b, idx)
        assert paired_bootstrap(ResampledOnce(a), ResampledOnce(b), idx) == bare
        known = ResampledOnce(a)
        bootstrap_interval(known, idx)                       # the baseline's side known before the test
        assert paired_bootstrap(known, ResampledOnce(b), idx) == bare
        assert paired_bootstrap(a, ResampledOnce(b), idx) == bare
