"""Data never chooses code (issue 40): a corpus formula named in recorded facts (a local store, an
Opik experiment's metadata) is resolved from a registry: the formulas opik-metrics ships and those
defined in this process. Any other name is refused with one line naming the experiment, and its
module is never imported."""
from __future__ import annotations

import ast
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from opik_metrics import BLEU, CHRF, CIDEr, COCOCaption, ROUGE, TER
from opik_metrics.cli.main import main
from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.reading.sources import load_experiments
from opik_metrics.core import MetricFacts, Statistics, UnknownFormula, corpus_facts, corpus_formula, resolve_formula
from opik_metrics.core.statistics import SHIPPED_FORMULAS
from tests.compare.records_fixture import experiment
from tests.compare.systems import store_with

ROOT = Path(__file__).resolve().parents[2]
REFS = ["a dog runs on the beach", "two cats sleep on a sofa", "a red bus in the city", "a man rides a bike",
        "snow on the mountain road", "children play in the park"]
SYSTEMS = {"a": ["a dog running on a beach", "two cats on the sofa", "a bus", "a man on a bike", "snow",
                 "kids playing in a park"],
           "b": ["a dog", "cats", "a red bus in a city", "a man rides a bike", "a mountain road", "children"]}
EVIL = "evil_formula_module"


def _marked_in_source() -> set[str]:
    """``module:name`` of every function the package's source marks with @corpus_formula."""
    found = set()
    for path in (ROOT / "opik_metrics").rglob("*.py"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(
                    ast.unparse(d.func if isinstance(d, ast.Call) else d) == "corpus_formula"
                    for d in node.decorator_list):      # @corpus_formula or @corpus_formula(check=...)
                found.add(f"{module}:{node.name}")
    return found


def test_the_table_names_every_formula_the_pack_ships():
    assert _marked_in_source() == SHIPPED_FORMULAS


def test_every_shipped_formula_resolves_in_a_fresh_process_without_heavy_imports():
    """Only the named formula's own module is imported: no torch, no opik, no model."""
    code = ("import sys, json\nfrom opik_metrics.core.statistics import SHIPPED_FORMULAS, resolve_formula\n"
            "bad = [p for p in sorted(SHIPPED_FORMULAS) if "
            "f'{resolve_formula(p).__module__}:{resolve_formula(p).__qualname__}' != p]\n"
            "print(json.dumps({'bad': bad, 'heavy': [m for m in ('torch', 'opik', 'transformers') "
            "if m in sys.modules]}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"bad": [], "heavy": []}


@pytest.mark.parametrize("make", [ROUGE, BLEU, CHRF, TER, CIDEr, lambda **kw: COCOCaption(meteor=False, **kw)],
                         ids=["rouge", "bleu", "chrf", "ter", "cider", "coco"])
def test_every_metrics_facts_round_trip_and_their_formulas_resolve(make):
    metric = make(track=False)
    recorded = MetricFacts.from_dict(json.loads(json.dumps(metric.facts.as_dict())))
    assert recorded.corpora and recorded.as_dict() == metric.facts.as_dict()
    outputs, references = SYSTEMS["a"], [[r] for r in REFS]
    stats = metric.statistics(outputs, references)
    total = sum(stats[1:], stats[0])
    corpus = metric.corpus_score(outputs, references)
    values = {r.name: r.value for r in (corpus if isinstance(corpus, list) else [corpus])}
    for facts in recorded.corpora:
        assert facts.formula in SHIPPED_FORMULAS
        assert resolve_formula(facts.formula, "x")(total.values, **facts.options) == values[facts.name]


def _evil_module(folder: Path) -> Path:
    """A module that would leave a file behind if anything imported it."""
    marker = folder / "imported.txt"
    (folder / f"{EVIL}.py").write_text(
        "from pathlib import Path\n"
        "from opik_metrics.core import corpus_formula\n"
        f"Path({str(marker)!r}).write_text('imported')\n"
        "@corpus_formula\n"
        "def run(values, **options):\n"
        "    return 0.0\n", encoding="utf-8")
    return marker


def _recorded_evil(config: dict) -> dict:
    config = json.loads(json.dumps(config))
    config["metrics"]["bleu"]["corpus"]["formula"] = f"{EVIL}:run"
    return config


def test_a_store_naming_another_module_is_refused_in_one_line_and_never_imports_it(tmp_path, monkeypatch, capsys):
    marker = _evil_module(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    store = store_with(tmp_path / "store.sqlite", REFS, SYSTEMS, metrics=[BLEU(track=False)])
    with sqlite3.connect(store) as db:      # someone else's store: its recorded facts name their code
        (config,) = db.execute("SELECT config FROM experiments WHERE name = 'b'").fetchone()
        db.execute("UPDATE experiments SET config = ? WHERE name = 'b'",
                   (json.dumps(_recorded_evil(json.loads(config))),))
    assert main(["compare", "a", "b", "--store", str(store), "-o", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert (f"experiment 'b' records a corpus formula '{EVIL}:run' that is not one of opik-metrics' formulas nor "
            "a registered one: not loaded") in err
    assert not marker.exists() and EVIL not in sys.modules
    assert not (tmp_path / "report").exists()


def test_opik_metadata_naming_another_module_is_refused_and_never_imports_it(tmp_path, monkeypatch):
    """An Opik experiment's metadata is refused before its items are read, and in records built
    from it by hand before any work."""
    from tests.compare.test_sources import _FakeExperiment, _FakeOpik

    marker = _evil_module(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    facts = BLEU(track=False).facts.as_dict()
    theirs = _FakeExperiment("theirs", _recorded_evil({"metrics": {"bleu": facts}}), [], {})
    monkeypatch.setattr(theirs, "get_items", lambda **kw: pytest.fail("items read despite the refusal"))
    message = (r"^experiment 'theirs' records a corpus formula "
               rf"'{EVIL}:run' that is not one of opik-metrics' formulas nor a registered one: not loaded")
    with pytest.raises(UnknownFormula, match=message):
        load_experiments(["theirs"], client=_FakeOpik({"theirs": theirs}))
    a = experiment("mine", {"bleu": [0.1, 0.2, 0.3]}, config={"metrics": {"bleu": facts}})
    b = experiment("theirs", {"bleu": [0.2, 0.2, 0.4]}, config=_recorded_evil({"metrics": {"bleu": facts}}))
    with pytest.raises(UnknownFormula, match=message):
        compare_experiments([a, b], CompareSettings(resamples=50))
    assert not marker.exists() and EVIL not in sys.modules


@pytest.mark.parametrize("path", ["os:system", "opik_metrics.core.statistics:Statistics", "no colon",
                                  "opik_metrics.text.bleu.scorer:BLEUScorer", ""])
def test_any_name_not_registered_is_refused_without_an_import(path):
    with pytest.raises(UnknownFormula, match="not one of opik-metrics' formulas nor a registered one"):
        resolve_formula(path)


@corpus_formula
def share_of_hits(values, *, scale=1.0):
    """A user's own corpus formula: hits / items, scaled."""
    return scale * values[0] / values[1] if values[1] else 0.0


def test_a_users_own_formula_registered_in_this_process_resolves_and_compares():
    facts = corpus_facts("corpus_hits", "hits", ["hits", "items"], share_of_hits, {"scale": 2.0})
    assert facts.formula == f"{__name__}:share_of_hits"
    assert resolve_formula(facts.formula, "mine") is share_of_hits
    assert resolve_formula(facts.formula)(Statistics(("hits", "items"), (3.0, 4.0)).values, scale=2.0) == 1.5
    recorded = MetricFacts("hits", "user", (), corpus=facts).as_dict()
    runs = [experiment(name, {"hits": [1.0, 0.0, 1.0]}, config={"metrics": {"hits": recorded}})
            for name in ("mine", "again")]
    for run in runs:
        for item in run.items:
            item.metadata["hits"] = {"statistics": [item.scores["hits"], 1]}
    result = compare_experiments(runs, CompareSettings(resamples=50))
    assert result.scores["corpus_hits"]["mine"].value == pytest.approx(2 * 2 / 3)
