"""Imported first by the model benchmarks: no hub, no Opik server, no analytics, no network for
opik's cost map. Opik is pointed at a closed local port, so a stray call fails at once."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPIK_ANALYTICS_ENABLE", "false")
os.environ.setdefault("OPIK_TRACK_DISABLE", "true")
os.environ.setdefault("OPIK_URL_OVERRIDE", "http://127.0.0.1:9/api")  # closed port: never reached
