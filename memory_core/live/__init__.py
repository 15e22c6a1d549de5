"""Live following of a workspace: the file watcher, transcript deltas, background sync (§3.4–3.5).

:class:`LiveIndex` is what the MCP server and ``memory-core watch`` run: it keeps the model
loaded, syncs in the background when files change, and lets searches read the last committed
index without ever waiting for a sync. While it follows the files it keeps a heartbeat file
beside the index (:func:`read_heartbeat` / :func:`live_watcher`), so other processes (the
workbench) can tell that a watcher is running.
"""

from .deltas import DeltaTracker, FileDelta
from .heartbeat import Heartbeat, HeartbeatWriter, heartbeat_path, live_watcher, read_heartbeat
from .live_index import LiveIndex, LiveStatus, LiveUnavailable, SyncEvent
from .paths import EventKind, WatchPlan
from .watcher import Watcher, WatchState

__all__ = ["DeltaTracker", "EventKind", "FileDelta", "Heartbeat", "HeartbeatWriter", "LiveIndex",
           "LiveStatus", "LiveUnavailable", "SyncEvent", "WatchPlan", "WatchState", "Watcher",
           "heartbeat_path", "live_watcher", "read_heartbeat"]
