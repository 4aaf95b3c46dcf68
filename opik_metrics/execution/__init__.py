"""Where scoring runs: worker processes (one pool class, the one place their start method is
decided), the scoring context that owns them for a ``with`` block, large batches' kernels on
them, and the executors the file engines run chunks on (this process, a process pool; Ray in
``distributed``)."""
from opik_metrics.execution.context import ScoringContext, current_context
from opik_metrics.execution.worker_pools import WorkerPool, available_cores, choose_start_method

__all__ = ["ScoringContext", "WorkerPool", "available_cores", "choose_start_method", "current_context"]
