"""Every command reads its arguments before importing anything heavy, so ``--help`` and usage
errors come at once: checked by what a fresh interpreter has imported when it exits, not by time."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "opik", "numpy", "pandas", "ray", "sacrebleu", "bert_score")

PROBE = """
import json, runpy, sys
sys.argv = {argv!r}
try:
    runpy.run_module({module!r}, run_name="__main__")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps({{"code": code, "heavy": [m for m in {heavy!r} if m in sys.modules]}}), file=sys.stderr)
"""


def _run(module: str, args: list[str]) -> dict:
    probe = PROBE.format(argv=[module, *args], module=module, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    return json.loads(done.stderr.strip().splitlines()[-1])


COMMANDS = [[], ["score"], ["explain"], ["caption"], ["compare"], ["agreement"], ["experiments"], ["experiments", "list"],
            ["experiments", "show"], ["experiments", "rescore"], ["experiments", "push"], ["traces"], ["traces", "score"]]


def test_the_list_of_commands_is_complete(capsys):
    from opik_metrics.cli.main import main

    for command in ([], ["experiments"], ["traces"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        listed = re.search(r"\{([\w,-]+)\}", capsys.readouterr().out).group(1).split(",")
        assert sorted(listed) == sorted(c[-1] for c in COMMANDS if c[:-1] == command and c)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "opik-metrics")
def test_help_imports_nothing_heavy(command):
    result = _run("opik_metrics.cli.main", [*command, "--help"])
    assert result == {"code": 0, "heavy": []}


@pytest.mark.parametrize("args", [
    ["caption", "--experiment", "x"],                        # no dataset source
    ["caption", "--experiment", "x", "--tsv", "a.tsv", "--hf-dataset", "b"],
    ["compare", "only-one", "-o", "out"],
    ["agreement", "run-1"],                                  # no --human
    ["agreement", "run-1", "--human", "rating", "--raters", "median"],
    ["score", "--metric", "no-such-metric", "-p", "a.txt", "-r", "b.txt"],
    ["traces", "score", "--project", "p", "-m", "bleu", "--field", "output=caption"],
    ["traces", "score", "--project", "p", "-m", "bleu", "--since", "last tuesday"],
    ["traces", "score", "--project", "p", "-m", "bleu", "--since", "2026-11-09", "--until", "2026-11-02"],
])
def test_usage_errors_import_nothing_heavy(args):
    result = _run("opik_metrics.cli.main", args)
    assert result["code"] != 0 and result["heavy"] == []


@pytest.mark.parametrize("args", [["--help"], ["--steps", "many"]])
def test_the_distillation_pipeline_reads_its_arguments_first(args):
    result = _run("opik_metrics.pipelines.distillation", args)
    assert result["code"] != 0 or args == ["--help"]
    assert result["heavy"] == []
