"""Bad rouge types, options and inputs fail early with clear messages."""
from __future__ import annotations

import math

import pytest

from opik_metrics.text.rouge.scorer import RougeScorer, parse_rouge_type


@pytest.mark.parametrize("name", ["rouge0", "rouge10", "rougeX", "rougel", "ROUGE1", "rougeS-1", "rougeSU04",
                                  "rougeLSum", "rouge", "", "rougeW2"])
def test_unknown_rouge_type_is_named_with_valid_forms(name):
    with pytest.raises(ValueError) as error:
        parse_rouge_type(name)
    assert repr(name) in str(error.value)
    assert "rougeLsum" in str(error.value) and "rougeSU<d>" in str(error.value)
    with pytest.raises(ValueError):
        RougeScorer(["rouge1", name])


@pytest.mark.parametrize("name, kind, n, max_skip, with_unigrams", [
    ("rouge1", "ngram", 1, None, False),
    ("rouge9", "ngram", 9, None, False),
    ("rougeL", "lcs", 0, None, False),
    ("rougeLsum", "summary_lcs", 0, None, False),
    ("rougeW", "wlcs", 0, None, False),
    ("rougeS", "skip", 2, None, False),
    ("rougeS0", "skip", 2, 0, False),
    ("rougeSU12", "skip", 2, 12, True),
])
def test_valid_rouge_types(name, kind, n, max_skip, with_unigrams):
    parsed = parse_rouge_type(name)
    assert (parsed.name, parsed.kind, parsed.n, parsed.max_skip, parsed.with_unigrams) == (
        name, kind, n, max_skip, with_unigrams)


@pytest.mark.parametrize("options, message", [
    ({"tokenizer": "spacy"}, "unknown tokenizer 'spacy'"),
    ({"alpha": 0.3, "beta": 2}, "not both"),
    ({"alpha": 1.5}, "alpha must be"),
    ({"alpha": -0.1}, "alpha must be"),
    ({"alpha": math.nan}, "alpha must be"),
    ({"beta": -1}, "beta must be"),
    ({"beta": math.nan}, "beta must be"),
    ({"wlcs_weight": 1}, "wlcs_weight must be"),
    ({"wlcs_weight": 0.5}, "wlcs_weight must be"),
    ({"wlcs_weight": math.inf}, "wlcs_weight must be"),
    ({"multi_reference": "max"}, "multi_reference must be one of 'best', 'average'"),
    ({"rouge_types": []}, "rouge_types is empty"),
])
def test_bad_options(options, message):
    with pytest.raises(ValueError, match=message):
        RougeScorer(**options)


def test_empty_reference_list():
    with pytest.raises(ValueError, match="references is empty"):
        RougeScorer().score("a prediction", [])


@pytest.mark.parametrize("prediction, references", [(None, "ref"), (b"bytes", "ref"), ("pred", None),
                                                    ("pred", ["ok", 3]), ("pred", b"ref")])
def test_non_str_inputs_raise_type_error(prediction, references):
    with pytest.raises(TypeError, match="must be a str"):
        RougeScorer().score(prediction, references)


def test_score_batch_length_mismatch():
    with pytest.raises(ValueError, match="lengths must match"):
        RougeScorer().score_batch(["a", "b"], ["a"])


def test_callable_tokenizer_must_return_strings():
    with pytest.raises(TypeError, match="must return a list of str"):
        RougeScorer(tokenizer=lambda text: None).score("a", "b")


def test_signature_records_every_option():
    assert RougeScorer(engine="python").signature().rsplit("|", 1)[0] == (
        "rouge|types:rouge1,rouge2,rougeL|tok:default|stem:no|stop:no|f:1|multi:best|w:1.2")
    custom = RougeScorer(["rougeLsum", "rougeSU4"], use_stemmer=True, remove_stopwords=True,
                         tokenizer="unicode", beta=2, wlcs_weight=1.5, multi_reference="average")
    assert custom.signature().rsplit("|", 1)[0] == (
        "rouge|types:rougeLsum,rougeSU4|tok:unicode|stem:yes|stop:yes|f:beta=2|multi:average|w:1.5")
    assert RougeScorer(alpha=0.25).signature().split("|")[5] == "f:alpha=0.25"
    assert RougeScorer(alpha=0.5).signature().split("|")[5] == "f:1"
    assert RougeScorer(engine="python").signature().split("|")[-1].startswith("version:")


@pytest.mark.parametrize("option", ["use_stemmer", "remove_stopwords"])
@pytest.mark.parametrize("value", ["yes", "no", 1, None])
def test_switches_must_be_booleans(option, value):
    from opik_metrics.text.rouge import RougeScorer
    with pytest.raises(ValueError, match=f"{option} must be True or False"):
        RougeScorer(**{option: value})


def test_score_batch_names_the_bad_entry_and_takes_every_form_of_references():
    scorer = RougeScorer(("rouge1",))
    with pytest.raises(TypeError, match=r"predictions\[1\] must be a str, got int"):
        scorer.score_batch(["a", 3], ["a", "b"])
    with pytest.raises(TypeError, match=r"references\[1\]\[0\] must be a str, got NoneType"):
        scorer.score_batch(["a", "b"], [["a"], [None]])
    with pytest.raises(ValueError, match=r"references\[0\] is empty"):
        scorer.score_batch(["a"], [[]])
    with pytest.raises(TypeError, match="predictions must be a sequence, got str"):
        scorer.score_batch("a b", ["a b"])
    lists = scorer.score_batch(["a b", "c"], [["a b"], ["c", "d"]])
    assert scorer.score_batch(["a b", "c"], ["a b", ("c", "d")]) == lists       # a str, a tuple: the same
