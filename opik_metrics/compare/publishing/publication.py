"""What a comparison publishes into Opik, decided without a server: the experiment scores each
experiment gets, the full-precision comparison for its metadata, and the dashboard (name, markdown
table, leaderboard columns and ranking, the chart of differences). ``--dry-run`` prints exactly this.

Every new experiment-score name becomes a column of Opik's experiments page, so by default a
comparison adds two names per compared score and baseline, on each other experiment: the difference
(``bleu.diff_x100 vs base``: its sign and size, on a scale named in the name) and the verdict
(``bleu.verdict vs base``: +1 / 0 / -1 in the score's declared direction, which the difference's sign
alone does not say for a lower-is-better score, and whether the paired test found it significant).
Intervals, p-values and corpus values stay in the metadata and the dashboard's table;
``all_scores=True`` (``--publish-all-scores``) publishes them as experiment scores too.

Opik's UI rounds every experiment score to two decimals, so each figure is published on a scale
that survives that rounding: differences are multiplied by a power of ten named in the score's name,
p-values are published in percent (``p_pct``). The server keeps a value to 9 decimals, so each is
rounded as the server would round it before it is sent, and recorded as sent.
"""
from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Mapping, Sequence

from opik_metrics.compare.model import Comparison, Pair, ScoreSummary, Verdict
from opik_metrics.core.numbers import is_number
from opik_metrics.metric_kit.server_range import server_value

SCHEMA = "opik-metrics/publication/2"
METADATA_KEY = "opik_metrics_comparison"
MAX_DIFF_FACTOR = 10 ** 6
DASHBOARD_NAME_MAX = 120          # Opik's backend: api/Dashboard.java, @Size(min = 1, max = 120) name
DASHBOARD_DESCRIPTION_MAX = 1000  # api/Dashboard.java, @Size(max = 1000) description


def java_length(text: str) -> int:
    """A string's length as Java's ``String.length()`` counts it (UTF-16 units), which Opik's @Size checks."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def cut_to(text: str, units: int, tail: str = "") -> str:
    """``text`` cut so that it and ``tail`` fit ``units`` UTF-16 units, then ``tail`` added."""
    if java_length(text + tail) <= units:
        return text + tail
    while text and java_length(text + tail) > units:
        text = text[:-1]
    return text + tail


def same_stored(a: Any, b: Any) -> bool:
    """Whether two experiment-score values are the same once an Opik server has stored them."""
    x, y = server_value(a), server_value(b)
    return x is not None and x == y


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


_VERDICT_NUMBERS = {Verdict.BETTER: 1, Verdict.NO_DIFFERENCE: 0, Verdict.WORSE: -1, Verdict.NONE: None}
# The publication's own words for a verdict (its schema /2), without the direction that
# ``direction_verdict`` carries beside them.
_SIGNIFICANCE_WORDS = {Verdict.BETTER: "significant", Verdict.WORSE: "significant",
                       Verdict.NO_DIFFERENCE: "not significant", Verdict.NONE: "n/a"}


def directed_verdict(verdict: Verdict) -> int | None:
    """The analysis's verdict as published: +1 when the system is significantly better in the
    score's declared direction, -1 when significantly worse, 0 for no significant difference, None
    when no verdict can be given."""
    return _VERDICT_NUMBERS[verdict]


def _json_safe(value: Any) -> Any:
    """``value`` with every non-finite float as the string "inf", "-inf" or "nan": the server refuses
    those literals in a score and turns them into strings in metadata, so the record holds strings."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _pair_summary(pair: Pair, metrics: Sequence[ScoreSummary]) -> dict[str, Any]:
    out: dict[str, dict[str, Any]] = {}
    for metric in metrics:
        entry = pair.metrics[metric.name]
        out[metric.name] = {
            "baseline": entry.baseline_value, "system": entry.system_value, "difference": entry.delta,
            "difference_low": entry.delta_low, "difference_high": entry.delta_high,
            "p_value": entry.p_value, "p_one_sided": entry.p_one_sided, "test": entry.test,
            "verdict": _SIGNIFICANCE_WORDS[entry.verdict],
            "direction_verdict": directed_verdict(entry.verdict), "n": entry.n,
            "wins": entry.wins, "ties": entry.ties, "losses": entry.losses, "note": entry.note}
        if entry.gate is not None:          # gated (compare --fail-on): the correction, adjusted p and outcome
            out[metric.name]["gate"] = {"correction": entry.gate.correction, "p_adjusted": entry.gate.p_adjusted,
                                        "margin": entry.gate.margin, "passed": entry.gate.passed,
                                        "reason": entry.gate.reason}
    return {"baseline": pair.baseline, "system": pair.system, "shared_items": pair.shared_items, "scores": out}


def comparison_record(comparison: Comparison) -> dict[str, Any]:
    """The comparison as it goes into every experiment's metadata: full precision, no per-item
    values, nothing that changes from one run of the same comparison to the next."""
    metrics = comparison.metrics
    settings = comparison.settings
    record = _json_safe({
        "schema": SCHEMA,
        "baseline": comparison.names[0],
        "experiments": comparison.names,
        "test": settings.test, "p_value_rule": settings.p_value, "resamples": settings.resamples, "seed": settings.seed,
        "confidence": settings.confidence, "alpha": settings.alpha,
        "versions": dict(comparison.versions),
        "scores": {m.name: {"kind": m.kind, "higher_is_better": m.higher_is_better, "signature": m.signature,
                            "experiments": {name: {"value": v.value, "low": v.low, "high": v.high, "n": v.n}
                                            for name, v in comparison.scores[m.name].items()}}
                   for m in metrics},
        "pairs": [_pair_summary(p, metrics) for p in comparison.pairs],
        "notes": list(comparison.notes),
    })
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, default=str)
    record["fingerprint"] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return record


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def dashboard_name(comparison: Comparison, project_name: str | None = None) -> str:
    """The comparison's dashboard, named for its experiments (and project) so that publishing again
    finds it. Opik allows 120 characters: a longer name is cut and ends with a short hash of the
    whole, so it stays the same from one publish to the next (the full names are in its description)."""
    names = [_one_line(name) for name in comparison.names]
    name = f"opik-metrics: {', '.join(names[1:])} vs {names[0]}" + (f" ({_one_line(project_name)})"
                                                                    if project_name else "")
    if java_length(name) <= DASHBOARD_NAME_MAX:
        return name
    tag = "… #" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return cut_to(name, DASHBOARD_NAME_MAX - java_length(tag)).rstrip(" ,") + tag


def dashboard_description(record: Mapping[str, Any]) -> str:
    """The dashboard's description: the comparison with every experiment's full name (cut at Opik's
    1000 characters; the table has them all)."""
    text = (f"opik-metrics compare --publish: {', '.join(record['experiments'][1:])} against {record['baseline']} "
            "(paired bootstrap; intervals, p-values and verdicts in the table)")
    return text if java_length(text) <= DASHBOARD_DESCRIPTION_MAX else cut_to(text, DASHBOARD_DESCRIPTION_MAX, "…")


def _figure(value: Any, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{digits}g}" if isinstance(value, (int, float)) else str(value)


def _p_text(p: Any, resamples: int) -> str:
    if not is_number(p):
        return _figure(p)
    floor = 1.0 / (resamples + 1)
    return f"≤{floor:.2g}" if p <= floor + 1e-15 else f"{p:.3g}"


def markdown_cell(text: Any) -> str:
    """``text`` as one cell of a markdown table: on one line, its ``|`` and ``\\`` escaped."""
    return _one_line(str(text).replace("\\", "\\\\").replace("|", "\\|"))


_VERDICT_WORDS = {1: "better (+1)", 0: "no significant difference (0)", -1: "worse (-1)", None: "n/a"}


def markdown_table(record: Mapping[str, Any]) -> str:
    """The dashboard's table: one row per score and system, at full precision."""
    level = f"{record['confidence'] * 100:g}%"
    cell = markdown_cell
    gated = any("gate" in e for pair in record["pairs"] for e in pair["scores"].values())
    systems = ", ".join(cell(name) for name in record["experiments"][1:])
    lines = [f"### {systems} against {cell(record['baseline'])}", "",
             f"Test: {cell(record['test'])}; {record['resamples']} bootstrap resamples, seed {record['seed']}; "
             f"intervals at {level}; "
             f"a verdict needs p < {record['alpha']:g}. Verdicts follow each score's direction "
             "(lower is better for perplexity, KL...).", "",
             f"| score | baseline | baseline value | system | system value | difference [{level} interval] "
             "| p | verdict |" + (" p adjusted | gate |" if gated else ""),
             "|---|---|---|---|---|---|---|---|" + ("---|---|" if gated else "")]
    for pair in record["pairs"]:
        for score, e in pair["scores"].items():
            arrow = "↑" if record["scores"][score]["higher_is_better"] else "↓"
            interval = (f" [{_figure(e['difference_low'])}, {_figure(e['difference_high'])}]"
                        if e["difference_low"] is not None else "")
            lines.append(f"| {cell(score)} {arrow} | {cell(pair['baseline'])} | {_figure(e['baseline'])} "
                         f"| {cell(pair['system'])} | {_figure(e['system'])} | {_figure(e['difference'])}{interval} "
                         f"| {_p_text(e['p_value'], record['resamples'])} | {_VERDICT_WORDS[e['direction_verdict']]} |"
                         + (f" {_gate_cells(e.get('gate'), record['resamples'])} |" if gated else ""))
    if record["notes"]:
        lines += ["", "Notes:"] + [f"- {_one_line(note)}" for note in record["notes"]]
    lines += ["", f"Full precision: experiment metadata key `{METADATA_KEY}` (fingerprint {record['fingerprint']})."]
    return "\n".join(lines)


def _gate_cells(gate: Mapping[str, Any] | None, resamples: int) -> str:
    """The gate's two cells of a row: the adjusted p (and its correction), and pass or FAIL with why."""
    if gate is None:
        return "— | not gated"
    p = "— (margin)" if gate["margin"] is not None else f"{_p_text(gate['p_adjusted'], resamples)} ({gate['correction']})"
    return f"{p} | {'pass' if gate['passed'] else '**FAIL**'}: {markdown_cell(gate['reason'])}"


def _put(out: dict[str, float], name: str, value: Any) -> None:
    """``value`` under ``name``, rounded as the server stores it; left out when it cannot hold it."""
    stored = server_value(value)
    if stored is not None:
        out[name] = stored


def _diff_factors(comparison: Comparison, record: Mapping[str, Any]) -> dict[str, int]:
    """Score -> the one factor its differences to the baseline are published at (one column per score)."""
    against = [p for p in record["pairs"] if p["baseline"] == record["baseline"]]
    return {m.name: diff_factor([p["scores"][m.name]["difference"] for p in against], m.bounds)
            for m in comparison.metrics}


def experiment_scores(comparison: Comparison, record: Mapping[str, Any],
                      all_scores: bool = False) -> dict[str, dict[str, float]]:
    """Experiment name -> the experiment scores the comparison gives it (name -> value, rounded as
    the server stores it): against the baseline, on each other experiment, the difference and the
    verdict; with ``all_scores`` also the p-value, and on every experiment the interval (and a
    corpus score's value). A value no Opik server can hold (|value| >= 1e9) is left out."""
    confidence = comparison.settings.confidence
    baseline = record["baseline"]
    against_baseline = [p for p in record["pairs"] if p["baseline"] == baseline]
    factors = _diff_factors(comparison, record)
    out: dict[str, dict[str, float]] = {name: {} for name in record["experiments"]}
    for metric in comparison.metrics:
        score = metric.name
        if all_scores:
            low_name, high_name = interval_names(score, confidence)
            for name, value in comparison.scores[score].items():
                if metric.kind == "corpus":
                    _put(out[name], score, value.value)
                if is_number(value.low) and is_number(value.high):
                    _put(out[name], low_name, value.low)
                    _put(out[name], high_name, value.high)
        for pair in against_baseline:
            entry = pair["scores"][score]
            names = pair_names(score, baseline, factors[score])
            if is_number(entry["difference"]):
                _put(out[pair["system"]], names["diff"], entry["difference"] * factors[score])
            if all_scores and is_number(entry["p_value"]):
                _put(out[pair["system"]], names["p"],
                     p_percent(entry["p_value"], entry["direction_verdict"] in (1, -1), record["alpha"]))
            if entry["direction_verdict"] is not None:
                _put(out[pair["system"]], names["verdict"], entry["direction_verdict"])
    return out


def _value_column(metric: ScoreSummary, comparison: Comparison,
                  scores: Mapping[str, Mapping[str, float]]) -> tuple[str | None, bool]:
    """The leaderboard column showing ``metric``'s own value, and whether every compared experiment
    has it: Opik's mean of the items' feedback scores (``feedback_scores.<name>``) for a mean, the
    experiment score a run recorded or this publish writes (``experiment_scores.<name>``) for a corpus
    score."""
    name, names = metric.name, comparison.names
    entries = comparison.scores[name]
    if metric.kind == "mean":
        return f"feedback_scores.{name}", all(e in entries and entries[e].n for e in names)
    has = [(e in entries and is_number(entries[e].recorded)) or name in scores[e] for e in names]
    return (f"experiment_scores.{name}" if any(has) else None), all(has)


def dashboard_plan(comparison: Comparison, record: Mapping[str, Any],
                   scores: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """What the dashboard's leaderboard and chart show: as columns each compared score's own value
    and its published verdict, ranked by the first compared score every experiment has, in its
    declared direction; the published differences to the baseline as a bar chart."""
    published = {n for exp in scores.values() for n in exp}
    names = {score: pair_names(score, record["baseline"], factor)
             for score, factor in _diff_factors(comparison, record).items()}
    columns: list[str] = []
    ranking: tuple[str, bool] | None = None
    for metric in comparison.metrics:
        column, everywhere = _value_column(metric, comparison, scores)
        if column is not None:
            columns.append(column)
            if everywhere and ranking is None:
                ranking = (column, metric.higher_is_better)
    columns += [f"experiment_scores.{n['verdict']}" for n in names.values() if n["verdict"] in published]
    return {"leaderboard_columns": list(dict.fromkeys(columns)),
            "ranking_metric": ranking[0] if ranking else None,
            "ranking_higher_is_better": ranking[1] if ranking else None,
            "difference_chart": [n["diff"] for n in names.values() if n["diff"] in published]}


def build_publication(comparison: Comparison, project_name: str | None = None, *,
                      all_scores: bool = False) -> dict[str, Any]:
    """Everything a publish writes, as JSON: per experiment its experiment scores and the value of
    its metadata key ``opik_metrics_comparison``; the dashboard's name, description, markdown,
    leaderboard columns and ranking, and chart. ``all_scores``: intervals, p-values and corpus values
    as experiment scores too (by default only each score's difference and verdict)."""
    record = comparison_record(comparison)
    scores = experiment_scores(comparison, record, all_scores)
    name = dashboard_name(comparison, project_name)
    return {
        "schema": SCHEMA,
        "metadata_key": METADATA_KEY,
        "fingerprint": record["fingerprint"],
        "all_scores": all_scores,
        "dashboard": {"name": name, "description": dashboard_description(record), "markdown": markdown_table(record),
                      **dashboard_plan(comparison, record, scores)},
        "experiments": {exp: {"experiment_scores": scores[exp],
                              "metadata": {**record, "experiment": exp, "dashboard": {"name": name},
                                           "published_scores": dict(sorted(scores[exp].items()))}}
                        for exp in record["experiments"]},
    }
