"""Bounded reads for browsing an index: a page of files, a sample of the embeddings.

Why: the workbench's Chunks page and Embedding map listed every file, counted every chunk and
read every embedding on each rerun; at a million chunks (100k files) that was seconds of SQL and
gigabytes of blobs per click (docs/performance.md, "The workbench at 1M"). These reads cost what
the page shows: one page of files and their chunk counts, or a fixed sample of the vectors (its
rowids taken from the vector sidecar, a mapped column, instead of a scan of the chunks table).
Read-only: nothing here writes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..storage.store import FileRow, Store

if TYPE_CHECKING:
    import numpy as np
else:
    from ..base.lazy import numpy as np

_FILE_COLUMNS = "path, source, hash, mtime, size, bad_lines, warnings"
#: Parameters per ``IN (…)`` list (SQLite's default limit is 32,766; small lists stay fast).
_BATCH = 500
#: Chunks read per step of a text scan, each step one progress report.
SCAN_ROWS = 50_000


@dataclass(frozen=True)
class FilePage:
    """One page of the files of an index, in (source, path) order."""

    #: files of the index by source (every source, whatever the filter)
    sources: dict[str, int]
    #: files the filter keeps (the pages' total)
    total: int
    files: list[FileRow]
    #: chunks of each file of the page
    chunks: dict[str, int]


def file_page(store: Store, source: str | None = None, offset: int = 0, limit: int = 200,
              paths: Sequence[str] | None = None) -> FilePage:
    """Files ``offset``..``offset + limit`` in (source, path) order, with their chunk counts.

    ``source``: only that source's files. ``paths``: only these files (a text filter's matches,
    in the order given). The listing is one indexed read of the page, not of every file.
    """
    sources = {str(s): int(n) for s, n in store.read(
        "SELECT source, count(*) FROM files GROUP BY source ORDER BY source")}
    if paths is not None:
        total = len(paths)
        rows = file_rows(store, list(paths[offset : offset + limit]))
    else:
        total = sources.get(source, 0) if source else sum(sources.values())
        where, params = ("WHERE source = ?", [source]) if source else ("", [])
        rows = [FileRow(*r) for r in store.read(
            f"SELECT {_FILE_COLUMNS} FROM files {where} ORDER BY source, path LIMIT ? OFFSET ?",
            [*params, max(0, limit), max(0, offset)])]
    return FilePage(sources, total, rows, chunk_counts_of(store, [f.path for f in rows]))


def file_rows(store: Store, paths: Sequence[str]) -> list[FileRow]:
    """The index's rows of ``paths`` (in that order; paths it does not list left out)."""
    got: dict[str, FileRow] = {}
    for i in range(0, len(paths), _BATCH):
        part = list(paths[i : i + _BATCH])
        for r in store.read(f"SELECT {_FILE_COLUMNS} FROM files WHERE path IN "
                            f"({','.join('?' * len(part))})", part):
            got[r[0]] = FileRow(*r)
    return [got[p] for p in paths if p in got]


def chunk_counts_of(store: Store, paths: Sequence[str]) -> dict[str, int]:
    """Chunks of each of ``paths`` (0 for a file without any), by the chunks' path index."""
    out = dict.fromkeys(paths, 0)
    ps = list(out)
    for i in range(0, len(ps), _BATCH):
        part = ps[i : i + _BATCH]
        for p, n in store.read(f"SELECT path, count(*) FROM chunks WHERE path IN "
                               f"({','.join('?' * len(part))}) GROUP BY path", part):
            out[p] = int(n)
    return out


ScanProgress = Callable[[int, int], None]


def text_matches(store: Store, needle: str, progress: ScanProgress | None = None
                 ) -> dict[str, tuple[str, int, int]]:
    """``path → (source, chunks, chunks containing needle)`` for the files with a match.

    ``needle`` matches case-folded text (``str.casefold``, as Python's ``in`` would, like
    :meth:`Store.chunk_counts`). It is a scan of every chunk's text, done a range of rowids at
    a time so that ``progress(done, total)`` can be shown (seconds at a million chunks).
    """
    store.db.create_function("mw_casefold", 1, str.casefold, deterministic=True)
    lo, hi = store.read("SELECT min(rowid), max(rowid) FROM chunks")[0]
    out: dict[str, tuple[str, int, int]] = {}
    if lo is None:
        return out
    folded = needle.casefold()
    span = int(hi) - int(lo) + 1
    for start in range(int(lo), int(hi) + 1, SCAN_ROWS):
        for path, source, n, m in store.read(
                "SELECT path, source, count(*), sum(instr(mw_casefold(text), ?1) > 0)"
                " FROM chunks WHERE rowid BETWEEN ?2 AND ?3 GROUP BY path",
                (folded, start, start + SCAN_ROWS - 1)):
            _, n0, m0 = out.get(path, (source, 0, 0))
            out[path] = (source, n0 + int(n), m0 + int(m or 0))
        if progress is not None:
            progress(min(span, start - int(lo) + SCAN_ROWS), span)
    return {p: v for p, v in out.items() if v[2]}


@dataclass
class EmbeddingSample:
    """A fixed sample of the chunks with an embedding, in rowid order."""

    ids: list[str]
    matrix: np.ndarray  # (len(ids), dims) float32, the stored vectors (not re-normalised)
    #: chunks with an embedding in the whole index
    total: int


def embedding_sample(store: Store, max_points: int, seed: int = 0,
                     progress: ScanProgress | None = None) -> EmbeddingSample:
    """Up to ``max_points`` chunks' embeddings: all of them when there are no more, else a
    seeded uniform sample of them (the same one for the same index on every call).

    The sample is the one :meth:`Store.embeddings` followed by ``rng.choice`` would give (same
    positions in rowid order), read without reading the other rows' vectors: the rowids come
    from the vector sidecar when it is fresh, else from one scan of the chunks' rowids.
    ``progress(done, total)`` after each batch of rows read (seconds on a cold 18 GB index).
    """
    vm = store.vector_matrix()
    if vm is not None:
        rowids = np.asarray(vm.rowids, dtype=np.int64)
    else:
        rowids = np.fromiter((r for (r,) in store.read(
            "SELECT rowid FROM chunks WHERE length(embedding) > 0 ORDER BY rowid")),
            dtype=np.int64)
    n = int(rowids.size)
    if n > max_points:
        pick = np.sort(np.random.default_rng(seed).choice(n, max_points, replace=False))
        rowids = rowids[pick]
    ids, blobs = _vectors_by_rowid(store, rowids.tolist(), progress)
    return EmbeddingSample(ids, _stack(blobs), n)


def _vectors_by_rowid(store: Store, rowids: list[int], progress: ScanProgress | None
                      ) -> tuple[list[str], list[bytes]]:
    got: dict[int, tuple[str, bytes]] = {}
    for i in range(0, len(rowids), _BATCH):
        if progress is not None:
            progress(i, len(rowids))
        part = rowids[i : i + _BATCH]
        for r, cid, b in store.read(
                f"SELECT rowid, id, embedding FROM chunks WHERE rowid IN "
                f"({','.join('?' * len(part))}) AND length(embedding) > 0", part):
            got[int(r)] = (cid, b)
    kept = [got[r] for r in rowids if r in got]  # a row deleted meanwhile is left out
    return [c for c, _ in kept], [b for _, b in kept]


def _stack(blobs: list[bytes]) -> np.ndarray:
    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    if len({len(b) for b in blobs}) == 1:
        return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1).copy()
    return np.vstack([np.frombuffer(b, dtype=np.float32) for b in blobs])


def embeddings_of(store: Store, ids: Sequence[str]) -> dict[str, np.ndarray]:
    """The stored embedding of each of ``ids`` that has one (a hit the map's sample left out)."""
    out: dict[str, np.ndarray] = {}
    idl = list(dict.fromkeys(ids))
    for i in range(0, len(idl), _BATCH):
        part = idl[i : i + _BATCH]
        for cid, b in store.read(f"SELECT id, embedding FROM chunks WHERE id IN "
                                 f"({','.join('?' * len(part))}) AND length(embedding) > 0",
                                 part):
            out[cid] = np.frombuffer(b, dtype=np.float32).copy()
    return out
