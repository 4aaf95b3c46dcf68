"""``opik-metrics agreement``: which of an experiment's scores agrees best with a human score
(Kendall tau-b and tau-c, Spearman, Pearson, with bootstrap intervals), from the local store, an
Opik server, a record file or anyone's scored table (JSON Lines, CSV, Parquet: ``--metric COLUMN``
names its metric columns); given several experiments, raters, levels, a ``--system`` column or
--compare-metrics, the meta-evaluation (``opik_metrics.meta_evaluation.evaluation``); several
``--dimension``s, one of either per dimension; ``--pairs``, WMT's DARR Kendall-like tau."""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from opik_metrics.cli.errors import CLIError
from opik_metrics.cli.options import add_store_argument, check_work_bounds

#: A dimension's name is a folder of ``--output`` DIR: letters, digits and ._- only.
_DIMENSION_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def _dimensions(args: argparse.Namespace) -> list[tuple[str | None, list[str]]]:
    """(name, human columns) for each human dimension: ``--dimension NAME`` (its column: a number,
    or a list of numbers one per rater) or ``--dimension NAME=COL,COL`` (one rater column each);
    without --dimension, one unnamed dimension: ``--human``'s columns (repeated: the raters of one
    score), or none with --ratings."""
    given = args.dimension or []
    if not given:
        return [(None, list(args.human or []))]
    clash = next((flag for flag, on in (("--human", args.human), ("--ratings", args.ratings),
                                        ("--publish", args.publish)) if on), None)
    if clash == "--publish":
        raise CLIError("--publish writes one human score's agreement onto an experiment (its score names carry no "
                       "dimension): publish one --human at a time")
    if clash is not None:
        raise CLIError(f"--dimension with {clash}: name the human scores one way: --human SCORE for one score "
                       "(repeated: its raters' columns), --dimension NAME for each of several (NAME=COL,COL "
                       "for one whose raters are columns)")
    out: list[tuple[str | None, list[str]]] = []
    for text in given:
        name, sep, columns = text.partition("=")
        raters = [c.strip() for c in columns.split(",")] if sep else [name]
        if not _DIMENSION_NAME.match(name) or (sep and not all(raters)):
            raise CLIError(f"--dimension {text!r}: expected NAME (a human column) or NAME=COLUMN,COLUMN (its raters' "
                           "columns); NAME in letters, digits, '_', '.', '-' (it names the dimension's report folder)")
        if any(name == n for n, _ in out):
            raise CLIError(f"--dimension {name} is given twice; name each dimension once")
        out.append((name, raters))
    return out


def _meta_asked(args: argparse.Namespace, dimensions: list[tuple[str | None, list[str]]]) -> bool:
    """Whether anything beyond one experiment's pooled agreement with one human score is asked."""
    return (len(args.name) > 1 or bool(args.level and args.level != ["pooled"]) or bool(args.group_by)
            or bool(args.system) or args.compare_metrics or any(len(h) > 1 for _, h in dimensions)
            or bool(args.ratings) or args.labels or bool(args.threshold))


@dataclass
class _Loaded:
    """The experiments read, the scores to negate when they state no direction (a scored table;
    None: their own), and what the result should say about how they were read."""

    records: list
    lower: set[str] | None = None
    notes: list[str] = field(default_factory=list)
    unrated: dict[str, list[str]] = field(default_factory=dict)    # human column -> notes


def _load(args: argparse.Namespace, humans: list[str]) -> _Loaded:
    """Record files, stored or Opik experiments (``load_compared``), or scored tables (files with
    no record header, read with --metric's columns)."""
    from opik_metrics.meta_evaluation.scored_table import direction_note, is_scored_table, read_scored_table

    tables = [n for n in args.name if is_scored_table(n)]
    if not tables:
        flag = "--lower-is-better" if args.lower_is_better else "--id-field" if args.id_field else None
        if flag is not None:
            raise CLIError(f"{flag} is for a scored table's columns (a file with no record header); "
                           f"{args.name[0]} states its scores' direction and ids itself")
        from opik_metrics.compare.reading.sources import load_compared

        records, _ = load_compared(args.name, store=args.store, opik=args.opik, project_name=args.project,
                                   publishing=args.publish, check_pushed=args.publish,
                                   local_advice="or pass --store PATH to read an experiment of the local store")
        _read_annotators(records, args, humans)
        return _Loaded(records)
    if len(tables) < len(args.name):
        other = next(n for n in args.name if n not in tables)
        raise CLIError(f"{tables[0]} is a scored table (no record header) but {other} is not: give several systems "
                       "all as tables, all as record files or all as experiments")
    if args.publish:
        raise CLIError(f"--publish writes onto experiments on the Opik server; {tables[0]} is a table file")
    if not args.metric:
        from opik_metrics.streams.sources import open_source

        first = next(open_source(tables[0]).chunks(1), None)
        columns = ", ".join(map(str, first.records[0])) if first and isinstance(first.records[0], dict) else "none"
        raise CLIError(f"{tables[0]} has no record header (`opik-metrics score --output` writes one): to read it as a "
                       "scored table, name its metric columns with --metric COLUMN (repeatable; --lower-is-better "
                       f"COLUMN for one where lower is better, --id-field COLUMN for its ids, default id); its "
                       f"columns are {columns}")
    loaded = _Loaded([])
    for path in tables:
        table = read_scored_table(path, args.metric, lower_is_better=args.lower_is_better or (),
                                  id_field=args.id_field or "id", human=humans,
                                  unique_ids=not (args.system or args.group_by), progress=sys.stderr.isatty())
        loaded.records.append(table.records)
        loaded.lower = table.lower_is_better
        if not loaded.notes:
            loaded.notes.append(direction_note(table))
        for column, n in table.unrated.items():
            loaded.unrated.setdefault(column, []).append(f"{path}: {n} row(s) have no {column!r} rating: left out of "
                                                         "its correlations")
    return loaded


def cmd_meta(args: argparse.Namespace, loaded: _Loaded, human: list[str]) -> Any:
    """Levels, several experiments or raters, metric-vs-metric tests: the meta-evaluation."""
    from opik_metrics.meta_evaluation.evaluation import meta_evaluate
    from opik_metrics.meta_evaluation.table import rated_table, ratings_file

    settings = _meta_settings(args)
    long = ratings_file(args.ratings) if args.ratings else None
    table = rated_table(loaded.records, human, args.metric, group_by=args.group_by, system=args.system,
                        long_ratings=long, lower_is_better=loaded.lower)
    result = meta_evaluate(table, settings, progress=sys.stderr.isatty())
    result.notes += [*loaded.notes, *(n for h in human for n in loaded.unrated.get(h, []))]
    return result


def _meta_settings(args: argparse.Namespace) -> Any:
    from opik_metrics.compare.statistics.bootstrap import resamples_for
    from opik_metrics.meta_evaluation.evaluation import MetaSettings
    from opik_metrics.meta_evaluation.metric_agreement import DEFAULT_METHODS, too_few_resamples

    settings = MetaSettings(levels=tuple(dict.fromkeys(args.level or ["pooled"])),
                            methods=tuple(dict.fromkeys(args.method)) if args.method else DEFAULT_METHODS,
                            resamples=args.resamples, seed=args.seed, confidence=args.confidence,
                            compare_metrics=args.compare_metrics, permutations=args.permutations,
                            labels=True if args.labels else None, thresholds=_thresholds(args.threshold),
                            raters=args.raters, group_by=args.group_by, ratings_file=args.ratings,
                            system=args.system)
    settings.check()
    if args.group_by and not args.system and "system" in settings.levels:
        raise ValueError("--level system needs systems (several experiments); the outputs --group-by collects "
                         "under one item are not systems unless --system FIELD names each row's system")
    if settings.resamples < resamples_for(1.0 - settings.confidence):
        raise ValueError(f"--resamples: {too_few_resamples(settings.resamples, 1.0 - settings.confidence)}")
    if settings.compare_metrics and settings.permutations < resamples_for(1.0 - settings.confidence):
        raise ValueError("--permutations: "
                         + too_few_resamples(settings.permutations, 1.0 - settings.confidence, "permutations"))
    return settings


def _agreement_settings(args: argparse.Namespace) -> Any:
    from opik_metrics.compare.statistics.bootstrap import resamples_for
    from opik_metrics.meta_evaluation.metric_agreement import DEFAULT_METHODS, AgreementSettings, too_few_resamples

    methods = tuple(dict.fromkeys(args.method)) if args.method else DEFAULT_METHODS
    settings = AgreementSettings(methods=methods, raters=args.raters, resamples=args.resamples, seed=args.seed,
                                 confidence=args.confidence)
    settings.check()
    if settings.resamples < resamples_for(1.0 - settings.confidence):
        raise ValueError(f"--resamples: {too_few_resamples(settings.resamples, 1.0 - settings.confidence)}")
    return settings


def cmd_pooled(args: argparse.Namespace, loaded: _Loaded, human: str) -> Any:
    """One experiment's pooled agreement with one human score (``agreement_of``)."""
    from opik_metrics.meta_evaluation.source import agreement_of

    [records] = loaded.records
    result = agreement_of(records, human, args.metric, _agreement_settings(args), progress=sys.stderr.isatty(),
                          lower_is_better=loaded.lower)
    _note_labels(result, records, human)
    result.notes += [*loaded.notes, *loaded.unrated.get(human, [])]
    return result


def _write_report(result: Any, folder: str) -> Any:
    from opik_metrics.meta_evaluation.evaluation import MetaEvaluation

    files: Any
    try:
        if isinstance(result, MetaEvaluation):
            from opik_metrics.meta_evaluation.meta_report import write_meta_report

            files = write_meta_report(result, folder)
        else:
            from opik_metrics.meta_evaluation.report import write_agreement_report

            files = write_agreement_report(result, folder)
    except OSError as exc:
        raise ValueError(f"cannot write the report to {folder}: {exc}") from None
    if files.note is not None:
        print(f"opik-metrics: note: the report has {files.note}", file=sys.stderr)
    return files


def _publish(args: argparse.Namespace, result: Any, records: list) -> None:
    from opik_metrics.meta_evaluation.evaluation import MetaEvaluation

    say = sys.stderr if args.format == "json" else sys.stdout      # stdout holds the JSON alone
    if isinstance(result, MetaEvaluation):
        from opik_metrics.meta_evaluation.publish import publish_meta

        for experiment in records:
            published = publish_meta(result, experiment.name, project_name=args.project)
            print(f"{'published' if published.written else 'unchanged'}: {len(published.scores)} meta-evaluation "
                  f"score(s) on experiment {experiment.name}", file=say)
            for score, (theirs, ours) in published.kept.items():
                print(f"{experiment.name}: {score} was logged before as {theirs:.6g}; kept (this meta-evaluation "
                      f"has {ours:.6g})", file=say)
        return
    from opik_metrics.meta_evaluation.publish import publish_agreement

    [experiment] = records
    published = publish_agreement(result, experiment.name, project_name=args.project)
    print(f"{'published' if published.written else 'unchanged'}: {len(published.scores)} agreement score(s) on "
          f"experiment {experiment.name}", file=say)
    for score, (theirs, ours) in published.kept.items():
        print(f"{experiment.name}: {score} was logged before as {theirs:.6g}; kept (this agreement has {ours:.6g})",
              file=say)


def _emit_one(args: argparse.Namespace, result: Any, records: list) -> None:
    """One dimension: the table or JSON, the report, the publish, as they always were."""
    files = _write_report(result, args.output) if args.output else None
    if args.format == "json":
        sys.stdout.write(result.to_json())
    else:
        sys.stdout.write(result.format_table())
        if files is not None:
            print(f"\nreport: {files.html}\ndata:   {files.json}")
    if args.publish:
        _publish(args, result, records)


#: The one file of ``--output DIR`` that holds every dimension's result.
DIMENSIONS_JSON = "dimensions.json"


def _emit_dimensions(args: argparse.Namespace, results: list[tuple[str, list[str], Any]]) -> None:
    """Several dimensions: one table each (or one JSON holding all), and with --output a report
    folder per dimension beside DIR/dimensions.json."""
    document = {"dimensions": {name: result.to_dict() for name, _, result in results},
                "human_columns": {name: human for name, human, _ in results}}
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    reports = {}
    if args.output:
        from pathlib import Path

        from opik_metrics.core.report_files import real_folder, write_in_place

        for name, _, result in results:
            reports[name] = _write_report(result, os.path.join(args.output, name))
        try:
            write_in_place(real_folder(Path(args.output)) / DIMENSIONS_JSON, text)
        except OSError as exc:
            raise ValueError(f"cannot write the report to {args.output}: {exc}") from None
    if args.format == "json":
        sys.stdout.write(text)
        return
    for k, (name, human, result) in enumerate(results):
        columns = f"column {human[0]}" if human == [name] else f"rater columns {', '.join(human)}"
        sys.stdout.write(("\n" if k else "") + f"== dimension {name} ({columns}) ==\n" + result.format_table())
        if name in reports:
            print(f"report: {reports[name].html}")
    if args.output:
        print(f"\ndata of every dimension: {os.path.join(args.output, DIMENSIONS_JSON)}")


def _note_labels(result: Any, records: Any, human: str) -> None:
    """Ratings that are two integers (yes/no votes) are labels: say that --labels scores them as such."""
    import numpy as np

    from opik_metrics.compare.statistics.trials import merge_trials
    from opik_metrics.meta_evaluation.labels import is_labels
    from opik_metrics.meta_evaluation.source import human_ratings

    values = np.array([v for ratings in human_ratings(merge_trials(records), human).values() for v in ratings])
    if is_labels(values):
        result.notes.append(f"{human} holds two labels ({', '.join(f'{v:g}' for v in np.unique(values))}): "
                            "--labels adds accuracy, Cohen's kappa and F1 against each metric's labels")


def _thresholds(given: list[str] | None) -> tuple[tuple[str, float], ...]:
    out = []
    for text in given or []:
        name, sep, value = text.rpartition("=")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not sep or not name or number != number:
            raise ValueError(f"--threshold {text!r}: expected METRIC=NUMBER, e.g. clip_s=0.75")
        out.append((name, number))
    return tuple(out)


def _read_annotators(records: list, args: argparse.Namespace, humans: list[str]) -> None:
    """An Opik experiment's human score, read per author (``value_by_author``): one rater each."""
    opik_read = [r for r in records if any(item.trace_id for item in r.items)]
    if not opik_read or args.ratings:
        return
    from opik_metrics.meta_evaluation.opik_authors import read_authors

    for experiment in opik_read:
        read_authors(experiment, humans, project_name=args.project, progress=sys.stderr.isatty())


def _check_names(args: argparse.Namespace) -> None:
    """What the shared reader would say in compare's words, said in agreement's: a record file or
    table that does not exist, a record file beside a stored experiment."""
    from opik_metrics.compare.reading.sources import is_record_file
    from opik_metrics.meta_evaluation.scored_table import TABLE_SUFFIXES, is_scored_table

    absent = [n for n in args.name if n.lower().endswith(TABLE_SUFFIXES) and not os.path.exists(n)]
    if absent and args.store is None and not args.opik:
        raise CLIError(f"no such record file: {absent[0]} (agreement reads the .jsonl or .parquet files that "
                       "`score --output` writes, or a scored table (.jsonl, .csv, .parquet) with --metric COLUMN: "
                       "check the path, or the step that should have written it)")
    files = [n for n in args.name if is_record_file(n) or is_scored_table(n)]
    if files and len(files) < len(args.name):
        other = next(n for n in args.name if n not in files)
        raise CLIError(f"{other!r} is not a record file (an existing .jsonl or .parquet file) but {files[0]} is: "
                       "agreement reads several systems either all from record files or all from experiments")


#: The pairs file's columns (any case): the better and worse item, and the segment they belong to.
PAIR_COLUMNS = ("better", "worse")
SEGMENT_COLUMNS = ("segment", "sid")


def _pair_column(row: dict, names: tuple[str, ...]) -> str | None:
    lowered = {str(k).lower(): k for k in row}
    return next((lowered[n] for n in names if n in lowered), None)


def _read_pairs(path: str, with_system: bool) -> list[tuple[int, str | None, str, str]]:
    """(row number, segment or None, better, worse) of each row of the pairs file."""
    from opik_metrics.streams.sources import BadRecord, open_source

    out = []
    for chunk in open_source(path).chunks(10_000):
        for number, row in enumerate(chunk.records, start=chunk.first + 1):
            if isinstance(row, BadRecord):
                raise ValueError(f"{path}: record {number}: {row.reason}")
            names = {n: _pair_column(row, (n,)) for n in PAIR_COLUMNS}
            segment = _pair_column(row, SEGMENT_COLUMNS)
            lacking = [n for n, column in names.items() if column is None]
            if lacking or (with_system and segment is None):
                need = "better, worse and segment (with --system)" if with_system else "better and worse"
                raise ValueError(f"{path}: row {number}: no {(lacking or ['segment'])[0]!r} column; a pairs file "
                                 f"has the columns {need}; its columns are {', '.join(map(str, row)) or 'none'}")
            values = {n: row[c] for n, c in names.items()}
            if segment is not None:
                values["segment"] = row[segment]
            empty = [n for n, v in values.items() if v is None or (isinstance(v, str) and not v.strip())
                     or isinstance(v, (dict, list))]
            if empty:
                raise ValueError(f"{path}: row {number}: no value in {empty[0]!r}")
            text = {n: v if isinstance(v, str) else json.dumps(v) for n, v in values.items()}
            if text["better"] == text["worse"]:
                raise ValueError(f"{path}: row {number}: better and worse are both {text['better']!r}")
            out.append((number, text.get("segment"), text["better"], text["worse"]))
    if not out:
        raise ValueError(f"{path} holds no pairs")
    return out


def cmd_pairs(args: argparse.Namespace) -> int:
    """``--pairs FILE``: WMT's DARR Kendall-like tau of each metric on the human pairs."""
    given = [flag for flag, on in (("--human", args.human), ("--dimension", args.dimension),
                                   ("--ratings", args.ratings), ("--level", args.level), ("--method", args.method),
                                   ("--compare-metrics", args.compare_metrics), ("--labels", args.labels),
                                   ("--threshold", args.threshold), ("--publish", args.publish),
                                   ("--raters pairs", args.raters != "mean")) if on]
    if given:
        raise CLIError(f"--pairs with {given[0]}: the pairs are the human judgement and DARR's tau is its own "
                       "statistic; leave " + given[0] + " out")
    if len(args.name) != 1:
        raise CLIError(f"--pairs reads one file of scored items; got {len(args.name)} (several systems: one file "
                       "with --system FIELD, the pairs naming a segment and two systems)")
    if args.group_by and not args.system:
        raise CLIError("--pairs with --group-by: the pairs name items by id, or with --system a segment (the "
                       "--group-by item) and two systems; add --system FIELD or leave --group-by out")
    check_work_bounds(args)
    _check_names(args)
    from opik_metrics.compare.analysis import score_facts
    from opik_metrics.compare.statistics.trials import merge_trials
    from opik_metrics.meta_evaluation.darr import DarrSettings, darr_agreement
    from opik_metrics.meta_evaluation.metric_agreement import too_few_resamples
    from opik_metrics.compare.statistics.bootstrap import resamples_for
    from opik_metrics.meta_evaluation.table import cells_of

    settings = DarrSettings(resamples=args.resamples, seed=args.seed, confidence=args.confidence)
    settings.check()
    if settings.resamples < resamples_for(1.0 - settings.confidence):
        raise ValueError(f"--resamples: {too_few_resamples(settings.resamples, 1.0 - settings.confidence)}")
    loaded = _load(args, [])
    [records] = loaded.records
    pairs = _read_pairs(args.pairs, bool(args.system))
    if args.system:
        _, _, cells = cells_of([records], args.group_by, args.system)
    else:
        cells = {(item.key, ""): item for item in merge_trials(records).items}
    available = records.score_names()
    if args.metric:
        unknown = [m for m in args.metric if m not in available]
        if unknown:
            raise ValueError(f"{records.name} has no score {unknown[0]!r}; its scores are "
                             f"{', '.join(available) or 'none'}")
        metrics = list(dict.fromkeys(args.metric))
    else:
        metrics = [n for n in available if not score_facts(n, [records]).part]
    lower = loaded.lower if loaded.lower is not None else {
        m for m in metrics if not score_facts(m, [records]).higher_is_better}
    better: dict[str, list[float]] = {m: [] for m in metrics}
    worse: dict[str, list[float]] = {m: [] for m in metrics}
    for number, segment, a, b in pairs:
        found = []
        for side, name in (("better", a), ("worse", b)):
            key = (segment, name) if args.system else (name, "")
            item = cells.get(key)       # type: ignore[arg-type]
            if item is None:
                what = (f"segment {segment!r} has no output of system {name!r} in {records.name}" if args.system
                        else f"{side} {name!r} is no item (id) of {records.name}")
                raise ValueError(f"{args.pairs}: row {number}: {what}")
            found.append(item)
        for m in metrics:
            for item, into in zip(found, (better, worse)):
                if m not in item.scores:
                    raise ValueError(f"{args.pairs}: row {number}: item {item.key!r} of {records.name} has no {m} "
                                     f"score ({item.score_failures.get(m) or item.non_finite.get(m) or 'missing'})")
                into[m].append(item.scores[m])
    units = [segment for _, segment, _, _ in pairs] if all(seg is not None for _, seg, _, _ in pairs) else None
    result = darr_agreement(better, worse, settings, units=units, source=records.name, pairs_file=args.pairs,
                            lower_is_better=lower, progress=sys.stderr.isatty())
    result.notes += loaded.notes
    text = result.to_json()
    if args.output:
        from pathlib import Path

        from opik_metrics.core.report_files import real_folder, write_in_place

        try:
            write_in_place(real_folder(Path(args.output)) / "darr.json", text)
        except OSError as exc:
            raise ValueError(f"cannot write the report to {args.output}: {exc}") from None
    sys.stdout.write(text if args.format == "json" else result.format_table())
    if args.output and args.format != "json":
        print(f"\ndata:   {os.path.join(args.output, 'darr.json')}")
    return 0


def cmd_agreement(args: argparse.Namespace) -> int:
    if args.pairs:
        return cmd_pairs(args)
    if not args.human and not args.ratings and not args.dimension:
        raise ValueError("--human SCORE is required (or --ratings FILE with the ratings as a long table, "
                         "--dimension NAME for each of several human scores, or --pairs FILE with WMT-style "
                         "better/worse pairs)")
    dimensions = _dimensions(args)
    check_work_bounds(args)
    _check_names(args)
    if args.system and args.group_by == args.system:
        raise CLIError(f"--system and --group-by both name {args.system!r}: one names the item, the other its system")
    meta = _meta_asked(args, dimensions)
    if meta:
        _meta_settings(args)         # bad settings are refused before anything is read
    else:
        _agreement_settings(args)
    humans = list(dict.fromkeys(h for _, human in dimensions for h in human))
    loaded = _load(args, humans)
    results = []
    for name, human in dimensions:
        result = cmd_meta(args, loaded, human) if meta else cmd_pooled(args, loaded, human[0])
        results.append((name, human, result))
    if len(results) == 1 and results[0][0] is None:
        _emit_one(args, results[0][2], loaded.records)
    else:
        _emit_dimensions(args, [(str(name), human, result) for name, human, result in results])
    return 0


COMMAND = "agreement"
HELP = "which metric agrees with human ratings: Kendall, Spearman, Pearson with intervals"


def register(subparsers: Any) -> None:
    """Add ``agreement`` to the ``add_subparsers()`` object of the main parser."""
    from opik_metrics.compare.statistics.defaults import (DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED,
                                                          MAX_PERMUTATIONS, MAX_RESAMPLES)

    parser = subparsers.add_parser(
        "agreement", help=HELP,
        description="Correlate each automatic score of an experiment with a human score on the items both have: "
                    "Kendall's tau-b and tau-c (tau-b first, as SummEval and the WMT metrics task print it; the "
                    "CLIPScore paper reports tau-c on Flickr8K-Expert, tau-b on Flickr8K-CF), Spearman and Pearson, "
                    "each with a "
                    "percentile bootstrap interval over resampled items, and a paired bootstrap of each metric's "
                    "correlation against the best one's. The human score is an item score of that name (a "
                    "feedback score annotators logged in Opik, or one stored with the item) or an input field "
                    "(a dataset field, or a record file's `score --keep` column): a number or a list, one per rater; "
                    "on Opik, each annotator's value. Several experiments, rater columns, --level item/system, "
                    "--group-by, --system, --ratings, --labels or --compare-metrics run the meta-evaluation: "
                    "levels, metric-vs-metric permutation tests, the raters' own agreement, label agreement. "
                    "Anyone's scored table (.jsonl, .csv, .parquet with no record header) is read with --metric "
                    "COLUMN; --dimension NAME runs one per human dimension; --pairs FILE gives WMT's DARR "
                    "Kendall-like tau on better/worse pairs instead.")
    parser.add_argument("name", metavar="NAME", nargs="+",
                        help="the experiment (local store or Opik server), a record file (.jsonl / .parquet "
                             "written by `score --input ... --output --keep COLUMN`) or a scored table (.jsonl, "
                             ".csv, .parquet with no record header: an id column, --metric columns, human columns); "
                             "several experiments on one dataset are several systems (item and system levels)")
    parser.add_argument("--human", metavar="SCORE", action="append",
                        help="the human score's name; repeated, one rater column each (their mean is the human "
                             "score, and the raters' own agreement is shown)")
    parser.add_argument("--level", action="append", choices=["pooled", "item", "system"],
                        help="correlate pooled over all cells (default), per item across systems then averaged, "
                             "or on the systems' means (with pairwise accuracy); repeatable")
    parser.add_argument("--dimension", action="append", metavar="NAME[=COLUMN,...]",
                        help="a human dimension (coherence, fluency, ...): its column, or NAME=COL,COL its raters' "
                             "columns; repeatable: one table per dimension (one JSON holding all, with -o a report "
                             "folder each); instead of --human, whose repeats are the raters of one score")
    parser.add_argument("--group-by", metavar="FIELD",
                        help="one file whose rows are several outputs of one item: FIELD names the item (the "
                             "unit resampled; item level correlates each item's outputs); the outputs are systems "
                             "only when --system names whose each is")
    parser.add_argument("--system", metavar="FIELD",
                        help="one file whose rows are several systems' outputs: FIELD names each row's system, the "
                             "id (or --group-by's FIELD) its item; then --level system and --compare-metrics need "
                             "no file per system")
    parser.add_argument("--ratings", metavar="FILE",
                        help="human ratings as a long table (.jsonl / .csv with item, rater and rating columns; "
                             "item is the experiment's item key; with several experiments a system column names "
                             "the experiment), instead of --human's values")
    parser.add_argument("--pairs", metavar="FILE",
                        help="WMT's DARR Kendall-like tau instead of correlations: a table (.jsonl / .csv / "
                             ".parquet) of human pairs, columns better and worse (the items' ids; with --system the "
                             "two systems, and a segment column naming the item), optionally segment (its pairs "
                             "resampled together); tau = (concordant - discordant) / (concordant + discordant), a "
                             "tie in the metric discordant (WMT17-19's segment-level rule)")
    parser.add_argument("--compare-metrics", action="store_true",
                        help="test every pair of metrics (paired permutation test PERM-BOTH, Holm-corrected) and "
                             "group the metrics the test cannot tell apart")
    parser.add_argument("--labels", action="store_true",
                        help="read the human ratings as labels (detected when they are two integers, e.g. yes/no "
                             "votes): accuracy, Cohen's kappa and F1 of each metric's labels")
    parser.add_argument("--threshold", action="append", metavar="METRIC=VALUE",
                        help="label a metric 'yes' at or above VALUE (at or below for a lower-is-better metric); "
                             "default: cut where it gives each label the share people gave it (repeatable)")
    parser.add_argument("--permutations", type=int, default=DEFAULT_RESAMPLES,
                        help=f"permutations of --compare-metrics (default {DEFAULT_RESAMPLES}, at most "
                             f"{MAX_PERMUTATIONS:,})")
    parser.add_argument("--metric", "-m", action="append", metavar="SCORE",
                        help="automatic score to correlate (repeatable; default: every score but precision/recall "
                             "parts and the human one); of a scored table (a file with no record header), the "
                             "metric columns, which it needs")
    parser.add_argument("--lower-is-better", action="append", metavar="COLUMN",
                        help="a table's --metric column where lower is better (repeatable; negated, so a higher "
                             "correlation is closer to people); the others are taken as higher is better, and the "
                             "output says so; a record file's metrics state their own direction")
    parser.add_argument("--id-field", metavar="COLUMN",
                        help="a table's id column (default id): the item, or with --system the item a row's system "
                             "output is of")
    parser.add_argument("--method", action="append", choices=["kendall_b", "kendall_c", "spearman", "pearson"],
                        help="correlation to compute (repeatable; default all four: kendall_b, kendall_c, spearman, "
                             "pearson); the columns follow the order asked, the first leads (--compare-metrics "
                             "tests it); only those asked for are computed on each resample")
    parser.add_argument("--raters", choices=["mean", "pairs"], default="mean",
                        help="several ratings of one item: their mean (default), or each rating a pair of its own "
                             "(an item's pairs are resampled together)")
    source = parser.add_mutually_exclusive_group()
    add_store_argument(source)
    source.add_argument("--opik", action="store_true",
                        help="read the experiment from the configured Opik server (default: the server when one "
                             "is configured, else the local store)")
    parser.add_argument("--project", help="Opik project of the experiment (--opik)")
    parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES,
                        help=f"bootstrap resamples of the items (default {DEFAULT_RESAMPLES}, at most "
                             f"{MAX_RESAMPLES:,}); fewer than a test at "
                             "1 - confidence can ever reject with (20 at 0.95) are refused")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"bootstrap seed (default {DEFAULT_SEED})")
    parser.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE,
                        help=f"confidence level of intervals; significance at 1 - it (default {DEFAULT_CONFIDENCE})")
    parser.add_argument("--format", choices=["table", "json"], default="table", help="what to print (default table)")
    parser.add_argument("--publish", action="store_true",
                        help="write each correlation and its interval as experiment scores on the experiment in Opik "
                             "(agreement.kendall_b.SCORE, .ci_low, .ci_high; a meta-evaluation: meta.LEVEL.METHOD.SCORE on each "
                             "experiment compared) and the whole result in its metadata; "
                             "an experiment of the local store must be pushed first")
    parser.add_argument("--output", "-o", metavar="DIR",
                        help="also write a report: DIR/index.html (the table, a plot of the correlations with their "
                             "intervals, each score against the best), DIR/agreement.json and DIR/agreement.png; "
                             "a meta-evaluation writes DIR/meta_evaluation.json and .png (levels, tests and "
                             "groups, raters, labels)")
    parser.set_defaults(func=cmd_agreement)
