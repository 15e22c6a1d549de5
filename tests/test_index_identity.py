"""An index is ours only when its content says so (issue #33, item 3): not an inode stamp,
which a user's file that lands at a deleted index's path may match (the inode reused)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.storage.indexfile import IndexPathRefused, check_index_file, stamp_owner


def _indexed(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("# Notes\n\n- the boiler is serviced in May\n")
    with MemoryIndex.open(ws, provider="none") as idx:
        idx.sync()
        db = idx.store_path
    return ws, db


@pytest.mark.parametrize("content", [b"my own notes, not an index\n" * 2048 + b"x" * 512,
                                     b"\0" * 16384])
def test_a_users_file_with_the_stamp_of_a_deleted_index_is_refused(
        tmp_path: Path, content: bytes) -> None:
    ws, db = _indexed(tmp_path)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(content)  # whole pages: what the old check took for a damaged index
    stamp_owner(db)  # as if the deleted index's inode were reused: the stamp matches it
    with pytest.raises(IndexPathRefused, match="not an index this project created"):
        check_index_file(db)
    with pytest.raises(IndexPathRefused), MemoryIndex.open(ws, provider="none") as idx:
        idx.sync()
    assert db.read_bytes() == content  # never overwritten


def test_a_damaged_index_whose_pages_are_still_ours_is_rebuilt(tmp_path: Path) -> None:
    ws, db = _indexed(tmp_path)
    data = bytearray(db.read_bytes())
    data[:4096] = data[4096:8192]  # page 1 gone: SQLite cannot open it
    db.write_bytes(bytes(data))
    stamp_owner(db)
    check_index_file(db)  # ours by its pages (and the stamp): no refusal
    with MemoryIndex.open(ws, provider="none") as idx:
        assert idx.sync().full
        assert [h.path for h in idx.search("boiler serviced").hits] == ["MEMORY.md"]


def test_one_db_serves_one_workspace(tmp_path: Path) -> None:
    db = {"store": {"path": str(tmp_path / "shared.sqlite")}}
    a, b = tmp_path / "a", tmp_path / "b"
    for ws, text in ((a, "- alpha secret of workspace a\n"), (b, "- bravo notes\n")):
        ws.mkdir()
        (ws / "MEMORY.md").write_text(text)
    with MemoryIndex.open(a, provider="none", overrides=db) as idx:
        idx.sync()
    with pytest.raises(IndexPathRefused, match="one index serves one workspace"), \
            MemoryIndex.open(b, provider="none", overrides=db) as idx:
        idx.sync()
    with pytest.raises(IndexPathRefused, match="one index serves one workspace"), \
            MemoryIndex.open(b, provider="none", overrides=db) as idx:
        idx.auto_sync = False
        idx.search("alpha secret")
    with MemoryIndex.open(a, provider="none", overrides=db) as idx:  # its own: served
        assert [h.path for h in idx.search("alpha secret").hits] == ["MEMORY.md"]


def test_a_full_disk_is_a_store_error_with_one_line(tmp_path: Path) -> None:
    """SQLITE_FULL (here from a page limit, as a full disk gives it) is a ``StoreError``, which
    every face prints as one line, not SQLite's bare ``OperationalError`` (a traceback)."""
    from memory_core.base.sql import StoreError, StoreFull, connect

    con = connect(str(tmp_path / "small.sqlite"))
    con.execute("CREATE TABLE t(x BLOB)")
    con.execute("PRAGMA max_page_count = 8")
    with pytest.raises(StoreFull, match="full") as e:
        for _ in range(100):
            con.execute("INSERT INTO t VALUES (zeroblob(4000))")
    assert isinstance(e.value, StoreError) and "\n" not in str(e.value)
    con.close()


def test_a_copied_workspace_keeps_its_own_index(tmp_path: Path) -> None:
    import shutil

    ws, _ = _indexed(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(ws, copy)  # .memory/ and all: the copy's index names the original
    with MemoryIndex.open(copy, provider="none") as idx:
        assert [h.path for h in idx.search("boiler serviced").hits] == ["MEMORY.md"]
