"""Several processes of one machine give the rows and aggregates of one process, in order."""
from __future__ import annotations

import pytest

from opik_metrics.cli import main
from opik_metrics.metrics.catalog import MetricRecipe
from opik_metrics.streams import FieldMap, ProcessEngine, read_rows, score_file
from tests.streams.records import generate_items, write_csv, write_jsonl, write_parquet

ITEMS = generate_items(900, seed=21)
RECIPE = MetricRecipe.of([("rouge", {"rouge_types": ("rouge1", "rougeLsum"), "use_stemmer": True, "track": False}),
                          ("bleu", {"track": False}), ("cider", {"df_references": [i["reference"] for i in ITEMS],
                                                                 "track": False})])


@pytest.mark.parametrize("writer,fields", [
    (write_jsonl, None),
    (write_parquet, None),
    (write_csv, FieldMap({"output": ("pred",), "reference": ("ref",)})),
])
def test_two_processes_equal_one(tmp_path, writer, fields):
    suffix = {"write_jsonl": "jsonl", "write_parquet": "parquet", "write_csv": "csv"}[writer.__name__]
    path = str(writer(tmp_path / f"in.{suffix}", ITEMS))
    one = score_file(path, RECIPE(), fields=fields, chunk_size=40, progress=False)
    two = score_file(path, fields=fields, chunk_size=40, progress=False, engine=ProcessEngine(RECIPE, workers=2))
    assert two.rows == one.rows and two.aggregate == one.aggregate and two.signatures == one.signatures


def test_a_run_of_two_chunks_stays_in_this_process(tmp_path, monkeypatch):
    import opik_metrics.streams.processes as processes

    def no_pool(*args, **kwargs):
        raise AssertionError("no process pool for two chunks")

    monkeypatch.setattr(processes, "WorkerPool", no_pool)
    path = str(write_jsonl(tmp_path / "in.jsonl", ITEMS[:80]))
    result = score_file(path, chunk_size=40, progress=False, engine=ProcessEngine(RECIPE, workers=2))
    assert result.items == 80


def test_the_cli_output_does_not_depend_on_the_worker_count(tmp_path, capsys):
    path = str(write_jsonl(tmp_path / "in.jsonl", ITEMS))
    for workers in ("1", "2"):
        assert main(["score", "-i", path, "-o", str(tmp_path / f"w{workers}.parquet"), "--workers", workers,
                     "--chunk-size", "64", "--no-progress", "-m", "rouge", "-m", "bleu"]) == 0
    capsys.readouterr()
    assert list(read_rows(str(tmp_path / "w1.parquet"))) == list(read_rows(str(tmp_path / "w2.parquet")))


def test_bad_worker_counts_are_refused():
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        ProcessEngine(RECIPE, workers=0)


def test_the_output_keeps_tables_and_dicts_alike(tmp_path):
    """Workers' Arrow tables go to the parts as they are (cast to the output's types when a
    cluster hands back other ones), beside rows given as dicts; the kept rows are the same."""
    import pyarrow as pa

    from opik_metrics.streams.output import RunOutput, rows_table

    cols = ["index", "bleu", "reason", "statistics.bleu"]
    rows = [{"index": k, "bleu": k / 10, "reason": None if k % 3 else "why", "statistics.bleu": [k, 1.0]}
            for k in range(9)]
    rows[4].pop("bleu")                               # an unscored item
    out = RunOutput(str(tmp_path / "o.parquet"), {"run": 1}, columns=cols, flush_rows=4)
    out.start()
    out.add(rows[:2])
    out.add(rows_table(cols, rows[2:5]))
    other = rows_table(cols, rows[5:9]).cast(pa.schema([("index", pa.int32()), ("bleu", pa.float64()),
                                                       ("reason", pa.large_string()),
                                                       ("statistics.bleu", pa.list_(pa.float64()))]))
    out.add(other.select(["bleu", "index", "statistics.bleu", "reason"]))
    out.flush()
    assert out.done() == 9
    assert list(out.kept_rows()) == [{k: v for k, v in r.items() if v is not None or k == "reason"} | {"reason": r["reason"]}
                                     for r in rows]
    out.close()


def test_a_table_aggregates_as_its_rows_do():
    """``Aggregator.add_table`` gives the very sums, counts, unscored items and name order that
    ``add`` gives row by row (scores missing here and there, NaN, statistics, unscored rows)."""
    import math
    import random

    from opik_metrics import BLEU, ROUGE
    from opik_metrics.core import facts_of
    from opik_metrics.streams.output import columns, rows_table, table_rows
    from opik_metrics.scoring.rows import Aggregator

    facts = [facts_of(m) for m in (ROUGE(rouge_types=["rouge1"], track=False), BLEU(track=False))]
    cols = columns(facts)
    rng = random.Random(4)
    rows = []
    for k in range(300):
        row = {"index": k, "reason": None}
        for c in cols:
            if c.startswith("statistics.") and rng.random() < 0.9:
                row[c] = [float(rng.randint(1, 9)) for _ in range(10)]     # BLEU's ten counts
            elif c not in ("index", "reason") and not c.startswith("statistics.") and rng.random() < 0.8:
                row[c] = rng.choice([rng.random(), math.nan, 1e16, -3.0])
        if k < 3:                                    # first rows score little: order of names matters
            row = {"index": k, "reason": "no", **({"bleu": 0.5} if k == 2 else {})}
        rows.append(row)
    by_rows, by_tables = Aggregator(facts), Aggregator(facts)
    table = rows_table(cols, rows)
    for row in table_rows(table):
        by_rows.add(row)
    for start in range(0, 300, 70):
        by_tables.add_table(table.slice(start, 70))
    a, b = by_rows.aggregate(), by_tables.aggregate()
    assert list(a) == list(b) and list(a)[0] == "bleu"
    assert all((math.isnan(a[k]) and math.isnan(b[k])) or a[k] == b[k] for k in a)
    assert (by_rows.rows, by_rows.unscored, by_rows.counts()) == (by_tables.rows, by_tables.unscored, by_tables.counts())
    assert by_rows.unscored >= 2


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_ids_and_kept_columns_from_two_processes_equal_one(tmp_path, suffix):
    items = [{"id": f"r{k}", "extra": [k, "x"], **item} for k, item in enumerate(ITEMS)]
    path = str(write_jsonl(tmp_path / "in.jsonl", items))
    fields = FieldMap(keep=("extra", "output"))
    one = score_file(path, RECIPE(), fields=fields, output=str(tmp_path / f"one.{suffix}"), chunk_size=40,
                     progress=False)
    two = score_file(path, fields=fields, output=str(tmp_path / f"two.{suffix}"), chunk_size=40, progress=False,
                     engine=ProcessEngine(RECIPE, workers=2))
    rows = list(read_rows(str(tmp_path / f"two.{suffix}")))
    assert rows == list(read_rows(str(tmp_path / f"one.{suffix}"))) and two.aggregate == one.aggregate
    assert [(r["id"], r["extra"], r["output"]) for r in rows] == [(i["id"], f'[{k}, "x"]', i["output"])
                                                                  for k, i in enumerate(items)]
