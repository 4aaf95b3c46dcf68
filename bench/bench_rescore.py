"""Speed of adding METEOR to a stored experiment (``experiments rescore``: read the stored items,
score them, write every score and the corpus score back, under the lease) against scoring the same
outputs with ``METEOR.score_batch`` directly, on 10,000 stored caption items x 5 references."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

from tests.captions import caption_sets

TARGET = 0.8


def _stored(path: Path, cands: list[str], refs: list[list[str]]) -> None:
    """An experiment of ``len(cands)`` captioned items (no metric yet), as a captioning run leaves it."""
    from opik_metrics.experiments.runner import run_experiment

    items = [{"image_url": f"https://images.example/{k}.jpg", "k": k, "reference": r} for k, r in enumerate(refs)]
    run_experiment("captions", items, lambda item: {"output": cands[item["k"]]}, [], dataset_name="captions",
                   store=path, chunk_size=256, progress=False)


def main(n: int = 10_000) -> list[dict]:
    from opik_metrics import METEOR
    from opik_metrics.experiments.rescore import rescore_local
    from opik_metrics.experiments.store import ExperimentStore

    cands, refs = caption_sets(n, 5, seed=0)
    metric = METEOR(track=False)            # the tables loaded once, for both
    metric.score_batch(cands[:10], refs[:10])
    times, direct_times = [], []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "store.sqlite"
        _stored(path, cands, refs)
        for replace in (False, True):       # alternated, so that a busy moment of the machine hits both
            start = time.perf_counter()
            direct = [r[0].value for r in metric.score_batch(cands, refs)]
            direct_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            with ExperimentStore(path) as store:
                rescore_local(store, "captions", [metric], replace=replace, progress=False)
            times.append(time.perf_counter() - start)
        with ExperimentStore(path, create=False) as store:
            stored = [it.scores["meteor"].value for it in store.items(store.info("captions").id)]
    rescore_s, direct_s = min(times), min(direct_times)
    identical = stored == direct
    print(f"rescore METEOR {n:,} stored items: {rescore_s:.2f} s  METEOR.score_batch {direct_s:.2f} s  "
          f"ratio {direct_s / rescore_s:.2f} (target {TARGET})  equal: {identical}")
    return [{"benchmark": f"rescore {n:,} stored caption items with METEOR vs METEOR.score_batch",
             "ours_per_s": n / rescore_s, "reference_per_s": n / direct_s, "ratio": direct_s / rescore_s,
             "target": TARGET, "identical": identical}]


if __name__ == "__main__":
    main()
