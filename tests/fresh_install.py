"""What the tests of a user's install share: the environment with nothing of the repository or the
dev venv on the path, a copy of the sources to build from, the wheel, and fresh virtual environments
that install it from the package index as a user's pip would (pip's wheel cache keeps that quick;
torch is never installed there)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(args: list, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """Run a command; a non-zero exit fails the test with its output."""
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kwargs)
    assert result.returncode == 0, f"{args} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def clean_env() -> dict[str, str]:
    """The environment without anything that would put the repository or the dev venv on the path."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV", "__PYVENV_LAUNCHER__"}}
    env.update(PYTHONNOUSERSITE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OPIK_ANALYTICS_ENABLE="false",
               OPIK_SENTRY_ENABLE="false", OPIK_URL_OVERRIDE="http://127.0.0.1:9/api", MPLBACKEND="Agg",
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


def source_copy(target: Path) -> Path:
    """The repository's sources, without its venv, caches and build outputs: setuptools writes its
    egg-info, build/ and the sdist's staging folder into the source tree, and two builds at once
    (xdist workers, a developer's own build) must not share them."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        top = Path(folder) == ROOT
        return {n for n in names if n in {"__pycache__", "build", "dist"} or n.endswith((".egg-info", ".sqlite"))
                or (top and (n.startswith(".") or n in {"demo-output", "out"}))}

    shutil.copytree(ROOT, target, ignore=ignore)
    return target


def build(source: Path, out: Path, *what: str) -> None:
    """``python -m build`` of ``source`` into ``out``, offline (the dev venv's setuptools, no isolation)."""
    run([sys.executable, "-m", "build", "--no-isolation", *what, "--outdir", out, source], cwd=out, env=clean_env(),
        timeout=300)


def fresh_venv(home: Path, *requirements: str, cwd: Path | None = None) -> Path:
    """A new venv under ``home`` with pip, and ``requirements`` installed into it by pip as a user would
    (from the index, through pip's cache); its folder."""
    venv = home / "venv"
    run([sys.executable, "-m", "venv", venv], cwd=home, env=clean_env())
    if requirements:
        run([venv / "bin" / "python", "-m", "pip", "install", "-q", *requirements], cwd=cwd or home, env=clean_env(),
            timeout=900)
    return venv


def installed(venv: Path) -> set[str]:
    """The normalised names of the distributions installed in ``venv``."""
    script = ("import importlib.metadata as m, re; print('\\n'.join(sorted({re.sub(r'[-_.]+', '-', "
              "d.metadata['Name']).lower() for d in m.distributions()})))")
    return set(run([venv / "bin" / "python", "-c", script], env=clean_env()).stdout.split())


def site_size(venv: Path) -> int:
    """Bytes under ``venv`` (what the install costs on disk)."""
    return sum(p.stat().st_size for p in venv.rglob("*") if p.is_file() and not p.is_symlink())
