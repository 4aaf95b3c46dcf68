"""Scoring production traces end to end (``opik_metrics.score_traces``): 100,000 caption traces on
the REST stand-in (its own process, so the scorer's memory is measured alone), read through the
SDK's search in pages, scored with ROUGE-L and BLEU, 400,000 feedback scores written back and read
back; traces a second, and the scorer's resident memory sampled through the run (flat: it holds a
page and the block being checked, not the project). The reference is the two metrics'
``score_batch`` on the same pairs in memory; the scores on the server must equal theirs.

A second row: CLIPScore through ``score_traces`` (traces whose input holds a JPEG's path, five
references in their metadata, on a stand-in in this process) against bench_clipscore's bare CLIP
forward passes (``Bare``: transformers and torch alone) on the same files, with bench_clipscore's
random-weight ViT-B/32-shape CLIP; a cost, at most 1.2x as bench_clipscore's target, and the
server's CLIP-S and RefCLIP-S equal to the bare ones within 1e-5. One timed run a side, after a
warm-up each (bench_clipscore races blocks in turn; this row is a single pass: noisier)."""
from __future__ import annotations

import multiprocessing
import resource
import threading
import time
from pathlib import Path

from tests.captions import caption_sets

TARGET_PER_S = 2000.0
PROJECT = "bench-captions"


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _serve(n: int, urls: "multiprocessing.Queue", done: "multiprocessing.Event", answers: "multiprocessing.Queue") -> None:
    """The stand-in with ``n`` traces seeded as the backend keeps them; on ``done``, the stored scores."""
    from opik.id_helpers import generate_id

    from tests.opik_rest_server import OpikRestServer

    cands, refs = caption_sets(n, 1, seed=0)
    with OpikRestServer(check_answers=False) as server:     # the requests' rules stay; its own answers' check goes
        server.project(PROJECT)
        for k in range(n):
            trace_id = generate_id()
            server.traces[trace_id] = {"id": trace_id, "project_name": PROJECT, "name": "caption",
                                       "start_time": "2026-11-20T00:00:00Z", "input": {"image": f"{k}.jpg"},
                                       "output": {"output": cands[k]}, "metadata": {"reference": refs[k][0], "k": k}}
        urls.put(server.url)
        done.wait()
        stored = {t["metadata"]["k"]: {name: s["value"] for name, s in
                                       server.feedback_scores.get(("trace", tid), {}).items()}
                  for tid, t in server.traces.items()}
        answers.put((stored, len(server.invalid), len(server.unexpected)))


def main(n: int = 100_000) -> list[dict]:
    import os

    from opik_metrics import BLEU, ROUGE

    context = multiprocessing.get_context("spawn")
    urls, answers, done = context.Queue(), context.Queue(), context.Event()
    server = context.Process(target=_serve, args=(n, urls, done, answers), daemon=True)
    server.start()
    url = urls.get(timeout=600)
    os.environ["OPIK_URL_OVERRIDE"] = url
    import opik
    from opik.api_objects import opik_client

    from opik_metrics.traces import score_traces
    opik_client.reset_global_client()
    client = opik.Opik(project_name=PROJECT)
    metrics = [ROUGE(rouge_types=("rougeL",), track=False), BLEU(track=False)]
    samples: list[tuple[float, float]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append((time.perf_counter(), _rss_mb()))
            stop.wait(0.5)

    start_rss = _rss_mb()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    report = score_traces(PROJECT, metrics, client=client, progress=False)
    seconds = time.perf_counter() - start
    stop.set()
    sampler.join()
    client.end()                    # the SDK's threads stop before the stand-in does (else its probe complains)
    done.set()
    stored, invalid, unexpected = answers.get(timeout=600)
    server.join(timeout=60)

    cands, refs = caption_sets(n, 1, seed=0)
    start = time.perf_counter()
    direct = [[*r, *b] for r, b in zip(metrics[0].score_batch(cands, refs), metrics[1].score_batch(cands, refs))]
    direct_s = time.perf_counter() - start
    from opik_metrics.metric_kit.server_range import server_value
    identical = (report.complete and invalid == 0 and unexpected == 0 and len(stored) == n
                 and all(stored[k] == {r.name: server_value(r.value) for r in results} for k, results in enumerate(direct)))
    rates = n / seconds
    quarter = [s for s in samples if s[0] >= samples[0][0] + (samples[-1][0] - samples[0][0]) / 4] or samples
    rss = [mb for _, mb in quarter]
    along = [samples[min(len(samples) - 1, int(len(samples) * f))][1] for f in (0.25, 0.5, 0.75, 0.95)]
    print("scorer RSS at 25/50/75/95% of the run: " + ", ".join(f"{mb:.0f} MB" for mb in along)
          + " (the summary's bootstrap, drawn a block at a time, comes last)")
    print(f"score_traces {n:,} traces (ROUGE-L + BLEU, {report.sent_scores:,} feedback scores, read back): "
          f"{seconds:.1f} s = {rates:,.0f} traces/s (target {TARGET_PER_S:,.0f}); score_batch alone "
          f"{direct_s:.1f} s; scorer RSS {start_rss:.0f} MB before, {min(rss):.0f}-{max(rss):.0f} MB from a quarter "
          f"of the run on, peak {max(mb for _, mb in samples):.0f} MB; equal to score_batch: {identical}")
    rows = [{"benchmark": f"score_traces {n:,} traces from the stand-in, ROUGE-L + BLEU, written and read back "
                          f"(traces/s; scorer RSS {min(rss):.0f}-{max(rss):.0f} MB after the first quarter)",
             "ours_per_s": rates, "reference_per_s": n / direct_s, "ratio": rates / TARGET_PER_S, "target": 1.0,
             "identical": identical}]
    return rows + clipscore_rows()


def clipscore_rows(n: int = 64) -> list[dict]:
    """CLIPScore over ``n`` traces through score_traces against the bare forward passes."""
    import os
    import tempfile

    import numpy as np
    import opik
    from opik.api_objects import opik_client
    from PIL import Image

    from bench.bench_clipscore import TOLERANCE, Bare, build_clip_b32, distinct_caption_sets, make_image
    from opik_metrics.metrics.clipscore import CLIPScore
    from opik_metrics.traces import score_traces
    from tests.opik_rest_server import OpikRestServer

    with tempfile.TemporaryDirectory() as tmp, OpikRestServer() as server:
        folder = str(build_clip_b32(Path(tmp) / "clip"))
        bare = Bare(folder, 64)
        caps, refs = distinct_caption_sets(n, bare.tokenizer)
        files = []
        for k in range(n):
            files.append(str(Path(tmp) / f"image{k:04d}.jpg"))
            make_image(k).save(files[-1], quality=90)
        os.environ["OPIK_URL_OVERRIDE"] = server.url
        opik_client.reset_global_client()
        client = opik.Opik(project_name="bench-clip")
        ids = []
        for k in range(n):
            ids.append(client.trace(name="caption", input={"image": files[k]}, output={"output": caps[k]},
                                    metadata={"reference": refs[k]}, project_name="bench-clip").id)
        client.flush()
        bare(caps[:4], refs[:4], files[:4], opener=lambda p: Image.open(p).convert("RGB"))      # warm-up
        start = time.perf_counter()
        expected = bare(caps, refs, files, opener=lambda p: Image.open(p).convert("RGB"))
        bare_s = time.perf_counter() - start
        metric = CLIPScore(model=folder, track=False, batch_size=64)
        metric.score_batch(caps[:4], refs[:4], images=files[:4])                              # warm-up, load
        start = time.perf_counter()
        report = score_traces("bench-clip", [metric], client=client, progress=False, summary=False)
        ours_s = time.perf_counter() - start
        held = [server.feedback_scores.get(("trace", i), {}) for i in ids]
        got = np.array([[h.get("clip_score", {}).get("value", np.nan), h.get("ref_clip_score", {}).get("value", np.nan)]
                        for h in held])
        identical = report.complete and bool(np.all(np.abs(got - expected[:, [1, 3]]) <= TOLERANCE))
    print(f"score_traces CLIPScore {n} traces: {ours_s:.1f} s; bare CLIP forward passes {bare_s:.1f} s; cost "
          f"{ours_s / bare_s:.2f}x (target at most 1.2); equal within {TOLERANCE}: {identical}")
    return [{"benchmark": f"score_traces CLIPScore on {n} traces (JPEG paths, 5 references) vs bare CLIP forward "
                          "passes (cost)", "ours_per_s": n / ours_s, "reference_per_s": n / bare_s,
             "ratio": ours_s / bare_s, "target": 1.2, "lower_is_better": True, "identical": identical}]


if __name__ == "__main__":
    main()
