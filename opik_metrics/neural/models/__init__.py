"""Model loading shared by every model-backed engine: the registry (hub id, path, packaged alias), encoders, causal LMs."""
