"""The comparison report without a browser: files, page structure, escaping, plots, JSON, determinism.
The report is written from the Comparison that the sample comparison.json reads as; the tests check the
page against that JSON."""
from __future__ import annotations

import copy
import dataclasses
import html
import json
import math
import re
from html.parser import HTMLParser

import numpy as np
import pytest
from PIL import Image

from opik_metrics.compare.report.html import fmt_interval, fmt_num, fmt_p, render_html, verdict_badge
from opik_metrics.compare.model import (Comparison, ComparisonSettings, ExperimentSummary, ScoreSummary, ScoreValue,
                                        Verdict)
from opik_metrics.compare.report.plots import (SECTION_DIFFERENCES, SECTION_DISTRIBUTIONS, SECTION_MEANS, PlotFile,
                                        iter_figures)
from opik_metrics.compare.report.folder import ReportFiles, write_report
from tests.compare.sample_comparison import make_comparison, sample

ITEM_METRICS = ["rouge1", "rougeL", "bleu", "bertscore_f1", "perplexity"]
URL_ATTRIBUTES = {"src", "href", "srcset", "action", "data", "poster", "background", "formaction", "xlink:href"}


class Page(HTMLParser):
    """Tags with their attributes, and the text, of an HTML page."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def all(self, tag: str) -> list[dict]:
        return [attrs for name, attrs in self.tags if name == tag]


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    """A written report of three experiments: (comparison, files, html text, parsed page)."""
    comparison = make_comparison(3)
    files = write_report(Comparison.from_dict(comparison), tmp_path_factory.mktemp("report3") / "out")
    text = files.html.read_text(encoding="utf-8")
    return comparison, files, text, Page(text)


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    comparison = make_comparison(2)
    files = write_report(Comparison.from_dict(comparison), tmp_path_factory.mktemp("report2") / "out")
    return comparison, files


def _anchor(metric: str) -> str:
    return "metric-" + re.sub(r"[^a-z0-9]+", "-", metric.lower()).strip("-")


def _article(text: str, metric: str) -> str:
    """The folded detail block of one metric."""
    match = re.search(rf'<details class="metric" id="{_anchor(metric)}">(.*?)</details>', text, re.S)
    assert match, metric
    return match.group(1)


# ----------------------------------------------------------------------------- files and JSON

def test_files_are_written(three):
    comparison, files, _, _ = three
    assert isinstance(files, ReportFiles)
    out = files.html.parent
    assert files.html == out / "index.html" and files.json == out / "comparison.json"
    pngs = sorted((out / "plots").glob("*.png"))
    assert sorted(files.plots) == pngs and len(pngs) == 5 + 2 + 5 + 4 + 4  # dists, means, diffs of 3 pairs
    for png in pngs:
        with Image.open(png) as image:
            assert image.format == "PNG" and image.size == (640, 360)
        assert png.stat().st_size < 80_000


def test_json_round_trip_keeps_non_ascii(three):
    comparison, files, _, _ = three
    text = files.json.read_text(encoding="utf-8")
    assert json.loads(text) == comparison                       # the JSON read in, written back the same
    assert Comparison.from_json(text).to_json() == text
    assert "système-ç" in text and "\\u00e8" not in text
    assert text.startswith('{\n  "schema": "opik-metrics/compare/2"')


@pytest.mark.parametrize("where, bad", [
    (("scores", "rouge1", "system-a", "values", 3), float("nan")),
    (("pairs", 0, "metrics", "bleu", "delta_high"), float("inf")),
    (("scores", "perplexity", "system-b & co", "value"), np.float64("nan")),
])
def test_non_finite_numbers_are_rejected_with_their_place(tmp_path, where, bad):
    comparison = make_comparison(2)
    target = comparison
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = bad
    with pytest.raises(ValueError) as error:
        write_report(Comparison.from_dict(comparison), tmp_path / "out")
    place = where[0] + "".join(f"[{k}]" if isinstance(k, int) else f'["{k}"]' for k in where[1:])
    assert place in str(error.value)
    assert not (tmp_path / "out").exists()  # checked before anything is written


def test_out_dir_that_is_a_file_is_a_clear_error(tmp_path):
    target = tmp_path / "report"
    target.write_text("not a folder")
    with pytest.raises(NotADirectoryError, match="report"):
        write_report(sample(2), target)


def test_unknown_schema_is_refused(tmp_path):
    comparison = make_comparison(2)
    comparison["schema"] = "something/else"
    with pytest.raises(ValueError, match="schema 'something/else' is not one this version reads "
                                         r"\(opik-metrics/compare/2, opik-metrics/compare/1\)"):
        Comparison.from_dict(comparison)
    with pytest.raises(ValueError, match="expected a Comparison .* got dict"):
        write_report(make_comparison(2), tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- page structure

def test_page_has_every_section(three):
    comparison, files, text, page = three
    assert text.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in text
    ids = {attrs.get("id") for _, attrs in page.tags}
    assert {"experiments", "summary", "plots", "largest", "failed", "notes", "config"} <= ids
    assert len(page.all("h1")) == 1
    visible = html.unescape(text)
    settings = comparison["settings"]
    for expected in (comparison["source"], comparison["created_at"], settings["test"], "1000", "12345", "95%"):
        assert expected in visible
    for metric in comparison["metrics"]:
        assert f'id="{_anchor(metric["name"])}"' in text
    for note in comparison["notes"]:
        assert html.escape(note) in text
    assert len(page.all("details")) == len(comparison["experiments"]) + 1 + len(comparison["metrics"])
    for experiment in comparison["experiments"]:
        assert html.escape(experiment["model"]) in text


def test_summary_tables_show_values_intervals_and_tests(three):
    comparison, _, text, _ = three
    rouge1 = _article(text, "rouge1")
    assert "higher is better" in rouge1 and "lower is better" not in rouge1
    perplexity = _article(text, "perplexity")
    assert "lower is better" in perplexity and "log scale" in perplexity
    for name, entry in comparison["scores"]["rouge1"].items():
        assert f"{fmt_num(entry['value'])}</td>" in rouge1
        assert f"[{fmt_num(entry['low'])}, {fmt_num(entry['high'])}]" in rouge1
    for pair in comparison["pairs"]:
        entry = pair["metrics"]["rouge1"]
        assert f"{fmt_p(entry['p_value'])}</td>".replace("<0", "&lt;0") in rouge1
        assert f"{entry['wins']} / {entry['ties']} / {entry['losses']}" in rouge1
        assert {"better": "significant: better", "worse": "significant: worse",
                "no significant difference": "not significant"}[entry["verdict"]] in rouge1
    assert "significant: better" in rouge1 and "significant: worse" in rouge1  # b beats a; c loses to b
    corpus = _article(text, "corpus_bleu")
    assert "corpus-level score" in corpus and "/ — /" not in corpus and "<td class=\"num\">—</td>" in corpus


def _glance(text: str, system: str, baseline: str) -> str:
    """The at-a-glance table of one pair."""
    start = text.index(f'<h3>{html.escape(system)} <span class="missing">vs</span> {html.escape(baseline)}')
    return text[start:text.index("</table>", start)]


def test_the_summary_opens_with_a_table_per_pair_of_every_score(three):
    comparison, _, text, _ = three
    summary = text[text.index('id="summary"'):]
    assert summary.index("<table") < summary.index("<details")             # the glance tables come first
    for pair in comparison["pairs"]:
        table = _glance(text, pair["system"], pair["baseline"])
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]
        assert len(rows) == len(comparison["metrics"])
        for metric, row in zip(comparison["metrics"], rows):
            name, entry = metric["name"], pair["metrics"][metric["name"]]
            assert row.startswith(f"<td>{html.escape(name)} ")
            assert ("↑" if metric["higher_is_better"] else "↓") in row
            for side in ("baseline", "system"):
                value = comparison["scores"][name].get(pair[side])
                if value is not None:
                    assert f"{fmt_num(value['value'])} {fmt_interval(value['low'], value['high'])}" in row
            if entry["p_value"] is not None:
                assert html.escape(fmt_p(entry["p_value"])) in row
                assert fmt_num(entry["delta"], signed=True) in row
                assert {"better": "significant: better", "worse": "significant: worse", "n/a": "n/a",
                        "no significant difference": "not significant"}[entry["verdict"]] in row


def test_missing_metric_and_missing_test_are_explained(three):
    _, _, text, _ = three
    perplexity = _article(text, "perplexity")
    assert "not computed" in perplexity
    assert html.escape("perplexity was not computed for système-ç") in perplexity
    assert perplexity.count('<td class="num">—</td>') >= 2 * 5  # two pairs without a test: no numbers at all


def test_plots_are_shown_with_captions(three):
    _, files, text, page = three
    images = page.all("img")
    assert len(images) == len(files.plots)
    out = files.html.parent
    for image in images:
        assert image["src"].startswith("plots/") and (out / image["src"]).is_file()
        assert image["alt"]
    assert text.count("<figcaption>") == len(images)
    for section in (SECTION_DISTRIBUTIONS, SECTION_MEANS, SECTION_DIFFERENCES):
        assert f"<h3>{section}</h3>" in text


def test_largest_differences_and_failed_items(three):
    comparison, _, text, page = three
    largest = text[text.index('id="largest"'):text.index('id="failed"')]
    for pair in comparison["pairs"]:
        for row in pair["metrics"]["rouge1"]["largest_differences"]:
            assert html.escape(row["system_output"]) in largest
            assert fmt_num(row["delta"], signed=True) in largest
    failed = text[text.index('id="failed"'):text.index('id="notes"')]
    assert "system-a: 2 failed items" in failed and "système-ç: 0 failed items" in failed
    for items in comparison["failed_items"].values():
        for item in items:
            assert html.escape(item["reason"]) in failed and f">{item['stage']}<" in failed
    long_input = comparison["failed_items"]["system-a"][1]["input"]
    assert len(long_input) > 300
    titled = [attrs["title"] for attrs in page.all("span") if "title" in attrs]
    assert long_input in titled  # full text in the title, shortened in the cell
    assert html.escape(long_input) not in failed.replace(f'title="{html.escape(long_input)}"', "")


# ----------------------------------------------------------------------------- escaping and offline

def test_user_text_is_escaped(three):
    _, _, text, page = three
    assert "<script" not in text.lower() and "<i>its</i>" not in text and "<b>bold</b>" not in text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text
    assert "Tom &amp; Jerry" in text and "system-b &amp; co" in text
    assert "naïve café" in text and "日本語" in text
    assert re.findall(r"&(?!(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);)", text) == []  # every & is an entity
    assert {tag for tag, _ in page.tags} <= {
        "html", "head", "meta", "title", "style", "body", "main", "header", "h1", "h2", "h3", "h4", "p", "dl",
        "dt", "dd", "nav", "a", "section", "div", "table", "thead", "tbody", "tr", "th", "td", "span", "b",
        "article", "figure", "img", "figcaption", "ul", "li", "details", "summary", "pre", "footer"}


def _assert_offline(text: str) -> None:
    page = Page(text)
    for tag, attrs in page.tags:
        for name, value in attrs.items():
            if name in URL_ATTRIBUTES:
                assert not re.match(r"^\s*([a-z][a-z0-9+.-]*:|//)", value or "", re.I), (tag, name, value)
    style = "".join(re.findall(r"<style>(.*?)</style>", text, re.S))
    assert "url(" not in style and "@import" not in style and "@font-face" not in style
    assert not page.all("script") and not page.all("link") and not page.all("iframe")


def test_no_external_url(three):
    _, _, text, _ = three
    _assert_offline(text)
    assert "http://" not in text and "https://" not in text


def test_server_source_is_text_not_a_link(three):
    comparison, files, _, _ = three
    comparison = copy.deepcopy(comparison)
    comparison["source"] = 'Opik server at http://localhost:5173/api?a=1&b="2"'
    plots = [PlotFile(f"plots/{p.name}", "t", "c", SECTION_MEANS) for p in files.plots]
    text = render_html(Comparison.from_dict(comparison), plots)
    _assert_offline(text)
    assert "Opik server at http://localhost:5173/api?a=1&amp;b=&quot;2&quot;" in text


# ----------------------------------------------------------------------------- numbers

def test_number_formatting():
    assert fmt_num(0.412345) == "0.4123" and fmt_num(23.456) == "23.46" and fmt_num(1234.5) == "1234"
    assert fmt_num(-0.06, signed=True) == "-0.06000" and fmt_num(0.0312, signed=True) == "+0.03120"
    assert fmt_num(38) == "38" and fmt_num(None) == "—" and fmt_num(math.nan) == "—"
    assert fmt_num(1e-9) == "1.000e-09"
    assert fmt_p(0.0004) == "<0.001" and fmt_p(0.001) == "0.001" and fmt_p(0.04567) == "0.046"
    assert fmt_p(None) == "—"


def test_the_badge_shows_the_analysis_verdict():
    """The page words the verdict it is given (the analysis decides it in the score's direction:
    tests/compare/test_model.py); the same drop reads better or worse as the verdict says."""
    entry = dataclasses.replace(sample(2).pairs[0].metrics["perplexity"], delta=-2.0, p_value=0.01, note="why")
    assert "▲ significant: better" in verdict_badge(dataclasses.replace(entry, verdict=Verdict.BETTER))
    assert "▼ significant: worse" in verdict_badge(dataclasses.replace(entry, verdict=Verdict.WORSE))
    assert "not significant" in verdict_badge(dataclasses.replace(entry, verdict=Verdict.NO_DIFFERENCE))
    assert verdict_badge(dataclasses.replace(entry, verdict=Verdict.NONE)) == \
        '<span class="badge na" title="why">n/a</span>'


# ----------------------------------------------------------------------------- plots

def test_every_plot_has_title_labels_and_legend():
    comparison = sample(3)
    seen = []
    for plot, figure in iter_figures(comparison):
        assert plot.path.startswith("plots/") and plot.title and plot.caption
        assert tuple(figure.get_size_inches() * figure.dpi) == (640, 360)
        (ax,) = figure.axes
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel(), plot.path
        legend = ax.get_legend()
        assert legend is not None and all(t.get_text() for t in legend.get_texts()), plot.path
        if plot.metric == "perplexity" and plot.section != SECTION_DIFFERENCES:
            assert "log" in (ax.get_yscale(), ax.get_xscale())
        if plot.section == SECTION_DIFFERENCES:
            labels = [t.get_text() for t in legend.get_texts()]
            assert "no difference" in labels and any(label.startswith("mean difference") for label in labels)
            assert any("CI of delta" in label for label in labels)
        seen.append((plot.section, plot.metric, plot.pair))
    assert {s[0] for s in seen} == {SECTION_DISTRIBUTIONS, SECTION_MEANS, SECTION_DIFFERENCES}
    assert not any(metric == "corpus_bleu" and section != SECTION_MEANS for section, metric, _ in seen)
    differences = [s for s in seen if s[0] == SECTION_DIFFERENCES]
    assert len(differences) == 5 + 4 + 4  # perplexity is missing for the third experiment
    assert "système-ç" in {pair[1] for _, _, pair in differences}


def test_no_pyplot_figures_are_left_open(two):
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []


def test_output_is_deterministic(two, tmp_path):
    comparison, first = two
    second = write_report(Comparison.from_dict(copy.deepcopy(comparison)), tmp_path / "again")
    assert first.html.read_bytes() == second.html.read_bytes()
    assert first.json.read_bytes() == second.json.read_bytes()
    assert [p.name for p in first.plots] == [p.name for p in second.plots]
    for a, b in zip(first.plots, second.plots):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_degenerate_comparisons_still_render(tmp_path):
    """Identical systems (all differences 0), one item, a metric with no values, no pairs, no failures."""
    comparison = make_comparison(2, items=4)
    entry = comparison["pairs"][0]["metrics"]["rouge1"]
    entry.update(delta=0.0, delta_low=0.0, delta_high=0.0, p_value=1.0, verdict="no significant difference",
                 differences=[0.0] * len(entry["differences"]))
    comparison["scores"]["bleu"]["system-a"].update(values=[], value=None, low=None, high=None)
    files = write_report(Comparison.from_dict(comparison), tmp_path / "same")
    assert "not significant" in files.html.read_text(encoding="utf-8")

    # equal but for float rounding (0.1 + 0.2 against 0.3): numpy's own rule cannot bin them
    rounded = [0.1 + 0.2 if k % 2 else 0.3 for k in range(len(entry["differences"]))]
    entry.update(differences=rounded)
    files = write_report(Comparison.from_dict(comparison), tmp_path / "rounded")
    assert any("-diff-rouge1" in p.name for p in files.plots)

    minimal = Comparison(
        created_at="t", source="s", settings=ComparisonSettings(10, 1, 0.95, 0.05, 1e-9, 5, 5, "test"), versions={},
        experiments=(ExperimentSummary("only", None, None, 1, 1, 0, None, None, {}, {}),), metrics=(ScoreSummary("bleu", "corpus", True, "linear", (None, None), None),),
        scores={"bleu": {"only": ScoreValue(0.3, None, None, 1, 0, 0, {}, ())}}, pairs=(), failed_items={},
        notes=())
    files = write_report(minimal, tmp_path / "minimal")
    text = files.html.read_text(encoding="utf-8")
    assert "only" in text and "No pairs." in text and "No notes." in text
    _assert_offline(text)


def test_header_and_summaries_read_each_pair_the_same_way(two, three):
    """Issue 40: the header said "a vs b" and the summary "b vs a": both say system vs baseline."""
    from opik_metrics.compare.report.summary import format_comparison

    comparison, files = two
    text = files.html.read_text(encoding="utf-8")
    a, b = (e["name"] for e in comparison["experiments"])
    assert f'<p class="subtitle">{html.escape(b)} vs {html.escape(a)} (baseline)</p>' in text
    assert f"<title>Comparison: {html.escape(b)} vs {html.escape(a)} (baseline)</title>" in text
    assert f"\n{b} vs {a} (baseline), " in format_comparison(Comparison.from_dict(comparison))
    assert f"{html.escape(a)} vs {html.escape(b)}" not in text
    assert "each vs the ones before it (the first is the baseline)" in three[2]
