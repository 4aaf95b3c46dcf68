"""Adding metrics to a stored experiment: the new item scores equal the metric's own score_batch
on the stored outputs, the corpus scores its corpus_score; outputs, failures and earlier scores
stay; an interrupted rescore resumes, scoring each item once; a metric already there is refused
unless replaced; a rescore killed halfway resumes; compare reads the new scores."""
from __future__ import annotations

import multiprocessing
import sqlite3
import time

import pytest
import sacrebleu

import opik_metrics
from opik_metrics import BLEU, CIDEr, METEOR, ROUGE
from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.reading.sources import from_store
from opik_metrics.core import facts_of
from opik_metrics.experiments.rescore import MetricPresent, rescore_local
from opik_metrics.experiments.runner import run_experiment
from opik_metrics.experiments.store import ExperimentLocked, ExperimentStore, StoreError
from tests.experiments.toy import ITEMS, EchoTask


def _run(path, name="toy", items=ITEMS, task=None):
    run_experiment(name, items, task or EchoTask(), [ROUGE()], dataset_name="toy-data", config={"model": "echo"},
                   store=path, chunk_size=2, progress=False)


def _rescore(path, metrics, name="toy", **kw):
    with ExperimentStore(path) as store:
        return rescore_local(store, name, metrics, chunk_size=2, progress=False, **kw)


def _stored(path, name="toy"):
    with ExperimentStore(path) as store:
        info = store.info(name)
        return info, store.items(info.id)


def _score_rows(path, metric):
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT item_key, COUNT(*) FROM scores WHERE metric = ? GROUP BY item_key",
                          (metric,)).fetchall()
    finally:
        db.close()


class Counting:
    """A metric noting every output it scores; raises KeyboardInterrupt (Ctrl-C) on batch ``stop_at``."""

    def __init__(self, stop_at: int | None = None, **kw) -> None:
        super().__init__(**kw)
        self.scored: list[str] = []
        self.batches = 0
        self.stop_at = stop_at

    def score_batch(self, outputs, references=None, **kw):
        self.batches += 1
        if self.batches == self.stop_at:
            raise KeyboardInterrupt
        self.scored.extend(outputs)
        return super().score_batch(outputs, references, **kw)


class CountingMETEOR(Counting, METEOR):
    pass


class CountingBLEU(Counting, BLEU):
    pass


class CountingCIDEr(Counting, CIDEr):
    pass


def test_new_scores_equal_the_metric_on_the_stored_outputs(tmp_path):
    path = tmp_path / "s.sqlite"
    _run(path)
    before_info, before = _stored(path)
    summary = _rescore(path, [METEOR(), BLEU()])
    info, items = _stored(path)

    scored = [it for it in items if it.status == "scored"]
    outputs = [it.output["output"] for it in scored]
    references = [it.input["reference"] for it in scored]
    want_meteor = [r[0].value for r in METEOR().score_batch(outputs, references)]
    want_bleu = [r[0].value for r in BLEU().score_batch(outputs, references)]
    assert [it.scores["meteor"].value for it in scored] == pytest.approx(want_meteor)
    assert [it.scores["bleu"].value for it in scored] == pytest.approx(want_bleu)
    assert info.experiment_scores["corpus_meteor"] == pytest.approx(METEOR().corpus_score(outputs, references).value)
    assert info.experiment_scores["corpus_bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(outputs, [references]).score / 100)
    assert summary.experiment_scores == info.experiment_scores

    # the run's outputs, traces, earlier scores and failures are as they were
    old = {it.key: it for it in before}
    for it in items:
        assert (it.status, it.output, it.trace, it.task_seconds, it.failure) == \
            (old[it.key].status, old[it.key].output, old[it.key].trace, old[it.key].task_seconds, old[it.key].failure)
        assert {n: s.value for n, s in it.scores.items() if s.metric == "rouge"} == \
            {n: s.value for n, s in old[it.key].scores.items()}
    failed = [it for it in items if it.status == "failed"]
    assert {it.failure for it in failed} == {"HTTP 404 Not Found", "RuntimeError: model exploded"}
    assert all(not it.scores for it in failed) and summary.failed_items == 2
    assert info.status == before_info.status == "finished" and info.runs == before_info.runs

    # the facts and signatures, as a first run records them
    assert info.config["metrics"]["meteor"] == facts_of(METEOR()).as_dict()
    assert info.config["metrics"]["bleu"] == facts_of(BLEU()).as_dict()
    assert info.config["metrics"]["rouge"] == before_info.config["metrics"]["rouge"]
    assert "rescoring" not in info.config and info.config["rescores"][-1]["metrics"] == ["meteor", "bleu"]


def test_an_interrupted_rescore_resumes_scoring_each_item_once(tmp_path):
    path = tmp_path / "s.sqlite"
    _run(path)
    first = CountingMETEOR(stop_at=2)
    with pytest.raises(KeyboardInterrupt):
        _rescore(path, [first])
    info, items = _stored(path)
    assert info.config["rescoring"] == ["meteor"] and info.experiment_scores.keys().isdisjoint({"corpus_meteor"})
    assert len(first.scored) == 2 and len(_score_rows(path, "meteor")) == 2     # the first chunk, committed

    second = CountingMETEOR()
    summary = _rescore(path, [second])              # no --replace needed: it is the same rescore, resumed
    info, items = _stored(path)
    scored = [it for it in items if it.status == "scored"]
    assert sorted(first.scored + second.scored) == sorted(it.output["output"] for it in scored)
    assert sorted(n for _, n in _score_rows(path, "meteor")) == [1] * len(scored)
    assert summary.resumed_items == 2 and "rescoring" not in info.config
    whole = tmp_path / "whole.sqlite"
    _run(whole)
    _rescore(whole, [METEOR()])
    assert info.experiment_scores == pytest.approx(_stored(whole)[0].experiment_scores)


def test_an_interrupted_cider_rescore_resumes_with_its_document_frequencies(tmp_path):
    path = tmp_path / "s.sqlite"
    _run(path)
    with pytest.raises(KeyboardInterrupt):
        _rescore(path, [CountingCIDEr(stop_at=2)])
    second = CountingCIDEr()
    _rescore(path, [second])                        # the same context fitted again: resumed, not refused
    whole = tmp_path / "whole.sqlite"
    run_experiment("toy", ITEMS, EchoTask(), [ROUGE(), CIDEr()], dataset_name="toy-data", config={"model": "echo"},
                   store=whole, chunk_size=2, progress=False)
    (got, items), (want, first) = _stored(path), _stored(whole)
    assert len(second.scored) == 2
    assert [it.scores["cider"].value for it in items if it.status == "scored"] == \
        pytest.approx([it.scores["cider"].value for it in first if it.status == "scored"])
    assert got.experiment_scores["corpus_cider"] == pytest.approx(want.experiment_scores["corpus_cider"])


def test_a_metric_already_there_is_refused_unless_replaced(tmp_path):
    path = tmp_path / "s.sqlite"
    _run(path)
    _rescore(path, [BLEU()])
    for metric in (ROUGE(), BLEU()):
        with pytest.raises(MetricPresent, match=f"metric '{metric.name}' is already there.*--replace"):
            _rescore(path, [metric])
    before = {it.key: it.scores["bleu"].value for it in _stored(path)[1] if it.status == "scored"}
    _rescore(path, [BLEU(tokenize="char")], replace=True)
    info, items = _stored(path)
    assert info.config["metrics"]["bleu"]["signature"]["fields"]["tok"] == "char"
    assert info.config["rescores"][-1]["replaced"] == ["bleu"]
    scored = [it for it in items if it.status == "scored"]
    want = BLEU(tokenize="char").score_batch([it.output["output"] for it in scored],
                                             [it.input["reference"] for it in scored])
    assert [it.scores["bleu"].value for it in scored] == pytest.approx([r[0].value for r in want])
    assert [it.scores["bleu"].value for it in scored] != pytest.approx(list(before.values()))
    assert sorted(n for _, n in _score_rows(path, "bleu")) == [1] * len(scored)


def test_an_interrupted_rescore_with_other_settings_needs_replace(tmp_path):
    path = tmp_path / "s.sqlite"
    _run(path)
    with pytest.raises(KeyboardInterrupt):
        _rescore(path, [CountingBLEU(stop_at=2)])
    with pytest.raises(MetricPresent, match="interrupted rescore made it with other settings"):
        _rescore(path, [BLEU(tokenize="char")])
    _rescore(path, [BLEU(tokenize="char")], replace=True)
    info, items = _stored(path)
    scored = [it for it in items if it.status == "scored"]
    want = BLEU(tokenize="char").score_batch([it.output["output"] for it in scored],
                                             [it.input["reference"] for it in scored])
    assert [it.scores["bleu"].value for it in scored] == pytest.approx([r[0].value for r in want])
    assert "rescoring" not in info.config


def test_an_unfinished_run_is_not_rescored(tmp_path):
    path = tmp_path / "s.sqlite"
    with pytest.raises(KeyboardInterrupt):
        _run(path, task=EchoTask(interrupt_after=2))
    with pytest.raises(StoreError, match="items its run has not finished"):
        _rescore(path, [BLEU()])


def test_compare_sees_the_new_item_and_corpus_scores(tmp_path):
    path = tmp_path / "s.sqlite"
    items = [{"line": k, "reference": ref} for k, ref in enumerate(
        ["the cat sat on the mat", "a dog plays in the park", "blue sky over the sea", "two birds on a wire"])]
    outputs = {"a": ["the cat sat on a mat", "a dog in the park", "blue sky over sea", "two birds on wire"],
               "b": ["a cat", "dogs", "the sea", "birds"]}
    for name, outs in outputs.items():
        _run(path, name, items, task=lambda item, outs=outs: {"output": outs[item["line"]]})
        _rescore(path, [BLEU(), METEOR()], name=name)
    with ExperimentStore(path, create=False) as store:
        records = [from_store(store, name) for name in outputs]
    comparison = compare_experiments(records, CompareSettings(resamples=200, min_items=2))
    for name, outs in outputs.items():
        refs = [item["reference"] for item in items]
        assert comparison.scores["corpus_bleu"][name].value == pytest.approx(
            sacrebleu.corpus_bleu(outs, [refs]).score / 100)
        assert comparison.scores["corpus_bleu"][name].recorded == pytest.approx(
            comparison.scores["corpus_bleu"][name].value)
        assert comparison.scores["corpus_meteor"][name].value == pytest.approx(METEOR().corpus_score(outs, refs).value)
        assert comparison.scores["meteor"][name].values == pytest.approx(
            [r[0].value for r in METEOR().score_batch(outs, refs)])


def test_evaluate_experiment_on_the_local_store(tmp_path, monkeypatch):
    monkeypatch.delenv("OPIK_URL_OVERRIDE", raising=False)
    path = tmp_path / "s.sqlite"
    _run(path)
    summary = opik_metrics.evaluate_experiment("toy", [BLEU()], store=path, verbose=0)
    assert summary.backend == "local" and "corpus_bleu" in summary.experiment_scores
    with pytest.raises(MetricPresent):
        opik_metrics.evaluate_experiment("toy", [BLEU()], store=path, verbose=0)
    with pytest.raises(ValueError, match="scoring_key_mapping: only on an Opik server"):
        opik_metrics.evaluate_experiment("toy", [METEOR()], store=path, scoring_key_mapping={"output": "x"})
    with pytest.raises(StoreError, match="no experiment store at"):
        opik_metrics.evaluate_experiment("toy", [METEOR()], store=tmp_path / "none.sqlite")
    assert not (tmp_path / "none.sqlite").exists()


class HangingBLEU(BLEU):
    """BLEU that, on batch ``hang_at``, says so through ``ready`` and hangs (to be killed there)."""

    def __init__(self, ready=None, hang_at: int | None = None) -> None:
        super().__init__()
        self.ready, self.hang_at, self.batches, self.scored = ready, hang_at, 0, []

    def score_batch(self, outputs, references=None, **kw):
        self.batches += 1
        if self.batches == self.hang_at:
            self.ready.set()
            time.sleep(600)
        self.scored.extend(outputs)
        return super().score_batch(outputs, references, **kw)


def _rescore_and_hang(path: str, ready) -> None:
    with ExperimentStore(path) as store:
        rescore_local(store, "toy", [HangingBLEU(ready, hang_at=2)], chunk_size=2, progress=False)


def test_a_rescore_killed_halfway_resumes_each_item_scored_once(tmp_path):
    path = tmp_path / "s.sqlite"
    _run(path)
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    child = ctx.Process(target=_rescore_and_hang, args=(str(path), ready))
    child.start()
    try:
        assert ready.wait(120)
        with pytest.raises(ExperimentLocked, match=f"pid {child.pid}"):     # not beside a running rescore
            _rescore(path, [HangingBLEU()])
        child.kill()                                                       # kill -9: no end, no release
        child.join(timeout=60)
    finally:
        if child.is_alive():
            child.kill()
            child.join(timeout=60)
    assert len(_score_rows(path, "bleu")) == 2                              # the first chunk, committed
    again = HangingBLEU()
    _rescore(path, [again])
    info, items = _stored(path)
    scored = [it for it in items if it.status == "scored"]
    assert len(again.scored) == len(scored) - 2                             # only the items left
    assert sorted(n for _, n in _score_rows(path, "bleu")) == [1] * len(scored)
    assert "rescoring" not in info.config and "corpus_bleu" in info.experiment_scores


def test_a_config_changed_meanwhile_is_not_overwritten(tmp_path):
    path = tmp_path / "s.sqlite"
    _run(path)
    stale = _stored(path)[0].config
    _rescore(path, [BLEU()])                           # another process adds BLEU after this one read the config
    with ExperimentStore(path) as store:
        with pytest.raises(StoreError, match="was changed by another process while this one read it"):
            store.begin_rescore("toy", stale, {**stale, "metrics": {}}, ["bleu"])
    info, items = _stored(path)
    assert "bleu" in info.config["metrics"] and all("bleu" in it.scores for it in items if it.status == "scored")


def test_a_new_metric_giving_another_metrics_score_names_is_refused(tmp_path):
    # a user's metric named after a stored score of ROUGE: saving it would replace ROUGE's scores
    from _opik import ScoreResult

    class Mine:
        name = "rouge1_f1"

        def score(self, output, **ignored):
            return ScoreResult(name=self.name, value=1.0)

    path = tmp_path / "s.sqlite"
    _run(path)
    before = {it.key: it.scores["rouge1_f1"].value for it in _stored(path)[1] if it.status == "scored"}
    with pytest.raises(MetricPresent, match="metric 'rouge1_f1' gives 'rouge1_f1', which metric 'rouge' already "
                                            "stored"):
        _rescore(path, [Mine()])
    after = {it.key: it.scores["rouge1_f1"].value for it in _stored(path)[1] if it.status == "scored"}
    assert after == before
