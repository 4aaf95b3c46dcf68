"""Batches by length: a count of sequences (CPU default) or a budget of padded tokens (GPU
default, or given), worked by hand; the budget never changes a score."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from opik_metrics import BERTScore
from opik_metrics.neural.models.host_copies import to_device
from opik_metrics.neural.models.length_batches import GPU_BATCH_TOKENS, length_batches, token_budget
from tests.corpus import realistic_pairs


def test_a_count_of_sequences_longest_first():
    assert length_batches([3, 10, 5, 10, 1], 2) == [[1, 3], [2, 0], [4]]


def test_a_token_budget_fills_each_batch():
    # 10+10 pads to 2 x 10 = 20 <= 20; 8 then 3 pads to 2 x 8 = 16, a third row would be 24;
    # the three 3s pad to 9; the last 3 would make 4 x 3 = 12, still in, so it joins them
    assert length_batches([10, 10, 8, 3, 3, 3, 3], None, 20) == [[0, 1], [2, 3], [4, 5, 6]]
    assert length_batches([30, 5], None, 20) == [[0], [1]]          # longer than the budget: alone
    assert length_batches([4, 4, 4, 4], 3, 100) == [[0, 1, 2], [3]]  # both limits hold


def test_the_budget_is_the_gpu_default():
    assert token_budget(None, torch.device("cuda")) == GPU_BATCH_TOKENS
    assert token_budget(None, torch.device("cpu")) is None
    assert token_budget(512, torch.device("cpu")) == 512
    with pytest.raises(ValueError, match="^batch_tokens must be a positive integer, got 0$"):
        token_budget(0, torch.device("cpu"))
    with pytest.raises(ValueError, match="^batch_size must be a positive integer, got True$"):
        length_batches([1], True)


def test_copies_to_the_cpu_are_plain():
    x = torch.arange(6).view(2, 3)
    assert torch.equal(to_device(x, "cpu"), x)


def test_a_token_budget_does_not_change_bertscore(tiny_bert):
    cands, refs = realistic_pairs(40, seed=9)
    by_count = BERTScore(model=tiny_bert, num_layers=2, batch_size=7, track=False)
    by_tokens = BERTScore(model=tiny_bert, num_layers=2, batch_tokens=256, track=False)
    embedder = by_tokens.engine.embedder
    ids = [t.ids for t in embedder.tokenize(cands + refs)]
    groups = embedder.batches(ids)
    assert embedder.batch_size is None and len(groups) > 3
    assert all(len(g) * len(ids[g[0]]) <= 256 or len(g) == 1 for g in groups)
    assert max(len(g) for g in groups) > 7                     # short texts: more than a count would take
    got = np.array([[r.value for r in item] for item in by_tokens.score_batch(cands, refs)])
    want = np.array([[r.value for r in item] for item in by_count.score_batch(cands, refs)])
    np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
