"""Hardening round four (issue 48), the cases fixed so far: a broken JSONL record file is named with its
file and line; the gate's assertion message is plain text; a single score name is one score; the
server timeout is bounded. Each failed on the code before."""
from __future__ import annotations

import json
import os
import subprocess
import sys
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


# -- apples and oranges, data errors: exit 2, never 1 -------------------------------------------------------


def _score(folder: Path, name: str, *options: str, metrics: tuple[str, ...] = ("rouge", "bleu"),
           ids: set[str] | None = None) -> Path:
    source = folder / f"{name}.jsonl"
    lines = (EXAMPLES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    source.write_text("".join(line for line in lines if ids is None or json.loads(line)["id"] in ids),
                      encoding="utf-8")
    out = folder / f"{name}{''.join(o.strip('-') for o in options)}{len(metrics)}.scores.jsonl"
    args = ["score", "-i", str(source), "-o", str(out), "--field", "output=caption", "--no-progress",
            "--format", "json", *options]
    for metric in metrics:
        args += ["-m", metric]
    assert main(args) == 0
    return out


def _edit(path: Path, target: Path, header=None, row=None) -> Path:
    """A copy of a record file with its header (line 1) and/or one item row changed by hand."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    if header is not None:
        header(lines[0]["opik_metrics.records"])
    if row is not None:
        row(lines)
    target.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return target


def _gate(capsys, *args: str) -> tuple[int, list[str], str]:
    capsys.readouterr()
    code = main(["compare", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.err.strip().splitlines(), captured.out


def test_scores_made_with_different_options_are_refused_unless_allowed(scored, tmp_path, capsys):
    """The candidate scored with --use-stemmer against a plain baseline: ROUGE's signature differs in
    `stem`, so rouge1_f1 is refused by name with both values; --allow-different-options gates it and
    the report says so first. BLEU made the same way on both sides is not refused."""
    stemmed = _score(tmp_path, "candidate", "--use-stemmer")
    code, err, _ = _gate(capsys, scored["baseline"], stemmed, "--fail-on", "worse")
    assert code == 2 and len(err) == 1
    assert err[0].startswith("opik-metrics: error: cannot gate scores made with different options: ")
    assert "rouge1_f1 (stem: no vs yes)" in err[0] and "--allow-different-options" in err[0]
    assert "bleu (" not in err[0]
    code, err, _ = _gate(capsys, scored["baseline"], stemmed, "--fail-on", "worse", "-m", "bleu")
    assert code == 1 and err[-1].startswith("gate failed: bleu is significantly worse")      # same options: gated
    code, err, out = _gate(capsys, scored["baseline"], stemmed, "--fail-on", "worse", "--allow-different-options",
                           "--format", "markdown")
    assert code == 1
    first = out.splitlines()[0]
    assert first.startswith("> **Warning:** ") and "rouge1_f1 (stem: no vs yes)" in first
    assert first.endswith("GATED ANYWAY (--allow-different-options)")
    with pytest.raises(ValueError, match=r"different options: .*rouge1_f1 \(stem: no vs yes\)"):
        assert_no_regression(scored["baseline"], stemmed)
    report = tmp_path / "report"
    assert main(["compare", str(scored["baseline"]), str(stemmed), "-o", str(report)]) == 0
    page = (report / "index.html").read_text(encoding="utf-8")
    assert page.index("Different measurements") < page.index("id=\"summary\"")


def test_bleu_scored_lowercased_is_a_different_measurement(scored, tmp_path):
    lowered = _score(tmp_path, "candidate", "--lowercase", metrics=("bleu",))
    with pytest.raises(ValueError, match=r"bleu \(case: mixed vs lc\)"):
        assert_no_regression(scored["baseline"], lowered, scores="bleu")


def test_a_newer_package_version_alone_is_noted_not_refused(scored, tmp_path):
    def newer(header):
        for facts in header["metrics"].values():
            facts["signature"]["fields"]["version"] = "99.0.0"
    edited = _edit(scored["candidate"], tmp_path / "newer.jsonl", header=newer)
    with pytest.raises(AssertionError):                       # gated: the real regression is found
        assert_no_regression(scored["baseline"], edited)
    from opik_metrics.compare.analysis import CompareSettings, compare_experiments
    from opik_metrics.compare.reading.sources import load_compared

    experiments, _ = load_compared([str(scored["baseline"]), str(edited)])
    notes = compare_experiments(experiments, CompareSettings(resamples=50)).notes
    versions = [note for note in notes if "different package versions" in note]
    assert len(versions) == 1 and "(version: " in versions[0] and " vs 99.0.0)" in versions[0]
    assert not any("different options" in note for note in notes)


def test_a_gated_score_missing_on_one_side_is_a_data_error(scored, tmp_path, capsys):
    rouge_only = _score(tmp_path, "candidate", metrics=("rouge",))
    for extra in ([], ["-m", "bleu"]):
        code, err, _ = _gate(capsys, scored["baseline"], rouge_only, "--fail-on", "worse", *extra)
        assert code == 2 and len(err) == 1
        assert err[0].startswith("opik-metrics: error: cannot gate: ") and f"{rouge_only} has no bleu" in err[0]
    with pytest.raises(ValueError, match=r"has no bleu"):
        assert_no_regression(scored["baseline"], rouge_only)


def test_too_few_paired_items_is_a_data_error_not_a_regression(tmp_path, capsys):
    three = {"img-005", "img-035", "img-013"}
    base = _score(tmp_path, "baseline", metrics=("rouge",), ids=three)
    new = _score(tmp_path, "candidate", metrics=("rouge",), ids=three)
    for mode in ("worse", "not-better"):
        code, err, _ = _gate(capsys, base, new, "--fail-on", mode, "-m", "rouge1_f1")
        assert code == 2 and len(err) == 1
        assert "only 3 paired items" in err[0] and "a data error, not a regression" in err[0]


def test_experiments_disagreeing_on_a_direction_are_a_data_error(scored, tmp_path, capsys):
    def flipped(header):
        for score in header["metrics"]["rouge"]["scores"]:
            if score["name"] == "rouge1_f1":
                score["higher_is_better"] = False
    edited = _edit(scored["candidate"], tmp_path / "flipped.jsonl", header=flipped)
    code, err, _ = _gate(capsys, scored["baseline"], edited, "--fail-on", "worse", "-m", "rouge1_f1")
    assert code == 2 and len(err) == 1
    assert (f"{scored['baseline']} and {edited} disagree on the direction of rouge1_f1: higher is better in "
            f"{scored['baseline']}, lower is better in {edited}") in err[0]


@pytest.mark.parametrize("change, words", [
    (lambda s: s.__setitem__(4, -3.0), "total_1 is -3, a count below 0"),
    (lambda s: s.__setitem__(0, s[4] + 5), "more matching n-grams than n-grams (correct_n above total_n)"),
])
def test_impossible_bleu_statistics_are_a_data_error_naming_the_item(scored, tmp_path, capsys, change, words):
    def damaged(lines):
        change(lines[5]["statistics.bleu"])
    edited = _edit(scored["candidate"], tmp_path / "damaged.jsonl", row=damaged)
    item = json.loads(edited.read_text(encoding="utf-8").splitlines()[5])["id"]
    code, err, _ = _gate(capsys, scored["baseline"], edited, "--fail-on", "worse", "-m", "corpus_bleu")
    assert code == 2 and len(err) == 1
    assert (f"{edited}: item {item} (row 5): the statistics of bleu (for corpus_bleu) cannot come from any item: "
            f"{words}") in err[0]


# -- plugins load only for the commands whose arguments come from the catalog -------------------------------


@pytest.fixture()
def marking_plugin(tmp_path) -> tuple[dict, Path]:
    """An installed plugin (a dist-info with an entry point on PYTHONPATH) whose import leaves a mark."""
    site = tmp_path / "site"
    (site / "marking_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "marking_plugin-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: marking-plugin\nVersion: 1.0\n", encoding="utf-8")
    (site / "marking_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[opik_metrics.metrics]\nmarking = marking_plugin:Metric\n", encoding="utf-8")
    mark = tmp_path / "imported"
    (site / "marking_plugin.py").write_text(
        f"open({str(mark)!r}, 'a').write('imported\\n')\nprint('a plugin printing on import')\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return env, mark


def _cli(env: dict, *args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "opik_metrics", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=120)


def test_plugins_are_not_loaded_by_compare_the_gate_or_other_commands_help(scored, marking_plugin):
    env, mark = marking_plugin
    for args in (["compare", scored["baseline"], scored["candidate"], "--fail-on", "worse"], ["--help"],
                 ["compare", "--help"], ["agreement", "--help"]):
        done = _cli(env, *args)
        assert done.returncode == (1 if "--fail-on" in args else 0), done.stderr
        assert not mark.exists(), f"{args} imported the plugin"
        assert "a plugin printing on import" not in done.stdout + done.stderr
    done = _cli(env, "score", "--help")                   # built-in metrics only: no plugin loads (issue 56)
    assert done.returncode == 0 and not mark.exists()
    done = _cli(env, "score", "-m", "marking", "--help")  # a name the built-ins lack: the plugins load
    assert mark.exists()
    assert "a plugin printing on import" not in done.stdout          # and prints to stderr only


# -- kept columns keep their type ---------------------------------------------------------------------------


def _kept_input(folder: Path) -> Path:
    rows = [json.loads(line) for line in (EXAMPLES / "baseline.jsonl").read_text(encoding="utf-8").splitlines()]
    path = folder / "rated.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for k, row in enumerate(rows):
            f.write(json.dumps({**row, "human": k % 5, "weight": 0.5 if k % 2 else 2, "gold": k % 3 == 0,
                                "mixed": k if k % 4 else "n/a", "tags": ["a", k]}) + "\n")
    return path


@pytest.mark.parametrize("suffix, workers", [(".jsonl", "1"), (".parquet", "1"), (".parquet", "2")])
def test_kept_numbers_stay_numbers_in_every_format(tmp_path, suffix, workers):
    """`--keep human` of a JSON number comes back a number (issue 48: it came back "2"); a column
    mixing integers and floats is numbers; one mixing numbers and text stays text, as a CSV's does."""
    from opik_metrics.streams.output import read_rows

    out = tmp_path / f"scored{suffix}"
    keep = ["--keep", "human", "--keep", "weight", "--keep", "gold", "--keep", "mixed", "--keep", "tags"]
    assert main(["score", "-i", str(_kept_input(tmp_path)), "-o", str(out), "-m", "bleu", "--field", "output=caption",
                 "--no-progress", "--workers", workers, "--chunk-size", "8", "--format", "json", *keep]) == 0
    rows = list(read_rows(str(out)))
    assert [r["human"] for r in rows[:6]] == [0, 1, 2, 3, 4, 0] and all(type(r["human"]) is int for r in rows)
    assert [r["weight"] for r in rows[:3]] == [2.0, 0.5, 2.0] and all(type(r["weight"]) is float for r in rows)
    assert [r["gold"] for r in rows[:4]] == [True, False, False, True]
    assert [r["mixed"] for r in rows[:5]] == ["n/a", "1", "2", "3", "n/a"]     # text: one type a column
    assert rows[1]["tags"] == '["a", 1]'
    assert main(["experiments", "rescore", str(out), "-m", "rouge", "--no-progress", "--format", "json"]) == 0
    again = list(read_rows(str(out)))
    assert [r["human"] for r in again] == [r["human"] for r in rows] and "rouge1_f1" in again[0]


def test_a_csv_column_is_text_as_the_csv_holds_it(tmp_path):
    from opik_metrics.streams.output import read_rows

    source = tmp_path / "rated.csv"
    source.write_text("id,caption,reference,human\na,a dog,a dog runs,2\nb,a cat,a cat sleeps,3\n", encoding="utf-8")
    out = tmp_path / "scored.jsonl"
    assert main(["score", "-i", str(source), "-o", str(out), "-m", "bleu", "--field", "output=caption",
                 "--no-progress", "--keep", "human", "--format", "json"]) == 0
    assert [r["human"] for r in read_rows(str(out))] == ["2", "3"]


# -- review follow-ups ---------------------------------------------------------------------------------------


def test_an_integer_beyond_int64_keeps_its_column_text(tmp_path):
    from opik_metrics.streams.fields import value_kind
    from opik_metrics.streams.output import read_rows

    assert value_kind(2**63 - 1) == "integer" and value_kind(2**63) == "text" and value_kind(-2**63) == "integer"
    source = tmp_path / "big.jsonl"
    source.write_text('{"id": "a", "caption": "a dog", "reference": "a dog runs", "n": 5}\n'
                      '{"id": "b", "caption": "a cat", "reference": "a cat sleeps", "n": 99999999999999999999999}\n',
                      encoding="utf-8")
    out = tmp_path / "big.parquet"
    assert main(["score", "-i", str(source), "-o", str(out), "-m", "bleu", "--field", "output=caption",
                 "--no-progress", "--keep", "n", "--format", "json"]) == 0
    assert [r["n"] for r in read_rows(str(out))] == ["5", "99999999999999999999999"]


def test_records_made_before_signatures_named_their_versions_note_a_version_difference(scored, tmp_path):
    """Neither side lists its version fields (files written before): a newer package version is
    still a version, noted and gated, not refused as another option."""
    def old(version):
        def edit(header):
            for facts in header["metrics"].values():
                facts["signature"].pop("versions", None)
                facts["signature"]["fields"]["version"] = version
        return edit
    base = _edit(scored["baseline"], tmp_path / "old-base.jsonl", header=old("2.5.0"))
    new = _edit(scored["candidate"], tmp_path / "old-new.jsonl", header=old("2.6.0"))
    with pytest.raises(AssertionError):                 # gated: the candidate's real regression
        assert_no_regression(base, new)


def test_a_rounding_negative_nll_sum_is_not_refused_but_a_real_one_is():
    from opik_metrics.core.statistics import resolve_formula
    from opik_metrics.core.statistics_checks import statistics_problem

    perplexity = resolve_formula("opik_metrics.neural.lm.formulas:perplexity_from_statistics")
    assert statistics_problem(perplexity, [[2.5, 10], [-1e-7, 3]]) is None
    assert statistics_problem(perplexity, [[2.5, 10], [-0.5, 3]]) == (
        1, "a negative log-likelihood sum below 0 (nll_sum is -log p, never below 0)")
