"""The columnar reader of Parquet record files with trials (issue 58) gives exactly what the row
reader and ``merge_trials`` give: every field of every item, floats compared by their bits, on
files that `score` wrote (1-4 trials an item, outputs drawn again each trial) and on edited files
(negative zeros, rounding-only spreads, integer ids); and any file off the usual one (NaN, a
null, a repeated (id, trial), a changed reference, rows out of order, a short statistics row)
goes to the row reader, whose checks and messages are what the user gets."""
from __future__ import annotations

import json
import random
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from opik_metrics.compare.reading import columnar_trials, sources
from opik_metrics.compare.reading.sources import RecordFileError, from_records
from opik_metrics.compare.statistics.trials import merge_trials, ordered_sum, trial_sd
from opik_metrics.metrics.bleu import BLEU
from opik_metrics.metrics.rouge import ROUGE
from opik_metrics.streams import FieldMap, score_file
from tests.corpus import realistic_pairs


def _bits(value):
    """Floats by their bits (0.0 and -0.0 differ; equal NaNs are equal), containers walked."""
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, dict):
        return {k: _bits(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_bits(v) for v in value]
    return value


def _fields(item):
    return {name: _bits(getattr(item, name)) for name in item.__dataclass_fields__}


def _row_reader(path, monkeypatch):
    """The file through the row reader, trials merged as the comparison merges them."""
    with monkeypatch.context() as m:
        m.setattr(sources, "merged_items", lambda *args: None)
        return merge_trials(from_records(path))


def _assert_same(path, monkeypatch):
    assert columnar_trials.merged_items(*_arguments(path)) is not None, "the file should take the columnar path"
    columnar, rows = from_records(path), _row_reader(path, monkeypatch)
    assert len(columnar.items) == len(rows.items)
    for ours, theirs in zip(columnar.items, rows.items):
        assert _fields(ours) == _fields(theirs)
    assert merge_trials(columnar).items == columnar.items       # already merged: the merge leaves it alone


class _Captured(Exception):
    pass


def _arguments(path):
    """What ``from_records`` hands the columnar reader for ``path`` (caught on the way in)."""
    def capture(*args):
        raise _Captured(args)

    original = sources.merged_items
    sources.merged_items = capture
    try:
        from_records(path)
    except _Captured as caught:
        return caught.args[0]
    finally:
        sources.merged_items = original
    raise AssertionError(f"{path} was not offered to the columnar reader")


def _scored(tmp_path, name, seed, trials_of, keep=("trial", "output", "doc")):
    """Items with 1-4 trials each (``trials_of(k)``), each trial's output drawn again, scored by
    ROUGE and BLEU into ``name``.parquet."""
    rng = random.Random(seed)
    outputs, references = realistic_pairs(40, seed=seed)
    lines = []
    for k in range(40):
        for trial in range(trials_of(k, rng)):
            words = outputs[k].split()
            if len(words) > 3 and rng.random() < 0.6:
                del words[rng.randrange(len(words))]
            lines.append({"id": f"item-{k}", "trial": trial, "doc": f"d{k % 7}", "output": " ".join(words),
                          "reference": references[k]})
    rng.shuffle(lines)                                          # trials of an item apart in the file
    source = tmp_path / f"{name}.input.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out = str(tmp_path / f"{name}.parquet")
    score_file(str(source), [ROUGE(track=False), BLEU(track=False)], output=out,
               fields=FieldMap(id_field="id", keep=keep), progress=False)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_scored_files_merge_exactly_as_the_row_reader_does(tmp_path, monkeypatch, seed):
    path = _scored(tmp_path, "run", seed, lambda k, rng: rng.choice([1, 2, 3, 3, 4]))
    _assert_same(path, monkeypatch)
    merged = from_records(path)
    assert sum(item.trials for item in merged.items) == pq.read_metadata(path).num_rows


def test_the_jsonl_file_of_the_same_run_reads_the_same(tmp_path, monkeypatch):
    parquet = _scored(tmp_path, "run", 9, lambda k, rng: 3)
    jsonl = str(tmp_path / "run.jsonl")
    score_file(str(tmp_path / "run.input.jsonl"), [ROUGE(track=False), BLEU(track=False)], output=jsonl,
               fields=FieldMap(id_field="id", keep=("trial", "output", "doc")), progress=False)
    ours, theirs = from_records(parquet).items, merge_trials(from_records(jsonl)).items
    assert [_fields(a) for a in ours] == [_fields(b) for b in theirs]


def _edited(path, out, edit, retyped=()):
    """``path``'s table with ``edit(columns)`` applied to its columns as Python lists, same metadata
    (the ``retyped`` columns take the type of their new values)."""
    table = pq.read_table(path)
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    edit(columns)
    arrays = [pa.array(values, type=None if name in retyped else table.schema.field(name).type)
              for name, values in columns.items()]
    pq.write_table(pa.Table.from_arrays(arrays, names=list(columns)).replace_schema_metadata(table.schema.metadata),
                   out)
    return str(out)


def test_negative_zeros_rounding_only_spreads_and_single_trials_keep_the_row_readers_bits(tmp_path, monkeypatch):
    path = _scored(tmp_path, "run", 3, lambda k, rng: 1 if k % 5 == 0 else 3)

    def edit(columns):
        ids = columns["id"]
        for row, key in enumerate(ids):
            k = int(key.split("-")[1])
            if k % 3 == 0:
                columns["rouge1_f1"][row] = -0.0            # a negative zero, summed or kept as it is
                columns["statistics.bleu"][row] = [-0.0] + columns["statistics.bleu"][row][1:]
            if k % 4 == 1:
                columns["bleu"][row] = 0.1 + (columns["trial"][row] % 2) * 1e-17   # spread of rounding alone
    _assert_same(_edited(path, tmp_path / "edited.parquet", edit), monkeypatch)


def test_integer_ids_read_the_same(tmp_path, monkeypatch):
    path = _scored(tmp_path, "run", 4, lambda k, rng: 2)
    _assert_same(_edited(path, tmp_path / "ints.parquet",
                         lambda c: c.update(id=[int(v.split("-")[1]) for v in c["id"]]), retyped=("id",)),
                 monkeypatch)
    first = from_records(str(tmp_path / "ints.parquet")).items[0]
    assert type(first.input["id"]) is int and first.key == str(first.input["id"])


def _first_row_of(columns, key, skip=0):
    return [row for row, value in enumerate(columns["id"]) if value == key][skip]


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["bleu"].__setitem__(_first_row_of(c, "item-2"), float("nan")), None),
    (lambda c: c["rouge1_f1"].__setitem__(_first_row_of(c, "item-2"), None), None),
    (lambda c: c["doc"].__setitem__(_first_row_of(c, "item-2"), None), None),
    (lambda c: c["statistics.bleu"].__setitem__(_first_row_of(c, "item-2"), [1.0, 2.0]), None),
    (lambda c: c["index"].reverse(), None),
    (lambda c: c["trial"].__setitem__(_first_row_of(c, "item-2", 1), c["trial"][_first_row_of(c, "item-2")]),
     "trial"),
    (lambda c: c["reference"].__setitem__(_first_row_of(c, "item-2", 1), "another reference"), "reference"),
])
def test_any_other_file_takes_the_row_reader_and_its_checks(tmp_path, monkeypatch, edit, message):
    path = _scored(tmp_path, "run", 5, lambda k, rng: 3, keep=("trial", "output", "doc", "reference"))
    edited = _edited(path, tmp_path / "odd.parquet", edit)
    assert columnar_trials.merged_items(*_arguments(edited)) is None
    if message is None:                                         # the row reader reads it: every item, merged
        assert len(merge_trials(from_records(edited)).items) == 40
        return
    with pytest.raises(RecordFileError, match=message):
        from_records(edited)


def test_a_total_that_overflows_adds_in_the_same_order_on_both_readers(tmp_path, monkeypatch):
    path = _scored(tmp_path, "run", 5, lambda k, rng: 3)

    def edit(columns):
        seen = 0
        for row, key in enumerate(columns["id"]):
            if key == "item-0":     # in file order: finite values whose row total overflows, and sum()'s rounding case
                width = len(columns["statistics.bleu"][row])
                columns["statistics.bleu"][row] = ([[1e308, 1e308], [-1e308, -1e308], [0.0, 0.0]][seen]
                                                   + [0.0] * (width - 3) + [[0.1], [0.2], [0.3]][seen])
                seen += 1
    edited = _edited(path, tmp_path / "overflow.parquet", edit)
    _assert_same(edited, monkeypatch)
    item = next(i for i in from_records(edited).items if i.key == "item-0")
    assert item.metadata["bleu"]["statistics"][:2] == [0.0, 0.0]
    assert item.metadata["bleu"]["statistics"][-1] == (0.1 + 0.2) + 0.3    # not sum()'s correctly rounded 0.6 (3.12+)


def test_an_empty_file_and_an_id_of_very_many_trials_take_the_row_reader(tmp_path, monkeypatch):
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"id": f"i{k}", "trial": t, "output": "a b", "reference": "a b c"}) + "\n"
                              for k in range(3) for t in range(2)), encoding="utf-8")
    rouge_only = str(tmp_path / "rouge.parquet")            # no statistics column
    score_file(str(source), [ROUGE(track=False)], output=rouge_only, fields=FieldMap(id_field="id", keep=("trial",)),
               progress=False)
    empty = _edited(rouge_only, tmp_path / "empty.parquet", lambda c: [values.clear() for values in c.values()])
    assert columnar_trials.merged_items(*_arguments(empty)) is None and from_records(empty).items == []
    many = _scored(tmp_path, "many", 2, lambda k, rng: columnar_trials.MAX_TRIALS + 1 if k == 0 else 2)
    assert columnar_trials.merged_items(*_arguments(many)) is None
    merged = merge_trials(from_records(many)).items
    assert next(i for i in merged if i.key == "item-0").trials == columnar_trials.MAX_TRIALS + 1


def test_a_file_without_trials_is_left_to_the_row_reader(tmp_path):
    path = _scored(tmp_path, "run", 6, lambda k, rng: 1, keep=("output",))
    assert columnar_trials.merged_items(*_arguments(path)) is None


def test_the_merge_adds_in_one_order_on_every_python():
    assert ordered_sum([0.1, 0.2, 0.3]) == (0.1 + 0.2) + 0.3 != 0.6          # not sum()'s compensated 0.6 (3.12+)
    assert trial_sd([0.1, 0.1 + 1e-17, 0.1], 0.1) == 0.0
    assert trial_sd([1.0, 2.0, 3.0], 2.0) == 1.0
