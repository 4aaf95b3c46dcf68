"""No local path imports the full ``opik`` package (6 s idle, 20-30 s loaded), and no error waits
for it: the local store, record files, ``compare --store``, ``caption`` into the store and the
README's example without a server; a missing file, an unknown stored experiment, a server that
refuses connections. Checked as the issue asks, by ``python -X importtime`` of each path in a
fresh interpreter: no ``opik`` line (the wheel's light ``_opik`` is allowed), not by a clock."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from opik_metrics.pipelines.captioning import offline
from tests.pipelines.caption_fixtures import GOOD, image_server, tiny_blip  # noqa: F401

CLI = [sys.executable, "-X", "importtime", "-m", "opik_metrics"]

EVALUATE = """
import sys
from opik_metrics import BLEU, ROUGE, evaluate

items = [{"input": "A dog runs along the beach.", "reference": "a dog running on the beach"},
         {"input": "Two cats asleep on a sofa.", "reference": ["two cats sleeping on a couch", "cats on a sofa"]}]
summary = evaluate(dataset=items, task=lambda item: {"output": item["input"].lower().rstrip(".")},
                   scoring_metrics=[ROUGE(), BLEU()], experiment_name=sys.argv[1], verbose=0, **STORE)
print(summary.backend, summary.items, sorted(summary.experiment_scores))
"""


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(command: list[str], home: Path, env_updates: dict[str, str] | None = None) -> tuple[int, str, set[str]]:
    """(exit code, stdout and the non-importtime stderr, the top-level packages imported), run with
    no Opik server configured (none in the environment, no config file) unless ``env_updates`` sets
    one, in folder ``home``, which is also its HOME (caches land there)."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("OPIK_URL_OVERRIDE", "OPIK_API_KEY")}
    env = {**env, "OPIK_CONFIG_PATH": "", "HOME": str(home), **(env_updates or {})}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=home)
    imported, other = set(), []
    for line in done.stderr.splitlines():
        if line.startswith("import time:"):
            name = line.rsplit("|", 1)[-1].strip()
            imported.add(name.split(".")[0])
        else:
            other.append(line)
    return done.returncode, done.stdout + "\n".join(other), imported


def _evaluate(name: str, store: Path | None, home: Path, env: dict[str, str] | None = None) -> tuple[int, str, set[str]]:
    code = EVALUATE.replace("**STORE", f"store={str(store)!r}" if store else "")
    return _run([sys.executable, "-X", "importtime", "-c", code, name], home, env)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("store") / "experiments.sqlite"
    for name in ("base", "new"):
        code, out, imported = _evaluate(name, path, path.parent)
        assert code == 0 and out.startswith("local 2"), out
        assert "opik" not in imported and "_opik" in imported, "the README's example imported opik"
    return path


def test_the_readme_example_without_a_server_never_imports_opik(store):
    pass    # the fixture ran it twice, checking the imports each time


@pytest.mark.parametrize("command", [["experiments", "list"], ["experiments", "show", "new", "--items"],
                                     ["compare", "base", "new", "-o", "{tmp}/report", "--resamples", "50"]],
                         ids=["list", "show", "compare"])
def test_store_commands_never_import_opik(store, tmp_path, command):
    code, out, imported = _run([*CLI, *[c.format(tmp=tmp_path) for c in command], "--store", str(store)], tmp_path)
    assert code == 0, out
    assert "opik" not in imported, out


def test_scoring_and_rescoring_a_record_file_never_import_opik(tmp_path):
    records = tmp_path / "records.jsonl"
    records.write_text("\n".join(json.dumps({"output": "a cat sat", "reference": "the cat sat"}) for _ in range(3)),
                       encoding="utf-8")
    code, out, imported = _run([*CLI, "score", "-i", str(records), "-o", str(tmp_path / "scores.jsonl"),
                                "-m", "rouge", "-m", "bleu", "--no-progress"], tmp_path)
    assert code == 0, out
    assert "opik" not in imported
    code, out, imported = _run([*CLI, "experiments", "rescore", str(tmp_path / "scores.jsonl"), "-m", "meteor",
                                "--no-progress"], tmp_path)           # a metric added to the record file
    assert code == 0 and "rescored record file" in out, out
    assert "opik" not in imported


def test_captioning_into_the_store_never_imports_opik(tmp_path, image_server, tiny_blip):  # noqa: F811
    tsv = tmp_path / "cc.tsv"
    tsv.write_text(offline.caption_tsv_text(offline.sample_rows(image_server, GOOD)), encoding="utf-8")
    code, out, imported = _run([*CLI, "caption", "--tsv", str(tsv), "--model", str(tiny_blip), "--experiment", "blip",
                                "--store", str(tmp_path / "s.sqlite"), "-m", "bleu", "--max-length", "8", "--min-length", "2",
                                "--num-beams", "1", "--no-progress"], tmp_path)
    assert code == 0, out
    assert "opik" not in imported and "torch" in imported


@pytest.mark.parametrize("command, says", [
    (["caption", "--tsv", "missing.tsv", "--model", "m", "--experiment", "x"], "TSV file not found: missing.tsv"),
    (["compare", "base", "nosuch", "-o", "out"], "no experiment named 'nosuch'"),
    (["experiments", "push", "nosuch"], "no experiment named 'nosuch'"),
    (["experiments", "push", "new"], "is not reachable (ConnectionError: connection refused)"),
    (["compare", "base", "new", "--opik", "-o", "out"], "is not reachable (ConnectionError: connection refused)"),
], ids=["caption missing tsv", "compare unknown", "push unknown", "push no server", "compare no server"])
def test_errors_come_before_opik_and_torch(store, tmp_path, command, says):
    url = f"http://127.0.0.1:{_closed_port()}/api"
    code, out, imported = _run([*CLI, *command, *([] if "--opik" in command or "caption" in command
                                                   else ["--store", str(store)])],
                               tmp_path, {"OPIK_URL_OVERRIDE": url})
    errors = [line for line in out.splitlines() if line.startswith("opik-metrics: error:")]
    assert code == 2 and len(errors) == 1 and says in errors[0], out
    assert not {"opik", "torch"} & imported, imported & {"opik", "torch"}


def test_evaluate_with_a_server_that_refuses_is_an_error_before_opik(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/api"
    code, out, imported = _evaluate("x", None, tmp_path, {"OPIK_URL_OVERRIDE": url})
    assert code != 0 and f"OpikServerUnavailable: Opik server at {url}" in out, out
    assert "opik" not in imported


def test_rescoring_and_agreement_in_the_store_never_import_opik(store, tmp_path):
    import shutil

    copy = tmp_path / "copy.sqlite"
    shutil.copy(store, copy)
    for command in (["experiments", "rescore", "new", "-m", "meteor", "--no-progress"],
                    ["agreement", "new", "--human", "bleu", "-m", "rouge1_f1", "--resamples", "50"]):
        code, out, imported = _run([*CLI, *command, "--store", str(copy)], tmp_path)
        assert code == 0, out
        assert "opik" not in imported, command
