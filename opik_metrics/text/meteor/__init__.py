"""Meteor 1.5 as pycocoevalcap's jar computes it (``-l en -norm``), in pure Python: the jar's
normalisation, Snowball stemmer, WordNet synonyms, paraphrase table and beam-search aligner."""
from opik_metrics.text.meteor.align import MeteorSearchLimit
from opik_metrics.text.meteor.resources import MeteorDataError, MeteorDataPaths, MeteorTables, load_tables
from opik_metrics.text.meteor.scorer import MeteorScorer, MeteorSegment, MeteorStatistics, ModuleMatches

__all__ = ["MeteorDataError", "MeteorDataPaths", "MeteorScorer", "MeteorSearchLimit", "MeteorSegment", "MeteorStatistics",
           "MeteorTables", "ModuleMatches", "load_tables"]
