"""Our metrics inside Opik's own evaluation loop, with the backend stood in by Opik's emulator."""
import opik
import pytest
import sacrebleu
from rouge_score import rouge_scorer

from opik_metrics import BLEU, ROUGE

PREDS = ["The quick brown fox jumped over the lazy dog.", "The product was very good. I enjoyed it."]
REFS = ["The quick brown dog jumped on the log.", "The product was good."]


def test_evaluate_on_dict_items_logs_every_score(fake_opik_backend, monkeypatch):
    items = [{"pred": p, "reference": r} for p, r in zip(PREDS, REFS)]
    bleu = BLEU()
    result = opik.evaluate_on_dict_items(
        items=items, task=lambda item: {"output": item["pred"]}, scoring_metrics=[ROUGE(), bleu],
    )
    oracle = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"])
    by_output = {}
    for tr in result.test_results:
        scores = {s.name: s.value for s in tr.score_results}
        by_output[tr.test_case.task_output["output"]] = scores
        assert not any(s.scoring_failed for s in tr.score_results)
    for p, r in zip(PREDS, REFS):
        want = oracle.score(r, p)
        assert by_output[p]["rouge1_f1"] == want["rouge1"].fmeasure
        assert by_output[p]["rougeL_recall"] == want["rougeL"].recall
        assert by_output[p]["bleu"] == pytest.approx(sacrebleu.sentence_bleu(p, [r]).score / 100)

    monkeypatch.setattr(bleu, "_score_items", lambda *a: pytest.fail("should reuse the logged BLEU statistics"))
    corpus = bleu.experiment_score(result.test_results)
    assert corpus.value == pytest.approx(sacrebleu.corpus_bleu(
        [tr.test_case.task_output["output"] for tr in result.test_results],
        [[tr.test_case.dataset_item_content["reference"] for tr in result.test_results]]).score / 100)

    opik.flush_tracker()
    logged = {fs.name for tree in fake_opik_backend.trace_trees for fs in tree.feedback_scores}
    assert {"rouge1_f1", "rouge2_precision", "rougeL_recall", "bleu"} <= logged


def test_two_bleu_configurations_each_read_their_own_logged_statistics(fake_opik_backend):
    items = [{"pred": p, "reference": r} for p, r in zip(PREDS, REFS)]
    plain, lower = BLEU(), BLEU(lowercase=True, name="bleu_lc")
    result = opik.evaluate_on_dict_items(items=items, task=lambda item: {"output": item["pred"]},
                                         scoring_metrics=[plain, lower])
    outputs = [tr.test_case.task_output["output"] for tr in result.test_results]
    refs = [[tr.test_case.dataset_item_content["reference"] for tr in result.test_results]]
    assert plain.experiment_score(result.test_results).value == pytest.approx(
        sacrebleu.corpus_bleu(outputs, refs).score / 100)
    assert lower.experiment_score(result.test_results).value == pytest.approx(
        sacrebleu.corpus_bleu(outputs, refs, lowercase=True).score / 100)
