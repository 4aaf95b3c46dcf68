"""Rules of Opik's backend that the SDK's REST models (``opik.rest_api``) do not carry, for the
stand-in server of tests/opik_rest_server.py. Each rule is here once, with the file of Opik's
backend it comes from (repository comet-ml/opik, paths under ``apps/opik-backend/src/main/java/
com/comet/opik/``), read at versions around SDK 2.2.122.

A refusal is a ``Refused`` (a ValueError) carrying the HTTP status the backend answers: 400 when its
JSON mapper cannot read the body (``JsonProcessingExceptionMapper``), 422 when bean validation
refuses a field (Dropwizard's answer to a ConstraintViolation). Either refuses the whole request:
a batch is validated as one object (``@Valid List<...>``), so one bad item stores nothing.
"""
from __future__ import annotations

import json
import math
import re
from decimal import ROUND_HALF_EVEN, Context, Decimal
from typing import Any, Mapping

BAD_REQUEST = 400        # api/error/JsonProcessingExceptionMapper.java: a body Jackson cannot map
UNPROCESSABLE = 422      # Dropwizard's JerseyViolationExceptionMapper: a bean validation failure
SERVER_ERROR = 500       # an exception in the service or its ClickHouse query


class Refused(ValueError):
    """The backend refuses the request with ``status``."""

    def __init__(self, message: str, status: int = UNPROCESSABLE) -> None:
        super().__init__(message)
        self.status = status


# ---- JSON bodies ------------------------------------------------------------------------------
# OpikApplication.java configures the HTTP ObjectMapper with
# ``enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)``, so the literals NaN, Infinity and
# -Infinity parse (the same in utils/JsonUtils.java, the internal mapper). Malformed JSON is a
# JsonProcessingException: 400 (api/error/JsonProcessingExceptionMapper.java).

class JsonFloat(float):
    """A JSON number with a fraction or exponent, keeping the literal it was written as (what
    Jackson's BigDecimal parsing reads; ``float`` would lose digits past 17)."""

    literal: str

    def __new__(cls, literal: str) -> "JsonFloat":
        number = super().__new__(cls, literal)
        number.literal = literal
        return number


def parse_json(raw: bytes) -> Any:
    """``raw`` read as the backend's HTTP mapper reads it: NaN/Infinity/-Infinity accepted (as
    floats), numbers with a fraction kept as JsonFloat; anything else that is not JSON: Refused 400."""
    try:
        return json.loads(raw.decode("utf-8"), parse_float=JsonFloat)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refused(f"Unable to process JSON. {exc}", BAD_REQUEST) from None


# ---- BigDecimal fields ------------------------------------------------------------------------
# OpikApplication.java registers utils/JsonBigDecimalDeserializer.java for ``BigDecimal.class``
# only: it applies to the fields typed BigDecimal (feedback score values, experiment score values,
# costs), not to numbers inside JsonNode fields (input, output, metadata), which stay doubles.
# The deserializer rounds a value whose scale is above 9 to ValidationUtils.SCALE = 9 decimals,
# HALF_EVEN (``if (value.scale() > 9) value.setScale(SCALE, RoundingMode.HALF_EVEN)``; another stored
# version of that file reads ``> 12``: the stand-in rounds from 10 decimals, the more of the two). A NaN or
# Infinity literal (accepted by the parser, above) cannot become a BigDecimal: Jackson's
# NumberFormatException is wrapped in a JsonMappingException, so the whole request is a 400.
SCALE = 9                           # utils/ValidationUtils.java
_EXACT = Context(prec=1000)         # BigDecimal arithmetic is not bounded to 28 digits
ROUNDED_ABOVE_SCALE = 9             # utils/JsonBigDecimalDeserializer.java


def big_decimal_exact(value: Any, where: str) -> Decimal:
    """``value`` of a BigDecimal field as the backend keeps it: rounded to 9 decimals (HALF_EVEN)
    when written with more than 12. Refused 400 for NaN/Infinity or a value that is not a number
    (stricter than Jackson, which also reads a numeric string such as "0.5": the SDK sends none)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Refused(f"Unable to process JSON. {where}: {value!r} is not a number", BAD_REQUEST)
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, JsonFloat):
        number = Decimal(value.literal)       # 1e400 too: a BigDecimal, not a double
    elif math.isfinite(value):
        number = Decimal(repr(value))
    else:
        raise Refused(f"Unable to process JSON. {where}: {value!r} can not be deserialized as "
                      "`java.math.BigDecimal`", BAD_REQUEST)
    if -number.as_tuple().exponent > ROUNDED_ABOVE_SCALE:      # BigDecimal.scale()
        number = number.quantize(Decimal(1).scaleb(-SCALE), rounding=ROUND_HALF_EVEN, context=_EXACT)
    return number


def big_decimal(value: Any, where: str) -> float | int:
    """``big_decimal_exact`` as the JSON number the backend answers (an int stays an int)."""
    number = big_decimal_exact(value, where)
    return int(number) if isinstance(value, int) else float(number)


# ---- JsonNode fields --------------------------------------------------------------------------
# input, output and metadata are JsonNode: a NaN or Infinity parses into a DoubleNode and is
# stored as the node's text (utils/JsonUtils.java ``getStringOrDefault``: ``JsonNode::toString``),
# which Jackson writes with its default QUOTE_NON_NUMERIC_NUMBERS: the string "NaN", "Infinity"
# or "-Infinity". Read back, the value is that string.

def json_node(value: Any) -> Any:
    """A JsonNode field's value as the backend gives it back."""
    if isinstance(value, dict):
        return {k: json_node(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_node(v) for v in value]
    if isinstance(value, float):
        value = float(value)                  # a JSON double (1e400 overflows to Infinity)
        if not math.isfinite(value):
            return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


# ---- strings ----------------------------------------------------------------------------------
# @NotBlank (Hibernate Validator): null or nothing left after Java's String.trim(), which strips
# every char up to U+0020. ValidationUtils.NULL_OR_NOT_BLANK, "(?s)^\s*(\S.*\S|\S)\s*$" with
# Java's \s = [ \t\n\x0B\f\r]: null, or a string with a char outside that class.
# @Size on a String counts String.length(): UTF-16 code units (a character beyond U+FFFF is two).

def _blank(text: str) -> bool:
    return all(ord(c) <= 0x20 for c in text)


def java_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def not_blank(value: Any, where: str) -> None:
    """@NotBlank: Refused 422 when ``value`` is null, not a string or blank."""
    if not isinstance(value, str) or _blank(value):
        raise Refused(f"{where} must not be blank")


def null_or_not_blank(value: Any, where: str) -> None:
    """@Pattern(regexp = NULL_OR_NOT_BLANK): Refused 422 for a string of whitespace only."""
    if isinstance(value, str) and re.fullmatch(r"[ \t\n\x0b\f\r]*", value):
        raise Refused(f"{where} must not be blank")


def size_between(value: Any, low: int, high: int, where: str, message: str) -> None:
    """@Size(min = low, max = high) on a String or a list (null passes, as in Bean Validation)."""
    if value is None:
        return
    n = java_length(value) if isinstance(value, str) else len(value)
    if not low <= n <= high:
        raise Refused(f"{where} {message}")


# ---- feedback scores --------------------------------------------------------------------------
# api/FeedbackScoreBatchContainer.java (earlier api/FeedbackScoreBatch.java):
#   @NotNull @Size(min = 1, max = 1000) List<@Valid FeedbackScoreBatchItem> scores
# api/FeedbackScoreItem.java (earlier api/FeedbackScoreBatchItem.java), each item:
#   @NotNull UUID id; @NotBlank String name; @Pattern(NULL_OR_NOT_BLANK) String projectName;
#   @NotNull @DecimalMax(MAX_FEEDBACK_SCORE_VALUE) @DecimalMin(MIN_FEEDBACK_SCORE_VALUE) BigDecimal value;
#   @NotNull ScoreSource source; @Min(0) @Max(1) Integer error.
# utils/ValidationUtils.java: MIN/MAX_FEEDBACK_SCORE_VALUE = "-999999999.999999999"/"999999999.999999999".
# Endpoints: PUT /v1/private/traces/feedback-scores (TracesResource.java, scoreBatchOfTraces) and
# PUT /v1/private/spans/feedback-scores (SpansResource.java, scoreBatchOfSpans), body {"scores": [...]}.
# One score per (entity, name, author), the latest of each author kept: domain/DatasetItemVersionDAO.java
# (SELECT_DATASET_ITEM_VERSIONS_WITH_EXPERIMENT_ITEMS, the compare view the SDK's experiment items
# read) unions feedback_scores (author = its last_updated_by, the user who logged it through the
# SDK's PUT) with authored_feedback_scores, keeps ROW_NUMBER() = 1 per (entity, name, author) by
# last_updated_at, and folds the authors of one name together (feedback_scores_final):
#   value = IF(length(values) = 1, values[1], toDecimal64(arrayAvg(values), 9)),
#   reason = the one reason, or the reasons joined by ", " with '' shown as "\\<no reason>",
#   category_name = the categories joined by ", ", source = the first author's,
#   value_by_author = mapFromArrays(authors, (value, reason, category_name, source, last_updated_at)).
# The author is the request's user; the stand-in names a request without an API key "admin" (its
# choice for an install without authentication, not read from the backend) and maps API keys to
# users through OpikRestServer.users.
DEFAULT_AUTHOR = "admin"


def folded_score(by_author: Mapping[str, dict]) -> dict:
    """One name's scores by author (each as stored) as a read returns it, ``value_by_author`` included."""
    entries = list(by_author.values())
    first = entries[0]
    if len(entries) == 1:
        value, reason = first["value"], first.get("reason")
    else:
        values = [Decimal(str(e["value"])) for e in entries]
        value = float((sum(values) / len(values)).quantize(Decimal("1e-9")))
        reason = ", ".join(e.get("reason") or "\\<no reason>" for e in entries)
    folded = {k: v for k, v in first.items() if k not in ("value", "reason", "category_name", "last_updated_at")}
    folded.update(value=value, reason=reason)
    categories = [e.get("category_name") or "" for e in entries]
    if any(categories):
        folded["category_name"] = ", ".join(categories)
    folded["value_by_author"] = {
        author: {k: e.get(k) for k in ("value", "reason", "category_name", "source", "last_updated_at")
                 if e.get(k) is not None}
        for author, e in by_author.items()}
    return {k: v for k, v in folded.items() if v is not None}


MIN_FEEDBACK_SCORE_VALUE = Decimal("-999999999.999999999")
MAX_FEEDBACK_SCORE_VALUE = Decimal("999999999.999999999")
MAX_BATCH = 1000


def _read_values(items: list, where: str) -> list:
    """Jackson's pass over a list of objects with a BigDecimal ``value``: every item an object, every
    non-null value a number (Refused 400 otherwise, before any bean validation runs)."""
    values = []
    for k, item in enumerate(items):
        if not isinstance(item, Mapping):
            if item is None:
                values.append(None)
                continue
            raise Refused(f"Unable to process JSON. {where}[{k}]: expected an object", BAD_REQUEST)
        value = item.get("value")
        values.append(None if value is None else
                      big_decimal_exact(value, f"{where}[{k}] ({item.get('name')!r}): value"))
    return values


def _number(exact: Decimal, sent: Any) -> float | int:
    return int(exact) if isinstance(sent, int) else float(exact)


def _check_feedback_score(item: Mapping[str, Any], exact: Decimal | None, label: str) -> dict:
    if exact is None:
        raise Refused(f"{label}: value must not be null")
    if not MIN_FEEDBACK_SCORE_VALUE <= exact <= MAX_FEEDBACK_SCORE_VALUE:
        raise Refused(f"{label}: value must be between {MIN_FEEDBACK_SCORE_VALUE} and {MAX_FEEDBACK_SCORE_VALUE}")
    if item.get("id") is None:
        raise Refused(f"{label}: id must not be null")
    not_blank(item.get("name"), f"{label}: name")
    null_or_not_blank(item.get("project_name"), f"{label}: project_name")
    if item.get("source") is None:
        raise Refused(f"{label}: source must not be null")
    if item.get("error") is not None and item["error"] not in (0, 1):
        raise Refused(f"{label}: error must be 0 or 1")
    return {**item, "value": _number(exact, item["value"])}


def check_feedback_score_batch(scores: Any) -> list[dict]:
    """A whole batch (the list under "scores"), validated as one: every item's stored form (value
    rounded), or Refused naming the first bad item, so that nothing of the batch is stored."""
    if scores is None:
        raise Refused("scores must not be null")
    if not isinstance(scores, list):
        raise Refused("Unable to process JSON. scores: expected an array", BAD_REQUEST)
    values = _read_values(scores, "scores")
    size_between(scores, 1, MAX_BATCH, "scores", f"size must be between 1 and {MAX_BATCH}")
    stored = []
    for k, (item, exact) in enumerate(zip(scores, values)):
        if item is None:
            raise Refused(f"scores[{k}] must not be null")
        stored.append(_check_feedback_score(item, exact, f"scores[{k}] ({item.get('name')!r})"))
    return stored


# ---- traces and spans -------------------------------------------------------------------------
# api/TraceBatch.java: @NotNull @Size(min = 1, max = 1000) List<@Valid Trace> traces; api/Trace.java:
# @Pattern(NULL_OR_NOT_BLANK) projectName, @NotNull startTime. SpanBatch is alike; api/Span.java adds
# @NotNull UUID traceId. A null project_name means the default project ("Default Project").
DEFAULT_PROJECT = "Default Project"


def check_trace_or_span(row: Any, where: str, *, span: bool) -> None:
    if not isinstance(row, Mapping):
        raise Refused(f"Unable to process JSON. {where}: expected an object", BAD_REQUEST)
    null_or_not_blank(row.get("project_name"), f"{where}: project_name")
    if row.get("start_time") is None:
        raise Refused(f"{where}: start_time must not be null")
    if span and row.get("trace_id") is None:
        raise Refused(f"{where}: trace_id must not be null")
    if span and row.get("total_estimated_cost") is not None:
        big_decimal(row["total_estimated_cost"], f"{where}: total_estimated_cost")


def check_batch(rows: Any, key: str) -> list:
    """The list under ``key`` ("traces" or "spans") of a batch create: 1 to 1000 valid rows."""
    if rows is None:
        raise Refused(f"{key} must not be null")
    if not isinstance(rows, list):
        raise Refused(f"Unable to process JSON. {key}: expected an array", BAD_REQUEST)
    size_between(rows, 1, MAX_BATCH, key, f"size must be between 1 and {MAX_BATCH}")
    for k, row in enumerate(rows):
        check_trace_or_span(row, f"{key}[{k}]", span=key == "spans")
    return rows


# ---- experiment scores ------------------------------------------------------------------------
# api/ExperimentScore.java: @NotBlank String name, @NotNull BigDecimal value; api/Experiment.java and
# api/ExperimentUpdate.java hold List<@NotNull @Valid ExperimentScore>, with no bound on the value:
# any finite value is written (rounded as every BigDecimal, above). domain/ExperimentDAO.java reads
# them back in its FIND query (GET /experiments/{id}, the experiments stream and search) through
# ``CAST(JSON_VALUE(score, '$.value') AS Decimal(18, 9))``: 9 integer digits, so a stored value with
# |value| >= 1e9 makes ClickHouse's CAST overflow and every read of that experiment fail (500).
# The write itself succeeds.
DECIMAL_18_9_BOUND = Decimal("1e9")


def check_experiment_scores(scores: Any, where: str = "experiment_scores") -> list[dict] | None:
    """The stored form of an experiment's scores (values rounded); Refused as the write would be."""
    if scores is None:
        return None
    if not isinstance(scores, list):
        raise Refused(f"Unable to process JSON. {where}: expected an array", BAD_REQUEST)
    values = _read_values(scores, where)
    stored = []
    for k, (score, exact) in enumerate(zip(scores, values)):
        if score is None:
            raise Refused(f"{where}[{k}] must not be null")
        if exact is None:
            raise Refused(f"{where}[{k}] ({score.get('name')!r}): value must not be null")
        not_blank(score.get("name"), f"{where}[{k}]: name")
        stored.append({**score, "value": _number(exact, score["value"])})
    return stored


def check_experiment_readable(experiment: Mapping[str, Any]) -> None:
    """Refused 500 when the experiment's stored scores cannot pass the read's Decimal(18, 9) cast."""
    for score in experiment.get("experiment_scores") or []:
        if abs(Decimal(repr(float(score["value"])))) >= DECIMAL_18_9_BOUND:
            raise Refused(f"experiment {experiment.get('name')!r}: score {score.get('name')!r} = "
                          f"{score['value']!r} overflows Decimal(18, 9) in the experiments query",
                          SERVER_ERROR)


# ---- dashboards -------------------------------------------------------------------------------
# api/Dashboard.java (create, View.Write): @NotBlank @Size(min = 1, max = 120) name;
# @Size(max = 1000) description; @Pattern(NULL_OR_NOT_BLANK) projectName; @NotNull config.
# api/DashboardUpdate.java (PATCH): name @Pattern(NULL_OR_NOT_BLANK) @Size(min = 1, max = 120);
# @Size(max = 1000) description. The name column is VARCHAR(120).
# domain/DashboardService.java (create): a project_name without a project_id is
# ``projectService.getOrCreate(workspaceId, projectName, userName)``: an unknown name creates it.
DASHBOARD_NAME_MAX = 120
DASHBOARD_DESCRIPTION_MAX = 1000


def check_dashboard_name(name: Any, *, update: bool = False) -> None:
    if update:
        null_or_not_blank(name, "name")
    else:
        not_blank(name, "name")
    size_between(name, 1, DASHBOARD_NAME_MAX, "name", f"name must be between 1 and {DASHBOARD_NAME_MAX} characters")


def check_dashboard(body: Mapping[str, Any], *, update: bool = False) -> None:
    """A dashboard create (or, ``update``, PATCH) body: Refused 422 as the backend refuses it."""
    check_dashboard_name(body.get("name"), update=update)
    size_between(body.get("description"), 0, DASHBOARD_DESCRIPTION_MAX, "description",
                 f"description cannot exceed {DASHBOARD_DESCRIPTION_MAX} characters")
    if not update:
        null_or_not_blank(body.get("project_name"), "project_name")
        if body.get("config") is None:
            raise Refused("config must not be null")


def dashboard_project(body: Mapping[str, Any]) -> str | None:
    """The project name a dashboard create gets (or creates), None for a workspace dashboard."""
    name = body.get("project_name")
    return name if isinstance(name, str) and not _blank(name) and body.get("project_id") is None else None


# ---- searching traces and spans ---------------------------------------------------------------
# api/TraceSearchStreamRequest.java (POST /v1/private/traces/search, TracesResource.java): filters
# List<TraceFilter>, lastRetrievedId UUID, ``@Min(1) @Max(2000) Integer limit`` (null: 500);
# SpanSearchStreamRequest.java alike. domain/TraceDAO.java streams the project's traces newest
# first, ``ORDER BY ... id DESC``, and pages with ``id < :last_retrieved_id`` (ids are UUID v7, so
# the cursor keeps a page stable while newer traces arrive; Opik's own e2e paging tests lean on it).
# domain/filter/FilterQueryBuilder.java (ANALYTICS_DB_OPERATOR_MAP) turns each filter into SQL by
# operator and field type; every filter must hold (AND). The pairs served here, as it writes them:
#   string (id, name, thread_id, input, output): = and != compare ``lower(...)``, < and > too;
#     contains / not_contains are ``ilike('%v%')``; starts_with / ends_with lower-case both sides.
#     input and output are their JSON text.
#   date_time (start_time, end_time): =, !=, <, <=, >, >= against ``parseDateTime64BestEffort(v)``.
#   dictionary (metadata.KEY): ``JSON_VALUE(metadata, '$.KEY')`` (a scalar's text; '' for a missing
#     key, an object or an array): = and != lower-cased; contains ilike; > and < as Float64 (null
#     when either is not a number: no match); is_empty / is_not_empty on '' or 'null'.
#   list (tags): contains is ``arrayExists(ilike(element, '%v%'))``; = is ``has(tags, v)``.
#   feedback_scores_number (feedback_scores.NAME): the name lower-cased, the value a Decimal64(9):
#     =, !=, >, >=, <, <=; is_empty / is_not_empty: the entity has no / a score of that name.
# A pair the map lacks (``id >= x``, ``tags > x``) or a field the entity has not is refused (400).
SEARCH_LIMIT_MAX = 2000
SEARCH_LIMIT_DEFAULT = 500


def search_limit(limit: Any) -> int:
    """A search request's page size: null is 500; outside 1..2000 the backend answers 422."""
    if limit is None:
        return SEARCH_LIMIT_DEFAULT
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= SEARCH_LIMIT_MAX:
        raise Refused(f"limit must be between 1 and {SEARCH_LIMIT_MAX}")
    return limit


_STRING_FIELDS = {"id", "name", "thread_id", "input", "output", "type", "model", "provider"}
_DATE_FIELDS = {"start_time", "end_time"}
_OPERATORS = {
    "string": {"=", "!=", "<", ">", "contains", "not_contains", "starts_with", "ends_with"},
    "date_time": {"=", "!=", "<", "<=", ">", ">="},
    "dictionary": {"=", "!=", "<", ">", "contains", "not_contains", "starts_with", "ends_with", "is_empty",
                   "is_not_empty"},
    "list": {"=", "!=", "contains", "not_contains", "is_empty", "is_not_empty"},
    "feedback_scores_number": {"=", "!=", "<", "<=", ">", ">=", "is_empty", "is_not_empty"},
}


def _field_type(field: str, entity: str = "traces") -> str | None:
    if entity == "threads":
        return THREAD_FIELDS.get(field)
    if field in _STRING_FIELDS:
        return "string"
    if field in _DATE_FIELDS:
        return "date_time"
    return {"metadata": "dictionary", "tags": "list", "feedback_scores": "feedback_scores_number"}.get(field)


def _json_value(node: Any, key: str) -> str:
    """``JSON_VALUE(node, '$.key')``: a scalar's text, '' for a missing key, an object or an array."""
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return ""
        node = node[part]
    if isinstance(node, (Mapping, list)):
        return ""
    if node is None:
        return "null"
    if isinstance(node, bool):
        return "true" if node else "false"
    return node if isinstance(node, str) else json.dumps(node)


def _float_or_none(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _date(text: Any, where: str) -> str:
    from datetime import datetime, timezone
    try:
        moment = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise Refused(f"Invalid filter: {where}: {text!r} is not a date-time", BAD_REQUEST) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _compare(op: str, left: Any, right: Any) -> bool:
    if left is None or right is None:
        return False
    return {"=": left == right, "!=": left != right, "<": left < right, "<=": left <= right, ">": left > right,
            ">=": left >= right}[op]


def _matches(row: Mapping[str, Any], scores: Mapping[str, Any], flt: Mapping[str, Any]) -> bool:
    field, op, key, value = flt["field"], flt["operator"], flt.get("key") or "", flt.get("value") or ""
    kind = flt.get("_kind") or _field_type(field)
    if kind == "string":
        text = _text(row.get(field) or "").lower()
        wanted = str(value).lower()
        if op == "contains":
            return wanted in text
        if op == "not_contains":
            return wanted not in text
        if op == "starts_with":
            return text.startswith(wanted)
        if op == "ends_with":
            return text.endswith(wanted)
        return _compare(op, text, wanted)
    if kind == "date_time":
        stamp = row.get(field)
        return stamp is not None and _compare(op, _date(stamp, field), _date(value, field))
    if kind == "dictionary":
        text = _json_value(row.get(field) or {}, key)
        if op == "is_empty":
            return text in ("", "null")
        if op == "is_not_empty":
            return text not in ("", "null")
        if op in ("<", ">"):
            return _compare(op, _float_or_none(text), _float_or_none(str(value)))
        if op == "contains":
            return str(value).lower() in text.lower()
        if op == "not_contains":
            return str(value).lower() not in text.lower()
        if op == "starts_with":
            return text.lower().startswith(str(value).lower())
        if op == "ends_with":
            return text.lower().endswith(str(value).lower())
        return _compare(op, text.lower(), str(value).lower())
    if kind == "list":
        tags = [str(t) for t in row.get(field) or []]
        if op == "contains":
            return any(str(value).lower() in t.lower() for t in tags)
        if op == "not_contains":
            return not any(str(value).lower() in t.lower() for t in tags)
        if op in ("is_empty", "is_not_empty"):
            return (not tags) == (op == "is_empty")
        return (value in tags) == (op == "=")
    # feedback scores: by name, lower-cased
    named = {n.lower(): s for n, s in scores.items()}
    score = named.get(key.lower())
    if op in ("is_empty", "is_not_empty"):
        return (score is None) == (op == "is_empty")
    if score is None:
        return False
    return _compare(op, Decimal(repr(float(score["value"]))), Decimal(str(value)).quantize(Decimal(1).scaleb(-SCALE)))


def check_filters(filters: Any, entity: str) -> list[dict]:
    """A search's filters as the backend reads them; Refused 400 for a field or operator it does not
    serve for ``entity`` ("traces" or "spans")."""
    if filters is None:
        return []
    if isinstance(filters, str):                     # a query parameter: the filters' JSON text
        filters = parse_json(filters.encode())
    if not isinstance(filters, list):
        raise Refused("Unable to process JSON. filters: expected an array", BAD_REQUEST)
    checked = []
    for k, flt in enumerate(filters):
        if not isinstance(flt, Mapping):
            raise Refused(f"Unable to process JSON. filters[{k}]: expected an object", BAD_REQUEST)
        kind = _field_type(flt.get("field"), entity)
        if kind is None or (entity == "traces" and flt.get("field") in ("type", "model", "provider")):
            raise Refused(f"Invalid filter: filters[{k}]: unknown {entity} field {flt.get('field')!r}", BAD_REQUEST)
        if flt.get("operator") not in _OPERATORS[kind]:
            raise Refused(f"Invalid filter: filters[{k}]: operator {flt.get('operator')!r} does not apply to "
                          f"{flt.get('field')!r} ({kind})", BAD_REQUEST)
        if kind in ("dictionary", "feedback_scores_number") and not flt.get("key"):
            raise Refused(f"Invalid filter: filters[{k}]: {flt.get('field')!r} needs a key", BAD_REQUEST)
        if kind == "date_time":
            _date(flt.get("value"), str(flt.get("field")))
        checked.append({**flt, "_kind": kind})
    return checked


def matches(row: Mapping[str, Any], scores: Mapping[str, Any], filters: list[dict]) -> bool:
    """Whether a stored trace or span (``scores``: its feedback scores, name -> score) passes every filter."""
    return all(_matches(row, scores, f) for f in filters)


def search_page(rows: list[dict], last_retrieved_id: Any, limit: int) -> list[dict]:
    """The stream's page: rows by id, newest first, below the cursor, at most ``limit``."""
    ordered = sorted(rows, key=lambda r: r["id"], reverse=True)
    if last_retrieved_id is not None:
        ordered = [r for r in ordered if r["id"] < str(last_retrieved_id)]
    return ordered[:limit]


# api/TraceSearchStreamRequest.java / SpanSearchStreamRequest.java: ``exclude`` is a list of the
# entity's field names (an enum, the SDK's ``...SearchStreamRequestPublicExcludeItem`` literals):
# a name outside it cannot be mapped (400); the named fields are left out of each row.
def check_exclude(exclude: Any, allowed: tuple[str, ...], where: str) -> list[str]:
    if exclude is None:
        return []
    if isinstance(exclude, str):                     # the SDK sends the list as its JSON text
        exclude = parse_json(exclude.encode())
    if not isinstance(exclude, list) or any(e not in allowed for e in exclude):
        raise Refused(f"Unable to process JSON. {where}: exclude {exclude!r} names a field outside {allowed}",
                      BAD_REQUEST)
    return exclude


# ---- threads ----------------------------------------------------------------------------------
# A thread is the traces of a project that share a ``thread_id`` (domain/TraceThreadService.java
# makes a thread model, with its own UUID v7 ``thread_model_id``, for each new thread id).
# api/TraceThreadSearchStreamRequest.java (POST /v1/private/traces/threads/search): filters
# List<TraceThreadFilter>, lastRetrievedThreadModelId, ``@Min(1) @Max(2000) Integer limit`` (null:
# 500). The stream orders by ``thread_model_id DESC`` (domain/TraceThreadDAO.java, its stream query);
# its cursor reads ``thread_model_id > :last_retrieved_id`` there, which this stand-in does not serve
# (a request with a cursor is answered 404 and recorded: no test here needs more than a page).
# Thread feedback scores: PUT /v1/private/traces/threads/feedback-scores (TracesResource.java,
# scoreBatchOfThreads), body {"scores": [...]}: the batch container as for traces (1 to 1,000, one
# bad item refuses all), each item a FeedbackScoreItem with a @NotBlank ``thread_id`` instead of
# ``id`` (api/FeedbackScoreItem.java, FeedbackScoreBatchItemThread). Older backends refused scores
# for a thread that was not closed (409); the SDK 2.2 notes that the status is no longer required,
# and this stand-in does not refuse them.
THREAD_FIELDS = {"id": "string", "first_message": "string", "last_message": "string", "start_time": "date_time",
                 "end_time": "date_time", "tags": "list", "feedback_scores": "feedback_scores_number"}


def check_thread_feedback_score_batch(scores: Any) -> list[dict]:
    """A thread-score batch as ``check_feedback_score_batch`` checks one for traces, ``thread_id``
    standing for ``id``: the stored form of each item, keyed by ``id`` (its thread id)."""
    if isinstance(scores, list):
        for k, item in enumerate(scores):
            if isinstance(item, Mapping):
                not_blank(item.get("thread_id"), f"scores[{k}] ({item.get('name')!r}): thread_id")
        scores = [{**{k: v for k, v in item.items() if k != "thread_id"}, "id": item["thread_id"]}
                  if isinstance(item, Mapping) else item for item in scores]
    return check_feedback_score_batch(scores)
