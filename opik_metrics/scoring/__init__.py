"""One way to score: the scorer that turns scoring inputs into results and rows (with failures
and reasons), and the rows' aggregates (means, corpus scores from summed statistics), shared by
the experiment runner, the file engines and Ray."""
from opik_metrics.scoring.rows import Aggregator, RowMaker, common_reason, statistics_column
from opik_metrics.scoring.scorer import Scorer, Unscorable, as_results, check_metrics, failed_result

__all__ = ["Aggregator", "RowMaker", "Scorer", "Unscorable", "as_results", "check_metrics", "common_reason", "failed_result",
           "statistics_column"]
