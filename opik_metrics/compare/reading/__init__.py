"""Reading experiments for a comparison: the local store, the Opik server, record files."""
