"""A run's output file keeps each record's id and the columns asked for, the statistics of the
corpus scores, and the metrics' facts as its metadata (Parquet key-value metadata, a JSON Lines
file's first line); ids are checked before anything is scored, and resuming still works."""
from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq
import pytest

from opik_metrics.metrics.bleu import BLEU
from opik_metrics.metrics.rouge import ROUGE
from opik_metrics.streams import FieldMap, OutputError, read_rows, score_file
from opik_metrics.streams.fields import FieldError
from opik_metrics.streams.output import METADATA_KEY, read_metadata
from tests.streams.records import generate_items, write_csv, write_jsonl, write_parquet

ITEMS = [{"id": f"doc-{k}", **item, "source": {"k": k}} for k, item in enumerate(generate_items(60, seed=4))]


def _metrics():
    return [ROUGE(rouge_types=("rouge1",), track=False), BLEU(track=False)]


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_ids_kept_columns_statistics_and_facts_round_trip(tmp_path, suffix):
    path = write_jsonl(tmp_path / "in.jsonl", ITEMS)
    out = str(tmp_path / f"out.{suffix}")
    result = score_file(str(path), _metrics(), output=out, fields=FieldMap(keep=("output", "source")),
                        progress=False)
    rows = list(read_rows(out))
    assert [r["id"] for r in rows] == [i["id"] for i in ITEMS]            # ``id``: taken when the input has it
    assert [r["output"] for r in rows] == [i["output"] for i in ITEMS]
    assert [json.loads(r["source"]) for r in rows] == [i["source"] for i in ITEMS]   # not text: its JSON text
    bleu = BLEU(track=False)
    outputs, refs = [i["output"] for i in ITEMS], [i["reference"] for i in ITEMS]
    assert [r["statistics.bleu"] for r in rows] == [s.as_list() for s in bleu.statistics(outputs, refs)]
    assert list(rows[0])[:4] == ["index", "id", "output", "source"]
    meta = read_metadata(out)
    assert meta["id_field"] == "id" and meta["keep"] == ["output", "source"] and meta["input"] == "in.jsonl"
    assert meta["metrics"] == {m.name: m.facts.as_dict() for m in _metrics()}
    assert meta["signatures"] == result.signatures
    assert meta["schema"] == "opik-metrics/records/1" and meta["versions"]["opik-metrics"]
    if suffix == "parquet":
        assert json.loads(pq.read_schema(out).metadata[METADATA_KEY.encode()]) == meta
        assert str(pq.read_schema(out).field("id").type) == "string"
    else:
        first = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])
        assert first == {METADATA_KEY: meta}
        assert len(rows) == len(ITEMS)


def test_jsonl_and_parquet_outputs_hold_the_same_rows(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", ITEMS)
    for suffix in ("jsonl", "parquet"):
        score_file(str(path), _metrics(), output=str(tmp_path / f"o.{suffix}"), fields=FieldMap(keep=("source",)),
                   progress=False)
    assert list(read_rows(str(tmp_path / "o.jsonl"))) == list(read_rows(str(tmp_path / "o.parquet")))
    assert read_metadata(str(tmp_path / "o.jsonl")) == read_metadata(str(tmp_path / "o.parquet"))


def test_integer_ids_are_written_as_decimal_text_from_every_input_format(tmp_path):
    items = [{"id": 10 + k, "output": i["output"], "reference": i["reference"]} for k, i in enumerate(ITEMS[:12])]
    jsonl = write_jsonl(tmp_path / "in.jsonl", items)
    score_file(str(jsonl), [BLEU(track=False)], output=str(tmp_path / "a.parquet"), progress=False)
    csv_path = tmp_path / "in.csv"
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["key", "pred", "ref"], *([10 + k, i["output"], "x y"] for k, i in enumerate(items))])
    score_file(str(csv_path), [BLEU(track=False)], output=str(tmp_path / "b.jsonl"), progress=False,
               fields=FieldMap({"output": ("pred",), "reference": ("ref",)}, id_field="key"))
    expected = [str(10 + k) for k in range(12)]
    assert [r["id"] for r in read_rows(str(tmp_path / "a.parquet"))] == expected
    assert [r["key"] for r in read_rows(str(tmp_path / "b.jsonl"))] == expected
    assert read_metadata(str(tmp_path / "b.jsonl"))["id_field"] == "key"


def test_an_input_without_ids_writes_none_and_says_so(tmp_path):
    path = write_parquet(tmp_path / "in.parquet", ITEMS[:10])        # output and reference columns only
    out = str(tmp_path / "o.parquet")
    score_file(str(path), [BLEU(track=False)], output=out, progress=False)
    assert set(next(read_rows(out))) == {"index", "bleu", "reason", "statistics.bleu"}
    assert read_metadata(out)["id_field"] == ""


def test_an_existing_id_column_can_be_left_out(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", ITEMS[:5])
    out = str(tmp_path / "o.jsonl")
    score_file(str(path), [BLEU(track=False)], output=out, fields=FieldMap(id_field=""), progress=False)
    assert "id" not in next(read_rows(out)) and read_metadata(out)["id_field"] == ""


@pytest.mark.parametrize("record, why", [
    ({"output": "a b", "reference": "a b"}, "line 3 of .*: no id column 'id'"),
    ({"id": None, "output": "a b", "reference": "a b"}, "line 3 of .*: id 'id' is null"),
    ({"id": "", "output": "a b", "reference": "a b"}, "line 3 of .*: id 'id' is empty"),
    ({"id": 1.5, "output": "a b", "reference": "a b"}, "line 3 of .*: id 'id' is float 1.5; an id is non-empty"),
    ({"id": True, "output": "a b", "reference": "a b"}, "line 3 of .*: id 'id' is bool True"),
    ({"id": "doc-0", "output": "a b", "reference": "a b"}, "id 'doc-0' is held by line 1 of .* and line 3 of"),
])
def test_a_missing_bad_or_repeated_id_stops_the_run_before_scoring(tmp_path, record, why):
    path = write_jsonl(tmp_path / "in.jsonl", [*ITEMS[:2], record, *ITEMS[2:4]])
    out = tmp_path / "o.jsonl"
    with pytest.raises(FieldError, match=why):
        score_file(str(path), [BLEU(track=False)], output=str(out), progress=False)
    assert not out.exists() and not (tmp_path / "o.jsonl.parts").exists()


def test_repeated_ids_in_a_parquet_input_are_named(tmp_path):
    items = [{**i, "id": "same" if k in (3, 8) else i["id"]} for k, i in enumerate(ITEMS[:10])]
    path = tmp_path / "in.parquet"
    import pyarrow as pa
    pq.write_table(pa.table({"id": [i["id"] for i in items], "output": [i["output"] for i in items],
                             "reference": [str(i["reference"]) for i in items]}), str(path), row_group_size=4)
    with pytest.raises(FieldError, match="id 'same' is held by row 4 of .* and row 9 of"):
        score_file(str(path), [BLEU(track=False)], output=str(tmp_path / "o.parquet"), progress=False)


def test_an_unreadable_record_keeps_its_row_with_no_id(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(ITEMS[0]) + "\n{not json\n" + json.dumps(ITEMS[1]) + "\n")
    out = str(tmp_path / "o.jsonl")
    result = score_file(str(path), [BLEU(track=False)], output=out, progress=False)
    rows = list(read_rows(out))
    assert [r["id"] for r in rows] == ["doc-0", None, "doc-1"] and result.unscored == 1
    assert rows[1]["reason"].startswith("line 2: not JSON")


def test_a_kept_column_no_record_has_and_a_kept_column_named_like_a_score_are_refused(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", ITEMS[:5])
    with pytest.raises(FieldError, match="--keep sorce: no record of .* has a column 'sorce'"):
        score_file(str(path), [BLEU(track=False)], output=str(tmp_path / "a.jsonl"), progress=False,
                   fields=FieldMap(keep=("sorce",)))
    clash = write_jsonl(tmp_path / "clash.jsonl", [{**i, "bleu": 1} for i in ITEMS[:5]])
    with pytest.raises(OutputError, match="column 'bleu' .* is also an output column of its own \\(a score\\)"):
        score_file(str(clash), [BLEU(track=False)], output=str(tmp_path / "b.jsonl"), progress=False,
                   fields=FieldMap(keep=("bleu",)))


def test_a_different_id_or_kept_columns_never_resume_an_output(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", ITEMS[:10])
    out = str(tmp_path / "o.jsonl")
    score_file(str(path), [BLEU(track=False)], output=out, progress=False)
    with pytest.raises(OutputError, match="different run .*keep"):
        score_file(str(path), [BLEU(track=False)], output=out, progress=False, fields=FieldMap(keep=("source",)))
    with pytest.raises(OutputError, match="different run .*id_field"):
        score_file(str(path), [BLEU(track=False)], output=out, progress=False, fields=FieldMap(id_field=""))


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_an_interrupted_run_resumes_with_its_ids_and_a_complete_one_reads_back(tmp_path, monkeypatch, suffix):
    import opik_metrics.streams.run as run

    path = write_jsonl(tmp_path / "in.jsonl", ITEMS)
    out = str(tmp_path / f"o.{suffix}")
    clean = str(tmp_path / f"clean.{suffix}")
    fields = FieldMap(keep=("source",))
    whole = score_file(str(path), _metrics(), output=clean, chunk_size=10, fields=fields, progress=False)
    real = run.ChunkScorer.score

    def stop_at_40(self, chunk):
        if chunk.first == 40:
            raise KeyboardInterrupt
        return real(self, chunk)
    monkeypatch.setattr(run.ChunkScorer, "score", stop_at_40)
    with pytest.raises(KeyboardInterrupt):
        score_file(str(path), _metrics(), output=out, chunk_size=10, fields=fields, progress=False, flush_rows=20)
    monkeypatch.setattr(run.ChunkScorer, "score", real)
    resumed = score_file(str(path), _metrics(), output=out, chunk_size=10, fields=fields, progress=False)
    assert resumed.resumed_from == 40
    assert list(read_rows(out)) == list(read_rows(clean)) and read_metadata(out) == read_metadata(clean)
    again = score_file(str(path), _metrics(), output=out, chunk_size=10, fields=fields, progress=False)
    assert again.resumed_from == len(ITEMS) and again.aggregate == resumed.aggregate == whole.aggregate
    assert "id" not in again.aggregate and "source" not in again.aggregate


def test_csv_input_with_a_named_id_column(tmp_path):
    items = generate_items(20, seed=9)
    path = write_csv(tmp_path / "in.csv", items, newline_in_field=False)
    with pytest.raises(FieldError, match="data row 1 of .*: no id column 'pred_id'"):
        score_file(str(path), [BLEU(track=False)], output=str(tmp_path / "o.jsonl"), progress=False,
                   fields=FieldMap({"output": ("pred",), "reference": ("ref",)}, id_field="pred_id"))
