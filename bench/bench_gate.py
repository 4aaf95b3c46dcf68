"""The CI gate's statistics at scale (issue 36): two systems of N items (default 100,000) with five
gated scores (four item means, ROUGE-1/2 F1, a BERTScore-like F1 and a latency that is lower-is-
better, and corpus BLEU from per-item statistics), 1,000 resamples: the resample indices drawn once,
five paired bootstraps, Holm's correction and the gate's decisions, timed as one run.

The issue's target is the whole ``compare --fail-on worse`` on two 100,000-item record files under
30 s on 2 cores; until the gate is wired into the command, this times its statistical core (no file
reading, no pairing by id). Inputs are synthetic; the new system loses one point of ROUGE-1 F1 and
is otherwise drawn like the baseline.

Rows (costs, ``lower_is_better``; ``reference_per_s`` None, there is no reference run):

- wall seconds of the core against the 30 s target; ``ours_per_s`` = items per second;
  ``identical`` = the gate failed on ROUGE-1 F1 alone, as the data were built.
- the process's peak RSS in MB (informational, no target): the (resamples x items) index matrix
  alone is 8 bytes x resamples x items (763 MB at 100,000 x 1,000).

The split (indices, each paired bootstrap, correction and decision) is printed, and the CPU time
beside the wall time (the core runs on one thread, so on a loaded machine the gap is the load).

    python -m bench.bench_gate [N]
"""
from __future__ import annotations

import resource
import time

import numpy as np

from opik_metrics.compare.statistics.bootstrap import CorpusStatistic, MeanStatistic, paired_bootstrap, resample_indices
from opik_metrics.compare.gate.decision import GateRow, decide
from opik_metrics.text.bleu import bleu_from_statistics

N_ITEMS = 100_000
RESAMPLES = 1_000
TARGET_S = 30.0


def _bleu_rows(rng: np.random.Generator, n: int, hyp_len: np.ndarray) -> list[list[float]]:
    """Plausible BLEU statistics per item: matches per order, totals per order, lengths."""
    totals = [np.maximum(hyp_len - k, 0) for k in range(4)]
    correct = [rng.binomial(t, 0.6 * 0.55 ** k) for k, t in enumerate(totals)]
    ref_len = np.maximum(hyp_len + rng.integers(-3, 4, n), 1)
    return np.column_stack([*correct, *totals, hyp_len, ref_len]).astype(np.float64).tolist()


def _systems(n: int, seed: int = 7) -> list[tuple[str, bool, object, object]]:
    rng = np.random.default_rng(seed)
    difficulty = rng.beta(2.0, 2.0, n)
    rouge1 = np.clip(0.3 + 0.5 * difficulty + rng.normal(0, 0.05, n), 0, 1)
    rouge1_new = np.clip(rouge1 - 0.01 + rng.normal(0, 0.02, n), 0, 1)        # one point lost
    scores: list[tuple[str, bool, object, object]] = [("rouge1_f1", True, MeanStatistic(rouge1), MeanStatistic(rouge1_new))]
    for name, higher in (("rouge2_f1", True), ("bertscore_f1", True), ("latency_s", False)):
        if higher:
            a, b = (np.clip(0.2 + 0.6 * difficulty + rng.normal(0, 0.08, n), 0, 1) for _ in range(2))
        else:
            a, b = (np.exp(rng.normal(0, 0.3, n)) * (0.5 + difficulty) for _ in range(2))
        scores.append((name, higher, MeanStatistic(a), MeanStatistic(b)))
    hyp_len = rng.integers(5, 40, n)
    scores.append(("corpus_bleu", True, CorpusStatistic(_bleu_rows(rng, n, hyp_len), bleu_from_statistics),
                   CorpusStatistic(_bleu_rows(rng, n, hyp_len), bleu_from_statistics)))
    return scores


def main(n: int = N_ITEMS) -> list[dict]:
    """``n``: items per system (default 100,000); 1,000 resamples."""
    scores = _systems(n)
    print(f"{n:,} items x 2 systems, 5 scores, {RESAMPLES:,} resamples", flush=True)
    start, cpu = time.perf_counter(), time.process_time()
    idx = resample_indices(n, RESAMPLES, 12345)
    split = [f"indices {time.perf_counter() - start:.1f} s ({idx.nbytes / 2**20:,.0f} MB)"]
    rows = []
    for name, higher, base, new in scores:
        t = time.perf_counter()
        r = paired_bootstrap(base, new, idx)  # type: ignore[arg-type]
        rows.append(GateRow(name, higher, r.baseline, r.system, r.delta, r.delta_low, r.delta_high, r.p_value, n=n))
        split.append(f"{name} {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    result = decide(rows, "worse", "holm")
    split.append(f"Holm + decisions {1000 * (time.perf_counter() - t):.1f} ms")
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    failed = [o.name for o in result.outcomes if not o.passed]
    print("; ".join(split), flush=True)
    print(f"total {seconds:.1f} s wall, {cpu:.1f} s CPU (one thread: the gap is other load), peak RSS {peak_mb:,.0f} MB; {result.exit_line}", flush=True)
    return [{"benchmark": f"gate core: 5 scores, 2 x {n:,} items, {RESAMPLES:,} resamples (paired bootstrap + Holm "
                          f"+ decisions), wall s ({cpu:.1f} s CPU)",
             "ours_per_s": n / seconds, "reference_per_s": None, "ratio": seconds, "target": TARGET_S,
             "identical": failed == ["rouge1_f1"], "lower_is_better": True},
            {"benchmark": f"gate core: peak RSS MB ({n:,} items x {RESAMPLES:,} resamples)",
             "ours_per_s": n / seconds, "reference_per_s": None, "ratio": peak_mb, "target": None,
             "identical": True, "lower_is_better": True, "informational": True}]


if __name__ == "__main__":
    import sys
    print(main(int(sys.argv[1])) if len(sys.argv) > 1 else main())
