"""What a comparison publishes into Opik, decided without a server: the experiment scores each
experiment gets (intervals; against the baseline the difference, p and a verdict), the full-precision
comparison for its metadata, and a dashboard's markdown table. ``--dry-run`` prints exactly this.

Opik's UI rounds every experiment score to two decimals, so each figure is published on a scale
that survives that rounding: differences are multiplied by a power of ten named in the score's name
(``bleu.diff_x100 vs base``), p-values are published in percent (``p_pct``), and the verdict is
+1 / 0 / -1 in the score's declared direction. Full precision stays in the metadata and the table.
"""
from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Mapping, Sequence

from opik_metrics.compare.analysis import VERDICT_NONE, VERDICT_SIGNIFICANT
from opik_metrics.core.numbers import is_number

SCHEMA = "opik-metrics/publication/1"
METADATA_KEY = "opik_metrics_comparison"
MAX_DIFF_FACTOR = 10 ** 6


def interval_names(score: str, confidence: float) -> tuple[str, str]:
    """The experiment-score names of a score's interval bounds: ``bleu.ci_low``, ``bleu.ci_high``
    at 95%; the level is in the name at any other confidence (``bleu.ci90_low``)."""
    level = "" if math.isclose(confidence, 0.95) else f"{confidence * 100:g}".replace(".", "_")
    return f"{score}.ci{level}_low", f"{score}.ci{level}_high"


def diff_factor(deltas: Sequence[float], bounds: Sequence[Any] = (None, None)) -> int:
    """The power of ten a score's differences are published at: 100 (points) for a score declared
    within [-1, 1], else 1; then as large as needed for every non-zero difference to show two
    significant figures at two decimals (at least 0.10 once scaled). Capped at 10**6."""
    low, high = (list(bounds or ()) + [None, None])[:2]
    factor = 100 if is_number(low) and is_number(high) and -1 <= low and high <= 1 else 1
    smallest = min((abs(d) for d in deltas if is_number(d) and d != 0), default=0.0)
    while 0 < smallest * factor < 0.1 and factor < MAX_DIFF_FACTOR:
        factor *= 10
    return factor


def p_percent(p_value: float, significant: bool, alpha: float) -> float:
    """p in percent as published; a significant p that two decimals would round up to the level
    (4.995 at alpha 0.05) is rounded down instead, so the UI never shows 5.00 beside a verdict."""
    value = round(p_value * 100, 12)
    if significant and round(value, 2) >= alpha * 100:
        return math.floor(value * 100) / 100
    return value


def pair_names(score: str, baseline: str, factor: int) -> dict[str, str]:
    """The experiment-score names of a non-baseline experiment's figures against ``baseline``."""
    scale = "" if factor == 1 else f"_x{factor}"
    return {"diff": f"{score}.diff{scale} vs {baseline}", "p": f"{score}.p_pct vs {baseline}",
            "verdict": f"{score}.verdict vs {baseline}"}


def directed_verdict(entry: Mapping[str, Any], system: str) -> int | None:
    """+1 when ``system`` is significantly better in the score's declared direction, -1 when it is
    significantly worse, 0 for no significant difference, None when no verdict can be given."""
    if entry.get("verdict") == VERDICT_NONE or entry.get("significant") is None:
        return None
    if not entry["significant"]:
        return 0
    return 1 if entry.get("better") == system else -1


def _pair_summary(pair: Mapping[str, Any], metrics: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out = {}
    for metric in metrics:
        entry = pair["metrics"][metric["name"]]
        out[metric["name"]] = {
            "baseline": entry["baseline"], "system": entry["system"], "difference": entry["delta"],
            "difference_low": entry["delta_low"], "difference_high": entry["delta_high"],
            "p_value": entry["p_value"], "verdict": entry["verdict"],
            "direction_verdict": directed_verdict(entry, pair["system"]), "n": entry["n"],
            "wins": entry["wins"], "ties": entry["ties"], "losses": entry["losses"], "note": entry.get("note")}
    return {"baseline": pair["baseline"], "system": pair["system"], "shared_items": pair["shared_items"],
            "scores": out}


def comparison_record(comparison: Mapping[str, Any]) -> dict[str, Any]:
    """The comparison as it goes into every experiment's metadata: full precision, no per-item
    values, nothing that changes from one run of the same comparison to the next."""
    metrics = comparison["metrics"]
    baseline = comparison["experiments"][0]["name"]
    settings = comparison["settings"]
    record = {
        "schema": SCHEMA,
        "baseline": baseline,
        "experiments": [e["name"] for e in comparison["experiments"]],
        "test": settings["test"], "resamples": settings["resamples"], "seed": settings["seed"],
        "confidence": settings["confidence"], "alpha": settings["alpha"],
        "versions": comparison.get("versions", {}),
        "scores": {m["name"]: {"kind": m["kind"], "higher_is_better": m["higher_is_better"],
                               "signature": m.get("signature"),
                               "experiments": {name: {k: v[k] for k in ("value", "low", "high", "n")}
                                               for name, v in comparison["scores"][m["name"]].items()}}
                   for m in metrics},
        "pairs": [_pair_summary(p, metrics) for p in comparison["pairs"]],
        "notes": list(comparison.get("notes", [])),
    }
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, default=str)
    record["fingerprint"] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return record


def dashboard_name(comparison: Mapping[str, Any], project_name: str | None = None) -> str:
    """The comparison's dashboard: named for its experiments (and project), so publishing again finds it."""
    names = [e["name"] for e in comparison["experiments"]]
    return f"opik-metrics: {', '.join(names[1:])} vs {names[0]}" + (f" ({project_name})" if project_name else "")


def _figure(value: Any, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}g}"


def _p_text(p: Any, resamples: int) -> str:
    if p is None:
        return "n/a"
    floor = 1.0 / (resamples + 1)
    return f"≤{floor:.2g}" if p <= floor + 1e-15 else f"{p:.3g}"


_VERDICT_WORDS = {1: "better (+1)", 0: "no significant difference (0)", -1: "worse (-1)", None: "n/a"}


def markdown_table(record: Mapping[str, Any]) -> str:
    """The dashboard's table: one row per score and system, at full precision."""
    level = f"{record['confidence'] * 100:g}%"
    lines = [f"### {', '.join(record['experiments'][1:])} against {record['baseline']}", "",
             f"Paired bootstrap: {record['resamples']} resamples, seed {record['seed']}; intervals at {level}; "
             f"a verdict needs p < {record['alpha']:g}. Verdicts follow each score's direction "
             "(lower is better for perplexity, KL...).", "",
             f"| score | baseline | baseline value | system | system value | difference [{level} interval] "
             "| p | verdict |", "|---|---|---|---|---|---|---|---|"]
    for pair in record["pairs"]:
        for score, e in pair["scores"].items():
            arrow = "↑" if record["scores"][score]["higher_is_better"] else "↓"
            interval = (f" [{_figure(e['difference_low'])}, {_figure(e['difference_high'])}]"
                        if e["difference_low"] is not None else "")
            lines.append(f"| {score} {arrow} | {pair['baseline']} | {_figure(e['baseline'])} | {pair['system']} "
                         f"| {_figure(e['system'])} | {_figure(e['difference'])}{interval} "
                         f"| {_p_text(e['p_value'], record['resamples'])} | {_VERDICT_WORDS[e['direction_verdict']]} |")
    if record["notes"]:
        lines += ["", "Notes:"] + [f"- {note}" for note in record["notes"]]
    lines += ["", f"Full precision: experiment metadata key `{METADATA_KEY}` (fingerprint {record['fingerprint']})."]
    return "\n".join(lines)


def experiment_scores(comparison: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Experiment name -> the experiment scores the comparison gives it (name -> value): intervals
    (and a corpus score's value) on every experiment; against the baseline, on each other one, the
    difference, p and verdict."""
    confidence = comparison["settings"]["confidence"]
    baseline = record["baseline"]
    against_baseline = [p for p in record["pairs"] if p["baseline"] == baseline]
    out: dict[str, dict[str, float]] = {name: {} for name in record["experiments"]}
    for metric in comparison["metrics"]:
        score = metric["name"]
        low_name, high_name = interval_names(score, confidence)
        for name, entry in comparison["scores"][score].items():
            if metric["kind"] == "corpus" and is_number(entry["value"]):
                out[name][score] = float(entry["value"])
            if is_number(entry["low"]) and is_number(entry["high"]):
                out[name][low_name], out[name][high_name] = float(entry["low"]), float(entry["high"])
        factor = diff_factor([p["scores"][score]["difference"] for p in against_baseline], metric.get("bounds"))
        for pair in against_baseline:
            entry = pair["scores"][score]
            names = pair_names(score, baseline, factor)
            if is_number(entry["difference"]):
                out[pair["system"]][names["diff"]] = round(entry["difference"] * factor, 12)
            if is_number(entry["p_value"]):
                out[pair["system"]][names["p"]] = p_percent(entry["p_value"], entry["verdict"] == VERDICT_SIGNIFICANT,
                                                                   record["alpha"])
            if entry["direction_verdict"] is not None:
                out[pair["system"]][names["verdict"]] = float(entry["direction_verdict"])
    return out


def build_publication(comparison: Mapping[str, Any], project_name: str | None = None) -> dict[str, Any]:
    """Everything a publish writes, as JSON: per experiment its experiment scores and the value of
    its metadata key ``opik_metrics_comparison``; the dashboard's name and markdown."""
    record = comparison_record(comparison)
    scores = experiment_scores(comparison, record)
    name = dashboard_name(comparison, project_name)
    return {
        "schema": SCHEMA,
        "metadata_key": METADATA_KEY,
        "fingerprint": record["fingerprint"],
        "dashboard": {"name": name, "markdown": markdown_table(record)},
        "experiments": {exp: {"experiment_scores": scores[exp],
                              "metadata": {**record, "experiment": exp, "dashboard": {"name": name},
                                           "published_scores": dict(sorted(scores[exp].items()))}}
                        for exp in record["experiments"]},
    }
