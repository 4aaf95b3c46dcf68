"""Versions of the packages a number depends on, for signatures that make scores reproducible."""
from __future__ import annotations

from functools import lru_cache
from importlib import metadata


class Version(str):
    """A package's version as a signature records it: the text, marked as saying which software
    made a number rather than how it was asked for (``Signature.versions``), so that a comparison
    can tell a changed option (refused) from a newer release (noted)."""


@lru_cache(maxsize=None)
def package_version(name: str) -> Version:
    """Installed version of ``name``, or "n/a" when it is not installed."""
    try:
        return Version(metadata.version(name))
    except metadata.PackageNotFoundError:
        return Version("n/a")


def ours() -> Version:
    """This package's version."""
    return package_version("opik-metrics")
