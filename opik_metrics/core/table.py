"""Plain-text tables and lines for the terminal (no dependency, aligned columns): text from files
and stores (an output holding a newline or a NUL, a file named with one) is shown on its one line."""
from __future__ import annotations

import unicodedata
from typing import Any, Sequence

_BREAKING = ("Cc", "Zl", "Zp")      # control characters (\n, \r, \x00, \x1b ...), U+2028, U+2029


def one_line(text: str) -> str:
    """``text`` with every character that would break or garble a terminal line (a control
    character, a line or paragraph separator) written as its Python escape (``\\n``, ``\\x00``,
    ``\\u2028``); letters of any script, combining marks and emoji stay as they are."""
    if text.isprintable():
        return text
    return "".join(ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch) in _BREAKING else ch
                   for ch in text)


def _cell(value: Any, digits: int) -> str:
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return one_line(str(value))


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 4) -> str:
    """Render rows under headers; numbers right-aligned, text left-aligned."""
    headers = [one_line(str(h)) for h in headers]
    cells = [[_cell(v, digits) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    numeric = [all(isinstance(row[i], (int, float)) for row in rows) if rows else False
               for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in cells)])
