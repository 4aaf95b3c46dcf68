"""Scores of many items at once: ROUGE-N and ROUGE-L counted on token-id arrays (``arrays.py``),
every other type, and any item with a text too long for the arrays, by the per-item engine.

The counts are the per-item engine's integers and the floats are made from them by the same
operations in the same order, so every value is identical to ``RougeScorer.score_values``.
"""
from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np

from opik_metrics.text.rouge.arrays import LONGEST, pair_counts
from opik_metrics.text.rouge.token_ids import token_ids
from opik_metrics.text.rouge.types import LCS, NGRAM


class PairScorer(Protocol):
    """What ``BatchScorer`` needs of the per-item scorer (``RougeScorer`` has it)."""

    parsed_types: Sequence[Any]
    measures: Sequence[Any]
    tokenizer: Any
    multi_reference: str
    alpha: float

    def score_values(self, prediction: str, references: list) -> Any:
        """P, R, F of each type for one item, flat."""

    def item_values(self, prediction: str, references: list, measures: Any) -> Any:
        """P, R, F of the given measures for one item, flat."""


CHUNK_PAIRS = 4096      # (prediction, reference) pairs tokenised and counted together: arrays of a few MB
ARRAY_KINDS = (NGRAM, LCS)


def _ratio(hits: np.ndarray, total: np.ndarray) -> np.ndarray:
    """hits / total, 0.0 where total is 0 (``counts.counts_to_values``)."""
    out = np.zeros(len(hits))
    np.divide(hits.astype(np.float64), total.astype(np.float64), out=out, where=total > 0)
    return out


def _fmeasure(precision: np.ndarray, recall: np.ndarray, alpha) -> np.ndarray:
    """``counts.FMeasure`` on arrays, operation for operation."""
    if alpha == 1:
        return precision.copy()
    if alpha == 0:
        return recall.copy()
    out = np.zeros(len(precision))
    if alpha is None:
        total = precision + recall
        np.divide(2 * precision * recall, total, out=out, where=total > 0)
    else:
        denominator = (1 - alpha) * precision + alpha * recall
        np.divide(precision * recall, denominator, out=out, where=denominator > 0)
    return out


class BatchScorer:
    """``values(predictions, references)``: ``RougeScorer.score_values`` of many items as one
    float64 array, one row per item (P, R, F of each type in ``rouge_types`` order)."""

    def __init__(self, scorer: PairScorer) -> None:
        self._scorer = scorer
        self._array_columns = [(column, rouge_type) for column, rouge_type in enumerate(scorer.parsed_types)
                               if rouge_type.kind in ARRAY_KINDS]
        self._other_measures = [(column, measure) for column, measure in enumerate(scorer.measures)
                                if scorer.parsed_types[column].kind not in ARRAY_KINDS]

    def values(self, predictions: list, references: list) -> np.ndarray:
        """``references[i]``: a non-empty list of str (checked by the caller); at least one type
        asked for is ROUGE-N or ROUGE-L."""
        out = np.zeros((len(predictions), 3 * len(self._scorer.parsed_types)))
        ref_counts = np.fromiter(map(len, references), dtype=np.int64, count=len(references))
        # chunks of about CHUNK_PAIRS pairs (an item with many references counts for each), at least one item
        pairs = np.cumsum(ref_counts)
        start = 0
        while start < len(predictions):
            done = int(pairs[start - 1]) if start else 0
            stop = max(int(np.searchsorted(pairs, done + CHUNK_PAIRS, side="right")), start + 1)
            self._chunk(predictions[start:stop], references[start:stop], ref_counts[start:stop], out[start:stop])
            start = stop
        return out

    def _chunk(self, predictions: list, references: list, ref_counts: np.ndarray, out: np.ndarray) -> None:
        scorer = self._scorer
        texts = list(predictions)
        for refs in references:
            texts += refs
        tokens = token_ids(scorer.tokenizer, texts)
        items = len(predictions)
        # pair k: item item_of[k]'s prediction against one of its references, item after item
        item_of = np.repeat(np.arange(items), ref_counts)
        lengths = tokens.lengths
        too_long = np.zeros(items, dtype=bool)
        np.logical_or.at(too_long, item_of, lengths[items:] > LONGEST)
        too_long |= lengths[:items] > LONGEST
        pairs = np.flatnonzero(~too_long[item_of])
        if len(pairs):
            self._array_values(tokens, item_of[pairs], items + pairs, ref_counts, too_long, out)
        for k in np.flatnonzero(too_long).tolist():   # every type of these items, by the per-item engine
            out[k] = scorer.score_values(predictions[k], references[k])
        if self._other_measures:
            rest = [m for _, m in self._other_measures]
            columns = [3 * c + part for c, _ in self._other_measures for part in range(3)]
            for k in np.flatnonzero(~too_long).tolist():
                out[k, columns] = scorer.item_values(predictions[k], references[k], rest)

    def _array_values(self, tokens, item_of: np.ndarray, reference_texts: np.ndarray,
                      ref_counts: np.ndarray, too_long: np.ndarray, out: np.ndarray) -> None:
        """Fill the array types' columns of every item that is not too long."""
        scorer = self._scorer
        prediction = tokens.take(item_of)
        reference = tokens.take(reference_texts)
        items = np.flatnonzero(~too_long)
        multi = ref_counts[items] > 1
        # pairs of one item are consecutive: its first pair's index in the kept pairs
        first = np.zeros(len(items), dtype=np.int64)
        np.cumsum(ref_counts[items][:-1], out=first[1:])
        orders = tuple(sorted({t.n for _, t in self._array_columns if t.kind == NGRAM}))
        counts = pair_counts(prediction, reference, orders, any(t.kind == LCS for _, t in self._array_columns))
        for column, rouge_type in self._array_columns:
            if rouge_type.kind == LCS:
                hits, predicted, referenced = counts["lcs"], prediction.lengths, reference.lengths
            else:
                n = rouge_type.n
                hits = counts[n]
                predicted = np.maximum(prediction.lengths - (n - 1), 0)
                referenced = np.maximum(reference.lengths - (n - 1), 0)
            if not multi.any():
                rows = self._values(hits, predicted, referenced)
            elif scorer.multi_reference == "average":   # counts pooled over the references
                rows = self._values(np.add.reduceat(hits, first), np.add.reduceat(predicted, first),
                                    np.add.reduceat(referenced, first))
            else:                                        # the reference with the highest F, the first on ties
                every = self._values(hits, predicted, referenced)
                best = np.maximum.reduceat(every[:, 2], first)
                owner = np.repeat(np.arange(len(items)), ref_counts[items])
                candidates = np.flatnonzero(every[:, 2] == best[owner])
                _, firsts = np.unique(owner[candidates], return_index=True)
                rows = every[candidates[firsts]]
            out[items, 3 * column:3 * column + 3] = rows

    def _values(self, hits, predicted, referenced) -> np.ndarray:
        precision, recall = _ratio(hits, predicted), _ratio(hits, referenced)
        return np.stack([precision, recall, _fmeasure(precision, recall, self._scorer.alpha)], axis=1)
