"""Half precision (``dtype=``) on every model-backed metric, on CPU: bfloat16 runs here (float16
needs a GPU and is refused with the reason), the weights really are in that dtype, the numbers
stay within a stated distance of the float32 reference computation, and every signature records
the dtype. Tolerances are measured on these tiny random models (docs/metrics.md gives the figures
on the packaged real ones)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from PIL import Image

from opik_metrics import BERTScore, CLIPScore, DistillationKL, Perplexity
from opik_metrics.neural.models.causal_lm import load_causal_lm
from opik_metrics.neural.models.encoders import resolve_dtype
from tests.corpus import realistic_pairs
from tests.neural.lm_fixtures import corpus, gpt2_dir, one_torch_thread  # noqa: F401
from tests.neural.tiny_clip import tiny_clip  # noqa: F401

bert_score = pytest.importorskip("bert_score")

CANDS, REFS = realistic_pairs(24, seed=5)


def test_dtype_rules():
    cpu = torch.device("cpu")
    assert resolve_dtype(None, cpu) is torch.float32
    assert resolve_dtype("bf16", cpu) is torch.bfloat16 and resolve_dtype("torch.bfloat16", cpu) is torch.bfloat16
    with pytest.raises(ValueError, match="^dtype=float16 needs a CUDA device; on cpu use bfloat16 or float32$"):
        resolve_dtype("float16", cpu)
    with pytest.raises(ValueError, match="'int8' is not one of float32, float16, bfloat16"):
        resolve_dtype("int8", cpu)


def test_bertscore_in_bfloat16_is_close_to_bert_score_in_float32(tiny_bert):
    """bfloat16 embeddings, float32 matching: within 0.005 of bert_score's float32 F1 on this tiny
    model (measured: at most 0.00035), and not the float32 numbers themselves."""
    half = BERTScore(model=tiny_bert, num_layers=2, dtype="bfloat16", track=False)
    full = BERTScore(model=tiny_bert, num_layers=2, track=False)
    theirs = bert_score.BERTScorer(model_type=tiny_bert, num_layers=2, lang="en")
    want = theirs.score(CANDS, REFS)[2].numpy().astype(np.float64)
    got = np.array([r[2].value for r in half.score_batch(CANDS, REFS)])
    f32 = np.array([r[2].value for r in full.score_batch(CANDS, REFS)])
    assert next(half.engine.encoder.model.parameters()).dtype is torch.bfloat16
    np.testing.assert_allclose(f32, want, atol=1e-6, rtol=0)
    np.testing.assert_allclose(got, want, atol=0.005, rtol=0)
    assert not np.array_equal(got, f32)
    assert "dtype:bfloat16" in half.signature and "dtype:float32" in full.signature


def _own_loss_perplexity(lm, text: str) -> float:
    """exp of the model's own loss on one unpadded text with BOS: the definition, in the model's dtype."""
    ids = [lm.tokenizer.bos_token_id] + lm.tokenizer(text, add_special_tokens=False).input_ids
    x = torch.tensor([ids])
    with torch.no_grad():
        return math.exp(lm.model(input_ids=x, labels=x).loss.item())


def test_perplexity_in_bfloat16_equals_the_bfloat16_models_own_loss(gpt2_dir, one_torch_thread):  # noqa: F811
    lm = load_causal_lm(str(gpt2_dir), device="cpu", dtype="bfloat16")
    assert lm.model.dtype is torch.bfloat16
    texts = [t for t in corpus(10) if len(lm.tokenizer(t).input_ids) < 127][:20]
    metric = Perplexity(model=str(gpt2_dir), device="cpu", dtype="bfloat16", batch_size=1, track=False)
    got = [r[0].value for r in metric.score_batch(texts)]
    want = [_own_loss_perplexity(lm, t) for t in texts]
    np.testing.assert_allclose(got, want, rtol=1e-5)     # measured: 1.1e-6 (the same bfloat16 ops)
    full = [r[0].value for r in Perplexity(model=str(gpt2_dir), device="cpu", track=False).score_batch(texts)]
    assert not np.array_equal(got, full)
    np.testing.assert_allclose(got, full, rtol=0.01)     # measured: 2.9e-4
    assert "dtype:bfloat16" in metric.signature


def test_distillation_kl_in_bfloat16(gpt2_dir, one_torch_thread):  # noqa: F811
    same = DistillationKL(teacher=str(gpt2_dir), student=str(gpt2_dir), dtype="bfloat16", track=False)
    result = same.score("the cat sat on the mat")[0]
    assert result.value == 0.0 and "dtype:bfloat16" in result.metadata["signature"]


def test_clipscore_in_bfloat16_is_close_to_float32(tiny_clip):  # noqa: F811
    images = [Image.new("RGB", (40 + k, 30), (20 * k % 255, 90, 200 - 10 * k)) for k in range(8)]
    captions = ["a red dog", "the cat on the car", "blue sky", "a white house", "a tree", "dog", "the photo", "red"]
    half = CLIPScore(model=tiny_clip, dtype="bfloat16", device="cpu", track=False)
    full = CLIPScore(model=tiny_clip, device="cpu", track=False)
    got = np.array([r[0].value for r in half.score_batch(captions, images=images)])
    want = np.array([r[0].value for r in full.score_batch(captions, images=images)])
    assert not np.array_equal(got, want)
    np.testing.assert_allclose(got, want, atol=0.03, rtol=0)      # measured: 0.0068 (CLIP-S is 2.5 x a cosine)
    assert "dtype:bfloat16" in half.signature


def test_the_command_line_takes_dtype(gpt2_dir, tmp_path, capsys):  # noqa: F811
    from opik_metrics.cli import main

    predictions = tmp_path / "p.txt"
    predictions.write_text("the cat sat on the mat\na dog runs\n", encoding="utf-8")
    assert main(["score", "-p", str(predictions), "-m", "perplexity", "--perplexity-model", str(gpt2_dir),
                 "--device", "cpu", "--dtype", "bfloat16", "--format", "json", "--no-progress"]) == 0
    assert "dtype:bfloat16" in capsys.readouterr().out
    assert main(["score", "-p", str(predictions), "-m", "perplexity", "--perplexity-model", str(gpt2_dir),
                 "--dtype", "float16", "--device", "cpu"]) == 2
    assert "float16 needs a CUDA device" in capsys.readouterr().err
