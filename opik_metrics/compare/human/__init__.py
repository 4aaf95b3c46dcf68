"""Agreement with human ratings: the statistics, the ratings read from an experiment, its report, its publication."""
