"""``opik-metrics agreement`` on a record file written by ``score --keep``: the JSON it prints is the
Python API's agreement; the table names the variant, resamples and seed; a wrong name is one line."""
from __future__ import annotations

import json

import pytest

from opik_metrics.cli.main import main
from opik_metrics.meta_evaluation import agreement

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
    assert printed["settings"]["seed"] == 3 and printed["kendall_variant"]["default"] == "kendall_b"
    assert [m["metric"] for m in printed["metrics"]] == ["bleu", "rouge1_f1", "rouge2_f1", "rougeL_f1"]


def test_table_and_one_line_errors(rated, capsys):
    capsys.readouterr()
    assert main(["agreement", rated, "--human", "human", "-m", "bleu", "--resamples", "40"]) == 0
    out = capsys.readouterr().out
    assert "8 rated items, raters=mean" in out and "40 item resamples, seed 12345" in out
    assert "tau-b leads, as SummEval and the WMT metrics task print it" in out.splitlines()[1]
    assert out.splitlines()[2].split() == ["metric", "n", "kendall_b", "kendall_c", "spearman", "pearson"]
    assert main(["agreement", rated, "--human", "fluency"]) == 2
    err = capsys.readouterr().err
    assert "has a human score 'fluency'" in err and len(err.strip().splitlines()) == 1


def test_output_writes_the_report_page_plot_and_json(rated, tmp_path, capsys):
    from PIL import Image

    report = tmp_path / "report"
    assert main(["agreement", rated, "--human", "human", "-m", "bleu", "-m", "rouge1_f1", "--resamples", "40",
                 "-o", str(report), "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert json.loads((report / "agreement.json").read_text()) == printed
    page = (report / "index.html").read_text()
    with Image.open(report / "agreement.png") as image:
        assert image.format == "PNG" and image.size[0] == 640
    assert '<img src="agreement.png"' in page and "Against the best score" in page
    for m in printed["metrics"]:
        c = m["correlations"]["kendall_c"]
        assert f"{c['estimate']:.4f} [{c['low']:.4f}, {c['high']:.4f}]" in page


def test_the_page_says_why_a_correlation_has_no_value(tmp_path):
    from opik_metrics.meta_evaluation.report import write_agreement_report
    from opik_metrics.meta_evaluation.metric_agreement import AgreementSettings, agreement_from_scores

    result = agreement_from_scores({"a": [1.0], "b": [2.0], "c": [3.0]},
                                   {"flat": {"a": 0.0, "b": 0.0, "c": 0.0}, "m": {"a": 0.1, "b": 0.5, "c": 0.2}},
                                   AgreementSettings(resamples=20), human_name="rating")
    files = write_agreement_report(result, tmp_path / "r")
    page = files.html.read_text()
    assert "flat, kendall_c: flat is 0 on every rated item: it ranks nothing" in page
    assert files.plot is not None
    nothing = agreement_from_scores({"a": [1.0]}, {"m": {"a": 0.1}}, AgreementSettings(resamples=20))
    again = write_agreement_report(nothing, tmp_path / "r")
    assert again.plot is None and not (tmp_path / "r" / "agreement.png").exists()


def test_method_computes_only_what_is_asked_and_too_few_resamples_are_refused(rated, capsys):
    capsys.readouterr()
    assert main(["agreement", rated, "--human", "human", "-m", "bleu", "--method", "spearman", "--method",
                 "kendall_b", "--format", "json", "--resamples", "40"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["settings"]["methods"] == ["spearman", "kendall_b"]
    assert sorted(printed["metrics"][0]["correlations"]) == ["kendall_b", "spearman"]
    assert main(["agreement", rated, "--human", "human", "--resamples", "10"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "smallest p-value is 1/11; use at least 20" in err
    assert main(["agreement", rated, "--human", "human", "--resamples", "99", "--confidence", "0.99"]) == 2
    assert "use at least 100" in capsys.readouterr().err


def test_tau_b_leads_by_default_and_method_sets_the_columns_order(rated, capsys):
    """Papers print tau-b first (SummEval, WMT): the default columns are kendall_b, kendall_c,
    spearman, pearson, in the one-experiment table and the meta-evaluation's; --method's order is kept."""
    capsys.readouterr()
    assert main(["agreement", rated, "--human", "human", "-m", "bleu", "--resamples", "20", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["settings"]["methods"] == ["kendall_b", "kendall_c", "spearman",
                                                                          "pearson"]
    assert main(["agreement", rated, "--human", "human", "-m", "bleu", "--level", "item", "--resamples", "20"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("metric"))
    assert header.split() == ["metric", "n", "kendall_b", "kendall_c", "spearman", "pearson"]
    assert main(["agreement", rated, "--human", "human", "-m", "bleu", "--method", "pearson", "--method", "kendall_c",
                 "--resamples", "20"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("metric"))
    assert header.split() == ["metric", "n", "pearson", "kendall_c"]
