"""``agreement`` on anyone's scored table (issue 57, items 1-3 and 6): a JSON Lines, CSV or Parquet
file with an id column, metric columns (``--metric``), human columns and a system column, no record
header. Every number equals scipy's computed here as the papers define each level (pooled: every
cell; item: per item across systems, averaged; system: the systems' means), with several human
dimensions and a system field in one call; a lower-is-better column is negated and the output says
which direction each column was taken in; bad input is one line naming the file, the row, the item
and the field."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from opik_metrics.cli.main import main

stats = pytest.importorskip("scipy.stats")

SCIPY = {"kendall_b": lambda x, h: stats.kendalltau(x, h, variant="b").statistic,
         "kendall_c": lambda x, h: stats.kendalltau(x, h, variant="c").statistic,
         "spearman": lambda x, h: stats.spearmanr(x, h).statistic,
         "pearson": lambda x, h: stats.pearsonr(x, h).statistic}
SYSTEMS = ["sysA", "sysB", "sysC", "sysD"]
DOCS = [f"doc{k}" for k in range(9)]


def table_rows(seed: int = 7) -> list[dict]:
    """SummEval's shape: one row per (document, system), two metrics (ter lower-is-better), three
    human dimensions: coherence (one rating), relevance (a list, three experts), fluency (two
    rater columns)."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in DOCS:
        for s, system in enumerate(SYSTEMS):
            quality = s + rng.normal(0, 1.2)
            rows.append({"doc_id": d, "system_id": system,
                         "rouge": round(0.2 + 0.05 * quality + rng.normal(0, 0.05), 4),
                         "ter": round(0.9 - 0.04 * quality + rng.normal(0, 0.06), 4),
                         "coherence": int(np.clip(round(2.5 + quality / 2 + rng.normal(0, 1)), 1, 5)),
                         "relevance": [int(np.clip(round(2 + quality / 2 + rng.normal(0, 1)), 1, 5)) for _ in range(3)],
                         "flu_a": int(rng.integers(1, 4)), "flu_b": int(rng.integers(1, 4))})
    return rows


def human_of(row: dict, dimension: str) -> float:
    if dimension == "fluency":
        return (row["flu_a"] + row["flu_b"]) / 2
    value = row[dimension]
    return float(np.mean(value)) if isinstance(value, list) else float(value)


def metric_of(row: dict, metric: str) -> float:
    return -row[metric] if metric == "ter" else row[metric]       # ter: lower is better, negated


def write_jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def run_json(capsys, *args) -> dict:
    capsys.readouterr()
    assert main(["agreement", *map(str, args), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


TABLE_ARGS = ["--id-field", "doc_id", "--system", "system_id", "--metric", "rouge", "--metric", "ter",
              "--lower-is-better", "ter", "--level", "pooled", "--level", "item", "--level", "system",
              "--resamples", "20"]
DIMENSIONS = ["--dimension", "coherence", "--dimension", "relevance", "--dimension", "fluency=flu_a,flu_b"]


def test_every_level_of_every_dimension_is_scipy_in_one_call(tmp_path, capsys):
    rows = table_rows()
    path = write_jsonl(tmp_path / "summeval_like.jsonl", rows)
    out = run_json(capsys, path, *TABLE_ARGS, *DIMENSIONS)
    assert list(out["dimensions"]) == ["coherence", "relevance", "fluency"]
    assert out["human_columns"] == {"coherence": ["coherence"], "relevance": ["relevance"],
                                    "fluency": ["flu_a", "flu_b"]}
    checked = 0
    for dimension, result in out["dimensions"].items():
        assert result["systems"] == SYSTEMS and result["n_items"] == len(DOCS)
        assert result["settings"]["system"] == "system_id" and result["oriented"] == ["ter"]
        assert result["settings"]["methods"] == ["kendall_b", "kendall_c", "spearman", "pearson"]
        for metric in ("rouge", "ter"):
            by_level = result["correlations"][metric]
            x = [metric_of(r, metric) for r in rows]
            h = [human_of(r, dimension) for r in rows]
            per_item = {m: [] for m in SCIPY}
            for d in DOCS:
                cells = [r for r in rows if r["doc_id"] == d]
                xi, hi = [metric_of(r, metric) for r in cells], [human_of(r, dimension) for r in cells]
                if len(set(xi)) > 1 and len(set(hi)) > 1:
                    for m, f in SCIPY.items():
                        per_item[m].append(f(xi, hi))
            mx = [np.mean([metric_of(r, metric) for r in rows if r["system_id"] == s]) for s in SYSTEMS]
            mh = [np.mean([human_of(r, dimension) for r in rows if r["system_id"] == s]) for s in SYSTEMS]
            for m, f in SCIPY.items():
                assert by_level["pooled"][m]["estimate"] == pytest.approx(f(x, h), abs=1e-12), (dimension, metric, m)
                assert by_level["item"][m]["estimate"] == pytest.approx(np.mean(per_item[m]), abs=1e-12)
                assert by_level["system"][m]["estimate"] == pytest.approx(f(mx, mh), abs=1e-12)
                checked += 3
            pairs = [(a, b) for a in range(4) for b in range(a + 1, 4)]
            agree = sum(np.sign(mx[a] - mx[b]) == np.sign(mh[a] - mh[b]) for a, b in pairs) / len(pairs)
            assert by_level["system"]["pairwise_accuracy"]["estimate"] == pytest.approx(agree)
        note = next(n for n in result["notes"] if "higher is better" in n)
        assert "rouge higher is better (assumed" in note and "ter lower is better (--lower-is-better)" in note
    assert checked == 3 * 2 * 4 * 3
    # each dimension is what a call with that one human score gives
    alone = run_json(capsys, path, *TABLE_ARGS, "--human", "relevance")
    assert alone == out["dimensions"]["relevance"]


def test_one_file_with_system_equals_one_file_per_system(tmp_path, capsys):
    """--system is the file-per-system layout in one file: the same correlations, intervals and
    PERM-BOTH tests (the same items in the same order, so the same bootstrap draws)."""
    rows = table_rows(3)
    one = write_jsonl(tmp_path / "all.jsonl", rows)
    files = [write_jsonl(tmp_path / f"{s}.jsonl", [r for r in rows if r["system_id"] == s]) for s in SYSTEMS]
    common = ["--metric", "rouge", "--metric", "ter", "--lower-is-better", "ter", "--human", "coherence",
              "--level", "item", "--level", "system", "--resamples", "20", "--compare-metrics", "--permutations", "20"]
    together = run_json(capsys, one, "--id-field", "doc_id", "--system", "system_id", *common)
    apart = run_json(capsys, *files, "--id-field", "doc_id", *common)
    assert apart["systems"] == files and together["systems"] == SYSTEMS
    assert together["correlations"] == apart["correlations"]
    assert together["tests"] == apart["tests"] and together["groups"] == apart["groups"]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_csv_and_parquet_tables_read_as_the_jsonl_one(tmp_path, capsys, suffix):
    rows = [{k: v for k, v in r.items() if k != "relevance"} for r in table_rows()]
    jsonl = write_jsonl(tmp_path / "t.jsonl", rows)
    path = tmp_path / f"t{suffix}"
    if suffix == ".csv":
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    else:
        pa = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    args = [*TABLE_ARGS, "--dimension", "coherence", "--dimension", "fluency=flu_a,flu_b"]
    theirs, ours = run_json(capsys, path, *args), run_json(capsys, jsonl, *args)
    for dimension in ("coherence", "fluency"):
        assert theirs["dimensions"][dimension]["correlations"] == ours["dimensions"][dimension]["correlations"]


def test_the_pooled_agreement_of_a_table_and_its_direction_note(tmp_path, capsys):
    rows = [dict(r, id=f"{r['doc_id']}/{r['system_id']}") for r in table_rows()]
    path = write_jsonl(tmp_path / "flat.jsonl", rows)
    out = run_json(capsys, path, "--metric", "rouge", "--metric", "ter", "--lower-is-better", "ter",
                   "--human", "coherence", "--resamples", "20")
    by_name = {m["metric"]: m for m in out["metrics"]}
    h = [float(r["coherence"]) for r in rows]
    for metric in ("rouge", "ter"):
        assert by_name[metric]["oriented"] is (metric == "ter")
        for m, f in SCIPY.items():
            assert by_name[metric]["correlations"][m]["estimate"] == pytest.approx(
                f([metric_of(r, metric) for r in rows], h), abs=1e-12)
    capsys.readouterr()
    assert main(["agreement", path, "--metric", "rouge", "--human", "coherence", "--resamples", "20"]) == 0
    printed = capsys.readouterr().out
    assert f"{path}: rouge higher is better (assumed: the table states no direction; --lower-is-better COLUMN" \
        in printed


def test_dimensions_write_a_report_folder_each_and_one_json(tmp_path, capsys):
    path = write_jsonl(tmp_path / "t.jsonl", table_rows())
    report = tmp_path / "report"
    capsys.readouterr()
    assert main(["agreement", path, *TABLE_ARGS, "--dimension", "coherence", "--dimension", "relevance",
                 "-o", str(report)]) == 0
    printed = capsys.readouterr().out
    assert "== dimension coherence (column coherence) ==" in printed
    assert "== dimension relevance (column relevance) ==" in printed
    assert printed.index("== dimension coherence") < printed.index("== dimension relevance")
    data = json.loads((report / "dimensions.json").read_text(encoding="utf-8"))
    for dimension in ("coherence", "relevance"):
        assert json.loads((report / dimension / "meta_evaluation.json").read_text()) == data["dimensions"][dimension]
        assert (report / dimension / "index.html").is_file()


def test_a_missing_human_value_is_counted_not_silent(tmp_path, capsys):
    rows = table_rows()
    rows[5]["coherence"] = None
    del rows[6]["coherence"]
    path = write_jsonl(tmp_path / "t.jsonl", rows)
    out = run_json(capsys, path, *TABLE_ARGS, "--human", "coherence")
    assert f"{path}: 2 row(s) have no 'coherence' rating: left out of its correlations" in out["notes"]


def _error(capsys, *args) -> str:
    capsys.readouterr()
    assert main(["agreement", *map(str, args)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_bad_tables_are_one_line_naming_file_row_item_and_field(tmp_path, capsys):
    rows = table_rows()
    base = ["--id-field", "doc_id", "--system", "system_id", "--metric", "rouge", "--human", "coherence",
            "--resamples", "20"]
    missing = [dict(r) for r in rows]
    del missing[4]["rouge"]
    path = write_jsonl(tmp_path / "missing.jsonl", missing)
    assert f"{path}: row 5 (id 'doc1'): no value in --metric column 'rouge'" in _error(capsys, path, *base)
    text = [dict(r) for r in rows]
    text[2]["rouge"] = "n/a"
    path = write_jsonl(tmp_path / "text.jsonl", text)
    assert f"{path}: row 3 (id 'doc0'): --metric column 'rouge' is 'n/a', not a finite number" in \
        _error(capsys, path, *base)
    human = [dict(r) for r in rows]
    human[7]["coherence"] = "good"
    path = write_jsonl(tmp_path / "human.jsonl", human)
    assert f"{path}: row 8: item 'doc1': coherence is 'good', not a number" in _error(capsys, path, *base)
    no_id = [dict(r) for r in rows]
    del no_id[1]["doc_id"]
    path = write_jsonl(tmp_path / "no_id.jsonl", no_id)
    assert f"{path}: row 2: no id in column 'doc_id'" in _error(capsys, path, *base)
    twice = [dict(r) for r in rows]
    twice[1]["system_id"] = "sysA"
    path = write_jsonl(tmp_path / "twice.jsonl", twice)
    assert f"{path}: item 'doc0' has two rows of system 'sysA' (rows 1 and 2)" in _error(capsys, path, *base)
    path = write_jsonl(tmp_path / "t.jsonl", rows)
    assert f"{path}: id 'doc0' is on rows 1 and 2; each row of a table is one item unless --system FIELD" in \
        _error(capsys, path, "--id-field", "doc_id", "--metric", "rouge", "--human", "coherence")
    assert f"{path}: item 'doc0': no field 'sys' naming its system (--system) (row 1)" in \
        _error(capsys, path, *base[:3], "sys", *base[4:])
    assert f"{path} has no record header" in _error(capsys, path, "--human", "coherence", "--id-field", "doc_id")
    assert f"{path} has no column 'clarity'" in _error(capsys, path, *base[:-4], "--human", "clarity")
    assert "--lower-is-better bleu: not a --metric column (rouge)" in \
        _error(capsys, path, *base, "--lower-is-better", "bleu")
    assert "--dimension with --human: name the human scores one way" in \
        _error(capsys, path, *base, "--dimension", "relevance")
    assert "--dimension relevance is given twice" in \
        _error(capsys, path, *base[:-4], "--dimension", "relevance", "--dimension", "relevance")
    assert "--dimension 'a/b': expected NAME" in _error(capsys, path, *base[:-4], "--dimension", "a/b")
    assert "--publish writes one human score's agreement" in \
        _error(capsys, path, *base[:-4], "--dimension", "relevance", "--publish")


def test_a_record_file_with_a_kept_system_column_equals_a_record_file_per_system(tmp_path, capsys):
    """--system on a record file (score --keep sys --keep item): the item is --group-by's column,
    since a record file's ids are one per row; the numbers are those of one record file per system."""
    refs = [f"a {w} sits on the mat today" for w in ("cat", "dog", "man", "kid", "bird", "fox")]

    def rows(s):
        return [{"id": f"c{k}-s{s}", "item": f"c{k}", "sys": f"s{s}", "output": " ".join(r.split()[:2 + (k + s) % 5]),
                 "reference": r, "r1": 1 + (k + 2 * s) % 5} for k, r in enumerate(refs)]

    def scored(name, records):
        source = write_jsonl(tmp_path / f"{name}.jsonl", records)
        out = str(tmp_path / f"{name}-scored.jsonl")
        assert main(["score", "-i", source, "-o", out, "-m", "bleu", "-m", "rouge", "--keep", "item", "--keep", "sys",
                     "--keep", "r1", "--no-progress"]) == 0
        return out

    one = scored("all", [r for k in range(len(refs)) for s in range(3) for r in rows(s) if r["item"] == f"c{k}"])
    apart = [scored(f"s{s}", [dict(r, id=r["item"]) for r in rows(s)]) for s in range(3)]
    common = ["-m", "bleu", "-m", "rouge1_f1", "--human", "r1", "--level", "pooled", "--level", "item", "--level",
              "system", "--resamples", "20"]
    together = run_json(capsys, one, "--group-by", "item", "--system", "sys", *common)
    separate = run_json(capsys, *apart, *common)
    assert together["systems"] == ["s0", "s1", "s2"] and together["settings"]["system"] == "sys"
    assert together["correlations"] == separate["correlations"]
