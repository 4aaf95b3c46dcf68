"""Traced task functions: an Opik span with metadata and attachments when tracing, and the same
record kept for the local store while spans are collected."""
import opik

from opik_metrics.experiments.spans import AttachmentFile, collect_spans, report_span, traced, tracing_disabled


@traced("describe")
def describe(path: str, size: int) -> dict:
    report_span(metadata={"size": size}, attachments=[AttachmentFile(path, "pic.png", "image/png")])
    return {"text": f"{size} pixels"}


@traced("explode")
def explode(value: int) -> None:
    raise ValueError(f"bad value {value}")


def test_collected_record_matches_the_call(tmp_path):
    picture = tmp_path / "pic.png"
    picture.write_bytes(b"\x89PNG")
    with tracing_disabled(), collect_spans() as spans:
        assert describe(str(picture), 12) == {"text": "12 pixels"}
        try:
            explode(3)
        except ValueError:
            pass
    first, second = spans
    assert first["name"] == "describe" and first["input"] == {"path": str(picture), "size": 12}
    assert first["output"] == {"text": "12 pixels"} and first["metadata"] == {"size": 12}
    assert first["attachments"] == [{"path": str(picture), "file_name": "pic.png", "content_type": "image/png"}]
    assert first["start_time"] <= first["end_time"]
    assert second["error"] == "ValueError: bad value 3"


def test_tracing_disabled_restores_the_previous_state():
    before = opik.is_tracing_active()
    with tracing_disabled():
        assert not opik.is_tracing_active()
    assert opik.is_tracing_active() == before


def test_span_reaches_opik_with_its_attachment(fake_opik_backend, tmp_path):
    picture = tmp_path / "pic.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n")

    @opik.track(name="task")
    def task():
        return describe(str(picture), 7)

    task()
    opik.flush_tracker()
    (trace,) = fake_opik_backend.trace_trees
    (span,) = trace.spans
    (child,) = span.spans
    assert child.name == "describe" and child.metadata["size"] == 7
    assert [a.file_name for a in child.attachments] == ["pic.png"]
