"""A test that needs an outside tool (chromium, java) skips where it is missing, but fails when CI
says the tool must be there (``OPIK_METRICS_REQUIRE_<NAME>=1``), so a missing install step shows."""
from __future__ import annotations

import os

import pytest


def require_tool(path: str | None, env_var: str, reason: str) -> str:
    """``path`` when the tool was found; else fail (``env_var`` set to 1) or skip, with ``reason``."""
    if path is None:
        if os.environ.get(env_var) == "1":
            pytest.fail(f"{reason} and {env_var}=1")
        pytest.skip(reason)
    return path
