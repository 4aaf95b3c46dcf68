"""Hardening round four (issue 48), the cases fixed so far: a broken JSONL record file is named with its
file and line; the gate's assertion message is plain text; a single score name is one score; the
server timeout is bounded. Each failed on the code before."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from opik_metrics.cli.main import main
from opik_metrics.testing import assert_no_regression

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ci"


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> dict[str, Path]:
    """The CI example's baseline and candidate, scored with ROUGE and BLEU into JSON Lines record files."""
    folder = tmp_path_factory.mktemp("hardening")
    out = {}
    for name in ("baseline", "candidate"):
        shutil.copy(EXAMPLES / f"{name}.jsonl", folder / f"{name}.jsonl")
        out[name] = folder / f"{name}.scores.jsonl"
        assert main(["score", "-i", str(folder / f"{name}.jsonl"), "-o", str(out[name]), "-m", "rouge", "-m", "bleu",
                     "--field", "output=caption", "--no-progress", "--format", "json"]) == 0
    return out


def test_a_broken_line_of_a_jsonl_record_file_is_named_with_its_file_and_line(scored, tmp_path, capsys):
    lines = scored["candidate"].read_text(encoding="utf-8").splitlines(keepends=True)
    lines[11] = lines[11][:1] + lines[11][2:]                 # line 12 loses its first quote
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(lines), encoding="utf-8")
    capsys.readouterr()
    assert main(["compare", str(scored["baseline"]), str(broken), "--fail-on", "worse"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"opik-metrics: error: {broken}, line 12, column 2: not a JSON record")


def test_the_gate_assertion_message_is_plain_text(scored):
    with pytest.raises(AssertionError) as raised:
        assert_no_regression(scored["baseline"], scored["candidate"])
    message = str(raised.value)
    assert "&lt;" not in message and "\\[" not in message and "&amp;" not in message
    assert "gate failed: rouge1_f1 is significantly worse by" in message and "p<0.001" in message


def test_one_score_name_given_as_a_string_is_one_score(scored):
    with pytest.raises(AssertionError) as raised:
        assert_no_regression(scored["baseline"], scored["candidate"], scores="bleu")
    table = str(raised.value).splitlines()
    gated = [line.split("|")[1].strip() for line in table if line.startswith("| ") and not line.startswith("| score")]
    assert gated == ["bleu"]


@pytest.mark.parametrize("value, ok", [("3600", True), ("3600.5", False), ("9.3e9", False), ("1e9", False)])
def test_the_server_timeout_is_bounded_in_one_line(monkeypatch, value, ok):
    from opik_metrics.experiments.opik_server import OpikServerUnavailable, server_timeout

    monkeypatch.setenv("OPIK_METRICS_SERVER_TIMEOUT", value)
    if ok:
        assert server_timeout() == float(value)
    else:
        with pytest.raises(OpikServerUnavailable, match=r"must be a number of seconds above 0 and at most 3600, "):
            server_timeout()


@pytest.mark.parametrize("body", ["import sys\nsys.exit(0)\n", "import sys\nsys.exit(1)\n",
                                  "print('hello from a plugin')\nraise RuntimeError('broken')\n"])
def test_a_plugin_that_exits_or_prints_on_import_is_left_out_and_decides_nothing(tmp_path, monkeypatch, capsys, body):
    from importlib.metadata import EntryPoint

    from opik_metrics.metrics.plugins import PluginRefused, _join

    (tmp_path / "rogue_plugin.py").write_text(body, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    point = EntryPoint(name="rogue", value="rogue_plugin:Metric", group="opik_metrics.metrics")
    with pytest.raises(PluginRefused, match=r"importing it failed: (SystemExit|RuntimeError)"):
        _join(point)
    out, err = capsys.readouterr()
    assert out == ""                                   # never on stdout, where `score --format json` writes
    assert ("hello from a plugin" in err) == ("print" in body)


def test_a_nan_score_is_blamed_on_the_metric_not_the_servers_range():
    from _opik import ScoreResult

    from opik_metrics.metric_kit.server_range import mark_unstorable

    nan, inf = mark_unstorable([ScoreResult(name="perplexity", value=float("nan")),
                                ScoreResult(name="perplexity", value=float("inf"))])
    assert nan.scoring_failed and nan.reason.startswith("the metric computed no number (nan): for a model-backed "
                                                        "metric the model's output was NaN")
    assert "Opik server stores" not in nan.reason
    assert inf.reason.startswith("inf is not a score an Opik server stores")
