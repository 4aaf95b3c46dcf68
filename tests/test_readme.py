"""The README's Python blocks run exactly as written: with no Opik server configured, no model hub,
a fresh local store."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_the_readme_has_python_to_run():
    assert BLOCKS


@pytest.mark.slow
@pytest.mark.parametrize("k", range(len(BLOCKS)))
def test_readme_block_runs_as_written(k, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPIK_URL_OVERRIDE", raising=False)             # no server configured
    monkeypatch.setenv("OPIK_METRICS_STORE", str(tmp_path / "experiments.sqlite"))
    monkeypatch.chdir(tmp_path)
    exec(compile(BLOCKS[k], f"README.md python block {k + 1}", "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    assert "Traceback" not in out
    if "evaluate(" in BLOCKS[k]:
        assert out.splitlines()[0] == f"local {tmp_path / 'experiments.sqlite'}"
        assert "corpus_bleu" in out


def test_the_first_shell_use_of_the_command_says_how_to_reach_it():
    """`make demo` creates .venv but cannot activate it in the reader's shell: the README says so
    where its shell blocks first call `opik-metrics` (else "command not found")."""
    text = README.read_text(encoding="utf-8")
    first = re.search(r"^opik-metrics ", text, flags=re.M)
    assert first is not None
    before = text[:first.start()]
    assert "source .venv/bin/activate" in before and ".venv/bin/opik-metrics" in before
