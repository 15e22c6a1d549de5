"""The workbench's pages at a million chunks (issue #26 item 1): bounded reads, a read-only mode.

The Chunks page reads one page of files (``MemoryIndex.file_page``) and scans the chunks' text
only for a filter (``MemoryIndex.text_matches``, in rowid ranges with progress); the map reads a
fixed sample of the embeddings (``MemoryIndex.embedding_sample``) once per index generation.
Each must give what the full reads gave. ``$MEMORY_WORKBENCH_READONLY`` opens an index without
ever syncing it (benchmarks/bench_pages.py on the 1M index another process owns).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memory_core import MemoryIndex, browse
from memory_core.store import StoreError
from workbench import mapdata
from workbench.testing import OpenApp


def _workspace(root: Path, n: int = 450) -> Path:
    mem = root / "ws" / "memory"
    mem.mkdir(parents=True)
    for i in range(n):
        extra = "\n\nThe STRASSE connection pool 连接池 was resized." if i % 7 == 0 else ""
        (mem / f"note-{i:04d}.md").write_text(f"# note {i}\n\nbackup run {i} finished.{extra}\n",
                                              encoding="utf-8")
    (root / "ws" / "MEMORY.md").write_text("# Long-term\n\nStraße names.\n", encoding="utf-8")
    return root / "ws"


def test_a_page_of_files_is_the_full_listing_cut(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
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
    ws = _workspace(tmp_path, 60)
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


def test_the_sample_is_the_full_reads_sample_with_or_without_the_sidecar(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws) as idx:
        idx.sync()
        ids, matrix = idx.embeddings()
        pick = np.sort(np.random.default_rng(0).choice(len(ids), 10, replace=False))
        sample = idx.embedding_sample(10)
        assert sample.total == len(ids) == 40
        assert sample.ids == [ids[i] for i in pick]
        assert np.array_equal(sample.matrix, matrix[pick])
        whole = idx.embedding_sample(1000)
        assert whole.ids == ids and np.array_equal(whole.matrix, matrix)
        sidecar = idx.store_path.with_name(idx.store_path.name + ".vectors")
        assert sidecar.is_file()
        idx.close()
        sidecar.unlink()  # a stale or missing sidecar: the rowids from one scan instead
        again = idx.embedding_sample(10)
        assert again.ids == sample.ids and np.array_equal(again.matrix, sample.matrix)
        hits = idx.embeddings_of([ids[0], ids[5], "no-such-chunk"])
        assert set(hits) == {ids[0], ids[5]} and np.array_equal(hits[ids[5]], matrix[5])


def test_map_points_are_read_once_per_generation(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws) as idx:
        idx.sync()
        first = mapdata.cached_points(idx, 10)
        assert mapdata.cached_points(idx, 10) is first and first.sampled and len(first) == 10
        assert first.custom.shape == (10, 3) and list(first.custom[:, 0]) == first.ids
        left_out = next(c for c in idx.embeddings()[0] if c not in first.position)
        assert first.vector_of(left_out) is not None  # read on demand, not kept whole
        (demo_ws / "memory" / "2026-12-01.md").write_text(
            "# 2026-12-01\n\nThe heat pump was serviced today.\n", encoding="utf-8")
        idx.sync()
        second = mapdata.cached_points(idx, 10)
        assert second is not first and second.total == first.total + 1


def test_a_read_only_workbench_never_syncs(tmp_path: Path, open_app: OpenApp,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _workspace(tmp_path, 30)
    with MemoryIndex.open(ws, provider="none") as idx:
        idx.sync()
        generation = idx.generation
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
