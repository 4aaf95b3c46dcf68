"""`agreement -o` with links planted in the report folder (issue 56): the page, the JSON and the plot
are written under temporary names and renamed into place, so each link is replaced and the file
outside the folder it pointed to is left as it was. Each failed before."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

OUTSIDE = "outside, not to be overwritten\n"


def _agreement(folder: Path) -> Any:
    from opik_metrics.meta_evaluation.metric_agreement import AgreementSettings, agreement_from_scores
    from opik_metrics.meta_evaluation.report import write_agreement_report

    result = agreement_from_scores({"a": [1.0], "b": [2.0], "c": [3.0], "d": [4.0]},
                                   {"m": {"a": 0.1, "b": 0.5, "c": 0.2, "d": 0.9}},
                                   AgreementSettings(resamples=20), human_name="rating")
    return write_agreement_report(result, folder)


def _meta(folder: Path) -> Any:
    from opik_metrics.meta_evaluation.evaluation import MetaSettings, meta_evaluate
    from opik_metrics.meta_evaluation.meta_report import write_meta_report
    from opik_metrics.meta_evaluation.table import RatedTable

    rng = np.random.default_rng(3)
    truth = rng.normal(size=(12, 1))
    table = RatedTable(items=[f"i{k}" for k in range(12)], systems=["s"], human="h", raters=["ann"],
                       ratings=np.round(3 + truth[:, :, None]), scores={"m": truth + rng.normal(size=(12, 1))})
    return write_meta_report(meta_evaluate(table, MetaSettings(methods=("pearson",), resamples=20)), folder)


WRITERS: dict[str, tuple[Callable[[Path], Any], tuple[str, ...]]] = {
    "agreement": (_agreement, ("agreement.json", "index.html", "agreement.png")),
    "meta": (_meta, ("meta_evaluation.json", "index.html", "meta_evaluation.png")),
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_links_named_like_the_report_files_are_replaced_not_followed(tmp_path, writer):
    write, names = WRITERS[writer]
    outside, folder = tmp_path / "outside.txt", tmp_path / "report"
    outside.write_text(OUTSIDE, encoding="utf-8")
    folder.mkdir()
    for name in names:
        (folder / name).symlink_to(outside)
    files = write(folder)
    assert outside.read_text(encoding="utf-8") == OUTSIDE
    assert files.json.is_file() and not files.json.is_symlink() and files.json.read_text(encoding="utf-8")
    assert not files.html.is_symlink() and "<html" in files.html.read_text(encoding="utf-8")
    plot = folder / names[2]
    assert not plot.is_symlink() and (files.plot is None) == (not plot.exists())
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
