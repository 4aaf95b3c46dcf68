"""Record files read in chunks with bounded memory: JSON Lines, CSV (with a header row) and
Parquet. A record's ``index`` is its position in the file (JSONL: line number - 1; CSV: data row
number - 1; Parquet: row number - 1), the same however the file is split.

A source reads in one pass (``chunks``) or plans ``ChunkRef``s that other processes read on their
own (``read``): byte ranges of a text file, row ranges of a Parquet file.
"""
from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from opik_metrics.core.extras import require_extra
from opik_metrics.core.file_names import name_too_long

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet",
           ".pq": "parquet"}
_BLOCK = 1 << 22


class SourceError(ValueError):
    """A record file that cannot be read at all (missing, unknown format, no header)."""


@dataclass(frozen=True)
class BadRecord:
    """A record that could not be read; it becomes an output row with this reason and no scores."""

    reason: str


@dataclass(frozen=True)
class ChunkRef:
    """Records ``first`` .. ``first + count - 1`` of a file; ``start`` / ``stop`` locate them
    (byte offsets of a text file, row numbers of a Parquet file)."""

    first: int
    count: int
    start: int
    stop: int


@dataclass
class Chunk:
    """Consecutive records from ``first`` on: dicts of column values, or BadRecords."""

    first: int
    records: list

    @property
    def stop(self) -> int:
        return self.first + len(self.records)


def detect_format(path: str, given: str | None = None) -> str:
    if given:
        if given not in ("jsonl", "csv", "parquet"):
            raise SourceError(f"--input-format {given!r}: choose jsonl, csv or parquet")
        return given
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise SourceError(f"{path}: cannot tell the format from the extension; name it with --input-format "
                          "(jsonl, csv or parquet)")
    return fmt


def open_source(path: str, fmt: str | None = None) -> "Source":
    """The source of records in ``path`` (format from the extension unless given)."""
    p = Path(path)
    too_long = name_too_long(path)
    if too_long is not None:
        raise SourceError(f"input file {path}: {too_long}")
    if not p.exists():
        raise SourceError(f"input file not found: {path}")
    if p.is_dir():
        raise SourceError(f"input {path} is a directory; give a file")
    kind = detect_format(path, fmt)
    return {"jsonl": JsonlSource, "csv": CsvSource, "parquet": ParquetSource}[kind](str(p))


class Source:
    """A file of records; subclasses read one format."""

    format = ""

    def __init__(self, path: str) -> None:
        self.path = path

    def total(self) -> int | None:
        """The number of records when known without reading the file (Parquet), else None."""
        return None

    def chunks(self, size: int) -> Iterator[Chunk]:
        """Every record in one pass, ``size`` at a time."""
        for ref in self.plan(size):
            yield self.read(ref)

    def plan(self, size: int, skip: int = 0) -> Iterator[ChunkRef]:
        """Refs of ``size`` records each (the last may be shorter), from record ``skip`` on
        (whole chunks are skipped; the chunk holding ``skip`` is kept whole)."""
        raise NotImplementedError

    def read(self, ref: ChunkRef) -> Chunk:
        raise NotImplementedError


def _decode(raw: bytes, where: str) -> str | BadRecord:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return BadRecord(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})")


class _TextSource(Source):
    """A text file whose records end at newlines: plans byte ranges by scanning bytes."""

    def _record_ends(self) -> Iterator[int]:
        """Byte offset just past each record, in order."""
        raise NotImplementedError

    def _data_start(self) -> int:
        return 0

    def plan(self, size: int, skip: int = 0) -> Iterator[ChunkRef]:
        first, start, count = 0, self._data_start(), 0
        for end in self._record_ends():
            count += 1
            if count == size:
                if first + count > skip:
                    yield ChunkRef(first, count, start, end)
                first, start, count = first + count, end, 0
        if count:
            yield ChunkRef(first, count, start, os.path.getsize(self.path))

    def _lines(self) -> Iterator[int]:
        """Offsets just past every newline (and the end of a last line without one)."""
        size = os.path.getsize(self.path)
        with open(self.path, "rb") as f:
            base = 0
            while True:
                block = f.read(_BLOCK)
                if not block:
                    break
                pos = block.find(b"\n")
                while pos >= 0:
                    yield base + pos + 1
                    pos = block.find(b"\n", pos + 1)
                base += len(block)
        if size and not self._ends_with_newline(size):
            yield size

    def _ends_with_newline(self, size: int) -> bool:
        with open(self.path, "rb") as f:
            f.seek(size - 1)
            return f.read(1) == b"\n"

    def _bytes(self, ref: ChunkRef) -> bytes:
        with open(self.path, "rb") as f:
            f.seek(ref.start)
            return f.read(ref.stop - ref.start)


class JsonlSource(_TextSource):
    """JSON Lines: one JSON object a line; lines end at ``\\n`` (``\\r\\n`` too)."""

    format = "jsonl"

    def _record_ends(self) -> Iterator[int]:
        return self._lines()

    def read(self, ref: ChunkRef) -> Chunk:
        lines = self._bytes(ref).split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        records: list = []
        if ref.start == 0 and lines and lines[0].startswith(b"\xef\xbb\xbf"):
            lines[0] = lines[0][3:]             # a UTF-8 byte order mark (Windows tools write one)
        for k, raw in enumerate(lines[:ref.count]):
            line_no = ref.first + k + 1
            text = _decode(raw, f"line {line_no}")
            if isinstance(text, BadRecord):
                records.append(text)
                continue
            if not text.strip():
                records.append(BadRecord(f"line {line_no}: empty line, no record"))
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                records.append(BadRecord(f"line {line_no}: not JSON ({exc.msg} at column {exc.colno})"))
                continue
            except RecursionError:
                records.append(BadRecord(f"line {line_no}: JSON nested too deeply to read"))
                continue
            records.append(value if isinstance(value, dict) else
                           BadRecord(f"line {line_no}: expected a JSON object, got {type(value).__name__}"))
        return Chunk(ref.first, records)


class CsvSource(_TextSource):
    """CSV with a header row naming the columns (RFC 4180 quoting; a quoted field may hold newlines)."""

    format = "csv"

    def __init__(self, path: str) -> None:
        super().__init__(path)
        with open(path, "rb") as f:
            head = f.readline()
            while head.count(b'"') % 2:           # a quoted header name holding a newline
                more = f.readline()
                if not more:
                    break
                head += more
            self._start = f.tell()
        text = _decode(head, "header")
        if isinstance(text, BadRecord) or not text.strip():
            raise SourceError(f"{path}: no header row naming the columns (or it is not UTF-8)")
        self.header = next(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
        repeated = sorted({name for name in self.header if self.header.count(name) > 1})
        if repeated:
            raise SourceError(f"{path}: the header names {', '.join(map(repr, repeated))} more than once; "
                              "a record could not say which column it means (rename one)")

    def _data_start(self) -> int:
        return self._start

    def _record_ends(self) -> Iterator[int]:
        """Where each record ends, as Python's csv module reads them (it decides what a quote
        means: a stray one inside an unquoted field is a character, not the start of quoting).
        Blank lines are no records, as for ``csv.DictReader``."""
        end = [self._start]

        def lines() -> Iterator[str]:
            with open(self.path, "rb") as f:
                f.seek(self._start)
                for raw in f:
                    end[0] += len(raw)
                    yield raw.decode("utf-8", "replace")   # boundaries only; read() reports bad bytes

        for row in csv.reader(lines()):
            if row:
                yield end[0]

    def read(self, ref: ChunkRef) -> Chunk:
        raw = self._bytes(ref)
        text = _decode(raw, f"rows {ref.first + 1}-{ref.first + ref.count}")
        if isinstance(text, BadRecord):         # decode row by row to find the bad ones
            return self._read_rows_apart(ref, raw)
        rows = [row for row in csv.reader(io.StringIO(text, newline="")) if row]
        return Chunk(ref.first, [self._record(row, ref.first + k) for k, row in enumerate(rows[:ref.count])]
                     + [BadRecord("row missing")] * (ref.count - len(rows)))

    def _read_rows_apart(self, ref: ChunkRef, raw: bytes) -> Chunk:
        records = []
        for k, line in enumerate([line for line in raw.split(b"\n") if line.strip()][:ref.count]):
            text = _decode(line, f"row {ref.first + k + 1}")
            records.append(text if isinstance(text, BadRecord) else
                           self._record(next(csv.reader([text]), []), ref.first + k))
        return Chunk(ref.first, records)

    def _record(self, row: list[str], index: int) -> dict | BadRecord:
        if len(row) != len(self.header):
            return BadRecord(f"row {index + 1}: {len(row)} fields, the header names {len(self.header)}")
        return dict(zip(self.header, row))


class ParquetSource(Source):
    """A Parquet file, read a row group at a time (only the columns asked for)."""

    format = "parquet"

    def __init__(self, path: str, columns: list[str] | None = None) -> None:
        super().__init__(path)
        require_extra("parquet", f"reading the Parquet file {path}")
        import pyarrow.parquet as pq
        try:
            self._file = pq.ParquetFile(path)
        except Exception as exc:
            raise SourceError(f"{path}: not a readable Parquet file ({exc})") from None
        self.columns = columns

    def __getstate__(self) -> dict:
        return {"path": self.path, "columns": self.columns}

    def __setstate__(self, state: dict) -> None:
        type(self).__init__(self, state["path"], state["columns"])

    def total(self) -> int:
        return self._file.metadata.num_rows

    def plan(self, size: int, skip: int = 0) -> Iterator[ChunkRef]:
        n = self.total()
        for first in range(0, n, size):
            if first + size > skip:
                yield ChunkRef(first, min(size, n - first), first, min(n, first + size))

    def chunks(self, size: int) -> Iterator[Chunk]:
        first = 0
        try:
            for batch in self._file.iter_batches(batch_size=size, columns=self._wanted()):
                records = batch.to_pylist()
                yield Chunk(first, records)
                first += len(records)
        except Exception:  # a damaged page: the rest is read row group by row group, the damaged ones as bad rows
            n = self.total()
            for start in range(first, n, size):
                yield self.read(ChunkRef(start, min(size, n - start), start, min(n, start + size)))

    def _wanted(self) -> list[str] | None:
        if self.columns is None:
            return None
        names = set(self._file.schema_arrow.names)
        return [c for c in self.columns if c in names]

    def read(self, ref: ChunkRef) -> Chunk:
        meta = self._file.metadata
        records: list[dict[str, Any] | BadRecord] = []
        group_start = 0
        for g in range(meta.num_row_groups):
            rows = meta.row_group(g).num_rows
            lo, hi = max(ref.start, group_start), min(ref.stop, group_start + rows)
            if lo < hi:
                try:
                    table = self._file.read_row_group(g, columns=self._wanted())
                    records.extend(table.slice(lo - group_start, hi - lo).to_pylist())
                except Exception as exc:  # pyarrow's errors for a damaged page or row group vary by codec
                    records.extend([BadRecord(f"row {k + 1}: row group {g} of the Parquet file cannot be read "
                                              f"({type(exc).__name__}: {exc})") for k in range(lo, hi)])
            group_start += rows
            if group_start >= ref.stop:
                break
        return Chunk(ref.first, records)
