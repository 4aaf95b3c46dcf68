"""The ``opik-metrics`` command: one module per sub-command, each run through the one error path
of ``cli.errors``."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from opik_metrics.cli import agreement, caption, compare, experiments, explain, score, traces
from opik_metrics.cli.errors import (CLIError, check_arguments, fail, parse_arguments, plugin_warnings_in_one_line,
                                     run_command)


COMMANDS = (score, explain, caption, experiments, compare, agreement, traces)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with ``command``'s own sub-parser built whole and every other command listed by its
    name and help line only: a command reads the metric catalog (and loads plugins, whose import may
    be slow or broken) only when its own arguments come from it (``score``, ``experiments``, ``caption``,
    ``explain``, ``traces``)."""
    parser = argparse.ArgumentParser(
        prog="opik-metrics", description="Score text files, run captioning experiments, and compare experiments "
        "(with or without an Opik server). `opik-metrics COMMAND --help` tells more.")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        if module.COMMAND == command:
            module.register(sub)
        else:
            sub.add_parser(module.COMMAND, help=module.HELP)
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` names (its first word), or None (``--help`` alone, or nothing)."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    for stream in (sys.stdout, sys.stderr):     # stored text may hold a lone surrogate: print it as \udXXX
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        check_arguments(argv)
    except CLIError as exc:
        return fail(str(exc))
    with plugin_warnings_in_one_line():     # a command's catalog, plugins and all, is read as its parser is built
        parser = build_parser(command_of(argv))
    args = parse_arguments(parser, argv)
    return run_command(args.func, args)


if __name__ == "__main__":
    sys.exit(main())
