"""A realistic comparison.json (schema opik-metrics/compare/2) from seeded random scores, for report tests:
``make_comparison`` gives its JSON object, ``sample`` the Comparison it reads as.

Texts contain ``<script>``, ``&`` and non-ASCII characters to exercise escaping; items fail; corpus_bleu
has no per-item values; with three experiments perplexity is missing for the third.
"""
from __future__ import annotations

import itertools

import numpy as np

from opik_metrics.compare.model import Comparison

NAMES = ["system-a", "system-b & co", "système-ç"]
MODELS = ["t5-small", "t5-small-tuned", "flan-t5-base"]
QUALITY = [0.0, 0.06, -0.01]  # how much better than system-a each one is
METRICS = [
    {"name": "rouge1", "kind": "mean", "higher_is_better": True, "scale": "linear", "bounds": [0.0, 1.0],
     "signature": "rouge1_f1|tok:default|stem:yes|opik-metrics:0.1.0"},
    {"name": "rougeL", "kind": "mean", "higher_is_better": True, "scale": "linear", "bounds": [0.0, 1.0],
     "signature": "rougeL_f1|tok:default|stem:yes|opik-metrics:0.1.0"},
    {"name": "bleu", "kind": "mean", "higher_is_better": True, "scale": "linear", "bounds": [0.0, 1.0],
     "signature": "nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:2.6.0"},
    {"name": "corpus_bleu", "kind": "corpus", "higher_is_better": True, "scale": "linear", "bounds": [0.0, 1.0],
     "signature": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"},
    {"name": "bertscore_f1", "kind": "mean", "higher_is_better": True, "scale": "linear", "bounds": [None, None],
     "signature": "packaged:minilm_L6_no-idf_version=0.3.13(hug_trans=4.46.0) & rescaled"},
    {"name": "perplexity", "kind": "mean", "higher_is_better": False, "scale": "log", "bounds": [1.0, None],
     "signature": None},
]
FAILED = {  # experiment index -> (position, stage, reason)
    0: [(7, "task", "ValueError: model returned <empty> & nothing else"),
        (21, "task", "RuntimeError: CUDA out of memory — réessayez")],
    1: [(12, "scoring", "TimeoutError: scoring took > 30 s <script>alert('f')</script>")],
}
INPUTS = [
    "Summarise: <script>alert('x')</script> the quarterly report & its appendix.",
    "Résumé: naïve café owners in Zürich — 日本語のテキスト ✓",
    "Tom & Jerry <b>bold</b> chase scene, reference: \"the cat chases the mouse\".",
]
RESAMPLES, SEED, CONFIDENCE, ALPHA, TOP_K = 1000, 12345, 0.95, 0.05, 5


def _input(position: int) -> str:
    if position < len(INPUTS):
        return INPUTS[position]
    if position == 21:  # a failed item of system-a: its table shows the text shortened
        return "A very long article about evaluation metrics. " * 12 + "END<&>"
    return f"Summarise news article #{position} about the weather in Lyon."


def _per_item_scores(rng: np.random.Generator, items: int, quality: float, difficulty: np.ndarray) -> dict:
    """Correlated per-item scores of one experiment for every item-level metric."""
    rouge1 = np.clip(0.42 + quality + difficulty + rng.normal(0, 0.08, items), 0, 1)
    return {
        "rouge1": rouge1,
        "rougeL": np.clip(rouge1 * 0.86 + rng.normal(0, 0.03, items), 0, 1),
        "bleu": np.clip(0.18 + quality + difficulty + rng.normal(0, 0.07, items), 0, 1),
        "bertscore_f1": np.clip(0.87 + quality / 3 + difficulty / 4 + rng.normal(0, 0.015, items), 0, 1),
        "perplexity": np.exp(3.0 - 2 * quality - difficulty + rng.normal(0, 0.35, items)),
    }


def _bootstrap(rng: np.random.Generator, values: np.ndarray) -> np.ndarray:
    """Means of RESAMPLES resamples of ``values``."""
    indices = rng.integers(0, len(values), size=(RESAMPLES, len(values)))
    return values[indices].mean(axis=1)


def _score_entry(rng, values: np.ndarray, failed: int, corpus: bool) -> dict:
    means = _bootstrap(rng, values)
    low, high = np.quantile(means, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    value = float(values.mean())
    if corpus:
        value, low, high = value * 1.04, low * 1.04, high * 1.04
    return {"value": round(value, 6), "low": round(float(low), 6), "high": round(float(high), 6),
            "n": len(values), "failed": failed, "non_finite": 0, "non_finite_kinds": {},
            "values": [] if corpus else [round(float(v), 6) for v in values], "recorded": None, "interval": None}


def _pair_metric(rng, metric: dict, base: dict, system: dict, texts: dict, shared: list[int]) -> dict:
    """Paired statistics of one metric on the shared items, in the schema's form."""
    name, corpus = metric["name"], metric["kind"] == "corpus"
    source = "bleu" if corpus else name
    b = np.array([base["scores"][source][p] for p in shared])
    s = np.array([system["scores"][source][p] for p in shared])
    diff = s - b
    resampled = _bootstrap(rng, diff)
    delta = float(diff.mean()) * (1.04 if corpus else 1.0)
    low, high = np.quantile(resampled, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    tail = min((resampled <= 0).mean(), (resampled >= 0).mean())
    p_value = min(1.0, 2 * tail + 1 / (RESAMPLES + 1))
    one_sided = tail + 1 / (RESAMPLES + 1)
    if p_value >= ALPHA:
        verdict = "no significant difference"
    else:   # significant: better when the difference goes the score's way
        verdict = "better" if (delta > 0) == metric["higher_is_better"] else "worse"
    entry = {"baseline": round(float(b.mean()), 6), "system": round(float(s.mean()), 6),
             "delta": round(delta, 6), "delta_low": round(float(low), 6), "delta_high": round(float(high), 6),
             "p_value": round(float(p_value), 6), "verdict": verdict, "n": len(shared),
             "non_finite": {"baseline": 0, "system": 0}, "non_finite_kinds": {"baseline": {}, "system": {}},
             "note": None, "gate": None, "p_one_sided": round(float(one_sided), 6), "test": "paired-bs"}
    if corpus:
        return {**entry, "wins": None, "ties": None, "losses": None, "differences": [],
                "largest_differences": []}
    better = diff if metric["higher_is_better"] else -diff
    order = np.argsort(-np.abs(diff), kind="stable")[:TOP_K]
    largest = [{"key": f"item-{shared[i]:03d}", "position": shared[i], "input": _input(shared[i]),
                "baseline_output": texts[base["name"]][shared[i]], "system_output": texts[system["name"]][shared[i]],
                "baseline_score": round(float(b[i]), 6), "system_score": round(float(s[i]), 6),
                "delta": round(float(diff[i]), 6)} for i in order]
    return {**entry, "wins": int((better > 1e-9).sum()), "ties": int((np.abs(diff) <= 1e-9).sum()),
            "losses": int((better < -1e-9).sum()), "differences": [round(float(d), 6) for d in diff],
            "largest_differences": largest}


def _missing_pair_metric(metric: dict, base: dict, system: dict, missing: str) -> dict:
    """A pair entry for a metric that one side lacks: no test, a note saying why."""
    return {"baseline": None, "system": None, "delta": None, "delta_low": None, "delta_high": None,
            "p_value": None, "verdict": "n/a", "n": 0, "non_finite": {"baseline": 0, "system": 0},
            "non_finite_kinds": {"baseline": {}, "system": {}}, "wins": None, "ties": None, "losses": None,
            "differences": [], "largest_differences": [], "note": f"{metric['name']} was not computed for {missing}",
            "gate": None, "p_one_sided": None, "test": None}


def make_comparison(experiments: int = 2, items: int = 40, seed: int = 7) -> dict:
    """A comparison of the first ``experiments`` (2 or 3) systems on ``items`` items."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 0.1, items)
    runs, texts = [], {}
    for index in range(experiments):
        name = NAMES[index]
        failed = {p for p, _, _ in FAILED.get(index, [])}
        scored = [p for p in range(items) if p not in failed]
        all_scores = _per_item_scores(rng, items, QUALITY[index], difficulty)
        scores = {m: {p: float(v[p]) for p in scored} for m, v in all_scores.items()}
        if index == 2:
            del scores["perplexity"]
        texts[name] = {p: f"[{name}] summary {p}: the report & <i>its</i> appendix — café" for p in range(items)}
        runs.append({"name": name, "index": index, "scored": scored, "scores": scores})

    metric_scores: dict = {}
    for metric in METRICS:
        per_experiment = {}
        for run in runs:
            source = "bleu" if metric["kind"] == "corpus" else metric["name"]
            if source not in run["scores"]:
                continue
            values = np.array([run["scores"][source][p] for p in run["scored"]])
            per_experiment[run["name"]] = _score_entry(rng, values, items - len(run["scored"]),
                                                       metric["kind"] == "corpus")
        metric_scores[metric["name"]] = per_experiment

    pairs = []
    for base, system in itertools.combinations(runs, 2):
        shared = sorted(set(base["scored"]) & set(system["scored"]))
        pair_metrics = {}
        for metric in METRICS:
            source = "bleu" if metric["kind"] == "corpus" else metric["name"]
            missing = [r["name"] for r in (base, system) if source not in r["scores"]]
            pair_metrics[metric["name"]] = (_missing_pair_metric(metric, base, system, missing[0]) if missing
                                            else _pair_metric(rng, metric, base, system, texts, shared))
        pairs.append({"baseline": base["name"], "system": system["name"], "shared_items": len(shared),
                      "config_differences": {}, "option_differences": {}, "metrics": pair_metrics})

    return {
        "schema": "opik-metrics/compare/2",
        "created_at": "2026-11-22T10:00:00+00:00",
        "source": "local store /tmp/runs/experiments.sqlite",
        "settings": {"resamples": RESAMPLES, "seed": SEED, "confidence": CONFIDENCE, "alpha": ALPHA,
                     "tie_tolerance": 1e-9, "top_k": TOP_K, "min_items": 5,
                     "test": "paired bootstrap resampling (Koehn 2004), as sacrebleu's paired_bs",
                     "p_value": "calibrated", "permutations": None},
        "versions": {"opik-metrics": "0.1.0", "numpy": np.__version__, "sacrebleu": "2.6.0"},
        "experiments": [
            {"name": run["name"], "dataset": "demo-summaries", "status": "finished", "items": items,
             "scored_items": len(run["scored"]), "failed_items": items - len(run["scored"]),
             "model": MODELS[run["index"]], "source": None,
             "config": {"model": MODELS[run["index"]], "temperature": 0.2 * run["index"],
                        "prompt": "Summarise: {input} <b>& keep it short</b>",
                        "metrics": [m["name"] for m in METRICS], "versions": {"transformers": "4.46.0"}},
             "experiment_scores": {}}
            for run in runs],
        "metrics": [dict(m) for m in METRICS],
        "scores": metric_scores,
        "pairs": pairs,
        "failed_items": {NAMES[i]: [{"key": f"item-{p:03d}", "position": p, "stage": stage, "reason": reason,
                                     "input": _input(p)} for p, stage, reason in FAILED.get(i, [])]
                         for i in range(experiments)},
        "notes": ["p-values are not corrected for multiple comparisons",
                  "corpus_bleu is a corpus-level score: it has no per-item differences",
                  "items that failed in either experiment are left out of the paired test <not & scored>"],
    }


def sample(experiments: int = 2, items: int = 40, seed: int = 7) -> Comparison:
    """``make_comparison``'s JSON read as the Comparison the report, summary and publication take."""
    return Comparison.from_dict(make_comparison(experiments, items, seed))
