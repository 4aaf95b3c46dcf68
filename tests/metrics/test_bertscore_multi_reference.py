"""BERTScore's ``multi_reference`` (issue 57): "mean" is P, R and F each the mean over the
references of bert_score's single-reference value (bert_score itself scores every (output, one
reference) pair here, the test averages them), with idf and with baseline rescaling too; "max", the
default, stays bert_score's multi-reference numbers and signature; the corpus score is the mean of
the item means; an unknown mode is refused before any model loads."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from opik_metrics import BERTScore
from tests.corpus import realistic_pairs
from tests.neural.tiny_models import build_bert, write_baseline

bert_score = pytest.importorskip("bert_score")

NAMES = ["BERTPrecision", "BERTRecall", "BERTF1"]


@pytest.fixture(autouse=True)
def hub_offline(monkeypatch):
    import huggingface_hub.constants
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    return str(build_bert(tmp_path_factory.mktemp("mean_bert"), seed=3))


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> str:
    return str(write_baseline(tmp_path_factory.mktemp("mean_baseline") / "b.tsv", layers=3))


def _items(count: int = 40) -> tuple[list[str], list[list[str]]]:
    outputs, first = realistic_pairs(count, seed=61)
    second, third = realistic_pairs(count, seed=62)[1], realistic_pairs(count, seed=63)[1]
    references = [[first[k], second[k], third[k]][:1 + k % 3] for k in range(count)]
    references[5] = [first[5], outputs[5]]                      # one reference is the output itself
    return outputs, references


def _oracle_means(scorer, outputs, references) -> np.ndarray:
    """bert_score on every (output, one reference) pair, averaged over each item's references."""
    cands = [o for o, refs in zip(outputs, references) for _ in refs]
    refs = [[r] for item in references for r in item]
    pairs = torch.stack(scorer.score(cands, refs), dim=1).double().numpy()
    out, at = [], 0
    for item in references:
        out.append(pairs[at:at + len(item)].mean(axis=0))
        at += len(item)
    return np.array(out)


@pytest.mark.parametrize("config", ["plain", "idf", "rescaled"])
def test_mean_is_the_mean_of_bert_scores_single_reference_scores(tiny, baseline, config):
    outputs, references = _items()
    ours = dict(model=tiny, num_layers=2, track=False, multi_reference="mean")
    theirs = dict(model_type=tiny, num_layers=2, lang="en")
    flat = [r for item in references for r in item]
    if config == "idf":
        ours.update(idf=True, idf_references=references)
        theirs.update(idf=True, idf_sents=flat)
    elif config == "rescaled":
        ours.update(rescale_with_baseline=True, baseline_path=baseline)
        theirs.update(rescale_with_baseline=True, baseline_path=baseline)
    expected = _oracle_means(bert_score.BERTScorer(**theirs), outputs, references)
    metric = BERTScore(**ours)
    got = np.array([[r.value for r in item] for item in metric.score_batch(outputs, references)])
    np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0)
    first = metric.score(outputs[1], references[1])
    np.testing.assert_allclose([r.value for r in first], expected[1], atol=1e-6, rtol=0)
    assert [r.name for r in first] == NAMES and "best_reference" not in first[0].metadata
    assert first[0].metadata["signature"].fields["multi"] == "mean"
    corpus = metric.corpus_score(outputs, references)
    assert corpus.name == "corpus_BERTF1"
    assert corpus.value == pytest.approx(float(got[:, 2].mean()), abs=1e-12)     # the mean of the item means
    assert corpus.value == metric.from_statistics(sum(metric.statistics(outputs, references))).value


def test_max_stays_bert_scores_multi_reference_rule_and_signature(tiny):
    outputs, references = _items(20)
    scorer = bert_score.BERTScorer(model_type=tiny, num_layers=2, lang="en")
    expected = torch.stack(scorer.score(outputs, references), dim=1).numpy()
    default, named = (BERTScore(model=tiny, num_layers=2, track=False, **kw) for kw in ({}, {"multi_reference": "max"}))
    for metric in (default, named):
        got = np.array([[r.value for r in item] for item in metric.score_batch(outputs, references)])
        np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0)
    assert default.signature == named.signature and "multi" not in default.signature.fields
    assert default.facts.as_dict() == named.facts.as_dict()
    mean = BERTScore(model=tiny, num_layers=2, track=False, multi_reference="mean")
    assert str(mean.signature) == f"{default.signature}|multi:mean"
    assert mean.facts.corpus == default.facts.corpus


def test_an_empty_reference_counts_its_zero_in_the_mean(tiny):
    """The raw 0 the engine gives an empty text (bert_score's; this bert_score cannot tokenise an
    empty text with this transformers, so the mean is checked against the definition)."""
    metric = BERTScore(model=tiny, num_layers=2, track=False, multi_reference="mean")
    alone = metric.score("a man is walking his dog", "a woman walks a dog")
    mixed = metric.score("a man is walking his dog", ["a woman walks a dog", ""])
    np.testing.assert_allclose([r.value for r in mixed], [r.value / 2 for r in alone], atol=1e-9, rtol=0)
    assert "reference 1 is empty" in mixed[0].reason


@pytest.mark.parametrize("bad", ["best", "avg", None])
def test_an_unknown_mode_is_refused_before_the_model_loads(bad):
    with pytest.raises(ValueError, match=re.escape(f"multi_reference: expected one of max, mean, got {bad!r}")):
        BERTScore(model="/no/such/model", multi_reference=bad, track=False)
