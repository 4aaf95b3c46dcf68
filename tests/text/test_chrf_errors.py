"""CHRFScorer refuses bad configuration and bad inputs with errors that name the option or position."""
from __future__ import annotations

import pytest

from opik_metrics.text.chrf import CHRFScorer, chrf_from_statistics


@pytest.mark.parametrize("option,value,message", [
    ("char_order", 0, "char_order must be an int >= 1, got 0"),
    ("char_order", 2.5, "char_order must be an int >= 1, got 2.5"),
    ("char_order", True, "char_order must be an int >= 1, got True"),
    ("char_order", "6", "char_order must be an int >= 1, got '6'"),
    ("word_order", -1, "word_order must be an int >= 0, got -1"),
    ("word_order", None, "word_order must be an int >= 0, got None"),
    ("beta", -1, "beta must be a finite number >= 0, got -1"),
    ("beta", float("nan"), "beta must be a finite number >= 0, got nan"),
    ("beta", "2", "beta must be a finite number >= 0, got '2'"),
    ("lowercase", "yes", "lowercase must be True or False, got 'yes'"),
    ("whitespace", 1, "whitespace must be True or False, got 1"),
    ("eps_smoothing", None, "eps_smoothing must be True or False, got None"),
])
def test_bad_options_name_the_option(option, value, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        CHRFScorer(**{option: value})


def test_good_options_are_kept():
    scorer = CHRFScorer(char_order=4, word_order=2, beta=0.5, lowercase=True, whitespace=True, eps_smoothing=True)
    assert (scorer.char_order, scorer.word_order, scorer.order, scorer.beta) == (4, 2, 6, 0.5)


def test_non_str_items_name_their_position():
    scorer = CHRFScorer()
    with pytest.raises(TypeError, match="hypothesis must be a str, got int"):
        scorer.sentence_score(3, ["a"])
    with pytest.raises(TypeError, match=r"references\[1\] must be a str, got bytes"):
        scorer.sentence_score("a", ["b", b"c"])
    with pytest.raises(TypeError, match=r"hypotheses\[1\] must be a str, got NoneType"):
        scorer.corpus_score(["a", None], ["a", "b"])
    with pytest.raises(TypeError, match=r"references\[0\]\[0\] must be a str, got int"):
        scorer.corpus_score(["a"], [[5]])
    with pytest.raises(TypeError, match="hypotheses must be a sequence, got str"):
        scorer.corpus_score("abc", ["a", "b", "c"])


def test_empty_references_and_lengths():
    scorer = CHRFScorer()
    with pytest.raises(ValueError, match="references is empty: chrF needs at least one reference"):
        scorer.sentence_score("a b", [])
    with pytest.raises(ValueError, match="references is empty"):
        scorer.sentence_score("a b", [None, None])       # only padding
    with pytest.raises(ValueError, match=r"references\[1\] is empty"):
        scorer.corpus_score(["a", "b"], [["a"], []])
    with pytest.raises(ValueError, match="got 3 hypotheses but 2 reference entries"):
        scorer.corpus_score(["a", "b", "c"], [["a"], ["b"]])
    with pytest.raises(ValueError, match="at least one hypothesis"):
        scorer.corpus_score([], [])


def test_statistics_of_the_wrong_size():
    with pytest.raises(ValueError, match="chrF statistics of 6 orders have 18 numbers, got 3"):
        chrf_from_statistics([1, 2, 3])
    with pytest.raises(ValueError, match="chrF statistics of 8 orders have 24 numbers, got 18"):
        CHRFScorer(word_order=2).compute([0] * 18)
