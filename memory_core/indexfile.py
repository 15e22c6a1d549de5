"""Which file is our index, and what is known about its health, without disturbing it.

An index path may name a user's file (``--db`` at their notes), one of our indexes, or one of
ours that is damaged. :func:`check_index_file` tells them apart through SQLite alone (see its
docstring for why never ``open()``); ``<index>.owner`` (:func:`owner_stamp`) names the file's
device and inode, so a damaged index of ours is still rebuilt and a foreign file still refused;
``<index>.damaged`` (:func:`damage_marker`) records damage that a read proved.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import urllib.parse
from pathlib import Path

from .common.fileio import atomic_write
from .common.indexfiles import IndexFiles
from .common.sql import DatabaseError, StoreError, connect


class IndexPathRefused(StoreError):
    """The index path names a file this project did not create (a user's Markdown, somebody
    else's database): it is never opened, rebuilt or replaced. The message is one line."""


class IndexUnavailable(StoreError):
    """The index cannot answer right now: it is damaged (and not yet rebuilt from the
    Markdown), so a search must report an error, never an empty success. One line says why."""


#: ``PRAGMA application_id`` of every index this project writes (ASCII ``MWIX``): together with
#: the SQLite header it tells our index from any other file, even when its pages are damaged.
APPLICATION_ID = 0x4D574958
_OUR_TABLES = {"meta", "files", "chunks", "chunks_fts"}


def damage_marker(path: Path) -> Path:
    """``<index>.damaged``: left by the read that found the index damaged (with the reason), so
    the next sync rebuilds it even when its own reads never touch the damaged pages; removed
    when the rebuilt index is swapped in."""
    return IndexFiles(path).damaged


def damage_found(path: Path) -> str | None:
    """The reason recorded in the damage marker of the index at ``path``, if there is one."""
    try:
        return damage_marker(path).read_text(encoding="utf-8", errors="replace").strip() or "?"
    except OSError:
        return None


def owner_stamp(path: Path) -> Path:
    """``<index>.owner``: written beside every index this project builds or opens, naming the
    file's device and inode. It is how a damaged index (page 1 overwritten, say) is still known
    as ours and rebuilt aside, while any other file at that path stays refused."""
    return IndexFiles(path).owner


def file_id(path: Path) -> list[int] | None:
    """The file's ``[device, inode]`` (``None``: missing); what the owner stamp records."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino]


def stamp_owner(path: Path) -> None:
    """Write (or correct) the owner stamp of our index at ``path``; a stamp that cannot be
    written only costs the damaged-index recognition, so errors are ignored."""
    fid = file_id(path)
    if fid is None or _stamped(path, fid):
        return
    stamp = json.dumps({"app": "memory_core", "file": fid}) + "\n"
    with contextlib.suppress(OSError):
        atomic_write(owner_stamp(path), stamp.encode())


def _stamped(path: Path, fid: list[int] | None = None) -> bool:
    fid = fid or file_id(path)
    try:
        stamp = json.loads(owner_stamp(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp.get("app") == "memory_core" \
        and fid is not None and stamp.get("file") == fid


def read_uri(path: Path, *, immutable: bool = False) -> str:
    """A read-only SQLite URI for ``path`` (any character of the name escaped). ``immutable``:
    SQLite reads the main file alone, takes no lock and creates no ``-wal``/``-shm``."""
    q = urllib.parse.quote(os.path.abspath(path))
    return f"file:{q}?mode=ro{'&immutable=1' if immutable else ''}"


def _identity(uri: str) -> tuple[int, set[str]]:
    """``application_id`` and table names, read through SQLite (see :func:`check_index_file`)."""
    con = connect(uri, uri=True, timeout=5)
    try:
        app = int(con.execute("PRAGMA application_id").fetchone()[0])
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    finally:
        con.close()
    return app, names


def check_index_file(path: Path) -> None:
    """Raise :class:`IndexPathRefused` unless ``path`` is missing or one of our indexes.

    Ours: a SQLite file with our ``application_id``, or (indexes written before it was set) one
    holding our tables, or (a damaged index of ours, which SQLite cannot read as a database) one
    of whole pages whose :func:`owner_stamp` names this very file. Writes nothing.

    The file is read through SQLite, never with ``open()``: this runs inside processes that
    hold connections to the index, and closing any descriptor of a file drops every POSIX lock
    the process holds on it, so another process would take itself for the last connection and
    delete the ``-wal`` under the live ones (issue #19). SQLite, the same library as those
    connections (:mod:`memory_core.common.sql`), shares their locks and defers the close. The
    first read is ``immutable`` (the main file alone: nothing is created beside a user's file);
    only a file with a ``-wal`` is read again through it, where a fresh index's page 1 may be.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise IndexPathRefused(f"index path {path}: {e.strerror or e}") from e
    if stat.S_ISDIR(st.st_mode):
        raise IndexPathRefused(f"index path {path} is a folder, not an index file")
    if not stat.S_ISREG(st.st_mode):
        raise IndexPathRefused(f"index path {path} is not a regular file")
    refusal = (f"index path {path} is an existing file that is not an index this project "
               "created; it is left untouched: choose another --db / [store] path")
    why = ""
    readable = False
    uris = [read_uri(path, immutable=True)]
    if IndexFiles(path).wal.exists():
        uris.append(read_uri(path))
    for uri in uris:
        try:
            app, names = _identity(uri)
        except DatabaseError as e:
            why = f" ({e})"
            continue
        if app == APPLICATION_ID or _OUR_TABLES <= names:
            return
        readable = readable or st.st_size > 0
    # Ours, and damaged (SQLite cannot read it as a database): the caller rebuilds it aside.
    # Never for a database SQLite can read, nor for a file that is not whole pages (512 bytes
    # at least): a user's file put at the path of a deleted index may reuse its inode.
    if not readable and st.st_size % 512 == 0 and _stamped(path):
        return
    raise IndexPathRefused(refusal + why)
