"""Traced task functions: each call is an Opik span (``@opik.track``) and, while the local store
collects, also a plain record of the same span, so runs without a server keep their traces.
opik is imported only when a span goes to Opik: a local run never pays ``import opik``.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import sys
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Literal, Sequence

SpanType = Literal["general", "tool", "llm", "guardrail"]    # opik.types.SpanType

_SINK: ContextVar[list | None] = ContextVar("opik_metrics_span_sink", default=None)
_CURRENT: ContextVar[dict | None] = ContextVar("opik_metrics_current_span", default=None)


@dataclass(frozen=True)
class AttachmentFile:
    """A file to attach to the current span (an image the model saw, say)."""

    path: str
    file_name: str
    content_type: str


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _inputs(fn: Callable, args: tuple, kwargs: dict, ignored: Sequence[str]) -> dict:
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return {"args": [repr(a) for a in args], **{k: repr(v) for k, v in kwargs.items()}}
    return {k: v for k, v in bound.arguments.items() if k not in ignored}


def traced(name: str, *, span_type: SpanType = "general", ignore_arguments: Sequence[str] = ()) -> Callable:
    """``opik.track(name=...)`` that also records the span when ``collect_spans`` is active."""

    def decorate(fn: Callable) -> Callable:
        tracked_fn: list[Callable] = []

        def tracked(*args: Any, **kwargs: Any) -> Any:
            """``fn`` as an Opik span, opik imported on the first call that sends one."""
            if not tracked_fn:
                import opik

                tracked_fn.append(opik.track(name=name, type=span_type,
                                             ignore_arguments=list(ignore_arguments) or None)(fn))
            return tracked_fn[0](*args, **kwargs)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            sink = _SINK.get()
            if sink is None:
                return tracked(*args, **kwargs)
            record: dict[str, Any] = {"name": name, "type": span_type,
                                      "input": _inputs(fn, args, kwargs, ignore_arguments),
                                      "metadata": {}, "attachments": [], "start_time": _now()}
            token = _CURRENT.set(record)
            try:
                result = fn(*args, **kwargs)      # the local store collects with Opik's tracing off
                record["output"] = result if isinstance(result, dict) else {"output": result}
                return result
            except Exception as exc:
                record["error"] = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                record["end_time"] = _now()
                _CURRENT.reset(token)
                sink.append(record)

        return wrapper

    return decorate


def report_span(*, metadata: dict | None = None, attachments: Sequence[AttachmentFile] = ()) -> None:
    """Add metadata and attachments to the current span: Opik's (when tracing) and the local record."""
    opik = sys.modules.get("opik")
    if opik is not None and opik.is_tracing_active():
        from opik import opik_context

        opik_context.update_current_span(
            metadata=metadata,
            attachments=[opik.Attachment(data=a.path, file_name=a.file_name, content_type=a.content_type)
                         for a in attachments] or None,
        )
    record = _CURRENT.get()
    if record is not None:
        record["metadata"].update(metadata or {})
        record["attachments"].extend({"path": a.path, "file_name": a.file_name,
                                      "content_type": a.content_type} for a in attachments)


@contextlib.contextmanager
def collect_spans() -> Iterator[list[dict]]:
    """Collect the records of traced calls made inside the block (in this thread/context)."""
    sink: list[dict] = []
    token = _SINK.set(sink)
    try:
        yield sink
    finally:
        _SINK.reset(token)


@contextlib.contextmanager
def tracing_disabled() -> Iterator[None]:
    """Turn Opik tracing off inside the block (no server: nothing is sent, nothing retried); with
    opik not loaded there is no tracing to turn off, and ``traced`` does not load it meanwhile."""
    opik = sys.modules.get("opik")
    if opik is None:
        yield
        return
    was_active = opik.is_tracing_active()
    opik.set_tracing_active(False)
    try:
        yield
    finally:
        opik.set_tracing_active(was_active)
