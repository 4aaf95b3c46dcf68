"""Experiments of a local store put on the test Opik REST server as ``opik.evaluate`` leaves them."""
from __future__ import annotations

from typing import Sequence

from opik_metrics.experiments.store import ExperimentStore
from tests.opik_rest_server import OpikRestServer


def seed_from_store(server: OpikRestServer, store_path, names: Sequence[str]) -> None:
    """Each named experiment of the store, with its scored items, onto ``server``."""
    with ExperimentStore(store_path, create=False) as store:
        for name in names:
            info = store.info(name)
            items = []
            for stored in store.items(info.id, ["scored"]):
                scores = [{"name": s.name, "value": s.value, "reason": s.reason, "metadata": s.metadata}
                          for s in stored.scores.values() if not s.failed and s.value is not None]
                items.append({"input": stored.input, "output": stored.output, "scores": scores,
                              "metrics": {s.name: s.metric for s in stored.scores.values()}})
            corpus = {k: v for k, v in info.experiment_scores.items() if v is not None}
            server.add_experiment(name, info.dataset, info.config, corpus, items)
