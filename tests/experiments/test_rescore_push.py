"""A pushed experiment rescored in the store, pushed again, through the real SDK to the REST
stand-in: only the new feedback scores and the new corpus score are sent (no trace, span or
experiment item again); with ``replace``, the replaced scores are sent again with their new values."""
from __future__ import annotations

import pytest

from opik_metrics import BLEU, METEOR
from opik_metrics.experiments.rescore import MetricPresent, rescore_local
from opik_metrics.experiments.store import ExperimentStore
from tests.experiments.test_push_readback import (EXPERIMENT_ITEMS, EXPERIMENTS, SCORES, SPANS, TRACES,  # noqa: F401
                                                  _on_server, _push, _pushed_at, _sent, _stored, server, stored)


def _rescore(path, metrics, **kw):
    with ExperimentStore(path) as store:
        rescore_local(store, "toy", metrics, progress=False, **kw)


def test_a_rescored_pushed_experiment_pushes_only_the_new_scores(server, stored, capsys):  # noqa: F811 (the fixtures imported above)
    assert _push(capsys, stored)[0] == 0 and _pushed_at(stored) is not None
    (published,) = server.experiments.values()        # what `compare --publish` wrote there meanwhile
    published["metadata"] = {**published["metadata"], "opik_metrics_comparison": {"fingerprint": "f00d"}}
    _rescore(stored, [METEOR()])
    assert _pushed_at(stored) is None                 # the server lacks the new scores
    start = len(server.requests)
    code, out, err = _push(capsys, stored)
    assert code == 0, err
    assert "read back: all 4 items and 11 feedback scores there (this push sent 0 traces and 4 feedback" in out
    (batch,) = _sent(server, start, SCORES)
    assert sorted(s["name"] for s in batch["scores"]) == ["meteor"] * 4
    for pattern in (TRACES, SPANS, EXPERIMENT_ITEMS, EXPERIMENTS):
        assert _sent(server, start, pattern) == [], pattern
    experiment, scores = _on_server(server)
    assert scores == _stored(stored)
    with ExperimentStore(stored, create=False) as store:
        corpus = store.info("toy").experiment_scores
    assert {s["name"]: s["value"] for s in experiment["experiment_scores"]} == \
        {"corpus_bleu": round(corpus["corpus_bleu"], 9), "corpus_meteor": round(corpus["corpus_meteor"], 9)}
    assert _pushed_at(stored) is not None
    assert set(experiment["metadata"]["metrics"]) == {"bleu", "fragile", "meteor"}   # facts for compare --opik
    assert experiment["metadata"]["opik_metrics_comparison"] == {"fingerprint": "f00d"}   # kept, not replaced

    def config_writes(since):
        return [p for m, p, body in server.requests[since:]
                if m == "PATCH" and p.endswith(experiment["id"]) and "metadata" in (body or {})]

    assert len(config_writes(start)) == 1
    start = len(server.requests)
    assert _push(capsys, stored)[0] == 0
    assert config_writes(start) == []                                   # the same config is not sent again


def test_replaced_scores_are_sent_again_with_their_new_values(server, stored, capsys):  # noqa: F811 (the fixtures imported above)
    assert _push(capsys, stored)[0] == 0
    before = {k: v["bleu"] for k, v in _stored(stored).items()}
    _rescore(stored, [BLEU(tokenize="char")], replace=True)
    changed = [k for k, v in _stored(stored).items() if v["bleu"] != before[k]]
    assert 0 < len(changed) < 4                       # identical texts score 1 either way
    start = len(server.requests)
    code, out, err = _push(capsys, stored)
    assert code == 0, err
    (batch,) = _sent(server, start, SCORES)
    assert sorted(s["name"] for s in batch["scores"]) == ["bleu"] * len(changed)   # only values that changed
    experiment, scores = _on_server(server)
    assert scores == _stored(stored)
    with ExperimentStore(stored, create=False) as store:
        corpus = store.info("toy").experiment_scores["corpus_bleu"]
    assert [(s["name"], s["value"]) for s in experiment["experiment_scores"]] == [("corpus_bleu", round(corpus, 9))]


def test_evaluate_experiment_on_a_server_adds_scores_corpus_scores_and_facts(server):  # noqa: F811
    import json

    from opik_metrics import evaluate, evaluate_experiment
    from opik_metrics.core import facts_of
    from tests.experiments.toy import ITEMS, EchoTask

    items = [item for item in ITEMS if item["answer"] not in ("SKIP", "RAISE")]   # opik.evaluate stops on those
    evaluate(items, EchoTask(), [BLEU()], experiment_name="toy", verbose=0)
    summary = evaluate_experiment("toy", [METEOR()], verbose=0)
    assert summary.backend == "opik"
    names = [t["name"] for t in server.traces.values()]     # Opik logs its scoring as metrics_calculation traces
    assert names.count("evaluation_task") == 4 and len(server.experiment_items[next(iter(server.experiments))]) == 4
    (experiment,) = server.experiments.values()
    traces = [server.traces[i["trace_id"]] for i in server.experiment_items[experiment["id"]]]
    outputs = [t["output"]["output"] for t in traces]
    references = [t["input"]["reference"] for t in traces]
    want = [r[0].value for r in METEOR().score_batch(outputs, references)]
    got = [server.trace_scores(t["id"])["meteor"] for t in traces]
    assert got == [round(v, 9) for v in want]
    assert all("bleu" in server.trace_scores(t["id"]) for t in traces)
    corpus = {s["name"]: s["value"] for s in experiment["experiment_scores"]}
    assert set(corpus) == {"corpus_bleu", "corpus_meteor"}          # the run's corpus score kept beside the new
    assert corpus["corpus_meteor"] == round(METEOR().corpus_score(outputs, references).value, 9)
    assert experiment["metadata"]["metrics"]["meteor"] == json.loads(json.dumps(facts_of(METEOR()).as_dict()))
    assert "bleu" in experiment["metadata"]["metrics"]

    with pytest.raises(MetricPresent, match="metric 'meteor' is already there"):
        evaluate_experiment("toy", [METEOR()], verbose=0)
    with pytest.raises(MetricPresent, match="metric 'bleu' is already there"):
        evaluate_experiment("toy", [BLEU()], verbose=0)
    evaluate_experiment("toy", [BLEU(tokenize="char")], verbose=0, replace=True)
    (experiment,) = server.experiments.values()
    want = [r[0].value for r in BLEU(tokenize="char").score_batch(outputs, references)]
    assert [server.trace_scores(t["id"])["bleu"] for t in traces] == [round(v, 9) for v in want]
    assert experiment["metadata"]["metrics"]["bleu"]["signature"]["fields"]["tok"] == "char"
