"""Trials and clusters in the comparison: the item (or the cluster) is the unit resampled, never the
row. Simulated experiments with fixed seeds, built in memory as the sources build them (rows sharing
an item key are trials; a ``doc`` field is the cluster):

- a null difference with a strong item-by-system interaction and 3 trials: the gate (`worse`, alpha
  0.05) fails no more often than the binomial bound allows (18 of 400 here); treating trials as
  items, as the comparison did before, fails 52 of 400, over 1.5 times the bound;
- 95% intervals cover a known difference 93-97% of the time over 1,000 experiments, with and
  without clusters;
- on a large clustered sample the interval's half-width is within 10% of 1.96 x the cluster-robust
  standard error, computed here from its formula;
- one trial and no clusters: the comparison is the one it was (the same object is compared), and
  clusters of one item give the item bootstrap's numbers.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.gate.gating import gate_comparison
from opik_metrics.compare.reading.records import ExperimentRecords, ItemRecord
from opik_metrics.compare.statistics.trials import ClusterFieldError, merge_trials, units_of

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


def _gate_fails(base: ExperimentRecords, new: ExperimentRecords, seed: int) -> bool:
    comparison, _ = _pair(base, new, resamples=400, seed=seed)
    return not gate_comparison(comparison, mode="worse", scores=[SCORE]).passed


def test_the_gate_fails_a_null_difference_over_three_trials_no_more_often_than_alpha():
    rng = np.random.default_rng(2026)
    runs, ours, rows_as_items = 400, 0, 0
    for k in range(runs):
        base, new = _null_interaction(rng)
        a, b = _experiment("base", base), _experiment("new", new)
        ours += _gate_fails(a, b, k)
        rows_as_items += _gate_fails(_as_independent(a), _as_independent(b), k)
    bound = runs * 0.05 + 3 * math.sqrt(runs * 0.05 * 0.95)          # the binomial mean + 3 sd: 33 of 400
    assert ours <= bound, (ours, rows_as_items)
    assert rows_as_items > 1.5 * bound, (ours, rows_as_items)        # what it was: trials taken for items


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
    from opik_metrics.compare.statistics.trials import merge_trials as merged
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


def test_trials_stored_as_opik_evaluate_stores_them_compare_by_item(monkeypatch):
    """On the REST stand-in, each trial an experiment item and a trace of the same dataset item (as
    ``opik.evaluate(trial_count=3)`` leaves them): read back through the SDK, the comparison pairs
    and resamples the 12 items, with the numbers of the same trials compared in memory."""
    from opik_metrics.compare.reading.sources import load_compared
    from tests.opik_rest_server import OpikRestServer

    base, new = _null_interaction(np.random.default_rng(31), n=12)
    with OpikRestServer() as server:
        for name, values in (("base", base), ("new", new)):
            server.add_experiment(name, "questions", {}, {}, [
                {"input": {"question": f"q{i}"}, "output": {"output": f"{name} answer {i}.{t}"},
                 "scores": [{"name": SCORE, "value": round(float(v), 6), "reason": None}],
                 "metrics": {SCORE: "quality_metric"}}
                for i, row in enumerate(values) for t, v in enumerate(row)])
        monkeypatch.setenv("OPIK_URL_OVERRIDE", server.url)
        experiments, _ = load_compared(["base", "new"], opik=True)
        assert server.invalid == [] and server.unexpected == []
    assert [len(e.items) for e in experiments] == [36, 36]
    remote, entry = _pair(*experiments)
    local, expected = _pair(_experiment("base", np.round(base, 6)), _experiment("new", np.round(new, 6)))
    assert entry.n == expected.n == 12
    for field in ("delta", "delta_low", "delta_high", "p_value"):
        assert getattr(entry, field) == pytest.approx(getattr(expected, field), abs=1e-9), field
    assert "base: 12 items, 36 trials in all (3 per item)" in "\n".join(remote.notes)


def _scored_records(tmp_path, name: str, rows: list[dict], keep: list[str]) -> str:
    from opik_metrics.cli.main import main
    from tests.streams.records import write_jsonl

    source = write_jsonl(tmp_path / f"{name}.jsonl", rows)
    out = tmp_path / f"{name}.scores.jsonl"
    flags = [f for column in keep for f in ("--keep", column)]
    assert main(["score", "-i", str(source), "-o", str(out), "-m", "rouge", "--rouge-type", "rouge1", *flags,
                 "--no-progress", "--format", "json"]) == 0
    return str(out)


def test_record_files_with_trials_and_documents_compare_by_item_and_by_cluster(tmp_path, capsys):
    from opik_metrics.cli.main import main
    from opik_metrics.compare.reading.sources import from_records

    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
    def rows(drop: int) -> list[dict]:
        out = []
        for i in range(24):
            reference = " ".join(words[(i + k) % 8] for k in range(6))
            for trial in range(2):
                kept = reference.split()[: 6 - (i + trial + drop) % 3 - drop]
                out.append({"id": f"q{i}", "trial": trial, "doc": f"d{i // 4}", "output": " ".join(kept),
                            "reference": reference})
        return out

    base = _scored_records(tmp_path, "base", rows(0), ["trial", "doc"])
    new = _scored_records(tmp_path, "new", rows(1), ["trial", "doc"])
    capsys.readouterr()
    assert main(["compare", base, new, "--cluster-by", "doc", "--format", "json", "-m", "rouge1_f1", "-o",
                 str(tmp_path / "report")]) == 0
    comparison = json.loads(capsys.readouterr().out)
    pair = comparison["pairs"][0]["metrics"]["rouge1_f1"]
    assert pair["n"] == 24 and pair["delta"] < 0
    notes = "\n".join(comparison["notes"])
    assert f"{base}: 24 items, 48 trials in all (2 per item)" in notes
    assert f"{base}: resampled by cluster (doc): 6 clusters of 24 scored items" in notes

    from tests.streams.records import write_jsonl
    plain = write_jsonl(tmp_path / "plain.jsonl", rows(0))          # repeated ids, no trial column: refused
    assert main(["score", "-i", str(plain), "-o", str(tmp_path / "plain.scores.jsonl"), "-m", "rouge",
                 "--keep", "doc", "--no-progress"]) == 2
    assert "id 'q0' is held by line 1" in capsys.readouterr().err
    assert from_records(base).items[1].key == "q0"            # the second trial of q0
    assert main(["compare", base, new, "--cluster-by", "section", "--fail-on", "worse"]) == 2
    assert "cluster_by 'section': item 'q0'" in capsys.readouterr().err


def test_interval_scores_count_the_trials_of_an_item_as_one_item():
    from types import SimpleNamespace

    from opik.evaluation.metrics.score_result import ScoreResult

    from opik_metrics.compare.statistics.bootstrap import bootstrap_interval, resample_indices
    from opik_metrics.compare.statistics.bootstrap import MeanStatistic
    from opik_metrics.compare.publishing.experiment_intervals import interval_scores

    values = np.array([[0.1, 0.3, 0.2], [0.9, 0.7, 0.8], [0.5, 0.5, 0.5], [0.0, 0.2, 0.4]])
    results = [SimpleNamespace(test_case=SimpleNamespace(dataset_item_id=f"item-{i}"), trial_id=t,
                               score_results=[ScoreResult(name=SCORE, value=float(v))])
               for t in range(3) for i, v in enumerate(values[:, t])]       # opik.evaluate's order: trial by trial
    metric = SimpleNamespace(name=SCORE, higher_is_better=True)
    (function,) = interval_scores([metric], resamples=300, seed=4)
    out = {r.name: r for r in function(results)}
    means = values.mean(axis=1)
    expected = bootstrap_interval(MeanStatistic(means), resample_indices(4, 300, 4))
    assert out[f"{SCORE}.mean"].value == pytest.approx(means.mean())
    assert out[f"{SCORE}.ci_low"].value == pytest.approx(expected.low)
    assert out[f"{SCORE}.ci_high"].value == pytest.approx(expected.high)
    assert out[f"{SCORE}.mean"].reason.startswith("4 items,")
