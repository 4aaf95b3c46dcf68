"""Test-wide settings: no network (no hub, no Opik server, no analytics)."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ["OPIK_ANALYTICS_ENABLE"] = "false"
os.environ["OPIK_SENTRY_ENABLE"] = "false"
os.environ.setdefault("OPIK_URL_OVERRIDE", "http://127.0.0.1:9/api")  # closed port: fails fast if reached
os.environ.setdefault("MPLBACKEND", "Agg")

import huggingface_hub.constants  # noqa: E402
import pytest  # noqa: E402

# In case huggingface_hub was imported before this file set the variable (e.g. by a plugin).
huggingface_hub.constants.HF_HUB_OFFLINE = True

from tests.opik_backend import emulated_backend  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def default_store_of_this_process(tmp_path_factory):
    """A run on an Opik server (the stand-in) journals into the default local store: here one per
    test process (each xdist worker its own), never the user's own. Tests of the default set theirs."""
    before = os.environ.get("OPIK_METRICS_STORE")
    os.environ["OPIK_METRICS_STORE"] = str(tmp_path_factory.mktemp("default-store") / "experiments.sqlite")
    yield
    if before is None:
        os.environ.pop("OPIK_METRICS_STORE", None)
    else:
        os.environ["OPIK_METRICS_STORE"] = before


@pytest.fixture(autouse=True, scope="session")
def lease_dir_of_this_process(tmp_path_factory):
    """``traces score`` takes its leases in a folder of this test process, never the user's cache."""
    before = os.environ.get("OPIK_METRICS_LEASE_DIR")
    os.environ["OPIK_METRICS_LEASE_DIR"] = str(tmp_path_factory.mktemp("leases"))
    yield
    if before is None:
        os.environ.pop("OPIK_METRICS_LEASE_DIR", None)
    else:
        os.environ["OPIK_METRICS_LEASE_DIR"] = before


@pytest.fixture
def fake_opik_backend():
    """The in-memory Opik backend (see tests/opik_backend.py)."""
    with emulated_backend() as emulator:
        yield emulator
