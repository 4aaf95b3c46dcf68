"""BLEU (Papineni et al., 2002), sentence and corpus level, with sacrebleu 2.6.0's exact numbers.

Scores are on a 0..1 scale (sacrebleu's divided by 100). Tokenization uses sacrebleu's own
tokenizer classes; the matching and scoring are re-implemented for speed (see ``bleu_ngrams``).
"""
from __future__ import annotations

import math
import numbers
from functools import lru_cache
from typing import Any, Optional, Sequence, Union

from opik_metrics.text.bleu.formula import SMOOTH_DEFAULTS, BLEUFormula
from opik_metrics.core.inputs import as_list, check_text, reference_list
from opik_metrics.text.bleu.ngrams import clipped_matches, closest_ref_len, reference_tables, single_reference_matches
from opik_metrics.text.bleu.signature import bleu_signature
from opik_metrics.text.tokenizers.sacrebleu import TOKENIZER_NAMES, get_tokenizer, token_lister
from opik_metrics.text.bleu.types import BLEUResult, BLEUStats
from opik_metrics.core import Signature, corpus_formula
from opik_metrics.core.statistics_checks import above, first_violation, negative

__all__ = ["BLEUResult", "BLEUScorer", "BLEUStats", "SMOOTH_DEFAULTS", "TOKENIZER_NAMES", "bleu_from_statistics",
           "statistics_fields"]

References = Union[str, Sequence[Optional[str]]]


class BLEUScorer:
    """Configured BLEU: per-segment statistics, sentence BLEU, corpus BLEU, and its signature.

    ``effective_order=None`` means True for sentence BLEU and False for corpus BLEU (as
    ``sacrebleu.sentence_bleu`` / ``corpus_bleu``). ``weights=None`` means uniform weights.
    """

    def __init__(
        self,
        *,
        tokenize: str = "13a",
        lowercase: bool = False,
        smooth_method: str = "exp",
        smooth_value: Optional[float] = None,
        effective_order: Optional[bool] = None,
        max_ngram_order: int = 4,
        weights: Optional[Sequence[float]] = None,
    ) -> None:
        if not isinstance(tokenize, str):
            raise TypeError(f"tokenize must be a str, got {type(tokenize).__name__}")
        if isinstance(max_ngram_order, bool) or not isinstance(max_ngram_order, int):
            raise TypeError(f"max_ngram_order must be an int, got {type(max_ngram_order).__name__}")
        if max_ngram_order < 1:
            raise ValueError(f"max_ngram_order must be >= 1, got {max_ngram_order}")
        if effective_order not in (None, True, False):
            raise TypeError(f"effective_order must be None or a bool, got {effective_order!r}")

        weights = _check_weights(weights, max_ngram_order)
        self._formula = BLEUFormula(smooth_method, smooth_value, weights)  # checks the smoothing
        self._tokenizer = get_tokenizer(tokenize)
        self._tokens = token_lister(tokenize, bool(lowercase))
        self.tokenize = tokenize
        self.lowercase = bool(lowercase)
        self.smooth_method = smooth_method
        self.smooth_value = smooth_value
        self.effective_order = effective_order
        self.max_ngram_order = max_ngram_order
        #: The weights as a tuple, or None when uniform (sacrebleu's exact computation is used then).
        self.weights = weights

    # -- statistics -------------------------------------------------------------------------

    def _segment(self, hypothesis: str, references: list[str]) -> tuple[list[int], int, int]:
        """Clipped matches per order, hypothesis length and closest reference length."""
        tokens = self._tokens
        hyp = tokens(hypothesis)
        if len(references) == 1:
            ref = tokens(references[0])
            return single_reference_matches(hyp, ref, self.max_ngram_order), len(hyp), len(ref)
        refs = [tokens(ref) for ref in references]
        correct = clipped_matches(hyp, reference_tables(refs, self.max_ngram_order))
        return correct, len(hyp), closest_ref_len(len(hyp), [len(ref) for ref in refs])

    def stats(self, hypothesis: str, references: References) -> BLEUStats:
        """Sufficient statistics of one hypothesis against its reference(s); sum them for a corpus."""
        check_text(hypothesis, "hypothesis")
        correct, hyp_len, ref_len = self._segment(hypothesis, reference_list(references, "BLEU"))
        return BLEUStats(tuple(correct), tuple(_totals(hyp_len, self.max_ngram_order)), hyp_len, ref_len)

    # -- scores -----------------------------------------------------------------------------

    def sentence_score(self, hypothesis: str, references: References) -> BLEUResult:
        """Sentence BLEU of one hypothesis against one or several references."""
        if type(hypothesis) is not str:
            check_text(hypothesis, "hypothesis")
        if not (type(references) is list and len(references) == 1 and type(references[0]) is str):
            references = reference_list(references, "BLEU")  # the general case
        correct, hyp_len, ref_len = self._segment(hypothesis, references)
        return self._formula(correct, _totals(hyp_len, self.max_ngram_order), hyp_len, ref_len,
                             True if self.effective_order is None else self.effective_order)

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[References]) -> BLEUResult:
        """Corpus BLEU: statistics summed over items, then one score (not a mean of sentence BLEUs).

        ``references[i]`` holds the reference(s) of ``hypotheses[i]``; items may have different
        numbers of references.
        """
        rows = self.segment_statistics(hypotheses, references)
        if not rows:
            raise ValueError("corpus_score needs at least one hypothesis")
        order = self.max_ngram_order
        total = list(map(sum, zip(*rows)))
        return self._formula(total[:order], total[order:2 * order], total[2 * order], total[2 * order + 1],
                             self.uses_effective_order(sentence=False))

    def segment_statistics(self, hypotheses: Sequence[str], references: Sequence[References]) -> list[list[int]]:
        """Each segment's statistics as a flat list (``BLEUStats.as_list`` order: correct per order,
        total per order, sys_len, ref_len): one tokenisation per text, no score computed.

        ``references[i]`` holds the reference(s) of ``hypotheses[i]`` (a str or a sequence of str).
        """
        hyps = as_list(hypotheses, "hypotheses")
        refs = as_list(references, "references")
        if len(hyps) != len(refs):
            raise ValueError(
                f"corpus_score got {len(hyps)} hypotheses but {len(refs)} reference entries; "
                "references[i] must hold the reference(s) of hypotheses[i]"
            )
        rows = []
        segment = self._segment
        order = self.max_ngram_order
        for i, (hyp, item_refs) in enumerate(zip(hyps, refs)):
            if type(hyp) is not str:
                check_text(hyp, f"hypotheses[{i}]")
            if type(item_refs) is not list or len(item_refs) != 1 or type(item_refs[0]) is not str:
                item_refs = reference_list(item_refs, "BLEU", i)  # all but the plain one-reference case
            correct, hyp_len, ref_len = segment(hyp, item_refs)
            correct.extend(_totals(hyp_len, order))
            correct.append(hyp_len)
            correct.append(ref_len)
            rows.append(correct)
        return rows

    def compute(self, stats: BLEUStats, *, sentence: bool) -> BLEUResult:
        """BLEU from (summed) statistics; ``sentence`` picks the effective-order default."""
        if len(stats.correct) != self.max_ngram_order or len(stats.total) != self.max_ngram_order:
            raise ValueError(
                f"stats have {len(stats.correct)} n-gram orders, this scorer uses {self.max_ngram_order}"
            )
        return self._formula(stats.correct, stats.total, stats.sys_len, stats.ref_len,
                             self.uses_effective_order(sentence=sentence))

    def signature(self, *, sentence: bool, nrefs: Union[int, str, None] = 1) -> Signature:
        """Reproducibility signature: sacrebleu's, e.g. ``nrefs:1|case:mixed|eff:yes|tok:13a|
        smooth:exp|version:2.6.0``, then ``|order:N`` (N != 4), ``|w:...`` (non-uniform weights)
        and ``|opik_metrics:<version>``."""
        return bleu_signature(
            nrefs=nrefs,
            lowercase=self.lowercase,
            effective_order=self.uses_effective_order(sentence=sentence),
            tokenizer_signature=self._tokenizer.signature(),
            smooth_method=self.smooth_method,
            smooth_value=self.smooth_value,
            max_ngram_order=self.max_ngram_order,
            weights=self.weights,
        )

    def uses_effective_order(self, *, sentence: bool) -> bool:
        """Whether BLEU uses effective order: the option when set, else sacrebleu's default (sentences only)."""
        return sentence if self.effective_order is None else self.effective_order

    def __repr__(self) -> str:
        return (
            f"BLEUScorer(tokenize={self.tokenize!r}, lowercase={self.lowercase}, "
            f"smooth_method={self.smooth_method!r}, smooth_value={self.smooth_value!r}, "
            f"effective_order={self.effective_order!r}, max_ngram_order={self.max_ngram_order}, "
            f"weights={self.weights!r})"
        )


def statistics_fields(max_ngram_order: int) -> tuple[str, ...]:
    """Names of BLEU's summable statistics, in the order of ``BLEUStats.as_list``."""
    orders = range(1, max_ngram_order + 1)
    return (*(f"correct_{n}" for n in orders), *(f"total_{n}" for n in orders), "sys_len", "ref_len")


def _check_bleu(rows: Any, *, max_ngram_order: int = 4, **_: Any) -> Optional[tuple[int, str]]:
    """Every BLEU statistic is a count; an order's matches never exceed its n-grams."""
    names = statistics_fields(max_ngram_order)
    orders = range(max_ngram_order)
    return first_violation(negative(rows, list(range(len(names))), names),
                           above(rows, list(orders), [max_ngram_order + n for n in orders],
                                 "more matching n-grams than n-grams (correct_n above total_n)"))


@corpus_formula(check=_check_bleu)
def bleu_from_statistics(values: Sequence[float], *, max_ngram_order: int = 4, smooth_method: str = "exp",
                         smooth_value: Optional[float] = None, effective_order: bool = False,
                         weights: Optional[Sequence[float]] = None) -> float:
    """Corpus BLEU of summed statistics (``statistics_fields`` order), as ``BLEUScorer.compute``."""
    scorer = _scorer_for(max_ngram_order, smooth_method, smooth_value, bool(effective_order),
                         tuple(weights) if weights is not None else None)
    return scorer.compute(BLEUStats.from_list(values, max_ngram_order), sentence=False).score


@lru_cache(maxsize=64)
def _scorer_for(order: int, smooth_method: str, smooth_value: Optional[float], effective_order: bool,
                weights: Optional[tuple[float, ...]]) -> "BLEUScorer":
    return BLEUScorer(smooth_method=smooth_method, smooth_value=smooth_value, effective_order=effective_order,
                      max_ngram_order=order, weights=weights)


def _totals(hyp_len: int, max_order: int) -> list[int]:
    """Number of hypothesis n-grams of each order 1..max_order."""
    if hyp_len >= max_order:
        return list(range(hyp_len, hyp_len - max_order, -1))
    return [hyp_len - n if hyp_len > n else 0 for n in range(max_order)]


def _check_weights(weights: Optional[Sequence[float]], max_order: int) -> Optional[tuple[float, ...]]:
    """Validated weights as a tuple, or None when they are uniform."""
    if weights is None:
        return None
    if isinstance(weights, str) or not hasattr(weights, "__len__"):
        raise ValueError(f"weights must be a sequence of {max_order} floats, got {weights!r}")
    values = tuple(weights)
    if len(values) != max_order:
        raise ValueError(
            f"weights must have max_ngram_order={max_order} entries, got {len(values)}: {values!r}"
        )
    for n, w in enumerate(values, start=1):
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or not math.isfinite(w) or w < 0:
            raise ValueError(f"weights must be finite non-negative numbers; weight of order {n} is {w!r}")
    total = math.fsum(values)
    if abs(total - 1.0) > 1e-9:
        raise ValueError(f"weights must sum to 1 (tolerance 1e-9), got sum {total!r}: {values!r}")
    if len(set(values)) == 1:
        return None
    return tuple(float(w) for w in values)
