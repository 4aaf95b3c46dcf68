"""What the metric base classes rework must keep (issue 39): every metric states the facts it stated
before, and every catalog card gives argparse the options it gave. The expected values were recorded
once from the code before the rework (``facts_before.json``; how: ``facts_cases.py``)."""
from __future__ import annotations

import importlib.util
import inspect
import json
from pathlib import Path

import pytest

from opik_metrics.metrics.catalog import metric_classes
from tests.metrics.facts_cases import VOLATILE, build_models, record, stable

BEFORE = json.loads((Path(__file__).with_name("facts_before.json")).read_text(encoding="utf-8"))
HAVE_EVALUATE = importlib.util.find_spec("evaluate") is not None
CASES = sorted(name for name in BEFORE["facts"] if HAVE_EVALUATE or not name.startswith("evaluate"))


@pytest.fixture(scope="module")
def now(tmp_path_factory):
    return record(build_models(tmp_path_factory.mktemp("facts")), CASES)


def test_the_record_covers_every_catalog_metric():
    shipped = {name for name, cls in metric_classes().items() if cls.__module__.startswith("opik_metrics.")}
    assert set(BEFORE["options"]) == shipped
    assert shipped <= set(BEFORE["facts"])            # each under its catalog name, with the defaults


@pytest.mark.parametrize("case", CASES)
def test_facts_are_the_recorded_ones(now, case):
    assert stable(now["facts"][case]) == stable(BEFORE["facts"][case])


def _signatures(recorded):
    if isinstance(recorded, dict):
        if isinstance(recorded.get("fields"), dict) and isinstance(recorded.get("text"), str):
            yield recorded
        for value in recorded.values():
            yield from _signatures(value)
    elif isinstance(recorded, list):
        for value in recorded:
            yield from _signatures(value)


@pytest.mark.parametrize("case", CASES)
def test_signatures_name_their_package_versions(now, case):
    """Each signature lists as versions exactly its fields that follow package versions (the record's
    volatile ones but the config hash), so a comparison notes them instead of refusing them."""
    found = list(_signatures(now["facts"][case]))
    assert found
    for signature in found:
        assert set(signature["versions"]) == {k for k in signature["fields"] if k in VOLATILE - {"cfg"}}, signature


@pytest.mark.parametrize("card", sorted(BEFORE["options"]))
def test_options_are_the_recorded_ones(now, card):
    """Same flags, arguments, help as shown, types, choices and actions; the same default, or, where
    the option gave none, the constructor's own default (so the metric built is the same)."""
    constructor = inspect.signature(metric_classes()[card].__init__).parameters
    before, after = BEFORE["options"][card], now["options"][card]
    assert [o[:2] for o in after] == [o[:2] for o in before]
    for (flag, argument, was), (_, _, settings) in zip(before, after):
        if "default" in was:
            assert settings["default"] == was["default"], flag
        elif "default" in settings:
            assert settings["default"] == constructor[argument].default, flag
        assert {k: v for k, v in settings.items() if k != "default"} == {k: v for k, v in was.items() if k != "default"}
