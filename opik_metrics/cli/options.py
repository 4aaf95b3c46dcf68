"""The one place where command-line options become metric arguments."""
from __future__ import annotations

import argparse
from typing import Any, Sequence

from opik_metrics.cli.errors import CLIError
from opik_metrics.metrics.catalog import MetricRecipe, metric_spec


def metric_kwargs(name: str, args: argparse.Namespace,
                   references: list[list[str]] | None = None) -> dict[str, Any]:
    """Constructor arguments of catalog metric ``name`` from the command's options."""
    if name == "rouge":
        kw: dict[str, Any] = {"use_stemmer": args.use_stemmer, "tokenizer": args.rouge_tokenizer,
                              "remove_stopwords": args.remove_stopwords, "rouge155": args.rouge155}
        if args.rouge_type:
            kw["rouge_types"] = tuple(args.rouge_type)
        return kw
    if name == "bleu":
        return {"tokenize": args.bleu_tokenize, "lowercase": args.lowercase,
                "smooth_method": args.smooth_method}
    if name == "chrf":
        return {"word_order": args.chrf_word_order, "char_order": args.chrf_char_order, "beta": args.chrf_beta,
                "lowercase": args.lowercase, "whitespace": args.chrf_whitespace,
                "eps_smoothing": args.chrf_eps_smoothing}
    if name == "ter":
        return {"normalized": args.ter_normalized, "no_punct": args.ter_no_punct,
                "asian_support": args.ter_asian_support, "case_sensitive": args.ter_case_sensitive}
    if name == "bertscore":
        return {"model": args.bertscore_model, "num_layers": args.num_layers, "lang": args.lang,
                "idf": args.idf, "idf_references": references if args.idf else None,
                "rescale_with_baseline": args.rescale_with_baseline or args.baseline_path is not None,
                "baseline_path": args.baseline_path, "batch_size": args.batch_size, "device": args.device}
    if name in ("cider", "coco"):      # document frequencies from every reference of the input
        return {"tokenize": args.caption_tokenize, "df_references": references}
    if name == "perplexity":
        return {"model": args.perplexity_model, "stride": args.stride}
    if name == "distillation_kl":
        if not (args.teacher and args.student):
            raise CLIError("--metric distillation_kl needs --teacher and --student")
        return {"teacher": args.teacher, "student": args.student, "temperature": args.temperature,
                "top_k": args.top_k}
    return {}


def build_metrics(names: Sequence[str], args: argparse.Namespace,
                  references: list[list[str]] | None = None, **common: Any) -> list[Any]:
    """The named catalog metrics, built from the options (``common`` goes to each, e.g. track=False)."""
    return metric_recipe(names, args, references, **common)()


def metric_recipe(names: Sequence[str], args: argparse.Namespace,
                  references: list[list[str]] | None = None, **common: Any) -> MetricRecipe:
    """How to build the named catalog metrics from the options, in this process or a worker."""
    specs = [metric_spec(n) for n in names]
    return MetricRecipe.of([(spec.name, {**common, **metric_kwargs(spec.name, args, references)})
                            for spec in specs])


def add_store_argument(parser: argparse._ActionsContainer) -> None:  # a parser or an argument group: their base
    parser.add_argument("--store", metavar="PATH",
                        help="local experiment store (SQLite); default $OPIK_METRICS_STORE or "
                             "~/.local/share/opik-metrics/experiments.sqlite")
