"""Annotations in Opik are feedback scores with one value per annotator: a trace's score carries
``value_by_author`` (author -> value), and its ``value`` is their mean. The SDK's experiment items
keep only the mean, so the raters are read here from each item's trace (one GET per item that has
the score), into ``ItemRecord.authored``: the human score's ratings are then each author's value.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from tqdm.auto import tqdm

from opik_metrics.compare.reading.records import ExperimentRecords

__all__ = ["read_authors"]


def read_authors(records: ExperimentRecords, names: Sequence[str], *, client: Any = None,
                 project_name: str | None = None, progress: bool = False) -> int:
    """Fill ``item.authored[name]`` (author -> value) for the human score ``names`` on every item of
    an Opik experiment that holds one; returns how many per-author scores were found. Items without a trace
    (record files, the local store, merged trials) are left as they are."""
    import opik

    from opik_metrics.experiments.opik_server import choose_backend, client_url, server_errors

    wanted = [item for item in records.items if item.trace_id and any(n in item.scores for n in names)]
    if not wanted:
        return 0
    if client is None:
        url = choose_backend("opik", local_advice="then read the annotators again").url
        with server_errors(url, "connecting the Opik client"):
            client = opik.Opik(project_name=project_name)
    else:
        url = client_url(client)
    found = 0
    for item in tqdm(wanted, desc="reading annotators", unit="item", disable=not progress, leave=False):
        with server_errors(url, f"reading the trace of item {item.key!r} (GET traces/{item.trace_id})"):
            trace = client.rest_client.traces.get_trace_by_id(item.trace_id)
        for score in trace.feedback_scores or []:
            if score.name not in names or not score.value_by_author:
                continue
            values = {author: float(entry.value) for author, entry in score.value_by_author.items()
                      if entry.value is not None and math.isfinite(float(entry.value))}
            if values:
                item.authored[score.name] = dict(sorted(values.items()))
                found += 1
    return found
