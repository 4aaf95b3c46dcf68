"""No silent statistics (issue 55, part 5), the comparison's cases: damaged item statistics in a
record file, a NaN cluster label, and trials of one id that are not runs on one input are data
errors naming the file, the item and the field (exit 2, one line); an item that legitimately
records no statistics is counted in the notes and on its score's line. Each failed on the code before."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from opik_metrics.cli.main import main
from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.reading.sources import RecordFileError, from_records

N = 60


def _scored(folder: Path, name: str, rows: list[dict], *keep: str) -> Path:
    source = folder / f"{name}.input.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = folder / f"{name}.jsonl"
    flags = [f for column in keep for f in ("--keep", column)]
    assert main(["score", "-i", str(source), "-o", str(out), "-m", "bleu", *flags, "--no-progress",
                 "--format", "json"]) == 0
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("no_silent")
    rows = [{"id": f"r{k}", "doc": k % 6, "output": f"the cat {k} sat on the mat today",
             "reference": f"the cat {k} sat on a mat today"} for k in range(N)]
    new = [dict(row, output=row["output"].replace("today", "now")) for row in rows]
    return {"base": _scored(folder, "base", rows, "doc"), "new": _scored(folder, "new", new, "doc")}


def _edited(path: Path, target: Path, line: int, change) -> Path:
    """A copy of a record file with row ``line`` (0: the metadata line) changed by ``change``."""
    lines = [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines()]
    change(lines[line])
    target.write_text("".join(json.dumps(row) + "\n" for row in lines), encoding="utf-8")
    return target


def _compare(capsys, *args) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["compare", *map(str, args)])
    return code, capsys.readouterr().err.strip().splitlines()


def _set(index: int, value):
    return lambda row: row["statistics.bleu"].__setitem__(index, value)


@pytest.mark.parametrize("change, words", [
    (_set(0, math.nan), "hold correct_1 (value 1 of 10) = NaN, not a finite number"),
    (_set(9, math.inf), "hold ref_len (value 10 of 10) = inf, not a finite number"),
    (_set(2, "3"), "hold correct_3 (value 3 of 10) = '3', not a number"),
    (lambda row: row.__setitem__("statistics.bleu", row["statistics.bleu"][:9]),
     "have 9 value(s), not 10 (correct_1, correct_2, correct_3, correct_4, total_1, total_2, total_3, total_4, "
     "sys_len, ref_len)"),
    (lambda row: row.__setitem__("statistics.bleu", "6 4 3 2"), "are '6 4 3 2', not a list of 10 numbers"),
])
def test_damaged_statistics_in_a_record_file_are_a_data_error_naming_file_item_and_field(files, tmp_path, capsys,
                                                                                        change, words):
    damaged = _edited(files["new"], tmp_path / "damaged.jsonl", 4, change)      # row 4: id r3
    for gate in ([], ["--fail-on", "worse"]):
        code, err = _compare(capsys, files["base"], damaged, *gate, "-o", tmp_path / "report")
        assert code == 2 and len(err) == 1
        assert err[0] == (f"opik-metrics: error: {damaged}: item r3 (row 4): the statistics of bleu (for "
                          f"corpus_bleu) {words}; the record was edited or damaged (score it again)")


def test_a_scored_row_without_its_statistics_is_a_data_error_in_a_record_file(files, tmp_path, capsys):
    damaged = _edited(files["new"], tmp_path / "cut.jsonl", 4, lambda row: row.pop("statistics.bleu"))
    code, err = _compare(capsys, files["base"], damaged, "--fail-on", "worse")
    assert code == 2 and err == [f"opik-metrics: error: {damaged}: item r3 (row 4) has bleu but no statistics.bleu: "
                                 "`score` writes both; the record was edited or damaged (score it again)"]


def test_a_damaged_trial_is_not_summed_away(tmp_path):
    rows = [{"id": f"q{k}", "trial": t, "output": f"a b c d {t}", "reference": f"a b c d {k}"}
            for k in range(8) for t in range(3)]
    base = _scored(tmp_path, "base", rows, "trial")
    damaged = _edited(base, tmp_path / "damaged.jsonl", 5, _set(1, "x"))         # q1, trial 1
    with pytest.raises(ValueError, match=r"damaged.jsonl: item q1 \(row 4\): the statistics of bleu \(for "
                                         r"corpus_bleu\) hold correct_2 \(value 2 of 10\) = 'x', not a number"):
        compare_experiments([from_records(str(base)), from_records(str(damaged))], CompareSettings(resamples=20))


def test_an_item_that_records_no_statistics_is_counted_in_the_notes_and_on_its_line(files):
    """As an Opik item whose metric span kept no metadata: scored, with no statistics."""
    base, new = from_records(str(files["base"])), from_records(str(files["new"]))
    for item in new.items[:3]:
        item.metadata["bleu"].pop("statistics")
    comparison = compare_experiments([base, new], CompareSettings(resamples=50))
    entry = comparison.pairs[0].metrics["corpus_bleu"]
    assert entry.n == N - 3
    assert entry.note is not None and entry.note.endswith(
        f"3 of {N} shared items left out: they record no statistics for corpus_bleu ({new.name}: 3)")
    assert (f"{new.name}: 3 of {N} scored items record no statistics for corpus_bleu (the first: r0); they are "
            "left out of its value, interval and paired tests") in comparison.notes
    assert comparison.pairs[0].metrics["bleu"].n == N


@pytest.mark.parametrize("value, shown", [(math.nan, "NaN"), (math.inf, "inf"), (-math.inf, "-inf")])
def test_a_non_finite_cluster_label_is_refused_as_a_missing_one_is(files, tmp_path, capsys, value, shown):
    odd = _edited(files["new"], tmp_path / "odd.jsonl", 3, lambda row: row.__setitem__("doc", value))
    code, err = _compare(capsys, files["base"], odd, "--cluster-by", "doc", "--fail-on", "worse")
    assert code == 2 and err == [f"opik-metrics: error: cluster_by 'doc': item 'r2' of {odd} has 'doc' = {shown}, "
                                 "which names no cluster; give every item of a cluster the same text or finite "
                                 "number in 'doc'"]
    missing = _edited(files["new"], tmp_path / "missing.jsonl", 3, lambda row: row.__setitem__("doc", None))
    code, err = _compare(capsys, files["base"], missing, "--cluster-by", "doc", "--fail-on", "worse")
    assert code == 2 and err[0].startswith(f"opik-metrics: error: cluster_by 'doc': item 'r2' of {missing} has no "
                                           "field 'doc'")


def _trials(tmp_path) -> Path:
    rows = [{"id": f"q{k}", "trial": t, "output": f"a b c {t}", "reference": f"a b c {k}"}
            for k in range(6) for t in range(2)]
    return _scored(tmp_path, "trials", rows, "trial", "reference")


def test_trials_of_one_id_with_different_references_are_refused_when_scored_and_when_compared(tmp_path, capsys):
    rows = [{"id": f"q{k}", "trial": t, "output": f"a b c {t}", "reference": f"a b c {k}" + (" z" * (k == 2) * t)}
            for k in range(6) for t in range(2)]
    source = tmp_path / "differ.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    capsys.readouterr()
    assert main(["score", "-i", str(source), "-o", str(tmp_path / "out.jsonl"), "-m", "bleu", "--keep", "trial",
                 "--no-progress"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"opik-metrics: error: id 'q2': trials 0 (line 5 of {source}) and 1 (line 6 of {source}) have different "
        "'reference'; the trials of an item are runs on one input, averaged as one item: give items with different "
        "inputs their own ids"]
    scored = _trials(tmp_path)
    edited = _edited(scored, tmp_path / "edited.jsonl", 6, lambda row: row.__setitem__("reference", "other"))
    with pytest.raises(RecordFileError, match=r"^.*edited.jsonl: id 'q2': trials 0 and 1 \(rows 5 and 6\) have "
                                              r"different 'reference'; the trials of an item are runs on one input"):
        from_records(str(edited))


def test_a_repeated_id_and_trial_is_refused(tmp_path):
    scored = _trials(tmp_path)
    lines = scored.read_text(encoding="utf-8").splitlines()
    copied = tmp_path / "copied.jsonl"
    copied.write_text("\n".join([*lines[:6], lines[5], *lines[6:]]) + "\n", encoding="utf-8")    # q2 trial 0 twice
    with pytest.raises(RecordFileError, match=r"copied.jsonl: id 'q2', trial 0 is on rows 5 and 5; each trial of "
                                              r"an item is one row"):
        from_records(str(copied))
    renumbered = _edited(scored, tmp_path / "renumbered.jsonl", 6,
                         lambda row: row.update(trial=0, index=40))               # q2: trial 0 twice
    with pytest.raises(RecordFileError, match=r"renumbered.jsonl: id 'q2', trial 0 is on rows 5 and 41"):
        from_records(str(renumbered))
