"""The CLI's exit codes as a contract and the faults a tester found on the real command line (issue 56):
0 done, 1 a regression only, 2 a usage or data error, 70 a bug (one line naming the log that holds its
traceback); bounded --resamples / --permutations and index draws; ``--engine ray`` without Ray; compare
without -o prints its table; an unknown metric is one line with a "did you mean"; each command's own
words; a spread of trials that is rounding alone shows as none. Each failed on the code before."""
from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from opik_metrics.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ci"


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> dict[str, str]:
    """The CI example's baseline and candidate scored with ROUGE and BLEU (a kept 'human' column too)."""
    folder = tmp_path_factory.mktemp("contract")
    out = {}
    for name in ("baseline", "candidate"):
        rows = [json.loads(line) for line in (EXAMPLES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]
        source = folder / f"{name}.jsonl"
        source.write_text("".join(json.dumps({**row, "human": k % 5}) + "\n" for k, row in enumerate(rows)),
                          encoding="utf-8")
        out[name] = str(folder / f"{name}.scores.jsonl")
        assert main(["score", "-i", str(source), "-o", out[name], "-m", "rouge", "-m", "bleu", "--keep", "human",
                     "--field", "output=caption", "--no-progress", "--format", "json"]) == 0
    return out


def _err_lines(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


# -- 1. an unexpected error: exit 70, one line, the traceback in a log file (or shown with --debug) ---------

COMMANDS = {"compare": ["compare", "{baseline}", "{candidate}"],
            "gate": ["compare", "{baseline}", "{candidate}", "--fail-on", "worse"],
            "agreement": ["agreement", "{baseline}", "--human", "human", "--resamples", "40"]}


def _boom(*args, **kwargs):
    raise RuntimeError("boom inside the reader")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_unexpected_error_exits_70_with_one_line_naming_its_log(command, scored, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr("opik_metrics.compare.reading.sources.load_compared", _boom)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("OPIK_METRICS_DEBUG", raising=False)
    capsys.readouterr()
    assert main([a.format(**scored) for a in COMMANDS[command]]) == 70
    err = _err_lines(capsys)
    assert len(err) == 1, err
    found = re.fullmatch(r"opik-metrics: internal error: RuntimeError: boom inside the reader \(a bug: the traceback "
                         r"is in (\S+\.log); --debug shows it\)", err[0])
    assert found, err[0]
    log = Path(found.group(1))
    assert log.parent == tmp_path and "Traceback" in log.read_text() and "boom inside the reader" in log.read_text()


@pytest.mark.parametrize("how", ["flag first", "flag after", "environment"])
def test_debug_shows_the_traceback(how, scored, monkeypatch, capsys):
    monkeypatch.setattr("opik_metrics.compare.reading.sources.load_compared", _boom)
    argv = ["compare", scored["baseline"], scored["candidate"]]
    if how == "environment":
        monkeypatch.setenv("OPIK_METRICS_DEBUG", "1")
    else:
        argv = ["--debug", *argv] if how == "flag first" else [*argv, "--debug"]
    assert main(argv) == 70
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and "RuntimeError: boom inside the reader" in err
    assert err.strip().splitlines()[-1].startswith("opik-metrics: internal error: RuntimeError: boom")


# -- 2. bounded work: beyond the bounds, one line before any work -----------------------------------------

@pytest.mark.parametrize("argv, says", [
    (["compare", "{baseline}", "{candidate}", "--fail-on", "worse", "--resamples", "1000000000"],
     "--resamples: 1,000,000,000 is more than the most allowed, 100,000"),
    (["compare", "{baseline}", "{candidate}", "--permutations", "1000000000"],
     "--permutations: 1,000,000,000 is more than the most allowed, 1,000,000"),
    (["agreement", "{baseline}", "--human", "human", "--compare-metrics", "--permutations", "1000000000"],
     "--permutations: 1,000,000,000 is more than the most allowed, 1,000,000"),
    (["agreement", "{baseline}", "--human", "human", "--resamples", "1000000000"],
     "--resamples: 1,000,000,000 is more than the most allowed, 100,000"),
], ids=["compare resamples", "compare permutations", "agreement permutations", "agreement resamples"])
def test_work_beyond_the_bounds_is_a_usage_error_before_any_work(argv, says, scored, monkeypatch, capsys):
    monkeypatch.setattr("opik_metrics.compare.reading.sources.load_compared", _boom)    # nothing is read
    capsys.readouterr()
    assert main([a.format(**scored) for a in argv]) == 2
    err = _err_lines(capsys)
    assert err == [f"opik-metrics: error: {says}"]


def test_the_bounds_hold_from_python_too():
    from opik_metrics.compare.analysis import CompareSettings
    from opik_metrics.meta_evaluation.evaluation import MetaSettings

    with pytest.raises(ValueError, match="resamples: 100,001 is more than the most allowed, 100,000"):
        CompareSettings(resamples=100_001).check()
    with pytest.raises(ValueError, match="permutations: 1,000,001 is more than"):
        MetaSettings(permutations=1_000_001).check()


def test_an_index_draw_beyond_the_memory_bound_is_refused_before_it_is_drawn():
    from opik_metrics.compare.statistics.bootstrap import resample_indices

    with pytest.raises(ValueError, match=r"the bootstrap draw of 100,000 resamples x 10,000 items = 1,000,000,000 "
                                         r"item indices is more than the 250,000,000 held at most \(about 1 GB\): "
                                         r"give at most 25,000 resamples for 10,000 items"):
        resample_indices(10_000, 100_000)


def test_compare_names_the_draw_beyond_the_bound_in_one_line(scored, monkeypatch, capsys):
    monkeypatch.setattr("opik_metrics.compare.statistics.bootstrap.MAX_RESAMPLED_INDICES", 1000)
    capsys.readouterr()
    assert main(["compare", scored["baseline"], scored["candidate"], "--fail-on", "worse", "--resamples", "100"]) == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and "the bootstrap draw of 100 resamples x 40 items = 4,000 item indices" in err[0], err


# -- 3. --engine ray without Ray: one line, before any work, nothing left behind ---------------------------

def test_engine_ray_without_ray_is_one_line_and_leaves_nothing(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)              # `import ray` fails, as without the extra
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "output": "a cat", "reference": "a cat"}\n', encoding="utf-8")
    capsys.readouterr()
    assert main(["score", "-i", str(source), "-o", str(tmp_path / "out.jsonl"), "--engine", "ray", "-m", "bleu",
                 "--no-progress"]) == 2
    assert _err_lines(capsys) == ["opik-metrics: error: --engine ray needs the ray extra: pip install "
                                  "'opik-metrics[ray]' (ray is not installed); or drop --engine ray to score on this "
                                  "machine"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


# -- 5. compare without -o prints the summary table --------------------------------------------------------

def test_compare_without_output_prints_the_table_and_writes_nothing(scored, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["compare", scored["baseline"], scored["candidate"], "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "corpus_bleu" in out and "report:" not in out
    assert list(tmp_path.iterdir()) == []


# -- 6. an unknown metric: one line, with the closest names ------------------------------------------------

@pytest.mark.parametrize("argv", [["score", "-p", "{p}", "-r", "{p}", "-m", "rogue"],
                                  ["score", "-i", "{p}", "--metric=rogue"],
                                  ["experiments", "rescore", "x", "-m", "rogue"],
                                  ["traces", "score", "--project", "P", "-m", "rogue"]],
                         ids=["score", "score records", "rescore", "traces"])
def test_an_unknown_metric_is_one_line_with_a_suggestion(argv, capsys, tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("a\n", encoding="utf-8")
    capsys.readouterr()
    assert main([a.format(p=path) for a in argv]) == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and err[0].startswith("opik-metrics: error: unknown metric 'rogue'; did you mean 'rouge'? "
                                               "(known: bartscore, bertscore, bleu,"), err


def test_the_catalog_suggests_from_python_too():
    from opik_metrics.metrics.catalog import metric_class

    with pytest.raises(ValueError, match=r"unknown metric 'bleuu'; did you mean 'bleu'\?"):
        metric_class("bleuu")


@pytest.mark.parametrize("argv, hints", [
    (["score", "-p", "{p}", "-r", "{p}", "-m", "bleu", "--bleu-tokenise", "13a"],
     ["--bleu-tokenise: did you mean --bleu-tokenize?"]),
    (["score", "-i", "{p}", "-o", "{p}.jsonl", "--keeep", "output", "--remvoe-stopwords"],
     ["--keeep: did you mean --keep?", "--remvoe-stopwords: did you mean --remove-stopwords?"]),
    (["compare", "a.jsonl", "b.jsonl", "--fail-on-worse"], ["--fail-on-worse: did you mean --fail-on?"]),
    (["agreement", "a.jsonl", "--humans=h"], ["--humans: did you mean --human?"]),
], ids=["a metric's option", "two options", "compare", "agreement, option=value"])
def test_an_unknown_option_names_the_commands_closest_options(argv, hints, capsys, tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("a\n", encoding="utf-8")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main([a.format(p=path) for a in argv])
    assert exited.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-len(hints) - 1].startswith("opik-metrics: error: unrecognized arguments: ")
    assert [line.strip() for line in err[-len(hints):]] == hints


def test_an_option_nothing_resembles_gets_no_guess(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "a.jsonl", "b.jsonl", "--zzzzzz"])
    assert capsys.readouterr().err.splitlines()[-1] == "opik-metrics: error: unrecognized arguments: --zzzzzz"


# -- 7. each command in its own words; rounding is no spread -----------------------------------------------

def test_agreement_speaks_of_agreement(scored, capsys, tmp_path):
    capsys.readouterr()
    assert main(["agreement", str(tmp_path / "missing.jsonl"), "--human", "human"]) == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and "agreement reads the .jsonl or .parquet files" in err[0] and "compare" not in err[0]


def test_trials_that_agree_but_for_rounding_are_deterministic(tmp_path, capsys):
    rows = [json.loads(line) for line in (EXAMPLES / "baseline.jsonl").read_text(encoding="utf-8").splitlines()]
    source = tmp_path / "trials.jsonl"
    source.write_text("".join(json.dumps({**row, "trial": t}) + "\n" for row in rows[:12] for t in range(3)),
                      encoding="utf-8")
    first = tmp_path / "a.jsonl"
    assert main(["score", "-i", str(source), "-o", str(first), "-m", "bleu", "--field", "output=caption",
                 "--keep", "trial", "--no-progress", "--format", "json"]) == 0
    shutil.copy(first, tmp_path / "b.jsonl")
    capsys.readouterr()
    assert main(["compare", str(first), str(tmp_path / "b.jsonl"), "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert "bleu is the same on every trial of every item (deterministic)" in out
    assert "varies across the trials" not in out


def test_a_spread_of_rounding_is_zero_and_a_real_one_is_kept():
    from opik_metrics.compare.statistics.trials import trial_sd

    assert trial_sd([0.1, 0.1, 0.1], sum([0.1, 0.1, 0.1]) / 3) == 0.0
    assert trial_sd([1e-20, 2e-20], 1.5e-20) == pytest.approx(7.0710678e-21)    # tiny values keep their spread
