"""BLEU values worked out by hand from the formulas (never taken from the code under test)."""
from __future__ import annotations

import math

import pytest

from opik_metrics.text.bleu.scorer import BLEUResult, BLEUScorer, BLEUStats
from opik_metrics.text.bleu.formula import brevity_penalty

approx = lambda x: pytest.approx(x, rel=1e-12, abs=1e-15)  # noqa: E731


def test_clipped_unigram_precision_classic_example():
    # Papineni et al.: "the" x7 against "the cat is on the mat" ("the" twice in the reference).
    # p1 = min(7, 2) / 7 = 2/7; no bigram "the the" in the reference: p2 = 0.
    scorer = BLEUScorer(smooth_method="none", effective_order=False, weights=(1, 0, 0, 0))
    result = scorer.sentence_score("the the the the the the the", ["the cat is on the mat"])
    assert result.counts == (2, 0, 0, 0)
    assert result.totals == (7, 6, 5, 4)
    assert result.precisions[0] == approx(2 / 7)
    assert result.bp == 1.0  # c = 7 > r = 6
    assert result.score == approx(2 / 7)  # BP * p1 with weights (1, 0, 0, 0)
    # Uniform weights and no smoothing: p2 = 0 makes BLEU 0.
    assert BLEUScorer(smooth_method="none").sentence_score(
        "the the the the the the the", "the cat is on the mat").score == 0.0


def test_clipping_uses_the_maximum_count_over_references():
    # "the" x3: reference counts 1 and 2 -> clip at max = 2, p1 = 2/3.
    result = BLEUScorer().sentence_score("the the the", ["the cat", "the the dog"])
    assert result.counts[0] == 2
    assert result.precisions[0] == approx(2 / 3)


def test_brevity_penalty_for_a_short_hypothesis():
    # c = 3 tokens, r = 6: BP = exp(1 - 6/3) = exp(-1). Every n-gram of orders 1..3 matches
    # (3/3, 2/2, 1/1) and there is no 4-gram, so with effective order BLEU = BP * 1.
    result = BLEUScorer().sentence_score("the cat sat", ["the cat sat on the mat"])
    assert (result.sys_len, result.ref_len) == (3, 6)
    assert result.bp == approx(math.exp(-1))
    assert result.effective_order == 3
    assert result.totals == (3, 2, 1, 0)
    assert result.score == approx(math.exp(-1))
    # Without effective order the empty 4-gram order makes BLEU 0.
    assert BLEUScorer(effective_order=False).sentence_score("the cat sat", "the cat sat on the mat").score == 0.0


def test_brevity_penalty_function():
    assert brevity_penalty(10, 10) == 1.0
    assert brevity_penalty(12, 10) == 1.0
    assert brevity_penalty(5, 10) == approx(math.exp(1 - 10 / 5))
    assert brevity_penalty(0, 10) == 0.0


def test_closest_reference_length_ties_go_to_the_shorter():
    # c = 5; references of lengths 4 and 6 are both at distance 1 -> r = 4, so BP = 1.
    # (Had the longer won, BP would be exp(1 - 6/5).)
    for refs in (["a b c d", "a b c d e f"], ["a b c d e f", "a b c d"]):
        result = BLEUScorer().sentence_score("a b c d e", refs)
        assert result.ref_len == 4
        assert result.bp == 1.0
    # c = 3; lengths 1 and 5 tie at distance 2 -> r = 1; length 4 is closer still -> r = 4.
    assert BLEUScorer().sentence_score("a b c", ["a", "a b c d e"]).ref_len == 1
    assert BLEUScorer().sentence_score("a b c", ["a", "a b c d e", "x y z w"]).ref_len == 4


def test_weights_one_half_on_orders_one_and_two():
    # hyp "the cat sat on a mat" vs ref "the cat sat on the mat":
    # p1 = 5/6 (all but "a"); bigrams the-cat, cat-sat, sat-on match, on-a and a-mat do not: p2 = 3/5.
    # BP = 1 (6 = 6). BLEU = sqrt(p1 * p2) = sqrt(1/2).
    scorer = BLEUScorer(weights=(0.5, 0.5, 0, 0), smooth_method="none")
    result = scorer.sentence_score("the cat sat on a mat", "the cat sat on the mat")
    assert result.counts[:2] == (5, 3)
    assert result.score == approx(math.sqrt(0.5))


def test_weights_renormalised_over_the_orders_used():
    # 2-token hypothesis with effective order: orders 1 and 2 are used; weights (0.2, 0.2, 0.3, 0.3)
    # become (0.5, 0.5). hyp "the cat" vs ref "the cat": p1 = p2 = 1, BP = exp(1 - 2/2) = 1 -> 1.
    # hyp "cat dog" vs ref "the cat dog": p1 = 1, p2 = 1, BP = exp(1 - 3/2).
    scorer = BLEUScorer(weights=(0.2, 0.2, 0.3, 0.3))
    assert scorer.sentence_score("the cat", "the cat").score == approx(1.0)
    result = scorer.sentence_score("cat dog", "the cat dog")
    assert result.effective_order == 2
    assert result.score == approx(math.exp(1 - 3 / 2))
    # hyp "cat x" vs "the cat dog": p1 = 1/2, p2 = 0 -> exp smoothing: p2 = 1 / (2 * 1) = 1/2.
    # BLEU = BP * (1/2)^0.5 * (1/2)^0.5 = exp(1 - 3/2) / 2.
    assert scorer.sentence_score("cat x", "the cat dog").score == approx(math.exp(-0.5) / 2)


def test_zero_weight_orders_are_ignored_even_when_their_precision_is_zero():
    # weights (1, 0, 0, 0) and no smoothing: p2..p4 = 0 do not matter. "a c b" vs "a b c":
    # p1 = 3/3, BP = 1 -> 1.0, while uniform weights give 0.
    assert BLEUScorer(weights=(1, 0, 0, 0), smooth_method="none").sentence_score("a c b", "a b c").score == 1.0
    assert BLEUScorer(smooth_method="none").sentence_score("a c b", "a b c").score == 0.0


def test_smoothing_methods_by_hand():
    # hyp "a b c d" vs ref "a b x d": unigrams 3/4, bigrams "a b" 1/3, trigrams 0/2, 4-grams 0/1; BP = 1.
    hyp, ref = "a b c d", "a b x d"
    exp_ = BLEUScorer(smooth_method="exp").sentence_score(hyp, ref)
    # exp: the k-th order with no match gets 1 / (2^k * total): p3 = 1/(2*2), p4 = 1/(4*1).
    assert exp_.precisions == approx((3 / 4, 1 / 3, 1 / 4, 1 / 4))
    assert exp_.score == approx((3 / 4 * 1 / 3 * 1 / 4 * 1 / 4) ** 0.25)  # = (1/64)^(1/4)
    floor = BLEUScorer(smooth_method="floor").sentence_score(hyp, ref)  # default 0.1: p3 = 0.1/2, p4 = 0.1/1
    assert floor.precisions == approx((3 / 4, 1 / 3, 0.05, 0.1))
    assert floor.score == approx((3 / 4 * 1 / 3 * 0.05 * 0.1) ** 0.25)
    floor3 = BLEUScorer(smooth_method="floor", smooth_value=0.3).sentence_score(hyp, ref)
    assert floor3.score == approx((3 / 4 * 1 / 3 * 0.15 * 0.3) ** 0.25)
    addk = BLEUScorer(smooth_method="add-k").sentence_score(hyp, ref)  # k = 1 on orders >= 2
    assert addk.precisions == approx((3 / 4, 2 / 4, 1 / 3, 1 / 2))
    assert addk.score == approx(0.5)  # (3/4 * 1/2 * 1/3 * 1/2)^(1/4) = (1/16)^(1/4)
    assert addk.counts == (3, 1, 0, 0)  # raw counts, not smoothed
    none = BLEUScorer(smooth_method="none").sentence_score(hyp, ref)
    assert none.score == 0.0
    assert none.precisions == approx((3 / 4, 1 / 3, 0, 0))


def test_no_match_at_all_is_zero_whatever_the_smoothing():
    for method in ("none", "floor", "add-k", "exp"):
        result = BLEUScorer(smooth_method=method).sentence_score("x y z w", "a b c d")
        assert result.score == 0.0
        assert result.counts == (0, 0, 0, 0)
        assert result.precisions == (0.0, 0.0, 0.0, 0.0)


def test_empty_hypothesis_scores_zero():
    result = BLEUScorer().sentence_score("", ["the cat"])
    assert result.score == 0.0
    assert (result.sys_len, result.ref_len) == (0, 2)
    assert result.bp == 0.0
    assert result.totals == (0, 0, 0, 0)
    assert result.effective_order == 0


def test_perfect_match_is_exactly_one():
    result = BLEUScorer().sentence_score("the quick brown fox jumps", ["the quick brown fox jumps"])
    assert result.score == 1.0
    assert result.precisions == (1.0, 1.0, 1.0, 1.0)


def test_lowercase_then_tokenize():
    # lowercase=True: "The CAT." -> "the cat ." matches exactly (3 tokens, orders 1..3).
    assert BLEUScorer(lowercase=True).sentence_score("The CAT.", "the cat.").score == 1.0
    mixed = BLEUScorer().sentence_score("The CAT.", "the cat.")
    assert mixed.counts[0] == 1  # only "." matches


def test_character_and_chinese_tokenizers():
    # char: "abcd" vs "abce" -> characters a b c d: p1 = 3/4, p2 = 2/3, p3 = 1/2, p4 = 0 -> exp: 1/(2*1).
    result = BLEUScorer(tokenize="char").sentence_score("abcd", "abce")
    assert result.precisions == approx((3 / 4, 2 / 3, 1 / 2, 1 / 2))
    assert result.score == approx((3 / 4 * 2 / 3 * 1 / 2 * 1 / 2) ** 0.25)
    # zh: each CJK character is a token: 猫 在 垫 子 上 vs 猫 在 垫 子 -> c = 5 > r = 4, p1 = 4/5,
    # p2 = 3/4, p3 = 2/3, p4 = 1/2.
    result = BLEUScorer(tokenize="zh").sentence_score("猫在垫子上", "猫在垫子")
    assert result.counts == (4, 3, 2, 1)
    assert result.score == approx((4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25)


def test_corpus_bleu_is_not_the_mean_of_sentence_bleus():
    # max order 1 keeps the arithmetic small. Item 1: "a b c d" vs "a b c d" -> p1 = 4/4, BP = 1.
    # Item 2: "x y" vs "x z" -> p1 = 1/2, BP = 1. Mean of sentence BLEUs = (1 + 1/2) / 2 = 3/4;
    # corpus BLEU pools the counts: p1 = (4 + 1) / (4 + 2) = 5/6.
    scorer = BLEUScorer(max_ngram_order=1)
    hyps, refs = ["a b c d", "x y"], ["a b c d", "x z"]
    sentence = [scorer.sentence_score(h, r).score for h, r in zip(hyps, refs)]
    assert sentence == approx([1.0, 0.5])
    corpus = scorer.corpus_score(hyps, refs)
    assert corpus.score == approx(5 / 6)
    assert corpus.score != approx(sum(sentence) / 2)
    stats = scorer.stats(hyps[0], refs[0]) + scorer.stats(hyps[1], refs[1])
    assert stats == BLEUStats(correct=(5,), total=(6,), sys_len=6, ref_len=6)
    assert scorer.compute(stats, sentence=False) == corpus


def test_corpus_on_realistic_pairs_equals_compute_of_summed_stats():
    from tests.corpus import realistic_pairs

    preds, golds = realistic_pairs(20, seed=4)
    scorer = BLEUScorer()
    corpus = scorer.corpus_score(preds, golds)
    summed = sum(scorer.stats(h, [r]) for h, r in zip(preds, golds))
    assert scorer.compute(summed, sentence=False) == corpus
    mean = sum(scorer.sentence_score(h, [r]).score for h, r in zip(preds, golds)) / len(preds)
    assert abs(corpus.score - mean) > 1e-3  # pooled statistics, not an average


def test_stats_addition():
    a = BLEUStats((3, 2, 1, 0), (4, 3, 2, 1), 4, 5)
    b = BLEUStats((1, 1, 0, 0), (2, 1, 0, 0), 2, 2)
    assert a + b == BLEUStats((4, 3, 1, 0), (6, 4, 2, 1), 6, 7)
    assert sum([a, b]) == a + b  # sum() starts from 0
    with pytest.raises(ValueError, match="order"):
        a + BLEUStats((1,), (1,), 1, 1)
    with pytest.raises(TypeError):
        a + 1


def test_sentence_and_corpus_effective_order_defaults():
    # 3-token hypothesis, exact match: sentence (effective order) 1.0, corpus (no effective order)
    # 0 because the 4-gram order is empty.
    scorer = BLEUScorer()
    assert scorer.sentence_score("a b c", "a b c").score == 1.0
    assert scorer.corpus_score(["a b c"], ["a b c"]).score == 0.0
    stats = scorer.stats("a b c", "a b c")
    assert scorer.compute(stats, sentence=True).score == 1.0
    assert scorer.compute(stats, sentence=False).score == 0.0
    assert BLEUScorer(effective_order=True).corpus_score(["a b c"], ["a b c"]).score == 1.0
    assert BLEUScorer(effective_order=False).sentence_score("a b c", "a b c").score == 0.0


def test_result_type():
    result = BLEUScorer().sentence_score("a b", "a b")
    assert isinstance(result, BLEUResult)
    with pytest.raises(AttributeError):
        result.score = 0.5  # frozen
