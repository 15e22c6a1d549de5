"""Putting an index built aside in place of the live one, and removing a discarded one.

A rebuild (:meth:`memory_core.write.sync.Indexer._rebuild`) writes the whole index into a temporary
file; :func:`swap_in` makes it the index every reader sees, without breaking the connections
other processes hold to the live file, and :func:`remove_index` deletes a temporary file that
is given up (with its journal files).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ..base.indexfiles import IndexFiles
from ..base.sql import connect
from .store import DatabaseError, Store, StoreCorrupt, check_index_file, damage_marker


def _sync_file(path: Path) -> None:
    """``fsync`` a file built with ``synchronous = OFF`` (the rename must not outrun its data)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_index(path: Path) -> None:
    """Delete the index file ``path`` and its journal files (those absent are skipped)."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
    _remove_journal(path)


def swap_in(tmp: Path, target: Path, busy_timeout_ms: int = 5000) -> None:
    """Put the index built at ``tmp`` in place of ``target`` (and delete ``tmp``).

    Other processes may hold connections to ``target`` right now (an MCP server, a watcher, a
    search), so the file itself stays: the new pages are copied into it with SQLite's online
    backup, one write transaction under SQLite's own locks, which every reader sees as an
    ordinary commit. Renaming a file over an index in use would leave those connections on the
    old inode while a ``-wal`` and ``-shm`` named after the path are shared with the new one:
    old readers then read the new file's frames over the old pages ("malformed"), and a wrong
    checkpoint loses commits (issue #19). Only a target SQLite cannot open as a database at all
    (its page 1 destroyed: nothing could be reading it) is replaced by an atomic rename, after
    its ``-wal``/``-shm`` are removed so that no frame of it is applied to the new file.
    """
    check_index_file(target)  # a file that appeared meanwhile and is not ours stays untouched
    copied = False
    if target.exists():
        with contextlib.suppress(StoreCorrupt):  # not a database any more: renamed over below
            _copy_into(tmp, target, busy_timeout_ms)
            copied = True
    if copied:
        remove_index(tmp)
    else:
        # durable and in WAL mode, as every index is, before it replaces the damaged one
        Store(tmp, busy_timeout_ms, fts_scan=False).close()
        _sync_file(tmp)
        _remove_journal(target)
        _remove_journal(tmp)
        os.replace(tmp, target)
    with contextlib.suppress(FileNotFoundError):
        os.remove(damage_marker(target))


def _copy_into(tmp: Path, target: Path, busy_timeout_ms: int) -> None:
    """Copy every page of ``tmp`` into the live index ``target`` in one transaction (SQLite's
    backup), then fold the WAL back into the file when no reader holds it. It costs ~6% of a
    forced rebuild (34 MB index: 0.40 s of 5.8 s; a rename took 0.05 s)."""
    src = connect(str(tmp), isolation_level=None)
    dst = connect(str(target), isolation_level=None, timeout=busy_timeout_ms / 1000)
    try:
        dst.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        if str(dst.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            dst.execute("PRAGMA journal_mode = WAL")
        src.backup(dst)
        # the WAL now holds every page: fold it in and shrink it to nothing, unless readers
        # still hold old pages (then a later checkpoint does it; never wait long for them)
        dst.execute("PRAGMA busy_timeout = 200")
        with contextlib.suppress(DatabaseError):
            dst.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        src.close()
        dst.close()


def _remove_journal(path: Path) -> None:
    for p in IndexFiles(path).journal:
        with contextlib.suppress(FileNotFoundError):
            os.remove(p)
