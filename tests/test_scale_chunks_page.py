"""The Chunks page at scale (issue #10 item 7): files a page at a time, counts by SQL.

A workspace of 450 files (keyword-only index); the page must send at most one page of files
to the browser, page through the rest, and count chunks and text matches per file exactly as
loading every chunk would. At a million chunks (issue #26 item 1) it reads one page of files
(``MemoryIndex.file_page``) and scans the chunks' text only for a filter
(``MemoryIndex.text_matches``, in rowid ranges with progress), each giving what the full reads
gave; ``$MEMORY_WORKBENCH_READONLY`` opens an index without ever syncing it
(benchmarks/bench_pages.py on the 1M index another process owns).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.read import browse
from memory_core.storage.store import StoreError
from tests.apptesting import OpenApp


def _workspace(root: Path, n: int = 450) -> Path:
    mem = root / "ws" / "memory"
    mem.mkdir(parents=True)
    for i in range(n):
        extra = "\n\nThe STRASSE connection pool 连接池 was resized." if i % 7 == 0 else ""
        (mem / f"note-{i:04d}.md").write_text(f"# note {i}\n\nbackup run {i} finished.{extra}\n",
                                              encoding="utf-8")
    return root / "ws"


def test_chunk_counts_equal_counting_every_chunk(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, 60)
    with MemoryIndex.open(ws, provider="none") as idx:
        idx.sync()
        every = idx.chunks()
        for needle in (None, "strasse", "Straße", "连接池", "nothing"):
            want: dict[str, tuple[int, int]] = {}
            for c in every:
                n, m = want.get(c.path, (0, 0))
                hit = bool(needle) and needle.casefold() in c.text.casefold()
                want[c.path] = (n + 1, m + int(hit))
            assert idx.chunk_counts(needle) == want, needle


def test_files_are_paged(tmp_path: Path, open_app: OpenApp) -> None:
    ws = _workspace(tmp_path)
    at = open_app(ws, "pages/chunks.py", timeout=300)
    files = next(d.value for d in at.dataframe if "chunks" in d.value.columns)
    assert len(files) == 200
    assert len(at.selectbox(key="chunks_file").options) == 200
    at.number_input(key="chunks_page").set_value(3).run()
    assert not at.exception
    files = next(d.value for d in at.dataframe if "chunks" in d.value.columns)
    assert len(files) == 50 and files["path"].iloc[0] == "memory/note-0400.md"
    at.text_input(key="chunks_filter").input("连接池").run()  # 65 files match: one page
    assert not at.exception
    files = next(d.value for d in at.dataframe if "matches" in d.value.columns)
    assert len(files) == 65 and set(files["matches"]) == {1}


def _with_memory_md(root: Path, n: int) -> Path:
    """:func:`_workspace` and a ``MEMORY.md`` whose ``ß`` case-folds to ``ss``."""
    ws = _workspace(root, n)
    (ws / "MEMORY.md").write_text("# Long-term\n\nStraße names.\n", encoding="utf-8")
    return ws


def test_a_page_of_files_is_the_full_listing_cut(tmp_path: Path) -> None:
    ws = _with_memory_md(tmp_path, 450)
    with MemoryIndex.open(ws, provider="none") as idx:
        idx.sync()
        every = idx.files()
        counts = idx.chunk_counts()
        for offset in (0, 200, 400, 451, 999):
            page = idx.file_page(None, offset, 200)
            assert page.sources == {"memory": 451} and page.total == 451
            assert page.files == every[offset : offset + 200]
            assert page.chunks == {f.path: counts[f.path][0] for f in page.files}
        assert idx.file_page("memory", 0, 5).files == every[:5]
        none = idx.file_page("sessions", 0, 200)
        assert none.total == 0 and none.files == [] and none.sources == {"memory": 451}
        picked = [every[9].path, every[3].path, "memory/gone.md", every[400].path]
        page = idx.file_page(None, 1, 2, picked)  # a filter's matches, in its order
        assert page.total == 4 and [f.path for f in page.files] == [every[3].path]


def test_the_text_filter_scans_in_ranges_and_counts_as_every_chunk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _with_memory_md(tmp_path, 60)
    monkeypatch.setattr(browse, "SCAN_ROWS", 7)  # many ranges for a small index
    with MemoryIndex.open(ws, provider="none") as idx:
        idx.sync()
        for needle in ("strasse", "Straße", "连接池", "BACKUP RUN 5", "nothing"):
            want = {p: (f.source, n, m) for p, (n, m) in idx.chunk_counts(needle).items()
                    if m for f in [next(x for x in idx.files() if x.path == p)]}
            seen: list[tuple[int, int]] = []
            got = idx.text_matches(needle, lambda done, total, seen=seen: seen.append(
                (done, total)))
            assert got == want, needle
            assert len(seen) > 5 and seen[-1][0] == seen[-1][1]
            assert [d for d, _ in seen] == sorted(d for d, _ in seen)
        assert len(idx.text_matches("strasse")) == 10  # 9 notes with "STRASSE", MEMORY.md's ß


def test_a_read_only_workbench_never_syncs(tmp_path: Path, open_app: OpenApp,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _with_memory_md(tmp_path, 30)
    with MemoryIndex.open(ws, provider="none") as idx:
        idx.sync()
        generation = idx.generation
        assert idx.last_sync_at and idx.last_sync_at == idx.status().last_sync_at  # a meta read
    (ws / "memory" / "new-note.md").write_text("# new\n\nwritten after the index.\n",
                                                encoding="utf-8")
    monkeypatch.setenv("MEMORY_WORKBENCH_READONLY", "1")
    at = open_app(ws)
    assert at.button(key="home_index").disabled  # "Index now" would sync
    at.switch_page("pages/chunks.py").run()
    files = next(d.value for d in at.dataframe if "chunks" in d.value.columns)
    assert len(files) == 31 and "memory/new-note.md" not in set(files["path"])
    at.text_input(key="chunks_filter").input("written after").run()
    assert not at.exception and any("No file matches" in w.value for w in at.warning)
    with MemoryIndex.open(ws, provider="none") as idx:
        assert idx.generation == generation
        assert "memory/new-note.md" not in {f.path for f in idx.files()}
        idx.readonly = True
        with pytest.raises(StoreError, match="read-only"):
            idx.sync()


def test_a_files_view_is_found_without_listing_the_workspace(tmp_path: Path) -> None:
    ws = _with_memory_md(tmp_path, 5)
    with MemoryIndex.open(ws, provider="none") as idx:
        idx.sync()
        listed = {f.path: f for f in idx.files()}
        for path in listed:  # the index's row and one stat: what the listing would give
            view = idx.file_view(path)
            assert (view.path, view.source, view.line_map) == (path, "memory", None)
            assert view.text == (ws / path).read_text(encoding="utf-8")
        (ws / "memory" / "later.md").write_text("# later\n", encoding="utf-8")
        assert idx.file_view("memory/later.md").text == "# later\n"  # not indexed: listed
        (ws / "memory" / "note-0001.md").unlink()
        for gone in ("memory/note-0001.md", "notes.txt", "../elsewhere.md"):
            with pytest.raises(FileNotFoundError):
                idx.file_view(gone)
