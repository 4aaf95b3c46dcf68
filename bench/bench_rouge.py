"""Benchmark: our ROUGE against rouge-score 0.1.2 on the same realistic pairs.

Rows: the engine's ROUGE-1+2+L on short pairs (stemmer off and on); ROUGE-1/2/L/Lsum with the
stemmer through the Opik metric (``ROUGE(track=False).score_batch``) on summary-sized
multi-sentence pairs; and the ROUGE-Lsum scaling table, the engine on texts of 100 to 1,600
tokens (one sentence per line). The engine rows run our Python engine (``engine="python"``, what
scores every option rouge-score-rs does not compute); the metric rows the path a user gets
(``engine="auto"``: rouge-score-rs where it applies). Ours and rouge-score run interleaved, round
after round, and each side's median round counts (the machine is shared).

Optional peer rows, each skipped with a printed note when its package is not importable (none of
them is a dependency): the compiled / faster ROUGE packages a user would pick for speed,
rouge-score-rs (Rust), rouge-rust (``fast_rouge``, Rust, ROUGE-1/2/L without stemmer) and
rapidrouge (pure Python, bit-parallel ROUGE-L). For those rows the ratio is ours / peer (pairs/s),
all on one core (each peer called pair by pair, no batch thread pool); a peer row is "identical"
when every precision / recall / F agrees with ours to 1e-6, and is informational (shown, not
counted by ``python -m bench``'s exit status) when it has no issue target or disagrees.

Run: ``python -m bench.bench_rouge``. Every precision / recall / F must be identical to rouge-score's.
"""
from __future__ import annotations

import importlib
import os
import statistics
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")   # importing opik needs no network

from tests.corpus import realistic_pairs  # noqa: E402

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
TARGET_RATIO = 5.0
SUMMARY_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
SUMMARY_TARGET = 10.0            # issue 16: ROUGE-1/2/L/Lsum, stemmer, summary pairs, through the metric
SCALING_TOKENS = (100, 200, 400, 800, 1600)
SCALING_TARGET = 10.0
# pairs per length (ours, rouge-score): rouge-score's summary-level LCS is O(n·m) in Python
_SCALING_PAIRS = {100: (40, 10), 200: (30, 6), 400: (20, 3), 800: (12, 2), 1600: (8, 1)}


def _timed(function) -> tuple:
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def _interleaved(ours, theirs, rounds: int) -> tuple:
    """Median seconds of each side over ``rounds`` rounds, the sides alternating who goes first;
    plus each side's last result."""
    times: tuple = ([], [])
    out = [None, None]
    for round_ in range(rounds):
        for side in ((0, 1) if round_ % 2 == 0 else (1, 0)):
            out[side], seconds = _timed((ours, theirs)[side])
            times[side].append(seconds)
    return statistics.median(times[0]), statistics.median(times[1]), out[0], out[1]


def _identical(ours: list, theirs: list, types=ROUGE_TYPES) -> bool:
    return all(
        (o[t].precision, o[t].recall, o[t].fmeasure) == tuple(r[t])
        for o, r in zip(ours, theirs) for t in types
    ) and len(ours) == len(theirs)


def _lines(text: str) -> str:
    """One sentence per line, as rougeLsum expects."""
    return text.replace(". ", ".\n").replace("! ", "!\n").replace("? ", "?\n")


def summary_pairs(n: int, seed: int = 3) -> tuple:
    """``n`` summary-sized pairs, one sentence per line: realistic pairs joined until the prediction
    has 80 to 150 words (about 140 words and 7 lines on average)."""
    preds, refs = realistic_pairs(4 * n, seed=seed)
    out_p, out_r, k = [], [], 0
    for i in range(n):
        p, r = [], []
        while sum(len(s.split()) for s in p) < 80 + 10 * (i % 8):
            p.append(_lines(preds[k]))
            r.append(_lines(refs[k]))
            k += 1
        out_p.append("\n".join(p))
        out_r.append("\n".join(r))
    return out_p, out_r


def long_pairs(tokens: int, count: int, seed: int = 0) -> list:
    """``count`` (prediction, reference) pairs of at least ``tokens`` words, one sentence per line."""
    preds, refs = realistic_pairs(count * (tokens // 20 + 5), seed=seed)
    out, k = [], 0
    for _ in range(count):
        p, r = [], []
        while sum(len(s.split()) for s in p) < tokens:
            p.append(_lines(preds[k]))
            r.append(_lines(refs[k]))
            k += 1
        out.append(("\n".join(p), "\n".join(r)))
    return out


def _print(row: dict) -> None:
    print(f"{row['benchmark']}: ours {row['ours_per_s']:,.1f} pairs/s, rouge-score "
          f"{row['reference_per_s']:,.1f} pairs/s, ratio {row['ratio']:.1f}x "
          f"(target {row['target']:.0f}x), identical: {row['identical']}", flush=True)


def short_pair_rows(n: int) -> list:
    """The engine's ROUGE-1+2+L on ``realistic_pairs(n)``, stemmer off and on: pair by pair
    (``score``) and as one batch (``score_batch``: ROUGE-N and L counted on arrays)."""
    from rouge_score import rouge_scorer

    from opik_metrics.text.rouge.scorer import RougeScorer

    predictions, references = realistic_pairs(n)
    pairs = list(zip(predictions, references))
    rows = []
    for use_stemmer in (False, True):
        reference_scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=use_stemmer)
        our_scorer = RougeScorer(ROUGE_TYPES, use_stemmer=use_stemmer, engine="python")
        theirs, reference_seconds = _timed(
            lambda: [reference_scorer.score(ref, pred) for pred, ref in pairs])  # score(target, prediction)
        for path, ours_call in (("pair by pair", lambda: [our_scorer.score(pred, ref) for pred, ref in pairs]),
                                ("score_batch", lambda: our_scorer.score_batch(predictions, references))):
            ours, our_seconds = _timed(ours_call)
            ours_per_s, reference_per_s = n / our_seconds, n / reference_seconds
            rows.append({
                "benchmark": f"ROUGE-1+2+L engine {path} (stemmer {'on' if use_stemmer else 'off'})",
                "ours_per_s": ours_per_s,
                "reference_per_s": reference_per_s,
                "ratio": ours_per_s / reference_per_s,
                "target": TARGET_RATIO,
                "identical": _identical(ours, theirs),
            })
    return rows


def summary_metric_row(n: int = 120, rounds: int = 5) -> dict:
    """ROUGE-1/2/L/Lsum with the stemmer through the Opik metric on ``n`` summary-sized pairs."""
    import opik  # noqa: F401  (the metric runs where opik is imported, as in opik.evaluate)
    from rouge_score import rouge_scorer

    from opik_metrics import ROUGE

    predictions, references = summary_pairs(n)
    metric = ROUGE(rouge_types=SUMMARY_TYPES, use_stemmer=True, track=False)
    oracle = rouge_scorer.RougeScorer(list(SUMMARY_TYPES), use_stemmer=True)
    ours_s, ref_s, scored, theirs = _interleaved(
        lambda: metric.score_batch(predictions, references),
        lambda: [oracle.score(r, p) for p, r in zip(predictions, references)], rounds)
    identical = len(scored) == len(theirs) == n and all(
        [r.value for r in results] == [x for t in SUMMARY_TYPES for x in s[t]]
        for results, s in zip(scored, theirs))
    tokens = sum(len(p.split()) for p in predictions) / n
    return {"benchmark": f"ROUGE-1/2/L/Lsum metric.score_batch, stemmer, summary pairs (~{tokens:.0f} tokens, "
                         f"{sum(p.count(chr(10)) + 1 for p in predictions) / n:.1f} lines)",
            "ours_per_s": n / ours_s, "reference_per_s": n / ref_s, "ratio": ref_s / ours_s,
            "target": SUMMARY_TARGET, "identical": identical}


def scaling_rows(rounds: int = 3) -> list:
    """ROUGE-Lsum alone (engine, stemmer off) at 100 to 1,600 tokens: the scaling table."""
    from rouge_score import rouge_scorer

    from opik_metrics.text.rouge.scorer import RougeScorer

    ours = RougeScorer(("rougeLsum",), engine="python")
    oracle = rouge_scorer.RougeScorer(["rougeLsum"])
    rows = []
    for tokens in SCALING_TOKENS:
        our_count, ref_count = _SCALING_PAIRS[tokens]
        pairs = long_pairs(tokens, our_count, seed=tokens)
        ref_pairs = pairs[:ref_count]
        ours_s, ref_s, mine, theirs = _interleaved(
            lambda: [ours.score(p, r) for p, r in pairs],
            lambda: [oracle.score(r, p) for p, r in ref_pairs], rounds)
        ours_per_s, ref_per_s = our_count / ours_s, ref_count / ref_s
        rows.append({"benchmark": f"ROUGE-Lsum engine, {tokens} tokens ({_mean_lines(pairs):.0f} lines)",
                     "ours_per_s": ours_per_s, "reference_per_s": ref_per_s, "ratio": ours_per_s / ref_per_s,
                     "target": SCALING_TARGET,
                     "identical": _identical(mine[:ref_count], theirs, ("rougeLsum",))})
        _print(rows[-1])
    return rows


def _mean_lines(pairs: list) -> float:
    return sum(p.count("\n") + 1 for p, _ in pairs) / len(pairs)


PEER_TOLERANCE = 1e-6
LSUM_PEER_TARGET = 1 / 3         # issue 16: ROUGE-Lsum alone at 800 tokens within 3x of rouge-score-rs, one core
_PEER_SHORT_PAIRS = {"rouge_score_rs": 5000, "fast_rouge": 5000, "rapidrouge": 1000}
SHORT_PEER_TARGET = 1 / 2        # issue 16: short pairs through the metric within 2x of rouge-score-rs, both cores


def _peer(module: str, package: str):
    """The peer ``module`` if importable, else None with a printed note (peers are optional)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        print(f"(peer {package} not installed, its rows skipped: {error})", flush=True)
        return None


def _max_difference(values: list, scores: list, types) -> float:
    """Largest |ours - peer| over every precision / recall / F; ``values`` ours, per pair the
    floats in type order (p, r, f each), ``scores`` the peer's dicts of score objects."""
    if len(values) != len(scores):
        return float("inf")
    return max((abs(a - b) for row, score in zip(values, scores)
                for a, b in zip(row, [x for t in types for x in (score[t].precision, score[t].recall,
                                                                  score[t].fmeasure)])), default=0.0)


def _peer_row(name: str, peer: str, count_ours: int, ours_s: float, count_peer: int, peer_s: float,
              difference: float, target) -> dict:
    ours_per_s, peer_per_s = count_ours / ours_s, count_peer / peer_s
    agree = difference <= PEER_TOLERANCE
    row = {"benchmark": f"{name} vs {peer}", "ours_per_s": ours_per_s, "reference_per_s": peer_per_s,
           "ratio": ours_per_s / peer_per_s, "target": target, "identical": agree}
    if target is None or not agree:
        row["informational"] = True
    print(f"{row['benchmark']}: ours {ours_per_s:,.1f} pairs/s, {peer} {peer_per_s:,.1f} pairs/s, "
          f"ours/peer {row['ratio']:.2f}x (target "
          f"{'none, informational' if target is None else f'>= {target:.2f}x'}), "
          f"max |difference| {difference:.3g}"
          + ("" if agree else f" -- DISAGREES beyond {PEER_TOLERANCE:g}: row is informational"), flush=True)
    return row


def peer_short_rows(n: int, rounds: int = 5) -> list:
    """ROUGE-1/2/L on short pairs, ours through the metric (``ROUGE(track=False).score_batch``, opik
    imported, one core) against each installed peer called pair by pair (one core), interleaved."""
    import opik  # noqa: F401

    from opik_metrics import ROUGE

    predictions, references = realistic_pairs(n)
    rows = []
    for module, package in (("rouge_score_rs", "rouge-score-rs"), ("fast_rouge", "rouge-rust"),
                            ("rapidrouge", "rapidrouge")):
        peer = _peer(module, package)
        if peer is None:
            continue
        count = min(n, _PEER_SHORT_PAIRS[module])
        preds, refs = predictions[:count], references[:count]
        for use_stemmer in ((False,) if module == "fast_rouge" else (False, True)):  # fast_rouge: no stemmer
            metric = ROUGE(rouge_types=ROUGE_TYPES, use_stemmer=use_stemmer, track=False)
            if module == "fast_rouge":
                score = peer.score
            else:
                score = peer.RougeScorer(list(ROUGE_TYPES), use_stemmer=use_stemmer).score
            ours_s, peer_s, scored, theirs = _interleaved(
                lambda: metric.score_batch(preds, refs),
                lambda: _unscanned(lambda: [score(r, p) for p, r in zip(preds, refs)]), rounds)  # score(target, prediction)
            difference = _max_difference([[r.value for r in results] for results in scored], theirs, ROUGE_TYPES)
            rows.append(_peer_row(f"ROUGE-1+2+L metric.score_batch, stemmer {'on' if use_stemmer else 'off'}, "
                                  f"one core", package, count, ours_s, count, peer_s, difference, None))
    return rows


def _unscanned(function):
    """``function()`` with the cyclic collector paused, as our metric path runs: with opik imported,
    each collection rescans its ~470k objects, which would slow a peer for no fault of its own."""
    from opik_metrics.metric_kit.collector import collector_paused

    with collector_paused():
        return function()


def peer_both_cores_rows(n: int, rounds: int = 3) -> list:
    """ROUGE-1/2/L on short pairs through the metric on both cores (``score_batch(workers=2)``,
    200,000 pairs; on rouge-score-rs, its own threads: the batch stays in this process) against
    rouge-score-rs's ``score`` pair by pair on one core, interleaved (``bench_rouge_compiled``
    compares with its ``score_batch``)."""
    import opik  # noqa: F401

    from opik_metrics import ROUGE
    from opik_metrics.execution import ScoringContext
    from opik_metrics.execution.worker_pools import available_cores

    peer = _peer("rouge_score_rs", "rouge-score-rs")
    if peer is None or available_cores() < 2:
        return []
    predictions, references = realistic_pairs(n)
    big = 200_000
    preds, refs = (predictions * (big // n + 1))[:big], (references * (big // n + 1))[:big]
    count = min(n, _PEER_SHORT_PAIRS["rouge_score_rs"])
    rows = []
    for use_stemmer in (False, True):
        metric = ROUGE(rouge_types=ROUGE_TYPES, use_stemmer=use_stemmer, track=False)
        with ScoringContext():       # a session's pool: started once, here, and kept for the timed batches
            metric.score_batch(preds[:40_000], refs[:40_000], workers=2)
            score = peer.RougeScorer(list(ROUGE_TYPES), use_stemmer=use_stemmer).score
            ours_s, peer_s, scored, theirs = _interleaved(
                lambda: metric.score_batch(preds, refs, workers=2),
                lambda: _unscanned(lambda: [score(r, p) for p, r in zip(preds[:count], refs[:count])]), rounds)
        difference = _max_difference([[r.value for r in results] for results in scored[:count]], theirs, ROUGE_TYPES)
        rows.append(_peer_row(f"ROUGE-1+2+L metric.score_batch, stemmer {'on' if use_stemmer else 'off'}, "
                              f"both cores (workers=2)", "rouge-score-rs (one core)", big, ours_s, count, peer_s,
                              difference, SHORT_PEER_TARGET))
        del scored
    return rows


def peer_lsum_rows(tokens: int = 800, rounds: int = 5) -> list:
    """ROUGE-Lsum alone at ``tokens`` tokens, the engine (one core) against each installed peer (one core)."""
    from opik_metrics.text.rouge.scorer import RougeScorer

    ours = RougeScorer(("rougeLsum",), engine="python")
    rows = []
    # (module, package, pairs, rounds, target): rapidrouge's Lsum is rouge-score's O(n·m) DP table
    for module, package, count, peer_rounds, target in (
            ("rouge_score_rs", "rouge-score-rs", 24, rounds, LSUM_PEER_TARGET),
            ("rapidrouge", "rapidrouge", 2, 3, None)):
        peer = _peer(module, package)
        if peer is None:
            continue
        pairs = long_pairs(tokens, count, seed=tokens)
        theirs_scorer = peer.RougeScorer(["rougeLsum"])
        ours_s, peer_s, mine, theirs = _interleaved(
            lambda: [ours.score(p, r) for p, r in pairs],
            lambda: [theirs_scorer.score(r, p) for p, r in pairs], peer_rounds)
        difference = _max_difference(
            [[x for s in (m["rougeLsum"],) for x in (s.precision, s.recall, s.fmeasure)] for m in mine],
            theirs, ("rougeLsum",))
        rows.append(_peer_row(f"ROUGE-Lsum engine, {tokens} tokens, one core", package, count, ours_s,
                              count, peer_s, difference, target))
    return rows


def main(n: int = 10_000) -> list:
    """The short-pair engine rows on ``realistic_pairs(n)``, the summary metric row and the
    ROUGE-Lsum scaling rows, then the optional peer rows; print and return them."""
    rows = short_pair_rows(n)
    for row in rows:
        _print(row)
    rows.append(summary_metric_row())
    _print(rows[-1])
    rows += scaling_rows()
    rows += peer_lsum_rows()
    rows += peer_short_rows(n)
    rows += peer_both_cores_rows(n)
    return rows


if __name__ == "__main__":
    main()
