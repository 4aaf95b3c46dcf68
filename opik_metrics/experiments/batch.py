"""Score aligned lists of outputs and references with several metrics (``score`` on two text
files); per item and aggregate."""
from __future__ import annotations

from typing import Any, Sequence

from tqdm.auto import tqdm

from opik_metrics.core import MetricInputError, facts_of, require_references, require_text
from opik_metrics.experiments.contexts import fit_corpus_contexts
from opik_metrics.metric_kit.server_range import unsent, value_of
from opik_metrics.scoring import Scorer


def aggregate(items: list[dict[str, float]]) -> dict[str, float]:
    """Mean of every per-item score (names in first-seen order)."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for item in items:
        for name, value in item.items():
            sums[name] = sums.get(name, 0.0) + value
            counts[name] = counts.get(name, 0) + 1
    return {name: sums[name] / counts[name] for name in sums}


def score_texts(metrics: Sequence[Any], outputs: Sequence[str],
                references: Sequence[Sequence[str]] | None, *, progress: bool = True,
                chunk_size: int = 256, sources: Sequence[str] | None = None) -> dict[str, Any]:
    """Score the items with every metric, a chunk at a time, through the one ``Scorer``.

    Returns ``{"items": [{name: value}], "aggregate": {name: mean}, "reasons": [...],
    "signatures": {...}}``; metrics with a corpus-level score (corpus BLEU, corpus perplexity)
    add it to the aggregate. An item a metric fails on is a MetricInputError naming it.
    """
    n = len(outputs)
    if references is not None:
        fit_corpus_contexts(metrics, references)      # CIDEr-D: one context for every chunk
    scorer = Scorer(metrics)
    summed = {m.name: m for m in metrics if facts_of(m).own_corpus is not None}  # a mean corpus score is in the aggregate
    totals: dict[str, Any] = {}      # the items' summed statistics, for each corpus score
    items: list[dict[str, float]] = [{} for _ in range(n)]
    reasons: list[dict[str, str]] = [{} for _ in range(n)]
    signatures: dict[str, str] = {}
    bar = tqdm(total=n, desc="scoring", unit="item", disable=not progress, leave=False)
    for start in range(0, n, chunk_size):
        stop = min(n, start + chunk_size)
        inputs = [_checked(outputs, references, k) for k in range(start, stop)]
        if sources is not None:       # the item's source, under the name the CLI's metrics read it by
            for k, item in enumerate(inputs, start):
                item["source"] = require_text(sources[k], "source", k)
        for k, results in enumerate(scorer.results(inputs), start):
            by_metric: dict[str, list] = {}
            for metric_name, res in results:
                if res.scoring_failed and not unsent(res):
                    raise MetricInputError(f"item {k}: {metric_name}: {res.reason}")
                by_metric.setdefault(metric_name, []).append(res)
                items[k][res.name] = value_of(res)      # an inf perplexity is shown here, not sent to a server
                if res.reason:
                    reasons[k][res.name] = res.reason
                sig = (res.metadata or {}).get("signature")
                if sig:
                    signatures[metric_name] = str(sig)
            for name, metric in summed.items():
                statistics = metric.item_statistics(by_metric[name])
                totals[name] = statistics if name not in totals else totals[name] + statistics
        bar.update(stop - start)
    bar.close()
    corpus: dict[str, float] = {}
    ordered: dict[str, str] = {}          # each metric's signature, then its corpus scores'
    for metric in metrics:
        if metric.name in signatures:
            ordered[metric.name] = signatures[metric.name]
        if metric.name not in totals:
            continue
        made = metric.from_statistics(totals[metric.name])
        for corpus_result in made if isinstance(made, list) else [made]:   # COCOCaption: one per key
            corpus[corpus_result.name] = corpus_result.value
            ordered[corpus_result.name] = str((corpus_result.metadata or {}).get("signature", ""))
    signatures = {**ordered, **signatures}
    parts = sorted(set().union(*(facts_of(metric).part_names for metric in metrics)))
    return {"items": items, "aggregate": {**aggregate(items), **corpus},
            "reasons": reasons, "signatures": signatures, "parts": parts}


def _checked(outputs: Sequence[str], references: Sequence[Sequence[str]] | None, k: int) -> dict[str, Any]:
    """Item ``k``'s scoring inputs, checked: a bad one is a MetricInputError naming the item and field."""
    if references is None:
        return {"output": require_text(outputs[k], "output", k)}
    return {"output": require_text(outputs[k], "output", k), "reference": require_references(references[k], "reference", k)}
