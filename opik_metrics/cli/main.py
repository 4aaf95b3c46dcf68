"""The ``opik-metrics`` command: thin argument parsing over the library's layers."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from opik_metrics.metrics.catalog import METRICS, metric_spec
from opik_metrics.cli.compare import register as register_compare_command
from opik_metrics.cli.experiments import register as register_experiment_commands
from opik_metrics.neural.models.registry import ModelNotAvailableError
from opik_metrics.core.table import format_table


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def read_lines(path: str, what: str) -> list[str]:
    """One entry a line (trailing newline removed; the file must be UTF-8)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CLIError(f"{what} file not found: {path}") from None
    except UnicodeDecodeError as exc:
        raise CLIError(f"{what} file {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return text.splitlines()


def _metric_kwargs(name: str, args: argparse.Namespace,
                   references: list[list[str]] | None = None) -> dict[str, Any]:
    if name == "rouge":
        kw: dict[str, Any] = {"use_stemmer": args.use_stemmer, "tokenizer": args.rouge_tokenizer,
                              "remove_stopwords": args.remove_stopwords}
        if args.rouge_type:
            kw["rouge_types"] = tuple(args.rouge_type)
        return kw
    if name == "bleu":
        return {"tokenize": args.bleu_tokenize, "lowercase": args.lowercase,
                "smooth_method": args.smooth_method}
    if name == "bertscore":
        return {"model": args.bertscore_model, "num_layers": args.num_layers, "lang": args.lang,
                "idf": args.idf, "idf_references": references if args.idf else None,
                "rescale_with_baseline": args.rescale_with_baseline or args.baseline_path is not None,
                "baseline_path": args.baseline_path, "batch_size": args.batch_size, "device": args.device}
    if name == "perplexity":
        return {"model": args.perplexity_model, "stride": args.stride}
    if name == "distillation_kl":
        if not (args.teacher and args.student):
            raise CLIError("--metric distillation_kl needs --teacher and --student")
        return {"teacher": args.teacher, "student": args.student, "temperature": args.temperature,
                "top_k": args.top_k}
    return {}


def _load_references(paths: Sequence[str], n: int, pred_path: str) -> list[list[str]]:
    streams = [read_lines(p, "references") for p in paths]
    for path, stream in zip(paths, streams):
        if len(stream) != n:
            raise CLIError(f"{pred_path} has {n} lines but {path} has {len(stream)}; "
                           "files must have one entry a line, in the same order")
    return [list(refs) for refs in zip(*streams)]


def cmd_score(args: argparse.Namespace) -> int:
    from opik_metrics.experiments.batch import score_texts

    outputs = read_lines(args.predictions, "predictions")
    names = args.metric or ["rouge", "bleu"]
    specs = [metric_spec(n) for n in names]
    needing = [s.name for s in specs if s.needs_reference]
    if needing and not args.references:
        raise CLIError(f"{', '.join(needing)} need --references")
    references = _load_references(args.references, len(outputs), args.predictions) if args.references else None
    try:
        metrics = [spec.build(track=False, **_metric_kwargs(spec.name, args, references)) for spec in specs]
    except (ValueError, TypeError, ModelNotAvailableError) as exc:
        raise CLIError(str(exc)) from None
    result = score_texts(metrics, outputs, references, progress=not args.no_progress)
    if args.format == "json":
        notes = [{"item": k, "score": s, "reason": r}
                 for k, item in enumerate(result["reasons"]) for s, r in item.items()]
        json.dump({"items": result["items"], "aggregate": result["aggregate"],
                   "signatures": result["signatures"], "reasons": notes}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(f"{len(outputs)} items: {args.predictions} vs {', '.join(args.references or ['(no references)'])}\n")
    corpus_names = set(result["aggregate"]) - {n for item in result["items"] for n in item}
    rows = [[name, value, "corpus statistics" if name in corpus_names else "mean over items"]
            for name, value in result["aggregate"].items()]
    print(format_table(["score", "value", "aggregate"], rows))
    if args.items:
        shown = [n for n in result["aggregate"] if n not in corpus_names
                 and not n.endswith(("_precision", "_recall"))]
        rows = [[k, *(item.get(n, float("nan")) for n in shown)] for k, item in enumerate(result["items"])]
        print()
        print(format_table(["item", *shown], rows))
    print()
    for metric, sig in result["signatures"].items():
        print(f"{metric}: {sig}")
    flagged = sorted({(k, r) for k, item in enumerate(result["reasons"]) for r in item.values()})
    for k, reason in flagged:
        print(f"note: item {k}: {reason}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="opik-metrics", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    score = sub.add_parser("score", help="score a predictions file against reference files, one entry a line")
    score.add_argument("--predictions", "-p", required=True, help="file of predictions, one a line")
    score.add_argument("--references", "-r", action="append",
                       help="file of references, one a line; repeat for several references per item "
                       "(needed by reference-based metrics)")
    score.add_argument("--metric", "-m", action="append", choices=sorted(METRICS),
                       help="metric to compute (repeatable; default: rouge and bleu)")
    score.add_argument("--format", choices=["table", "json"], default="table")
    score.add_argument("--items", action="store_true", help="also print a per-item table")
    score.add_argument("--no-progress", action="store_true", help="hide progress bars")
    g = score.add_argument_group("ROUGE options")
    g.add_argument("--rouge-type", action="append", help="rouge1..rouge9, rougeL, rougeLsum, rougeW, "
                   "rougeS4, rougeSU4, rougeS, rougeSU (repeatable; default rouge1 rouge2 rougeL)")
    g.add_argument("--use-stemmer", action="store_true", help="Porter stemming, as rouge-score")
    g.add_argument("--remove-stopwords", action="store_true")
    g.add_argument("--rouge-tokenizer", choices=["default", "unicode"], default="default")
    g = score.add_argument_group("BLEU options")
    g.add_argument("--bleu-tokenize", default="13a", help="13a (default), intl, char, zh, none")
    g.add_argument("--lowercase", action="store_true")
    g.add_argument("--smooth-method", default="exp", choices=["exp", "floor", "add-k", "none"])
    g = score.add_argument_group("BERTScore options")
    _add_bertscore_options(g)
    g.add_argument("--idf", action="store_true", help="idf weights from every reference in the files")
    g.add_argument("--rescale-with-baseline", action="store_true",
                   help="rescale with bert_score's baseline for --lang and the model")
    g.add_argument("--baseline-path", help="your own baseline file (LAYER,P,R,F lines); implies rescaling")
    g.add_argument("--batch-size", type=int, default=64)
    g = score.add_argument_group("perplexity options")
    g.add_argument("--perplexity-model", default="packaged:smollm2",
                   help="causal LM: hub id, local path, .gguf file or packaged:smollm2 (default)")
    g.add_argument("--stride", type=int, help="sliding-window stride for texts longer than the context")
    g = score.add_argument_group("distillation KL options")
    g.add_argument("--teacher", help="teacher causal LM (hub id, path or packaged:smollm2)")
    g.add_argument("--student", help="student causal LM sharing the teacher's vocabulary")
    g.add_argument("--temperature", type=float, default=1.0)
    g.add_argument("--top-k", type=int, help="truncate to the teacher's top k tokens, renormalised")
    score.set_defaults(func=cmd_score)
    explain = sub.add_parser("explain", help="BERTScore of one pair, with its token similarity heatmap as a PNG")
    explain.add_argument("--output", "-o", required=True, help="the candidate text")
    explain.add_argument("--reference", "-r", required=True, help="the reference text")
    explain.add_argument("--png", required=True, help="where to write the heatmap")
    _add_bertscore_options(explain)
    explain.set_defaults(func=cmd_explain)
    register_experiment_commands(sub)
    register_compare_command(sub)
    return parser


def _add_bertscore_options(group: Any) -> None:
    group.add_argument("--bertscore-model", help="hub id, local path or packaged:minilm "
                       "(default: bert_score's model for --lang, roberta-large for English)")
    group.add_argument("--num-layers", type=int, help="layer whose embeddings are used (default: bert_score's table)")
    group.add_argument("--lang", default="en")
    group.add_argument("--device", help="cpu, cuda, ... (default: GPU when present)")


def cmd_explain(args: argparse.Namespace) -> int:
    from opik_metrics.metrics.bertscore import BERTScore

    try:
        metric = BERTScore(model=args.bertscore_model, num_layers=args.num_layers, lang=args.lang,
                           device=args.device, track=False)
    except (ValueError, TypeError, ModelNotAvailableError) as exc:
        raise CLIError(str(exc)) from None
    results = {r.name: r.value for r in metric.score(args.output, args.reference)}
    path = metric.save_heatmap(args.output, args.reference, args.png)
    print(format_table(["score", "value"], list(results.items())))
    print(f"\nheatmap: {path}\n{metric.signature}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except CLIError as exc:
        print(f"opik-metrics: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
