"""Whether two indexes of one workspace hold the same index: rows, FTS5, vectors, sidecars.

Used to check that a faster build path writes what the old one wrote (docs/performance.md,
"The first build, profiled"): build the same workspace with both (same embedding server), then

    .venv/bin/python scripts/same_index.py OLD.sqlite NEW.sqlite

Compares, in a fixed order: ``chunks`` (all but ``updated_at``), ``files``, ``skipped_files``,
both FTS5 tables' content and vocabularies and the rows and bm25 of a few MATCH queries, the
sqlite-vec rows, the embedding cache (all but ``updated_at``) and both sidecars. Fails with an
AssertionError naming the first difference.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_vec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_core.base.sql import sqlite
from memory_core.storage import postings, vectors

TABLES = [
    "SELECT rowid, id, path, source, start_line, end_line, hash, model, text, embedding"
    " FROM chunks ORDER BY rowid",
    "SELECT path, source, hash, mtime, size, bad_lines, warnings FROM files ORDER BY path",
    "SELECT * FROM skipped_files ORDER BY path",
    "SELECT rowid, text, id, path, source, model, start_line, end_line FROM chunks_fts"
    " ORDER BY rowid",
    "SELECT rowid, text, id, source FROM chunks_fts_bigram ORDER BY rowid",
    "SELECT provider, model, provider_key, hash, embedding, dims FROM embedding_cache"
    " ORDER BY provider, model, provider_key, hash",
    "SELECT id, vec_to_json(embedding) FROM chunks_vec ORDER BY id",
]
MATCHES = ["server", "backup OR restore", "deploy AND replica", "kafka NOT redis",
           '"connection pool"', "数据", "timeout*"]


def digest(db: Any, sql: str) -> tuple[int, str]:
    """Row count and SHA-256 of the rows' reprs."""
    h, n = hashlib.sha256(), 0
    for r in db.execute(sql):
        h.update(repr(r).encode())
        n += 1
    return n, h.hexdigest()


def compare(a: Path, b: Path) -> None:
    dbs = [sqlite.connect(f"file:{p}?mode=ro", uri=True) for p in (a, b)]
    for db in dbs:
        db.enable_load_extension(True)
        sqlite_vec.load(db)
    for sql in TABLES:
        got = [digest(db, sql) for db in dbs]
        assert got[0] == got[1], (sql, got)
        print(f"same {got[0][0]:>9} rows: {sql[:70]}")
    for t in ("chunks_fts", "chunks_fts_bigram"):
        for db in dbs:
            db.execute(f"CREATE VIRTUAL TABLE temp.v_{t} USING fts5vocab(main, {t}, row)")
        assert digest(dbs[0], f"SELECT * FROM v_{t}") == digest(dbs[1], f"SELECT * FROM v_{t}")
        sql = (f"SELECT rowid, bm25({t}) FROM {t} WHERE {t} MATCH ? ORDER BY bm25({t}), rowid"
               " LIMIT 50")
        for q in MATCHES:
            assert dbs[0].execute(sql, (q,)).fetchall() == dbs[1].execute(sql, (q,)).fetchall()
        print(f"same vocabulary and MATCH answers: {t}")
    pa, pb = postings.load(a), postings.load(b)
    assert (pa is None) == (pb is None)
    if pa is not None and pb is not None:
        assert pa.terms == pb.terms and pa.spec == pb.spec
        for k in ("ptr", "rows", "tfs", "rowids", "doclen"):
            assert np.array_equal(np.asarray(getattr(pa, k)), np.asarray(getattr(pb, k))), k
        assert list(np.asarray(pa.ids)) == list(np.asarray(pb.ids))
        print(f"same postings sidecar ({pa.n} rows)")
    va, vb = vectors.load(a), vectors.load(b)
    assert (va is None) == (vb is None)
    if va is not None and vb is not None:
        assert np.array_equal(np.asarray(va.matrix), np.asarray(vb.matrix))
        assert list(va.ids) == list(vb.ids)
        print(f"same vector sidecar ({va.rows} rows)")


if __name__ == "__main__":
    compare(Path(sys.argv[1]), Path(sys.argv[2]))
