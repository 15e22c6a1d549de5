"""SQL helpers shared by the index's and the state store's migrations."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


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
