"""Human ratings read from the local store (an item field), a record file (a kept column, one or
several raters) and the Opik REST stand-in (a feedback score on the trace): the same agreement as
scipy.stats gives on the scores and ratings read back."""
from __future__ import annotations

import json

import numpy as np
import pytest

from opik_metrics import BLEU, ROUGE
from opik_metrics.meta_evaluation import agreement
from opik_metrics.meta_evaluation.source import human_ratings
from opik_metrics.compare.reading.sources import from_records, from_store
from opik_metrics.experiments.runner import run_experiment
from opik_metrics.experiments.store import ExperimentStore
from opik_metrics.streams import FieldMap, score_file
from tests.compare.opik_seed import seed_from_store
from tests.compare.systems import answer_with
from tests.opik_rest_server import OpikRestServer

stats = pytest.importorskip("scipy.stats")

REFS = [f"a {c} {v} on the {p}" for c, v, p in zip(["dog", "cat", "man", "kid", "boat", "bird"] * 2,
                                                    ["runs", "sleeps", "rides", "plays", "sails", "sings"] * 2,
                                                    ["beach", "sofa", "bike", "grass", "sea", "tree"] * 2)]
# outputs keep the first k + 1 words of their reference and add filler: longer prefix, better caption
OUTPUTS = [" ".join(r.split()[:1 + k % 6] + ["something"] * (k % 2)) for k, r in enumerate(REFS)]
# the "annotator's" rule: 1 + 4 * (reference words kept, 1..6) // 6, a rating from 1 to 5
RATINGS = [float(1 + (1 + k % 6) * 4 // 6) for k in range(len(REFS))]


def _scipy(x, y):
    return {"kendall_c": stats.kendalltau(x, y, variant="c").statistic,
            "kendall_b": stats.kendalltau(x, y, variant="b").statistic,
            "spearman": stats.spearmanr(x, y).statistic, "pearson": stats.pearsonr(x, y).statistic}


def _check(result, scores: dict[str, list[float]], ratings: list[float]):
    for m in result.metrics:
        keep = [k for k, v in enumerate(scores[m.metric]) if v is not None]
        assert m.n_items == len(keep)
        expected = _scipy([scores[m.metric][k] for k in keep], [ratings[k] for k in keep])
        for method, value in expected.items():
            assert m.correlations[method].estimate == pytest.approx(float(value), abs=1e-9), (m.metric, method)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("agreement") / "store.sqlite"
    items = [{"line": k + 1, "reference": r, "human": RATINGS[k]} for k, r in enumerate(REFS)]
    items[3]["human"] = None                   # nobody rated it
    run_experiment("captions", items, answer_with(OUTPUTS), [BLEU(), ROUGE(rouge_types=("rougeL",))],
                   dataset_name="rated", config={"model": "m"}, store=path, progress=False, overwrite=True)
    return path


def test_ratings_from_an_item_field_of_the_local_store(store_path):
    result = agreement("captions", "human", store=str(store_path), resamples=50)
    assert result.human_items == len(REFS) - 1
    assert {m.metric for m in result.metrics} == {"bleu", "rougeL_f1"}     # parts (precision, recall) left out
    with ExperimentStore(store_path, create=False) as store:
        records = from_store(store, "captions")
    scores = {name: [None if k == 3 else i.scores[name] for k, i in enumerate(records.items)]
              for name in ("bleu", "rougeL_f1")}
    _check(result, scores, RATINGS)


def test_a_named_score_that_is_not_there_is_refused(store_path):
    with pytest.raises(ValueError, match="has no score 'meteor'; its scores are bleu"):
        agreement("captions", "human", ["meteor"], store=str(store_path))
    with pytest.raises(ValueError, match="no item of captions has a human score 'fluency'.*input fields are human, "
                                         "line, reference"):
        agreement("captions", "fluency", store=str(store_path))


def test_ratings_from_a_record_files_kept_column_several_raters(tmp_path):
    source = tmp_path / "rated.jsonl"
    raters = [[r, max(1.0, r - 1)] if k % 3 == 0 else r for k, r in enumerate(RATINGS)]
    source.write_text("".join(json.dumps({"id": f"c{k}", "output": o, "reference": r, "human": raters[k]}) + "\n"
                              for k, (o, r) in enumerate(zip(OUTPUTS, REFS))), encoding="utf-8")
    out = tmp_path / "scored.jsonl"
    score_file(str(source), [BLEU(track=False)], output=str(out), fields=FieldMap(keep=("human",)), progress=False)
    records = from_records(str(out))
    assert human_ratings(records, "human")["c3"] == [3.0, 2.0]   # kept as JSON text, parsed back
    bleu = [i.scores["bleu"] for i in records.items]
    mean = agreement(str(out), "human", resamples=50)
    _check(mean, {"bleu": bleu}, [float(np.mean(r)) if isinstance(r, list) else r for r in raters])
    pairs = agreement(str(out), "human", raters="pairs", resamples=50)
    flat_scores = [b for b, r in zip(bleu, raters) for _ in (r if isinstance(r, list) else [r])]
    flat_ratings = [x for r in raters for x in (r if isinstance(r, list) else [r])]
    assert pairs.metrics[0].n_pairs == len(flat_ratings) == len(REFS) + 4
    expected = _scipy(flat_scores, flat_ratings)
    for method, value in expected.items():
        assert pairs.metrics[0].correlations[method].estimate == pytest.approx(float(value), abs=1e-9)


def test_a_rating_that_is_no_number_names_the_item(tmp_path):
    source = tmp_path / "rated.jsonl"
    source.write_text(json.dumps({"id": "x1", "output": "a b", "reference": "a b", "human": "good"}) + "\n",
                      encoding="utf-8")
    out = tmp_path / "scored.jsonl"
    score_file(str(source), [BLEU(track=False)], output=str(out), fields=FieldMap(keep=("human",)), progress=False)
    with pytest.raises(ValueError, match="item 'x1': human is 'good', not a number"):
        agreement(str(out), "human")


def test_ratings_logged_as_feedback_scores_on_opik(store_path, monkeypatch):
    import opik

    with OpikRestServer() as server:
        seed_from_store(server, store_path, ["captions"])
        monkeypatch.setenv("OPIK_URL_OVERRIDE", server.url)
        experiment_id = server.experiment_named("captions")["id"]
        # an annotator's score on each trace but one, sent as the SDK sends it (under the server's rules)
        logged = []
        for item in server.experiment_items[experiment_id]:
            line = server.traces[item["trace_id"]]["input"]["line"]
            if line != 2:
                logged.append({"id": item["trace_id"], "name": "annotator", "value": RATINGS[line - 1]})
        client = opik.Opik()
        client.log_traces_feedback_scores(logged)
        client.flush()
        result = agreement("captions", "annotator", opik=True, resamples=50)
        assert server.invalid == [] and server.unexpected == []
    assert result.human_items == len(REFS) - 1
    with ExperimentStore(store_path, create=False) as store:
        records = from_store(store, "captions")
    scores = {name: [None if k == 1 else i.scores[name] for k, i in enumerate(records.items)]
              for name in ("bleu", "rougeL_f1")}
    _check(result, scores, RATINGS)
