"""Trials and clusters in the comparison: the item (or the cluster) is the unit resampled, never the
row. Simulated experiments with fixed seeds, built in memory as the sources build them (rows sharing
an item key are trials; a ``doc`` field is the cluster):

- a null difference with a strong item-by-system interaction and 3 trials: the paired test's
  false-positive rate at 0.05 stays within the binomial bound (treating trials as items, as the
  comparison did before, exceeds it several times);
- 95% intervals cover a known difference 93-97% of the time over 1,000 experiments, with and
  without clusters;
- on a large clustered sample the interval's half-width is within 10% of 1.96 x the cluster-robust
  standard error, computed here from its formula;
- one trial and no clusters: the comparison is the one it was (the same object is compared), and
  clusters of one item give the item bootstrap's numbers.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.records import ExperimentRecords, ItemRecord
from opik_metrics.compare.trials import ClusterFieldError, merge_trials, units_of

SCORE = "quality"


def _experiment(name: str, values: np.ndarray, docs: np.ndarray | None = None) -> ExperimentRecords:
    """``values[i, t]``: item i's score on trial t; one row per trial, the trials sharing the item's key."""
    items = []
    for i, row in enumerate(values):
        for t, value in enumerate(row):
            item_input = {"id": f"item-{i}"} if docs is None else {"id": f"item-{i}", "doc": f"doc-{docs[i]}"}
            items.append(ItemRecord(key=f"item-{i}", position=i, input=item_input, output={"output": "x"},
                                    scores={SCORE: float(value)}))
    return ExperimentRecords(name=name, source="simulated", dataset="d", status="finished", config={}, items=items)


def _as_independent(experiment: ExperimentRecords) -> ExperimentRecords:
    """The rows as the comparison read them before: each trial a key of its own (``-2``, ``-3``)."""
    seen: dict[str, int] = {}
    items = []
    for item in experiment.items:
        seen[item.key] = seen.get(item.key, 0) + 1
        key = item.key if seen[item.key] == 1 else f"{item.key}-{seen[item.key]}"
        items.append(ItemRecord(key=key, position=len(items), input=item.input, output=item.output,
                                scores=dict(item.scores)))
    return ExperimentRecords(name=experiment.name, source="simulated", dataset="d", status="finished", config={},
                             items=items)


def _pair(base: ExperimentRecords, new: ExperimentRecords, resamples: int = 1000, seed: int = 12345,
          cluster_by: str | None = None):
    settings = CompareSettings(resamples=resamples, seed=seed, metrics=(SCORE,), cluster_by=cluster_by)
    comparison = compare_experiments([base, new], settings, created_at="2026-11-28T00:00:00+00:00")
    return comparison, comparison.pairs[0].metrics[SCORE]


def _null_interaction(rng: np.random.Generator, n: int = 40, trials: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Two systems with no difference on average but a strong one per item (sd 0.3), and trial noise (sd 0.05)."""
    item = rng.normal(0.5, 0.2, n)
    interaction = rng.normal(0.0, 0.3, n)
    base = item[:, None] + rng.normal(0, 0.05, (n, trials))
    new = (item + interaction)[:, None] + rng.normal(0, 0.05, (n, trials))
    return base, new


def test_a_null_difference_over_three_trials_is_significant_no_more_often_than_alpha():
    rng = np.random.default_rng(2026)
    runs, ours, rows_as_items = 200, 0, 0
    for k in range(runs):
        base, new = _null_interaction(rng)
        a, b = _experiment("base", base), _experiment("new", new)
        ours += _pair(a, b, resamples=400, seed=k)[1].p_value < 0.05
        rows_as_items += _pair(_as_independent(a), _as_independent(b), resamples=400, seed=k)[1].p_value < 0.05
    bound = runs * 0.05 + 3 * math.sqrt(runs * 0.05 * 0.95)          # the binomial mean + 3 sd: 19 of 200
    assert ours <= bound, (ours, rows_as_items)
    assert rows_as_items > 2 * bound, (ours, rows_as_items)          # what it was: trials taken for items


def _coverage(runs: int, clustered: bool) -> float:
    rng = np.random.default_rng(7 if clustered else 8)
    true_delta, covered = 0.1, 0
    for k in range(runs):
        n_docs, per_doc = (30, 4) if clustered else (120, 1)
        doc_effect = np.repeat(rng.normal(0, 0.25, n_docs), per_doc) if clustered else 0.0
        docs = np.repeat(np.arange(n_docs), per_doc)
        n = n_docs * per_doc
        item = rng.normal(0.5, 0.2, n)
        base = (item + rng.normal(0, 0.1, n))[:, None]
        new = (item + true_delta + doc_effect + rng.normal(0, 0.1, n))[:, None]    # the difference varies by document
        _, entry = _pair(_experiment("base", base, docs), _experiment("new", new, docs), resamples=500, seed=k,
                         cluster_by="doc" if clustered else None)
        covered += entry.delta_low <= true_delta <= entry.delta_high
    return covered / runs


@pytest.mark.parametrize("clustered", [False, True], ids=["items", "clusters"])
def test_the_95_percent_interval_covers_a_known_difference_93_to_97_percent_of_the_time(clustered):
    assert 0.93 <= _coverage(1000, clustered) <= 0.97


def test_the_clustered_interval_matches_the_cluster_robust_standard_error():
    rng = np.random.default_rng(99)
    n_docs, per_doc = 400, 5
    docs = np.repeat(np.arange(n_docs), per_doc)
    effect = np.repeat(rng.normal(0, 0.2, n_docs), per_doc)
    base = rng.normal(0.5, 0.2, n_docs * per_doc)
    new = base + 0.02 + effect + rng.normal(0, 0.1, n_docs * per_doc)
    _, entry = _pair(_experiment("base", base[:, None], docs), _experiment("new", new[:, None], docs),
                     resamples=2000, cluster_by="doc")
    d = new - base
    residual_sums = np.array([np.sum(d[docs == g] - d.mean()) for g in range(n_docs)])
    robust_se = math.sqrt(n_docs / (n_docs - 1) * np.sum(residual_sums ** 2)) / d.size   # CR1 for a mean
    half_width = (entry.delta_high - entry.delta_low) / 2
    assert half_width == pytest.approx(1.96 * robust_se, rel=0.10)
    naive_se = d.std(ddof=1) / math.sqrt(d.size)
    assert robust_se > 1.5 * naive_se            # the clusters matter here: rows as independent is far too narrow


def test_one_trial_and_no_clusters_leave_the_experiment_as_it_was():
    rng = np.random.default_rng(5)
    a = _experiment("base", rng.normal(0.5, 0.2, (30, 1)))
    assert merge_trials(a) is a and units_of(a) is a


def test_clusters_of_one_item_give_the_item_bootstrap():
    rng = np.random.default_rng(6)
    base, new = rng.normal(0.5, 0.2, (50, 1)), rng.normal(0.55, 0.2, (50, 1))
    ids = np.arange(50)
    _, plain = _pair(_experiment("base", base, ids), _experiment("new", new, ids))
    _, clustered = _pair(_experiment("base", base, ids), _experiment("new", new, ids), cluster_by="doc")
    for field in ("delta", "delta_low", "delta_high", "p_value", "baseline_value", "system_value"):
        assert getattr(clustered, field) == pytest.approx(getattr(plain, field), abs=1e-12), field


def test_trials_are_averaged_per_item_and_experiments_with_different_trial_counts_pair_by_item():
    base = _experiment("base", np.array([[0.2, 0.4, 0.6], [0.5, 0.5, 0.5]]))
    new = _experiment("new", np.array([[0.9], [0.1]]))
    comparison, entry = _pair(base, new)
    assert entry.n == 2
    assert entry.baseline_value == pytest.approx((0.4 + 0.5) / 2) and entry.system_value == pytest.approx(0.5)
    assert comparison.scores[SCORE]["base"].n == 2
    notes = "\n".join(comparison.notes)
    assert "base: 2 items, 6 trials in all (3 per item)" in notes
    assert "base: quality varies across the trials of an item by a mean standard deviation of 0.1" in notes


def test_a_corpus_score_sums_the_statistics_of_every_trial():
    from opik_metrics.compare.trials import merge_trials as merged
    rows = [ItemRecord(key="a", position=0, input={}, output={}, scores={"bleu": 0.5},
                       metadata={"bleu": {"statistics": [1, 2, 3], "signature": "s"}}),
            ItemRecord(key="a", position=0, input={}, output={}, scores={"bleu": 0.7},
                       metadata={"bleu": {"statistics": [4, 5, 6], "signature": "s"}})]
    e = ExperimentRecords(name="e", source="s", dataset="d", status="finished", config={}, items=rows)
    (item,) = merged(e).items
    assert item.trials == 2 and item.scores["bleu"] == pytest.approx(0.6)
    assert item.metadata["bleu"] == {"statistics": [5, 7, 9], "signature": "s"}
    assert item.trial_sd["bleu"] == pytest.approx(math.sqrt(0.02))


def test_a_cluster_field_an_item_lacks_is_named():
    e = _experiment("base", np.ones((3, 1)))
    with pytest.raises(ClusterFieldError, match=r"cluster_by 'doc': item 'item-0' of base has no field 'doc'"):
        units_of(e, "doc")
