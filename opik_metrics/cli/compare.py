"""``opik-metrics compare``: are the differences between experiments real? Reads them from the
local store, an Opik server or record files (``score --output``), writes an HTML report with plots
and a JSON file, prints a summary.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from opik_metrics.cli.options import add_store_argument, check_work_bounds
from opik_metrics.metric_kit.collector import promote_to_oldest
from opik_metrics.compare.report.summary import format_comparison


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    from opik_metrics.compare.statistics.defaults import (DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED,
                                                          MAX_PERMUTATIONS, MAX_RESAMPLES)

    parser.add_argument("names", nargs="+", metavar="NAME",
                        help="experiments to compare (two or more); the first is the baseline. An existing "
                             ".jsonl or .parquet file is a record file written by `score --input ... --output` "
                             "(read with no store and no server; its rows pair up by id); any other name is an "
                             "experiment of the local store or the Opik server")
    source = parser.add_mutually_exclusive_group()
    add_store_argument(source)
    source.add_argument("--opik", action="store_true",
                        help="read the experiments from the configured Opik server (default: the server "
                             "when one is configured, else the local store)")
    parser.add_argument("--project", help="Opik project of the experiments (--opik)")
    parser.add_argument("--output", "-o", metavar="DIR",
                        help="also write the report to DIR: index.html, comparison.json, plots/ (without it, "
                             "the summary table alone is printed)")
    parser.add_argument("--metric", "-m", action="append", metavar="SCORE",
                        help="score to compare (repeatable; default: every score but precision/recall parts)")
    parser.add_argument("--all-scores", action="store_true", help="also compare precision and recall parts")
    parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES,
                        help=f"bootstrap resamples (default {DEFAULT_RESAMPLES}, at most {MAX_RESAMPLES:,}; "
                             "resamples x paired items at most 250,000,000)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"seed of the bootstrap and the permutations (default {DEFAULT_SEED})")
    parser.add_argument("--test", choices=["auto", "bootstrap", "permutation"], default="auto",
                        help="the paired test: `auto` (default) the exact McNemar test for pass/fail scores (every "
                             "value 0 or 1) and the paired permutation test (approximate randomization, sacrebleu's "
                             "paired-ar) for the rest; `bootstrap` or `permutation` for every score. Intervals are "
                             "the bootstrap's (--resamples) whatever the test")
    parser.add_argument("--permutations", type=int, default=1000,
                        help="shuffles of the permutation test (default 1000, at most "
                             f"{MAX_PERMUTATIONS:,}; sacrebleu's paired-ar draws 10000)")
    parser.add_argument("--p-value", choices=["calibrated", "sacrebleu"], default="calibrated",
                        help="how p-values are read off the null: `calibrated` (default; two-sided, the resampled "
                             "differences shifted to mean zero) or `sacrebleu` (its paired-bs/paired-ar p-value, to "
                             "reproduce its output: it behaves as one-sided, so at 0.05 it rejects about 10%% of true nulls)")
    parser.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE,
                        help=f"confidence level of intervals; significance at 1 - it (default {DEFAULT_CONFIDENCE})")
    parser.add_argument("--top-k", type=int, default=5, help="items with the largest differences listed (default 5)")
    parser.add_argument("--cluster-by", metavar="FIELD",
                        help="resample whole clusters of items sharing FIELD (a document id, a scenario): a record "
                             "file's kept column or a dataset item's field. Trials of one item (rows sharing an id, "
                             "Opik's trial_count) are always merged into their item")
    parser.add_argument("--format", choices=["table", "json", "markdown"], default="table",
                        help="what to print: a summary table (default), the whole comparison as JSON, or (with "
                             "--fail-on) the gate's Markdown table, for $GITHUB_STEP_SUMMARY")
    gate = parser.add_argument_group("regression gate (exit 0: passed, 1: failed, 2: a usage or data error)")
    gate.add_argument("--fail-on", choices=["worse", "not-better"],
                      help="gate the scores (the --metric ones, else every compared score) of each system against "
                           "the baseline: `worse` fails when one is significantly worse in its declared direction, "
                           "`not-better` unless every one is significantly better")
    gate.add_argument("--margin", action="append", metavar="SCORE=X", default=[],
                      help="non-inferiority for SCORE instead of the test: fail unless the difference's interval, in "
                           "the score's direction, stays above -X (repeatable; e.g. corpus_bleu=0.005)")
    gate.add_argument("--correction", choices=["holm", "bonferroni", "none"], default="holm",
                      help="correction of the gated scores' p-values for their number (default holm)")
    gate.add_argument("--junit", metavar="FILE", help="also write the gate as JUnit XML, one test case per gated score")
    gate.add_argument("--allow-different-options", action="store_true",
                      help="gate scores whose two sides were made with different options (a stemmer, a tokenizer, a "
                           "model: their signatures differ in more than package versions); refused by default "
                           "(exit 2), and said first in the report when allowed")
    parser.add_argument("--publish", action="store_true",
                        help="write the comparison onto the experiments on the Opik server: against the baseline, "
                             "each score's difference and verdict as experiment scores; the full comparison in their "
                             "metadata; a dashboard with the table, a leaderboard and a chart of the differences "
                             "(experiments of the local store must be pushed first)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print, as JSON, exactly what --publish would write, and write nothing")
    parser.add_argument("--publish-all-scores", action="store_true",
                        help="with --publish or --dry-run: also intervals, p-values and corpus values as experiment "
                             "scores (each name is one more column on Opik's experiments page)")


def load_for_compare(args: argparse.Namespace) -> tuple[list, str]:
    """The named experiments (record files, the local store or the Opik server), and their source in words."""
    from opik_metrics.compare.reading.sources import load_compared

    return load_compared(args.names, store=args.store, opik=args.opik, project_name=args.project,
                         publishing=args.publish or args.dry_run, check_pushed=args.publish and not args.dry_run,
                         local_advice="or pass --store PATH to compare experiments of the local store")


def cmd_compare(args: argparse.Namespace) -> int:
    if len(args.names) < 2:
        raise ValueError("compare needs at least two experiment names")
    check_work_bounds(args)
    margins = parse_margins(args.margin)
    if not args.fail_on and (margins or args.junit or args.format == "markdown" or args.correction != "holm"
                             or args.allow_different_options):
        raise ValueError("--margin, --correction, --junit, --allow-different-options and --format markdown go with "
                         "--fail-on worse|not-better")
    if args.publish_all_scores and not (args.publish or args.dry_run):
        raise ValueError("--publish-all-scores goes with --publish or --dry-run")
    from opik_metrics.compare.analysis import CompareSettings, compare_experiments, unpaired

    settings = CompareSettings(resamples=args.resamples, seed=args.seed, confidence=args.confidence,
                               cluster_by=args.cluster_by, test=args.test, p_value=args.p_value,
                               permutations=args.permutations,
                               top_k=args.top_k, metrics=tuple(args.metric) if args.metric else None,
                               all_scores=args.all_scores)
    settings.check()
    experiments, source = load_for_compare(args)
    promote_to_oldest()   # the records live to the end: young collections need not walk them (2-3 s at 100,000 items)
    reason = unpaired(experiments)
    if reason is not None:          # else every row of the table would say "nothing to compare", never why
        raise ValueError(reason)
    comparison = compare_experiments(experiments, settings, source=source)
    gated = None
    if args.fail_on:
        from opik_metrics.compare.gate.gating import gate_comparison

        gated = gate_comparison(comparison, mode=args.fail_on, correction=args.correction, margins=margins,
                                scores=args.metric, allow_different_options=args.allow_different_options)
        comparison = gated.comparison
        if args.junit:
            write_junit(gated, args.junit)
    if args.dry_run:
        from opik_metrics.compare.publishing.publication import build_publication

        # stderr: stdout stays the JSON plan alone, for `| jq` and for tests that parse it
        print("dry run: nothing was written to Opik; the JSON below is exactly what --publish would write",
              file=sys.stderr)
        json.dump(build_publication(comparison, args.project, all_scores=args.publish_all_scores), sys.stdout,
                  indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return _gate_exit(gated)
    files = write_report_to(comparison, args.output) if args.output else None
    if args.format == "json":
        sys.stdout.write(comparison.to_json())
    elif args.format == "markdown" and gated is not None:
        from opik_metrics.compare.gate.output import markdown_table

        sys.stdout.write("".join(f"> **Warning:** {line}\n\n" for line in comparison.measurement_warnings()))
        sys.stdout.write(markdown_table(gated.rows, gated.result))
    else:
        print(format_comparison(comparison))
        if files is not None:
            print(f"\nreport: {files.html}\ndata:   {files.json}")
    if args.publish:
        from opik_metrics.compare.publishing.opik_publish import publish_comparison

        report = publish_comparison(comparison, project_name=args.project, all_scores=args.publish_all_scores)
        say = sys.stderr if args.format == "json" else sys.stdout      # stdout holds the JSON alone
        print(f"published on {len(report.written)} experiment(s)"
              + (f", unchanged on {', '.join(report.unchanged)}" if report.unchanged else "")
              + f"; dashboard {report.dashboard_id}" + ("" if report.dashboard_changed else " (unchanged)"), file=say)
        for name, kept in report.kept.items():
            for score, (theirs, ours) in kept.items():
                print(f"{name}: {score} was logged before as {theirs:.6g}; kept (this comparison has {ours:.6g})",
                      file=say)
    return _gate_exit(gated)


GATE_FAILED = 1


def _gate_exit(gated: Any) -> int:
    """The exit status, and the gate's one-sentence exit line on stderr when there is a gate."""
    if gated is None:
        return 0
    print(gated.result.exit_line, file=sys.stderr)
    return 0 if gated.passed else GATE_FAILED


def parse_margins(values: list[str]) -> dict[str, float]:
    """``--margin SCORE=X`` options as {score: X}; X a finite number at or above 0."""
    margins: dict[str, float] = {}
    for value in values:
        score, sep, number = value.rpartition("=")
        try:
            margin = float(number)
        except ValueError:
            margin = float("nan")
        if not sep or not score.strip() or not 0 <= margin < float("inf"):
            raise ValueError(f"--margin {value!r}: expected SCORE=X with X a number at or above 0 "
                             "(e.g. corpus_bleu=0.005)")
        if score in margins:
            raise ValueError(f"--margin names {score!r} twice")
        margins[score] = margin
    return margins


def write_junit(gated: Any, path: str) -> None:
    """Write the gate's JUnit XML to ``path`` (a one-line error when it cannot be written)."""
    from opik_metrics.compare.gate.output import junit_xml

    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(junit_xml(gated.rows, gated.result))
    except OSError as exc:
        raise ValueError(f"cannot write the JUnit report to {path}: {exc.strerror or exc}") from None


def write_report_to(comparison: Any, folder: str) -> Any:
    """Write the report folder (a one-line error when it cannot be written)."""
    from opik_metrics.compare.report.folder import write_report

    try:
        files = write_report(comparison, folder)
    except OSError as exc:
        raise ValueError(f"cannot write the report to {folder}: {exc}") from None
    if files.note is not None:
        print(f"opik-metrics: note: the report has {files.note}", file=sys.stderr)
    return files


COMMAND = "compare"
HELP = "compare experiments: bootstrap intervals, paired significance, an HTML report"


def register(subparsers: Any) -> None:
    """Add ``compare`` to the ``add_subparsers()`` object of the main parser."""
    parser = subparsers.add_parser(
        "compare", help=HELP,
        description="Compare experiments item by item, from the local store, an Opik server or record files "
                    "(`score --input ... --output` FILE.jsonl / FILE.parquet, paired by id): per-score "
                    "means with seeded bootstrap confidence intervals, paired bootstrap significance on "
                    "shared items (corpus BLEU recomputed on each resample), wins/ties/losses, the items that "
                    "differ most and failed items; writes DIR/index.html (plots) and DIR/comparison.json.")
    add_compare_arguments(parser)
    parser.set_defaults(func=cmd_compare)
