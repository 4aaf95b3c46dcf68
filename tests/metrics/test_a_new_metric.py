"""A new metric is one module: the toy metric below (docs/metrics.md's example), defined here and
nowhere else, is in the catalog with its command-line option (its default the constructor's), scores
text files and records from the command line (worker processes build it from this module), and
leaves the catalog when the test ends."""
from __future__ import annotations

import json

import pytest

from opik_metrics.cli.main import main
from opik_metrics.core import ScoreFacts, Signature
from opik_metrics.metric_kit.base import ReferenceMetric, ScoreResult
from opik_metrics.metric_kit.card import MetricCard, Option, register, unregister
from opik_metrics.metrics.catalog import MetricRecipe, metric_card, metric_classes
from tests.streams.records import write_jsonl


class WordRatio(ReferenceMetric):
    """Words in the output over words in the first reference, times ``scale``."""

    card = MetricCard("toy_word_ratio", "output words over reference words", group="toy options",
                      options=(Option("--toy-scale", "scale", kind=float,
                                       help="multiplies the ratio (default %(default)s)"),))

    def __init__(self, scale: float = 1.0, name: str = "toy_word_ratio", track: bool = True,
                 project_name: str | None = None) -> None:
        super().__init__(name=name, track=track, project_name=project_name)
        self.scale = scale
        self.signature = Signature({"metric": "toy_word_ratio", "scale": f"{scale:g}"})

    def _score_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(self.name, bounds=(0.0, None))]

    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        return [[ScoreResult(name=self.name, value=self.scale * len(o.split()) / max(1, len(r[0].split())))]
                for o, r in zip(outputs, references)]


@pytest.fixture(autouse=True)
def toy_in_the_catalog():
    """Defining the class registered it; each test starts with it there and takes it out at the end."""
    register(WordRatio)
    yield
    unregister("toy_word_ratio")
    assert "toy_word_ratio" not in metric_classes()


def test_the_toy_is_in_the_catalog_and_on_the_command_line(capsys):
    assert metric_classes()["toy_word_ratio"] is WordRatio and metric_card("toy_word_ratio") is WordRatio.card
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    shown = " ".join(capsys.readouterr().out.split())       # argparse wraps lines
    assert "toy options:" in shown and "--toy-scale" in shown and "toy_word_ratio" in shown
    assert "multiplies the ratio (default 1.0)" in shown


def test_the_toy_scores_text_files_with_its_option(tmp_path, capsys):
    (tmp_path / "p.txt").write_text("a b c d\none two\n")
    (tmp_path / "r.txt").write_text("a b\none two three four\n")
    assert main(["score", "-p", str(tmp_path / "p.txt"), "-r", str(tmp_path / "r.txt"), "-m", "toy_word_ratio",
                 "--toy-scale", "3", "--format", "json"]) == 0
    items = json.loads(capsys.readouterr().out)["items"]
    assert [item["toy_word_ratio"] for item in items] == [6.0, 1.5]        # 3 * 4/2, 3 * 2/4


def test_worker_processes_build_the_toy_from_its_module(tmp_path, capsys):
    recipe = MetricRecipe.of([("toy_word_ratio", {"scale": 2.0, "track": False})])
    assert recipe.named[0][1] == f"{__name__}:WordRatio" and not recipe.loads_model
    path = write_jsonl(tmp_path / "in.jsonl", [{"output": "x " * (k % 5 + 1), "reference": "x x"} for k in range(90)])
    assert main(["score", "-i", str(path), "-m", "toy_word_ratio", "--toy-scale", "2", "--chunk-size", "10",
                 "--workers", "2", "--format", "json", "--no-progress"]) == 0
    items = json.loads(capsys.readouterr().out)["items"]
    assert [item["toy_word_ratio"] for item in items] == [2.0 * (k % 5 + 1) / 2 for k in range(90)]
