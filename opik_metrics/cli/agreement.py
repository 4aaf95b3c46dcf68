"""``opik-metrics agreement``: which of an experiment's scores agrees best with a human score
(Kendall tau-b and tau-c, Spearman, Pearson, with bootstrap intervals), from the local store, an
Opik server or a record file; given several experiments, raters, levels or --compare-metrics, the
meta-evaluation (``opik_metrics.meta_evaluation.evaluation``)."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from opik_metrics.cli.errors import CLIError
from opik_metrics.cli.options import add_store_argument, check_work_bounds


def _meta_asked(args: argparse.Namespace) -> bool:
    """Whether anything beyond one experiment's pooled agreement with one human score is asked."""
    return (len(args.name) > 1 or bool(args.level and args.level != ["pooled"]) or bool(args.group_by)
            or args.compare_metrics or len(args.human) > 1 or bool(args.ratings) or args.labels
            or bool(args.threshold))


def cmd_meta(args: argparse.Namespace) -> int:
    """Levels, several experiments or raters, metric-vs-metric tests: the meta-evaluation."""
    from opik_metrics.compare.reading.sources import load_compared
    from opik_metrics.compare.statistics.bootstrap import resamples_for
    from opik_metrics.meta_evaluation.evaluation import MetaSettings, meta_evaluate
    from opik_metrics.meta_evaluation.metric_agreement import DEFAULT_METHODS, too_few_resamples
    from opik_metrics.meta_evaluation.table import rated_table, ratings_file

    settings = MetaSettings(levels=tuple(dict.fromkeys(args.level or ["pooled"])),
                            methods=tuple(dict.fromkeys(args.method)) if args.method else DEFAULT_METHODS,
                            resamples=args.resamples, seed=args.seed, confidence=args.confidence,
                            compare_metrics=args.compare_metrics, permutations=args.permutations,
                            labels=True if args.labels else None, thresholds=_thresholds(args.threshold),
                            raters=args.raters, group_by=args.group_by, ratings_file=args.ratings)
    settings.check()
    if args.group_by and "system" in settings.levels:
        raise ValueError("--level system needs systems (several experiments); the outputs --group-by collects "
                         "under one item are not systems")
    if settings.resamples < resamples_for(1.0 - settings.confidence):
        raise ValueError(f"--resamples: {too_few_resamples(settings.resamples, 1.0 - settings.confidence)}")
    if settings.compare_metrics and settings.permutations < resamples_for(1.0 - settings.confidence):
        raise ValueError("--permutations: "
                         + too_few_resamples(settings.permutations, 1.0 - settings.confidence, "permutations"))
    records, _ = load_compared(args.name, store=args.store, opik=args.opik, project_name=args.project,
                               publishing=args.publish, check_pushed=args.publish,
                               local_advice="or pass --store PATH to read an experiment of the local store")
    _read_annotators(records, args)
    long = ratings_file(args.ratings) if args.ratings else None
    table = rated_table(records, args.human, args.metric, group_by=args.group_by, long_ratings=long)
    result = meta_evaluate(table, settings, progress=sys.stderr.isatty())
    files = None
    if args.output:
        from opik_metrics.meta_evaluation.meta_report import write_meta_report

        try:
            files = write_meta_report(result, args.output)
        except OSError as exc:
            raise ValueError(f"cannot write the report to {args.output}: {exc}") from None
        if files.note is not None:
            print(f"opik-metrics: note: the report has {files.note}", file=sys.stderr)
    sys.stdout.write(result.to_json() if args.format == "json" else result.format_table())
    if files is not None and args.format != "json":
        print(f"\nreport: {files.html}\ndata:   {files.json}")
    if args.publish:
        from opik_metrics.meta_evaluation.publish import publish_meta

        say = sys.stderr if args.format == "json" else sys.stdout
        for experiment in records:
            published = publish_meta(result, experiment.name, project_name=args.project)
            print(f"{'published' if published.written else 'unchanged'}: {len(published.scores)} meta-evaluation "
                  f"score(s) on experiment {experiment.name}", file=say)
            for score, (theirs, ours) in published.kept.items():
                print(f"{experiment.name}: {score} was logged before as {theirs:.6g}; kept (this meta-evaluation "
                      f"has {ours:.6g})", file=say)
    return 0


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


def _read_annotators(records: list, args: argparse.Namespace) -> None:
    """An Opik experiment's human score, read per author (``value_by_author``): one rater each."""
    opik_read = [r for r in records if any(item.trace_id for item in r.items)]
    if not opik_read or args.ratings:
        return
    from opik_metrics.meta_evaluation.opik_authors import read_authors

    for experiment in opik_read:
        read_authors(experiment, args.human, project_name=args.project, progress=sys.stderr.isatty())


def _check_names(args: argparse.Namespace) -> None:
    """What the shared reader would say in compare's words, said in agreement's: a record file that
    does not exist, a record file beside a stored experiment."""
    from opik_metrics.compare.reading.sources import RECORD_FILE_SUFFIXES, is_record_file

    absent = [n for n in args.name if n.lower().endswith(RECORD_FILE_SUFFIXES) and not os.path.exists(n)]
    if absent and args.store is None and not args.opik:
        raise CLIError(f"no such record file: {absent[0]} (agreement reads the .jsonl or .parquet files that "
                       "`score --output` writes: check the path, or the step that should have written it)")
    files = [n for n in args.name if is_record_file(n)]
    if files and len(files) < len(args.name):
        other = next(n for n in args.name if n not in files)
        raise CLIError(f"{other!r} is not a record file (an existing .jsonl or .parquet file) but {files[0]} is: "
                       "agreement reads several systems either all from record files or all from experiments")


def cmd_agreement(args: argparse.Namespace) -> int:
    if not args.human and not args.ratings:
        raise ValueError("--human SCORE is required (or --ratings FILE with the ratings as a long table)")
    args.human = args.human or []
    check_work_bounds(args)
    _check_names(args)
    if _meta_asked(args):
        return cmd_meta(args)
    from opik_metrics.compare.reading.sources import load_compared
    from opik_metrics.compare.statistics.bootstrap import resamples_for
    from opik_metrics.meta_evaluation.metric_agreement import DEFAULT_METHODS, AgreementSettings, too_few_resamples
    from opik_metrics.meta_evaluation.source import agreement_of

    methods = tuple(dict.fromkeys(args.method)) if args.method else DEFAULT_METHODS
    settings = AgreementSettings(methods=methods, raters=args.raters, resamples=args.resamples, seed=args.seed,
                                 confidence=args.confidence)
    settings.check()
    if settings.resamples < resamples_for(1.0 - settings.confidence):
        raise ValueError(f"--resamples: {too_few_resamples(settings.resamples, 1.0 - settings.confidence)}")
    [records], _ = load_compared(args.name, store=args.store, opik=args.opik, project_name=args.project,
                                 publishing=args.publish, check_pushed=args.publish,
                                 local_advice="or pass --store PATH to read an experiment of the local store")
    _read_annotators([records], args)
    result = agreement_of(records, args.human[0], args.metric, settings, progress=sys.stderr.isatty())
    _note_labels(result, records, args.human[0])
    files = None
    if args.output:
        from opik_metrics.meta_evaluation.report import write_agreement_report

        try:
            files = write_agreement_report(result, args.output)
        except OSError as exc:
            raise ValueError(f"cannot write the report to {args.output}: {exc}") from None
        if files.note is not None:
            print(f"opik-metrics: note: the report has {files.note}", file=sys.stderr)
    if args.format == "json":
        sys.stdout.write(result.to_json())
    else:
        sys.stdout.write(result.format_table())
        if files is not None:
            print(f"\nreport: {files.html}\ndata:   {files.json}")
    if args.publish:
        from opik_metrics.meta_evaluation.publish import publish_agreement

        published = publish_agreement(result, records.name, project_name=args.project)
        say = sys.stderr if args.format == "json" else sys.stdout      # stdout holds the JSON alone
        print(f"{'published' if published.written else 'unchanged'}: {len(published.scores)} agreement score(s) on "
              f"experiment {records.name}", file=say)
        for score, (theirs, ours) in published.kept.items():
            print(f"{records.name}: {score} was logged before as {theirs:.6g}; kept (this agreement has {ours:.6g})",
                  file=say)
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
                    "--group-by, --ratings, --labels or --compare-metrics run the meta-evaluation: levels, "
                    "metric-vs-metric permutation tests, the raters' own agreement, label agreement.")
    parser.add_argument("name", metavar="NAME", nargs="+",
                        help="the experiment (local store or Opik server), or a record file (.jsonl / .parquet "
                             "written by `score --input ... --output --keep COLUMN`); several experiments on one "
                             "dataset are several systems (item and system levels)")
    parser.add_argument("--human", metavar="SCORE", action="append",
                        help="the human score's name; repeated, one rater column each (their mean is the human "
                             "score, and the raters' own agreement is shown)")
    parser.add_argument("--level", action="append", choices=["pooled", "item", "system"],
                        help="correlate pooled over all cells (default), per item across systems then averaged, "
                             "or on the systems' means (with pairwise accuracy); repeatable")
    parser.add_argument("--group-by", metavar="FIELD",
                        help="one file whose rows are several outputs of one item: FIELD names the item (the "
                             "unit resampled; item level correlates each item's outputs)")
    parser.add_argument("--ratings", metavar="FILE",
                        help="human ratings as a long table (.jsonl / .csv with item, rater and rating columns; "
                             "item is the experiment's item key; with several experiments a system column names "
                             "the experiment), instead of --human's values")
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
                             "parts and the human one)")
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
