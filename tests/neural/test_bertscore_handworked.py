"""Hand-worked BERTScore: matching arithmetic on explicit vectors, the idf formula, rescaling,
and an independent recomputation from a full model's hidden states (no code under test)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from opik_metrics.neural.bertscore.engine import BertScoreEngine
from opik_metrics.neural.bertscore.baseline import load_baseline
from opik_metrics.neural.bertscore.idf import TokenWeights
from opik_metrics.neural.bertscore.match import Side, f_measure, greedy_scores


def _side(vectors, weights) -> Side:
    return Side(torch.tensor(vectors, dtype=torch.float32), torch.tensor(weights, dtype=torch.float32))


def test_greedy_matching_by_hand():
    # sim = [[1, .6], [0, .8]]; P = .5*1 + .5*.8 = .9; R = .25*1 + .75*.8 = .85; F = 2*.9*.85/1.75
    cand = _side([[1.0, 0.0], [0.0, 1.0]], [0.5, 0.5])
    ref = _side([[1.0, 0.0], [0.6, 0.8]], [0.25, 0.75])
    p, r, f = greedy_scores([cand], [ref])[0].tolist()
    assert p == pytest.approx(0.9, abs=1e-7)
    assert r == pytest.approx(0.85, abs=1e-7)
    assert f == pytest.approx(1.53 / 1.75, abs=1e-7)


def test_padding_never_wins_a_max():
    """A pair whose best similarity is negative keeps it when batched with a longer pair."""
    lonely = (_side([[1.0, 0.0]], [1.0]), _side([[-1.0, 0.0]], [1.0]))
    longer = (_side([[0.0, 1.0]] * 4, [0.25] * 4), _side([[0.0, 1.0]] * 5, [0.2] * 5))
    alone = greedy_scores([lonely[0]], [lonely[1]])[0].tolist()
    batched = greedy_scores([longer[0], lonely[0]], [longer[1], lonely[1]])[1].tolist()
    assert alone == pytest.approx([-1.0, -1.0, -1.0])   # F = 2(-1)(-1)/(-2) = -1
    assert batched == alone


def test_f_measure_is_zero_when_p_plus_r_is_zero():
    assert f_measure(torch.tensor(0.0), torch.tensor(0.0)).item() == 0.0
    assert f_measure(torch.tensor(0.5), torch.tensor(-0.5)).item() == 0.0


def test_idf_formula_by_hand():
    # M = 3 documents; token 1 is special; df(2) = 2, df(3) = 1, 9 never seen
    w = TokenWeights(special_ids={1}, documents=[[1, 2, 3, 3], [1, 2], [1]])
    assert w.weights([1, 2, 3, 9]).tolist() == pytest.approx([0.0, math.log(4 / 3), math.log(4 / 2), math.log(4)])
    plain = TokenWeights(special_ids={1, 5})
    assert plain.weights([1, 2, 5, 7000]).tolist() == [0.0, 1.0, 0.0, 1.0]


def test_rescaling_by_hand(tmp_path):
    path = tmp_path / "b.tsv"
    path.write_text("LAYER,P,R,F\n0,0.1,0.1,0.1\n1,0.3,0.5,0.2\n")
    b = load_baseline(path, layer=1)
    assert b.rescale(0.65, 0.75, 0.2) == pytest.approx((0.5, 0.5, 0.0))


def test_bert_score_baseline_row_is_read_as_bert_score_reads_it():
    pd = pytest.importorskip("pandas")
    import bert_score
    from pathlib import Path
    path = Path(bert_score.__file__).parent / "rescale_baseline" / "en" / "roberta-large.tsv"
    b = load_baseline(path, layer=17, builtin=True)
    row = pd.read_csv(path).iloc[17].to_numpy()[1:]
    assert (b.precision, b.recall, b.f1) == pytest.approx(tuple(row), abs=1e-12)
    assert b.label == "bert_score:en/roberta-large"


def test_independent_recomputation_from_hidden_states(tiny_bert):
    """Full model, one text at a time, hidden_states[L], explicit loops: the textbook definition."""
    from transformers import AutoModel, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(tiny_bert)
    full = AutoModel.from_pretrained(tiny_bert).eval()
    pairs = [("the dog is running in the street.", "a dog was walking on the street!"),
             ("market prices increased.", "prices in the market decreased, according to the report.")]

    def vectors(text):
        ids = tok(text)["input_ids"]
        with torch.no_grad():
            h = full(torch.tensor([ids]), output_hidden_states=True).hidden_states[2][0].double().numpy()
        return ids, h / np.linalg.norm(h, axis=1, keepdims=True)

    engine = BertScoreEngine(model=tiny_bert, num_layers=2)
    for cand, ref in pairs:
        (c_ids, c), (r_ids, r) = vectors(cand), vectors(ref)
        special = {tok.cls_token_id, tok.sep_token_id}
        cw = [0.0 if i in special else 1.0 for i in c_ids]
        rw = [0.0 if i in special else 1.0 for i in r_ids]
        p = sum(w * max(float(c[i] @ r[j]) for j in range(len(r))) for i, w in enumerate(cw)) / sum(cw)
        rec = sum(w * max(float(c[i] @ r[j]) for i in range(len(c))) for j, w in enumerate(rw)) / sum(rw)
        got = engine.score([cand], [ref])[0]
        assert (got.precision, got.recall, got.f1) == pytest.approx((p, rec, 2 * p * rec / (p + rec)), abs=1e-6)
