"""The Chunks page at scale (issue #10 item 7): files a page at a time, counts by SQL.

A workspace of 450 files (keyword-only index); the page must send at most one page of files
to the browser, page through the rest, and count chunks and text matches per file exactly as
loading every chunk would.
"""

from __future__ import annotations

from pathlib import Path

from memory_core import MemoryIndex
from workbench.testing import OpenApp


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
