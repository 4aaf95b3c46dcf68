"""Names too long for the file system are found before any work, naming the part that is; text for
the terminal keeps to one line."""
from __future__ import annotations

from opik_metrics.core.file_names import DEFAULT_NAME_MAX, name_max, name_too_long
from opik_metrics.core.table import format_table, one_line


def test_the_limit_is_the_file_systems_and_a_missing_folder_asks_the_one_above(tmp_path):
    assert name_max(tmp_path) == name_max(tmp_path / "not" / "there") == 255 == DEFAULT_NAME_MAX


def test_a_name_counts_its_utf8_bytes_and_the_sibling_written_beside_it(tmp_path):
    assert name_too_long(tmp_path / ("a" * 255)) is None
    assert name_too_long(tmp_path / ("é" * 127)) is None                          # 254 bytes
    assert name_too_long(tmp_path / ("é" * 128)) == ("its file name is 256 bytes, more than the 255 a name may "
                                                    "have on this file system; choose a shorter name")
    assert name_too_long(tmp_path / ("a" * 250), "-journal") == (
        "its file name is 258 bytes (with the -journal we write beside it), more than the 255 a name may have on "
        "this file system; choose a shorter name")
    folder = "f" * 300
    assert name_too_long(tmp_path / folder / "x.jsonl").startswith(f"the folder name {'f' * 40}... is 300 bytes")


def test_hostile_but_legal_names_pass(tmp_path):
    for name in ["a|b", "it's", 'say "hi"', "new\nline", "\u6f22\u5b57 \U0001F408", "x" * 200]:
        assert name_too_long(tmp_path / name, ".run.json.tmp") is None


def test_one_line_escapes_what_breaks_a_line_and_keeps_every_script():
    text = "a\nb\x00c\u2028d\te\x1b[31m \u6771\u4eac e\u0301 \u0915\u093f \U0001F408\u200d\u2b1b \u0645\u0631"
    assert one_line(text) == ("a\\nb\\x00c\\u2028d\\te\\x1b[31m \u6771\u4eac e\u0301 \u0915\u093f "
                              "\U0001F408\u200d\u2b1b \u0645\u0631")
    assert one_line("plain") == "plain"
    table = format_table(["item", "output"], [[0, "x\x00y"], [1, "two\nlines"]])
    assert table.splitlines()[2:] == ["   0  x\\x00y", "   1  two\\nlines"]
