"""The rated table a meta-evaluation works on: items (rows) x systems (columns), each metric's score
and each rater's rating per cell (NaN where missing), built from experiments on a shared dataset
(one experiment a system) or from one experiment whose rows are several outputs of one item
(``group_by``: a field names the item; the outputs take the columns in their order).

Ratings come from one human score (a list of values per cell: one per rater, in order, or one per
author when Opik gives ``value_by_author``), from several rater scores (one column each), or from a
long table of (item, rater, rating) rows.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Collection, Mapping, Sequence

import numpy as np

from opik_metrics.compare.analysis import score_facts
from opik_metrics.compare.reading.records import ExperimentRecords, ItemRecord
from opik_metrics.compare.statistics.trials import merge_trials
from opik_metrics.meta_evaluation.source import item_ratings

__all__ = ["RatedTable", "cells_of", "rated_table", "ratings_file", "ratings_from_long_table"]


@dataclass
class RatedTable:
    """Scores and ratings on (items, systems) cells; ``ratings`` is (items, systems, raters)."""

    items: list[str]
    systems: list[str]
    human: str
    raters: list[str]
    ratings: np.ndarray
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    lower_is_better: set[str] = field(default_factory=set)
    source: str = ""

    def human_mean(self) -> np.ndarray:
        """Each cell's mean rating over its raters (NaN where nobody rated it)."""
        counts = np.isfinite(self.ratings).sum(axis=2)
        sums = np.where(np.isfinite(self.ratings), self.ratings, 0.0).sum(axis=2)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(counts > 0, sums / counts, np.nan)

    def oriented(self, metric: str) -> np.ndarray:
        """The metric's scores, negated when lower is better (higher agreement is then better)."""
        return -self.scores[metric] if metric in self.lower_is_better else self.scores[metric]


def _field_value(experiment: ExperimentRecords, item: ItemRecord, name: str, what: str) -> str:
    """An item's ``name`` field as text (a JSON value as its JSON), or one line saying it lacks it."""
    value = item.input.get(name)
    if value is None or value == "":
        raise ValueError(f"{experiment.name}: item {item.key!r}: no field {name!r} {what} (row {item.position + 1}); "
                         f"its fields are {', '.join(sorted(map(str, item.input))) or 'none'}")
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def cells_of(records: Sequence[ExperimentRecords], group_by: str | None = None, system: str | None = None
             ) -> tuple[list[str], list[str], dict[tuple[str, str], ItemRecord]]:
    """Item keys, system names and the record of each (item, system) cell: one experiment a system
    (the items keyed by their key, trials merged); or one experiment whose rows are several outputs
    of one item (``group_by`` names the item's field; the outputs are systems only when ``system``
    names the field that says whose each is, else they are "output 1", "output 2", ... in their
    order); ``system`` alone: the item is the row's key (a table's id), the system its field."""
    cells: dict[tuple[str, str], ItemRecord] = {}
    items: dict[str, None] = {}
    systems: dict[str, None] = {}
    if group_by is None and system is None:
        for experiment in records:
            if experiment.name in systems:       # one system counted once would hide that it was given twice
                raise ValueError(f"{experiment.name} is given twice: each experiment is one system; name each "
                                 "system once")
            systems[experiment.name] = None
            for item in merge_trials(experiment).items:
                items[item.key] = None
                cells[(item.key, experiment.name)] = item
        return list(items), list(systems), cells
    [experiment] = records
    seen: dict[str, int] = {}
    for item in experiment.items:
        group = item.key if group_by is None else _field_value(experiment, item, group_by, "to group by")
        if system is None:
            slot = seen.get(group, 0)
            seen[group] = slot + 1
            name = f"output {slot + 1}"
        else:
            name = _field_value(experiment, item, system, "naming its system (--system)")
            if (group, name) in cells:
                first = cells[(group, name)]
                raise ValueError(f"{experiment.name}: item {group!r} has two rows of system {name!r} (rows "
                                 f"{first.position + 1} and {item.position + 1}); each system rates an item once"
                                 + ("" if group_by else " (rows of one item share its id; --group-by FIELD "
                                    "names another item column)"))
        items[group] = None
        systems[name] = None
        cells[(group, name)] = item
    return list(items), list(systems), cells


def rated_table(records: Sequence[ExperimentRecords], human: Sequence[str], metrics: Sequence[str] | None = None,
                *, group_by: str | None = None, system: str | None = None,
                long_ratings: Mapping[tuple[str, str | None], Mapping[str, float]] | None = None,
                lower_is_better: Collection[str] | None = None) -> RatedTable:
    """The rated table of ``records`` (several experiments on one dataset, or one with ``group_by``).
    ``human``: one score name (its list of values per item are the raters) or several (one rater
    each). ``long_ratings`` ((item key, system or None) -> rater -> rating) replaces them when given.
    ``metrics``: the scores compared (default: every score every experiment has, but precision/recall
    parts and the human ones). ``system``: the field naming each row's system, in one experiment
    whose rows are several systems' outputs (see ``cells_of``). ``lower_is_better``: the scores to
    negate when the records state no direction (a scored table); default: the recorded ones."""
    if group_by is not None and len(records) != 1:
        raise ValueError(f"--group-by reads one experiment whose rows are several outputs of one item; got "
                         f"{len(records)} experiments")
    if system is not None and len(records) != 1:
        raise ValueError(f"--system reads one file whose rows are several systems' outputs; got {len(records)} "
                         "(several files are one system each: leave --system out)")
    items, systems, cells = cells_of(records, group_by, system)
    names = set(human)
    common = [n for n in records[0].score_names() if n not in names and all(n in r.score_names() for r in records)]
    if metrics:
        unknown = [m for m in metrics if m not in common]
        if unknown:
            raise ValueError(f"score {unknown[0]!r} is not in every experiment; their common scores are "
                             f"{', '.join(common) or 'none'}")
        chosen = list(dict.fromkeys(metrics))
    else:
        chosen = [n for n in common if not score_facts(n, list(records)).part]
    if not chosen:
        raise ValueError(f"no automatic score besides {', '.join(human) or 'the ratings'} is in every experiment")
    row = {k: i for i, k in enumerate(items)}
    col = {s: j for j, s in enumerate(systems)}
    scores = {m: np.full((len(items), len(systems)), np.nan) for m in chosen}
    for (key, system), item in cells.items():
        for m in chosen:
            if m in item.scores:
                scores[m][row[key], col[system]] = item.scores[m]
    raters: list[str]
    if long_ratings is not None:
        raters = list(dict.fromkeys(r for by_rater in long_ratings.values() for r in by_rater))
        ratings = np.full((len(items), len(systems), len(raters)), np.nan)
        for (key, named), by_rater in long_ratings.items():
            if key not in row:
                raise ValueError(f"item {key!r} of the ratings table is not an item of the experiment(s)")
            if named is None and len(systems) != 1:
                raise ValueError(f"item {key!r} of the ratings table names no system; with several experiments "
                                 f"each row needs a system column naming one of {', '.join(systems)}")
            if named is not None and named not in col:
                raise ValueError(f"item {key!r} of the ratings table: system {named!r} is none of "
                                 f"{', '.join(systems)}")
            for r, value in by_rater.items():
                ratings[row[key], 0 if named is None else col[named], raters.index(r)] = value
        human_name = "ratings table"
    else:
        per_cell: dict[tuple[str, str], list[list[float]]] = {cell: [] for cell in cells}
        for name in human:
            for cell, item in cells.items():
                values = item_ratings(item, name)
                per_cell[cell].append(values or [])
        if len(human) > 1:
            raters = list(human)
            for cell, lists in per_cell.items():
                bad = [(n, v) for n, v in zip(human, lists) if len(v) > 1]
                if bad:
                    raise ValueError(f"item {cells[cell].key!r}: rater column {bad[0][0]} holds {len(bad[0][1])} "
                                     "ratings; a rater column holds one")
            width = len(human)
        else:
            authors = list(dict.fromkeys(a for item in cells.values() for a in item.authored.get(human[0], {})))
            width = len(authors) or max((len(v[0]) for v in per_cell.values()), default=0)
            raters = authors or [f"rater {k + 1}" for k in range(width)]
        ratings = np.full((len(items), len(systems), max(width, 1)), np.nan)
        for (key, system), lists in per_cell.items():
            by_author = cells[(key, system)].authored.get(human[0], {}) if len(human) == 1 else {}
            if by_author:       # each author in their own column, whichever items they rated
                for author, value in by_author.items():
                    ratings[row[key], col[system], raters.index(author)] = value
                continue
            flat = [v[0] if v else np.nan for v in lists] if len(human) > 1 else lists[0]
            if len(human) == 1 and authors and any(np.isfinite(flat)):
                raise ValueError(f"item {key!r} ({system}): its {human[0]} carries no per-author values while other "
                                 f"items' do ({', '.join(authors[:3])}...); ratings whose authors are unknown cannot "
                                 "join the authors' columns (rate it in Opik, or give the ratings as one kind)")
            ratings[row[key], col[system], :len(flat)] = flat
        human_name = ", ".join(human)
        if not np.isfinite(ratings).any():
            raise ValueError(f"no item has a human score {human_name!r}")
    lower = ({m for m in chosen if not score_facts(m, list(records)).higher_is_better} if lower_is_better is None
             else set(lower_is_better) & set(chosen))
    return RatedTable(items=items, systems=systems, human=human_name, raters=raters, ratings=ratings,
                      scores=scores, lower_is_better=lower, source=records[0].source)


def ratings_from_long_table(rows: Sequence[Mapping[str, object]], item: str = "item", rater: str = "rater",
                            rating: str = "rating", system: str = "system"
                            ) -> dict[tuple[str, str | None], dict[str, float]]:
    """(item key, system or None) -> rater -> rating from rows of a long table (JSON lines or CSV
    read as dicts; the optional ``system`` column names the experiment an output came from); a cell
    rated twice by one rater, or a rating that is not a finite number, is an error naming the row."""
    out: dict[tuple[str, str | None], dict[str, float]] = {}
    for k, r in enumerate(rows, start=1):
        missing = [f for f in (item, rater, rating) if r.get(f) in (None, "")]
        if missing:
            raise ValueError(f"ratings row {k}: no {missing[0]!r} field")
        try:
            value = float(r[rating])  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ValueError(f"ratings row {k}: {rating} is {r[rating]!r}, not a number") from None
        if not np.isfinite(value):
            raise ValueError(f"ratings row {k}: {rating} is {value!r}; ratings must be finite")
        which = r.get(system)
        by_rater = out.setdefault((str(r[item]), None if which in (None, "") else str(which)), {})
        who = str(r[rater])
        if who in by_rater:
            raise ValueError(f"ratings row {k}: item {r[item]!r} is rated twice by {who!r}")
        by_rater[who] = value
    return out


def ratings_file(path: str) -> dict[tuple[str, str | None], dict[str, float]]:
    """``ratings_from_long_table`` of a JSON Lines or CSV file (columns item, rater, rating and,
    with several experiments, system)."""
    from opik_metrics.streams.sources import BadRecord, open_source

    rows: list[Mapping[str, object]] = []
    for chunk in open_source(path).chunks(10_000):
        for k, record in enumerate(chunk.records, start=chunk.first + 1):
            if isinstance(record, BadRecord):
                raise ValueError(f"{path}: record {k}: {record.reason}")
            rows.append(record)
    return ratings_from_long_table(rows)
