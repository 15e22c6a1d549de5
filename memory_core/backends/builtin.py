"""The builtin engine behind the backend face: :class:`MemoryIndex`, unchanged, plus ``kind``
and the probes.

Everything the workbench and the evaluator need beyond the face (candidates, fusion, chunks,
embeddings) stays on :attr:`BuiltinBackend.index`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..embeddings import EmbeddingError
from ..index import MemoryIndex
from ..reading import ReadResult
from ..sync import SyncProgress, SyncReport
from .capabilities import ENGINE

if TYPE_CHECKING:
    # the face's classes (and Status under them) are imported by the first search or status,
    # not by a no-op ``index``
    from .protocol import BackendSearch, BackendStatus, FallbackNote, OnHits


class BuiltinBackend:
    """:class:`MemoryIndex` as a :class:`~memory_core.backends.protocol.MemoryBackend`."""

    kind = "builtin"
    capabilities: frozenset[str] = frozenset({ENGINE})
    fallback: FallbackNote | None = None

    def __init__(self, index: MemoryIndex, requested: str = "builtin") -> None:
        self.index = index
        self.workspace: Path = index.workspace
        self._requested = requested

    def __enter__(self) -> BuiltinBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.index.close()

    def release(self) -> None:
        """Nothing of its own to close: the index belongs to whoever opened it."""

    def search(self, query: str, *, max_results: int | None = None,
               min_score: float | None = None, sources: Sequence[str] | None = None,
               on_hits: OnHits | None = None, **overrides: Any) -> BackendSearch:
        """The builtin search under the profile's settings (``overrides``: search settings)."""
        from .protocol import BackendSearch

        res = self.index.search(query, max_results=max_results, min_score=min_score,
                                sources=sources, on_hits=on_hits, **overrides)
        return BackendSearch(list(res.hits), "builtin", res.mode, None, res)

    def search_many(self, queries: Sequence[str], *, max_results: int | None = None,
                    min_score: float | None = None, sources: Sequence[str] | None = None,
                    on_hits: OnHits | None = None, **overrides: Any
                    ) -> Iterator[BackendSearch]:
        """:meth:`search` of each of ``queries``, answered as a group
        (:meth:`MemoryIndex.search_many`)."""
        from .protocol import BackendSearch

        for res in self.index.search_many(queries, max_results=max_results,
                                          min_score=min_score, sources=sources,
                                          on_hits=on_hits, **overrides):
            yield BackendSearch(list(res.hits), "builtin", res.mode, None, res)

    def get(self, path: str, from_line: int | None = None, lines: int | None = None
            ) -> ReadResult:
        return self.index.get(path, from_line, lines)

    def sync(self, *, force: bool = False, progress: SyncProgress | None = None) -> SyncReport:
        return self.index.sync(force=force, progress=progress)

    def status(self, *, deep: bool = False) -> BackendStatus:
        from .protocol import BackendStatus

        return BackendStatus.of(self.index.status(deep=deep), requested_backend=self._requested)

    def probe_vector(self) -> bool:
        """True when the provider embeds (not keyword-only)."""
        try:
            return self.index.choice.provider is not None
        except EmbeddingError:
            return False

    def probe_embedding(self) -> dict[str, Any]:
        """Embed a probe text with the provider; ``ok`` False with the error otherwise."""
        try:
            p = self.index.choice.provider
            if p is None:
                return {"ok": False, "error": "keyword-only: no embedding provider"}
            p.embed_query("ping")
        except EmbeddingError as e:
            return {"ok": False, "error": str(e)}
        return {"ok": True}
