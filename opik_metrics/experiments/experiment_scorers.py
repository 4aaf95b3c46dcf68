"""Experiment-level scores: the corpus scores the metrics offer as Opik experiment scoring
functions, run over an experiment's test results; a scorer that raises gives a failed result."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from _opik import ScoreResult   # the class opik.evaluation.metrics.score_result exports, without importing opik

from opik_metrics.core import MetricFacts, facts_of
from opik_metrics.scoring import as_results, failed_result

ExperimentScorer = Callable[[list], Any]


def experiment_scorers(metrics: Sequence[Any]) -> list[ExperimentScorer]:
    """Experiment-level scorers the metrics offer: ``experiment_score`` of every metric whose facts
    name a corpus score of its own (corpus BLEU, perplexity; not a mean of the items' scores) or
    corpus scores made from the whole set (an ``evaluate`` module's), and of
    a metric that states no facts (a user's own Opik metric: its ``experiment_score`` is its word). A
    metric that states it has no corpus score (a plugin's word count) offers none: else its
    experiment score would be a failed row."""
    out = []
    for m in metrics:
        facts = facts_of(m)
        states_facts = isinstance(getattr(m, "facts", None), MetricFacts)
        offers = (facts.own_corpus is not None or bool(facts.whole_set_corpora)
                  or (facts.corpus is None and not states_facts))
        if callable(getattr(m, "experiment_score", None)) and offers:
            out.append(m.experiment_score)
    return out


def run_experiment_scorers(scorers: Sequence[ExperimentScorer], test_results: list) -> list[ScoreResult]:
    """Every experiment-level score; a scorer that raises gives a failed result with its reason."""
    out: list[ScoreResult] = []
    for scorer in scorers:
        try:
            out.extend(as_results(scorer(test_results)))
        except Exception as exc:
            owner = getattr(getattr(scorer, "__self__", None), "name", None) or getattr(scorer, "__name__", "scorer")
            out.append(failed_result(f"{owner}_experiment_score", exc))
    return out

