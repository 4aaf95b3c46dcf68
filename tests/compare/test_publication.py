"""What a publication holds, worked out by hand: scales that survive Opik's two decimals, names
with the baseline in them, verdicts in the declared direction, the dashboard's table, and a
record that does not change from one run of the same comparison to the next."""
from __future__ import annotations

import copy
import json

import pytest

from opik_metrics.compare.publication import (build_publication, comparison_record, diff_factor, directed_verdict,
                                              interval_names, markdown_table, p_percent, pair_names)
from opik_metrics import BLEU
from opik_metrics.compare.analysis import compare_experiments
from opik_metrics.compare.sources import load_experiments
from opik_metrics.experiments.store import ExperimentStore
from tests.compare.systems import store_with
from tests.compare.test_publish_opik import GOOD, POOR, REFS, Latency


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    path = store_with(tmp_path_factory.mktemp("pub") / "store.sqlite", REFS,
                      {"poor": POOR, "good": GOOD, "same": POOR}, metrics=[BLEU(), Latency()])
    with ExperimentStore(path) as store:
        return compare_experiments(load_experiments(["poor", "good", "same"], store=store))


@pytest.fixture
def comparison(made):
    return copy.deepcopy(made)


@pytest.mark.parametrize("deltas, bounds, factor", [
    ([0.004], (None, None), 100),          # 0.40 at two decimals, not 0.00
    ([0.004], (0.0, 1.0), 100),            # a 0..1 score is in points anyway: 0.40
    ([0.3, 0.004], (0.0, 1.0), 100),       # the smallest decides: 30.00 and 0.40, not 3.00 and 0.04
    ([0.0004, -0.2], (0.0, 1.0), 1000),
    ([0.5, 1.5], (None, None), 1),         # already 0.50 and 1.50
    ([-40.2], (1.0, None), 1),
    ([0.05], (0.0, 10.0), 10),             # bounded but not within [-1, 1]: 0.50
    ([0.0, 0.0], (None, None), 1),         # nothing to show
    ([], (0.0, 1.0), 100),
    ([1e-12], (None, None), 10 ** 6),      # capped
    ([None, float("nan"), 0.2], (None, None), 1),
])
def test_diff_factor(deltas, bounds, factor):
    assert diff_factor(deltas, bounds) == factor


@pytest.mark.parametrize("p, significant, alpha, published", [
    (50 / 1001, True, 0.05, 4.99),        # 4.995 would show as 5.00 beside a verdict of +1
    (0.0499, True, 0.05, 4.99),
    (1 / 1001, True, 0.05, 100 / 1001),   # shows 0.10: nothing to fix
    (0.009995, True, 0.01, 0.99),         # the level is the comparison's
    (0.0512, False, 0.05, 5.12),
    (0.3, False, 0.05, 30.0),
])
def test_p_percent_never_shows_a_significant_p_at_the_level(p, significant, alpha, published):
    assert p_percent(p, significant, alpha) == pytest.approx(published)
    if significant:
        assert round(p_percent(p, significant, alpha), 2) < alpha * 100


def test_names():
    assert interval_names("bleu", 0.95) == ("bleu.ci_low", "bleu.ci_high")
    assert interval_names("bleu", 0.9) == ("bleu.ci90_low", "bleu.ci90_high")
    assert interval_names("bleu", 0.975) == ("bleu.ci97_5_low", "bleu.ci97_5_high")
    assert pair_names("bleu", "base run", 100) == {"diff": "bleu.diff_x100 vs base run",
                                                   "p": "bleu.p_pct vs base run", "verdict": "bleu.verdict vs base run"}
    assert pair_names("ppl", "b", 1)["diff"] == "ppl.diff vs b"


@pytest.mark.parametrize("entry, verdict", [
    ({"verdict": "significant", "significant": True, "better": "sys"}, 1),
    ({"verdict": "significant", "significant": True, "better": "base"}, -1),   # e.g. higher perplexity
    ({"verdict": "not significant", "significant": False, "better": None}, 0),
    ({"verdict": "n/a", "significant": None, "better": None}, None),
])
def test_directed_verdict(entry, verdict):
    assert directed_verdict(entry, "sys") == verdict


def test_a_lower_is_better_score_worse_in_the_system_is_published_as_minus_one(comparison):
    base, system = "poor", "good"
    entry = comparison["pairs"][0]["metrics"]["latency"]
    entry.update(delta=0.0042, delta_low=0.001, delta_high=0.0071, p_value=0.002, significant=True,
                 verdict="significant", better=base)
    comparison["pairs"][1]["metrics"]["latency"].update(delta=0.0, delta_low=-0.003, delta_high=0.002)  # poor vs same
    scores = build_publication(comparison)["experiments"][system]["experiment_scores"]
    assert scores[f"latency.diff_x100 vs {base}"] == pytest.approx(0.42)
    assert scores[f"latency.p_pct vs {base}"] == pytest.approx(0.2)
    assert scores[f"latency.verdict vs {base}"] == -1.0
    assert not any(" vs " in name for name in build_publication(comparison)["experiments"][base]["experiment_scores"])


def test_an_na_verdict_is_not_published_but_its_p_is(comparison):
    base, system = "poor", "good"
    comparison["pairs"][0]["metrics"]["bleu"].update(verdict="n/a", significant=None, p_value=0.3)
    scores = build_publication(comparison)["experiments"][system]["experiment_scores"]
    assert f"bleu.verdict vs {base}" not in scores and scores[f"bleu.p_pct vs {base}"] == pytest.approx(30.0)


def test_the_record_is_the_same_for_the_same_comparison_made_again(comparison):
    first = comparison
    again = copy.deepcopy(first)
    again["created_at"] = "2030-01-01T00:00:00+00:00"
    assert comparison_record(first) == comparison_record(again)
    record = comparison_record(first)
    assert "values" not in json.dumps(record["scores"]) and len(record["pairs"]) == 3     # every pair, as the notes count
    changed = copy.deepcopy(first)
    changed["pairs"][0]["metrics"]["bleu"]["p_value"] = 0.5
    assert comparison_record(changed)["fingerprint"] != record["fingerprint"]


def test_markdown_table_rows_and_p_floor(comparison):
    record = comparison_record(comparison)
    pair = record["pairs"][0]["scores"]
    pair["bleu"].update(p_value=1 / 1001, direction_verdict=1, difference=0.0123, difference_low=0.004,
                        difference_high=0.02)
    table = markdown_table(record)
    assert "| bleu ↑ |" in table and "| latency ↓ |" in table
    row = next(line for line in table.splitlines() if line.startswith("| bleu ↑"))
    assert "0.0123 [0.004, 0.02]" in row and "≤0.001" in row and "better (+1)" in row
    assert "| bleu ↑ | poor |" in row and "| good |" in row
