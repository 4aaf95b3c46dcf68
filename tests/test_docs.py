"""The docs cannot fall behind the code: docs/api.md renders every name ``opik_metrics`` exports,
and docs/layout.md names every package folder of opik_metrics/ (and of pipelines/, installed as
opik_metrics.pipelines)."""
from __future__ import annotations

import re
from pathlib import Path

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
