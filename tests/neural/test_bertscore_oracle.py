"""Fidelity: our BERTScore equals bert_score 0.3.13's P, R, F to 1e-6 on tiny random BERT and
RoBERTa checkpoints and the packaged MiniLM, with idf on and off, several references, baseline
rescaling, truncation, any batch size and any order of items.
"""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from tests.corpus import realistic_pairs
from opik_metrics.neural.bertscore.engine import BertScoreEngine

bert_score = pytest.importorskip("bert_score")
pytestmark = pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")

TOL = 1e-6
LAYER = 2  # of 3: the third layer is never built


def _inputs(n: int, seed: int) -> tuple[list[str], list[str]]:
    cands, refs = realistic_pairs(n, seed=seed)
    cands += ["A café in Zürich — naïve, 100% sure!", "  leading and trailing spaces  ",
              "Same text on both sides.", "word " * 90]   # the last one exceeds 64 tokens
    refs += ["The cafe in Zurich, naive and sure.", "leading and trailing spaces",
             "Same text on both sides.", "word " * 70]
    return cands, refs


CANDS, REFS = _inputs(20, seed=11)
MULTI = [[r, REFS[(i + 3) % len(REFS)], REFS[(i + 7) % len(REFS)]][: 1 + i % 3] for i, r in enumerate(REFS)]


def _ours(results) -> np.ndarray:
    return np.array([[s.precision, s.recall, s.f1] for s in results])


def _theirs(scorer, cands, refs, **kw) -> np.ndarray:
    return torch.stack(scorer.score(cands, refs, **kw), dim=1).numpy().astype(np.float64)


@pytest.fixture(params=["tiny_bert", "tiny_roberta"])
def model_path(request) -> str:
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("idf", [False, True])
@pytest.mark.parametrize("multi", [False, True], ids=["one-ref", "multi-ref"])
def test_equals_bert_score(model_path, idf, multi):
    refs = MULTI if multi else REFS
    corpus = [r for group in MULTI for r in group]
    ours = BertScoreEngine(model=model_path, num_layers=LAYER, idf=idf,
                           idf_references=corpus if idf else None)
    theirs = bert_score.BERTScorer(model_type=model_path, num_layers=LAYER, lang="en", idf=idf,
                                   idf_sents=corpus if idf else None)
    got, want = _ours(ours.score(CANDS, refs)), _theirs(theirs, CANDS, refs)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, atol=TOL, rtol=0)
    # the data really spans a range: a constant or broken scorer could not pass the line above
    assert got[:, 2].max() - got[:, 2].min() > 0.05


def test_rescaled_equals_bert_score(model_path, baseline_file):
    ours = BertScoreEngine(model=model_path, num_layers=LAYER, rescale_with_baseline=True,
                           baseline_path=baseline_file)
    theirs = bert_score.BERTScorer(model_type=model_path, num_layers=LAYER, lang="en",
                                   rescale_with_baseline=True, baseline_path=baseline_file)
    got, want = _ours(ours.score(CANDS, MULTI)), _theirs(theirs, CANDS, MULTI)
    np.testing.assert_allclose(got, want, atol=TOL, rtol=0)
    raw = _ours(BertScoreEngine(model=model_path, num_layers=LAYER).score(CANDS, MULTI))
    assert np.abs(got - raw).max() > 0.1  # rescaling really happened (layer-2 row: b = .32, .27, .30)


def test_batch_size_and_order_do_not_change_scores(model_path):
    """torchmetrics #2728 mis-paired items in batches: every item must keep its own score."""
    want = _theirs(bert_score.BERTScorer(model_type=model_path, num_layers=LAYER, lang="en"), CANDS, MULTI)
    for batch_size in (1, 3, 64):
        engine = BertScoreEngine(model=model_path, num_layers=LAYER, batch_size=batch_size)
        np.testing.assert_allclose(_ours(engine.score(CANDS, MULTI)), want, atol=TOL, rtol=0)
    engine = BertScoreEngine(model=model_path, num_layers=LAYER, batch_size=5)
    order = list(range(len(CANDS)))
    random.Random(3).shuffle(order)
    engine.clear_cache()
    shuffled = _ours(engine.score([CANDS[i] for i in order], [MULTI[i] for i in order]))
    np.testing.assert_allclose(shuffled, want[order], atol=TOL, rtol=0)
    engine.clear_cache()
    one_by_one = np.vstack([_ours(engine.score([c], [r])) for c, r in zip(CANDS, MULTI)])
    np.testing.assert_allclose(one_by_one, want, atol=TOL, rtol=0)


@pytest.mark.parametrize("idf", [False, True])
def test_text_equal_to_reference_scores_one(model_path, idf):
    engine = BertScoreEngine(model=model_path, num_layers=LAYER, idf=idf,
                             idf_references=REFS if idf else None)
    scores = _ours(engine.score(REFS, REFS))
    np.testing.assert_allclose(scores, np.ones_like(scores), atol=TOL, rtol=0)


@pytest.mark.slow
@pytest.mark.parametrize("idf", [False, True])
def test_packaged_minilm_equals_bert_score(minilm, idf):
    cands, refs = CANDS[:10] + CANDS[-4:], MULTI[:10] + MULTI[-4:]
    corpus = REFS
    ours = BertScoreEngine(model="packaged:minilm", idf=idf, idf_references=corpus if idf else None)
    assert ours.num_layers == 6
    theirs = bert_score.BERTScorer(model_type=minilm, num_layers=6, lang="en", idf=idf,
                                   idf_sents=corpus if idf else None)
    got, want = _ours(ours.score(cands, refs)), _theirs(theirs, cands, refs, batch_size=4)
    np.testing.assert_allclose(got, want, atol=TOL, rtol=0)
    same = _ours(ours.score(refs[0][:1] * 2, [refs[0][:1], refs[0][:1]]))
    np.testing.assert_allclose(same, np.ones_like(same), atol=TOL, rtol=0)
