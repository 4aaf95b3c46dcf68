"""TER as an Opik metric: sentence TER per item, corpus TER per experiment (lower is better)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Union

from opik_metrics.core import CorpusFacts, ScoreFacts, Signature, Statistics, corpus_facts
from opik_metrics.metric_kit.base import ScoreResult
from opik_metrics.metric_kit.card import MetricCard, Option
from opik_metrics.metric_kit.sacrebleu_family import SacrebleuFamilyMetric

if TYPE_CHECKING:
    from opik_metrics.text.ter import TERResult


class TER(SacrebleuFamilyMetric):
    """Translation edit rate, edits / reference words, with sacrebleu's options and numbers (its
    score divided by 100): 0 for a perfect output, no upper bound (an output longer than its
    reference can need more edits than the reference has words). Lower is better.

    ``score`` gives sentence TER, named ``name`` (default ``ter``): the fewest edits (insertions,
    deletions, substitutions, block shifts) over the references, divided by their mean length, as
    sacrebleu. ``corpus_score`` and ``experiment_score`` give corpus TER, named ``corpus_<name>``:
    edits summed over items divided by lengths summed (as ``sacrebleu.corpus_ter``), which is not
    the mean of sentence TERs.

    Args:
        normalized: tercom's normalisation (punctuation split off, XML entities decoded, ...).
        no_punct: remove punctuation.
        asian_support: split CJK characters (with ``normalized``) and remove their punctuation
            (with ``no_punct``).
        case_sensitive: compare case-sensitively (sacrebleu lowercases by default).
        name: name of the item score (the corpus score is ``corpus_<name>``).
        track: let Opik track the calls.
        project_name: Opik project of the tracked calls.

    Examples:
        >>> from opik_metrics import TER
        >>> result = TER(track=False).score("the cat sat on the mat", "the cat sat on a mat")[0]
        >>> result.name, round(result.value, 4), result.metadata["num_edits"]
        ('ter', 0.1667, 1)
    """

    card = MetricCard(
        "ter", "sentence TER per item (lower is better), corpus TER in the aggregate",
        group="TER options (sacrebleu's)", options=(
            Option("--ter-normalized", "normalized", action="store_true", help="tercom's normalisation (-N)"),
            Option("--ter-no-punct", "no_punct", action="store_true", help="remove punctuation"),
            Option("--ter-asian-support", "asian_support", action="store_true",
                   help="Asian character handling (with normalisation)"),
            Option("--ter-case-sensitive", "case_sensitive", action="store_true", help="do not lowercase"),
        ))

    higher_is_better = False
    default_name = "ter"

    def __init__(
        self,
        normalized: bool = False,
        no_punct: bool = False,
        asian_support: bool = False,
        case_sensitive: bool = False,
        name: str = "ter",
        track: bool = True,
        project_name: str | None = None,
    ) -> None:
        # sacrebleu: only when a metric is built
        from opik_metrics.text.ter import TERScorer
        self._scorer = TERScorer(normalized=normalized, no_punct=no_punct, asian_support=asian_support,
                                 case_sensitive=case_sensitive)
        self.signature = self._scorer.signature(nrefs=None)
        super().__init__(name=name, track=track, project_name=project_name)

    def _score_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(self.name, higher_is_better=False, bounds=(0.0, None))]

    def _corpus_facts(self) -> CorpusFacts:
        from opik_metrics.text.ter import STATISTICS_FIELDS, ter_from_statistics
        return corpus_facts(f"corpus_{self.name}", self.name, STATISTICS_FIELDS, ter_from_statistics,
                            higher_is_better=False, bounds=(0.0, None))

    def _new_signature(self, nrefs: Union[int, str], sentence: bool) -> Signature:
        return self._scorer.signature(nrefs=nrefs)      # the same for sentence and corpus scores

    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        results = []
        name = self.name
        for refs, res in zip(references, self._scorer.batch(outputs, references)):
            results.append([ScoreResult(name=name, value=res.score, reason=_reason(res, "TER"),
                                        metadata=self._metadata(res, self._item_signature(len(refs)),
                                                                best_reference=res.reference,
                                                                n_references=len(refs)))])
        return results

    @staticmethod
    def _metadata(res: TERResult, signature: Signature, **extra: int) -> dict:
        return {"statistics": [res.num_edits, res.ref_length], "num_edits": res.num_edits,
                "ref_length": res.ref_length, "hyp_length": res.hyp_length, **extra, "signature": signature}

    def from_statistics(self, total: Statistics, nrefs: Union[int, str] = "var") -> ScoreResult:
        """Corpus TER from summed statistics, with sacrebleu's signature."""
        from opik_metrics.text.ter import TERResult
        edits, length = total.values
        res = TERResult(self.corpus_value(total), int(edits), length)
        reason = _reason(res, "corpus TER") if not length else None
        return ScoreResult(name=f"corpus_{self.name}", value=res.score, reason=reason,
                           metadata={"statistics": list(total.values), "num_edits": res.num_edits,
                                     "ref_length": length, "signature": self._item_signature(nrefs)})



def _reason(res: TERResult, what: str) -> str | None:
    """Why a TER takes a defined value: no reference word (sacrebleu: 1 with edits, 0 without) or
    no output word (every reference word is an insertion)."""
    if not res.ref_length:
        if res.num_edits:
            return f"the reference has no words: {what} is 1 by sacrebleu's definition (edits over no words)"
        return f"output and reference have no words: {what} is 0 by sacrebleu's definition"
    if what == "TER" and not res.hyp_length:
        return "output has no words: every reference word is an insertion"
    return None
