"""A streamed run gives, row for row, what the metrics give on the same items in memory
(``score_batch``, ``corpus_score``); it writes, resumes and refuses as documented."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from opik_metrics.metrics.bleu import BLEU
from opik_metrics.metrics.cider import CIDEr
from opik_metrics.metrics.rouge import ROUGE
from opik_metrics.streams import FieldMap, OutputError, read_rows, score_file
from tests.streams.records import csv_items, generate_items, write_csv, write_jsonl, write_parquet

ITEMS = generate_items(700, seed=11)


def _metrics():
    return [ROUGE(rouge_types=("rouge1", "rougeL", "rougeLsum"), use_stemmer=True, track=False), BLEU(track=False)]


def _expected(items, metrics):
    """Per item {score: value} and the corpus scores, from the metrics themselves in one batch."""
    outputs = [i["output"] for i in items]
    refs = [i["reference"] for i in items]
    rows = [dict() for _ in items]
    for metric in metrics:
        for k, results in enumerate(metric.score_batch(outputs, refs)):
            rows[k].update({r.name: r.value for r in results})
    corpus = {m.corpus_score(outputs, refs).name: m.corpus_score(outputs, refs).value
              for m in metrics if m.facts.own_corpus is not None}
    return rows, corpus


def _check(result_rows, aggregate, items, metrics):
    expected, corpus = _expected(items, metrics)
    assert [r["index"] for r in result_rows] == list(range(len(items)))
    for row, want in zip(result_rows, expected):
        assert {k: row[k] for k in want} == want
    for name, value in corpus.items():
        assert aggregate[name] == pytest.approx(value, abs=1e-12)
    for name in expected[0]:
        assert aggregate[name] == pytest.approx(sum(e[name] for e in expected) / len(expected), abs=1e-12)


@pytest.mark.parametrize("chunk_size", [1, 64, 5000])
def test_jsonl_rows_equal_the_metrics_in_memory(tmp_path, chunk_size):
    path = write_jsonl(tmp_path / "in.jsonl", ITEMS)
    result = score_file(str(path), _metrics(), chunk_size=chunk_size, progress=False)
    assert result.items == len(ITEMS) and result.unscored == 0
    _check(result.rows, result.aggregate, ITEMS, _metrics())


def test_parquet_in_parquet_out_equals_jsonl_out(tmp_path):
    path = write_parquet(tmp_path / "in.parquet", ITEMS)
    a = score_file(str(path), _metrics(), output=str(tmp_path / "out.parquet"), chunk_size=100, progress=False)
    b = score_file(str(path), _metrics(), output=str(tmp_path / "out.jsonl"), chunk_size=33, progress=False)
    rows_a, rows_b = list(read_rows(str(tmp_path / "out.parquet"))), list(read_rows(str(tmp_path / "out.jsonl")))
    assert rows_a == rows_b and a.aggregate == b.aggregate
    _check(rows_a, a.aggregate, ITEMS, _metrics())
    record = json.loads((tmp_path / "out.parquet.run.json").read_text())
    assert record["aggregate"] == a.aggregate and record["run"]["metrics"]["bleu"] == str(BLEU(track=False).signature)
    assert not (tmp_path / "out.parquet.parts").exists()


def test_csv_with_mapped_columns(tmp_path):
    path = write_csv(tmp_path / "in.csv", ITEMS)
    fields = FieldMap({"output": ("pred",), "reference": ("ref",)})
    result = score_file(str(path), _metrics(), fields=fields, chunk_size=50, progress=False)
    _check(result.rows, result.aggregate, csv_items(ITEMS), _metrics())


def test_several_columns_make_the_list_of_references(tmp_path):
    items = [{"out": "the cat sat", "r1": "the cat sat", "r2": "a dog ran"},
             {"out": "a dog ran far", "r1": "the cat", "r2": "a dog ran far"}]
    path = write_jsonl(tmp_path / "in.jsonl", items)
    fields = FieldMap({"output": ("out",), "reference": ("r1", "r2")})
    result = score_file(str(path), [BLEU(track=False)], fields=fields, progress=False)
    direct = BLEU(track=False).score_batch([i["out"] for i in items], [[i["r1"], i["r2"]] for i in items])
    assert [r["bleu"] for r in result.rows] == [d[0].value for d in direct]
    assert [r["bleu"] for r in result.rows] == [1.0, 1.0]


def test_bad_records_get_a_reason_and_the_run_goes_on(tmp_path):
    path = tmp_path / "in.jsonl"
    good = ITEMS[:3]
    lines = [json.dumps(good[0]), "not json", json.dumps({"output": 3, "reference": "x"}),
             json.dumps({"reference": "no output"}), json.dumps({"output": "x", "reference": []}),
             json.dumps(good[1]), json.dumps({"output": "x", "reference": ["a", None]}), json.dumps(good[2])]
    path.write_text("\n".join(lines) + "\n")
    result = score_file(str(path), _metrics(), output=str(tmp_path / "out.jsonl"), progress=False)
    rows = list(read_rows(str(tmp_path / "out.jsonl")))
    assert result.items == 8 and result.unscored == 5
    reasons = {r["index"]: r["reason"] for r in rows if r["bleu"] is None}
    assert reasons == {
        1: "line 2: not JSON (Expecting value at column 1)",
        2: "item 2, field 'output': expected a string, got int",
        3: "item 3, field 'output': column 'output' is missing from the record",
        4: "item 4, field 'reference': the list of references is empty",
        6: "item 6, field 'reference[1]': expected a string, got None",
    }
    expected, _ = _expected(good, _metrics())
    for row, want in zip([rows[0], rows[5], rows[7]], expected):
        assert {k: row[k] for k in want} == want
    assert result.counts["bleu"] == 3 and result.counts["corpus_bleu"] == 3


def test_degenerate_items_are_scored_with_their_reason(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", [{"output": "", "reference": "a b c"}])
    row = score_file(str(path), [BLEU(track=False)], progress=False).rows[0]
    assert row["bleu"] == 0.0 and "output has no tokens" in row["reason"]


def test_corpus_contexts_are_fitted_on_a_first_pass(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", ITEMS[:200])
    result = score_file(str(path), [CIDEr(track=False)], chunk_size=16, progress=False)
    direct = CIDEr(track=False).score_batch([i["output"] for i in ITEMS[:200]], [i["reference"] for i in ITEMS[:200]])
    assert [r["cider"] for r in result.rows] == pytest.approx([d[0].value for d in direct], abs=1e-12)


def test_a_complete_output_is_aggregated_again_not_rescored(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", ITEMS[:50])
    first = score_file(str(path), _metrics(), output=str(tmp_path / "o.parquet"), progress=False)
    again = score_file(str(path), _metrics(), output=str(tmp_path / "o.parquet"), progress=False)
    assert again.aggregate == first.aggregate and again.resumed_from == 50


def test_another_run_never_resumes_into_an_output(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", ITEMS[:20])
    out = str(tmp_path / "o.jsonl")
    score_file(str(path), _metrics(), output=out, progress=False)
    with pytest.raises(OutputError, match="different run .*metrics"):
        score_file(str(path), [BLEU(track=False)], output=out, progress=False)
    with pytest.raises(OutputError, match="different run .*fields"):
        score_file(str(path), _metrics(), output=out, progress=False, fields=FieldMap({"output": ("output",),
                                                                                       "image": ("img",)}))
    fresh = score_file(str(path), [BLEU(track=False)], output=out, progress=False, overwrite=True)
    assert fresh.items == 20
    (tmp_path / "mine.jsonl").write_text("precious\n")
    with pytest.raises(OutputError, match="was not written by opik-metrics"):
        score_file(str(path), _metrics(), output=str(tmp_path / "mine.jsonl"), progress=False)
    with pytest.raises(OutputError, match=r"name a \.jsonl or \.parquet"):
        score_file(str(path), _metrics(), output=str(tmp_path / "o.csv"), progress=False)


KILLED_RUN = textwrap.dedent("""
    import sys
    from opik_metrics.metrics.bleu import BLEU
    from opik_metrics.streams import score_file
    import opik_metrics.streams.run as run

    scored = [0]
    real = run.ChunkScorer.score
    def slow(self, chunk):
        scored[0] += 1
        if scored[0] == int(sys.argv[3]):
            print("ready", flush=True)
            import time; time.sleep(60)
        return real(self, chunk)
    run.ChunkScorer.score = slow
    score_file(sys.argv[1], [BLEU(track=False)], output=sys.argv[2], chunk_size=10, progress=False, flush_rows=20)
""")


def test_a_killed_run_resumes_with_nothing_lost_or_repeated(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", ITEMS[:300])
    out = tmp_path / "o.jsonl"
    script = tmp_path / "run.py"
    script.write_text(KILLED_RUN)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen([sys.executable, str(script), str(path), str(out), "17"], stdout=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "ready"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    kept = sorted((tmp_path / "o.jsonl.parts").glob("part-*.arrow"))
    assert not out.exists() and len(kept) == 8          # 16 chunks of 10 rows scored, written 20 at a time
    resumed = score_file(str(path), [BLEU(track=False)], output=str(out), chunk_size=10, progress=False)
    clean = score_file(str(path), [BLEU(track=False)], chunk_size=10, progress=False)
    assert list(read_rows(str(out))) == [{"index": r["index"], "bleu": r["bleu"], "reason": r["reason"],
                                          "statistics.bleu": r["statistics.bleu"]} for r in clean.rows]
    assert resumed.aggregate == clean.aggregate
    assert resumed.resumed_from == 160


def test_non_finite_and_missing_scores_are_counted_not_hidden(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", [{"output": "a b", "reference": "a b"}, {"output": "x"}])
    result = score_file(str(path), [BLEU(track=False)], progress=False)
    assert result.counts == {"bleu": 1, "corpus_bleu": 1} and result.unscored == 1
    assert all(math.isfinite(v) for v in result.aggregate.values())


def test_parts_are_json_lines_where_there_is_no_arrow(tmp_path):
    from opik_metrics.streams import RunOutput

    out = RunOutput(str(tmp_path / "o.jsonl"), {"run": 1}, columns=None, flush_rows=2)
    out.start()
    out.add([{"index": 0, "bleu": 0.5, "reason": None}, {"index": 1, "reason": "line 2: not JSON"}])
    assert [p.suffix for p in (tmp_path / "o.jsonl.parts").glob("part-*")] == [".jsonl"]
    assert list(out.kept_rows()) == [{"index": 0, "bleu": 0.5, "reason": None}, {"index": 1, "reason": "line 2: not JSON"}]
    assert out.done() == 2


def test_the_input_is_never_the_output(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", ITEMS[:5])
    for overwrite in (False, True):
        with pytest.raises(OutputError, match="is the input file"):
            score_file(str(path), [BLEU(track=False)], output=str(path), overwrite=overwrite, progress=False)
    assert path.read_text().count("\n") == 5
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(OutputError, match="is a folder"):
        score_file(str(path), [BLEU(track=False)], output=str(tmp_path / "dir.jsonl"), overwrite=True, progress=False)


def test_a_second_run_on_an_output_in_use_stops_with_a_clear_message(tmp_path):
    from opik_metrics.streams import RunOutput

    path = write_jsonl(tmp_path / "in.jsonl", ITEMS[:5])
    out = str(tmp_path / "o.jsonl")
    holder = RunOutput(out, {"run": "other"})
    try:
        for overwrite in (False, True):
            with pytest.raises(OutputError, match=r"another run \(pid \d+\) is writing"):
                score_file(str(path), [BLEU(track=False)], output=out, overwrite=overwrite, progress=False)
    finally:
        holder.close()
    assert score_file(str(path), [BLEU(track=False)], output=out, progress=False).items == 5
    assert not (tmp_path / "o.jsonl.lock").exists()


def test_parts_with_a_gap_or_an_overlap_resume_to_each_index_once(tmp_path):
    from opik_metrics.streams import RunOutput

    path = write_jsonl(tmp_path / "in.jsonl", ITEMS[:100])
    out = str(tmp_path / "o.jsonl")
    clean = score_file(str(path), [BLEU(track=False)], chunk_size=10, progress=False)
    with pytest.raises(KeyboardInterrupt):          # keep parts of 20 rows, then stop
        import opik_metrics.streams.run as run
        real = run.ChunkScorer.score

        def stop_at_70(self, chunk):
            if chunk.first == 70:
                raise KeyboardInterrupt
            return real(self, chunk)
        run.ChunkScorer.score = stop_at_70
        try:
            score_file(str(path), [BLEU(track=False)], output=out, chunk_size=10, progress=False, flush_rows=20)
        finally:
            run.ChunkScorer.score = real
    parts = sorted((tmp_path / "o.jsonl.parts").glob("part-*"))
    assert [p.name.split(".")[0] for p in parts] == ["part-000000000000-000000000020", "part-000000000020-000000000040",
                                                      "part-000000000040-000000000060", "part-000000000060-000000000070"]
    parts[1].unlink()                                 # a gap at 20..40 (a kill while clearing up)
    (tmp_path / "o.jsonl.parts" / "part-000000000010-000000000020.arrow").write_bytes(parts[0].read_bytes())
    resumed = score_file(str(path), [BLEU(track=False)], output=out, chunk_size=10, progress=False)
    assert resumed.resumed_from == 20
    assert [r["index"] for r in read_rows(out)] == list(range(100))
    assert [r["bleu"] for r in read_rows(out)] == [r["bleu"] for r in clean.rows]
    assert resumed.aggregate == clean.aggregate


def test_an_opik_metric_that_states_no_facts_is_scored_with_the_facts_opik_gives_it(tmp_path):
    """Opik's own metrics carry no ``facts``: a run scores them under their name, higher is better."""
    from opik.evaluation.metrics import IsJson

    items = [{"output": '{"a": 1}', "reference": "x"}, {"output": "not json", "reference": "x"}]
    result = score_file(str(write_jsonl(tmp_path / "in.jsonl", items)), [IsJson(track=False)],
                        output=str(tmp_path / "o.parquet"), progress=False)
    assert [r["is_json_metric"] for r in read_rows(str(tmp_path / "o.parquet"))] == [1.0, 0.0]
    assert result.aggregate == {"is_json_metric": 0.5}
