"""Input validation names the item and the field."""
import pytest

from opik_metrics.core.inputs import MetricInputError, require_batch, require_references, require_text


def test_require_text_accepts_strings_including_empty():
    assert require_text("", "output") == ""


@pytest.mark.parametrize("bad, kind", [(None, "None"), (3, "int"), (["a"], "list")])
def test_require_text_names_field_item_and_type(bad, kind):
    with pytest.raises(MetricInputError, match=rf"item 4, field 'output': expected a string, got {kind}"):
        require_text(bad, "output", 4)


def test_require_references_normalises_and_rejects():
    assert require_references("a") == ["a"]
    assert require_references(("a", "b")) == ["a", "b"]
    with pytest.raises(MetricInputError, match="list of references is empty"):
        require_references([], item=2)
    with pytest.raises(MetricInputError, match=r"item 2, field 'reference\[1\]': expected a string, got None"):
        require_references(["ok", None], item=2)
    with pytest.raises(MetricInputError, match="field 'reference': expected a string or a list of strings, got None"):
        require_references(None)


def test_require_batch_checks_lengths_and_items():
    with pytest.raises(MetricInputError, match="got 2 outputs but 1 references"):
        require_batch(["a", "b"], ["r"])
    with pytest.raises(MetricInputError, match="item 1, field 'output'"):
        require_batch(["a", 7], ["r", "s"])
    with pytest.raises(MetricInputError, match="outputs: expected a list of strings"):
        require_batch("abc", ["r"])
    assert require_batch(["a"], [["r", "s"]]) == (["a"], [["r", "s"]])


def test_a_text_past_the_stated_bound_fails_at_once_naming_item_and_size(tmp_path):
    """A record far beyond what a metric is meant for (a 50 MB line) fails with a reason in no time
    instead of running for minutes; the other records of the file are scored."""
    from opik_metrics import ROUGE
    from opik_metrics.core.inputs import MAX_TEXT_CHARS
    from opik_metrics.streams import score_file
    from tests.streams.records import write_jsonl

    huge = "word " * (MAX_TEXT_CHARS // 5 + 1)
    with pytest.raises(MetricInputError, match=rf"item 1, field 'output': {len(huge):,} characters, more than the "
                                               rf"{MAX_TEXT_CHARS:,}"):
        ROUGE(track=False).score_batch(["a b", huge], ["a b", "a b"])
    with pytest.raises(MetricInputError, match="field 'reference'"):
        ROUGE(track=False).score("a b", huge[:MAX_TEXT_CHARS + 1])
    path = write_jsonl(tmp_path / "in.jsonl", [{"output": "a b", "reference": "a b"},
                                               {"output": "x " * 30_000_000, "reference": "a b"},
                                               {"output": "c d", "reference": "c d"}])
    result = score_file(str(path), [ROUGE(track=False)], progress=False)     # without the bound: minutes
    assert [row["reason"] is None for row in result.rows] == [True, False, True]
    assert "60,000,000 characters, more than the 1,000,000" in result.rows[1]["reason"]
