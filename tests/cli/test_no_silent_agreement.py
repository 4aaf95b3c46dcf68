"""No silent statistics (issue 55, part 5), the meta-evaluation's cases: ``--raters pairs`` takes
each (rater, cell) rating as a pair of its own for rater columns and for a long ratings table too
(each number equal to scipy's on those pairs), every setting that changes a number is in the JSON
output's settings, and one experiment given twice is refused in one line. Each failed on the code before."""
from __future__ import annotations

import json

import numpy as np
import pytest

from opik_metrics.cli.main import main
from tests.cli.test_meta_evaluation_command import scored_rows, systems  # noqa: F401  (the fixture)

stats = pytest.importorskip("scipy.stats")

CORRELATIONS = {"pearson": lambda x, h: stats.pearsonr(x, h).statistic,
                "spearman": lambda x, h: stats.spearmanr(x, h).statistic,
                "kendall_b": lambda x, h: stats.kendalltau(x, h, variant="b").statistic,
                "kendall_c": lambda x, h: stats.kendalltau(x, h, variant="c").statistic}


def _agreement(capsys, *args) -> dict:
    capsys.readouterr()
    assert main(["agreement", *map(str, args), "-m", "bleu", "--resamples", "20", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _uneven_ratings(systems, tmp_path):   # noqa: F811
    """A long ratings table: one to three raters per cell, so that a cell's mean and its pairs differ."""
    rated = {}
    for s, path in enumerate(systems):
        for k in range(8):
            for j, who in enumerate(["ann", "bo", "cy"][: 1 + (k + s) % 3]):
                rated[(f"c{k}", path, who)] = 1 + (3 * k + 2 * s + 5 * j) % 5
    table = tmp_path / "uneven.jsonl"
    table.write_text("".join(json.dumps({"item": item, "system": path, "rater": who, "rating": v}) + "\n"
                             for (item, path, who), v in rated.items()), encoding="utf-8")
    return table, rated


def test_raters_pairs_with_rater_columns_is_scipy_on_the_rater_item_pairs(systems, capsys):   # noqa: F811
    out = _agreement(capsys, *systems, "--human", "r1", "--human", "r2", "--raters", "pairs",
                     "--level", "pooled", "--level", "item")
    assert out["settings"]["raters"] == "pairs"
    rows = {path: scored_rows(path) for path in systems}
    xs = [r["bleu"] for path in systems for r in rows[path] for _ in ("r1", "r2")]
    hs = [float(r[who]) for path in systems for r in rows[path] for who in ("r1", "r2")]
    for method, scipy_value in CORRELATIONS.items():
        assert out["correlations"]["bleu"]["pooled"][method]["estimate"] == pytest.approx(scipy_value(xs, hs),
                                                                                          abs=1e-12)
    per_item = []
    for k in range(8):                 # item level: each item's (system, rater) pairs, then the mean
        x = [rows[path][k]["bleu"] for path in systems for _ in ("r1", "r2")]
        h = [float(rows[path][k][who]) for path in systems for who in ("r1", "r2")]
        if len(set(x)) > 1 and len(set(h)) > 1:
            per_item.append(stats.pearsonr(x, h).statistic)
    item = out["correlations"]["bleu"]["item"]["pearson"]
    assert item["estimate"] == pytest.approx(np.mean(per_item), abs=1e-12) and item["n_systems"] == 3
    mean = _agreement(capsys, *systems, "--human", "r1", "--human", "r2", "--level", "pooled")
    assert mean["settings"]["raters"] == "mean"
    assert mean["correlations"]["bleu"]["pooled"]["pearson"]["estimate"] != pytest.approx(
        out["correlations"]["bleu"]["pooled"]["pearson"]["estimate"], abs=1e-6)


def test_raters_pairs_with_a_ratings_table_at_every_level(systems, tmp_path, capsys):   # noqa: F811
    table, rated = _uneven_ratings(systems, tmp_path)
    out = _agreement(capsys, *systems, "--ratings", table, "--raters", "pairs", "--level", "pooled",
                     "--level", "system")
    assert out["settings"]["raters"] == "pairs" and out["settings"]["ratings_file"] == str(table)
    bleu = {(f"c{k}", path): r["bleu"] for path in systems for k, r in enumerate(scored_rows(path))}
    xs = [bleu[(item, path)] for (item, path, _) in rated]
    hs = list(rated.values())
    pooled = out["correlations"]["bleu"]["pooled"]
    for method, scipy_value in CORRELATIONS.items():
        assert pooled[method]["estimate"] == pytest.approx(scipy_value(xs, hs), abs=1e-12)
    assert pooled["pearson"]["low"] is not None and pooled["pearson"]["n_systems"] == 3
    # system level: each system's means over its pairs (a cell rated three times counts three times)
    mx = [np.mean([bleu[(i, p)] for (i, p, _) in rated if p == path]) for path in systems]
    mh = [np.mean([v for (_, p, _), v in rated.items() if p == path]) for path in systems]
    system = out["correlations"]["bleu"]["system"]
    assert system["pearson"]["estimate"] == pytest.approx(stats.pearsonr(mx, mh).statistic, abs=1e-12)
    assert system["pearson"]["n_items"] == 8 and system["pairwise_accuracy"]["n_pairs"] == 3
    mean = _agreement(capsys, *systems, "--ratings", table, "--level", "pooled")
    assert mean["correlations"]["bleu"]["pooled"]["pearson"]["estimate"] != pytest.approx(
        pooled["pearson"]["estimate"], abs=1e-6)


def test_raters_pairs_with_compare_metrics_is_refused_in_one_line(systems, capsys):   # noqa: F811
    capsys.readouterr()
    assert main(["agreement", *systems, "--human", "r1", "--human", "r2", "--raters", "pairs",
                 "--compare-metrics"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("opik-metrics: error: --compare-metrics with --raters pairs: ")


def test_the_settings_that_change_numbers_are_recorded(systems, capsys):   # noqa: F811
    out = _agreement(capsys, systems[0], "--human", "r1", "--group-by", "image", "--level", "item")
    assert out["settings"]["group_by"] == "image" and out["settings"]["raters"] == "mean"
    simple = _agreement(capsys, systems[0], "--human", "r1", "--raters", "pairs")
    assert simple["settings"]["raters"] == "pairs"


def test_one_experiment_given_twice_is_refused_in_one_line(systems, capsys):   # noqa: F811
    capsys.readouterr()
    assert main(["agreement", systems[0], systems[1], systems[0], "--human", "r1", "--level", "system"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"opik-metrics: error: {systems[0]} is given twice: each experiment is one system; name each "
                   "system once"]
