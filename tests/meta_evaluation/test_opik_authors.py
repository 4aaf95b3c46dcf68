"""Opik annotations are feedback scores with one value per annotator: two annotators (two API
keys, two users) score the same traces on the REST stand-in, which folds them as the backend does
(the mean as ``value``, each author's in ``value_by_author``); ``agreement --human NAME`` then reads
each author as a rater, and their alpha and rater-vs-rest equal krippendorff's and scipy's."""
from __future__ import annotations

import json

import numpy as np
import pytest

from opik_metrics.cli.main import main
from tests.compare.opik_seed import seed_from_store
from tests.meta_evaluation.test_agreement_sources import RATINGS, store_path  # noqa: F401 (a fixture)
from tests.opik_rest_server import OpikRestServer

krippendorff = pytest.importorskip("krippendorff")
stats = pytest.importorskip("scipy.stats")


def test_two_authors_are_read_per_author(store_path, monkeypatch, capsys):  # noqa: F811
    import opik

    with OpikRestServer() as server:
        seed_from_store(server, store_path, ["captions"])
        monkeypatch.setenv("OPIK_URL_OVERRIDE", server.url)
        server.users.update({"key-ann": "ann", "key-bo": "bo"})
        experiment_id = server.experiment_named("captions")["id"]
        lines = {item["trace_id"]: server.traces[item["trace_id"]]["input"]["line"]
                 for item in server.experiment_items[experiment_id]}
        ann = {t: RATINGS[line - 1] for t, line in lines.items()}
        bo = {t: min(5.0, RATINGS[line - 1] + line % 2) for t, line in lines.items() if line != 5}   # bo skips one
        for key, values in (("key-ann", ann), ("key-bo", bo)):
            client = opik.Opik(api_key=key, workspace="default")
            client.log_traces_feedback_scores([{"id": t, "name": "quality", "value": v} for t, v in values.items()])
            client.flush()
        some = next(t for t in bo if ann[t] != bo[t])
        stored = server.feedback_scores[("trace", some)]["quality"]
        assert stored["value"] == pytest.approx((ann[some] + bo[some]) / 2)
        assert {a: e["value"] for a, e in stored["value_by_author"].items()} == {"ann": ann[some], "bo": bo[some]}
        capsys.readouterr()
        assert main(["agreement", "captions", "--opik", "--human", "quality", "-m", "bleu", "--level", "pooled",
                     "--level", "item", "--method", "spearman", "--resamples", "20", "--format", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert server.invalid == [] and server.unexpected == []
    assert out["raters"] == ["ann", "bo"]
    order = sorted(ann, key=lambda t: lines[t])
    units = np.array([[ann[t], bo.get(t, np.nan)] for t in order])
    assert out["alpha"]["interval"] == pytest.approx(
        krippendorff.alpha(reliability_data=units.T, level_of_measurement="interval"), abs=1e-12)
    keep = np.isfinite(units[:, 1])
    assert out["rater_vs_rest"]["ann"]["pooled"]["spearman"]["estimate"] == pytest.approx(
        stats.spearmanr(units[keep, 0], units[keep, 1]).statistic, abs=1e-12)
