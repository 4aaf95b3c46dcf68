"""``opik-metrics agreement`` on a record file written by ``score --keep``: the JSON it prints is the
Python API's agreement; the table names the variant, resamples and seed; a wrong name is one line."""
from __future__ import annotations

import json

import pytest

from opik_metrics.cli.main import main
from opik_metrics.compare import agreement

pytest.importorskip("scipy")


@pytest.fixture
def rated(tmp_path):
    refs = [f"a {w} sits on the mat today" for w in ("cat", "dog", "man", "kid", "bird", "fox", "cow", "pig")]
    outputs = [" ".join(r.split()[:2 + k % 5]) for k, r in enumerate(refs)]
    source = tmp_path / "rated.jsonl"
    source.write_text("".join(json.dumps({"id": f"c{k}", "output": o, "reference": r, "human": 1 + k % 5}) + "\n"
                              for k, (o, r) in enumerate(zip(outputs, refs))), encoding="utf-8")
    out = tmp_path / "scored.jsonl"
    assert main(["score", "-i", str(source), "-o", str(out), "-m", "bleu", "-m", "rouge", "--keep", "human"]) == 0
    return str(out)


def test_json_is_the_python_apis_agreement(rated, capsys):
    capsys.readouterr()
    assert main(["agreement", rated, "--human", "human", "--format", "json", "--resamples", "40", "--seed", "3"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = agreement(rated, "human", resamples=40, seed=3).to_dict()
    assert printed == json.loads(json.dumps(expected))
    assert printed["settings"]["seed"] == 3 and printed["kendall_variant"]["default"] == "kendall_c"
    assert [m["metric"] for m in printed["metrics"]] == ["bleu", "rouge1_f1", "rouge2_f1", "rougeL_f1"]


def test_table_and_one_line_errors(rated, capsys):
    capsys.readouterr()
    assert main(["agreement", rated, "--human", "human", "-m", "bleu", "--resamples", "40"]) == 0
    out = capsys.readouterr().out
    assert "8 rated items, raters=mean" in out and "40 item resamples, seed 12345" in out
    assert "tau-c leads, as the CLIPScore paper reports it on Flickr8K-Expert" in out.splitlines()[1]
    assert out.splitlines()[2].split() == ["metric", "n", "kendall_c", "kendall_b", "spearman", "pearson"]
    assert main(["agreement", rated, "--human", "fluency"]) == 2
    err = capsys.readouterr().err
    assert "has a human score 'fluency'" in err and len(err.strip().splitlines()) == 1
