"""Opik ``BaseMetric`` adapters: validate input, call an engine, build ScoreResults (no file I/O)."""
