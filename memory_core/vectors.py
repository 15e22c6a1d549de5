"""The vector leg's matrix: a memory-mapped sidecar file beside the index, searched in numpy.

Why: asking sqlite-vec for the nearest rows of 110k vectors took ~0.9 s a query, and building a
numpy matrix from SQLite blobs ~3 s in each new process, where one matrix-vector product over a
contiguous float32 matrix takes ~40 ms. So every committed sync writes ``<index>.vectors``: one
file holding the L2-normalised float32 matrix, the chunks' rowids, ids and source codes, stamped
with the index's meta (``builtAt`` and ``generation``). A new process maps it in milliseconds;
a stamp that differs from the index's meta means the sidecar is stale and is not used (the
store falls back to sqlite-vec, or to a matrix read from the blobs).

Search is exact (``argpartition`` + a stable sort of the top ``k``: the same order as a full
stable ``argsort``) by default. With :data:`ANN_MIN_ROWS` set (off by default: see there), from
that many rows on and when ``usearch`` is installed, an HNSW graph (``<index>.vectors.usearch``,
keyed by chunk rowid and updated incrementally at each sync) picks the candidates, whose scores
are then computed exactly from the matrix; ``benchmarks/bench_scale.py`` measures its recall@24
against exact search.
A source filter always uses the exact path.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common.indexfiles import IndexFiles, temp_beside
from .common.locations import env_int
from .common.sidecar import (
    Checks,
    id_column,
    ids_at,
    open_mapped,
    sealed,
    source_codes,
    write_file,
)
from .common.sidecar import SidecarDamaged as SidecarDamaged  # the store catches it
from .common.topk import smallest_first

if TYPE_CHECKING:
    import numpy as np
else:
    from .common.lazy import numpy as np

MAGIC = b"MWVECS01"
#: Rows from which the approximate index is used; 0 = never (the default). Measured on the
#: benchmark's 133k-row index (docs/performance.md), HNSW reached recall@24 of 0.50 (ef 256) and
#: 0.75 (ef 1024, slower than exact search), while exact search costs about one pass over the
#: matrix (~0.9× the bare numpy baseline): exact stays the default. ``MEMORY_CORE_ANN_MIN_ROWS``
#: turns it on for collections whose embeddings an HNSW graph serves well.
ANN_MIN_ROWS = 0
#: HNSW parameters (usearch defaults raised for recall).
ANN_CONNECTIVITY = 16
ANN_EXPANSION_ADD = 128
ANN_EXPANSION_SEARCH = 256


def ann_min_rows() -> int:
    """The configured threshold (environment override, else :data:`ANN_MIN_ROWS`)."""
    return env_int("MEMORY_CORE_ANN_MIN_ROWS", ANN_MIN_ROWS)


def sidecar_path(db_path: Path) -> Path:
    """``<index>.vectors`` beside the index file."""
    return IndexFiles(db_path).vectors


def ann_path(db_path: Path) -> Path:
    """``<index>.vectors.usearch``: the approximate index, when one is built."""
    return IndexFiles(db_path).ann


def stamp_of(meta: dict[str, Any] | None) -> str:
    """What ties a sidecar to one committed state of the index (its meta)."""
    m = meta or {}
    return json.dumps([m.get("builtAt"), m.get("generation"), m.get("providerKey"),
                       m.get("vectorDims")])


def _usearch() -> Any | None:
    try:
        from usearch.index import Index
    except ImportError:
        return None
    return Index


@dataclass
class VectorMatrix:
    """A loaded sidecar: row ``i`` is chunk ``ids[i]`` (rowid ``rowids[i]``, ascending)."""

    stamp: str
    matrix: np.ndarray  # (n, d) float32, rows unit length (or zero)
    rowids: np.ndarray  # (n,) int64, ascending
    ids: np.ndarray  # (n,) bytes
    codes: np.ndarray  # (n,) uint8 index into ``sources``
    sources: list[str]
    ann: Any | None = None
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

    def search(self, query: np.ndarray, limit: int, sources: Sequence[str] | None = None,
               *, exact: bool = False) -> list[tuple[str, float]]:
        """The ``limit`` rows closest to ``query`` by cosine, best first, as ``(id, cosine)``.

        Ties keep row (rowid) order, like a stable sort. ``exact`` bypasses the ANN index.
        Raises :class:`~.common.sidecar.SidecarDamaged` when the rows it reads fail their
        checksums (the caller answers from the index instead).
        """
        n = self.rows
        if limit <= 0 or n == 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        if norm == 0 or not np.isfinite(norm):
            return []
        q = q / norm
        mask = None
        if sources:
            wanted = [i for i, s in enumerate(self.sources) if s in sources]
            if len(wanted) < len(self.sources):
                mask = np.isin(self.codes, np.asarray(wanted, dtype=np.uint8))
        if self.ann is not None and mask is None and not exact:
            rows = self._ann_rows(q, limit)
            if rows is not None:
                if self.checks is not None:
                    self.checks.verify_items("matrix", rows, 4 * self.dims)
                sims = self.matrix[rows] @ q
                order = np.lexsort((rows, -sims))
                order = order[:limit]
                return list(zip(ids_at(self.ids, rows[order]), sims[order].tolist(),
                                strict=True))
        if self.checks is not None:
            self.checks.verify("matrix")  # once per mapping: ~55 ms at 133k × 384
        sims = self.matrix @ q
        if mask is not None:
            allowed = int(mask.sum())
            if allowed == 0:
                return []
            sims = np.where(mask, sims, -np.inf)
            k = min(limit, allowed)
        else:
            k = min(limit, n)
        order = smallest_first(-sims, k)
        return list(zip(ids_at(self.ids, order), sims[order].tolist(), strict=True))

    def _ann_rows(self, q: np.ndarray, limit: int) -> np.ndarray | None:
        if self.ann is None:
            return None
        k = min(limit, self.rows)
        try:
            res = self.ann.search(q, k)
        except Exception:  # a damaged graph: exact search is always right
            return None
        keys = np.asarray(res.keys, dtype=np.int64).reshape(-1)
        pos = np.searchsorted(self.rowids, keys)
        pos = np.clip(pos, 0, self.rows - 1)
        ok = self.rowids[pos] == keys
        rows = np.unique(pos[ok])
        if rows.size < k:  # the graph lost rows (a concurrent rewrite): be exact
            return None
        return rows


def is_sealed(db_path: Path, stamp: str) -> bool:
    """Whether ``<index>.vectors`` is fresh for ``stamp`` and untouched since it was written
    (:func:`memory_core.common.sidecar.sealed`): a no-op sync keeps it without mapping it."""
    return sealed(sidecar_path(db_path), MAGIC, stamp)


def load(db_path: Path, stamp: str | None = None) -> VectorMatrix | None:
    """Map ``<index>.vectors`` (and its ANN index); ``None`` if absent, damaged or stale.

    ``stamp``: the index's current :func:`stamp_of`; a sidecar with another stamp is stale.
    The rowids, ids and source codes are verified here (a few MB); the matrix at its first
    exact search (:meth:`VectorMatrix.search`); :meth:`VectorMatrix.intact` judges it all.
    """
    got = open_mapped(sidecar_path(db_path), MAGIC)
    if got is None:
        return None
    header, buf, checks = got
    if stamp is not None and header.get("stamp") != stamp:
        return None
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
    vm = VectorMatrix(header["stamp"], mat, rowids, ids, codes, list(header["sources"]),
                      checks=checks)
    if header.get("annRows") and 0 < ann_min_rows() <= n:
        vm.ann = _load_ann(db_path, int(header["annRows"]), d)
    return vm


def _load_ann(db_path: Path, rows: int, dims: int) -> Any | None:
    index_cls = _usearch()
    p = ann_path(db_path)
    if index_cls is None or not p.is_file():
        return None
    try:
        ann = index_cls.restore(str(p), view=True)
    except Exception:  # unreadable: exact search instead
        return None
    if ann is None or len(ann) != rows or ann.ndim != dims:
        return None
    ann.expansion_search = ANN_EXPANSION_SEARCH
    return ann


def write(db_path: Path, stamp: str, rowids: np.ndarray, ids: Sequence[str],
          sources: Sequence[str], matrix: np.ndarray) -> VectorMatrix | None:
    """Write the sidecar (and update the ANN index) atomically; returns the loaded result.

    ``matrix`` rows are normalised here (zero rows stay zero). The previous sidecar, if any,
    lets the ANN index be updated incrementally (rows keyed by rowid) instead of rebuilt.
    """
    n = len(ids)
    mat = np.ascontiguousarray(matrix, dtype=np.float32).reshape(n, -1) if n else np.zeros(
        (0, 0), np.float32)
    d = int(mat.shape[1]) if n else 0
    if n:
        norms = np.linalg.norm(mat, axis=1, keepdims=True)
        mat = (mat / np.where(norms == 0, 1.0, norms)).astype(np.float32)
    names, codes = source_codes(sources)
    w, id_bytes = id_column(ids)
    rowids = np.asarray(rowids, dtype=np.int64)
    ann_rows = _write_ann(db_path, rowids, list(ids), mat) if n >= max(
        1, ann_min_rows()) and ann_min_rows() > 0 else 0
    if not ann_rows:
        with contextlib.suppress(FileNotFoundError):
            os.remove(ann_path(db_path))
    header: dict[str, Any] = {"stamp": stamp, "rows": n, "dims": d, "idWidth": w,
                              "sources": names, "annRows": ann_rows}
    write_file(sidecar_path(db_path), MAGIC, header, {
        "matrix": mat.tobytes(), "rowids": rowids.astype("<i8").tobytes(),
        "codes": codes.tobytes(), "ids": id_bytes})
    vm = load(db_path, stamp)
    if vm is not None and vm.checks is not None:
        vm.checks.written_here()  # a live index's next search needs no pass over the matrix
    return vm


def _write_ann(db_path: Path, rowids: np.ndarray, ids: list[str], mat: np.ndarray) -> int:
    """Build or update the HNSW graph; returns its row count (0 when usearch is missing)."""
    index_cls = _usearch()
    if index_cls is None:
        return 0
    p = ann_path(db_path)
    old = load(db_path) if p.is_file() else None
    ann = None
    if old is not None and old.dims == mat.shape[1] and old.rows:
        with contextlib.suppress(Exception):
            ann = index_cls.restore(str(p), view=False)
        if ann is not None and len(ann) != old.rows:
            ann = None
    if ann is not None and old is not None:
        old_pairs = dict(zip(old.rowids.tolist(), (bytes(x) for x in old.ids), strict=True))
        new_ids = [i.encode("ascii") for i in ids]
        keep = np.fromiter((old_pairs.get(r) == i for r, i in zip(rowids.tolist(), new_ids,
                                                                   strict=True)),
                           dtype=bool, count=len(ids))
        kept = set(rowids[keep].tolist())
        gone = np.asarray([r for r in old_pairs if r not in kept], dtype=np.uint64)
        add = np.flatnonzero(~keep)
        if gone.size + add.size > len(ids) // 2:
            ann = None  # mostly new: a fresh build is as fast and packs better
        else:
            if gone.size:
                ann.remove(gone)
            if add.size:
                ann.add(rowids[add].astype(np.uint64), mat[add], threads=0)
    if ann is None:
        ann = index_cls(ndim=mat.shape[1], metric="ip", dtype="f32",
                        connectivity=ANN_CONNECTIVITY, expansion_add=ANN_EXPANSION_ADD,
                        expansion_search=ANN_EXPANSION_SEARCH)
        ann.add(rowids.astype(np.uint64), mat, threads=0)
    tmp = temp_beside(p, os.getpid())
    ann.save(str(tmp))
    os.replace(tmp, p)
    return len(ann)
