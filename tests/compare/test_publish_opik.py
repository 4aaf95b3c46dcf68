"""``compare --publish``: a comparison written into Opik through its real SDK, over HTTP, to the REST
server of tests/opik_rest_server.py (every request body checked against the SDK's REST models and the
backend's own rules), then read back through the SDK and held against comparison.json; the columns
it adds, the dashboard's widgets, publishing twice, ``--dry-run``, a new comparison over an old one,
long names, refused writes and the local store."""
from __future__ import annotations

import json
import re
import shutil
import uuid
from decimal import Decimal

import opik
import pytest
from opik.evaluation.metrics import base_metric, score_result

from opik_metrics import BLEU, ROUGE
from opik_metrics.cli.main import main
from opik_metrics.compare.publishing.publication import METADATA_KEY
from opik_metrics.experiments.store import ExperimentStore
from tests.compare.opik_seed import seed_from_store
from tests.compare.systems import store_with
from tests.opik_rest_server import OpikRestServer

REFS = [f"the {a} {b} on the {c}" for a, b, c in zip(["dog", "cat", "bus", "man", "boat", "kid"] * 3,
                                                        ["runs", "sleeps", "stops", "rides", "sails", "plays"] * 3,
                                                        ["beach", "sofa", "road", "bike", "sea", "grass"] * 3)]
GOOD = [r.replace("the ", "a ", 1) if k % 3 else " ".join(r.split()[:-1] + ["today"]) for k, r in enumerate(REFS)]
POOR = [" ".join(r.split()[:2]) for r in REFS]
SAME = [GOOD[k] if k == 11 else POOR[k] for k in range(len(REFS))]   # poor, better on 1 item of 18


class Latency(base_metric.BaseMetric):
    """A user's own metric, better when lower: ``good`` answers in more words, so it is slower."""

    higher_is_better = False

    def __init__(self) -> None:
        super().__init__(name="latency", track=False)

    def score(self, output: str, **ignored) -> score_result.ScoreResult:
        return score_result.ScoreResult(name="latency", value=10.0 * len(output.split()) + len(output) % 3)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("publish") / "store.sqlite"
    return store_with(path, REFS, {"poor": POOR, "good": GOOD, "same": SAME},
                      metrics=[BLEU(), ROUGE(rouge_types=("rougeL",)), Latency()])


@pytest.fixture
def server(store_path, monkeypatch):
    with OpikRestServer() as srv:
        seed_from_store(srv, store_path, ["poor", "good", "same"])
        srv.experiment_named("good")["experiment_scores"].append({"name": "human_rating", "value": 0.7})
        monkeypatch.setenv("OPIK_URL_OVERRIDE", srv.url)
        yield srv
        assert srv.invalid == [] and srv.unexpected == []


def _cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _read_back(name):
    """(experiment scores, metadata) of experiment ``name``, read through a new SDK client."""
    client = opik.Opik()
    data = next(e for e in client.get_experiments_by_name(name) if e.name == name).get_experiment_data()
    return {s.name: s.value for s in data.experiment_scores or []}, data.metadata


def _factor(name):
    found = re.search(r"\.diff(?:_x(\d+))? vs ", name)
    return int(found.group(1) or 1)


def _by_score(names, scores):
    """Published name -> the compared score it belongs to (the longest score name it starts with)."""
    return {n: max((s for s in scores if n.startswith(f"{s}.")), key=len) for n in names}


def test_publish_leaves_what_comparison_json_says_read_back_through_the_sdk(server, tmp_path, capsys):
    before = {name: _read_back(name)[0] for name in ("poor", "good", "same")}
    code, out, err = _cli(capsys, "compare", "poor", "good", "same", "--opik", "--publish", "-o", str(tmp_path / "r"))
    assert code == 0, err
    assert "published on 3 experiment(s)" in out and "kept" not in out
    comparison = json.loads((tmp_path / "r" / "comparison.json").read_text())
    pairs = {p["system"]: p for p in comparison["pairs"] if p["baseline"] == "poor"}
    assert set(pairs) == {"good", "same"}
    written = {name: _read_back(name) for name in ("poor", "good", "same")}
    assert written["poor"][0] == before["poor"]                          # nothing new on the baseline
    compared = [m["name"] for m in comparison["metrics"]]
    for name in ("good", "same"):
        new = set(written[name][0]) - set(before[name])
        per_score = _by_score(new, compared)
        assert all(list(per_score.values()).count(s) == 2 for s in compared)   # two columns per score and baseline
        assert not any(".ci" in n or ".p_pct" in n for n in new)               # intervals and p: metadata, table
    for score in compared:
        factors = set()
        for system, pair in pairs.items():
            scores, entry = written[system][0], pair["metrics"][score]
            (diff_name,) = [n for n in scores if n.startswith(f"{score}.diff") and n.endswith(" vs poor")]
            factors.add(_factor(diff_name))
            assert scores[diff_name] == pytest.approx(entry["delta"] * _factor(diff_name), abs=1e-9)
            assert entry["delta"] == 0 or abs(scores[diff_name]) >= 0.1           # two figures at two decimals
        assert len(factors) == 1                                          # one column per score in the UI
    assert any(_factor(n) == 100 for n in written["good"][0] if n.startswith("bleu.diff"))   # BLEU in points
    good, same = written["good"][0], written["same"][0]
    # the declared direction: good is better on BLEU and ROUGE-L, worse (slower) on latency although larger
    assert good["bleu.verdict vs poor"] == 1 and good["rougeL_f1.verdict vs poor"] == 1
    assert good["corpus_bleu.verdict vs poor"] == 1
    assert good["latency.verdict vs poor"] == -1 and pairs["good"]["metrics"]["latency"]["delta"] > 0
    # better on 1 item of 18: not significant (p 0.25)
    assert same["bleu.verdict vs poor"] == 0 and pairs["same"]["metrics"]["bleu"]["delta"] > 0
    assert good["human_rating"] == 0.7                                    # someone else's score is kept
    record = written["good"][1][METADATA_KEY]
    assert (record["baseline"], record["resamples"], record["seed"]) == ("poor", 1000, 12345)
    assert [(p["baseline"], p["system"]) for p in record["pairs"]] == [("poor", "good"), ("poor", "same"),
                                                                       ("good", "same")]
    assert record["pairs"][0]["shared_items"] == len(REFS)
    bleu, truth = record["pairs"][0]["scores"]["bleu"], pairs["good"]["metrics"]["bleu"]
    assert (bleu["difference"], bleu["difference_low"], bleu["difference_high"], bleu["p_value"]) == \
        (truth["delta"], truth["delta_low"], truth["delta_high"], truth["p_value"])   # full precision, metadata
    assert (bleu["wins"], bleu["ties"], bleu["losses"]) == (truth["wins"], truth["ties"], truth["losses"])
    assert record["scores"]["bleu"]["experiments"]["good"]["low"] == comparison["scores"]["bleu"]["good"]["low"]
    assert record["scores"]["latency"]["higher_is_better"] is False
    assert record["published_scores"] == {n: v for n, v in good.items() if n not in before["good"]}
    assert written["good"][1]["model"] == "good"                                # the run's own config is kept
    board = opik.Opik().get_dashboard(record["dashboard"]["id"])
    assert board.name == "opik-metrics: good, same vs poor" == record["dashboard"]["name"]
    table, leaderboard, chart = board.sections[0].widgets
    assert re.search(r"\| latency ↓ \| poor \|[^\n]*\| good \|[^\n]*\| worse \(-1\) \|", table.config["content"])
    assert re.search(r"\| bleu ↑ \| poor \|[^\n]*\| same \|[^\n]*\| no significant difference \(0\) \|",
                     table.config["content"])
    ids = [server.experiment_named(n)["id"] for n in ("poor", "good", "same")]
    assert leaderboard.type == "experiment_leaderboard"
    config = leaderboard.config
    assert (config["overrideDefaults"], config["dataSource"], config["experimentIds"]) == (True, "select_experiments", ids)
    assert [(f["field"], f["value"]) for f in config["filters"]] == [("experiment_ids", ",".join(ids))]
    assert {"feedback_scores.bleu", "feedback_scores.latency", "experiment_scores.bleu.verdict vs poor",
            "experiment_scores.latency.verdict vs poor"} <= set(config["selectedColumns"])
    assert (config["enableRanking"], config["rankingMetric"], config["rankingDirection"]) == \
        (True, "feedback_scores.bleu", True)                  # a score every experiment has, higher is better
    assert chart.type == "experiments_feedback_scores" and chart.config["chartType"] == "bar"
    assert chart.config["experimentIds"] == ids[1:]
    assert sorted(chart.config["feedbackScores"]) == sorted(n for n in good if ".diff" in n)


def test_publish_all_scores_adds_intervals_p_and_corpus_values(server, tmp_path, capsys):
    code, _, err = _cli(capsys, "compare", "poor", "good", "same", "--opik", "--publish", "--publish-all-scores",
                        "-o", str(tmp_path / "r"))
    assert code == 0, err
    comparison = json.loads((tmp_path / "r" / "comparison.json").read_text())
    written = {name: _read_back(name)[0] for name in ("poor", "good", "same")}
    for metric in comparison["metrics"]:
        score = metric["name"]
        for name, scores in written.items():
            entry = comparison["scores"][score][name]
            assert scores[f"{score}.ci_low"] == pytest.approx(entry["low"], abs=1e-9)
            assert scores[f"{score}.ci_high"] == pytest.approx(entry["high"], abs=1e-9)
        for system in ("good", "same"):
            entry = next(p for p in comparison["pairs"] if p["system"] == system)["metrics"][score]
            assert written[system][f"{score}.p_pct vs poor"] == pytest.approx(entry["p_value"] * 100, abs=0.01)
            if entry["verdict"] in ("better", "worse"):
                assert round(written[system][f"{score}.p_pct vs poor"], 2) < 5.0
    assert not any(" vs " in n for n in written["poor"])               # the baseline has no difference
    assert written["good"]["corpus_bleu"] == pytest.approx(comparison["scores"]["corpus_bleu"]["good"]["recorded"])
    sent = [s["value"] for m, path, body in server.requests if m == "PATCH" and "/experiments/" in path
            for s in body["experiment_scores"]]
    assert sent and all(-Decimal(repr(float(v))).as_tuple().exponent <= 9 for v in sent)   # nothing left to round
    assert _cli(capsys, "compare", "poor", "good", "--opik", "--publish-all-scores")[0] != 0   # needs --publish


def test_a_score_someone_changed_after_a_publish_is_theirs(server, capsys):
    assert _cli(capsys, "compare", "poor", "good", "--opik", "--publish")[0] == 0
    good = server.experiment_named("good")
    mine = next(s for s in good["experiment_scores"] if s["name"] == "bleu.verdict vs poor")
    good["experiment_scores"] = [s for s in good["experiment_scores"] if s is not mine] + \
        [{"name": "bleu.verdict vs poor", "value": 0.123}]                         # another tool's write
    code, out, _ = _cli(capsys, "compare", "poor", "good", "--opik", "--publish")
    assert code == 0
    assert f"good: bleu.verdict vs poor was logged before as 0.123; kept (this comparison has {mine['value']:.6g})" in out
    scores, metadata = _read_back("good")
    assert scores["bleu.verdict vs poor"] == 0.123
    assert "bleu.verdict vs poor" not in metadata[METADATA_KEY]["published_scores"]
    assert metadata[METADATA_KEY]["kept_existing_scores"] == {"bleu.verdict vs poor": [0.123, mine["value"]]}


@pytest.mark.parametrize("flags", [(), ("--publish-all-scores",)])
def test_publishing_twice_writes_nothing_more(server, capsys, flags):
    assert _cli(capsys, "compare", "poor", "good", "--opik", "--publish", *flags)[0] == 0
    for experiment in server.experiments.values():      # as a server that keeps its own last digits holds them
        for score in experiment["experiment_scores"]:
            if score["name"] != "human_rating":
                score["value"] += 4e-10
    state = json.dumps([server.experiments, server.dashboards], sort_keys=True)
    writes = len(server.writes())
    code, out, _ = _cli(capsys, "compare", "poor", "good", "--opik", "--publish", *flags)
    assert code == 0 and "unchanged on poor, good" in out and "(unchanged)" in out and "kept" not in out
    assert len(server.writes()) == writes
    assert json.dumps([server.experiments, server.dashboards], sort_keys=True) == state


def test_dry_run_prints_exactly_what_publish_writes_and_writes_nothing(server, capsys):
    code, out, err = _cli(capsys, "compare", "poor", "good", "--opik", "--dry-run")
    assert code == 0 and server.writes() == [] and server.dashboards == {}
    assert err == "dry run: nothing was written to Opik; the JSON below is exactly what --publish would write\n"
    plan = json.loads(out)
    assert _cli(capsys, "compare", "poor", "good", "--opik", "--publish")[0] == 0
    (board_id,) = server.dashboards
    for name in ("poor", "good"):
        scores, metadata = _read_back(name)
        planned = plan["experiments"][name]
        assert {k: scores[k] for k in planned["experiment_scores"]} == planned["experiment_scores"]
        assert metadata[METADATA_KEY] == {
            **planned["metadata"], "dashboard": {**planned["metadata"]["dashboard"], "id": board_id}}
    board = server.dashboards[board_id]
    widgets = board["config"]["sections"][0]["widgets"]
    assert (board["name"], board["description"]) == (plan["dashboard"]["name"], plan["dashboard"]["description"])
    assert widgets[0]["config"]["content"] == plan["dashboard"]["markdown"]
    assert widgets[1]["config"]["selectedColumns"] == plan["dashboard"]["leaderboard_columns"]
    assert widgets[1]["config"]["rankingMetric"] == plan["dashboard"]["ranking_metric"]
    assert widgets[2]["config"]["feedbackScores"] == plan["dashboard"]["difference_chart"]


def test_a_new_comparison_replaces_what_the_last_one_wrote_and_keeps_the_rest(server, capsys):
    assert _cli(capsys, "compare", "poor", "good", "--opik", "--publish", "--publish-all-scores")[0] == 0
    good = server.experiment_named("good")
    theirs = next(s for s in good["experiment_scores"] if s["name"] == "latency.ci_low")
    theirs["value"] = 1.5                                                    # changed since: someone else's now
    assert _cli(capsys, "compare", "poor", "good", "--opik", "--publish", "--metric", "bleu")[0] == 0
    scores, metadata = _read_back("good")
    assert set(scores) == {"bleu.diff_x100 vs poor", "bleu.verdict vs poor", "human_rating", "corpus_bleu",
                           "latency.ci_low"}                                  # no stale interval or p beside them
    assert scores["latency.ci_low"] == 1.5
    assert sorted(metadata[METADATA_KEY]["published_scores"]) == ["bleu.diff_x100 vs poor", "bleu.verdict vs poor"]
    assert set(_read_back("poor")[0]) == {"corpus_bleu"}                       # the run's own score, as it was


def test_long_experiment_names_publish_under_a_dashboard_name_found_again(server, capsys):
    long_poor, long_good = "poor-" + "p" * 55, "good-" + "g" * 55
    server.experiment_named("poor")["name"], server.experiment_named("good")["name"] = long_poor, long_good
    code, out, err = _cli(capsys, "compare", long_poor, long_good, "--opik", "--publish")
    assert code == 0, err
    (board,) = server.dashboards.values()
    assert len(board["name"]) <= 120 and long_good[:40] in board["name"]
    assert long_poor in board["description"] and long_good in board["description"]
    content = board["config"]["sections"][0]["widgets"][0]["config"]["content"]
    assert long_poor in content and long_good in content
    code, out, _ = _cli(capsys, "compare", long_poor, long_good, "--opik", "--publish")
    assert code == 0 and "(unchanged)" in out and len(server.dashboards) == 1


def test_a_refused_experiment_update_says_what_is_published_and_a_rerun_finishes(server, capsys):
    good_id = server.experiment_named("good")["id"]
    server.fail_next("PATCH", f"/experiments/{good_id}$", 409)
    code, _, err = _cli(capsys, "compare", "poor", "good", "--opik", "--publish")
    assert code != 0 and len(err.strip().splitlines()) == 1
    assert "HTTP 409" in err and "published on poor and not on good" in err and "run the same command again" in err
    assert METADATA_KEY in server.experiment_named("poor")["metadata"]
    assert METADATA_KEY not in server.experiment_named("good")["metadata"]
    assert _cli(capsys, "compare", "poor", "good", "--opik", "--publish")[0] == 0
    fingerprints = {server.experiment_named(n)["metadata"][METADATA_KEY]["fingerprint"] for n in ("poor", "good")}
    assert len(fingerprints) == 1


def test_a_failing_server_publishes_nothing(server, capsys):
    server.fail_next("POST", r"/dashboards$", 500, times=3)         # the SDK's three tries, ~11 s of its backoff
    code, _, err = _cli(capsys, "compare", "poor", "good", "--opik", "--publish")
    assert code != 0 and len(err.strip().splitlines()) == 1
    assert "HTTP 500" in err and "nothing was published" in err
    assert not any(m == "PATCH" for m, _, _ in server.requests)
    assert all(METADATA_KEY not in e["metadata"] for e in server.experiments.values())


def test_an_experiment_missing_on_the_server_is_one_line(server, capsys):
    code, _, err = _cli(capsys, "compare", "poor", "nope", "--opik", "--publish")
    assert code != 0 and "experiment 'nope' is not on the Opik server at" in err
    assert server.writes() == []


def test_the_local_store_says_what_to_push_first_then_publishes(server, store_path, tmp_path, capsys):
    path = shutil.copy(store_path, tmp_path / "store.sqlite")
    code, _, err = _cli(capsys, "compare", "poor", "good", "--store", str(path), "--publish")
    assert code != 0 and f"opik-metrics experiments push poor --store {path}" in err
    assert "experiments push good" in err and server.writes() == []
    with ExperimentStore(path) as store:
        for name in ("poor", "good"):
            store.mark_pushed(name, server.url)
    code, _, err = _cli(capsys, "compare", "poor", "good", "--store", str(path), "--publish", "-o", str(tmp_path / "r"))
    assert code == 0, err
    comparison = json.loads((tmp_path / "r" / "comparison.json").read_text())
    scores, _ = _read_back("good")
    assert scores["bleu.diff_x100 vs poor"] == pytest.approx(comparison["pairs"][0]["metrics"]["bleu"]["delta"] * 100)


@pytest.mark.opik_server
def test_publish_against_a_real_opik_server(capsys):
    from opik_metrics.experiments.opik_server import OpikServerUnavailable, choose_backend
    from opik_metrics.experiments.runner import run_experiment
    from tests.compare.systems import answer_with, items_for

    try:
        choose_backend("opik", timeout=2.0)
    except OpikServerUnavailable as exc:
        pytest.skip(f"no Opik server: {exc}")
    tag = uuid.uuid4().hex[:8]
    # 60-character names: the dashboard's name must be shortened to Opik's 120 characters
    names = [f"opik-metrics-poor-{tag}-".ljust(60, "p"), f"opik-metrics-good-{tag}-".ljust(60, "g")]
    for name, outputs in zip(names, (POOR, GOOD)):
        run_experiment(name, items_for(REFS), answer_with(outputs), [BLEU()], dataset_name=f"opik-metrics-{tag}",
                       backend="opik", progress=False)
    before = {name: _read_back(name)[0] for name in names}
    code, _, err = _cli(capsys, "compare", *names, "--opik", "--publish")
    assert code == 0, err
    scores, metadata = _read_back(names[1])
    assert scores[f"bleu.verdict vs {names[0]}"] == 1 and metadata[METADATA_KEY]["baseline"] == names[0]
    added = set(scores) - set(before[names[1]])
    assert len(added) <= 2 and _read_back(names[0])[0] == before[names[0]]      # two names a score, none on the base
    assert all(round(v, 9) == v for v in scores.values())
    board_name = metadata[METADATA_KEY]["dashboard"]["name"]
    assert len(board_name) <= 120 and [b.name for b in opik.Opik().get_dashboards(name=board_name)] == [board_name]
    # the server kept our values at 9 decimals: publishing again writes nothing and calls nothing someone else's
    code, out, _ = _cli(capsys, "compare", *names, "--opik", "--publish")
    assert code == 0 and "published on 0 experiment(s)" in out and "was logged before as" not in out
