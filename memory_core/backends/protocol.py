"""One face, two backends: the only door the CLI, the MCP server and the workbench call.

:class:`MemoryBackend` is the reference's ``MemorySearchManager`` (search, readFile, status,
sync, the probes) in this project's words. The builtin engine (:class:`MemoryIndex`, through the
thin :class:`~memory_core.backends.builtin.BuiltinBackend`) and the qmd backend
(:class:`~memory_core.backends.qmd.QmdBackend`, spec §9) both implement it, and
:class:`~memory_core.backends.fallback.FallbackBackend` wraps qmd with the reference's switch to
builtin.

Every backend answers a search with a :class:`BackendSearch`: hits of the one result shape
``{path, startLine, endLine, score, snippet, source}`` (workspace-relative paths, true line
ranges), the backend that actually answered, and why it fell back when it did.

What a backend can do beyond the face is declared in :attr:`MemoryBackend.capabilities`
(:data:`ENGINE`, :data:`OWN_INDEX`), never probed with ``hasattr``: a face asks
``ENGINE in backend.capabilities`` to use the builtin engine's richer answers (its
:class:`~memory_core.MemoryIndex`: sync reports, fusion settings, explain), and treats every
other backend through the face alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..reading import ReadResult
from ..status import Status
from ..sync import SyncProgress
from .capabilities import ENGINE as ENGINE
from .capabilities import OWN_INDEX as OWN_INDEX

if TYPE_CHECKING:  # fusion is loaded by the first search, not by a no-op ``index``
    from ..fusion import Hit

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

    ``hits`` are :class:`~memory_core.fusion.Hit` values (``to_result()`` gives the reference's
    result item); ``backend`` is the backend that produced them (``builtin`` after a fallback);
    ``mode`` its search mode (``hybrid``/``fts-only`` for builtin, ``search``/``vsearch``/
    ``query`` for qmd); ``fallback`` is set when the requested backend did not answer.
    ``detail`` is what the answering backend adds (the builtin fusion result, qmd's raw entries).
    """

    hits: list[Hit]
    backend: str
    mode: str
    fallback: FallbackNote | None = None
    detail: Any = None

    def to_json(self, explain: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"results": [h.to_result(explain) for h in self.hits],
                               "backend": self.backend, "mode": self.mode}
        if self.fallback is not None:
            out["fallback"] = self.fallback.to_json()
        return out


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
    #: What it can do beyond the face (:data:`ENGINE`, :data:`OWN_INDEX`).
    capabilities: frozenset[str]

    @property
    def fallback(self) -> FallbackNote | None:
        """Set while the builtin engine answers in place of the backend asked for."""
        ...

    def search(self, query: str, *, max_results: int | None = None,
               min_score: float | None = None, sources: Sequence[str] | None = None,
               on_hits: OnHits | None = None) -> BackendSearch:
        """``memory_search``: ranked hits in the one result shape."""
        ...

    def search_many(self, queries: Sequence[str], *, max_results: int | None = None,
                    min_score: float | None = None, sources: Sequence[str] | None = None,
                    on_hits: OnHits | None = None) -> Iterator[BackendSearch]:
        """:meth:`search` of each of ``queries`` in order, the same results, yielded one by
        one (builtin answers them as a group: :meth:`MemoryIndex.search_many`)."""
        ...

    def get(self, path: str, from_line: int | None = None, lines: int | None = None
            ) -> ReadResult:
        """``memory_get``: exact lines of a file this backend may cite."""
        ...

    def sync(self, *, force: bool = False, progress: SyncProgress | None = None) -> Any:
        """Bring the backend's index up to date; returns what it did (backend-specific)."""
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


def search_each(backend: MemoryBackend, queries: Sequence[str], **kw: Any
                ) -> Iterator[BackendSearch]:
    """:meth:`MemoryBackend.search_many` as one :meth:`~MemoryBackend.search` per query (a
    backend with nothing to share between them)."""
    for query in queries:
        yield backend.search(query, **kw)


__all__ = ["ENGINE", "OWN_INDEX", "BackendSearch", "BackendStatus", "FallbackNote",
           "MemoryBackend", "OnHits", "search_each"]
