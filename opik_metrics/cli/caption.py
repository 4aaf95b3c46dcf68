"""``opik-metrics caption``: BLIP captioning on Conceptual Captions, scored and tracked as an
experiment (on an Opik server when one is configured, else in the local store)."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from opik_metrics.cli.options import add_store_argument
from opik_metrics.core.extras import require_extra
from opik_metrics.core.table import format_table


def add_caption_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``caption`` (also used by ``python -m opik_metrics.pipelines.captioning``)."""
    from opik_metrics.pipelines.captioning.defaults import CAPTION_MODEL, GENERATION_DEFAULTS

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
    g.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], help="weights dtype: float32 (default), bfloat16, or float16 on a GPU")
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
                   help="metric from the catalog (repeatable; default rouge, bleu and cider; also meteor, "
                   "coco (BLEU, METEOR, ROUGE_L, CIDEr), bertscore, clipscore)")
    g.add_argument("--bertscore-model", metavar="ID_OR_PATH", help="model for --metric bertscore")
    g.add_argument("--clip-model", metavar="ID_OR_PATH",
                   help="CLIP model for --metric clipscore (default openai/clip-vit-base-patch32); it scores "
                   "the images already fetched for captioning")
    g.add_argument("--backend", choices=["auto", "local", "opik"], default="auto",
                   help="auto (default): the Opik server when one is configured, else the local store")
    add_store_argument(g)
    g.add_argument("--project", help="Opik project name")
    g.add_argument("--retry-failed", action="store_true", help="on resume, try failed items again (dead links fetched again)")
    g.add_argument("--overwrite", action="store_true", help="replace a stored experiment of the same name")
    g = parser.add_argument_group("image fetching")
    g.add_argument("--cache-dir", help="image cache (default $OPIK_METRICS_IMAGE_CACHE or ~/.cache/opik-metrics/images)")
    g.add_argument("--fetch-workers", type=int, default=8, help="parallel downloads (default 8)")
    g.add_argument("--timeout", type=float, default=15.0, help="seconds to wait for a server (default 15)")
    g.add_argument("--retries", type=int, default=2, help="retries after a transient error (default 2)")
    g.add_argument("--max-image-mb", type=float, default=20.0, help="largest image accepted (default 20 MB)")
    parser.add_argument("--format", choices=["table", "json"], default="table",
                        help="table (default) or the experiment's summary as one JSON object")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")


def _print_summary(summary: Any) -> None:
    print(f"experiment {summary.name} ({summary.backend}): {summary.location}")
    print(f"dataset {summary.dataset}: {summary.items} items, {summary.failed_items} failed"
          + (f", {summary.resumed_items} done by an earlier run" if summary.resumed_items else ""))
    rows = [[name, value, "mean over items"] for name, value in summary.scores.items()
            if name not in summary.parts]
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


def cmd_caption(args: argparse.Namespace) -> int:
    from opik_metrics.pipelines.captioning.conceptual_captions import check_source

    check_source(args.tsv, args.hf_dataset, args.limit)      # usage errors before the heavy imports
    require_extra("images", "opik-metrics caption")          # BLIP reads images: one line, before any work
    from opik_metrics.experiments.opik_server import CLI_LOCAL_ADVICE, choose_backend

    # chosen here so that a server that is down is advised in this command's words (--backend local)
    backend = choose_backend("local" if args.store is not None and args.backend == "auto" else args.backend,
                             local_advice=CLI_LOCAL_ADVICE)
    from opik_metrics.images import ImageFetcher
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
        metrics=args.metric or DEFAULT_METRICS, bertscore_model=args.bertscore_model, clip_model=args.clip_model,
        backend=backend,
        store=args.store, project_name=args.project, dataset_name=args.dataset_name, fetcher=fetcher,
        progress=not args.no_progress, retry_failed=args.retry_failed, overwrite=args.overwrite)
    if args.format == "json":
        json.dump(summary.as_dict(), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        _print_summary(summary)
    if summary.missing is not None:           # the server lost part of the run: the store has all of it
        print(f"opik-metrics: error: the Opik server did not keep all of experiment {summary.name!r}: "
              f"{summary.missing}; every result is in the local store: run `{summary.journal}` to send what is "
              "missing", file=sys.stderr)
        return 3
    return 0


COMMAND = "caption"
HELP = "caption Conceptual Captions images with BLIP and score them as an experiment"


def register(subparsers: Any) -> None:
    """Add ``caption`` to the main parser's sub-commands."""
    parser = subparsers.add_parser(
        "caption", help=HELP,
        description="BLIP captioning on Conceptual Captions, scored and tracked: on an Opik server when "
                    "one is configured, else in the local store (resumable).")
    add_caption_arguments(parser)
    parser.set_defaults(func=cmd_caption)
