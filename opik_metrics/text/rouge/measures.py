"""What each ROUGE type counts between a prediction and one reference, as ``Counts``."""
from __future__ import annotations

from typing import Callable

from opik_metrics.text.rouge.counts import Counts
from opik_metrics.text.rouge.lcs import lcs_length_with_masks, weighted_lcs
from opik_metrics.text.rouge.ngrams import clipped_overlap, ngram_total, skip_bigram_total
from opik_metrics.text.rouge.summary import summary_lcs_hits
from opik_metrics.text.rouge.prepared import PreparedText
from opik_metrics.text.rouge.types import LCS, NGRAM, SKIP_BIGRAM, SUMMARY_LCS, WEIGHTED_LCS, RougeType

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


def skip_bigram_measure(max_skip, with_unigrams: bool) -> Measure:
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
