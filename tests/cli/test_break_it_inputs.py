"""What the break-it round tries next (issue 40 item 10), through the command line in process:
texts of exactly the 1,000,000-character bound and one over, mixed scripts and NUL bytes in text
and record files and in the local store, and record files, outputs and stores with hostile names.
Each ends in a one-line error with the fix, a per-item failure with a reason, or a defined value."""
from __future__ import annotations

import json

import pytest
import sacrebleu

from opik_metrics import BLEU, ROUGE, evaluate
from opik_metrics.cli import main
from opik_metrics.core.inputs import MAX_TEXT_CHARS
from opik_metrics.experiments.store import StoreError
from opik_metrics.streams import read_rows
from tests.mixed_scripts import OUTPUTS, PAIRS, REFERENCES
from tests.streams.records import generate_items, write_csv, write_jsonl, write_parquet

OVER_MESSAGE = ("{where}: 1,000,001 characters, more than the 1,000,000 a metric of opik-metrics scores "
                "(MAX_TEXT_CHARS); split the text into items")


def _run(capsys, *args):
    status = main([*args])
    out = capsys.readouterr()
    return status, out.out, out.err


def _bound_text(length: int) -> str:
    words = " ".join(f"w{k}" for k in range(length // 7))
    return (words + " " + "x" * length)[:length]


def _one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("opik-metrics: error: "), err
    return lines[0][len("opik-metrics: error: "):]


# ---- the bound ---------------------------------------------------------------------------------

def test_records_at_the_bound_are_scored_and_one_over_fails_that_record_alone(tmp_path, capsys):
    at, over = _bound_text(MAX_TEXT_CHARS), _bound_text(MAX_TEXT_CHARS + 1)
    assert len(at) == MAX_TEXT_CHARS and len(over) == MAX_TEXT_CHARS + 1
    records = [{"output": "a b", "reference": "a b"}, {"output": at, "reference": "w1 w2 w3"},
               {"output": over, "reference": "w1"}, {"output": "w1 w2", "reference": at},
               {"output": "w1", "reference": ["w1", over]}]
    path = write_jsonl(tmp_path / "in.jsonl", records)
    out_file = tmp_path / "out.jsonl"
    status, out, _ = _run(capsys, "score", "-i", str(path), "-o", str(out_file), "-m", "bleu", "--no-progress")
    assert status == 0 and "note: 2 of 5 records have no scores" in out
    rows = list(read_rows(str(out_file)))
    assert [row["reason"] for row in rows] == [
        None, None, OVER_MESSAGE.format(where="item 2, field 'output'"), None,
        OVER_MESSAGE.format(where="item 4, field 'reference[1]'")]
    bleu = sacrebleu.metrics.BLEU(effective_order=True)
    for k in (1, 3):
        record = records[k]
        assert rows[k]["bleu"] == pytest.approx(bleu.sentence_score(record["output"], [record["reference"]]).score / 100,
                                                abs=1e-12)
    assert rows[2]["bleu"] is None and rows[4]["bleu"] is None        # no silent 0


def test_a_text_file_line_over_the_bound_is_one_line_naming_item_and_field(tmp_path, capsys):
    preds, refs = tmp_path / "p.txt", tmp_path / "r.txt"
    preds.write_text("a b\n" + _bound_text(MAX_TEXT_CHARS) + "\nc d\n", encoding="utf-8")
    refs.write_text("a b\nw1 w2\n" + _bound_text(MAX_TEXT_CHARS + 1) + "\n", encoding="utf-8")
    status, _, err = _run(capsys, "score", "-p", str(preds), "-r", str(refs), "-m", "rouge", "--no-progress")
    assert status == 2 and _one_error_line(err) == OVER_MESSAGE.format(where="item 2, field 'reference[0]'")
    refs.write_text("a b\nw1 w2\nc d\n", encoding="utf-8")                   # the line at the bound is scored
    status, out, _ = _run(capsys, "score", "-p", str(preds), "-r", str(refs), "-m", "rouge", "--format", "json")
    assert status == 0 and len(json.loads(out)["items"]) == 3


# ---- mixed scripts and NUL bytes -----------------------------------------------------------------

def _sacrebleu_values():
    bleu, chrf = sacrebleu.metrics.BLEU(effective_order=True), sacrebleu.metrics.CHRF()
    return ([bleu.sentence_score(o, [r]).score / 100 for o, r in PAIRS],
            [chrf.sentence_score(o, [r]).score / 100 for o, r in PAIRS])


def test_text_files_keep_each_line_whole_and_equal_sacrebleu(tmp_path, capsys):
    """A NUL, a joined emoji or a right-to-left run inside a line neither splits nor ends it."""
    preds, refs = tmp_path / "p.txt", tmp_path / "r.txt"
    preds.write_text("\n".join(OUTPUTS) + "\n", encoding="utf-8")
    refs.write_text("\n".join(REFERENCES) + "\n", encoding="utf-8")
    status, out, _ = _run(capsys, "score", "-p", str(preds), "-r", str(refs), "-m", "bleu", "-m", "chrf",
                          "--format", "json")
    assert status == 0
    items = json.loads(out)["items"]
    bleu, chrf = _sacrebleu_values()
    assert [i["bleu"] for i in items] == pytest.approx(bleu, abs=1e-12)
    assert [i["chrf"] for i in items] == pytest.approx(chrf, abs=1e-12)


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
def test_record_files_carry_mixed_scripts_and_nul_bytes_intact(tmp_path, capsys, kind):
    items = [{"output": o, "reference": r} for o, r in PAIRS]
    path = {"jsonl": lambda p: write_jsonl(p, items), "csv": lambda p: write_csv(p, items, newline_in_field=False),
            "parquet": lambda p: write_parquet(p, items)}[kind](tmp_path / f"in.{kind}")
    fields = ["--field", "output=pred", "--field", "reference=ref"] if kind == "csv" else []
    out_file = tmp_path / "out.jsonl"
    status, out, _ = _run(capsys, "score", "-i", str(path), "-o", str(out_file), "-m", "bleu", "-m", "chrf",
                          "--no-progress", *fields)
    assert status == 0 and "have no scores" not in out
    rows = list(read_rows(str(out_file)))
    bleu, chrf = _sacrebleu_values()
    assert [r["bleu"] for r in rows] == pytest.approx(bleu, abs=1e-12)
    assert [r["chrf"] for r in rows] == pytest.approx(chrf, abs=1e-12)
    assert all(r["reason"] is None for r in rows)


def test_the_store_keeps_mixed_scripts_and_nul_bytes_and_shows_each_item_on_one_line(tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    for name in ("base", "mixed"):
        evaluate(dataset=[{"input": o, "reference": r} for o, r in PAIRS],
                 task=(lambda item: {"output": item["input"]}) if name == "mixed" else (lambda item: {"output": "x"}),
                 scoring_metrics=[ROUGE(), BLEU()], experiment_name=name, store=str(store), verbose=0)
    status, out, _ = _run(capsys, "experiments", "show", "mixed", "--store", str(store), "--format", "json")
    assert status == 0
    shown = json.loads(out)
    assert [r["output"]["output"] for r in shown["records"]] == OUTPUTS          # exactly as scored, NUL included
    bleu, _ = _sacrebleu_values()
    assert [r["scores"]["bleu"]["value"] for r in shown["records"]] == pytest.approx(bleu, abs=1e-12)
    assert shown["records"][-1]["scores"]["rouge1_f1"]["reason"].startswith("output has no tokens")

    status, out, _ = _run(capsys, "experiments", "show", "mixed", "--store", str(store), "--items")
    table = out[out.index("item  status"):].splitlines()
    assert status == 0 and len(table) == 2 + len(PAIRS) and "\x00" not in out
    assert "x\\x00y" in table[2] and "\\x00" in table[-1]                    # a NUL is shown, as its escape
    status, out, _ = _run(capsys, "experiments", "list", "--store", str(store))
    assert status == 0 and "mixed" in out and "base" in out
    status, out, err = _run(capsys, "compare", "base", "mixed", "--store", str(store), "-o", str(tmp_path / "report"),
                            "-m", "bleu")
    assert status == 0, err
    compared = json.loads((tmp_path / "report" / "comparison.json").read_text(encoding="utf-8"))
    assert compared["scores"]["bleu"]["mixed"]["values"] == pytest.approx(bleu, abs=1e-12)
    assert compared["pairs"][0]["shared_items"] == len(PAIRS) and "\x00" not in out


# ---- hostile names ---------------------------------------------------------------------------------

HOSTILE = ["a|b", "it's", 'say "hi"', "new\nline", "n" * 194]          # 194 + ".jsonl": a 200-character name


@pytest.mark.parametrize("name", HOSTILE, ids=["pipe", "quote", "double-quote", "newline", "200-chars"])
def test_hostile_record_file_names_score_resume_and_print_on_one_line(tmp_path, capsys, name):
    items = generate_items(6, seed=3)
    source = write_jsonl(tmp_path / f"{name}.jsonl", items)
    target = tmp_path / f"{name}.jsonl.out.jsonl" if len(name) < 150 else tmp_path / f"{name[:190]}.pq"
    args = ["score", "-i", str(source), "-o", str(target), "-m", "bleu", "--no-progress"]
    status, out, _ = _run(capsys, *args)
    assert status == 0 and target.exists()
    header = out.splitlines()[0]
    assert header.startswith("6 records: ") and header.endswith(str(target).replace("\n", "\\n"))
    assert [r["index"] for r in read_rows(str(target))] == list(range(6))
    status, out, _ = _run(capsys, *args)                                       # resumed: nothing left to do
    assert status == 0 and "already complete" in out.splitlines()[0]
    status, _, err = _run(capsys, "score", "-i", str(source), "-o", str(target), "-m", "rouge", "--no-progress")
    assert status == 2 and "different run" in _one_error_line(err)           # the name quoted on one line


def test_a_name_too_long_for_the_file_system_is_one_line_naming_the_file(tmp_path, capsys):
    items = generate_items(3, seed=1)
    source = write_jsonl(tmp_path / "in.jsonl", items)
    too_long = tmp_path / ("y" * 300 + ".jsonl")
    status, _, err = _run(capsys, "score", "-i", str(too_long), "-m", "bleu")
    line = _one_error_line(err)
    assert status == 2 and line.startswith(f"input file {too_long}: its file name is 306 bytes, more than the 255 ")
    assert line.endswith("choose a shorter name")

    # 243 bytes fit, but not with the record written beside the output (".run.json.tmp"): refused before scoring
    near = tmp_path / ("z" * 237 + ".jsonl")
    status, _, err = _run(capsys, "score", "-i", str(source), "-o", str(near), "-m", "bleu", "--no-progress")
    assert status == 2 and _one_error_line(err) == (
        f"--output {near}: its file name is 256 bytes (with the .run.json.tmp we write beside it), more than the "
        "255 a name may have on this file system; choose a shorter name")
    assert list(tmp_path.iterdir()) == [source]                                # nothing written

    store = tmp_path / ("s" * 243 + ".sqlite")           # 250 bytes; SQLite's journal beside it: 258
    for args in (["experiments", "list"], ["experiments", "show", "x"], ["compare", "a", "b", "-o", str(tmp_path)]):
        status, _, err = _run(capsys, *args, "--store", str(store))
        assert status == 2 and _one_error_line(err).startswith(f"experiment store {store}: its file name is 258 bytes "
                                                               "(with the -journal we write beside it)")
    with pytest.raises(StoreError, match=r"^experiment store .*: its file name is 258 bytes"):
        evaluate(dataset=[{"input": "a", "reference": "a"}], task=lambda item: {"output": "a"},
                 scoring_metrics=[BLEU()], experiment_name="e", store=str(store), verbose=0)
    assert list(tmp_path.iterdir()) == [source]


@pytest.mark.parametrize("name", HOSTILE[:4] + ["s" * 193], ids=["pipe", "quote", "double-quote", "newline",
                                                                  "200-chars"])
def test_hostile_store_names_hold_experiments_and_print_on_one_line(tmp_path, capsys, name):
    store = tmp_path / f"{name}.sqlite"
    for experiment in ("a", "b"):
        evaluate(dataset=[{"input": o, "reference": r} for o, r in PAIRS[:5]],
                 task=lambda item: {"output": item["input"]}, scoring_metrics=[BLEU()], experiment_name=experiment,
                 store=str(store), verbose=0)
    status, out, _ = _run(capsys, "experiments", "list", "--store", str(store))
    assert status == 0 and out.splitlines()[0] == str(store).replace("\n", "\\n")
    status, out, _ = _run(capsys, "compare", "a", "b", "--store", str(store), "-o", str(tmp_path / "report"))
    assert status == 0 and f"from local store {store}".replace("\n", "\\n") in out.splitlines()[0]
