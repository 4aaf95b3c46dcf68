"""ROUGE-1.5.5 mode: values worked out by hand from the script's formulas (never from the code under test),
how it differs from the default mode, its tokens, stopwords, options and signature. No perl needed."""
from __future__ import annotations

import math

import pytest

from opik_metrics.text.rouge.scorer import RougeScorer, Score
from opik_metrics.text.tokenizers.stopwords import ENGLISH_STOPWORDS, SMART_COMMON_WORDS


def triple(score: Score) -> tuple:
    return (score.precision, score.recall, score.fmeasure)


def script(types, **options) -> RougeScorer:
    return RougeScorer(types, rouge155=True, **options)


# --- the worked example of the docs: default mode vs ROUGE-1.5.5 mode on W and SU --------------------

REFERENCE = "police killed the gunman"   # Lin (2004)'s example, 4 tokens
PREDICTION = "police kill the gunman"    # 4 tokens


def test_worked_example_rouge_w_default_vs_script():
    # w = 2, f(k) = k**2. The WLCS marks police, the, gunman of the reference: runs of 1 and 2, so
    # hits = f(1) + f(2) = 5 in both modes.
    # Default (Lin 2004): P = R = f^-1(5 / f(4)) = sqrt(5/16) = 0.559017.
    default = RougeScorer(["rougeW"], wlcs_weight=2).score(PREDICTION, REFERENCE)["rougeW"]
    assert triple(default) == pytest.approx((math.sqrt(5 / 16),) * 3, rel=1e-12)
    # Script: P = sqrt(5/16) -> 0.55902, but R = f^-1(5 / f(f(4))) = sqrt(5/256) = 0.139754 -> 0.13975;
    # F = P*R / (0.5*P + 0.5*R) = 0.0781230 / 0.349385 = 0.223601 -> 0.22360 (from the rounded P, R).
    assert triple(script(["rougeW"], wlcs_weight=2).score(PREDICTION, REFERENCE)["rougeW"]) == (
        0.55902, 0.13975, 0.2236)


def test_worked_example_rouge_w_default_weight():
    # w = 1.2: hits = 1 + 2**1.2 = 3.297397; f(4) = 4**1.2 = 5.278032; f(f(4)) = 5.278032**1.2 = 7.361501.
    # P = (3.297397 / 5.278032)**(1/1.2) = 0.675693; R = (3.297397 / 7.361501)**(1/1.2) = 0.512079;
    # F = 0.67569 * 0.51208 / (0.5 * 0.67569 + 0.5 * 0.51208) = 0.582617.
    default = RougeScorer(["rougeW"]).score(PREDICTION, REFERENCE)["rougeW"]
    assert default.recall == default.precision == pytest.approx(0.675693, abs=1e-6)
    assert triple(script(["rougeW"]).score(PREDICTION, REFERENCE)["rougeW"]) == (0.67569, 0.51208, 0.58262)


def test_worked_example_rouge_su_default_vs_script():
    # 6 skip-bigrams a side (any gap), 3 shared: police-the, police-gunman, the-gunman.
    # Default: + 4 unigrams a side, 3 shared (police, the, gunman): (3 + 3) / (6 + 4) = 0.6.
    default = RougeScorer(["rougeSU", "rougeSU4"]).score(PREDICTION, REFERENCE)
    assert triple(default["rougeSU"]) == pytest.approx((0.6, 0.6, 0.6), rel=1e-12)
    # Script: unigrams of every token but the last: "police killed the" / "police kill the", 2 shared:
    # (3 + 2) / (6 + 3) = 5/9 = 0.55556. (With 4 tokens, SU4 has the same pairs as SU.)
    ours = script(["rougeSU", "rougeSU4"]).score(PREDICTION, REFERENCE)
    assert triple(ours["rougeSU"]) == triple(ours["rougeSU4"]) == (0.55556, 0.55556, 0.55556)


# --- ROUGE-W as the script computes it ------------------------------------------------------------

def test_rouge_w_union_over_prediction_sentences_makes_one_run():
    # Reference "a b c d" (one sentence); prediction lines "a b" and "c d". Line 1 marks a b, line 2
    # marks c d: the marks are one run of 4 in the reference, hits = f(4) = 16 (w = 2).
    # base = f(4) = 16; R = sqrt(16 / f(16)) = sqrt(16/256) = 0.25; P = sqrt(16 / f(4)) = 1.
    # F = 0.25 * 1 / (0.5 * 0.25 + 0.5 * 1) = 0.25 / 0.625 = 0.4.
    assert triple(script(["rougeW"], wlcs_weight=2).score("a b\nc d", "a b c d")["rougeW"]) == (1.0, 0.25, 0.4)


def test_rouge_w_run_not_closed_by_a_clipped_mark():
    # Reference lines "b" and "a b c d"; prediction "a b d" (one b). Line "b" marks b: a hit, f(1) = 1,
    # and the prediction's only b is used. Line "a b c d" marks a, b, d: a passes (its run stays open
    # because b is marked), b fails the clip and neither counts nor closes the run, c is unmarked, d
    # passes and closes the run at the sentence end with length 2: f(2) = 4. hits = 1 + 4 = 5.
    # base = f(1) + f(4) = 17. R = sqrt(5 / f(17)) = sqrt(5/289) = 0.131533; P = sqrt(5 / f(3)) = sqrt(5/9)
    # = 0.745356. F = 0.13153 * 0.74536 / (0.5 * 0.13153 + 0.5 * 0.74536) = 0.098037 / 0.438445 = 0.22360.
    assert triple(script(["rougeW"], wlcs_weight=2).score("a b d", "b\na b c d")["rougeW"]) == (
        0.74536, 0.13153, 0.2236)


def test_rouge_w_open_run_lost_at_a_clipped_last_mark():
    # Reference lines "b" and "a b"; prediction "a b". Line "b": hit b, f(1) = 1. Line "a b": a passes
    # (run open, b is marked), b fails the clip at the sentence end: the run of a is never closed.
    # hits = 1; base = f(1) + f(2) = 5; R = sqrt(1 / f(5)) = 1/5; P = sqrt(1 / f(2)) = 1/2.
    # F = 0.1 / (0.25 + 0.1) = 0.285714.
    assert triple(script(["rougeW"], wlcs_weight=2).score("a b", "b\na b")["rougeW"]) == (0.5, 0.2, 0.28571)
    # The default mode reads one sequence "b a b" against "a b": WLCS f(2) = 4, R = sqrt(4/9), P = 1.
    default = RougeScorer(["rougeW"], wlcs_weight=2).score("a b", "b\na b")["rougeW"]
    assert (default.precision, default.recall) == pytest.approx((1.0, 2 / 3), rel=1e-12)


# --- ROUGE-SU, rounding, several references -------------------------------------------------------

def test_rouge_su_reversed_sentence():
    # "gunman the killed police" vs the reference: no skip-bigram in order. Unigrams but the last:
    # gunman the killed / police killed the -> 2 shared (the, killed). (0 + 2) / (6 + 3) = 2/9.
    # (The default mode gives 0.4: 4 of 4 unigrams.)
    assert triple(script(["rougeSU"]).score("gunman the killed police", REFERENCE)["rougeSU"]) == (
        0.22222, 0.22222, 0.22222)


def test_rouge_su_of_one_word_is_zero():
    # One token: the script's loop over pair starts (i < len - 1) never runs, so no unigram either.
    assert triple(script(["rougeSU4"]).score("cat", "cat")["rougeSU4"]) == (0.0, 0.0, 0.0)
    assert triple(RougeScorer(["rougeSU4"]).score("cat", "cat")["rougeSU4"]) == (1.0, 1.0, 1.0)


def test_f_from_rounded_precision_and_recall():
    # 3 hits; reference 8 tokens, prediction 28. R = 3/8 = 0.375, P = 3/28 = 0.107142857 -> 0.10714.
    # F from the rounded values: 0.10714 * 0.375 / (0.5 * 0.10714 + 0.5 * 0.375) = 0.0401775 / 0.24107
    # = 0.166663 -> 0.16666; from the exact ones it would be 1/6 -> 0.16667.
    prediction = "a b c " + "x " * 25
    assert triple(script(["rouge1"]).score(prediction, "a b c d e f g h")["rouge1"]) == (0.10714, 0.375, 0.16666)


def test_best_reference_is_the_best_recall_not_the_best_f():
    # Prediction "a b c d"; references "a b" (P 2/4, R 1, F 2/3) and "a b c d e" (P 1, R 4/5, F 8/9).
    # -f B keeps the first (best recall); rouge-score's best keeps the second (best F).
    refs = ["a b", "a b c d e"]
    assert triple(script(["rouge1"], multi_reference="best").score("a b c d", refs)["rouge1"]) == (0.5, 1.0, 0.66667)
    default = RougeScorer(["rouge1"], multi_reference="best").score("a b c d", refs)["rouge1"]
    assert triple(default) == pytest.approx((1.0, 0.8, 8 / 9), rel=1e-12)
    # -f A: hits 2 + 4 = 6 over 2 + 5 = 7 reference and 4 + 4 = 8 prediction unigrams:
    # R = 6/7 = 0.85714, P = 0.75, F = 0.642855 / 0.80357 = 0.8.
    assert triple(script(["rouge1"], multi_reference="average").score("a b c d", refs)["rouge1"]) == (
        0.75, 0.85714, 0.8)


def test_mean_over_references_of_the_scripts_rounded_values():
    # Prediction "a b c". Ref "a x y": 1 hit of 3 / 3: P = R = 0.33333, F = 0.33333. Ref "a b": 2 hits,
    # P = 2/3 -> 0.66667, R = 1.0, F = 0.66667 / (0.5*0.66667 + 0.5) = 0.7999976 -> 0.8. The mean of
    # those printed values, not rounded again: P 0.5, R 0.666665, F 0.566665.
    got = script(["rouge1"], multi_reference="mean").score("a b c", ["a x y", "a b"])["rouge1"]
    assert triple(got) == ((0.33333 + 0.66667) / 2, (0.33333 + 1.0) / 2, (0.33333 + 0.8) / 2)
    # -f A instead pools: 3 hits of 6 / 5 -> P 0.5, R 0.6, F 0.54545
    assert triple(script(["rouge1"], multi_reference="average").score("a b c", ["a x y", "a b"])["rouge1"]) == (
        0.5, 0.6, 0.54545)
    assert script(["rouge1"], multi_reference="mean").signature().fields["multi"] == "mean"


def test_rouge_lsum_is_the_scripts_rouge_l():
    # Reference "w1 w2 w3 w4 w5"; prediction lines "w1 w2 w6 w7 w8" / "w1 w3 w8 w9 w5" (Lin 2004):
    # union LCS w1 w2 w3 w5 -> R = 4/5, P = 4/10, F = 0.32 / 0.6 = 0.53333.
    scores = script(["rougeLsum"]).score("w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5", "w1 w2 w3 w4 w5")
    assert triple(scores["rougeLsum"]) == (0.4, 0.8, 0.53333)
    # Prediction lines "w3 w4" / "w1 w2" against reference "w1 w2 w3 w4": by line the union is all 4
    # tokens (R 1); the same text on one line, "w3 w4 w1 w2", has an LCS of 2 (R 0.5).
    assert triple(script(["rougeLsum"]).score("w3 w4\nw1 w2", "w1 w2 w3 w4")["rougeLsum"]) == (1.0, 1.0, 1.0)
    assert triple(script(["rougeLsum"]).score("w3 w4 w1 w2", "w1 w2 w3 w4")["rougeLsum"]) == (0.5, 0.5, 0.5)


@pytest.mark.parametrize("types", [["rougeL"], ["rouge1", "rougeL", "rougeLsum"]])
def test_rouge_l_is_refused_naming_rouge_lsum(types):
    with pytest.raises(ValueError, match=r"rouge155=True has no rougeL .*ask for rougeLsum") as raised:
        script(types)
    assert "\n" not in str(raised.value)
    assert RougeScorer(types).rouge_types == tuple(types)        # the default mode keeps it


def test_default_types_use_rouge_lsum_in_this_mode():
    assert RougeScorer(rouge155=True).rouge_types == ("rouge1", "rouge2", "rougeLsum")
    assert RougeScorer().rouge_types == ("rouge1", "rouge2", "rougeL")


def test_empty_reference_scores_zero_where_the_script_dies():
    for types in (["rougeW"], ["rouge1", "rougeLsum", "rougeSU4"]):
        for reference in ("", "!!! ...", "\n\n"):
            scores = script(types).score("a b c", reference)
            assert all(triple(s) == (0.0, 0.0, 0.0) for s in scores.values())
    # With -f A an empty reference still adds the prediction's count: rouge1 P = 2 / (3 + 3).
    assert triple(script(["rouge1"], multi_reference="average").score("a b c", ["", "a b"])["rouge1"]) == (
        0.33333, 1.0, 0.5)


# --- tokens and stopwords -----------------------------------------------------------------------------

def test_script_tokens():
    # ASCII capitals only are lowercased; every other character separates words; "-" and "$" go.
    scorer = script(["rouge1"])
    assert scorer.tokenizer("It's an E-mail: $5, x86_64 C++ 3.14\tÉCOLE naïve") == [
        "it", "s", "an", "e", "mail", "5", "x86", "64", "c", "3", "14", "cole", "na", "ve"]
    # The two characters whose Unicode lowercase is ASCII: rouge-score keeps them, the script does not.
    assert scorer.tokenizer("\u212aelvin \u0130stanbul") == ["elvin", "stanbul"]
    assert RougeScorer().tokenizer("\u212aelvin \u0130stanbul") == ["kelvin", "i", "stanbul"]


def test_smart_stopwords_in_both_modes():
    # reuters, jan, on, that, it, s (of it's), new: all in the SMART list.
    text = "Reuters reported on Jan 5 that it's new"
    assert RougeScorer(remove_stopwords=True).tokenizer(text) == ["reported", "5"]
    assert script(["rouge1"], remove_stopwords=True).tokenizer(text) == ["reported", "5"]
    assert len(ENGLISH_STOPWORDS) == len(SMART_COMMON_WORDS) == 596
    assert {"reuters", "ap", "z", "zero", "don't", "e.g.", "mr."} <= ENGLISH_STOPWORDS


def test_stemming_is_the_scripts_m_on_words_longer_than_3():
    # went, children: WordNet exceptions (go, child); ran and men have 3 letters: never looked up
    # (verb.exc has ran -> run, noun.exc men -> man). says -> say (step 1a) -> sai (step 1c: y after
    # a vowel), where nltk's default Porter keeps say. tests/text/test_rouge155_stemmer.py: the rules.
    scorer = script(["rouge1"], use_stemmer=True)
    assert scorer.tokenizer("Running dogs ran studies; men went, children says") == [
        "run", "dog", "ran", "studi", "men", "go", "child", "sai"]
    assert script(["rouge1"], use_stemmer=True, rouge155_stemmer="porter").tokenizer(
        "Running dogs ran studies; men went, children says") == [
        "run", "dog", "ran", "studi", "men", "went", "children", "sai"]


# --- options and signature ------------------------------------------------------------------------

def test_signature_records_the_mode_and_default_is_unchanged():
    assert "mode" not in RougeScorer().signature().fields
    sig = script(["rouge1", "rougeSU4"], multi_reference="average", remove_stopwords=True).signature()
    assert sig.rsplit("|", 1)[0] == (
        "rouge|mode:rouge155|types:rouge1,rougeSU4|tok:rouge155|stem:no|stop:yes|f:1|multi:average|w:1.2")
    assert sig.fields["mode"] == "rouge155"


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_rouge155_must_be_boolean(value):
    with pytest.raises(ValueError, match="rouge155 must be True or False"):
        RougeScorer(rouge155=value)


def test_other_tokenizers_keep_the_scripts_counting():
    # tokenizer="unicode" in this mode: the script's counting and rounding on Unicode tokens.
    scorer = script(["rouge1", "rougeSU4"], tokenizer="unicode")
    assert scorer.signature().fields["tok"] == "unicode"
    scores = scorer.score("Кошка сидит на ковре", "кошка сидела на ковре")
    assert triple(scores["rouge1"]) == (0.75, 0.75, 0.75)
    # SU4: 6 pairs + 3 leading unigrams a side; pairs кошка-на, кошка-ковре, на-ковре + unigrams кошка, на.
    assert triple(scores["rougeSU4"]) == (0.55556, 0.55556, 0.55556)


def test_score_batch_equals_score():
    scorer = script(["rouge1", "rougeLsum", "rougeW", "rougeSU4"])
    predictions = ["a b c", "the cat\nsat", ""]
    references = ["a c", ["cat sat", "the cat"], "x"]
    assert scorer.score_batch(predictions, references) == [
        scorer.score(p, r) for p, r in zip(predictions, references)]
