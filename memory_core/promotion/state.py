"""The durable promotion state of a workspace: ``<workspace>/.memory/state.sqlite``.

Recall signals, daily-ingestion state, the promotion history and the "promoted" marks must
outlive the index: an index is disposable (``index --force`` builds a new file aside and swaps
it in) and there is one per chunking × provider, while signals belong to the workspace. So they
live here, in their own SQLite file (WAL, busy timeout, its own migrations in
:mod:`.state_migrations`), which no index rebuild touches and every index file shares. The
reference keeps them apart from its index too (``memory/.dreams/short-term-recall.json``, §6.2).

Older versions kept these tables inside the index files (index migration 4). On open, every
index file of the workspace not imported yet (``.memory/*.sqlite`` and the index's own path) is
read once and its rows merged in; ``legacy_imports`` records which, so it happens once per file.

A :class:`StateStore` is one connection, opened per operation (``with state_of(index) as st``):
cheap, and safe across threads and processes. Rows travel as dicts keyed by column name, with
the JSON list columns decoded; the promotion modules own their meaning (spec §6.2).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.dates import now_ms
from ..base.sql import sqlite
from ..storage.indexfile import read_uri
from .model import PromotionError, RecallEntry, check_timezone, full_disk_note
from .state_migrations import migrate

if TYPE_CHECKING:
    from ..index import MemoryIndex

STATE_FILE = Path(".memory") / "state.sqlite"
DEFAULT_BUSY_TIMEOUT_MS = 5000
#: Events kept per key (``explain`` shows them; daily signals dedupe on them per day).
EVENTS_KEPT = 64

#: A recall entry's fields are the table's columns (the three lists stored as JSON).
RECALL_COLUMNS = tuple(f.name for f in fields(RecallEntry))
RECALL_JSON = ("query_hashes", "recall_days", "concept_tags")
HISTORY_COLUMNS = ("id", "applied_at", "memory_path", "backup_path", "before_sha256",
                   "after_sha256", "keys", "entries_before", "undone_at")
EVENT_COLUMNS = ("kind", "query_hash", "query", "day", "score", "at")

StateError = sqlite.Error


def state_path(workspace: Path) -> Path:
    """Where a workspace's promotion state lives."""
    return Path(workspace) / STATE_FILE


class StateStore:
    """One connection to a workspace's state store, migrated and with old signals imported."""

    def __init__(self, workspace: Path, *, legacy: Sequence[Path] = (),
                 busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS, readonly: bool = False):
        self.workspace = Path(workspace)
        self.path = state_path(self.workspace)
        if readonly:
            self._open_readonly()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite.connect(self.path, isolation_level=None, check_same_thread=False,
                                      timeout=busy_timeout_ms / 1000)
        except (OSError, sqlite.Error) as e:
            raise PromotionError(f"promotion state {self.path} cannot be opened: {e}") from e
        try:
            self.db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            if self.db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = NORMAL")
            migrate(self.db)
            self._import_legacy(legacy)
        except sqlite.Error as e:  # a full disk, a damaged or read-only store: one line
            self.db.close()
            raise PromotionError(f"promotion state {self.path} cannot be opened: {e}"
                                 + full_disk_note(self.path.parent)) from e
        except BaseException:
            self.db.close()
            raise

    def _open_readonly(self) -> None:
        """For a viewer (``$MEMORY_WORKBENCH_READONLY``): the store as it is, opened
        ``mode=ro`` (nothing created, migrated or imported; a write fails as ``StateError``),
        or an empty one in memory when the workspace has none yet."""
        try:
            if self.path.is_file():
                self.db = sqlite.connect(read_uri(self.path), uri=True, isolation_level=None,
                                          check_same_thread=False)
            else:
                self.db = sqlite.connect(":memory:", isolation_level=None,
                                          check_same_thread=False)
                migrate(self.db)
        except sqlite.Error as e:
            raise PromotionError(f"promotion state {self.path} cannot be read: {e}") from e

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[StateStore]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any error."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------------ recall entries

    @staticmethod
    def _recall_row(row: Sequence[Any]) -> dict[str, Any]:
        d = dict(zip(RECALL_COLUMNS, row, strict=True))
        for k in RECALL_JSON:
            d[k] = json.loads(d[k] or "[]")
        return d

    def recall_entry(self, key: str) -> dict[str, Any] | None:
        """One recall entry by key, or ``None``."""
        row = self.db.execute(
            f"SELECT {', '.join(RECALL_COLUMNS)} FROM recall_entries WHERE key = ?",
            (key,)).fetchone()
        return self._recall_row(row) if row else None

    def recall_entries(self) -> list[dict[str, Any]]:
        """Every recall entry, promoted ones too, ordered by key."""
        rows = self.db.execute(
            f"SELECT {', '.join(RECALL_COLUMNS)} FROM recall_entries ORDER BY key")
        return [self._recall_row(r) for r in rows]

    def recall_put(self, entry: dict[str, Any]) -> None:
        """Insert or replace a recall entry (call inside a transaction)."""
        values = [json.dumps(entry[c], ensure_ascii=False) if c in RECALL_JSON
                  else entry.get(c) for c in RECALL_COLUMNS]
        self.db.execute(
            f"INSERT OR REPLACE INTO recall_entries({', '.join(RECALL_COLUMNS)})"
            f" VALUES ({','.join('?' * len(RECALL_COLUMNS))})", values)

    def recall_delete(self, key: str) -> None:
        """Forget one entry and its events."""
        self.db.execute("DELETE FROM recall_entries WHERE key = ?", (key,))
        self.db.execute("DELETE FROM recall_events WHERE key = ?", (key,))

    def recall_clear(self) -> None:
        """Forget every recall signal and the daily-ingestion state (history is kept)."""
        for table in ("recall_entries", "recall_events", "daily_ingestion", "session_ingestion",
                      "session_seen", "phase_signals"):
            self.db.execute(f"DELETE FROM {table}")

    # ------------------------------------------------------------------ events

    def recall_event_add(self, key: str, kind: str, query_hash: str, query: str | None,
                         day: str, score: float, at: int) -> None:
        """Log one signal for ``key``, keeping only its newest :data:`EVENTS_KEPT` events."""
        self.db.execute(
            "INSERT INTO recall_events(key, kind, query_hash, query, day, score, at)"
            " VALUES (?,?,?,?,?,?,?)", (key, kind, query_hash, query, day, score, at))
        self.db.execute(
            "DELETE FROM recall_events WHERE key = ? AND id NOT IN (SELECT id FROM recall_events"
            " WHERE key = ? ORDER BY at DESC, id DESC LIMIT ?)", (key, key, EVENTS_KEPT))

    def recall_event_seen(self, key: str, query_hash: str, day: str) -> bool:
        """Whether ``key`` already has a signal for ``query_hash`` on ``day`` (per-day dedupe)."""
        return self.db.execute(
            "SELECT 1 FROM recall_events WHERE key = ? AND query_hash = ? AND day = ? LIMIT 1",
            (key, query_hash, day)).fetchone() is not None

    def recall_events(self, key: str, limit: int = 50) -> list[dict[str, Any]]:
        """The newest events of ``key``, newest first."""
        rows = self.db.execute(
            f"SELECT {', '.join(EVENT_COLUMNS)} FROM recall_events WHERE key = ?"
            " ORDER BY at DESC, id DESC LIMIT ?", (key, limit))
        return [dict(zip(EVENT_COLUMNS, r, strict=True)) for r in rows]

    # ------------------------------------------------------------------ daily ingestion

    def daily_ingestion_state(self, path: str) -> tuple[int, int, str] | None:
        """``(mtime, size, day)`` of the last daily-note ingestion of ``path``."""
        row = self.db.execute(
            "SELECT mtime, size, day FROM daily_ingestion WHERE path = ?", (path,)).fetchone()
        return (int(row[0]), int(row[1]), str(row[2])) if row else None

    def daily_ingestion_set(self, path: str, mtime: int, size: int, day: str) -> None:
        self.db.execute(
            "INSERT INTO daily_ingestion(path, mtime, size, day) VALUES (?,?,?,?)"
            " ON CONFLICT(path) DO UPDATE SET mtime=excluded.mtime, size=excluded.size,"
            " day=excluded.day", (path, mtime, size, day))

    # ------------------------------------------------------------------ session ingestion

    def session_ingestion_state(self, key: str) -> tuple[int, int, str, int, int] | None:
        """``(mtime, size, content_hash, line_count, cursor)`` of transcript ``key``'s last
        ingestion."""
        row = self.db.execute(
            "SELECT mtime, size, content_hash, line_count, cursor FROM session_ingestion"
            " WHERE key = ?", (key,)).fetchone()
        return (int(row[0]), int(row[1]), str(row[2]), int(row[3]), int(row[4])) if row else None

    def session_ingestion_set(self, key: str, mtime: int, size: int, content_hash: str,
                              line_count: int, cursor: int) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO session_ingestion(key, mtime, size, content_hash, line_count,"
            " cursor) VALUES (?,?,?,?,?,?)", (key, mtime, size, content_hash, line_count, cursor))

    def session_seen(self, scope: str) -> list[str]:
        """The message hashes of session ``scope`` already ingested, oldest first."""
        row = self.db.execute("SELECT hashes FROM session_seen WHERE scope = ?",
                              (scope,)).fetchone()
        return list(json.loads(row[0])) if row else []

    def session_seen_set(self, scope: str, hashes: Sequence[str], max_scopes: int) -> None:
        """Keep ``hashes`` for ``scope``; then only the last ``max_scopes`` scopes (by name, as
        the reference trims its ``seenMessages``)."""
        self.db.execute("INSERT OR REPLACE INTO session_seen(scope, hashes) VALUES (?, ?)",
                        (scope, json.dumps(list(hashes))))
        self.db.execute(
            "DELETE FROM session_seen WHERE scope NOT IN"
            " (SELECT scope FROM session_seen ORDER BY scope DESC LIMIT ?)", (max_scopes,))

    # ------------------------------------------------------------------ history

    @staticmethod
    def _history_row(row: Sequence[Any]) -> dict[str, Any]:
        d = dict(zip(HISTORY_COLUMNS, row, strict=True))
        d["keys"] = json.loads(d["keys"])
        d["entries_before"] = json.loads(d["entries_before"])
        return d

    def promotion_add(self, applied_at: int, memory_path: str, backup_path: str | None,
                      before_sha256: str | None, after_sha256: str, keys: Sequence[str],
                      entries_before: Sequence[dict[str, Any]], section: str | None = None
                      ) -> int:
        """Record an applied promotion (call inside the transaction that marks the entries);
        ``section``: the text it added to ``MEMORY.md`` (what compaction may drop later)."""
        cur = self.db.execute(
            "INSERT INTO promotion_history(applied_at, memory_path, backup_path, before_sha256,"
            " after_sha256, keys, entries_before, section) VALUES (?,?,?,?,?,?,?,?)",
            (applied_at, memory_path, backup_path, before_sha256, after_sha256,
             json.dumps(list(keys)), json.dumps(list(entries_before), ensure_ascii=False),
             section))
        return int(cur.lastrowid or 0)

    def promotion_sections(self) -> list[tuple[int, list[str], str | None]]:
        """``(applied_at, keys, section)`` of every promotion not undone: what promotion itself
        wrote into ``MEMORY.md`` (``section`` is ``None`` on rows older than it)."""
        rows = self.db.execute("SELECT applied_at, keys, section FROM promotion_history"
                               " WHERE undone_at IS NULL ORDER BY id")
        return [(int(a), json.loads(k), s) for a, k, s in rows]

    def promotion_last(self) -> dict[str, Any] | None:
        """The newest promotion not undone yet (what ``undo`` reverts)."""
        row = self.db.execute(
            f"SELECT {', '.join(HISTORY_COLUMNS)}, section FROM promotion_history"
            " WHERE undone_at IS NULL ORDER BY id DESC LIMIT 1").fetchone()
        if not row:
            return None
        # section: the text the apply added, which undo takes out again
        return {**self._history_row(row[:-1]), "section": row[-1]}

    def promotion_history(self) -> list[dict[str, Any]]:
        """The newest 50 promotions, newest first (undone ones too)."""
        rows = self.db.execute(
            f"SELECT {', '.join(HISTORY_COLUMNS)} FROM promotion_history"
            " ORDER BY id DESC LIMIT 50")
        return [self._history_row(r) for r in rows]

    def promotion_mark_undone(self, history_id: int, at: int) -> None:
        self.db.execute("UPDATE promotion_history SET undone_at = ? WHERE id = ?",
                        (at, history_id))

    def recall_first_seen(self) -> dict[str, int]:
        """Each key's oldest logged event id: the order in which entries were first recorded
        (the reference's store is a JSON object, iterated in insertion order; ties in its
        sorts keep that order). Only the newest events are kept per key, so for a key with
        many signals this is an approximation, which only matters between equal entries."""
        return dict(self.db.execute("SELECT key, MIN(id) FROM recall_events GROUP BY key"))

    # ------------------------------------------------------------------ settings

    def timezone(self) -> str:
        """The time zone whose calendar days recall days are (``UTC`` unless set)."""
        row = self.db.execute("SELECT value FROM settings WHERE key = 'timezone'").fetchone()
        return str(row[0]) if row else "UTC"

    def set_timezone(self, name: str) -> None:
        """Set it (an IANA name, checked: :class:`PromotionError` otherwise)."""
        self.db.execute("INSERT INTO settings(key, value) VALUES ('timezone', ?)"
                        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                        (check_timezone(name),))

    # ------------------------------------------------------------------ phase signals

    def phase_signals(self) -> dict[str, dict[str, Any]]:
        """Every key's Light/REM hits: ``{key: {light_hits, rem_hits, last_light_at,
        last_rem_at}}`` (times in epoch ms or ``None``)."""
        rows = self.db.execute(
            "SELECT key, light_hits, rem_hits, last_light_at, last_rem_at FROM phase_signals")
        return {r[0]: {"light_hits": r[1], "rem_hits": r[2], "last_light_at": r[3],
                       "last_rem_at": r[4]} for r in rows}

    def phase_hit(self, keys: Sequence[str], phase: str, at: int) -> int:
        """``recordDreamingPhaseSignals``: one ``phase`` (``light``/``rem``) hit for each of
        ``keys`` that is a tracked recall entry (hits capped at 9999); signals of keys no longer
        tracked are dropped. Call inside a transaction. Returns how many keys were hit."""
        if phase not in ("light", "rem"):
            raise ValueError(f"unknown phase {phase!r}")
        known = {r[0] for r in self.db.execute("SELECT key FROM recall_entries")}
        n = 0
        col, last = ("light_hits", "last_light_at") if phase == "light" else (
            "rem_hits", "last_rem_at")
        for key in dict.fromkeys(k.strip() for k in keys if k.strip()):
            if key not in known:
                continue
            self.db.execute(
                f"INSERT INTO phase_signals(key, {col}, {last}) VALUES (?, 1, ?)"
                f" ON CONFLICT(key) DO UPDATE SET {col} = MIN(9999, {col} + 1), {last} = ?",
                (key, at, at))
            n += 1
        self.db.execute("DELETE FROM phase_signals WHERE key NOT IN (SELECT key FROM "
                        "recall_entries) OR (light_hits <= 0 AND rem_hits <= 0)")
        return n

    # ------------------------------------------------------------------ legacy import

    def legacy_imported(self) -> dict[str, int]:
        """Old index files whose signals were imported, with how many entries each gave."""
        return dict(self.db.execute("SELECT path, entries FROM legacy_imports").fetchall())

    def _import_legacy(self, extra: Sequence[Path]) -> None:
        """Merge the recall tables of index files not imported yet (once per file path)."""
        mem = self.workspace / ".memory"
        paths = sorted({*mem.glob("*.sqlite"), *(Path(p) for p in extra)})
        paths = [p for p in paths if p.resolve() != self.path.resolve() and p.is_file()]
        done = self.legacy_imported()
        todo = [p for p in paths if str(p.resolve()) not in done]
        if not todo:
            return
        with self.transaction():
            done = self.legacy_imported()  # re-read under the write lock: another process?
            for p in todo:
                key = str(p.resolve())
                if key in done:
                    continue
                n = self._merge_from(p)
                self.db.execute("INSERT OR REPLACE INTO legacy_imports(path, imported_at,"
                                " entries) VALUES (?,?,?)", (key, now_ms(), n))

    def _merge_from(self, path: Path) -> int:
        """Merge one old index file's recall tables; return the entries taken from it.

        An entry present in both keeps the copy with more signals (then the latest recall);
        events are added; daily-ingestion state keeps the latest day; history rows are added
        unless the same apply is already there. A file that is not a readable index is skipped.
        The file may be open in this very process (the index the state store was opened for):
        it is read through the same SQLite library (:mod:`..common.sql`), whose connections
        share their locks, never through a second one (issue #19).
        """
        try:
            old = sqlite.connect(read_uri(path), uri=True)
        except sqlite.Error:
            return 0
        try:
            tables = {r[0] for r in old.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "recall_entries" not in tables:
                return 0
            n = 0
            for row in old.execute(f"SELECT {', '.join(RECALL_COLUMNS)} FROM recall_entries"):
                new = self._recall_row(row)
                have = self.recall_entry(new["key"])
                if have is None or _strength(new) > _strength(have):
                    self.recall_put(new)
                    n += 1
            if "recall_events" in tables:
                self.db.executemany(
                    "INSERT INTO recall_events(key, kind, query_hash, query, day, score, at)"
                    " VALUES (?,?,?,?,?,?,?)",
                    old.execute("SELECT key, kind, query_hash, query, day, score, at"
                                " FROM recall_events ORDER BY id"))
            if "daily_ingestion" in tables:
                for p, mtime, size, day in old.execute(
                        "SELECT path, mtime, size, day FROM daily_ingestion"):
                    have_d = self.daily_ingestion_state(p)
                    if have_d is None or day > have_d[2]:
                        self.daily_ingestion_set(p, mtime, size, day)
            if "promotion_history" in tables:
                cols = ", ".join(HISTORY_COLUMNS[1:])
                for row in old.execute(f"SELECT {cols} FROM promotion_history ORDER BY id"):
                    dup = self.db.execute(
                        "SELECT 1 FROM promotion_history WHERE applied_at = ? AND"
                        " after_sha256 = ?", (row[0], row[4])).fetchone()
                    if not dup:
                        self.db.execute(f"INSERT INTO promotion_history({cols}) VALUES"
                                        f" ({','.join('?' * len(HISTORY_COLUMNS[1:]))})", row)
            return n
        except sqlite.Error:
            return 0  # a damaged or foreign file: nothing to take from it
        finally:
            old.close()


def _strength(row: dict[str, Any]) -> tuple[int, int]:
    return (int(row["recall_count"]) + int(row["daily_count"]) + int(row["grounded_count"]),
            int(row["last_recalled_at"]))


def open_state(workspace: Path, *, legacy: Sequence[Path] = (),
               busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> StateStore:
    """Open a workspace's state store (create and migrate it, import old signals once)."""
    return StateStore(workspace, legacy=legacy, busy_timeout_ms=busy_timeout_ms)


def state_of(index: MemoryIndex) -> StateStore:
    """The state store of ``index``'s workspace (its own index file counted as legacy too)."""
    if index.readonly:  # a viewer writes nothing, the state store included
        return StateStore(index.workspace, readonly=True)
    return open_state(index.workspace, legacy=[index.store_path],
                      busy_timeout_ms=index.config.store.busy_timeout_ms)
