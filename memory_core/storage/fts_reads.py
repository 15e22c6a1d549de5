"""The keyword leg's FTS5 SQL: every read of ``chunks_fts`` / ``chunks_fts_bigram`` a search
makes, written here and run on the store's connection.

Why the text is here and the connection there: the store owns the file, its schema and its
writes (a sync's FTS rows share their chunk's rowid, inside the sync's transaction), and how a
read fails (locked, damaged); the keyword leg owns what it asks (MATCH, bm25 ordering, the rowid
filter that keeps one scan, the per-phrase row counts). So the store exposes two primitives,
:meth:`Store.read <memory_core.storage.store.Store.read>` and its memo until the index changes
(:meth:`Store.read_memo <memory_core.storage.store.Store.read_memo>`), and this module holds all the
query text. A query plan (:mod:`.plans`) and the postings sidecar (:mod:`.postings`) then read
only through these functions, and a change to the SQL is one file.
"""

from __future__ import annotations

from collections.abc import Sequence

from .fts import REFERENCE_TABLE, checked_table
from .store import OperationalError, Store, in_clause


def match_rows(store: Store, match: str | None, like_terms: Sequence[str], limit: int,
               *, table: str = REFERENCE_TABLE, sources: Sequence[str] | None = None
               ) -> list[tuple[str, float]]:
    """FTS5 rows matching ``match`` (and every LIKE term), best BM25 first (spec §4.4).

    Returns ``(id, rank)`` pairs, where ``rank`` is FTS5's ``bm25()`` (negative, smaller is
    better) or ``None``-free ``0.0`` for rows found without MATCH, as in the reference.
    """
    if not store.fts_available or limit <= 0:
        return []
    table = checked_table(table)
    clause, params = in_clause("source", sources)
    likes = "".join(" AND text LIKE ? ESCAPE '\\'" for _ in like_terms)
    like_params = [f"%{_escape_like(t)}%" for t in like_terms]
    if match:
        try:
            rows = store.read(
                f"SELECT id, bm25({table}) AS rank FROM {table} WHERE {table} MATCH ?"
                f"{likes}{clause} ORDER BY rank ASC LIMIT ?",
                [match, *like_params, *params, limit])
            return [(r[0], float(r[1])) for r in rows]
        except OperationalError:
            pass  # the reference falls back to LIKE over every term (rank 0)
    if not like_terms:
        return []
    rows = store.read(f"SELECT id, 0.0 FROM {table} WHERE 1=1{likes}{clause} LIMIT ?",
                      [*like_params, *params, limit])
    return [(r[0], 0.0) for r in rows]


def row_count(store: Store, table: str) -> int:
    """Rows of an FTS5 table (bm25's N), from its ``_docsize`` shadow table: a b-tree count
    (~0 ms at 133k rows, where FTS5's own ``count(*)`` scans for 140 ms)."""
    table = checked_table(table)
    return int(store.read_memo(f"SELECT count(*) FROM {table}_docsize", [()])[0][0][0])


def doc_counts(store: Store, table: str, phrases: Sequence[str]) -> list[int]:
    """Rows matching each FTS5 phrase (bm25's per-phrase ``nHit``), remembered until the index
    changes."""
    table = checked_table(table)
    got = store.read_memo(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?",
                          [(ph,) for ph in phrases])
    return [int(rows[0][0]) for rows in got]


def phrase_scores(store: Store, table: str, phrase: str) -> list[tuple[int, float]]:
    """``(rowid, bm25)`` of every row matching one phrase, in rowid order: what that phrase
    adds to those rows in any OR query (minus this bm25; the postings' multi-token phrases)."""
    table = checked_table(table)
    return store.read(f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH ?",
                      (phrase,))


def _escape_like(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
