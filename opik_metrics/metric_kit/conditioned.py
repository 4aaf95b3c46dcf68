"""How a metric that scores an output given its source and/or references takes its items (BARTScore,
UniEval, GPTScore): the source from a scoring input (``source_field``), references when the
configuration compares with them, and a corpus score that is the mean of its main scores."""
from __future__ import annotations

import abc
from typing import Any, NamedTuple, Sequence

from opik_metrics.core import (CorpusFacts, MetricInputError, Statistics, corpus_facts, mean_formula, require_batch,
                               require_references, require_text)
from opik_metrics.metric_kit.base import ScoreResult, StatisticsMetric
from opik_metrics.metric_kit.collector import collector_paused
from opik_metrics.metric_kit.opik_results import scoring_inputs
from opik_metrics.metric_kit.source_input import check_source_field, read_source, require_sources


class ConditionedInputs(NamedTuple):
    """What ``_experiment_inputs`` hands to ``statistics`` in place of references."""

    references: list[list[str]] | None
    sources: list[str] | None


class ConditionedMetric(StatisticsMetric):
    """Subclasses set ``source_field``, say whether this configuration ``needs_source`` /
    ``needs_reference``, name their main scores (``_main_scores``: each gets a corpus mean) and score
    validated items (``_score``)."""

    source_field: str

    def _set_source_field(self, field: str) -> None:
        self.source_field = check_source_field(field)
        if self.needs_source:
            self.batch_fields = {"sources": self.source_field}

    @property
    @abc.abstractmethod
    def needs_source(self) -> bool:
        """Whether this configuration reads the item's source."""

    @property
    @abc.abstractmethod
    def needs_reference(self) -> bool:
        """Whether this configuration compares with references."""

    @abc.abstractmethod
    def _main_scores(self) -> list[str]:
        """The main scores' names, in the order they are emitted; the first one's mean is the corpus score."""

    @abc.abstractmethod
    def _score(self, outputs: list[str], references: list[list[str]] | None, sources: list[str] | None,
               progress: bool | None) -> list[list[ScoreResult]]:
        """Score validated items; one list of ScoreResults per item, in order."""

    # -- the corpus scores: means of the main scores -------------------------------------------
    def _corpus_facts(self) -> CorpusFacts:
        return self._mean_corpus(0)

    def _more_corpus_facts(self) -> list[CorpusFacts]:
        return [self._mean_corpus(k) for k in range(1, len(self._main_scores()))]

    def _mean_corpus(self, k: int) -> CorpusFacts:
        main = self._main_scores()
        facts = {f.name: f for f in self._score_facts()}[main[k]]
        return corpus_facts(f"corpus_{main[k]}", main[k], [*main, "items"], mean_formula, {"field": k},
                            higher_is_better=facts.higher_is_better, bounds=facts.bounds, is_mean=True)

    # -- scoring ---------------------------------------------------------------------------------
    def score(self, output: str, reference: str | Sequence[str] | None = None,
              **ignored_kwargs: Any) -> list[ScoreResult]:
        """Score one output: given its source (the ``source_field`` input) and/or its reference(s)."""
        out = require_text(output, "output")
        source = read_source(self.name, ignored_kwargs, self.source_field) if self.needs_source else None
        refs = self._references(reference)
        return self._storable(self._score([out], None if refs is None else [refs],
                                          None if source is None else [source], progress=False))[0]

    def _references(self, reference: Any, item: int | None = None) -> list[str] | None:
        if not self.needs_reference:
            return None
        if reference is None:
            where = f"item {item}, " if item is not None else ""
            raise MetricInputError(f"{where}field 'reference': missing. {self.name} as configured compares the "
                                   "output with references")
        return require_references(reference, "reference", item)

    def score_batch(self, outputs: Sequence[str], references: Sequence[Any] | None = None, *,
                    sources: Sequence[Any] | None = None) -> list[list[ScoreResult]]:
        """Score many items; ``references[i]`` a string or list of strings, ``sources[i]`` output i's source."""
        outs, refs, srcs = self._validated(outputs, references, sources)
        if not outs:
            return []
        with collector_paused():
            return self._storable(self._score(outs, refs, srcs, progress=None))

    def _validated(self, outputs: Sequence[str], references: Sequence[Any] | None,
                   sources: Sequence[Any] | None) -> tuple[list[str], list[list[str]] | None, list[str] | None]:
        """A batch's outputs, references and sources, checked (only those this configuration reads)."""
        if isinstance(references, ConditionedInputs):
            references, sources = references
        outs, refs = require_batch(outputs, references if self.needs_reference else None)
        if self.needs_reference and refs is None:
            raise MetricInputError(f"{self.name} as configured needs references: pass references=[...]")
        srcs = require_sources(self.name, sources, len(outs), self.source_field) if self.needs_source else None
        return outs, refs, srcs

    # -- statistics and the corpus score -------------------------------------------------------
    def statistics(self, outputs: Sequence[str], references: Sequence[Any] | None = None, *,
                   sources: Sequence[Any] | None = None) -> list[Statistics]:
        """One summable statistics object per item: its main scores and a count of 1."""
        return [self.item_statistics(r) for r in self.score_batch(outputs, references, sources=sources)]

    def corpus_score(self, outputs: Sequence[str], references: Sequence[Any] | None = None, *,
                     sources: Sequence[Any] | None = None) -> ScoreResult:
        """The mean of the first main score over the items: ``from_statistics(sum(statistics(...)))``."""
        stats = self.statistics(outputs, references, sources=sources)
        if not stats:
            raise MetricInputError(f"the corpus score of {self.name} needs at least one item")
        return self.from_statistics(sum(stats[1:], stats[0]))

    def _experiment_inputs(self, test_results: Sequence[Any], positions: Sequence[int]) -> tuple[list[str], Any]:
        outputs: list[str] = []
        references: list[list[str]] = []
        sources: list[str] = []
        for k, tr in zip(positions, test_results):
            inputs = scoring_inputs(tr)
            outputs.append(require_text(inputs.get("output"), "output", k))
            refs = self._references(inputs.get("reference"), k)
            if refs is not None:
                references.append(refs)
            if self.needs_source:
                sources.append(read_source(self.name, inputs, self.source_field, k))
        return outputs, ConditionedInputs(references if self.needs_reference else None,
                                          sources if self.needs_source else None)
