"""Ray as the engine of a streamed run. The driver plans the file's chunks (byte or row ranges,
no records read) and hands groups of them to workers (a Ray Data actor pool for metrics with
models, so each worker loads its model once; plain Ray tasks for text metrics), which read and
score them in the very chunks the local engine uses. Rows come back in order as Arrow tables
(floats unchanged), and the driver writes and aggregates them as the local engine's."""
from __future__ import annotations

import pickle
from typing import Any, Callable, Iterable, Iterator, Sequence

from opik_metrics.core import facts_of
from opik_metrics.distributed.cluster import import_ray, join_cluster, start_local_cluster
from opik_metrics.streams.fields import FieldMap
from opik_metrics.streams.output import columns, rows_table
from opik_metrics.streams.processes import group_refs, score_group
from opik_metrics.scoring.rows import Aggregator
from opik_metrics.streams.run import ChunkScorer, StreamResult
from opik_metrics.streams.sources import Chunk, ChunkRef, Source

MetricFactory = Callable[[], Sequence[Any]]
FACTS_KEY = b"opik_metrics.facts"    # a scored table's metadata: the worker's metric facts, pickled


def _ray(address: str | None = None):
    """Ray, imported for a cluster started here (on loopback only) or joined at ``address``."""
    try:
        return import_ray(address)
    except ImportError:
        raise RuntimeError("the Ray engine needs Ray: pip install 'opik-metrics[ray]'") from None


def ensure_ray(address: str | None, workers: int) -> None:
    """Connect to ``address`` (a running cluster), or start a local one with ``workers`` CPUs,
    listening on loopback only; a Ray the user started already is used as it is."""
    import logging

    ray = _ray(address)
    if not ray.is_initialized():
        quiet = {"log_to_driver": False, "include_dashboard": False, "logging_level": "ERROR"}
        if address:
            join_cluster(address, **quiet)
        else:
            start_local_cluster(workers, **quiet)
    import ray.data   # configures its loggers on import: the levels below come after

    logging.getLogger("ray.data").setLevel(logging.WARNING)   # per-dataset execution chatter
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)   # "progress bars disabled"
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False          # our own bar counts the items
    context.print_on_execution_start = False
    context.execution_options.preserve_order = True   # rows come back in index order


class _RefScorer:
    """Reads a group of chunks and scores them chunk by chunk: the batches of the local run."""

    def __init__(self, factory: MetricFactory, source: Source, fields: FieldMap, chunk_size: int) -> None:
        self.scorer = ChunkScorer(factory(), fields)
        self.source = source
        self.chunk_size = chunk_size
        facts = [facts_of(m) for m in self.scorer.metrics]
        self.text = fields.carried_types()
        self.columns = columns(facts, fields.carried)
        self.facts = {FACTS_KEY: pickle.dumps(facts)} if _loads_model(factory) else None

    def __call__(self, batch: dict) -> Any:
        """The rows of a Ray Data batch's chunk groups (see ``table``)."""
        return self.table([ChunkRef(int(first), int(count), int(start), int(stop)) for first, count, start, stop
                           in zip(batch["first"], batch["count"], batch["start"], batch["stop"])])

    def table(self, groups: Sequence[ChunkRef]) -> Any:
        """The groups' rows as an Arrow table of the output's columns, with the worker's metric
        facts in its metadata when they load a model (the driver needs no probe of its own)."""
        rows: list[dict] = []
        for group in groups:
            rows += score_group(self.scorer, self.source, group, self.chunk_size)
        table = rows_table(self.columns, rows, self.text)
        return table if self.facts is None else table.replace_schema_metadata(self.facts)


class RayEngine:
    """Scores a streamed run's chunks on Ray (``streams.StreamRun``'s engine).

    Args:
        factory: builds the metrics in each worker (picklable: a function, a ``functools.partial``).
        workers: parallel workers (and, for a local cluster, its CPUs).
        address: a running cluster's address; None starts a local one.
        num_gpus: GPUs per worker (model-backed metrics).
        actors: an actor pool (each worker builds the metrics once) or plain tasks; default: actors.
        groups_per_worker: chunk groups each worker gets (more: finer balance, more reads).
    """

    name = "ray"

    def __init__(self, factory: MetricFactory, workers: int = 2, address: str | None = None, num_gpus: float = 0,
                 actors: bool = True, groups_per_worker: int = 4) -> None:
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        self.factory, self.workers, self.address = factory, workers, address
        self.num_gpus, self.actors, self.groups_per_worker = num_gpus, actors, groups_per_worker
        self._facts: list | None = None
        self._pool_alive = False

    @property
    def facts_from_rows(self) -> bool:
        """Whether a fresh run may start scoring before asking ``facts``: metrics with a model
        send theirs with the first scored batch."""
        return _loads_model(self.factory)

    def facts(self) -> list:
        """The metrics' facts: from metrics built here when the factory says they load no model
        (a ``MetricRecipe`` of text metrics: cheap, and the same on every machine), else from the
        workers (the driver loads no model, and a GPU worker's facts are its own): those that sent
        the first scored batch, or a probe task when no batch has come yet (a resumed run)."""
        if self._facts is None and not _loads_model(self.factory):
            self._facts = _describe(self.factory)
        if self._facts is None:
            if self._pool_alive and self.num_gpus:   # a probe could wait for the pool's GPUs forever
                raise RuntimeError("the Ray workers' first scored rows came without their metric facts "
                                   "(this Ray drops Arrow metadata): upgrade ray, or score without GPUs")
            self._facts = self._probe()
        return self._facts

    def _probe(self) -> list:
        """The facts of metrics built in a task that holds no CPU the pool could use, and whose
        worker exits after it (its model goes with it, from memory or the GPU)."""
        ensure_ray(self.address, self.workers)
        ray = _ray()
        describe = ray.remote(num_cpus=0, num_gpus=self.num_gpus, max_calls=1)(_describe)
        try:
            return ray.get(describe.remote(self.factory))
        except ray.exceptions.RayTaskError as exc:     # the metric's own error (a missing model), unwrapped
            if isinstance(getattr(exc, "cause", None), Exception):
                raise exc.cause from None
            raise

    def rows(self, source: Source, fields: FieldMap, refs: Iterable[ChunkRef]) -> Iterator[Any]:
        ensure_ray(self.address, self.workers)
        ray = _ray()
        refs = list(refs)
        if not refs:
            return
        chunk_size = max(r.count for r in refs)
        groups = group_refs(refs, self.workers * self.groups_per_worker)
        workers = min(self.workers, len(groups))     # a small file: no actor loads a model for nothing
        args = (self.factory, source, fields, chunk_size)
        if self.actors:
            ds = ray.data.from_items([{"first": g.first, "count": g.count, "start": g.start, "stop": g.stop}
                                      for g in groups], override_num_blocks=len(groups))
            # one group an actor at a time: an actor that starts first must not queue its
            # neighbour's groups while that one loads its model
            pool = ray.data.ActorPoolStrategy(size=workers, max_tasks_in_flight_per_actor=1)
            scored = ds.map_batches(_RefScorer, fn_constructor_args=args, batch_size=1, compute=pool,
                                    num_gpus=self.num_gpus or None, batch_format="numpy")
        else:
            yield from self._tasks(ray, groups, args, workers)
            return
        # Arrow tables of the output's columns: the output keeps them as they are
        self._pool_alive = True
        try:
            for table in scored.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=2):
                sent = (table.schema.metadata or {}).get(FACTS_KEY)
                if sent is not None:
                    if self._facts is None:
                        self._facts = pickle.loads(sent)
                    table = table.replace_schema_metadata(None)
                yield table
        except Exception:
            if self._facts is None:
                self._probe()    # a metric that cannot be built raises its own error here, not "actor died"
            raise
        finally:
            self._pool_alive = False

    @staticmethod
    def _tasks(ray: Any, groups: list, args: tuple, workers: int) -> Iterator[Any]:
        """Text metrics: one plain Ray task a group, ``workers`` at a time (the next group starts
        as soon as any finishes), results handed on in order. Not Ray Data: its executor and
        helper actors cost seconds of a small cluster's CPU that independent groups do not need."""
        score = ray.remote(num_cpus=1)(_score_group_task)
        following = iter(enumerate(groups))
        running: dict = {}                 # ref -> group number
        finished: dict[int, Any] = {}      # group number -> ref, until its turn
        turn = 0

        def submit() -> None:
            for k, group in following:
                running[score.remote(group, *args)] = k
                if len(running) >= workers:
                    return

        submit()
        try:
            while turn < len(groups):
                while turn not in finished:
                    (ready,), _ = ray.wait(list(running), num_returns=1)
                    finished[running.pop(ready)] = ready
                    submit()
                yield ray.get(finished.pop(turn))
                turn += 1
        finally:
            for ref in running:          # a run stopped early: the groups under way are dropped
                ray.cancel(ref)


def _score_group_task(group: ChunkRef, factory: MetricFactory, source: Source, fields: FieldMap,
                      chunk_size: int) -> Any:
    """One group's rows as an Arrow table (a plain task: text metrics, nothing worth keeping loaded)."""
    return _RefScorer(factory, source, fields, chunk_size).table([group])


def _loads_model(factory: MetricFactory) -> bool:
    """Whether the factory's metrics load a model (unknown factories: assume they do)."""
    return getattr(factory, "loads_model", True) is not False


def _describe(factory: MetricFactory) -> list:
    return [facts_of(m) for m in factory()]


# -- a Dataset the user already has ----------------------------------------------------------------


class _DatasetScorer:
    """Adds score, ``reason`` and statistics columns to each batch of a user's Dataset."""

    def __init__(self, factory: MetricFactory, fields: FieldMap) -> None:
        self.scorer = ChunkScorer(factory(), fields)
        self.columns: list[str] | None = None

    def __call__(self, batch: Any) -> Any:
        if self.columns is None:
            self.columns = [c for c in columns([facts_of(m) for m in self.scorer.metrics]) if c != "index"]
        added = rows_table(self.columns, self.scorer.score(Chunk(0, batch.to_pylist())))
        for name in self.columns:
            batch = batch.append_column(name if name not in batch.column_names else f"score.{name}", added[name])
        return batch


def score_dataset(ds: Any, factory: MetricFactory, *, fields: FieldMap | None = None, workers: int = 2,
                  num_gpus: float = 0, batch_size: int = 1024) -> Any:
    """``ds`` with every score as a column, plus ``reason`` and the summable statistics
    (``statistics.<metric>``), scored by an actor pool of ``workers`` (each builds the metrics
    once). Lazy, as Ray Data is: write it, or pass it to ``aggregate_dataset``."""
    ray = _ray()
    return ds.map_batches(_DatasetScorer, fn_constructor_args=(factory, fields or FieldMap()),
                          batch_size=batch_size, compute=ray.data.ActorPoolStrategy(size=workers),
                          num_gpus=num_gpus or None, batch_format="pyarrow")


def aggregate_dataset(scored: Any, facts: Sequence[Any]) -> StreamResult:
    """Means and corpus scores (from the summed statistics) of a Dataset ``score_dataset`` made,
    added in the Dataset's order. ``facts``: the metrics' ``facts`` (``[m.facts for m in factory()]``)."""
    aggregator = Aggregator(facts)
    names = {s.name for f in facts for s in f.scores} | {"reason"}
    for batch in scored.iter_batches(batch_format="pyarrow", batch_size=65536):
        keep = [c for c in batch.column_names if c in names or c.startswith("statistics.")]
        for row in batch.select(keep).to_pylist():
            aggregator.add(row)
    return StreamResult(items=aggregator.rows, unscored=aggregator.unscored, aggregate=aggregator.aggregate(),
                        counts=aggregator.counts(), signatures={f.metric: str(f.signature) for f in facts},
                        unscored_reasons=dict(aggregator.unscored_reasons))
