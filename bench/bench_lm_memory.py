"""Peak memory of perplexity and distillation KL on one long text, against the stated budget.

The logits path of a causal LM is ``[positions x vocab]``; with SmolLM2's vocabulary (49,152) one
full 8,192-position window of float32 logits alone is 1.5 GiB. The scorers compute and reduce the
logits in chunks of positions (``opik_metrics/neural/lm/chunks.py``: at most ``LOGIT_WORK_MB`` of
logits work, whole scoring within ``max_memory_mb``, default 2048). This benchmark checks that
promise on a model with SmolLM2's vocabulary, context (8,192) and hidden size (576) but only 2
layers (random weights: compute stays small, the logits path is SmolLM2-sized), scoring ONE
~20,000-token text with ``Perplexity`` and with ``DistillationKL`` (teacher 2 layers, student 1).

Each case runs in its own child process: it loads the model(s), reads its resident memory, resets
the kernel's peak-RSS mark (``/proc/self/clear_refs`` = 5; where that is refused, the peak since
process start is used, which can only over-state), scores, and reads the peak (``VmHWM``).

Row convention (a cost, ``lower_is_better``): ``ratio`` = measured peak MB of the scoring over the
RSS of the loaded model(s), ``target`` = the budget in MB (2048); met when ratio <= target.
``ours_per_s`` = tokens scored per second (wall), ``reference_per_s`` = None (no reference run).
``identical`` = the score is finite and positive (perplexity) / non-negative (KL).

    python -c "import bench.bench_lm_memory as b; print(b.main())"
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from opik_metrics.neural.lm.chunks import DEFAULT_MAX_MEMORY_MB, LOGIT_WORK_MB

N_TOKENS = 20_000
VOCAB = 49_152          # SmolLM2-135M
CONTEXT = 8_192         # SmolLM2-135M
HIDDEN = 576            # SmolLM2-135M
_MARK = "@@lm-memory@@"
_ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------- set-up (parent)

def _build_models(folder: Path) -> tuple[Path, Path, int]:
    """Teacher (2 layers) and student (1 layer) with SmolLM2's vocab, context and width, and the
    packaged SmolLM2 tokenizer; returns their folders and the vocabulary size used."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from opik_metrics.neural.models.causal_lm import load_causal_lm

    tok = load_causal_lm("packaged:smollm2", device="cpu").tokenizer
    vocab = max(VOCAB, len(tok))
    out = []
    for name, layers, seed in (("teacher", 2, 0), ("student", 1, 1)):
        torch.manual_seed(seed)
        config = LlamaConfig(vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=1536, num_hidden_layers=layers,
                             num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=CONTEXT,
                             rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True,
                             bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                             pad_token_id=tok.pad_token_id)
        path = folder / name
        path.mkdir(parents=True, exist_ok=True)
        LlamaForCausalLM(config).eval().save_pretrained(path)
        tok.save_pretrained(path)
        out.append(path)
    return out[0], out[1], vocab


def _long_text(tokenizer, n_tokens: int = N_TOKENS) -> str:
    """English-like text (the test corpus, repeated with fresh seeds) of about ``n_tokens`` tokens."""
    from tests.corpus import realistic_pairs

    parts, count, seed = [], 0, 0
    while count < n_tokens:
        preds, refs = realistic_pairs(200, seed=seed)
        for text in preds + refs:
            parts.append(text)
            count += len(tokenizer(" " + text, add_special_tokens=False)["input_ids"])
            if count >= n_tokens:
                break
        seed += 1
    return " ".join(parts)


# ------------------------------------------------------------------------------- one case (child)

def _status_kb() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    return out


def _child(case: str, teacher: str, student: str, text_file: str) -> None:
    """Load, reset the peak mark, score the text once, print the measurements as one JSON line."""
    import torch

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    text = Path(text_file).read_text()
    if case == "perplexity":
        from opik_metrics.metrics.perplexity import Perplexity
        metric = Perplexity(teacher, device="cpu", track=False)
    else:
        from opik_metrics.metrics.distillation import DistillationKL
        metric = DistillationKL(teacher, student, device="cpu", track=False)
    loaded = _status_kb()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        reset = True
    except OSError:
        reset = False
    base = _status_kb()["VmRSS"]
    start = time.perf_counter()
    result = metric.score(output=text)[0]
    seconds = time.perf_counter() - start
    peak = _status_kb()["VmHWM"]
    meta = result.metadata
    print(_MARK + json.dumps({"value": result.value, "seconds": seconds, "base_kb": base, "peak_kb": peak,
                              "loaded_hwm_kb": loaded["VmHWM"], "reset": reset,
                              "n_tokens": meta.get("n_tokens"), "text_tokens": meta.get("text_tokens"),
                              "n_windows": meta.get("n_windows")}), flush=True)


def _run_case(case: str, teacher: Path, student: Path, text_file: Path) -> dict:
    code = f"import bench.bench_lm_memory as b; b._child({case!r}, {str(teacher)!r}, {str(student)!r}, {str(text_file)!r})"
    env = {**os.environ, "OPIK_ANALYTICS_ENABLE": "false", "OPIK_SENTRY_ENABLE": "false",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=_ROOT, env=env, capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(_MARK)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{case} child failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}")
    return json.loads(lines[-1][len(_MARK):])


# ------------------------------------------------------------------------------------------ main

def main(n: int = N_TOKENS) -> list[dict]:
    """``n``: tokens of the one text (default 20,000)."""
    t0 = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_lm_memory_") as tmp:
        folder = Path(tmp)
        teacher, student, vocab = _build_models(folder)
        from transformers import AutoTokenizer
        text = _long_text(AutoTokenizer.from_pretrained(teacher), n)
        text_file = folder / "text.txt"
        text_file.write_text(text)
        print(f"models built in {time.perf_counter() - t0:.1f} s (vocab {vocab:,}, context {CONTEXT:,}, hidden "
              f"{HIDDEN}); convention: ratio = peak MB of the scoring over the loaded model(s), "
              f"target = budget {DEFAULT_MAX_MEMORY_MB} MB (lower is better; logits work bound "
              f"{LOGIT_WORK_MB} MB)", flush=True)
        for case, label in (("perplexity", "perplexity"), ("kl", "distillation KL")):
            got = _run_case(case, teacher, student, text_file)
            mb = (got["peak_kb"] - got["base_kb"]) / 1024
            tokens = got["text_tokens"] or n
            value = got["value"]
            ok = math.isfinite(value) and (value > 0 if case == "perplexity" else value >= 0)
            print(f"{label}, {tokens:,} tokens, SmolLM2-sized vocab: peak +{mb:.0f} MB over the loaded model "
                  f"(budget {DEFAULT_MAX_MEMORY_MB} MB)  [loaded RSS {got['base_kb'] / 1024:.0f} MB, "
                  f"{got['n_windows']} windows, {got['seconds']:.1f} s, value {value:.6g}"
                  f"{'' if got['reset'] else ', peak mark not reset: over-states'}]", flush=True)
            rows.append({"benchmark": f"{label} peak MB over loaded model, 1 text x {tokens:,} tokens, "
                                      f"vocab {vocab:,}, cpu",
                         "ours_per_s": tokens / got["seconds"], "reference_per_s": None,
                         "ratio": mb, "target": float(DEFAULT_MAX_MEMORY_MB), "lower_is_better": True,
                         "identical": ok, "value": value, "loaded_mb": got["base_kb"] / 1024})
    print(f"total {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


if __name__ == "__main__":
    main()
