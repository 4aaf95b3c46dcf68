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
