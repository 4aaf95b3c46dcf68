"""Meteor 1.5 scores as pycocoevalcap's jar gives them (``-l en -norm``, the default "rank" task):
per segment against its best reference, and for a corpus from the summed statistics.

Precision and recall weigh each matched word by its module (exact 1.0, stem 0.6, synonym 0.8,
paraphrase 0.6) and by its kind (content words delta = 0.75, function words 1 - delta):

    P = sum(w_m * (delta * content_m + (1 - delta) * function_m), output side) /
        (delta * content words + (1 - delta) * function words, of the output)
    R = the same on the reference side
    Fmean = 1 / ((1 - alpha) / P + alpha / R)
    penalty = gamma * (chunks / ((output words matched + reference words matched) / 2)) ** beta
    score = max(0, Fmean * (1 - penalty))      (0 where undefined)

with alpha = 0.85, beta = 0.2, gamma = 0.6; the penalty is 0 when both sentences are matched
whole in one chunk. Java's double arithmetic is followed step by step (division by zero gives
infinities, not errors), so the best reference is picked as the jar picks it, ties included."""
from __future__ import annotations

import math
from typing import Iterator, NamedTuple, Sequence

from opik_metrics.core import Signature
from opik_metrics.core.inputs import MetricInputError, check_text, reference_list, text_batch, utf8_problem
from opik_metrics.core.versions import ours as package_version
from opik_metrics.text.meteor.align import MODULES, Aligner, Alignment, MeteorSearchLimit
from opik_metrics.text.meteor.normalize import java_tokens, normalize
from opik_metrics.text.meteor.resources import DataSource, MeteorTables, load_tables

ALPHA, BETA, GAMMA, DELTA = 0.85, 0.2, 0.6, 0.75
MODULE_WEIGHTS = (1.0, 0.6, 0.8, 0.6)


class ModuleMatches(NamedTuple):
    """Output words matched by each module."""

    exact: int
    stem: int
    synonym: int
    paraphrase: int


class MeteorStatistics(NamedTuple):
    """The sufficient statistics of one segment (the numbers the jar sums for a corpus): lengths,
    function-word counts, per-module matches (content and function words, output and reference
    sides), chunks and words matched."""

    test_length: int
    reference_length: int
    test_function_words: int
    reference_function_words: int
    test_content_matches: tuple[int, ...]
    reference_content_matches: tuple[int, ...]
    test_function_matches: tuple[int, ...]
    reference_function_matches: tuple[int, ...]
    chunks: int
    test_word_matches: int
    reference_word_matches: int

    def jar_line(self) -> str:
        """The jar's ``SCORE`` answer for these statistics (23 numbers, e.g. ``7.0 7.0 3.0 ...``)."""
        values: list[float] = [self.test_length, self.reference_length, self.test_function_words,
                               self.reference_function_words]
        for m in range(len(MODULES)):
            values += [self.test_content_matches[m], self.reference_content_matches[m],
                       self.test_function_matches[m], self.reference_function_matches[m]]
        values += [self.chunks, self.test_word_matches, self.reference_word_matches]
        return " ".join(repr(float(v)) for v in values)

    def is_whole_match(self) -> bool:
        """Both sentences matched entirely, in one chunk (no fragmentation; the jar then leaves the
        chunk out of a corpus's sum)."""
        return (sum(self.test_content_matches) + sum(self.test_function_matches) == self.test_length
                and sum(self.reference_content_matches) + sum(self.reference_function_matches)
                == self.reference_length and self.chunks == 1)


class MeteorSegment(NamedTuple):
    """One output's Meteor against its best reference (``reference``: its index)."""

    score: float
    precision: float
    recall: float
    f_mean: float
    fragmentation: float                    # the penalty, gamma * (chunks / matches) ** beta
    chunks: int
    matches: ModuleMatches
    reference: int
    statistics: MeteorStatistics


class _Metrics(NamedTuple):
    precision: float
    recall: float
    f_mean: float
    penalty: float
    score: float


def _div(a: float, b: float) -> float:
    """Java's double division: x / 0 is an infinity (NaN for 0 / 0), never an error."""
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _metrics(test_length: float, reference_length: float, test_function: float, reference_function: float,
             test_content_m: Sequence[float], reference_content_m: Sequence[float],
             test_function_m: Sequence[float], reference_function_m: Sequence[float],
             chunks: float, test_words: float, reference_words: float) -> _Metrics:
    """The jar's computeMetrics, operation for operation."""
    test_weighted_length = DELTA * (test_length - test_function) + (1.0 - DELTA) * test_function
    ref_weighted_length = DELTA * (reference_length - reference_function) + (1.0 - DELTA) * reference_function
    test_weighted = ref_weighted = 0.0
    for m, w in enumerate(MODULE_WEIGHTS):
        test_weighted += test_content_m[m] * w * DELTA
    for m, w in enumerate(MODULE_WEIGHTS):
        ref_weighted += reference_content_m[m] * w * DELTA
    for m, w in enumerate(MODULE_WEIGHTS):
        test_weighted += test_function_m[m] * w * (1.0 - DELTA)
    for m, w in enumerate(MODULE_WEIGHTS):
        ref_weighted += reference_function_m[m] * w * (1.0 - DELTA)
    precision = _div(test_weighted, test_weighted_length)
    recall = _div(ref_weighted, ref_weighted_length)
    f_mean = _div(1.0, _div(1.0 - ALPHA, precision) + _div(ALPHA, recall))
    test_total = sum(test_content_m[m] + test_function_m[m] for m in range(len(MODULE_WEIGHTS)))
    ref_total = sum(reference_content_m[m] + reference_function_m[m] for m in range(len(MODULE_WEIGHTS)))
    if test_total == test_length and ref_total == reference_length and chunks == 1:
        fragmentation = 0.0
    else:
        fragmentation = _div(float(chunks), (test_words + reference_words) / 2)
    penalty = GAMMA * _pow(fragmentation, BETA)
    score = f_mean * (1.0 - penalty)
    return _Metrics(precision, recall, f_mean, penalty, 0.0 if math.isnan(score) else max(score, 0.0))


def _pow(x: float, y: float) -> float:
    return math.nan if math.isnan(x) else math.pow(x, y)


def score_statistics(s: MeteorStatistics) -> float:
    """The jar's score of one set of statistics (a segment's, or a corpus's sums)."""
    return _metrics_of(s).score


def _metrics_of(s: MeteorStatistics) -> _Metrics:
    return _metrics(s.test_length, s.reference_length, s.test_function_words, s.reference_function_words,
                    s.test_content_matches, s.reference_content_matches, s.test_function_matches,
                    s.reference_function_matches, s.chunks, s.test_word_matches, s.reference_word_matches)


def corpus_statistics(segments: Sequence[MeteorSegment | MeteorStatistics]) -> MeteorStatistics:
    """The segments' statistics summed as the jar's EVAL sums them (a segment matched whole in one
    chunk adds no chunk)."""
    stats = [s.statistics if isinstance(s, MeteorSegment) else s for s in segments]

    def total(vectors: list[tuple[int, ...]]) -> tuple[int, ...]:
        return tuple(sum(v[m] for v in vectors) for m in range(len(MODULES)))

    return MeteorStatistics(
        test_length=sum(s.test_length for s in stats),
        reference_length=sum(s.reference_length for s in stats),
        test_function_words=sum(s.test_function_words for s in stats),
        reference_function_words=sum(s.reference_function_words for s in stats),
        test_content_matches=total([s.test_content_matches for s in stats]),
        reference_content_matches=total([s.reference_content_matches for s in stats]),
        test_function_matches=total([s.test_function_matches for s in stats]),
        reference_function_matches=total([s.reference_function_matches for s in stats]),
        chunks=sum(s.chunks for s in stats if not s.is_whole_match()),
        test_word_matches=sum(s.test_word_matches for s in stats),
        reference_word_matches=sum(s.reference_word_matches for s in stats),
    )


def _statistics(n_test: int, n_ref: int, test_function: int, ref_function: int, a: Alignment) -> MeteorStatistics:
    return MeteorStatistics(n_test, n_ref, test_function, ref_function, a.test_content, a.reference_content,
                            a.test_function, a.reference_function, a.chunks,
                            sum(a.test_content) + sum(a.test_function),
                            sum(a.reference_content) + sum(a.reference_function))


class MeteorScorer:
    """Meteor 1.5 without Java. ``data``: None (pycocoevalcap's installed jar and paraphrase
    table), a folder holding ``meteor-1.5.jar`` and ``paraphrase-en.gz``, ``MeteorDataPaths``,
    or already loaded ``MeteorTables``. Loading parses the tables once per machine (cached on disk)
    and once per process."""

    def __init__(self, data: DataSource | MeteorTables = None) -> None:
        self.tables = data if isinstance(data, MeteorTables) else load_tables(data)
        self.aligner = Aligner(self.tables)

    def __reduce__(self) -> tuple:
        """Pickled as the paths of its data (a worker process loads the tables from the disk cache)
        rather than as 600 MB of tables."""
        return MeteorScorer, (self.tables.paths,)

    @property
    def signature(self) -> Signature:
        """``meteor-1.5|lang:en|norm:yes|modules:...|weights:...|params:...|beam:40|opik_metrics:<version>``."""
        return Signature({
            "metric": "meteor-1.5", "lang": "en", "norm": True, "modules": list(MODULES),
            "weights": [f"{w:g}" for w in MODULE_WEIGHTS],
            "params": [f"{p:g}" for p in (ALPHA, BETA, GAMMA, DELTA)], "beam": 40,
            "opik_metrics": package_version(),
        }, formats={"metric": "{}"})

    def tokens(self, text: str) -> list[str]:
        """``text`` normalised and tokenised as the jar does before aligning (lowercase)."""
        return java_tokens(normalize(text, self.tables.prefixes))

    def score(self, output: str, references: str | Sequence[str]) -> MeteorSegment:
        """Meteor of ``output`` against its best reference (the first of the highest score)."""
        output = check_text(output, "output")
        refs = reference_list(references, "METEOR", drop_none=False)
        _check_encodable([output], [refs])
        return self._segment(output, refs)

    def score_batch(self, outputs: Sequence[str], references: Sequence[str | Sequence[str]]) -> list[MeteorSegment]:
        """``score`` for each output with its references (``references[k]``: a str or a list of str)."""
        outs, refs = text_batch(outputs, references, "METEOR", drop_none=False, names=("outputs", "references"))
        _check_encodable(outs, refs)
        return [self._segment(o, r) for o, r in zip(outs, refs)]

    def score_batch_or_limits(self, outputs: Sequence[str], references: Sequence[str | Sequence[str]]
                              ) -> list[MeteorSegment | MeteorSearchLimit]:
        """``score_batch``, but an item over the bound on one segment's work (``MeteorSearchLimit``)
        gives its error in its place instead of stopping the batch."""
        outs, refs = text_batch(outputs, references, "METEOR", drop_none=False, names=("outputs", "references"))
        _check_encodable(outs, refs)
        found: list[MeteorSegment | MeteorSearchLimit] = []
        for o, r in zip(outs, refs):
            try:
                found.append(self._segment(o, r))
            except MeteorSearchLimit as exc:
                found.append(exc)
        return found

    def corpus_score(self, segments: Sequence[MeteorSegment | MeteorStatistics]) -> float:
        """The jar's final score: statistics summed over segments (a segment matched whole in one
        chunk adds no chunk), then scored once; not the mean of segment scores."""
        if not segments:
            raise ValueError("the corpus score of METEOR needs at least one segment")
        return _metrics_of(corpus_statistics(segments)).score

    def score_each_or_limits(self, outputs: Sequence[str], references: Sequence[str | Sequence[str]]
                             ) -> list[list[MeteorSegment] | MeteorSearchLimit]:
        """For each output, its Meteor against each of its references alone (``reference``: the
        index), or the ``MeteorSearchLimit`` of the first reference over the bound in its place."""
        outs, refs = text_batch(outputs, references, "METEOR", drop_none=False, names=("outputs", "references"))
        _check_encodable(outs, refs)
        found: list[list[MeteorSegment] | MeteorSearchLimit] = []
        for o, r in zip(outs, refs):
            try:
                found.append(list(self._segments(o, r)))
            except MeteorSearchLimit as exc:
                found.append(exc)
        return found

    def _segment(self, output: str, references: list[str]) -> MeteorSegment:
        best: MeteorSegment | None = None
        for segment in self._segments(output, references):
            if best is None or segment.score > best.score:      # the first of the highest, as the jar
                best = segment
        assert best is not None                         # references are never empty here
        return best

    def _segments(self, output: str, references: list[str]) -> Iterator[MeteorSegment]:
        """The output's segment against each reference, in order (a reference over the bound raises)."""
        aligner = self.aligner
        test = aligner.sentence(self.tokens(output))
        test_function = sum(test.function)
        for k, reference in enumerate(references):
            ref = aligner.sentence(self.tokens(reference))
            try:
                alignment = aligner.align(test, ref)
            except MeteorSearchLimit as exc:
                raise MeteorSearchLimit(f"not scored: the output against reference {k}: {exc}") from None
            stats = _statistics(len(test.tokens), len(ref.tokens), test_function, sum(ref.function), alignment)
            metrics = _metrics_of(stats)
            matched = ModuleMatches(*(c + f for c, f in zip(alignment.test_content, alignment.test_function)))
            yield MeteorSegment(metrics.score, metrics.precision, metrics.recall, metrics.f_mean,
                                metrics.penalty, alignment.chunks, matched, k, stats)


def _check_encodable(outputs: list[str], references: list[list[str]]) -> None:
    """Refuse text the jar could not be sent (a lone surrogate), naming where it is."""
    for k, text in enumerate(outputs):
        problem = utf8_problem(text)
        if problem is not None:
            raise MetricInputError(f"outputs[{k}]: {problem}")
    for k, refs in enumerate(references):
        for j, text in enumerate(refs):
            problem = utf8_problem(check_text(text, f"references[{k}][{j}]"))
            if problem is not None:
                raise MetricInputError(f"references[{k}][{j}]: {problem}")
