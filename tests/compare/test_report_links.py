"""A report folder with links planted in it (issue 56): `compare -o` writes each file under a temporary
name and renames it into place, so a link named comparison.json, index.html, plots/ or a plot is
replaced, and the file outside the folder it pointed to is left as it was. Each failed before."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from opik_metrics.compare.report.folder import HTML_NAME, JSON_NAME, write_report
from opik_metrics.compare.report.plot_files import PLOTS_DIR
from tests.compare.sample_comparison import sample

OUTSIDE = "outside, not to be overwritten\n"


def _outside(tmp_path: Path) -> Path:
    target = tmp_path / "outside.txt"
    target.write_text(OUTSIDE, encoding="utf-8")
    return target


@pytest.mark.parametrize("name", [JSON_NAME, HTML_NAME])
def test_a_link_named_like_a_report_file_is_replaced_not_followed(tmp_path, name):
    outside, folder = _outside(tmp_path), tmp_path / "report"
    folder.mkdir()
    (folder / name).symlink_to(outside)
    files = write_report(sample(), folder)
    assert outside.read_text(encoding="utf-8") == OUTSIDE
    assert not (folder / name).is_symlink()
    assert json.loads(files.json.read_text(encoding="utf-8"))["experiments"]
    assert "<html" in files.html.read_text(encoding="utf-8")
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_a_linked_plots_folder_is_replaced_not_followed(tmp_path):
    pytest.importorskip("matplotlib")
    elsewhere, folder = tmp_path / "elsewhere", tmp_path / "report"
    elsewhere.mkdir()
    folder.mkdir()
    (folder / PLOTS_DIR).symlink_to(elsewhere, target_is_directory=True)
    files = write_report(sample(), folder)
    assert not list(elsewhere.iterdir())
    assert (folder / PLOTS_DIR).is_dir() and not (folder / PLOTS_DIR).is_symlink()
    assert files.plots and all(p.is_file() and p.parent == folder / PLOTS_DIR for p in files.plots)


def test_a_link_named_like_a_plot_is_replaced_not_followed(tmp_path):
    pytest.importorskip("matplotlib")
    folder = tmp_path / "report"
    first = write_report(sample(), folder)
    outside = _outside(tmp_path)
    for plot in first.plots:
        plot.unlink()
        plot.symlink_to(outside)
    again = write_report(sample(), folder)
    assert outside.read_text(encoding="utf-8") == OUTSIDE
    assert again.plots and all(p.is_file() and not p.is_symlink() for p in again.plots)
    assert again.plots[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
