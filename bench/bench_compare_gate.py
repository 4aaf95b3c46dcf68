"""The CI gate end to end (issue 36): ``opik-metrics compare base.parquet new.parquet --fail-on worse
--resamples 1000`` on two record files of N items each (default 100,000), as a user runs it; then
(issue 47) the same items run 3 times each, the files keeping a ``trial`` column (3N rows a file:
the trials are merged into their item and the items resampled).

Set-up (not timed): two JSONL files of synthetic caption-like pairs (``tests.corpus``); the new
system's output drops one word in a third of the items (slightly worse), and its lines are shuffled
so pairing by id does work. Each is scored with ``opik-metrics score --input ... --output
....parquet -m rouge -m bleu --no-progress`` in a child process.

Timed: ``python -m opik_metrics compare ... --fail-on worse --resamples 1000`` in a child process,
so imports, reading and pairing the files, the paired bootstraps on every compared score (ROUGE
F1s, bleu, corpus_bleu from per-item statistics), Holm's correction and the decisions are all in.
Wall seconds, CPU seconds and peak RSS are the child's own (measured by a small parent process that
only waits for it). Rows (costs, ``lower_is_better``; no reference run):

- wall seconds against the issue's target, 30 s on 2 cores; ``ours_per_s`` = items per second;
  ``identical`` = the gate exited 1 (the new system is worse, as the data were built).
- peak RSS of the compare process in MB (informational, no target).

    python -m bench.bench_compare_gate [N]
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.corpus import realistic_pairs

N_ITEMS = 100_000
RESAMPLES = 1_000
TARGET_S = 30.0
ENV = {**os.environ, "OPIK_ANALYTICS_ENABLE": "false", "OPIK_SENTRY_ENABLE": "false", "HF_HUB_OFFLINE": "1",
       "TRANSFORMERS_OFFLINE": "1"}
# A parent that only runs the command and reports the child's wall time, CPU time and peak RSS.
_MEASURE = ("import json, resource, subprocess, sys, time; t = time.perf_counter(); "
            "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); w = time.perf_counter() - t; "
            "r = resource.getrusage(resource.RUSAGE_CHILDREN); "
            "print(json.dumps({'rc': p.returncode, 'wall': w, 'cpu': r.ru_utime + r.ru_stime, "
            "'peak_kb': r.ru_maxrss, 'stdout': p.stdout, 'stderr': p.stderr}))")


def _drop_a_word(text: str, rng: random.Random, chance: float) -> str:
    words = text.split()
    if len(words) > 3 and rng.random() < chance:
        del words[rng.randrange(len(words))]
    return " ".join(words)


def _write_systems(folder: Path, n: int, seed: int = 17, trials: int = 1) -> tuple[Path, Path]:
    """Baseline and new JSONL record inputs; the new output lacks one word in a third of the items.
    With ``trials``, each item is written that many times with a ``trial`` column, each trial of the
    new system drawn again (a nondeterministic system)."""
    outputs, references = realistic_pairs(n, seed=seed)
    rng = random.Random(seed)
    order = list(range(n))
    rng.shuffle(order)
    paths = folder / "base.jsonl", folder / "new.jsonl"
    for path, ids, worse in ((paths[0], range(n), False), (paths[1], order, True)):
        with open(path, "w", encoding="utf-8") as f:
            for k in ids:
                for t in range(trials):
                    text = _drop_a_word(outputs[k], rng, 1 / 3) if worse else outputs[k]
                    row = {"id": f"item-{k}", "output": text, "reference": references[k]}
                    f.write(json.dumps({**row, "trial": t} if trials > 1 else row) + "\n")
    return paths


def _score(jsonl: Path, trials: int = 1) -> Path:
    out = jsonl.with_suffix(".parquet")
    keep = ["--keep", "trial"] if trials > 1 else []
    subprocess.run([sys.executable, "-m", "opik_metrics", "score", "--input", str(jsonl), "--output", str(out),
                    "-m", "rouge", "-m", "bleu", "--no-progress", *keep], env=ENV, check=True, capture_output=True)
    return out


def main(n: int = N_ITEMS) -> list[dict]:
    """``n``: items per record file (default 100,000); 1,000 resamples; then the same items x 3 trials."""
    return _race(n) + _race(n, trials=3)


def _race(n: int, trials: int = 1) -> list[dict]:
    what = f"{n:,} items" + (f" x {trials} trials" if trials > 1 else "")
    with tempfile.TemporaryDirectory(prefix="bench-compare-gate-") as tmp:
        base, new = (_score(p, trials) for p in _write_systems(Path(tmp), n, trials=trials))
        print(f"{what} x 2 record files scored (ROUGE + BLEU); compare --fail-on worse, "
              f"{RESAMPLES:,} resamples", flush=True)
        load = os.getloadavg()
        proc = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "opik_metrics", "compare",
                               str(base), str(new), "--fail-on", "worse", "--resamples", str(RESAMPLES)],
                              env=ENV, capture_output=True, text=True, check=True)
        load_after = os.getloadavg()
    got = json.loads(proc.stdout)
    if got["rc"] not in (0, 1):
        raise RuntimeError(f"compare exited {got['rc']}: {got['stderr'][-2000:]}")
    seconds, cpu, peak_mb = got["wall"], got["cpu"], got["peak_kb"] / 1024
    print(got["stdout"].rstrip(), got["stderr"].rstrip(), sep="\n", flush=True)
    print(f"compare: {seconds:.1f} s wall, {cpu:.1f} s CPU, peak RSS {peak_mb:,.0f} MB, exit {got['rc']}; "
          f"load average {load[0]:.1f} before, {load_after[0]:.1f} after", flush=True)
    return [{"benchmark": f"compare --fail-on worse: 2 record files x {what} (ROUGE + BLEU), {RESAMPLES:,} "
                          f"resamples, child process, wall s ({cpu:.1f} s CPU, load {load[0]:.1f})",
             "ours_per_s": n / seconds, "reference_per_s": None, "ratio": seconds, "target": TARGET_S,
             "identical": got["rc"] == 1, "lower_is_better": True},
            {"benchmark": f"compare --fail-on worse: peak RSS MB ({what} x {RESAMPLES:,} resamples)",
             "ours_per_s": n / seconds, "reference_per_s": None, "ratio": peak_mb, "target": None,
             "identical": True, "lower_is_better": True, "informational": True}]


if __name__ == "__main__":
    print(main(int(sys.argv[1])) if len(sys.argv) > 1 else main())
