"""A meta-evaluation of a rated table: each metric's correlation with people at each level asked
for (pooled, item, system; with pairwise accuracy at system level), the metrics tested against
each other (PERM-BOTH, Holm) and grouped where the test cannot tell them apart, and the raters'
own agreement beside them (Krippendorff's alpha, each rater against the mean of the others).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from opik_metrics.compare.statistics.bootstrap import resamples_for
from opik_metrics.compare.statistics.corrections import CORRECTIONS, correction_label
from opik_metrics.compare.statistics.correlation import METHODS
from opik_metrics.compare.statistics.defaults import (DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, MAX_PERMUTATIONS,
                                                    MAX_RESAMPLES, bounded_count, seed_and_confidence_problem)
from opik_metrics.meta_evaluation.labels import LABEL_STATISTICS, LabelAgreement, is_labels, label_agreement, majority_labels
from opik_metrics.meta_evaluation.levels.by_level import LEVELS, LevelValue, level_values
from opik_metrics.meta_evaluation.levels.rater_pairs import pair_level_values
from opik_metrics.meta_evaluation.metric_agreement import DEFAULT_METHODS, RATERS
from opik_metrics.meta_evaluation.metric_tests import PairTest, compare_pairs, significance_groups
from opik_metrics.meta_evaluation.raters import ALPHA_METRICS, krippendorff_alpha, rest_mean
from opik_metrics.meta_evaluation.table import RatedTable

__all__ = ["MetaEvaluation", "MetaSettings", "meta_evaluate"]


@dataclass(frozen=True)
class MetaSettings:
    """Levels and correlations asked for, the bootstrap, and the metric-vs-metric test."""

    levels: tuple[str, ...] = ("pooled",)
    methods: tuple[str, ...] = DEFAULT_METHODS
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    confidence: float = DEFAULT_CONFIDENCE
    compare_metrics: bool = False
    permutations: int = DEFAULT_RESAMPLES
    correction: str = "holm"
    labels: bool | None = None                 # None: read ratings as labels when they look like them
    thresholds: tuple[tuple[str, float], ...] = ()     # (metric, threshold) for label agreement
    raters: str = "mean"                       # a cell's ratings: their mean, or each a pair (rater_pairs)
    # how the rated table was read, recorded with the numbers it gives (meta_evaluate reads the table)
    group_by: str | None = None
    ratings_file: str | None = None
    system: str | None = None                  # the field naming each row's system (one file, several systems)

    def check(self) -> None:
        bad = [x for x in self.levels if x not in LEVELS]
        if bad or not self.levels:
            raise ValueError(f"level: choose from {', '.join(LEVELS)}, got {list(self.levels)!r}")
        bad = [m for m in self.methods if m not in METHODS]
        if bad or not self.methods:
            raise ValueError(f"methods: choose from {', '.join(METHODS)}, got {list(self.methods)!r}")
        for problem in (bounded_count("resamples", self.resamples, MAX_RESAMPLES),
                        bounded_count("permutations", self.permutations, MAX_PERMUTATIONS)):
            if problem is not None:
                raise ValueError(problem)
        problem = seed_and_confidence_problem(self.seed, self.confidence)
        if problem is not None:
            raise ValueError(problem)
        if self.correction not in CORRECTIONS:
            raise ValueError(f"correction: choose from {', '.join(CORRECTIONS)}, got {self.correction!r}")
        if self.raters not in RATERS:
            raise ValueError(f"raters: expected mean or pairs, got {self.raters!r}")
        if self.raters == "pairs" and self.compare_metrics:
            raise ValueError("--compare-metrics with --raters pairs: PERM-BOTH swaps the two metrics' scores of a "
                             "cell, and a cell's pairs share its scores, so the test is the one on the cells' mean "
                             "ratings; run it with --raters mean")


@dataclass
class MetaEvaluation:
    """Everything a meta-evaluation found; ``correlations[metric][level][method]``."""

    human: str
    source: str
    systems: list[str]
    raters: list[str]
    n_items: int
    settings: MetaSettings
    correlations: dict[str, dict[str, dict[str, LevelValue]]]
    oriented: list[str] = field(default_factory=list)
    tests: list[PairTest] = field(default_factory=list)
    groups: dict[str, list[list[str]]] = field(default_factory=dict)     # "level/method" -> groups
    alpha: dict[str, float | None] = field(default_factory=dict)         # interval / ordinal
    rater_vs_rest: dict[str, dict[str, dict[str, LevelValue]]] = field(default_factory=dict)
    labels: dict[str, LabelAgreement] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["settings"]["levels"] = list(self.settings.levels)
        data["settings"]["methods"] = list(self.settings.methods)
        data["settings"]["thresholds"] = [[m, t] for m, t in self.settings.thresholds]
        return json.loads(json.dumps(data, allow_nan=False))     # plain JSON types: as stored and read back

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"

    def format_table(self) -> str:
        """Plain text: per level a row per metric (and per rater against the rest), each statistic
        with its interval; then the pairwise tests and the groups."""
        s = self.settings
        lines = [f"meta-evaluation against {self.human!r} ({self.source}): {self.n_items} items, "
                 f"{len(self.systems)} system(s), {len(self.raters)} rater(s); {int(round(s.confidence * 100))}% "
                 f"bootstrap intervals, {s.resamples} resamples, seed {s.seed}"]
        for level in s.levels:
            stats = [*s.methods, *(["pairwise_accuracy"] if level == "system" else [])]
            rows = [["metric", "n", *stats]]
            named = [(m, self.correlations[m][level]) for m in self.correlations]
            named += [(f"rater {r} vs rest", v[level]) for r, v in self.rater_vs_rest.items()]
            for name, values in named:
                first = values[stats[0]]
                n = f"{first.n_items}" + (f"x{first.n_systems}" if first.n_systems > 1 else "")
                cells = [name + (" (negated)" if name in self.oriented else ""), n]
                for stat in stats:
                    v = values[stat]
                    cells.append("n/a" if v.estimate is None else f"{v.estimate:.3f} [{_fmt(v.low)}, {_fmt(v.high)}]")
                rows.append(cells)
            reasons = dict.fromkeys(f"  {name} {stat}: {values[stat].reason}" for name, values in named
                                    for stat in stats if values[stat].estimate is None and values[stat].reason)
            widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
            lines.append("")
            lines.append(f"{level} level" + (" (pairwise accuracy over "
                                               f"{len(self.systems) * (len(self.systems) - 1) // 2} system pairs)"
                                               if level == "system" else ""))
            lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
            lines += list(reasons)[:10] + ([f"  ... and {len(reasons) - 10} more (see --format json)"]
                                           if len(reasons) > 10 else [])
        if self.labels:
            some = next(iter(self.labels.values()))
            lines.append("")
            lines.append(f"labels (people's: {', '.join(f'{label:g}' for label in some.labels)}; each cell's "
                         f"majority label), {some.n_cells} cells")
            rows = [["metric", "labels from", *LABEL_STATISTICS]]
            for name, agreement in self.labels.items():
                rows.append([name, agreement.cut, *("n/a" if (lv := agreement.values[st]).estimate is None else
                                                    f"{lv.estimate:.3f} [{_fmt(lv.low)}, {_fmt(lv.high)}]"
                                                    for st in LABEL_STATISTICS)])
            widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
            lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        if self.alpha:
            lines.append("")
            lines.append("raters' agreement: Krippendorff's alpha " + ", ".join(
                f"{k} {_fmt(v)}" for k, v in self.alpha.items()))
        if self.tests:
            lines.append("")
            lines.append(f"metric against metric: PERM-BOTH, {s.permutations} permutations, "
                         f"{correction_label(s.correction)} over {len(self.tests) // max(len(self.groups), 1)} "
                         f"pairs, significant at p < {1 - s.confidence:.2g}")
            for t in self.tests:
                if t.delta is None:
                    lines.append(f"  {t.level}/{t.method} {t.a} vs {t.b}: {t.reason}")
                    continue
                lines.append(f"  {t.level}/{t.method} {t.a} - {t.b}: {t.delta:+.3f}, p {t.p_value:.3g}, adjusted "
                             f"{t.p_adjusted:.3g}{' *' if t.significant else ''}")
            for key, groups in self.groups.items():
                lines.append(f"  groups ({key}), best first: " + " > ".join("{" + ", ".join(g) + "}" for g in groups))
        lines += self.notes
        return "\n".join(lines) + "\n"


def _fmt(value: float | None) -> str:
    return "?" if value is None or not np.isfinite(value) else f"{value:.3f}"


def meta_evaluate(table: RatedTable, settings: MetaSettings | None = None, *, progress: bool = False
                  ) -> MetaEvaluation:
    """The meta-evaluation of ``table`` (see the module)."""
    settings = settings or MetaSettings()
    settings.check()
    h = table.human_mean()
    methods = list(settings.methods)
    n_raters = table.ratings.shape[2]
    steps = len(table.scores) * len(settings.levels) * settings.resamples
    if n_raters >= 2:
        steps += n_raters * len(settings.levels) * settings.resamples
    if settings.compare_metrics:
        pairs = len(table.scores) * (len(table.scores) - 1) // 2
        steps += pairs * len(settings.levels) * settings.permutations
    bar = tqdm(total=steps, desc="meta-evaluation", unit="step", disable=not progress, leave=False)
    correlations = {}
    for metric in table.scores:
        x = table.oriented(metric)
        if settings.raters == "pairs":
            correlations[metric] = {level: pair_level_values(level, x, table.ratings, methods, settings.resamples,
                                                             settings.seed, settings.confidence, bar)
                                    for level in settings.levels}
        else:
            correlations[metric] = {level: level_values(level, x, h, methods, settings.resamples, settings.seed,
                                                        settings.confidence, bar) for level in settings.levels}
    result = MetaEvaluation(human=table.human, source=table.source, systems=list(table.systems),
                            raters=list(table.raters), n_items=len(table.items), settings=settings,
                            correlations=correlations, oriented=sorted(table.lower_is_better & set(table.scores)))
    if settings.raters == "pairs":
        result.notes.append("raters=pairs: each rating of a cell is a pair of its own with the cell's score (at "
                            "system level a system's mean is over its pairs); an item's pairs are resampled together")
    if n_raters >= 2:
        units = table.ratings.reshape(-1, n_raters)
        result.alpha = {m: _none_if_nan(krippendorff_alpha(units, m)) for m in ALPHA_METRICS}
        for r, name in enumerate(table.raters):
            result.rater_vs_rest[name] = {
                level: level_values(level, table.ratings[:, :, r], rest_mean(table.ratings, r), methods,
                                    settings.resamples, settings.seed, settings.confidence, bar)
                for level in settings.levels}
    ratings = table.ratings[np.isfinite(table.ratings)]
    if settings.labels or (settings.labels is None and is_labels(ratings)):
        people = majority_labels(table.ratings)
        thresholds = dict(settings.thresholds)
        unknown = [m for m in thresholds if m not in table.scores]
        if unknown:
            raise ValueError(f"--threshold names {unknown[0]!r}, not a compared score ({', '.join(table.scores)})")
        for metric in table.scores:
            t = thresholds.get(metric)
            if t is not None and metric in table.lower_is_better:
                t = -t            # the oriented (negated) scores: "at or below t" becomes "at or above -t"
            result.labels[metric] = label_agreement(metric, table.oriented(metric), people, settings.resamples,
                                                    settings.seed, settings.confidence, t)
    alpha = 1.0 - settings.confidence
    if settings.compare_metrics and len(table.scores) < 2:
        result.notes.append("--compare-metrics needs two metrics or more; there is one")
    if settings.compare_metrics and len(table.scores) >= 2:
        oriented = {m: table.oriented(m) for m in table.scores}
        lead = methods[0]
        for level in settings.levels:
            tests = compare_pairs(oriented, h, level, lead, settings.permutations, settings.seed, alpha,
                                  settings.correction, bar)
            result.tests += tests
            estimates = {m: float(e) for m, v in correlations.items() if (e := v[level][lead].estimate) is not None}
            result.groups[f"{level}/{lead}"] = significance_groups(estimates, tests)
        needed = resamples_for(alpha / max(1, len(table.scores) * (len(table.scores) - 1) // 2))
        if settings.permutations < needed:
            result.notes.append(f"{settings.permutations} permutations cannot make a pair significant after "
                                f"{correction_label(settings.correction)} over all pairs at {alpha:.2g} "
                                f"(smallest p 1/{settings.permutations + 1}); use at least {needed}")
    bar.close()
    return result


def _none_if_nan(value: float) -> float | None:
    return None if not np.isfinite(value) else float(value)
