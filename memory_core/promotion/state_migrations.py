"""Numbered migrations of the promotion state store (``<workspace>/.memory/state.sqlite``).

Same rules as :mod:`memory_core.storage.migrations` for the index: applied in order and recorded in
``PRAGMA user_version`` (all pending ones in one transaction); append a migration, never edit
one that has shipped. The tables keep the shape the index's migration 4 gave them, so rows move over
unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

from ..base.sql import Connection, apply_migrations, run_statements

Migration = Callable[[Connection], None]


def m001_state(db: Connection) -> None:
    """Recall signals (§6.2), their event log, daily-ingestion state, the promotion history
    (what ``undo`` restores), and which old index files' signals were imported already.

    List-valued fields are JSON arrays; times are epoch milliseconds.
    """
    run_statements(db,
        """
        CREATE TABLE IF NOT EXISTS recall_entries (
            key TEXT PRIMARY KEY,
            path TEXT NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            source TEXT NOT NULL DEFAULT 'memory',
            snippet TEXT NOT NULL,
            recall_count INTEGER NOT NULL DEFAULT 0,
            daily_count INTEGER NOT NULL DEFAULT 0,
            grounded_count INTEGER NOT NULL DEFAULT 0,
            total_score REAL NOT NULL DEFAULT 0,
            max_score REAL NOT NULL DEFAULT 0,
            first_recalled_at INTEGER NOT NULL,
            last_recalled_at INTEGER NOT NULL,
            query_hashes TEXT NOT NULL DEFAULT '[]',
            recall_days TEXT NOT NULL DEFAULT '[]',
            concept_tags TEXT NOT NULL DEFAULT '[]',
            claim_hash TEXT,
            promoted_at INTEGER
        );
        CREATE INDEX IF NOT EXISTS idx_recall_entries_path ON recall_entries(path);
        CREATE TABLE IF NOT EXISTS recall_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            key TEXT NOT NULL,
            kind TEXT NOT NULL,
            query_hash TEXT NOT NULL,
            query TEXT,
            day TEXT NOT NULL,
            score REAL NOT NULL,
            at INTEGER NOT NULL
        );
        CREATE INDEX IF NOT EXISTS idx_recall_events_key ON recall_events(key, query_hash, day);
        CREATE TABLE IF NOT EXISTS daily_ingestion (
            path TEXT PRIMARY KEY,
            mtime INTEGER NOT NULL,
            size INTEGER NOT NULL,
            day TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS promotion_history (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            applied_at INTEGER NOT NULL,
            memory_path TEXT NOT NULL,
            backup_path TEXT,
            before_sha256 TEXT,
            after_sha256 TEXT NOT NULL,
            keys TEXT NOT NULL,
            entries_before TEXT NOT NULL,
            undone_at INTEGER
        );
        CREATE TABLE IF NOT EXISTS legacy_imports (
            path TEXT PRIMARY KEY,
            imported_at INTEGER NOT NULL,
            entries INTEGER NOT NULL
        );
        """
    )


def m002_phase_signals(db: Connection) -> None:
    """Light/REM phase reinforcement per recall key (the reference's
    ``memory/.dreams/phase-signals.json``): hit counts and the last hit of each phase (epoch
    ms), feeding ``phaseBoost`` (§6.4)."""
    run_statements(db,
        """
        CREATE TABLE IF NOT EXISTS phase_signals (
            key TEXT PRIMARY KEY,
            light_hits INTEGER NOT NULL DEFAULT 0,
            rem_hits INTEGER NOT NULL DEFAULT 0,
            last_light_at INTEGER,
            last_rem_at INTEGER
        )
        """
    )


def m003_history_section(db: Connection) -> None:
    """The exact section each apply wrote into ``MEMORY.md``: budget compaction drops only a
    section promotion wrote (one that merely looks like it is the user's). ``NULL`` on older
    rows, which are recognised by their keys and day instead."""
    db.execute("ALTER TABLE promotion_history ADD COLUMN section TEXT")


def m004_settings(db: Connection) -> None:
    """The workspace's dreaming settings that recording needs (``timezone``: recall days are
    calendar days there, as the reference formats them in its configured timezone)."""
    run_statements(db,
        """
        CREATE TABLE IF NOT EXISTS settings (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        )
        """
    )


def m005_session_ingestion(db: Connection) -> None:
    """Session-transcript ingestion's progress (the reference's
    ``memory/.dreams/session-ingestion.json``): per transcript (``<agent>:<sessions path>``) its
    mtime (ms), size, rendered content hash, rendered line count and the line cursor; per session
    (``<agent>:<session id>``) the SHA-1 hashes of the messages already taken (a JSON array)."""
    run_statements(db,
        """
        CREATE TABLE IF NOT EXISTS session_ingestion (
            key TEXT PRIMARY KEY,
            mtime INTEGER NOT NULL,
            size INTEGER NOT NULL,
            content_hash TEXT NOT NULL,
            line_count INTEGER NOT NULL,
            cursor INTEGER NOT NULL
        );
        CREATE TABLE IF NOT EXISTS session_seen (
            scope TEXT PRIMARY KEY,
            hashes TEXT NOT NULL DEFAULT '[]'
        );
        """
    )


MIGRATIONS: list[Migration] = [m001_state, m002_phase_signals, m003_history_section,
                               m004_settings, m005_session_ingestion]


def migrate(db: Connection) -> int:
    """Apply every migration past the database's ``user_version``; return the new version
    (``BEGIN IMMEDIATE``, so that two processes opening a new state store at once take turns:
    :func:`memory_core.base.sql.apply_migrations`)."""
    return apply_migrations(db, MIGRATIONS)
