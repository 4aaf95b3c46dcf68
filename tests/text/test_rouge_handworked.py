"""Values worked out by hand from the formulas and Lin (2004)'s examples (never from the code under test)."""
from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import pytest

from opik_metrics.text.rouge.scorer import RougeScorer, Score
from opik_metrics.text.rouge.per_item import skip_bigram_counts, skip_bigram_total


def approx_score(precision, recall, fmeasure):
    return pytest.approx((precision, recall, fmeasure), rel=1e-12, abs=1e-15)


def as_tuple(score: Score) -> tuple:
    return (score.precision, score.recall, score.fmeasure)


def f1(precision, recall):
    return 2 * precision * recall / (precision + recall)


# --- ROUGE-W (Lin 2004, section 3.3, f(k) = k**2) ------------------------------------------------

def test_rouge_w_lin_example_consecutive_run():
    # X = A B C D E F G (reference, m = 7), Y1 = A B C D H I K: one run of 4 -> WLCS = f(4) = 16.
    # R = f^-1(16 / f(7)) = sqrt(16/49) = 4/7; P (n = 7) is the same.
    scorer = RougeScorer(["rougeW"], wlcs_weight=2)
    score = scorer.score("A B C D H I K", "A B C D E F G")["rougeW"]
    assert as_tuple(score) == approx_score(4 / 7, 4 / 7, 4 / 7)


def test_rouge_w_lin_example_scattered_matches():
    # Y2 = A H B K C I D: four runs of length 1 -> WLCS = 4 * f(1) = 4, R = sqrt(4/49) = 2/7.
    scorer = RougeScorer(["rougeW"], wlcs_weight=2)
    score = scorer.score("A H B K C I D", "A B C D E F G")["rougeW"]
    assert as_tuple(score) == approx_score(2 / 7, 2 / 7, 2 / 7)


def test_rouge_w_unequal_lengths_default_weight():
    # Reference "a b c d" (m = 4), prediction "a b x" (n = 3), w = 1.2: one run of 2 -> WLCS = 2**1.2.
    # R = (2**1.2 / 4**1.2) ** (1/1.2) = 1/2, P = (2**1.2 / 3**1.2) ** (1/1.2) = 2/3.
    score = RougeScorer(["rougeW"]).score("a b x", "a b c d")["rougeW"]
    assert as_tuple(score) == approx_score(2 / 3, 1 / 2, f1(2 / 3, 1 / 2))


def test_rouge_w_prefers_consecutive_matches_over_rouge_l():
    # Both predictions have LCS 4 with the reference, so rougeL cannot tell them apart; rougeW can.
    scorer = RougeScorer(["rougeL", "rougeW"], wlcs_weight=2)
    together = scorer.score("A B C D H I K", "A B C D E F G")
    apart = scorer.score("A H B K C I D", "A B C D E F G")
    assert together["rougeL"] == apart["rougeL"]
    assert together["rougeW"].recall > apart["rougeW"].recall


# --- ROUGE-S / ROUGE-SU (Lin 2004, section 5) ---------------------------------------------------

LIN_REFERENCE = "police killed the gunman"  # skip-bigrams: 4*3/2 = 6


@pytest.mark.parametrize("prediction, hits", [
    ("police kill the gunman", 3),      # police-the, police-gunman, the-gunman
    ("the gunman kill police", 1),      # the-gunman
    ("the gunman police killed", 2),    # the-gunman, police-killed
    ("gunman the killed police", 0),    # every pair in reverse order
])
def test_rouge_s_lin_examples(prediction, hits):
    score = RougeScorer(["rougeS"], beta=1).score(prediction, LIN_REFERENCE)["rougeS"]
    assert as_tuple(score) == approx_score(hits / 6, hits / 6, hits / 6)


def test_rouge_su_credits_reversed_sentence():
    # "gunman the killed police": 0 skip-bigram hits of 6, but 4 unigram hits of 4.
    # SU pools them: (0 + 4) / (6 + 4) = 0.4 for both P and R (same length), so F = 0.4.
    score = RougeScorer(["rougeSU"]).score("gunman the killed police", LIN_REFERENCE)["rougeSU"]
    assert as_tuple(score) == approx_score(0.4, 0.4, 0.4)


def test_skip_distance_limit():
    # Prediction "a b c d": pairs with gap 1 (ab bc cd), gap 2 (ac bd), gap 3 (ad). Reference "a d": 1 pair.
    scorer = RougeScorer(["rougeS0", "rougeS1", "rougeS2", "rougeS", "rougeSU1"])
    scores = scorer.score("a b c d", "a d")
    assert as_tuple(scores["rougeS0"]) == (0.0, 0.0, 0.0)   # 3 adjacent pairs, "a d" not among them
    assert as_tuple(scores["rougeS1"]) == (0.0, 0.0, 0.0)   # 5 pairs; "a d" has 2 words between
    assert as_tuple(scores["rougeS2"]) == approx_score(1 / 6, 1, f1(1 / 6, 1))
    assert as_tuple(scores["rougeS"]) == approx_score(1 / 6, 1, f1(1 / 6, 1))
    # SU1: 0 pair hits + 2 unigram hits; totals 5 + 4 (prediction), 1 + 2 (reference).
    assert as_tuple(scores["rougeSU1"]) == approx_score(2 / 9, 2 / 3, f1(2 / 9, 2 / 3))


def test_skip_bigram_counts_with_repeats_are_clipped():
    # Prediction "a a b": pairs aa, ab, ab (3). Reference "a b b": ab, ab, bb (3). Clipped hits: ab x2.
    score = RougeScorer(["rougeS"]).score("a a b", "a b b")["rougeS"]
    assert as_tuple(score) == approx_score(2 / 3, 2 / 3, 2 / 3)


def _brute_force_pairs(tokens, max_skip):
    return Counter((tokens[i], tokens[j]) for i, j in itertools.combinations(range(len(tokens)), 2)
                   if max_skip is None or j - i - 1 <= max_skip)


def test_skip_bigram_counts_match_brute_force():
    rng = random.Random(3)
    for _ in range(300):
        tokens = rng.choices("abcde", k=rng.randint(0, 25))
        for max_skip in (None, 0, 1, 2, 4, 30):
            expected = _brute_force_pairs(tokens, max_skip)
            assert skip_bigram_counts(tokens, max_skip) == expected
            assert skip_bigram_total(tokens, max_skip) == sum(expected.values())


def test_rouge_s0_equals_rouge2_on_random_inputs():
    rng = random.Random(12)
    scorer = RougeScorer(["rouge2", "rougeS0"])
    for _ in range(300):
        prediction = " ".join(rng.choices("abcdef", k=rng.randint(0, 30)))
        reference = " ".join(rng.choices("abcdef", k=rng.randint(0, 30)))
        scores = scorer.score(prediction, reference)
        assert scores["rougeS0"] == scores["rouge2"]


# --- ROUGE-Lsum (Lin 2004, section 3.2) ---------------------------------------------------------

def test_rouge_lsum_union_lcs_lin_example():
    # r = w1 w2 w3 w4 w5; c1 = w1 w2 w6 w7 w8, c2 = w1 w3 w8 w9 w5.
    # LCS(r, c1) = w1 w2, LCS(r, c2) = w1 w3 w5, union = w1 w2 w3 w5: 4 hits.
    # R = 4/5, P = 4/10, F = 2 * 0.32 / 1.2 = 8/15.
    score = RougeScorer(["rougeLsum"]).score("w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5",
                                             "w1 w2 w3 w4 w5")["rougeLsum"]
    assert as_tuple(score) == approx_score(4 / 10, 4 / 5, 8 / 15)


# --- F-measure options ----------------------------------------------------------------------------

# Prediction "a b c d", reference "a b e": 2 unigram hits, P = 2/4 = 1/2, R = 2/3.
P, R = 1 / 2, 2 / 3


@pytest.mark.parametrize("options, expected_f", [
    ({}, 4 / 7),                       # 2PR/(P+R) = (2/3) / (7/6)
    ({"alpha": 0.5}, 4 / 7),
    ({"beta": 1}, 4 / 7),
    ({"alpha": 0.25}, 8 / 13),         # PR / (0.75P + 0.25R) = (1/3) / (13/24)
    ({"beta": 2}, 5 / 8),              # 5PR / (4P + R) = (5/3) / (8/3)
    ({"alpha": 0.2}, 5 / 8),           # beta = 2 is alpha = 1/(1+4)
    ({"alpha": 1}, P),
    ({"alpha": 0}, R),
    ({"beta": 0}, P),
    ({"beta": math.inf}, R),
])
def test_f_measure_alpha_beta(options, expected_f):
    score = RougeScorer(["rouge1"], **options).score("a b c d", "a b e")["rouge1"]
    assert as_tuple(score) == approx_score(P, R, expected_f)


def test_f_measure_zero_when_nothing_matches():
    for options in ({}, {"alpha": 0.3}, {"beta": 3}):
        score = RougeScorer(["rouge1"], **options).score("x y", "a b")["rouge1"]
        assert as_tuple(score) == (0.0, 0.0, 0.0)


# --- several references ---------------------------------------------------------------------------

PREDICTION = "the cat sat on the mat"
REFERENCES = ["the cat sat", "a dog sat on a mat"]


def test_multi_reference_average_pools_counts():
    # rouge1: ref 1 -> 3 hits (the, cat, sat), totals 6 / 3; ref 2 -> 3 hits (sat, on, mat), totals 6 / 6.
    # Pooled: P = 6/12, R = 6/9. rougeL has the same LCS lengths (3 and 3), so the same numbers.
    scores = RougeScorer(["rouge1", "rougeL"], multi_reference="average").score(PREDICTION, REFERENCES)
    for rouge_type in ("rouge1", "rougeL"):
        assert as_tuple(scores[rouge_type]) == approx_score(1 / 2, 2 / 3, 4 / 7)


def test_multi_reference_best_picks_highest_f():
    # ref 1: P 1/2, R 1, F 2/3; ref 2: P 1/2, R 1/2, F 1/2 -> ref 1.
    score = RougeScorer(["rouge1"]).score(PREDICTION, REFERENCES)["rouge1"]
    assert as_tuple(score) == approx_score(1 / 2, 1, 2 / 3)


def test_multi_reference_average_rouge_w_pools_before_inverse():
    # w = 2, prediction "a b c". Ref "a b c": WLCS 9, f(n) 9, f(m) 9. Ref "c": WLCS 1, f(n) 9, f(m) 1.
    # Pooled: P = sqrt(10/18), R = sqrt(10/10) = 1.
    scorer = RougeScorer(["rougeW"], wlcs_weight=2, multi_reference="average")
    score = scorer.score("a b c", ["a b c", "c"])["rougeW"]
    precision = math.sqrt(10 / 18)
    assert as_tuple(score) == approx_score(precision, 1.0, f1(precision, 1.0))


def test_multi_reference_mean_averages_each_references_p_r_f():
    # rouge1: ref 1 "the cat sat": 3 hits, P 3/6, R 3/3, F 2/3; ref 2 "a dog sat on a mat": 3 hits
    # (sat, on, mat), P 3/6, R 3/6, F 1/2. Mean: P 1/2, R 3/4, F (2/3 + 1/2)/2 = 7/12 -- not the F of
    # the mean P and R (2 * 1/2 * 3/4 / (5/4) = 3/5), nor "average"'s pooled (1/2, 2/3, 4/7).
    score = RougeScorer(["rouge1"], multi_reference="mean").score(PREDICTION, REFERENCES)["rouge1"]
    assert as_tuple(score) == approx_score(1 / 2, 3 / 4, 7 / 12)
    # rouge2: ref 1: bigrams the-cat, cat-sat match, of 5 / 2: P 2/5, R 1, F 4/7; ref 2: only sat-on, of
    # 5 / 5: P = R = F = 1/5. Mean: P 3/10, R 3/5, F (4/7 + 1/5)/2 = 27/70.
    score = RougeScorer(["rouge2"], multi_reference="mean").score(PREDICTION, REFERENCES)["rouge2"]
    assert as_tuple(score) == approx_score(3 / 10, 3 / 5, 27 / 70)
    # rougeW, w = 2, prediction "a b c": ref "a b c": P = R = 1; ref "c": P = sqrt(1/9), R = 1,
    # F = 2 * (1/3) / (4/3) = 1/2. Mean: P 2/3, R 1, F 3/4 (each reference's own f^-1 first).
    score = RougeScorer(["rougeW"], wlcs_weight=2, multi_reference="mean").score("a b c", ["a b c", "c"])["rougeW"]
    assert as_tuple(score) == approx_score(2 / 3, 1.0, 3 / 4)
    # one reference: the same as the other modes
    one = RougeScorer(["rouge1", "rougeL"], multi_reference="mean").score(PREDICTION, REFERENCES[:1])
    assert one == RougeScorer(["rouge1", "rougeL"]).score(PREDICTION, REFERENCES[:1])
    assert RougeScorer(multi_reference="mean").signature().fields["multi"] == "mean"


def test_multi_reference_with_one_empty_reference():
    # Average: the empty reference adds 0 hits, its 2 prediction tokens and 0 reference tokens.
    # rouge1: hits 2, P = 2/4, R = 2/2.  Best: the non-empty one, P = R = 1.
    average = RougeScorer(["rouge1"], multi_reference="average").score("a b", ["", "a b"])["rouge1"]
    assert as_tuple(average) == approx_score(1 / 2, 1, 2 / 3)
    best = RougeScorer(["rouge1"]).score("a b", ["", "a b"])["rouge1"]
    assert as_tuple(best) == (1.0, 1.0, 1.0)


# --- degenerate inputs, stopwords, Unicode ----------------------------------------------------------

ALL_TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum", "rougeW", "rougeS4", "rougeSU4", "rougeS", "rougeSU"]


@pytest.mark.parametrize("prediction, reference", [("", "a b"), ("a b", ""), ("!!!", "a b"), ("a b", "?")])
def test_empty_side_scores_zero(prediction, reference):
    scores = RougeScorer(ALL_TYPES).score(prediction, reference)
    assert all(as_tuple(scores[t]) == (0.0, 0.0, 0.0) for t in ALL_TYPES)


def test_identical_texts_score_one():
    scores = RougeScorer(ALL_TYPES).score("one two three four five", "one two three four five")
    for rouge_type in ALL_TYPES:
        assert as_tuple(scores[rouge_type]) == approx_score(1, 1, 1), rouge_type


def test_remove_stopwords_before_scoring():
    scorer = RougeScorer(["rouge1"], remove_stopwords=True)
    assert scorer.tokenizer("The cat is on the mat") == ["cat", "mat"]
    # Without stopwords: 1 hit ("mat") of 2 and 1 tokens; with them, the function words would match.
    assert as_tuple(scorer.score("the cat is on the mat", "a mat")["rouge1"]) == approx_score(1 / 2, 1, 2 / 3)


def test_stopwords_removed_before_stemming():
    # "doing" is a stopword (dropped); "running" is not (stemmed to "run").
    scorer = RougeScorer(use_stemmer=True, remove_stopwords=True)
    assert scorer.tokenizer("Doing running") == ["run"]


def test_unicode_tokenizer_scores_japanese_and_russian():
    default = RougeScorer(["rouge1"])
    unicode = RougeScorer(["rouge1"], tokenizer="unicode")
    # Japanese: 猫 が 好 き で す (6) vs 猫 が 大 好 き で す (7): 6 hits -> P 1, R 6/7.
    assert as_tuple(default.score("猫が好きです", "猫が大好きです")["rouge1"]) == (0.0, 0.0, 0.0)
    assert as_tuple(unicode.score("猫が好きです", "猫が大好きです")["rouge1"]) == approx_score(1, 6 / 7, 12 / 13)
    # Russian: кошка сидит на ковре vs кошка сидела на ковре: 3 hits of 4 each.
    assert as_tuple(default.score("Кошка сидит на ковре", "кошка сидела на ковре")["rouge1"]) == (0.0, 0.0, 0.0)
    assert as_tuple(unicode.score("Кошка сидит на ковре", "кошка сидела на ковре")["rouge1"]) == approx_score(
        3 / 4, 3 / 4, 3 / 4)


def test_unicode_tokens():
    scorer = RougeScorer(tokenizer="unicode", use_stemmer=True)
    assert scorer.tokenizer("東京タワー, Running FAST!") == ["東", "京", "タ", "ワ", "ー", "run", "fast"]
    plain = RougeScorer(tokenizer="unicode")
    assert plain.tokenizer("Straße ＡＢＣ１２ café") == ["strasse", "abc12", "café"]  # casefold, NFKC
    assert scorer.tokenizer("Straße Cafés") == ["strass", "cafés"]  # only ASCII words are stemmed
    assert plain.tokenizer("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]  # combining vowel signs stay in the word
    assert plain.tokenizer("Hello, World! 42") == ["hello", "world", "42"]


def test_callable_tokenizer():
    scorer = RougeScorer(["rouge1"], tokenizer=str.split)
    assert scorer.tokenizer("A-b c") == ["A-b", "c"]
    # "A-b" and "a-b" differ for this tokenizer: 1 hit ("c") of 2 and 2.
    assert as_tuple(scorer.score("A-b c", "a-b c")["rouge1"]) == approx_score(1 / 2, 1 / 2, 1 / 2)
    assert scorer.signature().split("|")[2] == "tok:callable:str.split"
