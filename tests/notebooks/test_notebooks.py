"""The notebooks in notebooks/ run from top to bottom, offline, each in a fresh kernel of this
environment, writing only under the test's tmp folder; and they are committed clean (valid
nbformat, no outputs, no execution counts). A run works on an in-memory copy: the committed
files are never written.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
EXPECTED = {"01_metrics_quickstart.ipynb", "02_caption_experiment.ipynb", "03_distillation.ipynb",
            "04_agreement.ipynb"}

# Run first in every kernel: which Python and which settings the notebook really gets.
PROBE = ("import json, os, sys\n"
         "print(json.dumps({'executable': sys.executable, 'prefix': sys.prefix,\n"
         "                  'store': os.environ.get('OPIK_METRICS_STORE'),\n"
         "                  'opik_url': os.environ.get('OPIK_URL_OVERRIDE')}))")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _ids(path: Path) -> str:
    return path.stem


def test_the_notebooks_are_there():
    assert EXPECTED <= {p.name for p in NOTEBOOKS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    assert nb.cells and nb.cells[0].cell_type == "markdown", "the first cell says what the notebook shows"
    dirty = [k for k, cell in enumerate(nb.cells) if cell.cell_type == "code"
             and (cell.outputs or cell.execution_count is not None or "execution" in cell.metadata)]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs or execution counts; clear them before committing"


@pytest.fixture(scope="session")
def kernel_dirs(tmp_path_factory) -> dict[str, str]:
    """Folders the kernel would otherwise write under $HOME (IPython history, matplotlib's font
    cache), shared by the notebooks of one session so the font cache is built once."""
    root = tmp_path_factory.mktemp("kernel-home")
    return {"IPYTHONDIR": str(root / "ipython"), "MPLCONFIGDIR": str(root / "matplotlib")}


def _kernel_env(tmp_path: Path, kernel_dirs: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPIK_URL_OVERRIDE", "OPIK_API_KEY")}
    (tmp_path / "tmp").mkdir()
    env.update(kernel_dirs)
    env.update({
        "OPIK_METRICS_STORE": str(tmp_path / "experiments.sqlite"),
        "OPIK_METRICS_IMAGE_CACHE": str(tmp_path / "image-cache"),
        "TMPDIR": str(tmp_path / "tmp"),           # the notebooks' tempfile.mkdtemp() folders
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "OPIK_ANALYTICS_ENABLE": "false",
        "OPIK_SENTRY_ENABLE": "false",
        "MPLBACKEND": "Agg",
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    })
    return env


def _failed_cell(nb) -> int | None:
    """The cell with an error output, else the last cell that started (timeout, dead kernel)."""
    code = [k for k, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    for k in code:
        if any(out.output_type == "error" for out in nb.cells[k].get("outputs", [])):
            return k
    started = [k for k in code if "iopub.execute_input" in nb.cells[k].metadata.get("execution", {})]
    return started[-1] if started else (code[0] if code else None)


def _failure_message(path: Path, nb, exc: BaseException) -> str:
    """Which cell failed (numbered as in the committed notebook), its source, and the error."""
    k = _failed_cell(nb)
    if k is None:
        return f"{path.name} failed before any cell ran: {type(exc).__name__}: {exc}"
    cell = nb.cells[k]
    where = "the kernel check cell (added by the test)" if k == 0 else f"cell {k - 1} (counted from 0)"
    errors = [out for out in cell.get("outputs", []) if out.output_type == "error"]
    if errors:
        err = errors[0]
        trace = ANSI.sub("", "\n".join(err.get("traceback", [])))
        error = f"{err.ename}: {err.evalue}\n\n" + "\n".join(trace.splitlines()[-60:])
    else:
        error = f"{type(exc).__name__}: {ANSI.sub('', str(exc))[-3000:]}"
    stderr = "".join(out.get("text", "") for out in cell.get("outputs", [])
                     if out.output_type == "stream" and out.name == "stderr")
    tail = f"\n---- stderr (end) ----\n{ANSI.sub('', stderr)[-1500:]}" if stderr.strip() else ""
    kind = type(exc).__name__
    if kind != "CellExecutionError":   # a timeout or a dead kernel: say so before the cell's own error
        kind += ": " + (ANSI.sub("", str(exc)).strip().splitlines() or [""])[0]
    try:
        kernel = f" (kernel: {_probe_result(nb)['executable']})"
    except (ValueError, IndexError, KeyError, AttributeError):
        kernel = ""
    return (f"{path.relative_to(ROOT)} failed at {where}, {kind}{kernel}:\n---- source ----\n{cell.source}\n"
            f"---- error ----\n{error}{tail}")


def _probe_result(nb) -> dict:
    """What the kernel check cell printed."""
    text = "".join(out.get("text", "") for out in nb.cells[0].get("outputs", []) if out.output_type == "stream")
    return json.loads(text.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_notebook_runs(path, tmp_path, kernel_dirs, monkeypatch, record_property):
    from nbclient import NotebookClient

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter-runtime"))  # the kernel's connection file
    committed = path.read_bytes()
    nb = nbformat.reads(committed.decode("utf-8"), as_version=4)   # an in-memory copy; never written back
    nb.cells.insert(0, nbformat.v4.new_code_cell(PROBE))
    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    started = time.perf_counter()
    try:
        client.execute(env=_kernel_env(tmp_path, kernel_dirs))
    except Exception as exc:  # CellExecutionError, CellTimeoutError, DeadKernelError, ...
        pytest.fail(_failure_message(path, nb, exc), pytrace=False)
    seconds = time.perf_counter() - started
    record_property("seconds", round(seconds, 1))
    print(f"{path.name}: {seconds:.1f} s")

    kernel = _probe_result(nb)
    venv = ROOT / ".venv"
    assert kernel["executable"] == sys.executable or Path(kernel["executable"]).is_relative_to(venv), kernel
    assert Path(kernel["prefix"]).resolve() == Path(sys.prefix).resolve(), "the kernel runs another environment"
    assert kernel["store"] == str(tmp_path / "experiments.sqlite") and kernel["opik_url"] is None
    assert path.read_bytes() == committed, f"{path.name} changed on disk while it ran"
