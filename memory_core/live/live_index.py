"""``LiveIndex``: a workspace index that follows its files and never makes a search wait.

Two :class:`MemoryIndex` objects share one loaded model:

* the *writer* is used by one background thread only, which runs every sync (one at a time; a
  request that arrives during a sync is served by one more sync right after it: the reference's
  "other callers join the running sync");
* the *reader* serves searches, with ``auto_sync`` off. SQLite's WAL lets it read the last
  committed state while the writer writes; after each sync that changed something it reopens its
  connection (a rebuild swaps the file, and an open connection would keep reading the old one).

A search marks nothing and waits for nothing (§4.2 ``onSearch``): if memory files changed and
their debounce has not fired yet, it starts the sync now, in the background, and answers from the
committed index. Only when there is no index at all does it wait for the first sync (the
reference's "index empty: forced sync first"). :meth:`status` says how far behind the index is.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..base.dates import now_ms
from ..base.synclock import DEFAULT_WAIT_S
from ..index import MemoryIndex, SyncBusy
from ..status import CamelJson
from ..write.sync import SyncReport, guard_index_path
from .heartbeat import HeartbeatWriter
from .paths import WatchPlan
from .provider import SerializedProvider
from .watcher import Watcher

#: Called after every sync attempt, from the sync thread (the ``watch`` command prints a line).
OnSync = Callable[["SyncEvent"], None]
_IN_PROCESS_MODELS = {"local", "e5"}
_RETRY_S = 2.0


class LiveUnavailable(RuntimeError):
    """The live index cannot answer yet (model still loading, first sync not finished)."""


@dataclass(frozen=True)
class SyncEvent:
    """One finished sync attempt."""

    reason: str
    report: SyncReport | None
    error: str | None
    duration_ms: float
    generation: int


@dataclass(frozen=True)
class LiveStatus(CamelJson):
    """How far the index is behind the files, and what the live layer is doing."""

    watching: bool
    syncing: bool
    dirty: bool
    pending_files: int
    pending_session_bytes: int
    pending_session_messages: int
    behind_ms: int | None
    syncs: int
    generation: int
    last_sync_at: int | None
    last_sync_ms: float | None
    last_reason: str | None
    last_error: str | None
    roots: list[str]


class LiveIndex:
    """A workspace kept in sync in the background; ``search_index()`` for reading."""

    def __init__(self, template: MemoryIndex, *, watch: bool | None = None,
                 on_sync: OnSync | None = None, owner: str = "memory-core",
                 heartbeat: bool = True, share_index: bool = False):
        """``owner`` names this process in the heartbeat file (written while the watcher runs,
        unless ``heartbeat`` is false). ``share_index``: sync and search through ``template``
        itself instead of two indexes of its own around a shared model, for a host that already
        reads ``template`` from other threads (the workbench): its lock then serialises every
        model call and every connection, and nothing is loaded twice."""
        cfg = template.config
        self.workspace = template.workspace
        self.config = cfg
        self.store_path = template.store_path
        self._template = template
        self.on_sync = on_sync
        self.watch_enabled = cfg.watch.enabled if watch is None else watch
        self.watcher: Watcher | None = None
        if self.watch_enabled:
            self.watcher = Watcher(WatchPlan.for_config(self.workspace, cfg), self.request_sync,
                                   debounce_ms=cfg.watch.debounce_ms,
                                   delta_bytes=cfg.sessions.delta_bytes,
                                   delta_messages=cfg.sessions.delta_messages)
        self.writer: MemoryIndex | None = None
        self.reader: MemoryIndex | None = None
        self.share_index = share_index
        self.heartbeat: HeartbeatWriter | None = None
        if heartbeat and self.watcher is not None:
            self.heartbeat = HeartbeatWriter(self.store_path, owner=owner,
                                             workspace=self.workspace)
        self._cv = threading.Condition()
        self._stop = False
        self._requested: str | None = "startup"  # the reference's dirty-at-creation catch-up
        self._requested_at: float | None = time.time()
        self._syncing = False
        self._ready = threading.Event()
        self._first_sync = threading.Event()
        self._thread: threading.Thread | None = None
        self._prepare_error: str | None = None
        self.syncs = 0
        self.last_sync_at: int | None = None
        self.last_sync_ms: float | None = None
        self.last_reason: str | None = None
        self.last_error: str | None = None
        self.last_report: SyncReport | None = None
        self._failures = 0

    @classmethod
    def open(cls, workspace: str | os.PathLike[str], *, watch: bool | None = None,
             on_sync: OnSync | None = None, **kwargs: Any) -> LiveIndex:
        """:meth:`MemoryIndex.open` arguments; the returned index is not started yet."""
        return cls(MemoryIndex.open(workspace, **kwargs), watch=watch, on_sync=on_sync)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> LiveIndex:
        """Load the model, run the start-up sync, and follow the files (all in the background)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="memory-sync", daemon=True)
            self._thread.start()
            if self.watcher is not None:
                self.watcher.start()
                # a file written once start() returned must be seen: wait for the watch (~0.2 s)
                self.watcher.wait_watching(5.0)
            if self.heartbeat is not None:
                try:  # never beside a user's file that the index path names (sync refuses it)
                    guard_index_path(self.store_path, self.workspace, self.config)
                except Exception:
                    self.heartbeat = None
                else:
                    self.heartbeat.start()
        return self

    def close(self) -> None:
        with self._cv:
            self._stop = True
            self._cv.notify_all()
        if self.heartbeat is not None:
            self.heartbeat.stop()  # first: a watcher that is stopping no longer follows
        if self.watcher is not None:
            self.watcher.stop()
        if self._thread is not None:
            self._thread.join(30)
            self._thread = None
        for idx in {id(i): i for i in (self.reader, self.writer, self._template)
                    if i is not None}.values():
            idx.close()

    def __enter__(self) -> LiveIndex:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ requests

    def request_sync(self, reason: str) -> None:
        """Ask for a sync; returns at once (the background thread runs it)."""
        with self._cv:
            if self._requested is None:
                self._requested = reason
                self._requested_at = time.time()
            self._cv.notify_all()

    def search_index(self, wait_s: float = 300.0) -> MemoryIndex:
        """The index to search *now*: the last committed state, never waiting for a sync.

        Pending memory-file changes start a background sync first (§4.2 ``onSearch``). Waits
        only while the model loads or when no index exists yet (bounded by ``wait_s``).
        """
        if not self._ready.wait(wait_s):
            raise LiveUnavailable("the embedding model is still loading; try again shortly")
        if self._prepare_error:
            raise LiveUnavailable(self._prepare_error)
        if self.watcher is not None:
            if self.watcher.take_memory_changes():
                self.request_sync("search")
        elif not self._syncing and (self.last_sync_at is None
                                    or time.time() * 1000 - self.last_sync_at > 5000):
            self.request_sync("search")  # no watcher: a cheap incremental check per search
        if not self._first_sync.is_set() and not self.store_path.exists():
            if not self._first_sync.wait(wait_s):
                raise LiveUnavailable("the first index build is still running")
        assert self.reader is not None
        return self.reader

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Block until no sync is requested or running (tests, benchmarks, ``--once``)."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while self._requested is not None or self._syncing:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(min(left, 0.2))
        return True

    # ------------------------------------------------------------------ status

    def status(self) -> LiveStatus:
        ws = self.watcher.state() if self.watcher is not None else None
        with self._cv:
            requested_at = self._requested_at if (self._requested or self._syncing) else None
            syncing, requested = self._syncing, self._requested is not None
        oldest = [t for t in (requested_at, ws.oldest_pending if ws else None) if t]
        behind = int(time.time() * 1000 - min(oldest) * 1000) if oldest else None
        gen = self.reader.generation if self.reader is not None else 0
        return LiveStatus(
            watching=bool(ws and ws.watching), syncing=syncing,
            # a sync that failed left the index behind the files: dirty until one succeeds
            dirty=(requested or syncing or bool(ws and ws.pending_files)
                   or self.last_error is not None),
            pending_files=ws.pending_files if ws else 0,
            pending_session_bytes=ws.pending_session_bytes if ws else 0,
            pending_session_messages=ws.pending_session_messages if ws else 0,
            behind_ms=behind, syncs=self.syncs, generation=gen,
            last_sync_at=self.last_sync_at, last_sync_ms=self.last_sync_ms,
            last_reason=self.last_reason,
            last_error=self.last_error or (ws.error if ws else None),
            roots=ws.roots if ws else [])

    # ------------------------------------------------------------------ the sync thread

    def _prepare(self) -> None:
        """Load the model once; build the writer and the reader around it."""
        if self.share_index:
            self.writer = self.reader = self._template
            return
        choice = self._template.choice
        if choice.provider is not None and choice.id in _IN_PROCESS_MODELS:
            choice = replace(choice, provider=SerializedProvider(choice.provider))
        self.writer = MemoryIndex(self.workspace, self.config, choice)
        self.reader = MemoryIndex(self.workspace, self.config, choice)
        self.reader.auto_sync = False
        self.reader.fallback = self.writer.fallback = self._template.fallback

    def _run(self) -> None:
        try:
            self._prepare()
        except Exception as e:  # a provider that cannot start at all, with no fallback
            self._prepare_error = f"cannot start the embedding provider: {e}"
            self._ready.set()
            return
        self._ready.set()
        while True:
            with self._cv:
                while self._requested is None and not self._stop:
                    self._cv.wait()
                if self._stop:
                    return
                reason, self._requested = self._requested or "sync", None
                self._syncing = True
            self._sync_once(reason)
            with self._cv:
                self._syncing = False
                if self._requested is None:
                    self._requested_at = None
                self._cv.notify_all()

    def _sync_once(self, reason: str) -> None:
        assert self.writer is not None and self.reader is not None
        t0 = time.perf_counter()
        report: SyncReport | None = None
        error: str | None = None
        try:
            report = self.writer.sync(lock_wait_s=DEFAULT_WAIT_S)
        except SyncBusy as e:
            error = str(e)
        except Exception as e:  # keep following the files; say what went wrong in status
            error = f"{type(e).__name__}: {e}"
        ms = (time.perf_counter() - t0) * 1000
        if report is not None:
            if report.wrote_anything or report.full:
                self.reader.close()  # reopen: a rebuild swapped the file
            if self.writer.fallback:
                self.reader.fallback = self.writer.fallback
            self.syncs += 1
            self.last_report = report
            self.last_error = None
            self._failures = 0
            self._baseline_sessions()
            self._first_sync.set()
        else:
            self.last_error = error
            self._retry_later(reason)
        self.last_sync_at = now_ms()
        self.last_sync_ms = ms
        self.last_reason = reason
        if self.on_sync is not None:
            try:
                self.on_sync(SyncEvent(reason, report, error, ms, self.reader.generation))
            except Exception:  # a printing callback must not stop the syncs
                pass

    def _retry_later(self, reason: str) -> None:
        """Try again later, backing off (2 s, 4 s, ... 60 s) while the failure persists."""
        self._failures += 1
        delay = min(60.0, _RETRY_S * 2 ** (self._failures - 1))

        def later() -> None:
            time.sleep(delay)
            if not self._stop:
                self.request_sync(f"retry:{reason.removeprefix('retry:')}")

        threading.Thread(target=later, daemon=True).start()

    def _baseline_sessions(self) -> None:
        """Reset the transcripts' delta counters to the sizes just indexed (§3.5)."""
        if self.watcher is None or self.reader is None:
            return
        try:
            rows = self.reader.files()
        except Exception:
            return
        sizes = {Path(os.path.normpath(self.workspace / r.path)): r.size
                 for r in rows if r.source == "sessions"}
        self.watcher.baseline_sessions(sizes)
