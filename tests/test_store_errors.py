"""SQLite's errors are typed where SQLite reports them (issue #20 item 4): :class:`StoreLocked`
for a busy or locked database, :class:`StoreCorrupt` for a damaged file, by SQLite's result code,
with SQLite's own message, at ``execute`` or at any later row."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.base.sql import (
    DatabaseError,
    OperationalError,
    StoreCorrupt,
    StoreError,
    StoreLocked,
    connect,
)
from memory_core.storage.store import Store


def _table(path: Path, rows: int = 2000) -> None:
    con = connect(str(path), isolation_level=None)
    con.execute("CREATE TABLE t(a INTEGER, b BLOB)")
    con.executemany("INSERT INTO t VALUES (?, ?)", ((i, b"x" * 200) for i in range(rows)))
    con.close()


def _hold(db: Path) -> subprocess.Popen[str]:
    """Another process holds ``db``'s write lock (POSIX locks do not conflict within one)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlean, sys, time; c = sqlean.connect(sys.argv[1], "
         "isolation_level=None); c.execute('BEGIN EXCLUSIVE'); print('held', flush=True); "
         "time.sleep(30)", str(db)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Notes\n\nThe boiler is serviced in March.\n")
    return ws


def test_a_lock_held_elsewhere_is_store_locked_with_sqlites_message(tmp_path: Path) -> None:
    db = tmp_path / "t.sqlite"
    _table(db, 1)  # rollback journal: an exclusive lock keeps readers out too
    holder = _hold(db)
    try:
        con = connect(str(db), isolation_level=None, timeout=0.1)
        with pytest.raises(StoreLocked) as err:
            con.execute("SELECT count(*) FROM t").fetchone()
        con.close()
    finally:
        holder.kill()
        holder.wait()
    e = err.value
    assert str(e) == "database is locked" and e.sqlite_errorname == "SQLITE_BUSY"
    assert isinstance(e, OperationalError) and isinstance(e, StoreError)  # both doors hold
    assert not isinstance(e, StoreCorrupt)


def test_the_stores_lock_error_is_typed_and_says_so(tmp_path: Path) -> None:
    with MemoryIndex.open(_ws(tmp_path), provider="none") as idx:
        idx.sync()
        path = idx.store_path
    holder = _hold(path)
    try:
        store = Store(path, busy_timeout_ms=100)  # WAL: reading goes on, writing waits
        with pytest.raises(StoreLocked, match="locked by another process"):
            store.begin()
        store.close()
    finally:
        holder.kill()
        holder.wait()


def test_damage_found_midway_through_the_rows_is_store_corrupt(tmp_path: Path) -> None:
    db = tmp_path / "t.sqlite"
    _table(db)
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    mid = (len(data) // page // 2) * page
    data[mid:mid + page] = b"\xff" * page  # one leaf page of the table, far from the start
    db.write_bytes(bytes(data))
    con = connect(str(db), isolation_level=None)
    rows = con.execute("SELECT a FROM t")
    assert rows.fetchone() == (0,)  # the first page reads fine
    with pytest.raises(StoreCorrupt) as err:
        for _ in rows:
            pass
    con.close()
    assert "malformed" in str(err.value) and isinstance(err.value, DatabaseError)


def test_a_file_that_is_not_a_database_is_store_corrupt(tmp_path: Path) -> None:
    db = tmp_path / "t.sqlite"
    db.write_bytes(b"not a database at all" * 100)
    con = connect(str(db))
    with pytest.raises(StoreCorrupt, match="not a database"):
        con.execute("SELECT * FROM sqlite_master").fetchall()
    con.close()


def test_other_sqlite_errors_stay_as_sqlite_raised_them(tmp_path: Path) -> None:
    con = connect(":memory:")
    with pytest.raises(OperationalError) as err:
        con.execute("SELECT * FROM missing")
    assert not isinstance(err.value, StoreError)
    con.close()
