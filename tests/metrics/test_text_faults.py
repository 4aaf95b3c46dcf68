"""Text no tokenizer takes is stopped at the door, by name (issue "Hardening"): a lone surrogate
(an LLM reply cut mid-emoji, "\\ud83d") and non-strings inside reference lists. Before, BERTScore,
perplexity, KL and explain failed deep in the tokenizer with "TextEncodeInput must be
Union[...]", naming neither item nor field. Every metric path is covered: score, score_batch,
explain, and the engines called directly."""
from __future__ import annotations

import pytest

from opik_metrics import BERTScore, BLEU, ROUGE, DistillationKL, Perplexity
from opik_metrics.core.inputs import MetricInputError, require_batch, require_references, require_text
from opik_metrics.neural.bertscore.engine import BertScoreEngine
from tests.neural.lm_fixtures import gpt2_dir, llama_dir, llama_student_dir, one_torch_thread  # noqa: F401
from tests.neural.tiny_models import build_bert

CUT = "The answer is \ud83d"                 # a reply cut between the two halves of an emoji
WHERE = r"lone surrogate U\+D83D at character 14: the text cannot be encoded as UTF-8"


@pytest.fixture(autouse=True)
def hub_offline(monkeypatch):
    import huggingface_hub.constants
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> BERTScore:
    return BERTScore(model=str(build_bert(tmp_path_factory.mktemp("faults_bert"), seed=5)), num_layers=2,
                     track=False)


# ---- the door: core.inputs ----------------------------------------------------------------

def test_require_text_names_item_field_and_position():
    with pytest.raises(MetricInputError, match=rf"^item 3, field 'output': {WHERE}$"):
        require_text(CUT, "output", 3)
    with pytest.raises(MetricInputError, match=rf"^field 'output': {WHERE}$"):
        require_text(CUT, "output")


def test_surrogates_of_every_kind_are_refused_and_real_text_is_not():
    for text, code, at in [("\udcff", "DCFF", 0),                  # a byte kept by surrogateescape
                           ("ok \ud83d\ude00", "D83D", 3),          # a pair left unjoined (from JSON)
                           ("\ude00 tail", "DE00", 0)]:
        with pytest.raises(MetricInputError, match=rf"lone surrogate U\+{code} at character {at}:"):
            require_text(text, "output", 0)
    for text in ["", "plain", "caf\u00e9 \U0001F600 \u6f22\u5b57 \u2028 \x85 \x0c"]:
        assert require_text(text, "output", 0) is text


def test_references_and_batches_name_the_item_and_the_list_position():
    with pytest.raises(MetricInputError, match=rf"^item 2, field 'reference\[1\]': {WHERE}$"):
        require_references(["fine", CUT], "reference", 2)
    with pytest.raises(MetricInputError, match=rf"^item 1, field 'output': {WHERE}$"):
        require_batch(["fine", CUT], ["a", "b"])
    with pytest.raises(MetricInputError, match=rf"^item 1, field 'reference\[0\]': {WHERE}$"):
        require_batch(["fine", "fine"], ["a", [CUT]])


# ---- every metric, every path ----------------------------------------------------------------

@pytest.mark.parametrize("make", [ROUGE, BLEU], ids=["rouge", "bleu"])
def test_text_metrics_refuse_lone_surrogates(make):
    metric = make(track=False)
    with pytest.raises(MetricInputError, match=rf"field 'output': {WHERE}"):
        metric.score(CUT, "a reference")
    with pytest.raises(MetricInputError, match=rf"item 1, field 'reference': {WHERE}"):
        metric.score_batch(["a", "b"], ["a", CUT])


def test_bertscore_score_batch_and_explain_name_item_and_field(bert, tmp_path):
    calls = {
        "score output": (lambda: bert.score(CUT, "a reference"), rf"^field 'output': {WHERE}$"),
        "score reference list": (lambda: bert.score("an output", ["fine", CUT]), rf"^field 'reference\[1\]': {WHERE}$"),
        "score_batch": (lambda: bert.score_batch(["a", "b", "c", CUT], ["a", "b", "c", "d"]),
                        rf"^item 3, field 'output': {WHERE}$"),
        "explain": (lambda: bert.explain("an output", CUT), rf"^field 'reference': {WHERE}$"),
        "save_heatmap": (lambda: bert.save_heatmap(CUT, "r", str(tmp_path / "h.png")), rf"^field 'output': {WHERE}$"),
        "engine.score": (lambda: bert.engine.score(["a", CUT], ["a", "b"]), rf"^item 1, field 'output': {WHERE}$"),
        "engine.score reference list": (lambda: bert.engine.score(["a"], [["b", CUT]]),
                                        rf"^item 0, field 'reference\[1\]': {WHERE}$"),
        "engine.explain": (lambda: bert.engine.explain("a", CUT), rf"^field 'reference': {WHERE}$"),
    }
    for what, (call, message) in calls.items():
        with pytest.raises(MetricInputError, match=message):
            call()
            pytest.fail(f"{what} accepted a lone surrogate")
    assert not (tmp_path / "h.png").exists()


def test_bertscore_non_strings_inside_reference_lists(bert):
    with pytest.raises(MetricInputError, match=r"^field 'reference\[1\]': expected a string, got int$"):
        bert.score("an output", ["fine", 3])
    with pytest.raises(MetricInputError, match=r"^item 1, field 'reference\[0\]': expected a string, got None$"):
        bert.score_batch(["a", "b"], ["a", [None]])
    with pytest.raises(MetricInputError, match=r"^field 'reference\[0\]': expected a string, got bytes$"):
        bert.explain("an output", [b"bytes"])
    with pytest.raises(ValueError, match=r"item 0, field 'reference\[1\]': expected a string, got int"):
        bert.engine.score(["a"], [["b", 3]])


def test_bertscore_idf_references_are_checked_before_tokenising(bert):
    model = bert.engine.model_name
    with pytest.raises(MetricInputError, match=rf"^field 'idf_references\[1\]\[0\]': {WHERE}$"):
        BertScoreEngine(model=model, num_layers=2, idf=True, idf_references=["fine", [CUT]])
    with pytest.raises(MetricInputError, match=rf"^field 'idf_references\[0\]': {WHERE}$"):
        BERTScore(model=model, num_layers=2, idf=True, idf_references=[CUT], track=False)


def test_perplexity_metric_and_engine(gpt2_dir):
    metric = Perplexity(model=str(gpt2_dir), track=False)
    with pytest.raises(MetricInputError, match=rf"^field 'output': {WHERE}$"):
        metric.score(output=CUT)
    with pytest.raises(MetricInputError, match=rf"^item 2, field 'output': {WHERE}$"):
        metric.score_batch(["a text", "another", CUT])
    scorer = metric._scorer
    with pytest.raises(MetricInputError, match=rf"^item 1, field 'text': {WHERE}$"):
        scorer.score(["a text", CUT])
    with pytest.raises(MetricInputError, match=r"^item 1, field 'text': expected a string, got int$"):
        scorer.score(["a text", 7])
    with pytest.raises(MetricInputError, match="one string"):
        scorer.score("a text")                     # would score each character as a text
    assert scorer.score(["caf\u00e9 \U0001F600"])[0].n_tokens > 0    # real non-ASCII text still scores


def test_distillation_kl_metric_and_engine(llama_dir, llama_student_dir):
    metric = DistillationKL(teacher=str(llama_dir), student=str(llama_student_dir), track=False)
    with pytest.raises(MetricInputError, match=rf"^field 'output': {WHERE}$"):
        metric.score(output=CUT)
    with pytest.raises(MetricInputError, match=rf"^item 1, field 'output': {WHERE}$"):
        metric.score_batch(["a text", CUT])
    with pytest.raises(MetricInputError, match=rf"^item 0, field 'text': {WHERE}$"):
        metric._scorer.score([CUT])
    with pytest.raises(MetricInputError, match=r"^item 0, field 'text': expected a string, got None$"):
        metric._scorer.score([None])
