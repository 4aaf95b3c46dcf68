"""Agreement with labels: accuracy, Cohen's kappa and F1 equal sklearn's on many label sets (two
and three labels), a hand-worked table, intervals are percentiles on the same resampled items,
and a continuous metric is cut at people's label shares or a given threshold."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from opik_metrics.compare.statistics.bootstrap import resample_indices
from opik_metrics.meta_evaluation.evaluation import MetaSettings, meta_evaluate
from opik_metrics.meta_evaluation.labels import is_labels, label_agreement, majority_labels
from opik_metrics.meta_evaluation.table import RatedTable

metrics = pytest.importorskip("sklearn.metrics")


def sklearn_values(human, predicted, labels):
    f1 = (metrics.f1_score(human, predicted, average="binary", pos_label=max(labels)) if len(labels) == 2 else
          metrics.f1_score(human, predicted, average="macro", labels=labels))
    return {"accuracy": metrics.accuracy_score(human, predicted), "kappa": metrics.cohen_kappa_score(human, predicted),
            "f1": f1}


@pytest.mark.parametrize("k", [2, 3])
def test_statistics_equal_sklearn(k):
    rng = np.random.default_rng(k)
    for _ in range(60):
        n = int(rng.integers(k + 2, 80))
        human = rng.integers(0, k, (n, 1)).astype(float)
        human[:k, 0] = np.arange(k)
        judge = np.where(rng.random((n, 1)) < 0.7, human, rng.integers(0, k, (n, 1))).astype(float)
        got = label_agreement("judge", judge, human, 20, 0, 0.95)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = sklearn_values(human[:, 0], judge[:, 0], got.labels)
        assert got.cut == "as given"
        for name, value in expected.items():
            assert got.values[name].estimate == pytest.approx(value, abs=1e-12), name


def test_hand_worked_table_and_intervals_on_the_same_resamples():
    # people: 1 1 1 0 0 0; judge: 1 1 0 0 0 1 -> TP 2, FN 1, TN 2, FP 1
    human = np.array([[1.0], [1], [1], [0], [0], [0]])
    judge = np.array([[1.0], [1], [0], [0], [0], [1]])
    got = label_agreement("judge", judge, human, 50, 4, 0.9)
    assert got.values["accuracy"].estimate == pytest.approx(4 / 6)
    assert got.values["kappa"].estimate == pytest.approx((4 / 6 - 0.5) / 0.5)      # chance agreement 1/2
    assert got.values["f1"].estimate == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))
    idx = resample_indices(6, 50, 4)
    accuracy = np.sort([np.mean(human[row, 0] == judge[row, 0]) for row in idx])
    k = math.floor(50 * 0.1 / 2 + 1e-9)
    assert (got.values["accuracy"].low, got.values["accuracy"].high) == (accuracy[k], accuracy[50 - 1 - k])


def test_a_continuous_metric_is_cut_at_peoples_shares_or_a_threshold():
    human = np.array([[1.0], [1], [0], [0], [0], [0]])          # a third said yes
    score = np.array([[0.9], [0.2], [0.8], [0.1], [0.3], [0.4]])
    shares = label_agreement("s", score, human, 20, 0, 0.95)
    assert shares.cut.startswith("quantiles")
    predicted = (score[:, 0] > np.quantile(score[:, 0], 4 / 6)).astype(float)     # the top third says yes
    assert predicted.sum() == 2
    assert shares.values["accuracy"].estimate == pytest.approx(np.mean(predicted == human[:, 0]))
    cut = label_agreement("s", score, human, 20, 0, 0.95, threshold=0.5)
    assert cut.cut == "threshold 0.5" and cut.values["accuracy"].estimate == pytest.approx(4 / 6)


def test_labels_detected_from_votes_and_majority_per_cell():
    assert is_labels(np.array([0.0, 1.0, 1.0])) and not is_labels(np.array([1.0, 2.0, 3.0]))
    votes = np.array([[[1.0, 1.0, 0.0]], [[0.0, np.nan, 0.0]], [[1.0, 0.0, np.nan]]])
    assert np.array_equal(majority_labels(votes), np.array([[1.0], [0.0], [np.nan]]), equal_nan=True)
    table = RatedTable(items=["a", "b", "c", "d"], systems=["s"], human="yes", raters=["r1", "r2", "r3"],
                       ratings=np.array([[[1.0, 1, 0]], [[0, 0, 0]], [[1, 1, 1]], [[0, 1, 0]]]),
                       scores={"judge": np.array([[1.0], [0], [1], [1]])})
    result = meta_evaluate(table, MetaSettings(resamples=20, methods=("pearson",)))
    assert result.labels["judge"].values["accuracy"].estimate == pytest.approx(3 / 4)
    assert "labels (people's: 0, 1" in result.format_table()
