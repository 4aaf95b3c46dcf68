"""Read experiments for comparison from the local store, from the record files ``opik-metrics
score --input ... --output`` writes, or, through its SDK, from an Opik server; all give the same
ExperimentRecords, so the report is the same whichever it came from.
"""
from __future__ import annotations

import math
import os
from math import isfinite
from typing import Any, Sequence

from opik_metrics.core.numbers import is_number
from opik_metrics.experiments.opik_server import OpikServerError, client_url, server_errors, within_deadline
from opik_metrics.experiments.store import ExperimentStore
from opik_metrics.experiments.summary import item_keys
from opik_metrics.compare.reading.columnar_trials import merged_items
from opik_metrics.compare.reading.records import ExperimentRecords, ItemRecord, check_formulas, no_gc
from opik_metrics.metric_kit.server_range import UNSENT_KEY
from opik_metrics.streams.output import OUTPUT_FORMATS, output_format, read_metadata, read_rows
from opik_metrics.streams.ids import TRIAL_COLUMN
from opik_metrics.scoring.rows import statistics_column

RECORD_FILE_SUFFIXES = tuple(OUTPUT_FORMATS)


class RecordFileError(ValueError):
    """A record file that cannot be compared (no metadata, no ids, a repeated id)."""


def is_record_file(name: str) -> bool:
    """Whether a name given to ``compare`` is a record file (an existing .jsonl or .parquet file)
    rather than an experiment's name."""
    return name.lower().endswith(RECORD_FILE_SUFFIXES) and os.path.isfile(name)


def non_finite_kind(value: Any) -> str:
    """"inf", "-inf" or "nan" (NaN, or no number at all) for a value that is not a finite number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return "nan"


def from_store(store: ExperimentStore, name: str) -> ExperimentRecords:
    """Experiment ``name`` from the local store (ExperimentNotFound names the stored ones)."""
    info = store.info(name)
    check_formulas(info.name, info.config)        # a store someone else wrote: refused before reading items
    items = []
    score_metrics: dict[str, str] = {}
    for stored in store.items(info.id):
        failed = stored.status == "failed"
        record = ItemRecord(key=stored.key, position=stored.position, input=stored.input,
                            output=stored.output, failed=failed,
                            stage=stored.failure_stage if failed else None,
                            reason=stored.failure if failed else None)
        if stored.status == "pending" or stored.status == "output":
            record.failed, record.stage = True, "unfinished"
            record.reason = f"not scored yet (status {stored.status}): the run was interrupted; re-run it to resume"
        for score in stored.scores.values():
            score_metrics[score.name] = score.metric
            record.metadata[score.name] = score.metadata or {}
            unsent = score.failed and UNSENT_KEY in (score.metadata or {})   # not sent to Opik, still its value
            if score.failed and not unsent:
                record.score_failures[score.name] = score.reason or "scoring failed with no reason given"
                continue
            value = float(score.metadata[UNSENT_KEY]) if unsent else score.value
            if is_number(value):
                record.scores[score.name] = float(value)
            else:                   # the metric gave inf or NaN: counted and noted, not averaged
                record.non_finite[score.name] = score.non_finite or non_finite_kind(value)
        items.append(record)
    corpus_meta = {s.name: s.metadata or {} for s in store.experiment_score_rows(info.id)}
    return ExperimentRecords(name=info.name, source=f"local store {store.path}", dataset=info.dataset,
                             status=info.status, config=info.config, items=items,
                             experiment_scores=dict(info.experiment_scores), experiment_score_metadata=corpus_meta,
                             score_metrics=score_metrics)


def from_records(path: str) -> ExperimentRecords:
    """The rows of a record file (``score --input ... --output``) as an experiment named ``path``:
    each row an item keyed by its id, its scores, its statistics under the score that carries
    them, and the metrics' facts from the file's metadata (so corpus scores are recomputed from
    the statistics, as for a stored experiment). Rows sharing an id are trials of one item when the
    file keeps a ``trial`` column (the comparison merges them); otherwise a file without metadata or
    ids, or with an id twice, raises RecordFileError naming it."""
    metadata = read_metadata(path)
    if metadata is None:
        raise RecordFileError(f"{path} has no opik-metrics metadata: it was not written by `opik-metrics score "
                              "--input ... --output` (or by an older version); score its input again")
    id_field = metadata.get("id_field")
    if not isinstance(id_field, str) or not id_field:
        raise RecordFileError(f"{path} has no record ids, so its rows cannot be paired with another run's: score "
                              "its input again with --id-field COLUMN (or give its records an `id`)")
    keep = [str(c) for c in metadata.get("keep") or []]
    config: dict[str, Any] = {"metrics": metadata.get("metrics") or {}, "versions": metadata.get("versions") or {},
              "input": metadata.get("input"), "id_field": id_field, "keep": keep,
              "fields": metadata.get("fields") or {}}
    check_formulas(path, config, where=path)      # a file someone else wrote: refused before reading rows
    records = ExperimentRecords(name=path, source=f"record file {path}", dataset=f"records by {id_field}",
                                status="finished", config=config, items=[])
    score_metrics = {s.name: facts.metric for facts in records.facts.values() for s in facts.scores}
    carriers = {statistics_column(facts.metric): sorted({c.carrier for c in facts.own_corpora})
                for facts in records.facts.values() if facts.own_corpora}
    output_column = ((config["fields"].get("output") or ["output"]) + ["output"])[0]
    skip = {"index", "reason", id_field, *keep, *carriers}
    inputs = [c for name in ("reference", "source", "image") for c in config["fields"].get(name) or [name] if c in keep]
    merged = merged_items(path, id_field, keep, output_column, skip, carriers, inputs) \
        if output_format(path) == "parquet" else None
    if merged is not None:               # the usual Parquet file with trials: merged in columns
        records.items = merged
    else:
        seen: dict[Any, Any] = {}
        with no_gc():
            for number, row in enumerate(read_rows(path)):
                records.items.append(_record_item(row, id_field, keep, output_column, skip, carriers, path))
                _check_trials(records.items[-1], number, row, keep, inputs, seen, path)
    records.score_metrics = score_metrics
    return records


def _check_trials(item: ItemRecord, number: int, row: dict, keep: list[str], inputs: list[str],
                  seen: dict[Any, Any], path: str) -> None:
    """Refuse a row whose id another row has, unless they are trials of one item: a ``trial`` column
    kept, each (id, trial) once, and the same kept input columns (reference, source, image) on
    every trial of an id (they are runs on one input; the comparison averages them). ``seen``
    holds the first row of each id (its number in the file, position, trial and inputs) and of each
    (id, trial)."""
    trial, values = row.get(TRIAL_COLUMN), tuple(row.get(c) for c in inputs)
    first = seen.setdefault(item.key, (number, item.position, trial, values))
    if first[0] == number:
        seen[(item.key, trial)] = item.position
        return
    rows = f"rows {first[1] + 1} and {item.position + 1}"
    if TRIAL_COLUMN not in keep:
        raise RecordFileError(f"{path}: id {item.key!r} is on {rows}; ids must be "
                              f"unique to pair records, unless the rows are trials of one item: keep a "
                              f"{TRIAL_COLUMN!r} column (score --keep {TRIAL_COLUMN})")
    again = seen.get((item.key, trial))
    seen[(item.key, trial)] = item.position
    if again is not None:
        raise RecordFileError(f"{path}: id {item.key!r}, trial {trial!r} is on rows {again + 1} and "
                              f"{item.position + 1}; each trial of an item is one row (was a row copied?)")
    differ = next((c for c, a, b in zip(inputs, first[3], values) if a != b), None)
    if differ is not None:
        raise RecordFileError(f"{path}: id {item.key!r}: trials {first[2]!r} and {trial!r} ({rows}) have different "
                              f"{differ!r}; the trials of an item are runs on one input, averaged as one item: "
                              "give items with different inputs their own ids")


def _record_item(row: dict, id_field: str, keep: list[str], output_column: str, skip: set[str],
                 carriers: dict[str, list[str]], path: str) -> ItemRecord:
    """One row of a record file as an item (see ``from_records``)."""
    position = int(row["index"])
    value = row.get(id_field)
    # a record the run could not read has no id: a failed item of its own
    key = f"(no id: record {position + 1})" if value is None else str(value)
    kept = {c: row.get(c) for c in keep}
    output = {"output": kept[output_column]} if output_column in kept else {}
    record = ItemRecord(key=key, position=position, input={id_field: value, **kept}, output=output)
    reason = row.get("reason")
    values = {name: value for name, value in row.items() if name not in skip}
    if not any(value is not None for value in values.values()):
        record.failed, record.stage = True, "scoring"
        record.reason = reason or "no score recorded for this record"
        return record
    scores = record.scores
    for name, value in values.items():
        if type(value) is float and isfinite(value):     # the usual case, is_number's answer without its calls
            scores[name] = value
        elif value is None:
            record.score_failures[name] = reason or "no value recorded"
        elif is_number(value):
            scores[name] = float(value)
        else:
            record.non_finite[name] = non_finite_kind(value)
    for column, names in carriers.items():
        statistics = row.get(column)
        scored = [carrier for carrier in names if carrier in record.scores]
        if statistics is None and scored:      # `score` writes the statistics of every item it scored
            raise RecordFileError(f"{path}: item {key} (row {position + 1}) has {scored[0]} but no {column}: "
                                  "`score` writes both; the record was edited or damaged (score it again)")
        if statistics is not None:
            for carrier in names:
                # kept as recorded (a damaged row is refused, naming its item, by the comparison)
                record.metadata.setdefault(carrier, {})["statistics"] = \
                    list(statistics) if isinstance(statistics, (list, tuple)) else statistics
    return record


def opik_experiment(client: Any, name: str, project_name: str | None = None) -> Any:
    """The one experiment called exactly ``name`` on the server of ``client`` (an ``opik.Opik``);
    OpikServerError (one line) when there is none or there are several."""
    import opik

    url = client_url(client)
    try:
        found = [e for e in within_deadline(lambda: client.get_experiments_by_name(name, project_name=project_name),
                                            url, f"searching for experiment {name!r} (experiments/stream)")
                 if e.name == name]
    except opik.exceptions.ExperimentNotFound:
        found = []
    where = f"the Opik server at {url}" if url else "the Opik server"
    if any(not isinstance(e.id, str) or not e.id for e in found):
        raise OpikServerError(f"Opik server at {url or '(unknown URL)'} answered the search for experiment "
                              f"{name!r} (experiments/stream) with an experiment without an id: it is not the "
                              "answer Opik's API gives; check that the server's version matches the opik "
                              "package; nothing was read or written", url)
    if not found:
        raise OpikServerError(f"experiment {name!r} is not on {where}"
                              + (f" in project {project_name!r}" if project_name else "")
                              + ": check the name, or push it from the local store (`opik-metrics experiments push`)",
                              url)
    if len(found) > 1:
        raise OpikServerError(f"{len(found)} experiments on {where} are named {name!r}: this needs one experiment "
                              "a name; rename the others in the Opik UI", url)
    return found[0]


def from_opik(client: Any, name: str, project_name: str | None = None) -> ExperimentRecords:
    """Experiment ``name`` from an Opik server through ``client`` (an ``opik.Opik``).

    Opik keeps feedback scores without their metadata; each metric's span keeps the ScoreResults
    it returned, so the items' statistics (for corpus scores on each resample) are read from the
    spans of each item's trace, for the metrics whose recorded facts name a corpus score.
    """
    experiment = opik_experiment(client, name, project_name)
    url = client_url(client)
    with server_errors(url, f"reading experiment {name!r} (GET experiments/{experiment.id})"):
        data = experiment.get_experiment_data()
    config = data.metadata if isinstance(data.metadata, dict) else {}
    check_formulas(name, config)          # metadata someone else wrote: refused before reading items
    with server_errors(url, f"reading the items of experiment {name!r} (the dataset's compare view)"):
        contents = sorted(experiment.get_items(max_results=None), key=lambda c: str(c.dataset_item_id))
    # one key per dataset item: its trials (trial_count) share it, and the comparison merges them
    first: dict[Any, int] = {}
    for k, c in enumerate(contents):
        first.setdefault(c.dataset_item_id, k)
    inputs = [_item_input(c) for c in contents]
    unique_keys = dict(zip(first, item_keys([inputs[k] for k in first.values()])))
    positions = {item_id: n for n, item_id in enumerate(first)}
    items = [_opik_item(unique_keys[c.dataset_item_id], positions[c.dataset_item_id], item_input, c)
             for item_input, c in zip(inputs, contents)]
    scores = {s.name: s.value for s in (data.experiment_scores or []) if s.name}
    records = ExperimentRecords(
        name=name, source=_server_name(client),
        dataset=data.dataset_name or experiment.dataset_name, status=str(data.status or "finished"),
        config=config, items=items, experiment_scores={k: v for k, v in scores.items() if is_number(v)},
        failed_elsewhere=int(config.get("failed_items") or 0))
    _add_span_metadata(client, records, contents, project_name)
    return records


def _server_name(client: Any) -> str:
    url = client_url(client)
    return f"Opik server at {url}" if url else "Opik server"


def _item_input(content: Any) -> dict:
    data = dict(content.dataset_item_data or {})
    if data.get("id") == content.dataset_item_id:
        data.pop("id")   # the SDK may echo the item id inside its data; the content is what pairs items
    return data


def _opik_item(key: str, position: int, item_input: dict, content: Any) -> ItemRecord:
    output = content.evaluation_task_output
    record = ItemRecord(key=key, position=position, input=item_input,
                        output=output if isinstance(output, dict) else None, trace_id=content.trace_id)
    if record.output is None:
        record.failed, record.stage = True, "task"
        record.reason = "no task output recorded on the server (the task failed for this item)"
    for score in content.feedback_scores or []:
        value = score.get("value")
        if is_number(value):
            record.scores[score["name"]] = float(value)
        elif isinstance(value, float):
            record.non_finite[score["name"]] = non_finite_kind(value)
        else:
            record.score_failures[score["name"]] = score.get("reason") or f"score value {value!r} is not a number"
    return record


def _add_span_metadata(client: Any, records: ExperimentRecords, contents: Sequence[Any],
                       project_name: str | None) -> None:
    """Score metadata (statistics included) from the metric spans of each item's trace."""
    metrics = {name for name, facts in records.facts.items() if facts.own_corpus is not None}
    if not metrics:
        return
    url = client_url(client)
    for item, content in zip(records.items, contents):
        if item.failed or not content.trace_id:
            continue
        spans = within_deadline(
            lambda: client.search_spans(project_name=project_name, trace_id=content.trace_id, truncate=False),
            url, f"reading the metric spans of experiment {records.name!r}, trace {content.trace_id} (spans/search)")
        for span in spans or []:
            if span.name not in metrics or not isinstance(span.output, dict):
                continue
            results = span.output.get("output")
            for result in results if isinstance(results, list) else [results]:
                if isinstance(result, dict) and result.get("name") in item.scores \
                        and isinstance(result.get("metadata"), dict):
                    item.metadata[result["name"]] = result["metadata"]


def load_experiments(names: Sequence[str], *, store: ExperimentStore | None = None, client: Any = None,
                     project_name: str | None = None) -> list[ExperimentRecords]:
    """Each named experiment, from ``store`` or (when given) the Opik ``client``."""
    if (store is None) == (client is None):
        raise ValueError("give exactly one source: a local store or an Opik client")
    if client is not None:
        return [from_opik(client, name, project_name) for name in names]
    assert store is not None
    return [from_store(store, name) for name in names]


def require_pushed(store: Any, names: list[str]) -> None:
    """Raise ValueError naming the push command for each experiment that is only in ``store``
    (an ExperimentStore): publishing writes onto experiments on the server."""
    unpushed = [name for name in names if not store.info(name).pushed_at]
    if unpushed:
        commands = "; ".join(f"opik-metrics experiments push {n} --store {store.path}" for n in unpushed)
        raise ValueError(f"{', '.join(unpushed)} {'is' if len(unpushed) == 1 else 'are'} only in the local store "
                         f"{store.path}; publishing writes onto experiments on an Opik server: push "
                         f"{'it' if len(unpushed) == 1 else 'them'} first ({commands}), then publish again")


def load_compared(names: Sequence[str], *, store: str | os.PathLike | None = None, opik: bool = False,
                  project_name: str | None = None, publishing: bool = False, check_pushed: bool = False,
                  local_advice: str = 'or pass store=PATH to compare experiments of the local store'
                  ) -> tuple[list[ExperimentRecords], str]:
    """The named experiments and their source in words. Record files (existing ``.jsonl`` /
    ``.parquet`` files that ``score --output`` wrote) are read by themselves, with no store and no
    server; other names are experiments of the local store (``store``, or the default store when no
    server is configured) or of the Opik server (``opik``, or the configured one). ``publishing``
    (into Opik, or its dry run) refuses record files; ``check_pushed`` checks that stored
    experiments were pushed."""
    from opik_metrics.experiments.opik_server import choose_backend

    absent = [name for name in names if name.lower().endswith(RECORD_FILE_SUFFIXES) and not os.path.exists(name)]
    if absent and store is None and not opik:     # a CI step that wrote no file: say so, not "no store here"
        raise RecordFileError(f"no such record file: {absent[0]} (compare reads the .jsonl or .parquet files that "
                              "`score --output` writes: check the path, or the step that should have written it)")
    files = [name for name in names if is_record_file(name)]
    if files:
        if len(files) < len(names):
            other = next(name for name in names if name not in files)
            raise ValueError(f"{other!r} is not a record file (an existing .jsonl or .parquet file) but {files[0]} "
                             "is: record files pair their rows by id, stored experiments their items by content; "
                             "compare record files with record files")
        if publishing:
            raise ValueError(f"--publish writes onto experiments on the Opik server; {files[0]} is a record file")
        return [from_records(name) for name in files], "record files"
    if store is not None and opik:
        raise ValueError("give one source: a local store or the Opik server, not both")
    backend = choose_backend("local" if store is not None else ("opik" if opik else "auto"), local_advice=local_advice)
    if backend.kind == "opik":
        import opik as opik_sdk     # only for a server: reading the store or files never loads opik

        client = opik_sdk.Opik(project_name=project_name)
        return load_experiments(names, client=client, project_name=project_name), backend.reason
    with ExperimentStore(store, create=False) as opened:
        if check_pushed:
            require_pushed(opened, list(names))
        return load_experiments(names, store=opened), f"local store {opened.path}"
