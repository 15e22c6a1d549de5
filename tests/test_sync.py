"""Sync: incremental updates, atomic rebuilds, and an index that survives crashes and bad input."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.promotion import recall_recorder, state_of
from memory_core.storage.store import IndexPathRefused, Store, StoreError

from .conftest import ROOT


def _chunks(idx: MemoryIndex) -> list[tuple[str, int, int, str]]:
    return [(c.path, c.start_line, c.end_line, c.hash) for c in idx.chunks()]


def test_first_sync_indexes_memory_notes_and_sessions(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        report = idx.sync()
        assert report.full and report.reason == "no index yet"
        paths = {f.path for f in idx.files()}
        assert "MEMORY.md" in paths and "memory/2026-11-03.md" in paths
        assert "notes/runbooks/restore-backup.md" in paths  # extra path, glob **/*.md
        assert "notes/diagram.txt" not in paths
        assert any(p.startswith("sessions/") for p in paths)
        st = idx.status()
        assert st.bad_jsonl_lines == 1  # the demo's deliberately malformed transcript line
        assert {s.source for s in st.source_counts} == {"memory", "sessions"}
        assert st.generation == 1 and st.to_json()["badJsonlLines"] == 1


def test_second_sync_writes_nothing(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        before = idx.store_path.stat().st_mtime_ns
        report = idx.sync()
    assert not report.full
    assert (report.files_indexed, report.files_touched, report.files_deleted,
            report.chunks_written, report.embedded) == (0, 0, 0, 0, 0)
    assert report.files_unchanged == report.files_seen > 0
    assert not report.wrote_anything
    assert idx.store_path.stat().st_mtime_ns == before


def test_generation_counts_syncs_that_changed_something(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        assert idx.generation == 0  # no index yet
        idx.sync()
        assert idx.generation == 1
        idx.sync()  # nothing changed: no new generation
        assert idx.generation == 1
        note = demo_ws / "memory" / "2026-12-01.md"
        note.write_text("# New\n\n- a new diary entry about the router\n", encoding="utf-8")
        idx.sync()
        assert idx.generation == 2
        assert idx.status().generation == 2 and idx.status().last_sync_at
        assert idx.sync(force=True).full  # a rebuild continues the count
        assert idx.generation == 3


def test_rebuilding_from_scratch_gives_identical_chunks(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        first = _chunks(idx)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{idx.store_path}{suffix}").unlink(missing_ok=True)
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        assert _chunks(idx) == first


def test_edit_touch_and_delete_are_incremental(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        diary = demo_ws / "memory" / "2026-11-03.md"
        diary.write_text(diary.read_text() + "\n- appended fact: ZEBRA_TOKEN_42\n")
        os.utime(demo_ws / "MEMORY.md")  # mtime changes, content does not
        (demo_ws / "memory" / "2026-10-20.md").unlink()
        time.sleep(0.01)
        report = idx.sync()
        assert not report.full
        assert report.files_indexed == 1 and report.files_touched == 1
        assert report.files_deleted == 1
        assert "memory/2026-10-20.md" not in {f.path for f in idx.files()}
        hits = idx.search("ZEBRA_TOKEN_42").hits
        assert hits and hits[0].path == "memory/2026-11-03.md"
        assert idx.search("ZEBRA_TOKEN_42").hits[0].end_line >= 34


def test_identity_change_rebuilds_aside(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        n = len(idx.chunks())
    overrides = {"chunking": {"tokens": 120, "overlap": 20}}
    with MemoryIndex.open(demo_ws, provider="none", overrides=overrides) as idx2:
        assert idx2.store_path == idx.store_path
        report = idx2.sync()
        assert report.full and "chunkTokens" in report.reason
        assert len(idx2.chunks()) > n
    assert not list(idx.store_path.parent.glob("*.tmp-*"))


def test_huge_single_line_and_bad_files_do_not_stop_indexing(demo_ws: Path) -> None:
    mem = demo_ws / "memory"
    (mem / "2026-11-29.md").write_text("# big\n" + "x" * (5 * 1024 * 1024) + " NEEDLE_HUGE\n")
    (mem / "binary.md").write_bytes(b"\x00\x01\x02 binary")
    (mem / "latin1.md").write_bytes("caf\xe9 ACCENT_MARK\n".encode("latin-1"))
    locked = mem / "locked.md"
    locked.write_text("secret\n")
    locked.chmod(0)
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        report = idx.sync()
        warnings = "\n".join(report.warnings)
        assert "binary.md: looks binary" in warnings
        assert "latin1.md: invalid UTF-8" in warnings
        if os.geteuid() != 0:  # root reads anything
            assert "locked.md: cannot read" in warnings
        assert report.files_failed >= 1
        assert idx.search("ACCENT_MARK").hits
        big = idx.chunks("memory/2026-11-29.md")
        assert all(len(c.text) <= 1600 for c in big)
        assert any("NEEDLE_HUGE" in c.text for c in big)
        assert len({c.id for c in big}) == len(big)  # identical pieces stored once
        assert idx.search("NEEDLE_HUGE").hits[0].path == "memory/2026-11-29.md"


def test_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    from memory_core import WorkspaceError

    with pytest.raises(WorkspaceError, match="does not exist"):
        MemoryIndex.open(tmp_path / "nope")


def test_corrupt_index_is_rebuilt_and_markdown_untouched(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        n = len(idx.chunks())
    before = {p: p.read_bytes() for p in demo_ws.rglob("*.md")}
    for suffix in ("-wal", "-shm"):
        Path(f"{idx.store_path}{suffix}").unlink(missing_ok=True)
    data = bytearray(idx.store_path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page:] = b"this is not a database" * ((len(data) - page) // 22) + b"x" * (
        (len(data) - page) % 22)  # every page but the first (header and schema) destroyed
    idx.store_path.write_bytes(bytes(data))
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        report = idx.sync()
        assert report.full and "damaged" in report.reason
        assert len(idx.chunks()) == n
    assert {p: p.read_bytes() for p in demo_ws.rglob("*.md")} == before


def test_a_file_that_is_not_our_index_is_never_replaced(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        path = idx.store_path
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database" * 100)  # whatever it is, we did not write it
    with pytest.raises(IndexPathRefused, match="not an index this project created"):
        Store(path)
    with MemoryIndex.open(demo_ws, provider="none") as idx, pytest.raises(IndexPathRefused):
        idx.sync(force=True)
    assert path.read_bytes() == b"this is not a database" * 100


def test_locked_index_gives_a_clear_error(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        path = idx.store_path
    # Another process holds the write lock (POSIX locks do not conflict within one process).
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys, time; db = sqlite3.connect(sys.argv[1], "
         "isolation_level=None); db.execute('BEGIN EXCLUSIVE'); print('LOCKED', flush=True); "
         "time.sleep(30)", str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "LOCKED"
        with pytest.raises(StoreError, match="locked by another process"):
            Store(path, busy_timeout_ms=200).begin()
    finally:
        holder.kill()
        holder.wait()


_KILL_SCRIPT = textwrap.dedent("""
    import sys, time
    from memory_core import MemoryIndex
    ws = sys.argv[1]
    small = {"chunking": {"tokens": 60, "overlap": 10}}
    with MemoryIndex.open(ws, provider="none", overrides=small) as idx:
        def progress(stage, done, total):
            if stage == "write" and done > 0:
                print("WRITING", flush=True)
                time.sleep(30)
        idx.sync(progress=progress)
""")


def test_reindex_killed_midway_leaves_a_usable_index(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        expected = idx.search("COOKIE_EXPIRED").hits[0].path
    # lots of files so that the rebuild writes several groups
    for i in range(40):
        (demo_ws / "memory" / f"2026-09-{i % 28 + 1:02d}-{i}.md").write_text(
            f"# note {i}\n" + "filler text line\n" * 200)
    proc = subprocess.Popen([sys.executable, "-c", _KILL_SCRIPT, str(demo_ws)],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "WRITING"  # a rebuild is in progress
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert list(idx.store_path.parent.glob("*.tmp-*"))  # the half-built index was aside
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        hits = idx.candidates("COOKIE_EXPIRED", auto_sync=False)
        assert hits.keyword and hits.chunks[hits.keyword[0].id].path == expected
        report = idx.sync()  # and the next sync completes
        assert report.files_indexed > 0


def test_recall_signals_survive_a_full_rebuild(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        assert idx.search("COOKIE_EXPIRED", on_hits=recall_recorder(idx)).hits
        with state_of(idx) as st:
            before = st.recall_entries()
        assert before and all(e["path"].startswith("memory/2026-") for e in before)
        assert idx.sync(force=True).full
        with state_of(idx) as st:
            assert st.recall_entries() == before


def test_transaction_commits_all_or_nothing(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        paths = sorted(f.path for f in idx.files())
        with pytest.raises(RuntimeError), idx.transaction() as store:
            store.delete_files([paths[0]])
            with idx.transaction() as inner:  # nested: joins the outer transaction
                inner.delete_files([paths[1]])
            raise RuntimeError("abort")
        assert sorted(f.path for f in idx.files()) == paths  # both deletes rolled back
        with idx.transaction() as store:
            store.delete_files([paths[0]])
        assert sorted(f.path for f in idx.files()) == paths[1:]


def test_file_view_maps_rendered_transcript_lines_to_jsonl_lines(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        session = next(f.path for f in idx.files() if f.source == "sessions")
        view = idx.file_view(session)
        assert view.source == "sessions" and view.line_map is not None
        assert len(view.line_map) == len(view.text.split("\n"))
        raw = (demo_ws / session).read_text(encoding="utf-8").split("\n")
        first = view.text.split("\n")[0]
        assert first.startswith(("User: ", "Assistant: "))
        assert '"message"' in raw[view.source_line(1) - 1]  # the JSONL line it came from
        md = idx.file_view("MEMORY.md")
        assert md.line_map is None and md.source_line(7) == 7
        assert md.text == (demo_ws / "MEMORY.md").read_text(encoding="utf-8")
        with pytest.raises(FileNotFoundError):
            idx.file_view("memory/nope.md")


def test_status_json_keeps_the_reference_keys(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        before = idx.status().to_json()
        assert before["indexed"] is False and before["identity"]["status"] == "missing"
        assert "fts" not in before  # groups known only once an index is read
        idx.sync()
        st = idx.status().to_json()
    assert {"backend", "workspaceDir", "dbPath", "profile", "requestedProvider", "sources",
            "extraPaths", "chunking", "warnings", "files", "chunks", "dirty", "indexed",
            "sourceCounts", "provider", "model", "cache", "fts", "vector", "fallback", "custom",
            "badJsonlLines", "fileWarnings", "builtAt", "identity", "lastSync", "generation",
            "lastSyncAt"} <= set(st)
    assert st["custom"] == {"searchMode": "fts-only"} and st["dirty"] is False
    assert st["vector"]["enabled"] is False and set(st["cache"]) == {
        "enabled", "entries", "maxEntries"}


def test_incremental_with_vectors_replaces_every_row_of_a_changed_file(demo_ws: Path) -> None:
    """Rows of a changed or deleted file go from all four tables (chunks, both FTS tables by
    rowid, sqlite-vec by id), and the new ones share the chunk's rowid: same as a rebuild."""
    from .embed_server import EmbedServer

    def table_state(idx: MemoryIndex) -> tuple[object, ...]:
        db = idx.store.db
        chunks = db.execute("SELECT rowid, id, text FROM chunks ORDER BY rowid").fetchall()
        fts = db.execute("SELECT rowid, id, text FROM chunks_fts ORDER BY rowid").fetchall()
        big = db.execute("SELECT rowid, id FROM chunks_fts_bigram ORDER BY rowid").fetchall()
        vec = sorted(r[0] for r in db.execute("SELECT id FROM chunks_vec"))
        assert fts == chunks and big == [(r, i) for r, i, _ in chunks]
        assert vec == sorted(i for _, i, _ in chunks)
        return tuple(sorted((i, t) for _, i, t in chunks))

    with EmbedServer() as server:
        ov = {"provider": {"provider": "openai", "base_url": server.base_url,
                           "model": "minilm", "fallback": []}}
        with MemoryIndex.open(demo_ws, overrides=ov) as idx:
            idx.sync()
            assert idx.store.vec_available
            table_state(idx)
            diary = demo_ws / "memory" / "2026-11-03.md"
            diary.write_text(diary.read_text() + "\nVECTOR_EDIT_MARKER restored from backup\n")
            (demo_ws / "memory" / "2026-10-20.md").unlink()
            report = idx.sync()
            assert not report.full and report.files_indexed == 1 and report.files_deleted == 1
            incremental = table_state(idx)
            hits = idx.search("VECTOR_EDIT_MARKER").hits
            assert hits and hits[0].path == "memory/2026-11-03.md"
            assert idx.sync(force=True).full
            assert table_state(idx) == incremental


def test_when_most_files_changed_the_sync_rebuilds_aside(tmp_path: Path) -> None:
    """Updating nearly every file in place costs more than rebuilding (FTS5 must un-index the
    old text first); a sync that finds most files changed rebuilds aside, with the same result
    as an incremental update. A few changes stay incremental."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    names = [f"memory/2026-01-{i % 28 + 1:02d}-n{i}.md" for i in range(240)]
    for i, n in enumerate(names):
        (ws / n).write_text(f"# note {i}\n\nTOKEN_{i} first version\n")
    with MemoryIndex.open(ws, provider="none") as idx:
        idx.sync()
        for i, n in enumerate(names[:20]):
            (ws / n).write_text(f"# note {i}\n\nTOKEN_{i} second version, longer\n")
        small = idx.sync()
        assert not small.full and small.files_indexed == 20
        for i, n in enumerate(names[:200]):
            (ws / n).write_text(f"# note {i}\n\nTOKEN_{i} third version, longer still\n")
        big = idx.sync()
        assert big.full and "200 of 240 files changed" in (big.reason or "")
        hits = idx.search("TOKEN_7 third", max_results=3, min_score=0).hits
        assert hits and hits[0].path == names[7] and "third version" in hits[0].snippet
        untouched = idx.search("TOKEN_230 first", max_results=3, min_score=0).hits
        assert untouched and untouched[0].path == names[230]
        assert idx.status().files == 240


def test_a_writers_page_cache_is_set_back_to_sqlites_default(tmp_path: Path) -> None:
    # a sync's writer has a big cache for its inserts, then gives it back before the sidecars'
    # listings scan the whole chunks table through the same connection
    st = Store(tmp_path / "i.sqlite", cache_mib=64)
    try:
        assert st.db.execute("PRAGMA cache_size").fetchone()[0] == -64 * 1024
        st.set_page_cache()
        assert st.db.execute("PRAGMA cache_size").fetchone()[0] == -2000
        st.set_page_cache(8)
        assert st.db.execute("PRAGMA cache_size").fetchone()[0] == -8 * 1024
    finally:
        st.close()
    fresh = Store(tmp_path / "i.sqlite")
    try:  # what a connection opened without cache_mib has: the default set back above
        assert fresh.db.execute("PRAGMA cache_size").fetchone()[0] == -2000
    finally:
        fresh.close()
