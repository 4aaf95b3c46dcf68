"""Comparisons decided by what each metric states, never by a score's name: a user's own Opik
metric that is better when lower, renamed BLEU and Perplexity, and corpus KL compared from the
stored statistics like corpus BLEU, each worked out directly."""
from __future__ import annotations

import math

import pytest
import sacrebleu
from opik.evaluation.metrics import base_metric, score_result

from opik_metrics import BLEU, DistillationKL, Perplexity
from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.model import Verdict
from opik_metrics.compare.reading.sources import load_experiments
from opik_metrics.experiments.store import ExperimentStore
from tests.compare.systems import answer_with, items_for
from opik_metrics.experiments.runner import run_experiment
from tests.neural.lm_fixtures import build_gpt2, one_torch_thread  # noqa: F401

REFS = [f"the {a} {b} on the {c}" for a, b, c in zip(["dog", "cat", "bus", "man", "boat", "kid"] * 3,
                                                        ["runs", "sleeps", "stops", "rides", "sails", "plays"] * 3,
                                                        ["beach", "sofa", "road", "bike", "sea", "grass"] * 3)]
GOOD = [r.replace("the ", "a ", 1) for r in REFS]
POOR = [" ".join(r.split()[:2]) for r in REFS]


class Latency(base_metric.BaseMetric):
    """A user's own metric, better when lower; its score has a name of its own."""

    higher_is_better = False

    def __init__(self) -> None:
        super().__init__(name="latency", track=False)

    def score(self, output: str, **ignored) -> score_result.ScoreResult:
        return score_result.ScoreResult(name="latency_ms", value=10.0 * len(output.split()))


class Length(base_metric.BaseMetric):
    """A user's metric that states nothing: higher is better."""

    def __init__(self) -> None:
        super().__init__(name="length", track=False)

    def score(self, output: str, **ignored) -> score_result.ScoreResult:
        return score_result.ScoreResult(name="length", value=float(len(output)))


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    folder = tmp_path_factory.mktemp("facts")
    teacher, student = str(build_gpt2(folder / "teacher")), str(build_gpt2(folder / "student", seed=5, layers=1))
    metrics = [Latency(), Length(), BLEU(name="sacre", track=False), Perplexity(model=teacher, name="ppl", track=False),
               DistillationKL(teacher=teacher, student=student, name="kl", track=False)]
    path = folder / "store.sqlite"
    for name, outputs in (("poor", POOR), ("good", GOOD)):
        run_experiment(name, items_for(REFS), answer_with(outputs), metrics, dataset_name="shared",
                       config={"model": name}, store=path, progress=False)
    with ExperimentStore(path) as store:
        runs = load_experiments(["poor", "good"], store=store)
    comparison = compare_experiments(runs, CompareSettings(resamples=200, seed=3))
    return comparison, {m.name: m for m in metrics}


def _metric(comparison, name):
    return next(m for m in comparison.metrics if m.name == name)


def test_directions_come_from_the_metrics(compared):
    comparison, _ = compared
    direction = {m.name: m.higher_is_better for m in comparison.metrics}
    assert direction == {"latency_ms": False, "length": True, "sacre": True, "corpus_sacre": True,
                         "ppl": False, "corpus_ppl": False, "kl": False, "corpus_kl": False}
    assert _metric(comparison, "ppl").scale == "log" and _metric(comparison, "sacre").scale == "linear"
    latency = comparison.pairs[0].metrics["latency_ms"]
    better = comparison.pairs[0].better("latency_ms")
    # the good system answers with as many words: latency ties; POOR is shorter, so it wins on latency
    assert latency.delta > 0 and better in (None, "poor") and latency.wins == 0


def test_renamed_bleu_has_its_corpus_score_equal_to_sacrebleu(compared):
    comparison, _ = compared
    for name, outputs in (("poor", POOR), ("good", GOOD)):
        want = sacrebleu.corpus_bleu(outputs, [REFS]).score / 100
        assert comparison.scores["corpus_sacre"][name].value == pytest.approx(want, abs=1e-12)
    pair = comparison.pairs[0].metrics["corpus_sacre"]
    assert comparison.pairs[0].better("corpus_sacre") == "good" and pair.p_value < 0.05
    assert pair.verdict is Verdict.BETTER                                       # good is the system


def test_renamed_perplexity_and_corpus_kl_are_pooled_from_statistics(compared):
    comparison, metrics = compared
    for name, outputs in (("poor", POOR), ("good", GOOD)):
        items = metrics["ppl"].score_batch(outputs)
        nll = sum(r[0].metadata["nll_sum"] for r in items)
        tokens = sum(r[0].metadata["n_tokens"] for r in items)
        assert comparison.scores["corpus_ppl"][name].value == pytest.approx(math.exp(nll / tokens), rel=1e-6)   # float32 forward passes, batched differently
        kl = metrics["kl"].score_batch(outputs)
        pooled = sum(r[0].metadata["kl_sum"] for r in kl) / sum(r[0].metadata["n_tokens"] for r in kl)
        entry = comparison.scores["corpus_kl"][name]
        assert entry.value == pytest.approx(pooled, rel=1e-6) and entry.low <= entry.value <= entry.high
    pair = comparison.pairs[0].metrics["corpus_kl"]
    assert pair.p_value is not None and pair.n == len(REFS)
    if pair.significant:
        assert pair.verdict is (Verdict.BETTER if pair.delta < 0 else Verdict.WORSE)   # lower KL is better
        assert comparison.pairs[0].better("corpus_kl") == ("good" if pair.delta < 0 else "poor")


def test_stored_experiments_compare_right_without_the_metric_objects(tmp_path):
    """The facts travel with the experiment: a store read back alone gives the same directions."""
    path = tmp_path / "store.sqlite"
    for name, outputs in (("a", POOR[:4]), ("b", GOOD[:4])):
        run_experiment(name, items_for(REFS[:4]), answer_with(outputs), [Latency(), BLEU(name="sacre", track=False)],
                       dataset_name="shared", config={"model": name}, store=path, progress=False)
    with ExperimentStore(path) as store:
        config = store.info("a").config
    assert config["metrics"]["latency"]["higher_is_better"] is False
    assert config["metrics"]["sacre"]["corpus"]["name"] == "corpus_sacre"
    assert config["metrics"]["sacre"]["signature"]["fields"]["tok"] == "13a"
