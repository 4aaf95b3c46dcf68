"""``compare --publish``: a comparison written into Opik through its real SDK, over HTTP, to the REST
server of tests/opik_rest_server.py (every request body checked against the SDK's REST models),
then read back through the SDK and held against comparison.json; publishing twice, ``--dry-run``,
refused writes and the local store."""
from __future__ import annotations

import json
import re
import shutil
import uuid

import opik
import pytest
from opik.evaluation.metrics import base_metric, score_result

from opik_metrics import BLEU, ROUGE
from opik_metrics.cli.main import main
from opik_metrics.compare.publication import METADATA_KEY
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


def test_publish_leaves_what_comparison_json_says_read_back_through_the_sdk(server, tmp_path, capsys):
    code, out, err = _cli(capsys, "compare", "poor", "good", "same", "--opik", "--publish", "-o", str(tmp_path / "r"))
    assert code == 0, err
    assert "published on 3 experiment(s)" in out and "kept" not in out
    comparison = json.loads((tmp_path / "r" / "comparison.json").read_text())
    pairs = {p["system"]: p for p in comparison["pairs"] if p["baseline"] == "poor"}
    assert set(pairs) == {"good", "same"}
    written = {name: _read_back(name) for name in ("poor", "good", "same")}
    for metric in comparison["metrics"]:
        score = metric["name"]
        for name, (scores, _) in written.items():
            entry = comparison["scores"][score][name]
            assert scores[f"{score}.ci_low"] == pytest.approx(entry["low"], abs=1e-12)
            assert scores[f"{score}.ci_high"] == pytest.approx(entry["high"], abs=1e-12)
        factors = set()
        for system, pair in pairs.items():
            scores, entry = written[system][0], pair["metrics"][score]
            (diff_name,) = [n for n in scores if n.startswith(f"{score}.diff") and n.endswith(" vs poor")]
            factors.add(_factor(diff_name))
            assert scores[diff_name] == pytest.approx(entry["delta"] * _factor(diff_name), abs=1e-9)
            assert entry["delta"] == 0 or abs(scores[diff_name]) >= 0.1           # two figures at two decimals
            assert scores[f"{score}.p_pct vs poor"] == pytest.approx(entry["p_value"] * 100, abs=0.01)
            if entry["significant"]:
                assert round(scores[f"{score}.p_pct vs poor"], 2) < 5.0
        assert len(factors) == 1                                          # one column per score in the UI
        assert not any(" vs " in n for n in written["poor"][0])            # the baseline has no difference
    assert any(_factor(n) == 100 for n in written["good"][0] if n.startswith("bleu.diff"))   # BLEU in points
    good, same = written["good"][0], written["same"][0]
    # the declared direction: good is better on BLEU and ROUGE-L, worse (slower) on latency although larger
    assert good["bleu.verdict vs poor"] == 1 and good["rougeL_f1.verdict vs poor"] == 1
    assert good["corpus_bleu.verdict vs poor"] == 1
    assert good["latency.verdict vs poor"] == -1 and pairs["good"]["metrics"]["latency"]["delta"] > 0
    # better on 1 item of 18: not significant (p 0.25)
    assert same["bleu.verdict vs poor"] == 0 and pairs["same"]["metrics"]["bleu"]["delta"] > 0
    assert good["human_rating"] == 0.7                                    # someone else's score is kept
    assert good["corpus_bleu"] == pytest.approx(comparison["scores"]["corpus_bleu"]["good"]["recorded"])
    record = written["good"][1][METADATA_KEY]
    assert (record["baseline"], record["resamples"], record["seed"]) == ("poor", 1000, 12345)
    assert [(p["baseline"], p["system"]) for p in record["pairs"]] == [("poor", "good"), ("poor", "same"),
                                                                       ("good", "same")]
    assert record["pairs"][0]["shared_items"] == len(REFS)
    bleu, truth = record["pairs"][0]["scores"]["bleu"], pairs["good"]["metrics"]["bleu"]
    assert (bleu["difference"], bleu["difference_low"], bleu["difference_high"], bleu["p_value"]) == \
        (truth["delta"], truth["delta_low"], truth["delta_high"], truth["p_value"])
    assert (bleu["wins"], bleu["ties"], bleu["losses"]) == (truth["wins"], truth["ties"], truth["losses"])
    assert record["scores"]["latency"]["higher_is_better"] is False
    assert record["published_scores"] == {n: v for n, v in good.items() if n not in ("human_rating", "corpus_bleu")}
    assert written["good"][1]["model"] == "good"                                # the run's own config is kept
    board = opik.Opik().get_dashboard(record["dashboard"]["id"])
    assert board.name == "opik-metrics: good, same vs poor" == record["dashboard"]["name"]
    table = board.sections[0].widgets[0].config["content"]
    assert re.search(r"\| latency ↓ \| poor \|[^\n]*\| good \|[^\n]*\| worse \(-1\) \|", table)
    assert re.search(r"\| bleu ↑ \| poor \|[^\n]*\| same \|[^\n]*\| no significant difference \(0\) \|", table)
    assert [w.type for w in board.sections[0].widgets] == ["text_markdown", "experiment_leaderboard"]


def test_a_score_someone_changed_after_a_publish_is_theirs(server, capsys):
    assert _cli(capsys, "compare", "poor", "good", "--opik", "--publish")[0] == 0
    good = server.experiment_named("good")
    mine = next(s for s in good["experiment_scores"] if s["name"] == "bleu.ci_low")
    good["experiment_scores"] = [s for s in good["experiment_scores"] if s is not mine] + \
        [{"name": "bleu.ci_low", "value": 0.123}]                               # another tool's write
    code, out, _ = _cli(capsys, "compare", "poor", "good", "--opik", "--publish")
    assert code == 0 and f"good: bleu.ci_low was logged before as 0.123; kept (this comparison has {mine['value']:.6g})" in out
    scores, metadata = _read_back("good")
    assert scores["bleu.ci_low"] == 0.123 and "bleu.ci_low" not in metadata[METADATA_KEY]["published_scores"]
    assert metadata[METADATA_KEY]["kept_existing_scores"] == {"bleu.ci_low": [0.123, mine["value"]]}


def test_publishing_twice_writes_nothing_more(server, capsys):
    assert _cli(capsys, "compare", "poor", "good", "--opik", "--publish")[0] == 0
    state = json.dumps([server.experiments, server.dashboards], sort_keys=True)
    writes = len(server.writes())
    code, out, _ = _cli(capsys, "compare", "poor", "good", "--opik", "--publish")
    assert code == 0 and "unchanged on poor, good" in out and "(unchanged)" in out
    assert len(server.writes()) == writes
    assert json.dumps([server.experiments, server.dashboards], sort_keys=True) == state


def test_dry_run_prints_exactly_what_publish_writes_and_writes_nothing(server, capsys):
    code, out, _ = _cli(capsys, "compare", "poor", "good", "--opik", "--dry-run")
    assert code == 0 and server.writes() == [] and server.dashboards == {}
    plan = json.loads(out)
    assert _cli(capsys, "compare", "poor", "good", "--opik", "--publish")[0] == 0
    (board_id,) = server.dashboards
    for name in ("poor", "good"):
        scores, metadata = _read_back(name)
        planned = plan["experiments"][name]
        assert {k: scores[k] for k in planned["experiment_scores"]} == planned["experiment_scores"]
        same = {"corpus_bleu"}                     # recorded by the run with this very value: left as it is
        assert metadata[METADATA_KEY] == {
            **planned["metadata"], "dashboard": {**planned["metadata"]["dashboard"], "id": board_id},
            "published_scores": {k: v for k, v in planned["experiment_scores"].items() if k not in same}}
    assert server.dashboards[board_id]["config"]["sections"][0]["widgets"][0]["config"]["content"] == \
        plan["dashboard"]["markdown"]


def test_a_new_comparison_replaces_what_the_last_one_wrote_and_keeps_the_rest(server, capsys):
    assert _cli(capsys, "compare", "poor", "good", "--opik", "--publish")[0] == 0
    assert _cli(capsys, "compare", "poor", "good", "--opik", "--publish", "--metric", "bleu")[0] == 0
    scores, metadata = _read_back("good")
    assert not any(n.startswith(("latency", "rougeL")) for n in scores)
    assert {"bleu.ci_low", "bleu.verdict vs poor", "human_rating", "corpus_bleu"} <= set(scores)
    assert sorted(metadata[METADATA_KEY]["published_scores"]) == sorted(set(scores) - {"human_rating", "corpus_bleu"})


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
    assert scores["bleu.p_pct vs poor"] == pytest.approx(comparison["pairs"][0]["metrics"]["bleu"]["p_value"] * 100)


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
    names = [f"opik-metrics-poor-{tag}", f"opik-metrics-good-{tag}"]
    for name, outputs in zip(names, (POOR, GOOD)):
        run_experiment(name, items_for(REFS), answer_with(outputs), [BLEU()], dataset_name=f"opik-metrics-{tag}",
                       backend="opik", progress=False)
    code, _, err = _cli(capsys, "compare", *names, "--opik", "--publish")
    assert code == 0, err
    scores, metadata = _read_back(names[1])
    assert scores[f"bleu.verdict vs {names[0]}"] == 1 and metadata[METADATA_KEY]["baseline"] == names[0]
    assert _cli(capsys, "compare", *names, "--opik", "--publish")[1].startswith("published on 0 experiment(s)")
