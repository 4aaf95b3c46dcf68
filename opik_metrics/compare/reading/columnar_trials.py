"""A Parquet record file with trials read in columns: the rows of each id merged in numpy into one
item (``trials.merge_trials``'s numbers, bit for bit) before any record is built, so 3n rows cost
about what n items do. Only the usual file takes this path: every score a finite float64, every
statistics row of one width of finite floats, no null in a kept column, each (id, trial) once,
the inputs equal across an id's trials and at most MAX_TRIALS rows an id (the merge adds rank by
rank); any other file, an empty one included, is left to the row reader (None), whose checks name
the row that is off.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from opik_metrics.compare.reading.records import ItemRecord, no_gc
from opik_metrics.compare.statistics.trials import ROUNDING_ONLY
from opik_metrics.streams.ids import TRIAL_COLUMN

MAX_TRIALS = 64     # rows of one id: more (a file whose ids barely vary) read faster row by row


def merged_items(path: str, id_field: str, keep: list[str], output_column: str, skip: set[str],
                 carriers: dict[str, list[str]], inputs: list[str]) -> list[ItemRecord] | None:
    """The file's items, trials merged as ``merge_trials`` merges the row reader's items, or None
    when the file is not the usual one (see the module). Arguments as ``sources.from_records``
    derives them from the file's metadata."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if TRIAL_COLUMN not in keep:
        return None
    schema = pq.read_schema(path)
    names = list(schema.names)
    score_names = [name for name in names if name not in skip]
    wanted = {"index", id_field, *keep, *carriers}
    if not score_names or not wanted <= set(names):
        return None
    types = {name: schema.field(name).type for name in names}
    if not (pa.types.is_integer(types["index"]) and pa.types.is_integer(types[TRIAL_COLUMN])
            and (pa.types.is_string(types[id_field]) or pa.types.is_integer(types[id_field]))
            and all(pa.types.is_float64(types[name]) for name in score_names)
            and all(pa.types.is_list(types[c]) and pa.types.is_float64(types[c].value_type) for c in carriers)):
        return None
    table = pq.read_table(path, columns=list(dict.fromkeys(["index", id_field, *keep, *carriers, *score_names])))
    if table.num_rows == 0 or any(table.column(name).null_count for name in table.column_names):
        return None
    positions = table.column("index").to_numpy()
    if len(positions) > 1 and not bool(np.all(np.diff(positions) > 0)):
        return None                         # rows not in the order `score` writes them
    scores = np.column_stack([table.column(name).to_numpy() for name in score_names])
    if not bool(np.isfinite(scores).all()) or any(_has_nan(table.column(c)) for c in keep):
        return None
    statistics = {}
    for column in carriers:
        rows = _statistics_matrix(table.column(column), pc)
        if rows is None:
            return None
        statistics[column] = rows
    codes = _codes(table.column(id_field), pc)
    if codes is None:
        return None
    groups = _Groups(codes)
    if int(groups.count.max()) > MAX_TRIALS or not _one_row_per_trial(groups, table.column(TRIAL_COLUMN).to_numpy()):
        return None
    for column in inputs:
        codes = _codes(table.column(column), pc)
        if codes is None or not _same_within(groups, codes):
            return None
    return _build(table, groups, id_field, keep, output_column, score_names, scores, carriers, statistics)


class _Groups:
    """The rows of each id: ``code`` of each row (ids numbered in order of first appearance), the
    rows in id order and file order within an id (``order``), each row's rank among its id's rows,
    and each id's row count and first row."""

    def __init__(self, code: np.ndarray) -> None:
        self.code = code
        self.order = np.argsort(code, kind="stable")
        self.count = np.bincount(code)
        starts = np.concatenate(([0], np.cumsum(self.count)[:-1]))
        self.first = self.order[starts]
        self.rank = np.empty_like(code)
        self.rank[self.order] = np.arange(len(code)) - starts[code[self.order]]

    def in_order_sums(self, values: np.ndarray) -> np.ndarray:
        """Each id's sum of ``values`` (one row per file row), added trial after trial in file
        order: what ``trials.ordered_sum`` gives for the same id's values."""
        total = np.zeros((len(self.count), *values.shape[1:]))
        for rank in range(int(self.count.max())):
            rows = np.flatnonzero(self.rank == rank)
            total[self.code[rows]] += values[rows]
        return total

    def as_single_rows(self, merged: np.ndarray, values: np.ndarray) -> np.ndarray:
        """``merged`` with an id of one row holding that row's ``values`` as they are (the merge
        leaves such an item alone: no sum, no division)."""
        single = self.first[self.count == 1]
        merged[self.code[single]] = values[single]
        return merged

    def largest_magnitude(self, values: np.ndarray) -> np.ndarray:
        out = np.zeros((len(self.count), *values.shape[1:]))
        np.maximum.at(out, self.code, np.abs(values))
        return out


def _codes(column: Any, pc: Any) -> np.ndarray | None:
    """Each row's value numbered in order of first appearance (equal values, equal numbers); None
    for a column Arrow cannot number (a nested type)."""
    import pyarrow as pa

    try:
        encoded = pc.dictionary_encode(column).combine_chunks()
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return None
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)


def _has_nan(column: Any) -> bool:
    """A float column holding a NaN (no label for a cluster: the row reader's check names it)."""
    import pyarrow as pa

    return pa.types.is_floating(column.type) and bool(np.isnan(column.to_numpy()).any())


def _statistics_matrix(column: Any, pc: Any) -> np.ndarray | None:
    """A list<double> column as a (rows, width) array when every row is as wide and finite, else None."""
    array = column.combine_chunks()
    widths = pc.list_value_length(array).to_numpy(zero_copy_only=False)
    flat = array.flatten()
    if flat.null_count or len(widths) == 0 or not bool(np.all(widths == widths[0])) or widths[0] == 0:
        return None
    values = flat.to_numpy().reshape(len(widths), int(widths[0]))
    return values if bool(np.isfinite(values).all()) else None


def _one_row_per_trial(groups: _Groups, trials: np.ndarray) -> bool:
    pairs = np.stack([groups.code, trials.astype(np.int64)], axis=1)
    return len(np.unique(pairs, axis=0)) == len(pairs)


def _same_within(groups: _Groups, codes: np.ndarray) -> bool:
    """Whether every row's value equals its id's first row's."""
    return bool(np.all(codes == codes[groups.first[groups.code]]))


def _build(table: Any, groups: _Groups, id_field: str, keep: list[str], output_column: str,
           score_names: list[str], scores: np.ndarray, carriers: dict[str, list[str]],
           statistics: dict[str, np.ndarray]) -> list[ItemRecord]:
    """One item per id: its first row's id, position and kept columns; the mean of its scores and
    their sample SD over its trials (``trials.trial_sd``'s rounding rule); its statistics summed."""
    count = groups.count
    means = groups.as_single_rows(groups.in_order_sums(scores) / count[:, None], scores)
    deviations = scores - means[groups.code]
    spread = np.sqrt(groups.in_order_sums(deviations * deviations) / np.maximum(count - 1, 1)[:, None])
    spread[spread <= ROUNDING_ONLY * groups.largest_magnitude(scores)] = 0.0
    summed = {column: groups.as_single_rows(groups.in_order_sums(rows), rows).tolist()
              for column, rows in statistics.items()}
    firsts = table.take(groups.first)
    ids = firsts.column(id_field).to_pylist()
    kept = {c: firsts.column(c).to_pylist() for c in keep}
    positions = firsts.column("index").to_pylist()
    mean_rows, spread_rows, trials = means.tolist(), spread.tolist(), count.tolist()
    items = []
    with no_gc():
        for g, value in enumerate(ids):
            row_kept = {c: kept[c][g] for c in keep}
            item = ItemRecord(key=str(value), position=positions[g], input={id_field: value, **row_kept},
                              output={"output": row_kept[output_column]} if output_column in row_kept else {},
                              trials=trials[g], scores=dict(zip(score_names, mean_rows[g])))
            if trials[g] > 1:
                item.trial_sd = dict(zip(score_names, spread_rows[g]))
            for column, names in carriers.items():
                for carrier in names:
                    item.metadata[carrier] = {"statistics": list(summed[column][g])}
            items.append(item)
    return items
