"""The vector sidecar (``<index>.vectors``): written by sync, fresh or ignored, same ranking.

Real SQLite, the real local model; the approximate index is real usearch (forced on small data
with ``MEMORY_CORE_ANN_MIN_ROWS=1``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core import vectors as vec

QUERIES = ["why did hosting costs go up", "Postgres upgrade plan", "数据库连接池",
           "computer overheating", "cookie expiry"]


def _engines(idx: MemoryIndex, q: str, sources: list[str] | None = None
             ) -> dict[str, list[tuple[str, float]]]:
    qv = idx.embed_query(q)
    st = idx.store
    return {e: st.vector_search(qv, 40, sources, engine=e)
            for e in ("auto", "exact", "numpy", "sqlite-vec")}


def _same(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> None:
    assert [x for x, _ in a] == [y for y, _ in b]
    for (_, s), (_, t) in zip(a, b, strict=True):
        assert s == pytest.approx(t, abs=1e-5)


def test_sync_writes_a_fresh_sidecar_and_every_engine_ranks_alike(indexed_demo: Path) -> None:
    with MemoryIndex.open(indexed_demo) as idx:
        idx.sync()
        assert vec.sidecar_path(idx.store_path).is_file()
        vm = idx.store.vector_matrix()
        assert vm is not None and vm.rows == idx.status().chunks
        for q in QUERIES:
            for sources in (None, ["sessions"], ["memory"]):
                got = _engines(idx, q, sources)
                for e in ("exact", "numpy", "sqlite-vec"):
                    _same(got["auto"], got[e])
                if sources:
                    assert all(idx.store.chunk_rows([i])[i].source in sources
                               for i, _ in got["auto"])


def _small_workspace(root: Path) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\nThe router lives in the garage.\n")
    for i, topic in enumerate(["postgres replica lag", "nightly backup to glacier",
                               "vlan 20 for the cameras", "cookie expiry in the crawler",
                               "on-call rotation starts monday", "连接池 耗尽 日志"]):
        (root / "memory" / f"2026-11-{i + 1:02d}.md").write_text(
            f"# Day {i}\n\n" + "\n".join(f"- {topic} note {j}" for j in range(30)) + "\n")
    return root


def test_stale_or_damaged_sidecar_is_ignored_then_rewritten(tmp_path: Path) -> None:
    ws = _small_workspace(tmp_path / "ws")
    with MemoryIndex.open(ws) as idx:
        idx.sync()
        path = vec.sidecar_path(idx.store_path)
        first = idx.store.vector_matrix()
        assert first is not None
        (ws / "memory" / "2026-11-09.md").write_text("# New\n\n- the espresso machine broke\n")
        idx.sync()
        vm = idx.store.vector_matrix()
        assert vm is not None and vm.stamp != first.stamp and vm.rows > first.rows
        hits = idx.store.vector_search(idx.embed_query("espresso machine"), 3)
        assert idx.store.chunk_rows([hits[0][0]])[hits[0][0]].path == "memory/2026-11-09.md"
        # damaged: ignored (sqlite-vec answers), and the next sync writes a good one
        path.write_bytes(b"garbage")
    with MemoryIndex.open(ws) as idx:  # a new process: nothing mapped yet
        assert idx.store.vector_matrix() is None
        assert idx.store.vector_search(idx.embed_query("espresso machine"), 3)[0][0] == hits[0][0]
        report = idx.sync()
        assert not report.wrote_anything
        assert idx.store.vector_matrix() is not None


def test_approximate_index_is_kept_in_step_with_the_sidecar(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("usearch")
    monkeypatch.setenv("MEMORY_CORE_ANN_MIN_ROWS", "1")
    ws = _small_workspace(tmp_path / "ws")
    with MemoryIndex.open(ws) as idx:
        idx.sync()
        ann = vec.ann_path(idx.store_path)
        assert ann.is_file()
        vm = idx.store.vector_matrix()
        assert vm is not None and vm.ann is not None and len(vm.ann) == vm.rows
        for q in QUERIES:
            qv = idx.embed_query(q)
            # tiny graphs are searched exhaustively: the approximate answer is the exact one
            _same(idx.store.vector_search(qv, 5), idx.store.vector_search(qv, 5, engine="exact"))
        os.remove(ws / "memory" / "2026-11-02.md")
        (ws / "memory" / "2026-11-09.md").write_text("# New\n\n- the espresso machine broke\n")
        idx.sync()
        vm2 = idx.store.vector_matrix()
        assert vm2 is not None and vm2.ann is not None and len(vm2.ann) == vm2.rows
        assert vm2.stamp != vm.stamp and set(vm2.ids.tolist()) != set(vm.ids.tolist())
        top = idx.store.vector_search(idx.embed_query("espresso machine"), 1)[0][0]
        assert idx.store.chunk_rows([top])[top].path == "memory/2026-11-09.md"
        v = idx.status().vector  # status says the leg is approximate, and from what size
        assert v is not None and v.approximate and v.ann_min_rows == 1 and v.rows == vm2.rows
        assert v.describe_search().startswith("approximate (HNSW) search")


def test_status_says_the_vector_leg_is_exact_by_default(tmp_path: Path) -> None:
    ws = _small_workspace(tmp_path / "ws")
    with MemoryIndex.open(ws) as idx:
        idx.sync()
        assert not vec.ann_path(idx.store_path).exists()
        v = idx.status().vector
        assert v is not None and v.search == "sidecar" and not v.approximate
        assert v.ann_min_rows == 0 and v.rows == idx.store.vector_matrix().rows
        assert v.to_json()["approximate"] is False
        assert v.describe_search() == "exact sidecar search (approximate index off)"
