"""Speed of METEOR through the Opik metric (``METEOR.score_batch``, Meteor 1.5 in Python) against
pycocoevalcap's ``Meteor().compute_score`` (the jar: JVM start and its table load included, as a
user waits for them; ours includes loading the tables from the disk cache) on 5,000 images x 5
references; the metric against its engine; and the peak memory of a process that scores them
against the jar's 2 GB heap."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

from tests.captions import caption_sets

TARGET = 1.0
ADAPTER_TARGET = 1.2
TOLERANCE = 1e-6
HEAP_MB = 2048          # pycocoevalcap starts the jar with -Xmx2G

_PEAK = """
import json, resource, sys
from opik_metrics import METEOR
from tests.captions import caption_sets
cands, refs = caption_sets(int(sys.argv[1]), 5, seed=0)
METEOR(track=False).score_batch(cands, refs)
print("@@" + json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
"""


def _theirs(cands: list[str], refs: list[list[str]]) -> tuple[float, float, list[float]]:
    from pycocoevalcap.meteor.meteor import Meteor
    start = time.perf_counter()
    meteor = Meteor()
    final, per_item = meteor.compute_score({i: r for i, r in enumerate(refs)}, {i: [c] for i, c in enumerate(cands)})
    seconds = time.perf_counter() - start
    del meteor
    return seconds, float(final), [float(x) for x in per_item]


def main(n: int = 5000) -> list[dict]:
    """METEOR on ``n`` images with 5 references each."""
    from opik_metrics import METEOR

    cands, refs = caption_sets(n, 5, seed=0)
    # the disk cache built, if this machine has none yet (a one-off, not timed), in another process:
    # this one's first load, timed below, then reads the cache as a user's process does
    subprocess.run([sys.executable, "-c", "from opik_metrics.text.meteor import load_tables; load_tables()"],
                   check=True)
    start = time.perf_counter()
    metric = METEOR(track=False)     # this process's first load: from the disk cache
    results = metric.score_batch(cands, refs)
    ours_s = time.perf_counter() - start
    ours = [r[0].value for r in results]
    corpus = metric.corpus_score(cands, refs).value
    rows = []
    if shutil.which("java"):
        ref_s, final, theirs = _theirs(cands, refs)
        identical = max(abs(a - b) for a, b in zip(ours, theirs)) <= TOLERANCE and abs(corpus - final) <= TOLERANCE
        rows.append({"benchmark": "METEOR 5,000 x 5 refs, load included", "ours_per_s": n / ours_s,
                     "reference_per_s": n / ref_s, "ratio": ref_s / ours_s, "target": TARGET, "identical": identical})
        print(f"METEOR, load included: ours {ours_s:.1f} s  pycocoevalcap's jar {ref_s:.1f} s  "
              f"ratio {ref_s / ours_s:.2f}x (target {TARGET}x)  equal to {TOLERANCE:g}: {identical}")
    else:
        print("no java: the row against pycocoevalcap's jar is skipped")

    engine = metric.engine
    engine_s = min(_timed(lambda: engine.score_batch(cands, refs)) for _ in range(2))
    metric_s = min(_timed(lambda: metric.score_batch(cands, refs)) for _ in range(2))
    same = [r[0].value for r in metric.score_batch(cands, refs)] == [s.score for s in engine.score_batch(cands, refs)]
    rows.append({"benchmark": "METEOR metric.score_batch vs engine, 5,000 x 5", "ours_per_s": n / metric_s,
                 "reference_per_s": n / engine_s, "ratio": metric_s / engine_s, "target": ADAPTER_TARGET,
                 "identical": same, "lower_is_better": True})
    print(f"METEOR metric {metric_s:.2f} s  engine {engine_s:.2f} s  ratio {metric_s / engine_s:.3f} "
          f"(target <= {ADAPTER_TARGET})")

    proc = subprocess.run([sys.executable, "-c", _PEAK, str(n)], capture_output=True, text=True)
    peak = [json.loads(line[2:]) for line in proc.stdout.splitlines() if line.startswith("@@")]
    if peak:
        rows.append({"benchmark": "METEOR peak memory (MB) / the jar's 2 GB heap", "ours_per_s": peak[0],
                     "reference_per_s": HEAP_MB, "ratio": peak[0] / HEAP_MB, "target": 1.0, "identical": True,
                     "lower_is_better": True})
        print(f"METEOR peak memory {peak[0]:.0f} MB against the jar's {HEAP_MB} MB heap: {peak[0] / HEAP_MB:.2f}")
    return rows


def _timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
