"""TERScorer refuses bad configuration and bad inputs with errors that name the option or position."""
from __future__ import annotations

import pytest

from opik_metrics.text.ter import TERScorer, ter_from_statistics


@pytest.mark.parametrize("option", ["normalized", "no_punct", "asian_support", "case_sensitive"])
@pytest.mark.parametrize("value", ["yes", 1, None, 0.0])
def test_bad_options_name_the_option(option, value):
    with pytest.raises(ValueError, match=rf"^{option} must be True or False, got {value!r}$"):
        TERScorer(**{option: value})


def test_non_str_items_name_their_position():
    scorer = TERScorer()
    with pytest.raises(TypeError, match="hypothesis must be a str, got int"):
        scorer.sentence_score(3, ["a"])
    with pytest.raises(TypeError, match=r"references\[0\] must be a str, got float"):
        scorer.sentence_score("a", [1.5])
    with pytest.raises(TypeError, match="references must be a str or a sequence of str, got NoneType"):
        scorer.sentence_score("a", None)
    with pytest.raises(TypeError, match=r"hypotheses\[2\] must be a str, got list"):
        scorer.corpus_score(["a", "b", ["c"]], ["a", "b", "c"])
    with pytest.raises(TypeError, match="references must be a sequence, got str"):
        scorer.corpus_score(["a"], "a")


def test_empty_references_and_lengths():
    scorer = TERScorer()
    with pytest.raises(ValueError, match="references is empty: TER needs at least one reference"):
        scorer.sentence_score("a b", [])
    with pytest.raises(ValueError, match=r"references\[0\] is empty"):
        scorer.corpus_score(["a"], [[None]])
    with pytest.raises(ValueError, match="got 1 hypotheses but 2 reference entries"):
        scorer.corpus_score(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="at least one hypothesis"):
        scorer.corpus_score([], [])


def test_statistics_of_the_wrong_size():
    with pytest.raises(ValueError, match=r"TER statistics are \(num_edits, ref_length\), got 3 numbers"):
        ter_from_statistics([1, 2, 3])
    with pytest.raises(ValueError, match="got 1 numbers"):
        TERScorer().compute([1])
