"""Distil a causal LM teacher (default: the packaged SmolLM2) into a student made of its first
layers, then run one experiment per model on held-out text: perplexity, teacher-student KL,
ROUGE (and BERTScore when available) of their continuations.

    python -m pipelines.distillation [--quick] [--teacher NAME_OR_PATH] [--out DIR]

With an Opik server configured the experiments go to ``opik.evaluate``; without one, per-item
scores and the experiment config land in ``<out>/distillation_results.json``.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

import opik
import torch

from opik_metrics.metrics.distillation import DistillationKL
from opik_metrics.metrics.perplexity import Perplexity
from opik_metrics.metrics.rouge import ROUGE
from opik_metrics.neural.causal_lm import CausalLM, load_causal_lm
from opik_metrics.versions import package_version

from .distillation_data import TRAIN_TEXTS, heldout_items
from .distillation_experiments import JsonResults, choose_runner
from .distillation_student import TrainConfig, train_student, truncated_student

QUICK = {"steps": 4, "heldout": 3, "max_new_tokens": 8}


@opik.track(name="generate_continuation")
def generate(model: str, prompt: str, max_new_tokens: int, device: str | None = None) -> str:
    """Greedy continuation of ``prompt`` by the model called ``model`` (loaded once, cached)."""
    lm = load_causal_lm(model, device=device)
    tok = lm.tokenizer
    ids = ([tok.bos_token_id] if tok.bos_token is not None else []) + tok(prompt, add_special_tokens=False).input_ids
    x = torch.tensor([ids], device=lm.device)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    with torch.inference_mode():
        out = lm.model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=max_new_tokens,
                                do_sample=False, pad_token_id=pad)
    return tok.decode(out[0, len(ids):], skip_special_tokens=True).strip()


def _bertscore(args: argparse.Namespace, track: bool) -> tuple[Any | None, str]:
    """BERTScore when the pack has it and it loads; otherwise None and why."""
    if args.no_bertscore:
        return None, "skipped (--no-bertscore)"
    if importlib.util.find_spec("opik_metrics.metrics.bertscore") is None:
        return None, "skipped (opik_metrics.metrics.bertscore is not available)"
    try:
        from opik_metrics.metrics.bertscore import BERTScore

        return BERTScore(model=args.bertscore_model, track=track), f"model {args.bertscore_model}"
    except Exception as exc:  # optional metric: report, do not fail the pipeline
        return None, f"skipped ({type(exc).__name__}: {exc})"


def build_student(teacher: CausalLM, args: argparse.Namespace, out: Path) -> tuple[str, list[dict]]:
    """Make, distil and save the student; returns its directory and the training history."""
    cfg = TrainConfig(steps=args.steps, batch_size=args.batch_size, lr=args.lr, temperature=args.temperature,
                      alpha=args.alpha, seed=args.seed)
    student = truncated_student(teacher, args.student_layers)
    history = train_student(teacher, student, TRAIN_TEXTS, cfg, progress=not args.no_progress)
    folder = out / "student"
    student.save_pretrained(folder)
    teacher.tokenizer.save_pretrained(folder)
    return str(folder), history


def run(args: argparse.Namespace) -> Path:
    """The whole pipeline; returns the results file."""
    runner, why = choose_runner(args.backend, args.project_name)
    was_tracing = opik.is_tracing_active()
    opik.set_tracing_active(runner.backend == "opik")  # no server: @opik.track must not try to send
    try:
        return _run(args, runner, why)
    finally:
        opik.set_tracing_active(was_tracing)


def _run(args: argparse.Namespace, runner: Any, why: str) -> Path:
    out = Path(args.out)
    started = time.time()
    teacher = load_causal_lm(args.teacher, device=args.device)
    student_dir, history = build_student(teacher, args, out)
    student = load_causal_lm(student_dir, device=args.device)  # through from_pretrained, as a user would
    items = heldout_items(QUICK["heldout"] if args.quick else None)
    bertscore, bertscore_note = _bertscore(args, runner.backend == "opik")
    run_config = {
        "teacher": args.teacher, "teacher_signature": teacher.signature, "student": student_dir,
        "student_layers": args.student_layers, "teacher_layers": teacher.model.config.num_hidden_layers,
        "train": {"texts": len(TRAIN_TEXTS), "steps": args.steps, "batch_size": args.batch_size, "lr": args.lr,
                  "temperature": args.temperature, "alpha": args.alpha, "seed": args.seed},
        "heldout_items": len(items), "max_new_tokens": args.max_new_tokens, "quick": args.quick,
        "backend": runner.backend, "backend_reason": why, "bertscore": bertscore_note,
        "versions": {p: package_version(p) for p in ("opik-metrics", "opik", "torch", "transformers")},
    }
    results = JsonResults(out / "distillation_results.json", run_config)
    results.set("training", history)
    for role, lm in (("teacher", teacher), ("student", student)):
        record = run_experiment(runner, role, lm, teacher, items, bertscore, args, run_config)
        results.add(record)
        print(f"{role}: " + ", ".join(f"{k}={v:.4g}" for k, v in record.experiment_scores.items() if v is not None))
    results.set("wall_s", round(time.time() - started, 2))
    if runner.backend == "opik":
        opik.flush_tracker()
    return results.write()


def run_experiment(runner: Any, role: str, lm: CausalLM, teacher: CausalLM, items: list[dict],
                   bertscore: Any | None, args: argparse.Namespace, run_config: dict):
    """One experiment for one model: its continuations of the prompts, perplexity of the held-out
    text, KL(teacher || model) on it, ROUGE (and BERTScore) of the continuations."""
    track = runner.backend == "opik"
    ppl = Perplexity(model=lm, text_field="text", track=track)
    kl = DistillationKL(teacher=teacher, student=lm, temperature=args.temperature, text_field="text", track=track)
    metrics = [ppl, kl, ROUGE(track=track)] + ([bertscore] if bertscore is not None else [])
    config = {"role": role, "model": lm.name, "perplexity_signature": ppl.signature, "kl_signature": kl.signature,
              **{k: run_config[k] for k in ("teacher", "student_layers", "train")}}

    def task(item: dict) -> dict:
        return {"output": generate(lm.name, item["prompt"], args.max_new_tokens, args.device)}

    return runner.run(f"distillation-{role}", items, task, metrics, config, [ppl.experiment_score, kl.experiment_score])


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pipelines.distillation", description=__doc__,
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
                   help="auto: opik.evaluate when an Opik server answers, else a local JSON results file")
    p.add_argument("--project-name", default=None, help="Opik project (server runs only)")
    p.add_argument("--out", default="runs/distillation", help="folder for the student and the results file")
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
    try:
        path = run(args)
    except (ValueError, RuntimeError) as exc:  # bad options, unloadable models: one clear line
        print(f"distillation: error: {exc}", file=sys.stderr)
        return 2
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
