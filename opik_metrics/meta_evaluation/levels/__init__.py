"""Correlations by level (pooled, item, system) with bootstrap intervals, and the per-item
correlations they need."""
