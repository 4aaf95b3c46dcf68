"""CLI commands for experiments: ``caption`` (BLIP on Conceptual Captions) and
``experiments list|show|push`` over the local store. ``register(subparsers)`` adds them.
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
from typing import Any, Callable

from opik_metrics.core.table import format_table

_SHOWN_SUFFIXES = ("_precision", "_recall")


def _fail(message: str, status: int = 2) -> int:
    print(f"opik-metrics: error: {message}", file=sys.stderr)
    return status


def _user_errors() -> tuple[type[BaseException], ...]:
    """Errors whose message is the whole story: printed as one line, no traceback."""
    from opik_metrics.experiments.opik_server import OpikServerUnavailable
    from opik_metrics.experiments.store import StoreError
    from opik_metrics.core.inputs import MetricInputError
    from opik_metrics.neural.models.registry import ModelNotAvailableError

    errors: list[type[BaseException]] = [OpikServerUnavailable, StoreError, MetricInputError,
                                         ModelNotAvailableError, ValueError]
    try:
        from opik_metrics.pipelines.captioning.conceptual_captions import DatasetSourceError
        errors.append(DatasetSourceError)
    except ImportError:  # pragma: no cover - pipelines not installed
        pass
    return tuple(errors)


def _guarded(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Known errors become one clear line (exit 2); Ctrl-C says what was kept (exit 130)."""

    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except KeyboardInterrupt:
            store = getattr(args, "store", None)
            print("\ninterrupted: every item finished so far is kept in the local store"
                  + (f" {store}" if store else "") + "; run the same command again to resume",
                  file=sys.stderr)
            return 130
        except _user_errors() as exc:
            return _fail(str(exc))

    return run


def _store_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", metavar="PATH",
                        help="local experiment store (SQLite); default $OPIK_METRICS_STORE or "
                             "~/.local/share/opik-metrics/experiments.sqlite")


# ---- caption ------------------------------------------------------------------------------

def add_caption_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``caption`` (also used by ``python -m opik_metrics.pipelines.captioning``)."""
    from opik_metrics.pipelines.captioning.captioner import CAPTION_MODEL, GENERATION_DEFAULTS

    g = parser.add_argument_group("data (one source)")
    g.add_argument("--tsv", metavar="PATH_OR_URL", help="Conceptual Captions TSV: caption<TAB>url, no header")
    g.add_argument("--hf-dataset", metavar="NAME", help="Hugging Face dataset, e.g. "
                   "google-research-datasets/conceptual_captions (needs `pip install datasets`)")
    g.add_argument("--split", default="validation", help="dataset split (--hf-dataset; default validation)")
    g.add_argument("--hf-config", help="dataset config (--hf-dataset; default: the dataset's default)")
    g.add_argument("--limit", type=int, default=100, help="rows to evaluate (default 100)")
    g.add_argument("--sample", action="store_true", help="a seeded uniform sample of --limit rows instead of "
                   "the first ones (reads the whole source once)")
    g.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    g.add_argument("--dataset-name", help="dataset name in Opik and the store (default conceptual-captions-<source>)")
    g = parser.add_argument_group("model")
    g.add_argument("--model", default=CAPTION_MODEL, metavar="ID_OR_PATH",
                   help=f"BLIP checkpoint: hub id or local directory (default {CAPTION_MODEL})")
    g.add_argument("--device", help="torch device (default: cuda when present, else cpu)")
    g.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], help="weights dtype (GPU only for half)")
    g.add_argument("--batch-size", type=int, default=8, help="images per generate call (default 8)")
    for key in ("max_length", "min_length", "num_beams"):
        g.add_argument("--" + key.replace("_", "-"), type=int, help=f"default {GENERATION_DEFAULTS[key]}")
    for key in ("repetition_penalty", "length_penalty"):
        g.add_argument("--" + key.replace("_", "-"), type=float, help=f"default {GENERATION_DEFAULTS[key]}")
    g.add_argument("--no-early-stopping", dest="early_stopping", action="store_false", default=None,
                   help="beam search runs to max_length (default: early stopping)")
    g = parser.add_argument_group("experiment")
    g.add_argument("--experiment", required=True, metavar="NAME", help="experiment name (re-run to resume)")
    g.add_argument("--metric", "-m", action="append", metavar="NAME",
                   help="metric from the catalog (repeatable; default rouge and bleu; bertscore when installed)")
    g.add_argument("--bertscore-model", metavar="ID_OR_PATH", help="model for --metric bertscore")
    g.add_argument("--backend", choices=["auto", "local", "opik"], default="auto",
                   help="auto (default): the Opik server when one is configured, else the local store")
    _store_argument(g)
    g.add_argument("--project", help="Opik project name")
    g.add_argument("--retry-failed", action="store_true", help="on resume, try failed items again (dead links fetched again)")
    g.add_argument("--overwrite", action="store_true", help="replace a stored experiment of the same name")
    g = parser.add_argument_group("image fetching")
    g.add_argument("--cache-dir", help="image cache (default $OPIK_METRICS_IMAGE_CACHE or ~/.cache/opik-metrics/images)")
    g.add_argument("--fetch-workers", type=int, default=8, help="parallel downloads (default 8)")
    g.add_argument("--timeout", type=float, default=15.0, help="seconds to wait for a server (default 15)")
    g.add_argument("--retries", type=int, default=2, help="retries after a transient error (default 2)")
    g.add_argument("--max-image-mb", type=float, default=20.0, help="largest image accepted (default 20 MB)")
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")


def _print_summary(summary: Any) -> None:
    print(f"experiment {summary.name} ({summary.backend}): {summary.location}")
    print(f"dataset {summary.dataset}: {summary.items} items, {summary.failed_items} failed"
          + (f", {summary.resumed_items} done by an earlier run" if summary.resumed_items else ""))
    rows = [[name, value, "mean over items"] for name, value in summary.scores.items()
            if not name.endswith(_SHOWN_SUFFIXES)]
    rows += [[name, value if value is not None else "failed", "experiment"]
             for name, value in summary.experiment_scores.items()]
    if rows:
        print()
        print(format_table(["score", "value", "aggregate"], rows))
    if summary.failures:
        print()
        print("failures:")
        for reason, count in summary.failure_counts():
            print(f"  {count:5d}  {reason}")


def _quiet_model_loading() -> None:
    """No 'Loading weights' bars from transformers when progress bars are off."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


@_guarded
def cmd_caption(args: argparse.Namespace) -> int:
    from opik_metrics.pipelines.captioning.images import ImageFetcher
    from opik_metrics.pipelines.captioning.pipeline import DEFAULT_METRICS, run_captioning

    if args.no_progress:
        _quiet_model_loading()
    generation = {k: getattr(args, k) for k in ("max_length", "min_length", "num_beams", "repetition_penalty",
                                                "length_penalty", "early_stopping")}
    fetcher = ImageFetcher(args.cache_dir, timeout=(min(5.0, args.timeout), args.timeout), retries=args.retries,
                           max_bytes=int(args.max_image_mb * 2**20), workers=args.fetch_workers,
                           cache_failures=not args.retry_failed)   # a retry fetches dead links again
    summary = run_captioning(
        experiment=args.experiment, tsv=args.tsv, hf_dataset=args.hf_dataset, split=args.split,
        hf_config=args.hf_config, limit=args.limit, sample=args.sample, seed=args.seed, model=args.model,
        generation=generation, device=args.device, dtype=args.dtype, batch_size=args.batch_size,
        metrics=args.metric or DEFAULT_METRICS, bertscore_model=args.bertscore_model, backend=args.backend,
        store=args.store, project_name=args.project, dataset_name=args.dataset_name, fetcher=fetcher,
        progress=not args.no_progress, retry_failed=args.retry_failed, overwrite=args.overwrite)
    if args.format == "json":
        json.dump(summary.as_dict(), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        _print_summary(summary)
    return 0


# ---- experiments list | show | push -------------------------------------------------------

def _open_store(args: argparse.Namespace):
    from opik_metrics.experiments.store import ExperimentStore

    return ExperimentStore(args.store, create=False)


@_guarded
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
            print(f"no experiments in {store.path}")
            return 0
        names = list(dict.fromkeys(n for info in infos for n in {**info.scores, **info.experiment_scores}
                                   if not n.endswith(_SHOWN_SUFFIXES)))
        rows = [[info.name, info.status, info.items, info.failed_items, info.created_at,
                 str(info.config.get("model", "")), *(_value({**info.scores, **info.experiment_scores}, n)
                                                      for n in names)] for info in infos]
        print(f"{store.path}\n")
        print(format_table(["experiment", "status", "items", "failed", "created", "model", *names], rows))
    return 0


def _value(scores: dict, name: str) -> Any:
    value = scores.get(name)
    return value if isinstance(value, float) else "-"


def _show_json(info: Any, items: list) -> dict[str, Any]:
    return {**info.listing(), "experiment_scores": info.experiment_scores, "seconds": info.seconds,
            "runs": info.runs, "pushed_at": info.pushed_at, "pushed_to": info.pushed_to,
            "records": [{"position": it.position, "status": it.status, "input": it.input, "output": it.output,
                       "failure_stage": it.failure_stage, "failure": it.failure, "task_seconds": it.task_seconds,
                       "score_seconds": it.score_seconds, "trace": it.trace,
                       "scores": {n: {"value": s.value, "failed": s.failed, "reason": s.reason}
                                  for n, s in it.scores.items()}} for it in items]}


@_guarded
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
    print(f"{info.items} items: {info.scored_items} scored, {info.failed_items} failed\n")
    print("config:")
    for key, value in info.config.items():
        print(f"  {key}: {json.dumps(value, default=str) if isinstance(value, (dict, list)) else value}")
    rows = [[n, v, "mean over items"] for n, v in info.scores.items()]
    rows += [[n, v if v is not None else "failed", "experiment"] for n, v in info.experiment_scores.items()]
    if rows:
        print()
        print(format_table(["score", "value", "aggregate"], rows))
    failed = [it for it in items if it.status == "failed"]
    if failed:
        print("\nfailed items:")
        for it in failed:
            print(f"  item {it.position}: {it.failure_stage}: {it.failure}")
    if args.items:
        shown = [n for n in info.scores if not n.endswith(_SHOWN_SUFFIXES)]
        rows = [[it.position, it.status, (it.output or {}).get("output", "")[:60],
                 *(it.scores[n].value if n in it.scores and it.scores[n].value is not None else "-" for n in shown)]
                for it in items]
        print()
        print(format_table(["item", "status", "output", *shown], rows))
    return 0


@_guarded
def cmd_push(args: argparse.Namespace) -> int:
    from opik_metrics.experiments.push import push_experiment

    with _open_store(args) as store:
        report = push_experiment(store, args.name, project_name=args.project, dataset_name=args.dataset_name,
                                 experiment_name=args.as_name, progress=not args.no_progress)
    if args.format == "json":
        json.dump(vars(report), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    print(f"pushed experiment {report.name} to {report.target}: {report.traces} traces on dataset "
          f"{report.dataset}" + (f" ({report.skipped_items} failed items not pushed)" if report.skipped_items else ""))
    return 0


def register(subparsers: Any) -> None:
    """Add ``caption`` and ``experiments`` to the ``add_subparsers()`` object of the main parser."""
    caption = subparsers.add_parser(
        "caption", help="caption Conceptual Captions images with BLIP and score them as an experiment",
        description="BLIP captioning on Conceptual Captions, scored and tracked: on an Opik server when "
                    "one is configured, else in the local store (resumable).")
    add_caption_arguments(caption)
    caption.set_defaults(func=cmd_caption)

    experiments = subparsers.add_parser("experiments", help="list, show or push experiments in the local store")
    sub = experiments.add_subparsers(dest="experiments_command", required=True)
    listing = sub.add_parser("list", help="every stored experiment with its mean scores")
    _store_argument(listing)
    listing.add_argument("--format", choices=["table", "json"], default="table")
    listing.set_defaults(func=cmd_list)
    show = sub.add_parser("show", help="one experiment: config, scores, failures, items")
    show.add_argument("name")
    _store_argument(show)
    show.add_argument("--format", choices=["table", "json"], default="table")
    show.add_argument("--items", action="store_true", help="also print a per-item table")
    show.set_defaults(func=cmd_show)
    push = sub.add_parser("push", help="upload a stored experiment to the configured Opik server")
    push.add_argument("name")
    _store_argument(push)
    push.add_argument("--project", help="Opik project name")
    push.add_argument("--dataset-name", help="Opik dataset (default: the stored dataset's name)")
    push.add_argument("--as", dest="as_name", metavar="NAME", help="experiment name on the server")
    push.add_argument("--format", choices=["table", "json"], default="table")
    push.add_argument("--no-progress", action="store_true", help="hide progress bars")
    push.set_defaults(func=cmd_push)
