"""``agreement --publish`` on the Opik REST stand-in (under the real server's rules): each
correlation and its interval become experiment scores equal to the printed JSON, other scores are
kept, publishing again writes nothing, record files and unpushed experiments are refused."""
from __future__ import annotations

import json

import opik
import pytest

from opik_metrics.cli.main import main
from opik_metrics.meta_evaluation.publish import AGREEMENT_KEY
from tests.compare.opik_seed import seed_from_store
from tests.meta_evaluation.test_agreement_sources import RATINGS, store_path  # noqa: F401 (a fixture)
from tests.opik_rest_server import OpikRestServer

pytest.importorskip("scipy")


@pytest.fixture
def server(store_path, monkeypatch):  # noqa: F811
    with OpikRestServer() as srv:
        seed_from_store(srv, store_path, ["captions"])
        monkeypatch.setenv("OPIK_URL_OVERRIDE", srv.url)
        experiment_id = srv.experiment_named("captions")["id"]
        logged = [{"id": item["trace_id"], "name": "annotator",
                   "value": RATINGS[srv.traces[item["trace_id"]]["input"]["line"] - 1]}
                  for item in srv.experiment_items[experiment_id]]
        client = opik.Opik()
        client.log_traces_feedback_scores(logged)
        client.flush()
        srv.experiment_named("captions")["experiment_scores"].append({"name": "agreement.kendall_c.bleu",
                                                                      "value": 0.5})
        yield srv
        assert srv.invalid == [] and srv.unexpected == []


def _experiment():
    found = next(e for e in opik.Opik().get_experiments_by_name("captions") if e.name == "captions")
    data = found.get_experiment_data()
    return {s.name: s.value for s in data.experiment_scores or []}, data.metadata


def test_publish_writes_each_correlation_and_interval(server, capsys):
    before, _ = _experiment()
    args = ["agreement", "captions", "--human", "annotator", "--opik", "--resamples", "50", "--format", "json"]
    capsys.readouterr()
    assert main([*args, "--publish"]) == 0
    out, err = capsys.readouterr()
    printed = json.loads(out)
    assert "kept (this agreement has" in err and "published:" in err
    scores, metadata = _experiment()
    assert scores["agreement.kendall_c.bleu"] == 0.5             # someone else's: kept
    for m in printed["metrics"]:
        for method, c in m["correlations"].items():
            name = f"agreement.{method}.{m['metric']}"
            if name == "agreement.kendall_c.bleu":
                continue
            assert scores[name] == pytest.approx(c["estimate"], abs=1e-9)
            assert scores[f"{name}.ci_low"] == pytest.approx(c["low"], abs=1e-9)
            assert scores[f"{name}.ci_high"] == pytest.approx(c["high"], abs=1e-9)
    assert {n: v for n, v in scores.items() if n in before} == before          # nothing else moved
    assert metadata[AGREEMENT_KEY]["human"] == "annotator"
    assert metadata[AGREEMENT_KEY]["agreement"]["metrics"] == printed["metrics"]
    writes = len(server.writes())
    assert main([*args, "--publish"]) == 0                       # the same agreement again: nothing to write
    assert "unchanged:" in capsys.readouterr().err
    assert len(server.writes()) == writes


def test_a_record_file_cannot_be_published(tmp_path, capsys):
    path = tmp_path / "scored.jsonl"
    path.write_text("{}\n")
    assert main(["agreement", str(path), "--human", "h", "--publish"]) == 2
    assert "--publish writes onto experiments on the Opik server" in capsys.readouterr().err


def test_names_an_earlier_publish_wrote_are_replaced_and_foreign_ones_stay(server, capsys):
    args = ["agreement", "captions", "--human", "annotator", "--opik", "--resamples", "30", "--publish"]
    assert main(args) == 0
    assert "agreement.spearman.bleu" in _experiment()[0]
    assert main([*args, "-m", "rougeL_f1"]) == 0
    scores, metadata = _experiment()
    assert "agreement.spearman.bleu" not in scores and "agreement.spearman.rougeL_f1" in scores
    assert scores["agreement.kendall_c.bleu"] == 0.5 and "corpus_bleu" in scores
    assert set(metadata[AGREEMENT_KEY]["published_scores"]) == {n for n in scores if ".rougeL_f1" in n}
    capsys.readouterr()


def test_a_meta_evaluation_publishes_its_levels_and_writes_its_report(server, tmp_path, capsys):
    from opik_metrics.meta_evaluation.publish import META_KEY

    report = tmp_path / "meta"
    args = ["agreement", "captions", "--human", "annotator", "--opik", "--resamples", "30", "--level", "pooled",
            "--level", "item", "-m", "bleu", "--method", "spearman", "--format", "json", "-o", str(report)]
    capsys.readouterr()
    assert main([*args, "--publish"]) == 0
    out, err = capsys.readouterr()
    printed = json.loads(out)
    assert "published:" in err
    scores, metadata = _experiment()
    pooled = printed["correlations"]["bleu"]["pooled"]["spearman"]
    assert scores["meta.pooled.spearman.bleu"] == pytest.approx(pooled["estimate"], abs=1e-9)
    assert scores["meta.pooled.spearman.bleu.ci_low"] == pytest.approx(pooled["low"], abs=1e-9)
    assert scores["agreement.kendall_c.bleu"] == 0.5                  # someone else's: kept
    assert metadata[META_KEY]["meta_evaluation"]["correlations"] == printed["correlations"]
    assert json.loads((report / "meta_evaluation.json").read_text()) == printed
    page = (report / "index.html").read_text()
    assert "Pooled level" in page and "Item level" in page and '<img src="meta_evaluation.png"' in page
    writes = len(server.writes())
    assert main([*args, "--publish"]) == 0                           # the same again: nothing written
    assert "unchanged:" in capsys.readouterr().err and len(server.writes()) == writes
