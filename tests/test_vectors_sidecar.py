"""The vector leg's conformance test, and its sidecar (``<index>.vectors``): written by sync,
fresh or ignored.

The leg has one fast path (the mapped sidecar matrix) and one reference path (sqlite-vec's KNN),
with the reference's fallback when the extension cannot answer (an exact product over the
index's blobs); each must give the reference's ids in the reference's order, scores within
1e-5 (float32 sums in different orders). Real SQLite and sqlite-vec, the real local model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.storage import vectors as vec

QUERIES = ["why did hosting costs go up", "Postgres upgrade plan", "数据库连接池",
           "computer overheating", "cookie expiry"]


def _paths(idx: MemoryIndex, q: str, sources: list[str] | None = None
           ) -> dict[str, list[tuple[str, float]]]:
    """Every implementation of the leg, each asked directly, and the one a search takes."""
    qv = idx.embed_query(q).astype("float32")
    st = idx.store
    side = st._sidecar_search([qv], 40, sources)
    vec0 = st._vec0_search(qv, 40, sources)
    assert side is not None and vec0 is not None
    return {"search": st.vector_search(qv, 40, sources), "sidecar": side[0],
            "sqlite-vec": vec0, "blobs": st._blob_search(qv, 40, sources)}


def _same(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> None:
    assert [x for x, _ in a] == [y for y, _ in b]
    for (_, s), (_, t) in zip(a, b, strict=True):
        assert s == pytest.approx(t, abs=1e-5)


def test_sync_writes_a_fresh_sidecar_and_every_path_ranks_as_the_reference(
        indexed_demo: Path) -> None:
    with MemoryIndex.open(indexed_demo) as idx:
        idx.sync()
        assert vec.sidecar_path(idx.store_path).is_file()
        vm = idx.store.vector_matrix()
        assert vm is not None and vm.rows == idx.status().chunks
        for q in QUERIES:
            for sources in (None, ["sessions"], ["memory"]):
                got = _paths(idx, q, sources)
                assert got["search"] == got["sidecar"]  # the fast path is the one taken
                for e in ("sidecar", "blobs"):
                    _same(got[e], got["sqlite-vec"])
                if sources:
                    assert all(idx.store.chunk_rows([i])[i].source in sources
                               for i, _ in got["search"])


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


def test_status_says_the_vector_leg_is_exact(tmp_path: Path) -> None:
    ws = _small_workspace(tmp_path / "ws")
    with MemoryIndex.open(ws) as idx:
        idx.sync()
        v = idx.status().vector
        rows = idx.store.vector_matrix().rows
        assert v is not None and v.search == "sidecar" and v.rows == rows
        assert v.to_json()["rows"] == rows and "approximate" not in v.to_json()
        blocks = idx.store.block_count()
        assert blocks > 0 and v.blocks == blocks  # the default profile's local index holds them
        assert v.describe_search() == (f"exact sidecar search over {rows:,} rows, "
                                       f"{blocks:,} block vectors")
