"""The gate wired into `compare` and `assert_no_regression`: exit 0 passed, 1 failed, 2 a usage or
data error (never 1); each system of a three-way comparison gated against the baseline in one
family; the decision kept in comparison.json and the Opik publication; a lower-is-better score
gated in its own direction."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from opik_metrics.cli.main import main
from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.gate.gating import gate_comparison
from opik_metrics.compare.model import load_comparison
from opik_metrics.compare.publishing.publication import build_publication
from opik_metrics.compare.reading.sources import load_compared
from opik_metrics.testing import assert_no_regression

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ci"


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> Path:
    """The CI example's two systems scored into record files (ROUGE, BLEU, TER), and a copy of the
    baseline's file under another name (the same outputs: nothing to find)."""
    folder = tmp_path_factory.mktemp("gate")
    for name in ("baseline", "candidate"):
        assert main(["score", "-i", str(EXAMPLE / f"{name}.jsonl"), "-o", str(folder / f"{name}.parquet"),
                     "-m", "rouge", "-m", "bleu", "-m", "ter", "--field", "output=caption", "--no-progress"]) == 0
    shutil.copy(folder / "baseline.parquet", folder / "same.parquet")
    return folder


def _compare(folder: Path, *args: str) -> int:
    return main(["compare", *args, "--resamples", "300", "--seed", "7"])


def test_a_worse_candidate_fails_with_exit_1_and_one_line_why(scored, capsys):
    code = _compare(scored, str(scored / "baseline.parquet"), str(scored / "candidate.parquet"), "--fail-on", "worse")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and err[-1].startswith("gate failed: rouge1_f1 is significantly worse by")


def test_the_same_outputs_pass_and_not_better_fails_them(scored, capsys):
    same = [str(scored / "baseline.parquet"), str(scored / "same.parquet")]
    assert _compare(scored, *same, "--fail-on", "worse") == 0
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("gate passed: no gated score is significantly")
    assert _compare(scored, *same, "--fail-on", "not-better") == 1     # nothing improved


def test_a_lower_is_better_score_gates_in_its_direction(scored, capsys):
    # the terser candidate is worse at TER too: TER went up, which is worse for a lower-is-better score
    code = _compare(scored, str(scored / "baseline.parquet"), str(scored / "candidate.parquet"),
                    "--fail-on", "worse", "-m", "corpus_ter", "--format", "markdown")
    out = capsys.readouterr().out
    assert code == 1 and "| corpus_ter (lower is better) |" in out and "| worse | **FAIL** |" in out
    code = _compare(scored, str(scored / "candidate.parquet"), str(scored / "baseline.parquet"),
                    "--fail-on", "worse", "-m", "corpus_ter")
    assert code == 0        # the other way round TER went down: better, so no regression


def test_a_margin_wider_than_the_loss_passes_and_a_narrow_one_fails(scored, capsys):
    pair = [str(scored / "baseline.parquet"), str(scored / "candidate.parquet")]
    assert _compare(scored, *pair, "--fail-on", "worse", "-m", "corpus_bleu", "--margin", "corpus_bleu=0.9") == 0
    assert _compare(scored, *pair, "--fail-on", "worse", "-m", "corpus_bleu", "--margin", "corpus_bleu=0.01") == 1
    assert "interval reaches below its margin -0.01" in capsys.readouterr().err


@pytest.mark.parametrize("extra, says", [
    (["--fail-on", "worse", "--margin", "corpus_bleu"], "--margin 'corpus_bleu': expected SCORE=X"),
    (["--fail-on", "worse", "--margin", "corpus_bleu=-1"], "expected SCORE=X with X a number at or above 0"),
    (["--fail-on", "worse", "--margin", "nosuch=0.1"], "--margin names 'nosuch', which is not a gated score"),
    (["--fail-on", "worse", "-m", "nosuch"], "nosuch"),
    (["--margin", "corpus_bleu=0.1"], "go with --fail-on"),
    (["--format", "markdown", "-o", "out"], "go with --fail-on"),
    (["--fail-on", "worse", "--junit", "/nonexistent-dir/gate.xml"], "cannot write the JUnit report"),
], ids=["margin syntax", "negative margin", "margin unknown score", "unknown metric", "margin alone",
        "markdown alone", "junit unwritable"])
def test_usage_and_data_errors_exit_2_never_1(scored, capsys, extra, says):
    code = _compare(scored, str(scored / "baseline.parquet"), str(scored / "candidate.parquet"), *extra)
    err = capsys.readouterr().err
    assert code == 2 and says in err, err


def test_three_systems_are_gated_as_one_family_and_the_json_keeps_the_decisions(scored, tmp_path, capsys):
    names = [str(scored / n) for n in ("baseline.parquet", "same.parquet", "candidate.parquet")]
    code = _compare(scored, *names, "--fail-on", "worse", "-m", "bleu", "-m", "corpus_bleu", "-o", str(tmp_path))
    assert code == 1
    comparison = load_comparison(tmp_path / "comparison.json")
    gates = {(p.system, s): e.gate for p in comparison.pairs if p.baseline == names[0] for s, e in p.metrics.items()}
    assert all(g is not None and g.correction == "holm" for g in gates.values()) and len(gates) == 4
    assert all(e.gate is None for p in comparison.pairs if p.baseline != names[0] for e in p.metrics.values())
    assert [g.passed for (system, _), g in gates.items() if system == names[1]] == [True, True]
    assert [g.passed for (system, _), g in gates.items() if system == names[2]] == [False, False]
    raw = sorted(e.p_value for p in comparison.pairs if p.baseline == names[0] for e in p.metrics.values())
    adjusted = sorted(g.p_adjusted for g in gates.values())
    assert adjusted[0] == pytest.approx(min(1.0, 4 * raw[0]))       # Holm's first step: m times the smallest
    assert any(n.startswith("gate (--fail-on worse, holm correction over 4 gated score(s))") for n in comparison.notes)


def test_the_opik_publication_shows_the_correction_and_both_p_values(scored):
    experiments, source = load_compared([str(scored / "baseline.parquet"), str(scored / "candidate.parquet")])
    comparison = compare_experiments(experiments, CompareSettings(resamples=200, metrics=("bleu", "corpus_bleu")))
    gated = gate_comparison(comparison, correction="bonferroni")
    publication = build_publication(gated.comparison)
    text = json.dumps(publication)
    assert '"correction": "bonferroni"' in text and '"p_adjusted"' in text
    ungated = json.dumps(build_publication(comparison))
    assert '"p_adjusted"' not in ungated           # a comparison that was not gated publishes as before


def test_assert_no_regression_raises_the_table_and_returns_the_comparison(scored):
    with pytest.raises(AssertionError) as raised:
        assert_no_regression(scored / "baseline.parquet", scored / "candidate.parquet", scores=["corpus_bleu"],
                             resamples=200)
    message = str(raised.value)
    assert "| corpus_bleu |" in message and "**FAIL**" in message and "gate failed:" in message
    gated = assert_no_regression(scored / "baseline.parquet", scored / "same.parquet", resamples=200,
                                 margin={"corpus_bleu": 0.01})
    assert gated.passed and gated.result.mode == "worse"
    with pytest.raises(ValueError, match="metric nosuch is in none of the experiments"):
        assert_no_regression(scored / "baseline.parquet", scored / "same.parquet", scores=["nosuch"])


def _stored_base_and_worse(tmp_path: Path) -> Path:
    """A store with BLEU experiments "base" and "worse" (each output cut before " on ") on 30 items."""
    from opik_metrics import BLEU, evaluate

    items = [{"input": f"a dog number {k} runs on the beach", "reference": f"a dog number {k} running on a beach"}
             for k in range(30)]
    store = tmp_path / "s.sqlite"
    evaluate(dataset=items, task=lambda item: {"output": item["input"]}, scoring_metrics=[BLEU(track=False)],
             experiment_name="base", store=store, verbose=0)
    evaluate(dataset=items, task=lambda item: {"output": item["input"].split(" on ")[0]},
             scoring_metrics=[BLEU(track=False)], experiment_name="worse", store=store, verbose=0)
    return store


def test_assert_no_regression_reads_stored_experiments(tmp_path):
    store = _stored_base_and_worse(tmp_path)
    with pytest.raises(AssertionError, match="bleu"):
        assert_no_regression("base", "worse", store=store, resamples=200)
    assert assert_no_regression("worse", "base", store=store, resamples=200).passed


def test_a_dry_run_of_publishing_still_gates(tmp_path, capsys):
    store = _stored_base_and_worse(tmp_path)
    code = main(["compare", "base", "worse", "--store", str(store), "--dry-run", "--fail-on", "worse",
                 "--resamples", "200"])
    captured = capsys.readouterr()
    assert code == 1 and captured.err.strip().splitlines()[-1].startswith("gate failed: bleu is significantly worse")
    assert '"correction": "holm"' in captured.out          # the plan shows the gate's decisions too
