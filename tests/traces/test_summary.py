"""A window's summary and the comparison of two windows use compare's bootstrap: the intervals
equal ``bootstrap_interval`` over ``resample_indices`` on the same values; the unpaired comparison
resamples each window on its own, checked against numpy written out here."""
from __future__ import annotations

import numpy as np
import pytest

from opik_metrics.compare.statistics.bootstrap import MeanStatistic, bootstrap_interval, resample_indices
from opik_metrics import BLEU
from opik_metrics.traces import compare_windows, score_traces, summarize
from tests.traces.conftest import PROJECT, log_project

RNG = np.random.default_rng(7)
A = list(RNG.uniform(0.2, 0.6, 40))
B = list(RNG.uniform(0.3, 0.8, 55))


def test_summary_intervals_equal_compare_statistics():
    summary = summarize({"bleu": A})
    expected = bootstrap_interval(MeanStatistic(A), resample_indices(len(A)))
    got = summary.scores["bleu"]
    assert (got.mean, got.low, got.high) == (expected.estimate, expected.low, expected.high)


def test_windows_compared_unpaired():
    result = compare_windows("bleu", A, B, resamples=500)
    ia = resample_indices(len(A), 500, 12345)
    ib = resample_indices(len(B), 500, 12346)
    deltas = np.sort(np.asarray(B)[ib].mean(axis=1) - np.asarray(A)[ia].mean(axis=1))
    k = int(500 * 0.05 / 2)
    assert result.delta == pytest.approx(np.mean(B) - np.mean(A), abs=1e-15)
    assert (result.low, result.high) == (pytest.approx(deltas[k]), pytest.approx(deltas[500 - 1 - k]))
    assert result.significant == (deltas[k] > 0 or deltas[500 - 1 - k] < 0)


def test_the_run_summary_holds_the_scores_sent_and_the_corpus_score(server, client):
    logged = log_project(client)
    report = score_traces(PROJECT, [BLEU(track=False)], client=client, progress=False)
    values = [v["value"] for (_, tid), scores in server.feedback_scores.items() for n, v in scores.items()]
    assert report.summary.scores["bleu"].mean == pytest.approx(np.mean(values), abs=1e-9)
    scorable = [t for t in logged.values() if t["k"] % 6 and t["k"] not in (7, 11, 13)]
    # corpus BLEU equals sacrebleu's corpus score of the same pairs (the order does not matter to a sum)
    import sacrebleu
    expected = sacrebleu.corpus_bleu([t["output"]["output"] for t in scorable],
                                     [[t["metadata"]["reference"] for t in scorable]]).score / 100
    assert report.summary.corpus["corpus_bleu"] == pytest.approx(expected, abs=1e-12)


def test_the_draws_block_by_block_are_resample_indices():
    from opik_metrics.compare.statistics.bootstrap import resample_blocks
    for n in (3, 5000):
        blocks = list(resample_blocks(n, 1000, 99))
        assert len(blocks) > (1 if n == 5000 else 0)
        assert np.array_equal(np.vstack(blocks), resample_indices(n, 1000, 99))


def test_a_large_window_gives_compare_interval_too():
    values = list(np.random.default_rng(1).uniform(0, 1, 20_000))
    got = summarize({"s": values}, resamples=300).scores["s"]
    expected = bootstrap_interval(MeanStatistic(values), resample_indices(len(values), 300))
    assert (got.mean, got.low, got.high) == (expected.estimate, expected.low, expected.high)
