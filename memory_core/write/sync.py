"""Sync: bring the index in line with the workspace files.

Incremental by default: a file whose mtime and size are unchanged is not even read (the
reference re-hashes every file on every sync); one whose content hash is unchanged is only
re-stamped; changed files are re-chunked, embedded through the cache and replaced in one
transaction each; files that disappeared are removed.

When the index identity changes (provider, model, chunking, tokenizer, sources), or there is no
index yet, the whole index is rebuilt *aside* in a temporary file, seeded with the old embedding
cache, and swapped in with an atomic rename: a crash at any point leaves the old index usable.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..base.config import BLOCK_PROVIDERS, MemoryConfig, fingerprint
from ..base.dates import now_ms
from ..base.fileio import file_changed
from ..base.indexfiles import IndexFiles
from ..base.supersession import DETECTOR_VERSION, detect, statements_of_chunks
from ..base.text import cjk_bigrams
from ..base.version import __version__
from ..embeddings import EmbeddingError, EmbeddingProvider, ProviderChoice
from ..embeddings.ahead import AheadExecutor
from ..embeddings.windows import POOLING, declared_limit, embed_whole, pooled_key
from ..storage import postings
from ..storage.store import (
    DatabaseError,
    FileRow,
    IndexPathRefused,
    SkippedRow,
    Store,
    StoreCorrupt,
    StoredChunk,
    StoreError,
    StoreLocked,
    check_index_file,
    damage_found,
    stamp_owner,
)
from ..storage.swap import remove_index, swap_in
from .chunking import Chunk, chunk_blocks, chunk_markdown, remap_chunk_lines, sha256_hex
from .rebuild import Rebuild, RebuildCause
from .sources import (
    SourceDoc,
    SourceError,
    SourceFile,
    display_path,
    index_path_conflict,
    list_files,
    load,
)

if TYPE_CHECKING:
    import numpy as np
else:  # a keyword-only sync never loads it (stacking block vectors does)
    from ..base.lazy import numpy as np

#: Called with (stage, done, total); stages are "scan", "embed" and "write".
SyncProgress = Callable[[str, int, int], None]
#: 3: the bounded chunker's overlap and long-line pieces start at a word, marked with "…"
#: (2 was this branch's first cut, whose overlap dropped a partial line instead).
CHUNKING_VERSION = 3
BIGRAM_VERSION = 1
_GROUP_CHUNKS = 256
#: Chunks a sync reads and chunks before it writes them (a window of whole groups; the next
#: window is read once this one is written): a first build used to hold every chunk of the
#: workspace before its first write (~6 kB a chunk: ~7.7 GB at 1.33M chunks). Not smaller:
#: each window's embedding stream starts afresh, so its first group is waited for.
WINDOW_CHUNKS = 64 * _GROUP_CHUNKS
#: Page cache (MiB) of the connections a sync writes through. sqlite-vec appends each vector
#: into a chunk blob of 1,024 vectors (1.5 MB at 384 dims) and walks its page chain on every
#: insert: with SQLite's default 2 MiB cache, interleaved with the FTS writes, those pages fell
#: out and the vec0 inserts took 1.8 s of a 7 s build of 13k chunks (0.2 s with 64 MiB).
#: Only sync's connections get it: a search's would keep up to this much of what it read.
WRITE_CACHE_MIB = 64


@dataclass
class SyncReport:
    """What a sync did, counted. A second sync of an unchanged workspace reports zeros."""

    full: bool = False
    reason: str = ""
    cause: RebuildCause | None = None
    files_seen: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_touched: int = 0
    files_deleted: int = 0
    files_failed: int = 0
    chunks_written: int = 0
    embedded: int = 0
    cache_hits: int = 0
    warnings: list[str] = field(default_factory=list)
    duration_ms: float = 0.0

    @property
    def wrote_anything(self) -> bool:
        return bool(self.files_indexed or self.files_touched or self.files_deleted
                    or self.chunks_written or self.files_failed)

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["wrote_anything"] = self.wrote_anything
        d["cause"] = self.cause.value if self.cause else None
        return d


#: The most UTF-8 bytes a chunk may have before the indexer splits it, whatever the provider
#: declares: the split limit of every provider but e5 (local and OpenAI-compatible: 8,192).
MAX_SPLIT_BYTES = 8000
#: Identity keys written only when they differ from the value every index built before they
#: existed had (so adding one rebuilds only the indexes it concerns); compared both ways.
#: ``embedContext`` is no longer written (contextual embedding text, measured and dropped:
#: docs/retrieval.md): an index built with it is rebuilt.
OPTIONAL_IDENTITY = ("splitBytes", "embedWindows", "embedContext", "blockVectors")
#: The blocks' definition (:func:`~memory_core.write.chunking.chunk_blocks`): a change rebuilds
#: the indexes that hold block vectors (their chunk vectors come back from the cache).
BLOCKS_VERSION = 1


def split_limit(provider: EmbeddingProvider | None) -> int | None:
    """The byte size above which a chunk is split before embedding (``None``: never split)."""
    return None if provider is None else min(provider.max_input_tokens, MAX_SPLIT_BYTES)


def embeds_whole(config: MemoryConfig, provider: EmbeddingProvider | None) -> bool:
    """True when chunks longer than the model reads are embedded in windows and pooled: the
    default profile's (bounded) indexes, with a provider that declares its input limit. The
    reference chunking reproduces OpenClaw, whose model cuts them."""
    return config.chunking.mode == "bounded" and declared_limit(provider) is not None


def embeds_blocks(config: MemoryConfig, provider: EmbeddingProvider | None) -> bool:
    """True when a sync also embeds each chunk's blocks (``chunking.block_vectors``): an index
    that embeds chunks whole, with a provider the best-block score was measured with."""
    return (config.chunking.block_vectors and embeds_whole(config, provider)
            and provider is not None and provider.id in BLOCK_PROVIDERS)


def index_identity(config: MemoryConfig, workspace: Path, choice: ProviderChoice) -> dict[str, Any]:
    """What the index's contents depend on; any change means a full rebuild.

    ``splitBytes`` (the pieces a long chunk is cut into depend on it) appears only when the
    limit is not :data:`MAX_SPLIT_BYTES`, the one every index had before the key existed: an
    existing local or OpenAI index keeps its identity, an e5 one (512, then 2,048) is rebuilt.
    ``embedWindows`` names the pooling of an index that embeds chunks whole (absent when the
    model's own truncation applies, as in every index built before it existed).
    """
    s = config.sources
    scope = {
        "extraPaths": sorted(os.path.expanduser(e.path) + "|" + e.pattern for e in s.extra_paths),
        "sessionsDir": s.sessions_dir,
        "followSymlinks": s.follow_symlinks,
    }
    limit = split_limit(choice.provider)
    split: dict[str, Any] = ({"splitBytes": limit}
                             if limit is not None and limit != MAX_SPLIT_BYTES else {})
    if embeds_whole(config, choice.provider):
        split["embedWindows"] = POOLING
    if embeds_blocks(config, choice.provider):
        split["blockVectors"] = BLOCKS_VERSION
    return {
        "provider": choice.id,
        "model": choice.model,
        "providerKey": choice.key,
        "sources": sorted(s.sources),
        "scopeHash": fingerprint(scope),
        "chunkTokens": config.chunking.tokens,
        "chunkOverlap": config.chunking.overlap,
        "chunkMode": config.chunking.mode,
        "chunkingVersion": CHUNKING_VERSION,
        "ftsTokenizer": "unicode61",
        "bigramVersion": BIGRAM_VERSION,
        **split,
    }


def next_generation(previous: dict[str, Any] | None) -> int:
    """The generation after ``previous`` meta (1 for a new index)."""
    try:
        return int((previous or {}).get("generation") or 0) + 1
    except (TypeError, ValueError):
        return 1


def identity_diff(old: dict[str, Any] | None, new: dict[str, Any]) -> Rebuild | None:
    """Why ``old`` cannot serve ``new`` (``None`` if it can)."""
    if not old:
        return Rebuild.of(RebuildCause.NO_INDEX)
    for key in (*new, *(k for k in OPTIONAL_IDENTITY if k not in new)):
        if old.get(key) != new.get(key):
            return Rebuild.of(RebuildCause.IDENTITY,
                              f"{key} changed ({old.get(key)!r} → {new.get(key)!r})")
    return None


def chunk_id(source: str, path: str, c: Chunk, model: str) -> str:
    return hashlib.sha256(
        f"{source}:{path}:{c.start_line}:{c.end_line}:{c.hash}:{model}".encode()).hexdigest()


def split_utf8(text: str, limit: int) -> list[str]:
    """Cut ``text`` into pieces of at most ``limit`` UTF-8 bytes, never inside a character."""
    pieces: list[str] = []
    cur: list[str] = []
    size = 0
    for ch in text:
        n = len(ch.encode("utf-8", "replace"))
        if size + n > limit and cur:
            pieces.append("".join(cur))
            cur, size = [], 0
        cur.append(ch)
        size += n
    if cur:
        pieces.append("".join(cur))
    return pieces


def chunks_for(doc: SourceDoc, config: MemoryConfig,
               provider: EmbeddingProvider | None) -> list[Chunk]:
    """Chunk a document the way the index stores it (blank chunks dropped, inputs bounded)."""
    c = config.chunking
    chunks = chunk_markdown(doc.text, c.tokens, c.overlap, c.mode)
    if doc.line_map is not None:
        chunks = remap_chunk_lines(chunks, doc.line_map)
    chunks = [ch for ch in chunks if ch.text.strip()]
    if provider is None:
        return chunks
    limit = split_limit(provider) or MAX_SPLIT_BYTES
    out: list[Chunk] = []
    for ch in chunks:
        if len(ch.text.encode("utf-8", "replace")) <= limit:
            out.append(ch)
            continue
        for piece in split_utf8(ch.text, limit):
            out.append(Chunk(ch.start_line, ch.end_line, piece, sha256_hex(piece)))
    return out


def _block_matrix(text: str, vectors: dict[str, np.ndarray], blocks: bool) -> np.ndarray | None:
    """The vectors of ``text``'s blocks, one row each (``None`` when blocks are not embedded,
    the chunk has none, or one is missing: the chunk then keeps its pooled cosine)."""
    if not blocks:
        return None
    rows = [vectors.get(sha256_hex(b)) for b in chunk_blocks(text)]
    if not rows or any(r is None for r in rows):
        return None
    return np.stack([np.asarray(r, dtype=np.float32) for r in rows if r is not None])


@dataclass
class _Pending:
    doc: SourceDoc
    chunks: list[Chunk]


class EmbedStream(Protocol):
    """The vectors of a sync's planned groups, handed back one group at a time, in order."""

    def take(self, texts: Sequence[str]) -> np.ndarray:
        """The next planned group's vectors (``texts`` must be that group's texts)."""
        ...

    def close(self) -> None: ...


class EmbedExecutor(Protocol):
    """Embeds a sync's texts elsewhere while this process writes the index (the store stays
    single-writer), e.g. :class:`memory_core.embeddings.ray_pool.RayEmbedPool`.

    ``start`` gets every group's texts to embed, in the order the sync will ask for them (each
    group exactly what the serial path would embed in one call, so the vectors are the same),
    ``whole`` (embed each text whole: :func:`~memory_core.embeddings.windows.embed_whole`) and
    ``progress(done, total)`` in texts.
    """

    def start(self, choice: ProviderChoice, groups: list[list[str]], whole: bool,
              progress: Callable[[int, int], None]) -> EmbedStream: ...


class Indexer:
    """Writes one workspace into one store with one provider."""

    def __init__(self, workspace: Path, config: MemoryConfig, choice: ProviderChoice,
                 progress: SyncProgress | None = None, executor: EmbedExecutor | None = None):
        self.workspace = workspace
        self.config = config
        self.choice = choice
        self.provider = choice.provider
        self.progress = progress or (lambda stage, done, total: None)
        #: None: embed here, one group ahead of the writes (:mod:`.embeddings.ahead`); else
        #: see :class:`EmbedExecutor`.
        self.executor = executor
        self._stream: EmbedStream | None = None
        #: Every vector received from the provider in this sync (provider id, model, cache
        #: key, text hash, vector): the fallback's index caches them when this sync fails.
        self.received: list[tuple[str, str, str, str, np.ndarray]] = []
        self._width_checked = False
        self._width = 0

    # --------------------------------------------------------------- embedding

    def _embed(self, store: Store, pending: list[_Pending], report: SyncReport,
               done_before: int, total: int) -> dict[str, np.ndarray]:
        if self.provider is None:
            return {}
        p = self.provider
        self._expect_width(store)
        whole, key, embedded = self._to_embed(pending)
        hashes = [c.hash for item in pending for c in item.chunks]
        cached: dict[str, np.ndarray] = {}
        if self.config.store.cache_enabled:
            cached = store.cache_get(p.id, p.model, key, list(embedded))
        vectors = {h: cached[h] for h in embedded if h in cached}
        report.cache_hits += sum(1 for h in hashes if h in vectors)
        missing = {h: text for h, text in embedded.items() if h not in vectors}
        if missing:
            texts = list(missing.values())

            def progress(done: int, _total: int) -> None:
                # in chunks, as ``total`` is: a group's texts include its chunks' blocks
                self.progress("embed", done_before + done * len(hashes) // len(texts), total)

            try:
                if self._stream is not None:
                    mat = self._stream.take(texts)
                else:
                    mat = (embed_whole(p, texts, progress) if whole
                           else p.embed_documents(texts, progress))
            except EmbeddingError as e:
                order = list(missing)
                self._keep(store, key, [(order[i], v) for i, v in e.received.items()
                                        if 0 <= i < len(order)])
                raise
            fresh = {h: mat[i] for i, h in enumerate(missing)}
            report.embedded += len(fresh)
            vectors.update(fresh)
            self._keep(store, key, list(fresh.items()))
        # a cache written before the model changed its width (``index --force`` after the
        # error below) is embedded again, not mixed in
        stale = [h for h, v in vectors.items() if p.dims and v.size != p.dims]
        if stale:
            texts = [embedded[h] for h in stale]
            mat = embed_whole(p, texts) if whole else p.embed_documents(texts)
            report.embedded += len(stale)
            report.cache_hits -= len(stale)
            vectors.update(zip(stale, mat, strict=True))
            self._keep(store, key, [(h, vectors[h]) for h in stale])
        self._check_width(vectors)
        return vectors

    def _keep(self, store: Store, key: str, items: list[tuple[str, np.ndarray]]) -> None:
        """Cache vectors just received (those of a call that failed too: the next run does not
        ask for them again), and remember them for the fallback's index (:attr:`received`)."""
        p = self.provider
        if p is None or not items:
            return
        self.received.extend((p.id, p.model, key, h, v) for h, v in items)
        if self.config.store.cache_enabled:
            store.cache_put(p.id, p.model, key, items)

    def _expect_width(self, store: Store) -> None:
        """Tell the provider the width the index holds (an incremental sync's): an answer of
        another width under the same model is then an error naming both widths."""
        if self._width_checked or self.provider is None:
            return
        self._width_checked = True
        expect = getattr(self.provider, "expect_dims", None)
        dims = (store.get_meta() or {}).get("vectorDims") if expect is not None else None
        if expect is not None and isinstance(dims, int) and dims > 0:
            expect(dims)

    def _check_width(self, vectors: dict[str, np.ndarray]) -> None:
        """One width in the whole index: a group whose vectors differ from the groups written
        before (cached under an older width, say) is an error, never a mixed index."""
        widths = {int(v.size) for v in vectors.values()}
        if self._width:
            widths.add(self._width)
        if len(widths) > 1:
            from ..embeddings import VectorWidthChanged

            p = self.provider
            raise VectorWidthChanged(
                f"{p.id if p else '?'} embeddings: model {p.model if p else '?'} gives vectors "
                f"of {' and '.join(f'{w}-d' for w in sorted(widths))}: its width changed under "
                f"the same name; run `index --force` to embed everything again")
        if widths:
            self._width = widths.pop()

    def _to_embed(self, pending: list[_Pending]) -> tuple[bool, str, dict[str, str]]:
        """Whether texts are embedded whole, the cache key, and text hash → text for
        ``pending``: each chunk's, then (:func:`embeds_blocks`) each of its blocks'. A block is
        embedded as a chunk is, so a one-block chunk's block is its own text, embedded once."""
        p = self.provider
        assert p is not None
        whole = embeds_whole(self.config, p)
        # Pooled vectors are cached apart from the model's truncated ones (same text, other
        # meaning): a cache seeded by an older index is never misread.
        key = pooled_key(p.provider_key) if whole else p.provider_key
        texts = {c.hash: c.text for item in pending for c in item.chunks}
        if embeds_blocks(self.config, p):
            texts.update((sha256_hex(b), b) for item in pending for c in item.chunks
                         for b in chunk_blocks(c.text))
        return whole, key, texts

    def _plan(self, store: Store, to_do: list[_Pending]) -> tuple[bool, list[list[str]]]:
        """Each group's texts that :meth:`_embed` will find missing, in flush order: what the
        cache lacks, each text once (with the cache on, a group's fresh vectors are cached
        before the next group looks); and whether they are embedded whole."""
        p = self.provider
        assert p is not None
        whole, key, everything = self._to_embed(to_do)
        caching = self.config.store.cache_enabled
        seen: set[str] = set()
        if caching:
            seen = set(store.cache_get(p.id, p.model, key, list(everything)))
        plan: list[list[str]] = []
        for group in _groups(to_do):
            missing = {h: t for h, t in self._to_embed(group)[2].items() if h not in seen}
            if missing:
                plan.append(list(missing.values()))
            if caching:
                seen.update(missing)
        return whole, plan

    def _write(self, store: Store, pending: list[_Pending], vectors: dict[str, np.ndarray],
               report: SyncReport) -> None:
        model = self.choice.model
        blocks = embeds_blocks(self.config, self.provider)
        batch: list[tuple[FileRow, list[StoredChunk], list[str]]] = []
        for item in pending:
            doc = item.doc
            # Identical pieces of one line share an id (as in the reference): keep one row each,
            # or FTS would hold duplicates pointing at a single chunk.
            unique = {chunk_id(doc.source, doc.path, c, model): c for c in reversed(item.chunks)}
            stored = [
                StoredChunk(cid, doc.path, doc.source, c.start_line, c.end_line, c.hash, model,
                            c.text, vectors.get(c.hash), _block_matrix(c.text, vectors, blocks))
                for cid, c in reversed(unique.items())
            ]
            row = FileRow(doc.path, doc.source, doc.hash, doc.mtime_ms, doc.size, doc.bad_lines,
                          "\n".join(doc.warnings) or None)
            batch.append((row, stored, [cjk_bigrams(c.text) for c in stored]))
            report.files_indexed += 1
            report.chunks_written += len(stored)
        store.replace_files(batch)

    def _flush(self, store: Store, pending: list[_Pending], report: SyncReport,
               progress_state: list[int], total_chunks: int) -> None:
        if not pending:
            return
        vectors = self._embed(store, pending, report, progress_state[0], total_chunks)
        with store.transaction():
            self._write(store, pending, vectors, report)
        progress_state[0] += sum(len(p.chunks) for p in pending)
        self.progress("write", progress_state[0], total_chunks)
        pending.clear()

    # --------------------------------------------------------------- passes

    def index_files(self, store: Store, files: list[SourceFile], report: SyncReport,
                    known: dict[str, tuple[int, int, str]] | None,
                    skipped: dict[str, SkippedRow] | None = None) -> None:
        """Index ``files`` into ``store``; with ``known`` (``path → (mtime, size, hash)``, see
        :meth:`Store.file_signatures`), skip what has not changed.

        A file that cannot be read or chunked, for whatever reason, is skipped with a warning
        naming it and remembered in ``skipped_files`` with its stat, so status counts it and
        the next sync does not read it again until it changes. ``skipped``: the files the
        last sync skipped.

        Files are read and chunked a window (:data:`WINDOW_CHUNKS`) at a time, each window
        written before the next is read, so memory does not grow with the workspace; windows
        end where groups end, so the groups, their embedding calls and the index are the same
        as with one window.
        """
        to_do: list[_Pending] = []
        touched: list[tuple[str, int, int]] = []
        failed: list[SkippedRow] = []
        n = len(files)
        unchanged = 0
        # a window of whole groups at a time (see WINDOW_CHUNKS); an executor of its own (a Ray
        # pool: actors started and the model loaded per start) gets the whole plan at once
        window = None if self.executor else WINDOW_CHUNKS
        state = [0, 0, 0]  # chunks written, chunks read, texts planned in earlier windows
        read = in_group = 0
        for i, f in enumerate(files):
            if i % 256 == 0 or i + 1 == n:
                self.progress("scan", i + 1, n)
            row = known.get(f.path) if known else None
            if row is not None and not _changed(f, row[0], row[1]):
                unchanged += 1
                continue
            old_skip = skipped.get(f.path) if skipped else None
            if old_skip is not None and not _changed(f, old_skip.mtime, old_skip.size,
                                                     old_skip.ctime):
                report.files_unchanged += 1
                continue
            try:
                doc = load(f)
                if row is not None and row[2] == doc.hash:
                    touched.append((f.path, doc.mtime_ms, doc.size))
                    report.files_touched += 1
                    continue
                pending = _Pending(doc, chunks_for(doc, self.config, self.provider))
            except Exception as e:  # one bad file never stops the others (issue #13.6)
                reason = str(e) if isinstance(e, SourceError) else (
                    f"{display_path(f.path)}: skipped, {type(e).__name__}: {e}")
                report.files_failed += 1
                report.warnings.append(reason)
                failed.append(SkippedRow(f.path, f.source, f.mtime_ms, f.size, f.ctime_ms,
                                         reason))
                continue
            report.warnings.extend(doc.warnings)
            if doc.bad_lines:
                report.warnings.append(f"{f.path}: {doc.bad_lines} malformed JSONL line(s) skipped")
            to_do.append(pending)
            in_group += len(pending.chunks)
            if in_group >= _GROUP_CHUNKS:  # where :func:`_groups` ends a group
                read, in_group = read + in_group, 0
                if window is not None and read >= window:
                    self._index_window(store, to_do, touched, failed, report, state)
                    to_do, touched, failed, read = [], [], [], 0
        report.files_unchanged += unchanged
        self._index_window(store, to_do, touched, failed, report, state)

    def _index_window(self, store: Store, to_do: list[_Pending],
                      touched: list[tuple[str, int, int]], failed: list[SkippedRow],
                      report: SyncReport, state: list[int]) -> None:
        """Write one window of :meth:`index_files`: the files re-stamped or skipped, then
        ``to_do``'s groups, each embedded (ahead of the writes when there are several) and
        committed. ``state``: chunks written, chunks read and texts planned so far, updated."""
        if touched or failed:
            with store.transaction():
                store.touch_files(touched)
                store.set_skipped(failed)  # a file indexed before and unreadable now loses its rows
        window_chunks = sum(len(p.chunks) for p in to_do)
        state[1] += window_chunks
        # more than one group: embedded one group ahead of the writes (the same calls)
        executor = self.executor or (AheadExecutor() if window_chunks > _GROUP_CHUNKS else None)
        if executor is not None and self.provider is not None and to_do:
            whole, plan = self._plan(store, to_do)
            before = state[2]
            state[2] += sum(len(g) for g in plan)
            self._stream = executor.start(
                self.choice, plan, whole,
                lambda d, t: self.progress("embed", before + d, before + t))
        try:
            for group in _groups(to_do):
                self._flush(store, group, report, state, state[1])
        finally:
            if self._stream is not None:
                self._stream.close()
                self._stream = None

    def meta(self, store: Store, previous: dict[str, Any] | None = None) -> dict[str, Any]:
        """The index meta after a sync that changed something: identity, dims, times, and the
        generation, one more than ``previous``'s (so readers can tell "changed since I looked"
        with one cheap read)."""
        ident = index_identity(self.config, self.workspace, self.choice)
        dims = self.provider.dims if self.provider else None
        now = now_ms()
        return {**ident, "vectorDims": dims or None, "builtAt": now, "syncedAt": now,
                "generation": next_generation(previous),
                "workspace": os.path.realpath(self.workspace),
                "engine": f"memory_core {__version__}"}

    def sync(self, store_path: Path, *, force: bool = False, verify: bool = False
             ) -> SyncReport:
        """Sync the workspace into the index at ``store_path`` (created or rebuilt as needed).

        A damaged index is rebuilt aside when the open, the meta, the incremental's own reads or
        an earlier read (its damage marker, e.g. a search's open, which reads the whole FTS
        table) finds the damage; ``verify`` also reads every page
        first (``PRAGMA quick_check``: ~0.27 s for a 17 MB index, ~2.8 s for 170 MB, so not by
        default) and writes the keyword postings afresh from FTS5 (14 s at 133k chunks).
        """
        t0 = time.perf_counter()
        report = SyncReport()
        listing = list_files(self.workspace, self.config)
        report.warnings.extend(listing.warnings)
        report.files_seen = len(listing.files)
        guard_index_path(store_path, self.workspace, self.config)
        rebuild = Rebuild.of(RebuildCause.FORCED) if force else None
        old: Store | None = None
        previous: dict[str, Any] | None = None
        if store_path.exists():
            try:
                # no whole-FTS-table read at open (it was a third of a no-op sync at 133k
                # chunks): searches' own opens still do it and rebuild on damage
                old = Store(store_path, self.config.store.busy_timeout_ms, fts_scan=False,
                            cache_mib=WRITE_CACHE_MIB)
            except (IndexPathRefused, StoreLocked):
                raise
            except StoreError as e:
                rebuild = rebuild or Rebuild.of(RebuildCause.UNREADABLE, e)
        if old is not None:
            try:
                previous = old.get_meta()
            except StoreCorrupt as e:
                old.damaged = str(e)
            check_workspace(previous, self.workspace, store_path)
            if rebuild is None and old.damaged:
                rebuild = Rebuild.of(RebuildCause.DAMAGED, old.damaged)
            found = damage_found(store_path) if rebuild is None else None
            if found:
                rebuild = Rebuild.of(RebuildCause.DAMAGE_FOUND, found)
            if rebuild is None and verify:
                problem = old.check_integrity()
                if problem:
                    rebuild = Rebuild.of(RebuildCause.DAMAGED, problem)
            if rebuild is None:
                rebuild = identity_diff(previous, index_identity(self.config, self.workspace,
                                                                 self.choice))
        elif rebuild is None:
            rebuild = Rebuild.of(RebuildCause.NO_INDEX)
        refreshed = False
        known: dict[str, tuple[int, int, str]] | None = None
        if rebuild is None and old is not None:
            known = old.file_signatures()
            rebuild = mostly_changed(listing.files, known)
        if rebuild is None and old is not None and known is not None:
            try:
                self._incremental(old, listing.files, report, known)
                # the connection already open: a second open costs a migration check,
                # sqlite-vec's load and the FTS probe again
                self._refresh_sidecars(store_path, report, old, verify=verify)
                refreshed = True
            except StoreCorrupt as e:  # damage found by the incremental: rebuild instead
                old.rollback()
                rebuild = Rebuild.of(RebuildCause.DAMAGED, e)
                report = SyncReport(warnings=list(listing.warnings),
                                    files_seen=len(listing.files))
            finally:
                old.close()
        elif old is not None:
            old.close()
        if rebuild is not None:
            report.full, report.reason, report.cause = True, rebuild.reason, rebuild.cause
            self._rebuild(store_path, previous, listing.files, report)
        if not refreshed:
            self._refresh_sidecars(store_path, report, verify=verify)
        stamp_owner(store_path)
        report.duration_ms = (time.perf_counter() - t0) * 1000
        return report

    def _refresh_sidecars(self, store_path: Path, report: SyncReport,
                          store: Store | None = None, *, verify: bool = False) -> None:
        """Write the vector sidecar (with a provider) and the keyword postings for the state
        just committed (each a no-op when it is fresh).

        ``store``: a connection to ``store_path`` already open (left open); otherwise one is
        opened and closed here. A failure only costs speed (searches use sqlite-vec, or FTS5's
        own query), so it is a warning, not an error.
        """
        own = store is None
        if store is None:
            try:
                store = Store(store_path, self.config.store.busy_timeout_ms, fts_scan=False)
            except StoreError as e:
                report.warnings.append(f"search sidecars not written: {e}")
                return
        else:
            # the writes' cache (WRITE_CACHE_MIB) is done with: the listings below scan all of
            # `chunks`, whose pages would otherwise fill it (+80 MiB at 133k chunks, for nothing)
            store.set_page_cache()
        try:
            if self.provider is not None:
                try:
                    store.refresh_vectors()
                except (OSError, ValueError, StoreError, DatabaseError) as e:
                    report.warnings.append(f"vector sidecar not written: {e}")
            try:
                postings.refresh(store, force_full=verify, progress=self.progress)
            except Exception as e:  # only an accelerator: whatever failed, FTS5 still answers
                report.warnings.append(f"keyword postings not written: {type(e).__name__}: {e}")
        finally:
            if own:
                store.close()

    def _incremental(self, store: Store, files: list[SourceFile], report: SyncReport,
                     known: dict[str, tuple[int, int, str]]) -> None:
        """Update ``store`` in place; ``known``: its :meth:`Store.file_signatures`, already read
        by :meth:`sync` to decide between this and a rebuild."""
        skipped = store.skipped()
        self.index_files(store, files, report, known, skipped)
        present = {f.path for f in files}
        gone = [p for p in known if p not in present]
        gone_skipped = [p for p in skipped if p not in present]
        if gone or gone_skipped:
            with store.transaction():
                store.delete_files(gone + gone_skipped)
            report.files_deleted = len(gone)
        previous = store.get_meta() or {}
        stale = previous.get(SUPERSESSION_KEY) != DETECTOR_VERSION  # an older index or detector
        if report.wrote_anything or stale:
            meta = {**previous, **self.meta(store, previous)} if report.wrote_anything else dict(
                previous)
            with store.transaction():
                refresh_supersessions(store, meta)
                store.set_meta(meta)

    def _rebuild(self, target: Path, previous: dict[str, Any] | None, files: list[SourceFile],
                 report: SyncReport) -> None:
        """Build the whole index aside (``<db>.tmp-<id>``), seeded with the old file's embedding
        cache, then swap it in; ``previous``: the old meta (the generation continues from it)."""
        tmp = IndexFiles(target).tmp(os.urandom(6).hex())  # 12 hex digits (no uuid import)
        # scratch: no WAL (every page written twice, WAL then file) and no syncs while the
        # file is built aside; a crash leaves a temp file that is discarded anyway
        new: Store | None = None
        try:  # the Store too: its schema's first pages may fail to write (a full disk)
            new = Store(tmp, self.config.store.busy_timeout_ms, cache_mib=WRITE_CACHE_MIB,
                        scratch=True)
            if target.exists():
                new.seed_cache_from(target)
            self.index_files(new, files, report, None)
            new.begin()
            meta = self.meta(new, previous)
            refresh_supersessions(new, meta)
            new.set_meta(meta)
            new.cache_prune(self.config.store.cache_max_entries)
            new.commit()
            new.close()
            swap_in(tmp, target, self.config.store.busy_timeout_ms)
        except BaseException:
            with contextlib.suppress(Exception):  # a full disk may fail the close too:
                if new is not None:  # the temp file is removed all the same
                    new.close()
            remove_index(tmp)
            raise


#: The meta key naming the supersession detector's version the stored relation was built with.
SUPERSESSION_KEY = "supersessionDetector"


def refresh_supersessions(store: Store, meta: dict[str, Any]) -> None:
    """Recompute which lines a later line superseded, from every chunk (inside the sync's
    transaction), and note the detector's version in ``meta``: pure Python over the lines,
    ~0.2 s for the demo home's 291 chunks (docs/retrieval.md)."""
    store.replace_supersessions(detect(statements_of_chunks(store.statement_chunks())))
    meta[SUPERSESSION_KEY] = DETECTOR_VERSION


def _groups(to_do: list[_Pending]) -> Iterator[list[_Pending]]:
    """``to_do`` cut into the groups a sync embeds and commits together: whole files, until
    a group holds at least ``_GROUP_CHUNKS`` chunks (the last group may be smaller)."""
    group: list[_Pending] = []
    size = 0
    for item in to_do:
        group.append(item)
        size += len(item.chunks)
        if size >= _GROUP_CHUNKS:
            yield group
            group, size = [], 0
    if group:
        yield group


#: When at least this share of the files changed (and at least ``REBUILD_MIN_FILES`` of them),
#: a sync rebuilds aside instead of updating in place: removing a file's old rows (FTS5 must
#: un-index the old text) makes an in-place update of nearly everything cost more than building
#: it again, and the rebuild reuses the embedding cache, so nothing is embedded twice.
REBUILD_SHARE = 0.5
REBUILD_MIN_FILES = 200


def mostly_changed(files: Sequence[SourceFile], known: dict[str, tuple[int, int, str]]
                   ) -> Rebuild | None:
    """The rebuild reason when most files changed since the last sync (by mtime/size), else
    None. New and deleted files count as changed."""
    total = max(len(files), len(known))
    if total < REBUILD_MIN_FILES:
        return None
    present = [(f, known[f.path]) for f in files if f.path in known]
    new, deleted = len(files) - len(present), len(known) - len(present)
    changed = new + deleted + sum(1 for f, row in present if (f.mtime_ms, f.size) != row[:2])
    if changed >= REBUILD_MIN_FILES and changed >= REBUILD_SHARE * total:
        return Rebuild.of(RebuildCause.MOSTLY_CHANGED, f"{changed} of {total} files changed")
    return None


def check_workspace(meta: dict[str, Any] | None, workspace: Path, store_path: Path) -> None:
    """One index serves one workspace: refuse (:class:`IndexPathRefused`, one line) an index
    whose meta names another workspace that still exists (two workspaces pointed at one
    ``--db`` would serve each other's text). An index inside the workspace (a copied folder's
    ``.memory/``) or whose recorded workspace is gone (the folder moved) is no conflict; the
    next sync that writes records the new root."""
    theirs = (meta or {}).get("workspace")
    ours = os.path.realpath(workspace)
    if not isinstance(theirs, str) or theirs == ours:
        return
    if os.path.realpath(store_path).startswith(ours + os.sep):
        return  # inside this workspace (a copied folder's .memory/): its own by place
    if os.path.isdir(theirs):
        raise IndexPathRefused(
            f"index {store_path} serves the workspace {theirs}, not {workspace}: one index "
            "serves one workspace; choose another --db / [store] path")


def guard_index_path(store_path: Path, workspace: Path, config: MemoryConfig) -> None:
    """Refuse (:class:`IndexPathRefused`) an index path among the memory sources, or naming an
    existing file that is not one of our indexes: only a file this project created is ever
    opened, rebuilt or replaced (issue #13 item 2)."""
    conflict = index_path_conflict(workspace, config, store_path)
    if conflict:
        raise IndexPathRefused(conflict)
    check_index_file(store_path)


def _changed(f: SourceFile, mtime: int, size: int, ctime: int | None = None) -> bool:
    """Whether ``f`` differs from a recorded stat, using the stat the listing already made.

    ``ctime`` (kept for skipped files) also catches a ``chmod``, which makes an unreadable file
    readable without touching its mtime or size.
    """
    if f.size < 0:
        try:
            st = os.stat(f.abs)
        except OSError:
            return True
        if ctime is not None and int(st.st_ctime * 1000) != ctime:
            return True
        return file_changed(mtime, size, st)
    if ctime is not None and f.ctime_ms != ctime:
        return True
    return (f.mtime_ms, f.size) != (mtime, size)


def cleanup_stale_temp(target: Path, max_age_s: float = 3600) -> int:
    """Delete leftovers of rebuilds that were killed (``<db>.tmp-*``) older than ``max_age_s``."""
    n = 0
    now = time.time()
    for p in IndexFiles(target).temps():
        try:
            if now - p.stat().st_mtime > max_age_s:
                p.unlink()
                n += 1
        except OSError:
            pass
    return n
