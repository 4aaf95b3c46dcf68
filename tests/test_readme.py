"""The README's Python blocks run exactly as written: with no Opik server configured, no model hub,
a fresh local store."""
from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
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


# --- the next steps, right after `make demo` (issue 56: 10 of 12 named experiments and files nothing made)

ROOT = README.parent
OFFLINE_MARK = "Next steps, right after `make demo`"
SERVER_MARK = "With an Opik server"


def _bash_block_after(marker: str) -> list[str]:
    """The command lines of the README's first bash block after ``marker``."""
    text = README.read_text(encoding="utf-8")
    assert marker in text, f"README.md lacks {marker!r}"
    block = re.search(r"```bash\n(.*?)```", text[text.index(marker):], flags=re.S)
    assert block is not None
    return [line for line in block.group(1).splitlines() if line.strip()]


@pytest.fixture(scope="module")
def after_demo(tmp_path_factory):
    """The clone's root as `make demo` leaves it: .venv, examples/, notebooks/ and demo-output/ with the
    demo's two experiments, made by the demo's own run_demo (its text metrics and CIDEr-D only, to keep
    this fast and off the packaged weights: no next step reads a model's score)."""
    import examples.demo.run as demo
    from opik_metrics import BLEU, CIDEr, ROUGE

    root = tmp_path_factory.mktemp("clone")
    assert (Path(sys.prefix) / "bin" / "activate").exists(), "the tests run in a venv (make test's .venv)"
    (root / ".venv").symlink_to(sys.prefix)
    for name in ("examples", "notebooks"):
        (root / name).symlink_to(ROOT / name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(demo, "demo_metrics", lambda references: [
            ROUGE(track=False), BLEU(track=False), CIDEr(df_references=references, track=False)])
        patch.chdir(root)
        with contextlib.redirect_stdout(io.StringIO()):
            demo.run_demo(Path("demo-output"), progress=False)
    return root


def _shell_env(root: Path) -> dict[str, str]:
    """A reader's shell: no server configured, no store chosen, a home of its own (no ~/.opik.config)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPIK_", "VIRTUAL_ENV", "PYTHON"))}
    env.update(HOME=str(root / "home"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MPLBACKEND="Agg",
               OPIK_ANALYTICS_ENABLE="false", OPIK_SENTRY_ENABLE="false")
    return env


def test_every_offline_next_step_runs_as_written_right_after_the_demo(after_demo):
    """Each line of the block in one bash shell (so `source` and `export` hold for the next lines),
    in the clone's root: each exits 0, but the gate, which the README says exits 1 here."""
    lines = _bash_block_after(OFFLINE_MARK)
    assert lines[0].startswith("source .venv/bin/activate")
    script = "\n".join(f"{{ {line}\n}} > out.{k} 2>&1; echo $? > rc.{k}" for k, line in enumerate(lines))
    (after_demo / "home").mkdir(exist_ok=True)
    done = subprocess.run(["bash", "-c", script], cwd=after_demo, env=_shell_env(after_demo), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    for k, line in enumerate(lines):
        out = (after_demo / f"out.{k}").read_text(encoding="utf-8")
        code = int((after_demo / f"rc.{k}").read_text())
        assert "Traceback" not in out, (line, out)
        if "--fail-on worse" in line:
            assert code == 1 and "exit 1" in line, (line, out)
            assert any(row.startswith("gate failed: rouge1_f1 is significantly worse") for row in out.splitlines()), out
        else:
            assert code == 0, (line, out)
        if line.startswith("opik-metrics experiments list"):
            assert "demo-system-a" in out and "demo-system-b" in out, out
    assert (after_demo / "report" / "index.html").exists() and (after_demo / "report-files" / "index.html").exists()


def test_every_server_next_step_runs_as_written_against_the_rest_stand_in(after_demo, monkeypatch, capsys):
    """The server block after the offline one's `export OPIK_METRICS_STORE=...`, each command through
    the CLI's main in this process (four `import opik`s in subprocesses take minutes on a loaded machine),
    OPIK_URL_OVERRIDE pointing at the stand-in instead of a local Opik."""
    from opik.api_objects import opik_client

    from opik_metrics.cli.main import main
    from tests.opik_rest_server import OpikRestServer

    offline = _bash_block_after(OFFLINE_MARK)
    store = next(shlex.split(line, comments=True)[1] for line in offline if line.startswith("export "))
    lines = _bash_block_after(SERVER_MARK)
    monkeypatch.chdir(after_demo)
    monkeypatch.setenv(*store.split("=", 1))
    with OpikRestServer() as server:
        try:
            for line in lines:
                words = shlex.split(line, comments=True)
                if words[0] == "export":
                    name, _, value = words[1].partition("=")
                    assert name == "OPIK_URL_OVERRIDE" and value == "http://localhost:5173/api", line
                    monkeypatch.setenv(name, server.url)          # the stand-in instead of a local Opik
                    opik_client.reset_global_client()
                    continue
                assert words[0] == "opik-metrics", line
                code = main(words[1:])
                out, err = capsys.readouterr()
                assert code == 0, (line, out, err)
        finally:
            opik_client.reset_global_client()
        assert server.invalid == [] and server.unexpected == []
        assert len(server.experiments) == 2 and server.dashboards
        assert "chrf" in server.feedback_scores[next(key for key in server.feedback_scores if key[0] == "trace")]


# --- installing, read top to bottom (issue 56)

TORCH_EXTRAS = ("neural", "images", "offline", "all")


def _pip_lines(text: str) -> list[str]:
    return [line.strip() for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S)
            for line in block.splitlines() if line.strip().startswith("pip install")]


def test_the_install_lines_run_from_the_clone_and_name_no_folder_of_ours():
    """`pip install ./opik-metrics` assumed the clone's folder name: the lines install `.`, and the
    text says how to name the clone from elsewhere."""
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    assert not [page.name for page in pages if "./opik-metrics" in page.read_text(encoding="utf-8")]
    lines = _pip_lines(README.read_text(encoding="utf-8"))
    assert "pip install ." in [line.split("#")[0].strip() for line in lines]
    assert 'pip install "/path/to/clone[' in README.read_text(encoding="utf-8")


def test_the_pinned_cpu_torch_line_comes_before_any_extra_that_brings_torch():
    """Read top to bottom, `[neural]` before the CPU line pulls CUDA torch (GBs)."""
    pin = next(line for line in (ROOT / "constraints.txt").read_text().splitlines() if line.startswith("torch=="))
    lines = _pip_lines(README.read_text(encoding="utf-8"))
    cpu = [k for k, line in enumerate(lines)
           if line.startswith(f"pip install {pin} --index-url https://download.pytorch.org/whl/cpu")]
    assert cpu, f"no `pip install {pin} --index-url https://download.pytorch.org/whl/cpu` line"
    torch_extras = [k for k, line in enumerate(lines)
                    if any(re.search(rf"[\[,]{extra}[\],]", line) for extra in TORCH_EXTRAS)]
    assert torch_extras and min(torch_extras) > cpu[0], lines
    text = README.read_text(encoding="utf-8")
    assert text.index(pin) < min(text.index(f"[{extra}]") for extra in TORCH_EXTRAS if f"[{extra}]" in text)


def test_the_install_sizes_are_the_measured_ones():
    """A user's fresh venvs (issue 56): the core 516 MB, the CI example's core + parquet 686 MB."""
    assert "516 MB" in README.read_text(encoding="utf-8")
    assert "about 440 MB" not in README.read_text(encoding="utf-8")
    workflow = (ROOT / "examples" / "ci" / "regression-gate.yml").read_text(encoding="utf-8")
    assert "686 MB" in workflow and "half a GB" not in workflow


def test_the_plugin_page_installs_the_pack_before_the_plugin():
    """The template's `dependencies = ["opik-metrics"]` cannot resolve from PyPI: the page installs
    the pack first."""
    page = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    plugin = page[page.index("### A metric in your own package (a plugin)"):]
    lines = _pip_lines(plugin)
    assert lines[-1].startswith("pip install ./my-metrics"), lines
    assert any(line.startswith("pip install /path/to/opik-metrics-clone") for line in lines[:-1]), lines
    assert "not on PyPI" in plugin[:plugin.index("pip install ./my-metrics")]


def test_the_install_page_says_to_set_hf_hub_offline_without_the_hub():
    text = README.read_text(encoding="utf-8")
    assert "HF_HUB_OFFLINE=1" in text[:text.index("## Two commands")]
    assert "HF_HUB_OFFLINE=1" in (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")


def test_a_page_says_how_to_run_opik_locally_and_what_the_tests_use_instead():
    """Issue 56: traces, push and --publish had no page on trying them without a hosted server."""
    from opik.config import OPIK_URL_LOCAL

    page = (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
    section = page[page.index("## An Opik server on your machine"):]
    section = section[:section.index("\n## ")]
    assert "./opik.sh" in section and "opik configure --use_local" in section
    assert f"OPIK_URL_OVERRIDE={OPIK_URL_LOCAL.rstrip('/')}" in section       # the SDK's own local URL
    assert "tests/opik_rest_server.py" in section and (ROOT / "tests" / "opik_rest_server.py").exists()
    server = "\n".join(_bash_block_after(SERVER_MARK))
    assert f"OPIK_URL_OVERRIDE={OPIK_URL_LOCAL.rstrip('/')}" in server
    assert "docs/experiments.md#an-opik-server-on-your-machine" in README.read_text(encoding="utf-8")
