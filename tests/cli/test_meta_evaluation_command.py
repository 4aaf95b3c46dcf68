"""``opik-metrics agreement`` as a meta-evaluation: several record files are several systems on one
dataset; the item and system levels, rater columns, a long ratings table and --group-by reach the
same numbers as the library on the same table; bad input is one line naming item and field."""
from __future__ import annotations

import json

import numpy as np
import pytest

from opik_metrics.cli.main import main

stats = pytest.importorskip("scipy.stats")

REFS = [f"a {w} sits on the mat today" for w in ("cat", "dog", "man", "kid", "bird", "fox", "cow", "pig")]


def scored_rows(path):
    """The scored rows of a record file (its first line is the header)."""
    return [row for row in map(json.loads, open(path, encoding="utf-8")) if "opik_metrics.records" not in row]


def _score(tmp_path, name, rows):
    source = tmp_path / f"{name}.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / f"{name}-scored.jsonl"
    keep = [arg for column in ("r1", "r2", "image", "vote") if column in rows[0] for arg in ("--keep", column)]
    assert main(["score", "-i", str(source), "-o", str(out), "-m", "bleu", "-m", "rouge", *keep]) == 0
    return str(out)


@pytest.fixture
def systems(tmp_path):
    """Three systems captioning the same 8 images; two raters each caption."""
    files = []
    for s in range(3):
        rows = []
        for k, ref in enumerate(REFS):
            words = ref.split()[:2 + (k + s) % 6]
            rows.append({"id": f"c{k}", "image": f"img{k // 2}", "output": " ".join(words), "reference": ref,
                         "r1": 1 + (k + s) % 5, "r2": 1 + (k + 2 * s) % 4})
        files.append(_score(tmp_path, f"sys{s}", rows))
    return files


def test_levels_over_several_systems_with_rater_columns(systems, capsys):
    capsys.readouterr()
    assert main(["agreement", *systems, "--human", "r1", "--human", "r2", "-m", "bleu", "--level", "item",
                 "--level", "system", "--method", "pearson", "--resamples", "20", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["systems"] == systems and out["raters"] == ["r1", "r2"] and out["n_items"] == 8
    # the system level by hand: each system's mean BLEU and mean (r1 + r2) / 2, correlated with scipy
    bleu, human = [], []
    for path in systems:
        rows = scored_rows(path)
        bleu.append(np.mean([r["bleu"] for r in rows]))
        human.append(np.mean([(float(r["r1"]) + float(r["r2"])) / 2 for r in rows]))
    system = out["correlations"]["bleu"]["system"]
    assert system["pearson"]["estimate"] == pytest.approx(stats.pearsonr(bleu, human).statistic, abs=1e-12)
    assert system["pairwise_accuracy"]["n_pairs"] == 3
    assert set(out["alpha"]) == {"interval", "ordinal"} and set(out["rater_vs_rest"]) == {"r1", "r2"}


def test_group_by_and_a_long_ratings_table(systems, tmp_path, capsys):
    ratings = tmp_path / "ratings.jsonl"
    ratings.write_text("".join(json.dumps({"item": f"c{k}", "rater": who, "rating": 1 + (k * (j + 1)) % 5}) + "\n"
                               for k in range(8) for j, who in enumerate(["ann", "bo"])), encoding="utf-8")
    capsys.readouterr()
    assert main(["agreement", systems[0], "--ratings", str(ratings), "-m", "bleu",
                 "--method", "spearman", "--resamples", "20", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["raters"] == ["ann", "bo"]
    rows = scored_rows(systems[0])
    mean = [np.mean([1 + (k * 1) % 5, 1 + (k * 2) % 5]) for k in range(8)]
    expected = stats.spearmanr([r["bleu"] for r in rows], mean).statistic
    assert out["correlations"]["bleu"]["pooled"]["spearman"]["estimate"] == pytest.approx(expected, abs=1e-12)
    assert main(["agreement", systems[0], "--human", "r1", "--group-by", "image", "--level", "item", "-m", "bleu",
                 "--resamples", "20"]) == 0
    table = capsys.readouterr().out
    assert "item level" in table and "4x2" in table         # 4 images, two captions each


def test_meta_errors_are_one_line(systems, tmp_path, capsys):
    capsys.readouterr()
    assert main(["agreement", systems[0], "--human", "r1", "--group-by", "colour", "--level", "item"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "item 'c0': no field 'colour' to group by" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"item": "c0", "rater": "ann", "rating": "good"}) + "\n", encoding="utf-8")
    assert main(["agreement", systems[0], "--ratings", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "ratings row 1: rating is 'good', not a number" in err
    assert main(["agreement", systems[0]]) == 2
    assert "--human SCORE is required (or --ratings FILE" in capsys.readouterr().err


def test_labels_and_thresholds_from_the_command_line(systems, capsys):
    capsys.readouterr()
    assert main(["agreement", systems[0], "--human", "r2", "-m", "bleu", "--labels", "--threshold", "bleu=0.5",
                 "--resamples", "20", "--format", "json"]) == 2          # r2 holds 4 labels: no threshold
    assert "a threshold cuts a metric into two labels; people used 4" in capsys.readouterr().err
    assert main(["agreement", systems[0], "--human", "r2", "-m", "bleu", "--labels", "--resamples", "20",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["labels"]["bleu"]["cut"].startswith("quantiles") and out["labels"]["bleu"]["labels"] == [1, 2, 3, 4]
    assert main(["agreement", systems[0], "--human", "r1", "--threshold", "bleu"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--threshold 'bleu': expected METRIC=NUMBER" in err


def test_yes_no_votes_are_named_as_labels_in_the_pooled_table(tmp_path, capsys):
    rows = [{"id": f"c{k}", "output": " ".join(r.split()[:2 + k % 5]), "reference": r, "vote": k % 2}
            for k, r in enumerate(REFS)]
    scored = _score(tmp_path, "votes", rows)
    capsys.readouterr()
    assert main(["agreement", scored, "--human", "vote", "-m", "bleu", "--resamples", "20"]) == 0
    assert "vote holds two labels (0, 1): --labels adds accuracy" in capsys.readouterr().out
    assert main(["agreement", scored, "--human", "vote", "-m", "bleu", "--labels", "--resamples", "20",
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["labels"]["bleu"]["labels"] == [0, 1]


def test_a_long_ratings_table_over_several_experiments_names_the_system(systems, tmp_path, capsys):
    rated = {(f"c{k}", path): 1 + (k + 3 * s) % 5 for s, path in enumerate(systems) for k in range(8)}
    table = tmp_path / "ratings.jsonl"
    table.write_text("".join(json.dumps({"item": item, "system": path, "rater": "ann", "rating": v}) + "\n"
                             for (item, path), v in rated.items()), encoding="utf-8")
    capsys.readouterr()
    assert main(["agreement", *systems, "--ratings", str(table), "-m", "bleu", "--level", "system", "--method",
                 "pearson", "--resamples", "20", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    bleu = [np.mean([r["bleu"] for r in scored_rows(path)]) for path in systems]
    human = [np.mean([rated[(f"c{k}", path)] for k in range(8)]) for path in systems]
    assert out["correlations"]["bleu"]["system"]["pearson"]["estimate"] == pytest.approx(
        stats.pearsonr(bleu, human).statistic, abs=1e-12)
    lone = tmp_path / "lone.jsonl"
    lone.write_text(json.dumps({"item": "c0", "rater": "ann", "rating": 3}) + "\n", encoding="utf-8")
    assert main(["agreement", *systems, "--ratings", str(lone), "-m", "bleu", "--level", "system"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "item 'c0' of the ratings table names no system" in err


def test_too_few_permutations_are_refused_in_one_line(systems, capsys):
    capsys.readouterr()
    assert main(["agreement", *systems, "--human", "r1", "--compare-metrics", "--permutations", "15"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--permutations: 15 permutations cannot show anything significant" in err


def test_levels_that_cannot_be_computed_say_why(systems, capsys):
    capsys.readouterr()
    assert main(["agreement", systems[0], "--human", "r1", "--group-by", "image", "--level", "system"]) == 2
    assert "--level system needs systems (several experiments)" in capsys.readouterr().err
    assert main(["agreement", systems[0], "--human", "r1", "--level", "item", "-m", "bleu", "--method", "pearson",
                 "--compare-metrics", "--resamples", "20"]) == 0
    out = capsys.readouterr().out
    assert "bleu pearson: no item has two systems with different scores and ratings" in out
    assert "--compare-metrics needs two metrics or more; there is one" in out
