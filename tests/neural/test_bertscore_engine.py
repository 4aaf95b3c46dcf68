"""Engine behaviour beyond the numbers: defaults, loading once, cache, degenerate input, errors."""
from __future__ import annotations

import math
import threading

import pytest

from opik_metrics.neural.models import encoders as loading
from opik_metrics.neural.bertscore.engine import BertScoreEngine
from opik_metrics.neural.bertscore.layers import default_layer, default_model, table_key
from opik_metrics.neural.models.registry import ModelNotAvailableError, ResolvedModel, resolve_model


# --- defaults (bert_score's tables) ----------------------------------------------------------
def test_defaults_follow_bert_score_tables():
    assert default_model("en") == "roberta-large"
    assert default_model("EN") == "roberta-large"
    assert default_model("zh") == "bert-base-chinese"
    assert default_model("de") == "bert-base-multilingual-cased"
    assert default_layer(resolve_model("roberta-large")) == 17
    assert default_layer(resolve_model("bert-base-uncased")) == 9
    assert default_layer(resolve_model("microsoft/deberta-xlarge-mnli")) == 40


def test_table_key_knows_todays_hub_ids_and_cache_folders():
    assert table_key(resolve_model("FacebookAI/roberta-large")) == "roberta-large"
    snap = "/root/.cache/huggingface/hub/models--FacebookAI--roberta-large/snapshots/abc123"
    assert table_key(ResolvedModel(name=snap, source=snap, kind="local")) == "roberta-large"
    assert table_key(resolve_model("packaged:minilm")) == "sentence-transformers/all-MiniLM-L6-v2"


def test_local_path_without_layer_is_a_clear_error(tiny_bert):
    with pytest.raises(ValueError, match="num_layers"):
        BertScoreEngine(model=tiny_bert)


def test_layer_out_of_range_names_the_range(tiny_bert):
    with pytest.raises(ValueError, match=r"0\.\.3"):
        BertScoreEngine(model=tiny_bert, num_layers=7)
    with pytest.raises(ValueError, match="num_layers"):
        BertScoreEngine(model=tiny_bert, num_layers=-1)


def test_default_english_model_offline_raises_model_not_available():
    with pytest.raises(ModelNotAvailableError, match="roberta-large.*packaged:minilm"):
        BertScoreEngine(lang="en")


def test_missing_local_path_raises_model_not_available():
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        BertScoreEngine(model="/no/such/model/dir", num_layers=2)


def test_half_precision_on_cpu_is_refused(tiny_bert):
    with pytest.raises(ValueError, match="CUDA"):
        BertScoreEngine(model=tiny_bert, num_layers=2, device="cpu", dtype="float16")
    with pytest.raises(ValueError, match="dtype"):
        BertScoreEngine(model=tiny_bert, num_layers=2, dtype="int8")


# --- loading ----------------------------------------------------------------------------------
def test_model_is_cut_at_the_layer(tiny_bert):
    engine = BertScoreEngine(model=tiny_bert, num_layers=1)
    assert len(engine.encoder.model.encoder.layer) == 1
    assert engine.encoder.total_layers == 3
    assert engine.encoder.attn_implementation == "sdpa"


def test_loaded_once_per_process_across_metrics_and_threads(tiny_bert):
    before = loading.loaded_count()
    engines: list[BertScoreEngine] = []
    barrier = threading.Barrier(4)

    def build():
        barrier.wait()
        engines.append(BertScoreEngine(model=tiny_bert, num_layers=3))

    threads = [threading.Thread(target=build) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(engines) == 4
    assert len({id(e.encoder) for e in engines}) == 1
    assert loading.loaded_count() <= before + 1
    other = BertScoreEngine(model=tiny_bert, num_layers=2)
    assert other.encoder is not engines[0].encoder  # another layer is another cut model


def test_shared_reference_is_embedded_once(tiny_bert):
    engine = BertScoreEngine(model=tiny_bert, num_layers=2)
    forwarded: list[int] = []
    real = engine.embedder.forward
    engine.embedder.forward = lambda ids: (forwarded.append(len(ids)), real(ids))[1]
    cands = [f"the dog number {k} is running." for k in range(6)] + ["the dog number 0 is running."]
    engine.score(cands, ["a dog runs in the street."] * len(cands))
    assert sum(forwarded) == 7  # 6 distinct candidates + 1 shared reference
    engine.score(cands[:3], ["a dog runs in the street."] * 3)
    assert sum(forwarded) == 7  # all cached


# --- degenerate input -------------------------------------------------------------------------
def test_empty_output_is_zero_with_reason_and_warning(tiny_bert, baseline_file):
    engine = BertScoreEngine(model=tiny_bert, num_layers=2)
    with pytest.warns(UserWarning, match="empty"):
        res = engine.score(["", "   ", "the dog."], ["the dog.", "the dog.", "the dog."])
    for s in res[:2]:
        assert (s.precision, s.recall, s.f1) == (0.0, 0.0, 0.0)
        assert "empty" in s.reason
    assert res[2].f1 == pytest.approx(1.0, abs=1e-6) and res[2].reason is None
    rescaled = BertScoreEngine(model=tiny_bert, num_layers=2, rescale_with_baseline=True,
                               baseline_path=baseline_file)
    with pytest.warns(UserWarning):
        s = rescaled.score([""], ["the dog."])[0]
    b = rescaled.baseline
    assert s.f1 == pytest.approx((0 - b.f1) / (1 - b.f1))  # raw 0, rescaled like bert_score


def test_empty_reference_scores_zero_and_others_still_count(tiny_bert):
    engine = BertScoreEngine(model=tiny_bert, num_layers=2)
    best = engine.score(["the dog runs."], [["", "the dog runs."]])[0]
    assert best.f1 == pytest.approx(1.0, abs=1e-6) and best.best_reference == 1
    assert "reference 0 is empty" in best.reason
    none = engine.score(["the dog runs."], [[" "]])[0]
    assert (none.precision, none.recall, none.f1) == (0.0, 0.0, 0.0)


def test_idf_needs_a_corpus_and_never_gives_nan(tiny_bert):
    with pytest.raises(ValueError, match="idf_references"):
        BertScoreEngine(model=tiny_bert, num_layers=2, idf=True)
    with pytest.raises(ValueError, match="idf=True"):
        BertScoreEngine(model=tiny_bert, num_layers=2, idf_references=["a"])
    with pytest.raises(ValueError, match="empty"):
        BertScoreEngine(model=tiny_bert, num_layers=2, idf=True, idf_references=[])
    # bert_score with this one-reference corpus gives R = NaN, F = 0: every idf weight is 0
    engine = BertScoreEngine(model=tiny_bert, num_layers=2, idf=True, idf_references=["the dog runs."])
    s = engine.score(["the dog runs."], ["the dog runs."])[0]
    assert (s.precision, s.recall, s.f1) == pytest.approx((1.0, 1.0, 1.0), abs=1e-6)
    assert "uniform weights" in s.reason


def test_long_text_is_truncated_and_says_so(tiny_bert):
    engine = BertScoreEngine(model=tiny_bert, num_layers=2)
    s = engine.score(["the " * 100], ["the"])[0]
    assert "output truncated from 102 to 64 tokens" in s.reason
    assert math.isfinite(s.f1)


def test_odd_texts_give_finite_scores(tiny_bert, tiny_roberta):
    odd = ["\x00\x01", "!!!", "😀😀", "東京", "a" * 500, "[SEP] [CLS]", "<s></s>", "\n\t"]
    for path in (tiny_bert, tiny_roberta):
        engine = BertScoreEngine(model=path, num_layers=2)
        with pytest.warns(UserWarning):  # "\n\t" strips to empty
            res = engine.score(odd, list(reversed(odd)))
        assert all(math.isfinite(v) for s in res for v in (s.precision, s.recall, s.f1))


def test_bad_batches_name_the_item(tiny_bert):
    engine = BertScoreEngine(model=tiny_bert, num_layers=2)
    with pytest.raises(ValueError, match="item 1, field 'output'"):
        engine.score(["a", None], ["a", "b"])
    with pytest.raises(ValueError, match="item 0, field 'reference'"):
        engine.score(["a"], [[]])
    with pytest.raises(ValueError, match="got 2 outputs but 1 references"):
        engine.score(["a", "b"], ["a"])


# --- rescaling options -----------------------------------------------------------------------
def test_rescaling_errors(tiny_bert, tmp_path, baseline_file):
    with pytest.raises(ValueError, match="baseline_path"):
        BertScoreEngine(model=tiny_bert, num_layers=2, rescale_with_baseline=True)  # no shipped file
    with pytest.raises(ValueError, match="rescale_with_baseline=True"):
        BertScoreEngine(model=tiny_bert, num_layers=2, baseline_path=baseline_file)
    bad = tmp_path / "bad.tsv"
    bad.write_text("layer;p;r;f\n0;1;2;3\n")
    with pytest.raises(ValueError, match="LAYER,P,R,F"):
        BertScoreEngine(model=tiny_bert, num_layers=2, rescale_with_baseline=True, baseline_path=str(bad))
    short = tmp_path / "short.tsv"
    short.write_text("LAYER,P,R,F\n0,0.1,0.1,0.1\n")
    with pytest.raises(ValueError, match="no row for layer 2"):
        BertScoreEngine(model=tiny_bert, num_layers=2, rescale_with_baseline=True, baseline_path=str(short))
    with pytest.raises(ValueError, match="no such file"):
        BertScoreEngine(model=tiny_bert, num_layers=2, rescale_with_baseline=True, baseline_path="/no/file")


# --- tokenisation and signature --------------------------------------------------------------
def test_roberta_gets_a_prefix_space_like_bert_score(tiny_roberta_plain_tokenizer):
    """bert_score tokenises RoBERTa with add_prefix_space=True (transformers 5 drops that flag
    when passed at call time, so bert_score 0.3.13 there no longer does; we keep the intent)."""
    from transformers import AutoTokenizer
    engine = BertScoreEngine(model=tiny_roberta_plain_tokenizer, num_layers=2)
    tok = AutoTokenizer.from_pretrained(tiny_roberta_plain_tokenizer)
    ids = engine.embedder.tokenize(["  Hello world."])[0].ids
    assert ids == tuple(tok(" Hello world.")["input_ids"])
    assert ids != tuple(tok("Hello world.")["input_ids"])


def test_signature_pins_what_the_number_depends_on(tiny_bert, baseline_file):
    import torch
    import transformers
    plain = BertScoreEngine(model=tiny_bert, num_layers=2)
    for part in ("L2", "idf:no", "rescale:no", f"transformers:{transformers.__version__}",
                 f"torch:{torch.__version__}", "opik-metrics:", "max_len:64", "dtype:float32"):
        assert part in plain.signature
    a = BertScoreEngine(model=tiny_bert, num_layers=2, idf=True, idf_references=["a dog", "a cat"])
    b = BertScoreEngine(model=tiny_bert, num_layers=2, idf=True, idf_references=["a dog", "a bird"])
    assert "idf:M=2" in a.signature and a.signature != b.signature
    r = BertScoreEngine(model=tiny_bert, num_layers=2, rescale_with_baseline=True, baseline_path=baseline_file)
    assert "rescale:custom:custom.tsv" in r.signature


def test_checkpoint_without_tokenizer_files_is_refused(tiny_bert, tmp_path):
    """transformers 5 silently builds an empty tokenizer there: every word would be [UNK]."""
    import shutil
    for name in ("config.json", "model.safetensors"):
        shutil.copy(f"{tiny_bert}/{name}", tmp_path / name)
    with pytest.raises(ModelNotAvailableError, match="no tokenizer files"):
        BertScoreEngine(model=str(tmp_path), num_layers=2)
