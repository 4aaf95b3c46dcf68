"""Writes the comparison report folder: comparison.json, index.html and the plots/ PNGs it shows."""
from __future__ import annotations

import json
import math
import numbers
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opik_metrics.compare.html_report import render_html
from opik_metrics.compare.plots import PLOTS_DIR, write_plots

SCHEMA = "opik-metrics/compare/1"
JSON_NAME = "comparison.json"
HTML_NAME = "index.html"


@dataclass(frozen=True)
class ReportFiles:
    """The files a report consists of."""

    html: Path
    json: Path
    plots: list[Path] = field(default_factory=list)


def _path_text(path: tuple) -> str:
    """``("scores", "bleu", "a", "values", 3)`` as ``scores["bleu"]["a"]["values"][3]``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f"[{json.dumps(part, ensure_ascii=False)}]"
                                                             if text else str(part))
    return text or "<root>"


def check_finite(value: Any, path: tuple = ()) -> None:
    """Raise ValueError naming the place of the first NaN or infinity: JSON has no such numbers."""
    if isinstance(value, dict):
        for key, item in value.items():
            check_finite(item, path + (str(key),))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_finite(item, path + (index,))
    elif isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)):
        if not math.isfinite(float(value)):
            raise ValueError(f"comparison is not valid JSON: {value!r} at {_path_text(path)}")
    elif hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # numpy arrays and scalars
        check_finite(value.tolist(), path)


def _json_default(value: Any) -> Any:
    """numpy scalars and arrays as plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def to_json(comparison: dict) -> str:
    """The comparison as indented JSON (non-ASCII kept), after checking that every number is finite;
    a lone surrogate (an output cut in the middle of an emoji) is written as its ``\\uXXXX`` escape,
    so that the file is UTF-8 and reads back the same."""
    check_finite(comparison)
    text = json.dumps(comparison, indent=2, ensure_ascii=False, allow_nan=False, default=_json_default) + "\n"
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _prepare_dir(out_dir: Path) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise NotADirectoryError(f"report folder {out_dir} exists and is not a folder")
    plots = out_dir / PLOTS_DIR
    if plots.exists() and not plots.is_dir():
        raise NotADirectoryError(f"{plots} exists and is not a folder")
    plots.mkdir(parents=True, exist_ok=True)
    for old in plots.glob("[0-9][0-9][0-9]-*.png"):   # a previous report's plots: none may linger
        old.unlink()


def write_report(comparison: dict, out_dir: str | Path) -> ReportFiles:
    """Write ``comparison.json``, the plots and ``index.html`` into ``out_dir`` (created if missing)."""
    if not isinstance(comparison, dict) or comparison.get("schema") != SCHEMA:
        found = comparison.get("schema") if isinstance(comparison, dict) else type(comparison).__name__
        raise ValueError(f"expected a comparison with schema {SCHEMA!r}, got {found!r}")
    text = to_json(comparison)  # before anything is written: a NaN leaves no half-written report
    out_dir = Path(out_dir)
    _prepare_dir(out_dir)
    json_path = out_dir / JSON_NAME
    json_path.write_text(text, encoding="utf-8")
    plots = write_plots(comparison, out_dir / PLOTS_DIR)
    html_path = out_dir / HTML_NAME
    html_path.write_text(render_html(comparison, plots), encoding="utf-8", errors="backslashreplace")
    return ReportFiles(html=html_path, json=json_path, plots=[out_dir / p.path for p in plots])
