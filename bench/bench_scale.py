"""Benchmark: scoring at scale (issue "Scale"), through the command a user runs.

- Startup: ``opik-metrics score`` on 20 lines with ROUGE and BLEU against ``sacrebleu``'s CLI on
  the same files (wall time, median of interleaved runs); target at most 3x.
- One process: ROUGE-1/2/L + BLEU over N JSONL pairs (default 1,000,000) with ``--output
  scores.parquet --workers 1``; peak memory (the child's max RSS) under 1 GB, and the throughput.
- Both cores: the same on N/5 pairs with ``--workers 2`` (processes) against ``--workers 1``;
  target at least 1.7x.
- Ray: the same command with ``--engine ray --workers 2`` against ``--workers 1`` on N/5 pairs
  (Ray's startup included); target at least 1.6x on 2 cores. Rows must equal the local run's.
- BERTScore (packaged MiniLM) on Ray with 2 one-thread workers against one process using both
  cores (torch's threads): same cores, so the time ratio is the per-core ratio; target <= 1.3x.
  Once through the command (starts included), once started (each side after a warm-up batch).

Run: ``python -m bench.bench_scale [N]``.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.corpus import realistic_pairs

CLI = [os.path.join(os.path.dirname(sys.executable), "opik-metrics")]
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "OPIK_ANALYTICS_ENABLE": "false", "RAY_AUTH_MODE": os.environ.get("RAY_AUTH_MODE", "disabled")}


def _run(args: list[str]) -> tuple[float, int]:
    """Wall seconds and the child's peak RSS (bytes) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run(args, env=ENV, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:6])}... failed: {proc.stderr[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak, before) * 1024


def _peak_rss(args: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS of a command, measured by GNU time when present (exact per child)."""
    gnu_time = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
    if gnu_time is None:
        return _run(args)
    with tempfile.NamedTemporaryFile("r") as report:
        seconds, _ = _run([gnu_time, "-f", "%M", "-o", report.name, *args])
        return seconds, int(report.read().strip().splitlines()[-1]) * 1024


def _write_pairs(folder: Path, n: int) -> Path:
    predictions, references = realistic_pairs(min(n, 20_000), seed=13)
    path = folder / f"pairs-{n}.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for k in range(n):
            j = k % len(predictions)
            f.write(json.dumps({"output": predictions[j], "reference": references[j]}) + "\n")
    return path


def startup(folder: Path, repeats: int = 7) -> dict:
    predictions, references = realistic_pairs(20, seed=3)
    (folder / "p.txt").write_text("".join(p + "\n" for p in predictions))
    (folder / "r.txt").write_text("".join(r + "\n" for r in references))
    ours_cmd = [*CLI, "score", "-p", str(folder / "p.txt"), "-r", str(folder / "r.txt"), "--no-progress"]
    sacre = shutil.which("sacrebleu", path=os.path.dirname(sys.executable)) or shutil.which("sacrebleu")
    theirs_cmd = [sacre, str(folder / "r.txt"), "-i", str(folder / "p.txt")]
    ours, theirs = [], []
    for _ in range(repeats):
        ours.append(_run(ours_cmd)[0])
        theirs.append(_run(theirs_cmd)[0])
    o, t = statistics.median(ours), statistics.median(theirs)
    return {"benchmark": "startup: opik-metrics score (ROUGE+BLEU, 20 lines) vs sacrebleu CLI, wall s",
            "ours_per_s": 1 / o, "reference_per_s": 1 / t, "ratio": o / t, "target": 3.0, "identical": True,
            "lower_is_better": True, "seconds": (o, t)}


def one_process(folder: Path, n: int) -> tuple[dict, Path]:
    path = _write_pairs(folder, n)
    out = folder / "local.parquet"
    seconds, peak = _peak_rss([*CLI, "score", "-i", str(path), "-o", str(out), "--overwrite", "--no-progress",
                               "-m", "rouge", "-m", "bleu", "--workers", "1"])
    return ({"benchmark": f"one process: ROUGE-1/2/L+BLEU, {n:,} JSONL pairs -> parquet, peak RSS MB "
                          f"({n / seconds:,.0f} pairs/s)",
             "ours_per_s": n / seconds, "reference_per_s": None, "ratio": peak / 2**20, "target": 1024,
             "identical": True, "lower_is_better": True}, out)


def on_ray(folder: Path, n: int) -> dict:
    path = _write_pairs(folder, n)
    args = [*CLI, "score", "-i", str(path), "--overwrite", "--no-progress", "-m", "rouge", "-m", "bleu",
            "--engine", "ray"]
    t1, _ = _run([*args, "-o", str(folder / "ray1.parquet"), "--workers", "1"])
    t2, _ = _run([*args, "-o", str(folder / "ray2.parquet"), "--workers", "2"])
    _run([*CLI, "score", "-i", str(path), "-o", str(folder / "local-small.parquet"), "--overwrite", "--no-progress",
          "-m", "rouge", "-m", "bleu"])
    import pyarrow.parquet as pq
    same = (pq.read_table(folder / "ray2.parquet").equals(pq.read_table(folder / "local-small.parquet"))
            and pq.read_table(folder / "ray1.parquet").equals(pq.read_table(folder / "local-small.parquet")))
    return {"benchmark": f"Ray: ROUGE+BLEU, {n:,} pairs, 2 workers vs 1 (speed-up)", "ours_per_s": n / t2,
            "reference_per_s": n / t1, "ratio": t1 / t2, "target": 1.6, "identical": same}


def on_cores(folder: Path, n: int) -> dict:
    """The local engine on both cores (``--workers 2``, processes) against one (``--workers 1``)."""
    path = _write_pairs(folder, n)
    args = [*CLI, "score", "-i", str(path), "--overwrite", "--no-progress", "-m", "rouge", "-m", "bleu"]
    t1, _ = _run([*args, "-o", str(folder / "cores1.parquet"), "--workers", "1"])
    t2, _ = _run([*args, "-o", str(folder / "cores2.parquet"), "--workers", "2"])
    import pyarrow.parquet as pq
    same = pq.read_table(folder / "cores1.parquet").equals(pq.read_table(folder / "cores2.parquet"))
    return {"benchmark": f"one machine: ROUGE+BLEU, {n:,} pairs, --workers 2 (processes) vs 1 (speed-up)",
            "ours_per_s": n / t2, "reference_per_s": n / t1, "ratio": t1 / t2, "target": 1.7, "identical": same}


def bertscore_on_ray(folder: Path, n: int) -> dict:
    model = "packaged:minilm"
    path = _write_pairs(folder, n)
    args = [*CLI, "score", "-i", str(path), "--overwrite", "--no-progress", "-m", "bertscore",
            "--bertscore-model", model, "--format", "json"]
    local_s, _ = _run([*args, "-o", str(folder / "bs-local.parquet")])
    ray_s, _ = _run([*args, "-o", str(folder / "bs-ray.parquet"), "--engine", "ray", "--workers", "2"])
    import pyarrow.parquet as pq
    a, b = pq.read_table(folder / "bs-local.parquet").to_pylist(), pq.read_table(folder / "bs-ray.parquet").to_pylist()
    same = len(a) == len(b) and all(abs(x[k] - y[k]) <= 1e-6 for x, y in zip(a, b)
                                    for k in ("BERTPrecision", "BERTRecall", "BERTF1") if x[k] is not None)
    return {"benchmark": f"Ray: BERTScore (MiniLM), {n:,} pairs, 2 one-thread workers vs one process on 2 cores "
                         "(time ratio = per-core)", "ours_per_s": n / ray_s, "reference_per_s": n / local_s,
            "ratio": ray_s / local_s, "target": 1.3, "identical": same, "lower_is_better": True}


_STEADY = """
import json, os, sys, time
import torch
from opik_metrics.metrics.catalog import MetricRecipe
from tests.corpus import realistic_pairs

def rate(n):
    metric = MetricRecipe.of([("bertscore", {"model": "packaged:minilm", "track": False})])()[0]
    preds, refs = realistic_pairs(n + 64, seed=13)
    metric.score_batch(preds[:64], refs[:64])                      # first-call costs left out
    start = time.perf_counter()
    values = [r.value for item in metric.score_batch(preds[64:], refs[64:]) for r in item]
    return n / (time.perf_counter() - start), values

n = int(sys.argv[1])
if sys.argv[2] == "local":
    torch.set_num_threads(2)
    speed, values = rate(n)
    print("@@" + json.dumps({"speed": speed, "values": values}))
else:
    from opik_metrics.distributed.ray_engine import ensure_ray
    ensure_ray(None, 2)              # the engine's own local cluster, on loopback
    import ray
    got = ray.get([ray.remote(num_cpus=1)(rate).remote(n) for _ in range(2)])
    print("@@" + json.dumps({"speed": sum(g[0] for g in got), "values": got[0][1]}))
"""


def bertscore_steady_state(n: int = 600) -> dict:
    """BERTScore per core once started: two one-thread Ray workers (each scoring ``n`` pairs
    after a warm-up batch, at once) against one process using both cores on the same pairs."""
    root = Path(__file__).resolve().parent.parent

    def run(mode: str) -> dict:
        proc = subprocess.run([sys.executable, "-c", _STEADY, str(n), mode], env={**ENV, "PYTHONPATH": str(root)},
                              capture_output=True, text=True, cwd=root)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("@@")]
        if proc.returncode != 0 or not lines:
            raise RuntimeError(f"steady-state {mode} run failed: {proc.stderr[-2000:]}")
        return json.loads(lines[-1][2:])

    local, on_ray = run("local"), run("ray")
    same = len(local["values"]) == len(on_ray["values"]) and all(
        abs(a - b) <= 1e-6 for a, b in zip(local["values"], on_ray["values"]))
    return {"benchmark": f"Ray: BERTScore (MiniLM) once started, {n} pairs a worker, 2 one-thread workers vs one "
                         "process on 2 cores (time ratio = per-core)", "ours_per_s": on_ray["speed"],
            "reference_per_s": local["speed"], "ratio": local["speed"] / on_ray["speed"], "target": 1.3,
            "identical": same, "lower_is_better": True}


def main(n: int = 1_000_000) -> list:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows.append(startup(folder))
        print(f"startup: ours {rows[-1]['seconds'][0]:.3f} s, sacrebleu {rows[-1]['seconds'][1]:.3f} s, "
              f"ratio {rows[-1]['ratio']:.2f} (target <= 3)", flush=True)
        row, _ = one_process(folder, n)
        rows.append(row)
        print(f"{row['benchmark']}: {row['ratio']:.0f} MB (target < 1024)", flush=True)
        rows.append(on_cores(folder, max(1000, n // 5)))
        print(f"{rows[-1]['benchmark']}: {rows[-1]['ratio']:.2f}x (target >= 1.7), identical {rows[-1]['identical']}",
              flush=True)
        rows.append(on_ray(folder, max(1000, n // 5)))
        print(f"{rows[-1]['benchmark']}: {rows[-1]['ratio']:.2f}x (target >= 1.6), identical {rows[-1]['identical']}",
              flush=True)
        rows.append(bertscore_on_ray(folder, max(200, n // 500)))
        print(f"{rows[-1]['benchmark']}: {rows[-1]['ratio']:.2f} (target <= 1.3), identical {rows[-1]['identical']}",
              flush=True)
        rows.append(bertscore_steady_state())
        print(f"{rows[-1]['benchmark']}: {rows[-1]['ratio']:.2f} (target <= 1.3), identical {rows[-1]['identical']}",
              flush=True)
    for row in rows:
        row.pop("seconds", None)
    return rows


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
