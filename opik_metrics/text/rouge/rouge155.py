"""ROUGE-1.5.5 mode: the numbers the ROUGE-1.5.5 perl script prints for one pair.

``RougeScorer(..., rouge155=True)`` gives, per item, what ``ROUGE-1.5.5.pl -a -n N -w 1.2 -2 d -u
-c 95 -r 1 -p 0.5 -t 0 [-f A|B] [-s] [-m] -d`` prints for that pair on its ``Eval`` line (read the
per-evaluation ``-d`` lines: the script's ``Average_*`` lines are bootstrap-resample means, not the
mean over pairs). Texts are read as the script reads SPL files: one sentence per line.

What maps to what:

==================  =====================================================================
ours                the script
==================  =====================================================================
rouge1 .. rouge9    ROUGE-1 .. ROUGE-9 (``-n 9``), over the whole text
rougeLsum           ROUGE-L: sentence by sentence (lines), union LCS, clipped hits
rougeL              refused: the script has no ROUGE-L of a text taken as one sentence other
                    than rougeLsum of that text written on one line, a number no paper reports
rougeW              ROUGE-W-1.2 (``-w``; weight = ``wlcs_weight``), sentence by sentence
rougeS<d>           ROUGE-S<d> (``-2 d``), over the whole text
rougeSU<d>          ROUGE-SU<d> (``-2 d -u``)
rougeS / rougeSU    ROUGE-S* / ROUGE-SU* (``-2 -1``: no gap limit)
alpha / beta        ``-p alpha`` (beta: alpha = 1 / (1 + beta**2)); default ``-p 0.5``
multi_reference     ``"average"`` = ``-f A`` (the script's own default), ``"best"`` = ``-f B``,
                    ``"mean"`` = the mean over the references of the script's P, R and F for
                    each reference alone (printed values: 5 decimals each, the mean not rounded)
remove_stopwords    ``-s`` (the SMART list, as in the default mode)
use_stemmer         ``-m``: WordNet 2.0's exception lists, then the script's Porter stemmer
                    (``rouge155_stemmer="porter"``: ``-m`` with an empty exception database;
                    see tokenizers/rouge155_stemmer.py)
==================  =====================================================================

How the script computes them (and this module with it, operation for operation):

- Tokens: see ``opik_metrics.text.tokenizers.rouge155``.
- R = hits / (reference count), P = hits / (prediction count), each rounded to 5 decimals
  (``sprintf "%7.5f"``); F = P*R / ((1-alpha)*P + alpha*R) from the *rounded* P and R, rounded.
- ROUGE-N and S: rouge-score's counts (clipped matches; n-gram / skip-bigram totals).
- ROUGE-SU: skip-bigrams plus the unigrams of every token *but the last* (the script adds the
  unigram of token i inside its loop over pair starts i < len - 1), on both sides.
- ROUGE-L: for each reference sentence, the positions in any LCS with a prediction sentence
  (the union LCS); a marked token is a hit while both texts still have an unused copy of it.
- ROUGE-W: the same union over weighted-LCS paths (the script's own DP and tie-breaking); the
  hits are the runs of consecutive marked positions *in the reference sentence*, each run of
  length k worth f(k) = k**w. P = f^-1(hits / f(n)), but R = f^-1(hits / f(sum_i f(m_i))) with
  m_i the reference sentence lengths: the reference length is weighted twice.
- ``-f A``: hits and both counts are added over the references, then divided.
  ``-f B``: the reference with the highest recall, the first on ties; "recall" here is the
  5-decimal rounded R for N, S and SU, the unrounded LCS recall for L, and
  f^-1(hits / sum_i f(m_i)) for W (weighted once, unlike the R it reports).
- A reference without tokens scores 0 here; the script dies on it in ROUGE-W (division by zero).

Worked example (w = 2, so f(k) = k**2; reference "police killed the gunman", prediction
"police kill the gunman"; 4 tokens each)::

    WLCS marks police, the, gunman in the reference: runs "police" (1) and "the gunman" (2),
    hits = f(1) + f(2) = 1 + 4 = 5.
    default rougeW:  P = R = sqrt(5 / f(4)) = sqrt(5/16) = 0.55902
    rouge155 rougeW: P = sqrt(5 / f(4)) = 0.55902, R = sqrt(5 / f(f(4))) = sqrt(5/256) = 0.13975

    rougeSU (any gap): 6 skip-bigrams a side, 3 of them shared (police-the, police-gunman,
    the-gunman).
    default:  unigrams 4 a side, 3 shared       -> (3 + 3) / (6 + 4) = 0.6
    rouge155: unigrams of the first 3 tokens, "police killed the" / "police kill the",
              2 shared                          -> (3 + 2) / (6 + 3) = 5/9 = 0.55556
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

from opik_metrics.text.rouge.counts import Counts, Score, pool
from opik_metrics.text.rouge.per_item import (PreparedText, clipped_overlap, mean_values, ngram_counts, ngram_measure,
                                              skip_bigram_measure, skip_bigram_total, summary_lcs_measure)
from opik_metrics.text.rouge.types import NGRAM, SKIP_BIGRAM, SUMMARY_LCS, WEIGHTED_LCS, RougeType

__all__ = ["Rouge155Engine", "ScriptText", "script_f", "script_round", "weighted_union_hits"]

_DIAGONAL, _UP, _LEFT = 0, 1, 2


def script_round(value: float) -> float:
    """``sprintf("%7.5f", value)`` read back as a number: the value rounded to 5 decimals."""
    return float(f"{value:.5f}")


def script_f(precision: float, recall: float, alpha: float) -> float:
    """The script's F from (rounded) P and R: P*R / ((1-alpha)*P + alpha*R), rounded; 0 if that is 0/0."""
    denominator = (1 - alpha) * precision + alpha * recall
    return script_round(precision * recall / denominator) if denominator > 0 else 0.0


class ScriptText(PreparedText):
    """A prepared text with the unigrams ROUGE-SU counts in the script: every token but the last."""

    __slots__ = ()

    def leading_unigrams(self) -> dict:
        found = self._cache.get("leading")
        if found is None:
            found = self._cache["leading"] = ngram_counts(self.tokens[:-1], 1)
        return found


def _powers(weight: float, largest: int) -> list:
    """f(k) = k**weight for k = 0..largest, as the script computes it (``$r**$power``)."""
    return [k ** weight for k in range(largest + 1)]


def _mark_weighted_lcs(model: Sequence, peer: Sequence, mask: list, power: list) -> None:
    """The script's ``wlcs_inner`` + ``markLCS``: set ``mask[i]`` for each model position on its WLCS path.

    c[i][j] = c[i-1][j-1] + f(k+1) - f(k) on a match (k: the run ending at i-1, j-1), else the upper
    cell when it is >= the left one, else the left one; the walk back follows those moves. The sums
    are done in the script's order, so that ties resolve exactly as there.
    """
    columns = len(peer)
    score_above = [0.0] * (columns + 1)
    run_above = [0] * (columns + 1)
    moves = []
    for token in model:
        score_row = [0.0] * (columns + 1)
        run_row = [0] * (columns + 1)
        move = bytearray(columns + 1)
        for j in range(1, columns + 1):
            if token == peer[j - 1]:
                k = run_above[j - 1]
                score_row[j] = score_above[j - 1] + power[k + 1] - power[k]
                run_row[j] = k + 1
            elif score_above[j] >= score_row[j - 1]:
                score_row[j] = score_above[j]
                move[j] = _UP
            else:
                score_row[j] = score_row[j - 1]
                move[j] = _LEFT
        moves.append(move)
        score_above, run_above = score_row, run_row
    i, j = len(model), columns
    while i and j:
        step = moves[i - 1][j]
        if step == _DIAGONAL:
            i -= 1
            j -= 1
            mask[i] = True
        elif step == _UP:
            i -= 1
        else:
            j -= 1


def weighted_union_hits(reference_sentences: Sequence[list], candidate_sentences: Sequence[list],
                        weight: float) -> tuple:
    """(hits, base) of the script's ``wlcs`` for one reference: hits = sum of f(run) over runs of
    marked reference positions, base = sum of f(sentence length) over reference sentences.

    A marked position counts while both texts still have an unused copy of its token (the clip). As
    in the script, a run is closed only at a passing position followed by an unmarked one or by the
    sentence end; a marked position that fails the clip neither counts nor closes the run.
    """
    left_in_reference: Counter = Counter()
    left_in_candidate: Counter = Counter()
    for sentence in reference_sentences:
        left_in_reference.update(sentence)
    for sentence in candidate_sentences:
        left_in_candidate.update(sentence)
    longest = max((len(s) for s in reference_sentences), default=0)
    power = _powers(weight, longest + 1)
    hits = 0
    base = 0
    for sentence in reference_sentences:
        size = len(sentence)
        base += len(sentence) ** weight
        if not size:
            continue
        mask = [False] * size
        vocabulary = set(sentence)
        for candidate in candidate_sentences:
            if not vocabulary.isdisjoint(candidate):
                _mark_weighted_lcs(sentence, candidate, mask, power)
        run = 0
        for j, token in enumerate(sentence):
            if mask[j] and left_in_reference[token] > 0 and left_in_candidate[token] > 0:
                run += 1
                if j + 1 == size or not mask[j + 1]:
                    hits += power[run]
                    run = 0
                left_in_reference[token] -= 1
                left_in_candidate[token] -= 1
    return hits, base


# A measure gives the counts one reference contributes and its "recall" for ``-f B``.
Measure = Callable[[ScriptText, ScriptText], tuple]


def _ratio(counts: Counts) -> float:
    return counts.hits / counts.reference_total if counts.reference_total else 0.0


def _rounded_recall(plain_measure) -> Measure:
    """ROUGE-N / S: the default counts; -f B compares the 5-decimal recall (``ngramScore``)."""
    def measure(prediction: ScriptText, reference: ScriptText) -> tuple:
        counts = plain_measure(prediction, reference)
        return counts, script_round(_ratio(counts))
    return measure


def _plain_recall(plain_measure) -> Measure:
    """ROUGE-L: the default union-LCS counts; -f B compares the unrounded recall (``lcs``)."""
    def measure(prediction: ScriptText, reference: ScriptText) -> tuple:
        counts = plain_measure(prediction, reference)
        return counts, _ratio(counts)
    return measure


def _skip_unigram_measure(max_skip) -> Measure:
    """ROUGE-SU as the script counts it: skip-bigrams plus the unigrams of all tokens but the last."""
    def measure(prediction: ScriptText, reference: ScriptText) -> tuple:
        hits = clipped_overlap(prediction.skip_bigrams(max_skip), reference.skip_bigrams(max_skip))
        hits += clipped_overlap(prediction.leading_unigrams(), reference.leading_unigrams())
        counts = Counts(
            hits,
            skip_bigram_total(prediction.tokens, max_skip) + max(len(prediction.tokens) - 1, 0),
            skip_bigram_total(reference.tokens, max_skip) + max(len(reference.tokens) - 1, 0),
        )
        return counts, script_round(_ratio(counts))
    return measure


def _weighted_lcs_measure(weight: float) -> Measure:
    """ROUGE-W as the script counts it: (hits, f(n), f(base)); -f B compares f^-1(hits / base)."""
    def measure(prediction: ScriptText, reference: ScriptText) -> tuple:
        hits, base = weighted_union_hits(reference.sentences(), prediction.sentences(), weight)
        counts = Counts(hits, len(prediction.tokens) ** weight, base ** weight)
        return counts, (hits / base) ** (1 / weight) if base else 0.0
    return measure


def build_script_measure(rouge_type: RougeType, weight: float) -> tuple:
    """(measure, root) for one ROUGE type in ROUGE-1.5.5 mode; root: the f^-1 exponent (W) or 1."""
    kind = rouge_type.kind
    if kind == NGRAM:
        return _rounded_recall(ngram_measure(rouge_type.n)), 1.0
    if kind == SUMMARY_LCS:
        return _plain_recall(summary_lcs_measure), 1.0
    if kind == WEIGHTED_LCS:
        return _weighted_lcs_measure(weight), weight
    if kind == SKIP_BIGRAM:
        if rouge_type.with_unigrams:
            return _skip_unigram_measure(rouge_type.max_skip), 1.0
        return _rounded_recall(skip_bigram_measure(rouge_type.max_skip, False)), 1.0
    raise ValueError(f"no ROUGE-1.5.5 measure for ROUGE type {rouge_type.name!r}")


def script_score(counts: Counts, alpha: float, root: float = 1.0) -> Score:
    """R and P as the script prints them (f^-1 for W, 5 decimals) and F from those rounded values."""
    hits, prediction_total, reference_total = counts
    if root == 1.0:
        recall = script_round(hits / reference_total) if reference_total else 0.0
        precision = script_round(hits / prediction_total) if prediction_total else 0.0
    else:
        recall = script_round((hits / reference_total) ** (1 / root)) if reference_total else 0.0
        precision = script_round((hits / prediction_total) ** (1 / root)) if prediction_total else 0.0
    return Score(precision, recall, script_f(precision, recall, alpha))


class Rouge155Engine:
    """Scores one prediction against its references the way ROUGE-1.5.5.pl scores one evaluation."""

    def __init__(self, rouge_types: Sequence[RougeType], tokenize: Callable[[str], list], *,
                 alpha: float = 0.5, weight: float = 1.2, multi_reference: str = "best"):
        self._tokenize = tokenize
        self._alpha = float(alpha)
        self._multi_reference = multi_reference
        self._measures = [(rouge_type.name, *build_script_measure(rouge_type, weight))
                          for rouge_type in rouge_types]

    def score(self, prediction: str, references: Sequence[str]) -> dict:
        """``{rouge type: Score}`` for one prediction and a non-empty list of references."""
        tokenize = self._tokenize
        prepared = ScriptText(prediction, tokenize)
        targets = [ScriptText(reference, tokenize) for reference in references]
        result = {}
        for name, measure, root in self._measures:
            per_reference = [measure(prepared, target) for target in targets]
            if self._multi_reference == "best":
                counts, best = per_reference[0]
                for candidate, recall in per_reference[1:]:
                    if recall > best:  # strictly: the first reference wins ties, as in the script
                        counts, best = candidate, recall
            elif self._multi_reference == "mean":
                result[name] = Score(*mean_values([script_score(c, self._alpha, root) for c, _ in per_reference]))
                continue
            else:
                counts = pool(c for c, _ in per_reference)
            result[name] = script_score(counts, self._alpha, root)
        return result
