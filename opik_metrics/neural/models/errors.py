"""The error every model loader raises for a model it cannot load here (its message says what to do)."""
from __future__ import annotations


class ModelNotAvailableError(RuntimeError):
    """A model name that cannot be resolved or loaded here; the message says what to do."""
