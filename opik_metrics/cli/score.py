"""``opik-metrics score``: score a predictions file against reference files, one entry a line."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from opik_metrics.cli.errors import CLIError
from opik_metrics.cli.options import SOURCE, add_metric_options, aggregate_label, build_metrics
from opik_metrics.core import facts_of
from opik_metrics.core.table import format_table
from opik_metrics.metrics.catalog import metric_card, metric_classes


def read_text_file(path: str, what: str) -> str:
    """The whole of a UTF-8 text file, exactly as written (no newline translation); every way to
    fail (missing, a directory, unreadable, not UTF-8) is a CLIError naming the file."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise CLIError(f"{what} file not found: {path}") from None
    except IsADirectoryError:
        raise CLIError(f"{what} file {path} is a directory; give a file, one entry a line") from None
    except OSError as exc:
        raise CLIError(f"cannot read {what} file {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CLIError(f"{what} file {path} is not UTF-8 text: {exc.reason} at line {line} "
                       f"(byte offset {exc.start} in the file)") from None


def split_lines(text: str) -> list[str]:
    r"""One entry a line, lines ending at "\n" or "\r\n" only, as ``wc -l`` counts them. Never
    ``str.splitlines``: it also breaks at \f, \v, \x1c-\x1e, U+0085, U+2028 and U+2029, and so
    would pair every later prediction with the wrong reference. A final newline ends the last
    line (it starts no empty entry); a lone "\r" stays inside its line."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_lines(path: str, what: str) -> list[str]:
    """One entry a line of a UTF-8 file (see ``split_lines``)."""
    return split_lines(read_text_file(path, what))


def _load_references(paths: Sequence[str], n: int, pred_path: str) -> list[list[str]]:
    streams = [read_lines(p, "references") for p in paths]
    for path, stream in zip(paths, streams):
        if len(stream) != n:
            raise CLIError(f"{pred_path} has {n} lines but {path} has {len(stream)}; "
                           "files must have one entry a line, in the same order")
    return [list(refs) for refs in zip(*streams)]


def cmd_score(args: argparse.Namespace) -> int:
    if args.no_progress:
        # transformers' "Loading weights" bars too, here and in the workers this process starts;
        # the environment (read when transformers is imported), so text metrics still import nothing
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if args.input is not None:
        if args.source is not None:
            raise CLIError("--source goes with --predictions; records name their source column with --field source=COLUMN")
        from opik_metrics.cli.score_records import score_records
        return score_records(args)
    if args.predictions is None:
        raise CLIError("give --input RECORDS (JSONL, CSV, Parquet) or --predictions FILE with --references FILE")
    given = [f"--{o.replace('_', '-')}" for o in ("output", "field", "input_format", "overwrite") if getattr(args, o)]
    if args.engine != "local":
        given.append("--engine")
    if given:
        raise CLIError(f"{', '.join(given)} go with --input records")
    needs_image = [n for n in args.metric or [] if metric_card(n).needs_image]
    if needs_image:
        raise CLIError(f"{', '.join(needs_image)} scores images: give --input records with an image field")
    from opik_metrics.experiments.batch import score_texts

    outputs = read_lines(args.predictions, "predictions")
    if not outputs:
        raise CLIError(f"predictions file {args.predictions} has no lines: nothing to score")
    names = args.metric or ["rouge", "bleu"]
    needing = [card.name for card in map(metric_card, names) if card.needs_reference]
    if needing and not args.references:
        raise CLIError(f"{', '.join(needing)} need --references")
    references = _load_references(args.references, len(outputs), args.predictions) if args.references else None
    sources = read_lines(args.source, "sources") if args.source else None
    if sources is not None and len(sources) != len(outputs):
        raise CLIError(f"{args.predictions} has {len(outputs)} lines but {args.source} has {len(sources)}; "
                       "files must have one entry a line, in the same order")
    if args.baseline_path is not None and "bertscore" in names:   # else its UTF-8 error names no file
        read_text_file(args.baseline_path, "baseline")
    metrics = build_metrics(names, args, references, SOURCE, preprocess=True, track=False)
    lacking = [m.name for m in metrics if getattr(m, "needs_reference", False) is True and references is None]
    if lacking:
        raise CLIError(f"{', '.join(lacking)} as configured need --references")
    unsourced = [m.name for m in metrics if getattr(m, "needs_source", False) is True and sources is None]
    if unsourced:
        raise CLIError(f"{', '.join(unsourced)} score each output given its source: give --source FILE")
    result = score_texts(metrics, outputs, references, progress=not args.no_progress,
                         sources=sources)
    signed_preprocessing(metrics, result["signatures"])
    if args.format == "json":
        notes = [{"item": k, "score": s, "reason": r}
                 for k, item in enumerate(result["reasons"]) for s, r in item.items()]
        json.dump({"items": result["items"], "aggregate": result["aggregate"],
                   "signatures": result["signatures"], "reasons": notes}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(f"{len(outputs)} items: {args.predictions} vs {', '.join(args.references or ['(no references)'])}\n")
    corpus_names = set(result["aggregate"]) - {n for item in result["items"] for n in item}
    means = {c.name: c.carrier for m in metrics for c in facts_of(m).corpora if c.mean_of_carrier}
    rows = [[name, value, aggregate_label(name, corpus_names, means)] for name, value in result["aggregate"].items()]
    print(format_table(["score", "value", "aggregate"], rows))
    if args.items:
        shown = [n for n in result["aggregate"] if n not in corpus_names and n not in result["parts"]]
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


def signed_preprocessing(metrics: Sequence[Any], signatures: dict[str, str]) -> None:
    """The printed signatures of the metrics that scored prepared text (``--lowercase``,
    ``--split-sentences``) with what was done, as their facts (and a record file's header) say it:
    their results carry the metric's own signature."""
    for metric in metrics:
        preprocessing = getattr(metric, "preprocessing", None)
        if not preprocessing:
            continue
        for name in (metric.name, *(c.name for c in facts_of(metric).corpora)):
            if name in signatures:
                signatures[name] = f"{signatures[name]}|{preprocessing}"


def add_text_options(parser: argparse.ArgumentParser) -> None:
    """``score``'s options for every metric at once: the rule for several references and what is
    done to the texts before scoring (docs/command-line.md, "Several references, lowercasing and
    sentences")."""
    g = parser.add_argument_group("every metric: several references, text preparation")
    g.add_argument("--multi-reference", metavar="MODE",
                   help="how every metric with a choice counts several references: mean (the mean of the "
                        "single-reference scores: BLEU, chrF, METEOR, BERTScore, BARTScore, ROUGE) or a mode of "
                        "theirs (best, max, pooled, average); a metric's own option (--bartscore-multi-reference) "
                        "wins; a reference-based metric without a choice, or a mode it lacks, is an error")
    g.add_argument("--lowercase", action="store_true",
                   help="lowercase outputs, references and sources before scoring, for every metric (BLEU and "
                        "chrF lowercase as sacrebleu's -lc, case:lc in their signatures; the others' signatures "
                        "add lowercase:yes)")
    g.add_argument("--split-sentences", choices=["newline", "nltk"],
                   help="ROUGE's sentences (rougeLsum, --rouge155): newline, the text's own lines (rouge-score's "
                        "rule, the default), or nltk: one Punkt sentence a line, as rouge-score's split_summaries "
                        "(signature split:punkt-english, or split:punkt-untrained without nltk's punkt_tab data)")


COMMAND = "score"
HELP = "score records (JSONL, CSV, Parquet) or a predictions file against reference files"


def register(sub: Any) -> None:
    """Add ``score`` to the main parser's sub-commands."""
    score = sub.add_parser(
        "score", help=HELP,
        description="Score system outputs against references with the chosen metrics (default: ROUGE and "
                    "BLEU) and print each score's mean over items and its corpus value; --items adds one row "
                    "per item. Give records (--input, one output row per record with --output, resumable) or "
                    "two text files, one entry a line (--predictions, --references). A run that scores nothing "
                    "(no records, or no record with the columns it needs) is an error (exit 2).")
    g = score.add_argument_group("records (streamed in chunks, one output row per record)")
    g.add_argument("--input", "-i", metavar="FILE", help="records with fields output, reference (a string or a "
                   "list) and image where a metric needs it: .jsonl, .csv (header row) or .parquet")
    g.add_argument("--input-format", choices=["jsonl", "csv", "parquet"], help="when the extension does not say")
    g.add_argument("--field", action="append", metavar="INPUT=COLUMN",
                   help="read an input from another column: output=pred, reference=ref_a,ref_b (several "
                   "columns make the list of references), image=url (repeatable)")
    g.add_argument("--output", "-o", metavar="FILE", help="write one row per record to FILE (.parquet or .jsonl): "
                   "index, the record's id, kept columns, every score, reason, the statistics of corpus scores, "
                   "and the metrics' facts as metadata (`opik-metrics compare A.parquet B.parquet` pairs two such "
                   "files by id); a re-run with the same FILE resumes")
    g.add_argument("--id-field", metavar="COLUMN",
                   help="the column holding each record's id, unique, what pairs records across runs (default: "
                   "id when the input has it; '' for none); written to --output as text")
    g.add_argument("--keep", action="append", metavar="COLUMN",
                   help="copy this column of each record to --output (repeatable): numbers and booleans as they "
                        "are when every record's value is one, anything else as text")
    g.add_argument("--overwrite", action="store_true", help="start --output over instead of resuming it")
    g.add_argument("--chunk-size", type=int, default=1024, help="records scored at a time (default 1024)")
    g.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="local: this machine (default); ray: Ray Data workers (pip install 'opik-metrics[ray]')")
    g.add_argument("--workers", type=int, help="processes scoring at once: local default every core for text "
                   "metrics, 1 for model-backed ones (whose torch uses the cores); Ray default 2")
    g.add_argument("--address", help="a running Ray cluster's address (default: start a local one)")
    g.add_argument("--num-gpus", type=float, default=0, help="GPUs per Ray worker, for model-backed metrics")
    g = score.add_argument_group("text files (one entry a line)")
    g.add_argument("--predictions", "-p", help="file of predictions, one a line")
    g.add_argument("--references", "-r", action="append",
                   help="file of references, one a line; repeat for several references per item "
                   "(needed by reference-based metrics)")
    g.add_argument("--source", "-s", metavar="FILE",
                   help="file of sources (the documents the outputs were made from), one a line: BARTScore's "
                   "faithfulness, UniEval, GPTScore read it")
    score.add_argument("--metric", "-m", action="append", choices=list(metric_classes()),
                       help="metric to compute (repeatable; default: rouge and bleu; clipscore scores the "
                       "records' images). Installed plugin metrics load only when one is named: "
                       "`score -m PLUGIN --help` lists them all with their options")
    score.add_argument("--format", choices=["table", "json"], default="table",
                       help="table (default) or one JSON object: items, aggregate, signatures")
    score.add_argument("--items", action="store_true", help="also print a per-item table")
    score.add_argument("--no-progress", action="store_true", help="hide progress bars")
    add_text_options(score)
    add_metric_options(score, own=("--lowercase",))
    score.set_defaults(func=cmd_score)
