"""Pages of what a project holds, read through the SDK's search (``search_traces`` /
``search_spans``) with Opik's filter language: each page is the next ``page_size`` entities below
the last id read (the backend streams newest first and pages on ``id < last``), so memory holds one
page whatever the project's size, and a page read twice is the same page. Every page must lie
below the cursor, and a run reads at most ``MAX_PAGES`` pages: a server that ignores the cursor
(the same page again) or pages without end is a clear error, never a loop. Threads come in one read
(``search_threads`` has no cursor a caller can give, and a thread's id is the user's own text, not
in the stream's order): memory then holds every selected thread."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterator

ENTITIES = ("traces", "spans", "threads")
THREADS_AT_MOST = 10_000_000      # search_threads reads them all, in the SDK's own pages
PAGE_SIZE = 1000        # the backend streams at most 2,000 a request (TraceSearchStreamRequest)
MAX_PAGES = 1_000_000   # pages one read goes through at most (a billion traces at 1,000 a page)


@dataclass(frozen=True)
class Selection:
    """Which entities of which project: a filter in Opik's query language and a start time."""

    project_name: str
    entity: str = "traces"
    filter_string: str | None = None
    since: str | None = None            # ISO 8601: start_time >= since
    until: str | None = None            # ISO 8601: start_time < until

    def __post_init__(self) -> None:
        if self.entity not in ENTITIES:
            raise ValueError(f"entity: expected one of {', '.join(ENTITIES)}, got {self.entity!r}")
        if not isinstance(self.project_name, str) or not self.project_name.strip():
            raise ValueError(f"project_name: expected a project's name, got {self.project_name!r}")
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, iso_time(value, name))
        check_window(self.since, self.until, "since / until")

    def filter(self, below: str | None = None) -> str | None:
        """The filter string of a page: the user's, the time window, and ``id < below``."""
        parts = [self.filter_string] if self.filter_string else []
        if self.since:
            parts.append(f'start_time >= "{self.since}"')
        if self.until:
            parts.append(f'start_time < "{self.until}"')
        if below:
            parts.append(f'id < "{below}"')
        return " AND ".join(parts) or None


def iso_time(value: Any, what: str) -> str:
    """A date or date-time (text or datetime) as the UTC ISO 8601 text Opik's filters take."""
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{what}: expected a date or date-time such as 2026-11-01 or "
                             f"2026-11-01T12:00:00Z, got {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        moment = moment.astimezone(timezone.utc)
    except OverflowError:           # 0001-01-01T00:00+05:00 is before year 1 in UTC
        raise ValueError(f"{what}: {value!r} is outside the years 1 to 9999 in UTC") from None
    # isoformat pads the year to 4 digits (strftime's %Y does not on every platform: "1-01-01")
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def check_window(since: str | None, until: str | None, what: str = "--since / --until") -> None:
    """A ValueError unless ``since`` comes before ``until`` (each ``iso_time``'s text): an empty or
    reversed window would select nothing and say nothing."""
    if since is not None and until is not None and iso_time(since, "since") >= iso_time(until, "until"):
        raise ValueError(f"{what}: the start {since!r} is not before the end {until!r}: that window selects "
                         "nothing (give the earlier date first)")


#: What a read of feedback scores alone leaves out (the search's ``exclude``): the heavy fields.
SCORES_ONLY = ("input", "output", "metadata", "usage", "error_info", "comments")


def read_page(client: Any, selection: Selection, below: str | None, size: int) -> list[Any]:
    """One page: the next ``size`` entities with ids below ``below`` (None: from the newest)."""
    try:
        if selection.entity == "threads":
            return list(client.search_threads(project_name=selection.project_name, filter_string=selection.filter(),
                                              max_results=THREADS_AT_MOST, truncate=False))
        search = client.search_traces if selection.entity == "traces" else client.search_spans
        return list(search(project_name=selection.project_name, filter_string=selection.filter(below),
                           max_results=size, truncate=False))
    except ValueError as exc:          # the SDK's parser refuses the filter before any request
        raise ValueError(f"filter {selection.filter_string!r}: {exc}") from None


class HeldScores:
    """An entity as a read-back needs it: its id and its feedback scores' values by name, taken from
    the search's stream without the SDK's full models (``TracePublic`` with its scores cost about
    0.2 ms a trace to build, most of a read-back)."""

    __slots__ = ("id", "scores")

    def __init__(self, id: str, feedback_scores: list[dict[str, Any]] | None = None, **_: Any) -> None:
        if not isinstance(id, str):
            raise TypeError(f"id: expected text, got {id!r}")      # the SDK's parser drops (and logs) the record
        self.id = id
        self.scores = {s.get("name"): s.get("value") for s in feedback_scores or () if isinstance(s, dict)}


def read_held_scores(client: Any, selection: Selection, below: str | None, size: int) -> list[HeldScores]:
    """One page as ``read_page`` reads it, the heavy fields left out (SCORES_ONLY): the REST client's
    search stream read with the SDK's filter parser, rate-limit rule and stream reader, into HeldScores."""
    if selection.entity == "threads":
        return [HeldScores(e.id, [{"name": s.name, "value": s.value} for s in e.feedback_scores or []])
                for e in read_page(client, selection, below, size)]
    from opik.api_objects import helpers, rest_helpers, rest_stream_parser
    from opik.rest_api.types import span_filter_public, trace_filter_public

    traces = selection.entity == "traces"
    try:
        filters = helpers.parse_filter_expressions(
            selection.filter(below), entity_type="traces" if traces else "spans",
            parsed_item_class=trace_filter_public.TraceFilterPublic if traces else span_filter_public.SpanFilterPublic)
    except ValueError as exc:
        raise ValueError(f"filter {selection.filter_string!r}: {exc}") from None
    search = client.rest_client.traces.search_traces if traces else client.rest_client.spans.search_spans

    def read(limit: int, last_retrieved_id: str | None) -> list[bytes]:
        return rest_helpers.ensure_rest_api_call_respecting_rate_limit(
            lambda: list(search(project_name=selection.project_name, filters=filters, limit=limit, truncate=False,
                                last_retrieved_id=last_retrieved_id, exclude=list(SCORES_ONLY))),
            operation_name=f"search_{selection.entity}")
    # the SDK's own reading of a search: smaller pages after a dropped stream, more after unreadable lines
    return rest_stream_parser.read_and_parse_full_stream(read, HeldScores, max_results=size,
                                                         max_endpoint_batch_size=size)


def pages(client: Any, selection: Selection, size: int = PAGE_SIZE, below: str | None = None,
          scores_only: bool = False, max_pages: int = MAX_PAGES) -> Iterator[list[Any]]:
    """Every page of the selection, newest first, until one comes back short (``scores_only``: as
    HeldScores). An OpikServerError when a page holds an id at or above the cursor (the server did
    not page) or after ``max_pages``."""
    for number in range(1, max_pages + 1):
        page = read_held_scores(client, selection, below, size) if scores_only else \
            read_page(client, selection, below, size)
        if below is not None and any(e.id >= below for e in page):
            raise _paging_error(client, selection, number, f"it answered with {selection.entity} at or above the "
                                f'cursor (id < "{below}"), so it does not page; check that the server\'s version '
                                "matches the opik package")
        if page:
            yield page
        if len(page) < size or selection.entity == "threads":
            return
        below = page[-1].id
    raise _paging_error(client, selection, max_pages, f"that is the cap ({max_pages:,} pages of {size:,}); narrow "
                        "the selection (--since, --until, --filter) or read larger pages (--page-size)")


def _paging_error(client: Any, selection: Selection, number: int, why: str) -> Exception:
    """The one-line OpikServerError of a read stopped at page ``number`` (opik_server loads only here:
    the command line reads its dates through this module before anything heavy)."""
    from opik_metrics.experiments.opik_server import OpikServerError, client_url

    url = client_url(client)
    where = f"Opik server at {url}" if url else "the Opik server"
    return OpikServerError(f"stopped reading project {selection.project_name!r}'s {selection.entity} from the {where} "
                           f"at page {number:,}: {why}; the scores sent before it stay on the server", url)
