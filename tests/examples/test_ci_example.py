"""examples/ci/regression-gate.yml runs as written: its `opik-metrics` steps, in a copy of the
repository's example folder, with $GITHUB_STEP_SUMMARY a file. The example's candidate is worse,
so the gate step exits 1 with its table in the summary and a JUnit report; gating the baseline
against itself passes."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "regression-gate.yml"


def _steps() -> list[str]:
    job = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["gate"]
    return [step["run"] for step in job["steps"] if str(step.get("run", "")).startswith("opik-metrics")]


def _run(command: str, folder: Path, summary: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["bash", "-e", "-c", command], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_workflow_scores_both_systems_and_the_gate_stops_the_worse_one(tmp_path):
    shutil.copytree(ROOT / "examples" / "ci", tmp_path / "examples" / "ci")
    summary = tmp_path / "summary.md"
    *scoring, gate = _steps()
    assert len(scoring) == 2 and "--fail-on worse" in gate
    for command in scoring:
        done = _run(command, tmp_path, summary)
        assert done.returncode == 0, done.stderr
    done = _run(gate, tmp_path, summary)
    assert done.returncode == 1, done.stderr
    exit_line = done.stderr.strip().splitlines()[-1]
    assert exit_line.startswith("gate failed: rouge1_f1 is significantly worse by"), done.stderr
    table = summary.read_text(encoding="utf-8")
    assert table.startswith("| score | base | new | difference [interval] | p raw / Holm | verdict | gate |")
    assert "| corpus_bleu |" in table and "**FAIL**" in table
    report = ET.parse(tmp_path / "gate.xml").getroot()
    assert report.get("tests") == "5" and int(report.get("failures")) >= 1
    assert {case.get("name") for case in report.iter("testcase")} == {
        "rouge1_f1", "rouge2_f1", "rougeL_f1", "bleu", "corpus_bleu"}

    shutil.copy(tmp_path / "baseline-scores.parquet", tmp_path / "candidate-scores.parquet")   # no change at all
    done = _run(gate, tmp_path, summary)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("gate passed: no gated score is significantly worse")
