"""The engine's hard edges (issue #13 items 2, 4, 5, 6, 7): a user's file is never turned into
an index, one bad file never stops the rest, and a damaged index never answers with nothing.

Every case failed before its fix: a diary or ``MEMORY.md`` overwritten by SQLite, a traceback
naming no file, ``status`` dirty forever, an empty ``{"results": []}`` from a damaged index.
Workspaces are fresh copies of the demo, keyword-only (``provider="none"``), so no model loads.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.base.sql import sqlite
from memory_core.storage.store import IndexPathRefused, IndexUnavailable, Store
from memory_core.write.sources import render_session

from .conftest import ROOT

CLI = [sys.executable, "-m", "memory_core"]


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a refused command (exit code 2, no traceback)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (the workspace's Markdown, transcripts and settings) by bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".memory" not in p.parts}


# ----------------------------------------------------------------------------- item 2


def test_db_pointing_at_memory_md_is_refused_and_bytes_unchanged(demo_ws: Path) -> None:
    before = snapshot(demo_ws)
    for cmd in ("search", "index", "status"):
        args = [cmd, "-w", str(demo_ws), "--provider", "none", "--db", "MEMORY.md"]
        if cmd == "search":
            args[1:1] = ["cookie"]
        line = one_line_error(run(*args))
        assert "MEMORY.md" in line
    assert snapshot(demo_ws) == before
    assert not list(demo_ws.glob("MEMORY.md*[!d]"))  # no -wal, -shm or .tmp-* beside it


def test_store_path_on_a_diary_is_refused_and_the_diary_untouched(demo_ws: Path) -> None:
    (demo_ws / "memory-workbench.toml").write_text(
        (demo_ws / "memory-workbench.toml").read_text()
        + '\n[store]\npath = "memory/2026-11-03.md"\n')
    before = snapshot(demo_ws)
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        with pytest.raises(IndexPathRefused, match=r"2026-11-03\.md"):
            idx.sync()
        with pytest.raises(IndexPathRefused):
            idx.search("cookie")
        with pytest.raises(IndexPathRefused):
            idx.status()
    # a source location is refused even when nothing is there yet
    with MemoryIndex.open(demo_ws, provider="none",
                          overrides={"store": {"path": "memory/new/index.sqlite"}}) as idx:
        with pytest.raises(IndexPathRefused, match="inside the memory sources"):
            idx.sync()
    with MemoryIndex.open(demo_ws, provider="none",
                          overrides={"store": {"path": "notes/index.sqlite"}}) as idx:
        with pytest.raises(IndexPathRefused):  # inside an extra path
            idx.sync()
    assert snapshot(demo_ws) == before
    assert not (demo_ws / "memory" / "new").exists()
    line = one_line_error(run("index", "-w", str(demo_ws), "--provider", "none"))
    assert "2026-11-03.md" in line
    assert snapshot(demo_ws) == before


def test_index_path_outside_the_workspace_on_a_user_file_is_refused(demo_ws: Path,
                                                                     tmp_path: Path) -> None:
    user_file = tmp_path / "budget.sqlite"
    user_file.write_bytes(b"my spreadsheet export, not yours\n" * 50)
    other_db = tmp_path / "other.sqlite"  # somebody else's SQLite database
    con = sqlite.connect(other_db)
    con.execute("CREATE TABLE meta (key TEXT, value TEXT)")
    con.execute("INSERT INTO meta VALUES ('owner', 'another app')")
    con.commit()
    con.close()
    before = {p: p.read_bytes() for p in (user_file, other_db)}
    for target in (user_file, other_db):
        line = one_line_error(run("search", "cookie", "-w", str(demo_ws), "--provider", "none",
                                  "--db", str(target)))
        assert str(target) in line and "not an index" in line
        line = one_line_error(run("index", "--force", "-w", str(demo_ws), "--provider", "none",
                                  "--db", str(target)))
        with pytest.raises(IndexPathRefused):
            Store(target)
    assert {p: p.read_bytes() for p in (user_file, other_db)} == before
    assert not list(tmp_path.glob("*.tmp-*")) and not list(tmp_path.glob("*-wal"))
    # our own index at such a path is used, rebuilt and replaced normally
    ours = tmp_path / "ours.sqlite"
    assert run("index", "-w", str(demo_ws), "--provider", "none", "--db", str(ours)
               ).returncode == 0
    proc = run("index", "--force", "-w", str(demo_ws), "--provider", "none", "--db", str(ours))
    assert proc.returncode == 0, proc.stderr
    proc = run("search", "cookie", "-w", str(demo_ws), "--provider", "none", "--db", str(ours),
               "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["results"]


# ----------------------------------------------------------------------------- item 4


def test_file_name_that_is_not_utf8_is_skipped_with_an_escaped_warning(demo_ws: Path) -> None:
    odd = os.path.join(os.fsencode(demo_ws / "memory"), b"odd\xffname.md")
    with open(odd, "wb") as f:
        f.write(b"# odd\nODD_NAME_MARKER\n")
    odd_dir = os.path.join(os.fsencode(demo_ws / "memory"), b"dir\xfe")
    os.mkdir(odd_dir)
    with open(os.path.join(odd_dir, b"inner.md"), "wb") as f:
        f.write(b"INNER_MARKER\n")
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        report = idx.sync()
        warnings = "\n".join(report.warnings)
        assert "memory/odd\\xffname.md" in warnings and "not valid UTF-8" in warnings
        assert "dir\\xfe" in warnings
        assert idx.search("COOKIE_EXPIRED").hits  # the other files are indexed
        st = idx.status()
        assert not st.dirty
        json.dumps(st.to_json())  # no lone surrogate anywhere
        assert idx.sync().files_indexed == 0
    proc = run("search", "COOKIE_EXPIRED", "-w", str(demo_ws), "--provider", "none")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    proc = run("index", "-w", str(demo_ws), "--provider", "none", "--force")
    assert proc.returncode == 0, proc.stderr
    assert "odd\\xffname.md" in proc.stderr


# ----------------------------------------------------------------------------- item 5


@pytest.mark.parametrize("stamp", ["Infinity", "-Infinity", "NaN", "1e400", "1e300",
                                   "123456789012345678901234567890", "true", '"9999-99-99"',
                                   '"+999999-01-01T00:00:00"'])
def test_transcript_timestamps_that_are_not_times_give_no_traceback(stamp: str) -> None:
    row = ('{"type":"message","timestamp":@T@,"message":{"role":"user","timestamp":@T@,'
           '"content":"STAMP_MARKER here"}}').replace("@T@", stamp)
    ok = ('{"type":"message","timestamp":"2026-11-01T10:00:00Z","message":{"role":"assistant",'
          '"content":"fine"}}')
    r = render_session(row + "\n" + ok)
    assert r.content.splitlines() == ["User: STAMP_MARKER here", "Assistant: fine"]
    assert r.line_map == [1, 2]
    assert r.timestamps_ms == [1793527200000]  # only the real time is kept


def test_transcript_with_infinite_timestamp_indexes(demo_ws: Path) -> None:
    (demo_ws / "sessions" / "inf.jsonl").write_text(
        '{"type":"message","timestamp":Infinity,"message":{"role":"user",'
        '"content":"INFINITE_STAMP"}}\n'
        '{"type":"message","timestamp":NaN,"message":{"role":"user","content":"NAN_STAMP"}}\n')
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        assert idx.search("INFINITE_STAMP").hits[0].path == "sessions/inf.jsonl"
        assert idx.search("NAN_STAMP").hits


# ----------------------------------------------------------------------------- item 6


def test_a_file_that_cannot_be_read_is_skipped_counted_and_not_dirty(demo_ws: Path) -> None:
    mem = demo_ws / "memory"
    (mem / "blob.md").write_bytes(b"\x00\x01binary\x00" * 100)
    # a transcript line nested too deep for the JSON parser (a RecursionError, not a JSON error)
    (demo_ws / "sessions" / "deep.jsonl").write_text(
        "[" * 200_000 + "\n"
        + '{"type":"message","message":{"role":"user","content":"DEEP_SURVIVOR"}}\n')
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        report = idx.sync()
        warnings = "\n".join(report.warnings)
        assert "memory/blob.md" in warnings
        assert report.files_failed == 1
        assert idx.search("COOKIE_EXPIRED").hits
        assert idx.search("DEEP_SURVIVOR").hits  # the bad line is counted, the rest indexed
        st = idx.status()
        assert st.skipped_files == 1 and st.to_json()["skippedFiles"] == 1
        assert "memory/blob.md" in st.file_warnings
        assert not st.dirty  # the skipped binary file is remembered with its mtime and size
        again = idx.sync()
        assert not again.wrote_anything and again.files_failed == 0
        # fixed: it is read again and indexed
        (mem / "blob.md").write_text("# fixed\nBLOB_FIXED\n")
        assert idx.status().dirty
        idx.sync()
        assert idx.search("BLOB_FIXED").hits and idx.status().skipped_files == 0
        # broken again after being indexed: its old chunks go, it is skipped and counted
        (mem / "blob.md").write_bytes(b"\x00" * 64)
        idx.sync()
        assert not idx.search("BLOB_FIXED").hits
        assert idx.status().skipped_files == 1 and not idx.status().dirty
    with MemoryIndex.open(demo_ws, provider="none") as idx:  # a rebuild remembers it too
        idx.sync(force=True)
        st = idx.status()
        assert st.skipped_files == 1 and not st.dirty


# ----------------------------------------------------------------------------- item 7


def _damage(path: Path, seed: int, pages: int) -> None:
    """Write ``pages`` pages of random bytes into the middle third of the database file."""
    data = path.read_bytes()
    page = int.from_bytes(data[16:18], "big") or 65536
    n = len(data) // page
    rng = random.Random(seed)
    first = max(2, n // 3 + rng.randrange(max(1, n // 3)))
    with open(path, "r+b") as f:
        for p in range(first, min(n, first + pages)):
            f.seek(p * page)
            f.write(rng.randbytes(page))


def _indexed_copy(demo_ws: Path) -> tuple[Path, list[str]]:
    for i in range(60):  # a few hundred pages, so "the middle" holds every kind of table
        (demo_ws / "memory" / f"2026-08-{i % 28 + 1:02d}-n{i}.md").write_text(
            f"# note {i}\n" + f"filler{i} words about restore and backup jobs\n" * 40)
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        expected = [(h.path, h.start_line) for h in idx.search("COOKIE_EXPIRED").hits]
        path = idx.store_path
    assert expected
    for suffix in ("-wal", "-shm"):
        assert not Path(f"{path}{suffix}").exists() or Path(f"{path}{suffix}").stat().st_size == 0
    return path, expected


@pytest.mark.parametrize("seed", range(6))
def test_damaged_index_never_answers_with_nothing(demo_ws: Path, seed: int) -> None:
    path, expected = _indexed_copy(demo_ws)
    before = snapshot(demo_ws)
    _damage(path, seed, pages=3 + seed * 4)
    # without syncing first: an error, or the right answer; never an empty success
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.auto_sync = False
        try:
            got = [(h.path, h.start_line) for h in idx.search("COOKIE_EXPIRED").hits]
        except IndexUnavailable as e:
            assert "damaged" in str(e)
        else:
            assert got == expected
    # the CLI: search recovers (rebuilt aside from the Markdown) or says why in one line
    proc = run("search", "COOKIE_EXPIRED", "-w", str(demo_ws), "--provider", "none", "--json")
    if proc.returncode == 0:
        assert [(r["path"], r["startLine"]) for r in json.loads(proc.stdout)["results"]
                ] == expected
    else:
        one_line_error(proc)
    proc = run("status", "-w", str(demo_ws), "--provider", "none")
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 2), proc.stderr
    proc = run("index", "-w", str(demo_ws), "--provider", "none")
    assert proc.returncode == 0, proc.stderr
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        assert [(h.path, h.start_line) for h in idx.search("COOKIE_EXPIRED").hits] == expected
        assert idx.status().error is None
    assert snapshot(demo_ws) == before


def test_damaged_index_is_rebuilt_by_the_next_search(demo_ws: Path) -> None:
    path, expected = _indexed_copy(demo_ws)
    _damage(path, 11, pages=40)
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        assert [(h.path, h.start_line) for h in idx.search("COOKIE_EXPIRED").hits] == expected
        assert idx.store.check_integrity() is None


def test_damage_found_by_a_deep_status_or_verify_is_rebuilt_by_the_next_sync(
        demo_ws: Path) -> None:
    path, expected = _indexed_copy(demo_ws)
    _damage(path, 5, pages=10_000)  # the whole middle third and beyond: any full read sees it
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        st = idx.status(deep=True)  # reads every page (PRAGMA quick_check)
        assert st.error and "damaged" in st.error
    assert Path(f"{path}.damaged").exists()  # recorded for the next sync
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        report = idx.sync()
        assert report.full and "damaged" in report.reason
        assert not Path(f"{path}.damaged").exists()
        assert [(h.path, h.start_line) for h in idx.search("COOKIE_EXPIRED").hits] == expected
        assert idx.status(deep=True).error is None
    _damage(path, 6, pages=10_000)
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        report = idx.sync(verify=True)
        assert report.full and "damaged" in report.reason
        assert idx.status(deep=True).error is None
