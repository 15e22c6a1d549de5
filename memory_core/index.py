"""``MemoryIndex``: the one public face of the engine for a workspace.

The CLI, the workbench pages, the notebooks, the agent tools and the tests all go through it:
``sync()``, ``candidates()`` + ``fuse()`` (or ``search()`` for both), ``get()``, ``status()``,
and the read-only views the workbench needs (files, chunks, embeddings). Nothing outside this
package touches SQL.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from .candidates import Candidates
from .config import MemoryConfig, SearchSettings, load_config
from .embeddings import EmbeddingError, ProviderChoice, create_provider
from .fusion import FusionResult, fuse
from .reading import ReadResult, read_lines
from .search import fetch_candidates
from .sources import list_files
from .store import ChunkRow, FileRow, Store, StoreError
from .sync import (
    Indexer,
    SyncProgress,
    SyncReport,
    cleanup_stale_temp,
    identity_diff,
    index_identity,
)


class WorkspaceError(ValueError):
    """The workspace does not exist or is not a folder."""


class MemoryIndex:
    """An indexed workspace. Open with :meth:`open`; close when done (or use ``with``)."""

    def __init__(self, workspace: Path, config: MemoryConfig,
                 choice: ProviderChoice | None = None):
        self.workspace = workspace
        self.config = config
        self.store_path = config.store_path(workspace)
        self._choice = choice
        self._store: Store | None = None
        self._lock = threading.RLock()
        self._synced = False
        self.last_sync: SyncReport | None = None
        self.fallback: dict[str, str] | None = None
        #: Record hits on dated diaries as recalls for promotion (§6.2). The CLI and agent tools
        #: turn it on; the workbench asks first.
        self.record_recalls = False

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, workspace: str | os.PathLike[str], config: MemoryConfig | None = None, *,
             profile: str | None = None, provider: str | None = None,
             overrides: dict[str, Any] | None = None) -> MemoryIndex:
        """Open ``workspace`` with its ``memory-workbench.toml``, then the given overrides."""
        ws = Path(os.path.expanduser(str(workspace))).resolve()
        if not ws.exists():
            raise WorkspaceError(f"workspace {workspace} does not exist")
        if not ws.is_dir():
            raise WorkspaceError(f"workspace {workspace} is not a folder")
        cfg = copy.deepcopy(config) if config else load_config(ws, overrides)
        if profile:
            cfg = cfg.with_profile(profile)
        if provider:
            cfg.provider.provider = provider
        return cls(ws, cfg)

    def __enter__(self) -> MemoryIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    @property
    def choice(self) -> ProviderChoice:
        """The embedding provider in use (started lazily), with any fallback reason."""
        with self._lock:
            if self._choice is None:
                self._choice = create_provider(self.config.provider)
                if self._choice.fallback_from:
                    self.fallback = {"from": self._choice.fallback_from,
                                     "reason": self._choice.reason or ""}
            return self._choice

    def _open_store(self) -> Store:
        if self._store is None:
            self._store = Store(self.store_path, self.config.store.busy_timeout_ms)
        return self._store

    @property
    def store(self) -> Store:
        """The open store (internal; exposed for tests and benchmarks, not for pages)."""
        with self._lock:
            return self._open_store()

    # ------------------------------------------------------------------ sync

    def sync(self, *, force: bool = False, progress: SyncProgress | None = None) -> SyncReport:
        """Bring the index up to date; rebuild aside if its identity changed.

        An embedding failure during indexing switches to the next provider of the fallback chain
        (the reason is kept for status) and rebuilds with it.
        """
        with self._lock:
            self.close()
            cleanup_stale_temp(self.store_path)
            tried: set[str] = set()
            while True:
                choice = self.choice
                try:
                    report = Indexer(self.workspace, self.config, choice, progress).sync(
                        self.store_path, force=force)
                    break
                except EmbeddingError as e:
                    tried.add(choice.id)
                    nxt = create_provider(self.config.provider, skip=tried)
                    if nxt.provider is not None and nxt.id in tried:
                        raise
                    reason = f"{choice.id} failed during indexing: {e}"
                    self._choice = replace(nxt, fallback_from=choice.id, reason=reason)
                    self.fallback = {"from": choice.id, "reason": reason}
                    if nxt.id == "none" and "none" in tried:
                        raise
            if self.fallback:
                store = self._open_store()
                meta = store.get_meta() or {}
                meta["fallback"] = self.fallback
                store.begin()
                store.set_meta(meta)
                store.commit()
            self._synced = True
            self.last_sync = report
            return report

    def ensure_synced(self) -> None:
        """Sync once per open index (cheap when nothing changed: mtime/size prefilter)."""
        if not self._synced:
            self.sync()

    # ------------------------------------------------------------------ search

    def settings(self, **overrides: Any) -> SearchSettings:
        """The profile's search settings with ``overrides`` (``None`` values ignored)."""
        s = self.config.settings()
        clean = {k: v for k, v in overrides.items() if v is not None}
        return replace(s, **clean) if clean else s

    def candidates(self, query: str, sources: Sequence[str] | None = None,
                   settings: SearchSettings | None = None, *, use_numpy: bool = False,
                   auto_sync: bool = True, query_vector: np.ndarray | None = None
                   ) -> Candidates:
        """Fetch both legs for ``query`` once (the slow part: embedding and SQL).

        ``query_vector``: the query's embedding when the caller already has it (the evaluator
        embeds its queries in batches, and fetches once per keyword-leg option).
        """
        if auto_sync:
            self.ensure_synced()
        s = settings or self.settings()
        src = self._source_filter(sources)
        with self._lock:
            return fetch_candidates(self._open_store(), self.choice.provider, query, s, src,
                                    use_numpy=use_numpy, query_vector=query_vector)

    def _source_filter(self, sources: Sequence[str] | None) -> list[str] | None:
        if not sources:
            return None
        return [s for s in sources if s in self.config.sources.sources] or ["__none__"]

    @staticmethod
    def fuse(candidates: Candidates, settings: SearchSettings) -> FusionResult:
        """Rank candidates under settings: pure, fast, no I/O."""
        return fuse(candidates, settings)

    def search(self, query: str, *, max_results: int | None = None,
               min_score: float | None = None, sources: Sequence[str] | None = None,
               settings: SearchSettings | None = None, use_numpy: bool = False,
               **overrides: Any) -> FusionResult:
        """``memory_search``: candidates, then fusion under the profile's settings."""
        s = settings or self.settings(**overrides)
        s = replace(s, max_results=max_results if max_results is not None else s.max_results,
                    min_score=min(1.0, max(0.0, min_score)) if min_score is not None
                    else s.min_score)
        cands = self.candidates(query, sources, s, use_numpy=use_numpy)
        result = fuse(cands, s)
        if self.record_recalls and result.hits:
            from .promotion import record_search

            record_search(self, cands.query, result.hits)
        return result

    # ------------------------------------------------------------------ reading

    def get(self, path: str, from_line: int | None = None, lines: int | None = None
            ) -> ReadResult:
        """``memory_get``: exact lines of a memory file (refuses anything else)."""
        return read_lines(self.workspace, self.config, path, from_line, lines)

    def files(self) -> list[FileRow]:
        with self._lock:
            return sorted(self._open_store().files().values(), key=lambda f: (f.source, f.path))

    def chunks(self, path: str | None = None) -> list[ChunkRow]:
        with self._lock:
            st = self._open_store()
            return st.chunks_for_path(path) if path else st.all_chunks()

    def embeddings(self, sources: Sequence[str] | None = None) -> tuple[list[str], np.ndarray]:
        with self._lock:
            return self._open_store().embeddings(sources)

    def embed_query(self, query: str) -> np.ndarray | None:
        p = self.choice.provider
        return None if p is None else p.embed_query(query)

    def file_text(self, path: str) -> str:
        """The text a file contributes (rendered for transcripts), for the chunk browser."""
        from .sources import load

        for f in list_files(self.workspace, self.config).files:
            if f.path == path:
                return load(f).text
        raise FileNotFoundError(path)

    # ------------------------------------------------------------------ status

    def status(self, *, deep: bool = False) -> dict[str, Any]:
        """Files, chunks, dirty, sources, FTS and vector availability, provider and fallback."""
        cfg = self.config
        out: dict[str, Any] = {
            "backend": "builtin", "workspaceDir": str(self.workspace),
            "dbPath": str(self.store_path), "profile": cfg.profile,
            "requestedProvider": cfg.provider.provider, "sources": list(cfg.sources.sources),
            "extraPaths": [e.path for e in cfg.sources.extra_paths],
            "chunking": {"tokens": cfg.chunking.tokens, "overlap": cfg.chunking.overlap,
                         "mode": cfg.chunking.mode},
        }
        listing = list_files(self.workspace, cfg)
        out["warnings"] = list(listing.warnings)
        if not self.store_path.exists():
            out.update(files=0, chunks=0, dirty=True, indexed=False, sourceCounts=[],
                       identity={"status": "missing", "reason": "no index yet"})
            return out
        try:
            with self._lock:
                st = self._open_store()
                meta = st.get_meta() or {}
                counts = st.counts()
                rows = st.files()
                cache_entries = st.cache_count()
        except StoreError as e:
            out.update(indexed=False, error=str(e), dirty=True)
            return out
        dirty = _is_dirty(listing.files, rows)
        out.update(
            indexed=bool(meta), files=sum(c["files"] for c in counts.values()),
            chunks=sum(c["chunks"] for c in counts.values()), dirty=dirty,
            provider=meta.get("provider"), model=meta.get("model"),
            sourceCounts=[{"source": k, **v} for k, v in sorted(counts.items())],
            cache={"enabled": cfg.store.cache_enabled, "entries": cache_entries,
                   "maxEntries": cfg.store.cache_max_entries},
            fts={"enabled": True, "available": st.fts_available, "error": st.fts_error},
            vector={"enabled": meta.get("provider") not in (None, "none"),
                    "storeAvailable": st.vec_available, "loadError": st.vec_error,
                    "dims": meta.get("vectorDims"),
                    "search": "sqlite-vec" if st.vec_available else "numpy"},
            fallback=meta.get("fallback") or self.fallback,
            custom={"searchMode": "fts-only" if meta.get("provider") in (None, "none")
                    else "hybrid"},
            badJsonlLines=sum(r.bad_lines for r in rows.values()),
            fileWarnings={p: r.warnings for p, r in rows.items() if r.warnings},
            builtAt=meta.get("builtAt"),
        )
        if self._choice is not None:
            want = index_identity(cfg, self.workspace, self._choice)
            reason = identity_diff(meta, want)
            out["identity"] = {"status": "mismatch" if reason else "valid", "reason": reason}
        if self.last_sync:
            out["lastSync"] = self.last_sync.to_dict()
        if deep:
            out["truncation"] = self.truncation()
        return out

    def truncation(self) -> dict[str, Any]:
        """Share of chunks longer than the local model reads (it silently cuts the rest)."""
        p = self.choice.provider
        counter = getattr(p, "token_counts", None)
        limit = getattr(p, "max_seq_length", None)
        if counter is None or not limit:
            return {"available": False}
        texts = [c.text for c in self.chunks()]
        counts: list[int] = []
        for i in range(0, len(texts), 256):
            counts.extend(counter(texts[i : i + 256]))
        over = sum(1 for n in counts if n > limit)
        return {"available": True, "maxSeqLength": limit, "chunks": len(counts),
                "truncated": over, "share": (over / len(counts)) if counts else 0.0,
                "meanTokens": float(np.mean(counts)) if counts else 0.0}


def _is_dirty(files: Sequence[Any], rows: dict[str, FileRow]) -> bool:
    if {f.path for f in files} != set(rows):
        return True
    for f in files:
        try:
            st = f.abs_path.stat()
        except OSError:
            return True
        r = rows[f.path]
        if r.mtime != int(st.st_mtime * 1000) or r.size != st.st_size:
            return True
    return False
