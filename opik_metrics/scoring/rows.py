"""Output rows: one per record, ``index``, every score (None where it could not be scored),
``reason`` (why a score is degenerate or missing) and each metric's summable statistics; and the
aggregates made from rows in index order (means over scored items, corpus scores from summed
statistics by the formula the metric's facts name), the same whichever engine made the rows."""
from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from opik_metrics.core import MetricFacts, facts_of, resolve_formula
from opik_metrics.core.inputs import printable

STATISTICS_PREFIX = "statistics."
_WHERE = re.compile(r"^(?:item|line|row|rows) \d+(?:-\d+)?[,:] ")   # "item 3, ", "row 11: ": where, not why
_REASONS_KEPT = 5


def common_reason(reason: str) -> str:
    """A row's reason without the record it names, so that records failing alike share it."""
    return _WHERE.sub("", reason, count=1)


def statistics_column(metric: str) -> str:
    return STATISTICS_PREFIX + metric


class RowMaker:
    """Rows from the per-item results of ``Scorer.results``."""

    def __init__(self, metrics: Sequence[Any]) -> None:
        self.metrics = list(metrics)
        self._summed = {m.name: m for m in self.metrics if facts_of(m).own_corpus is not None}

    def row(self, index: int, results: Iterable[tuple[str, Any]]) -> dict[str, Any]:
        row: dict[str, Any] = {"index": index}
        reasons: list[str] = []
        by_metric: dict[str, list] = {}
        for metric_name, result in results:
            by_metric.setdefault(metric_name, []).append(result)
            if result.scoring_failed:
                reasons.append(f"{metric_name}: {result.reason}")
                continue
            row[result.name] = float(result.value)
            if result.reason:
                reasons.append(f"{result.name}: {result.reason}")
        for name, metric in self._summed.items():
            try:
                row[statistics_column(name)] = metric.item_statistics(by_metric.get(name, [])).as_list()
            except (KeyError, ValueError):      # the item failed: no statistics, its reason says why
                pass
        row["reason"] = printable("; ".join(dict.fromkeys(reasons))) or None
        return row

    @staticmethod
    def bad_row(index: int, reason: str) -> dict[str, Any]:
        return {"index": index, "reason": printable(reason)}


class Aggregator:
    """Means and corpus scores from rows added in index order (sums are order-sensitive in
    floating point, so every engine adds them in the same order)."""

    def __init__(self, facts: Sequence[MetricFacts], carried: Sequence[str] = ()) -> None:
        """``carried``: the columns copied from the records (id, kept ones): not scores."""
        self.facts = list(facts)
        self.rows = 0
        self.unscored = 0
        # why records have no score at all (their reasons without the record's place), at most
        # _REASONS_KEPT distinct ones: a run where every record failed alike can say why in one line
        self.unscored_reasons: dict[str, int] = {}
        self._sums: dict[str, float] = {}
        self._counts: dict[str, int] = {}
        self._stat_columns = [(f.metric, statistics_column(f.metric)) for f in self.facts if f.own_corpus is not None]
        self._totals: dict[str, list[float]] = {}     # summed statistics (what Statistics.__add__ does, unboxed)
        self._stat_counts: dict[str, int] = {}
        self._skip = {"index", "reason", *carried, *(column for _, column in self._stat_columns)}

    def add(self, row: dict[str, Any]) -> None:
        self.rows += 1
        sums, counts, skip = self._sums, self._counts, self._skip
        scored = False
        for name, value in row.items():
            if value is None or name in skip:
                continue
            scored = True
            if name in sums:
                sums[name] += value
                counts[name] += 1
            else:
                sums[name] = 0.0 + value
                counts[name] = 1
        if not scored:
            self.unscored += 1
            self._note_unscored(row.get("reason"))
        for metric, column in self._stat_columns:
            values = row.get(column)
            if values is None:
                continue
            self._totals[metric] = _summed(self._totals.get(metric), values)
            self._stat_counts[metric] = self._stat_counts.get(metric, 0) + 1

    def add_table(self, table: Any) -> None:
        """``add`` for every row of an Arrow table of output columns, column by column: the same
        sums in the same order (each score's values added row after row), the same first-seen
        order of the names, without a dict per row."""
        import pyarrow.compute as pc

        n = table.num_rows
        if not n:
            return
        self.rows += n
        names = [c for c in table.column_names if c not in self._skip]
        values = {name: table.column(name).to_pylist() for name in names}
        firsts = []
        for position, name in enumerate(names):
            if name not in self._sums:
                first = next((k for k, v in enumerate(values[name]) if v is not None), None)
                if first is not None:
                    firsts.append((first, position, name))
        for _, _, name in sorted(firsts):              # as ``add`` meets them, row by row
            self._sums[name] = 0.0
            self._counts[name] = 0
        for name in names:
            if name not in self._sums:
                continue
            total, count = self._sums[name], self._counts[name]
            for value in values[name]:
                if value is not None:
                    total += value
                    count += 1
            self._sums[name], self._counts[name] = total, count
        if names:
            unscored = pc.is_null(table.column(names[0]))
            for name in names[1:]:
                unscored = pc.and_(unscored, pc.is_null(table.column(name)))
            self.unscored += int(pc.sum(pc.cast(unscored, "int64")).as_py() or 0)
        else:
            unscored = None
            self.unscored += n
        if "reason" in table.column_names:
            reasons = table.column("reason")
            for reason in (reasons if unscored is None else pc.filter(reasons, unscored)).to_pylist():
                self._note_unscored(reason)
        for metric, column in self._stat_columns:
            if column not in table.column_names:
                continue
            summed = self._totals.get(metric)
            count = self._stat_counts.get(metric, 0)
            for row_values in table.column(column).to_pylist():
                if row_values is None:
                    continue
                summed = _summed(summed, row_values)
                count += 1
            if summed is not None:
                self._totals[metric] = summed
                self._stat_counts[metric] = count

    def _note_unscored(self, reason: str | None) -> None:
        key = common_reason(reason or "no reason given")
        if key in self.unscored_reasons or len(self.unscored_reasons) < _REASONS_KEPT:
            self.unscored_reasons[key] = self.unscored_reasons.get(key, 0) + 1

    def aggregate(self) -> dict[str, float]:
        """Every score's mean over the items that have it, then each corpus score of its own."""
        out = {name: self._sums[name] / self._counts[name] for name in self._sums}
        for facts in self.facts:
            total = self._totals.get(facts.metric)
            if total is None:
                continue
            for corpus in facts.own_corpora:
                out[corpus.name] = float(resolve_formula(corpus.formula)(tuple(total), **corpus.options))
        return out

    def corpus_names(self) -> list[str]:
        """The names of the corpus scores of their own (made from summed statistics)."""
        return [c.name for f in self.facts for c in f.own_corpora]

    def mean_corpora(self) -> dict[str, str]:
        """Corpus scores of their own that are by definition the mean of an item score (CIDEr-D's):
        corpus name -> that item score, so a table can say why the two rows agree."""
        return {c.name: c.carrier for f in self.facts for c in f.own_corpora if c.mean_of_carrier}

    def counts(self) -> dict[str, int]:
        """How many items each mean and corpus score covers."""
        out = dict(self._counts)
        for facts in self.facts:
            for corpus in facts.own_corpora:
                if facts.metric in self._stat_counts:
                    out[corpus.name] = self._stat_counts[facts.metric]
        return out


def _summed(total: list[float] | None, values: Sequence[float]) -> list[float]:
    """Statistics added element by element (what ``Statistics.__add__`` does, unboxed): the one
    sum ``add`` and ``add_table`` share, so both give the same floats."""
    return list(values) if total is None else [a + b for a, b in zip(total, values)]
