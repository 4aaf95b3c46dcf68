"""The packaged SmolLM2-135M (real weights, GGUF): perplexity equals exp(model loss), whatever
the batch, and English scores better than the same words shuffled."""
import math
import random

import pytest
import torch

from opik_metrics.neural.lm.perplexity import PerplexityScorer
from tests.neural.lm_fixtures import one_torch_thread, smollm2  # noqa: F401

TEXTS = [
    "The cat sat on the mat and looked out of the window.",
    "Paris is the capital of France.",
    "In 1969, astronauts landed on the Moon for the first time.",
    "Hello!",
    "The results of the study were published in a scientific journal last year, and other "
    "researchers have since repeated the experiment with similar results.",
]


@pytest.mark.slow
def test_smollm2_equals_model_loss_and_is_batch_invariant(smollm2):
    lm = smollm2
    assert lm.context_length == 8192 and lm.bos_token_id == 1 and lm.tokenizer.model_max_length == 8192
    batched = PerplexityScorer(lm, batch_size=8).score(TEXTS)
    alone = [PerplexityScorer(lm).score([t])[0] for t in TEXTS]
    for text, got, single in zip(TEXTS, batched, alone):
        ids = [lm.bos_token_id] + lm.tokenizer(text, add_special_tokens=False).input_ids
        x = torch.tensor([ids])
        with torch.no_grad():
            want = math.exp(lm.model(input_ids=x, labels=x).loss.item())
        assert got.n_tokens == len(ids) - 1
        assert got.perplexity == pytest.approx(want, rel=1e-5)
        assert single.perplexity == pytest.approx(got.perplexity, rel=1e-5)
    rng = random.Random(0)
    shuffled = [" ".join(rng.sample(t.split(), len(t.split()))) for t in TEXTS]
    mixed = PerplexityScorer(lm, batch_size=8).score(shuffled)
    assert sum(r.perplexity < m.perplexity for r, m in zip(batched, mixed)) >= 4  # English beats word salad
