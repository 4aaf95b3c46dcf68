"""The comparison as a typed model (frozen dataclasses): computed once by the analysis, verdicts
included, and read by the report page, the terminal summary, the Opik publication and the gate.
``comparison.json`` is its JSON form (schema ``opik-metrics/compare/2``): ``Comparison.from_dict``
of ``to_dict()`` gives the same comparison, and ``to_dict`` of ``from_dict(d)`` gives ``d`` back.
Files of schema ``/1`` are read too (their verdict is worked out once, from their flag and winner).

Frozen means the fields cannot be reassigned; the few plain dicts inside (configs, versions,
per-score maps) are the comparison's own, not to be changed by a reader.
"""
from __future__ import annotations

import json
import math
import numbers
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, TypeVar

SCHEMA = "opik-metrics/compare/2"
SCHEMA_V1 = "opik-metrics/compare/1"
SCHEMAS = (SCHEMA, SCHEMA_V1)

T = TypeVar("T")


class Verdict(str, Enum):
    """What a pair's paired test says of the system against the baseline, in the score's declared
    direction: significantly better, significantly worse, no significant difference, or n/a (too
    few paired items for a verdict, or nothing to compare)."""

    BETTER = "better"
    WORSE = "worse"
    NO_DIFFERENCE = "no significant difference"
    NONE = "n/a"

    @property
    def significant(self) -> bool | None:
        """True for better or worse, False for no significant difference, None for n/a."""
        return None if self is Verdict.NONE else self is not Verdict.NO_DIFFERENCE

    @classmethod
    def of(cls, significant: bool | None, delta: Any, higher_is_better: bool) -> Verdict:
        """The verdict of a test (``significant``: None when there is none) on a difference
        ``delta`` (system minus baseline) of a score with that direction. A significant difference
        of exactly zero has no direction and counts as none."""
        if significant is None:
            return cls.NONE
        improves = direction_of(delta, higher_is_better)
        if not significant or improves is None:
            return cls.NO_DIFFERENCE
        return cls.BETTER if improves else cls.WORSE


def direction_of(delta: Any, higher_is_better: bool) -> bool | None:
    """Whether a difference (new minus old) is an improvement in the score's direction: True, False,
    or None when it is zero or not a finite number."""
    if not _finite(delta) or delta == 0:
        return None
    return (delta > 0) == higher_is_better


@dataclass(frozen=True)
class GateOutcome:
    """What the CI gate decided for one score of one pair: the correction for testing many scores
    (``none``, ``holm``, ``bonferroni``) with the adjusted p it gave, the non-inferiority margin
    when one was set, whether the score passed, and why in one line."""

    correction: str
    p_adjusted: float | None
    margin: float | None
    passed: bool
    reason: str


@dataclass(frozen=True)
class ComparisonSettings:
    """How the comparison was made: the bootstrap's resamples and seed, the confidence (and alpha
    = 1 - confidence), the tie tolerance of wins/ties/losses, the items listed, the paired items a
    verdict needs (None in files made before it existed), and the test in words."""

    resamples: int
    seed: int
    confidence: float
    alpha: float
    tie_tolerance: float
    top_k: int
    min_items: int | None
    test: str
    p_value: str = "sacrebleu"           # the p-value rule (files made before it existed used sacrebleu's)
    permutations: int | None = None      # shuffles of the permutation test (None: not run)


@dataclass(frozen=True)
class ExperimentSummary:
    """One compared experiment: its items (scored and failed), model, source, config and the
    experiment scores its run recorded."""

    name: str
    dataset: str | None
    status: str | None
    items: int
    scored_items: int
    failed_items: int
    model: str | None
    source: str | None
    config: dict[str, Any]
    experiment_scores: dict[str, Any]


@dataclass(frozen=True)
class ScoreSummary:
    """A compared score and its facts: a mean over items or a corpus score of its own, its
    direction, scale, declared bounds and signature."""

    name: str
    kind: str                                  # "mean" or "corpus"
    higher_is_better: bool
    scale: str                                 # "linear" or "log"
    bounds: tuple[float | None, float | None]
    signature: str | None

    def improves(self, delta: Any) -> bool | None:
        """Whether a difference (new minus old) is better in this score's direction (None: zero, none)."""
        return direction_of(delta, self.higher_is_better)


@dataclass(frozen=True)
class ScoreValue:
    """One experiment's value of one score with its bootstrap interval, the items it used, those
    whose score failed or was not finite (left out), the per-item values of a mean, and for a
    corpus score the value its run recorded."""

    value: float
    low: float | None
    high: float | None
    n: int
    failed: int
    non_finite: int
    non_finite_kinds: dict[str, int]
    values: tuple[float, ...]
    recorded: float | None = None
    interval: str | None = None          # None: percentile bootstrap; "wilson": a pass/fail score's Wilson interval


@dataclass(frozen=True)
class ItemDifference:
    """One of the items whose score differs most between the pair: its texts, both scores, the difference."""

    key: str
    position: int
    input: str
    baseline_output: str
    system_output: str
    baseline_score: float
    system_score: float
    delta: float


@dataclass(frozen=True)
class PairResult:
    """One score of one pair: both values on the paired items, the difference (system minus
    baseline) with its interval, the raw p of the paired test, the verdict in the score's
    direction, the items used and left out, wins/ties/losses, the per-item differences and the
    largest ones, a note, and the gate's outcome once a gate has judged it."""

    baseline_value: float | None
    system_value: float | None
    delta: float | None
    delta_low: float | None
    delta_high: float | None
    p_value: float | None
    verdict: Verdict
    n: int
    non_finite: dict[str, int]                 # side ("baseline", "system") -> count
    non_finite_kinds: dict[str, dict[str, int]]
    wins: int | None
    ties: int | None
    losses: int | None
    differences: tuple[float, ...]
    largest_differences: tuple[ItemDifference, ...]
    note: str | None
    gate: GateOutcome | None = None
    p_one_sided: float | None = None     # the one-sided p in the observed direction: what the gate tests
    test: str | None = None              # which test made the p-values ("paired-bs", "paired-ar", "mcnemar-exact", ...)

    @property
    def gate_p(self) -> float | None:
        """The p the gate corrects and tests: the one-sided p, or (files from before it) the p-value,
        which sacrebleu's rule made and which behaves as one-sided."""
        return self.p_one_sided if self.p_one_sided is not None else self.p_value

    @property
    def significant(self) -> bool | None:
        return self.verdict.significant

    @property
    def p_adjusted(self) -> float | None:
        """The p corrected for the gate's multiple tests (None until a gate has corrected it)."""
        return self.gate.p_adjusted if self.gate is not None else None


@dataclass(frozen=True)
class Pair:
    """A system against its baseline: the items they share, how their configs differ, each score's
    result, and per score the options of its signature that differ (``{score: {field: (baseline,
    system)}}``: a tokenizer, a stemmer, a model; not the versions), which make its two numbers
    different measurements."""

    baseline: str
    system: str
    shared_items: int
    config_differences: dict[str, tuple[Any, Any]]
    metrics: dict[str, PairResult]
    option_differences: dict[str, dict[str, tuple[Any, Any]]] = field(default_factory=dict)

    def options_text(self, scores: Any = None) -> str:
        """``rouge1_f1 (stem: no vs yes)``, one score after another, for the scores (all by default)
        whose two sides were made with different options."""
        chosen = [s for s in (self.option_differences if scores is None else scores) if s in self.option_differences]
        return "; ".join(f"{score} (" + ", ".join(f"{k}: {_side_text(a)} vs {_side_text(b)}"
                                                  for k, (a, b) in self.option_differences[score].items()) + ")"
                         for score in chosen)

    def better(self, score: str) -> str | None:
        """The experiment significantly better at ``score`` (None: no significant difference, or n/a)."""
        verdict = self.metrics[score].verdict
        return {Verdict.BETTER: self.system, Verdict.WORSE: self.baseline}.get(verdict)


@dataclass(frozen=True)
class FailedItem:
    """An item an experiment failed on: where, at which stage, why."""

    key: str
    position: int
    stage: str | None
    reason: str | None
    input: str


@dataclass(frozen=True)
class Comparison:
    """The whole comparison: settings, versions, the experiments (the first is the baseline of its
    pairs), the compared scores, each experiment's value per score, the pairs, failed items, notes."""

    created_at: str
    source: str
    settings: ComparisonSettings
    versions: dict[str, str | None]
    experiments: tuple[ExperimentSummary, ...]
    metrics: tuple[ScoreSummary, ...]
    scores: dict[str, dict[str, ScoreValue]]   # score -> experiment -> value (absent: not computed)
    pairs: tuple[Pair, ...]
    failed_items: dict[str, tuple[FailedItem, ...]]
    notes: tuple[str, ...]

    schema = SCHEMA

    @property
    def names(self) -> list[str]:
        return [e.name for e in self.experiments]

    def measurement_warnings(self) -> list[str]:
        """One line per pair whose scores were made with different options (different measurements,
        not only different systems), saying whether the gate judged them anyway; what a report shows first."""
        lines = []
        for pair in self.pairs:
            if pair.option_differences:
                gated = any(pair.metrics[s].gate is not None for s in pair.option_differences if s in pair.metrics)
                lines.append(f"{pair.system} vs {pair.baseline}: scored with different options, so these scores "
                             f"measure different things: {pair.options_text()}"
                             + ("; GATED ANYWAY (--allow-different-options)" if gated else ""))
        return lines

    def metric(self, name: str) -> ScoreSummary:
        for metric in self.metrics:
            if metric.name == name:
                return metric
        raise KeyError(f"score {name!r} is not in the comparison; it has: {', '.join(m.name for m in self.metrics)}")

    # ---- JSON ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The comparison as plain JSON values, in the order ``comparison.json`` has them."""
        return {"schema": SCHEMA, "created_at": self.created_at, "source": self.source,
                "settings": _plain(self.settings), "versions": dict(self.versions),
                "experiments": [_plain(e) for e in self.experiments],
                "metrics": [_plain(m) for m in self.metrics],
                "scores": {score: {name: _plain(v) for name, v in per.items()} for score, per in self.scores.items()},
                "pairs": [_pair_dict(p) for p in self.pairs],
                "failed_items": {name: [_plain(i) for i in items] for name, items in self.failed_items.items()},
                "notes": list(self.notes)}

    def to_json(self) -> str:
        """``comparison.json``'s text: indented, non-ASCII kept, every number checked finite (a NaN
        or infinity raises ValueError naming its place); a lone surrogate (an output cut inside an
        emoji) is written as its ``\\uXXXX`` escape, so that the file is UTF-8 and reads back the same."""
        data = self.to_dict()
        check_finite(data)
        text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False, default=_json_default) + "\n"
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)

    @classmethod
    def from_dict(cls, data: Any) -> Comparison:
        """The comparison of a ``comparison.json`` object (schema /2, or /1 upgraded); a missing,
        unknown or mistyped field raises ValueError naming its place."""
        if not isinstance(data, dict):
            raise ValueError(f"comparison: expected a JSON object, got {type(data).__name__}")
        schema = data.get("schema")
        if schema == SCHEMA_V1:
            data = _upgrade_v1(data)
        elif schema != SCHEMA:
            raise ValueError(f"comparison: schema {schema!r} is not one this version reads ({', '.join(SCHEMAS)})")
        r = _Reader(data, "comparison")
        r.check_keys(("schema", "created_at", "source", "settings", "versions", "experiments", "metrics", "scores",
                      "pairs", "failed_items", "notes"))
        s = r.sub("settings")
        s.check_keys(("resamples", "seed", "confidence", "alpha", "tie_tolerance", "top_k", "min_items", "test",
                      "p_value", "permutations"))
        settings = ComparisonSettings(
            resamples=s.integer("resamples"), seed=s.integer("seed"), confidence=s.number("confidence"),
            alpha=s.number("alpha"), tie_tolerance=s.number("tie_tolerance"), top_k=s.integer("top_k"),
            min_items=s.integer("min_items", optional=True), test=s.text("test"),
            p_value=s.later("p_value", s.text) or "sacrebleu", permutations=s.later("permutations", s.integer))
        versions = r.sub("versions")
        return cls(created_at=r.text("created_at"), source=r.text("source"), settings=settings,
                   versions={k: versions.text(k, optional=True) for k in versions.data},
                   experiments=tuple(r.each("experiments", _experiment)),
                   metrics=tuple(r.each("metrics", _score_summary)),
                   scores={score: {name: _score_value(_Reader(v, f"comparison.scores[{score!r}][{name!r}]"))
                                   for name, v in r.sub("scores").obj(score).items()}
                           for score in r.obj("scores")},
                   pairs=tuple(r.each("pairs", _pair)),
                   failed_items={name: tuple(r.sub("failed_items").each(name, _failed_item))
                                 for name in r.obj("failed_items")},
                   notes=tuple(r.each("notes", lambda n: n.as_str())))

    @classmethod
    def from_json(cls, text: str) -> Comparison:
        """The comparison in ``comparison.json``'s text (NaN and infinity are refused as JSON refuses them)."""
        try:
            data = json.loads(text, parse_constant=_refuse_constant)
        except json.JSONDecodeError as exc:
            raise ValueError(f"comparison: not JSON ({exc})") from None
        return cls.from_dict(data)


def load_comparison(path: Any) -> Comparison:
    """The comparison in a ``comparison.json`` file."""
    from pathlib import Path

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read comparison {path}: {exc}") from None
    try:
        return Comparison.from_json(text)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


# ---- writing -------------------------------------------------------------------------------

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _plain(obj: Any) -> Any:
    """A model object as JSON values: dataclasses field by field, enums by value, tuples as lists."""
    if isinstance(obj, Enum):
        return obj.value
    if hasattr(obj, "__dataclass_fields__"):
        return {name: _plain(getattr(obj, name)) for name in obj.__dataclass_fields__}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    return obj


def _pair_result_dict(result: PairResult) -> dict[str, Any]:
    out = _plain(result)
    out["baseline"] = out.pop("baseline_value")
    out["system"] = out.pop("system_value")
    return {key: out[key] for key in _PAIR_RESULT_KEYS}


_PAIR_RESULT_KEYS = ("baseline", "system", "delta", "delta_low", "delta_high", "p_value", "verdict", "n",
                     "non_finite", "non_finite_kinds", "wins", "ties", "losses", "differences", "largest_differences",
                     "note", "gate", "p_one_sided", "test")


def _pair_dict(pair: Pair) -> dict[str, Any]:
    return {"baseline": pair.baseline, "system": pair.system, "shared_items": pair.shared_items,
            "config_differences": {k: [a, b] for k, (a, b) in pair.config_differences.items()},
            "option_differences": {score: {k: [a, b] for k, (a, b) in fields.items()}
                                   for score, fields in pair.option_differences.items()},
            "metrics": {name: _pair_result_dict(r) for name, r in pair.metrics.items()}}


def _path_text(path: tuple) -> str:
    """``("scores", "bleu", "a", "values", 3)`` as ``scores["bleu"]["a"]["values"][3]``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f"[{json.dumps(part, ensure_ascii=False)}]"
                                                             if text else str(part))
    return text or "<root>"


def check_finite(value: Any, path: tuple = ()) -> None:
    """Raise ValueError naming the place of the first NaN or infinity: JSON has no such numbers."""
    if isinstance(value, dict):
        for key, item in value.items():
            check_finite(item, path + (str(key),))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_finite(item, path + (index,))
    elif isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)):
        if not math.isfinite(float(value)):
            raise ValueError(f"comparison is not valid JSON: {value!r} at {_path_text(path)}")
    elif hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # numpy arrays and scalars
        check_finite(value.tolist(), path)


def _json_default(value: Any) -> Any:
    """numpy scalars and arrays (a caller's own scores may be numpy numbers) as plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


# ---- reading -------------------------------------------------------------------------------

def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"comparison: {name} is not a JSON number")


class _Reader:
    """Fields of one JSON object, each read with its type checked; errors name the field's place."""

    def __init__(self, data: Any, where: str):
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a JSON object, got {_type(data)}")
        self.data, self.where = data, where

    def later(self, key: str, read: Callable[..., Any]) -> Any:
        """An optional field added after schema /2 first shipped: None when a file has no such key."""
        return read(key, optional=True) if key in self.data else None

    def _get(self, key: str) -> Any:
        if key not in self.data:
            raise ValueError(f"{self.where}: missing field {key!r}")
        return self.data[key]

    def _bad(self, key: str, expected: str, value: Any) -> ValueError:
        return ValueError(f"{self.where}.{key}: expected {expected}, got {_type(value)} {value!r:.60}")

    def check_keys(self, keys: tuple[str, ...]) -> None:
        unknown = [k for k in self.data if k not in keys]
        if unknown:
            raise ValueError(f"{self.where}: unknown field {', '.join(map(repr, unknown))} "
                             f"(this version knows {', '.join(keys)})")

    def number(self, key: str, optional: bool = False) -> Any:
        value = self._get(key)
        if value is None and optional:
            return None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise self._bad(key, "a number" + (" or null" if optional else ""), value)
        return value

    def integer(self, key: str, optional: bool = False) -> Any:
        value = self._get(key)
        if value is None and optional:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._bad(key, "an integer" + (" or null" if optional else ""), value)
        return value

    def text(self, key: str, optional: bool = False) -> Any:
        value = self._get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise self._bad(key, "a string" + (" or null" if optional else ""), value)
        return value

    def flag(self, key: str) -> bool:
        value = self._get(key)
        if not isinstance(value, bool):
            raise self._bad(key, "true or false", value)
        return value

    def raw(self, key: str) -> Any:
        return self._get(key)

    def obj(self, key: str) -> dict[str, Any]:
        value = self._get(key)
        if not isinstance(value, dict):
            raise self._bad(key, "an object", value)
        return value

    def sub(self, key: str) -> _Reader:
        return _Reader(self.obj(key), f"{self.where}.{key}")

    def numbers(self, key: str) -> tuple[float, ...]:
        values = self._get(key)
        if not isinstance(values, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                   for v in values):
            raise self._bad(key, "a list of numbers", values)
        return tuple(values)

    def counts(self, key: str) -> dict[str, int]:
        value = self.obj(key)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value.values()):
            raise self._bad(key, "an object of counts", value)
        return dict(value)

    def each(self, key: str, read: Callable[[_Reader], T]) -> list[T]:
        values = self._get(key)
        if not isinstance(values, list):
            raise self._bad(key, "a list", values)
        return [read(_Reader.wrap(v, f"{self.where}.{key}[{i}]")) for i, v in enumerate(values)]

    @staticmethod
    def wrap(value: Any, where: str) -> _Reader:
        """A reader of any value (``as_str`` reads a plain one)."""
        reader = _Reader.__new__(_Reader)
        reader.data, reader.where = value, where
        return reader

    def as_str(self) -> str:
        if not isinstance(self.data, str):
            raise ValueError(f"{self.where}: expected a string, got {_type(self.data)}")
        return self.data


def _type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), type(value).__name__)


def _checked(reader: _Reader, keys: tuple[str, ...]) -> _Reader:
    reader = _Reader(reader.data, reader.where)
    reader.check_keys(keys)
    return reader


def _experiment(r: _Reader) -> ExperimentSummary:
    r = _checked(r, ("name", "dataset", "status", "items", "scored_items", "failed_items", "model", "source",
                     "config", "experiment_scores"))
    return ExperimentSummary(name=r.text("name"), dataset=r.text("dataset", optional=True),
                             status=r.text("status", optional=True), items=r.integer("items"),
                             scored_items=r.integer("scored_items"), failed_items=r.integer("failed_items"),
                             model=r.text("model", optional=True), source=r.text("source", optional=True),
                             config=r.obj("config"), experiment_scores=r.obj("experiment_scores"))


def _score_summary(r: _Reader) -> ScoreSummary:
    r = _checked(r, ("name", "kind", "higher_is_better", "scale", "bounds", "signature"))
    kind = r.text("kind")
    if kind not in ("mean", "corpus"):
        raise ValueError(f"{r.where}.kind: expected 'mean' or 'corpus', got {kind!r}")
    bounds = r.raw("bounds")
    if not (isinstance(bounds, list) and len(bounds) == 2
            and all(b is None or (isinstance(b, (int, float)) and not isinstance(b, bool)) for b in bounds)):
        raise ValueError(f"{r.where}.bounds: expected [low, high] (numbers or null), got {bounds!r:.60}")
    return ScoreSummary(name=r.text("name"), kind=kind, higher_is_better=r.flag("higher_is_better"),
                        scale=r.text("scale"), bounds=(bounds[0], bounds[1]),
                        signature=r.text("signature", optional=True))


def _score_value(r: _Reader) -> ScoreValue:
    r = _checked(r, ("value", "low", "high", "n", "failed", "non_finite", "non_finite_kinds", "values", "recorded",
                     "interval"))
    return ScoreValue(value=r.number("value", optional=True), low=r.number("low", optional=True),
                      high=r.number("high", optional=True), n=r.integer("n"), failed=r.integer("failed"),
                      non_finite=r.integer("non_finite"), non_finite_kinds=r.counts("non_finite_kinds"),
                      values=r.numbers("values"), recorded=r.number("recorded", optional=True),
                      interval=r.later("interval", r.text))


def _item_difference(r: _Reader) -> ItemDifference:
    r = _checked(r, ("key", "position", "input", "baseline_output", "system_output", "baseline_score",
                     "system_score", "delta"))
    return ItemDifference(key=r.text("key"), position=r.integer("position"), input=r.text("input"),
                          baseline_output=r.text("baseline_output"), system_output=r.text("system_output"),
                          baseline_score=r.number("baseline_score"), system_score=r.number("system_score"),
                          delta=r.number("delta"))


def _gate(r: _Reader) -> GateOutcome:
    r = _checked(r, ("correction", "p_adjusted", "margin", "passed", "reason"))
    return GateOutcome(correction=r.text("correction"), p_adjusted=r.number("p_adjusted", optional=True),
                       margin=r.number("margin", optional=True), passed=r.flag("passed"), reason=r.text("reason"))


def _verdict(r: _Reader) -> Verdict:
    value = r.text("verdict")
    try:
        return Verdict(value)
    except ValueError:
        raise ValueError(f"{r.where}.verdict: expected one of {', '.join(repr(v.value) for v in Verdict)}, "
                         f"got {value!r}") from None


#: The test of a p-value in a file written before comparisons named it: sacrebleu's centred-|d| bootstrap p.
RECORDED_BEFORE_TEST = "paired-bs-sacrebleu"


def _pair_result(r: _Reader) -> PairResult:
    r = _checked(r, _PAIR_RESULT_KEYS)
    kinds = r.sub("non_finite_kinds")
    gate = r.raw("gate")
    return PairResult(
        baseline_value=r.number("baseline", optional=True), system_value=r.number("system", optional=True),
        delta=r.number("delta", optional=True), delta_low=r.number("delta_low", optional=True),
        delta_high=r.number("delta_high", optional=True), p_value=r.number("p_value", optional=True),
        verdict=_verdict(r), n=r.integer("n"), non_finite=r.counts("non_finite"),
        non_finite_kinds={side: kinds.counts(side) for side in kinds.data},
        wins=r.integer("wins", optional=True), ties=r.integer("ties", optional=True),
        losses=r.integer("losses", optional=True), differences=r.numbers("differences"),
        largest_differences=tuple(r.each("largest_differences", _item_difference)),
        note=r.text("note", optional=True), gate=None if gate is None else _gate(r.sub("gate")),
        p_one_sided=r.later("p_one_sided", r.number),
        test=r.later("test", r.text) or (RECORDED_BEFORE_TEST if r.data.get("p_value") is not None else None))


def _pair(r: _Reader) -> Pair:
    r = _checked(r, ("baseline", "system", "shared_items", "config_differences", "option_differences", "metrics"))
    options = r.data.get("option_differences", {})     # files written before it existed have none
    if not isinstance(options, dict) or not all(isinstance(v, dict) for v in options.values()):
        raise ValueError(f"{r.where}.option_differences: expected {{score: {{field: [baseline, system]}}}}, "
                         f"got {options!r:.60}")
    metrics = r.sub("metrics")
    return Pair(baseline=r.text("baseline"), system=r.text("system"), shared_items=r.integer("shared_items"),
                config_differences=_two_sided(r.obj("config_differences"), f"{r.where}.config_differences"),
                metrics={name: _pair_result(metrics.sub(name)) for name in metrics.data},
                option_differences={score: _two_sided(fields, f"{r.where}.option_differences[{score!r}]")
                                    for score, fields in options.items()})


def _side_text(value: Any) -> str:
    return "absent" if value is None else str(value)


def _two_sided(data: dict[str, Any], where: str) -> dict[str, tuple[Any, Any]]:
    """``{key: [baseline, system]}`` as ``{key: (baseline, system)}``."""
    out = {}
    for key, values in data.items():
        if not isinstance(values, list) or len(values) != 2:
            raise ValueError(f"{where}[{key!r}]: expected [baseline, system], got {values!r:.60}")
        out[key] = (values[0], values[1])
    return out


def _failed_item(r: _Reader) -> FailedItem:
    r = _checked(r, ("key", "position", "stage", "reason", "input"))
    return FailedItem(key=r.text("key"), position=r.integer("position"), stage=r.text("stage", optional=True),
                      reason=r.text("reason", optional=True), input=r.text("input"))


# ---- schema /1 -------------------------------------------------------------------------------

def _upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A /1 comparison in /2's shape: each pair entry's ``significant`` flag and ``better``
    experiment become one directed verdict (files older than verdicts give theirs from the flag,
    p and the difference's sign); fields the first /1 files lacked get the value they stood for."""
    out = {**data, "schema": SCHEMA}
    out["settings"] = {"min_items": None, **(data.get("settings") or {})}
    out["experiments"] = [{"source": None, "experiment_scores": {}, **e} if isinstance(e, dict) else e
                          for e in data.get("experiments") or []]
    out["metrics"] = [{"bounds": [None, None], "signature": None, **m} if isinstance(m, dict) else m
                      for m in data.get("metrics") or []]
    out["scores"] = {score: {name: {"non_finite": 0, "non_finite_kinds": {}, "values": [], **v, "recorded":
                                    v.get("recorded")} if isinstance(v, dict) else v
                             for name, v in per.items()} if isinstance(per, dict) else per
                     for score, per in (data.get("scores") or {}).items()}
    higher = {m.get("name"): m.get("higher_is_better", True) for m in data.get("metrics") or []
              if isinstance(m, dict)}
    pairs = []
    for pair in data.get("pairs") or []:
        if not isinstance(pair, dict):
            pairs.append(pair)
            continue
        metrics = {name: _upgrade_v1_entry(entry, pair, bool(higher.get(name, True))) if isinstance(entry, dict)
                   else entry for name, entry in (pair.get("metrics") or {}).items()}
        pairs.append({"config_differences": {}, **pair, "metrics": metrics})
    out["pairs"] = pairs
    return out


def _upgrade_v1_entry(entry: dict[str, Any], pair: dict[str, Any], higher_is_better: bool) -> dict[str, Any]:
    entry = dict(entry)
    significant = entry.pop("significant", None)
    better = entry.pop("better", None)
    recorded = entry.pop("verdict", None)
    if recorded == "n/a" or (recorded is None and (entry.get("p_value") is None or significant is None)):
        verdict = Verdict.NONE
    elif recorded == "not significant" or (recorded is None and not significant):
        verdict = Verdict.NO_DIFFERENCE
    elif better is not None:
        verdict = Verdict.BETTER if better == pair.get("system") else Verdict.WORSE
    else:
        verdict = Verdict.of(True, entry.get("delta"), higher_is_better)
    entry.setdefault("non_finite", {"baseline": 0, "system": 0})
    entry.setdefault("non_finite_kinds", {"baseline": {}, "system": {}})
    entry.setdefault("note", None)
    return {**entry, "verdict": verdict.value, "gate": None}
