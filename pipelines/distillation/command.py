"""``python -m opik_metrics.pipelines.distillation``: its arguments, read before anything heavy is
imported, so that ``--help`` and usage errors come at once."""
from __future__ import annotations

import argparse
import sys

from opik_metrics.core.extras import require_extra
from opik_metrics.experiments.store import STORE_ENV
from opik_metrics.pipelines.distillation.data import QUICK

DESCRIPTION = """Distil a causal LM teacher (default: the packaged SmolLM2) into a student made of its first
layers, then run one experiment per model on held-out text: perplexity, teacher-student KL,
ROUGE (and BERTScore when available) of their continuations.

With an Opik server configured the experiments go to ``opik.evaluate``; without one (or with
``--store``) they land in the local experiment store (``opik-metrics experiments list``), each
run replacing the previous one. The training history is written to ``<out>/training_history.json``.
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m opik_metrics.pipelines.distillation", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--teacher", default="packaged:smollm2", help="teacher: hub id, local dir, .gguf or packaged alias")
    p.add_argument("--student-layers", type=int, default=4, help="student = the teacher's first N layers")
    p.add_argument("--steps", type=int, default=40, help="distillation steps")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--temperature", type=float, default=2.0, help="softening temperature T (loss and KL metric)")
    p.add_argument("--alpha", type=float, default=0.5, help="weight of the task loss; 1 - alpha goes to T^2 KL")
    p.add_argument("--max-new-tokens", type=int, default=16, help="length of each generated continuation")
    p.add_argument("--bertscore-model", default="packaged:minilm")
    p.add_argument("--no-bertscore", action="store_true", help="leave BERTScore out")
    p.add_argument("--backend", choices=["auto", "opik", "local"], default="auto",
                   help="auto: opik.evaluate when an Opik server is configured, else the local store")
    p.add_argument("--project-name", default=None, help="Opik project (server runs only)")
    p.add_argument("--store", default=None,
                   help=f"local experiment store (SQLite; default ${STORE_ENV} or the user data folder); "
                        "implies --backend local unless --backend opik")
    p.add_argument("--out", default="runs/distillation", help="folder for the student and its training history")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true",
                   help=f"CI-sized run: {QUICK['steps']} steps, {QUICK['heldout']} held-out items, "
                        f"{QUICK['max_new_tokens']} new tokens")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.quick:
        args.steps = min(args.steps, QUICK["steps"])
        args.max_new_tokens = min(args.max_new_tokens, QUICK["max_new_tokens"])
    require_extra("neural", "the distillation pipeline")          # one line, before the heavy imports
    from opik_metrics.pipelines.distillation.pipeline import run   # heavy (torch, opik): after the arguments

    try:
        summaries = run(args)
    except (ValueError, RuntimeError) as exc:  # bad options, unloadable models, server down: one clear line
        print(f"distillation: error: {exc}", file=sys.stderr)
        return 2
    if summaries[0].backend == "local":
        print(f"store: {summaries[0].location}")
    else:
        print("opik: " + ", ".join(s.location for s in summaries))
    return 0


