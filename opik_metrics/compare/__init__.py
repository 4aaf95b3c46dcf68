"""Comparing two systems on the same items: paired bootstrap statistics and reports; and which
metric agrees with human ratings (``opik_metrics.compare.agreement(...)``)."""
from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    # loaded on first use: the command line imports this package before it parses its arguments
    if name == "agreement":
        from opik_metrics.compare.human.source import agreement

        return agreement
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
