"""The regression gate from Python and pytest: ``assert_no_regression(baseline, candidate)`` compares
two experiments (record files, stored experiments or Opik experiments) as ``opik-metrics compare
--fail-on worse`` does and raises ``AssertionError`` whose message is the gate's table.

    def test_the_new_model_is_no_worse():
        assert_no_regression("baseline.parquet", "candidate.parquet", margin={"corpus_bleu": 0.005})
"""
from __future__ import annotations

import os
from typing import Mapping, Sequence, Union

from opik_metrics.compare.analysis import DEFAULT_MIN_ITEMS, CompareSettings, compare_experiments, unpaired
from opik_metrics.compare.statistics.defaults import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED
from opik_metrics.compare.gate.output import markdown_table
from opik_metrics.compare.gate.gating import GatedComparison, gate_comparison
from opik_metrics.compare.reading.sources import load_compared

__all__ = ["assert_no_regression"]

Source = Union[str, "os.PathLike[str]"]


def assert_no_regression(baseline: Source, candidate: Source, *, scores: Sequence[str] | None = None,
                         margin: Mapping[str, float] | None = None, correction: str = "holm",
                         fail_on: str = "worse", store: Source | None = None, opik: bool = False,
                         project_name: str | None = None, resamples: int = DEFAULT_RESAMPLES,
                         seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE,
                         min_items: int = DEFAULT_MIN_ITEMS, cluster_by: str | None = None,
                         allow_different_options: bool = False) -> GatedComparison:
    """Gate ``candidate`` against ``baseline`` and return the gated comparison when it passes.

    Args:
        baseline: a record file that ``opik-metrics score --input ... --output`` wrote (paired
            with the candidate's by id), or an experiment's name in the local store (``store``) or
            on the Opik server (``opik``, or the configured one).
        candidate: the same kind of source as ``baseline``, gated against it.
        scores: the scores gated (default: every compared score but precision/recall parts).
        margin: {score: X}: non-inferiority for that score (its interval must stay above -X in
            the score's direction) instead of the significance test.
        correction: "holm" (default), "bonferroni" or "none", over the gated scores' p-values.
        fail_on: "worse" (a score significantly worse fails) or "not-better" (every score must be
            significantly better).
        cluster_by: an item field (a record file's kept column): the bootstrap resamples whole
            clusters of items sharing it. Trials of one item are always merged into the item.
        allow_different_options: gate scores whose two sides were made with different options
            (signatures that differ in more than package versions); refused by default.

    Raises:
        AssertionError: the gate failed; the message is its Markdown table and exit line.
        ValueError: a usage or data error (an unknown experiment or score, nothing to pair, a
            gated score missing on one side, too few paired items, different options...).
    """
    if isinstance(scores, str):          # one score's name, not a sequence of one-letter names
        scores = [scores]
    names = [os.fspath(baseline), os.fspath(candidate)]
    settings = CompareSettings(resamples=resamples, seed=seed, confidence=confidence, min_items=min_items,
                               cluster_by=cluster_by,
                               metrics=tuple(scores) if scores else None)
    settings.check()
    experiments, source = load_compared(names, store=store, opik=opik, project_name=project_name)
    reason = unpaired(experiments)
    if reason is not None:
        raise ValueError(reason)
    gated = gate_comparison(compare_experiments(experiments, settings, source=source), mode=fail_on,
                            correction=correction, margins=margin, scores=scores,
                            allow_different_options=allow_different_options)
    if not gated.passed:
        raise AssertionError(f"{names[1]} against {names[0]}:\n{markdown_table(gated.rows, gated.result, plain=True)}")
    return gated
