"""The dashboard a publish writes, as Opik's frontend reads it (apps/opik-frontend, widgets
ExperimentLeaderboardWidget and ExperimentsFeedbackScoresWidget): the compared experiments chosen
by id, the compared scores as columns, a ranking in the score's direction, a bar chart of the
differences; built with the SDK's own dashboard classes, which accept it back."""
from __future__ import annotations

import opik

from opik_metrics.compare.publishing.opik_publish import dashboard_sections

SPEC = {"name": "opik-metrics: good vs poor", "description": "d", "markdown": "| a |",
        "leaderboard_columns": ["feedback_scores.latency", "experiment_scores.latency.diff vs poor",
                                "experiment_scores.latency.verdict vs poor"],
        "ranking_metric": "feedback_scores.latency", "ranking_higher_is_better": False,
        "difference_chart": ["latency.diff vs poor"]}


def test_leaderboard_and_chart_show_the_compared_experiments_and_scores():
    (section,) = dashboard_sections(SPEC, ["id-poor", "id-good", "id-same"])
    table, board, chart = section["widgets"]
    assert (table["type"], table["config"]) == ("text_markdown", {"content": "| a |"})
    assert board["type"] == "experiment_leaderboard"
    assert {k: board["config"][k] for k in ("overrideDefaults", "dataSource", "experimentIds", "selectedColumns",
                                            "enableRanking", "rankingMetric", "rankingDirection")} == {
        "overrideDefaults": True, "dataSource": "select_experiments", "experimentIds": ["id-poor", "id-good", "id-same"],
        "selectedColumns": SPEC["leaderboard_columns"], "enableRanking": True,
        "rankingMetric": "feedback_scores.latency", "rankingDirection": False}          # lower is better
    (narrowed,) = board["config"]["filters"]          # what the frontend's extractExperimentIdsFilter reads
    assert (narrowed["field"], narrowed["operator"], narrowed["value"]) == ("experiment_ids", "in",
                                                                            "id-poor,id-good,id-same")
    assert [f["value"] for f in chart["config"]["filters"]] == ["id-good,id-same"]
    assert chart["type"] == "experiments_feedback_scores"
    assert {k: chart["config"][k] for k in ("chartType", "feedbackScores", "experimentIds", "overrideDefaults",
                                            "dataSource")} == {
        "chartType": "bar", "feedbackScores": ["latency.diff vs poor"], "experimentIds": ["id-good", "id-same"],
        "overrideDefaults": True, "dataSource": "select_experiments"}                   # the systems, not the baseline
    assert {item["i"] for item in section["layout"]} == {table["id"], board["id"], chart["id"]}
    assert opik.dashboard.DashboardSection.model_validate(section).to_jsonable() == section


def test_the_same_spec_gives_the_same_sections_and_no_chart_without_differences():
    ids = ["id-poor", "id-good"]
    assert dashboard_sections(SPEC, ids) == dashboard_sections(dict(SPEC), list(ids))
    (section,) = dashboard_sections({**SPEC, "difference_chart": [], "ranking_metric": None,
                                     "ranking_higher_is_better": None}, ids)
    assert [w["type"] for w in section["widgets"]] == ["text_markdown", "experiment_leaderboard"]
    assert section["widgets"][1]["config"]["enableRanking"] is False
    assert "rankingMetric" not in section["widgets"][1]["config"]
