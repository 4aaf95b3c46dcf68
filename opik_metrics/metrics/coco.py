"""The COCO caption suite as an Opik metric: pycocoevalcap's BLEU-1..4, METEOR, ROUGE_L and CIDEr
under its own keys, per item and for the corpus, with no Java."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from opik_metrics.core import CorpusFacts, MetricInputError, ScoreFacts, Statistics, corpus_facts
from opik_metrics.core.extras import require_extra
from opik_metrics.metric_kit.base import ScoreResult
from opik_metrics.metric_kit.card import MetricCard, Option
from opik_metrics.metric_kit.shared_options import CAPTION_TOKENIZE
from opik_metrics.metric_kit.corpus_context import DocumentFrequencyMetric

if TYPE_CHECKING:
    from opik_metrics.text.coco import CocoItem, CocoSuite

CARRIER = "Bleu_4"        # the item result that holds the suite's statistics


def _bounds(key: str) -> tuple[float, float]:
    """CIDEr-D up to its own MAX_VALUE; the other keys are in [0, 1]."""
    from opik_metrics.text.cider import MAX_VALUE
    return (0.0, MAX_VALUE) if key == "CIDEr" else (0.0, 1.0)


class COCOCaption(DocumentFrequencyMetric):
    """The numbers ``pycocoevalcap.eval.COCOEvalCap`` reports, under its keys ``Bleu_1``..``Bleu_4``,
    ``METEOR``, ``ROUGE_L`` and ``CIDEr`` (CIDEr-D), after its PTB tokenisation, equal to its
    ``Bleu(4)``, ``Meteor()`` (Meteor 1.5 in Python: see ``METEOR``), ``Rouge()`` and ``Cider()``.
    SPICE is left out: it needs Java and a Stanford CoreNLP download. ``meteor=False`` leaves
    METEOR out too (its tables take seconds to load and 600 MB); a path says where Meteor's data is.

    Per item: pycocoevalcap's per-image values. ``corpus_score`` returns one ScoreResult per key,
    named ``corpus_<key>`` (BLEU from summed counts, as pycocoevalcap's corpus BLEU, not a mean;
    METEOR from its summed statistics, the jar's final score; ROUGE_L and CIDEr as means); ``coco_eval`` gives the same as a plain ``{key: value}`` dict.
    ``df_references`` fixes CIDEr's document frequencies for one-at-a-time scoring (see ``CIDEr``).
    A ``name`` other than ``coco`` prefixes every key.

    Examples:
        >>> from opik_metrics import COCOCaption
        >>> coco = COCOCaption(track=False)
        >>> scores = coco.coco_eval(["a dog runs", "a cat sleeps"], [["a dog is running"], ["the cat sleeps"]])
        >>> sorted(scores)
        ['Bleu_1', 'Bleu_2', 'Bleu_3', 'Bleu_4', 'CIDEr', 'METEOR', 'ROUGE_L']
        >>> [round(scores[key], 4) for key in ("Bleu_1", "Bleu_2", "METEOR", "ROUGE_L", "CIDEr")]
        [0.5643, 0.4887, 0.3624, 0.6119, 2.6733]
    """

    card = MetricCard(
        "coco", "COCO caption suite: Bleu_1..4, METEOR, ROUGE_L, CIDEr (pycocoevalcap's keys)",
        options=(CAPTION_TOKENIZE,
                 Option("--coco-no-meteor", "meteor", action="store_false",
                        help="leave METEOR out of the COCO suite (its tables take seconds and 600 MB)")),
        every_reference="df_references")
    default_name = "coco"

    @classmethod
    def check_installed(cls, arguments: Mapping[str, Any]) -> None:
        """The meteor extra for the METEOR key, unless it is left out or read from a folder of its own."""
        if arguments.get("meteor", True) is True:
            require_extra("meteor", "COCOCaption's METEOR key",
                          otherwise="or leave METEOR out: COCOCaption(meteor=False) (--coco-no-meteor)")

    def __init__(self, df_references: Sequence[str | Sequence[str]] | None = None, tokenize: str = "ptb",
                 meteor: Any = True, name: str = "coco", track: bool = True,
                 project_name: str | None = None) -> None:
        # numpy, Meteor's tables: only when a metric is built
        from opik_metrics.text.coco import CocoSuite
        self.engine: CocoSuite = CocoSuite(tokenize=tokenize, meteor=meteor)
        super().__init__(df_references, name=name, track=track, project_name=project_name)
        self._names = {key: self._scored_name(key) for key in self.engine.keys}

    def _score_facts(self) -> list[ScoreFacts]:
        order = ("CIDEr", "Bleu_4", "Bleu_1", "Bleu_2", "Bleu_3", "METEOR", "ROUGE_L")
        return [ScoreFacts(self._scored_name(k), bounds=_bounds(k)) for k in order if k in self.engine.keys]

    def _corpus_facts(self) -> CorpusFacts:
        return self._corpus_of(CARRIER)

    def _more_corpus_facts(self) -> list[CorpusFacts]:
        """corpus Bleu_1..3 and METEOR from summed statistics (scores of their own); ROUGE_L and
        CIDEr are means."""
        return [self._corpus_of(key) for key in self.engine.keys if key != CARRIER]

    def _corpus_of(self, key: str) -> CorpusFacts:
        from opik_metrics.text.coco import FIELDS, coco_from_statistics
        return corpus_facts(f"corpus_{self._scored_name(key)}", self._scored_name(CARRIER), FIELDS,
                            coco_from_statistics, {"key": key}, bounds=_bounds(key),
                            is_mean=key in ("ROUGE_L", "CIDEr"))

    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        context = self._context_for(references)
        items = self.engine.score(outputs, references, self.document_frequency)
        return [self._results(item, len(refs), context) for item, refs in zip(items, references)]

    def _results(self, item: CocoItem, n_refs: int, context: dict) -> list[ScoreResult]:
        base = {"n_references": n_refs, "signature": self.signature}
        if item.failure is not None:        # every key failed, with the reason; no statistics to sum
            return [ScoreResult(name=self._names[key], value=0.0, reason=item.failure, scoring_failed=True,
                                metadata=base) for key in self.engine.keys]
        return [ScoreResult(name=self._names[key], value=value, reason=item.reasons.get(key),
                            metadata={**base, "statistics": list(item.statistics), "document_frequency": context}
                            if key == CARRIER else base)
                for key, value in item.values.items()]

    def _statistics_refitted(self, outputs: list[str], references: list[list[str]],
                             logged: list[Statistics | None]) -> list[Statistics]:
        """Only CIDEr-D depends on the frequencies: it is scored again for every item (cheap); a logged
        item keeps its BLEU, METEOR and ROUGE_L statistics, an item with nothing logged is scored whole."""
        from opik_metrics.text.coco import FIELDS
        at = FIELDS.index("CIDEr")
        ciders = self.engine.cider.score(outputs, references)          # fitted on every item's references
        again = [k for k, s in enumerate(logged) if s is None]
        scored = self.engine.score([outputs[k] for k in again], [references[k] for k in again]) if again else []
        failure = next((one.failure for one in scored if one.failure is not None), None)
        if failure is not None:
            raise MetricInputError(f"{self.name}: an item could not be scored ({failure}); a corpus score needs "
                                   "every item's statistics: leave the item out")
        whole = dict(zip(again, (item.statistics for item in scored)))
        stats = []
        for k, (item, cider) in enumerate(zip(logged, ciders)):
            values = list(item.values if item is not None else whole[k])
            values[at] = cider.value
            stats.append(Statistics(FIELDS, tuple(values)))
        return stats

    def from_statistics(self, total: Statistics) -> list[ScoreResult]:  # type: ignore[override]
        """Every corpus value from summed statistics, one ScoreResult per key (``corpus_<key>``)."""
        from opik_metrics.text.coco import FIELDS, coco_from_statistics
        if total.fields != FIELDS:
            raise MetricInputError(f"{self.name}: statistics of fields {total.fields} are not this metric's")
        metadata = {"statistics": list(total.values), "signature": self.signature}
        one_image = self._corpus_reason(total)
        return [ScoreResult(name=f"corpus_{self._names[key]}", value=coco_from_statistics(total.values, key=key),
                            reason=one_image if key == "CIDEr" else None, metadata={**metadata, "key": key})
                for key in self.engine.keys]

    def corpus_score(self, outputs: Sequence[str],
                     references: Sequence[Any] | None = None) -> list[ScoreResult]:
        """pycocoevalcap's corpus numbers: one ScoreResult per key, ``from_statistics(sum(statistics))``."""
        stats = self.statistics(outputs, references)
        if not stats:
            raise MetricInputError(f"the corpus score of {self.name} needs at least one item")
        return self.from_statistics(sum(stats[1:], stats[0]))

    def coco_eval(self, outputs: Sequence[str], references: Sequence[Any]) -> dict[str, float]:
        """``{key: value}`` as ``COCOEvalCap.eval`` holds it (SPICE left out)."""
        return {key: r.value for key, r in zip(self.engine.keys, self.corpus_score(outputs, references))}
