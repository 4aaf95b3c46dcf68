"""``opik-metrics experiments list|show|rescore|push``: the experiments of the local store, adding
metrics to one without running its task again, and pushing them to an Opik server later."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from opik_metrics.core import facts_of, recorded_parts
from opik_metrics.cli.options import add_metric_options, add_store_argument
from opik_metrics.core.table import format_table, one_line
from opik_metrics.metrics.catalog import metric_classes


# ---- experiments list | show | push -------------------------------------------------------

def _open_store(args: argparse.Namespace):
    from opik_metrics.experiments.store import ExperimentStore

    return ExperimentStore(args.store, create=False)


def cmd_list(args: argparse.Namespace) -> int:
    from opik_metrics.experiments.store import StoreNotFound

    try:
        store = _open_store(args)
    except StoreNotFound as exc:
        print("[]" if args.format == "json" else str(exc))
        return 0
    with store:
        infos = store.infos()
        if args.format == "json":
            json.dump([info.listing() for info in infos], sys.stdout, indent=2, default=str)
            sys.stdout.write("\n")
            return 0
        if not infos:
            print(one_line(f"no experiments in {store.path}"))
            return 0
        names = list(dict.fromkeys(n for info in infos for n in {**info.scores, **info.experiment_scores}
                                   if n not in recorded_parts(info.config.get("metrics"))))
        rows = [[info.name, info.status, info.items, info.failed_items, info.created_at,
                 str(info.config.get("model", "")), *(_value({**info.scores, **info.experiment_scores}, n)
                                                      for n in names)] for info in infos]
        print(one_line(str(store.path)) + "\n")
        print(format_table(["experiment", "status", "items", "failed", "created", "model", *names], rows))
    return 0


def _value(scores: dict, name: str) -> Any:
    value = scores.get(name)
    return value if isinstance(value, float) else "-"


def _show_json(info: Any, items: list) -> dict[str, Any]:
    return {**info.listing(), "experiment_scores": info.experiment_scores, "seconds": info.seconds,
            "runs": info.runs, "pushed_at": info.pushed_at, "pushed_to": info.pushed_to,
            "records": [{"position": it.position, "trial": it.trial, "status": it.status, "input": it.input, "output": it.output,
                       "failure_stage": it.failure_stage, "failure": it.failure, "task_seconds": it.task_seconds,
                       "score_seconds": it.score_seconds, "trace": it.trace,
                       "scores": {n: {"value": s.value, "failed": s.failed, "reason": s.reason}
                                  for n, s in it.scores.items()}} for it in items]}


def _config_lines(config: dict) -> list[str]:
    """The config to read: one line a setting, nested values indented, each metric by its signature."""
    lines = []
    for key, value in config.items():
        if key == "metrics" and isinstance(value, dict):
            lines.append("  metrics:")
            for name, facts in value.items():
                signature = facts.get("signature") if isinstance(facts, dict) else None
                text = signature.get("text") if isinstance(signature, dict) else None
                lines.append(f"    {name}: {text or (facts.get('kind') if isinstance(facts, dict) else facts)}")
        elif isinstance(value, (dict, list)) and value:
            lines.append(f"  {key}: " + json.dumps(value, indent=2, default=str).replace("\n", "\n    "))
        else:
            lines.append(f"  {key}: {value}")
    return lines


def cmd_show(args: argparse.Namespace) -> int:
    with _open_store(args) as store:
        info = store.info(args.name)
        items = store.items(info.id)
    if args.format == "json":
        json.dump(_show_json(info, items), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    print(f"experiment {info.name} [{info.status}] on dataset {info.dataset}")
    print(f"created {info.created_at}, updated {info.updated_at}, {info.runs} run(s), {info.seconds:.1f} s"
          + (f"; pushed {info.pushed_at} to {info.pushed_to}" if info.pushed_at else ""))
    if info.trials > 1:
        print(f"{info.items} items, {info.trials} trials each: {info.scored_items} trials scored, "
              f"{info.failed_items} failed (scores: each item's mean over its trials, then over items)\n")
    else:
        print(f"{info.items} items: {info.scored_items} scored, {info.failed_items} failed\n")
    print("config (all of it: --format json):")
    for line in _config_lines(info.config):
        print(line)
    rows = [[n, v, "mean over items"] for n, v in info.scores.items()]
    rows += [[n, v if v is not None else "failed", "experiment"] for n, v in info.experiment_scores.items()]
    if rows:
        print()
        print(format_table(["score", "value", "aggregate"], rows))
    failed = [it for it in items if it.status == "failed"]
    if failed:
        print("\nfailed items:")
        for it in failed:
            trial = f" trial {it.trial}" if info.trials > 1 else ""
            print(f"  item {it.position}{trial}: {it.failure_stage}: {it.failure}")
    if args.items:
        shown = [n for n in info.scores if n not in recorded_parts(info.config.get("metrics"))]
        trials = info.trials > 1
        rows = [[it.position, *([it.trial] if trials else []), it.status, (it.output or {}).get("output", "")[:60],
                 *(it.scores[n].value if n in it.scores and it.scores[n].value is not None else "-" for n in shown)]
                for it in items]
        print()
        print(format_table(["item", *(["trial"] if trials else []), "status", "output", *shown], rows))
    return 0


def cmd_rescore(args: argparse.Namespace) -> int:
    """Score the stored outputs with the named metrics; print the new scores' means and corpus values."""
    from opik_metrics.cli.options import build_metrics
    from opik_metrics.compare.reading.sources import is_record_file
    from opik_metrics.experiments.rescore import rescore_local
    from opik_metrics.experiments.store import ExperimentStore

    names = list(dict.fromkeys(args.metric))
    if is_record_file(args.name):
        return _rescore_records(args, names)
    if args.input is not None or args.input_format is not None:
        from opik_metrics.cli.errors import CLIError
        from opik_metrics.compare.reading.sources import RECORD_FILE_SUFFIXES

        if args.name.lower().endswith(RECORD_FILE_SUFFIXES):
            raise CLIError(f"{args.name}: no such record file")
        raise CLIError(f"--input and --input-format go with a record file; {args.name!r} is a stored experiment "
                       "(its outputs are in the store)")
    with ExperimentStore(args.store, create=False) as store:
        info = store.info(args.name)
        # CIDEr-D's document frequencies are left to rescore_local, which fits them on every stored item's
        # references as the first run and the Python call do (the scored items alone would differ)
        metrics = build_metrics(names, args, None, track=False)
        summary = rescore_local(store, args.name, metrics, replace=args.replace, progress=not args.no_progress)
        after = store.info(args.name)
        ours = {m.name for m in metrics}
        made = {s.name for it in store.items(info.id, ["scored"]) for s in it.scores.values() if s.metric in ours}
        path = store.path
    corpus = {c.score.name for m in metrics for c in facts_of(m).corpora}
    new = [n for n in after.scores if n in made and n not in summary.parts] + \
        [n for n in after.experiment_scores if n in corpus or n not in info.experiment_scores]
    if args.format == "json":
        json.dump({"name": args.name, "store": str(path), "metrics": [m.name for m in metrics],
                   "items": after.items, "scored_items": after.scored_items, "failed_items": after.failed_items,
                   "resumed_items": summary.resumed_items,
                   "scores": {n: after.scores[n] for n in new if n in after.scores},
                   "experiment_scores": {n: after.experiment_scores[n] for n in new if n in after.experiment_scores}},
                  sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    resumed = f" ({summary.resumed_items} scored by an interrupted rescore before)" if summary.resumed_items else ""
    print(one_line(f"rescored experiment {args.name} with {', '.join(m.name for m in metrics)}: "
                   f"{after.scored_items} items{resumed}; {after.failed_items} failed items left as they were"))
    rows = [[n, after.scores[n], "mean over items"] for n in new if n in after.scores]
    rows += [[n, v if (v := after.experiment_scores[n]) is not None else "failed", "corpus statistics"]
             for n in new if n in after.experiment_scores and n not in after.scores]
    if rows:
        print()
        print(format_table(["score", "value", "aggregate"], rows))
    if info.pushed_to:
        print()
        print(one_line(f"it was pushed to {info.pushed_to}: `opik-metrics experiments push {args.name}` again "
                       "sends the new scores"))
    return 0


def _rescore_records(args: argparse.Namespace, names: list[str]) -> int:
    """Add the metrics to a record file (``score --input ... --output``), scoring its input's records."""
    from opik_metrics.cli.options import build_metrics
    from opik_metrics.streams.rescore import rescore_records

    # metrics fitted on the whole set (CIDEr-D) are fitted by rescore_records on every reference of the input
    metrics = build_metrics(names, args, None, track=False)
    added = rescore_records(args.name, metrics, input_path=args.input, input_format=args.input_format,
                            replace=args.replace, progress=not args.no_progress)
    means = {n: v for n, v in added.aggregate.items() if n not in added.corpus_names}
    corpus = {n: v for n, v in added.aggregate.items() if n in added.corpus_names}
    if args.format == "json":
        json.dump({"name": args.name, "input": added.input, "metrics": added.metrics, "items": added.items,
                   "unscored": added.unscored, "replaced": added.replaced, "resumed_items": added.resumed_from,
                   "scores": means, "experiment_scores": corpus, "signatures": added.signatures},
                  sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    resumed = f" ({added.resumed_from} scored by an interrupted rescore before)" if added.resumed_from else ""
    print(one_line(f"rescored record file {args.name} with {', '.join(added.metrics)} from the records of "
                   f"{added.input}: {added.items} rows{resumed}; {added.unscored} without a new score"))
    rows = [[n, v, added.counts.get(n, 0), "mean over items"] for n, v in means.items()]
    rows += [[n, v, added.counts.get(n, 0), "corpus statistics"] for n, v in corpus.items()]
    print()
    print(format_table(["score", "value", "items", "aggregate"], rows))
    print()
    for metric, signature in added.signatures.items():
        print(one_line(f"{metric}: {signature}"))
    return 0


PUSH_INCOMPLETE = 3   # the server did not keep all of a push (2 stays "error", 1 a failed check)


def _push_command(args: argparse.Namespace, store_path: Any) -> str:
    """The command line that reruns this push (it sends only what the server lacks)."""
    import shlex

    words = ["opik-metrics", "experiments", "push", args.name, "--store", str(store_path)]
    for flag, value in (("--project", args.project), ("--dataset-name", args.dataset_name), ("--as", args.as_name)):
        if value:
            words += [flag, value]
    return " ".join(shlex.quote(w) for w in words)


def _push_line(report: Any) -> str:
    what = "items" if report.trials == 1 else f"item trials ({report.trials} per item)"
    line = f"pushed experiment {report.name} to {report.target}: {report.items} {what} on dataset {report.dataset}"
    if report.skipped_items:
        line += f" ({report.skipped_items} failed {what.split(' (')[0]} not pushed)"
    if not report.read_back:
        return line + f"; {report.traces} traces sent (not read back)"
    sent = (f"this push sent {report.traces} traces and {report.sent_scores} feedback scores"
            if report.traces or report.sent_scores else "this push sent nothing")
    if report.complete:
        return line + (f"; read back: all {report.items} {what.split(' (')[0]} and {report.scores} feedback scores "
                       f"there ({sent})")
    return line + f"; {sent}"


def cmd_push(args: argparse.Namespace) -> int:
    """Push, then say what the server kept; exit 3 when it lacks something (rerunning sends just that)."""
    from opik_metrics.cli.errors import fail
    from opik_metrics.experiments.push import push_experiment

    with _open_store(args) as store:
        report = push_experiment(store, args.name, project_name=args.project, dataset_name=args.dataset_name,
                                 experiment_name=args.as_name, progress=not args.no_progress)
        path = store.path
    if args.format == "json":
        json.dump({**vars(report), "complete": report.complete}, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print(_push_line(report))
    if report.complete:
        return 0
    return fail(f"{report.target} did not keep all of experiment {report.name!r}: {report.missing_line()}; run "
                f"`{_push_command(args, path)}` to send only what is missing", PUSH_INCOMPLETE)


COMMAND = "experiments"
HELP = "list, show, rescore or push experiments in the local store"


def register(subparsers: Any) -> None:
    """Add ``experiments list|show|rescore|push`` to the main parser's sub-commands."""
    experiments = subparsers.add_parser("experiments", help=HELP)
    sub = experiments.add_subparsers(dest="experiments_command", required=True)
    listing = sub.add_parser("list", help="every stored experiment with its mean scores")
    add_store_argument(listing)
    listing.add_argument("--format", choices=["table", "json"], default="table")
    listing.set_defaults(func=cmd_list)
    show = sub.add_parser("show", help="one experiment: config, scores, failures, items")
    show.add_argument("name")
    add_store_argument(show)
    show.add_argument("--format", choices=["table", "json"], default="table")
    show.add_argument("--items", action="store_true", help="also print a per-item table")
    show.set_defaults(func=cmd_show)
    rescore = sub.add_parser(
        "rescore", help="add metrics to a stored experiment (or a record file) without running its task again",
        description="Score a stored experiment's outputs (and references, and images for clipscore) with more "
                    "metrics: item scores, corpus scores from statistics and the metrics' facts are added, as "
                    "its run would have. Resumable: run it again after an interruption. Failed items stay failed. "
                    "NAME may be a record file written by `score --input ... --output` (.jsonl or .parquet): "
                    "the records of the input it was scored from get the new metrics, and their columns join "
                    "the file's rows.")
    rescore.add_argument("name", help="a stored experiment's name, or a record file")
    add_store_argument(rescore)
    rescore.add_argument("--input", metavar="PATH",
                         help="for a record file: the file it was scored from (default: the one its .run.json "
                              "names, if unchanged since); rows are checked by id")
    rescore.add_argument("--input-format", choices=["jsonl", "csv", "parquet"],
                         help="for a record file: the format of --input when its extension does not say (default: "
                              "the one the file was scored with)")
    rescore.add_argument("--metric", "-m", action="append", required=True, choices=list(metric_classes()),
                         help="metric to add (repeatable; plugin metrics load only when one is named)")
    rescore.add_argument("--replace", action="store_true",
                         help="score again with a metric the experiment already has (its scores are replaced)")
    rescore.add_argument("--format", choices=["table", "json"], default="table")
    rescore.add_argument("--no-progress", action="store_true", help="hide progress bars")
    add_metric_options(rescore)
    rescore.set_defaults(func=cmd_rescore)
    push = sub.add_parser("push", help="upload a stored experiment to the configured Opik server",
                          description="Upload a stored experiment, then read back what the server kept. Exit 0: "
                                      "all there; 3: something missing (named; the same command sends just "
                                      "that); 2: an error.")
    push.add_argument("name")
    add_store_argument(push)
    push.add_argument("--project", help="Opik project name")
    push.add_argument("--dataset-name", help="Opik dataset (default: the stored dataset's name)")
    push.add_argument("--as", dest="as_name", metavar="NAME", help="experiment name on the server")
    push.add_argument("--format", choices=["table", "json"], default="table")
    push.add_argument("--no-progress", action="store_true", help="hide progress bars")
    push.set_defaults(func=cmd_push)
