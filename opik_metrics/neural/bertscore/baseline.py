"""Baseline rescaling (x - b) / (1 - b) with bert_score's baseline files (``LAYER,P,R,F`` rows)
or a user's own file, so scores spread over a readable range; ranking is unchanged.
"""
from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Baseline:
    """The empirical lower bounds b for P, R and F at one layer, and the file they came from."""

    precision: float
    recall: float
    f1: float
    path: str
    builtin: bool

    def rescale(self, precision: float, recall: float, f1: float) -> tuple[float, float, float]:
        return (_rescale(precision, self.precision), _rescale(recall, self.recall), _rescale(f1, self.f1))

    @property
    def label(self) -> str:
        if self.builtin:
            return "bert_score:" + "/".join(Path(self.path).parts[-2:]).removesuffix(".tsv")
        return "custom:" + os.path.basename(self.path)


def _rescale(x: float, b: float) -> float:
    return (x - b) / (1.0 - b)


def builtin_baseline_path(lang: str, model_key: str | None) -> Path | None:
    """bert_score's shipped file for ``lang`` and ``model_key`` (e.g. en, roberta-large), if any."""
    if not model_key:
        return None
    import bert_score
    path = Path(bert_score.__file__).parent / "rescale_baseline" / lang.lower() / f"{model_key}.tsv"
    return path if path.is_file() else None


def load_baseline(path: str | os.PathLike, layer: int, builtin: bool = False) -> Baseline:
    """Read the row for ``layer`` from a ``LAYER,P,R,F`` file; clear errors for anything else."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"baseline_path: no such file: {path!r}")
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header = [c.strip().upper() for c in rows[0]] if rows else []
    if header[:4] != ["LAYER", "P", "R", "F"]:
        raise ValueError(f"baseline file {path!r}: first line must be 'LAYER,P,R,F', got {rows[:1]}")
    for lineno, row in enumerate(rows[1:], start=2):
        if not row or not row[0].strip():
            continue
        try:
            row_layer = int(float(row[0]))
            if row_layer != layer:
                continue
            p, r, f = (float(v) for v in row[1:4])
        except (ValueError, TypeError) as exc:
            raise ValueError(f"baseline file {path!r}, line {lineno}: expected LAYER,P,R,F numbers, "
                             f"got {row}") from exc
        for label, b in (("P", p), ("R", r), ("F", f)):
            if not b < 1.0:
                raise ValueError(f"baseline file {path!r}, line {lineno}: baseline {label}={b} must be "
                                 "below 1 (rescaling divides by 1 - b)")
        return Baseline(p, r, f, path, builtin)
    raise ValueError(f"baseline file {path!r} has no row for layer {layer}")
