"""Comparisons read back from the local store agree with the reference libraries: corpus BLEU, its
bootstrap interval and the paired bootstrap p-value with sacrebleu's PairedTest (same seed, same
resamples), and item means with rouge-score."""
import random

import numpy as np
import pytest
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.significance import PairedTest

from tests.corpus import realistic_pairs
from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.reading.sources import load_experiments
from opik_metrics.experiments.store import ExperimentStore
from tests.compare.systems import store_with


def _degrade(texts, seed, drop):
    rng = random.Random(seed)
    return [" ".join(w for w in t.split() if rng.random() > drop) or t.split()[0] for t in texts]


def _systems(seed, n=60):
    baseline, refs = realistic_pairs(n, seed)
    return refs, {"baseline": baseline, "system": _degrade(baseline, seed, 0.05 + 0.05 * (seed % 3))}


def _compare(tmp_path, refs, systems, **settings):
    path = store_with(tmp_path / "store.sqlite", refs, systems)
    with ExperimentStore(path) as store:
        runs = load_experiments(list(systems), store=store)
    return compare_experiments(runs, CompareSettings(**settings))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_corpus_bleu_significance_matches_sacrebleu_paired_bs(tmp_path, monkeypatch, seed):
    refs, systems = _systems(seed)
    result = _compare(tmp_path, refs, systems, resamples=1000, seed=12345)

    monkeypatch.setenv("SACREBLEU_SEED", "12345")
    test = PairedTest(list(systems.items()), {"BLEU": SacreBLEU()}, [refs], test_type="bs", n_samples=1000)
    _, sacre = test()
    baseline, system = sacre["BLEU"]
    entry = result.pairs[0].metrics["corpus_bleu"]
    assert entry.baseline_value == pytest.approx(baseline.score / 100, abs=1e-12)
    assert entry.system_value == pytest.approx(system.score / 100, abs=1e-12)
    assert entry.p_value == pytest.approx(system.p_value, abs=1e-12)
    # sacrebleu's interval is the half width between the same ranks; its resamples are float32 (see test_bootstrap)
    scores = result.scores["corpus_bleu"]
    for name, sacre_result in (("baseline", baseline), ("system", system)):
        half_width = (scores[name].high - scores[name].low) / 2
        assert half_width == pytest.approx(sacre_result.ci / 100, abs=2e-7)
        assert scores[name].recorded == pytest.approx(scores[name].value, abs=1e-12)


def test_item_means_match_rouge_score_and_the_direct_interval(tmp_path):
    refs, systems = _systems(5, n=40)
    result = _compare(tmp_path, refs, systems, resamples=500, seed=3)
    oracle = rouge_scorer.RougeScorer(["rouge1", "rougeL"])
    for name, outputs in systems.items():
        f1 = [oracle.score(r, o)["rouge1"].fmeasure for r, o in zip(refs, outputs)]
        entry = result.scores["rouge1_f1"][name]
        assert entry.values == pytest.approx(f1, abs=1e-12)
        assert entry.value == pytest.approx(np.mean(f1), abs=1e-12)
        idx = np.random.default_rng(3).choice(40, size=(500, 40), replace=True)
        means = np.sort(np.asarray(f1)[idx].mean(axis=1))
        assert (entry.low, entry.high) == (pytest.approx(means[12], abs=1e-12),
                                                 pytest.approx(means[487], abs=1e-12))


def test_failed_items_are_left_out_of_pairs_and_listed(tmp_path):
    refs, systems = _systems(7, n=30)
    systems["system"] = list(systems["system"])
    systems["system"][4] = "!fail"
    result = _compare(tmp_path, refs, systems, resamples=200)
    pair = result.pairs[0]
    assert pair.shared_items == 29 and pair.metrics["corpus_bleu"].n == 29
    (failure,) = result.failed_items["system"]
    assert failure.position == 4 and failure.reason == "RuntimeError: the system crashed on this item"
    assert failure.input == f"line: 5 | reference: {refs[4]}"
    # the corpus BLEU of the pair is sacrebleu's on the 29 shared items
    keep = [k for k in range(30) if k != 4]
    for name in ("baseline", "system"):
        hyps = [systems[name][k] for k in keep]
        expected = SacreBLEU().corpus_score(hyps, [[refs[k] for k in keep]]).score / 100
        assert getattr(pair.metrics["corpus_bleu"], f"{name}_value") == pytest.approx(expected, abs=1e-12)
