"""``opik-metrics score --input``: records in, rows out, aggregates on the terminal; the text
metrics start without importing torch, transformers, opik or nltk."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from opik_metrics.cli import main
from opik_metrics.experiments.batch import score_texts
from opik_metrics.metrics.bleu import BLEU
from opik_metrics.metrics.rouge import ROUGE
from opik_metrics.streams import read_rows
from tests.streams.records import generate_items, write_csv, write_jsonl, write_parquet

ITEMS = generate_items(120, seed=2)


def _run(capsys, *args):
    status = main(["score", *args, "--no-progress"])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_json_keeps_the_shape_of_the_line_files_form(tmp_path, capsys):
    path = write_jsonl(tmp_path / "in.jsonl", ITEMS)
    status, out, _ = _run(capsys, "--input", str(path), "--format", "json")
    assert status == 0
    result = json.loads(out)
    old = score_texts([ROUGE(track=False), BLEU(track=False)], [i["output"] for i in ITEMS],
                      [i["reference"] if isinstance(i["reference"], list) else [i["reference"]] for i in ITEMS],
                      progress=False)
    assert result["aggregate"] == pytest.approx(old["aggregate"], abs=1e-12)
    assert [{k: v for k, v in item.items() if k not in ("index", "reason")} for item in result["items"]] == old["items"]
    assert result["counts"]["corpus_bleu"] == 120 and result["unscored"] == 0


def test_the_output_file_has_the_scores_in_the_order_the_line_files_form_prints_them(tmp_path, capsys):
    preds, refs = tmp_path / "p.txt", tmp_path / "r.txt"
    preds.write_text("a cat sat\nthe dog ran\n")
    refs.write_text("a cat sat down\nthe dog runs\n")
    status, out, _ = _run(capsys, "-p", str(preds), "-r", str(refs), "-m", "rouge", "-m", "bleu", "--format", "json")
    assert status == 0
    text_order = list(json.loads(out)["items"][0])
    path = write_jsonl(tmp_path / "in.jsonl", [{"output": "a cat sat", "reference": "a cat sat down"}])
    assert _run(capsys, "--input", str(path), "-m", "rouge", "-m", "bleu", "-o", str(tmp_path / "o.jsonl"))[0] == 0
    row = next(read_rows(str(tmp_path / "o.jsonl")))     # the first row (the file begins with its metadata)
    assert [k for k in row if k in text_order] == text_order
    assert text_order[:3] == ["rouge1_precision", "rouge1_recall", "rouge1_f1"]


def test_output_file_table_and_resume(tmp_path, capsys):
    path = write_parquet(tmp_path / "in.parquet", ITEMS)
    out_file = tmp_path / "scores.parquet"
    status, out, _ = _run(capsys, "-i", str(path), "-o", str(out_file), "-m", "bleu")
    assert status == 0 and "120 records" in out and "corpus_bleu" in out and "corpus statistics" in out
    rows = list(read_rows(str(out_file)))
    assert [r["index"] for r in rows] == list(range(120)) and set(rows[0]) == {"index", "bleu", "reason",
                                                                               "statistics.bleu"}
    status, out, _ = _run(capsys, "-i", str(path), "-o", str(out_file), "-m", "bleu")
    assert status == 0 and "already complete" in out
    status, _, err = _run(capsys, "-i", str(path), "-o", str(out_file), "-m", "rouge")
    assert status == 2 and "different run" in err and "--overwrite" in err
    status, _, _ = _run(capsys, "-i", str(path), "-o", str(out_file), "-m", "rouge", "--overwrite")
    assert status == 0 and "rouge1_f1" in set(next(read_rows(str(out_file))))


def test_csv_with_field_mapping_and_a_bad_row(tmp_path, capsys):
    path = write_csv(tmp_path / "in.csv", ITEMS[:10])
    with open(path, "a", encoding="utf-8") as f:
        f.write("just-one-field\n")
    status, out, _ = _run(capsys, "-i", str(path), "--field", "output=pred", "--field", "reference=ref",
                          "--items", "-m", "bleu")
    assert status == 0 and "note: 1 of 11 records have no scores" in out and "row 11: 1 fields" in out


def test_a_run_that_scored_nothing_is_an_error_naming_the_column_and_the_field_fix(tmp_path, capsys):
    path = write_csv(tmp_path / "pairs.csv", ITEMS[:40])      # columns pred, ref: no --field
    status, out, err = _run(capsys, "-i", str(path))
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "none of the 40 records" in err and "column 'output' is missing" in err
    assert "its columns: pred, ref" in err and "--field output=COLUMN" in err
    status, _, err = _run(capsys, "-i", str(path), "--field", "output=pred", "-o", str(tmp_path / "o.jsonl"))
    assert status == 2 and "column 'reference' is missing" in err and "--field reference=COLUMN" in err
    assert "--overwrite" in err
    status, out, _ = _run(capsys, "-i", str(path), "--field", "output=pred", "--field", "reference=ref",
                          "-o", str(tmp_path / "o.jsonl"), "--overwrite")
    assert status == 0 and "40 records" in out


def test_records_failing_for_different_reasons_still_score_nothing_and_fail(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"output": "a"}\nnot json\n', encoding="utf-8")
    status, _, err = _run(capsys, "-i", str(path), "-m", "bleu")
    assert status == 2 and "none of the 2 records" in err and "(1 records)" in err


@pytest.mark.parametrize("content", ["", "pred,ref\n"])
def test_empty_input_is_an_error(tmp_path, capsys, content):
    path = tmp_path / "empty.csv"
    path.write_text(content, encoding="utf-8")
    status, _, err = _run(capsys, "-i", str(path), "--field", "output=pred", "--field", "reference=ref")
    assert status == 2 and err.startswith("opik-metrics: error:")
    if content:
        assert "has no records: nothing to score" in err


@pytest.mark.parametrize("args,message", [
    (["-i", "missing.jsonl"], "input file not found"),
    (["-i", "{dir}/in.jsonl", "--field", "colour=x"], "--field 'colour=x'"),
    (["-i", "{dir}/in.jsonl", "-o", "{dir}/o.csv"], "name a .jsonl or .parquet"),
    (["-i", "{dir}/in.jsonl", "-p", "{dir}/in.jsonl"], "drop --predictions/--references"),
    (["-p", "{dir}/in.jsonl", "-r", "{dir}/in.jsonl", "-o", "{dir}/o.jsonl"], "--output go with --input"),
    (["-p", "{dir}/in.jsonl", "-m", "clipscore"], "clipscore scores images"),
    ([], "give --input"),
    (["-i", "{dir}/in.jsonl", "--chunk-size", "0"], "must be positive"),
])
def test_mistakes_are_one_line_errors(tmp_path, capsys, args, message):
    write_jsonl(tmp_path / "in.jsonl", ITEMS[:3])
    status, _, err = _run(capsys, *[a.format(dir=tmp_path) for a in args])
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1


HEAVY = ("torch", "transformers", "opik", "nltk", "bert_score", "pyarrow", "ray", "numpy")


@pytest.mark.parametrize("extra", [[], ["--input"]])
def test_text_metrics_start_without_heavy_imports(tmp_path, extra):
    """ROUGE and BLEU from the command line import none of the heavy packages (startup like a
    command-line tool; `make bench` measures it against sacrebleu's CLI)."""
    items = ITEMS[:20]
    if extra:
        args = ["--input", str(write_jsonl(tmp_path / "in.jsonl", items))]
    else:
        (tmp_path / "p.txt").write_text("".join(i["output"] + "\n" for i in items))
        (tmp_path / "r.txt").write_text("".join((i["reference"] if isinstance(i["reference"], str)
                                                 else i["reference"][0]) + "\n" for i in items))
        args = ["-p", str(tmp_path / "p.txt"), "-r", str(tmp_path / "r.txt")]
    code = ("import sys; from opik_metrics.cli import main; status = main(['score', *sys.argv[1:], '--no-progress']); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & set(%r)))" % (HEAVY,))
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_ctrl_c_keeps_the_rows_scored_so_far_and_a_rerun_resumes(tmp_path, capsys, monkeypatch):
    import opik_metrics.streams.run as run

    path = write_jsonl(tmp_path / "in.jsonl", ITEMS)
    out_file = tmp_path / "o.jsonl"
    real, calls = run.ChunkScorer.score, [0]

    def interrupted(self, chunk):
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt
        return real(self, chunk)

    monkeypatch.setattr(run.ChunkScorer, "score", interrupted)
    status, _, err = _run(capsys, "-i", str(path), "-o", str(out_file), "--chunk-size", "10", "-m", "bleu",
                          "--workers", "1")
    assert status == 130 and f"kept in {out_file}.parts" in err
    monkeypatch.setattr(run.ChunkScorer, "score", real)
    status, out, _ = _run(capsys, "-i", str(path), "-o", str(out_file), "--chunk-size", "10", "-m", "bleu")
    assert status == 0 and "resumed after record 20" in out
    assert [r["index"] for r in read_rows(str(out_file))] == list(range(120))
