"""The small shared core every layer may use: signatures, metric facts, summable statistics,
input validation, numbers and versions. It imports nothing else of the pack."""
from opik_metrics.core.facts import (CorpusFacts, MetricFacts, ScoreFacts, corpus_facts, facts_of, read_recorded_facts,
                                    recorded_parts)
from opik_metrics.core.inputs import MetricInputError, require_batch, require_references, require_text
from opik_metrics.core.numbers import is_number
from opik_metrics.core.signature import Signature
from opik_metrics.core.statistics import Statistics, UnknownFormula, corpus_formula, mean_formula, resolve_formula
from opik_metrics.core.versions import ours, package_version

__all__ = ["CorpusFacts", "MetricFacts", "MetricInputError", "ScoreFacts", "Signature", "Statistics", "UnknownFormula",
           "corpus_facts", "corpus_formula", "facts_of", "read_recorded_facts", "recorded_parts", "is_number", "mean_formula", "ours", "package_version",
           "require_batch", "require_references", "require_text", "resolve_formula"]
