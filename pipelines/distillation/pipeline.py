"""Distil a causal LM teacher (default: the packaged SmolLM2) into a student made of its first
layers, then run one experiment per model on held-out text: perplexity, teacher-student KL,
ROUGE (and BERTScore when available) of their continuations.

    python -m opik_metrics.pipelines.distillation [--quick] [--teacher NAME_OR_PATH] [--out DIR]

With an Opik server configured the experiments go to ``opik.evaluate``; without one (or with
``--store``) they land in the local experiment store (``opik-metrics experiments list``), each
run replacing the previous one. The training history is written to ``<out>/training_history.json``.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path
from typing import Any

import opik
import torch

from opik_metrics.experiments.opik_server import CLI_LOCAL_ADVICE, Backend, choose_backend
from opik_metrics.experiments.runner import run_experiment
from opik_metrics.experiments.spans import traced
from opik_metrics.experiments.summary import ExperimentSummary
from opik_metrics.metrics.distillation import DistillationKL
from opik_metrics.metrics.perplexity import Perplexity
from opik_metrics.metrics.rouge import ROUGE
from opik_metrics.neural.models.causal_lm import CausalLM, load_causal_lm

from opik_metrics.pipelines.distillation.data import QUICK, TRAIN_TEXTS, heldout_items
from opik_metrics.pipelines.distillation.student import TrainConfig, train_student, truncated_student

DATASET_NAME = "opik-metrics-distillation"


@traced("generate_continuation")
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


def run(args: argparse.Namespace) -> list[ExperimentSummary]:
    """The whole pipeline; returns the two experiments' summaries (teacher, student)."""
    backend = choose_backend("local" if args.store and args.backend == "auto" else args.backend,
                             local_advice=CLI_LOCAL_ADVICE)     # the distillation command's own option
    was_tracing = opik.is_tracing_active()
    opik.set_tracing_active(backend.kind == "opik")  # no server: training's @opik.track must not send
    try:
        return _run(args, backend)
    finally:
        opik.set_tracing_active(was_tracing)


def _run(args: argparse.Namespace, backend: Backend) -> list[ExperimentSummary]:
    out = Path(args.out)
    started = time.time()
    teacher = load_causal_lm(args.teacher, device=args.device)
    student_dir, history = build_student(teacher, args, out)
    history_path = out / "training_history.json"
    history_path.write_text(json.dumps(history, indent=2), encoding="utf-8")
    student = load_causal_lm(student_dir, device=args.device)  # through from_pretrained, as a user would
    items = heldout_items(QUICK["heldout"] if args.quick else None)
    bertscore, bertscore_note = _bertscore(args, backend.kind == "opik")
    run_config = {
        "teacher": args.teacher, "teacher_signature": teacher.signature,
        "student_layers": args.student_layers, "teacher_layers": teacher.model.config.num_hidden_layers,
        "train": {"texts": len(TRAIN_TEXTS), "steps": args.steps, "batch_size": args.batch_size, "lr": args.lr,
                  "temperature": args.temperature, "alpha": args.alpha, "seed": args.seed},
        "heldout_items": len(items), "max_new_tokens": args.max_new_tokens, "quick": args.quick,
        "bertscore": bertscore_note,
    }
    runtime = {"backend": backend.kind, "backend_reason": backend.reason}
    training = {"student_dir": student_dir, "training_history": str(history_path),
                "training_wall_s": round(time.time() - started, 2)}
    summaries = []
    for role, lm in (("teacher", teacher), ("student", student)):
        summary = run_model_experiment(backend, role, lm, teacher, items, bertscore, args, run_config,
                                       {**runtime, **(training if role == "student" else {})})
        summaries.append(summary)
        scores = ", ".join(f"{k}={v:.4g}" for k, v in summary.experiment_scores.items() if v is not None)
        failed = f", {summary.failed_items} failed" if summary.failed_items else ""
        print(f"{summary.name}: {scores} ({summary.items} items{failed})")
    if backend.kind == "opik":
        opik.flush_tracker()
    return summaries


def run_model_experiment(backend: Backend, role: str, lm: CausalLM, teacher: CausalLM, items: list[dict],
                         bertscore: Any | None, args: argparse.Namespace, run_config: dict,
                         runtime: dict) -> ExperimentSummary:
    """One experiment for one model: its continuations of the prompts, perplexity of the held-out
    text, KL(teacher || model) on it, ROUGE (and BERTScore) of the continuations."""
    track = backend.kind == "opik"
    ppl = Perplexity(model=lm, text_field="text", track=track)
    kl = DistillationKL(teacher=teacher, student=lm, temperature=args.temperature, text_field="text", track=track)
    metrics = [ppl, kl, ROUGE(track=track)] + ([bertscore] if bertscore is not None else [])
    config = {"role": role, "model": lm.name, **run_config, "runtime": runtime}

    def task(item: dict) -> dict:
        return {"output": generate(lm.name, item["prompt"], args.max_new_tokens, args.device)}

    return run_experiment(f"distillation-{role}", items, task, metrics, dataset_name=DATASET_NAME, config=config,
                          scorers=[ppl.experiment_score, kl.experiment_score], backend=backend, store=args.store,
                          project_name=args.project_name, progress=not args.no_progress, overwrite=True)
