"""The rules of Opik's backend that tests/opik_rest_server.py carries (tests/opik_server_rules.py),
each by hand over HTTP, then Opik's real SDK over HTTP against the server with no emulator: a
feedback-score batch holding one infinite value is refused whole, the other batches arrive."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import opik
import pytest
from opik.api_objects import opik_client
from opik.evaluation.metrics import base_metric, score_result
from opik.id_helpers import generate_id

from opik_metrics.experiments.spans import AttachmentFile, report_span, traced
from tests import opik_server_rules as rules
from tests.opik_rest_server import OpikRestServer

NOW = "2026-11-25T00:00:00Z"


@pytest.fixture
def server():
    with OpikRestServer() as srv:
        yield srv


def send(server: OpikRestServer, method: str, path: str, body: str | None = None) -> tuple[int, object]:
    """``body`` sent as written (so that its number literals are the test's), the answer read."""
    request = urllib.request.Request(server.url + path, method=method, data=None if body is None else body.encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, kind, data = response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as exc:
        status, kind, data = exc.code, exc.headers["Content-Type"], exc.read()
    if not data:
        return status, None
    if kind == "application/octet-stream":                      # a stream: one JSON row a line
        return status, [json.loads(line) for line in data.decode().splitlines()]
    return status, json.loads(data)


def score(trace_id: str, name: str, value: str) -> str:
    return f'{{"id": "{trace_id}", "name": "{name}", "value": {value}, "source": "sdk"}}'


def put_scores(server, *scores: str, entity: str = "traces") -> int:
    return send(server, "PUT", f"/v1/private/{entity}/feedback-scores", f'{{"scores": [{", ".join(scores)}]}}')[0]


def test_more_than_9_decimals_are_rounded_to_9_half_even_in_bigdecimal_fields_only(server):
    trace = generate_id()
    assert put_scores(server, score(trace, "down", "0.1234567894500"),          # 13 decimals: 0.123456789
                      score(trace, "even", "0.1234567885000"),                  # a tie: to the even 8
                      score(trace, "ten", "0.1234567891"),                      # 10 decimals: 0.123456789
                      score(trace, "big", "12345.67890123456789")) == 204
    assert server.trace_scores(trace) == {"down": 0.123456789, "even": 0.123456788, "ten": 0.123456789,
                                          "big": 12345.678901235}
    body = (f'{{"traces": [{{"id": "{trace}", "name": "t", "start_time": "{NOW}", '
            '"output": {"x": 0.1234567894500, "y": Infinity, "z": NaN}}]}')
    assert send(server, "POST", "/v1/private/traces/batch", body)[0] == 204      # NaN/Infinity literals parse
    status, read = send(server, "GET", f"/v1/private/traces/{trace}")
    assert status == 200 and read["output"] == {"x": 0.12345678945, "y": "Infinity", "z": "NaN"}  # a JsonNode
    assert {s["name"]: s["value"] for s in read["feedback_scores"]}["even"] == 0.123456788
    assert server.invalid == [] and server.unexpected == []


@pytest.mark.parametrize("bad, status", [("Infinity", 400), ("-Infinity", 400), ("NaN", 400), ("1e12", 422),
                                         ("1000000000", 422), ("-999999999.9999999996", 422)])
def test_one_bad_value_refuses_the_whole_feedback_score_batch(server, bad, status):
    traces = [generate_id() for _ in range(3)]
    for entity in ("traces", "spans"):
        assert put_scores(server, score(traces[0], "good", "0.5"), score(traces[1], "bad", bad),
                          score(traces[2], "good", "0.75"), entity=entity) == status
    assert server.feedback_scores == {} and len(server.invalid) == 2
    assert all("scores[1] ('bad')" in line for line in server.invalid)


def test_a_blank_name_or_a_missing_field_refuses_the_batch_and_the_bounds_are_inclusive(server):
    trace = generate_id()
    for bad in (score(trace, " \\t", "0.5"), score(trace, "", "0.5"),
                f'{{"id": "{trace}", "name": "s", "value": 0.5}}', '{"name": "s", "value": 0.5, "source": "sdk"}',
                f'{{"id": "{trace}", "name": "s", "source": "sdk"}}'):
        assert put_scores(server, score(trace, "fine", "0.5"), bad) == 422
    assert send(server, "PUT", "/v1/private/traces/feedback-scores", '{"scores": []}')[0] == 422
    assert put_scores(server, *[score(trace, f"s{k}", "0.5") for k in range(rules.MAX_BATCH + 1)]) == 422
    assert server.feedback_scores == {}
    assert put_scores(server, score(trace, "max", "999999999.999999999"), score(trace, "min", "-999999999.999999999"),
                      score(trace, "rounds_in", "999999999.9999999994000")) == 204
    assert server.trace_scores(trace) == {"max": 999999999.999999999, "min": -999999999.999999999,
                                          "rounds_in": 999999999.999999999}


def test_experiment_scores_round_and_a_value_past_decimal_18_9_is_written_but_cannot_be_read(server):
    server.add_dataset("d", [{"q": 1}])
    experiment = generate_id()
    assert send(server, "POST", "/v1/private/experiments",
                f'{{"id": "{experiment}", "dataset_name": "d", "name": "e", '
                '"experiment_scores": [{"name": "a", "value": 0.1234567894500}]}')[0] == 201
    status, read = send(server, "GET", f"/v1/private/experiments/{experiment}")
    assert status == 200 and read["experiment_scores"] == [{"name": "a", "value": 0.123456789}]
    assert send(server, "PATCH", f"/v1/private/experiments/{experiment}",
                '{"experiment_scores": [{"name": " ", "value": 1}]}')[0] == 422        # @NotBlank name
    assert send(server, "PATCH", f"/v1/private/experiments/{experiment}",
                '{"experiment_scores": [{"name": "a", "value": Infinity}]}')[0] == 400
    assert send(server, "PATCH", f"/v1/private/experiments/{experiment}",
                '{"experiment_scores": [{"name": "a", "value": 999999999.5}]}')[0] == 204
    assert send(server, "GET", f"/v1/private/experiments/{experiment}")[0] == 200
    assert len(server.invalid) == 2
    assert send(server, "PATCH", f"/v1/private/experiments/{experiment}",
                '{"experiment_scores": [{"name": "a", "value": 1e9}]}')[0] == 204         # no bound on write
    assert send(server, "GET", f"/v1/private/experiments/{experiment}")[0] == 500         # CAST overflows on read
    assert send(server, "POST", "/v1/private/experiments/stream", '{"name": "e"}')[0] == 500
    assert "Decimal(18, 9)" in server.invalid[-1]


def test_dashboard_names_are_1_to_120_utf16_units_and_an_unknown_project_is_created(server):
    def create(name, **more):
        return send(server, "POST", "/v1/private/dashboards", json.dumps({"name": name, "config": {}, **more}))

    assert create("n" * 121)[0] == 422 and create("")[0] == 422 and create("  ")[0] == 422
    assert create("\U0001F600" * 61)[0] == 422                      # 122 UTF-16 code units
    status, board = create("\U0001F600" * 60)
    assert status == 201
    assert send(server, "PATCH", f"/v1/private/dashboards/{board['id']}", json.dumps({"name": "n" * 121}))[0] == 422
    assert send(server, "PATCH", f"/v1/private/dashboards/{board['id']}", json.dumps({"name": "n" * 120}))[0] == 200
    assert len(server.invalid) == 5 and server.dashboards[board["id"]]["name"] == "n" * 120
    assert send(server, "POST", "/v1/private/projects/retrieve", '{"name": "brand new"}')[0] == 404
    status, board = create("in a project", project_name="brand new")
    assert status == 201 and board["project_id"] == server.projects["brand new"]["id"]
    assert send(server, "POST", "/v1/private/projects/retrieve", '{"name": "brand new"}') == \
        (200, {"id": board["project_id"], "name": "brand new"})


def test_a_body_the_backend_cannot_read_is_a_400(server):
    assert send(server, "PUT", "/v1/private/traces/feedback-scores", '{"scores": [')[0] == 400
    assert send(server, "PUT", "/v1/private/traces/feedback-scores", '{"scores": [{"value": "x"}]}')[0] == 400
    assert len(server.invalid) == 2


@pytest.fixture
def sdk_client(server, monkeypatch):
    """Opik's SDK talking to ``server`` over HTTP: the real streamer, no emulator patched in."""
    monkeypatch.setenv("OPIK_URL_OVERRIDE", server.url)
    monkeypatch.setenv("OPIK_WORKSPACE", "default")
    monkeypatch.delenv("OPIK_API_KEY", raising=False)
    opik_client.reset_global_client()
    client = opik.Opik(project_name="rules")
    yield client
    client.end()
    opik_client.reset_global_client()


def test_the_sdk_over_http_loses_the_batch_holding_an_infinite_score_and_no_other(server, sdk_client):
    first = sdk_client.trace(name="first", input={"q": 1}, output={"a": float("inf")})
    second = sdk_client.trace(name="second", input={"q": 2}, output={"a": 2})
    third = sdk_client.trace(name="third", input={"q": 3}, output={"a": 3})
    sdk_client.log_traces_feedback_scores([{"id": first.id, "name": "s", "value": 0.5}])
    sdk_client.flush()                  # each flush closes a batch: three batches, the second refused
    sdk_client.log_traces_feedback_scores([{"id": second.id, "name": "s", "value": float("inf")},
                                           {"id": first.id, "name": "u", "value": 0.25}])
    sdk_client.flush()
    sdk_client.log_traces_feedback_scores([{"id": third.id, "name": "s", "value": 0.1234567894567}])
    assert sdk_client.flush()
    sent = [body for method, path, body in server.requests if path.endswith("/traces/feedback-scores")]
    assert [len(body["scores"]) for body in sent] == [1, 2, 1]
    assert server.trace_scores(first.id) == {"s": 0.5}                  # "u" went with the infinite one
    assert server.trace_scores(second.id) == {} and server.trace_scores(third.id) == {"s": 0.123456789}
    assert len(server.invalid) == 1 and server.invalid[0].startswith("PUT /api/v1/private/traces/feedback-scores")
    assert "can not be deserialized as `java.math.BigDecimal`" in server.invalid[0]
    assert {t["name"] for t in server.traces.values()} == {"first", "second", "third"}
    read = sdk_client.get_trace_content(first.id)                       # read back through the SDK
    assert read.output == {"a": "Infinity"} and [(s.name, s.value) for s in read.feedback_scores] == [("s", 0.5)]
    assert server.projects["rules"]["id"] == read.project_id
    assert {t.name for t in sdk_client.search_traces(project_name="rules")} == {"first", "second", "third"}
    assert server.unexpected == []


class Ratio(base_metric.BaseMetric):
    """A metric whose value is infinite where the output is empty."""

    def __init__(self) -> None:
        super().__init__(name="ratio", track=False)

    def score(self, output: str, reference: str, **ignored) -> score_result.ScoreResult:
        return score_result.ScoreResult(name="ratio", value=len(reference) / len(output) if output else float("inf"))


def test_opik_evaluate_over_http_reads_back_each_items_trace_scores_as_the_server_joins_them(server, sdk_client):
    items = [{"reference": "a dog", "pred": "a dog runs"}, {"reference": "two cats", "pred": "two cats"}]
    dataset = sdk_client.get_or_create_dataset("rules")
    dataset.insert(items)
    opik.evaluate(dataset=dataset, task=lambda item: {"output": item["pred"]}, scoring_metrics=[Ratio()],
                  experiment_name="joined", task_threads=1, verbose=0, project_name="rules")
    experiment = sdk_client.get_experiment_by_name("joined")
    read = {c.evaluation_task_output["output"]: [(s["name"], s["value"]) for s in c.feedback_scores]
            for c in experiment.get_items()}
    assert read == {"a dog runs": [("ratio", 0.5)], "two cats": [("ratio", 1.0)]}
    assert experiment.get_experiment_data().feedback_scores[0].value == 0.75
    assert server.invalid == [] and server.unexpected == []


def test_in_opik_evaluate_one_infinite_score_loses_the_scores_batched_with_it(server, sdk_client):
    items = [{"reference": "a dog", "pred": "a dog runs"}, {"reference": "two cats", "pred": ""}]
    dataset = sdk_client.get_or_create_dataset("rules")
    dataset.insert(items)
    opik.evaluate(dataset=dataset, task=lambda item: {"output": item["pred"]}, scoring_metrics=[Ratio()],
                  experiment_name="lost", task_threads=1, verbose=0, project_name="rules")
    sent = [body["scores"] for method, path, body in server.requests if path.endswith("/traces/feedback-scores")]
    # The SDK batches the scores of every item logged within a second (usually both here, in one batch).
    refused = next(batch for batch in sent if any(s["value"] == float("inf") for s in batch))
    assert all(server.trace_scores(s["id"]) == {} for s in refused)
    assert all(server.trace_scores(s["id"]) == {"ratio": s["value"]} for batch in sent if batch is not refused
               for s in batch)
    read = {c.evaluation_task_output["output"]: c.feedback_scores
            for c in sdk_client.get_experiment_by_name("lost").get_items()}
    assert read == {"": [], "a dog runs": [] if len(refused) == 2 else [{"name": "ratio", "value": 0.5,
                                                                          "reason": None, "category_name": None}]}
    assert len(server.invalid) == 1 and "BigDecimal" in server.invalid[0]


def test_a_traced_span_and_its_attachment_reach_the_server(server, sdk_client, tmp_path):
    picture = tmp_path / "pic.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n")

    @traced("describe")
    def describe(path: str, size: int) -> dict:
        report_span(metadata={"size": size}, attachments=[AttachmentFile(path, "pic.png", "image/png")])
        return {"text": f"{size} pixels"}

    @opik.track(name="task")
    def task():
        return describe(str(picture), 7)

    task()
    opik.flush_tracker()
    (trace,) = server.traces.values()
    spans = {s["name"]: s for s in server.spans[trace["id"]]}
    assert spans["describe"]["metadata"] == {"size": 7} and spans["describe"]["parent_span_id"] == spans["task"]["id"]
    (attachment,) = server.attachments
    assert (attachment["entity_type"], attachment["entity_id"], attachment["file_name"], attachment["data"]) == \
        ("span", spans["describe"]["id"], "pic.png", picture.read_bytes())
    assert server.invalid == [] and server.unexpected == []
