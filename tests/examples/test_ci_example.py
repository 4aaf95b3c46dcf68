"""examples/ci/regression-gate.yml runs as written, as its job would: its Install step in a fresh venv
in a copy of the repository (the checkout), which brings no torch, then its `opik-metrics` steps
with that venv's commands, $GITHUB_STEP_SUMMARY a file. The example's candidate is worse, so the
gate step exits 1 with its table in the summary and a JUnit report; gating the baseline against
itself passes."""
from __future__ import annotations

import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.fresh_install import ROOT, clean_env, fresh_venv, installed, source_copy

pytestmark = pytest.mark.xdist_group("ci_example")      # one fresh venv
WORKFLOW = ROOT / "examples" / "ci" / "regression-gate.yml"


def _steps() -> dict[str, str]:
    job = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["gate"]
    return {step["name"]: step["run"] for step in job["steps"] if "run" in step}


def _run(command: str, folder: Path, summary: Path, venv: Path) -> subprocess.CompletedProcess:
    env = {**clean_env(), "GITHUB_STEP_SUMMARY": str(summary), "VIRTUAL_ENV": str(venv),
           "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["bash", "-e", "-c", command], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=900)


def test_the_workflow_installs_no_torch_scores_both_systems_and_the_gate_stops_the_worse_one(tmp_path):
    checkout = source_copy(tmp_path / "checkout")
    venv = fresh_venv(tmp_path)
    summary = tmp_path / "summary.md"
    steps = _steps()
    install = _run(steps.pop("Install"), checkout, summary, venv)
    assert install.returncode == 0, install.stderr
    have = installed(venv)
    assert "opik-metrics" in have and "pyarrow" in have
    assert not have & {"torch", "transformers", "matplotlib", "bert-score"}, sorted(have)
    *scoring, gate = [run for run in steps.values() if run.startswith("opik-metrics")]
    assert len(scoring) == 2 and "--fail-on worse" in gate
    for command in scoring:
        done = _run(command, checkout, summary, venv)
        assert done.returncode == 0, done.stderr
    done = _run(gate, checkout, summary, venv)
    assert done.returncode == 1, done.stderr
    exit_line = done.stderr.strip().splitlines()[-1]
    assert exit_line.startswith("gate failed: rouge1_f1 is significantly worse by"), done.stderr
    table = summary.read_text(encoding="utf-8")
    assert table.startswith("| score | base | new | difference [interval] | one-sided p raw / Holm | verdict | gate |")
    assert "| corpus_bleu |" in table and "**FAIL**" in table
    report = ET.parse(checkout / "gate.xml").getroot()
    assert report.get("tests") == "5" and int(report.get("failures")) >= 1
    assert {case.get("name") for case in report.iter("testcase")} == {
        "rouge1_f1", "rouge2_f1", "rougeL_f1", "bleu", "corpus_bleu"}

    shutil.copy(checkout / "baseline-scores.parquet", checkout / "candidate-scores.parquet")   # no change at all
    done = _run(gate, checkout, summary, venv)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("gate passed: no gated score is significantly worse")
