"""Score aligned lists of outputs and references with several metrics; per item and aggregate."""
from __future__ import annotations

from typing import Any, Sequence

from tqdm.auto import tqdm

from opik_metrics.core import facts_of
from opik_metrics.experiments.contexts import fit_corpus_contexts


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
                chunk_size: int = 256) -> dict[str, Any]:
    """Run each metric's ``score_batch`` over the items.

    Returns ``{"items": [{name: value}], "aggregate": {name: mean}, "reasons": [...],
    "signatures": {...}}``; metrics with a corpus-level score (corpus BLEU, corpus perplexity)
    add it to the aggregate.
    """
    n = len(outputs)
    if references is not None:
        fit_corpus_contexts(metrics, references)      # CIDEr-D: one context for every chunk
    items: list[dict[str, float]] = [{} for _ in range(n)]
    reasons: list[dict[str, str]] = [{} for _ in range(n)]
    signatures: dict[str, str] = {}
    corpus: dict[str, float] = {}
    for metric in metrics:
        summed = facts_of(metric).own_corpus is not None   # a mean corpus score is already in the aggregate
        total = 0  # the items' summed statistics, for the corpus score
        bar = tqdm(total=n, desc=f"scoring {metric.name}", unit="item", disable=not progress, leave=False)
        for start in range(0, n, chunk_size):
            stop = min(n, start + chunk_size)
            refs = None if references is None else references[start:stop]
            batch = metric.score_batch(outputs[start:stop], refs)
            for k, results in enumerate(batch, start):
                if summed:
                    total = total + metric.item_statistics(results)
                for res in results:
                    items[k][res.name] = res.value
                    if res.reason:
                        reasons[k][res.name] = res.reason
                    sig = (res.metadata or {}).get("signature")
                    if sig:
                        signatures[metric.name] = str(sig)
            bar.update(stop - start)
        bar.close()
        if n and summed:
            made = metric.from_statistics(total)
            for corpus_result in made if isinstance(made, list) else [made]:   # COCOCaption: one per key
                corpus[corpus_result.name] = corpus_result.value
                signatures[corpus_result.name] = str((corpus_result.metadata or {}).get("signature", ""))
    parts = sorted(set().union(*(facts_of(metric).part_names for metric in metrics)))
    return {"items": items, "aggregate": {**aggregate(items), **corpus},
            "reasons": reasons, "signatures": signatures, "parts": parts}
