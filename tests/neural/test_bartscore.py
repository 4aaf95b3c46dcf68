"""BARTScore against a direct, unbatched transformers computation per pair (for one unpadded pair,
BARTScore is minus the model's own mean label loss) and against the authors' batch procedure written
out here (batches padded by the tokenizer, NLL over non-pad labels, divided by the target's length),
on tiny random BART and T5 models: every direction, prompt position and multi-reference rule."""
from __future__ import annotations

import math

import opik
import pytest
import torch

from opik_metrics import BARTScore
from opik_metrics.core import MetricInputError
from opik_metrics.neural.models.registry import ModelNotAvailableError
from opik_metrics.scoring import Scorer
from tests.corpus import realistic_pairs
from tests.neural.lm_fixtures import build_gpt2, one_torch_thread  # noqa: F401 - autouse fixture
from tests.neural.tiny_seq2seq import build_bart, build_t5

TOL = 1e-6      # the oracle's loss is a float32 mean: 1e-6 relative (about 7e-6 nats) or 1e-6 absolute
REL = 1e-6


@pytest.fixture(scope="module")
def bart(tmp_path_factory) -> str:
    return str(build_bart(tmp_path_factory.mktemp("bart")))


@pytest.fixture(scope="module")
def short_bart(tmp_path_factory) -> str:
    """32 positions: corpus texts are cut."""
    return str(build_bart(tmp_path_factory.mktemp("bart32"), positions=32, seed=1))


@pytest.fixture(scope="module")
def t5(tmp_path_factory) -> str:
    return str(build_t5(tmp_path_factory.mktemp("t5")))


@pytest.fixture(scope="module")
def direct(bart):
    return Direct(bart)


class Direct:
    """The oracle: one pair at a time, minus the model's mean label loss."""

    def __init__(self, folder: str, max_length: int = 1024) -> None:
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
        self.tok = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
        positions = getattr(self.model.config, "max_position_embeddings", None)
        self.max_length = min(max_length, positions) if positions else max_length

    def __call__(self, src: str, tgt: str) -> float:
        enc = lambda t: self.tok([t], max_length=self.max_length, truncation=True, return_tensors="pt").input_ids
        with torch.no_grad():
            return -float(self.model(input_ids=enc(src), labels=enc(tgt)).loss)


def reference_procedure(folder: str, srcs: list[str], tgts: list[str], batch_size: int = 4) -> list[float]:
    """neulab/BARTScore's ``BARTScorer.score`` loop as its README describes it, written out for the test."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    pad = model.config.pad_token_id
    out = []
    for i in range(0, len(srcs), batch_size):
        s = tok(srcs[i:i + batch_size], max_length=1024, truncation=True, padding=True, return_tensors="pt")
        t = tok(tgts[i:i + batch_size], max_length=1024, truncation=True, padding=True, return_tensors="pt")
        with torch.no_grad():
            logits = model(input_ids=s.input_ids, attention_mask=s.attention_mask, labels=t.input_ids).logits
        logp = torch.log_softmax(logits.float(), dim=-1)
        nll = torch.nn.functional.nll_loss(logp.reshape(-1, logp.shape[-1]), t.input_ids.reshape(-1),
                                           ignore_index=pad, reduction="none").view(t.input_ids.shape)
        out += (-(nll.sum(1) / t.attention_mask.sum(1))).tolist()
    return out


def _items(n: int = 12, seed: int = 4):
    preds, refs = realistic_pairs(n, seed=seed)
    sources = [f"{r} {p} Extra context number {k}." for k, (p, r) in enumerate(zip(preds, refs))]
    return preds, refs, sources


def _values(results, name):
    return [next(r.value for r in item if r.name == name) for item in results]


# -- oracle ------------------------------------------------------------------------------------

def test_every_direction_equals_the_direct_computation(bart, direct):
    preds, refs, sources = _items()
    metric = BARTScore(model=bart, direction=["faithfulness", "f"], track=False)
    results = metric.score_batch(preds, refs, sources=sources)
    faith = [direct(s, p) for s, p in zip(sources, preds)]
    prec = [direct(r, p) for r, p in zip(refs, preds)]
    rec = [direct(p, r) for r, p in zip(refs, preds)]
    assert _values(results, "bartscore_faithfulness") == pytest.approx(faith, rel=REL, abs=TOL)
    assert _values(results, "bartscore_precision") == pytest.approx(prec, rel=REL, abs=TOL)
    assert _values(results, "bartscore_recall") == pytest.approx(rec, rel=REL, abs=TOL)
    assert _values(results, "bartscore_f") == pytest.approx([(p + r) / 2 for p, r in zip(prec, rec)], rel=REL, abs=TOL)
    assert all(v <= 0 for item in results for v in (r.value for r in item))


def test_the_authors_batch_procedure_gives_the_same_numbers(bart):
    preds, refs, _ = _items(10, seed=9)
    want = reference_procedure(bart, refs, preds)
    got = _values(BARTScore(model=bart, direction="precision", track=False).score_batch(preds, refs),
                  "bartscore_precision")
    assert got == pytest.approx(want, rel=REL, abs=TOL)


def test_harm_f_is_the_codes_half_harmonic_mean(bart, direct):
    preds, refs, _ = _items(5)
    results = BARTScore(model=bart, f_formula="harm_f", track=False).score_batch(preds, refs)
    for item, p, r in zip(results, preds, refs):
        P, R = direct(r, p), direct(p, r)
        assert _values([item], "bartscore_f")[0] == pytest.approx(P * R / (P + R), rel=REL, abs=TOL)


def test_multi_reference_mean_and_max(bart, direct):
    preds, refs, _ = _items(6)
    multi = [[refs[k], refs[(k + 1) % 6], "A third, unrelated reference."] for k in range(6)]
    mean = BARTScore(model=bart, track=False).score_batch(preds, multi)
    best = BARTScore(model=bart, multi_reference="max", track=False).score_batch(preds, multi)
    for k, p in enumerate(preds):
        P = [direct(r, p) for r in multi[k]]
        R = [direct(p, r) for r in multi[k]]
        assert _values([mean[k]], "bartscore_precision")[0] == pytest.approx(sum(P) / 3, rel=REL, abs=TOL)
        assert _values([mean[k]], "bartscore_f")[0] == pytest.approx((sum(P) / 3 + sum(R) / 3) / 2, rel=REL, abs=TOL)
        per_ref = [(a + b) / 2 for a, b in zip(P, R)]       # D2T/score.py: F of the best reference
        assert _values([best[k]], "bartscore_precision")[0] == pytest.approx(max(P), rel=REL, abs=TOL)
        assert _values([best[k]], "bartscore_recall")[0] == pytest.approx(max(R), rel=REL, abs=TOL)
        assert _values([best[k]], "bartscore_f")[0] == pytest.approx(max(per_ref), rel=REL, abs=TOL)
        assert best[k][0].metadata["best_reference"] == per_ref.index(max(per_ref))


@pytest.mark.parametrize("side", ["encoder", "decoder"])
def test_prompts_on_either_side_and_their_ensemble(bart, direct, side):
    preds, _, sources = _items(5)
    prompts = ["In other words", "To summarize"]
    one = BARTScore(model=bart, direction="faithfulness", prompt=prompts[0], prompt_side=side, track=False)
    both = BARTScore(model=bart, direction="faithfulness", prompt=prompts, prompt_side=side, track=False)

    def prompted(s, p, prompt):
        return direct(s + " " + prompt + ",", p) if side == "encoder" else direct(s, prompt + ", " + p)

    got_one = _values(one.score_batch(preds, sources=sources), "bartscore_faithfulness")
    got_both = _values(both.score_batch(preds, sources=sources), "bartscore_faithfulness")
    assert got_one == pytest.approx([prompted(s, p, prompts[0]) for s, p in zip(sources, preds)], rel=REL, abs=TOL)
    assert got_both == pytest.approx([sum(prompted(s, p, q) for q in prompts) / 2 for s, p in zip(sources, preds)],
                                     rel=REL, abs=TOL)
    assert f"prompt:{prompts[0]}" in str(one.signature) and f"prompt_side:{side}" in str(one.signature)


def test_t5_is_scored_the_same_way(t5):
    oracle = Direct(t5)
    preds, refs, _ = _items(5)
    got = BARTScore(model=t5, direction="recall", track=False).score_batch(preds, refs)
    assert _values(got, "bartscore_recall") == pytest.approx([oracle(p, r) for p, r in zip(preds, refs)], rel=REL, abs=TOL)


# -- batching, truncation ----------------------------------------------------------------------

def test_batching_and_length_buckets_never_change_a_value(bart):
    preds, refs, sources = _items(14, seed=2)
    values = []
    for options in ({"batch_size": 1}, {"batch_size": 3}, {"batch_size": 64}, {"batch_tokens": 90}):
        metric = BARTScore(model=bart, direction=["faithfulness", "f"], track=False, **options)
        values.append([r.value for item in metric.score_batch(preds, refs, sources=sources) for r in item])
    for other in values[1:]:
        assert other == pytest.approx(values[0], rel=REL, abs=TOL)


def test_texts_longer_than_the_model_are_cut_as_the_reference_code_cuts_them(short_bart):
    oracle = Direct(short_bart)
    preds, refs, sources = _items(6)
    metric = BARTScore(model=short_bart, direction="faithfulness", track=False)
    results = metric.score_batch(preds, sources=sources)
    assert _values(results, "bartscore_faithfulness") == pytest.approx(
        [oracle(s, p) for s, p in zip(sources, preds)], rel=REL, abs=TOL)
    assert all("cut at the model's 32 tokens" in item[0].reason for item in results)
    short = metric.score(output="A dog.", input="A dog runs.")[0]
    assert short.reason is None


def test_a_state_dict_over_the_model_is_loaded_and_signed(bart, tmp_path):
    from transformers import AutoModelForSeq2SeqLM
    model = AutoModelForSeq2SeqLM.from_pretrained(bart)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    path = tmp_path / "bart.pth"
    torch.save(model.state_dict(), path)
    model.save_pretrained(tmp_path / "tuned")
    from transformers import AutoTokenizer
    AutoTokenizer.from_pretrained(bart).save_pretrained(tmp_path / "tuned")
    oracle = Direct(str(tmp_path / "tuned"))
    metric = BARTScore(model=bart, state_dict=str(path), direction="faithfulness", track=False)
    got = metric.score(output="The cat sat.", input="A cat sat on the mat today.")[0]
    assert got.value == pytest.approx(oracle("A cat sat on the mat today.", "The cat sat."), rel=REL, abs=TOL)
    assert "weights:bart.pth@" in str(metric.signature)
    plain = BARTScore(model=bart, direction="faithfulness", track=False)
    assert plain.score(output="The cat sat.", input="A cat sat on the mat today.")[0].value != got.value


# -- inputs: Opik, the scorer, errors -------------------------------------------------------------

def test_the_source_comes_from_the_scoring_inputs(bart, direct):
    metric = BARTScore(model=bart, direction="faithfulness", track=False)
    items = [{"output": "A dog runs.", "input": "The dog runs in the park."},
             {"output": "Cats sleep.", "input": "Most cats sleep all day."}]
    results = Scorer([metric]).results(items)
    assert [r.value for (_, r), in results] == pytest.approx(
        [direct(x["input"], x["output"]) for x in items], rel=REL, abs=TOL)
    mapped = BARTScore(model=bart, direction="faithfulness", source_field="document", track=False)
    assert mapped.score(output="A dog runs.", document="The dog runs in the park.")[0].value == pytest.approx(
        results[0][0][1].value, rel=REL, abs=TOL)


def test_inside_opik_evaluate(bart, direct, fake_opik_backend):
    preds, refs, sources = _items(3)
    metric = BARTScore(model=bart, direction=["faithfulness", "f"])
    result = opik.evaluate_on_dict_items(
        items=[{"input": s, "reference": r, "pred": p} for p, r, s in zip(preds, refs, sources)],
        task=lambda item: {"output": item["pred"]}, scoring_metrics=[metric])
    by_output = {tr.test_case.task_output["output"]: {s.name: s.value for s in tr.score_results}
                 for tr in result.test_results}
    for p, s in zip(preds, sources):
        assert by_output[p]["bartscore_faithfulness"] == pytest.approx(direct(s, p), rel=REL, abs=TOL)
    corpus = metric.experiment_score(result.test_results)
    assert corpus.name == "corpus_bartscore_faithfulness"
    assert corpus.value == pytest.approx(sum(direct(s, p) for p, s in zip(preds, sources)) / 3, rel=REL, abs=TOL)


def test_missing_inputs_are_one_clear_error(bart):
    faith = BARTScore(model=bart, direction="faithfulness", track=False)
    with pytest.raises(MetricInputError, match="field 'input': missing.*scoring_key_mapping"):
        faith.score(output="A dog.")
    with pytest.raises(MetricInputError, match="item 1, field 'input': missing"):
        faith.score_batch(["a", "b"], sources=["x", None])
    with pytest.raises(MetricInputError, match="field 'reference': missing"):
        BARTScore(model=bart, track=False).score(output="A dog.")
    (failed,), = Scorer([faith]).results([{"output": "A dog."}])
    assert failed[1].scoring_failed and "field 'input': missing" in failed[1].reason


def test_bad_options_are_refused(bart, tmp_path):
    with pytest.raises(ValueError, match="direction: expected one or more of"):
        BARTScore(model=bart, direction="both", track=False)
    with pytest.raises(ValueError, match="multi_reference: expected one of mean, max"):
        BARTScore(model=bart, multi_reference="best", track=False)
    with pytest.raises(ValueError, match="prompt: expected a non-empty text"):
        BARTScore(model=bart, prompt=[""], track=False)
    with pytest.raises(ModelNotAvailableError, match="state_dict: no file"):
        BARTScore(model=bart, state_dict=str(tmp_path / "missing.pth"), track=False)
    gpt2 = build_gpt2(tmp_path / "gpt2")
    with pytest.raises(ValueError, match="is not an encoder-decoder model"):
        BARTScore(model=str(gpt2), track=False)


def test_facts_and_names(bart):
    metric = BARTScore(model=bart, direction="f", name="bs", track=False)
    assert [f.name for f in metric.facts.scores] == ["bs_bartscore_precision", "bs_bartscore_recall",
                                                    "bs_bartscore_f"]
    assert [f.part for f in metric.facts.scores] == [True, True, False]
    assert metric.facts.corpus.name == "corpus_bs_bartscore_f" and metric.facts.higher_is_better
    stats = metric.statistics(["A dog."], ["A dog runs."])
    assert metric.from_statistics(stats[0]).value == pytest.approx(metric.score("A dog.", "A dog runs.")[2].value)


# -- the published value ---------------------------------------------------------------------------

def _hub_snapshot(repo: str) -> str | None:
    try:
        from huggingface_hub import snapshot_download
        return snapshot_download(repo, local_files_only=True)
    except Exception:
        return None


@pytest.mark.skipif(_hub_snapshot("facebook/bart-large-cnn") is None,
                    reason="facebook/bart-large-cnn is not in the local Hugging Face cache (no hub here)")
def test_the_readme_value_with_bart_large_cnn():
    metric = BARTScore(model=_hub_snapshot("facebook/bart-large-cnn"), direction="faithfulness", track=False)
    value = metric.score(output="This is fun.", input="This is interesting.")[0].value
    assert math.isclose(value, -2.510652780532837, abs_tol=1e-4)


def test_concurrent_score_calls_from_opik_threads_are_each_cut_right(short_bart):
    """opik.evaluate calls score from many threads: the shared tokenizer's truncation must not leak
    from one call into another (a cut at 33 tokens reaching BART's 32 positions crashed)."""
    from concurrent.futures import ThreadPoolExecutor
    metric = BARTScore(model=short_bart, direction="faithfulness", track=False)
    preds, _, sources = _items(8)
    serial = [metric.score(output=p, input=s)[0].value for p, s in zip(preds, sources)]
    with ThreadPoolExecutor(16) as pool:
        threaded = list(pool.map(lambda k: metric.score(output=preds[k % 8], input=sources[k % 8])[0].value,
                                 range(64)))
    assert threaded == pytest.approx([serial[k % 8] for k in range(64)], rel=REL, abs=TOL)


def test_outputs_of_one_document_share_its_encoding_and_keep_their_values(bart, direct):
    """Several systems' outputs of one source (SummEval's shape): the source is encoded once a batch."""
    preds, _, sources = _items(12, seed=6)
    shared = [sources[k // 4] for k in range(12)]
    got = BARTScore(model=bart, direction="faithfulness", track=False).score_batch(preds, sources=shared)
    assert _values(got, "bartscore_faithfulness") == pytest.approx(
        [direct(s, p) for s, p in zip(shared, preds)], rel=REL, abs=TOL)
