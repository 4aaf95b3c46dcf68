"""Trials and clusters: the unit a comparison resamples is the item, or the cluster of items, never
the row. Opik's ``trial_count`` stores one row per run of an item and a record file may hold several
rows under one id; ``merge_trials`` makes each item one record (its mean score over its trials, its
statistics summed over them, its spread across them kept), so that n items run 3 times count as n,
not 3n. ``assign_clusters`` labels items with a field (a document id): the bootstrap then draws
whole clusters. With one trial per item and no clusters both leave an experiment as it was."""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Iterable, Sequence

from opik_metrics.compare.reading.records import ExperimentRecords, ItemRecord, no_gc
from opik_metrics.core.numbers import is_number


def merge_trials(experiment: ExperimentRecords) -> ExperimentRecords:
    """``experiment`` with the rows that share an item key merged into one item each (see the module)."""
    groups: dict[str, list[ItemRecord]] = {}
    for item in experiment.items:
        groups.setdefault(item.key, []).append(item)
    if all(len(rows) == 1 for rows in groups.values()):
        return experiment
    with no_gc():
        return replace(experiment, items=[_merged(rows) for rows in groups.values()])


def _merged(rows: list[ItemRecord]) -> ItemRecord:
    if len(rows) == 1:
        return rows[0]
    live = [row for row in rows if not row.failed]
    first = min(rows, key=lambda row: row.position)
    if not live:
        return replace(first, trials=len(rows), reason=f"all {len(rows)} trials failed; the first: {first.reason}")
    base = min(live, key=lambda row: row.position)
    item = ItemRecord(key=base.key, position=first.position, input=base.input, output=base.output,
                      trials=len(live), cluster=base.cluster)
    names = dict.fromkeys(base.scores)
    for row in live:
        names.update(dict.fromkeys(row.scores))
        if row.non_finite or row.score_failures:
            names.update(dict.fromkeys(row.non_finite))
            names.update(dict.fromkeys(row.score_failures))
    odd_rows = [row for row in live if row.non_finite]
    every = [row.scores for row in live]
    for name in names:
        values = [scores[name] for scores in every if name in scores]
        odd = next((row.non_finite[name] for row in odd_rows if name in row.non_finite), None) if odd_rows else None
        if odd is not None:                # a trial without a finite value: the item's mean is not finite either
            item.non_finite[name] = odd
        elif values:
            mean = item.scores[name] = ordered_sum(values) / len(values)
            if len(values) > 1:            # the sample SD, in plain floats (statistics.stdev's fractions: 40x slower)
                item.trial_sd[name] = trial_sd(values, mean)
        else:
            item.score_failures[name] = next(row.score_failures[name] for row in live if name in row.score_failures)
    item.metadata = {name: _summed_statistics(name, base, live) for name in base.metadata}
    return item


def _summed_statistics(name: str, base: ItemRecord, live: list[ItemRecord]) -> dict[str, Any]:
    """The first trial's metadata of score ``name``, with its statistics summed over every trial (a
    corpus score counts each trial's counts); without them when a trial records none. A trial's row
    that is not a list of numbers as long as the others' is kept as the item's instead, so that the
    comparison refuses it naming the item (``analysis._statistics_rows``), never left out unsaid."""
    meta = dict(base.metadata.get(name) or {})
    found = [(row.metadata.get(name) or {}).get("statistics") for row in live]
    meta.pop("statistics", None)
    if any(row is None for row in found):
        return meta
    widths = [len(row) for row in found if isinstance(row, list)]
    if len(widths) == len(found) and len(set(widths)) == 1 and _plain_floats(found):
        meta["statistics"] = [ordered_sum(column) for column in zip(*found)]     # the usual case, checked at once
        return meta
    usual = max(widths, key=widths.count, default=0)         # the others' width: a shorter row is the damaged one
    damaged = next((row for row in found if not isinstance(row, list) or len(row) != usual
                    or not all(is_number(v) for v in row)), None)
    meta["statistics"] = damaged if damaged is not None else [_in_order(column) for column in zip(*found)]
    return meta


def _in_order(column: tuple) -> Any:
    """A statistic summed over the trials: floats in ``ordered_sum``'s one order (as the columnar
    reader adds them, a total that overflows included), whole counts exactly as ints."""
    return ordered_sum(column) if all(type(v) is float for v in column) else sum(column)


def _plain_floats(rows: list) -> bool:
    """Whether every value of ``rows`` is a finite float (what ``is_number`` accepts, bar ints): all
    floats and a finite sum (a NaN or an infinity makes it NaN or infinite; a sum that overflows from
    finite values only says no, and the caller then checks value by value)."""
    return all(type(v) is float for row in rows for v in row) and math.isfinite(sum(map(sum, rows)))


class ClusterFieldError(ValueError):
    """``cluster_by`` names a field an item does not have (the message names the item and the field)."""


def assign_clusters(experiment: ExperimentRecords, field: str) -> ExperimentRecords:
    """``experiment`` with each item's ``cluster`` the value of its input field ``field`` (a record
    file's kept column, a dataset item's field). A failed item without it keeps no cluster. A value
    that is NaN or infinite is no label (each NaN would be one cluster of its own, or all one,
    by accident of how it is written): refused as a missing one is."""
    items = []
    for item in experiment.items:
        value = item.input.get(field) if isinstance(item.input, dict) else None
        odd = isinstance(value, float) and not math.isfinite(value)
        if odd and not item.failed:
            raise ClusterFieldError(f"cluster_by {field!r}: item {item.key!r} of {experiment.name} has {field!r} = "
                                    f"{'NaN' if value != value else value}, which names no cluster; give every "
                                    f"item of a cluster the same text or finite number in {field!r}")
        if value is None and not item.failed:
            kept = ", ".join(sorted(item.input)) if isinstance(item.input, dict) and item.input else "none"
            raise ClusterFieldError(f"cluster_by {field!r}: item {item.key!r} of {experiment.name} has no field "
                                    f"{field!r} (its fields: {kept}); a record file keeps it with --keep {field}")
        items.append(replace(item, cluster=None if value is None or odd else str(value)))
    return replace(experiment, items=items)


#: A trial SD at most this share of the values' largest magnitude is rounding alone, shown as 0.
ROUNDING_ONLY = 1e-12


def trial_sd(values: list[float], mean: float) -> float:
    """The sample SD of one item's trials; 0 when it is rounding alone (at most 1e-12 of the values'
    scale: three equal trials of 0.1 have a mean of 0.1 + 2.8e-17 and would show a spread of 2e-17)."""
    sd = math.sqrt(ordered_sum([(v - mean) * (v - mean) for v in values]) / (len(values) - 1))
    return 0.0 if sd <= ROUNDING_ONLY * max(map(abs, values)) else sd


def ordered_sum(values: Iterable[float]) -> float:
    """The values added one after another from 0.0: the trial merge's one order of addition, which
    the columnar reader repeats in numpy (``sum`` changed its rounding in Python 3.12)."""
    total = 0.0
    for value in values:
        total += value
    return total


def trial_counts(experiment: ExperimentRecords) -> tuple[int, int]:
    """(items, rows) of a merged experiment: how many items, and how many trials they hold in all."""
    return len(experiment.items), sum(item.trials for item in experiment.items)


def nondeterminism(items: list[ItemRecord], name: str) -> tuple[float, float] | None:
    """For score ``name`` over items with several trials: the mean within-item SD across trials, and
    the share of the variance of the item means that trial-to-trial variation explains (the mean of
    s_i^2 / T_i over the variance of the item means); None without repeated trials."""
    repeated = [item for item in items if name in item.trial_sd and name in item.scores]
    means = [item.scores[name] for item in items if name in item.scores]
    if not repeated or len(means) < 2:
        return None
    within = sum(item.trial_sd[name] for item in repeated) / len(repeated)
    noise = sum(item.trial_sd[name] ** 2 / item.trials for item in repeated) / len(means)
    mean = sum(means) / len(means)
    total = sum((m - mean) ** 2 for m in means) / (len(means) - 1)     # statistics.variance, in floats
    return within, (min(1.0, noise / total) if total > 0 else 0.0)


def units_of(experiment: ExperimentRecords, cluster_by: str | None = None) -> ExperimentRecords:
    """The experiment as a comparison resamples it: clusters labelled (``cluster_by``), trials merged."""
    return merge_trials(assign_clusters(experiment, cluster_by) if cluster_by is not None else experiment)


def by_cluster(rows: list, clusters: tuple[str, ...]) -> list[list[float]]:
    """``rows`` (one per item) summed per cluster, clusters in first-seen order."""
    sums: dict[str, list[float]] = {}
    for row, label in zip(rows, clusters, strict=True):
        total = sums.get(label)
        sums[label] = [float(v) for v in row] if total is None else [t + float(v) for t, v in zip(total, row)]
    return list(sums.values())


def ratio_of_sums(row: Sequence[float]) -> float:
    """The mean of the items of a cluster bootstrap's resample: the sum of their values over their count."""
    return row[0] / row[1]
