"""What a publication holds, worked out by hand: scales that survive Opik's two decimals, values
rounded as the server stores them, names with the baseline in them, two of them per score and
baseline unless all are asked for, verdicts in the declared direction, the dashboard's name, table,
leaderboard and chart, and a record that does not change from one run of the same comparison to the next.
Comparisons are changed as their comparison.json and read back (``_c``) for the publication."""
from __future__ import annotations

import copy
import json

import pytest

from opik_metrics.compare.publishing.publication import (DASHBOARD_NAME_MAX, build_publication, comparison_record,
                                              dashboard_name, diff_factor, directed_verdict, interval_names,
                                              markdown_table, p_percent, pair_names, same_stored, server_value)
from opik_metrics import BLEU
from opik_metrics.compare.analysis import compare_experiments
from opik_metrics.compare.model import Comparison, Verdict
from opik_metrics.compare.reading.sources import load_experiments
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
    """The comparison's JSON object, to change before reading it back with ``_c``."""
    return made.to_dict()


def _c(data):
    return Comparison.from_dict(data)


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


@pytest.mark.parametrize("verdict, number", [
    (Verdict.BETTER, 1), (Verdict.WORSE, -1),   # worse: e.g. higher perplexity
    (Verdict.NO_DIFFERENCE, 0), (Verdict.NONE, None),
])
def test_directed_verdict(verdict, number):
    assert directed_verdict(verdict) == number


def test_a_lower_is_better_score_worse_in_the_system_is_published_as_minus_one(comparison):
    base, system = "poor", "good"
    entry = comparison["pairs"][0]["metrics"]["latency"]
    entry.update(delta=0.0042, delta_low=0.001, delta_high=0.0071, p_value=0.002, verdict="worse")
    comparison["pairs"][1]["metrics"]["latency"].update(delta=0.0, delta_low=-0.003, delta_high=0.002)  # poor vs same
    scores = build_publication(_c(comparison), all_scores=True)["experiments"][system]["experiment_scores"]
    assert scores[f"latency.diff_x100 vs {base}"] == pytest.approx(0.42)
    assert scores[f"latency.p_pct vs {base}"] == pytest.approx(0.2)
    assert scores[f"latency.verdict vs {base}"] == -1.0
    assert not any(" vs " in name
                   for name in build_publication(_c(comparison), all_scores=True)["experiments"][base]["experiment_scores"])


def test_an_na_verdict_is_not_published_but_its_p_is(comparison):
    base, system = "poor", "good"
    comparison["pairs"][0]["metrics"]["bleu"].update(verdict="n/a", p_value=0.3)
    scores = build_publication(_c(comparison), all_scores=True)["experiments"][system]["experiment_scores"]
    assert f"bleu.verdict vs {base}" not in scores and scores[f"bleu.p_pct vs {base}"] == pytest.approx(30.0)


def test_the_record_is_the_same_for_the_same_comparison_made_again(comparison):
    first = comparison
    again = copy.deepcopy(first)
    again["created_at"] = "2030-01-01T00:00:00+00:00"
    assert comparison_record(_c(first)) == comparison_record(_c(again))
    record = comparison_record(_c(first))
    assert "values" not in json.dumps(record["scores"]) and len(record["pairs"]) == 3     # every pair, as the notes count
    changed = copy.deepcopy(first)
    changed["pairs"][0]["metrics"]["bleu"]["p_value"] = 0.5
    assert comparison_record(_c(changed))["fingerprint"] != record["fingerprint"]


def test_markdown_table_rows_and_p_floor(comparison):
    record = comparison_record(_c(comparison))
    pair = record["pairs"][0]["scores"]
    pair["bleu"].update(p_value=1 / 1001, direction_verdict=1, difference=0.0123, difference_low=0.004,
                        difference_high=0.02)
    table = markdown_table(record)
    assert "| bleu ↑ |" in table and "| latency ↓ |" in table
    row = next(line for line in table.splitlines() if line.startswith("| bleu ↑"))
    assert "0.0123 [0.004, 0.02]" in row and "≤0.001" in row and "better (+1)" in row
    assert "| bleu ↑ | poor |" in row and "| good |" in row


@pytest.mark.parametrize("value, stored", [
    (0.1234567885, 0.123456788),          # HALF_EVEN on the number as JSON writes it: a tie goes to the even digit
    (0.1234567895, 0.12345679),
    (0.12345678851, 0.123456789),
    (4.995004995004995, 4.995004995),
    (1.0, 1.0), (-2, -2.0),
    (1.5e-12, 0.0),
    (999999999.4, 999999999.4),
    (1e9, None), (-3e12, None),           # the Decimal(18, 9) scores are read back through cannot hold it
    (float("nan"), None), (float("inf"), None), (None, None), (True, None),
])
def test_server_value_rounds_as_the_server(value, stored):
    assert server_value(value) == stored


def test_same_stored_compares_at_nine_decimals():
    assert same_stored(0.04995004995004995, 0.04995005)          # recorded at full precision, held at 9 decimals
    assert same_stored(0.123456789, 0.1234567894)                # the same at 9 decimals
    assert not same_stored(0.123456789, 0.123456791)
    assert not same_stored(0.1, None) and not same_stored(float("nan"), float("nan"))


def _names_per_score(publication, scores):
    """Experiment -> compared score -> how many experiment-score names it got."""
    out = {}
    for exp, plan in publication["experiments"].items():
        counts: dict[str, int] = {}
        for name in plan["experiment_scores"]:
            score = max((s for s in scores if name.startswith(f"{s}.") or name == s), key=len)
            counts[score] = counts.get(score, 0) + 1
        out[exp] = counts
    return out


def test_by_default_two_names_per_score_and_baseline_and_all_on_request(comparison):
    scores = [m["name"] for m in comparison["metrics"]]
    default = build_publication(_c(comparison))
    assert default["experiments"]["poor"]["experiment_scores"] == {}            # the baseline gets no column
    for exp in ("good", "same"):
        counts = _names_per_score(default, scores)[exp]
        assert set(counts) == set(scores) and all(n <= 2 for n in counts.values())
        names = set(default["experiments"][exp]["experiment_scores"])
        assert {"bleu.diff_x100 vs poor", "bleu.verdict vs poor"} <= names
        assert not any(".ci" in n or "p_pct" in n for n in names)
    everything = build_publication(_c(comparison), all_scores=True)
    names = set(everything["experiments"]["good"]["experiment_scores"])
    assert {"bleu.ci_low", "bleu.ci_high", "bleu.diff_x100 vs poor", "bleu.p_pct vs poor", "bleu.verdict vs poor",
            "corpus_bleu", "corpus_bleu.ci_low"} <= names
    assert {"bleu.ci_low", "bleu.ci_high"} <= set(everything["experiments"]["poor"]["experiment_scores"])
    assert default["experiments"]["good"]["metadata"]["scores"] == everything["experiments"]["good"]["metadata"]["scores"]


def test_published_values_are_rounded_and_recorded_as_sent(comparison):
    comparison["pairs"][0]["metrics"]["bleu"].update(delta=0.012345678912345, p_value=50 / 1001, verdict="better")
    plan = build_publication(_c(comparison), all_scores=True)["experiments"]["good"]
    scores = plan["experiment_scores"]
    assert scores["bleu.diff_x100 vs poor"] == 1.234567891                  # 100 x difference, 9 decimals
    assert scores["bleu.p_pct vs poor"] == 4.99
    assert plan["metadata"]["published_scores"] == dict(sorted(scores.items()))
    assert plan["metadata"]["pairs"][0]["scores"]["bleu"]["difference"] == 0.012345678912345   # full precision


def test_a_value_no_server_can_hold_is_left_to_the_metadata(comparison):
    comparison["pairs"][0]["metrics"]["latency"].update(delta=5e9, delta_low=4e9, delta_high=6e9)
    plan = build_publication(_c(comparison), all_scores=True)["experiments"]["good"]
    assert "latency.diff vs poor" not in plan["experiment_scores"]
    assert plan["metadata"]["pairs"][0]["scores"]["latency"]["difference"] == 5e9


def test_a_non_finite_figure_is_a_string_in_the_record(comparison):
    comparison["scores"]["latency"]["good"]["high"] = float("inf")
    record = comparison_record(_c(comparison))
    assert record["scores"]["latency"]["experiments"]["good"]["high"] == "inf"
    json.dumps(record, allow_nan=False)


def _cells(row):
    """The cells of a markdown table row, split as GFM splits them: a backslash escapes the next character."""
    cells, cell, k = [], "", 0
    while k < len(row):
        if row[k] == "\\":
            cell += row[k:k + 2]
            k += 2
            continue
        if row[k] == "|":
            cells.append(cell)
            cell = ""
        else:
            cell += row[k]
        k += 1
    return cells[1:]


def test_pipes_and_newlines_in_names_stay_in_their_cell(comparison):
    record = comparison_record(_c(comparison))
    odd_base, odd_system, odd_score = "base|line\\", "sys\ntem | two", "lat|ency\r\nms"
    record["experiments"] = [odd_base, odd_system, record["experiments"][2]]
    record["baseline"] = odd_base
    for pair in record["pairs"]:
        pair["baseline"] = {"poor": odd_base, "good": odd_system}.get(pair["baseline"], pair["baseline"])
        pair["system"] = {"poor": odd_base, "good": odd_system}.get(pair["system"], pair["system"])
        pair["scores"][odd_score] = pair["scores"].pop("latency")
    record["scores"][odd_score] = record["scores"].pop("latency")
    table = markdown_table(record)
    rows = [line for line in table.splitlines() if line.startswith("| ") and ("↑" in line or "↓" in line)]
    assert len(rows) == len(record["pairs"]) * len(record["scores"])          # one line per score and pair
    assert all(len(_cells(row)) == 8 for row in rows)
    odd = next(row for row in rows if row.startswith("| lat"))
    assert _cells(odd)[0].strip() == "lat\\|ency ms ↓"
    first = next(row for row in rows if _cells(row)[3].strip().startswith("sys"))
    assert _cells(first)[1].strip() == "base\\|line\\\\" and _cells(first)[3].strip() == "sys tem \\| two"
    assert table.splitlines()[0] == "### sys tem \\| two, same against base\\|line\\\\"


def test_dashboard_name_is_at_most_120_characters_and_stable(comparison):
    assert dashboard_name(_c(comparison)) == "opik-metrics: good, same vs poor"
    assert dashboard_name(_c(comparison), "captions") == "opik-metrics: good, same vs poor (captions)"
    for k, e in enumerate(comparison["experiments"]):
        e["name"] = f"run-{k}-" + "x" * 54                                 # 60 characters each
    long = dashboard_name(_c(comparison))
    assert len(long) <= DASHBOARD_NAME_MAX and long.startswith("opik-metrics: run-1-xxx") and long == dashboard_name(
        _c(copy.deepcopy(comparison)))
    comparison["experiments"][2]["name"] = "run-2-" + "y" * 54
    other = dashboard_name(_c(comparison))
    assert other != long and len(other) <= DASHBOARD_NAME_MAX
    plan = build_publication(_c(comparison))
    assert all(e["name"] in plan["dashboard"]["description"] for e in comparison["experiments"])
    assert all(e["name"] in plan["dashboard"]["markdown"] for e in comparison["experiments"])


def test_leaderboard_ranks_by_a_score_every_experiment_has_in_its_direction(comparison):
    plan = build_publication(_c(comparison))["dashboard"]
    assert plan["ranking_metric"] == "feedback_scores.bleu" and plan["ranking_higher_is_better"] is True
    assert plan["leaderboard_columns"][:3] == ["feedback_scores.bleu", "experiment_scores.corpus_bleu",
                                               "feedback_scores.latency"]
    assert "experiment_scores.latency.verdict vs poor" in plan["leaderboard_columns"]
    assert plan["difference_chart"] == ["bleu.diff_x100 vs poor", "corpus_bleu.diff_x100 vs poor",
                                        "latency.diff vs poor"]
    del comparison["scores"]["bleu"]["same"]                                # bleu is not on every experiment
    plan = build_publication(_c(comparison))["dashboard"]
    assert plan["ranking_metric"] == "experiment_scores.corpus_bleu" and plan["ranking_higher_is_better"] is True
    comparison["metrics"] = [m for m in comparison["metrics"] if m["name"] == "latency"]
    plan = build_publication(_c(comparison))["dashboard"]
    assert plan["ranking_metric"] == "feedback_scores.latency" and plan["ranking_higher_is_better"] is False


def test_dashboard_name_and_description_fit_opiks_limits_in_utf16_units(comparison):
    """Java's @Size counts UTF-16 units: a character beyond U+FFFF is two."""
    from opik_metrics.compare.publishing.publication import dashboard_description, java_length

    record = {"experiments": ["base-" + "\U0001F600" * 600, "new-" + "\U0001F680" * 600], "baseline": "base"}
    record["baseline"] = record["experiments"][0]
    text = dashboard_description(record)
    assert java_length(text) <= 1000 and text.endswith("…") and len(text) < 1000
    comparison["experiments"] = comparison["experiments"][:2]
    for experiment, name in zip(comparison["experiments"], record["experiments"]):
        experiment["name"] = name
    name = dashboard_name(_c(comparison))
    assert java_length(name) <= 120 and name == dashboard_name(_c(comparison))
