"""Which file is our index, and what is known about its health, without disturbing it.

An index path may name a user's file (``--db`` at their notes), one of our indexes, or one of
ours that is damaged. :func:`check_index_file` tells them apart through SQLite alone (see its
docstring for why never ``open()``); ``<index>.owner`` (:func:`owner_stamp`) names the file's
device and inode, so a damaged index of ours whose pages still look like ours is rebuilt (a
stamp alone is not enough: a user's file may reuse a deleted index's inode);
``<index>.damaged`` (:func:`damage_marker`) records damage that a read proved.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import urllib.parse
from pathlib import Path

from ..base.fileio import atomic_write
from ..base.indexfiles import IndexFiles
from ..base.sql import DatabaseError, StoreError, connect


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
        try:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        except DatabaseError:
            if app != APPLICATION_ID:
                raise
            # our header (page 1 says so) over a schema that no longer reads: a damaged index
            # of ours (a grown schema spans pages past the first), which the caller rebuilds
            names = set()
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
    connections (:mod:`memory_core.base.sql`), shares their locks and defers the close. The
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
    if not readable and _stamped(path) and _pages_look_ours(path, st.st_size):
        return
    raise IndexPathRefused(refusal + why)


#: Run in a child process: the page headers of a file SQLite cannot open. A child, because
#: ``open()`` + close in this process would drop its POSIX locks on the index (see
#: :func:`check_index_file`); the child holds none. Prints one JSON list of hex headers.
_PAGE_READER = """
import json, os, sys
path, size, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fd = os.open(path, os.O_RDONLY)
out = []
for n in range(0, size // step, max(1, size // step // 256)):
    out.append(os.pread(fd, 12, n * step).hex())
print(json.dumps(out))
"""

_PAGE_SIZES = (4096, 1024, 2048, 8192, 16384, 32768, 65536, 512)
_BTREE_FLAGS = {0x02, 0x05, 0x0A, 0x0D}


def _btree_header_ok(h: bytes, page: int) -> bool:
    """Whether ``h`` (a page's first bytes) is a plausible SQLite b-tree page header."""
    if len(h) < 8 or h[0] not in _BTREE_FLAGS:
        return False
    freeblock = int.from_bytes(h[1:3], "big")
    cells = int.from_bytes(h[3:5], "big")
    content = int.from_bytes(h[5:7], "big") or 65536
    return ((freeblock == 0 or 8 <= freeblock < page) and content <= page and h[7] <= 60
            and 8 + 2 * cells <= page)


def _pages_look_ours(path: Path, size: int) -> bool:
    """A file SQLite cannot open is a damaged index of ours only when its content still says
    so: whole pages, and past page 1 every page starts as a SQLite b-tree, overflow or
    freelist page does (at least one a b-tree page). A user's file that landed at the path of
    a deleted index, with its inode reused (so the owner stamp matches), is text or some other
    format: it fails this and stays refused."""
    import subprocess
    import sys

    for page in _PAGE_SIZES:
        if size < 2 * page or size % page:
            continue
        try:
            out = subprocess.run([sys.executable, "-I", "-S", "-c", _PAGE_READER, str(path),
                                  str(size), str(page)], capture_output=True, text=True,
                                 timeout=30, check=True).stdout
            heads = [bytes.fromhex(h) for h in json.loads(out)][1:]
        except (OSError, subprocess.SubprocessError, ValueError):
            return False
        btree = [h for h in heads if _btree_header_ok(h, page)]
        # overflow and freelist pages open with a page number: its top byte is 0 here
        if btree and all(h in btree or h[:1] == b"\0" for h in heads):
            return True
    return False
