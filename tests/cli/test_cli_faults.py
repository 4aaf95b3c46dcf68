"""Faults found by injection (issue "Hardening"): no silent mispairing of lines, and every bad
input is one line on stderr with exit status 2 through the CLI's one error path, never a
traceback; a reader that stops reading (``| head -1``) ends the command quietly."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from opik_metrics.cli.errors import BROKEN_PIPE_STATUS, _stdout_closed, run_command
from opik_metrics.cli.main import main
from opik_metrics.cli.score import read_lines, split_lines

# Every character str.splitlines breaks at besides "\n" and "\r": none is a line end for wc -l.
NOT_LINE_ENDS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
NO_MODEL = "no-such-org/no-such-model"      # loading it fails: an error about it means the model was tried


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("opik-metrics: error: "), captured.err
    return lines[0]


# ---- 1. lines are "\n"-terminated, as wc -l counts them ----------------------------------------

@pytest.mark.parametrize("sep", NOT_LINE_ENDS, ids=[f"U+{ord(c):04X}" for c in NOT_LINE_ENDS])
def test_only_newline_ends_a_line(sep):
    assert split_lines(f"one{sep}two\nthree\n") == [f"one{sep}two", "three"]


def test_crlf_final_newline_and_lone_cr():
    assert split_lines("a b\r\nc d\r\n") == ["a b", "c d"]
    assert split_lines("a\nb") == ["a", "b"]                  # no final newline: still a line
    assert split_lines("a\n\n") == ["a", ""]                  # an empty line is an (empty) item
    assert split_lines("a\rb\n") == ["a\rb"]                  # wc -l: one line
    assert split_lines("") == [] and split_lines("\n") == [""]


def test_score_pairs_line_k_with_line_k(tmp_path, capsys):
    """Two files of 3 lines by wc -l, each with a character splitlines breaks at on another line:
    before, each gave 4 items and items 1-3 were scored against the wrong reference."""
    p, r = tmp_path / "p.txt", tmp_path / "r.txt"
    p.write_bytes("red fox\x0cjumps\nblue sky\ngreen tea leaves\n".encode())
    r.write_bytes("red fox jumps\nblue sky\ngreen tea\u2028leaves\n".encode())
    assert main(["score", "-p", str(p), "-r", str(r), "-m", "rouge", "--rouge-type", "rouge1",
                 "--format", "json", "--no-progress"]) == 0
    items = json.loads(capsys.readouterr().out)["items"]
    assert len(items) == 3 == p.read_bytes().count(b"\n")
    assert [item["rouge1_f1"] for item in items] == [1.0, 1.0, 1.0]


def test_every_separator_survives_a_round_trip_through_read_lines(tmp_path):
    path = tmp_path / "p.txt"
    lines = [f"item {k}{sep}tail" for k, sep in enumerate(NOT_LINE_ENDS)]
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    assert read_lines(str(path), "predictions") == lines


# ---- 3. one line and exit 2, never a traceback ---------------------------------------------------

def test_directory_as_predictions_or_references(tmp_path, capsys):
    f = tmp_path / "f.txt"
    f.write_text("a\n")
    assert main(["score", "-p", str(tmp_path), "-r", str(f)]) == 2
    assert f"predictions file {tmp_path} is a directory" in one_error_line(capsys)
    assert main(["score", "-p", str(f), "-r", str(f), "-r", str(tmp_path)]) == 2
    assert f"references file {tmp_path} is a directory" in one_error_line(capsys)


def test_missing_file_is_one_line(tmp_path, capsys):
    f = tmp_path / "f.txt"
    f.write_text("a\n")
    assert main(["score", "-p", str(f), "-r", str(tmp_path / "gone.txt")]) == 2
    assert f"references file not found: {tmp_path / 'gone.txt'}" in one_error_line(capsys)


def test_invalid_utf8_names_file_line_and_byte(tmp_path, capsys):
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text("one\ntwo\nthree\n")
    bad.write_bytes(b"one\ntwo \xff\nthree\n")
    assert main(["score", "-p", str(good), "-r", str(bad)]) == 2
    line = one_error_line(capsys)
    assert f"references file {bad} is not UTF-8 text" in line
    assert "line 2" in line and "byte offset 8" in line


def test_invalid_utf8_baseline_file_is_named_before_any_model_loads(tmp_path, capsys):
    f, baseline = tmp_path / "f.txt", tmp_path / "baseline.tsv"
    f.write_text("a\n")
    baseline.write_bytes(b"LAYER,P,R,F\n3,0.2,0.2,\xe90.2\n")
    assert main(["score", "-p", str(f), "-r", str(f), "-m", "bertscore", "--bertscore-model", NO_MODEL,
                 "--baseline-path", str(baseline)]) == 2
    line = one_error_line(capsys)
    assert f"baseline file {baseline} is not UTF-8 text" in line and "line 2" in line


@pytest.mark.parametrize("option, empty", [("-o", ""), ("-r", "   ")])
def test_explain_with_an_empty_text_fails_before_loading_the_model(tmp_path, capsys, option, empty):
    texts = {"-o": "a cat", "-r": "a dog"}
    texts[option] = empty
    assert main(["explain", "-c", texts["-o"], "-r", texts["-r"], "--png", str(tmp_path / "x.png"),
                 "--bertscore-model", NO_MODEL]) == 2
    line = one_error_line(capsys)
    assert "is empty; there are no tokens to align" in line and NO_MODEL not in line


def test_explain_png_into_a_missing_folder_or_onto_a_folder(tmp_path, capsys):
    for png, says in [(tmp_path / "nowhere" / "x.png", "does not exist"), (tmp_path, "is a directory")]:
        assert main(["explain", "-c", "a cat", "-r", "a dog", "--png", str(png), "--bertscore-model", NO_MODEL]) == 2
        line = one_error_line(capsys)
        assert says in line and NO_MODEL not in line


def test_explain_png_that_cannot_be_written_is_one_line(tmp_path, capsys, monkeypatch):
    import opik_metrics.metrics.bertscore as bertscore_module

    class Unwritable:                                # the model and plot stand in: only the write fails
        signature = "sig"

        def __init__(self, **kwargs):
            pass

        def score(self, output, reference):
            return []

        def save_heatmap(self, output, reference, path):
            raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(bertscore_module, "BERTScore", Unwritable)
    assert main(["explain", "-c", "a cat", "-r", "a dog", "--png", str(tmp_path / "x.png")]) == 2
    assert "cannot write the heatmap" in one_error_line(capsys)


def test_non_utf8_command_line_arguments(tmp_path, capsys):
    # Python hands argv bytes that are not UTF-8 over as surrogates (os.fsdecode does the same)
    argument = os.fsdecode(b"caf\xe9 au lait")
    assert main(["explain", "-c", argument, "-r", "a dog", "--png", str(tmp_path / "x.png"),
                 "--bertscore-model", NO_MODEL]) == 2
    line = one_error_line(capsys)
    assert "command-line argument 3, the value of -c, is not UTF-8 text" in line
    assert "at byte 3" in line and "caf\\xe9 au lait" in line
    assert main(["explain", "-c", "a cat", "-r", "cut \ud83d", "--png", str(tmp_path / "x.png")]) == 2
    assert "lone surrogate U+D83D at character 4" in one_error_line(capsys)
    f = tmp_path / "f.txt"
    f.write_text("a\n")
    assert main(["score", "-p", str(f), "-r", str(f), "--bleu-tokenize", os.fsdecode(b"\xff")]) == 2
    assert "the value of --bleu-tokenize" in one_error_line(capsys)


# ---- a closed stdout: quiet, 141 ---------------------------------------------------------------

def test_run_command_turns_a_broken_pipe_into_a_quiet_141(capsys):
    def writes_into_a_closed_pipe(args):
        raise BrokenPipeError(32, "Broken pipe")

    assert run_command(writes_into_a_closed_pipe, None) == BROKEN_PIPE_STATUS == 141
    assert capsys.readouterr().err == ""


def test_stdout_closed_tells_our_pipe_from_another(monkeypatch):
    read_end, write_end = os.pipe()
    writer = os.fdopen(write_end, "w")
    try:
        monkeypatch.setattr(sys, "stdout", writer)
        assert not _stdout_closed()                  # reader still there: a BrokenPipeError is not ours
        os.close(read_end)
        assert _stdout_closed()
    finally:
        monkeypatch.undo()
        writer.close()                               # nothing buffered: closing writes nothing


def test_score_piped_into_head_exits_quietly(tmp_path):
    f = tmp_path / "many.txt"
    f.write_text("".join(f"line {k} of some words\n" for k in range(3000)))
    exe = Path(sys.executable).parent / "opik-metrics"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.Popen([str(exe), "score", "-p", str(f), "-r", str(f), "-m", "rouge", "--rouge-type", "rouge1",
                             "--items", "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout.readline().startswith(b"3000 items")    # as `| head -1`: one line, then gone
    proc.stdout.close()                                        # ~100 KB more to write: > a pipe's buffer
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err


def test_stored_text_with_a_lone_surrogate_prints(tmp_path):
    """`experiments show --items` prints an output cut mid-emoji as \\udXXX instead of crashing."""
    import subprocess
    import sys

    from opik_metrics.experiments.runner import run_experiment
    from opik_metrics.experiments.store import ExperimentStore

    with ExperimentStore(tmp_path / "s.sqlite") as store:
        run_experiment("cut", [{"reference": "a smile"}], lambda item: {"output": "a smile \ud83d"}, [],
                       dataset_name="d", store=store, progress=False)
    done = subprocess.run([sys.executable, "-m", "opik_metrics", "experiments", "show", "cut", "--items",
                           "--store", str(tmp_path / "s.sqlite")], capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHONIOENCODING": "utf-8",
                               "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert done.returncode == 0, done.stderr
    assert "\\ud83d" in done.stdout


@pytest.mark.parametrize("code", ["ENOSPC", "EROFS", "EMFILE"])
def test_a_full_disk_or_another_limit_of_the_machine_is_one_line(capsys, code):
    import errno

    def writes_onto_a_full_disk(args):
        raise OSError(getattr(errno, code), os.strerror(getattr(errno, code)), "/data/out.parquet")

    assert run_command(writes_onto_a_full_disk, None) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "(/data/out.parquet)" in err and "run the same command again" in err
    # any other OSError is not ours to word: a bug (issue 56: exit 70, one line, never 1 and a traceback)
    assert run_command(lambda args: open("/no/such/file"), None) == 70
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("opik-metrics: internal error: FileNotFoundError: ")
