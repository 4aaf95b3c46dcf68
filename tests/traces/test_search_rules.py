"""The stand-in's trace search as the backend serves it (tests/opik_server_rules.py): pages newest
first below ``last_retrieved_id``, a page size of 1 to 2,000, Opik's filter language, and a
filter the backend does not serve refused; read through the SDK's own search."""
from __future__ import annotations

import pytest
from opik.rest_api.core.api_error import ApiError

from tests.traces.conftest import PROJECT, log_project


def test_pages_go_newest_first_below_the_cursor(server, client):
    logged = log_project(client, 12)
    newest_first = sorted(logged, reverse=True)
    page = client.search_traces(project_name=PROJECT, max_results=5)
    assert [t.id for t in page] == newest_first[:5]
    below = client.search_traces(project_name=PROJECT, filter_string=f'id < "{page[-1].id}"', max_results=5)
    assert [t.id for t in below] == newest_first[5:10]


def test_filters_as_the_backend_reads_them(server, client):
    logged = log_project(client, 12)
    by_k = {t["k"]: tid for tid, t in logged.items()}

    def ids(flt):
        return {t.id for t in client.search_traces(project_name=PROJECT, filter_string=flt)}

    assert ids('metadata.reference = "A CAT IS SITTING ON THE MAT 1"') == set()        # k=1 has another text
    assert ids('metadata.reference = "TWO DOGS ARE RUNNING THROUGH A PARK 1"') == {by_k[1]}   # lower-cased
    assert ids('output contains "BIKE"') == {by_k[2], by_k[8]}
    assert ids('tags contains "canary"') == {by_k[k] for k in range(0, 12, 2)}
    client.log_traces_feedback_scores([{"id": by_k[3], "name": "bleu", "value": 0.5}], project_name=PROJECT)
    client.flush()
    assert ids("feedback_scores.bleu is_not_empty") == {by_k[3]}
    assert ids("feedback_scores.bleu > 0.4") == {by_k[3]} and ids("feedback_scores.bleu > 0.5") == set()
    assert len(ids("feedback_scores.bleu is_empty")) == 11


def test_what_the_backend_refuses(server, client):
    log_project(client, 2)
    with pytest.raises(ApiError) as refused:
        list(client.rest_client.traces.search_traces(project_name=PROJECT, limit=2001))
    assert refused.value.status_code == 422
    with pytest.raises(ApiError) as refused:
        client.search_traces(project_name=PROJECT, filter_string='start_time >= "not a date"')
    assert refused.value.status_code == 400
    assert any("not a date-time" in line for line in server.invalid)


def test_exclude_leaves_fields_out_and_refuses_unknown_ones(server, client):
    log_project(client, 2)
    rows = client.search_traces(project_name=PROJECT, exclude=["input", "output", "metadata"])
    assert len(rows) == 2 and all(r.input is None and r.output is None and r.metadata is None for r in rows)
    with pytest.raises(ApiError) as refused:
        client.search_traces(project_name=PROJECT, exclude=["no_such_field"])
    assert refused.value.status_code == 400


def test_a_thread_score_without_a_thread_id_refuses_the_batch(server, client):
    from opik.rest_api.types.feedback_score_batch_item_thread import FeedbackScoreBatchItemThread

    good = FeedbackScoreBatchItemThread(thread_id="t1", name="bleu", value=0.5, source="sdk", project_name=PROJECT)
    blank = FeedbackScoreBatchItemThread(thread_id="  ", name="bleu", value=0.5, source="sdk", project_name=PROJECT)
    with pytest.raises(ApiError) as refused:
        client.rest_client.traces.score_batch_of_threads(scores=[good, blank])
    assert refused.value.status_code == 422 and ("thread", "t1") not in server.feedback_scores
