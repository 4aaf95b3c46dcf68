"""TER values worked out by hand from the definition (never taken from the code under test).

TER = (fewest insertions + deletions + substitutions + block shifts turning the hypothesis into
a reference) / mean reference length in words. sacrebleu lowercases by default and splits on
whitespace; with no reference word TER is 1 if there is any edit, else 0.
"""
from __future__ import annotations

import pytest

from opik_metrics.text.ter import TERScorer, ter_from_statistics, translation_edit_rate

approx = lambda x: pytest.approx(x, rel=1e-12, abs=1e-15)  # noqa: E731


def test_one_substitution():
    # the cat sat on [the -> a] mat: 1 edit over 6 reference words
    result = TERScorer().sentence_score("the cat sat on the mat", "the cat sat on a mat")
    assert (result.num_edits, result.ref_length) == (1, 6)
    assert result.score == approx(1 / 6)


def test_a_block_shift_is_one_edit():
    # "a b c d" -> "c d a b": moving the block "c d" to the front is 1 shift, then no edit.
    # Without shifts it would take 4 substitutions.
    assert translation_edit_rate("a b c d".split(), "c d a b".split()) == (1, 4)
    assert TERScorer().sentence_score("a b c d", "c d a b").score == approx(1 / 4)


def test_ter_has_no_upper_bound():
    # "a b c d" -> "x": one substitution and three deletions over one reference word
    assert TERScorer().sentence_score("a b c d", "x").score == approx(4.0)


def test_case_and_tokenisation_options():
    assert TERScorer().sentence_score("The Cat", "the cat").score == 0.0
    assert TERScorer(case_sensitive=True).sentence_score("The Cat", "the cat").score == approx(1.0)   # 2 subs / 2
    # one token "hello,world" against two: a substitution and an insertion, 2 / 2
    assert TERScorer().sentence_score("hello,world", "hello world").score == approx(1.0)
    # normalized splits off the comma: hello , world against hello world, one deletion, 1 / 2
    assert TERScorer(normalized=True).sentence_score("hello,world", "hello world").score == approx(0.5)
    # no_punct removes the punctuation: no edit
    assert TERScorer(no_punct=True).sentence_score("hello, world.", "hello world").score == 0.0


def test_several_references_fewest_edits_over_the_mean_length():
    # "a b c" against "a b c d e f" (3 insertions) and "a x c" (1 substitution): 1 edit over the
    # mean reference length (6 + 3) / 2 = 4.5
    result = TERScorer().sentence_score("a b c", ["a b c d e f", "a x c"])
    assert (result.num_edits, result.ref_length, result.reference) == (1, 4.5, 1)
    assert result.score == approx(2 / 9)


def test_empty_texts():
    scorer = TERScorer()
    assert scorer.sentence_score("", "a b c").score == approx(1.0)      # 3 insertions / 3
    assert scorer.sentence_score("a b", "").score == 1.0                # edits over no words: 1
    assert scorer.sentence_score("", "").score == 0.0                   # no edit, no word: 0
    assert (scorer.sentence_score("a b", "").num_edits, scorer.sentence_score("a b", "").ref_length) == (2, 0)


def test_corpus_ter_sums_edits_and_lengths_and_is_not_the_mean():
    # ("a b" vs "a c": 1 edit / 2) and ("x y z w" vs itself: 0 / 4) -> 1 / 6; mean would be 1/4
    corpus = TERScorer().corpus_score(["a b", "x y z w"], ["a c", "x y z w"])
    assert (corpus.num_edits, corpus.ref_length) == (1, 6)
    assert corpus.score == approx(1 / 6)
    assert ter_from_statistics([1, 6]) == approx(1 / 6)
    assert ter_from_statistics([2, 0]) == 1.0 and ter_from_statistics([0, 0]) == 0.0
