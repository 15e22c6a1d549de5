"""``MemoryIndex``: the one public face of the engine for a workspace.

The CLI, the workbench pages, the notebooks, the agent tools and the tests all go through it:
``sync()``, ``candidates()`` + ``fuse()`` (or ``search()`` for both), ``get()``, ``status()``,
``generation``, ``transaction()``, and the read-only views the workbench needs (files, chunks,
embeddings, ``file_view()``). Feature packages (promotion, evaluation, MCP) sit above it and use
only this face; this module imports none of them (recall recording is the caller's ``on_hits``
hook). Nothing outside the engine touches SQL.
"""

from __future__ import annotations

import copy
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base.config import (
    MemoryConfig,
    ProfileName,
    SearchSettings,
    checked_settings,
    load_config,
    profile_settings,
    provider_name,
)
from .base.locations import unsafe_workspace
from .base.supersession import Supersession
from .base.synclock import DEFAULT_WAIT_S, SyncLockTimeout, sync_lock
from .embeddings import (
    EmbeddingError,
    ProviderChoice,
    ProviderUnavailable,
    VectorWidthChanged,
    create_provider,
    falls_back_to_keywords,
)
from .embeddings.batch import FLAVOURS as BATCH_APIS
from .embeddings.batch import BatchingProvider, BatchState
from .embeddings.batch import status_json as batch_status
from .read import browse
from .read.reading import PathRefused, ReadResult, capped_path, read_lines, read_rendered
from .storage import postings
from .storage.store import (
    ChunkRow,
    DatabaseError,
    FileRow,
    IndexPathRefused,
    IndexUnavailable,
    Store,
    StoreCorrupt,
    StoreError,
    StoreLocked,
)
from .write.rebuild import RebuildCause
from .write.sources import SourceError, SourceFile, list_files, load
from .write.sync import (
    EmbedExecutor,
    Indexer,
    SyncProgress,
    SyncReport,
    check_workspace,
    cleanup_stale_temp,
    guard_index_path,
    identity_diff,
    index_identity,
)

if TYPE_CHECKING:
    import numpy as np

    from .read.candidates import Candidates
    from .read.fusion import FusionResult, Hit
    from .read.search import VectorLeg
    from .status import IdentityInfo, Status, TruncationInfo
else:
    from .base.lazy import numpy as np

#: Called by :meth:`MemoryIndex.search` with the candidates' query and the fused hits.
OnHits = Callable[[str, Sequence["Hit"]], None]


class WorkspaceError(ValueError):
    """The workspace does not exist or is not a folder."""


#: Tries of a search's read before its error stands, and the pause before each retry (times the
#: retry's number): contention clears within milliseconds, real damage stays.
READ_TRIES = 3
RETRY_PAUSE_S = 0.05
#: The progress stage reported while a sync waits for another process's sync of the same index.
WAIT_STAGE = "waiting for another sync"


class SyncBusy(StoreError):
    """Another process is syncing this index and did not finish within the allowed wait."""


@dataclass(frozen=True)
class FileView:
    """The text a file contributes to the index, as the chunk browser shows it.

    ``text`` is the file itself for Markdown and the rendered ``User:``/``Assistant:`` lines for
    a transcript; ``line_map[i]`` is then the JSONL line (1-based) that rendered line ``i + 1``
    came from (``None`` for Markdown, whose lines are the file's).
    """

    path: str
    source: str
    text: str
    line_map: list[int] | None = None

    def source_line(self, rendered_line: int) -> int:
        """The file line (1-based) behind rendered line ``rendered_line`` (1-based)."""
        if self.line_map is None or not self.line_map:
            return rendered_line
        i = min(max(rendered_line, 1), len(self.line_map)) - 1
        return self.line_map[i]


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
        self._tx_depth = 0
        self._synced = False
        self.last_sync: SyncReport | None = None
        self.fallback: dict[str, str] | None = None
        #: False: searches never sync (a live layer syncs in the background, §4.2 onSearch).
        self.auto_sync = True
        #: True: open the index file read-only and never sync it (a viewer of an index that
        #: another process owns, e.g. the workbench's ``$MEMORY_WORKBENCH_READONLY``).
        self.readonly = False
        #: Why the last search answered without syncing first (another process was syncing).
        self.sync_skipped: str | None = None
        self._batch_loaded = False

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, workspace: str | os.PathLike[str], config: MemoryConfig | None = None, *,
             profile: ProfileName | str | None = None, provider: str | None = None,
             overrides: dict[str, Any] | None = None) -> MemoryIndex:
        """Open ``workspace`` with its ``memory-workbench.toml``, then the given overrides."""
        ws = Path(os.path.realpath(os.path.expanduser(str(workspace))))  # a loop: no folder
        if not ws.exists():
            raise WorkspaceError(f"workspace {workspace} does not exist")
        if not ws.is_dir():
            raise WorkspaceError(f"workspace {workspace} is not a folder")
        if why := unsafe_workspace(ws):
            raise WorkspaceError(f"workspace {workspace} is {why}; refused, since its index "
                                 "would be written there")
        cfg = copy.deepcopy(config) if config else load_config(ws, overrides)
        if profile:
            cfg = cfg.with_profile(profile)
        if provider:
            cfg.provider.provider = provider_name(provider)
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
        if self._store is not None and not self._tx_depth and self._store.moved():
            self.close()  # replaced by a rename (a destroyed index rebuilt): read the new file
        if self._store is None:
            guard_index_path(self.store_path, self.workspace, self.config)
            store = Store(self.store_path, self.config.store.busy_timeout_ms,
                          readonly=self.readonly)
            try:
                check_workspace(store.get_meta(), self.workspace, self.store_path)
            except IndexPathRefused:
                store.close()
                raise
            except StoreError:
                pass  # damage: the reads that need the rows say so
            self._store = store
        return self._store

    @property
    def store(self) -> Store:
        """The open store (internal; exposed for tests and benchmarks, not for pages)."""
        with self._lock:
            return self._open_store()

    @contextmanager
    def transaction(self) -> Iterator[Store]:
        """Hold the index for an atomic group of writes: all of them commit, or none.

        The index's lock is held throughout (its connection is shared by threads), so reads
        from other threads wait. Nested use joins the outer transaction. An exception rolls
        back and propagates.
        """
        with self._lock:
            store = self._open_store()
            if self._tx_depth:
                self._tx_depth += 1
                try:
                    yield store
                finally:
                    self._tx_depth -= 1
                return
            self._tx_depth = 1
            try:
                with store.transaction():
                    yield store
            finally:
                self._tx_depth = 0

    @property
    def generation(self) -> int:
        """How many committed syncs have changed this index (0: none yet); one cheap read.

        Compare two readings to know whether anything a cache holds (maps, measurements,
        candidates) may be stale.
        """
        return _as_int(self._committed_meta().get("generation"))

    @property
    def last_sync_at(self) -> int | None:
        """When a sync last committed (epoch ms, ``status().last_sync_at``), in one meta read
        instead of a status (which lists the workspace: seconds at 100k files)."""
        meta = self._committed_meta()
        return meta.get("syncedAt") or meta.get("builtAt")

    def _committed_meta(self) -> dict[str, Any]:
        """The index meta, ``{}`` when there is no index or it cannot be read (damaged: a
        search or sync says so and rebuilds)."""
        if not self.store_path.exists():
            return {}
        try:
            with self._lock:
                return self._open_store().get_meta() or {}
        except (StoreError, DatabaseError):
            return {}

    # ------------------------------------------------------------------ sync

    def sync(self, *, force: bool = False, progress: SyncProgress | None = None,
             lock_wait_s: float | None = DEFAULT_WAIT_S, verify: bool = False,
             executor: EmbedExecutor | None = None) -> SyncReport:
        """Bring the index up to date; rebuild aside if its identity changed.

        An embedding failure during indexing switches to the next provider of the fallback chain
        (the reason is kept for status) and rebuilds with it. One sync at a time per index file,
        across processes: while another holds it, this one waits up to ``lock_wait_s`` seconds
        (``progress(WAIT_STAGE, seconds, bound)`` once a second), then raises :class:`SyncBusy`.
        A damaged index is rebuilt aside when the sync's reads (or an earlier search's or
        status') found the damage; ``verify`` reads every page first (``PRAGMA quick_check``).
        ``executor``: embed elsewhere (``index --executor ray``) while this process writes.
        """
        def waiting(waited: float, bound: float) -> None:
            if progress is not None:
                progress(WAIT_STAGE, int(waited), int(min(bound, 10**9)))

        if self.readonly:
            raise StoreError(f"index {self.store_path} is open read-only: not synced")
        # before the lock file is made beside it: a user's file gets no company either
        guard_index_path(self.store_path, self.workspace, self.config)
        try:
            with sync_lock(self.store_path, lock_wait_s, waiting), self._lock:
                return self._sync_locked(force, progress, verify, executor)
        except SyncLockTimeout as e:
            raise SyncBusy(str(e)) from e

    def _sync_locked(self, force: bool, progress: SyncProgress | None,
                     verify: bool = False, executor: EmbedExecutor | None = None) -> SyncReport:
        batching = self._batching(force, progress)
        self.close()
        cleanup_stale_temp(self.store_path)
        tried: set[str] = set()
        received: list[tuple[str, str, str, str, np.ndarray]] = []
        while True:
            choice = self.choice
            indexer = Indexer(self.workspace, self.config, choice, progress, executor)
            try:
                report = indexer.sync(self.store_path, force=force, verify=verify)
                break
            except VectorWidthChanged:
                raise  # not the provider's absence: falling back would hide it
            except EmbeddingError as e:
                received += indexer.received
                tried.add(choice.id)
                try:
                    nxt = create_provider(self.config.provider, skip=tried)
                except ProviderUnavailable:  # fallback = []: the failure itself is the news
                    self._keep_received(received)
                    raise e from None
                if (nxt.provider is not None and nxt.id in tried) or (
                        nxt.provider is None and not falls_back_to_keywords(
                            self.config.provider)):
                    self._keep_received(received)
                    raise
                reason = f"{choice.id} failed during indexing: {e}"
                self._choice = replace(nxt, fallback_from=choice.id, reason=reason)
                self.fallback = {"from": choice.id, "reason": reason}
                if nxt.id == "none" and "none" in tried:
                    raise
        if received:  # what the failed provider did answer, for its next run
            self._keep_received(received)
            report.warnings.append(
                f"{self.fallback['from'] if self.fallback else 'the provider'} failed during "
                f"indexing: the index is {self._choice.id if self._choice else 'none'}"
                f"{' (keyword-only)' if self._choice and self._choice.provider is None else ''};"
                f" the {len(received)} vectors received before the failure are cached for the "
                "next run")
        if batching is not None:
            report.warnings.extend(batching.notes)
            batching.notes.clear()
        unavailable = self._choice.reason if self._choice is not None and (
            self._choice.requested == "auto" or self._choice.provider is None) else None
        if self.fallback or batching is not None or unavailable:
            store = self._open_store()
            meta = store.get_meta() or {}
            if unavailable:
                meta["providerUnavailableReason"] = unavailable
            if self.fallback:
                meta["fallback"] = self.fallback
            if batching is not None:
                meta["batch"] = batching.state.to_meta()
            with store.transaction():
                store.set_meta(meta)
        self._synced = True
        self.last_sync = report
        return report

    def _keep_received(self, rows: list[tuple[str, str, str, str, np.ndarray]]) -> None:
        """Cache the vectors a failed provider did answer in the index now in place (a
        rebuild that failed took its own cache with it): its next run asks only for the rest."""
        if not rows or not self.store_path.exists() or not self.config.store.cache_enabled:
            return
        try:
            with self.transaction() as store:
                for pid, model, key, h, v in rows:
                    store.cache_put(pid, model, key, [(h, v)])
        except (StoreError, DatabaseError):
            return  # only a saving: the next run embeds them again

    def _batching(self, force: bool, progress: SyncProgress | None) -> BatchingProvider | None:
        """The provider's batch mode, if on: its state taken from the index meta once (so a
        batch API that failed twice stays off across commands until ``--force``), and its
        waits reported as progress."""
        batching = self.choice.provider
        if not isinstance(batching, BatchingProvider):
            return None
        if not self._batch_loaded:
            self._batch_loaded = True
            meta = {} if force else self._committed_meta()
            batching.state = BatchState.from_meta(meta.get("batch"), True)
        if progress is not None:
            batching.set_waiting(lambda waited, bound, _state: progress(
                "batch job", waited, bound))
        return batching

    def ensure_synced(self) -> None:
        """Sync once per open index (cheap when nothing changed: mtime/size prefilter).

        If another process is syncing right now and an index exists, do not wait for it:
        answer from the last committed state (the reference's search never waits, §4.2).
        """
        if self._synced or not self.auto_sync or self.readonly:
            return
        try:
            self.sync(lock_wait_s=0 if self.store_path.exists() else DEFAULT_WAIT_S)
        except SyncBusy:
            self._synced = True
            self.sync_skipped = ("another process is syncing this index; answered from its "
                                 "last committed state")
        except StoreLocked as e:  # locked by another process: not damage
            if not self.store_path.exists():
                raise
            self.sync_skipped = f"the index was busy ({e}); answered from its last committed state"

    # ------------------------------------------------------------------ search

    def settings(self, **overrides: Any) -> SearchSettings:
        """The settings in force with ``overrides`` (``None`` values ignored).

        :meth:`MemoryConfig.settings` for the provider actually in use (the profile's
        model-dependent constants follow it; explicit ``[search]`` keys win), then the
        per-call overrides (CLI flags, tool arguments), which win over both.
        """
        return checked_settings(self.config.settings(self.choice.id), "settings", **overrides)

    def profile_defaults(self, profile: ProfileName | str | None = None) -> SearchSettings:
        """A profile's own settings (default: this index's) for the provider in use, without
        the config's explicit ``[search]`` keys: what the workbench's A/B "profile" side means."""
        return profile_settings(profile or self.config.profile, self.choice.id)

    def candidates(self, query: str, sources: Sequence[str] | None = None,
                   settings: SearchSettings | None = None, *,
                   auto_sync: bool = True, query_vector: np.ndarray | None = None,
                   rows_for: int | None = None, vector_hits: VectorLeg | None = None
                   ) -> Candidates:
        """Fetch both legs for ``query`` once (the slow part: embedding and SQL).

        ``query_vector``: the query's embedding when the caller already has it (the evaluator
        embeds its queries in batches, and fetches once per keyword-leg option).
        ``rows_for``: see :func:`memory_core.read.search.fetch_candidates` (``None``: every hit's
        row, for re-fusing under other settings). ``vector_hits``: the vector leg, fetched
        with a group's (:meth:`search_many`).
        """
        if auto_sync:
            self.ensure_synced()
        s = settings or self.settings()
        src = self._source_filter(sources)
        try:
            return self._expand(self._fetch(query, s, src, query_vector, rows_for,
                                            vector_hits=vector_hits), s, src)
        except IndexUnavailable:
            if not (auto_sync and self.auto_sync):
                raise
        # Damaged: rebuild aside from the Markdown (the truth), then answer; if that cannot
        # happen now, the error stands (never an empty success, issue #13 item 7).
        try:
            self.sync(force=True)
        except SyncBusy as e:
            raise IndexUnavailable(f"index {self.store_path} is damaged and another process "
                                   f"is syncing it; try again shortly ({e})") from e
        return self._expand(self._fetch(query, s, src, query_vector, rows_for),
                            s, src)

    def _expand(self, cands: Candidates, s: SearchSettings, src: list[str] | None
                ) -> Candidates:
        """Query decomposition and pseudo-relevance feedback on the keyword leg when the
        settings ask for them: more keyword queries, fetched now so that fusion stays a pure
        function of the candidates."""
        prf = s.prf_terms > 0 and s.prf_weight > 0
        if not (prf or s.decompose > 0) or not cands.keyword:
            return cands

        def keyword_only(text: str) -> Candidates:
            return self._fetch(text, s, src, None, keyword_only=True)

        from .read.expansion import with_decomposition, with_feedback

        if s.decompose > 0:
            cands = with_decomposition(cands, keyword_only, s.decompose)
        if prf:
            cands = with_feedback(cands, keyword_only, s.prf_terms, s.prf_docs, s.prf_weight)
        return cands

    def _fetch(self, query: str, s: SearchSettings, src: list[str] | None,
               query_vector: np.ndarray | None, rows_for: int | None = None, *,
               keyword_only: bool = False, vector_hits: VectorLeg | None = None) -> Candidates:
        """Both legs (or the keyword leg alone), or an error: never an empty success.

        A read that fails (locked, busy, an I/O error, even "malformed") is tried again on a
        fresh connection, :data:`READ_TRIES` times in all; only then does the error stand, and
        it says the index is damaged (:class:`IndexUnavailable`, which rebuilds it) only when
        ``PRAGMA quick_check`` confirms it (:meth:`Store.confirm_damage`), so contention never
        costs a rebuild (issue #19 item 2).
        """
        last: BaseException | None = None
        for attempt in range(READ_TRIES):
            if attempt:
                time.sleep(RETRY_PAUSE_S * attempt)
            with self._lock:
                try:
                    store = self._open_store()
                    if store.damaged:  # found by the open's read: to be confirmed below
                        raise IndexUnavailable(f"index {self.store_path}: {store.damaged}")
                    provider = None if keyword_only else self.choice.provider
                    from .read.search import fetch_candidates

                    return fetch_candidates(store, provider, query, s, src,
                                            query_vector=query_vector,
                                            rows_for=rows_for,
                                            vector_hits=None if attempt else vector_hits)
                except IndexPathRefused:
                    raise
                except (DatabaseError, StoreError) as e:
                    last = e
                    if self._tx_depth:
                        break  # inside a transaction: its connection cannot be swapped
                    self.close()  # the next try reads through a fresh connection
        assert last is not None
        with self._lock:
            try:
                store = self._open_store()
            except StoreError as e:
                raise e from last
            raise store.confirm_damage(last) from last

    def _source_filter(self, sources: Sequence[str] | None) -> list[str] | None:
        if not sources:
            return None
        return [s for s in sources if s in self.config.sources.sources] or ["__none__"]

    @staticmethod
    def fuse(candidates: Candidates, settings: SearchSettings) -> FusionResult:
        """Rank candidates under settings: pure, fast, no I/O."""
        from .read.fusion import fuse

        return fuse(candidates, settings)

    def search(self, query: str, *, max_results: int | None = None,
               min_score: float | None = None, sources: Sequence[str] | None = None,
               settings: SearchSettings | None = None,
               on_hits: OnHits | None = None, **overrides: Any) -> FusionResult:
        """``memory_search``: candidates, then fusion under the profile's settings.

        ``on_hits``: called once with the candidates' query and the fused hits when there are
        any (promotion's ``recall_recorder(index)`` records recalls this way; nothing is
        recorded unless the caller asks).
        """
        s = checked_settings(settings or self.settings(**overrides), "search",
                             max_results=max_results, min_score=min_score)
        from .read.query import cap_query

        query, note = cap_query(query)
        return self._answer(query, sources, s, on_hits, note=note)

    def search_many(self, queries: Sequence[str], *, max_results: int | None = None,
                    min_score: float | None = None, sources: Sequence[str] | None = None,
                    settings: SearchSettings | None = None, on_hits: OnHits | None = None,
                    **overrides: Any) -> Iterator[FusionResult]:
        """:meth:`search` of each of ``queries`` in order, the same results, yielded one by
        one (an error is raised where that query's :meth:`search` raises it, after the
        results before it).

        The group's vector legs come from one pass over the vector matrix
        (:func:`memory_core.read.search.vector_legs`: a matrix-matrix product where one query at a
        time reads the whole matrix per query); each query's keyword leg, fusion and
        ``on_hits`` then run as :meth:`search` runs them.
        """
        s = checked_settings(settings or self.settings(**overrides), "search",
                             max_results=max_results, min_score=min_score)
        from .read.query import cap_query
        from .read.search import query_text

        capped = [cap_query(q) for q in queries]
        qs = [q for q, _ in capped]
        legs: list[VectorLeg | None] = [None] * len(qs)
        if len(qs) > 1:
            self.ensure_synced()
            legs = self._group_legs([query_text(q, s) for q in qs], self._source_filter(sources),
                                    s.block_rescore)
        for (query, note), leg in zip(capped, legs, strict=True):
            yield self._answer(query, sources, s, on_hits, vector_hits=leg, note=note)

    def _answer(self, query: str, sources: Sequence[str] | None, s: SearchSettings,
                on_hits: OnHits | None, *,
                vector_hits: VectorLeg | None = None, note: str = "") -> FusionResult:
        """One query of :meth:`search` or :meth:`search_many` (already capped; ``note`` says
        how): its candidates (only the rows one fusion under ``s`` reads), the fusion, then
        ``on_hits``."""
        from .read.fusion import fuse, rows_needed

        cands = self.candidates(query, sources, s,
                                rows_for=rows_needed(query, s), vector_hits=vector_hits)
        result = fuse(cands, s)
        result.note = "; ".join(filter(None, [note, cands.note]))
        if on_hits is not None and result.hits:
            on_hits(cands.query, result.hits)
        return result

    def _group_legs(self, queries: list[str], src: list[str] | None, rescore: int = 0
                    ) -> list[VectorLeg | None]:
        """The group's vector legs, or ``None`` for each query that fetches its own (no
        provider, anything that failed: the query's own :meth:`_fetch` retries it, judges the
        error and raises it where a query alone would)."""
        from .read.search import POOL, vector_legs

        none: list[VectorLeg | None] = [None] * len(queries)
        with self._lock:
            try:
                store = self._open_store()
                provider = self.choice.provider
                if provider is None or store.damaged:
                    return none
                return vector_legs(store, provider, queries, POOL, src, rescore)
            except Exception:  # raised again, if it lasts, by the query's own fetch
                return none

    # ------------------------------------------------------------------ reading

    def get(self, path: str, from_line: int | None = None, lines: int | None = None
            ) -> ReadResult:
        """``memory_get``: exact lines of a memory file, or of a session transcript the
        rendered lines search indexed, by the JSONL line numbers its citations name (refuses
        anything else: a ``.jsonl`` path must be one of the transcripts this index lists)."""
        if not capped_path(path or "").strip().endswith(".jsonl"):
            return read_lines(self.workspace, self.config, path, from_line, lines)
        try:
            view = self.file_view(path.strip())
        except FileNotFoundError:
            raise PathRefused(f"{path.strip()[:200]}: not a session transcript of this workspace "
                              "(only the transcripts memory_search cites, under the sessions "
                              "folder, with sessions among the sources)") from None
        except SourceError as e:
            raise PathRefused(f"{path.strip()[:200]}: cannot read ({e})") from e
        if view.source != "sessions" or view.line_map is None:
            raise PathRefused(f"{view.path}: not a session transcript")
        return read_rendered(view.path, view.text, view.line_map, from_line, lines)

    def files(self) -> list[FileRow]:
        with self._lock:
            return sorted(self._open_store().files().values(), key=lambda f: (f.source, f.path))

    def chunks(self, path: str | None = None) -> list[ChunkRow]:
        with self._lock:
            st = self._open_store()
            return st.chunks_for_path(path) if path else st.all_chunks()

    def supersessions(self) -> list[Supersession]:
        """Memory lines a later line superseded, as the last sync found them."""
        with self._lock:
            return self._open_store().supersessions()

    def chunk_rows(self, ids: Sequence[str]) -> dict[str, ChunkRow]:
        """The rows of the chunks ``ids`` (missing ids left out): a map samples 20k of 133k."""
        with self._lock:
            return self._open_store().chunk_rows(ids)

    def chunk_counts(self, needle: str | None = None) -> dict[str, tuple[int, int]]:
        """Chunks per file and how many contain ``needle`` (case-folded), without loading them."""
        with self._lock:
            return self._open_store().chunk_counts(needle)

    def file_page(self, source: str | None = None, offset: int = 0, limit: int = 200,
                  paths: Sequence[str] | None = None) -> browse.FilePage:
        """One page of the files (:func:`memory_core.read.browse.file_page`): never all 100k."""
        with self._lock:
            return browse.file_page(self._open_store(), source, offset, limit, paths)

    def text_matches(self, needle: str, progress: browse.ScanProgress | None = None
                     ) -> dict[str, tuple[str, int, int]]:
        """Files whose chunks contain ``needle`` (:func:`memory_core.read.browse.text_matches`)."""
        with self._lock:
            return browse.text_matches(self._open_store(), needle, progress)

    def embedding_sample(self, max_points: int, seed: int = 0,
                         progress: browse.ScanProgress | None = None) -> browse.EmbeddingSample:
        """A fixed sample of the embeddings (:func:`memory_core.read.browse.embedding_sample`)."""
        with self._lock:
            return browse.embedding_sample(self._open_store(), max_points, seed, progress)

    def embeddings_of(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored embeddings of ``ids`` (those that have one)."""
        with self._lock:
            return browse.embeddings_of(self._open_store(), ids)

    def embeddings(self, sources: Sequence[str] | None = None) -> tuple[list[str], np.ndarray]:
        with self._lock:
            return self._open_store().embeddings(sources)

    def embed_query(self, query: str) -> np.ndarray | None:
        p = self.choice.provider
        return None if p is None else p.embed_query(query)

    def file_text(self, path: str) -> str:
        """The text a file contributes (rendered for transcripts), for the chunk browser."""
        return self.file_view(path).text

    def file_view(self, path: str) -> FileView:
        """The text ``path`` contributes and, for a transcript, its rendered → JSONL line map.

        Raises ``FileNotFoundError`` when ``path`` is not a memory file of this workspace, and
        ``sources.SourceError`` when it cannot be read (binary, too large, unreadable).
        """
        f = self._source_file(path)
        doc = load(f)
        return FileView(f.path, f.source, doc.text,
                        list(doc.line_map) if doc.line_map is not None else None)

    def _source_file(self, path: str) -> SourceFile:
        # a file the index lists: its row names its source, and one stat finds it (listing
        # the workspace to find one file took ~1 s a click of the chunk browser at 100k files)
        with self._lock:
            rows = browse.file_rows(self._open_store(), [path]) if self.store_path.exists() else []
        if rows and rows[0].source == "memory":  # workspace-relative (transcripts may not be)
            abs_p = os.path.normpath(os.path.join(self.workspace, path))
            try:
                st = os.stat(abs_p)
            except OSError:
                pass  # gone or moved since the last sync: the listing decides
            else:
                return SourceFile(path, abs_p, "memory", "markdown", int(st.st_mtime * 1000),
                                  st.st_size, int(st.st_ctime * 1000))
        for f in list_files(self.workspace, self.config).files:
            if f.path == path:
                return f
        raise FileNotFoundError(path)

    # ------------------------------------------------------------------ status

    def status(self, *, deep: bool = False) -> Status:
        """Files, chunks, dirty, sources, FTS and vector availability, provider and fallback.

        ``deep`` also measures how many chunks the local model truncates (slow: tokenises all).
        """
        # imported here: a no-op ``index`` (no ``--json``) reports without it (~5 ms of frozen
        # dataclasses at import)
        from .status import (
            CacheInfo,
            FallbackInfo,
            IdentityInfo,
            SourceCount,
            Status,
            is_dirty,
            multilingual_warning,
        )

        cfg = self.config
        base = self._status_base()
        guard_index_path(self.store_path, self.workspace, cfg)  # a user's file: refused
        listing = list_files(self.workspace, cfg)
        base["warnings"] = list(listing.warnings)
        if not self.store_path.exists():
            return Status(**base, indexed=False, dirty=True,
                          identity=IdentityInfo("missing", RebuildCause.NO_INDEX.text()))
        try:
            st, read = self._status_read(deep)
        except IndexPathRefused:
            raise
        except StoreError as e:
            return Status(**base, indexed=False, error=str(e), dirty=True)
        meta, counts, rows, skipped = read["meta"], read["counts"], read["rows"], read["skipped"]
        provider = meta.get("provider")
        warn = multilingual_warning(provider, meta.get("model"), read["sample"])
        if warn:
            base["warnings"].append(warn)
        return Status(
            **base, **self._leg_status(st, meta),
            indexed=bool(meta), files=sum(c["files"] for c in counts.values()),
            chunks=sum(c["chunks"] for c in counts.values()),
            dirty=is_dirty(listing.files, rows, skipped),
            source_counts=[SourceCount(k, v["files"], v["chunks"])
                           for k, v in sorted(counts.items())],
            identity=self._identity_status(meta),
            generation=_as_int(meta.get("generation")),
            last_sync_at=meta.get("syncedAt") or meta.get("builtAt"),
            provider=provider, model=meta.get("model"),
            cache=CacheInfo(cfg.store.cache_enabled, read["cache_entries"],
                            cfg.store.cache_max_entries),
            fallback=FallbackInfo.from_dict(meta.get("fallback") or self.fallback),
            batch=batch_status(cfg.provider.batch, self._batch_state(meta)),
            provider_unavailable_reason=meta.get("providerUnavailableReason"),
            search_mode="fts-only" if provider in (None, "none") else "hybrid",
            bad_jsonl_lines=sum(r.bad_lines for r in rows.values()),
            file_warnings={**{p: r.warnings for p, r in rows.items() if r.warnings},
                           **{p: r.reason for p, r in skipped.items()}},
            skipped_files=len(skipped) + listing.unlisted,
            built_at=meta.get("builtAt"),
            last_sync=self.last_sync.to_dict() if self.last_sync else None,
            truncation=self.truncation() if deep else None,
            superseded=len(read["sups"]),
            stale_memory={r.old_line: r.new_citation for r in read["sups"]
                          if r.old_path == "MEMORY.md"},
        )

    def _status_base(self) -> dict[str, Any]:
        """What :meth:`status` says from the configuration alone (before reading the index)."""
        from .read.fusion import scores_info
        from .status import ChunkingInfo

        cfg = self.config
        return dict(
            backend="builtin", workspace_dir=str(self.workspace), db_path=str(self.store_path),
            profile=cfg.profile, requested_provider=cfg.provider.provider,
            sources=list(cfg.sources.sources),
            extra_paths=[e.path for e in cfg.sources.extra_paths],
            chunking=ChunkingInfo(cfg.chunking.tokens, cfg.chunking.overlap, cfg.chunking.mode),
            scores=scores_info(self.settings()),
        )

    def _status_read(self, deep: bool) -> tuple[Store, dict[str, Any]]:
        """The index's side of :meth:`status`, read under the lock: its store and what it
        holds; a damaged index raises (confirmed by ``PRAGMA quick_check``)."""
        from .status import sample_texts

        with self._lock:
            st = self._open_store()
            try:
                rows = st.files()
                read = {"meta": st.get_meta() or {}, "counts": st.counts(), "rows": rows,
                        "skipped": st.skipped(), "cache_entries": st.cache_count(),
                        "sample": sample_texts(st, list(rows)), "sups": st.supersessions()}
                damage = st.damaged or (st.check_integrity() if deep else None)
            except StoreCorrupt as e:
                raise st.confirm_damage(e) from e
            if damage:
                raise st.confirm_damage(Exception(damage))
        return st, read

    def _identity_status(self, meta: dict[str, Any]) -> IdentityInfo | None:
        """Whether the index was built as the configuration asks (once a provider is chosen)."""
        from .status import IdentityInfo

        if self._choice is None:
            return None
        change = identity_diff(meta, index_identity(self.config, self.workspace, self._choice))
        return IdentityInfo("mismatch" if change else "valid", change.reason if change else None)

    def _leg_status(self, st: Store, meta: dict[str, Any]) -> dict[str, Any]:
        """The keyword and vector legs' part of :meth:`status`: which path answers each."""
        from .status import FtsInfo, VectorInfo

        provider = meta.get("provider")
        vm = st.vector_matrix(verify=True)
        return {
            "fts": FtsInfo(True, st.fts_available, st.fts_error,
                           st.fts_available and postings.for_store(st, verify=True) is not None),
            "vector": VectorInfo(provider not in (None, "none"), st.vec_available, st.vec_error,
                                 meta.get("vectorDims"),
                                 "sidecar" if vm is not None
                                 else "sqlite-vec" if st.vec_available else "numpy",
                                 rows=vm.rows if vm is not None else None,
                                 blocks=st.block_count())}

    def _batch_state(self, meta: dict[str, Any]) -> BatchState:
        live = self._choice.provider if self._choice is not None else None
        if isinstance(live, BatchingProvider) and self._batch_loaded:
            return live.state
        # batch mode exists only for the providers with a batch API here (OpenAI, Voyage, Gemini)
        wanted = self.config.provider.batch.enabled and meta.get("provider") in BATCH_APIS
        return BatchState.from_meta(meta.get("batch"), wanted)

    def truncation(self) -> TruncationInfo:
        """Share of chunks the model does not read whole (:func:`.status.truncation_of`)."""
        from .status import truncation_of

        return truncation_of(self.config, self.choice.provider,
                             lambda: [c.text for c in self.chunks()])


def _as_int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0

