"""Agreement with human ratings: point values equal scipy.stats on the items both have (missing
items left out and counted), intervals equal scipy on the same resampled items, undefined
correlations carry a reason, and the paired test against the best metric behaves."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from opik_metrics.compare.statistics.bootstrap import resample_indices
from opik_metrics.meta_evaluation.metric_agreement import AgreementSettings, agreement_from_scores

stats = pytest.importorskip("scipy.stats")

SCIPY = {
    "kendall_c": lambda x, y: stats.kendalltau(x, y, variant="c").statistic,
    "kendall_b": lambda x, y: stats.kendalltau(x, y, variant="b").statistic,
    "spearman": lambda x, y: stats.spearmanr(x, y).statistic,
    "pearson": lambda x, y: stats.pearsonr(x, y).statistic,
}


def rated_set(n: int = 40, seed: int = 0):
    """1-5 ratings; `good` follows them closely, `weak` loosely, `flat` is one value; ratings of
    some items and scores of others are missing."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=n)
    keys = [f"item-{i}" for i in range(n)]
    human = {k: [float(np.clip(np.round(3 + q), 1, 5))] for k, q in zip(keys, quality)}
    good = {k: float(q + 0.3 * rng.normal()) for k, q in zip(keys, quality)}
    weak = {k: float(np.round(q + 1.5 * rng.normal(), 1)) for k, q in zip(keys, quality)}
    for k in keys[:3]:
        del good[k]                   # rated items `good` did not score (`weak` did)
    del human[keys[5]]                # an item nobody rated
    good["not-rated"] = 1.0           # a score on an item outside the rated set
    return human, {"good": good, "weak": weak}


def test_point_values_equal_scipy_on_the_items_both_have():
    human, scores = rated_set()
    result = agreement_from_scores(human, scores, AgreementSettings(resamples=50), human_name="rating")
    assert result.human_items == 39
    for m in result.metrics:
        keys = [k for k in human if k in scores[m.metric]]
        assert m.n_items == len(keys) == {"good": 36, "weak": 39}[m.metric]
        assert m.human_only == 39 - len(keys)
        x = [scores[m.metric][k] for k in keys]
        y = [human[k][0] for k in keys]
        for method, reference in SCIPY.items():
            assert m.correlations[method].estimate == pytest.approx(float(reference(x, y)), abs=1e-12)


def test_intervals_are_percentiles_of_scipy_on_the_resampled_items():
    human, scores = rated_set()
    settings = AgreementSettings(resamples=200, seed=5, confidence=0.9)
    result = agreement_from_scores(human, {"weak": scores["weak"]}, settings)
    keys = [k for k in human if k in scores["weak"]]
    x = np.array([scores["weak"][k] for k in keys])
    y = np.array([human[k][0] for k in keys])
    idx = resample_indices(len(keys), 200, 5)
    for method, reference in SCIPY.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = np.sort([float(reference(x[row], y[row])) for row in idx])
        got = result.metrics[0].correlations[method]
        assert got.resamples == 200                      # no resample of 39 items was constant
        assert (got.low, got.high) == pytest.approx((values[10], values[189]), abs=1e-12)   # ranks 10 and 189


def test_constant_columns_and_too_few_items_are_none_with_a_reason():
    human = {"a": [3.0], "b": [3.0], "c": [3.0]}
    result = agreement_from_scores(human, {"m": {"a": 1.0, "b": 2.0, "c": 3.0}}, AgreementSettings(resamples=20),
                                   human_name="fluency")
    for c in result.metrics[0].correlations.values():
        assert c.estimate is None and "fluency is 3 on every item" in c.reason
    flat = agreement_from_scores({"a": [1.0], "b": [2.0]}, {"m": {"a": 0.5, "b": 0.5}}, AgreementSettings(resamples=20))
    assert "m is 0.5 on every rated item" in flat.metrics[0].correlations["pearson"].reason
    one = agreement_from_scores({"a": [1.0], "b": [2.0]}, {"m": {"a": 0.5}}, AgreementSettings(resamples=20))
    assert one.metrics[0].n_items == 1 and "only 1 item(s)" in one.metrics[0].correlations["spearman"].reason
    assert one.best == {m: None for m in AgreementSettings().methods}
    json.loads(one.to_json())                            # no NaN anywhere: strict JSON


def test_raters_mean_and_pairs():
    human = {"a": [1.0, 2.0], "b": [4.0, 5.0, 3.0], "c": [2.0], "d": [5.0, 5.0]}
    metric = {"a": 0.1, "b": 0.7, "c": 0.4, "d": 0.9}
    mean = agreement_from_scores(human, {"m": metric}, AgreementSettings(resamples=30))
    pairs = agreement_from_scores(human, {"m": metric}, AgreementSettings(resamples=30, raters="pairs"))
    keys = list(human)
    x_mean, y_mean = [metric[k] for k in keys], [float(np.mean(human[k])) for k in keys]
    x_pairs = [metric[k] for k in keys for _ in human[k]]
    y_pairs = [r for k in keys for r in human[k]]
    assert pairs.metrics[0].n_pairs == 8 and pairs.metrics[0].n_items == 4
    for method, reference in SCIPY.items():
        assert mean.metrics[0].correlations[method].estimate == pytest.approx(float(reference(x_mean, y_mean)))
        assert pairs.metrics[0].correlations[method].estimate == pytest.approx(float(reference(x_pairs, y_pairs)))


def test_a_metric_far_below_the_best_is_significant_and_a_copy_is_not():
    human, scores = rated_set(n=150, seed=2)
    rng = np.random.default_rng(9)
    scores["noise"] = {k: float(rng.normal()) for k in human}
    scores["good_copy"] = dict(scores["good"])
    result = agreement_from_scores(human, scores, AgreementSettings(resamples=300))
    by_name = {m.metric: m for m in result.metrics}
    assert result.best["kendall_c"] == "good"                 # the first of two equal ones
    noise = by_name["noise"].versus_best["kendall_c"]
    assert noise.significant and noise.delta < 0 and noise.high < 0 and noise.p_value < 0.05
    assert noise.n_items == by_name["good"].n_items           # the items both scores and the human have
    copy = by_name["good_copy"].versus_best["kendall_c"]
    assert copy.delta == 0.0 and copy.p_value == 1.0 and not copy.significant
    assert "kendall_c" not in by_name["good"].versus_best


def test_lower_is_better_scores_are_negated():
    human = {"a": [1.0], "b": [2.0], "c": [3.0], "d": [4.0]}
    ter = {"a": 0.9, "b": 0.5, "c": 0.6, "d": 0.1}
    result = agreement_from_scores(human, {"ter": ter}, AgreementSettings(resamples=20), lower_is_better={"ter"})
    m = result.metrics[0]
    assert m.oriented
    assert m.correlations["kendall_b"].estimate == pytest.approx(-float(SCIPY["kendall_b"](list(ter.values()),
                                                                                          [1, 2, 3, 4])))


def test_bad_settings_and_ratings_are_refused():
    with pytest.raises(ValueError, match="raters: expected mean or pairs"):
        agreement_from_scores({}, {}, AgreementSettings(raters="median"))
    with pytest.raises(ValueError, match="item 'a': human ratings must be finite"):
        agreement_from_scores({"a": [float("nan")]}, {}, AgreementSettings())
    with pytest.raises(ValueError, match="methods: choose from"):
        agreement_from_scores({}, {}, AgreementSettings(methods=("tau",)))


def test_too_few_resamples_for_the_test_are_named_in_one_note():
    human, scores = rated_set()
    result = agreement_from_scores(human, scores, AgreementSettings(resamples=19))
    assert result.notes == ["19 resamples cannot show anything significant at 0.05: the smallest p-value is 1/20; "
                            "use at least 20"]
    assert agreement_from_scores(human, scores, AgreementSettings(resamples=20)).notes == []
