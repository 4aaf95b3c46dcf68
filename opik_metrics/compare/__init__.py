"""Comparing two systems on the same items: paired bootstrap statistics and reports. Which metric
agrees with human ratings is meta-evaluation: ``opik_metrics.meta_evaluation``."""
