"""The ``opik-metrics`` command: one module per sub-command, one error path. Nothing imports it."""
from opik_metrics.cli.main import main

__all__ = ["main"]
