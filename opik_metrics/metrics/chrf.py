"""chrF / chrF++ as an Opik metric: sentence chrF per item, corpus chrF per experiment."""
from __future__ import annotations

from typing import TYPE_CHECKING, Union

from opik_metrics.core import CorpusFacts, ScoreFacts, Signature, Statistics, corpus_facts
from opik_metrics.metric_kit.base import ScoreResult
from opik_metrics.metric_kit.card import MetricCard, Option
from opik_metrics.metric_kit.shared_options import LOWERCASE
from opik_metrics.metric_kit.multi_reference import MEAN, check_mode, empty_note
from opik_metrics.metric_kit.sacrebleu_family import SacrebleuFamilyMetric

if TYPE_CHECKING:
    from opik_metrics.text.chrf import CHRFResult


class CHRF(SacrebleuFamilyMetric):
    """chrF (character n-gram F-score) and chrF++ (``word_order=2``) in [0, 1], with sacrebleu's
    options and numbers (its score divided by 100).

    ``score`` gives sentence chrF, named ``name`` (default ``chrf``); with several references the
    one with the highest chrF counts (the first on ties), as sacrebleu. ``corpus_score`` and
    ``experiment_score`` give corpus chrF, named ``corpus_<name>``: the items' statistics summed,
    then one F-score (as ``sacrebleu.corpus_chrf``), which is not the mean of sentence scores.

    ``multi_reference="mean"`` instead gives each item the mean over its references of its
    single-reference chrFs (each ``sentence_chrf(output, [reference])``), and as its statistics
    the mean of its single-reference statistics (fractions), so the corpus score stays one F-score
    of the summed statistics (``from_statistics(sum(statistics))``): corpus chrF of
    reference-averaged n-gram counts, which with K references to every item is chrF of the counts
    averaged over the K reference sets, not the mean of K corpus chrFs. Signatures say ``multi:mean``.

    Args:
        word_order: word n-gram order; 0 is chrF, 2 is chrF++.
        char_order: character n-gram order (sacrebleu's default 6).
        beta: weight of recall against precision (chrF2 by default).
        lowercase: compare lowercased text.
        whitespace: keep whitespace inside character n-grams (sacrebleu removes it by default).
        eps_smoothing: chrF++.py / NLTK / Moses epsilon smoothing instead of sacrebleu's
            effective order (orders with no n-gram left out).
        multi_reference: ``"best"`` (sacrebleu's, default) or ``"mean"`` (see above).
        name: name of the item score (the corpus score is ``corpus_<name>``).
        track: let Opik track the calls.
        project_name: Opik project of the tracked calls.

    Examples:
        >>> from opik_metrics import CHRF
        >>> result = CHRF(track=False).score("the cat sat on the mat", "the cat sat on a mat")[0]
        >>> result.name, round(result.value, 4)
        ('chrf', 0.7208)
    """

    card = MetricCard(
        "chrf", "sentence chrF (chrF++ with --chrf-word-order 2) per item, corpus chrF in the aggregate",
        group="chrF options (sacrebleu's; --lowercase applies too)", options=(
            Option("--chrf-word-order", "word_order", kind=int,
                   help="word n-gram order: 0 chrF (default), 2 chrF++"),
            Option("--chrf-char-order", "char_order", kind=int, help="character n-gram order (default %(default)s)"),
            Option("--chrf-beta", "beta", kind=float, help="recall weight of the F-score (default %(default)s)"),
            LOWERCASE,
            Option("--chrf-whitespace", "whitespace", action="store_true", help="keep whitespace in character n-grams"),
            Option("--chrf-eps-smoothing", "eps_smoothing", action="store_true", help="chrF++.py's epsilon smoothing"),
        ))
    default_name = "chrf"
    #: The rules for several references, the default (sacrebleu's) first.
    multi_reference_modes = ("best", MEAN)

    def __init__(
        self,
        word_order: int = 0,
        char_order: int = 6,
        beta: float = 2,
        lowercase: bool = False,
        whitespace: bool = False,
        eps_smoothing: bool = False,
        multi_reference: str = "best",
        name: str = "chrf",
        track: bool = True,
        project_name: str | None = None,
    ) -> None:
        # numpy, sacrebleu: only when a metric is built
        from opik_metrics.text.chrf import CHRFScorer
        self.multi_reference = check_mode(multi_reference, self.multi_reference_modes)
        self._scorer = CHRFScorer(char_order=char_order, word_order=word_order, beta=beta, lowercase=lowercase,
                                  whitespace=whitespace, eps_smoothing=eps_smoothing, multi_reference=multi_reference)
        self.signature = self._scorer.signature(nrefs=None)
        super().__init__(name=name, track=track, project_name=project_name)

    def _score_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(self.name, higher_is_better=True, bounds=(0.0, 1.0))]

    def _corpus_facts(self) -> CorpusFacts:
        from opik_metrics.text.chrf import chrf_from_statistics, statistics_fields
        s = self._scorer
        return corpus_facts(f"corpus_{self.name}", self.name, statistics_fields(s.char_order, s.word_order),
                            chrf_from_statistics,
                            {"char_order": s.char_order, "word_order": s.word_order, "beta": s.beta,
                             "eps_smoothing": s.eps_smoothing},
                            bounds=(0.0, 1.0))

    def _new_signature(self, nrefs: Union[int, str], sentence: bool) -> Signature:
        return self._scorer.signature(nrefs=nrefs)      # the same for sentence and corpus scores

    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        results = []
        name = self.name
        mean = self.multi_reference == MEAN
        for output, refs, res in zip(outputs, references, self._scorer.batch(outputs, references)):
            which: dict[str, object] = ({"references": list(res.per_reference)} if mean
                                        else {"best_reference": res.reference})
            results.append([ScoreResult(
                name=name, value=res.score, reason=self._mean_reason(output, refs, res) if mean
                else self._reason(output, refs, res),
                metadata={"statistics": list(res.statistics), **which,
                          "n_references": len(refs), "signature": self._item_signature(len(refs))})])
        return results

    def _empty(self, text: str) -> bool:
        """Whether a text has no characters once prepared (whitespace goes unless kept)."""
        return not (text if self._scorer.whitespace else text.strip())

    def _mean_reason(self, output: str, refs: list[str], res: CHRFResult) -> str | None:
        """Why an item under ``"mean"`` takes a defined value: an empty output, or empty references."""
        empty = [k for k, ref in enumerate(refs) if self._empty(ref)]
        if self._empty(output) or len(empty) == len(refs):
            what = ("output and reference have" if self._empty(output) and len(empty) == len(refs)
                    else "output has" if self._empty(output) else "reference has")
            return f"{what} no characters: chrF is {res.score!r} by sacrebleu's definition"
        return empty_note(empty, "characters") if empty else None

    def _reason(self, output: str, refs: list[str], res: CHRFResult) -> str | None:
        """Why an item takes a defined value: an empty output or reference (``res.statistics[1]``
        counts the best reference's characters)."""
        if res.statistics[1] and res.statistics[0]:
            return None
        out_empty = not (output if self._scorer.whitespace else output.strip())
        ref_empty = not res.statistics[1]
        if not (out_empty or ref_empty):
            return None                          # some characters, none in common: a real 0
        what = ("output and reference have" if out_empty and ref_empty
                else "output has" if out_empty else "reference has")
        return f"{what} no characters: chrF is {res.score!r} by sacrebleu's definition"

    def from_statistics(self, total: Statistics, nrefs: Union[int, str] = "var") -> ScoreResult:
        """Corpus chrF from summed statistics, with sacrebleu's signature."""
        value = self.corpus_value(total)
        reason = None
        if not total.values[1]:
            reason = f"no reference has characters: corpus chrF is {value!r} by sacrebleu's definition"
        elif not total.values[0]:
            reason = f"every output is empty: corpus chrF is {value!r} by sacrebleu's definition"
        return ScoreResult(name=f"corpus_{self.name}", value=value, reason=reason,
                           metadata={"statistics": list(total.values), "signature": self._item_signature(nrefs)})
