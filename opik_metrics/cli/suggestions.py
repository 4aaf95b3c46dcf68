"""'Did you mean' for option names: an unrecognized option is named with the command's closest ones
(Python 3.11's argparse only says it does not know it)."""
from __future__ import annotations

import argparse
import difflib
import re

_UNRECOGNIZED = "unrecognized arguments: "
_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def known_options(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string ``parser``'s usage line lists (argparse keeps its actions in private
    attributes; the usage names each option whole, where help prose may wrap one or quote another)."""
    return sorted(set(_OPTION.findall(parser.format_usage())))


def option_hints(message: str, known: list[str]) -> str:
    """The 'did you mean' lines for the options an 'unrecognized arguments' message names ('' if none)."""
    if not message.startswith(_UNRECOGNIZED):
        return ""
    hints = []
    for word in message[len(_UNRECOGNIZED):].split():
        if not word.startswith("-"):
            continue
        option = word.split("=", 1)[0]
        close = difflib.get_close_matches(option, known, n=3, cutoff=0.7)
        if close:
            hints.append(f"{option}: did you mean {' or '.join(close)}?")
    return "".join("\n  " + hint for hint in hints)


class SuggestingParser(argparse.ArgumentParser):
    """The top-level parser: its 'unrecognized arguments' error (argparse raises it there, after the
    command's parser has collected the words it does not know) names the closest options of the
    command being run, set in ``command_parser``."""

    command_parser: argparse.ArgumentParser | None = None

    def error(self, message: str):  # type: ignore[override]
        known = known_options(self) + (known_options(self.command_parser) if self.command_parser else [])
        super().error(message + option_hints(message, sorted(set(known))))
