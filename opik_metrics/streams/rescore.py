"""Metrics added to a record file (``score --input ... --output``) without scoring its other
metrics again: the input's records are scored with the new metrics into a resumable side file
(a run of its own, so a killed add resumes), whose rows are then joined to the record file's by
index, checked by id, and the file replaced whole, its metadata naming the new metrics' facts.

The record file keeps no texts of its own, so the records come from the input it was scored from:
the one its ``.run.json`` names (refused if it changed since), or one given (rows checked by id).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence

from opik_metrics.core import MetricFacts, facts_of, read_recorded_facts
from opik_metrics.core.file_names import name_too_long
from opik_metrics.core.versions import ours
from opik_metrics.experiments.contexts import fit_corpus_contexts
from opik_metrics.metric_kit.tracking import scoring_untracked
from opik_metrics.streams.fields import FieldMap
from opik_metrics.streams.output import (RECORD_SUFFIX, RECORD_TMP_SUFFIX, RunLock, columns, output_format,
                                         read_metadata, read_rows, write_atomically, write_rows)
from opik_metrics.scoring import check_metrics
from opik_metrics.scoring.rows import Aggregator, statistics_column
from opik_metrics.streams.run import DEFAULT_CHUNK, LocalEngine, read_references, score_source
from opik_metrics.streams.sources import open_source

HISTORY = "rescores"          # metadata key: each finished add (its metrics, what they replaced, when)


class RecordsError(ValueError):
    """A record file that cannot take the metrics (no metadata, its input gone or changed, a
    metric already there, rows that do not pair with the input's records)."""


@dataclass
class RescoredRecords:
    """What an add made: the new scores' means and corpus values over the file's rows."""

    path: str
    input: str
    metrics: list[str]
    items: int
    unscored: int                                    # rows that got no new score
    aggregate: dict[str, float]
    counts: dict[str, int]
    corpus_names: list[str]
    signatures: dict[str, str]
    replaced: list[str] = field(default_factory=list)
    resumed_from: int = 0                            # records an interrupted add had scored
    unscored_reasons: dict[str, int] = field(default_factory=dict)


def rescore_records(path: str | os.PathLike, metrics: Sequence[Any], *, input_path: str | os.PathLike | None = None,
                input_format: str | None = None, replace: bool = False, chunk_size: int = DEFAULT_CHUNK,
                progress: bool = True) -> RescoredRecords:
    """Add ``metrics``' item scores, statistics and facts to record file ``path``; see the module's
    docstring. ``replace``: score again with a metric the file already has (else RecordsError).
    Metrics fitted on the whole set (CIDEr-D's document frequencies) are fitted on every
    reference of the input, as the first run fits them."""
    path = str(path)
    metrics = list(metrics)
    check_metrics(metrics)
    fmt = output_format(path)
    if not os.path.isfile(path):
        raise RecordsError(f"{path}: no such record file")
    metadata = read_metadata(path)
    if metadata is None:
        raise RecordsError(f"{path} has no opik-metrics metadata: it was not written by `opik-metrics score "
                           "--input ... --output` (or by an older version); score its input again")
    recorded, unreadable = read_recorded_facts(metadata.get("metrics"))
    if unreadable:
        raise RecordsError(f"the metadata of metric {unreadable[0]!r} cannot be read: score the input again")
    run = _run_record(path)
    id_field = str(metadata.get("id_field") or "")
    source_path = _input_of(path, run, input_path, has_ids=bool(id_field))
    if input_format is None and run is not None and _same_file(source_path, run["run"].get("input")):
        input_format = run["run"].get("format")       # what the first run was told with --input-format
    source = open_source(source_path, input_format)
    carried = [*([id_field] if id_field else []), *[str(c) for c in metadata.get("keep") or []]]
    fields = FieldMap({k: tuple(v) for k, v in (metadata.get("fields") or {}).items()}, id_field=id_field)
    lock = RunLock(Path(f"{path}.lock"), "wait for it")      # the lock `score` takes on its output: one writer
    try:
        result, drop = _add(path, fmt, metrics, metadata, recorded, run, source, fields, carried, replace,
                            chunk_size, progress)
    finally:
        lock.release()
    return RescoredRecords(path=path, input=source_path, metrics=[m.name for m in metrics], items=result.items,
                        unscored=result.unscored, aggregate=result.aggregate, counts=result.counts,
                        corpus_names=result.corpus_names, signatures=result.signatures, replaced=drop,
                        resumed_from=result.resumed_from, unscored_reasons=result.unscored_reasons)


def _kept_types(metadata: dict[str, Any]) -> dict[str, str]:
    """The kept columns the file records as numbers or booleans (files made before types were kept: none)."""
    found = metadata.get("kept_types")
    kinds = {"integer", "number", "boolean", "text"}
    return {str(k): v for k, v in found.items() if v in kinds} if isinstance(found, dict) else {}


def _add(path: str, fmt: str, metrics: list[Any], metadata: dict[str, Any], recorded: dict[str, MetricFacts],
         run: dict[str, Any] | None, source: Any, fields: FieldMap, carried: list[str], replace: bool,
         chunk_size: int, progress: bool) -> tuple[Any, list[str]]:
    """Score the new metrics into the side file, then write the joined file in place of the old."""
    source_path = source.path
    if any(getattr(m, "corpus_pending", False) for m in metrics):
        fit_corpus_contexts(metrics, read_references(source, fields, chunk_size))
    new = [facts_of(m) for m in metrics]
    side = _side_file(path, new, source_path)
    drop = _to_replace(path, recorded, new, replace, side)
    kept = [f for name, f in recorded.items() if name not in drop]
    merged = [*kept, *new]
    _check_score_names(path, kept, new)
    cols = columns(merged, carried)        # a new score named like a kept column: OutputError
    # a metric without a signature cannot say it is the one an interrupted add used: never resumed
    fresh = any(f.signature is None for f in new)
    with scoring_untracked():
        result = score_source(source, LocalEngine(metrics), output=side, fields=fields, chunk_size=chunk_size,
                              progress=progress, overwrite=fresh)
    gone = {s.name for f in recorded.values() if f.metric in drop for s in f.scores}
    gone |= {*drop, *(statistics_column(name) for name in drop)}
    # without replace, a metric dropped is this very add, killed after the file was replaced: its
    # history entry is written already, and it replaced nothing the file had before it
    landed = bool(drop) and not replace
    history = list(metadata.get(HISTORY) or [])
    if not landed:
        history.append({"metrics": [m.name for m in metrics], "replaced": drop, "input": os.path.basename(source_path),
                        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "opik-metrics": ours()})
    signatures = {f.metric: str(f.signature) for f in merged if f.signature is not None}
    meta = {**metadata, "metrics": {f.metric: f.as_dict() for f in merged}, "signatures": signatures,
            HISTORY: history}
    whole = Aggregator(merged, carried)
    tmp = Path(f"{path}.tmp")
    try:
        write_rows(tmp, fmt, cols, _joined(path, side, fields.id_field or "", source_path, gone,
                                           _part_starts(list(recorded.values())), whole),
                   metadata=meta, text={**dict.fromkeys(carried, "text"), **_kept_types(metadata)})
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    if run is not None:         # the run key names every metric, "None" for one without a signature (as score's)
        _rewrite_run_record(path, run, {f.metric: str(f.signature) for f in merged}, signatures, whole)
    _remove_side_file(side)
    return result, [] if landed else drop


def _run_record(path: str) -> dict[str, Any] | None:
    """The ``run`` that made the file (its input, the input's size and time), if its record is there."""
    try:
        record = json.loads(Path(path + RECORD_SUFFIX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("run"), dict) else None


def _input_of(path: str, record: dict[str, Any] | None, given: str | os.PathLike | None, *, has_ids: bool) -> str:
    """The file whose records are scored: ``given``, else the one the run record names, unchanged.
    Without ids nothing could tell another file from it, so then only that file, unchanged, is taken."""
    run = (record or {}).get("run") or {}
    named = run.get("input")
    if given is not None:
        if not os.path.isfile(given):
            raise RecordsError(f"--input {given}: no such file")
        if has_ids:
            return str(given)
        if not _same_file(str(given), named):
            raise RecordsError(f"{path} has no id column, so its rows cannot be checked against the records of "
                               f"{given}: only the file it was scored from ({named or 'unknown: no run record'}) "
                               "can give them; score the new input again instead")
    if not isinstance(named, str):
        raise RecordsError(f"{path} keeps no texts and no record of its input ({path}{RECORD_SUFFIX} is missing): "
                           "name the file it was scored from with --input (rows are checked by id)")
    if not os.path.isfile(named):
        raise RecordsError(f"{path} was scored from {named}, which is gone: name its records with --input")
    stat = os.stat(named)
    if (stat.st_size, stat.st_mtime_ns) != (run.get("input_size"), run.get("input_mtime_ns")):
        if given is not None and has_ids:
            return named
        raise RecordsError(f"{named} changed since {path} was scored from it: its records may not be the ones "
                           "scored; " + (f"pass --input {named} to score it anyway (rows are checked by id)" if has_ids
                                         else f"{path} has no id column to check them by: score it again"))
    return named


def _same_file(a: str, b: Any) -> bool:
    return isinstance(b, str) and os.path.isfile(a) and os.path.isfile(b) and os.path.samefile(a, b)


def _side_file(path: str, facts: Sequence[MetricFacts], source_path: str) -> str:
    """Where the new metrics' rows go while scoring: named by what makes them, so that the same
    add resumes into it and a different one never does."""
    stat = os.stat(source_path)
    key = json.dumps([[f.as_dict() for f in facts], os.path.abspath(source_path), stat.st_size, stat.st_mtime_ns],
                     sort_keys=True, default=str)
    side = f"{path}.adding-{hashlib.sha256(key.encode()).hexdigest()[:8]}{Path(path).suffix}"
    too_long = name_too_long(side, RECORD_TMP_SUFFIX)
    if too_long is not None:
        raise RecordsError(f"{path}: the file of the new rows, {os.path.basename(side)}: {too_long}")
    return side


def _to_replace(path: str, recorded: dict[str, MetricFacts], new: Sequence[MetricFacts], replace: bool,
                side: str) -> list[str]:
    """The metrics whose columns go; a metric the file has is refused unless ``replace``, or unless
    an add of the very same metric was killed after replacing the file (its side file is left)."""
    drop = []
    for facts in new:
        if facts.metric not in recorded:
            continue
        finishing = os.path.exists(side) and recorded[facts.metric].as_dict() == facts.as_dict()
        if not replace and not finishing:
            raise RecordsError(f"{path}: metric {facts.metric!r} is already there; pass --replace (replace=True) to "
                               "score every record with it again, or name= it otherwise")
        drop.append(facts.metric)
    return drop


def _check_score_names(path: str, kept: Sequence[MetricFacts], new: Sequence[MetricFacts]) -> None:
    """A new metric's score named like a kept metric's would share its column: refused."""
    owners = {s.name: f.metric for f in kept for s in f.scores}
    for facts in new:
        taken = sorted(s.name for s in facts.scores if s.name in owners)
        if taken:
            raise RecordsError(f"{path}: metric {facts.metric!r} gives {', '.join(map(repr, taken))}, which metric "
                               f"{owners[taken[0]]!r} already wrote; name= it otherwise")


def _joined(path: str, side: str, id_field: str, source_path: str, gone: set[str], names: re.Pattern | None,
            whole: Aggregator) -> Iterator[list[dict]]:
    """The file's rows with the new metrics' columns, a thousand at a time, each added to ``whole``;
    a row that does not pair with its record (another index, another id) is a RecordsError."""
    old_rows, new_rows = read_rows(path), read_rows(side)
    batch: list[dict] = []
    count = 0
    for old in old_rows:
        new = next(new_rows, None)
        if new is None:
            raise RecordsError(f"{path} has more rows than {source_path} has records: it was not scored from them")
        if old.get("index") != new.get("index") or (id_field and old.get(id_field) != new.get(id_field)):
            what = (f"id {old.get(id_field)!r} there, {new.get(id_field)!r} in {source_path}" if id_field
                    else f"index {old.get('index')!r} there, {new.get('index')!r} in {source_path}")
            raise RecordsError(f"{path}: row {count} does not pair with its record ({what}): it was not scored "
                               "from these records")
        row = {k: v for k, v in old.items() if k not in gone and k != "reason"}
        row.update({k: v for k, v in new.items() if k not in ("index", "reason", id_field) and v is not None})
        row["reason"] = _reason(old.get("reason"), new.get("reason"), gone, names)
        whole.add(row)
        batch.append(row)
        count += 1
        if len(batch) >= 1000:
            yield batch
            batch = []
    if next(new_rows, None) is not None:
        raise RecordsError(f"{path} has {count} rows but {source_path} more records: it was not scored from them")
    yield batch


def _reason(old: str | None, new: str | None, gone: set[str], names: re.Pattern | None) -> str | None:
    """Both rows' reasons, once each; the replaced metrics' own reasons go with their scores. A row's
    reason joins "NAME: why" parts with "; " (``RowMaker``), and a why may hold "; " itself, so it
    is cut only where a metric's or score's name starts the next part (``names``)."""
    parts = [] if not old else [old] if names is None else names.split(old)
    kept = [p for p in parts if p and p.split(": ", 1)[0] not in gone]
    if new:
        kept.append(new)
    return "; ".join(dict.fromkeys(kept)) or None


def _part_starts(facts: Sequence[MetricFacts]) -> re.Pattern | None:
    """Where a row's reason of metrics ``facts`` may be cut into parts: before "; NAME: "."""
    names = sorted({f.metric for f in facts} | {s.name for f in facts for s in f.scores}, key=len, reverse=True)
    return re.compile("; (?=(?:" + "|".join(map(re.escape, names)) + "): )") if names else None


def _rewrite_run_record(path: str, record: dict[str, Any], run_metrics: dict[str, str], signatures: dict[str, str],
                        whole: Aggregator) -> None:
    """The run record beside the file, naming every metric now in it and the aggregates over all of
    them (what ``score`` prints when it finds the file complete)."""
    run = {**record["run"], "metrics": run_metrics}
    write_atomically(Path(path + RECORD_SUFFIX), json.dumps(
        {**record, "run": run, "aggregate": whole.aggregate(), "counts": whole.counts(), "items": whole.rows,
         "unscored": whole.unscored, "signatures": signatures, "opik_metrics": ours()}, indent=2))


def _remove_side_file(side: str) -> None:
    for leftover in (side, side + RECORD_SUFFIX):
        try:
            os.remove(leftover)
        except FileNotFoundError:
            pass
