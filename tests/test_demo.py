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


def test_the_publish_preview_says_what_its_names_mean():
    """Issue 40: diff_x100, p_pct and a plain diff (a score with no [-1, 1] bound) explained."""
    from examples.demo.run import publication_legend

    publication = {"experiments": {"base": {"experiment_scores": {}}, "sys": {"experiment_scores": {
        "bleu.diff_x100 vs base": 3.1, "bleu.p_pct vs base": 1.2, "bleu.verdict vs base": 1,
        "BERTF1.diff vs base": 0.12, "BERTF1.verdict vs base": 0}}}}
    legend = publication_legend(publication, "base")
    assert "diff_xN: the difference from base (system minus baseline) times N" in legend
    assert "plain diff: the difference as it is, for a score that declares no [-1, 1] bound" in legend
    assert "(BERTF1)" in legend and "p_pct: the paired test's p-value in percent" in legend
    assert "verdict: +1 better, 0 no significant difference, -1 worse" in legend
    assert "plain diff" not in publication_legend({"experiments": {"sys": {"experiment_scores": {
        "bleu.diff_x100 vs base": 3.1}}}}, "base")


def test_the_staged_failure_says_it_is_staged(tmp_path):
    """Issue 56: "1 failed" alone reads as a fault of the pack; the demo says the file stages it."""
    from examples.demo.run import stored_line

    line = stored_line("demo-system-b", 40, 1, EXAMPLES / SYSTEMS["demo-system-b"], tmp_path / "s.sqlite")
    assert line.startswith(f"demo-system-b: 40 items, 1 failed, stored in {tmp_path / 's.sqlite'}\n")
    assert "staged on purpose: line 12 of examples/demo/system_b.txt is marked '!error:'" in line
    clean = stored_line("demo-system-a", 40, 0, EXAMPLES / SYSTEMS["demo-system-a"], tmp_path / "s.sqlite")
    assert clean == f"demo-system-a: 40 items, 0 failed, stored in {tmp_path / 's.sqlite'}"
