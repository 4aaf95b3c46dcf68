"""The local experiment store, used when no Opik server is configured: one SQLite file holding
experiments and their config, dataset items, task outputs, every score (failed ones with their
reason), span records and timings. Each item is committed as it finishes, so an interrupted run
loses nothing already scored and a re-run resumes. An item run ``trial_count`` times is kept as
that many trials (0, 1, ... as Opik numbers them), each committed and resumed on its own; a store
written before trials were kept (schema version 1) reads as one trial per item.

One process at a time runs an experiment: ``begin`` takes a lease on it (a row naming the holder's
pid and host, renewed by a heartbeat and on every save, expiring when not renewed) in the same
transaction that creates or resumes it; a second writer stops at once with ``ExperimentLocked``
naming the holder, or waits for it (``lock_wait``). The lease of a process that died (same host,
pid gone) or that stopped renewing it (``lease_seconds``) is taken over, so a killed run resumes.

Reading commands (``create=False``) open the file read-only (``mode=ro``, no schema change, no
write; ``immutable`` on read-only storage); a write asked of such a store reopens it for writing.
A damaged file (``StoreDamaged``) and another application's SQLite file (``NotAStore``) are named
as such and never written to.

Each push to an Opik server is recorded too (``push_record``): the experiment's id there and each
trial's trace id, noted before anything is sent, so a rerun of the push sends only what is missing.
"""
from opik_metrics.experiments.store.errors import (ExperimentLocked, ExperimentNotFound, NotAStore, StoreDamaged,
                                                   StoreError, StoreNotFound)
from opik_metrics.experiments.store.experiment_store import STORE_ENV, ExperimentStore, default_store_path
from opik_metrics.experiments.store.leases import LEASE_SECONDS, LOCK_WAIT_ENV
from opik_metrics.experiments.store.records import (ExperimentInfo, PushRecord, StoredItem, StoredScore,
                                                    config_identity, trial_key)
from opik_metrics.experiments.store.schema import SCHEMA_VERSION

__all__ = ["STORE_ENV", "LOCK_WAIT_ENV", "LEASE_SECONDS", "SCHEMA_VERSION", "ExperimentStore", "ExperimentInfo",
           "PushRecord", "StoredItem", "StoredScore", "StoreError", "ExperimentNotFound", "StoreNotFound",
           "StoreDamaged", "NotAStore", "ExperimentLocked", "config_identity", "default_store_path",
           "trial_key"]
