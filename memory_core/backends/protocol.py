"""One face, two backends: the only door the CLI and the MCP server call.

:class:`MemoryBackend` is the reference's ``MemorySearchManager`` (search, readFile, status,
sync, the probes) in this project's words. The builtin engine (:class:`MemoryIndex`, through the
thin :class:`~memory_core.backends.builtin.BuiltinBackend`) and the qmd backend
(:class:`~memory_core.backends.qmd.QmdBackend`, spec §9) both implement it, and
:class:`~memory_core.backends.fallback.FallbackBackend` wraps qmd with the reference's switch to
builtin.

Every backend answers a search with a :class:`BackendSearch`: hits of the one result shape
``{path, startLine, endLine, score, snippet, source}`` (workspace-relative paths, true line
ranges), the backend that actually answered, why it fell back when it did, and what that
backend adds: the builtin engine's fusion (:attr:`BackendSearch.detail`, for ``--explain``)
and its provider (:attr:`BackendSearch.extra`); qmd adds neither. A sync answers with a
:class:`BackendSync`. What differs between backends is a method each implements (a no-op where
it means nothing: :meth:`MemoryBackend.files_changed`, :meth:`MemoryBackend.follow`), never a
question a face asks about the backend's kind: the faces render what the answer holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

from ..read.reading import ReadResult
from ..status import Status
from ..write.sync import SyncProgress
from .sync_answer import BackendSync

if TYPE_CHECKING:  # fusion is loaded by the first search, not by a no-op ``index``
    from ..index import MemoryIndex
    from ..read.fusion import FusionResult, Hit

#: Called with the query and the hits, as :meth:`MemoryIndex.search`'s ``on_hits``.
OnHits = Callable[[str, Sequence["Hit"]], None]



@dataclass(frozen=True)
class FallbackNote:
    """The backend asked for could not answer; ``reason`` says why (the reference's
    ``{from: "qmd", reason}``)."""

    from_backend: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"from": self.from_backend, "reason": self.reason}


@dataclass
class BackendSearch:
    """What one search returned, whichever backend answered.

    ``hits`` are :class:`~memory_core.read.fusion.Hit` values (``to_result()`` gives the reference's
    result item); ``backend`` is the backend that produced them (``builtin`` after a fallback);
    ``mode`` its search mode (``hybrid``/``fts-only`` for builtin, ``search``/``vsearch``/
    ``query`` for qmd); ``fallback`` is set when the requested backend did not answer.
    ``detail`` is the builtin engine's fusion (removed hits, the abstention, the settings: what
    ``--explain`` shows), ``None`` from a backend without one; ``extra`` the JSON fields the
    answering backend adds (builtin: ``provider``, ``model``, its embedding ``fallback``).
    """

    hits: list[Hit]
    backend: str
    mode: str
    fallback: FallbackNote | None = None
    detail: FusionResult | None = None
    #: What was done to the query before it was searched ("" when nothing): the library's cut
    #: of an over-long query (:func:`memory_core.read.query.cap_query`), whichever backend answered.
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self, explain: bool = False) -> dict[str, Any]:
        """The answer as the CLI prints it: results, who answered and how, and what the answer
        holds beyond the hits (the fusion's removed hits and settings with ``explain``)."""
        out: dict[str, Any] = {"results": [h.to_result(explain) for h in self.hits],
                               "backend": self.backend, "mode": self.mode, **self.extra}
        if self.fallback is not None:
            out["fallback"] = self.fallback.to_json()
        d = self.detail
        if d is not None and d.abstention:
            out["abstention"] = d.abstention
        if d is not None and explain:
            out["belowGate"] = [h.to_result(True) for h in d.below_gate[:20]]
            out["settings"] = d.settings.__dict__
        if self.note:
            out["note"] = self.note
        return out


class Follower(Protocol):
    """What a backend runs beside a long-running face (qmd's update timers)."""

    def poke(self) -> None:
        """The files changed (an update follows, debounced)."""
        ...

    def stop(self) -> None:
        ...


@dataclass(frozen=True)
class BackendStatus(Status):
    """:class:`~memory_core.status.Status` plus what a backend adds.

    ``requested_backend`` is the backend the configuration asked for; ``custom`` is merged into
    the JSON's ``custom`` group (qmd: ``{"qmd": {version, collections, ...}}``; after a fallback
    ``{"fallback": {"disabled": true, "reason"}}``, as the reference reports it).
    """

    requested_backend: str = "builtin"
    custom: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, status: Status, **extra: Any) -> BackendStatus:
        """``status`` (any :class:`Status`) with the backend fields ``extra`` set or replaced."""
        base = {f.name: getattr(status, f.name) for f in fields(Status)}
        if isinstance(status, BackendStatus):
            base.update(requested_backend=status.requested_backend, custom=dict(status.custom))
        base.update(extra)
        return cls(**base)

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out["requestedBackend"] = self.requested_backend
        if self.fallback is not None and "fallback" not in out:
            out["fallback"] = self.fallback.to_json()
        if self.custom:
            custom = dict(out.get("custom") or {})
            custom.update(self.custom)
            out["custom"] = custom
        return out


@runtime_checkable
class MemoryBackend(Protocol):
    """The face every backend shows (the reference's ``MemorySearchManager``)."""

    #: ``builtin`` or ``qmd``: what this object is (see :attr:`BackendSearch.backend` for
    #: what answered a given search).
    kind: str
    workspace: Path

    @property
    def fallback(self) -> FallbackNote | None:
        """Set while the builtin engine answers in place of the backend asked for."""
        ...

    def search(self, query: str, *, max_results: int | None = None,
               min_score: float | None = None, sources: Sequence[str] | None = None,
               on_hits: OnHits | None = None, **overrides: Any) -> BackendSearch:
        """``memory_search``: ranked hits in the one result shape. ``overrides``: the builtin
        engine's search settings (a backend without fusion answers without them)."""
        ...

    def search_many(self, queries: Sequence[str], *, max_results: int | None = None,
                    min_score: float | None = None, sources: Sequence[str] | None = None,
                    on_hits: OnHits | None = None, **overrides: Any
                    ) -> Iterator[BackendSearch]:
        """:meth:`search` of each of ``queries`` in order, the same results, yielded one by
        one (builtin answers them as a group: :meth:`MemoryIndex.search_many`)."""
        ...

    def get(self, path: str, from_line: int | None = None, lines: int | None = None
            ) -> ReadResult:
        """``memory_get``: exact lines of a file this backend may cite."""
        ...

    def sync(self, *, force: bool = False, progress: SyncProgress | None = None,
             verify: bool = False, executor: Any = None) -> BackendSync:
        """Bring the backend's index up to date and say what it did. ``verify`` and
        ``executor`` (an embedding actor pool) are the builtin engine's: qmd refuses an
        executor (``ValueError``) and has no pages to verify."""
        ...

    def files_changed(self, *, force: bool = False) -> dict[str, Any] | None:
        """The files changed: a backend that keeps an index of its own (qmd) updates it
        (debounced unless ``force``) and returns its report; the builtin engine's index is
        kept by the live index, so it does nothing and returns ``None``."""
        ...

    def follow(self, on_update: Callable[[Any], None] | None = None) -> Follower | None:
        """Start what the backend runs beside a long-running face (``watch``, ``mcp``): qmd's
        update timers (``on_update`` gets each timed update); ``None`` for builtin."""
        ...

    def over(self, reader: Callable[[], MemoryIndex]) -> MemoryBackend:
        """This backend answering through a live index: the builtin engine reads ``reader()``
        (the live index's reader of the moment, which may wait for the first build); qmd
        keeps an index of its own, calls nothing and returns itself."""
        ...

    def status(self, *, deep: bool = False) -> BackendStatus:
        """Files, chunks, dirty, sources, and the backend's own details."""
        ...

    def probe_vector(self) -> bool:
        """Whether semantic (vector) search can run now (the reference's
        ``probeVectorAvailability``)."""
        ...

    def probe_embedding(self) -> dict[str, Any]:
        """``{"ok": bool, "error"?: str}`` (the reference's ``probeEmbeddingAvailability``)."""
        ...

    def close(self) -> None:
        """Close the backend and the :class:`~memory_core.MemoryIndex` it was opened over."""
        ...

    def release(self) -> None:
        """Close what the backend opened itself (qmd's processes and connections), leaving the
        index it was opened over open for the caller that shares it."""
        ...

    def __enter__(self) -> MemoryBackend:
        ...

    def __exit__(self, *exc: object) -> None:
        ...


class OneByOne:
    """What qmd and its fallback share: :meth:`MemoryBackend.search_many` as one call of
    ``search`` per query (nothing to share between them), and ``close`` on leaving a ``with``."""

    search: Callable[..., BackendSearch]
    close: Callable[[], None]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def search_many(self, queries: Sequence[str], **kw: Any) -> Iterator[BackendSearch]:
        """One :meth:`search` per query, in order: each may find qmd failed and fall back."""
        for query in queries:
            yield self.search(query, **kw)


__all__ = ["BackendSearch", "BackendStatus", "BackendSync", "FallbackNote", "Follower",
           "MemoryBackend", "OnHits", "OneByOne"]
