"""The comparison in the Opik UI: what a publication writes, the writes, interval experiment scores."""
