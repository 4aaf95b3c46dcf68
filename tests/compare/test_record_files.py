"""Comparisons read from the record files ``score --input ... --output`` writes: rows pair up by
id whatever their order, ids on one side only are counted and named, corpus BLEU is recomputed
from the rows' statistics (its paired p-value is sacrebleu's paired bootstrap on the same
outputs), and the comparison equals the one of the same outputs run into the local store."""
from __future__ import annotations

import json
import random

import pytest
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.significance import PairedTest

from opik_metrics.compare.analysis import CompareSettings, compare_experiments, unpaired
from opik_metrics.compare.reading.sources import RecordFileError, from_records, is_record_file, load_experiments
from opik_metrics.experiments.store import ExperimentStore
from opik_metrics.metrics.bleu import BLEU
from opik_metrics.metrics.rouge import ROUGE
from opik_metrics.streams import FieldMap, score_file
from tests.compare.systems import store_with
from tests.compare.test_compare_oracle import _systems


def _records(tmp_path, name, refs, outputs, order=None, fields=None, metrics=None):
    """``outputs`` scored into the record file ``name`` (ids ``line-N``), records in ``order``."""
    order = list(range(len(refs))) if order is None else order
    path = tmp_path / f"{name}.input.jsonl"
    path.write_text("".join(json.dumps({"id": f"line-{k + 1}", "output": outputs[k], "reference": refs[k]}) + "\n"
                            for k in order), encoding="utf-8")
    out = tmp_path / name
    score_file(str(path), metrics or [ROUGE(track=False), BLEU(track=False)], output=str(out),
               fields=fields or FieldMap(keep=("output",)), progress=False)
    return str(out)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_corpus_bleu_from_two_record_files_is_sacrebleus_paired_bootstrap(tmp_path, monkeypatch, seed):
    refs, systems = _systems(seed)
    shuffled = list(range(len(refs)))
    random.Random(seed).shuffle(shuffled)                # the new run's records in another order: paired by id
    base = _records(tmp_path, "base.jsonl", refs, systems["baseline"])
    new = _records(tmp_path, "new.parquet", refs, systems["system"], order=shuffled)
    result = compare_experiments([from_records(base), from_records(new)], CompareSettings(resamples=1000, seed=12345)).to_dict()

    monkeypatch.setenv("SACREBLEU_SEED", "12345")
    test = PairedTest(list(systems.items()), {"BLEU": SacreBLEU()}, [refs], test_type="bs", n_samples=1000)
    _, sacre = test()
    baseline, system = sacre["BLEU"]
    entry = result["pairs"][0]["metrics"]["corpus_bleu"]
    assert entry["n"] == len(refs)
    assert entry["baseline"] == pytest.approx(baseline.score / 100, abs=1e-12)
    assert entry["system"] == pytest.approx(system.score / 100, abs=1e-12)
    assert entry["p_value"] == pytest.approx(system.p_value, abs=1e-12)
    # one run's own interval resamples its items in its file's order: the baseline's is sacrebleu's order
    scores = result["scores"]["corpus_bleu"][base]
    assert (scores["high"] - scores["low"]) / 2 == pytest.approx(baseline.ci / 100, abs=2e-7)


def test_rows_pair_by_id_and_one_sided_ids_are_counted_and_named(tmp_path):
    refs, systems = _systems(4, n=40)
    order = list(range(40))
    random.Random(1).shuffle(order)
    new_order = [k for k in order if k not in (3, 17)]               # two records the new run lacks
    base = _records(tmp_path, "base.jsonl", refs[:38], systems["baseline"][:38])   # two the baseline lacks
    new = _records(tmp_path, "new.jsonl", refs, systems["system"], order=new_order)
    runs = [from_records(base), from_records(new)]
    assert unpaired(runs) is None
    result = compare_experiments(runs, CompareSettings(resamples=200, seed=3)).to_dict()
    pair = result["pairs"][0]
    shared = [k for k in range(38) if k not in (3, 17)]
    assert pair["shared_items"] == len(shared) == 36
    bleu = pair["metrics"]["corpus_bleu"]
    assert bleu["baseline"] == pytest.approx(
        SacreBLEU().corpus_score([systems["baseline"][k] for k in shared], [[refs[k] for k in shared]]).score / 100,
        abs=1e-12)
    assert bleu["system"] == pytest.approx(
        SacreBLEU().corpus_score([systems["system"][k] for k in shared], [[refs[k] for k in shared]]).score / 100,
        abs=1e-12)
    differences = pair["metrics"]["bleu"]["differences"]                 # in the baseline's order, item by item
    by_key = {item.key: item.scores["bleu"] for item in runs[1].items}
    assert differences == [by_key[f"line-{k + 1}"] - runs[0].items[k].scores["bleu"] for k in shared]
    assert f"2 item(s) of {base} are not in {new}, so they are in no paired test of the two: line-4, line-18" \
        in result["notes"]
    assert f"2 item(s) of {new} are not in {base}, so they are in no paired test of the two: line-39, line-40" \
        in result["notes"]


def test_many_one_sided_ids_are_named_up_to_ten(tmp_path):
    refs, systems = _systems(6, n=30)
    base = _records(tmp_path, "base.jsonl", refs, systems["baseline"])
    new = _records(tmp_path, "new.jsonl", refs[:5], systems["system"][:5])
    result = compare_experiments([from_records(base), from_records(new)], CompareSettings(resamples=50)).to_dict()
    note = next(n for n in result["notes"] if n.startswith(f"25 item(s) of {base}"))
    assert note.endswith("line-6, line-7, line-8, line-9, line-10, line-11, line-12, line-13, line-14, line-15 "
                         "and 15 more")


def test_files_with_no_id_in_common_are_refused_as_the_store_is(tmp_path):
    refs, systems = _systems(2, n=10)
    base = _records(tmp_path, "base.jsonl", refs, systems["baseline"])
    path = tmp_path / "other.input.jsonl"
    path.write_text("".join(json.dumps({"id": f"x{k}", "output": o, "reference": r}) + "\n"
                            for k, (o, r) in enumerate(zip(systems["system"], refs))))
    score_file(str(path), [BLEU(track=False)], output=str(tmp_path / "other.jsonl"), progress=False)
    reason = unpaired([from_records(base), from_records(str(tmp_path / "other.jsonl"))])
    assert reason is not None and "have no item in common" in reason


def test_the_same_outputs_compare_alike_from_record_files_and_from_the_store(tmp_path, monkeypatch):
    refs, systems = _systems(3, n=50)
    systems["system"] = [*systems["system"][:7], "", *systems["system"][8:]]      # a degenerate item too
    monkeypatch.chdir(tmp_path)
    names = {"baseline": "base.jsonl", "system": "new.parquet"}
    files = [_records(tmp_path, names[s], refs, systems[s], metrics=[ROUGE(), BLEU()]) for s in systems]
    files = [names[s] for s in systems]                   # relative: the names the store's experiments get too
    store = store_with(tmp_path / "store.sqlite", refs, {names[s]: systems[s] for s in systems})
    with ExperimentStore(store) as db:
        stored = load_experiments(files, store=db)
    settings = CompareSettings(resamples=300, seed=9)
    ours = compare_experiments([from_records(f) for f in files], settings, created_at="t").to_dict()
    theirs = compare_experiments(stored, settings, created_at="t").to_dict()
    assert ours["metrics"] == theirs["metrics"]                  # names, kinds, directions, signatures
    # the same values, intervals and counts; a record file has no recorded experiment score to show beside them
    assert ours["scores"] == {name: {run: {**entry, **({"recorded": None} if "recorded" in entry else {})}
                                     for run, entry in by_run.items()} for name, by_run in theirs["scores"].items()}
    for a, b in zip(ours["pairs"], theirs["pairs"]):
        assert a["shared_items"] == b["shared_items"] == 50
        for name, entry in a["metrics"].items():
            other = b["metrics"][name]
            assert {k: v for k, v in entry.items() if k != "largest_differences"} == \
                   {k: v for k, v in other.items() if k != "largest_differences"}
            assert [(d["position"], d["delta"], d["system_output"]) for d in entry["largest_differences"]] == \
                   [(d["position"], d["delta"], d["system_output"]) for d in other["largest_differences"]]
    assert ours["notes"] == theirs["notes"]


def test_unscored_records_are_failed_items_with_their_reason(tmp_path):
    path = tmp_path / "in.jsonl"
    rows = [{"id": f"r{k}", "output": "the cat sat on the mat", "reference": "the cat sat on a mat"} for k in range(6)]
    rows[2] = {"id": "r2", "output": "a dog"}                          # no reference: no score
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    score_file(str(path), [BLEU(track=False)], output=str(tmp_path / "a.jsonl"), progress=False)
    run = from_records(str(tmp_path / "a.jsonl"))
    failed = run.failed_items
    assert [item.key for item in failed] == ["r2"] and "column 'reference' is missing" in failed[0].reason
    assert run.items[0].metadata["bleu"]["statistics"] and run.items[0].input == {"id": "r0"}


def test_files_that_cannot_be_compared_say_why(tmp_path):
    refs, systems = _systems(1, n=8)
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"output": o, "reference": r}) + "\n" for o, r in zip(systems["system"], refs)))
    score_file(str(path), [BLEU(track=False)], output=str(tmp_path / "no_ids.jsonl"), progress=False)
    with pytest.raises(RecordFileError, match="no_ids.jsonl has no record ids.*--id-field COLUMN"):
        from_records(str(tmp_path / "no_ids.jsonl"))
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"index": 0, "id": "a", "bleu": 0.5, "reason": null}\n')
    with pytest.raises(RecordFileError, match="plain.jsonl has no opik-metrics metadata"):
        from_records(str(plain))
    assert is_record_file(str(plain)) and not is_record_file(str(tmp_path / "missing.jsonl"))
    assert not is_record_file("my-experiment")


def test_an_unknown_corpus_formula_in_a_files_metadata_is_refused_unloaded(tmp_path):
    from opik_metrics.core import UnknownFormula

    refs, systems = _systems(1, n=8)
    out = _records(tmp_path, "a.jsonl", refs, systems["baseline"], metrics=[BLEU(track=False)])
    lines = open(out, encoding="utf-8").read().splitlines()
    head = json.loads(lines[0])
    head["opik_metrics.records"]["metrics"]["bleu"]["corpus"]["formula"] = "os:system"
    open(out, "w", encoding="utf-8").write("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    with pytest.raises(UnknownFormula, match="'os:system'"):
        from_records(out)


def test_a_record_file_with_an_id_twice_is_refused_and_an_unreadable_record_is_a_failed_item(tmp_path):
    path = tmp_path / "in.jsonl"
    good = [{"id": f"r{k}", "output": "a b c d", "reference": "a b c e"} for k in range(4)]
    path.write_text(json.dumps(good[0]) + "\n{broken\n" + "".join(json.dumps(g) + "\n" for g in good[1:]))
    out = tmp_path / "a.jsonl"
    score_file(str(path), [BLEU(track=False)], output=str(out), progress=False)
    run = from_records(str(out))
    assert [item.key for item in run.items] == ["r0", "(no id: record 2)", "r1", "r2", "r3"]
    assert run.items[1].failed and run.items[1].reason.startswith("line 2: not JSON")
    lines = out.read_text(encoding="utf-8").splitlines()
    edited = [lines[0], *lines[1:], lines[-1].replace('"index": 4', '"index": 5')]    # r3 twice
    out.write_text("\n".join(edited) + "\n", encoding="utf-8")
    with pytest.raises(RecordFileError, match="a.jsonl: id 'r3' is on rows 5 and 6"):
        from_records(str(out))
