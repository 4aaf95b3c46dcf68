"""Versions of the packages a number depends on, for signatures that make scores reproducible."""
from __future__ import annotations

from functools import lru_cache
from importlib import metadata


@lru_cache(maxsize=None)
def package_version(name: str) -> str:
    """Installed version of ``name``, or "n/a" when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "n/a"


def ours() -> str:
    """This package's version."""
    return package_version("opik-metrics")
