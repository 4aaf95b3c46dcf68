"""``score_batch`` on several processes: ROUGE's kernel run by worker processes gives the very
results of the serial path (values, reasons, metadata, order), equal to rouge-score; the choice of
processes is explained and bounded."""
import pytest
from rouge_score import rouge_scorer

from opik_metrics import ROUGE, BLEU
from opik_metrics.metrics import parallel
from tests.corpus import realistic_pairs


def _batch():
    """Mixed items: one and two references, an empty output, an empty reference, punctuation only."""
    preds, refs = realistic_pairs(2_500, seed=21)
    _, more = realistic_pairs(2_500, seed=22)
    references = [r if k % 3 else [r, m] for k, (r, m) in enumerate(zip(refs, more))]
    preds[5], references[7], preds[11] = "", "", "?!"
    return preds, references


def _as_tuples(batch):
    return [[(r.name, r.value, r.reason, r.metadata["n_references"], r.metadata["rouge_type"], str(r.metadata["signature"]))
             for r in results] for results in batch]


@pytest.mark.parametrize("options", [dict(), dict(use_stemmer=True, rouge_types=["rouge1", "rougeLsum", "rougeSU4"]),
                                     dict(multi_reference="average", alpha=0.3, name="custom")])
def test_two_processes_give_the_serial_results(monkeypatch, options):
    monkeypatch.setattr(parallel, "MIN_SLICE", 700)      # several slices a worker, in order
    seen = []
    run_kernel = parallel.run_kernel
    monkeypatch.setattr(parallel, "run_kernel", lambda *a: (seen.append(a[-1]), *run_kernel(*a))[1:])
    preds, references = _batch()
    metric = ROUGE(track=False, **options)
    serial = metric.score_batch(preds, references, workers=1)
    assert seen == []
    spread = metric.score_batch(preds, references, workers=2)
    assert seen == [2] and len(parallel.slices(len(preds), 2)) > 2
    assert _as_tuples(spread) == _as_tuples(serial)
    assert spread[5][0].reason and "output has no tokens" in spread[5][0].reason


def test_processes_equal_rouge_score():
    preds, refs = realistic_pairs(3_000, seed=23)
    types = ["rouge1", "rouge2", "rougeL"]
    got = ROUGE(rouge_types=types, track=False).score_batch(preds, refs, workers=2)
    oracle = rouge_scorer.RougeScorer(types)
    for k in range(0, 3_000, 7):
        want = oracle.score(refs[k], preds[k])
        values = {r.name: r.value for r in got[k]}
        for t in types:
            assert (values[f"{t}_precision"], values[f"{t}_recall"], values[f"{t}_f1"]) == \
                (want[t].precision, want[t].recall, want[t].fmeasure)


def test_workers_are_chosen_by_batch_size_and_checked(monkeypatch):
    monkeypatch.setattr(parallel, "_can_fork", lambda: True)
    assert parallel.resolve_workers(None, parallel.PARALLEL_MIN_ITEMS - 1) == 1
    assert parallel.resolve_workers(None, parallel.PARALLEL_MIN_ITEMS) == parallel.available_cores()
    monkeypatch.setattr(parallel, "_can_fork", lambda: False)     # threads: only when asked for
    assert parallel.resolve_workers(None, 10 * parallel.PARALLEL_MIN_ITEMS) == 1
    assert parallel.resolve_workers(3, 10) == 3
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="workers must be a positive integer"):
            ROUGE(track=False).score_batch(["a"], ["a"], workers=bad)


def test_a_tokenizer_that_cannot_travel_keeps_the_batch_here(monkeypatch):
    metric = ROUGE(tokenizer=lambda text: text.split(), track=False)
    assert metric._batch_kernel() is None
    monkeypatch.setattr(parallel, "run_kernel", lambda *a: pytest.fail("no kernel: no processes"))
    got = metric.score_batch(["a b", "c"], ["a b", "d"], workers=2)
    assert [r.value for r in got[0]][:3] == [1.0, 1.0, 1.0]


def test_metrics_without_a_kernel_score_here(monkeypatch):
    monkeypatch.setattr(parallel, "run_kernel", lambda *a: pytest.fail("BLEU has no kernel"))
    got = BLEU(track=False).score_batch(["a b c d"], ["a b c d"], workers=2)
    assert got[0][0].value == pytest.approx(1.0)
