"""`opik-metrics compare` on a local store: the summary printed, the report and JSON written, the
numbers equal to the library call's, and clear one-line errors."""
import json

import pytest

from opik_metrics.cli.main import main
from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.model import load_comparison
from opik_metrics.compare.reading.sources import load_experiments
from opik_metrics.experiments.store import ExperimentStore
from tests.compare.systems import answer_with, items_for, store_with
from tests.compare.test_sources import REFS, SYSTEMS


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    systems = {**SYSTEMS, "sys-c": [*SYSTEMS["sys-a"][:-1], "!fail"]}
    return store_with(tmp_path_factory.mktemp("compare") / "store.sqlite", REFS, systems)


def test_summary_report_and_json(store, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["compare", "sys-a", "sys-b", "sys-c", "--store", str(store), "--output", str(out),
                 "--resamples", "200", "--seed", "5"]) == 0
    printed = capsys.readouterr().out
    assert "sys-b vs sys-a (baseline), 8 shared items" in printed
    assert "sys-c vs sys-b (baseline), 7 shared items" in printed
    assert "corpus_bleu" in printed and "rouge1_f1" in printed and "rouge1_precision" not in printed
    assert "failed items: sys-c 1" in printed
    assert f"report: {out / 'index.html'}" in printed
    written = load_comparison(out / "comparison.json")
    with ExperimentStore(store) as db:
        runs = load_experiments(["sys-a", "sys-b", "sys-c"], store=db)
    expected = compare_experiments(runs, CompareSettings(resamples=200, seed=5), source=f"local store {store}",
                                   created_at=written.created_at)
    assert written == expected
    assert (out / "comparison.json").read_text(encoding="utf-8") == expected.to_json()
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "sys-a" in html and "sys-c" in html and "crashed on this item" in html
    assert (out / "plots").is_dir() and any((out / "plots").glob("*.png"))


def test_json_output_and_chosen_metrics(store, tmp_path, capsys):
    assert main(["compare", "sys-a", "sys-b", "--store", str(store), "-o", str(tmp_path / "r"), "--metric", "bleu",
                 "--metric", "corpus_bleu", "--format", "json", "--resamples", "100"]) == 0
    printed = capsys.readouterr().out
    assert printed == (tmp_path / "r" / "comparison.json").read_text(encoding="utf-8")   # the file's JSON
    data = json.loads(printed)
    assert data["schema"] == "opik-metrics/compare/2"
    assert [m["name"] for m in data["metrics"]] == ["bleu", "corpus_bleu"]
    assert data["pairs"][0]["metrics"]["corpus_bleu"]["p_value"] is not None


@pytest.mark.parametrize("argv, message", [
    (["sys-a", "nope"], "no experiment named 'nope'"),
    (["sys-a"], "at least two experiment names"),
    (["sys-a", "sys-b", "--metric", "rouge7_f1"], "metric rouge7_f1 is in none of the experiments"),
    (["sys-a", "sys-b", "--resamples", "0"], "resamples: expected a positive integer"),
    (["sys-a", "sys-b", "--confidence", "95"], "confidence: expected a number between 0 and 1"),
])
def test_errors_are_one_clear_line(store, tmp_path, capsys, argv, message):
    assert main(["compare", *argv, "--store", str(store), "--output", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_experiments_with_no_item_in_common_are_one_error_saying_why(tmp_path, capsys):
    from opik_metrics import BLEU
    from opik_metrics.experiments.runner import run_experiment

    path = tmp_path / "two.sqlite"
    for name, refs in (("news", ["a cat sat", "a dog ran"]), ("captions", ["two birds", "one tree"])):
        run_experiment(name, items_for(refs), answer_with(refs), [BLEU()], dataset_name=f"{name}-set", store=path,
                       progress=False)
    assert main(["compare", "news", "captions", "--store", str(path), "--output", str(tmp_path / "r")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and captured.err.count("nothing to compare") == 1
    assert "news and captions have no item in common" in captured.err
    assert "news is on dataset 'news-set', captions on 'captions-set'" in captured.err
    assert not (tmp_path / "r").exists()


def test_a_corpus_score_that_is_the_mean_says_so(tmp_path, capsys):
    """Issue 40: cider and corpus_cider rows agree because CIDEr-D's corpus score is the mean."""
    from opik_metrics.metrics.cider import CIDEr

    path = store_with(tmp_path / "cider.sqlite", REFS, SYSTEMS, metrics=[CIDEr(df_references=[[r] for r in REFS])])
    assert main(["compare", "sys-a", "sys-b", "--store", str(path), "--output", str(tmp_path / "r"),
                 "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    assert "corpus_cider" in out
    assert out.count("corpus_cider is by definition the mean of cider over the items") == 1
    html = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    assert "corpus_cider is by definition the mean of cider over the items" in html


def test_a_missing_store_is_named(tmp_path, capsys):
    assert main(["compare", "a", "b", "--store", str(tmp_path / "none.sqlite"), "--output", str(tmp_path / "r")]) == 2
    assert "no experiment store at" in capsys.readouterr().err


def test_opik_asked_for_but_down_fails_fast(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPIK_URL_OVERRIDE", "http://127.0.0.1:9/api")
    assert main(["compare", "a", "b", "--opik", "--output", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "Opik server at http://127.0.0.1:9/api" in err and "not reachable" in err and "Traceback" not in err
    assert "pass --store PATH to compare experiments of the local store" in err


def test_output_that_is_a_file_is_refused(store, tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x")
    assert main(["compare", "sys-a", "sys-b", "--store", str(store), "--output", str(target)]) == 2
    assert str(target) in capsys.readouterr().err


def test_the_report_as_a_person_sees_it(store, tmp_path, capsys):
    """The real command's page in headless chromium: a full screenshot, and the text a reader gets."""
    from PIL import Image

    from tests.compare.browser import dump_dom, require_chromium, screenshot

    require_chromium()
    out = tmp_path / "report"
    assert main(["compare", "sys-a", "sys-b", "--store", str(store), "--output", str(out), "--resamples", "200"]) == 0
    png = screenshot(out / "index.html", tmp_path / "page.png", width=1280, height=2000)
    with Image.open(png) as image:
        assert image.size == (1280, 2000)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 500                 # plots and tables, not a blank page
    text = dump_dom(out / "index.html")
    for expected in ("sys-a", "sys-b", "rouge1_f1", "corpus_bleu", "significant", "paired permutation test"):
        assert expected in text, expected
