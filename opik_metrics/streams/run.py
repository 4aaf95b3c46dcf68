"""One streamed scoring run: records read a chunk at a time, scored, written as rows (resuming
from what an earlier run with the same output kept), then aggregated in index order.

The engine is swappable: ``LocalEngine`` scores chunks in this process; the Ray engine
(``opik_metrics.distributed``) scores the same chunks on a cluster and hands back the same rows.
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Iterator, Protocol, Sequence

from tqdm.auto import tqdm

from opik_metrics.core import MetricInputError, facts_of, require_references, require_text
from opik_metrics.core.versions import ours
from opik_metrics.experiments.contexts import fit_corpus_contexts
from opik_metrics.scoring import Scorer, Unscorable
from opik_metrics.streams.fields import FieldMap
from opik_metrics.streams.ids import check_records, with_default_id
from opik_metrics.streams.output import RunOutput, batch_rows, batch_size, columns, first_index, records_metadata
from opik_metrics.scoring.rows import Aggregator
from opik_metrics.streams.sources import BadRecord, Chunk, ChunkRef, Source

DEFAULT_CHUNK = 1024
MetricFactory = Callable[[], Sequence[Any]]


def wanted_fields(metrics: Sequence[Any]) -> list[str]:
    """The scoring inputs the metrics read: their text field, ``reference`` when one compares
    with references, and the inputs they take in batches (CLIPScore's ``image``)."""
    from opik_metrics.metric_kit.base import ReferenceMetric

    wanted = {"output"} | {getattr(m, "text_field", "output") for m in metrics}
    if any(isinstance(m, ReferenceMetric) or getattr(m, "needs_reference", False) is True for m in metrics):
        wanted.add("reference")
    for m in metrics:
        wanted.update((getattr(m, "batch_fields", None) or {}).values())
    return sorted(wanted, key=lambda f: (f != "output", f))


class ChunkScorer:
    """A chunk of records as rows, one per record, in order: each record's scoring inputs read and
    checked (a record that cannot be read or lacks a field becomes a row with the reason; its
    neighbours are scored), scored by the one ``Scorer``, its id and kept columns carried."""

    def __init__(self, metrics: Sequence[Any], fields: FieldMap) -> None:
        self.scorer = Scorer(metrics)
        self.metrics = self.scorer.metrics
        self.fields = fields
        self.wanted = wanted_fields(self.metrics)

    def inputs(self, record: Any, index: int) -> dict[str, Any]:
        """The checked scoring inputs of one record (MetricInputError naming item and field)."""
        try:
            inputs = self.fields.extract(record, self.wanted)
        except KeyError as exc:
            raise MetricInputError(f"item {index}, {exc.args[0]}") from None
        for name, value in inputs.items():
            if name == "reference":
                inputs[name] = require_references(value, "reference", index)
            elif name != "image":
                inputs[name] = require_text(value, name, index)
        return inputs

    def score(self, chunk: Chunk) -> list[dict[str, Any]]:
        items: list[dict | Unscorable] = []
        for k, record in enumerate(chunk.records):
            if isinstance(record, BadRecord):
                items.append(Unscorable(record.reason))
                continue
            try:
                items.append(self.inputs(record, chunk.first + k))
            except MetricInputError as exc:
                items.append(Unscorable(str(exc)))
        made = self.scorer.rows(chunk.first, items)
        if self.fields.carried:
            for k, record in enumerate(chunk.records):
                carried = self.fields.carry(record) if isinstance(record, dict) else {}
                made[k] = {"index": made[k]["index"], **carried, **made[k]}
        return made


class Engine(Protocol):
    """What a run needs of its engine (``LocalEngine``, ``ProcessEngine``, ``RayEngine``)."""

    def facts(self) -> list: ...

    def rows(self, source: Source, fields: FieldMap, refs: Iterator[ChunkRef]) -> Iterator[Any]: ...


class LocalEngine:
    """Scores chunks one after another in this process."""

    name = "local"

    def __init__(self, metrics: Sequence[Any]) -> None:
        self.metrics = list(metrics)

    def facts(self) -> list:
        return [facts_of(m) for m in self.metrics]

    def rows(self, source: Source, fields: FieldMap, refs: Iterator[ChunkRef]) -> Iterator[list[dict]]:
        scorer = ChunkScorer(self.metrics, fields)
        for ref in refs:
            yield scorer.score(source.read(ref))


@dataclass
class StreamResult:
    """What a run made: the aggregates and how many items each covers, the signatures, and the
    rows themselves when no output file was asked for."""

    items: int
    unscored: int
    aggregate: dict[str, float]
    counts: dict[str, int]
    signatures: dict[str, str]
    corpus_names: list[str] = field(default_factory=list)
    rows: list[dict] | None = None
    resumed_from: int = 0
    output: str | None = None
    notes: list[str] = field(default_factory=list)
    # why records have no score (reasons without the record's place -> records), a few distinct ones
    unscored_reasons: dict[str, int] = field(default_factory=dict)
    mean_corpora: dict[str, str] = field(default_factory=dict)    # corpus score -> the item score it averages


@dataclass
class StreamRun:
    """The settings of one run (see ``score_file``)."""

    source: Source
    fields: FieldMap
    engine: Engine
    output: str | None = None
    chunk_size: int = DEFAULT_CHUNK
    progress: bool = True
    overwrite: bool = False
    flush_rows: int = 8192

    def run_key(self, signatures: dict[str, str]) -> dict[str, Any]:
        """What makes two runs the same run (so that one may resume the other's output)."""
        stat = os.stat(self.source.path)
        return {"input": os.path.abspath(self.source.path), "input_size": stat.st_size,
                "input_mtime_ns": stat.st_mtime_ns, "format": self.source.format,
                "fields": self.fields.as_dict(), "id_field": self.fields.id_field or "",
                "keep": list(self.fields.keep), "metrics": signatures}

    def execute(self) -> StreamResult:
        out = None
        if self.output is not None:   # the path checked and locked before anything is scored
            out = RunOutput(self.output, None, overwrite=self.overwrite, flush_rows=self.flush_rows,
                            input_path=self.source.path)
        try:
            if self.output is not None:        # an output file pairs by id: ``id`` unless told otherwise
                self.fields = with_default_id(self.source, self.fields)
            self.fields = check_records(self.source, self.fields, self.chunk_size)   # before any scoring
            return self._execute(out)
        finally:
            if out is not None:
                out.close()

    def _execute(self, out: RunOutput | None) -> StreamResult:
        # A fresh run on an engine that learns its metrics' facts from its first batch (Ray, for
        # metrics with models: no probe loads the model once more) starts scoring before it asks
        # for them; other engines build their metrics first, so a bad option fails before any work.
        fresh = out is None or out.fresh
        early = fresh and getattr(self.engine, "facts_from_rows", False)
        stream = self._scored(0) if early else None
        try:
            first = next(stream, None) if stream is not None else None
            facts = self.engine.facts()
            signatures = {f.metric: str(f.signature) for f in facts}
            aggregator = Aggregator(facts, self.fields.carried)
            if out is None and stream is None:
                stream = self._scored(0)
            scored = itertools.chain([] if first is None else [first], stream or ())
            if out is None:
                rows: list[dict] = []
                for batch in scored:
                    batch = batch_rows(batch)
                    for row in batch:
                        aggregator.add(row)
                    rows.extend(batch)
                return self._result(aggregator, signatures, rows=rows)
            out.bind(self.run_key(signatures), columns(facts, self.fields.carried), self.fields.carried_types())
            return self._write(out, facts, signatures, aggregator, scored if early else None)
        finally:
            if stream is not None:
                stream.close()     # stops the engine when the run ends early

    def _write(self, out: RunOutput, facts: list, signatures: dict[str, str], aggregator: Aggregator,
               scored: Iterator[Any] | None) -> StreamResult:
        """``scored``: the batches of a fresh run, already under way; None: start (or resume what
        is kept) here."""
        if out.complete:
            for row in out.kept_rows():
                aggregator.add(row)
            return self._result(aggregator, signatures, resumed_from=aggregator.rows, output=self.output)
        out.start()
        done = 0
        if scored is None:
            done = out.done()
            out.drop_parts_after(done)
            scored = self._scored(done)
        try:
            for batch in scored:
                out.add(batch)
        finally:
            out.flush()        # also on Ctrl-C or an error: every row scored so far is kept
            if isinstance(scored, Generator):
                scored.close()     # a stream started here (one started earlier: its caller closes it)

        out.merge(facts, aggregator, records_metadata(facts, self.fields.id_field or "", self.fields.keep,
                                                      self.fields.as_dict(), self.source.path,
                                                      kept_types=self.fields.kept_types))
        result = self._result(aggregator, signatures, resumed_from=done, output=self.output)
        out.finish({"aggregate": result.aggregate, "counts": result.counts, "items": result.items,
                    "unscored": result.unscored, "signatures": signatures, "opik_metrics": ours()})
        return result

    def _scored(self, done: int) -> Generator[Any, None, None]:
        bar = tqdm(total=self.source.total(), initial=done, desc="scoring", unit="item",
                   disable=not self.progress, leave=False)
        try:
            for batch in self.engine.rows(self.source, self.fields, self.source.plan(self.chunk_size, skip=done)):
                if not batch_size(batch):
                    continue
                if first_index(batch) < done:      # a chunk that began before the resume point
                    batch = [row for row in batch_rows(batch) if row["index"] >= done]
                bar.update(batch_size(batch))
                yield batch
        finally:
            bar.close()

    def _result(self, aggregator: Aggregator, signatures: dict[str, str], **more: Any) -> StreamResult:
        return StreamResult(items=aggregator.rows, unscored=aggregator.unscored, aggregate=aggregator.aggregate(),
                            counts=aggregator.counts(), signatures=signatures,
                            corpus_names=aggregator.corpus_names(), unscored_reasons=dict(aggregator.unscored_reasons),
                            mean_corpora=aggregator.mean_corpora(), **more)


def read_references(source: Source, fields: FieldMap, chunk_size: int = DEFAULT_CHUNK) -> list[list[str]]:
    """Every record's references (a first pass, for corpus contexts: CIDEr-D's document
    frequencies, BERTScore's idf). It holds them all in memory, once; unreadable records are left
    out (their rows say why when they are scored)."""
    references: list[list[str]] = []
    for chunk in source.chunks(chunk_size):
        for k, record in enumerate(chunk.records):
            if isinstance(record, BadRecord):
                continue
            try:
                value = fields.extract(record, ["reference"])["reference"]
                references.append(require_references(value, "reference", chunk.first + k))
            except (KeyError, MetricInputError):
                continue
    return references


def score_source(source: Source, engine: Any, *, output: str | None = None, fields: FieldMap | None = None,
                 chunk_size: int = DEFAULT_CHUNK, progress: bool = True, overwrite: bool = False,
                 flush_rows: int = 8192) -> StreamResult:
    """Score every record of ``source`` with ``engine`` (``LocalEngine`` or ``RayEngine``).
    ``flush_rows``: rows held before they are written to ``output`` (at most 5 s of work), what
    a killed run can lose."""
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    return StreamRun(source, fields or FieldMap(), engine, output=output, chunk_size=chunk_size,
                     progress=progress, overwrite=overwrite, flush_rows=flush_rows).execute()


def score_file(path: str, metrics: Sequence[Any] = (), *, output: str | None = None, fields: FieldMap | None = None,
               input_format: str | None = None, engine: Any = None, chunk_size: int = DEFAULT_CHUNK,
               progress: bool = True, overwrite: bool = False, flush_rows: int = 8192) -> StreamResult:
    """Score every record of a JSONL, CSV or Parquet file with ``metrics`` in this process (or
    on ``engine``); one row per record to ``output`` (resuming it), or in the result without one.
    Metrics whose item scores need the whole set first (CIDEr-D without ``df_references``) are
    fitted on a first pass over the references."""
    from opik_metrics.streams.sources import open_source

    fields = fields or FieldMap()
    source = open_source(path, input_format)
    if engine is None:
        if any(getattr(m, "corpus_pending", False) for m in metrics):
            fit_corpus_contexts(metrics, read_references(source, fields, chunk_size))
        engine = LocalEngine(metrics)
    return score_source(source, engine, output=output, fields=fields, chunk_size=chunk_size, progress=progress,
                        overwrite=overwrite, flush_rows=flush_rows)
