"""The docs cannot fall behind the code: docs/api.md renders every name ``opik_metrics`` exports,
and docs/layout.md names every package folder of opik_metrics/ (and of pipelines/, installed as
opik_metrics.pipelines)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import opik_metrics

ROOT = Path(__file__).resolve().parents[1]
API = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
LAYOUT = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")


def test_the_api_page_renders_every_export():
    rendered = set(re.findall(r"^::: (\S+)$", API, flags=re.M))
    missing = [name for name in opik_metrics.__all__
               if f"{getattr(opik_metrics, name).__module__}.{name}" not in rendered]
    assert not missing, f"docs/api.md lacks '::: <module>.<name>' for {missing}"


def package_folders(top: Path) -> list[Path]:
    """Folders under ``top`` that hold Python modules, relative to ``top``."""
    return sorted(p.parent.relative_to(top) for p in top.rglob("*.py")
                  if "__pycache__" not in p.parts and p.parent != top)


def layout_entries() -> dict[str, str]:
    """The layout block's entries: a line starting at the margin names a folder (``opik_metrics/core/``),
    the indented lines after it continue its description."""
    block = re.search(r"```\n(.*?)```", LAYOUT, flags=re.S)
    assert block, "docs/layout.md has no layout block"
    entries: dict[str, str] = {}
    head = None
    for line in block.group(1).splitlines():
        if line and not line[0].isspace():
            head, _, text = line.partition(" ")
            entries[head] = text
        elif head is not None:
            entries[head] += " " + line.strip()
    return entries


def test_the_layout_page_names_every_package_folder():
    entries = layout_entries()
    missing = []
    for top, prefix in ((ROOT / "opik_metrics", "opik_metrics/"), (ROOT / "pipelines", "pipelines/")):
        for folder in dict.fromkeys(package_folders(top)):
            first, *rest = folder.parts
            entry = f"{prefix}{first}/" if prefix == "opik_metrics/" else prefix
            below = "/".join(rest if prefix == "opik_metrics/" else folder.parts)
            if entry not in entries:
                missing.append(entry)
            elif below and not re.search(rf"(?<![\w/]){re.escape(below)}/", entries[entry]):
                missing.append(f"{entry}{below}/")
    assert not missing, f"docs/layout.md does not name {sorted(set(missing))}"


# --- the meta-evaluation's worked example (docs/compare.md) on the file that ships (issue 56)

RATED = ROOT / "notebooks" / "data" / "rated_captions.jsonl"


def _worked_example() -> tuple[list[str], str]:
    """The worked example's command lines (continuations joined) and its printed tables."""
    page = (ROOT / "docs" / "compare.md").read_text(encoding="utf-8")
    text = page[page.index("**Worked example.**"):]
    commands = re.search(r"```bash\n(.*?)```", text, flags=re.S)
    printed = re.search(r"```text\n(.*?)```", text, flags=re.S)
    assert commands and printed
    return [line for line in commands.group(1).replace("\\\n", " ").splitlines() if line.strip()], printed.group(1)


def test_the_shipped_rated_captions_carry_the_scene_the_example_keeps():
    """Three captions of each of 10 scenes; the scene is the id without its last part."""
    import json

    rows = [json.loads(line) for line in RATED.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 30 and all(row["scene"] == row["id"].rsplit("-", 1)[0] for row in rows)
    assert sorted({row["scene"] for row in rows}) == sorted(row["scene"] for row in rows[::3])


def test_the_worked_example_runs_as_written_on_the_shipped_file(tmp_path, monkeypatch, capsys):
    """In the clone's root (here a folder with its notebooks/): each command exits 0 and the
    agreement prints the page's pooled and item tables."""
    import shlex

    from opik_metrics.cli.main import main

    (tmp_path / "notebooks").symlink_to(ROOT / "notebooks")
    monkeypatch.chdir(tmp_path)
    commands, printed = _worked_example()
    for line in commands:
        words = shlex.split(line, comments=True)
        assert words[0] == "opik-metrics"
        assert main(words[1:]) == 0, line
    out = capsys.readouterr().out
    tables = printed.split("metric against metric")[0].strip()
    assert tables in out, out
