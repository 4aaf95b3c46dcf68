"""explain(): tokens, similarity matrix and greedy alignment agree with the score; the heatmap
is a real PNG."""
from __future__ import annotations

import numpy as np
import pytest

from opik_metrics.neural.bertscore.engine import BertScoreEngine
from opik_metrics.neural.bertscore.plot import save_heatmap

CAND = "The quick brown dog jumped over the lazy cat."
REF = "A quick brown fox jumps over the lazy dog."


@pytest.mark.parametrize("idf", [False, True])
def test_explanation_matches_the_score(tiny_roberta, idf):
    engine = BertScoreEngine(model=tiny_roberta, num_layers=2, idf=idf,
                             idf_references=[REF, "the lazy cat sat."] if idf else None)
    ex = engine.explain(CAND, REF)
    s = engine.score([CAND], [REF])[0]
    assert (ex.precision, ex.recall, ex.f1) == pytest.approx((s.precision, s.recall, s.f1), abs=1e-6)
    sim = np.array(ex.similarity)
    assert sim.shape == (len(ex.candidate_tokens), len(ex.reference_tokens))
    assert [m.index for m in ex.candidate_matches] == sim.argmax(axis=1).tolist()
    assert [m.index for m in ex.reference_matches] == sim.argmax(axis=0).tolist()
    assert [m.similarity for m in ex.candidate_matches] == pytest.approx(sim.max(axis=1).tolist())
    assert ex.candidate_special[0] and ex.candidate_special[-1] and not any(ex.candidate_special[1:-1])
    assert ex.candidate_weights[0] == 0.0 and sum(ex.candidate_weights) == pytest.approx(1.0)
    assert ex.candidate_tokens[0] == "<s>" and "".join(ex.candidate_tokens[1:-1]).strip() == CAND


def test_identical_texts_align_on_the_diagonal(tiny_bert):
    ex = BertScoreEngine(model=tiny_bert, num_layers=2).explain(REF, REF)
    assert [m.index for m in ex.candidate_matches] == list(range(len(ex.candidate_tokens)))
    assert np.diag(np.array(ex.similarity)) == pytest.approx(1.0, abs=1e-6)


def test_explain_refuses_empty_text(tiny_bert):
    with pytest.raises(ValueError, match="output is empty"):
        BertScoreEngine(model=tiny_bert, num_layers=2).explain("  ", REF)


def test_heatmap_png_is_written(tiny_bert, baseline_file, tmp_path):
    matplotlib_image = pytest.importorskip("matplotlib.image")
    engine = BertScoreEngine(model=tiny_bert, num_layers=2, rescale_with_baseline=True,
                             baseline_path=baseline_file)
    ex = engine.explain(CAND, REF)
    path = save_heatmap(ex, tmp_path / "heat.png")
    data = (tmp_path / "heat.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    pixels = matplotlib_image.imread(path)
    assert pixels.shape[0] > 200 and pixels.shape[1] > 400 and pixels[..., :3].std() > 0.05
    with pytest.raises(ValueError, match="rescal"):
        save_heatmap(BertScoreEngine(model=tiny_bert, num_layers=2).explain(CAND, REF),
                     tmp_path / "x.png", rescaled=True)
