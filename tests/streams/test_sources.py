"""Sources read every record once, in order, with the same index however the file is split;
unreadable records become BadRecords naming the line or row."""
from __future__ import annotations


import pytest

from opik_metrics.streams import BadRecord, SourceError, open_source
from tests.streams.records import csv_items, generate_items, write_csv, write_jsonl, write_parquet

ITEMS = generate_items(300, seed=3)


def _all(source, size):
    return [r for chunk in source.chunks(size) for r in chunk.records]


def _by_refs(source, size):
    return [r for ref in source.plan(size) for r in source.read(ref).records]


@pytest.mark.parametrize("size", [1, 7, 64, 1000])
def test_jsonl_reads_every_record_in_order_whatever_the_chunk(tmp_path, size):
    source = open_source(str(write_jsonl(tmp_path / "a.jsonl", ITEMS)))
    assert _all(source, size) == ITEMS
    assert _by_refs(source, size) == ITEMS
    refs = list(source.plan(size))
    assert [r.first for r in refs] == list(range(0, len(ITEMS), size))


@pytest.mark.parametrize("size", [1, 5, 64, 1000])
def test_csv_keeps_quoted_newlines_inside_their_record(tmp_path, size):
    source = open_source(str(write_csv(tmp_path / "a.csv", ITEMS)))
    expected = [{"pred": i["output"], "ref": i["reference"]} for i in csv_items(ITEMS)]
    assert source.header == ["pred", "ref"]
    assert _all(source, size) == expected
    assert _by_refs(source, size) == expected


@pytest.mark.parametrize("size", [1, 50, 97, 1000])
def test_parquet_row_ranges_cross_row_groups(tmp_path, size):
    source = open_source(str(write_parquet(tmp_path / "a.parquet", ITEMS)))
    expected = [{"output": i["output"], "reference": i["reference"] if isinstance(i["reference"], list)
                 else [i["reference"]]} for i in ITEMS]
    assert source.total() == len(ITEMS)
    assert _all(source, size) == expected
    assert _by_refs(source, size) == expected


def test_plan_skips_whole_chunks_before_the_resume_point(tmp_path):
    source = open_source(str(write_jsonl(tmp_path / "a.jsonl", ITEMS)))
    assert [r.first for r in source.plan(64, skip=130)] == [128, 192, 256]
    assert [r.first for r in source.plan(64, skip=128)] == [128, 192, 256]


def test_bad_lines_are_records_with_reasons_and_keep_the_numbering(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"output": "a", "reference": "a"}\n'
                     b'not json\n'
                     b'\n'
                     b'[1, 2]\n'
                     b'{"output": "\xff\xfe", "reference": "x"}\n'
                     b'{"output": "last", "reference": "line"}')          # no final newline
    records = _all(open_source(str(path)), 2)
    assert len(records) == 6
    assert records[0] == {"output": "a", "reference": "a"} and records[5] == {"output": "last", "reference": "line"}
    assert [type(r) for r in records[1:5]] == [BadRecord] * 4
    assert "line 2: not JSON" in records[1].reason
    assert "line 3: empty line" in records[2].reason
    assert "line 4: expected a JSON object, got list" in records[3].reason
    assert "line 5: not UTF-8" in records[4].reason


def test_crlf_lines_and_a_row_of_the_wrong_width(tmp_path):
    path = tmp_path / "a.csv"
    path.write_bytes(b"output,reference\r\nx,y\r\nonly-one\r\n\"a,b\",c\r\n")
    records = _all(open_source(str(path)), 10)
    assert records[0] == {"output": "x", "reference": "y"}
    assert isinstance(records[1], BadRecord) and "row 2: 1 fields, the header names 2" in records[1].reason
    assert records[2] == {"output": "a,b", "reference": "c"}


def test_files_that_cannot_be_read_are_one_clear_error(tmp_path):
    with pytest.raises(SourceError, match="input file not found"):
        open_source(str(tmp_path / "missing.jsonl"))
    with pytest.raises(SourceError, match="is a directory"):
        open_source(str(tmp_path))
    (tmp_path / "x.txt").write_text("{}\n")
    with pytest.raises(SourceError, match="--input-format"):
        open_source(str(tmp_path / "x.txt"))
    assert open_source(str(tmp_path / "x.txt"), "jsonl").format == "jsonl"
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(SourceError, match="not a readable Parquet file"):
        open_source(str(tmp_path / "bad.parquet"))
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(SourceError, match="no header row"):
        open_source(str(tmp_path / "empty.csv"))


def test_an_empty_file_has_no_records(tmp_path):
    (tmp_path / "e.jsonl").write_text("")
    assert _all(open_source(str(tmp_path / "e.jsonl")), 8) == []


def test_a_stray_quote_in_an_unquoted_csv_field_is_a_character_as_for_the_csv_module(tmp_path):
    import csv

    path = tmp_path / "a.csv"
    path.write_text('output,reference\nthe 5" screen,the 5 inch screen\nfoo bar,foo bar\n\nO"Brien,x\nlast,one\n')
    expected = list(csv.DictReader(open(path, newline="")))
    for size in (1, 2, 10):
        assert _all(open_source(str(path)), size) == expected
    assert len(expected) == 4


def test_a_utf8_byte_order_mark_starts_no_bad_record(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"output": "a", "reference": "b"}\n{"output": "c", "reference": "d"}\n')
    assert _all(open_source(str(path)), 1) == [{"output": "a", "reference": "b"}, {"output": "c", "reference": "d"}]


def test_a_csv_header_naming_a_column_twice_is_refused(tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("output,output,reference\na,b,c\n")
    with pytest.raises(SourceError, match=r"dup.csv: the header names 'output' more than once"):
        open_source(str(path))


def test_a_record_nested_too_deeply_is_a_bad_record_and_the_rest_read_on(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"output": "a", "reference": "a"}\n' + "[" * 100_000 + "]" * 100_000 + "\n"
                    + '{"output": "b", "reference": "b"}\n')
    source = open_source(str(path))
    records = [r for ref in source.plan(1000) for r in source.read(ref).records]
    assert records[0]["output"] == "a" and records[2]["output"] == "b"
    assert isinstance(records[1], BadRecord) and "nested too deeply" in records[1].reason


def test_a_damaged_parquet_row_group_becomes_bad_rows_and_the_rest_read_on(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "damaged.parquet"
    words = [" ".join(f"w{(k * 7 + j) % 50}" for j in range(30)) for k in range(300)]
    pq.write_table(pa.table({"output": words, "reference": words}), str(path), row_group_size=100,
                   compression="snappy")
    column = pq.ParquetFile(str(path)).metadata.row_group(1).column(0)
    data = bytearray(path.read_bytes())
    middle = column.data_page_offset + column.total_compressed_size // 2
    data[middle:middle + 64] = b"\xff" * 64                  # inside row group 1's compressed page
    path.write_bytes(bytes(data))
    for size in (64, 1000):
        source = open_source(str(path))
        records = [r for ref in source.plan(size) for r in source.read(ref).records]
        assert len(records) == 300
        bad = [k for k, r in enumerate(records) if isinstance(r, BadRecord)]
        assert bad == list(range(100, 200)), bad[:3]
        assert "row group 1 of the Parquet file cannot be read" in records[150].reason
        assert records[0]["output"] == words[0] and records[299]["output"] == words[299]
        chunked = [r for chunk in source.chunks(size) for r in chunk.records]
        assert [isinstance(r, BadRecord) for r in chunked] == [isinstance(r, BadRecord) for r in records]
