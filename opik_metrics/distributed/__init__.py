"""Scoring on a Ray cluster (the optional ``opik-metrics[ray]`` extra): the chunks of a record file,
or a ``ray.data.Dataset`` you already have, scored by Ray Data workers that build their metrics
once; rows and aggregates equal to the single-process run."""
from opik_metrics.distributed.ray_engine import RayEngine, aggregate_dataset, score_dataset

__all__ = ["RayEngine", "aggregate_dataset", "score_dataset"]
