"""Benchmark (issue 58): the ROUGE metric as a user calls it (``ROUGE(track=False).score_batch``, on
rouge-score-rs where it applies) against rouge-score-rs's own ``score_batch`` on the same pairs.

Rows: three shapes (short one-sentence pairs, ~6-sentence summaries, ~25-sentence long texts),
stemmer off and on, both sides on one thread (``RAYON_NUM_THREADS=1``, set in a child process
before rouge-score-rs starts its pool), best of 5; the ratio is ours / theirs in pairs/s (target
0.9x). Then our metric on two threads against itself on one (target 1.7x). Every P/R/F of ours
is checked equal (==) to rouge-score-rs's first.

Run: ``python -m bench.bench_rouge_compiled``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

TARGET_RATIO = 0.9
TARGET_SCALING = 1.7
TYPES = ("rouge1", "rouge2", "rougeL")
SHAPES = {"short": (4000, 1), "summaries": (600, 6), "long": (120, 25)}   # pairs, sentences per text

_CHILD = r"""
import json, os, sys, time
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from tests.corpus import realistic_pairs
from opik_metrics import ROUGE
import rouge_score_rs

pairs, sentences, stem, rounds = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
types = ["rouge1", "rouge2", "rougeL"]
preds, refs = realistic_pairs(pairs * sentences, seed=7)
outputs = [" ".join(preds[k * sentences:(k + 1) * sentences]) for k in range(pairs)]
references = [" ".join(refs[k * sentences:(k + 1) * sentences]) for k in range(pairs)]
metric = ROUGE(rouge_types=types, use_stemmer=stem, track=False)
peer = rouge_score_rs.RougeScorer(types, use_stemmer=stem)

def ours():
    return metric.score_batch(outputs, references)

def theirs():
    return peer.score_batch(references, outputs)

mine, peer_scores = ours(), theirs()
want = [x for s in peer_scores for t in types for x in (s[t].precision, s[t].recall, s[t].fmeasure)]
identical = [r.value for item in mine for r in item] == want
best = {"ours": float("inf"), "theirs": float("inf")}
for k in range(rounds):
    for side, call in (("ours", ours), ("theirs", theirs)) if k % 2 == 0 else (("theirs", theirs), ("ours", ours)):
        start = time.perf_counter()
        call()
        best[side] = min(best[side], time.perf_counter() - start)
print(json.dumps({"engine": metric._scorer.engine, "identical": identical,
                  "ours_per_s": pairs / best["ours"], "theirs_per_s": pairs / best["theirs"]}))
"""


def _run(pairs: int, sentences: int, stem: bool, threads: int, rounds: int = 5) -> dict:
    env = {**os.environ, "RAYON_NUM_THREADS": str(threads)}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(pairs), str(sentences), "1" if stem else "0", str(rounds)],
                          env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> list[dict]:
    rows = []
    for shape, (pairs, sentences) in SHAPES.items():
        for stem in (False, True):
            got = _run(pairs, sentences, stem, threads=1)
            what = f"{shape} ({pairs:,} pairs, {sentences} sentence{'s' if sentences > 1 else ''}), stemmer {'on' if stem else 'off'}"
            row = {"benchmark": f"ROUGE-1/2/L metric score_batch vs rouge-score-rs score_batch, one thread: {what} "
                                f"[engine {got['engine']}]",
                   "ours_per_s": got["ours_per_s"], "reference_per_s": got["theirs_per_s"],
                   "ratio": got["ours_per_s"] / got["theirs_per_s"], "target": TARGET_RATIO,
                   "identical": got["identical"]}
            print(json.dumps(row), flush=True)
            rows.append(row)
    pairs, sentences = SHAPES["summaries"]
    one, two = _run(pairs, sentences, True, threads=1), _run(pairs, sentences, True, threads=2)
    row = {"benchmark": f"ROUGE-1/2/L metric score_batch, summaries, stemmer on: two threads vs one "
                        f"(load {os.getloadavg()[0]:.1f})",
           "ours_per_s": two["ours_per_s"], "reference_per_s": one["ours_per_s"],
           "ratio": two["ours_per_s"] / one["ours_per_s"], "target": TARGET_SCALING,
           "identical": one["identical"] and two["identical"]}
    print(json.dumps(row), flush=True)
    rows.append(row)
    return rows


if __name__ == "__main__":
    main()
