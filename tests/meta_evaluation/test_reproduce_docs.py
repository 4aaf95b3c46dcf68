"""docs/compare.md's "Reproduce a published meta-evaluation" (issue 57, item 6) runs as written on
the files that ship in notebooks/data/ and prints the tables the page shows; the shipped table is
rated_captions.jsonl in SummEval's released shape, and its DARR pairs follow the rule the page
states (within a scene, ratings 2 or more apart, the higher rated the better)."""
from __future__ import annotations

import csv
import json
import re
import shlex
from pathlib import Path

from opik_metrics.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "notebooks" / "data"
SECTION = "## Reproduce a published meta-evaluation"


def _section() -> str:
    page = (ROOT / "docs" / "compare.md").read_text(encoding="utf-8")
    text = page[page.index(SECTION) + len(SECTION):]
    return text.split("\n## ", 1)[0]


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines()]


def test_the_shipped_table_is_the_rated_captions_in_summeval_shape():
    table, rated = _rows("rated_captions_table.jsonl"), _rows("rated_captions.jsonl")
    assert len(table) == len(rated) == 30
    for row, source in zip(table, rated):
        scene, slot = source["id"].rsplit("-", 1)
        assert (row["doc_id"], row["system_id"], row["overall"]) == (scene, f"caption-{slot}", source["human"])
        assert row["elements"] in (0, 1, 2, 3)
        assert all(isinstance(row[m], float) or isinstance(row[m], int)
                   for m in ("rouge1_f1", "rougeL_f1", "bleu", "cider", "ter"))
    with (DATA / "rated_captions_pairs.csv").open(encoding="utf-8", newline="") as f:
        pairs = [(p["segment"], p["better"], p["worse"]) for p in csv.DictReader(f)]
    rule = []
    for scene in dict.fromkeys(r["doc_id"] for r in table):
        cells = [r for r in table if r["doc_id"] == scene]
        for i, a in enumerate(cells):
            for b in cells[i + 1:]:
                if abs(a["overall"] - b["overall"]) >= 2:
                    better, worse = (a, b) if a["overall"] > b["overall"] else (b, a)
                    rule.append((scene, better["system_id"], worse["system_id"]))
    assert pairs == rule and len(pairs) == 23


def test_the_reproduction_runs_as_written_and_prints_the_pages_tables(tmp_path, monkeypatch, capsys):
    """In the clone's root (here a folder with its notebooks/): each command exits 0 and prints
    the page's text blocks."""
    text = _section()
    commands = re.search(r"```bash\n(.*?)```", text, flags=re.S)
    printed = re.findall(r"```text\n(.*?)```", text, flags=re.S)
    assert commands and len(printed) == 2
    lines = [line for line in commands.group(1).replace("\\\n", " ").splitlines() if line.strip()]
    assert len(lines) == 2
    (tmp_path / "notebooks").symlink_to(ROOT / "notebooks")
    monkeypatch.chdir(tmp_path)
    outputs = []
    for line in lines:
        words = shlex.split(line, comments=True)
        assert words[0] == "opik-metrics"
        capsys.readouterr()
        assert main(words[1:]) == 0, line
        outputs.append(capsys.readouterr().out)
    overall = outputs[0].split("== dimension elements")[0]
    assert "== dimension overall (column overall) ==" in overall and "== dimension elements" in outputs[0]
    assert printed[0].strip() in overall, overall
    assert printed[1].strip() in outputs[1], outputs[1]
    assert "a tie in the metric counted as discordant (WMT17-19's segment-level rule)" in outputs[1]
    assert "ter lower is better (--lower-is-better)" in outputs[0] and "(assumed" in outputs[0]
