"""What a user's install costs (issue 46): the wheel built from this checkout, installed by pip into
a fresh venv, once with the core alone and once with ``[all]`` (torch 2.13.0 first: the CPU wheel this
machine's pip takes, as the README's CPU recipe gives a user),
timed and sized. pip's wheel cache is warm after the first run on a machine, as it is for a user
who installs twice; the first run also downloads.

Rows (costs, ``lower_is_better``): the core's size in MB against the issue's 1 GB; the core's size
over ``[all]``'s; the core's install time over ``[all]``'s. Runs only when asked for (``--only
install``): it takes minutes and reaches the package index.

    python -m bench --only install
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.fresh_install import build, clean_env, installed, site_size, source_copy

TARGET_MB = 1024.0


def _install(home: Path, *steps: list[str]) -> tuple[float, float, int]:
    """Seconds for venv creation and every pip step, the venv's MB, and how many distributions it holds."""
    venv = home / "venv"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=clean_env())
    for step in steps:
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *step], check=True,
                       env=clean_env(), cwd=home)
    seconds = time.perf_counter() - start
    return seconds, site_size(venv) / 2**20, len(installed(venv))


def main() -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "dist").mkdir()
        build(source_copy(root / "source"), root / "dist", "--wheel")
        (wheel,) = (root / "dist").glob("*.whl")
        (root / "core").mkdir()
        (root / "all").mkdir()
        core_s, core_mb, core_n = _install(root / "core", [str(wheel)])
        all_s, all_mb, all_n = _install(root / "all", ["torch==2.13.0"], [f"{wheel}[all]"])
    print(f"core: {core_s:.0f} s, {core_mb:.0f} MB, {core_n} distributions; "
          f"[all] (CPU torch): {all_s:.0f} s, {all_mb:.0f} MB, {all_n} distributions", flush=True)
    return [
        {"benchmark": "core install: MB of a fresh venv (pip install <wheel>)", "ours_per_s": None,
         "reference_per_s": None, "ratio": core_mb, "target": TARGET_MB, "identical": True, "lower_is_better": True},
        {"benchmark": "core install size over [all]'s (CPU torch)", "ours_per_s": None, "reference_per_s": None,
         "ratio": core_mb / all_mb, "target": None, "identical": True, "lower_is_better": True,
         "informational": True},
        {"benchmark": "core install time over [all]'s (warm pip cache)", "ours_per_s": None, "reference_per_s": None,
         "ratio": core_s / all_s, "target": None, "identical": True, "lower_is_better": True,
         "informational": True},
    ]
