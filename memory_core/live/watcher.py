"""The file watcher: turns file events into sync requests, the way the reference does (§3.4–3.5).

* **Memory files** (``MEMORY.md``, ``memory/``, extra paths): every add/change/delete marks the
  index dirty and (re)starts a debounce of ``debounce_ms`` (1,500 ms). When it fires, a *settle
  check* compares each changed path's size and mtime with the snapshot taken at its last event;
  a file still being written re-schedules the sync. A burst of 200 writes is one sync. A stream
  of writes that never pauses is still synced after ``max_wait`` (10 debounces): our addition,
  so that a busy agent is never invisible for long.
* **Transcripts**: the first event starts a 5 s timer (not reset by later events); when it fires,
  each touched transcript's growth goes through :class:`DeltaTracker`; a sync is requested only
  for those that crossed ``delta_bytes`` or ``delta_messages``. Reset/deleted archives request a
  sync at once.
* **Re-watching**: the watched roots and the key folders (``memory/``, the sessions folder, the
  extra paths) are checked every half second; when one appears, disappears or is replaced by a
  new folder of the same name, the watch restarts on what exists now and a sync is requested
  (events may have been missed in between).

It runs ``watchfiles`` (Rust ``notify``) in one daemon thread; the timers are checked on the same
thread (``watchfiles`` yields every 200 ms even when nothing happens), so there is no timer
thread and no race between an event and its timer.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from .deltas import DeltaTracker
from .paths import EventKind, WatchPlan

#: Called with a reason ("watch", "session-delta", "session-archive", "rewatch") when the index
#: should be synced.
RequestSync = Callable[[str], None]
Signature = tuple[int, int] | None  # (size, mtime_ns) or None when missing
SESSION_DEBOUNCE_S = 5.0
_TICK_MS = 200
_ROOT_CHECK_S = 0.5


def _signature(p: Path) -> Signature:
    try:
        st = os.stat(p)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _identity(p: Path | None) -> tuple[str, int, int] | None:
    if p is None:
        return None
    try:
        st = os.stat(p)
    except OSError:
        return (str(p), 0, 0)
    return (str(p), st.st_dev, st.st_ino)


@dataclass(frozen=True)
class WatchState:
    """What the watcher holds that is not synced yet."""

    watching: bool
    roots: list[str]
    pending_files: int
    oldest_pending: float | None  # time.time() of the oldest unsynced event
    pending_session_bytes: int
    pending_session_messages: int
    error: str | None


class Watcher:
    """Follows one workspace and calls ``request_sync(reason)`` when a sync is due."""

    def __init__(self, plan: WatchPlan, request_sync: RequestSync, *, debounce_ms: int = 1500,
                 delta_bytes: int = 100_000, delta_messages: int = 50,
                 session_debounce_s: float = SESSION_DEBOUNCE_S):
        self.plan = plan
        self.request_sync = request_sync
        self.debounce_s = max(0.0, debounce_ms / 1000)
        self.max_wait_s = max(10 * self.debounce_s, 5.0)
        self.session_debounce_s = session_debounce_s
        self.deltas = DeltaTracker(delta_bytes, delta_messages)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watching = False
        self._roots: list[Path] = []
        self._error: str | None = None
        # memory files: path → snapshot at its last event; when the debounce fires
        self._memory: dict[Path, Signature] = {}
        self._memory_first: float | None = None  # monotonic
        self._memory_first_wall: float | None = None
        self._memory_due: float | None = None
        # transcripts touched since the session timer started
        self._sessions: set[Path] = set()
        self._session_due: float | None = None
        self._session_first_wall: float | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="memory-watch", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def wait_watching(self, timeout: float = 10.0) -> bool:
        """Block until the watch is in place (tests and benchmarks write files only then)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._watching:
                return True
            time.sleep(0.02)
        return self._watching

    def state(self) -> WatchState:
        with self._lock:
            walls = [t for t in (self._memory_first_wall, self._session_first_wall) if t]
            b, m = self.deltas.pending()
            return WatchState(self._watching, [str(r) for r in self._roots], len(self._memory),
                              min(walls) if walls else None, b, m, self._error)

    # ------------------------------------------------------------------ hooks

    def take_memory_changes(self) -> bool:
        """Claim the pending memory changes now (a search wants them synced without waiting for
        the debounce, as the reference's ``onSearch`` does); True if there were any."""
        with self._lock:
            if not self._memory:
                return False
            self._clear_memory()
        return True

    def baseline_sessions(self, sizes: dict[Path, int]) -> None:
        """After a sync: the transcripts were indexed at these sizes; reset their counters."""
        with self._lock:
            for p in list(self.deltas.files):
                if p not in sizes:
                    self.deltas.forget(p)
            for p, size in sizes.items():
                self.deltas.baseline(p, size)

    # ------------------------------------------------------------------ events and timers

    def handle(self, paths: Iterable[Path], now: float | None = None) -> None:
        """Record changes at ``paths`` (from the watch, or from a test)."""
        now = time.monotonic() if now is None else now
        archive = False
        with self._lock:
            for p in paths:
                kind = self.plan.classify(p)
                if kind is EventKind.IGNORED:
                    continue
                if kind is EventKind.MEMORY:
                    self._memory[p] = _signature(p)
                    if self._memory_first is None:
                        self._memory_first, self._memory_first_wall = now, time.time()
                    self._memory_due = min(now + self.debounce_s,
                                           self._memory_first + self.max_wait_s)
                elif kind is EventKind.SESSION:
                    self._sessions.add(p)
                    if self._session_due is None:
                        self._session_due = now + self.session_debounce_s
                        self._session_first_wall = time.time()
                else:
                    archive = True
        if archive:
            self.request_sync("session-archive")

    def tick(self, now: float | None = None) -> None:
        """Fire the timers that are due."""
        now = time.monotonic() if now is None else now
        fire_memory = fire_sessions = False
        with self._lock:
            if self._memory_due is not None and now >= self._memory_due:
                if self._settled():
                    self._clear_memory()
                    fire_memory = True
                else:
                    self._memory_due = now + self.debounce_s
            if self._session_due is not None and now >= self._session_due:
                dirty = [p for p in sorted(self._sessions) if self.deltas.update(p)]
                self._sessions.clear()
                self._session_due = self._session_first_wall = None
                fire_sessions = bool(dirty)
        if fire_memory:
            self.request_sync("watch")
        if fire_sessions:
            self.request_sync("session-delta")

    def _settled(self) -> bool:
        """The reference's settle check: is any changed path still being written?"""
        settled = True
        for p, before in list(self._memory.items()):
            now_sig = _signature(p)
            if now_sig != before:
                self._memory[p] = now_sig
                settled = False
        return settled

    def _clear_memory(self) -> None:
        self._memory.clear()
        self._memory_first = self._memory_first_wall = self._memory_due = None

    # ------------------------------------------------------------------ the watch thread

    def _folders_identity(self) -> tuple[object, ...]:
        p = self.plan
        return tuple(_identity(x) for x in (*self.plan.roots(), p.memory_dir, p.sessions_dir,
                                            *p.extra_paths))

    def _run(self) -> None:
        import watchfiles

        first = True
        while not self._stop.is_set():
            roots = [r for r in self.plan.roots() if r.exists()]
            ident = self._folders_identity()
            with self._lock:
                self._roots = roots
            if not first:
                self.request_sync("rewatch")  # anything may have happened while not watching
            first = False
            if not roots:
                self._stop.wait(_ROOT_CHECK_S)
                continue
            next_check = time.monotonic() + _ROOT_CHECK_S
            try:
                # No watch_filter: watchfiles yields nothing for a batch its filter emptied, and
                # never times out while ignored files keep changing (an index's -wal/-shm come
                # and go with every reader, a heartbeat is rewritten), so the timers would
                # never be ticked. handle() ignores what the reference ignores.
                for changes in watchfiles.watch(
                        *roots, watch_filter=None, debounce=_TICK_MS, step=20,
                        stop_event=self._stop, rust_timeout=_TICK_MS, yield_on_timeout=True,
                        raise_interrupt=False, ignore_permission_denied=True):
                    self._watching = True
                    if changes:
                        self.handle(Path(p) for _, p in changes)
                    self.tick()
                    if time.monotonic() >= next_check:
                        next_check = time.monotonic() + _ROOT_CHECK_S
                        if self._folders_identity() != ident:
                            break
            except Exception as e:  # a root vanished under the watch, permissions, inotify limits
                with self._lock:
                    self._error = f"{type(e).__name__}: {e}"
                self._stop.wait(_ROOT_CHECK_S)
            self._watching = False
