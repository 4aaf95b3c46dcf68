"""An experiment's human ratings and automatic scores, read for ``human_agreement`` from whatever
``sources`` read (the local store, Opik, a record file).

Where a human score lives on an item, looked up in this order:
1. a score of the item named SCORE: a feedback score logged on the trace (annotators in Opik's UI or
   an annotation queue, ``log_traces_feedback_scores``) or a score stored with the item;
2. an input field named SCORE: a dataset field (``{"human": 4}``) or a record file's kept column
   (``score --keep human``: a number, or kept as text): a number, numeric text, or a list of numbers, one
   per rater.
"""
from __future__ import annotations

import json
import os
from typing import Any, Collection, Sequence

from opik_metrics.compare.analysis import score_facts
from opik_metrics.meta_evaluation.metric_agreement import Agreement, AgreementSettings, agreement_from_scores
from opik_metrics.compare.reading.records import ExperimentRecords, ItemRecord
from opik_metrics.compare.statistics.trials import merge_trials
from opik_metrics.core.numbers import is_number

__all__ = ["agreement", "agreement_of", "human_ratings", "item_ratings", "parse_ratings"]


def parse_ratings(value: Any, key: str, human: str) -> list[float] | None:
    """The ratings in one item's field: None when it holds none (missing, null, empty text)."""
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise ValueError(f"item {key!r}: {human} is {value!r}, not a number or a list of numbers") from None
    if value is None:
        return None
    values = value if isinstance(value, list) else [value]
    values = [v for v in values if v is not None]
    if not values:
        return None
    if not all(is_number(v) for v in values):
        raise ValueError(f"item {key!r}: {human} is {value!r}; ratings must be finite numbers")
    return [float(v) for v in values]


def item_ratings(item: ItemRecord, human: str) -> list[float] | None:
    """One item's ratings of ``human``: each author's value when Opik gave them (``opik_authors``),
    else the score, else the input field (see the module)."""
    if item.authored.get(human):
        return list(item.authored[human].values())
    if human in item.scores:
        return [item.scores[human]]
    if human in item.non_finite:
        raise ValueError(f"item {item.key!r}: human score {human} is {item.non_finite[human]}")
    return parse_ratings(item.input.get(human), item.key, human)


def human_ratings(records: ExperimentRecords, human: str) -> dict[str, list[float]]:
    """Item key -> the ratings of score ``human`` (see the module's lookup order); items without any
    are left out. ValueError when no item has one, naming what the items do have."""
    out: dict[str, list[float]] = {}
    for item in records.items:
        ratings = item_ratings(item, human)
        if ratings is not None:
            out[item.key] = ratings
    if not out:
        scores = ", ".join(records.score_names()) or "none"
        fields = sorted({f for item in records.items for f in item.input})
        raise ValueError(f"no item of {records.name} has a human score {human!r}: its scores are {scores}; its "
                         f"input fields are {', '.join(fields) or 'none'}")
    return out


def agreement_of(records: ExperimentRecords, human: str, metrics: Sequence[str] | None = None,
                 settings: AgreementSettings | None = None, *, progress: bool = False,
                 lower_is_better: Collection[str] | None = None) -> Agreement:
    """The agreement of the experiment's scores (``metrics``, else every score but precision/recall
    parts and the human one) with the human score ``human``. The trials of one item are one item:
    its mean score (``trials.merge_trials``). ``lower_is_better``: the scores to negate, when the
    records state no direction (a scored table); default: each metric's recorded direction."""
    records = merge_trials(records)
    ratings = human_ratings(records, human)
    available = [n for n in records.score_names() if n != human]
    if metrics:
        unknown = [m for m in metrics if m not in available]
        if unknown:
            raise ValueError(f"{records.name} has no score {unknown[0]!r}; its scores are "
                             f"{', '.join(available) or 'none'}")
        chosen = list(dict.fromkeys(metrics))
    else:
        chosen = [n for n in available if not score_facts(n, [records]).part]
    if not chosen:
        raise ValueError(f"{records.name} has no automatic score besides {human!r} to compare with it")
    scores = {name: {item.key: item.scores[name] for item in records.items if name in item.scores}
              for name in chosen}
    lower = ({name for name in chosen if not score_facts(name, [records]).higher_is_better}
             if lower_is_better is None else set(lower_is_better) & set(chosen))
    return agreement_from_scores(ratings, scores, settings, experiment=records.name, source=records.source,
                                 human_name=human, lower_is_better=lower, progress=progress)


def agreement(name: str, human: str, metrics: Sequence[str] | None = None, *,
              store: str | os.PathLike | None = None, opik: bool = False, project_name: str | None = None,
              raters: str = "mean", resamples: int | None = None, seed: int | None = None,
              confidence: float | None = None) -> Agreement:
    """Which of experiment ``name``'s scores agrees best with the human score ``human``: read from a
    record file (an existing .jsonl / .parquet path), the local store or the Opik server, as
    ``compare`` reads experiments."""
    from opik_metrics.compare.reading.sources import load_compared

    defaults = AgreementSettings()
    settings = AgreementSettings(raters=raters,
                                 resamples=defaults.resamples if resamples is None else resamples,
                                 seed=defaults.seed if seed is None else seed,
                                 confidence=defaults.confidence if confidence is None else confidence)
    settings.check()
    [records], _ = load_compared([name], store=store, opik=opik, project_name=project_name,
                                      local_advice="or pass store=PATH to read an experiment of the local store")
    if any(item.trace_id for item in records.items):      # Opik: each annotator's value, not their mean
        from opik_metrics.meta_evaluation.opik_authors import read_authors

        read_authors(records, [human], project_name=project_name)
    return agreement_of(records, human, metrics, settings)
