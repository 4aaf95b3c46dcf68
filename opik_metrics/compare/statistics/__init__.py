"""Resampling and its tests: the seeded bootstrap, trials and clusters (the unit resampled),
multiple-testing corrections, correlations with their intervals. Compare, the gate and agreement use it."""
