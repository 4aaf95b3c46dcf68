"""Comparing two systems on the same items: paired bootstrap statistics and reports."""
