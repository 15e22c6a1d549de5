"""The one SQLite library of the package, and SQL helpers shared by the index's and the state
store's migrations.

Every connection the package makes goes through :data:`sqlite` (``sqlean``, a build of SQLite
that can load extensions; the stdlib ``sqlite3`` only where it is missing). One library per
process is a rule, not a taste: SQLite shares its POSIX locks among the connections of one
process that open the same file, but only within one library. A second library (or a plain
``open()``) that closes a descriptor of an index drops every ``fcntl`` lock the process holds on
it, and another process then takes itself for the last connection, checkpoints and deletes the
``-wal``/``-shm`` under live connections (SQLite's "How To Corrupt", section 2.2.1; issue #19).
``tests/test_index_locks.py`` checks the source for any other import of ``sqlite3``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

try:  # sqlean can load extensions (sqlite-vec); fall back to the stdlib where it is missing
    import sqlean as sqlite
except ImportError:  # pragma: no cover - sqlean is a dependency
    import sqlite3 as sqlite

DatabaseError = sqlite.DatabaseError
OperationalError = sqlite.OperationalError
Connection = sqlite.Connection


def run_statements(db: Any, script: str) -> None:
    """Run ``;``-separated statements one by one (``executescript`` would commit midway, and a
    migration runs inside its caller's transaction)."""
    for stmt in script.split(";"):
        if stmt.strip():
            db.execute(stmt)


def apply_migrations(db: Any, migrations: Sequence[Callable[[Any], None]]) -> int:
    """Apply every migration past the database's ``user_version``, in one ``BEGIN IMMEDIATE``
    transaction; return the new version.

    The version is read again under the write lock, so two processes opening a new database at
    once take turns instead of both running the steps; an up-to-date database takes no lock.
    Any failure (or interruption) rolls every step back.
    """
    if db.execute("PRAGMA user_version").fetchone()[0] >= len(migrations):
        return len(migrations)  # the common case: no write lock taken
    db.execute("BEGIN IMMEDIATE")
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        for number, step in enumerate(migrations[version:], start=version + 1):
            step(db)
            db.execute(f"PRAGMA user_version = {number}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return len(migrations)
