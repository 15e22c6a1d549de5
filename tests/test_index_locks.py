"""An index open in this process keeps its SQLite locks whatever else the process does (issue #19
item 1): no plain ``open()`` of the file and no second SQLite library may drop them.

POSIX ``fcntl`` locks belong to the process and the file: closing *any* descriptor of the file
drops all of them. SQLite shares one descriptor's locks among its own connections of a process
(and defers closing), but only within one library. When the locks are gone, another process
closing its connection takes itself for the last one, checkpoints and deletes ``-wal``/``-shm``
under the live connection. These tests watch exactly that: a second process opens and closes the
index while this process still holds it; the ``-wal`` must survive.

Then items 2 and 3: a rebuild by another process is seen by a connection held here (the file
is written into, never renamed over), a lock is waited out or reported and never taken for
damage, a LiveIndex answers what another process committed, and a damaged index of ours (page
1 destroyed, a meta row that is not JSON) is rebuilt while a foreign file stays refused.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.base.sql import sqlite
from memory_core.promotion.state import open_state
from memory_core.storage.store import (
    IndexPathRefused,
    IndexUnavailable,
    Store,
    StoreError,
    check_index_file,
    owner_stamp,
)
from memory_core.write.sync import guard_index_path

ROOT = Path(__file__).resolve().parents[1]

# a second process that opens the index, reads, closes: the last connection would checkpoint
# and delete the -wal; with this test process's locks in place it must not
_OPEN_CLOSE = (
    "import sqlean, sys; c = sqlean.connect(sys.argv[1]);"
    " c.execute('SELECT count(*) FROM sqlite_master').fetchone(); c.close()"
)


def _other_process_opens_and_closes(db: Path) -> None:
    subprocess.run([sys.executable, "-c", _OPEN_CLOSE, str(db)], check=True, timeout=60)


@pytest.fixture
def indexed(tmp_path: Path) -> MemoryIndex:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Notes\n\nThe boiler is serviced in March.\n")
    (ws / "memory" / "2026-01-02.md").write_text("Bought a kettle.\n")
    idx = MemoryIndex.open(ws, provider="none")
    idx.sync()
    return idx


def _live(idx: MemoryIndex) -> Store:
    store = idx.store  # an open connection, as a search holds it
    store.db.execute("SELECT count(*) FROM chunks").fetchone()
    assert Path(f"{idx.store_path}-wal").exists()
    return store


def test_header_check_keeps_this_process_locks(indexed: MemoryIndex) -> None:
    _live(indexed)
    check_index_file(indexed.store_path)
    _other_process_opens_and_closes(indexed.store_path)
    assert Path(f"{indexed.store_path}-wal").exists(), "locks dropped: the -wal was deleted"
    indexed.close()


def test_guard_and_second_store_keep_locks(indexed: MemoryIndex) -> None:
    _live(indexed)
    guard_index_path(indexed.store_path, indexed.workspace, indexed.config)
    Store(indexed.store_path).close()  # another connection of the same process, opened and closed
    _other_process_opens_and_closes(indexed.store_path)
    assert Path(f"{indexed.store_path}-wal").exists()
    indexed.close()


def test_state_store_import_of_index_files_keeps_locks(indexed: MemoryIndex) -> None:
    """The state store reads every index file of the workspace once (old signals): with the
    same SQLite library, its connection closing leaves the live connection's locks alone."""
    _live(indexed)
    st = open_state(indexed.workspace, legacy=[indexed.store_path])
    assert str(indexed.store_path.resolve()) in st.legacy_imported()
    st.close()
    _other_process_opens_and_closes(indexed.store_path)
    assert Path(f"{indexed.store_path}-wal").exists()
    indexed.close()


def test_header_check_writes_nothing_beside_a_foreign_database(tmp_path: Path) -> None:
    other = tmp_path / "theirs.db"
    con = sqlite.connect(other)
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("CREATE TABLE notes(x)")
    con.commit()
    con.close()
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(IndexPathRefused):
        check_index_file(other)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_owner_stamp_is_tied_to_the_file(indexed: MemoryIndex) -> None:
    """The stamp beside an index names that very file (device and inode): a user's file put at
    the same path later is not taken for ours."""
    stamp = owner_stamp(indexed.store_path)
    assert stamp.exists()
    indexed.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{indexed.store_path}{suffix}").unlink(missing_ok=True)
    indexed.store_path.write_bytes(b"my own notes, not an index\n" * 10)
    assert stamp.exists()
    with pytest.raises(IndexPathRefused):
        check_index_file(indexed.store_path)


def _imports_stdlib_sqlite(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "sqlite3" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlite3":
            return True
    return False


def test_one_sqlite_library_per_process() -> None:
    """Only ``common/sql.py`` chooses the SQLite library (the stdlib only where sqlean is
    missing); everything else connects through it."""
    allowed = {ROOT / "memory_core" / "base" / "sql.py"}
    offenders = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "memory_core").rglob("*.py"))
                 if p not in allowed and _imports_stdlib_sqlite(p)]
    assert offenders == []


# ---------------------------------------------------------------------------- items 2 and 3


def _search_paths(idx: MemoryIndex, query: str) -> list[str]:
    return [h.path for h in idx.search(query).hits]


def test_a_rebuild_elsewhere_is_seen_by_a_held_connection(indexed: MemoryIndex) -> None:
    """A reader that keeps its connection (a live server's) answers from the rebuilt index,
    never from a file renamed away under it: the file stays, the new pages are copied in."""
    indexed.auto_sync = False
    assert _search_paths(indexed, "boiler") == ["MEMORY.md"]
    inode = indexed.store_path.stat().st_ino
    (indexed.workspace / "memory" / "2026-01-03.md").write_text("The QUOKKA arrived today.\n")
    subprocess.run([str(Path(sys.executable).with_name("memory-core")), "index", "--force",
                    "-w", str(indexed.workspace), "--provider", "none"],
                   check=True, timeout=120, capture_output=True)
    assert indexed.store_path.stat().st_ino == inode
    assert _search_paths(indexed, "QUOKKA") == ["memory/2026-01-03.md"]
    assert _search_paths(indexed, "boiler") == ["MEMORY.md"]
    indexed.close()


def _one_note(tmp_path: Path, busy_ms: int) -> tuple[Path, dict[str, object], Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("# Notes\n\nThe boiler is serviced in March.\n")
    ov: dict[str, object] = {"store": {"busy_timeout_ms": busy_ms}}
    with MemoryIndex.open(ws, provider="none", overrides=ov) as idx:
        idx.sync()
    return ws, ov, idx.store_path


def _hold_exclusive(db: Path, seconds: str) -> subprocess.Popen[str]:
    """Another process holds the index in exclusive locking mode (readers get "locked") for
    ``seconds``, or until its stdin closes (``"stdin"``)."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlean, sys, time; c = sqlean.connect(sys.argv[1], isolation_level=None);"
         " c.execute('PRAGMA locking_mode = EXCLUSIVE'); c.execute('BEGIN EXCLUSIVE');"
         " c.execute(\"INSERT INTO meta(key, value) VALUES ('held', '1')\");"
         " print('held', flush=True);"
         " sys.stdin.read() if sys.argv[2] == 'stdin' else time.sleep(float(sys.argv[2]));"
         " c.execute('COMMIT')",
         str(db), seconds], stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_lock_held_elsewhere_is_waited_out_not_taken_for_damage(tmp_path: Path) -> None:
    ws, ov, db = _one_note(tmp_path, 100)
    holder = _hold_exclusive(db, "0.15")
    with MemoryIndex.open(ws, provider="none", overrides=ov) as idx:
        idx.auto_sync = False
        assert _search_paths(idx, "boiler") == ["MEMORY.md"]  # retried past the lock
    holder.wait(30)
    assert not Path(f"{db}.damaged").exists()


def test_a_lock_that_outlasts_the_retries_is_a_clear_error(tmp_path: Path) -> None:
    ws, ov, db = _one_note(tmp_path, 50)
    holder = _hold_exclusive(db, "stdin")
    try:
        with MemoryIndex.open(ws, provider="none", overrides=ov) as idx:
            idx.auto_sync = False
            with pytest.raises(StoreError) as err:
                idx.search("boiler")
        assert not isinstance(err.value, IndexUnavailable)
        assert "locked" in str(err.value)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(30)
    assert not Path(f"{db}.damaged").exists()
    with MemoryIndex.open(ws, provider="none") as idx:
        assert _search_paths(idx, "boiler") == ["MEMORY.md"]


def _destroy_page_one(db: Path) -> None:
    """Page 1 overwritten by a b-tree page, as the issue saw (no connection open here)."""
    data = bytearray(db.read_bytes())
    data[:4096] = data[4096:8192]
    db.write_bytes(bytes(data))


def test_our_index_with_page_one_destroyed_is_rebuilt_not_refused(indexed: MemoryIndex) -> None:
    db = indexed.store_path
    indexed.store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the file alone is the index
    indexed.close()
    _destroy_page_one(db)
    with pytest.raises(StoreError):  # not ours by its header any more: SQLite cannot read it
        Store(db, readonly=True, fts_scan=True).close()
    exe = str(Path(sys.executable).with_name("memory-core"))
    out = subprocess.run([exe, "index", "-w", str(indexed.workspace), "--provider", "none"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    with MemoryIndex.open(indexed.workspace, provider="none") as idx:
        assert _search_paths(idx, "boiler") == ["MEMORY.md"]
        assert idx.store.check_integrity() is None


def test_a_foreign_file_with_a_stale_stamp_of_another_file_is_refused(tmp_path: Path) -> None:
    """A stamp proves nothing for another file: a user's database put at a path that once
    held one of our indexes stays refused (and so would one that reused its inode: SQLite
    reads it, so it is not a damaged index of ours)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("# Notes\n")
    with MemoryIndex.open(ws, provider="none") as idx:
        idx.sync()
        db = idx.store_path
    theirs = tmp_path / "recipes.db"
    con = sqlite.connect(theirs)
    con.execute("CREATE TABLE recipes(x)")
    con.commit()
    con.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    os.replace(theirs, db)
    assert owner_stamp(db).exists()
    with pytest.raises(IndexPathRefused):
        check_index_file(db)


def test_live_index_beside_an_external_syncing_process(indexed: MemoryIndex) -> None:
    """Item 2's third case: a LiveIndex (its own reader and writer, no watcher) while another
    process indexes and rebuilds the same index: what that process committed is what the
    LiveIndex answers, at once; never an empty success from a file renamed away."""
    from memory_core.live import LiveIndex

    ws = indexed.workspace
    indexed.close()
    exe = str(Path(sys.executable).with_name("memory-core"))
    diary = ws / "memory" / "2026-01-09.md"
    with LiveIndex.open(ws, provider="none", watch=False) as live:
        assert live.wait_idle(60)
        for i, extra in enumerate([["--force"], [], ["--force"]]):
            marker = f"ZEBRA{i}MARK"
            with diary.open("a") as f:
                f.write(f"Entry {i}: {marker}\n")
            subprocess.run([exe, "index", "-w", str(ws), "--provider", "none", *extra],
                           check=True, capture_output=True, timeout=120)
            reader = live.search_index()  # auto_sync off: what the other process committed
            assert [h.path for h in reader.search(marker).hits] == ["memory/2026-01-09.md"]
            assert [h.path for h in reader.search("boiler").hits] == ["MEMORY.md"]


def test_a_meta_row_that_is_not_json_is_damage_and_index_rebuilds(indexed: MemoryIndex) -> None:
    """The first corruption the issue saw: ``meta`` holding rows of ``files``, and every face,
    ``index --force`` included, failing with "Expecting value". Now it is damage: rebuilt."""
    db = indexed.store_path
    indexed.close()
    con = sqlite.connect(db)
    con.execute("UPDATE meta SET value = 'MEMORY.md|memory|abc' WHERE key = ?",
                ("memory_index_meta_v1",))
    con.commit()
    con.close()
    exe = str(Path(sys.executable).with_name("memory-core"))
    for extra in ([], ["--force"]):
        out = subprocess.run([exe, "index", "-w", str(indexed.workspace), "--provider", "none",
                              *extra], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    with MemoryIndex.open(indexed.workspace, provider="none") as idx:
        assert idx.store.get_meta() is not None
        assert _search_paths(idx, "boiler") == ["MEMORY.md"]
    con = sqlite.connect(indexed.store_path)
    con.execute("UPDATE meta SET value = '[1, 2]' WHERE key = ?", ("memory_index_meta_v1",))
    con.commit()
    con.close()
    with MemoryIndex.open(indexed.workspace, provider="none") as idx:
        assert idx.generation == 0
        assert "damaged" in (idx.status().error or "")
        assert _search_paths(idx, "boiler") == ["MEMORY.md"]  # a search that syncs rebuilds
