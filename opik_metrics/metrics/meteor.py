"""METEOR as an Opik metric: Meteor 1.5 as captioning papers report it (pycocoevalcap's jar,
``-l en -norm``), per item and for the corpus, in Python: no Java."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from opik_metrics.core import CorpusFacts, ScoreFacts, Statistics, corpus_facts
from opik_metrics.core.extras import require_extra
from opik_metrics.metric_kit.base import ReferenceMetric, ScoreResult
from opik_metrics.metric_kit.card import MetricCard, Option
from opik_metrics.metric_kit.multi_reference import MEAN, check_mode, empty_note, mean_rows

if TYPE_CHECKING:
    from opik_metrics.text.meteor import MeteorScorer, MeteorSegment


class METEOR(ReferenceMetric):
    """Meteor 1.5 (Denkowski and Lavie 2014) with the numbers of pycocoevalcap's ``Meteor``:
    the jar's ``-norm`` normalisation, exact, Snowball stem, WordNet synonym and paraphrase
    matches, its beam-search alignment and fragmentation penalty, the ``en`` parameters.

    ``score`` gives ``meteor`` against the best of the references (the jar's choice, the first on
    ties). An item whose alignment would exceed the pack's bound on one segment's work (thousands of
    words, or words repeated hundreds of times; the jar takes minutes on them) is a failed score
    whose reason gives the numbers. ``corpus_score`` and ``experiment_score`` give ``corpus_meteor``: the jar's final score
    from the items' summed statistics (what pycocoevalcap's ``compute_score`` returns first), not
    the mean of item scores. The metadata has precision, recall, the penalty, chunks, words matched
    by each module and the reference used.

    ``multi_reference="mean"`` instead gives each item the mean over its references of its
    single-reference METEORs (the jar's score of the output against each reference alone), and as
    its statistics the mean of the single-reference statistics (fractions), so ``corpus_meteor``
    stays the jar's formula of the summed statistics (``from_statistics(sum(statistics))``): with K
    references to every item, the final score of the statistics averaged over the K reference sets,
    not the mean of K corpus scores. The metadata then has each reference's score
    (``references``); the signature says ``multi:mean``. An item is not scored when any of its
    references is over the bound.

    The tables (function words, synonyms, the paraphrase table) are read from pycocoevalcap's
    installed files (``pip install 'opik-metrics[meteor]'``) or from ``data`` (a folder holding
    ``meteor-1.5.jar`` and ``paraphrase-en.gz``), parsed once per machine into a disk cache and
    once per process; nothing is downloaded.

    Args:
        data: where the jar and paraphrase table are; None: pycocoevalcap's installed copy.
        multi_reference: ``"best"`` (the jar's, default) or ``"mean"`` (see above).
        name: name of the item score (the corpus score is ``corpus_<name>``).
        track: let Opik track the calls. project_name: Opik project of the tracked calls.

    Examples:
        >>> from opik_metrics import METEOR
        >>> metric = METEOR(track=False)
        >>> round(metric.score("a dog runs on the grass", ["a dog is running on grass"])[0].value, 4)
        0.3346
    """

    card = MetricCard(
        "meteor", "Meteor 1.5 per item, corpus METEOR in the aggregate (pycocoevalcap's numbers, no Java)",
        group="METEOR options", options=(
            Option("--meteor-data", "data",
                   help="folder with meteor-1.5.jar and paraphrase-en.gz (default: pycocoevalcap's installed copy)"),
        ))
    default_name = "meteor"
    #: The rules for several references, the default (the jar's) first.
    multi_reference_modes = ("best", MEAN)

    @classmethod
    def check_installed(cls, arguments: Mapping[str, Any]) -> None:
        """The meteor extra, unless ``data`` points at a copy of Meteor's files."""
        if arguments.get("data") is None:
            require_extra("meteor", "METEOR", otherwise="or pass data=<folder> (--meteor-data) with meteor-1.5.jar "
                                                        "and paraphrase-en.gz")

    def __init__(self, data: Any = None, multi_reference: str = "best", name: str = "meteor", track: bool = True,
                 project_name: str | None = None) -> None:
        self.multi_reference = check_mode(multi_reference, self.multi_reference_modes)
        from opik_metrics.text.meteor import MeteorScorer     # the tables: only when a metric is built
        self.engine: MeteorScorer = MeteorScorer(data)
        self.signature = self.engine.signature
        if self.multi_reference != "best":
            self.signature = self.signature.extended(multi=self.multi_reference)
        super().__init__(name=name, track=track, project_name=project_name)

    def _score_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(self.name, bounds=(0.0, 1.0))]

    def _corpus_facts(self) -> CorpusFacts:
        from opik_metrics.text.meteor.corpus import FIELDS, meteor_from_statistics
        return corpus_facts(f"corpus_{self.name}", self.name, FIELDS, meteor_from_statistics, bounds=(0.0, 1.0))

    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        from opik_metrics.text.meteor.corpus import flat_statistics
        if self.multi_reference == MEAN:
            return [[self._mean_result(each, refs) if not isinstance(each, Exception) else self._failed(each, refs)]
                    for each, refs in zip(self.engine.score_each_or_limits(outputs, references), references)]
        segments = self.engine.score_batch_or_limits(outputs, references)
        return [[self._result(segment, refs, flat_statistics(segment.statistics)) if not isinstance(segment, Exception)
                 else self._failed(segment, refs)]
                for segment, refs in zip(segments, references)]

    def _failed(self, error: Exception, refs: list[str]) -> ScoreResult:
        return ScoreResult(name=self.name, value=0.0, reason=str(error), scoring_failed=True,
                           metadata={"n_references": len(refs), "signature": self.signature})

    def _mean_result(self, each: list[MeteorSegment], refs: list[str]) -> ScoreResult:
        """One item under ``"mean"``: the mean of its single-reference scores and statistics."""
        from opik_metrics.text.meteor.corpus import flat_statistics
        value = sum(s.score for s in each) / len(each)
        test_length = each[0].statistics.test_length
        empty = [s.reference for s in each if not s.statistics.reference_length]
        if not test_length or len(empty) == len(each):
            reason = _reason(test_length, 0 if len(empty) == len(each) else 1, value)
        else:
            reason = empty_note(empty, "words after normalisation") if empty else None
        return ScoreResult(name=self.name, value=value, reason=reason, metadata={
            "references": [s.score for s in each], "n_references": len(refs),
            "statistics": mean_rows([flat_statistics(s.statistics) for s in each]), "signature": self.signature})

    def _result(self, segment: MeteorSegment, refs: list[str], statistics: tuple[float, ...]) -> ScoreResult:
        s = segment.statistics
        return ScoreResult(
            name=self.name, value=segment.score, reason=_reason(s.test_length, s.reference_length, segment.score),
            metadata={"precision": segment.precision, "recall": segment.recall, "f_mean": segment.f_mean,
                      "fragmentation": segment.fragmentation, "chunks": segment.chunks,
                      "matches": segment.matches._asdict(), "best_reference": segment.reference,
                      "n_references": len(refs), "statistics": list(statistics),
                      "signature": self.signature})

    def _corpus_reason(self, total: Statistics) -> str | None:
        if not total.values[0]:
            return "every output is empty after normalisation: corpus METEOR is 0 by the jar's definition"
        if not total.values[1]:
            return "every reference is empty after normalisation: corpus METEOR is 0 by the jar's definition"
        return None


def _reason(test_length: int, reference_length: int, value: float) -> str | None:
    """Why an item takes a defined value: an output or reference with no words after the jar's
    normalisation (its precision or recall is then undefined, and the jar gives 0)."""
    if test_length and reference_length:
        return None
    what = ("output and reference have" if not test_length and not reference_length
            else "output has" if not test_length else "reference has")
    return f"{what} no words after normalisation: METEOR is {value!r} by the jar's definition"
