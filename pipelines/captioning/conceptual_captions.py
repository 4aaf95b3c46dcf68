"""Conceptual Captions rows, streamed: Google's TSV (``caption<TAB>url``, no header) from a path
or URL, or the Hugging Face ``datasets`` form (fields ``image_url``, ``caption``); the first N
rows or a seeded uniform sample (reservoir), without loading the 3.3M-row file whole.
Malformed rows are kept, with the problem, so each is recorded as a failed item.
"""
from __future__ import annotations

import gzip
import io
import itertools
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import requests

HF_DATASET = "google-research-datasets/conceptual_captions"
_HEADER_NAMES = {"caption", "url", "image_url", "text"}


class DatasetSourceError(RuntimeError):
    """The dataset cannot be read at all (missing file, HTTP error, missing package)."""


@dataclass(frozen=True)
class CaptionRow:
    """One row: its number in the source (1-based TSV line, or 0-based HF index), URL and caption.

    ``problem`` says why the row cannot be used (malformed, missing field); None when it can.
    """

    row: int
    image_url: str
    caption: str
    problem: str | None = None

    def as_item(self) -> dict[str, Any]:
        """The dataset item: the article's ``image_url`` and ``reference``, plus the source row."""
        item: dict[str, Any] = {"image_url": self.image_url, "reference": self.caption, "source_row": self.row}
        if self.problem:
            item["row_problem"] = self.problem
        return item


def _looks_like_url(text: str) -> bool:
    return text.strip().lower().startswith(("http://", "https://"))


def parse_tsv_line(line: bytes | str, row: int) -> CaptionRow | None:
    """One TSV line as a CaptionRow (None for a blank line); problems are named, never raised."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            return CaptionRow(row, "", "", f"row {row}: not UTF-8 text (byte {exc.start})")
    line = line.rstrip("\r\n")
    if not line.strip() and "\t" not in line:       # a row of empty columns is a row, failed below
        return None
    fields = line.split("\t")
    if len(fields) != 2:
        return CaptionRow(row, "", fields[0].strip() if fields else "",
                          f"row {row}: expected 2 tab-separated columns (caption, url), got {len(fields)}")
    caption, url = fields[0].strip(), fields[1].strip()
    if _looks_like_url(caption) and not _looks_like_url(url):
        return CaptionRow(row, caption, url, f"row {row}: columns look swapped (expected caption<TAB>url)")
    if not url:
        return CaptionRow(row, url, caption, f"row {row}: the url column is empty")
    if not caption:
        return CaptionRow(row, url, caption, f"row {row}: the caption column is empty")
    return CaptionRow(row, url, caption)


def _is_header(row: CaptionRow) -> bool:
    first = row.caption.lower().strip() if row.problem is None else ""
    return row.row == 1 and first in _HEADER_NAMES and row.image_url.lower().strip() in _HEADER_NAMES


class _ChunkReader(io.RawIOBase):
    """A readable binary stream over an iterator of byte chunks (an HTTP body being streamed):
    it reports the end of the data as an empty read, and stays open until closed itself."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        super().__init__()
        self._chunks = iter(chunks)
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = memoryview(chunk)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def _tsv_lines(source: str, timeout: float) -> Iterator[bytes]:
    """The raw lines of a local or remote TSV (``.gz`` decompressed), read as a stream."""
    if _looks_like_url(source):
        try:
            response = requests.get(source, stream=True, timeout=timeout)
            response.raise_for_status()
        except requests.RequestException as exc:
            raise DatasetSourceError(f"cannot download the TSV {source}: {exc}") from None
        with response:
            # Not over ``response.raw``: urllib3 closes it at the end of the body, and a reader
            # over it then fails ("readline of closed file") once the whole file was read.
            raw = _ChunkReader(response.iter_content(chunk_size=64 * 1024))
            gzipped = source.lower().split("?")[0].endswith(".gz")
            stream: Any = gzip.GzipFile(fileobj=raw) if gzipped else io.BufferedReader(raw)
            try:
                yield from stream
            except (requests.RequestException, OSError, EOFError) as exc:
                raise DatasetSourceError(f"the download of {source} broke off: {exc}") from None
        return
    path = check_local_tsv(source)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        yield from handle


def read_tsv(source: str, timeout: float = 30.0) -> Iterator[CaptionRow]:
    """Rows of a Conceptual Captions TSV at a path or URL (a header line, if any, is skipped)."""
    for number, line in enumerate(_tsv_lines(source, timeout), start=1):
        row = parse_tsv_line(line, number)
        if row is None or _is_header(row):
            continue
        yield row


def require_datasets() -> Any:
    """The optional ``datasets`` package, or a DatasetSourceError saying how to install it."""
    try:
        import datasets
    except ImportError:
        raise DatasetSourceError("reading a Hugging Face dataset needs the 'datasets' package: "
                                 "pip install datasets (or pip install 'opik-metrics[datasets]'), "
                                 "or pass --tsv with Google's TSV file instead") from None
    return datasets


def _load_hf(name: str, split: str, config: str | None, streaming: bool) -> Iterable[Any]:
    datasets = require_datasets()
    try:
        return datasets.load_dataset(name, config, split=split, streaming=streaming)
    except Exception as exc:  # datasets raises many types (hub, config, split errors)
        raise DatasetSourceError(f"cannot load Hugging Face dataset {name!r} split {split!r}: {exc}") from None


def read_hf(dataset: str | Iterable[Any] = HF_DATASET, split: str = "validation", config: str | None = None,
            streaming: bool = True) -> Iterator[CaptionRow]:
    """Rows of the Hugging Face form: a dataset name (loaded streaming) or any iterable of records."""
    records = _load_hf(dataset, split, config, streaming) if isinstance(dataset, str) else dataset
    for index, record in enumerate(records):
        if not hasattr(record, "get"):
            yield CaptionRow(index, "", "", f"row {index}: expected a record with fields image_url and caption, "
                                            f"got {type(record).__name__}")
            continue
        url, caption = record.get("image_url"), record.get("caption")
        missing = [name for name, value in (("image_url", url), ("caption", caption))
                   if not isinstance(value, str) or not value.strip()]
        problem = f"row {index}: field {' and '.join(repr(m) for m in missing)} missing or empty" if missing else None
        yield CaptionRow(index, url if isinstance(url, str) else "", caption if isinstance(caption, str) else "",
                         problem)


def take(rows: Iterable[CaptionRow], limit: int | None = None, sample: bool = False,
         seed: int = 0) -> list[CaptionRow]:
    """The first ``limit`` rows, or with ``sample`` a uniform seeded sample of ``limit`` rows
    (reservoir sampling: one pass, ``limit`` rows in memory), in source order."""
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit: expected a positive integer, got {limit!r}")
    if not sample:
        iterator = iter(rows)
        try:
            return list(itertools.islice(iterator, limit))
        finally:
            close = getattr(iterator, "close", None)
            if close:
                close()   # stop a download early
    if limit is None:
        raise ValueError("a sample needs a size: pass limit (--limit N) with sample (--sample)")
    rng = random.Random(seed)
    reservoir: list[CaptionRow] = []
    for seen, row in enumerate(rows):
        if seen < limit:
            reservoir.append(row)
        else:
            slot = rng.randrange(seen + 1)
            if slot < limit:
                reservoir[slot] = row
    return sorted(reservoir, key=lambda r: r.row)


def check_local_tsv(source: str) -> Path:
    """The TSV's path, or DatasetSourceError when it is not a file."""
    path = Path(source).expanduser()
    if path.is_dir():
        raise DatasetSourceError(f"TSV {source} is a directory: give the TSV file (caption<TAB>url lines)")
    if not path.is_file():
        raise DatasetSourceError(f"TSV file not found: {source}")
    return path


def check_source(tsv: str | None, hf_dataset: Any, limit: int | None) -> None:
    """Exactly one dataset source and a sane limit, checked before anything heavy is loaded."""
    if (tsv is None) == (hf_dataset is None):
        raise ValueError("give exactly one dataset source: a TSV (--tsv PATH_OR_URL) or a Hugging Face "
                         f"dataset (--hf-dataset {HF_DATASET})")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise ValueError(f"limit: expected a positive integer, got {limit!r}")
    if tsv is not None and not _looks_like_url(tsv):
        check_local_tsv(tsv)
    if isinstance(hf_dataset, str):
        require_datasets()
