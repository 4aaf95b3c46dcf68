"""chrF values worked out by hand from the formulas (never taken from the code under test).

Per order n: precision P_n = matches / hypothesis n-grams, recall R_n = matches / reference
n-grams. sacrebleu's default (effective order) averages P and R over the orders where both sides
have n-grams, then chrF_beta = (1 + beta^2) P R / (beta^2 P + R). Whitespace is removed first.
"""
from __future__ import annotations

import pytest

from opik_metrics.text.chrf import CHRFScorer, chrf_from_statistics

approx = lambda x: pytest.approx(x, rel=1e-12, abs=1e-15)  # noqa: E731


def test_one_substituted_character():
    # "abc" vs "abd": 1-grams a b c / a b d -> 2 of 3 match; 2-grams ab bc / ab bd -> 1 of 2;
    # 3-grams abc / abd -> 0 of 1; no 4..6-grams. P = R per order: 2/3, 1/2, 0 -> both average
    # (2/3 + 1/2 + 0) / 3 = 7/18, and with P = R the F-score is P: 7/18.
    result = CHRFScorer().sentence_score("abc", "abd")
    assert result.statistics[:9] == (3, 3, 2, 2, 2, 1, 1, 1, 0)
    assert result.statistics[9:] == (0,) * 9
    assert result.score == approx(7 / 18)


def test_recall_weighs_beta_squared():
    # "ab" vs "abcd": 1-grams P = 2/2, R = 2/4; 2-grams P = 1/1, R = 1/3; 3-grams: none in the
    # hypothesis, so the order is left out. P = 1, R = (1/2 + 1/3) / 2 = 5/12.
    # chrF2 = 5 * 1 * 5/12 / (4 + 5/12) = 25/53; chrF1 = 2 * 5/12 / (1 + 5/12) = 10/17.
    assert CHRFScorer().sentence_score("ab", "abcd").score == approx(25 / 53)
    assert CHRFScorer(beta=1).sentence_score("ab", "abcd").score == approx(10 / 17)
    # beta = 0 is precision alone: P = 1
    assert CHRFScorer(beta=0).sentence_score("ab", "abcd").score == approx(1.0)


def test_whitespace_option():
    # Default: "a b" and "ab" are both "ab": a perfect match.
    assert CHRFScorer().sentence_score("a b", "ab").score == 1.0
    # whitespace=True: hypothesis 1-grams a, ' ', b against a, b -> P = 2/3, R = 1; 2-grams "a ",
    # " b" against "ab" -> P = R = 0; the hypothesis' 3-gram "a b" has no reference 3-gram, so it
    # counts as none (sacrebleu). P = (2/3 + 0)/2 = 1/3, R = (1 + 0)/2 = 1/2:
    # chrF2 = 5 * 1/3 * 1/2 / (4/3 + 1/2) = 5/11.
    result = CHRFScorer(whitespace=True).sentence_score("a b", "ab")
    assert result.statistics[6:9] == (0, 0, 0)
    assert result.score == approx(5 / 11)


def test_lowercase_option():
    assert CHRFScorer().sentence_score("AB", "ab").score == 0.0
    assert CHRFScorer(lowercase=True).sentence_score("AB", "ab").score == 1.0


def test_eps_smoothing_averages_every_order():
    # "ab" vs "ab": orders 1 and 2 score F = 1; orders 3..6 have no n-gram on either side, so
    # P = R = eps and F = 5 eps^2 / (5 eps) = eps. chrF = (2 + 4 eps) / 6 = 1/3.
    assert CHRFScorer(eps_smoothing=True).sentence_score("ab", "ab").score == approx(1 / 3)
    assert CHRFScorer().sentence_score("ab", "ab").score == 1.0           # effective order: 1


def test_chrf_plus_plus_word_ngrams_split_punctuation_like_sacrebleu():
    scorer = CHRFScorer(word_order=2)
    # one punctuation mark comes off a word's end, else off its start: '(hi)' -> '(hi', ')'
    assert scorer._words("Hello, world! (hi) 'x") == ["Hello", ",", "world", "!", "(hi", ")", "'", "x"]
    # "a b" vs "a c": characters as "ab" vs "ac": 1-grams 1/2 (P = R), 2-grams 0/1; words
    # a b / a c: 1/2; bigram "a b" vs "a c": 0/1. Four orders, P = R = (1/2 + 0 + 1/2 + 0)/4 = 1/4.
    result = scorer.sentence_score("a b", "a c")
    assert result.statistics[18:] == (2, 2, 1, 1, 1, 0)
    assert result.score == approx(1 / 4)


def test_the_best_reference_counts_and_ties_keep_the_first():
    scorer = CHRFScorer()
    result = scorer.sentence_score("abc", ["xyz", "abc"])
    assert (result.reference, result.score) == (1, 1.0)
    tie = scorer.sentence_score("abc", ["abd", "abe"])                    # both 7/18
    assert tie.reference == 0 and tie.score == approx(7 / 18)


def test_corpus_chrf_sums_statistics_and_is_not_the_mean():
    # ("ab", "ab") and ("abc", "abd"): summed 1-grams 4 of 5, 2-grams 2 of 3, 3-grams 0 of 1
    # (the first item has no 3-gram); P = R = (4/5 + 2/3 + 0) / 3 = 22/45. The mean of the
    # sentence scores would be (1 + 7/18) / 2 = 25/36.
    scorer = CHRFScorer()
    corpus = scorer.corpus_score(["ab", "abc"], ["ab", "abd"])
    assert corpus.statistics[:9] == (5, 5, 4, 3, 3, 2, 1, 1, 0)
    assert corpus.score == approx(22 / 45)
    assert chrf_from_statistics(list(corpus.statistics)) == approx(22 / 45)


def test_empty_texts_score_zero():
    scorer = CHRFScorer()
    assert scorer.sentence_score("", "abc").score == 0.0
    assert scorer.sentence_score("abc", "").score == 0.0
    assert scorer.sentence_score("", "").score == 0.0
    # no reference n-gram of an order: the hypothesis' n-grams of that order are not counted
    assert scorer.sentence_score("abc", "").statistics[:3] == (0, 0, 0)
