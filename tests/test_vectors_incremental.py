"""The vector sidecar updated by streaming (issue 26): a sync copies the rows the previous
sidecar holds, block by block with their checksums checked, and reads only the changed rows'
vectors from the index, giving the very bytes a sidecar written whole from the index gives.

Real SQLite and sqlite-vec, the real local model. The checksum block is made small (4 KiB, a
row of 384 floats is 1.5 KiB) so that this small index spans many blocks and rows straddle them.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memory_core import MemoryIndex
from memory_core.storage import sidecar
from memory_core.storage import vectors as vec

try:
    from tests.test_sidecar_damage import _content, _flip
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from test_sidecar_damage import _content, _flip  # type: ignore[no-redef]

QUERIES = ["postgres replica lag", "nightly backup to glacier", "espresso machine",
           "连接池 耗尽", "the garage router"]
TOPICS = ["postgres replica lag", "nightly backup to glacier", "vlan 20 for the cameras",
          "cookie expiry in the crawler", "on-call rotation starts monday", "连接池 耗尽 日志",
          "the espresso machine broke again", "solar panel inverter fault"]

LISTING = ("SELECT rowid, id, source, length(embedding), updated_at FROM chunks"
           " WHERE length(embedding) > 0 ORDER BY rowid")
BETWEEN = ("SELECT rowid, embedding FROM chunks WHERE rowid BETWEEN ? AND ?"
           " AND length(embedding) > 0 ORDER BY rowid")


def _small(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(sidecar, "BLOCK", 4096)
    mp.setattr(vec, "STREAM_BYTES", 5 * 1536)  # a few rows a piece: many runs


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    _small(monkeypatch)


def _workspace(root: Path) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\nThe router lives in the garage.\n")
    for i, topic in enumerate(TOPICS):
        body = "\n\n".join(
            f"## {topic}, part {k}\n\n" + "\n".join(
                f"- {topic}: observation {k}.{j} about {TOPICS[(i + j) % len(TOPICS)]}"
                for j in range(14)) for k in range(4))
        (root / "memory" / f"2026-11-{i + 1:02d}.md").write_text(f"# Day {i}\n\n{body}\n")
    return root


def _whole(ws: Path) -> bytes:
    """The sidecar written whole from the index, as the first build writes it."""
    with MemoryIndex.open(ws) as idx:
        path = vec.sidecar_path(idx.store_path)
        path.unlink()
        assert idx.store.refresh_vectors()
        return path.read_bytes()


def _hits(ws: Path) -> list[list[tuple[str, float]]]:
    with MemoryIndex.open(ws) as idx:
        idx.auto_sync = False
        got = idx.store._sidecar_search([idx.embed_query(q).astype("float32") for q in QUERIES],
                                       12, None)
        assert got is not None  # the sidecar's own answers, never the index's
        return got


def _last_file(idx: MemoryIndex) -> str:
    """The file holding the highest rowids: rewriting it reuses them (same rowid, same id)."""
    return idx.store.db.execute("SELECT path FROM chunks ORDER BY rowid DESC LIMIT 1"
                                ).fetchone()[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workspace indexed with the local model once for the module (a build is ~7 CPU s);
    every test changes its own copy. Returned a whole second after its last row was written."""
    ws = _workspace(tmp_path_factory.mktemp("built") / "ws")
    with pytest.MonkeyPatch.context() as mp:
        _small(mp)  # as every test's own syncs run
        with MemoryIndex.open(ws) as idx:
            idx.sync()
    time.sleep(1.05 - time.time() % 1)  # the seal is in whole seconds
    return ws


@pytest.fixture
def synced(built: Path, tmp_path: Path) -> Iterator[tuple[Path, Path, bytes]]:
    """A copy of :func:`built` (the files' mtimes and the index copied: a sync of the copy
    writes nothing) whose sidecar was written whole after its rows (sealed a second later
    than any row's time), and that sidecar's bytes."""
    ws = tmp_path / "ws"
    shutil.copytree(built, ws)
    with MemoryIndex.open(ws) as idx:
        assert idx.sync().wrote_anything is False  # the copy is the built index
        db = idx.store_path
    yield ws, db, _whole(ws)


def test_a_sync_gives_the_sidecar_a_whole_write_gives(synced: tuple[Path, Path, bytes]
                                                      ) -> None:
    ws, db, _ = synced
    before = _hits(ws)
    with MemoryIndex.open(ws) as idx:
        last = _last_file(idx)
    mem = ws / "memory"
    (mem / "2026-11-03.md").write_text((mem / "2026-11-03.md").read_text().replace(
        "observation 1.3", "observation 1.3 (the espresso machine again)"))
    (mem / "2026-11-20.md").write_text("# New\n\n- the espresso machine broke on friday\n")
    os.remove(mem / "2026-11-05.md")
    (ws / last).write_text((ws / last).read_text() + "\n- one more line at the end\n")
    with MemoryIndex.open(ws) as idx:
        rep = idx.sync()
        assert rep.files_indexed == 3 and rep.files_deleted == 1
        vm = idx.store.vector_matrix()
        assert vm is not None and vm.intact()
        blobs = idx.store.db.execute(
            "SELECT embedding FROM chunks WHERE length(embedding) > 0 ORDER BY rowid").fetchall()
    updated = vec.sidecar_path(db).read_bytes()
    after = _hits(ws)
    assert after != before  # the changes are searched
    assert _content(updated) == _content(_whole(ws))  # header, checksums, every array
    assert _hits(ws) == after
    # the rows are the index's vectors normalised as the whole matrix was before streaming
    raw = np.frombuffer(b"".join(b for (b,) in blobs), np.float32).reshape(len(blobs), -1)
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    assert np.array_equal(np.asarray(vm.matrix), (raw / np.where(norms == 0, 1.0, norms)))


def _refresh_counting(idx: MemoryIndex) -> tuple[vec.VectorMatrix | None, list[int]]:
    """:func:`vectors.refresh` over the index, with the rowids whose vectors it read."""
    db = idx.store.db
    read: list[int] = []

    def between(lo: int, hi: int) -> list[tuple[int, bytes]]:
        rows = db.execute(BETWEEN, (lo, hi)).fetchall()
        read.extend(r for r, _ in rows)
        return rows

    got = vec.refresh(idx.store_path, idx.store.vector_stamp(),
                      lambda: db.execute(LISTING), between)
    return got, read


def test_only_the_changed_rows_are_read_from_the_index(synced: tuple[Path, Path, bytes]
                                                       ) -> None:
    ws, db, first = synced
    path = vec.sidecar_path(db)
    with MemoryIndex.open(ws) as idx:
        last = _last_file(idx)
        old_rows = dict(idx.store.db.execute("SELECT rowid, id FROM chunks").fetchall())
    (ws / last).write_text((ws / last).read_text() + "\n- one more line at the end\n")
    with MemoryIndex.open(ws) as idx:
        idx.sync()
    synced_bytes = path.read_bytes()
    path.write_bytes(first)  # the previous sync's sidecar, stale now
    with MemoryIndex.open(ws) as idx:
        idx.auto_sync = False
        got, read = _refresh_counting(idx)
        rows = idx.store.db.execute(
            "SELECT rowid, id FROM chunks WHERE path = ? ORDER BY rowid", (last,)).fetchall()
        n = idx.store.db.execute(
            "SELECT count(*) FROM chunks WHERE length(embedding) > 0").fetchone()[0]
    assert got is not None and got.rows == n
    assert read == [r for r, _ in rows]  # the rewritten file's rows, and nothing else
    # its first chunks came back with the rowids and ids they had: written since the old
    # sidecar's seal, they are read again rather than trusted
    assert any(old_rows.get(r) == i for r, i in rows)
    assert len(read) < n
    assert _content(path.read_bytes()) == _content(synced_bytes) == _content(_whole(ws))


def _one_file_added(synced: tuple[Path, Path, bytes]) -> tuple[Path, bytes]:
    """A file added and synced, then the previous sidecar put back (stale: the next refresh
    updates it); the sidecar's path and what the sync wrote."""
    ws, db, first = synced
    path = vec.sidecar_path(db)
    (ws / "memory" / "2026-11-20.md").write_text("# New\n\n- the espresso machine broke\n")
    with MemoryIndex.open(ws) as idx:
        idx.sync()
    good = path.read_bytes()
    path.write_bytes(first)
    return path, good


def test_a_damaged_previous_sidecar_is_not_copied(synced: tuple[Path, Path, bytes]) -> None:
    ws = synced[0]
    path, good = _one_file_added(synced)
    _flip(path, "matrix", 3, 0x01)  # a few bits of rows the new sidecar would copy
    with MemoryIndex.open(ws) as idx:
        idx.auto_sync = False
        got, read = _refresh_counting(idx)
    assert got is not None and len(read) == got.rows  # everything read from the index
    assert _content(path.read_bytes()) == _content(good)


def test_a_write_that_fails_leaves_the_old_sidecar(synced: tuple[Path, Path, bytes]) -> None:
    ws, _, first = synced
    path, _ = _one_file_added(synced)
    with MemoryIndex.open(ws) as idx:
        idx.auto_sync = False
        db_conn = idx.store.db

        def failing(lo: int, hi: int) -> list[tuple[int, bytes]]:
            raise OSError("disk full")

        with pytest.raises(OSError, match="disk full"):
            vec.refresh(idx.store_path, idx.store.vector_stamp(),
                        lambda: db_conn.execute(LISTING), failing)
    assert path.read_bytes() == first  # readers keep the old file; nothing half written
    assert not [p for p in path.parent.iterdir() if ".tmp-" in p.name]


def test_writing_an_in_memory_matrix_by_pieces_equals_normalising_it_whole(
        tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    big = rng.standard_normal((100, 2 * 24), dtype=np.float32)
    mat = big[:, ::2]  # not contiguous
    mat[7] = 0.0  # a zero row stays zero
    n = mat.shape[0]
    db = tmp_path / "x.sqlite"
    vm = vec.write(db, "s", np.arange(1, n + 1), [f"c{i:03d}" for i in range(n)],
                   ["memory" if i % 3 else "sessions" for i in range(n)], mat)
    assert vm is not None
    c = np.ascontiguousarray(mat)
    norms = np.linalg.norm(c, axis=1, keepdims=True)
    assert np.array_equal(np.asarray(vm.matrix), c / np.where(norms == 0, 1.0, norms))
    again = vec.load(db, "s")  # a new mapping: every block checks
    assert again is not None and again.checks is not None
    again.checks.verify_all()
    assert again.sources == ["memory", "sessions"]
    assert again.codes.tolist() == [0 if i % 3 else 1 for i in range(n)]
    assert [x.decode() for x in again.ids.tolist()] == [f"c{i:03d}" for i in range(n)]
    assert again.search(c[3], 1)[0][0] == "c003"
