"""Keep the full garbage collection that Streamlit runs after every script run cheap.

Streamlit calls ``gc.collect(2)`` at the end of every script run (``runner.postScriptGC``),
fragment runs included: the sidebar's live indicator every two seconds, and every slider step
on Search & tune. A full collection walks every object the collector tracks. Indexing in the
server's own process (the page's first sync, or the workbench's watcher building a fresh
workspace) imports sentence-transformers, torch, scipy, sympy and sklearn: about 3,000 modules
and 400,000 more tracked objects, which made each collection take ~0.3 s. The server then idled
at 15-30 % of a core, and a slider step waited behind those collections (issue #23: presses
took about twice as long as on an index another process had built).

Those objects are module-level: functions, classes, type hints, constants that live as long
as the process. :func:`freeze_imports` moves them into the collector's permanent generation
(``gc.freeze``) once a burst of imports has happened, so later collections walk only what
script runs create. Objects frozen are still freed by reference counting; only reference cycles
among them are no longer collected, which is why a freeze follows imports (whose objects live
for good) rather than every run. (``.streamlit/config.toml`` has since turned the after-run
collection off, issue #35; the freeze still shortens Python's own full collections, and a
server started from another folder, which does not read that file.)
"""

from __future__ import annotations

import gc
import sys
import threading

#: Modules imported since the last freeze that make another one worth its one full collection
#: (loading the indexing model imports ~3,000; a page's own first imports a few dozen).
MIN_NEW_MODULES = 100

_LOCK = threading.Lock()
_frozen_at = [0]  # len(sys.modules) at the last freeze


def freeze_imports() -> bool:
    """Collect once and freeze every tracked object if at least :data:`MIN_NEW_MODULES`
    modules were imported since the last freeze (cheap otherwise: one length read).
    Returns whether it froze."""
    if len(sys.modules) - _frozen_at[0] < MIN_NEW_MODULES:
        return False
    with _LOCK:
        if len(sys.modules) - _frozen_at[0] < MIN_NEW_MODULES:
            return False  # another thread froze meanwhile
        gc.collect()  # garbage is freed first, not kept for good
        gc.freeze()
        _frozen_at[0] = len(sys.modules)
    return True
