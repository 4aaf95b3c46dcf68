"""The one place the pack asks Python's garbage collector for help, with public ``gc`` calls:
a batch builds many small result objects that hold no cycles, so the collector is paused while it
scores, and a large batch's objects go straight to the oldest generation on leaving."""
from __future__ import annotations

import contextlib
import gc
import sys
import sysconfig
from typing import Iterator

#: From this many items a batch's new objects skip the young generations (``collector_paused``).
PROMOTE_MIN_ITEMS = 1_000
#: Whether ``gc.freeze(); gc.unfreeze()`` promotes in constant time: CPython's generational collector
#: with the GIL (3.14's is incremental, and free-threaded builds walk the whole heap for each).
_GENERATIONAL = (sys.implementation.name == "cpython" and sys.version_info < (3, 14)
                 and not sysconfig.get_config_var("Py_GIL_DISABLED"))


@contextlib.contextmanager
def collector_paused(n_items: int = 0) -> Iterator[None]:
    """Pause the cyclic collector while a batch builds its results (they hold no cycles, and each
    collection would rescan every object ``import opik`` leaves); restored as it was, also on error.
    From ``PROMOTE_MIN_ITEMS`` items the batch's objects then go straight to the oldest generation
    (``gc.freeze(); gc.unfreeze()``), after the caller's young garbage is collected, so no young
    collection scans them again; only where that is safe: the collector on, nothing frozen by the
    process, no other Python thread, a generational CPython."""
    from opik_metrics.execution.context import speed_helpers_on

    if not speed_helpers_on():          # the plain reference path: the collector left as it is
        yield
        return
    was_enabled = gc.isenabled()
    promote = _GENERATIONAL and was_enabled and n_items >= PROMOTE_MIN_ITEMS and gc.get_freeze_count() == 0
    if promote:
        from opik_metrics.execution.context import other_threads_than_ours   # only here: it imports multiprocessing

        promote = not other_threads_than_ours()
    if promote:
        gc.collect(1)
    gc.disable()
    try:
        yield
    finally:
        if promote:
            promote_to_oldest()
        if was_enabled:
            gc.enable()


def promote_to_oldest() -> None:
    """Move every object alive now to the oldest generation (``gc.freeze(); gc.unfreeze()``: nothing
    stays frozen), so young collections no longer scan a large set of long-lived objects (records
    read for a comparison); only where that is safe: nothing frozen by the process, no other Python
    thread, a generational CPython."""
    from opik_metrics.execution.context import other_threads_than_ours   # only here: it imports multiprocessing

    if _GENERATIONAL and gc.get_freeze_count() == 0 and not other_threads_than_ours():
        gc.freeze()
        gc.unfreeze()
