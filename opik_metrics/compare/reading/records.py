"""What a comparison reads about one experiment, whichever backend it came from: each item's
input, output, scores (with their metadata) or failure, and the experiment's own scores.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterator

from opik_metrics.compare.reading.checked_facts import check_recorded_facts
from opik_metrics.core import CorpusFacts, MetricFacts, UnknownFormula, read_recorded_facts, resolve_formula


@dataclass
class ItemRecord:
    """One dataset item of one experiment; ``key`` identifies the item's content across experiments."""

    key: str
    position: int
    input: dict
    output: dict | None
    failed: bool = False                 # the item has no output (task or batch work failed)
    stage: str | None = None             # where it failed: batch, task, ...
    reason: str | None = None
    scores: dict[str, float] = field(default_factory=dict)        # successful, finite scores only
    score_failures: dict[str, str] = field(default_factory=dict)  # score name -> why it has no value
    non_finite: dict[str, str] = field(default_factory=dict)      # score name -> "inf", "-inf" or "nan"
    metadata: dict[str, dict] = field(default_factory=dict)       # score name -> its metadata
    trials: int = 1                      # runs of this item merged into it (trials.merge_trials)
    trial_sd: dict[str, float] = field(default_factory=dict)      # score name -> its SD across the trials
    cluster: str | None = None           # the group it is resampled with (trials.assign_clusters)
    trace_id: str | None = None          # Opik: the trace its feedback scores are logged on
    authored: dict[str, dict[str, float]] = field(default_factory=dict)   # score name -> author -> value

    def text(self) -> str:
        """The output text (``output`` field, else the whole output as JSON-ish text)."""
        if not self.output:           # failed, or a record file that kept no output text
            return ""
        value = self.output.get("output", self.output)
        return value if isinstance(value, str) else str(value)


@dataclass
class ExperimentRecords:
    """An experiment as read back for comparison."""

    name: str
    source: str                          # "local store PATH" or "Opik server at URL"
    dataset: str
    status: str
    config: dict
    items: list[ItemRecord]
    experiment_scores: dict[str, float | None] = field(default_factory=dict)
    experiment_score_metadata: dict[str, dict] = field(default_factory=dict)
    failed_elsewhere: int = 0            # failed items the backend keeps no record of (Opik: left out)
    score_metrics: dict[str, str] = field(default_factory=dict)   # score name -> the metric that gave it

    @cached_property
    def facts(self) -> dict[str, MetricFacts]:
        """The facts of each metric, as recorded in the experiment config (``metrics``)."""
        return recorded_facts(self.config)

    def check_formulas(self) -> None:
        """Raise ``UnknownFormula`` naming this experiment if its facts name a corpus formula that is
        neither the pack's nor registered here (nothing it names is imported)."""
        check_formulas(self.name, self.config)

    def corpus(self, name: str) -> CorpusFacts | None:
        """The recorded corpus score ``name`` (with this experiment's own formula options)."""
        for facts in self.facts.values():
            for corpus in facts.corpora:
                if corpus.name == name:
                    return corpus
        return None

    @property
    def failed_items(self) -> list[ItemRecord]:
        return [item for item in self.items if item.failed]

    def score_names(self) -> list[str]:
        """Every item-level score name, in first-seen order."""
        names: dict[str, None] = {}
        for item in self.items:
            names.update(dict.fromkeys(item.scores))
            names.update(dict.fromkeys(item.score_failures))
            names.update(dict.fromkeys(item.non_finite))
        return list(names)

    def model(self) -> str:
        model: Any = self.config.get("model", "")
        return model if isinstance(model, str) else str(model)


def recorded_facts(config: Any) -> dict[str, MetricFacts]:
    """The facts of each metric recorded in an experiment config (``config["metrics"]``); an entry
    that is not facts is skipped."""
    return read_recorded_facts(config.get("metrics") if isinstance(config, dict) else None)[0]


def check_formulas(experiment: str, config: Any, where: str | None = None) -> None:
    """Resolve every corpus formula the config's facts name (the pack's own modules load lazily);
    a name that is not among them loads the installed metric plugins once (a plugin's formula
    registers itself as its module is imported: plugins load only when a comparison needs one), and
    any other name raises ``UnknownFormula`` naming ``experiment``, before anything is imported.
    Then each metric's corpus facts are checked against what it states (``checked_facts``:
    ``RecordedFactsError`` naming ``where``, default the experiment, the metric and the field)."""
    recorded = recorded_facts(config)
    for facts in recorded.values():
        for corpus in facts.corpora:
            try:
                resolve_formula(corpus.formula, experiment)
            except UnknownFormula:
                from opik_metrics.metrics.catalog import discover

                discover()
                resolve_formula(corpus.formula, experiment)
    for name, facts in recorded.items():
        check_recorded_facts(where or f"experiment {experiment!r}", name, facts)


@contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic garbage collector paused while a reader builds its many small objects (items and
    their dicts, none of them garbage yet): each full collection would walk all of them again, which
    took 10 of the 25 s of reading 600,000 rows. Left as it was found afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
