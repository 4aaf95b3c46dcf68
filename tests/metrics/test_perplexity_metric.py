"""The Perplexity metric: Opik's call convention, metadata, corpus and experiment scores, and
bad input (clear errors or defined values with reasons, never NaN)."""
import math

import opik
import pytest
import torch

from opik_metrics.core.inputs import MetricInputError
from opik_metrics.metrics.perplexity import Perplexity
from opik_metrics.neural.models.causal_lm import load_causal_lm
from opik_metrics.neural.models.registry import ModelNotAvailableError
from tests.neural.lm_fixtures import corpus, gpt2_dir, nobos_llama_dir, one_torch_thread  # noqa: F401


def oracle(lm, text: str, bos: bool = True) -> tuple[float, int]:
    """(summed NLL, tokens) of one text straight from the model's mean loss."""
    ids = ([lm.tokenizer.bos_token_id] if bos else []) + lm.tokenizer(text, add_special_tokens=False).input_ids
    x = torch.tensor([ids])
    with torch.no_grad():
        return lm.model(input_ids=x, labels=x).loss.item() * (len(ids) - 1), len(ids) - 1


@pytest.fixture(scope="module")
def metric(gpt2_dir):
    return Perplexity(model=str(gpt2_dir), track=False)


def fitting(lm, n=10):
    return [t for t in corpus(n) if len(lm.tokenizer(t).input_ids) < 127]


def test_score_follows_opiks_convention(metric, gpt2_dir):
    lm = load_causal_lm(str(gpt2_dir), device="cpu")
    text = fitting(lm)[0]
    (res,) = metric.score(output=text, reference="ignored", input="also ignored")
    nll, n = oracle(lm, text)
    assert res.name == "perplexity" and res.reason is None
    assert res.value == pytest.approx(math.exp(nll / n), rel=1e-5)
    meta = res.metadata
    assert meta["n_tokens"] == n and meta["mean_nll"] == pytest.approx(nll / n, rel=1e-5)
    assert meta["model"] == str(gpt2_dir)
    for part in ("model:", "cfg:", "ctx:128", "bos:yes", "stride:64", "transformers:", "torch:"):
        assert part in meta["signature"]


def test_score_batch_equals_score_per_item(metric, gpt2_dir):
    texts = corpus(6)
    batch = metric.score_batch(texts, references=["r"] * len(texts))
    assert len(batch) == len(texts)
    for text, results in zip(texts, batch):
        assert results[0].value == pytest.approx(metric.score(text)[0].value, rel=1e-5)
    assert metric.score_batch([]) == []


def test_corpus_perplexity_is_token_weighted(metric, gpt2_dir):
    lm = load_causal_lm(str(gpt2_dir), device="cpu")
    texts = fitting(lm, 6) + [""]
    pairs = [oracle(lm, t) if t else (0.0, 0) for t in texts]
    want = math.exp(sum(p[0] for p in pairs) / sum(p[1] for p in pairs))
    res = metric.corpus_score(texts)
    assert res.name == "corpus_perplexity" and res.value == pytest.approx(want, rel=1e-5)
    assert res.metadata["n_tokens"] == sum(p[1] for p in pairs)
    mean_of_ppl = sum(math.exp(a / b) for a, b in pairs if b) / (len(pairs) - 1)
    assert abs(res.value - mean_of_ppl) > 1e-3  # really not the mean of per-text perplexities


def test_text_field_scores_another_input(gpt2_dir):
    m = Perplexity(model=str(gpt2_dir), text_field="text", track=False)
    assert m.score(output="x y z", text="A dog.")[0].value == pytest.approx(
        Perplexity(model=str(gpt2_dir), track=False).score("A dog.")[0].value)
    with pytest.raises(MetricInputError, match="field 'text': missing"):
        m.score(output="A dog.")


def test_in_opik_evaluation_with_experiment_score(fake_opik_backend, metric, gpt2_dir, monkeypatch):
    lm = load_causal_lm(str(gpt2_dir), device="cpu")
    texts = fitting(lm, 4)
    result = opik.evaluate_on_dict_items(items=[{"text": t} for t in texts],
                                         task=lambda item: {"output": item["text"]}, scoring_metrics=[metric])
    per_item = {tr.test_case.task_output["output"]: tr.score_results[0] for tr in result.test_results}
    for t in texts:
        nll, n = oracle(lm, t)
        assert per_item[t].value == pytest.approx(math.exp(nll / n), rel=1e-5)
    want = metric.corpus_score(texts).value
    monkeypatch.setattr(metric._scorer, "score", lambda *a, **k: pytest.fail("should reuse logged scores"))
    corpus_res = metric.experiment_score(result.test_results)
    assert corpus_res.value == pytest.approx(want, rel=1e-6)  # per-item runs vs one batch: float noise
    opik.flush_tracker()
    logged = {fs.name for tree in fake_opik_backend.trace_trees for fs in tree.feedback_scores}
    assert "perplexity" in logged


def test_empty_text_is_defined_with_a_reason(metric):
    (res,) = metric.score("")
    assert res.value == 1.0 and res.metadata["n_tokens"] == 0
    assert "no tokens" in res.reason
    assert metric.corpus_score([""]).value == 1.0 and "no text" in metric.corpus_score([""]).reason


def test_no_bos_model_scores_from_the_second_token(nobos_llama_dir):
    lm = load_causal_lm(str(nobos_llama_dir), device="cpu")
    m = Perplexity(model=lm, track=False)
    text = fitting(lm, 3)[0]
    nll, n = oracle(lm, text, bos=False)
    (res,) = m.score(text)
    assert res.value == pytest.approx(math.exp(nll / n), rel=1e-5) and "bos:no" in res.metadata["signature"]
    one_token = " the"
    (single,) = m.score(one_token)
    assert single.value == 1.0 and "no BOS" in single.reason
    with pytest.raises(ValueError, match="no BOS token"):
        Perplexity(model=lm, add_start_token=True, track=False)


@pytest.mark.parametrize("bad,what", [(None, "got None"), (3, "got int"), (["a"], "got list")])
def test_non_text_output_is_a_clear_error(metric, bad, what):
    with pytest.raises(MetricInputError, match=f"field 'output': expected a string, {what}"):
        metric.score(bad)
    with pytest.raises(MetricInputError, match=f"item 1, field 'output': expected a string, {what}"):
        metric.score_batch(["fine", bad])


def test_model_that_fails_to_load_is_a_clear_error(tmp_path):
    bad = tmp_path / "broken.Q4.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00 not really a model")
    with pytest.raises(ModelNotAvailableError, match="could not load GGUF file 'broken.Q4.gguf'"):
        Perplexity(model=str(bad), track=False)
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        Perplexity(model=str(tmp_path / "missing"), track=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelNotAvailableError, match="save_pretrained"):
        Perplexity(model=str(tmp_path / "empty"), track=False)


def test_bad_options_are_clear_errors(gpt2_dir):
    with pytest.raises(ValueError, match="stride must be an integer in \\[1, 128\\]"):
        Perplexity(model=str(gpt2_dir), stride=0, track=False)
    with pytest.raises(ValueError, match="exceeds the model's context length"):
        Perplexity(model=str(gpt2_dir), max_length=4096, track=False)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        Perplexity(model=str(gpt2_dir), batch_size=0, track=False)


def test_the_memory_budget_reaches_the_scorer_and_is_checked(gpt2_dir):
    assert Perplexity(model=str(gpt2_dir), max_memory_mb=600, track=False)._scorer.max_memory_mb == 600
    with pytest.raises(ValueError, match="max_memory_mb"):
        Perplexity(model=str(gpt2_dir), max_memory_mb=10, track=False)      # below the logits work itself


def test_nan_weights_give_nan_with_a_reason_never_a_silent_nan(gpt2_dir):
    """A damaged checkpoint (a weight that is NaN) is named in the reason of every NaN it gives;
    each NaN is a failed score (no Opik server stores one) that keeps the NaN in its metadata."""
    import torch

    from opik_metrics.neural.models.causal_lm import clear_cache

    clear_cache()
    lm = load_causal_lm(str(gpt2_dir), device="cpu")
    try:
        with torch.no_grad():
            next(lm.model.parameters()).view(-1)[:16] = float("nan")
        m = Perplexity(model=lm, track=False)
        results = m.score_batch(fitting(lm, 3))
        assert all(r.metadata["unsent_value"] == "nan" and r.scoring_failed and "not numbers (NaN)" in r.reason
                   for (r,) in results)
        corpus = m.corpus_score(fitting(lm, 3))
        assert corpus.metadata["unsent_value"] == "nan" and corpus.scoring_failed
        assert "not numbers (NaN)" in corpus.reason
    finally:
        clear_cache()
