"""The ``opik-metrics`` command: one module per sub-command, each run through the one error path
of ``cli.errors``."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from opik_metrics.cli import agreement, caption, compare, experiments, explain, score, traces
from opik_metrics.cli.errors import (CLIError, check_arguments, fail, parse_arguments, plugin_warnings_in_one_line,
                                     run_command)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="opik-metrics", description="Score text files, run captioning experiments, and compare experiments "
        "(with or without an Opik server). `opik-metrics COMMAND --help` tells more.")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (score, explain, caption, experiments, compare, agreement, traces):
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    for stream in (sys.stdout, sys.stderr):     # stored text may hold a lone surrogate: print it as \udXXX
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        check_arguments(argv)
    except CLIError as exc:
        return fail(str(exc))
    with plugin_warnings_in_one_line():     # the catalog, plugins and all, is read as the parser is built
        parser = build_parser()
    args = parse_arguments(parser, argv)
    return run_command(args.func, args)


if __name__ == "__main__":
    sys.exit(main())
