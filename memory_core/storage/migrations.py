"""Schema changes as numbered migrations, applied in order and recorded in ``PRAGMA user_version``.

Append a migration; never edit one that has shipped. Each runs in its own transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base.sql import apply_migrations, run_statements

Migration = Callable[[Any], None]


def m001_initial(db: Any) -> None:
    """The reference's tables (spec §3.2), with embeddings stored as float32 blobs."""
    run_statements(db,
        """
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS files (
            path TEXT PRIMARY KEY,
            source TEXT NOT NULL DEFAULT 'memory',
            hash TEXT,
            mtime INTEGER,
            size INTEGER
        );
        CREATE TABLE IF NOT EXISTS chunks (
            id TEXT PRIMARY KEY,
            path TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT 'memory',
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            hash TEXT NOT NULL,
            model TEXT NOT NULL,
            text TEXT NOT NULL,
            embedding BLOB,
            updated_at INTEGER NOT NULL
        );
        CREATE INDEX IF NOT EXISTS idx_chunks_path ON chunks(path);
        CREATE INDEX IF NOT EXISTS idx_chunks_source ON chunks(source);
        CREATE TABLE IF NOT EXISTS embedding_cache (
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            provider_key TEXT NOT NULL,
            hash TEXT NOT NULL,
            embedding BLOB NOT NULL,
            dims INTEGER,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (provider, model, provider_key, hash)
        );
        CREATE INDEX IF NOT EXISTS idx_embedding_cache_updated_at
            ON embedding_cache(updated_at);
        """
    )


def m002_fts(db: Any) -> None:
    """FTS5: the reference's table, and a shadow table whose CJK runs are stored as bigrams."""
    run_statements(db,
        """
        CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
            text, id UNINDEXED, path UNINDEXED, source UNINDEXED, model UNINDEXED,
            start_line UNINDEXED, end_line UNINDEXED, tokenize='unicode61'
        );
        CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts_bigram USING fts5(
            text, id UNINDEXED, source UNINDEXED, tokenize='unicode61'
        );
        """
    )


def m003_file_diagnostics(db: Any) -> None:
    """What a file's last read found wrong (bad JSONL lines, bad UTF-8), shown in status."""
    run_statements(db,
        """
        ALTER TABLE files ADD COLUMN bad_lines INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE files ADD COLUMN warnings TEXT;
        """
    )


def m004_recalls(db: Any) -> None:
    """Formerly the promotion tables (recall signals, events, daily ingestion, history).

    They moved to the durable per-workspace state store (``memory_core.promotion.state``),
    which no index rebuild replaces. New index files no longer get them; index files built
    before the move keep theirs, and the state store imports them once (its
    ``legacy_imports`` table). The number stays so that later migrations keep theirs.
    """


def m005_stemmed_keyword_table(db: Any) -> None:
    """The default profile's keyword table gains Porter stemming, refilled from ``chunks``.

    ``chunks_fts_bigram`` (CJK runs as bigrams) is only searched by non-reference profiles. With
    ``porter unicode61`` a question's "camping" matches a note's "camp", as in the BM25 baselines
    (BEIR, Pyserini) that stem: SciFact nDCG@10 0.652 → 0.678 (docs/retrieval.md). CJK bigrams
    pass through the stemmer unchanged. The reference's ``chunks_fts`` is untouched.
    """
    from ..base.text import cjk_bigrams

    db.execute("DROP TABLE IF EXISTS chunks_fts_bigram")
    db.execute(
        "CREATE VIRTUAL TABLE chunks_fts_bigram USING fts5("
        "text, id UNINDEXED, source UNINDEXED, tokenize='porter unicode61')")
    rows = db.execute("SELECT id, source, text FROM chunks").fetchall()
    db.executemany("INSERT INTO chunks_fts_bigram(text, id, source) VALUES (?,?,?)",
                   [(cjk_bigrams(text), cid, source) for cid, source, text in rows])


def m006_owned_skipped_aligned(db: Any) -> None:
    """Three things a sync needs to be safe and fast (issue #13 items 2, 6, 14):

    - ``application_id`` marks the file as this project's index, so an index path that names a
      user's file is refused instead of overwritten (``store.check_index_file``);
    - ``skipped_files`` remembers each file that could not be read (binary, unreadable, a
      failing parser) with its mtime, size and ctime, so status counts it, the dirty check
      matches it, and a no-op sync does not read it again until it changes;
    - both FTS tables are refilled with ``rowid = chunks.rowid``, so a sync deletes a file's
      FTS rows by rowid instead of scanning the table for their ids. A fresh index already
      has equal rowids (rows are inserted in the same order); the refill keeps the text.
    """
    from ..base.text import cjk_bigrams

    db.execute("PRAGMA application_id = 1297566040")  # 0x4D574958, "MWIX"
    run_statements(db,
        """
        CREATE TABLE IF NOT EXISTS skipped_files (
            path TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            mtime INTEGER NOT NULL,
            size INTEGER NOT NULL,
            ctime INTEGER NOT NULL,
            reason TEXT NOT NULL
        )
        """
    )
    aligned = db.execute(
        "SELECT count(*) FROM chunks_fts f LEFT JOIN chunks c ON c.rowid = f.rowid"
        " WHERE c.id IS NOT f.id").fetchone()[0] == 0 and db.execute(
        "SELECT count(*) FROM chunks_fts").fetchone()[0] == db.execute(
        "SELECT count(*) FROM chunks").fetchone()[0]
    if aligned:
        aligned = db.execute(
            "SELECT count(*) FROM chunks_fts_bigram b LEFT JOIN chunks c ON c.rowid = b.rowid"
            " WHERE c.id IS NOT b.id").fetchone()[0] == 0
    if aligned:
        return
    db.execute("DELETE FROM chunks_fts")
    db.execute(
        "INSERT INTO chunks_fts(rowid, text, id, path, source, model, start_line, end_line)"
        " SELECT rowid, text, id, path, source, model, start_line, end_line FROM chunks"
        " ORDER BY rowid")
    db.execute("DELETE FROM chunks_fts_bigram")
    rows = db.execute("SELECT rowid, id, source, text FROM chunks ORDER BY rowid").fetchall()
    db.executemany("INSERT INTO chunks_fts_bigram(rowid, text, id, source) VALUES (?,?,?,?)",
                   [(rid, cjk_bigrams(text), cid, source) for rid, cid, source, text in rows])


def m007_supersessions(db: Any) -> None:
    """Which memory line a later line superseded (``memory_core.base.supersession``, issue #34):
    rebuilt from the chunks by every sync that changed something, read by each search."""
    run_statements(db,
        """
        CREATE TABLE IF NOT EXISTS supersessions (
            old_path TEXT NOT NULL,
            old_line INTEGER NOT NULL,
            new_path TEXT NOT NULL,
            new_line INTEGER NOT NULL,
            subject TEXT NOT NULL,
            PRIMARY KEY (old_path, old_line)
        )
        """
    )


def m008_chunk_blocks(db: Any) -> None:
    """A vector per block of a chunk (``memory_core.write.chunking.chunk_blocks``, issue #36):
    the blocks' float32 vectors of one chunk as one ``n × dims`` blob, keyed by the chunk's
    rowid (deleted with the chunk's other rows). Empty until a sync embeds blocks."""
    run_statements(db,
        """
        CREATE TABLE IF NOT EXISTS chunk_blocks (
            chunk_rowid INTEGER PRIMARY KEY,
            n INTEGER NOT NULL,
            vectors BLOB NOT NULL
        )
        """
    )


MIGRATIONS: list[Migration] = [m001_initial, m002_fts, m003_file_diagnostics, m004_recalls,
                               m005_stemmed_keyword_table, m006_owned_skipped_aligned,
                               m007_supersessions, m008_chunk_blocks]


def migrate(db: Any) -> int:
    """Apply every migration past the database's ``user_version``; return the new version
    (:func:`memory_core.base.sql.apply_migrations`)."""
    return apply_migrations(db, MIGRATIONS)
