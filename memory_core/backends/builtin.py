"""The builtin engine behind the backend face: :class:`MemoryIndex`, unchanged, plus ``kind``,
the probes, and its answers in the face's shapes (the fusion as the search's ``detail``, the
sync report as a :class:`~memory_core.backends.protocol.BackendSync`).

Everything the workbench and the evaluator need beyond the face (candidates, fusion, chunks,
embeddings) stays on :attr:`BuiltinBackend.index`: the lab talks to :class:`MemoryIndex`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..embeddings import EmbeddingError
from ..index import MemoryIndex
from ..read.reading import ReadResult
from ..write.sync import SyncProgress, SyncReport

if TYPE_CHECKING:
    # the face's classes (and Status under them) are imported by the first search or status,
    # not by a no-op ``index``
    from ..read.fusion import FusionResult
    from .protocol import BackendSearch, BackendStatus, FallbackNote, Follower
    from .sync_answer import BackendSync


class BuiltinBackend:
    """:class:`MemoryIndex` as a :class:`~memory_core.backends.protocol.MemoryBackend`."""

    kind = "builtin"
    fallback: FallbackNote | None = None

    def __init__(self, index: MemoryIndex) -> None:
        self.index = index
        self.workspace: Path = index.workspace

    def __enter__(self) -> BuiltinBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.index.close()

    def release(self) -> None:
        """Nothing of its own to close: the index belongs to whoever opened it."""

    def over(self, reader: Callable[[], MemoryIndex]) -> BuiltinBackend:
        """The same backend answering from ``reader()`` (the live index's reader)."""
        return BuiltinBackend(reader())

    def _answer(self, res: FusionResult) -> BackendSearch:
        from .protocol import BackendSearch

        idx = self.index
        # the embedding provider's fallback as the tool reports it (a qmd fallback's note, set
        # on the answer, takes the key in :meth:`BackendSearch.to_json`)
        extra = {"provider": idx.choice.id, "model": idx.choice.model, "fallback": idx.fallback}
        return BackendSearch(list(res.hits), "builtin", res.mode, self.fallback, res, res.note,
                             extra)

    def search(self, query: str, **kw: Any) -> BackendSearch:
        """The builtin search under the profile's settings (``kw``: the face's limits, sources
        and hook, and search settings, as :meth:`MemoryIndex.search` takes them)."""
        return self._answer(self.index.search(query, **kw))

    def search_many(self, queries: Sequence[str], **kw: Any) -> Iterator[BackendSearch]:
        """:meth:`search` of each of ``queries``, answered as a group
        (:meth:`MemoryIndex.search_many`)."""
        for res in self.index.search_many(queries, **kw):
            yield self._answer(res)

    def get(self, path: str, from_line: int | None = None, lines: int | None = None
            ) -> ReadResult:
        return self.index.get(path, from_line, lines)

    def sync(self, *, force: bool = False, progress: SyncProgress | None = None,
             verify: bool = False, executor: Any = None) -> BackendSync:
        report = self.index.sync(force=force, progress=progress, verify=verify,
                                 executor=executor)
        return sync_answer(self.index, report)

    def files_changed(self, *, force: bool = False) -> dict[str, Any] | None:
        """Nothing to do: the live index follows the files for the builtin engine."""
        return None

    def follow(self, on_update: Callable[[Any], None] | None = None) -> Follower | None:
        """Nothing runs beside a face: the live index is the builtin engine's follower."""
        return None

    def status(self, *, deep: bool = False) -> BackendStatus:
        from .protocol import BackendStatus

        return BackendStatus.of(self.index.status(deep=deep), requested_backend="builtin")

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


def sync_answer(idx: MemoryIndex, report: SyncReport) -> BackendSync:
    """The builtin sync's report in the face's shape: what ``memory-core index`` prints."""
    from .sync_answer import BackendSync

    kind = f"full rebuild ({report.reason})" if report.full else "incremental"
    summary = [
        f"Memory index updated: {kind}.",
        f"  files: {report.files_seen} seen, {report.files_indexed} indexed, "
        f"{report.files_unchanged + report.files_touched} unchanged, "
        f"{report.files_deleted} deleted, {report.files_failed} skipped",
        f"  chunks written: {report.chunks_written}; embedded: {report.embedded}; "
        f"cache hits: {report.cache_hits}; {report.duration_ms / 1000:.1f} s"]
    warnings = []
    if idx.fallback:  # what was asked, what answers, and why
        warnings.append(f"embeddings fell back from {idx.fallback['from']} to "
                        f"{idx.choice.id}: {idx.fallback['reason']}")
    return BackendSync(report.to_dict(), summary, warnings + list(report.warnings))
