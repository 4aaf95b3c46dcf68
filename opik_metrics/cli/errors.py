"""The CLI's one error path: a user-facing error is one line on stderr and exit status 2; Ctrl-C
says what was kept and exits 130. Every sub-command runs through ``run_command``."""
from __future__ import annotations

import argparse
import sys
from typing import Callable


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def fail(message: str, status: int = 2) -> int:
    print(f"opik-metrics: error: {message}", file=sys.stderr)
    return status


def user_errors() -> tuple[type[BaseException], ...]:
    """Errors whose message is the whole story: printed as one line, no traceback."""
    from opik_metrics.core.inputs import MetricInputError
    from opik_metrics.experiments.opik_server import OpikServerUnavailable
    from opik_metrics.experiments.store import StoreError
    from opik_metrics.neural.models.registry import ModelNotAvailableError
    from opik_metrics.pipelines.captioning.conceptual_captions import DatasetSourceError

    return (CLIError, OpikServerUnavailable, StoreError, MetricInputError, ModelNotAvailableError,
            DatasetSourceError, ValueError)


def run_command(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run one sub-command: known errors become one clear line (exit 2), Ctrl-C exits 130."""
    try:
        return command(args)
    except KeyboardInterrupt:
        store = getattr(args, "store", None)
        print("\ninterrupted: every item finished so far is kept in the local store"
              + (f" {store}" if store else "") + "; run the same command again to resume", file=sys.stderr)
        return 130
    except user_errors() as exc:
        return fail(str(exc))
