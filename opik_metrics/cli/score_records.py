"""``opik-metrics score --input``: records streamed from a JSONL, CSV or Parquet file, scored in
this process or on Ray, one row per record to ``--output`` (resumable), aggregates on the terminal."""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from opik_metrics.cli.errors import CLIError
from opik_metrics.cli.options import SOURCE, aggregate_label, metric_recipe, wants_every_reference
from opik_metrics.core.table import format_table, one_line
from opik_metrics.execution.worker_pools import available_cores

if TYPE_CHECKING:
    from opik_metrics.streams.run import Engine


def score_records(args: argparse.Namespace) -> int:
    from opik_metrics.streams import (FieldError, FieldMap, OutputError, ProcessEngine, SourceError, open_source,
                                      parse_field_options, read_references, score_source)

    if args.references or args.predictions:
        raise CLIError("--input records carry their references: drop --predictions/--references "
                       "(map columns with --field)")
    if args.chunk_size < 1 or (args.workers is not None and args.workers < 1):
        raise CLIError("--chunk-size and --workers must be positive")
    if args.engine == "ray":        # one line before any work (no .parts folder), as every missing extra
        from opik_metrics.core.extras import require_extra

        require_extra("ray", "--engine ray", "or drop --engine ray to score on this machine")
    names = args.metric or ["rouge", "bleu"]
    try:
        fields: FieldMap = carried_fields(parse_field_options(args.field), args)
        source = open_source(args.input, args.input_format)
        references = None
        if wants_every_reference(names, args):
            references = read_references(source, fields, args.chunk_size)   # a first pass: corpus contexts
        recipe = metric_recipe(names, args, references, SOURCE, preprocess=True, track=False)
        engine: Engine
        if args.engine == "ray":
            from opik_metrics.distributed import RayEngine
            engine = RayEngine(recipe, workers=args.workers or 2, address=args.address, num_gpus=args.num_gpus,
                               actors=recipe.loads_model)
        else:
            engine = ProcessEngine(recipe, args.workers or (1 if recipe.loads_model else available_cores()))
        result = score_source(source, engine, output=args.output, fields=fields, chunk_size=args.chunk_size,
                              progress=not args.no_progress, overwrite=args.overwrite)
    except (SourceError, FieldError, OutputError) as exc:
        raise CLIError(str(exc)) from None
    if result.items == 0 or result.unscored == result.items:
        raise CLIError(nothing_scored(args.input, result, getattr(source, "header", None), args.output))
    _print(args, result)
    return 0


def carried_fields(fields: Any, args: argparse.Namespace) -> Any:
    """``fields`` with the id column (``--id-field``) and the kept columns (``--keep``)."""
    from dataclasses import replace

    keep = tuple(dict.fromkeys(c.strip() for c in getattr(args, "keep", None) or ()))
    id_field = getattr(args, "id_field", None)
    if any(not c for c in keep):
        raise CLIError("--keep: give a column name")
    if id_field is not None and id_field.strip() in keep:
        raise CLIError(f"--keep {id_field.strip()}: it is the id column already (--id-field)")
    return replace(fields, id_field=None if id_field is None else id_field.strip(), keep=keep)


def nothing_scored(path: str, result: Any, header: list[str] | None, output: str | None) -> str:
    """Why a run scored nothing, in one line with its fix: a run that scored nothing is a failure
    (exit 2), never a green run a CI job would pass (its table would be empty)."""
    from opik_metrics.streams.fields import missing_input

    if result.items == 0:
        return f"{path} has no records: nothing to score"
    every = f"none of the {result.items} records of {path} has a score"
    reasons = result.unscored_reasons
    if len(reasons) != 1:
        shown = "; ".join(f"{why} ({n} records)" for why, n in reasons.items())
        return f"{every}: {shown}"
    (reason,) = reasons
    name = missing_input(reason)
    if name is None:
        return f"{every}: every one says {reason}"
    columns = f" (its columns: {', '.join(header)})" if header else ""
    many = " (several columns, comma-separated, make the list of references)" if name == "reference" else ""
    again = f" (with --overwrite: {output} holds the rows of this run)" if output else ""
    return (f"{every}: {reason}{columns}; name the column that holds the {name} with --field {name}=COLUMN"
            f"{many}{again}")


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if not k.startswith("statistics.")}


def _print(args: argparse.Namespace, result: Any) -> None:
    if args.format == "json":
        out: dict[str, Any] = {}
        if result.rows is not None:
            out["items"] = [_shown(row) for row in result.rows]
        else:
            out["output"] = result.output
        out.update({"aggregate": result.aggregate, "counts": result.counts, "signatures": result.signatures,
                    "unscored": result.unscored})
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    resumed = ("" if not result.resumed_from else " (already complete: aggregated from the output)"
               if result.resumed_from == result.items else f" (resumed after record {result.resumed_from})")
    target = f" -> {result.output}" if result.output else ""
    print(one_line(f"{result.items} records: {args.input}{target}{resumed}") + "\n")
    rows = [[name, value, result.counts.get(name, 0), aggregate_label(name, result.corpus_names, result.mean_corpora)]
            for name, value in result.aggregate.items()]
    print(format_table(["score", "value", "items", "aggregate"], rows))
    if args.items and result.rows is not None:
        shown = [n for n in result.aggregate if n not in result.corpus_names]
        print()
        print(format_table(["item", *shown, "reason"],
                           [[row["index"], *(row.get(n) for n in shown), row.get("reason") or ""]
                            for row in result.rows]))
    print()
    for metric, sig in result.signatures.items():
        print(f"{metric}: {sig}")
    if result.unscored:
        where = f"the reason column of {result.output}" if result.output else "--items or --format json"
        print(one_line(f"note: {result.unscored} of {result.items} records have no scores; see {where}"))

