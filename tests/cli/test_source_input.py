"""The item's source for the metrics that read one (BARTScore's faithfulness, UniEval, GPTScore): from
``score --source FILE``, from a record's column (``--field source=COLUMN``), from a trace's input in
``traces score``; equal to the metric called directly, and one clear line when it is missing."""
from __future__ import annotations

import json

import pytest

from opik_metrics import BARTScore
from opik_metrics.cli.main import main
from opik_metrics.traces import score_traces
from tests.neural.lm_fixtures import one_torch_thread  # noqa: F401 - autouse fixture
from tests.neural.tiny_seq2seq import build_bart
from tests.traces.conftest import client, server  # noqa: F401 - the stand-in's fixtures

OUTPUTS = ["This is fun.", "A cat sat on the mat."]
SOURCES = ["This is interesting.", "The cat sat on a mat all day long."]


@pytest.fixture(scope="module")
def bart(tmp_path_factory) -> str:
    return str(build_bart(tmp_path_factory.mktemp("bart")))


def _direct(bart):
    metric = BARTScore(model=bart, direction="faithfulness", track=False)
    return [metric.score(output=o, input=s)[0].value for o, s in zip(OUTPUTS, SOURCES)]


def test_score_with_a_source_file(bart, tmp_path, capsys):
    (tmp_path / "p.txt").write_text("\n".join(OUTPUTS) + "\n")
    (tmp_path / "s.txt").write_text("\n".join(SOURCES) + "\n")
    code = main(["score", "-p", str(tmp_path / "p.txt"), "--source", str(tmp_path / "s.txt"), "-m", "bartscore",
                 "--bartscore-model", bart, "--bartscore-direction", "faithfulness", "--format", "json",
                 "--no-progress"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [i["bartscore_faithfulness"] for i in out["items"]] == pytest.approx(_direct(bart), abs=1e-9)


def test_score_records_with_a_source_column(bart, tmp_path, capsys):
    records = tmp_path / "r.jsonl"
    records.write_text("".join(json.dumps({"output": o, "document": s}) + "\n" for o, s in zip(OUTPUTS, SOURCES)))
    code = main(["score", "-i", str(records), "--field", "source=document", "-m", "bartscore", "--bartscore-model",
                 bart, "--bartscore-direction", "faithfulness", "-o", str(tmp_path / "out.jsonl"), "--no-progress"])
    capsys.readouterr()
    rows = [r for r in map(json.loads, (tmp_path / "out.jsonl").read_text().splitlines()) if "index" in r]
    assert code == 0 and [r["bartscore_faithfulness"] for r in rows] == pytest.approx(_direct(bart), abs=1e-9)


def test_a_missing_source_is_one_line(bart, tmp_path, capsys):
    (tmp_path / "p.txt").write_text("\n".join(OUTPUTS) + "\n")
    code = main(["score", "-p", str(tmp_path / "p.txt"), "-m", "bartscore", "--bartscore-model", bart,
                 "--bartscore-direction", "faithfulness", "--no-progress"])
    assert code == 2 and "give --source FILE" in capsys.readouterr().err
    code = main(["score", "-p", str(tmp_path / "p.txt"), "-m", "bartscore", "--bartscore-model", bart, "--no-progress"])
    assert code == 2 and "need --references" in capsys.readouterr().err


def test_traces_score_reads_the_source_from_the_trace_input(bart, server, client):  # noqa: F811
    for o, s in zip(OUTPUTS, SOURCES):
        client.trace(name="summarize", input={"document": s}, output={"output": o}, project_name="sum")
    client.flush()
    report = score_traces("sum", [BARTScore(model=bart, direction="faithfulness", track=False)], client=client,
                          fields=["source=input.document"], progress=False)
    assert report.complete
    by_source = {}
    for (_, tid), scores in server.feedback_scores.items():
        by_source[server.traces[tid]["input"]["document"]] = scores["bartscore_faithfulness"]["value"]
    assert [by_source[s] for s in SOURCES] == pytest.approx(_direct(bart), abs=1e-6)
