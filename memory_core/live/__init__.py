"""Live following of a workspace: the file watcher, transcript deltas, background sync (§3.4–3.5).

:class:`LiveIndex` is what the MCP server and ``memory-core watch`` run: it keeps the model
loaded, syncs in the background when files change, and lets searches read the last committed
index without ever waiting for a sync.
"""

from .deltas import DeltaTracker, FileDelta
from .live_index import LiveIndex, LiveStatus, LiveUnavailable, SyncEvent
from .paths import EventKind, WatchPlan
from .watcher import Watcher, WatchState

__all__ = ["DeltaTracker", "EventKind", "FileDelta", "LiveIndex", "LiveStatus",
           "LiveUnavailable", "SyncEvent", "WatchPlan", "WatchState", "Watcher"]
