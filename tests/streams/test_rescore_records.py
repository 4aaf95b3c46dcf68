"""Metrics added to a record file: the file then holds exactly what one run with every metric
writes (rows, metadata, run record), in JSON Lines and Parquet; the input is found from the run
record and refused if it changed; rows pair by id; a metric there is refused unless replaced;
an interrupted add resumes, scoring each record once; a comparison reads the new scores."""
from __future__ import annotations

import json
import os
import shutil

import pytest
import sacrebleu
from opik.evaluation.metrics import base_metric, score_result

from opik_metrics import BLEU, CIDEr, METEOR, ROUGE
from opik_metrics.cli import main
from opik_metrics.compare.reading.sources import from_records
from opik_metrics.streams import FieldMap, read_metadata, read_rows, score_file
from opik_metrics.streams import rescore as rescoring
from opik_metrics.streams.rescore import RecordsError, rescore_records
from tests.experiments.test_rescore import CountingBLEU
from tests.streams.records import generate_items

N = 120


def _input(tmp_path, n=N, seed=5, name="in.jsonl"):
    items = generate_items(n, seed=seed)
    path = tmp_path / name
    path.write_text("".join(json.dumps({"id": f"r{k}", **item, "rating": k % 4}) + "\n"
                            for k, item in enumerate(items)), encoding="utf-8")
    return path, items


def _scored(path, output, metrics, **kw):
    return score_file(str(path), metrics, output=str(output), fields=FieldMap(keep=("rating",)), progress=False,
                      chunk_size=32, **kw)


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_added_metrics_equal_one_run_with_every_metric(tmp_path, suffix):
    source, items = _input(tmp_path)
    _scored(source, tmp_path / f"first{suffix}", [ROUGE()])
    _scored(source, tmp_path / f"whole{suffix}", [ROUGE(), BLEU(), CIDEr()])
    added = rescore_records(tmp_path / f"first{suffix}", [BLEU(), CIDEr()], progress=False, chunk_size=32)

    assert list(read_rows(str(tmp_path / f"first{suffix}"))) == list(read_rows(str(tmp_path / f"whole{suffix}")))
    first, whole = read_metadata(str(tmp_path / f"first{suffix}")), read_metadata(str(tmp_path / f"whole{suffix}"))
    assert first["metrics"] == whole["metrics"] and first["signatures"] == whole["signatures"]
    assert first["rescores"][0]["metrics"] == ["bleu", "cider"] and first["rescores"][0]["replaced"] == []
    records = [json.loads((tmp_path / f"{name}{suffix}.run.json").read_text()) for name in ("first", "whole")]
    assert records[0]["aggregate"] == records[1]["aggregate"] and records[0]["run"] == records[1]["run"]
    outputs = [it["output"] for it in items]
    refs = [it["reference"] if isinstance(it["reference"], list) else [it["reference"]] for it in items]
    streams = [[r[k] if k < len(r) else None for r in refs] for k in range(max(map(len, refs)))]
    assert added.aggregate["corpus_bleu"] == pytest.approx(sacrebleu.corpus_bleu(outputs, streams).score / 100)
    assert added.items == N and added.metrics == ["bleu", "cider"] and added.input == str(source)
    assert sorted(os.listdir(tmp_path)) == sorted(["in.jsonl", *(f"{n}{suffix}{x}" for n in ("first", "whole")
                                                                  for x in ("", ".run.json"))])


def test_a_comparison_reads_the_added_scores(tmp_path):
    source, items = _input(tmp_path)
    _scored(source, tmp_path / "a.parquet", [ROUGE()])
    rescore_records(tmp_path / "a.parquet", [BLEU()], progress=False)
    records = from_records(str(tmp_path / "a.parquet"))
    assert "bleu" in records.score_names() and records.corpus("corpus_bleu") is not None
    assert [it.scores["bleu"] for it in records.items] == pytest.approx(
        [r[0].value for r in BLEU().score_batch([it["output"] for it in items], [it["reference"] for it in items])])


def test_a_metric_there_is_refused_unless_replaced(tmp_path):
    source, items = _input(tmp_path, n=30)
    _scored(source, tmp_path / "a.jsonl", [ROUGE(), BLEU()])
    before = (tmp_path / "a.jsonl").read_bytes()
    with pytest.raises(RecordsError, match="metric 'bleu' is already there; pass --replace"):
        rescore_records(tmp_path / "a.jsonl", [BLEU()], progress=False)
    assert (tmp_path / "a.jsonl").read_bytes() == before
    rescore_records(tmp_path / "a.jsonl", [BLEU(tokenize="char")], replace=True, progress=False)
    _scored(source, tmp_path / "b.jsonl", [ROUGE(), BLEU(tokenize="char")])
    assert list(read_rows(str(tmp_path / "a.jsonl"))) == list(read_rows(str(tmp_path / "b.jsonl")))
    assert read_metadata(str(tmp_path / "a.jsonl"))["rescores"][0]["replaced"] == ["bleu"]
    with pytest.raises(RecordsError, match="gives 'rouge1_f1', which metric 'rouge' already wrote"):
        rescore_records(tmp_path / "a.jsonl", [BLEU(name="rouge1_f1")], progress=False)


def test_the_input_is_found_checked_and_paired_by_id(tmp_path):
    source, _ = _input(tmp_path, n=20)
    _scored(source, tmp_path / "a.parquet", [ROUGE()])
    os.utime(source, ns=(1, 1))                         # the input touched since it was scored
    with pytest.raises(RecordsError, match="changed since .* pass --input"):
        rescore_records(tmp_path / "a.parquet", [BLEU()], progress=False)
    other, _ = _input(tmp_path, n=20, seed=9, name="other.jsonl")
    lines = other.read_text().splitlines()
    other.write_text("\n".join(lines[1:] + lines[:1]) + "\n")      # the same ids, in another order
    with pytest.raises(RecordsError, match="row 0 does not pair with its record .id 'r0' there, 'r1' in"):
        rescore_records(tmp_path / "a.parquet", [BLEU()], input_path=other, progress=False)
    shorter, _ = _input(tmp_path, n=19, name="shorter.jsonl")
    with pytest.raises(RecordsError, match="has more rows than .*shorter.jsonl has records"):
        rescore_records(tmp_path / "a.parquet", [BLEU()], input_path=shorter, progress=False)
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.copy(tmp_path / "a.parquet", moved / "a.parquet")        # without its run record
    with pytest.raises(RecordsError, match="keeps no texts and no record of its input .* --input"):
        rescore_records(moved / "a.parquet", [BLEU()], progress=False)
    added = rescore_records(moved / "a.parquet", [BLEU()], input_path=source, progress=False)
    assert added.items == 20 and not (moved / "a.parquet.run.json").exists()
    (tmp_path / "plain.jsonl").write_text('{"index": 0}\n')
    with pytest.raises(RecordsError, match="has no opik-metrics metadata"):
        rescore_records(tmp_path / "plain.jsonl", [BLEU()], input_path=source, progress=False)


def test_an_interrupted_add_resumes_scoring_each_record_once(tmp_path):
    source, items = _input(tmp_path, n=100)
    _scored(source, tmp_path / "a.parquet", [ROUGE()])
    before = (tmp_path / "a.parquet").read_bytes()
    with pytest.raises(KeyboardInterrupt):
        rescore_records(tmp_path / "a.parquet", [CountingBLEU(stop_at=3)], chunk_size=20, progress=False)
    assert (tmp_path / "a.parquet").read_bytes() == before            # the file is replaced only at the end
    again = CountingBLEU()
    added = rescore_records(tmp_path / "a.parquet", [again], chunk_size=20, progress=False)
    assert added.resumed_from == 40 and again.scored == [it["output"] for it in items[40:]]
    _scored(source, tmp_path / "b.parquet", [ROUGE(), BLEU()])
    assert list(read_rows(str(tmp_path / "a.parquet"))) == list(read_rows(str(tmp_path / "b.parquet")))


def test_an_add_stopped_after_replacing_the_file_finishes(tmp_path, monkeypatch):
    source, _ = _input(tmp_path, n=10)
    _scored(source, tmp_path / "a.jsonl", [ROUGE()])

    def killed(side):
        raise KeyboardInterrupt

    monkeypatch.setattr(rescoring, "_remove_side_file", killed)
    with pytest.raises(KeyboardInterrupt):
        rescore_records(tmp_path / "a.jsonl", [METEOR()], progress=False)
    monkeypatch.undo()
    finished = rescore_records(tmp_path / "a.jsonl", [METEOR()], progress=False)   # not refused: the same add
    assert finished.replaced == []                                # it replaced nothing the file had before it
    (entry,) = read_metadata(str(tmp_path / "a.jsonl"))["rescores"]     # one add, one history entry
    assert entry["metrics"] == ["meteor"] and entry["replaced"] == []
    _scored(source, tmp_path / "b.jsonl", [ROUGE(), METEOR()])
    assert list(read_rows(str(tmp_path / "a.jsonl"))) == list(read_rows(str(tmp_path / "b.jsonl")))
    assert not any(".adding-" in name for name in os.listdir(tmp_path))


def test_the_command_adds_metrics_to_a_record_file(tmp_path, capsys):
    source, items = _input(tmp_path, n=25)
    _scored(source, tmp_path / "a.parquet", [ROUGE()])
    args = ["experiments", "rescore", str(tmp_path / "a.parquet"), "--no-progress"]
    assert main([*args, "-m", "meteor", "-m", "bleu", "--bleu-tokenize", "char", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    outputs, refs = [it["output"] for it in items], [it["reference"] for it in items]
    want = [r[0].value for r in METEOR().score_batch(outputs, refs)]
    assert shown["scores"]["meteor"] == pytest.approx(sum(want) / len(want))
    assert shown["experiment_scores"]["corpus_meteor"] == pytest.approx(METEOR().corpus_score(outputs, refs).value)
    assert "tok:char" in shown["signatures"]["bleu"] and shown["items"] == 25 and "rouge1_f1" not in shown["scores"]
    assert main([*args, "-m", "meteor"]) == 2
    err = capsys.readouterr().err
    assert "metric 'meteor' is already there" in err and len(err.strip().splitlines()) == 1
    assert main(["experiments", "rescore", "some-experiment", "--input", str(source), "-m", "bleu",
                 "--store", str(tmp_path / "s.sqlite")]) == 2
    assert "--input and --input-format go with a record file" in capsys.readouterr().err


class Picky(base_metric.BaseMetric):
    """An Opik metric of the user's (no signature) that fails on an empty output with ``message``."""

    def __init__(self, message="bad", value=1.0, name="picky"):
        super().__init__(name=name, track=False)
        self.message, self.value = message, value

    def score(self, output, reference=None, **ignored):
        if not output:
            raise ValueError(self.message)
        return score_result.ScoreResult(name=self.name, value=self.value)


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_replaced_metrics_reason_goes_whole_even_with_a_semicolon(tmp_path):
    source = _write(tmp_path / "in.jsonl", [{"id": "a", "output": "", "reference": "x"}])
    score_file(str(source), [Picky("bad output; the checkpoint is damaged"), ROUGE()],
               output=str(tmp_path / "a.jsonl"), progress=False)
    rescore_records(tmp_path / "a.jsonl", [Picky("fixed")], replace=True, progress=False)
    reason = [r["reason"] for r in read_rows(str(tmp_path / "a.jsonl"))][0]
    assert "damaged" not in reason and reason.endswith("picky: ValueError: fixed")
    assert reason.startswith("rouge1_precision: output has no tokens")          # ROUGE's own reason stays


def test_another_input_is_refused_when_the_file_has_no_ids(tmp_path):
    source = _write(tmp_path / "in.jsonl", [{"output": "the cat", "reference": "the cat sat"},
                                             {"output": "dog", "reference": "a dog"}])
    other = _write(tmp_path / "other.jsonl", [{"output": "zzz", "reference": "qqq"},
                                               {"output": "www", "reference": "vvv"}])
    score_file(str(source), [ROUGE()], output=str(tmp_path / "a.jsonl"), fields=FieldMap(id_field=""),
               progress=False)
    with pytest.raises(RecordsError, match="has no id column, so its rows cannot be checked against"):
        rescore_records(tmp_path / "a.jsonl", [BLEU()], input_path=other, progress=False)
    rescore_records(tmp_path / "a.jsonl", [BLEU()], input_path=source, progress=False)   # its own input: taken
    os.utime(source, ns=(1, 1))
    with pytest.raises(RecordsError, match="changed since .* has no id column to check them by"):
        rescore_records(tmp_path / "a.jsonl", [CIDEr()], input_path=source, progress=False)


def test_an_input_read_with_input_format_is_read_so_again(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "data.txt", [{"id": "a", "output": "the cat", "reference": "the cat sat"}])
    assert main(["score", "--input", "data.txt", "--input-format", "jsonl", "--output", "a.jsonl", "-m", "rouge",
                 "--no-progress"]) == 0
    assert main(["experiments", "rescore", "a.jsonl", "-m", "bleu", "--no-progress"]) == 0
    assert main(["experiments", "rescore", "gone.jsonl", "--input", "data.txt", "-m", "bleu"]) == 2
    assert "gone.jsonl: no such record file" in capsys.readouterr().err


def test_a_metric_without_a_signature_never_resumes_another_ones_rows(tmp_path):
    source, _ = _input(tmp_path, n=30)
    _scored(source, tmp_path / "a.jsonl", [ROUGE()])

    class Stopping(Picky):
        def score(self, output, reference=None, **ignored):
            self.calls = getattr(self, "calls", 0) + 1
            if self.calls > 20:
                raise KeyboardInterrupt
            return super().score(output, reference)

    with pytest.raises(KeyboardInterrupt):
        rescore_records(tmp_path / "a.jsonl", [Stopping(value=1.0)], chunk_size=10, progress=False)
    added = rescore_records(tmp_path / "a.jsonl", [Picky(value=2.0)], chunk_size=10, progress=False)
    assert added.resumed_from == 0
    assert {r.get("picky") for r in read_rows(str(tmp_path / "a.jsonl"))} <= {2.0, None}
