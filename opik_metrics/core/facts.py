"""What a metric states about itself (as torchmetrics classes carry ``higher_is_better``): the
scores it emits with their direction, scale and bounds, its corpus score, its signature. The
comparison, the CLI, the store and the pipelines read these facts; nothing guesses from a name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from opik_metrics.core.signature import Signature, rebuilt
from opik_metrics.core.statistics import Formula, formula_path, mean_formula

SCALES = ("linear", "log", "binary")   # binary: a pass/fail score, every value 0 or 1


@dataclass(frozen=True)
class ScoreFacts:
    """One score a metric emits: its direction, scale, bounds, and whether it is a part
    (precision, recall) of a main score rather than a main score itself."""

    name: str
    higher_is_better: bool = True
    scale: str = "linear"
    bounds: tuple[float | None, float | None] = (None, None)
    part: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.higher_is_better, bool):
            raise ValueError(f"score {self.name!r}: higher_is_better must be a bool, got {self.higher_is_better!r}")
        if self.scale not in SCALES:
            raise ValueError(f"score {self.name!r}: scale must be one of {SCALES}, got {self.scale!r}")

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "higher_is_better": self.higher_is_better, "scale": self.scale,
                "bounds": list(self.bounds), "part": self.part}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ScoreFacts":
        low, high = (list(data.get("bounds") or [None, None]) + [None, None])[:2]
        return cls(name=str(data["name"]), higher_is_better=bool(data.get("higher_is_better", True)),
                   scale=str(data.get("scale", "linear")), bounds=(low, high), part=bool(data.get("part", False)))


@dataclass(frozen=True)
class CorpusFacts:
    """The corpus score: computed by ``formula`` from the summed statistics of the items, which
    the item score ``carrier`` holds in its metadata (``statistics``, values in ``fields`` order).

    ``is_mean``: the corpus score is the mean of the item scores (ROUGE, BERTScore), so a
    comparison of means already covers it; otherwise (corpus BLEU, perplexity) it is its own score.
    """

    score: ScoreFacts
    carrier: str
    fields: tuple[str, ...]
    formula: str
    options: Mapping[str, Any] = field(default_factory=dict)
    is_mean: bool = False

    @property
    def name(self) -> str:
        return self.score.name

    @property
    def mean_of_carrier(self) -> bool:
        """Whether the corpus value is, by its definition, the mean of the carrier's item scores
        (CIDEr-D's corpus score as pycocoevalcap computes it, ROUGE's, BERTScore's): shown beside
        that mean, the two rows agree, and a reader should be told why."""
        if self.is_mean:
            return True
        if self.formula != formula_path(mean_formula):
            return False
        position = self.options.get("field", 0)
        return isinstance(position, int) and 0 <= position < len(self.fields) and self.fields[position] == self.carrier

    def as_dict(self) -> dict[str, Any]:
        return {**self.score.as_dict(), "carrier": self.carrier, "fields": list(self.fields),
                "formula": self.formula, "options": dict(self.options), "is_mean": self.is_mean}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "CorpusFacts":
        return cls(score=ScoreFacts.from_dict(data), carrier=str(data["carrier"]),
                   fields=tuple(data.get("fields") or ()), formula=str(data["formula"]),
                   options=dict(data.get("options") or {}), is_mean=bool(data.get("is_mean", False)))


@dataclass(frozen=True)
class MetricFacts:
    """Everything a metric states: the scores it emits (in the order it emits them), the direction of any
    score it did not declare, its corpus score (and, for a suite such as COCO's, more corpus scores
    made from the same statistics) and its signature.

    ``whole_set_corpora``: corpus scores the metric computes over the whole set at once, from no
    summable per-item statistics (a Hugging Face ``evaluate`` module's ``compute`` over every item).
    The experiment records their values; a comparison shows them as recorded but cannot resample
    them, so it gives them no interval and no test.
    """

    metric: str
    kind: str
    scores: tuple[ScoreFacts, ...]
    higher_is_better: bool = True
    corpus: CorpusFacts | None = None
    signature: Signature | None = None
    more_corpora: tuple[CorpusFacts, ...] = ()
    whole_set_corpora: tuple[ScoreFacts, ...] = ()

    @property
    def corpora(self) -> tuple[CorpusFacts, ...]:
        """Every corpus score, the main one first."""
        return (self.corpus, *self.more_corpora) if self.corpus is not None else ()

    def score(self, name: str) -> ScoreFacts | None:
        """The facts of score ``name`` (an item score or a corpus score), if declared."""
        for facts in self.scores:
            if facts.name == name:
                return facts
        for corpus in self.corpora:
            if corpus.name == name:
                return corpus.score
        for whole in self.whole_set_corpora:
            if whole.name == name:
                return whole
        return None

    @property
    def main(self) -> ScoreFacts:
        return next((s for s in self.scores if not s.part), self.scores[0])

    @property
    def part_names(self) -> set[str]:
        """The scores that are parts (precision, recall) of a main score, hidden from summaries."""
        return {s.name for s in self.scores if s.part}

    @property
    def own_corpus(self) -> CorpusFacts | None:
        """The corpus score when it is a score of its own (corpus BLEU, perplexity), made from summed
        statistics; None when there is none or it is only the mean of the item scores."""
        return self.corpus if self.corpus is not None and not self.corpus.is_mean else None

    @property
    def own_corpora(self) -> tuple[CorpusFacts, ...]:
        """Every corpus score of its own (not a mean of item scores)."""
        return tuple(c for c in self.corpora if not c.is_mean)

    def as_dict(self) -> dict[str, Any]:
        """JSON form, recorded with an experiment so that it compares right without the metric."""
        return {"metric": self.metric, "kind": self.kind, "higher_is_better": self.higher_is_better,
                "scores": [s.as_dict() for s in self.scores],
                "corpus": self.corpus.as_dict() if self.corpus else None,
                "signature": self.signature.as_dict() if self.signature is not None else None,
                **({"more_corpora": [c.as_dict() for c in self.more_corpora]} if self.more_corpora else {}),
                **({"whole_set_corpora": [s.as_dict() for s in self.whole_set_corpora]}
                   if self.whole_set_corpora else {})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "MetricFacts":
        signature = data.get("signature")
        if isinstance(signature, Mapping):
            signature = _stored_signature(signature)
        elif signature is not None:
            signature = None
        return cls(metric=str(data["metric"]), kind=str(data.get("kind", "")),
                   scores=tuple(ScoreFacts.from_dict(s) for s in data.get("scores") or ()),
                   higher_is_better=bool(data.get("higher_is_better", True)),
                   corpus=CorpusFacts.from_dict(data["corpus"]) if data.get("corpus") else None,
                   signature=signature,
                   more_corpora=tuple(CorpusFacts.from_dict(c) for c in data.get("more_corpora") or ()),
                   whole_set_corpora=tuple(ScoreFacts.from_dict(s) for s in data.get("whole_set_corpora") or ()))


def _stored_signature(data: Mapping[str, Any]) -> Signature:
    """A signature as recorded (its text and fields), rebuilt without parsing the text."""
    versions = data.get("versions")
    return rebuilt(str(data.get("text", "")), dict(data.get("fields") or {}),
                   [str(v) for v in versions] if isinstance(versions, list) else ())


def corpus_facts(name: str, carrier: str, fields: Sequence[str], formula: Formula,
                 options: Mapping[str, Any] | None = None, *, higher_is_better: bool = True,
                 scale: str = "linear", bounds: tuple[float | None, float | None] = (None, None),
                 is_mean: bool = False) -> CorpusFacts:
    """CorpusFacts for ``formula`` (a function marked @corpus_formula)."""
    return CorpusFacts(ScoreFacts(name, higher_is_better, scale, bounds), carrier, tuple(fields),
                       formula_path(formula), dict(options or {}), is_mean)


def facts_of(metric: Any) -> MetricFacts:
    """The facts of any Opik metric: its own ``facts`` when it states them, else what a foreign
    metric declares (``higher_is_better``, default True) for the score named after it."""
    own = getattr(metric, "facts", None)
    if isinstance(own, MetricFacts):
        return own
    name = str(getattr(metric, "name", type(metric).__name__))
    higher = getattr(metric, "higher_is_better", True)
    if not isinstance(higher, bool):
        raise ValueError(f"metric {name!r}: higher_is_better must be True or False, got {higher!r}")
    kind = f"{type(metric).__module__}.{type(metric).__qualname__}"
    return MetricFacts(metric=name, kind=kind, scores=(ScoreFacts(name, higher),), higher_is_better=higher)




def read_recorded_facts(recorded: Any) -> tuple[dict[str, MetricFacts], list[str]]:
    """The metric facts recorded with scores (an experiment config's or a record file's
    ``metrics``), and the names of the entries that cannot be read as facts: callers decide
    whether such an entry is skipped or refused."""
    facts: dict[str, MetricFacts] = {}
    unreadable: list[str] = []
    for name, entry in (recorded.items() if isinstance(recorded, Mapping) else ()):
        try:
            if not isinstance(entry, Mapping):
                raise TypeError(entry)
            facts[str(name)] = MetricFacts.from_dict(entry)
        except (KeyError, TypeError, ValueError):
            unreadable.append(str(name))
    return facts, unreadable


def recorded_parts(recorded: Any) -> set[str]:
    """Names of the part scores (precision, recall) among metric facts recorded in an experiment
    config (``config["metrics"]``), so that tables can show main scores only."""
    return {part for facts in read_recorded_facts(recorded)[0].values() for part in facts.part_names}
