"""Where a streamed run's rows go: parts written one by one (each complete, renamed into place),
so that a killed run resumes from what it kept; at the end they are merged, in index order,
into the output file (JSON Lines or Parquet), beside ``<output>.run.json`` (what made it, the
aggregates). The output file carries its own metadata (the metrics' facts and signatures, the
id column): Parquet key-value metadata, or a JSON Lines file's first line."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence, Union

from opik_metrics.core import MetricFacts
from opik_metrics.core.extras import require_extra
from opik_metrics.core.file_names import name_too_long
from opik_metrics.scoring.rows import statistics_column

RECORD_SUFFIX = ".run.json"                      # what made the output, beside it
RECORD_TMP_SUFFIX = RECORD_SUFFIX + ".tmp"       # the longest name written beside the output
OUTPUT_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet", ".pq": "parquet"}
METADATA_KEY = "opik_metrics.records"      # Parquet metadata key, and the one key of a JSONL header line
RECORDS_SCHEMA = "opik-metrics/records/1"
#: The columns carried from the records: their names (all text), or {name: text|integer|number|boolean}.
Carried = Union[Sequence[str], Mapping[str, str]]


class OutputError(ValueError):
    """An output that cannot be written or resumed (unknown format, written by another run)."""


def output_format(path: str) -> str:
    """"jsonl" or "parquet", from the file's suffix; a Parquet file without the parquet extra is
    refused here, before anything is scored or read (``MissingExtra``)."""
    fmt = OUTPUT_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise OutputError(f"--output {path}: name a .jsonl or .parquet file")
    if fmt == "parquet":
        require_extra("parquet", f"the Parquet file {path}", otherwise="or use JSON Lines (a .jsonl file)")
    return fmt


def columns(facts: Sequence[MetricFacts], carried: Sequence[str] = ()) -> list[str]:
    """Output columns: index, the columns carried from the records (id, kept ones), every score
    the metrics state, reason, summable statistics. A carried column named like another is
    refused (OutputError)."""
    scores = list(dict.fromkeys(s.name for f in facts for s in f.scores))
    stats = [statistics_column(f.metric) for f in facts if f.own_corpus is not None]
    taken = {"index", "reason", *scores, *stats}
    for name in carried:
        if name in taken:
            raise OutputError(f"column {name!r} (--id-field or --keep) is also an output column of its own "
                              f"({'a score' if name in scores else 'index, reason or statistics'}); "
                              "it cannot be kept under that name")
        taken.add(name)
    return ["index", *carried, *scores, "reason", *stats]


def records_metadata(facts: Sequence[MetricFacts], id_field: str, keep: Sequence[str], fields: dict,
                     input_path: str, kept_types: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What a record file says of itself: its schema, the id column ("" when none), the kept
    columns and the type of those that are not text, the input columns read, and each metric's
    facts (signature included) as an experiment's config records them, so that a comparison reads
    it as it reads a stored run."""
    from opik_metrics.experiments.experiment_config import package_versions

    return {"schema": RECORDS_SCHEMA, "id_field": id_field, "keep": list(keep), "kept_types": dict(kept_types or {}),
            "fields": fields,
            "input": os.path.basename(input_path),
            "metrics": {f.metric: f.as_dict() for f in facts},
            "signatures": {f.metric: str(f.signature) for f in facts if f.signature is not None},
            "versions": package_versions()}


class RunOutput:
    """The output of one run: ``path``, its parts folder ``path.parts/`` while running, and the
    record ``path.run.json``. ``run`` describes what makes the run (input, fields, metric
    signatures): a different run never resumes into these parts. ``run`` may come later
    (``bind``): the path is checked and locked first, so that a run can start scoring a fresh
    output before it knows its metrics' signatures."""

    def __init__(self, path: str, run: dict[str, Any] | None, *, columns: Sequence[str] | None = None,
                 overwrite: bool = False, flush_rows: int = 8192, flush_seconds: float = 5.0,
                 input_path: str | None = None) -> None:
        self.path = Path(path)
        self.format = output_format(path)
        too_long = name_too_long(path, RECORD_TMP_SUFFIX)
        if too_long is not None:
            raise OutputError(f"--output {path}: {too_long}")
        self.parts = Path(f"{path}.parts")
        self.record = Path(f"{path}{RECORD_SUFFIX}")
        self.run: dict[str, Any] | None = None
        self.columns: list[str] | None = None
        self.text: Carried = []            # the columns carried from the records (and their kinds)
        self.overwrite = overwrite
        self.flush_rows, self.flush_seconds = flush_rows, flush_seconds
        self._buffer: list[Any] = []      # batches: lists of row dicts, or Arrow tables
        self._buffered = 0
        self._last_flush = time.monotonic()
        if not self.path.parent.is_dir():
            raise OutputError(f"--output {path}: folder {self.path.parent} does not exist")
        if self.path.is_dir():
            raise OutputError(f"--output {path} is a folder; name a .jsonl or .parquet file")
        if input_path is not None and self.path.exists() and os.path.samefile(self.path, input_path):
            raise OutputError(f"--output {path} is the input file; choose another --output")
        self._lock = RunLock(Path(f"{path}.lock"))        # one run writes an output at a time
        try:
            shutil.rmtree(self._finished_parts, ignore_errors=True)   # a finished run killed while clearing up
            if run is not None:
                self.bind(run, columns)
        except BaseException:
            self.close()
            raise

    @property
    def fresh(self) -> bool:
        """Whether this run starts from the first record: ``overwrite``, or nothing kept here."""
        return self.overwrite or not (self.path.exists() or self.record.exists() or self.parts.exists())

    def bind(self, run: dict[str, Any], columns: Sequence[str] | None, text: Carried = ()) -> None:
        """Name the run and its columns once known (``text``: those carried from the records).
        With ``overwrite`` the earlier output goes now (not before: a run that fails to start
        keeps it); else kept parts of a different run, or a file opik-metrics did not write, are
        refused (OutputError)."""
        self.run, self.columns = run, list(columns) if columns is not None else None
        self.text = dict(text) if isinstance(text, Mapping) else list(text)
        if self.overwrite:
            self.discard()
        self._check_same_run()

    @property
    def _finished_parts(self) -> Path:
        return Path(f"{self.path}.parts.done")

    def close(self) -> None:
        """Let another run write this output (the lock also goes when the process dies)."""
        self._lock.release()

    # -- resuming -----------------------------------------------------------------------------

    def _check_same_run(self) -> None:
        assert self.run is not None
        for where in (self.parts / "run.json", self.record):
            if where.exists():
                try:
                    recorded = json.loads(where.read_text(encoding="utf-8")).get("run")
                except (OSError, ValueError, AttributeError):
                    raise OutputError(f"{where} is damaged; delete it or pass --overwrite") from None
                if recorded != self.run:
                    differ = sorted(k for k in set(recorded or {}) | set(self.run)
                                    if (recorded or {}).get(k) != self.run.get(k))
                    raise OutputError(f"{self.path} was written by a different run (it differs in: "
                                      f"{', '.join(differ)}); choose another --output or pass --overwrite")
                return
        if self.path.exists():
            raise OutputError(f"{self.path} exists and was not written by opik-metrics; choose another "
                              "--output or pass --overwrite")

    @property
    def complete(self) -> bool:
        """Whether a finished run already wrote this output (nothing to score)."""
        return self.path.exists() and self.record.exists() and not self.parts.exists()

    def done(self) -> int:
        """How many leading records (0 .. done-1) the kept parts hold, without a gap."""
        stop = 0
        for first, last, _ in self._part_files():
            if first > stop:
                break
            stop = max(stop, last)
        return stop

    def drop_parts_after(self, done: int) -> None:
        """Remove kept parts that start at or after ``done`` (beyond a gap): this run writes them again."""
        for first, _, p in self._part_files():
            if first >= done:
                p.unlink()

    def _part_files(self) -> list[tuple[int, int, Path]]:
        if not self.parts.is_dir():
            return []
        found = []
        for p in self.parts.glob("part-*"):
            if p.suffix not in (".jsonl", ".arrow"):
                continue
            first, _, last = p.stem[len("part-"):].partition("-")
            if first.isdigit() and last.isdigit():
                found.append((int(first), int(last), p))
        return sorted(found)

    def discard(self) -> None:
        """Remove this output, its parts and its record."""
        shutil.rmtree(self.parts, ignore_errors=True)
        for p in (self.path, self.record):
            if p.exists():
                p.unlink()

    # -- writing --------------------------------------------------------------------------------

    def start(self) -> None:
        if self.run is None:
            raise RuntimeError("RunOutput.start before bind: the run is not named yet")
        self.parts.mkdir(exist_ok=True)
        marker = self.parts / "run.json"
        if not marker.exists():
            write_atomically(marker, json.dumps({"run": self.run}, indent=2))

    def add(self, batch: Sequence[dict] | Any) -> None:
        """Rows in index order, following those already kept, as dicts or as an Arrow table of the
        output's columns (an engine's workers make those: kept as they are, not taken back to
        dicts); written out now and then."""
        count = batch_size(batch)
        if not count:
            return
        self._buffer.append(batch)
        self._buffered += count
        if self._buffered >= self.flush_rows or time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        if not self._buffer:
            return
        first, last = first_index(self._buffer[0]), last_index(self._buffer[-1]) + 1
        name = f"part-{first:012d}-{last:012d}"
        if self.columns is not None and _arrow() is not None:   # 5x cheaper to write and read back than JSON
            _write_arrow_part(self.parts / f"{name}.arrow", self.columns, self._buffer, self.text)
        else:
            rows = [row for piece in self._buffer for row in batch_rows(piece)]
            write_atomically(self.parts / f"{name}.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
        self._buffer.clear()
        self._buffered = 0
        self._last_flush = time.monotonic()

    def kept_rows(self) -> Iterator[dict]:
        """Every kept row in index order: from the parts while running, else from the output."""
        if self.parts.is_dir():
            for batch in self.kept_batches():
                yield from batch_rows(batch)
        elif self.path.exists():
            yield from read_rows(str(self.path))

    def kept_batches(self) -> Iterator[Any]:
        """The kept parts' rows in index order, each index once, a part at a time: an Arrow part
        as a table (sliced where an earlier part already holds its first rows), else row dicts."""
        expect, stop = 0, self.done()
        for first, last, p in self._part_files():
            if first >= stop:
                break
            if last <= expect:          # a part another attempt already covered
                continue
            if p.suffix == ".arrow":
                table = _read_arrow_table(p)
                index = table.column("index")
                if table.num_rows == last - first and table.num_rows and index[0].as_py() == first \
                        and index[-1].as_py() == last - 1:        # the contiguous run every part is
                    yield table.slice(expect - first) if first < expect else table
                    expect = last
                    continue
                rows: Iterator[dict] = iter(table_rows(table))
            else:
                rows = _read_json_part(p)
            kept = []
            for row in rows:
                if row["index"] == expect:     # each index once, in order
                    expect += 1
                    kept.append(row)
            yield kept

    def merge(self, facts: Sequence[MetricFacts], aggregator: Any, metadata: dict[str, Any] | None = None) -> None:
        """Write the kept rows, in order, as the output file in the run's columns, adding each
        to ``aggregator`` on the way (tables whole: ``Aggregator.add_table``); ``metadata`` goes
        into the Parquet file's key-value metadata, or as a JSON Lines file's first line."""
        cols = self.columns if self.columns is not None else columns(facts)
        tmp = self.path.with_name(self.path.name + ".tmp")

        def counted() -> Iterator[Any]:
            for batch in self.kept_batches():
                if is_table(batch):
                    aggregator.add_table(batch)
                else:
                    for row in batch:
                        aggregator.add(row)
                yield batch

        write_rows(tmp, self.format, cols, counted(), metadata=metadata, text=self.text)
        os.replace(tmp, self.path)

    def finish(self, record: dict[str, Any]) -> None:
        """Write the run's record beside the output (what made it, the aggregates); drop the parts
        (renamed away first, so that a kill while deleting them leaves a finished output)."""
        write_atomically(self.record, json.dumps({"run": self.run, **record}, indent=2))
        if self.parts.exists():
            os.replace(self.parts, self._finished_parts)
        shutil.rmtree(self._finished_parts, ignore_errors=True)
        self.close()


def write_rows(path: Path, fmt: str, cols: list[str], batches: Iterator[Any], *,
               metadata: dict[str, Any] | None = None, text: Carried = ()) -> None:
    """Batches (tables or lists of row dicts) as a record file of format ``fmt`` ("jsonl" or
    "parquet") in columns ``cols``, with ``metadata`` (a JSON Lines file's first line, or Parquet
    key-value metadata); ``text``: the columns carried from the records."""
    if fmt == "jsonl":
        with open(path, "w", encoding="utf-8") as f:
            if metadata is not None:
                f.write(json.dumps({METADATA_KEY: metadata}) + "\n")
            for batch in batches:
                for row in batch_rows(batch):
                    f.write(json.dumps({c: row.get(c) for c in cols}) + "\n")
    else:
        _write_parquet(path, cols, batches, metadata=metadata, text=text)


def _write_parquet(path: Path, cols: list[str], batches: Iterator[Any], group: int = 65536, *,
                   metadata: dict[str, Any] | None = None, text: Carried = ()) -> None:
    """Batches (tables or lists of row dicts) as one Parquet file in row groups of ``group`` rows,
    ``metadata`` (JSON) under ``METADATA_KEY`` in its key-value metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema(cols, text)
    if metadata is not None:
        schema = schema.with_metadata({METADATA_KEY: json.dumps(metadata)})
    with pq.ParquetWriter(str(path), schema) as writer:
        held: list[Any] = []
        count = 0
        for batch in batches:
            if not batch_size(batch):
                continue
            held.append(_as_table(cols, batch, text))
            count += held[-1].num_rows
            if count >= group:
                table = pa.concat_tables(held)
                whole = (count // group) * group
                writer.write_table(table.slice(0, whole), row_group_size=group)
                held, count = ([table.slice(whole)], count - whole) if count > whole else ([], 0)
        if held:
            writer.write_table(pa.concat_tables(held), row_group_size=group)


def _arrow() -> Any:
    """pyarrow when installed (the ``ray`` extra brings it), else None."""
    try:
        import pyarrow
    except ImportError:
        return None
    return pyarrow


def arrow_available() -> bool:
    return _arrow() is not None


def rows_table(cols: Sequence[str], rows: Sequence[dict], text: Carried = ()) -> Any:
    """Rows as an Arrow table of the output's columns (a missing score is null; ``text``: the
    columns carried from the records)."""
    pa = _arrow()
    schema = arrow_schema(cols, text)
    return pa.Table.from_arrays([pa.array([row.get(c) for row in rows], type=schema.field(c).type) for c in cols],
                                schema=schema)


def table_rows(table: Any) -> list[dict]:
    """The rows of an Arrow table of output columns, as the engines make them (no null scores)."""
    return [{k: v for k, v in row.items() if v is not None or k == "reason"} for row in table.to_pylist()]


def is_table(batch: Any) -> bool:
    """Whether an engine's batch is an Arrow table (else a list of row dicts)."""
    return not isinstance(batch, list) and hasattr(batch, "num_rows")


def batch_size(batch: Any) -> int:
    return batch.num_rows if is_table(batch) else len(batch)


def batch_rows(batch: Any) -> list[dict]:
    """An engine's batch as row dicts."""
    return table_rows(batch) if is_table(batch) else batch


def first_index(batch: Any) -> int:
    return batch.column("index")[0].as_py() if is_table(batch) else batch[0]["index"]


def last_index(batch: Any) -> int:
    return batch.column("index")[-1].as_py() if is_table(batch) else batch[-1]["index"]


def _as_table(cols: Sequence[str], batch: Any, text: Carried = ()) -> Any:
    """A batch as a table of exactly the output's columns and types."""
    if not is_table(batch):
        return rows_table(cols, batch, text)
    schema = arrow_schema(cols, text)
    return batch if batch.schema.equals(schema) else batch.select(list(cols)).cast(schema)


def _write_arrow_part(path: Path, cols: Sequence[str], batches: Sequence[Any], text: Carried = ()) -> None:
    """Batches (row dicts or tables) as one Arrow IPC file, written whole and renamed into place."""
    pa = _arrow()
    tables = [_as_table(cols, batch, text) for batch in batches]
    table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
    tmp = path.with_name(path.name + ".tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _read_json_part(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


class RunLock:
    """An exclusive ``flock`` on ``<output>.lock`` for the run's life: a second run on the same
    output stops with a clear message instead of deleting or interleaving the first one's parts."""

    def __init__(self, path: Path, hint: str = "wait for it or choose another --output") -> None:
        self.path, self.fd, self.hint = path, None, hint
        try:
            import fcntl
        except ImportError:                   # not POSIX: runs are not locked
            return
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                holder = path.read_text(encoding="utf-8", errors="replace").strip() or "another process"
                raise OutputError(f"another run ({holder}) is writing {str(path)[:-len('.lock')]}; {hint}") from None
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:                          # not a lock file its last holder removed meanwhile
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}".encode())
        self.fd = fd

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        os.close(self.fd)                     # closing releases the lock
        self.fd = None


def _read_arrow_table(path: Path) -> Any:
    pa = _arrow()
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def arrow_schema(cols: Sequence[str], text: Carried = ()) -> Any:
    """The Arrow types of output columns: index int64, reason string, the columns carried from the
    records (``text``: names, all text, or {name: text|integer|number|boolean}) as their kind,
    statistics lists, scores float64."""
    import pyarrow as pa

    kinds = text if isinstance(text, Mapping) else dict.fromkeys(text, "text")
    carried = {"text": pa.string(), "integer": pa.int64(), "number": pa.float64(), "boolean": pa.bool_()}
    types = {"index": pa.int64(), "reason": pa.string(), **{name: carried[kind] for name, kind in kinds.items()}}
    return pa.schema([(c, types.get(c, pa.list_(pa.float64()) if c.startswith("statistics.") else pa.float64()))
                      for c in cols])


def read_rows(path: str) -> Iterator[dict]:
    """The rows of an output file written by a run, in order (a JSON Lines file's metadata line
    is not a row)."""
    if output_format(path) == "jsonl":
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f):
                try:
                    row = json.loads(line)
                except ValueError as exc:        # json's own message says "line 1": the line it was given
                    where = f", column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
                    reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                    raise OutputError(f"{path}, line {number + 1}{where}: not a JSON record ({reason}); the file "
                                      "was changed or cut after `score` wrote it: score its input again") from None
                if number == 0 and _is_header(row):
                    continue
                yield row
    else:
        import pyarrow.parquet as pq
        for batch in pq.ParquetFile(path).iter_batches(batch_size=65536):
            yield from batch.to_pylist()


def read_metadata(path: str) -> dict[str, Any] | None:
    """The metadata a run wrote into its output file (``records_metadata``), or None when the
    file has none (written by an older opik-metrics, or by something else)."""
    if output_format(path) == "jsonl":
        with open(path, encoding="utf-8") as f:
            first = f.readline()
        try:
            head = json.loads(first) if first.strip() else None
        except ValueError:
            return None
        return head[METADATA_KEY] if head is not None and _is_header(head) else None
    import pyarrow.parquet as pq

    found = (pq.read_schema(path).metadata or {}).get(METADATA_KEY.encode())
    if found is None:
        return None
    value = json.loads(found)
    return value if isinstance(value, dict) else None


def _is_header(row: Any) -> bool:
    return isinstance(row, dict) and len(row) == 1 and isinstance(row.get(METADATA_KEY), dict)


def write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
