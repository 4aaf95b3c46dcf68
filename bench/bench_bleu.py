"""Speed of our BLEU against sacrebleu 2.6.0 on realistic pairs, sentence and corpus BLEU: the
engine (``BLEUScorer``) and the Opik metric a user calls (``BLEU(track=False).score_batch`` and
``.corpus_score``, with ``opik`` imported).

Fair timing: sacrebleu's tokenizers memoise with ``functools.lru_cache`` on the class method
(shared by every instance), so all those caches are cleared before each timed run of either side
(ours too). The sides are timed alternately, ``repeats`` times; the engine rows count each side's
best run, the metric rows each side's median run (the machine is shared).

Optional peer row, skipped with a printed note when the package is not importable (it is not a
dependency): bleuscore (Rust), sentence BLEU called pair by pair (``bleuscore.compute`` is a corpus
call; one pair per call gives sentence BLEU). bleuscore has no exp smoothing and no effective order,
so both sides run the configuration it has: ours ``BLEU(smooth_method="none", effective_order=False)``,
bleuscore ``smooth=False, ref_len_method="closest"`` (sacrebleu's). Ratio ours / peer (pairs/s);
"identical" when score, precisions, BP and lengths agree to 1e-6; informational (no issue target).
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Callable

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")   # importing opik needs no network

from sacrebleu.metrics import BLEU  # noqa: E402

from tests.corpus import realistic_pairs  # noqa: E402
from opik_metrics.text.bleu.scorer import BLEUScorer  # noqa: E402
from opik_metrics.text.tokenizers.tokenizer_13a import tokenize_13a  # noqa: E402

TARGET = 1.5
METRIC_TARGET = 3.0     # issue 16: sentence and corpus BLEU through the metric, at least 3x sacrebleu


def clear_tokenizer_caches() -> None:
    """Empty the lru_caches of every loaded sacrebleu tokenizer class, and of our 13a tokenizer."""
    tokenize_13a.cache_clear()
    for name, module in list(sys.modules.items()):
        if not name.startswith("sacrebleu.tokenizers.") or module is None:
            continue
        for obj in vars(module).values():
            if isinstance(obj, type):
                for attr in vars(obj).values():
                    attr = getattr(attr, "__func__", attr)  # staticmethod-wrapped caches too
                    clear = getattr(attr, "cache_clear", None)
                    if clear is not None:
                        clear()


def _timed(run: Callable[[], object]) -> tuple[float, object]:
    """Seconds one run takes, starting from empty tokenizer caches, and its result."""
    clear_tokenizer_caches()
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def _race(mine: Callable[[], object], theirs: Callable[[], object], repeats: int, pick=min):
    """``pick`` (best, or median) of ``repeats`` times of each side, the sides alternating (and
    swapping who goes first) so that both see the same machine load; plus each side's last result."""
    times: tuple = ([], [])
    out = [None, None]
    for rep in range(repeats):
        order = (0, 1) if rep % 2 == 0 else (1, 0)
        for side in order:
            seconds, out[side] = _timed((mine, theirs)[side])
            times[side].append(seconds)
    return pick(times[0]), pick(times[1]), out[0], out[1]


def _same(oracle, ours) -> bool:
    """Identical numbers: score, precisions and BP equal sacrebleu's / 100 bit for bit (the score
    clamped to 1.0, where sacrebleu's rounding gives 100.00000000000004), integers equal."""
    return (
        ours.score == min(oracle.score / 100, 1.0)
        and ours.precisions == tuple(p / 100 for p in oracle.precisions)
        and ours.bp == oracle.bp
        and list(ours.counts) == list(oracle.counts)
        and list(ours.totals) == list(oracle.totals)
        and (ours.sys_len, ours.ref_len) == (oracle.sys_len, oracle.ref_len)
    )


def _row(name: str, n: int, ours_s: float, ref_s: float, identical: bool, target: float = TARGET) -> dict:
    return {
        "benchmark": name,
        "ours_per_s": n / ours_s,
        "reference_per_s": n / ref_s,
        "ratio": ref_s / ours_s,
        "target": target,
        "identical": identical,
    }


def _same_metric(oracle, result) -> bool:
    """A metric ScoreResult carries sacrebleu's numbers: value, precisions, BP, counts, lengths."""
    meta = result.metadata
    return (
        result.value == min(oracle.score / 100, 1.0)
        and meta["precisions"] == [p / 100 for p in oracle.precisions]
        and meta["bp"] == oracle.bp
        and meta["counts"] == list(oracle.counts) and meta["totals"] == list(oracle.totals)
        and (meta["sys_len"], meta["ref_len"]) == (oracle.sys_len, oracle.ref_len)
    )


def metric_rows(n: int, repeats: int = 5) -> list[dict]:
    """Sentence and corpus BLEU through the Opik metric (``opik`` imported, as in ``opik.evaluate``)
    against sacrebleu on the same ``n`` pairs; each side's median of ``repeats`` interleaved runs."""
    import opik  # noqa: F401

    from opik_metrics import BLEU as MetricBLEU

    preds, refs = realistic_pairs(n)
    metric = MetricBLEU(track=False)
    oracle = BLEU(effective_order=True)
    ours_s, ref_s, scored, theirs = _race(
        lambda: metric.score_batch(preds, refs),
        lambda: [oracle.sentence_score(h, [r]) for h, r in zip(preds, refs)],
        repeats, pick=statistics.median)
    identical = len(scored) == len(theirs) == n and all(_same_metric(o, s[0]) for o, s in zip(theirs, scored))
    rows = [_row("sentence BLEU, metric.score_batch", n, ours_s, ref_s, identical, METRIC_TARGET)]
    ours_s, ref_s, corpus, want = _race(
        lambda: metric.corpus_score(preds, refs),
        lambda: BLEU().corpus_score(preds, [refs]),
        repeats, pick=statistics.median)
    rows.append(_row("corpus BLEU, metric.corpus_score", n, ours_s, ref_s, _same_metric(want, corpus),
                     METRIC_TARGET))
    return rows


PEER_TOLERANCE = 1e-6


def peer_rows(n: int, repeats: int = 5) -> list[dict]:
    """Sentence BLEU through ``BLEU.score_batch`` against bleuscore, if installed, on the same pairs
    (at most 5,000); each side's median of ``repeats`` interleaved runs."""
    try:
        import bleuscore
    except ImportError as error:
        print(f"(peer bleuscore not installed, its row skipped: {error})", flush=True)
        return []
    import opik  # noqa: F401

    from opik_metrics import BLEU as MetricBLEU

    count = min(n, 5000)
    preds, refs = realistic_pairs(count)
    metric = MetricBLEU(smooth_method="none", effective_order=False, track=False)
    ours_s, peer_s, scored, theirs = _race(
        lambda: metric.score_batch(preds, refs),
        lambda: [bleuscore.compute([[r]], [h], max_order=4, smooth=False, ref_len_method="closest")
                 for h, r in zip(preds, refs)],
        repeats, pick=statistics.median)
    difference = float("inf") if len(scored) != len(theirs) else max((
        max(abs(s[0].value - t["bleu"]), abs(s[0].metadata["bp"] - t["brevity_penalty"]),
            *(abs(a - b) for a, b in zip(s[0].metadata["precisions"], t["precisions"])),
            0.0 if (s[0].metadata["sys_len"], s[0].metadata["ref_len"])
            == (t["translation_length"], t["reference_length"]) else float("inf"))
        for s, t in zip(scored, theirs)), default=0.0)
    agree = difference <= PEER_TOLERANCE
    row = {**_row("sentence BLEU, metric.score_batch (smooth none) vs bleuscore", count, ours_s, peer_s, agree,
                  None), "informational": True}
    print(f"{row['benchmark']}: ours {row['ours_per_s']:,.0f} pairs/s, bleuscore {row['reference_per_s']:,.0f} "
          f"pairs/s, ours/peer {row['ratio']:.2f}x (no target, informational), max |difference| {difference:.3g}"
          + ("" if agree else f" -- DISAGREES beyond {PEER_TOLERANCE:g}"), flush=True)
    return [row]


def main(n: int = 10_000, repeats: int = 3) -> list[dict]:
    """Time sentence and corpus BLEU on ``n`` realistic pairs; print and return one row each."""
    preds, refs = realistic_pairs(n)
    pairs = list(zip(preds, refs))
    ours = BLEUScorer()
    oracle = BLEU(effective_order=True)  # created once: sacrebleu's fastest sentence-level use

    # Sentence BLEU: the pairs in chunks, the two sides raced chunk by chunk (best of `repeats`
    # per chunk, summed), so that a burst of load on a shared machine hits both alike.
    chunk = max(1, min(1000, n // 10))
    ours_s = ref_s = 0.0
    identical = True
    for start in range(0, n, chunk):
        part = pairs[start:start + chunk]
        mine, theirs, ours_out, ref_out = _race(
            lambda part=part: [ours.sentence_score(h, [r]) for h, r in part],
            lambda part=part: [oracle.sentence_score(h, [r]) for h, r in part],
            repeats,
        )
        ours_s += mine
        ref_s += theirs
        identical = identical and len(ours_out) == len(ref_out) and all(map(_same, ref_out, ours_out))
    rows = [_row("sentence BLEU", n, ours_s, ref_s, identical)]

    # Corpus BLEU: one call over all pairs per side.
    ours_s, ref_s, ours_out, ref_out = _race(
        lambda: ours.corpus_score(preds, refs),
        lambda: BLEU().corpus_score(preds, [refs]),
        repeats,
    )
    rows.append(_row("corpus BLEU", n, ours_s, ref_s, _same(ref_out, ours_out)))
    rows += metric_rows(n)

    for row in rows:
        print(
            f"{row['benchmark']:33s} ours {row['ours_per_s']:9.0f} pairs/s  "
            f"sacrebleu {row['reference_per_s']:9.0f} pairs/s  ratio {row['ratio']:.2f}x "
            f"(target {row['target']}x)  identical={row['identical']}"
        )
    rows += peer_rows(n)
    return rows


if __name__ == "__main__":
    main()
