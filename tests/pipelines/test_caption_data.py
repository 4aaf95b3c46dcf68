"""Conceptual Captions rows: Google's TSV from a path or URL, the Hugging Face form, limits and
seeded samples taken from a stream, malformed rows kept with the problem."""
import gzip
import sys

import pytest

from opik_metrics.pipelines.captioning.conceptual_captions import (CaptionRow, DatasetSourceError, parse_tsv_line, read_hf,
                                                      read_tsv, take)
from tests.pipelines.caption_fixtures import image_server  # noqa: F401


@pytest.mark.parametrize("line, problem", [
    ("a dog on a beach\thttp://x.org/a.jpg\n", None),
    ("a dog on a beach\thttp://x.org/a.jpg\r\n", None),
    ("just one column", "row 7: expected 2 tab-separated columns (caption, url), got 1"),
    ("a\tb\thttp://x.org/a.jpg", "row 7: expected 2 tab-separated columns (caption, url), got 3"),
    ("\thttp://x.org/a.jpg", "row 7: the caption column is empty"),
    ("a caption\t  ", "row 7: the url column is empty"),
    ("\t", "row 7: the url column is empty"),                    # a row of two empty columns is a row
    ("http://x.org/a.jpg\ta dog", "row 7: columns look swapped (expected caption<TAB>url)"),
    (b"caf\xe9 au lait\thttp://x.org/a.jpg", "row 7: not UTF-8 text (byte 3)"),
])
def test_each_line_is_parsed_or_its_problem_named(line, problem):
    row = parse_tsv_line(line, 7)
    assert row.problem == problem
    if problem is None:
        assert (row.caption, row.image_url, row.row) == ("a dog on a beach", "http://x.org/a.jpg", 7)


def test_blank_lines_are_not_rows():
    assert parse_tsv_line("   \n", 3) is None


def test_local_file_gzip_and_header(tmp_path):
    text = "caption\turl\nfirst\thttp://x.org/1.jpg\n\nsecond\thttp://x.org/2.jpg\n"
    (tmp_path / "cc.tsv").write_text(text, encoding="utf-8")
    with gzip.open(tmp_path / "cc.tsv.gz", "wt", encoding="utf-8") as handle:
        handle.write(text)
    for name in ("cc.tsv", "cc.tsv.gz"):
        rows = list(read_tsv(str(tmp_path / name)))
        assert [(r.row, r.caption) for r in rows] == [(2, "first"), (4, "second")]


def test_tsv_from_url_streams_and_stops_at_the_limit(image_server):  # noqa: F811
    body = "".join(f"caption {k}\thttp://x.org/{k}.jpg\n" for k in range(5000)).encode()
    image_server.routes["/data/big.tsv"] = (200, {"Content-Type": "text/tab-separated-values"}, body, 0.0)
    rows = take(read_tsv(image_server.url("/data/big.tsv")), limit=3)
    assert [r.caption for r in rows] == ["caption 0", "caption 1", "caption 2"]
    with pytest.raises(DatasetSourceError, match="cannot download the TSV .*404"):
        list(read_tsv(image_server.url("/data/none.tsv")))


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(DatasetSourceError, match="TSV file not found: .*nope.tsv"):
        list(read_tsv(str(tmp_path / "nope.tsv")))


def _counting(n, seen):
    for k in range(n):
        seen.append(k)
        yield CaptionRow(k + 1, f"http://x.org/{k}.jpg", f"caption {k}")


def test_limit_reads_only_what_it_needs():
    seen = []
    rows = take(_counting(1_000_000, seen), limit=4)
    assert [r.row for r in rows] == [1, 2, 3, 4] and len(seen) == 4


def test_seeded_sample_is_uniform_reproducible_and_in_source_order():
    a = take(_counting(2000, []), limit=50, sample=True, seed=1)
    b = take(_counting(2000, []), limit=50, sample=True, seed=1)
    c = take(_counting(2000, []), limit=50, sample=True, seed=2)
    assert a == b and a != c and len(a) == 50
    assert [r.row for r in a] == sorted(r.row for r in a)
    assert max(r.row for r in a) > 1000                       # not just the head of the file
    with pytest.raises(ValueError, match="a sample needs a size"):
        take(_counting(5, []), sample=True)
    with pytest.raises(ValueError, match="limit: expected a positive integer"):
        take(_counting(5, []), limit=0)


class FakeHFSplit:
    """What ``datasets.load_dataset(..., streaming=True)`` yields: an iterable of records."""

    def __init__(self, records):
        self.records = records

    def __iter__(self):
        return iter(self.records)


def test_hugging_face_form_with_missing_fields():
    split = FakeHFSplit([{"image_url": "http://x.org/a.jpg", "caption": "a cat"},
                         {"image_url": "http://x.org/b.jpg"},
                         {"caption": "no url", "image_url": ""},
                         "not a record"])
    rows = list(read_hf(split))
    assert rows[0] == CaptionRow(0, "http://x.org/a.jpg", "a cat")
    assert rows[1].problem == "row 1: field 'caption' missing or empty"
    assert rows[2].problem == "row 2: field 'image_url' missing or empty"
    assert rows[3].problem.startswith("row 3: expected a record with fields image_url and caption")
    assert rows[0].as_item() == {"image_url": "http://x.org/a.jpg", "reference": "a cat", "source_row": 0}
    assert rows[1].as_item()["row_problem"] == rows[1].problem


def test_hugging_face_name_without_the_datasets_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)          # as if not installed
    with pytest.raises(DatasetSourceError, match=r"pip install datasets"):
        list(read_hf("google-research-datasets/conceptual_captions"))


def test_pipeline_items_from_either_source(tmp_path):
    from opik_metrics.pipelines.captioning.pipeline import default_dataset_name, read_items

    split = FakeHFSplit([{"image_url": f"http://x.org/{k}.jpg", "caption": f"c{k}"} for k in range(10)])
    items, data = read_items(hf_dataset=split, split="train", limit=3, sample=True, seed=4)
    assert len(items) == 3 and data == {"source": "FakeHFSplit", "format": "hf", "split": "train", "config": None,
                                        "limit": 3, "sample": True, "seed": 4}
    assert default_dataset_name(data) == "conceptual-captions-train"
    url = "https://storage.googleapis.com/gcc-data/Validation/Validation_GCC-1.1.0-Validation.tsv"
    assert default_dataset_name({"format": "tsv", "source": url}) == \
        "conceptual-captions-Validation_GCC-1.1.0-Validation"
    with pytest.raises(ValueError, match="give exactly one dataset source"):
        read_items(tsv="a.tsv", hf_dataset=split)


def test_a_folder_given_as_the_tsv_is_named_as_a_folder(tmp_path):
    with pytest.raises(DatasetSourceError, match="is a directory: give the TSV file"):
        list(read_tsv(str(tmp_path)))
