"""`opik-metrics score` on files: the seed's acceptance numbers, JSON shape, clear errors."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import sacrebleu

from opik_metrics.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_json(capsys, *argv):
    assert main(["score", *argv, "--format", "json", "--no-progress"]) == 0
    return json.loads(capsys.readouterr().out)


def test_seed_acceptance_numbers(capsys):
    out = run_json(capsys, "-p", str(EXAMPLES / "predictions.txt"), "-r", str(EXAMPLES / "references.txt"))
    agg = out["aggregate"]
    assert agg["rouge1_f1"] == 0.6862745098039216
    assert agg["rouge2_f1"] == 0.33333333333333337
    assert agg["rougeL_f1"] == 0.6274509803921569
    assert len(out["items"]) == 2 and set(out["items"][0]) >= {"rouge1_f1", "bleu"}
    preds = (EXAMPLES / "predictions.txt").read_text().splitlines()
    refs = (EXAMPLES / "references.txt").read_text().splitlines()
    assert agg["corpus_bleu"] == pytest.approx(sacrebleu.corpus_bleu(preds, [refs]).score / 100)
    assert agg["bleu"] == pytest.approx(sum(i["bleu"] for i in out["items"]) / 2)


def test_several_reference_files_and_metric_choice(tmp_path, capsys):
    p, r1, r2 = tmp_path / "p.txt", tmp_path / "r1.txt", tmp_path / "r2.txt"
    p.write_text("a cat sat\nhello world\n")
    r1.write_text("the dog ran\nhello there world\n")
    r2.write_text("a cat sat\nbye\n")
    out = run_json(capsys, "-p", str(p), "-r", str(r1), "-r", str(r2), "-m", "rouge", "--rouge-type", "rouge1")
    assert out["items"][0]["rouge1_f1"] == 1.0  # second reference matches exactly
    assert "bleu" not in out["aggregate"]


def test_empty_line_gets_a_reason(tmp_path, capsys):
    p, r = tmp_path / "p.txt", tmp_path / "r.txt"
    p.write_text("\nsome words\n")
    r.write_text("a reference\nsome words\n")
    out = run_json(capsys, "-p", str(p), "-r", str(r))
    assert out["items"][0]["rouge1_f1"] == 0.0
    assert any(n["item"] == 0 and "output has no tokens" in n["reason"] for n in out["reasons"])


def test_files_of_different_lengths_are_a_clear_error(tmp_path, capsys):
    p, r = tmp_path / "p.txt", tmp_path / "r.txt"
    p.write_text("a\nb\nc\n")
    r.write_text("a\nb\n")
    assert main(["score", "-p", str(p), "-r", str(r)]) == 2
    err = capsys.readouterr().err
    assert "has 3 lines but" in err and "has 2" in err and "Traceback" not in err


def test_empty_files_are_an_error_not_an_empty_table(tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert main(["score", "-p", str(empty), "-r", str(empty), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err == f"opik-metrics: error: predictions file {empty} has no lines: nothing to score\n"


def test_missing_file_and_bad_rouge_type(tmp_path, capsys):
    assert main(["score", "-p", str(tmp_path / "nope.txt"), "-r", str(tmp_path / "r.txt")]) == 2
    assert "predictions file not found" in capsys.readouterr().err
    (tmp_path / "x.txt").write_text("a\n")
    assert main(["score", "-p", str(tmp_path / "x.txt"), "-r", str(tmp_path / "x.txt"), "--rouge-type", "rougeZ"]) == 2
    assert "rougeZ" in capsys.readouterr().err


def test_table_format_via_console_script():
    exe = Path(sys.executable).parent / "opik-metrics"
    proc = subprocess.run([str(exe), "score", "-p", str(EXAMPLES / "predictions.txt"),
                           "-r", str(EXAMPLES / "references.txt"), "--no-progress"],
                          capture_output=True, text=True, check=True)
    assert "rouge1_f1" in proc.stdout and "0.6863" in proc.stdout and "corpus_bleu" in proc.stdout


def test_a_corpus_score_that_is_the_mean_says_so_in_the_table(capsys):
    assert main(["score", "-p", str(EXAMPLES / "predictions.txt"), "-r", str(EXAMPLES / "references.txt"),
                 "-m", "cider", "-m", "bleu", "--no-progress"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert "corpus statistics: the mean of cider, by the metric's definition" in rows["corpus_cider"]
    assert rows["corpus_bleu"].rstrip().endswith("corpus statistics") and "mean over items" in rows["cider"]


def test_help_describes_the_command_and_every_option(capsys, monkeypatch):
    """Issue 40: `score --help` had no description and --format, --lang, --batch-size no help."""
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as done:
        main(["score", "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "Score system outputs against references" in text
    lines = text.splitlines()
    bare = []
    for k, line in enumerate(lines):
        if not line.startswith("  -"):
            continue
        has_help = "  " in line.strip()            # help on the option's own line, after the gap
        follows = k + 1 < len(lines) and lines[k + 1].startswith(" " * 8) and not lines[k + 1].strip().startswith("-")
        if not (has_help or follows):
            bare.append(line.strip().split()[0])
    assert bare == []
