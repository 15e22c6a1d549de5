"""Opening a backend, and the reference's fallback from qmd to builtin (``search-manager.ts``).

* Opening qmd fails (the workspace's qmd folder cannot be made, the binary is missing, adding
  the collections fails): builtin answers, with ``fallback = {from: "qmd", reason}``; the
  failure is remembered for **60 s** per workspace and agent (the reference's open-failure
  cooldown), during which the backend is not tried again in this process.
* A qmd search fails (non-zero exit, timeout, unreadable output, models missing): the
  :class:`FallbackBackend` switches to builtin for good (the reference's ``primaryFailed``),
  answers from builtin at once, and reports the reason in the result and in ``status``.
"""

from __future__ import annotations

import copy
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from ..base.config import fingerprint
from ..index import MemoryIndex
from ..read.reading import ReadResult
from ..write.sync import SyncProgress
from .builtin import BuiltinBackend
from .protocol import (
    BackendSearch,
    BackendStatus,
    BackendSync,
    FallbackNote,
    Follower,
    MemoryBackend,
    OneByOne,
    OnHits,
)
from .qmd import QmdBackend
from .qmd_process import QmdError, check_available

#: The reference's ``QMD_MANAGER_OPEN_FAILURE_COOLDOWN_MS``.
OPEN_FAILURE_COOLDOWN_S = 60.0
BackendChoice = Literal["builtin", "qmd"]

_failures: dict[str, tuple[str, str, float]] = {}  # scope -> (identity, reason, retry at)
_failures_lock = threading.Lock()


def active_open_failure(scope: str, identity: str) -> str | None:
    """The recorded open failure of ``scope`` while its cooldown lasts (and the identity holds)."""
    with _failures_lock:
        rec = _failures.get(scope)
        if rec is None:
            return None
        if rec[0] != identity or rec[2] <= time.monotonic():
            del _failures[scope]
            return None
        return rec[1]


def record_open_failure(scope: str, identity: str, reason: str) -> None:
    with _failures_lock:
        _failures[scope] = (identity, reason, time.monotonic() + OPEN_FAILURE_COOLDOWN_S)


def clear_open_failures() -> None:
    """Forget every recorded failure (tests; a user who just installed qmd)."""
    with _failures_lock:
        _failures.clear()


class FallbackBackend(OneByOne):
    """qmd first; builtin from the first failure on (the reference's FallbackMemoryManager)."""

    kind = "qmd"

    def __init__(self, primary: QmdBackend, builtin: MemoryIndex) -> None:
        self.primary = primary
        self.workspace = primary.workspace
        #: The builtin index that answers after a fallback (the workbench's fallback view).
        self.index = builtin
        self._builtin: OpenedFallback | None = None
        #: Why qmd failed; set once by :meth:`fail`, after which builtin answers for good.
        self.last_error: str | None = None
        #: One call at a time: qmd's update, its read-only index connection and the switch to
        #: builtin are shared by the threads of a workbench or a server.
        self._lock = threading.RLock()

    def close(self) -> None:
        self.primary.close()
        self.index.close()

    def release(self) -> None:
        self.primary.close()

    @property
    def fallback(self) -> FallbackNote | None:
        """Why builtin answers, once qmd failed."""
        return self._note() if self.primary_failed else None

    @property
    def primary_failed(self) -> bool:
        """qmd failed and builtin answers from now on."""
        return self.last_error is not None

    def _fallback(self) -> OpenedFallback:
        """Builtin answering in qmd's place, each answer noting why (made once qmd failed)."""
        if self._builtin is None:
            self._builtin = OpenedFallback(self.index, self._note())
        return self._builtin

    def _either(self, method: str, *args: Any, **kw: Any) -> Any:
        """qmd's ``method`` while it answers, else builtin's (the reference's switch)."""
        with self._lock:
            if not self.primary_failed:
                return getattr(self.primary, method)(*args, **kw)
        return getattr(self._fallback(), method)(*args, **kw)

    def _note(self) -> FallbackNote:
        return FallbackNote("qmd", self.last_error or "unknown")

    def fail(self, error: Exception | str) -> None:
        """Switch to builtin for good, remembering why."""
        self.last_error = str(error)
        self._builtin = None  # builtin's answers note this reason
        self.primary.close()

    def search(self, query: str, *, max_results: int | None = None,
               min_score: float | None = None, sources: Sequence[str] | None = None,
               on_hits: OnHits | None = None, **overrides: Any) -> BackendSearch:
        """qmd's answer (it has no fusion: ``overrides`` apply to the builtin fallback)."""
        with self._lock:
            if not self.primary_failed:
                try:
                    return self.primary.search(query, max_results=max_results,
                                               min_score=min_score, sources=sources,
                                               on_hits=on_hits)
                except QmdError as e:
                    self.fail(e)
        return self._fallback().search(query, max_results=max_results, min_score=min_score,
                                       sources=sources, on_hits=on_hits, **overrides)

    def get(self, path: str, from_line: int | None = None, lines: int | None = None
            ) -> ReadResult:
        return self._either("get", path, from_line, lines)

    def update(self, *, force: bool = False, reason: str = "manual") -> dict[str, Any] | None:
        """``qmd update`` (debounced unless ``force``) and its report; ``None`` once builtin
        answers (the live index keeps builtin's index). The timers call this."""
        with self._lock:
            if not self.primary_failed:
                try:
                    return self.primary.sync(force=force, reason=reason)
                except QmdError as e:
                    self.fail(e)
        return None

    def sync(self, *, force: bool = False, progress: SyncProgress | None = None,
             verify: bool = False, executor: Any = None) -> BackendSync:
        """``qmd update``, or builtin's sync once qmd failed (with the reason)."""
        from .protocol import BackendSync

        if executor is not None:
            raise ValueError("an embedding executor (--executor ray) applies to the builtin "
                             "backend")
        report = self.update(force=force)
        if report is not None:
            files = self.primary.status().files
            return BackendSync(report, [f"Memory index updated (qmd): {files} files."])
        return self._fallback().sync(force=force, progress=progress, verify=verify)

    def files_changed(self, *, force: bool = False) -> dict[str, Any] | None:
        """qmd keeps an index of its own: ``qmd update`` (debounced unless ``force``)."""
        return self.update(force=force, reason="change")

    def follow(self, on_update: Callable[[Any], None] | None = None) -> Follower | None:
        """The reference's qmd update timers (boot, interval, embed interval, debounce)."""
        from .qmd_timers import QmdTimers

        return QmdTimers(self, self.primary.q, on_update).start()

    def over(self, reader: Callable[[], MemoryIndex]) -> FallbackBackend:
        """qmd reads its own index (after a fallback, builtin reads the one it was opened
        over)."""
        return self

    def status(self, *, deep: bool = False) -> BackendStatus:
        return self._either("status", deep=deep)

    def probe_vector(self) -> bool:
        return self._either("probe_vector")

    def probe_embedding(self) -> dict[str, Any]:
        return self._either("probe_embedding")


class OpenedFallback(BuiltinBackend):
    """Builtin answering because qmd could not be opened: every answer says so (the faces
    show it as the qmd they asked for, with the reason)."""

    def __init__(self, index: MemoryIndex, note: FallbackNote) -> None:
        super().__init__(index)
        self.note = note
        self.fallback = note

    def over(self, reader: Callable[[], MemoryIndex]) -> OpenedFallback:
        """It answers from the index qmd's fallback was opened over, as qmd would from its
        own: nothing waits for the live index."""
        return self

    def sync(self, *, force: bool = False, progress: SyncProgress | None = None,
             verify: bool = False, executor: Any = None) -> BackendSync:
        done = super().sync(force=force, progress=progress, verify=verify, executor=executor)
        done.warnings.insert(0, f"qmd fell back to builtin: {self.note.reason}")
        return done

    def status(self, *, deep: bool = False) -> BackendStatus:
        return with_fallback(super().status(deep=deep), self.note)


def with_fallback(st: BackendStatus, note: FallbackNote) -> BackendStatus:
    """Builtin's status as the reference reports it after a fallback from qmd."""
    from ..status import FallbackInfo

    return BackendStatus.of(st, fallback=FallbackInfo(note.from_backend, note.reason),
                            requested_backend="qmd",
                            custom={**st.custom, "fallback": {"disabled": True,
                                                              "reason": note.reason}})


def open_backend(workspace: str | os.PathLike[str] | MemoryIndex,
                 kind: BackendChoice | str | None = None, *, profile: str | None = None,
                 provider: str | None = None, overrides: dict[str, Any] | None = None,
                 mode: str = "full", qmd_home: str | os.PathLike[str] | None = None
                 ) -> MemoryBackend:
    """The backend ``kind`` (default: the workspace's ``[backend] kind``) for ``workspace``.

    ``workspace`` may be an open :class:`MemoryIndex`, whose configuration is used (and which
    becomes the builtin fallback). ``mode="status"`` opens qmd without touching its collections.
    ``qmd_home`` replaces ``[qmd] home`` (e.g. a cache folder for a workspace that must gain no
    file).
    qmd that cannot be opened gives builtin with the reason (see the module docstring).
    """
    idx = workspace if isinstance(workspace, MemoryIndex) else MemoryIndex.open(
        workspace, profile=profile, provider=provider, overrides=overrides)
    choice = kind or idx.config.backend.kind
    if choice == "builtin":
        return BuiltinBackend(idx)
    if choice != "qmd":
        idx.close()
        raise ValueError(f"unknown backend {choice!r} (expected builtin or qmd)")
    cfg = idx.config
    if qmd_home is not None:
        cfg = copy.deepcopy(cfg)
        cfg.qmd.home = str(qmd_home)
    scope = f"{idx.workspace}::{cfg.qmd.agent_id}"  # one cooldown per workspace and agent
    identity = fingerprint({"qmd": copy.deepcopy(cfg.qmd).__dict__,
                            "extra": [e.__dict__ for e in cfg.sources.extra_paths]})
    recent = active_open_failure(scope, identity)
    if recent is not None:
        return OpenedFallback(idx, FallbackNote("qmd", recent))
    primary = QmdBackend(idx.workspace, cfg)
    reason: str | None = None
    try:
        primary.qmd_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        reason = f"qmd workspace unavailable ({primary.qmd_dir}): {e.strerror or e}"
    if reason is None:
        err = check_available(cfg.qmd.command, primary.env, idx.workspace)
        if err is not None:
            reason = f"qmd binary unavailable ({cfg.qmd.command}): {err}"
    if reason is None:
        try:
            primary.open(mode)
        except (QmdError, OSError) as e:
            reason = f"qmd memory unavailable: {e}"
    if reason is not None:
        primary.close()
        record_open_failure(scope, identity, reason)
        return OpenedFallback(idx, FallbackNote("qmd", reason))
    return FallbackBackend(primary, idx)
