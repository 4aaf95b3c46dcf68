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
from tests.process_sweep import end, mark_this_run, marked_processes  # noqa: E402

_OWNS_RUN_MARK = False


def pytest_configure(config):
    """The pytest process of a run (not an xdist worker, not a run inside a test) marks what the run
    starts, and first ends what a killed earlier run left behind."""
    global _OWNS_RUN_MARK
    if hasattr(config, "workerinput"):
        return
    _OWNS_RUN_MARK = mark_this_run()
    if _OWNS_RUN_MARK:
        end(marked_processes(owner_alive=False))


def pytest_unconfigure(config):
    """Ends every process this run started that is still there (also after Ctrl-C)."""
    if _OWNS_RUN_MARK and not hasattr(config, "workerinput"):
        left = end(marked_processes())
        if left:
            print(f"\nended {left} process(es) the test run left behind")


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
