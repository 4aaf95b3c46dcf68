"""Feedback scores sent from a thread of their own while the next page is scored, in requests of
whole entities and at most 1,000 scores (the server validates a request whole), in the order they
were made, through a bounded queue (memory holds a few requests, not the project).

Traces' and spans' scores go to the batch endpoints the REST client's ``score_batch_of_traces`` /
``score_batch_of_spans`` call (``PUT v1/private/{traces,spans}/feedback-scores``) with the JSON the
SDK sends, serialised once and sent through the SDK's transport and retry rules (``prepared_put``;
Opik Cloud's rate limit is waited out as its streamer does): through ``log_traces_feedback_scores``
each score cost the scorer's interpreter about 0.5 ms (payload sizing, the replay database, the REST
models' encoder reading their type hints per score), most of a run. Threads' scores keep the SDK's
own path. As in the SDK's streamer, a 409 is a request the server already took; a refused key
(401, 403) or a lost or failing server (no connection or a 5xx, after the retries) stops the run
with its error; any other refusal is logged and left to the read-back, which names its scores.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from types import TracebackType
from typing import Any, Callable, Iterable

from opik_metrics.traces.prepared_put import json_put

MAX_SCORES_A_REQUEST = 1000       # FeedbackScoreBatch: @Size(max = 1000), validated whole
QUEUE_DEPTH = 8                   # requests waiting to be sent: two pages of 1,000 traces x 4 scores
DRAIN_SECONDS = 15.0              # how long leaving on an error waits for what is queued to go out

LOGGER = logging.getLogger(__name__)
Request = list[dict[str, Any]]
Send = Callable[[Request, threading.Event], None]


def requests_of(groups: Iterable[Request], limit: int = MAX_SCORES_A_REQUEST) -> list[Request]:
    """The scores in requests of at most ``limit``, an entity's scores never split between two
    (the server validates a request whole, so an entity's scores arrive together or not at all)."""
    requests: list[Request] = []
    current: Request = []
    for group in groups:
        if len(group) > limit:
            raise ValueError(f"{len(group)} scores for entity {group[0]['id']}: more than one request holds ({limit})")
        if len(current) + len(group) > limit:
            requests.append(current)
            current = []
        current.extend(group)
    if current:
        requests.append(current)
    return requests


def sender(client: Any, entity: str, project_name: str) -> Send:
    """How one request of ``entity``'s scores (dicts as ``log_traces_feedback_scores`` takes them)
    goes to the server; once ``stopping`` is set, a request waiting out a rate limit is dropped."""
    if entity == "threads":
        def send_threads(request: Request, stopping: threading.Event | None = None) -> None:
            client.log_threads_feedback_scores(scores=request, project_name=project_name)
        return send_threads
    from opik.api_objects.constants import FEEDBACK_SCORE_SOURCE_SDK
    from opik.rest_api.core.api_error import ApiError

    put = json_put(client.rest_client, f"v1/private/{entity}/feedback-scores")

    def send(request: Request, stopping: threading.Event | None = None) -> None:
        stopping = stopping or threading.Event()
        body = [{"id": score["id"], "name": score["name"], "value": score["value"], "reason": score.get("reason"),
                 "source": FEEDBACK_SCORE_SOURCE_SDK, "project_name": score.get("project_name") or project_name,
                 "category_name": score.get("category_name")} for score in request]   # parse_feedback_score_messages's fields
        while True:
            try:
                put({"scores": body})
                return
            except ApiError as exc:
                limit = _rate_limit(exc) if exc.status_code == 429 else None
                if limit is not None:       # Opik Cloud's limit: sent again after its reset, as the SDK's streamer does
                    LOGGER.info("rate limited by the Opik server: %d %s feedback scores sent again in %s s",
                                len(request), entity[:-1], limit.retry_after())
                    if stopping.wait(limit.retry_after()):
                        return              # the run stopped meanwhile: a rerun sends what is missing
                    continue
                if exc.status_code == 409:  # a retry of a request the server took (the SDK's streamer: the same)
                    return
                if exc.status_code in (401, 403) or (exc.status_code or 0) >= 500:
                    raise                   # no request will land (a refused key, a failing server): the run stops
                LOGGER.error("the Opik server refused a request of %d %s feedback scores (HTTP %s: %s); the "
                             "read-back names them", len(request), entity[:-1], exc.status_code, exc.body)
                return
    return send


def _rate_limit(exc: Any) -> Any:
    """Opik Cloud's limit on a 429 (the SDK's reading of ``RateLimit-Reset``), or None when the
    answer carries none or one that is not a whole number of seconds."""
    from opik.rate_limit.rate_limit import parse_rate_limit

    try:
        return parse_rate_limit(exc.headers) if exc.headers else None
    except (TypeError, ValueError):
        return None


class ScoreWriter:
    """A thread that sends requests in order: ``put`` hands it a page's scores, ``wait`` returns
    once all are sent. Its first failure stops the sending and is raised in the scoring thread by
    the next ``put`` or ``wait``, or on leaving the ``with`` block, which sends what is queued first
    (on an error, for at most DRAIN_SECONDS; on Ctrl-C, not at all: a rerun sends what is missing)."""

    def __init__(self, send: Send, depth: int = QUEUE_DEPTH) -> None:
        self._send = send
        self._queue: queue.Queue[Request | None] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="opik-metrics-score-writer", daemon=True)
        self._thread.start()

    def put(self, groups: Iterable[Request]) -> int:
        """Queue the scores of a page (a list per entity) in requests; the number of scores queued."""
        n = 0
        for request in requests_of(groups):
            self._raise()
            self._queue.put(request)
            n += len(request)
        return n

    def wait(self) -> None:
        """Return once every queued request is sent (raise the writer's failure, if any)."""
        self._queue.join()
        self._raise()

    def __enter__(self) -> "ScoreWriter":
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if kind is None:
            self._queue.put(None)
            self._thread.join()
            self._raise()
            return
        if issubclass(kind, Exception):         # the scores made before the error go out, for a while
            deadline = time.monotonic() + DRAIN_SECONDS
            try:
                self._queue.put(None, timeout=DRAIN_SECONDS)
                self._thread.join(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Full:
                pass
            except BaseException:               # Ctrl-C while waiting: stop now, as below
                self._stop_now()
                raise
            if not self._thread.is_alive():
                return
        self._stop_now()

    def _stop_now(self) -> None:
        """Drop what is queued; the thread ends after the request it is sending (not waited for; a
        request waiting out a rate limit is dropped at once)."""
        self._stopping.set()
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
            self._queue.task_done()
        self._queue.put_nowait(None)            # room now: only the scoring thread puts

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        while True:
            request = self._queue.get()
            try:
                if request is None:
                    return
                if self._error is None and not self._stopping.is_set():   # after a failure: the rest dropped
                    self._send(request, self._stopping)
            except BaseException as exc:    # handed to the scoring thread
                self._error = exc
            finally:
                self._queue.task_done()
