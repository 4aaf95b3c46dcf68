"""BLEUScorer refuses bad configuration and bad inputs with clear errors."""
from __future__ import annotations

import pytest

from opik_metrics.text.bleu.scorer import TOKENIZER_NAMES, BLEUScorer, BLEUStats


@pytest.mark.parametrize(
    "weights,message",
    [
        ((0.5, 0.5), "max_ngram_order=4 entries, got 2"),
        ((0.2, 0.2, 0.2, 0.2, 0.2), "max_ngram_order=4 entries, got 5"),
        ((0.5, 0.5, 0.5, -0.5), "non-negative"),
        ((0.3, 0.3, 0.3, 0.3), "sum to 1"),
        ((0.25, 0.25, 0.25, 0.2), "sum to 1"),
        ((float("nan"), 0.5, 0.25, 0.25), "finite"),
        (("a", 0.5, 0.25, 0.25), "finite non-negative numbers"),
        ("0.25", "sequence"),
    ],
)
def test_bad_weights(weights, message):
    with pytest.raises(ValueError, match=message):
        BLEUScorer(weights=weights)


def test_weights_tolerance_and_other_orders():
    BLEUScorer(weights=(0.1, 0.2, 0.3, 0.4 + 5e-10))  # within 1e-9
    with pytest.raises(ValueError, match="sum to 1"):
        BLEUScorer(weights=(0.1, 0.2, 0.3, 0.4 + 5e-9))
    assert BLEUScorer(max_ngram_order=2, weights=(0.3, 0.7)).weights == (0.3, 0.7)
    assert BLEUScorer(weights=(0.25,) * 4).weights is None  # uniform: sacrebleu's exact path


def test_unknown_tokenizer_lists_the_choices():
    with pytest.raises(ValueError, match="unknown BLEU tokenizer 'moses'") as info:
        BLEUScorer(tokenize="moses")
    for name in ("13a", "intl", "char", "zh", "none"):
        assert name in str(info.value)
    assert set(TOKENIZER_NAMES) >= {"13a", "intl", "char", "zh", "none", "ja-mecab", "spm"}


def test_bad_smoothing_and_order():
    with pytest.raises(ValueError, match="unknown smooth_method 'laplace'.*none, floor, add-k, exp"):
        BLEUScorer(smooth_method="laplace")
    with pytest.raises(ValueError, match=">= 0"):
        BLEUScorer(smooth_method="add-k", smooth_value=-1)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        BLEUScorer(smooth_method="floor", smooth_value=2)
    with pytest.raises(ValueError, match="max_ngram_order must be >= 1"):
        BLEUScorer(max_ngram_order=0)
    with pytest.raises(TypeError, match="max_ngram_order"):
        BLEUScorer(max_ngram_order=2.0)
    with pytest.raises(TypeError, match="effective_order"):
        BLEUScorer(effective_order="yes")


def test_empty_references():
    scorer = BLEUScorer()
    with pytest.raises(ValueError, match="references is empty"):
        scorer.sentence_score("a b", [])
    with pytest.raises(ValueError, match="references is empty"):
        scorer.stats("a b", [None, None])  # only padding
    with pytest.raises(ValueError, match=r"references\[1\] is empty"):
        scorer.corpus_score(["a", "b"], [["a"], []])


def test_length_mismatch_names_both_lengths():
    with pytest.raises(ValueError, match="3 hypotheses but 2 reference entries"):
        BLEUScorer().corpus_score(["a", "b", "c"], [["a"], ["b"]])
    with pytest.raises(ValueError, match="at least one hypothesis"):
        BLEUScorer().corpus_score([], [])


def test_non_str_items_name_their_position():
    scorer = BLEUScorer()
    with pytest.raises(TypeError, match="hypothesis must be a str, got int"):
        scorer.sentence_score(3, ["a"])
    with pytest.raises(TypeError, match="hypothesis must be a str, got NoneType"):
        scorer.stats(None, ["a"])
    with pytest.raises(TypeError, match=r"references\[1\] must be a str, got int"):
        scorer.sentence_score("a", ["a", 5])
    with pytest.raises(TypeError, match="references must be a str or a sequence of str, got int"):
        scorer.sentence_score("a", 5)
    with pytest.raises(TypeError, match=r"hypotheses\[2\] must be a str, got bytes"):
        scorer.corpus_score(["a", "b", b"c"], ["a", "b", "c"])
    with pytest.raises(TypeError, match=r"references\[1\]\[0\] must be a str, got float"):
        scorer.corpus_score(["a", "b"], [["a"], [1.5]])
    with pytest.raises(TypeError, match="hypotheses must be a sequence, got str"):
        scorer.corpus_score("ab", ["a", "b"])


def test_compute_checks_the_order_of_the_stats():
    with pytest.raises(ValueError, match="stats have 2 n-gram orders, this scorer uses 4"):
        BLEUScorer().compute(BLEUStats((1, 0), (2, 1), 2, 2), sentence=True)
