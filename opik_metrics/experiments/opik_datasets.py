"""Put items into an Opik dataset (created or reused) and find their ids there, so an experiment
covers exactly these items even when the dataset holds others from earlier runs.
"""
from __future__ import annotations

import json
from typing import Any, Sequence


def _canonical(content: dict) -> str:
    return json.dumps(content, sort_keys=True, default=str)


def dataset_item_ids(rows: Sequence[dict], contents: Sequence[dict]) -> list[str]:
    """The id of the dataset row holding each content (rows as ``Dataset.get_items`` returns them)."""
    indexes: dict[tuple[str, ...], dict[str, str]] = {}
    ids = []
    for k, content in enumerate(contents):
        fields = tuple(sorted(content))
        if fields not in indexes:
            indexes[fields] = {}
            for row in rows:
                if "id" in row and all(f in row for f in fields):
                    indexes[fields].setdefault(_canonical({f: row[f] for f in fields}), str(row["id"]))
        found = indexes[fields].get(_canonical(content))
        if found is None:
            raise RuntimeError(f"item {k} ({_canonical(content)[:120]}) is not in the Opik dataset after "
                               "inserting it; the server may have rejected it")
        ids.append(found)
    return ids


def insert_items(client: Any, dataset_name: str, contents: Sequence[dict]) -> tuple[Any, list[str]]:
    """Create or reuse ``dataset_name``, insert ``contents`` (Opik deduplicates) and return their ids."""
    dataset = client.get_or_create_dataset(name=dataset_name)
    if contents:
        dataset.insert([dict(c) for c in contents])
    return dataset, dataset_item_ids(dataset.get_items(), contents)
