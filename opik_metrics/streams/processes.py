"""Several processes of this machine as the engine of a streamed run: each builds the metrics
once (from a picklable recipe), reads groups of the file's chunks itself and scores them in the
local engine's chunks; rows come back in order. Text metrics are Python-bound, so processes,
not threads, use the cores."""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Iterator, Sequence

from opik_metrics.core import facts_of
from opik_metrics.execution.worker_pools import WorkerPool, choose_start_method
from opik_metrics.streams.fields import FieldMap
from opik_metrics.streams.sources import Chunk, ChunkRef, Source

MetricFactory = Callable[[], Sequence[Any]]
_worker: dict[str, Any] = {}


def group_refs(refs: Sequence[ChunkRef], groups: int) -> list[ChunkRef]:
    """Consecutive refs merged into about ``groups`` refs (each read at once, scored chunk by chunk)."""
    per_group = max(1, math.ceil(len(refs) / max(1, groups)))
    return [merge_refs(refs[k:k + per_group]) for k in range(0, len(refs), per_group)]


def merge_refs(refs: Sequence[ChunkRef]) -> ChunkRef:
    """One ref for consecutive refs."""
    return ChunkRef(refs[0].first, sum(r.count for r in refs), refs[0].start, refs[-1].stop)


def score_group(scorer: Any, source: Source, ref: ChunkRef, chunk_size: int) -> list[dict]:
    """The rows of one group of chunks, scored in chunks of ``chunk_size`` from its first record."""
    chunk = source.read(ref)
    rows: list[dict] = []
    for lo in range(0, len(chunk.records), chunk_size):
        rows.extend(scorer.score(Chunk(chunk.first + lo, chunk.records[lo:lo + chunk_size])))
    return rows


def _start(factory: MetricFactory, source: Source, fields: FieldMap, chunk_size: int) -> None:
    from opik_metrics.streams.output import arrow_available, columns
    from opik_metrics.streams.run import ChunkScorer

    scorer = ChunkScorer(factory(), fields)
    cols = columns([facts_of(m) for m in scorer.metrics], fields.carried) if arrow_available() else None
    _worker.update(scorer=scorer, source=source, chunk_size=chunk_size, columns=cols, text=fields.carried_types())


def _score(ref: ChunkRef) -> Any:
    """A group's rows; as an Arrow table when pyarrow is there (it crosses the process boundary in
    a few buffers instead of a pickle of every row's dict)."""
    rows = score_group(_worker["scorer"], _worker["source"], ref, _worker["chunk_size"])
    if _worker["columns"] is None:
        return rows
    from opik_metrics.streams.output import rows_table
    return rows_table(_worker["columns"], rows, _worker["text"])


class ProcessEngine:
    """Scores a streamed run's chunks in ``workers`` processes, a pool started for the run and
    stopped with it. ``start_method``: "fork", "forkserver" or "spawn"; None: as
    ``execution.choose_start_method`` decides (a factory that builds models gets forkserver
    workers). ``factory`` must pickle (a module-level function, a ``functools.partial``, a
    ``MetricRecipe``); a run of one or two chunks stays in this process."""

    name = "processes"

    def __init__(self, factory: MetricFactory, workers: int, groups_per_worker: int = 8, *,
                 start_method: str | None = None) -> None:
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        if start_method is not None:
            choose_start_method(start_method, builds_models=True)      # checked now, not when the run starts
        self.factory, self.workers, self.groups_per_worker = factory, workers, groups_per_worker
        self.start_method = start_method
        self._metrics: list | None = None

    def _here(self) -> list:
        """The metrics built in this process (once): for their facts, and to score small runs here."""
        if self._metrics is None:
            self._metrics = list(self.factory())
        return self._metrics

    def facts(self) -> list:
        return [facts_of(m) for m in self._here()]

    def rows(self, source: Source, fields: FieldMap, refs: Iterable[ChunkRef]) -> Iterator[Any]:
        """Batches of rows in order: lists of row dicts, or Arrow tables from the workers."""
        refs = list(refs)
        if not refs:
            return
        chunk_size = max(r.count for r in refs)
        if self.workers == 1 or len(refs) <= 2:       # starting processes would cost more than it saves
            from opik_metrics.streams.run import ChunkScorer
            scorer = ChunkScorer(self._here(), fields)
            for ref in refs:
                yield score_group(scorer, source, ref, chunk_size)
            return
        groups = group_refs(refs, self.workers * self.groups_per_worker)
        builds_models = getattr(self.factory, "loads_model", True)   # a factory that does not say may
        method = choose_start_method(self.start_method, builds_models=builds_models)
        with WorkerPool(self.workers, start_method=method, kept=False, initializer=_start,
                        initargs=(self.factory, source, fields, chunk_size)) as pool:
            yield from pool.map(_score, groups)    # Arrow tables go to the output as they are
