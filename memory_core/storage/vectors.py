"""The vector leg's matrix: a memory-mapped sidecar file beside the index, searched in numpy.

Why: asking sqlite-vec for the nearest rows of 110k vectors took ~0.9 s a query, and building a
numpy matrix from SQLite blobs ~3 s in each new process, where one matrix-vector product over a
contiguous float32 matrix takes ~40 ms. So every committed sync writes ``<index>.vectors``: one
file holding the L2-normalised float32 matrix, the chunks' rowids, ids and source codes, stamped
with the index's meta (``builtAt`` and ``generation``). A new process maps it in milliseconds;
a stamp that differs from the index's meta means the sidecar is stale and is not used (the
store falls back to sqlite-vec, or to a matrix read from the blobs).

A sync does not rebuild the matrix in memory (at 133k chunks that was ~4× the matrix, ~7 GB
at a million): :func:`refresh` streams a new file a few MB at a time, copying the rows the
previous sidecar holds from it (their checksums checked) and reading only the other rows'
vectors from the index, then renames it over the old one, which readers keep until then.

Search is exact (``argpartition`` + a stable sort of the top ``k``: the same order as a full
stable ``argsort``). There is no approximate index: exact search over the mapped matrix was
1.49x a bare numpy product at a million chunks and an HNSW graph measured no faster up to there
(docs/performance.md); past one machine the answer is a distributed engine, not a second one
in this process.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.indexfiles import IndexFiles
from .sidecar import (
    BlockReader,
    Checks,
    StreamWriter,
    id_column,
    ids_at,
    open_mapped,
    seal_now,
    sealed,
    source_codes,
)
from .sidecar import SidecarDamaged as SidecarDamaged  # the store catches it

if TYPE_CHECKING:
    import numpy as np
else:
    from ..base.lazy import numpy as np

MAGIC = b"MWVECS01"
#: A query's candidates are the rows scoring within ``SCORE_SLACK × dims`` of its ``limit``-th
#: score, by the kernel that picked them; the answer's scores then come from one kernel over
#: those rows (:meth:`VectorMatrix._ranked`). Two float32 dot products of unit vectors summed in
#: different orders differ by at most ``2·d·2⁻²⁴``: this is eight times that.
SCORE_SLACK = 16 * 2.0 ** -24
#: Most bytes of scores one grouped product holds (:meth:`VectorMatrix.search_many`): 64 MiB is
#: 126 queries at 133k rows, 12 at 1.33M.
GROUP_SCORES_BYTES = 64 << 20


def sidecar_path(db_path: Path) -> Path:
    """``<index>.vectors`` beside the index file."""
    return IndexFiles(db_path).vectors


def stamp_of(meta: dict[str, Any] | None) -> str:
    """What ties a sidecar to one committed state of the index (its meta)."""
    m = meta or {}
    return json.dumps([m.get("builtAt"), m.get("generation"), m.get("providerKey"),
                       m.get("vectorDims")])


@dataclass
class VectorMatrix:
    """A loaded sidecar: row ``i`` is chunk ``ids[i]`` (rowid ``rowids[i]``, ascending)."""

    stamp: str
    matrix: np.ndarray  # (n, d) float32, rows unit length (or zero)
    rowids: np.ndarray  # (n,) int64, ascending
    ids: np.ndarray  # (n,) bytes
    codes: np.ndarray  # (n,) uint8 index into ``sources``
    sources: list[str]
    checks: Checks | None = None

    @property
    def rows(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def dims(self) -> int:
        return int(self.matrix.shape[1]) if self.matrix.ndim == 2 else 0

    def intact(self) -> bool:
        """Whether the file is good (:meth:`~.common.sidecar.Checks.intact`)."""
        return self.checks is None or self.checks.intact()

    def search(self, query: np.ndarray, limit: int, sources: Sequence[str] | None = None
               ) -> list[tuple[str, float]]:
        """The ``limit`` rows closest to ``query`` by cosine, best first, as ``(id, cosine)``.

        Ties keep row (rowid) order, like a stable sort.
        Raises :class:`~.common.sidecar.SidecarDamaged` when the rows it reads fail their
        checksums (the caller answers from the index instead).
        """
        return self.search_many([query], limit, sources)[0]

    def search_many(self, queries: Sequence[np.ndarray], limit: int,
                    sources: Sequence[str] | None = None) -> list[list[tuple[str, float]]]:
        """:meth:`search` of each of ``queries``, the same answers, the matrix read once per
        :data:`GROUP_SCORES_BYTES` of scores instead of once per query (one matrix-matrix
        product: at 133k rows a pass over the 200 MB matrix is most of a query's vector leg).

        A product's scores may differ from a matrix-vector product's in the last bits, so they
        only pick each query's candidates (every row within :data:`SCORE_SLACK` ``× dims`` of
        its ``limit``-th score, more than the two kernels' worst difference); the candidates
        are then scored again, by one query at a time over their rows (:meth:`_ranked`), which
        is what every answer's scores and order come from, grouped or not.
        """
        n = self.rows
        out: list[list[tuple[str, float]]] = [[] for _ in queries]
        if limit <= 0 or n == 0:
            return out
        unit: list[tuple[int, np.ndarray]] = []
        for j, query in enumerate(queries):
            q = np.asarray(query, dtype=np.float32).reshape(-1)
            norm = float(np.linalg.norm(q))
            if norm != 0 and np.isfinite(norm):
                unit.append((j, q / norm))
        mask = None
        if sources:
            wanted = [i for i, s in enumerate(self.sources) if s in sources]
            if len(wanted) < len(self.sources):
                mask = np.isin(self.codes, np.asarray(wanted, dtype=np.uint8))
        if not unit:
            return out
        if self.checks is not None:
            self.checks.verify("matrix")  # once per mapping: ~55 ms at 133k × 384
        allowed = n if mask is None else int(mask.sum())
        if allowed == 0:
            return out
        k = min(limit, allowed)
        step = max(1, GROUP_SCORES_BYTES // (4 * n))
        for lo in range(0, len(unit), step):
            part = unit[lo:lo + step]
            if len(part) == 1:
                sims = (self.matrix @ part[0][1])[None, :]
            else:
                sims = np.stack([q for _, q in part]) @ self.matrix.T
            if mask is not None:
                sims[:, ~mask] = -np.inf
            for (j, q), row in zip(part, sims, strict=True):
                rows = _candidates(row, k, self.dims)
                out[j] = self._ranked(rows if mask is None else rows[mask[rows]], q, k)
        return out

    def _ranked(self, rows: np.ndarray, q: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The best ``k`` of ``rows`` for the unit query ``q``, ties in row order.

        Each row's cosine is its own sum in float64, rounded to float32: a BLAS product's value
        for a row depends on where the row falls in the blocks and threads the kernel splits
        the matrix into (a row scored among 250 candidates or among 133k rows, alone or beside
        other queries, differed in the last bit), so an answer's scores and order would depend
        on which rows and queries were searched with it. This does not, and it is the correctly
        rounded cosine."""
        rows = np.sort(rows)
        sims = np.einsum("ij,j->i", self.matrix[rows], q, dtype=np.float64).astype(np.float32)
        order = np.lexsort((rows, -sims))[:k]
        return list(zip(ids_at(self.ids, rows[order]), sims[order].tolist(), strict=True))


def _candidates(sims: np.ndarray, k: int, dims: int) -> np.ndarray:
    """The rows whose score is within :data:`SCORE_SLACK` ``× dims`` of the ``k``-th best of
    ``sims``, a ``(n,)`` row of scores of ``dims``-dimensional unit vectors (every row when
    there are at most ``k``, or when fewer pass: scores that are not numbers)."""
    n = int(sims.shape[0])
    if k >= n:
        return np.arange(n)
    kth = float(np.partition(sims, n - k)[n - k])
    rows = np.flatnonzero(sims >= kth - SCORE_SLACK * dims)
    return rows if rows.size >= k else np.arange(n)


def is_sealed(db_path: Path, stamp: str) -> bool:
    """Whether ``<index>.vectors`` is fresh for ``stamp`` and untouched since it was written
    (:func:`memory_core.storage.sidecar.sealed`): a no-op sync keeps it without mapping it."""
    return sealed(sidecar_path(db_path), MAGIC, stamp)


def load(db_path: Path, stamp: str | None = None) -> VectorMatrix | None:
    """Map ``<index>.vectors``; ``None`` if absent, damaged or stale.

    ``stamp``: the index's current :func:`stamp_of`; a sidecar with another stamp is stale.
    The rowids, ids and source codes are verified here (a few MB); the matrix at its first
    exact search (:meth:`VectorMatrix.search`); :meth:`VectorMatrix.intact` judges it all.
    """
    got = open_mapped(sidecar_path(db_path), MAGIC, stamp)
    if got is None:
        return None
    header, buf, checks = got
    try:
        n, d, w = int(header["rows"]), int(header["dims"]), int(header["idWidth"])
        o = header["offsets"]
        for key in ("rowids", "codes", "ids"):
            checks.verify(key)
        mat = buf[o["matrix"] : o["matrix"] + n * d * 4].view(np.float32).reshape(n, d)
        rowids = buf[o["rowids"] : o["rowids"] + n * 8].view(np.int64)
        codes = buf[o["codes"] : o["codes"] + n]
        ids = buf[o["ids"] : o["ids"] + n * w].view(f"S{w}") if w else np.zeros(n, "S1")
    except (OSError, ValueError, KeyError, TypeError):  # SidecarDamaged is a ValueError
        return None
    return VectorMatrix(header["stamp"], mat, rowids, ids, codes, list(header["sources"]),
                        checks=checks)


#: Matrix bytes handled at a time when a sidecar is written: a write's working set (16 blocks).
STREAM_BYTES = 1 << 22


@dataclass
class Rows:
    """What a sidecar is to hold, in rowid order, before any vector is read: each row's rowid,
    chunk id (fixed-width ASCII), source code into ``sources`` and width; ``written_ms``: when
    each row was written (``None``: unknown, so no row may be taken from an older sidecar)."""

    rowids: np.ndarray  # (n,) int64, ascending
    ids: np.ndarray  # (n,) S<width>
    codes: np.ndarray  # (n,) uint8
    sources: list[str]
    dims: int
    written_ms: np.ndarray | None = None


def rows_of(listing: Iterable[tuple[int, str, str, int, int]], batch: int = 8192
            ) -> Rows | None:
    """:class:`Rows` from ``(rowid, id, source, vector bytes, written ms)`` tuples in rowid
    order, read ``batch`` at a time (a million rows never become a million Python tuples at
    once); ``None`` when the vectors differ in width (no one matrix can hold them)."""
    it = iter(listing)
    fetch = getattr(listing, "fetchmany", None)  # a cursor: no Python step per row
    rowids, ids, codes, written = [], [], [], []
    code_of: dict[str, int] = {}
    widths: set[int] = set()
    while chunk := (fetch(batch) if fetch is not None else list(islice(it, batch))):
        r, i, src, nb, wr = zip(*chunk, strict=True)
        rowids.append(np.asarray(r, np.int64))
        ids.append(np.asarray([x.encode("ascii") for x in i], dtype="S"))
        codes.append(np.asarray([code_of.setdefault(x, len(code_of)) for x in src], np.int64))
        written.append(np.asarray(wr, np.int64))
        widths.update(nb)
    if len(widths) > 1:
        return None
    nbytes = widths.pop() if widths else 0
    if nbytes % 4:
        raise ValueError(f"vectors of {nbytes} bytes are not float32")
    names = sorted(code_of)
    order = np.asarray([names.index(x) for x in code_of], np.uint8)  # first seen -> sorted
    cat = np.concatenate
    return Rows(cat(rowids) if rowids else np.zeros(0, np.int64),
                cat(ids) if ids else np.zeros(0, "S1"),
                order[cat(codes)] if codes else np.zeros(0, np.uint8), names, nbytes // 4,
                cat(written) if written else np.zeros(0, np.int64))


def _normalised(mat: np.ndarray) -> np.ndarray:
    """Rows L2-normalised (zero rows stay zero); row by row, so any cut of the matrix gives
    the same bytes as the whole."""
    mat = np.ascontiguousarray(mat, dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    return np.ascontiguousarray((mat / np.where(norms == 0, 1.0, norms)).astype(np.float32))


def write(db_path: Path, stamp: str, rowids: np.ndarray, ids: Sequence[str],
          sources: Sequence[str], matrix: np.ndarray) -> VectorMatrix | None:
    """Write the sidecar of an in-memory matrix atomically; returns
    the loaded result. ``matrix`` rows are normalised here (zero rows stay zero), a few MB at a
    time (:data:`STREAM_BYTES`), beside the caller's matrix."""
    n = len(ids)
    mat = np.asarray(matrix, dtype=np.float32).reshape(n, -1) if n else np.zeros((0, 0),
                                                                                 np.float32)
    names, codes = source_codes(sources)
    w, id_bytes = id_column(ids)
    rows = Rows(np.asarray(rowids, dtype=np.int64),
                np.frombuffer(id_bytes, f"S{w}") if w else np.zeros(n, "S1"), codes, names,
                int(mat.shape[1]))
    return _write_rows(db_path, stamp, rows, lambda a, b: mat[a:b], seal_now(), None)


def refresh(db_path: Path, stamp: str,
            listing: Callable[[], Iterable[tuple[int, str, str, int, int]]],
            vectors_between: Callable[[int, int], Iterable[tuple[int, bytes]]]
            ) -> VectorMatrix | None:
    """Write the sidecar for the index's current rows, streaming: rows the previous sidecar
    already holds (same rowid and id, written before it was sealed, same provider and dims)
    are copied from it block by block, their checksums checked; only the others' vectors are
    read from the index. A sync's memory is then a few blocks plus the per-row columns, not a
    multiple of the matrix. The bytes are those of a sidecar written whole.

    ``listing()``: ``(rowid, id, source, vector bytes, written ms)`` of every row with a
    vector, in rowid order; ``vectors_between(lo, hi)``: ``(rowid, blob)`` of those rows with
    ``lo <= rowid <= hi``, in rowid order. ``None`` (nothing written) when the vectors differ
    in width.
    """
    seal = seal_now()  # before the rows are listed: any row written after has a later time
    rows = rows_of(listing())
    if rows is None:
        return None
    d = rows.dims

    def fresh(a: int, b: int) -> np.ndarray:
        got = list(vectors_between(int(rows.rowids[a]), int(rows.rowids[b - 1])))
        if [r for r, _ in got] != rows.rowids[a:b].tolist() or any(
                len(v) != 4 * d for _, v in got):
            raise ValueError("the index changed while its vector sidecar was written")
        return np.frombuffer(b"".join(v for _, v in got), np.float32).reshape(b - a, d)

    old = _previous(db_path, stamp, rows)
    try:
        return _write_rows(db_path, stamp, rows, fresh, seal, old)
    except SidecarDamaged:  # the old file's blocks: nothing of it is used
        if old is not None:
            old[1].close()
            old = None
        return _write_rows(db_path, stamp, rows, fresh, seal, None)
    finally:
        if old is not None:
            old[1].close()


def _lineage(stamp: str) -> list[Any] | None:
    """The stamp's provider key and dims: what must match for a sidecar's rows to be reused
    (its build time and generation move at every sync; a rebuild writes every row anew, so
    none is older than the previous sidecar's seal)."""
    try:
        m = json.loads(stamp)
    except ValueError:
        return None
    return [m[2], m[3]] if isinstance(m, list) and len(m) == 4 else None


def _previous(db_path: Path, stamp: str, rows: Rows
              ) -> tuple[np.ndarray, BlockReader] | None:
    """Where each of ``rows`` is in the previous sidecar (-1: not there, read it from the
    index), and a reader of its matrix; ``None`` when it has nothing to give."""
    if rows.written_ms is None or not rows.rowids.size:
        return None
    old = load(db_path)  # any stamp: the previous sync's is expected
    if (old is None or old.checks is None or old.checks.seal_ns is None or not old.rows
            or old.dims != rows.dims or _lineage(old.stamp) is None
            or _lineage(old.stamp) != _lineage(stamp)):
        return None
    pos = np.minimum(np.searchsorted(old.rowids, rows.rowids), old.rows - 1)
    # written before the old file was sealed: not a row deleted and written again since with
    # the same rowid and id (its vector could differ in the last bits)
    same = ((np.asarray(old.rowids)[pos] == rows.rowids) & (np.asarray(old.ids)[pos] == rows.ids)
            & (rows.written_ms < int(old.checks.seal_ns) // 10**6))
    if not same.any():
        return None
    reader = BlockReader.open(old.checks, "matrix")
    return None if reader is None else (np.where(same, pos, -1), reader)


def _runs(kept: np.ndarray | None, n: int, step: int) -> Iterator[tuple[int, int, int]]:
    """``(lo, hi, old)``: rows ``[lo, hi)`` (at most ``step``) either all from the previous
    sidecar, consecutive there from row ``old``, or all to read (``old`` = -1)."""
    if kept is None or not n:
        cuts = [0, n]
    else:
        new = kept < 0
        cut = (new[1:] != new[:-1]) | (~new[1:] & (kept[1:] != kept[:-1] + 1))
        cuts = [0, *(np.flatnonzero(cut) + 1).tolist(), n]
    for a, b in itertools.pairwise(cuts):
        for lo in range(a, b, step):
            yield lo, min(b, lo + step), -1 if kept is None else int(kept[lo])


def _write_rows(db_path: Path, stamp: str, rows: Rows,
                fresh: Callable[[int, int], np.ndarray], seal: int,
                old: tuple[np.ndarray, BlockReader] | None) -> VectorMatrix | None:
    """Stream the sidecar of ``rows`` to a temp file (the matrix :data:`STREAM_BYTES` at a
    time: from ``old`` where it has them, else ``fresh(lo, hi)``'s raw vectors, normalised),
    then rename it over the sidecar."""
    n, d = int(rows.rowids.size), rows.dims
    w = rows.ids.dtype.itemsize if n else 0
    header: dict[str, Any] = {"stamp": stamp, "rows": n, "dims": d, "idWidth": w,
                              "sources": rows.sources}
    sizes = {"matrix": n * d * 4, "rowids": n * 8, "codes": n, "ids": n * w}
    path = sidecar_path(db_path)
    with StreamWriter(path, MAGIC, header, sizes, seal) as out:
        for lo, hi, at in _runs(None if old is None else old[0], n,
                                max(1, STREAM_BYTES // max(1, 4 * d))):
            if at < 0:
                out.put("matrix", _normalised(fresh(lo, hi)).data)
            else:
                assert old is not None
                out.put("matrix", old[1].read(at * 4 * d, (at + hi - lo) * 4 * d))
        if old is not None:
            old[1].close()  # before the rename: no handle left on the file it replaces
        out.put("rowids", rows.rowids.astype("<i8").tobytes())
        out.put("codes", rows.codes.astype(np.uint8).tobytes())
        out.put("ids", rows.ids.tobytes() if w else b"")
        out.finish()
        out.commit()
    vm = load(db_path, stamp)
    if vm is not None and vm.checks is not None:
        vm.checks.written_here()  # a live index's next search needs no pass over the matrix
    return vm
