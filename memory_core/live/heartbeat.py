"""A live process's heartbeat: ``<index>.watch.json`` says "someone is following these files".

A ``memory-core watch`` or ``memory-core mcp`` process (or a workbench that follows a workspace
itself) leaves no other trace another process can see: the sync lock is only held during a sync.
So while its watcher runs, :class:`HeartbeatWriter` rewrites a small JSON file beside the index
every ``interval_s`` seconds::

    {"pid": 4242, "host": "box", "owner": "memory-core watch", "workspace": "/ws",
     "startedAt": 1764500000000, "lastBeat": 1764500012000, "intervalS": 2.0}

and removes it on a clean exit (only if it is still its own: two followers of one index take
turns writing it). :func:`read_heartbeat` reads it back; :attr:`Heartbeat.alive` is false for a
stale beat: the process is gone (same host) or the beat is older than :data:`STALE_BEATS`
intervals (a killed process cannot remove its file, a hung one stops beating).
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.dates import now_ms
from ..base.fileio import atomic_write
from ..base.indexfiles import IndexFiles

#: Seconds between beats.
DEFAULT_INTERVAL_S = 2.0
#: A beat older than this many intervals is stale (the process hung or was killed elsewhere).
STALE_BEATS = 3


def heartbeat_path(index_path: Path) -> Path:
    """The heartbeat file of the index at ``index_path``: ``<index>.watch.json``."""
    return IndexFiles(index_path).watch


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:  # it exists, owned by someone else
        return True
    except OSError:  # ProcessLookupError among them: no such process
        return False
    return True


@dataclass(frozen=True)
class Heartbeat:
    """One reading of a heartbeat file (see the module's docstring for its fields)."""

    pid: int
    host: str
    owner: str
    workspace: str
    started_at: int  # epoch ms
    last_beat: int  # epoch ms
    interval_s: float
    path: Path

    @property
    def age_s(self) -> float:
        """Seconds since the last beat (negative clock skew counts as fresh)."""
        return max(0.0, time.time() - self.last_beat / 1000)

    @property
    def pid_alive(self) -> bool | None:
        """Whether the process exists; ``None`` when it runs on another host (cannot tell)."""
        return _pid_alive(self.pid) if self.host == socket.gethostname() else None

    @property
    def alive(self) -> bool:
        """A fresh beat from a live process: a watcher is following the files right now."""
        return self.pid_alive is not False and self.age_s <= STALE_BEATS * self.interval_s

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "host": self.host, "owner": self.owner,
                "workspace": self.workspace, "startedAt": self.started_at,
                "lastBeat": self.last_beat, "intervalS": self.interval_s,
                "alive": self.alive, "ageS": round(self.age_s, 1)}


def read_heartbeat(index_path: Path) -> Heartbeat | None:
    """The heartbeat beside ``index_path``, stale or not; ``None`` when there is none.

    A file that cannot be read or parsed (half-written by a foreign tool, truncated) counts as
    none: it says nothing about a live process. Check :attr:`Heartbeat.alive` for freshness.
    """
    path = heartbeat_path(Path(index_path))
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return Heartbeat(pid=int(raw["pid"]), host=str(raw.get("host", "")),
                         owner=str(raw.get("owner", "")), workspace=str(raw.get("workspace", "")),
                         started_at=int(raw["startedAt"]), last_beat=int(raw["lastBeat"]),
                         interval_s=float(raw.get("intervalS") or DEFAULT_INTERVAL_S),
                         path=path)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def live_watcher(index_path: Path) -> Heartbeat | None:
    """The heartbeat of a watcher following ``index_path`` right now, or ``None``."""
    hb = read_heartbeat(index_path)
    return hb if hb is not None and hb.alive else None


class HeartbeatWriter:
    """Beats every ``interval_s`` seconds on a daemon thread until :meth:`stop`."""

    def __init__(self, index_path: Path, *, owner: str, workspace: str | os.PathLike[str],
                 interval_s: float = DEFAULT_INTERVAL_S):
        self.index_path = Path(index_path)
        self.path = heartbeat_path(self.index_path)
        self.owner = owner
        self.workspace = str(workspace)
        self.interval_s = interval_s
        self.started_at = now_ms()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None

    def start(self) -> HeartbeatWriter:
        """Write the first beat now (so a reader sees it as soon as this returns), then beat."""
        if self._thread is None:
            self.beat()
            self._thread = threading.Thread(target=self._run, name="memory-heartbeat",
                                            daemon=True)
            self._thread.start()
            # a host that exits without closing its LiveIndex (a Streamlit server stopped by
            # SIGTERM, uvicorn's shutdown) still exits cleanly: the file goes with it
            atexit.register(self.stop)
        return self

    def beat(self) -> None:
        """Rewrite the file with the current time (atomically: a reader never sees half)."""
        body = {"pid": os.getpid(), "host": socket.gethostname(), "owner": self.owner,
                "workspace": self.workspace, "startedAt": self.started_at,
                "lastBeat": now_ms(), "intervalS": self.interval_s}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # no fsync: a beat lost in a crash is exactly a stale beat; 0o644: readable by
            # whoever may read the index
            atomic_write(self.path, json.dumps(body).encode("utf-8"), durable=False,
                         mode=0o644)
            self.error = None
        except OSError as e:  # a read-only folder: no heartbeat, the watcher still works
            self.error = f"cannot write {self.path}: {e}"

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.beat()

    def stop(self) -> None:
        """Stop beating and remove the file if it is still ours (a clean exit); idempotent."""
        atexit.unregister(self.stop)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        hb = read_heartbeat(self.index_path)
        if hb is not None and hb.pid == os.getpid() and hb.started_at == self.started_at:
            self.path.unlink(missing_ok=True)
