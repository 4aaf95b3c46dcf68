"""The ``opik-metrics`` command: one module per sub-command, each run through the one error path
of ``cli.errors``."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from opik_metrics.cli import agreement, caption, compare, experiments, explain, score, traces
from opik_metrics.cli.errors import (DEBUG_ENV, CLIError, check_arguments, debugging, fail, internal_error, parse_arguments,
                                     plugin_warnings_in_one_line, run_command)
from opik_metrics.cli.suggestions import SuggestingParser


COMMANDS = (score, explain, caption, experiments, compare, agreement, traces)
# the commands whose --metric names a metric of the catalog (compare's and agreement's name scores)
CATALOG_METRIC_COMMANDS = ("score", "caption", "experiments", "traces")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with ``command``'s own sub-parser built whole and every other command listed by its
    name and help line only: a command reads the metric catalog (and loads plugins, whose import may
    be slow or broken) only when its own arguments come from it (``score``, ``experiments``, ``caption``,
    ``explain``, ``traces``)."""
    parser = SuggestingParser(
        prog="opik-metrics", description="Score text files, run captioning experiments, and compare experiments "
        "(with or without an Opik server). `opik-metrics COMMAND --help` tells more. Exit status: 0 done, "
        "1 a regression (compare --fail-on), 2 a usage or data error, 3 a server that lacks what was sent, "
        "70 an internal error (a bug).")
    parser.add_argument("--debug", action="store_true",
                        help=f"show an internal error's traceback (also ${DEBUG_ENV}=1); anywhere on the line")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        if module.COMMAND == command:
            module.register(sub)
            parser.command_parser = sub.choices[module.COMMAND]
        else:
            sub.add_parser(module.COMMAND, help=module.HELP)
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` names (its first word), or None (``--help`` alone, or nothing)."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def without_debug(argv: Sequence[str]) -> list[str]:
    """``argv`` without the global ``--debug`` flag, wherever it is (before a ``--``)."""
    end = argv.index("--") if "--" in argv else len(argv)
    return [a for a in argv[:end] if a != "--debug"] + list(argv[end:])


def named_metrics(argv: Sequence[str]) -> list[str]:
    """The metric names of ``-m`` / ``--metric`` in a command line (the other options left alone)."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--metric", "-m", action="append", default=[])
    return list(pre.parse_known_args(argv)[0].metric)


def check_metric_names(argv: Sequence[str]) -> None:
    """Load the plugins only when ``argv`` names a metric the built-ins lack (never for --help, a
    listing or a built-in metric); a name no plugin has either is one line with the closest names."""
    from opik_metrics.metrics.catalog import is_known, metric_classes, unknown_metric_message

    if command_of(argv) not in CATALOG_METRIC_COMMANDS:
        return
    unknown = [name for name in named_metrics(argv[1:]) if not is_known(name)]
    if not unknown:
        return
    known = metric_classes(plugins=True)
    for name in unknown:
        if name.lower() not in known:
            raise CLIError(unknown_metric_message(name, list(known)))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    for stream in (sys.stdout, sys.stderr):     # stored text may hold a lone surrogate: print it as \udXXX
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    debug = debugging(argv)
    argv = without_debug(argv)
    try:
        check_arguments(argv)
        with plugin_warnings_in_one_line():     # a command's catalog (plugins when it names one) is read here
            check_metric_names(argv)
            parser = build_parser(command_of(argv))
    except CLIError as exc:
        return fail(str(exc))
    except Exception as exc:                    # noqa: BLE001 - a bug before the command runs
        return internal_error(exc, debug)
    args = parse_arguments(parser, argv)
    args.debug = debug
    return run_command(args.func, args)


if __name__ == "__main__":
    sys.exit(main())
