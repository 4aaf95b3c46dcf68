"""Running metrics over datasets: in-memory batch scoring, experiment runner, local store."""
