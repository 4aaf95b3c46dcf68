"""Scoring a project's traces on the REST stand-in through the real SDK: the feedback scores that
arrive equal the metrics called directly, traces without a reference or with damaged fields are
named, a rerun skips what holds the scores, a lost batch is named then sent by the rerun."""
from __future__ import annotations

import re
from collections import Counter

import pytest

from opik_metrics import BLEU, ROUGE
from opik_metrics.traces import score_traces
from opik_metrics.traces.marks import unmarked
from opik_metrics.traces.writing import requests_of
from tests.traces.conftest import PROJECT, log_project

SCORES = re.compile(r"/traces/feedback-scores$")


def _sent(server) -> Counter:
    """(trace id, score name) -> how many times it was sent in feedback-score requests."""
    return Counter((s["id"], s["name"]) for m, p, body in server.requests if m == "PUT" and SCORES.search(p)
                   for s in body["scores"])


def _scorable(logged):
    return {tid: t for tid, t in logged.items()
            if t["k"] % 6 and t["k"] not in (7, 11, 13)}


def test_scores_arrive_equal_to_the_metrics_called_directly(server, client):
    logged = log_project(client)
    report = score_traces(PROJECT, [BLEU(track=False), ROUGE(track=False)], client=client, page_size=5,
                          progress=False)
    assert server.invalid == [] and server.unexpected == []
    scorable = _scorable(logged)
    bleu, rouge = BLEU(track=False), ROUGE(track=False)
    for tid, t in scorable.items():
        held = server.feedback_scores[("trace", tid)]
        direct = {r.name: r for r in [*bleu.score(t["output"]["output"], t["metadata"]["reference"]),
                                      *rouge.score(t["output"]["output"], t["metadata"]["reference"])]}
        assert set(held) == set(direct)
        for name, result in direct.items():
            assert held[name]["value"] == pytest.approx(result.value, abs=1e-9)
            assert unmarked(held[name]["reason"]) == result.reason
    untouched = set(logged) - set(scorable)
    assert all(("trace", tid) not in server.feedback_scores for tid in untouched)
    assert report.selected == 24 and report.scored == len(scorable) == 17
    no_reference = {tid for tid, t in logged.items() if t["k"] % 6 == 0}
    assert report.without_reference == {"bleu": 4, "rouge": 4}
    assert set(report.without_reference_ids["bleu"]) == no_reference
    damaged = " | ".join(report.unreadable_examples)
    ids = {t["k"]: tid for tid, t in logged.items()}
    assert report.unreadable == 3
    assert f"trace {ids[7]}: field 'output' (output.output): expected text, got dict" in damaged
    assert f"trace {ids[11]}: field 'output' (output.output) is missing" in damaged
    assert f"trace {ids[13]}: field 'reference' (metadata.reference): expected text, got int" in damaged
    assert report.read_back and report.complete and report.kept_scores == report.sent_scores == 17 * 10
    assert max(len(body["scores"]) for m, p, body in server.requests if m == "PUT" and SCORES.search(p)) <= 1000


def test_a_rerun_skips_what_holds_the_scores_and_replace_scores_again(server, client):
    log_project(client)
    score_traces(PROJECT, [BLEU(track=False)], client=client, progress=False)
    first = _sent(server)
    again = score_traces(PROJECT, [BLEU(track=False)], client=client, progress=False)
    assert _sent(server) == first and again.sent_scores == 0 and again.skipped == {"bleu": 17}
    assert again.summary.scores["bleu"].n == 17           # the window's values include what was skipped
    other = score_traces(PROJECT, [BLEU(track=False, tokenize="char")], client=client, progress=False)
    assert other.sent_scores == 17                       # another signature: scored again
    replaced = score_traces(PROJECT, [BLEU(track=False, tokenize="char")], client=client, progress=False,
                            replace=True)
    assert replaced.sent_scores == 17 and replaced.skipped == {}


def test_a_lost_batch_is_named_then_the_rerun_sends_only_it(server, client):
    logged = log_project(client)
    server.fail_next("PUT", r"/traces/feedback-scores$", 400, times=1)     # the SDK does not retry a 400
    report = score_traces(PROJECT, [BLEU(track=False)], client=client, page_size=4, progress=False)
    assert not report.complete and report.missing_scores["bleu"] > 0
    assert all(tid in logged for tid in report.missing_ids)
    lost = report.missing_scores["bleu"]
    rerun = score_traces(PROJECT, [BLEU(track=False)], client=client, page_size=4, progress=False)
    assert rerun.complete and rerun.sent_scores == lost and rerun.skipped.get("bleu", 0) == 17 - lost
    refused = set(report.missing_ids)             # each sent twice: refused once, then kept
    assert {(tid, n): 1 + (tid in refused) for tid, n in _sent(server)} == _sent(server)


def test_filters_and_time_windows_select_traces(server, client):
    logged = log_project(client)
    report = score_traces(PROJECT, [BLEU(track=False)], client=client, filter_string='tags contains "prod"',
                          progress=False)
    odd = {tid for tid, t in _scorable(logged).items() if t["k"] % 2}
    assert report.selected == 12 and {i for (_, i) in server.feedback_scores} == odd
    assert score_traces(PROJECT, [BLEU(track=False)], client=client, since="2999-01-01", progress=False).selected == 0


def test_requests_hold_whole_traces_and_at_most_1000_scores():
    groups = [[{"id": str(t), "name": f"s{k}"} for k in range(3)] for t in range(700)]
    requests = requests_of(groups)
    assert [len(r) for r in requests] == [999, 999, 102]
    assert all(len({s["id"] for s in r} & {s["id"] for s in other}) == 0
               for i, r in enumerate(requests) for other in requests[i + 1:])


def test_spans_are_scored_on_their_own(server, client):
    trace = client.trace(name="pipeline", project_name=PROJECT)
    spans = {}
    for k, (caption, reference) in enumerate([("a cat sits on the mat", "a cat is on the mat"),
                                              ("two dogs run", "two dogs are running"),
                                              ("a red bike", None)]):
        span = trace.span(name="caption", output={"output": caption},
                          metadata={"reference": reference} if reference else {})
        spans[span.id] = (caption, reference)
    trace.end()
    client.flush()
    report = score_traces(PROJECT, [BLEU(track=False)], client=client, entity="spans", progress=False)
    assert server.invalid == [] and server.unexpected == []
    assert report.selected == 3 and report.without_reference == {"bleu": 1} and report.complete
    bleu = BLEU(track=False)
    for span_id, (caption, reference) in spans.items():
        held = server.feedback_scores.get(("span", span_id), {})
        if reference is None:
            assert held == {}
        else:
            assert held["bleu"]["value"] == pytest.approx(bleu.score(caption, reference)[0].value, abs=1e-9)
    assert ("trace", trace.id) not in server.feedback_scores


def test_a_reference_free_metric_scores_traces_without_references(server, client):
    from opik.evaluation.metrics import base_metric, score_result

    class Words(base_metric.BaseMetric):
        def __init__(self):
            super().__init__(name="words", track=False)

        def score(self, output, **ignored):
            return score_result.ScoreResult(name="words", value=len(output.split()))

    logged = log_project(client)
    report = score_traces(PROJECT, [Words()], client=client, progress=False)
    readable = {tid: t for tid, t in logged.items() if t["k"] not in (7, 11, 13)}
    assert report.without_reference == {} and report.scored == len(readable) == 21 and report.complete
    for tid, t in readable.items():
        assert server.feedback_scores[("trace", tid)]["words"]["value"] == len(t["output"]["output"].split())
    assert report.summary.scores["words"].n == 21


def test_threads_are_scored_from_their_messages(server, client):
    """A thread's first message is its first trace's input, its last message its last trace's output."""
    threads = {"t-cat": ("a cat is on the mat", ["hello", "a cat sits on the mat"]),
               "t-dog": ("two dogs are running", ["hi", "two dogs run"]),
               "t-none": (None, ["hey", "a red bike"])}
    from datetime import datetime, timedelta, timezone
    start = datetime(2026, 11, 20, tzinfo=timezone.utc)
    for n, (thread_id, (reference, turns)) in enumerate(threads.items()):
        for k, answer in enumerate(turns):
            client.trace(name="turn", input={"question": f"q{k}", **({"reference": reference} if reference else {})},
                         output={"output": answer}, thread_id=thread_id, project_name=PROJECT,
                         start_time=start + timedelta(minutes=10 * n + k))
    client.flush()
    report = score_traces(PROJECT, [BLEU(track=False)], client=client, entity="threads", progress=False,
                          fields=["output=last_message.output", "reference=first_message.reference"])
    assert server.invalid == [] and server.unexpected == []
    assert report.selected == 3 and report.without_reference == {"bleu": 1} and report.complete
    bleu = BLEU(track=False)
    for thread_id, (reference, turns) in threads.items():
        held = server.feedback_scores.get(("thread", thread_id), {})
        if reference is None:
            assert held == {}
        else:
            assert held["bleu"]["value"] == pytest.approx(bleu.score(turns[-1], reference)[0].value, abs=1e-9)
    again = score_traces(PROJECT, [BLEU(track=False)], client=client, entity="threads", progress=False,
                         fields=["output=last_message.output", "reference=first_message.reference"])
    assert again.sent_scores == 0 and again.skipped == {"bleu": 2}


def test_cider_scores_pages_as_one_pass_over_the_selection(server, client):
    """CIDEr-D's document frequencies come from every selected trace's reference (a first pass), so
    pages of 4 give the numbers of CIDEr called once on the whole set."""
    from opik_metrics import CIDEr

    logged = log_project(client)
    report = score_traces(PROJECT, [CIDEr(track=False)], client=client, page_size=4, progress=False)
    assert report.complete
    scorable = _scorable(logged)
    ids = list(scorable)
    whole = CIDEr(track=False).score_batch([scorable[t]["output"]["output"] for t in ids],
                                           [scorable[t]["metadata"]["reference"] for t in ids])
    for tid, results in zip(ids, whole):
        held = server.feedback_scores[("trace", tid)]
        assert {n: s["value"] for n, s in held.items()} == {r.name: pytest.approx(r.value, abs=1e-9) for r in results}
