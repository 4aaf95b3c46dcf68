"""ROUGE one item at a time: each text tokenised once into a ``PreparedText``, and each ROUGE type's
``Measure`` counting its matches and totals between the prediction and one reference; ``ItemScorer``
turns them into P, R, F (the best reference, counts pooled over the references, or the mean of each
reference's P, R, F)."""
from __future__ import annotations

from collections import Counter
from typing import Callable, Optional, Sequence

from opik_metrics.text.rouge.counts import Counts, FMeasure, Score, counts_to_score, counts_to_values, pool
from opik_metrics.text.rouge.lcs import (lcs_length_with_masks, position_masks, sentence_masks, summary_lcs_hits,
                                         weighted_lcs)
from opik_metrics.text.rouge.types import LCS, NGRAM, SKIP_BIGRAM, SUMMARY_LCS, WEIGHTED_LCS, RougeType

# -- counting units: n-grams and skip-bigrams -------------------------------------------------------


def ngram_counts(tokens: list, n: int) -> Counter:
    """Multiset (unit -> count) of the n-grams of ``tokens`` (unigrams as plain tokens, longer as tuples)."""
    if n == 1:
        return Counter(tokens)
    if n == 2:
        return Counter(zip(tokens, tokens[1:]))
    return Counter(zip(*(tokens[i:] for i in range(n))))


def ngram_total(tokens: list, n: int) -> int:
    """How many n-grams ``tokens`` has (with multiplicity)."""
    return max(len(tokens) - n + 1, 0)


def _largest_gap(length: int, max_skip: Optional[int]) -> int:
    """Largest index distance of a pair: at most ``max_skip`` words in between (None: any)."""
    largest = length - 1
    return largest if max_skip is None else min(max_skip + 1, largest)


def skip_bigram_counts(tokens: list, max_skip: Optional[int]) -> Counter:
    """Multiset of in-order word pairs with at most ``max_skip`` words between them (None: unlimited)."""
    counts: Counter = Counter()
    for gap in range(1, _largest_gap(len(tokens), max_skip) + 1):
        counts.update(zip(tokens, tokens[gap:]))
    return counts


def skip_bigram_total(tokens: list, max_skip: Optional[int]) -> int:
    """How many pairs ``skip_bigram_counts`` holds, without building them."""
    largest = _largest_gap(len(tokens), max_skip)
    return largest * len(tokens) - largest * (largest + 1) // 2 if largest > 0 else 0


def clipped_overlap(a: dict, b: dict) -> int:
    """Sum over units of min(count in a, count in b): matches, each unit used at most as often as both have it."""
    if len(a) > len(b):
        a, b = b, a
    hits = 0
    lookup = b.get
    for unit, count in a.items():
        other = lookup(unit)
        if other:
            hits += count if count < other else other
    return hits

# -- one text, prepared once ------------------------------------------------------------------------


class PreparedText:
    """Tokens of a text plus cached n-gram / skip-bigram counts, LCS masks and per-line tokens."""

    __slots__ = ("text", "tokens", "_tokenize", "_sentences", "_cache")

    def __init__(self, text: str, tokenize: Callable[[str], list], tokens: Optional[list] = None):
        self.text = text
        self._tokenize = tokenize
        self.tokens = tokenize(text) if tokens is None else tokens
        self._sentences: list | None = None
        self._cache: dict = {}

    def ngrams(self, n: int):
        """Counter of this text's n-grams."""
        key = ("ngram", n)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = ngram_counts(self.tokens, n)
        return found

    def skip_bigrams(self, max_skip: Optional[int]):
        """Counter of this text's skip-bigrams with at most ``max_skip`` words in between."""
        key = ("skip", max_skip)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = skip_bigram_counts(self.tokens, max_skip)
        return found

    def masks(self) -> tuple:
        """Token position bitmasks for bit-parallel LCS against other texts."""
        found = self._cache.get("masks")
        if found is None:
            found = self._cache["masks"] = position_masks(self.tokens)
        return found

    def sentences(self) -> list:
        """Tokens of each non-empty line (rouge-score's rougeLsum sentence split on '\\n')."""
        if self._sentences is None:
            self._sentences = [self._tokenize(line) for line in self.text.split("\n") if line]
        return self._sentences

    def sentence_masks(self):
        """Bitmasks of every line's token positions, for the union LCS against other texts' lines."""
        found = self._cache.get("sentence_masks")
        if found is None:
            found = self._cache["sentence_masks"] = sentence_masks(self.sentences())
        return found

# -- what each ROUGE type counts against one reference ----------------------------------------------


Measure = Callable[[PreparedText, PreparedText], Counts]


def ngram_measure(n: int) -> Measure:
    """ROUGE-N: clipped n-gram matches over each side's n-gram count."""
    def measure(prediction: PreparedText, reference: PreparedText) -> Counts:
        hits = clipped_overlap(prediction.ngrams(n), reference.ngrams(n))
        return Counts(hits, ngram_total(prediction.tokens, n), ngram_total(reference.tokens, n))
    return measure


def lcs_measure(prediction: PreparedText, reference: PreparedText) -> Counts:
    """ROUGE-L: LCS length over each side's token count."""
    hits = lcs_length_with_masks(prediction.masks(), reference.tokens)
    return Counts(hits, len(prediction.tokens), len(reference.tokens))


def summary_lcs_measure(prediction: PreparedText, reference: PreparedText) -> Counts:
    """ROUGE-Lsum: union-LCS hits over each side's total token count across lines."""
    reference_sentences = reference.sentences()
    prediction_sentences = prediction.sentences()
    return Counts(
        summary_lcs_hits(reference_sentences, prediction_sentences, prediction.sentence_masks()),
        sum(map(len, prediction_sentences)),
        sum(map(len, reference_sentences)),
    )


def weighted_lcs_measure(weight: float) -> Measure:
    """ROUGE-W: WLCS over f(length) of each side, f(k) = k**weight (undone later by the root)."""
    def measure(prediction: PreparedText, reference: PreparedText) -> Counts:
        if not prediction.tokens or not reference.tokens:
            return Counts(0, 0, 0)
        hits = weighted_lcs(reference.tokens, prediction.tokens, weight)
        return Counts(hits, len(prediction.tokens) ** weight, len(reference.tokens) ** weight)
    return measure


def skip_bigram_measure(max_skip: Optional[int], with_unigrams: bool) -> Measure:
    """ROUGE-S (and SU: unigram matches and totals pooled with the skip-bigram ones)."""
    def measure(prediction: PreparedText, reference: PreparedText) -> Counts:
        hits = clipped_overlap(prediction.skip_bigrams(max_skip), reference.skip_bigrams(max_skip))
        prediction_total = skip_bigram_total(prediction.tokens, max_skip)
        reference_total = skip_bigram_total(reference.tokens, max_skip)
        if with_unigrams:
            hits += clipped_overlap(prediction.ngrams(1), reference.ngrams(1))
            prediction_total += len(prediction.tokens)
            reference_total += len(reference.tokens)
        return Counts(hits, prediction_total, reference_total)
    return measure


def build_measure(rouge_type: RougeType, wlcs_weight: float) -> tuple:
    """(measure, root) for a rouge type; root is the f^-1 exponent (ROUGE-W's weight, else 1)."""
    kind = rouge_type.kind
    if kind == NGRAM:
        return ngram_measure(rouge_type.n), 1.0
    if kind == LCS:
        return lcs_measure, 1.0
    if kind == SUMMARY_LCS:
        return summary_lcs_measure, 1.0
    if kind == WEIGHTED_LCS:
        return weighted_lcs_measure(wlcs_weight), float(wlcs_weight)
    if kind == SKIP_BIGRAM:
        return skip_bigram_measure(rouge_type.max_skip, rouge_type.with_unigrams), 1.0
    raise ValueError(f"no measure for ROUGE type {rouge_type.name!r}")


# -- the per-item path ------------------------------------------------------------------------------


class ItemScorer:
    """``values(prediction, references)``: P, R, F of each measure for one item, flat, in order."""

    def __init__(self, measures: Sequence[tuple[Measure, float]], tokenize: Callable[[str], list],
                 fmeasure: FMeasure, multi_reference: str) -> None:
        self.measures = list(measures)
        self._tokenize = tokenize
        self._fmeasure = fmeasure
        self._average = multi_reference == "average"
        self._mean = multi_reference == "mean"

    def values(self, prediction: str, references: Sequence[str]) -> list[float]:
        """One checked item: a str and a non-empty list of str."""
        tokenize, fmeasure = self._tokenize, self._fmeasure
        prepared = PreparedText(prediction, tokenize)
        values: list[float] = []
        if len(references) == 1:
            reference = PreparedText(references[0], tokenize)
            for measure, root in self.measures:
                values += counts_to_values(measure(prepared, reference), fmeasure, root)
            return values
        others = [PreparedText(reference, tokenize) for reference in references]
        for measure, root in self.measures:
            all_counts = [measure(prepared, reference) for reference in others]
            if self._average:
                values += counts_to_values(pool(all_counts), fmeasure, root)
            elif self._mean:
                values += mean_values([counts_to_values(c, fmeasure, root) for c in all_counts])
            else:
                values += _best(counts_to_score(c, fmeasure, root) for c in all_counts)
        return values


def mean_values(per_reference: Sequence[Sequence[float]]) -> tuple[float, float, float]:
    """(P, R, F) each the mean over the references, summed left to right then divided (``batch.py``
    adds them in the same order, so the floats are the same)."""
    count = len(per_reference)
    precision = recall = fmeasure = 0.0
    for p, r, f in per_reference:
        precision += p
        recall += r
        fmeasure += f
    return precision / count, recall / count, fmeasure / count


def _best(scores) -> Score:
    """Highest F-measure, the first one on ties (rouge-score's ``score_multi`` / numpy argmax)."""
    best = None
    for score in scores:
        if best is None or score.fmeasure > best.fmeasure:
            best = score
    assert best is not None, "an item has at least one reference"
    return best
