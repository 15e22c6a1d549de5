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

Connections opened with :func:`connect` raise SQLite's errors typed by their result code:
:class:`StoreLocked` (busy, locked: contention) and :class:`StoreCorrupt` (a damaged file), at
whichever step SQLite reports them, so that callers decide by type and never by message text.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

try:  # sqlean can load extensions (sqlite-vec); fall back to the stdlib where it is missing
    import sqlean as sqlite
except ImportError:  # pragma: no cover - sqlean is a dependency
    import sqlite3 as sqlite

DatabaseError = sqlite.DatabaseError
OperationalError = sqlite.OperationalError
Connection = sqlite.Connection

#: SQLite's primary result codes for "another connection holds the lock" and "the file is
#: damaged" (https://sqlite.org/rescode.html); extended codes carry them in their low byte.
_LOCKED_CODES = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED
_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
#: SQLITE_FULL: the disk (or the file's page limit) is full; SQLITE_IOERR: a write the OS
#: refused (a file-size limit, EIO), the same for the faces: one line, not a traceback
_FULL_CODES = {13, 10}


class StoreError(RuntimeError):
    """The index database cannot be used (locked, corrupt, unreadable); the message says why."""


class StoreLocked(StoreError, sqlite.OperationalError):
    """SQLite reported the database busy or locked (``SQLITE_BUSY``, ``SQLITE_LOCKED``):
    another connection holds it. Contention, never damage: wait, retry or answer from what was
    committed. Still an ``OperationalError``, as SQLite's own error was."""


class StoreCorrupt(StoreError, sqlite.DatabaseError):
    """SQLite reported the file damaged (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``: "database disk
    image is malformed", "file is not a database"). Still a ``DatabaseError``."""


class StoreFull(StoreError, sqlite.OperationalError):
    """SQLite could not write: the disk is full (``SQLITE_FULL``) or the OS refused the write
    (``SQLITE_IOERR``). A one-line error for the
    faces, not a traceback; the write's transaction rolled back. Still an
    ``OperationalError``."""


def typed_error(e: Exception) -> Exception:
    """``e`` as :class:`StoreLocked` or :class:`StoreCorrupt` when its SQLite result code says
    so (same message and codes), else ``e`` itself: callers decide by type, not by text."""
    if isinstance(e, StoreError):
        return e
    code = getattr(e, "sqlite_errorcode", None)
    if not isinstance(code, int):
        return e
    cls = StoreLocked if code & 0xFF in _LOCKED_CODES else \
        StoreCorrupt if code & 0xFF in _CORRUPT_CODES else \
        StoreFull if code & 0xFF in _FULL_CODES else None
    if cls is None:
        return e
    typed = cls(*e.args)
    typed.sqlite_errorcode = code
    typed.sqlite_errorname = getattr(e, "sqlite_errorname", None)
    return typed


def _raise_typed(e: Exception) -> NoReturn:
    typed = typed_error(e)
    if typed is e:
        raise e  # untyped: as SQLite raised it (``from e`` would make it its own cause)
    raise typed from e


def _typed(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` raising its SQLite errors typed (:func:`typed_error`)."""

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except DatabaseError as e:
            _raise_typed(e)

    return call


class TypedCursor(sqlite.Cursor):
    """A cursor whose SQLite errors are typed, wherever a statement fails: at ``execute``, or
    at any later step of its rows (damage found mid-scan)."""

    execute = _typed(sqlite.Cursor.execute)
    executemany = _typed(sqlite.Cursor.executemany)
    fetchone = _typed(sqlite.Cursor.fetchone)
    fetchmany = _typed(sqlite.Cursor.fetchmany)
    fetchall = _typed(sqlite.Cursor.fetchall)

    def __next__(self) -> Any:  # written out: one call per row, not two
        try:
            return super().__next__()
        except DatabaseError as e:
            _raise_typed(e)


class TypedConnection(sqlite.Connection):
    """A connection whose statements run on :class:`TypedCursor` (and whose backups raise
    typed errors too): what :func:`connect` opens."""

    def execute(self, sql: str, parameters: Any = ()) -> TypedCursor:
        return self.cursor(TypedCursor).execute(sql, parameters)

    def executemany(self, sql: str, seq: Any) -> TypedCursor:
        return self.cursor(TypedCursor).executemany(sql, seq)

    backup = _typed(sqlite.Connection.backup)


def connect(database: str, **kwargs: Any) -> TypedConnection:
    """Open ``database`` (``sqlite.connect``'s arguments) with typed errors."""
    try:
        return sqlite.connect(database, factory=TypedConnection, **kwargs)
    except DatabaseError as e:
        _raise_typed(e)


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
        if db.in_transaction:  # SQLite rolls back itself on a full disk: keep its error
            db.execute("ROLLBACK")
        raise
    return len(migrations)
