"""BLEU as an Opik metric: sentence BLEU per item, corpus BLEU per experiment."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from opik_metrics.core import (CorpusFacts, MetricInputError, ScoreFacts, Signature, Statistics, corpus_facts,
                               require_batch)
from opik_metrics.metric_kit.base import ScoreResult
from opik_metrics.metric_kit.card import MetricCard, Option
from opik_metrics.metric_kit.shared_options import LOWERCASE
from opik_metrics.metric_kit.collector import collector_paused
from opik_metrics.metric_kit.multi_reference import MEAN, check_mode, empty_note, mean_rows
from opik_metrics.metric_kit.sacrebleu_family import SacrebleuFamilyMetric

if TYPE_CHECKING:
    from opik_metrics.text.bleu.scorer import BLEUResult, BLEUStats


class BLEU(SacrebleuFamilyMetric):
    """BLEU in [0, 1] with sacrebleu's options and numbers (its score divided by 100).

    ``score`` gives sentence BLEU with ``sacrebleu.sentence_bleu``'s defaults, named ``name``
    (default ``bleu``); ``corpus_score`` and ``experiment_score`` give corpus BLEU, named
    ``corpus_<name>`` (statistics summed over items, as ``sacrebleu.corpus_bleu``), which is not
    the mean of sentence BLEUs.

    ``multi_reference``: how several references of an item count.

    - ``"pooled"`` (default, sacrebleu's): one multi-reference BLEU, each n-gram's matches clipped by
      its highest count in any reference, the reference length the closest one.
    - ``"mean"``: the item's score is the mean over its references of its single-reference sentence
      BLEUs (each ``sentence_bleu(output, [reference])``), as papers that average over references
      report it. Its statistics are the mean over its references of its single-reference statistics
      (matches per order, the reference length; the output's n-gram counts are the same for every
      reference), so the corpus score stays ``from_statistics(sum(statistics))``: corpus BLEU of
      reference-averaged counts. With K references to every item it is corpus BLEU of the counts
      averaged over the K reference sets (each n-gram precision the mean of the K single-reference
      corpus precisions, the brevity penalty from the mean reference length), which is not the mean
      of the K single-reference corpus BLEUs. The signatures say ``multi:mean``.

    Examples:
        >>> from opik_metrics import BLEU
        >>> result = BLEU(track=False).score("the cat sat on the mat", "the cat sat on a mat")[0]
        >>> result.name, round(result.value, 4)
        ('bleu', 0.5373)
    """

    card = MetricCard(
        "bleu", "sentence BLEU per item, corpus BLEU in the aggregate", group="BLEU options", options=(
            Option("--bleu-tokenize", "tokenize", help="13a (default), intl, char, zh, none"),
            LOWERCASE,
            Option("--smooth-method", "smooth_method", choices=("exp", "floor", "add-k", "none"),
                   help="sacrebleu's smoothing of zero n-gram counts (default %(default)s)"),
        ))
    default_name = "bleu"
    #: The rules for several references, the default (sacrebleu's) first.
    multi_reference_modes = ("pooled", MEAN)

    def __init__(
        self,
        tokenize: str = "13a",
        smooth_method: str = "exp",
        smooth_value: float | None = None,
        effective_order: bool = True,
        lowercase: bool = False,
        weights: Sequence[float] | None = None,
        max_ngram_order: int = 4,
        corpus_smooth_method: str = "exp",
        corpus_effective_order: bool = False,
        multi_reference: str = "pooled",
        name: str = "bleu",
        track: bool = True,
        project_name: str | None = None,
    ) -> None:
        # sacrebleu: only when a metric is built
        from opik_metrics.text.bleu.scorer import BLEUScorer
        self.multi_reference = check_mode(multi_reference, self.multi_reference_modes)
        common: dict[str, Any] = dict(tokenize=tokenize, lowercase=lowercase, smooth_value=smooth_value,
                      max_ngram_order=max_ngram_order, weights=weights)
        self._sentence = BLEUScorer(smooth_method=smooth_method, effective_order=effective_order, **common)
        self._corpus = BLEUScorer(smooth_method=corpus_smooth_method,
                                  effective_order=corpus_effective_order, **common)
        self.signature = self._marked(self._sentence.signature(sentence=True, nrefs=None))
        super().__init__(name=name, track=track, project_name=project_name)

    def _score_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(self.name, higher_is_better=True, bounds=(0.0, 1.0))]

    def _corpus_facts(self) -> CorpusFacts:
        from opik_metrics.text.bleu.scorer import bleu_from_statistics, statistics_fields
        c = self._corpus
        return corpus_facts(f"corpus_{self.name}", self.name, statistics_fields(c.max_ngram_order),
                            bleu_from_statistics,
                            {"max_ngram_order": c.max_ngram_order, "smooth_method": c.smooth_method,
                             "smooth_value": c.smooth_value, "effective_order": c.uses_effective_order(sentence=False),
                             "weights": list(c.weights) if c.weights is not None else None},
                            bounds=(0.0, 1.0))

    def _new_signature(self, nrefs: int | str, sentence: bool) -> Signature:
        return self._marked((self._sentence if sentence else self._corpus).signature(sentence=sentence, nrefs=nrefs))

    def _marked(self, signature: Signature) -> Signature:
        """``signature`` with the rule for several references, when it is not sacrebleu's."""
        return signature if self.multi_reference == "pooled" else signature.extended(multi=self.multi_reference)

    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        from opik_metrics.text.bleu.scorer import BLEUStats
        if self.multi_reference == MEAN:
            return [[self._mean_result(output, refs)] for output, refs in zip(outputs, references)]
        results = []
        for output, refs in zip(outputs, references):
            res = self._sentence.sentence_score(output, refs)
            stats = BLEUStats(res.counts, res.totals, res.sys_len, res.ref_len)
            results.append([self._result(self.name, res, stats, self._item_signature(len(refs)),
                                         _empty_reason(res), n_references=len(refs))])
        return results

    def from_statistics(self, total: Statistics) -> ScoreResult:
        """Corpus BLEU from summed statistics, with sacrebleu's corpus options and signature."""
        from opik_metrics.text.bleu.scorer import BLEUStats
        stats = BLEUStats.from_list(total.values, self._corpus.max_ngram_order)
        res = self._corpus.compute(stats, sentence=False)
        reason = None if res.sys_len else "every output is empty: corpus BLEU is 0 by definition"
        return self._result(f"corpus_{self.name}", res, stats, self._item_signature("var", sentence=False), reason)

    def statistics(self, outputs: Sequence[str],
                   references: Sequence[str | Sequence[str]] | None = None) -> list[Statistics]:
        """One summable statistics object per item: what ``item_statistics`` reads from
        ``score_batch``'s results, taken from the engine's counts without scoring each sentence."""
        fields = self._require_corpus().fields
        return [Statistics(fields, tuple(row)) for row in self._segment_rows(outputs, references)]

    def corpus_score(self, outputs: Sequence[str],
                     references: Sequence[str | Sequence[str]] | None = None) -> ScoreResult:
        """Corpus BLEU over aligned outputs and references, as ``sacrebleu.corpus_bleu``: exactly
        ``from_statistics(sum(statistics(...)))``, each text tokenised once, the columns summed at once."""
        rows = self._segment_rows(outputs, references)
        if not rows:
            raise MetricInputError(f"the corpus score of {self.name} needs at least one item")
        total = Statistics(self._require_corpus().fields, tuple(map(sum, zip(*rows))))
        assert references is not None
        return self._signed_for(self.from_statistics(total), references)

    def _segment_rows(self, outputs: Sequence[str], references: Sequence[str | Sequence[str]] | None) -> list:
        """Validated items' statistics rows (the corpus scorer's tokenisation and counts); under
        ``"mean"`` each item's row is the mean of its single-reference rows."""
        outs, refs = require_batch(outputs, references)
        if refs is None:
            raise MetricInputError(f"{self.name} needs references: pass references=[...]")
        with collector_paused():      # many small rows: no collection rescanning Opik's objects meanwhile
            if self.multi_reference != MEAN:
                return self._corpus.segment_statistics(outs, refs)
            pairs = [(output, [ref]) for output, item in zip(outs, refs) for ref in item]
            rows = self._corpus.segment_statistics([p[0] for p in pairs], [p[1] for p in pairs])
            made, at = [], 0
            for item in refs:
                made.append(mean_rows(rows[at:at + len(item)]))
                at += len(item)
            return made

    def _mean_result(self, output: str, refs: list[str]) -> ScoreResult:
        """One item under ``"mean"``: the mean of its single-reference sentence BLEUs, and the mean
        of their statistics."""
        from opik_metrics.text.bleu.scorer import BLEUStats
        each = [self._sentence.sentence_score(output, [ref]) for ref in refs]
        statistics = mean_rows([BLEUStats(r.counts, r.totals, r.sys_len, r.ref_len).as_list() for r in each])
        value = sum(r.score for r in each) / len(each)
        if each[0].sys_len == 0:
            reason: str | None = "output has no tokens: BLEU is 0 by definition"
        else:
            empty = [k for k, r in enumerate(each) if r.ref_len == 0]
            reason = (None if not empty else "reference has no tokens: BLEU is 0 by definition"
                      if len(empty) == len(each) else empty_note(empty, "tokens"))
        return ScoreResult(name=self.name, value=value, reason=reason, metadata={
            "references": [r.score for r in each], "sys_len": each[0].sys_len, "statistics": statistics,
            "signature": self._item_signature(len(refs)), "n_references": len(refs)})

    @staticmethod
    def _result(name: str, res: BLEUResult, stats: BLEUStats, signature: Signature, reason: str | None,
                **extra: int) -> ScoreResult:
        return ScoreResult(
            name=name, value=res.score, reason=reason,
            metadata={"precisions": list(res.precisions), "bp": res.bp, "sys_len": res.sys_len,
                      "ref_len": res.ref_len, "counts": list(res.counts), "totals": list(res.totals),
                      "statistics": stats.as_list(), "signature": signature, **extra},
        )


def _empty_reason(res: BLEUResult) -> str | None:
    if res.sys_len == 0:
        return "output has no tokens: BLEU is 0 by definition"
    if res.ref_len == 0:
        return "reference has no tokens: BLEU is 0 by definition"
    return None
