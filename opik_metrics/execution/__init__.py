"""Where scoring runs: worker processes (``worker_pools``: one pool class, the one place their
start method is decided), the scoring context that owns them for a ``with`` block (and picks the
plain reference path), and large batches' kernels on them (``kernels``). The file engines that
share the one scorer (this process, a process pool, Ray) are in ``streams`` and ``distributed``."""
from opik_metrics.execution.context import ScoringContext, current_context

__all__ = ["ScoringContext", "current_context"]
