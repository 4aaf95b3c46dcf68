"""What every metric of the pack is built from: the contract (``base``: PackMetric, statistics and
whole-set metrics), cards (its catalog entry and command-line options), Opik's side of a metric
(tracking, its settings, results an Opik server can store), metric families (sacrebleu's, corpus
contexts, shared options), micro-batching, and the speed helpers each in one small module
(collector, positional results, shared metadata)."""
