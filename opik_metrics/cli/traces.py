"""``opik-metrics traces score``: score a project's traces (or spans) already in Opik with the
pack's metrics, write the scores back as feedback scores, and summarise the window (means with
intervals, corpus scores), optionally against an earlier window."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from opik_metrics.cli.errors import CLIError, fail
from opik_metrics.cli.options import SOURCE, add_metric_options, build_metrics
from opik_metrics.core.table import format_table, one_line
from opik_metrics.metrics.catalog import metric_classes

TRACES_INCOMPLETE = 3      # the server lacks scores that were sent (as `experiments push`)


def _window(text: str) -> tuple[str, str]:
    start, sep, end = text.partition("/")
    if not sep or not start.strip() or not end.strip():
        raise CLIError(f"--compare-window {text!r}: expected START/END, e.g. 2026-11-15/2026-11-22")
    return start.strip(), end.strip()


def _summary_rows(report: Any) -> list[list[Any]]:
    summary = report.summary
    rows = [[name, s.n, s.mean, f"[{s.low:.4f}, {s.high:.4f}]"] for name, s in summary.scores.items()]
    rows += [[name, summary.corpus_items.get(name), value, "corpus statistics"] for name, value in summary.corpus.items()]
    return rows


def cmd_score(args: argparse.Namespace) -> int:
    from opik_metrics.streams.fields import FieldError
    from opik_metrics.traces.fields import TraceFields
    from opik_metrics.traces.reading import check_window, iso_time

    try:
        fields = TraceFields.parse(args.field)
    except FieldError as exc:
        raise CLIError(str(exc)) from None
    window = _window(args.compare_window) if args.compare_window else None
    for what, value in (("--since", args.since), ("--until", args.until),
                        *zip(("--compare-window start", "--compare-window end"), window or ())):
        if value is not None:
            iso_time(value, what)
    check_window(args.since, args.until)
    if window is not None:
        check_window(*window, f"--compare-window {args.compare_window}")
    if not 1 <= args.page_size <= 2000:
        raise CLIError(f"--page-size {args.page_size}: give 1 to 2000 (the server streams at most 2,000 a page)")
    if args.spans and args.threads:
        raise CLIError("give --spans or --threads, not both")
    from opik_metrics.traces.connection import connect

    client = connect(args.project)            # the server and the project first: before any model loads
    metrics = build_metrics(args.metric, args, None, SOURCE, track=False)
    from opik_metrics.traces.scoring import score_traces
    from opik_metrics.traces.summary import compare_windows

    entity = "spans" if args.spans else "threads" if args.threads else "traces"
    common: dict[str, Any] = dict(fields=fields, entity=entity, replace=args.replace, page_size=args.page_size,
                                  progress=not args.no_progress, client=client)
    report = score_traces(args.project, metrics, filter_string=args.filter, since=args.since, until=args.until, **common)
    compared = []
    if window is not None:
        earlier = score_traces(args.project, metrics, filter_string=args.filter, since=window[0], until=window[1],
                               **common)
        compared = [compare_windows(name, earlier.values[name], report.values[name])
                    for name in report.values if len(report.values[name]) and len(earlier.values.get(name, ()))]
    if args.format == "json":
        out = report.as_dict()
        if window is not None:
            out["compare_window"] = {"window": list(window), "report": earlier.as_dict(),
                                     "scores": {c.name: c.as_dict() for c in compared}}
        json.dump(out, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print("\n".join(report.lines()))
        if report.summary and (report.summary.scores or report.summary.corpus):
            print()
            print(format_table(["score", "n", "mean", "95% interval"], _summary_rows(report)))
        if window is not None:
            print()
            print("\n".join(one_line(f"earlier window {window[0]}/{window[1]}: {line}") for line in earlier.lines()))
        if compared and window is not None:
            print()
            print(one_line(f"against {window[0]}/{window[1]} (unpaired bootstrap: different {entity})"))
            print(format_table(["score", "earlier", "this window", "delta", "95% interval", "significant"],
                               [[c.name, c.a.mean, c.b.mean, c.delta, f"[{c.low:.4f}, {c.high:.4f}]",
                                 "yes" if c.significant else "no"] for c in compared]))
    if report.complete and (window is None or earlier.complete):
        return 0
    lacking = report if not report.complete else earlier
    return fail(f"the Opik server lacks scores that were sent: {lacking.lines()[-1]}; run the same command again "
                "to send only what is missing", TRACES_INCOMPLETE)


COMMAND = "traces"
HELP = "score traces or spans already in Opik"


def register(subparsers: Any) -> None:
    """Add ``traces score`` to the main parser's sub-commands."""
    traces = subparsers.add_parser("traces", help=HELP)
    sub = traces.add_subparsers(dest="traces_command", required=True)
    score = sub.add_parser(
        "score", help="score a project's traces (or spans) with the pack's metrics, as feedback scores",
        description="Read a project's traces (or --spans) page by page with Opik's filter language, score them, "
                    "write each score back as a feedback score (its reason marked with the metric's signature) and "
                    "read back what arrived. Resumable and idempotent: what already holds a metric's scores "
                    "under the same signature is skipped unless --replace (a score held with another value than "
                    "the one sent is sent again); one run at a time per project and metric. Exit 3 when the "
                    "server lacks scores that were sent or holds other values (named; the same command sends "
                    "just those); 2 for a usage error, a project the server lacks, a server that does not "
                    "answer or page, or another run of the same metric.")
    score.add_argument("--project", required=True, help="the Opik project")
    score.add_argument("--filter", metavar="OQL", help='Opik query language, e.g. \'tags contains "prod"\'')
    score.add_argument("--since", metavar="DATE", help="only traces that start at or after DATE (ISO 8601)")
    score.add_argument("--until", metavar="DATE", help="only traces that start before DATE (ISO 8601)")
    score.add_argument("--metric", "-m", action="append", required=True, choices=list(metric_classes()),
                       help="metric to score with (repeatable)")
    score.add_argument("--field", action="append", metavar="INPUT=PATH",
                       help="where an input is in a trace, as a dotted path: output=output.caption, "
                            "reference=metadata.reference, image=input.image_url (defaults: output.output, "
                            "metadata.reference, input.image)")
    score.add_argument("--spans", action="store_true", help="score spans instead of traces")
    score.add_argument("--threads", action="store_true",
                       help="score threads instead of traces (read in one search; paths start at first_message or "
                            "last_message, e.g. output=last_message.output)")
    score.add_argument("--replace", action="store_true", help="score again what already holds the scores")
    score.add_argument("--compare-window", metavar="START/END",
                       help="also score the window START/END and compare each score's mean with it (unpaired)")
    score.add_argument("--page-size", type=int, default=1000, help="entities read a request (1 to 2000)")
    score.add_argument("--format", choices=["table", "json"], default="table")
    score.add_argument("--no-progress", action="store_true", help="hide progress bars")
    add_metric_options(score)
    score.set_defaults(func=cmd_score)
