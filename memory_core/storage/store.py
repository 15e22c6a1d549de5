"""The store: one SQLite file per workspace index (chunks, sqlite-vec vectors, FTS5, cache).

All SQL of the index lives here (which file is an index: :mod:`.indexfile`). The stdlib
``sqlite3`` of many Python builds cannot load extensions, so the package uses ``sqlean`` (a
drop-in build that can; :mod:`.common.sql`, the one library of the process) and loads
sqlite-vec into it.
Where sqlite-vec still cannot load, :attr:`Store.vec_error` says why and vector search runs in
numpy over the float32 blobs kept in ``chunks.embedding``; both paths rank identically.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.dates import now_ms
from ..base.lru import Lru
from ..base.sql import DatabaseError, OperationalError, connect
from ..base.sql import StoreCorrupt as StoreCorrupt
from ..base.sql import StoreLocked as StoreLocked
from ..base.supersession import Supersession
from ..base.topk import smallest_first
from . import migrations, vectors
from .fts import BIGRAM_TABLE, REFERENCE_TABLE, TABLES

# re-exported: the faces and tests name them as the store's errors and checks
from .indexfile import APPLICATION_ID as APPLICATION_ID
from .indexfile import IndexPathRefused as IndexPathRefused
from .indexfile import (
    IndexUnavailable,
    StoreError,
    check_index_file,
    damage_marker,
    file_id,
    read_uri,
)
from .indexfile import damage_found as damage_found
from .indexfile import owner_stamp as owner_stamp
from .indexfile import stamp_owner as stamp_owner

if TYPE_CHECKING:
    import numpy as np
else:
    from ..base.lazy import numpy as np

#: sqlite-vec's largest ``k``.
_VEC0_MAX_K = 4096
META_KEY = "memory_index_meta_v1"


#: How many reads :meth:`Store.read_memo` remembers (most recently used first to stay).
MEMO_ENTRIES = 4096


@dataclass(frozen=True)
class StoredChunk:
    """A chunk as written to the store."""

    id: str
    path: str
    source: str
    start_line: int
    end_line: int
    hash: str
    model: str
    text: str
    embedding: np.ndarray | None = None
    #: The vectors of the chunk's blocks, one row each (``None``: none stored).
    blocks: np.ndarray | None = None


@dataclass(frozen=True)
class ChunkRow:
    """A chunk as read back, with its file's mtime (temporal decay needs it)."""

    id: str
    path: str
    source: str
    start_line: int
    end_line: int
    hash: str
    text: str
    mtime_ms: int


#: The read of chunk rows: :class:`ChunkRow`'s columns in order, the file's mtime joined in.
_CHUNK_ROWS = ("SELECT c.id, c.path, c.source, c.start_line, c.end_line, c.hash, c.text,"
               " COALESCE(f.mtime, 0) FROM chunks c LEFT JOIN files f ON f.path = c.path")


@dataclass(frozen=True)
class SkippedRow:
    """A file the last sync could not read, and the stat it had (the "changed?" test)."""

    path: str
    source: str
    mtime: int
    size: int
    ctime: int
    reason: str


@dataclass(frozen=True)
class FileRow:
    path: str
    source: str
    hash: str
    mtime: int
    size: int
    bad_lines: int = 0
    warnings: str | None = None


def _blob(v: np.ndarray) -> bytes:
    return np.asarray(v, dtype=np.float32).tobytes()


def _vec(b: bytes | None) -> np.ndarray | None:
    return None if not b else np.frombuffer(b, dtype=np.float32)


def in_clause(column: str, values: Sequence[str] | None) -> tuple[str, list[Any]]:
    if not values:
        return "", []
    return f" AND {column} IN ({','.join('?' * len(values))})", list(values)


class MetaDamaged(StoreCorrupt):
    """The index meta is not what a sync writes: damage that ``quick_check`` cannot see."""


class Store:
    """A connection to one index database, with its schema migrated."""

    def __init__(self, path: Path, busy_timeout_ms: int = 5000, *, readonly: bool = False,
                 fts_scan: bool = True, cache_mib: int = 0, scratch: bool = False):
        self.path = Path(path)
        self.vec_available = False
        self.vec_error: str | None = None
        self.fts_available = False
        self.fts_error: str | None = None
        self._vec_dims: int | None = None
        self._matrix_cache: tuple[int, list[str], np.ndarray] | None = None
        self._sidecar: vectors.VectorMatrix | None = None
        #: :meth:`read_memo`'s reads, valid while (data_version, changes) holds;
        #: the :data:`MEMO_ENTRIES` most recently used (an MCP server's distinct queries would
        #: otherwise grow it for as long as the index does not change)
        self._memo = Lru(MEMO_ENTRIES)
        #: Why the file is damaged, once a read has found out (``None``: not known damaged).
        self.damaged: str | None = None
        check_index_file(self.path)
        self.opened_file = file_id(self.path)
        if not readonly:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            uri = read_uri(self.path) if readonly else str(self.path)
            self.db = connect(uri, uri=readonly, isolation_level=None,
                              check_same_thread=False, timeout=busy_timeout_ms / 1000)
            self.db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            if cache_mib:  # page cache beyond SQLite's 2 MiB (sync's writers: see Indexer)
                self.set_page_cache(cache_mib)
            if not readonly:
                # ``scratch``, a file built aside (a crash discards it): no WAL, no syncs
                self.db.execute(f"PRAGMA journal_mode = {'MEMORY' if scratch else 'WAL'}")
                self.db.execute(f"PRAGMA synchronous = {'OFF' if scratch else 'NORMAL'}")
                migrations.migrate(self.db)
            else:
                self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            self._load_vec()
            self._probe_fts(fts_scan)
        except DatabaseError as e:
            with contextlib.suppress(Exception):
                self.db.close()
            raise self._error(e) from e

    def _error(self, e: DatabaseError) -> StoreError:
        """SQLite's error ``e`` as the store's one line, of the type SQLite's code gave it:
        :class:`StoreLocked`, :class:`IndexUnavailable` (damaged) or a plain StoreError."""
        msg = str(e)
        if isinstance(e, StoreLocked):
            return StoreLocked(f"index {self.path} is locked by another process ({msg}); "
                               "wait for it to finish or stop it")
        if isinstance(e, StoreCorrupt):
            return self._damaged_error(msg)
        return StoreError(f"index {self.path}: {msg}")

    def _damaged_error(self, why: str | None) -> IndexUnavailable:
        return IndexUnavailable(f"index {self.path} is damaged ({why}); the Markdown is "
                                "untouched: run `memory-core index` to rebuild it from the "
                                "Markdown")

    # ------------------------------------------------------------------ capabilities

    def _load_vec(self) -> None:
        if os.environ.get("MEMORY_CORE_DISABLE_SQLITE_VEC"):
            self.vec_error = "sqlite-vec disabled by MEMORY_CORE_DISABLE_SQLITE_VEC"
            return
        try:
            # the extension's path, as ``sqlite_vec.load`` finds it, without importing the
            # package: its ``__init__`` imports numpy (70+ ms) for a helper we do not use
            spec = importlib.util.find_spec("sqlite_vec")
            if spec is None or spec.origin is None:
                raise ImportError("the sqlite-vec package is not installed")
            self.db.enable_load_extension(True)
            self.db.load_extension(os.path.join(os.path.dirname(spec.origin), "vec0"))
            self.db.enable_load_extension(False)
            self.vec_available = True
        except Exception as e:  # any failure means: use the numpy path, and say why
            self.vec_error = f"sqlite-vec could not load: {e}"
        if self.vec_available:
            row = self.db.execute(
                "SELECT sql FROM sqlite_master WHERE name = 'chunks_vec'").fetchone()
            if row:
                try:
                    self._vec_dims = int(row[0].split("float[")[1].split("]")[0])
                except (IndexError, ValueError):
                    self._vec_dims = None

    def _probe_fts(self, scan: bool) -> None:
        # count(*) reads the whole table (~120 ms at 133k chunks), which finds damage in it
        # before a search answers from it; ``scan=False`` (sync) only checks FTS5 is there
        try:
            self.db.execute(f"SELECT count(*) FROM {REFERENCE_TABLE}" if scan
                            else f"SELECT rowid FROM {REFERENCE_TABLE} LIMIT 1").fetchone()
            self.fts_available = True
        except DatabaseError as e:
            self.fts_error = str(e)
            if isinstance(e, StoreCorrupt):
                self.damaged = str(e)

    def unavailable(self, e: BaseException | None = None) -> IndexUnavailable:
        """The error to raise for a damaged index (``e``: the read that found out); the damage
        is recorded beside the index (:func:`damage_marker`) for the next sync."""
        if e is not None:
            self.damaged = str(e)
        with contextlib.suppress(OSError):  # a read-only folder: the next read finds out again
            damage_marker(self.path).write_text(f"{self.damaged}\n", encoding="utf-8")
        return self._damaged_error(self.damaged)

    def confirm_damage(self, e: BaseException) -> StoreError:
        """The error to raise after reads failed with ``e`` (already retried on a fresh
        connection): :class:`IndexUnavailable`, with the damage marker written, only when
        ``PRAGMA quick_check`` confirms the file is damaged; otherwise a plain
        :class:`StoreError` that says to try again. A failed read alone is no evidence: a page
        read while another process misbehaved, or a lock, must not cost a full rebuild."""
        if isinstance(e, MetaDamaged) or isinstance(e.__cause__, MetaDamaged):
            return self.unavailable(e)
        try:
            rows = [str(r[0]) for r in self.db.execute("PRAGMA quick_check(5)")]
        except StoreCorrupt as q:
            rows = [str(q)]
        except DatabaseError as q:
            return self._error(q)  # locked, busy: no verdict either way
        if rows != ["ok"]:
            return self.unavailable(Exception("; ".join(rows)))
        return StoreError(f"index {self.path} could not be read just now ({e}); it is sound "
                          "(quick_check ok): try again")

    def moved(self) -> bool:
        """Whether the path now names another file than the one this connection reads (an
        index of ours replaced by a rename: the connection would answer from the old file)."""
        return file_id(self.path) != self.opened_file

    def check_integrity(self) -> str | None:
        """``PRAGMA quick_check``: ``None`` when the file is sound, else what is wrong.

        It reads every page (about 0.1 s per 50 MB here), so it runs when a read has failed or
        the caller asks (``status(deep=True)``), not on every open.
        """
        try:
            rows = [r[0] for r in self.db.execute("PRAGMA quick_check(5)")]
        except DatabaseError as e:
            return str(e)
        return None if rows == ["ok"] else "; ".join(str(r) for r in rows)

    def close(self) -> None:
        with contextlib.suppress(DatabaseError):  # pragma: no cover
            self.db.close()

    # ------------------------------------------------------------------ transactions

    def begin(self) -> None:
        """Start a write transaction; a lock held too long by another process is a StoreError."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except OperationalError as e:
            raise self._error(e) from e

    def commit(self) -> None:
        self.db.execute("COMMIT")

    def rollback(self) -> None:
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction: committed when the block ends, rolled back if it raises."""
        self.begin()
        try:
            yield
        except BaseException:
            self.rollback()
            raise
        self.commit()

    # ------------------------------------------------------------------ meta and files

    def get_meta(self) -> dict[str, Any] | None:
        """The index meta; a row that is not a JSON object is damage (the issue saw ``files``
        rows in ``meta``), reported as SQLite reports a malformed page so that a sync rebuilds
        instead of every face failing on ``json.loads``."""
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
        if not row:
            return None
        try:
            meta = json.loads(row[0])
        except (TypeError, ValueError) as e:
            meta = e
        if not isinstance(meta, dict):
            raise MetaDamaged(f"database disk image is malformed (index meta is not a JSON "
                              f"object: {str(row[0])[:40]!r})")
        return meta

    def set_meta(self, meta: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (META_KEY, json.dumps(meta, sort_keys=True)),
        )

    def files(self) -> dict[str, FileRow]:
        rows = self.db.execute(
            "SELECT path, source, hash, mtime, size, bad_lines, warnings FROM files")
        return {r[0]: FileRow(*r) for r in rows}

    def file_signatures(self) -> dict[str, tuple[int, int, str]]:
        """``path → (mtime, size, hash)``: all a sync's "changed?" test needs, as plain tuples
        (building a :class:`FileRow` per file was a fifth of a no-op sync of 10k files)."""
        # fetchall: the rows in one C call, not one Python-level __next__ each (a third faster)
        rows = self.db.execute("SELECT path, mtime, size, hash FROM files").fetchall()
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def delete_files(self, paths: Sequence[str]) -> None:
        """Remove files and every row derived from them (call inside a transaction).

        FTS rows are deleted by rowid (they share the chunk's rowid, migration 6): deleting by
        the unindexed ``id`` column scanned the whole FTS table once per file.
        """
        for i in range(0, len(paths), 500):
            part = list(paths[i : i + 500])
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT rowid, id FROM chunks WHERE path IN ({marks})", part).fetchall()
            self._delete_chunk_rows([r[0] for r in rows], [r[1] for r in rows])
            self.db.execute(f"DELETE FROM files WHERE path IN ({marks})", part)
            self.db.execute(f"DELETE FROM skipped_files WHERE path IN ({marks})", part)
        self._matrix_cache = None

    def _delete_chunk_rows(self, rowids: list[int], ids: list[str]) -> None:
        if self.vec_available and self._vec_dims and ids:
            # one point delete per id: vec0 answers ``id = ?`` from its id index, but scans the
            # whole table for ``id IN (...)`` (500 ids: 8 ms against 480 ms at 80k rows)
            self.db.executemany("DELETE FROM chunks_vec WHERE id = ?", [(i,) for i in ids])
        for i in range(0, len(rowids), 500):
            part = rowids[i : i + 500]
            marks = ",".join("?" * len(part))
            if self.fts_available:
                for table in TABLES:
                    self.db.execute(f"DELETE FROM {table} WHERE rowid IN ({marks})", part)
            self.db.execute(f"DELETE FROM chunk_blocks WHERE chunk_rowid IN ({marks})", part)
            self.db.execute(f"DELETE FROM chunks WHERE rowid IN ({marks})", part)

    def replace_files(self, items: Sequence[tuple[FileRow, Sequence[StoredChunk], Sequence[str]]]
                      ) -> None:
        """Replace all rows of each file with its chunks, in batches (inside a transaction).

        The old rows go by rowid; the new chunks get consecutive rowids that their FTS rows
        share, and every table is written with one ``executemany``.
        """
        if not items:
            return
        self.delete_files([f.path for f, _, _ in items])
        now = now_ms()
        top = self.db.execute("SELECT max(rowid) FROM chunks").fetchone()[0] or 0
        chunk_rows: list[tuple[Any, ...]] = []
        fts_rows: list[tuple[Any, ...]] = []
        bigram_rows: list[tuple[Any, ...]] = []
        vec_rows: list[tuple[str, bytes]] = []
        block_rows: list[tuple[int, int, bytes]] = []
        dims: int | None = None
        for _, chunks, bigram_texts in items:
            for c, bi in zip(chunks, bigram_texts, strict=True):
                top += 1
                emb = None if c.embedding is None else _blob(c.embedding)
                chunk_rows.append((top, c.id, c.path, c.source, c.start_line, c.end_line, c.hash,
                                   c.model, c.text, emb, now))
                fts_rows.append((top, c.text, c.id, c.path, c.source, c.model, c.start_line,
                                 c.end_line))
                bigram_rows.append((top, bi, c.id, c.source))
                if emb is not None and c.embedding is not None:
                    dims = len(c.embedding)
                    vec_rows.append((c.id, emb))
                if c.blocks is not None and len(c.blocks):
                    block_rows.append((top, len(c.blocks), _blob(c.blocks)))
        self.db.executemany(
            "INSERT INTO chunks(rowid, id, path, source, start_line, end_line, hash, model, text,"
            " embedding, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)", chunk_rows)
        self.db.executemany("INSERT INTO chunk_blocks(chunk_rowid, n, vectors) VALUES (?,?,?)",
                            block_rows)
        if vec_rows and self.vec_available and dims:
            self._ensure_vec_table(dims)
            self.db.executemany("INSERT INTO chunks_vec(id, embedding) VALUES (?, ?)", vec_rows)
        if self.fts_available:
            self.db.executemany(
                f"INSERT INTO {REFERENCE_TABLE}(rowid, text, id, path, source, model, start_line,"
                " end_line) VALUES (?,?,?,?,?,?,?,?)", fts_rows)
            self.db.executemany(
                f"INSERT INTO {BIGRAM_TABLE}(rowid, text, id, source) VALUES (?,?,?,?)",
                bigram_rows)
        self.db.executemany(
            "INSERT INTO files(path, source, hash, mtime, size, bad_lines, warnings)"
            " VALUES (?,?,?,?,?,?,?) ON CONFLICT(path) DO UPDATE SET source=excluded.source,"
            " hash=excluded.hash, mtime=excluded.mtime, size=excluded.size,"
            " bad_lines=excluded.bad_lines, warnings=excluded.warnings",
            [(f.path, f.source, f.hash, f.mtime, f.size, f.bad_lines, f.warnings)
             for f, _, _ in items])
        self._matrix_cache = None

    # ------------------------------------------------------------------ skipped files

    def skipped(self) -> dict[str, SkippedRow]:
        """Files that could not be read at their last sync, with the stat they had then."""
        rows = self.db.execute(
            "SELECT path, source, mtime, size, ctime, reason FROM skipped_files")
        return {r[0]: SkippedRow(*r) for r in rows}

    def set_skipped(self, rows: Sequence[SkippedRow]) -> None:
        """Remember skipped files (their indexed rows, if any, are removed first)."""
        if not rows:
            return
        self.delete_files([r.path for r in rows])
        self.db.executemany(
            "INSERT INTO skipped_files(path, source, mtime, size, ctime, reason)"
            " VALUES (?,?,?,?,?,?)",
            [(r.path, r.source, r.mtime, r.size, r.ctime, r.reason) for r in rows])

    def touch_files(self, rows: Sequence[tuple[str, int, int]]) -> None:
        """Record new ``(path, mtime, size)`` for files whose content hash did not change."""
        self.db.executemany("UPDATE files SET mtime = ?, size = ? WHERE path = ?",
                            [(m, sz, p) for p, m, sz in rows])

    def _ensure_vec_table(self, dims: int) -> None:
        if self._vec_dims == dims:
            return
        if self._vec_dims is not None:
            self.db.execute("DROP TABLE IF EXISTS chunks_vec")
        self.db.execute(
            "CREATE VIRTUAL TABLE chunks_vec USING vec0("
            f"id TEXT PRIMARY KEY, embedding float[{int(dims)}] distance_metric=cosine)"
        )
        self._vec_dims = dims

    # ------------------------------------------------------------------ embedding cache

    def cache_get(self, provider: str, model: str, key: str,
                  hashes: Iterable[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        hs = list(dict.fromkeys(hashes))
        for i in range(0, len(hs), 400):
            part = hs[i : i + 400]
            rows = self.db.execute(
                "SELECT hash, embedding FROM embedding_cache WHERE provider = ? AND model = ?"
                f" AND provider_key = ? AND hash IN ({','.join('?' * len(part))})",
                [provider, model, key, *part],
            )
            for h, b in rows:
                v = _vec(b)
                if v is not None and v.size:
                    out[h] = v
        return out

    def cache_put(self, provider: str, model: str, key: str,
                  items: Iterable[tuple[str, np.ndarray]]) -> None:
        now = now_ms()
        self.db.executemany(
            "INSERT INTO embedding_cache(provider, model, provider_key, hash, embedding, dims,"
            " updated_at) VALUES (?,?,?,?,?,?,?) ON CONFLICT(provider, model, provider_key, hash)"
            " DO UPDATE SET embedding=excluded.embedding, dims=excluded.dims,"
            " updated_at=excluded.updated_at",
            [(provider, model, key, h, _blob(v), int(v.size), now) for h, v in items],
        )

    def cache_prune(self, max_entries: int | None) -> int:
        if not max_entries:
            return 0
        n = self.db.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
        if n <= max_entries:
            return 0
        self.db.execute(
            "DELETE FROM embedding_cache WHERE rowid IN (SELECT rowid FROM embedding_cache"
            " ORDER BY updated_at ASC LIMIT ?)", (n - max_entries,))
        return n - max_entries

    def cache_count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM embedding_cache").fetchone()[0])

    def seed_cache_from(self, other: Path) -> int:
        """Copy another index's embedding cache (used when a rebuild starts aside)."""
        if not other.exists():
            return 0
        try:
            self.db.execute("ATTACH DATABASE ? AS old", (str(other),))
        except DatabaseError:
            return 0
        try:
            self.db.execute(
                "INSERT OR IGNORE INTO embedding_cache SELECT provider, model, provider_key, hash,"
                " embedding, dims, updated_at FROM old.embedding_cache")
            return int(self.db.execute("SELECT changes()").fetchone()[0])
        except DatabaseError:
            return 0
        finally:
            self.db.execute("DETACH DATABASE old")

    # ------------------------------------------------------------------ reading

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for source, n in self.db.execute("SELECT source, count(*) FROM files GROUP BY source"):
            out.setdefault(source, {"files": 0, "chunks": 0})["files"] = n
        for source, n in self.db.execute("SELECT source, count(*) FROM chunks GROUP BY source"):
            out.setdefault(source, {"files": 0, "chunks": 0})["chunks"] = n
        return out

    def chunk_count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM chunks").fetchone()[0])

    def _rows_of_chunks(self, select: str, ids: Iterable[str]) -> Iterator[Any]:
        """The rows of ``select`` (a query over ``chunks c`` ending where its ``WHERE`` goes)
        for the chunk ids ``ids``, each id once, 500 to a statement (SQLite's bound on
        parameters)."""
        idl = list(dict.fromkeys(ids))
        for i in range(0, len(idl), 500):
            part = idl[i : i + 500]
            yield from self.db.execute(
                f"{select} WHERE c.id IN ({','.join('?' * len(part))})", part).fetchall()

    def chunk_rows(self, ids: Iterable[str]) -> dict[str, ChunkRow]:
        return {r[0]: ChunkRow(*r) for r in self._rows_of_chunks(_CHUNK_ROWS, ids)}

    def block_vectors(self, ids: Iterable[str]) -> dict[str, np.ndarray]:
        """``chunk id → its blocks' vectors`` (``n × dims``) for the chunks of ``ids`` that
        have them (migration 8): what the vector leg's best-block score reads. A row whose blob
        is not ``n`` whole float32 vectors (a damaged index) is left out: its chunk keeps its
        own cosine, and the next rebuild writes it again."""
        rows = self._rows_of_chunks("SELECT c.id, b.n, b.vectors FROM chunk_blocks b"
                                    " JOIN chunks c ON c.rowid = b.chunk_rowid", ids)
        return {cid: np.frombuffer(blob, dtype=np.float32).reshape(int(n), -1)
                for cid, n, blob in rows
                if isinstance(n, int) and n > 0 and isinstance(blob, bytes) and blob
                and len(blob) % (4 * n) == 0}

    def block_count(self) -> int:
        """How many block vectors the index holds."""
        return int(self.db.execute("SELECT coalesce(sum(n), 0) FROM chunk_blocks").fetchone()[0])

    def chunk_counts(self, needle: str | None = None) -> dict[str, tuple[int, int]]:
        """``path → (chunks, chunks containing needle)`` by one SQL pass: a page listing 10k
        files never loads 133k chunk texts into Python. ``needle`` matches case-folded text
        (``str.casefold``, as Python's ``in`` would), so ``ß``/``SS`` and ``连接池`` work."""
        if not needle:
            rows = self.db.execute("SELECT path, count(*), 0 FROM chunks GROUP BY path")
        else:
            self.db.create_function("mw_casefold", 1, str.casefold, deterministic=True)
            rows = self.db.execute(
                "SELECT path, count(*), sum(instr(mw_casefold(text), ?) > 0) FROM chunks"
                " GROUP BY path", (needle.casefold(),))
        return {r[0]: (int(r[1]), int(r[2] or 0)) for r in rows.fetchall()}

    def chunks_for_path(self, path: str) -> list[ChunkRow]:
        rows = self.db.execute(
            f"{_CHUNK_ROWS} WHERE c.path = ? ORDER BY c.start_line, c.end_line", (path,))
        return [ChunkRow(*r) for r in rows]

    def all_chunks(self) -> list[ChunkRow]:
        rows = self.db.execute(f"{_CHUNK_ROWS} ORDER BY c.path, c.start_line, c.end_line")
        return [ChunkRow(*r) for r in rows]

    def statement_chunks(self) -> list[tuple[str, str, int, str, int]]:
        """Every chunk as ``(path, source, start_line, text, file mtime)``: what the supersession
        detector reads its statements from (``supersession.statements_of_chunks``)."""
        return self.db.execute(
            "SELECT c.path, c.source, c.start_line, c.text, COALESCE(f.mtime, 0) FROM chunks c"
            " LEFT JOIN files f ON f.path = c.path ORDER BY c.path, c.start_line").fetchall()

    def supersessions(self) -> list[Supersession]:
        """The stored supersessions (memoised until the index changes); none on an index built
        before migration 7 opened read-only."""
        try:
            (rows,) = self.read_memo(
                "SELECT old_path, old_line, new_path, new_line, subject FROM supersessions"
                " ORDER BY old_path, old_line", [()])
        except OperationalError:
            return []
        return [Supersession(*r) for r in rows]

    def marked_chunk_ids(self) -> frozenset[str]:
        """The chunks holding a line of a stored supersession, either side (memoised)."""
        try:
            (rows,) = self.read_memo(
                "SELECT c.id FROM supersessions s JOIN chunks c ON c.path = s.old_path AND"
                " s.old_line BETWEEN c.start_line AND c.end_line UNION SELECT c.id FROM"
                " supersessions s JOIN chunks c ON c.path = s.new_path AND"
                " s.new_line BETWEEN c.start_line AND c.end_line", [()])
        except OperationalError:
            return frozenset()
        return frozenset(r[0] for r in rows)

    def replace_supersessions(self, rows: Sequence[Supersession]) -> None:
        """Store ``rows`` in place of the old ones (inside a transaction)."""
        self.db.execute("DELETE FROM supersessions")
        self.db.executemany(
            "INSERT OR REPLACE INTO supersessions(old_path, old_line, new_path, new_line, subject)"
            " VALUES (?,?,?,?,?)",
            [(r.old_path, r.old_line, r.new_path, r.new_line, r.subject) for r in rows])

    def embeddings(self, sources: Sequence[str] | None = None) -> tuple[list[str], np.ndarray]:
        """Every chunk id with a vector, and the matrix of vectors (rows in the same order)."""
        clause, params = in_clause("source", sources)
        version = self.db.execute("PRAGMA data_version").fetchone()[0]
        key = hash((version, tuple(sources or ()), self.chunk_count()))
        if self._matrix_cache and self._matrix_cache[0] == key:
            return self._matrix_cache[1], self._matrix_cache[2]
        ids: list[str] = []
        blobs: list[bytes] = []
        for cid, b in self.db.execute(
            f"SELECT id, embedding FROM chunks WHERE embedding IS NOT NULL{clause}"
            " ORDER BY rowid", params):
            if b:
                ids.append(cid)
                blobs.append(b)
        # one buffer and one view, not one array per row and a vstack copy
        mat = (np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
               if blobs and len({len(b) for b in blobs}) == 1
               else np.vstack([np.frombuffer(b, dtype=np.float32) for b in blobs]) if blobs
               else np.zeros((0, 0), dtype=np.float32))
        self._matrix_cache = (key, ids, mat)
        return ids, mat

    # ------------------------------------------------------------------ reads

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """The rows of one read on this index's connection: the primitive the keyword leg's
        FTS5 SQL runs through (its text is :mod:`.keyword.reads`'s; the connection, the schema
        and how a read fails are the store's)."""
        return self.db.execute(sql, params).fetchall()

    def read_memo(self, sql: str, params_list: Sequence[Sequence[Any]]) -> list[list[Any]]:
        """:meth:`read` of ``sql`` with each of ``params_list``, remembered until the index
        changes (another connection's commit moves ``data_version``, ours ``total_changes``)."""
        self._memo.valid_for((int(self.db.execute("PRAGMA data_version").fetchone()[0]),
                              self.db.total_changes))
        return [self._memo.get_or((sql, tuple(params)), partial(self.read, sql, params))
                for params in params_list]

    # ------------------------------------------------------------------ vector sidecar

    def vector_stamp(self) -> str:
        """The stamp a fresh vector sidecar must carry (see :mod:`memory_core.storage.vectors`)."""
        return vectors.stamp_of(self.get_meta())

    def set_page_cache(self, mib: int = 0) -> None:
        """Give this connection a page cache of ``mib`` MiB (0: SQLite's default, ~2 MiB).

        Shrinking it frees the cached pages beyond the new size at once: a sync's writer sets
        its cache back before the sidecars' listings scan the whole ``chunks`` table."""
        self.db.execute(f"PRAGMA cache_size = {-int(mib) * 1024 if mib else -2000}")

    def refresh_vectors(self) -> bool:
        """Write ``<index>.vectors`` unless it is fresh; True when it was written.

        Called by sync after each commit (and on a no-op sync, so an index built before the
        sidecar existed gets one). Rows are in rowid order.
        """
        stamp = self.vector_stamp()
        if self._sidecar is None and vectors.is_sealed(self.path, stamp):
            return False  # the no-op sync's case, answered from the header alone
        current = vectors.load(self.path, stamp)
        if current is not None and current.intact():  # fresh, and not damaged: kept
            self._sidecar = current
            return False
        # streamed (vectors.refresh): the rows listed without their vectors, then only the
        # vectors the previous sidecar lacks read, a range of rowids at a time
        got = vectors.refresh(
            self.path, stamp,
            lambda: self.db.execute(
                "SELECT rowid, id, source, length(embedding), updated_at FROM chunks"
                " WHERE length(embedding) > 0 ORDER BY rowid"),
            lambda lo, hi: self.db.execute(
                "SELECT rowid, embedding FROM chunks WHERE rowid BETWEEN ? AND ?"
                " AND length(embedding) > 0 ORDER BY rowid", (lo, hi)))
        if got is None:
            return False  # mixed widths cannot form one matrix: searches use the blobs
        self._sidecar = got
        return True

    def vector_matrix(self, *, verify: bool = False) -> vectors.VectorMatrix | None:
        """The mapped sidecar if it matches the index's current state and is not found
        damaged, else ``None``. ``verify``: check all of it now (``status``)."""
        stamp = self.vector_stamp()
        vm = self._sidecar
        if vm is None or vm.stamp != stamp or (vm.checks is not None and vm.checks.damaged):
            vm = self._sidecar = vectors.load(self.path, stamp)
        if vm is not None and verify and not vm.intact():
            vm = self._sidecar = None
        return vm

    # ------------------------------------------------------------------ vector leg

    def vector_search(self, query: np.ndarray, limit: int,
                      sources: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """The ``limit`` chunks closest to ``query`` by cosine, as ``(id, cosine)``.

        One path is chosen by what the index has: the fast path, the mapped sidecar matrix
        (:mod:`memory_core.storage.vectors`), whenever it is fresh and intact; else the reference,
        sqlite-vec's KNN (:meth:`_vec0_search`); else, when the extension could not load or a
        source filter needs more rows than vec0 gives, the same exact product over the
        index's own blobs (:meth:`_blob_search`). All three rank identically
        (``tests/test_vectors_sidecar.py``, the leg's conformance test).
        """
        if limit <= 0:
            return []
        q = np.asarray(query, dtype=np.float32)
        found = self._sidecar_search([q], limit, sources)
        if found is not None:
            return found[0]
        if self.vec_available and self._vec_dims:
            hits = self._vec0_search(q, limit, sources)
            if hits is not None:
                return hits
        return self._blob_search(q, limit, sources)

    def _blob_search(self, q: np.ndarray, limit: int, sources: Sequence[str] | None
                     ) -> list[tuple[str, float]]:
        """Exact cosine over the ``embedding`` blobs, read into one matrix: the reference's
        fallback where sqlite-vec cannot answer (the extension did not load, vectors of mixed
        widths, a source filter past vec0's ``k`` cap)."""
        ids, mat = self.embeddings(sources)
        if not ids:
            return []
        if mat.shape[1] != q.size:
            raise StoreError(f"query has {q.size} dims, the index {mat.shape[1]}")
        norms = np.linalg.norm(mat, axis=1) * max(float(np.linalg.norm(q)), 1e-30)
        sims = (mat @ q) / np.where(norms == 0, 1.0, norms)
        sims = np.where(norms == 0, 0.0, sims)
        k = min(limit, len(ids))
        return [(ids[i], float(sims[i])) for i in smallest_first(-sims, k)]

    def vector_search_many(self, queries: Sequence[np.ndarray], limit: int,
                           sources: Sequence[str] | None = None) -> list[list[tuple[str, float]]]:
        """:meth:`vector_search` of each of ``queries``: the same answers, from one pass over
        the sidecar's matrix for the group when it is fresh
        (:meth:`~memory_core.storage.vectors.VectorMatrix.search_many`), else one query at a
        time."""
        found = (self._sidecar_search([np.asarray(q, dtype=np.float32) for q in queries],
                                      limit, sources)
                 if limit > 0 and queries else None)
        if found is not None:
            return found
        return [self.vector_search(q, limit, sources) for q in queries]

    def _sidecar_search(self, queries: list[np.ndarray], limit: int,
                        sources: Sequence[str] | None) -> list[list[tuple[str, float]]] | None:
        """The vector sidecar's answers to ``queries`` (float32), or ``None`` when there is no
        fresh one or it fails its checksums (the caller then asks the index itself)."""
        vm = self.vector_matrix()
        if vm is None or not vm.rows:
            return None
        for q in queries:
            if vm.dims != q.size:
                raise StoreError(f"query has {q.size} dims, the index {vm.dims}")
        try:
            return vm.search_many(queries, limit, sources)
        except vectors.SidecarDamaged:  # never a wrong hit: the index itself answers
            self._sidecar = None
            return None

    def _vec0_search(self, q: np.ndarray, limit: int, sources: Sequence[str] | None
                     ) -> list[tuple[str, float]] | None:
        """sqlite-vec KNN: ``k = limit`` (more only when a source filter drops rows); no
        per-query ``count(*)``. ``None`` when the filter needs more than vec0's k cap."""
        if self._vec_dims != q.size:
            raise StoreError(f"query has {q.size} dims, the index {self._vec_dims}")
        k = limit if not sources else limit * 8
        while True:
            rows = self.db.execute(
                "SELECT v.id, v.distance, c.source FROM chunks_vec v JOIN chunks c"
                " ON c.id = v.id WHERE v.embedding MATCH ? AND k = ? ORDER BY v.distance",
                (q.tobytes(), k)).fetchall()
            hits = [(r[0], 1.0 - float(r[1])) for r in rows if not sources or r[2] in sources]
            if len(hits) >= limit or len(rows) < k:
                return hits[:limit]
            if k >= _VEC0_MAX_K:
                return None
            k = min(_VEC0_MAX_K, k * 4)
