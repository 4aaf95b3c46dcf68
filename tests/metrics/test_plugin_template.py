"""The plugin of docs/metrics.md, as a reader would write it from the page: its pyproject.toml and
its WordRatio module, taken from the page, built and installed by pip into a fresh venv. Its metric
is in `score --help`, scores a record file with values worked out by hand, and a rescore of a stored
experiment with it adds no failed experiment-score row (WordRatio states no corpus score).

Offline, as tests/metrics/test_plugins.py: pip installs with ``--no-index --no-build-isolation
--no-deps``; the venv reaches the dev venv's packages through a ``.pth`` file, this checkout first."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.metrics.test_plugins import _run, _write, venv_beside_dev
from tests.streams.records import write_jsonl

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "metrics.md"


def _block(language: str, marker: str) -> str:
    """The page's fenced ``language`` block that holds ``marker``."""
    blocks = re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, f"{len(found)} {language} blocks of docs/metrics.md hold {marker!r}"
    return found[0]


@pytest.fixture(scope="module")
def python(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("template")
    python = venv_beside_dev(home)
    package = _write(home / "my-metrics", {"pyproject.toml": _block("toml", "# my-metrics/pyproject.toml"),
                                           "my_metrics/__init__.py": "",
                                           "my_metrics/word_ratio.py": _block("python", "class WordRatio(")})
    _run([python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "-q", package], home)
    return python


ITEMS = [{"id": "a", "output": "a dog runs fast", "reference": "a dog runs"},          # 4 / 3
         {"id": "b", "output": "cats", "reference": "two cats asleep"},                # 1 / 3
         {"id": "c", "output": "", "reference": "x"}]                                  # 0 / 1


def test_the_page_plugin_installs_and_scores_from_the_command_line(python, tmp_path):
    shown = _run([python, "-m", "opik_metrics", "score", "-m", "word_ratio", "--help"], tmp_path).stdout
    assert "word_ratio" in shown and "--word-ratio-scale" in shown
    path = write_jsonl(tmp_path / "in.jsonl", ITEMS)
    done = _run([python, "-m", "opik_metrics", "score", "-i", path, "-m", "word_ratio", "--word-ratio-scale", "2",
                 "--format", "json", "--no-progress", "--workers", "1"], tmp_path)
    values = [item["word_ratio"] for item in json.loads(done.stdout)["items"]]
    assert values == pytest.approx([2 * 4 / 3, 2 * 1 / 3, 0.0])


RESCORE = """
import json, sys
from opik_metrics import BLEU, evaluate
from opik_metrics.experiments.store import ExperimentStore

store, items = sys.argv[1], json.loads(sys.argv[2])
evaluate(dataset=items, task=lambda item: {"output": item["output"]}, scoring_metrics=[BLEU(track=False)],
         experiment_name="run", store=store, verbose=0)
"""

ROWS = """
import json, sys
from opik_metrics.experiments.store import ExperimentStore

with ExperimentStore(sys.argv[1], create=False) as store:
    info = store.info("run")
    print(json.dumps([[r.name, r.failed] for r in store.experiment_score_rows(info.id)]))
"""


def test_a_rescore_with_the_page_plugin_adds_no_failed_experiment_score(python, tmp_path):
    store = tmp_path / "store.sqlite"
    _run([python, "-c", RESCORE, store, json.dumps(ITEMS[:2])], tmp_path)
    _run([python, "-m", "opik_metrics", "experiments", "rescore", "run", "-m", "word_ratio", "--store", store,
          "--no-progress"], tmp_path)
    rows = json.loads(_run([python, "-c", ROWS, store], tmp_path).stdout)
    assert rows == [["corpus_bleu", False]]
