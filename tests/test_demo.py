"""The demo's data: one item per reference, each system answering by line, a marked line failing
with its reason (the whole demo runs in CI through `make demo`)."""
import pytest

from examples.demo.run import EXAMPLES, SYSTEMS, SystemFailure, demo_items, read_lines, system_task


def test_items_and_systems_line_up():
    items = demo_items()
    assert len(items) == 40 and items[0] == {"line": 1, "reference": read_lines(EXAMPLES / "references.txt")[0]}
    for file in SYSTEMS.values():
        task = system_task(EXAMPLES / file, len(items))
        assert task(items[0])["output"] == read_lines(EXAMPLES / file)[0]


def test_a_marked_line_is_a_failure_with_its_reason():
    items = demo_items()
    task = system_task(EXAMPLES / SYSTEMS["demo-system-b"], len(items))
    failing = [k for k, line in enumerate(read_lines(EXAMPLES / SYSTEMS["demo-system-b"])) if line.startswith("!error:")]
    assert failing == [11]
    with pytest.raises(SystemFailure, match="generation timed out after 30 s"):
        task(items[11])


def test_a_system_file_of_the_wrong_length_is_refused(tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("one line\n")
    with pytest.raises(ValueError, match="1 lines for 40 references"):
        system_task(short, 40)
