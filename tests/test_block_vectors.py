"""Block vectors (issue #36): a chunk's paragraphs and turns embedded at sync, and the vector
leg's first ``block_rescore`` hits scored by their best block while the agent reads the chunk.

Real parts only: the local model embeds a small workspace; the scores are checked against the
model's own vectors of the blocks, computed here apart from the engine.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from memory_core import MemoryIndex
from memory_core.base.config import BLOCK_RESCORE, profile_settings
from memory_core.read.calibration import query_evidence
from memory_core.read.candidates import Candidates, LegHit
from memory_core.read.search import block_rescore
from memory_core.write.chunking import chunk_blocks
from memory_core.write.sync import identity_diff

FILLER = [
    "We tried the new ramen place near the station; the broth was too salty for me.",
    "The hiking trail up the north ridge was closed after the storm, so we took the valley.",
    "My sister is planning a trip to Lisbon in the spring and asked about tram passes.",
    "Finished the third season of the detective series; the ending felt rushed.",
    "The garden needs new compost before the tomatoes go in next month.",
    "Our book club picked a long historical novel about a shipwreck off the coast.",
    "I reorganised the spice drawer and threw away a jar of paprika from years ago.",
    "The neighbours' dog keeps digging under the fence near the shed.",
]
ANSWER = "I replaced the battery of my camera drone on Tuesday; flights now last 31 minutes."
QUERY = "how long do drone flights last with the new battery"


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "memory").mkdir(parents=True)
    turns = [*FILLER[:4], ANSWER, *FILLER[4:]]
    (ws / "memory" / "2026-11-03.md").write_text(
        "# 2026-11-03\n\n" + "\n\n".join(f"user: {t}" for t in turns) + "\n", encoding="utf-8")
    (ws / "memory" / "2026-11-04.md").write_text(
        "# 2026-11-04\n\nuser: Looked at aerial photography gear, drones and camera batteries "
        "online.\n", encoding="utf-8")
    return ws


@pytest.fixture(scope="module")
def diary_index(tmp_path_factory: pytest.TempPathFactory) -> MemoryIndex:
    idx = MemoryIndex.open(_workspace(tmp_path_factory.mktemp("blocks")), profile="default")
    idx.sync()
    yield idx
    idx.close()


def test_blocks_are_paragraphs_without_headings_or_scraps() -> None:
    text = "# 2026-11-03\n\nuser: first turn here, long enough\n \n\nuser: ok\n\n" \
           "second paragraph\nspans two lines of text\n\nuser: first turn here, long enough\n"
    assert chunk_blocks(text) == ["user: first turn here, long enough",
                                  "second paragraph\nspans two lines of text"]
    assert chunk_blocks("# only a heading\n\nshort") == []


def test_sync_stores_each_chunks_block_vectors(diary_index: MemoryIndex) -> None:
    db = sqlite3.connect(diary_index.store_path)
    rows = db.execute("SELECT c.text, b.n, length(b.vectors) FROM chunk_blocks b"
                      " JOIN chunks c ON c.rowid = b.chunk_rowid").fetchall()
    assert rows and len(rows) == db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    provider = diary_index.choice.provider
    assert provider is not None
    for text, n, size in rows:
        assert n == len(chunk_blocks(text)) and size == n * provider.dims * 4
    db.close()


def test_vector_leg_scores_a_chunk_by_its_best_block(diary_index: MemoryIndex) -> None:
    provider = diary_index.choice.provider
    assert provider is not None
    s = diary_index.settings()
    assert s.block_rescore == BLOCK_RESCORE > 0
    on = diary_index.candidates(QUERY, settings=s)
    off = diary_index.candidates(QUERY, settings=replace(s, block_rescore=0))
    q = np.asarray(provider.embed_query(on.query), dtype=np.float32)
    for hit in on.vector:
        text = on.chunks[hit.id].text
        blocks = np.asarray(provider.embed_documents(chunk_blocks(text)), dtype=np.float32)
        pooled = next(h for h in off.vector if h.id == hit.id)
        assert hit.raw == pytest.approx(pooled.score) and pooled.raw == pooled.score
        # the larger of the chunk's own cosine and its best block's: a hit only rises
        assert hit.score == pytest.approx(max(pooled.score, float(np.max(blocks @ q))),
                                          abs=1e-4)
    # the long diary's one answering turn outranks the short note that is merely on topic,
    # which the diluted pooled vector ranked first
    diary = next(h.id for h in on.vector if on.chunks[h.id].path.endswith("03.md"))
    assert off.vector[0].id != diary
    assert on.vector[0].id == diary and on.vector[0].rank == 1
    hits = diary_index.search(QUERY).hits
    assert hits and hits[0].path == "memory/2026-11-03.md"


def test_a_mostly_cjk_query_keeps_the_chunks_own_cosines(diary_index: MemoryIndex) -> None:
    """MiniLM reads no Chinese: the best of several noisy block cosines would only be a higher
    noise, so such a query's vector leg is the pooled one."""
    assert block_rescore("无人机 电池 续航多久", 5) == 0 and block_rescore(QUERY, 5) == 5
    cands = diary_index.candidates("无人机电池能飞多久", settings=diary_index.settings())
    assert cands.vector and all(h.score == h.raw for h in cands.vector)


def test_a_damaged_block_row_leaves_its_chunk_its_own_cosine(diary_index: MemoryIndex) -> None:
    """A blob that is not whole vectors, or of another width, is skipped, not a traceback."""
    good = diary_index.candidates(QUERY, settings=diary_index.settings())
    db = sqlite3.connect(diary_index.store_path)
    saved = db.execute("SELECT chunk_rowid, n, vectors FROM chunk_blocks").fetchall()
    try:
        for bad in (b"\x00" * 7, b"\x00" * 4 * 3):  # torn; three floats a vector
            db.execute("UPDATE chunk_blocks SET vectors = ?", (bad,))
            db.commit()
            cands = diary_index.candidates(QUERY, settings=diary_index.settings())
            assert cands.vector and all(h.score == h.raw for h in cands.vector)
            assert {h.id: h.raw for h in cands.vector} == {h.id: h.raw for h in good.vector}
    finally:
        db.executemany("UPDATE chunk_blocks SET n = ?, vectors = ? WHERE chunk_rowid = ?",
                       [(n, v, r) for r, n, v in saved])
        db.commit()
        db.close()
    again = diary_index.candidates(QUERY, settings=diary_index.settings())
    assert [(h.id, h.score) for h in again.vector] == [(h.id, h.score) for h in good.vector]


def test_block_rows_go_with_their_chunks(diary_index: MemoryIndex) -> None:
    ws = diary_index.workspace
    (ws / "memory" / "2026-11-04.md").unlink()
    (ws / "memory" / "2026-11-03.md").write_text(
        "# 2026-11-03\n\nuser: " + FILLER[0] + "\n\nuser: " + FILLER[1] + "\n", encoding="utf-8")
    diary_index.sync()
    db = sqlite3.connect(diary_index.store_path)
    orphans = db.execute("SELECT count(*) FROM chunk_blocks WHERE chunk_rowid NOT IN"
                         " (SELECT rowid FROM chunks)").fetchone()[0]
    assert orphans == 0
    assert db.execute("SELECT sum(n) FROM chunk_blocks").fetchone()[0] == 2
    db.close()


def test_reference_profile_and_other_providers_have_no_blocks(
        indexed_demo_reference: Path) -> None:
    assert profile_settings("reference").block_rescore == 0
    assert profile_settings("default", "local").block_rescore == BLOCK_RESCORE
    assert profile_settings("default", "openai").block_rescore == 0
    assert profile_settings("default", "e5").block_rescore == 0
    with MemoryIndex.open(indexed_demo_reference, profile="reference") as idx:
        db = sqlite3.connect(idx.store_path)
        assert db.execute("SELECT count(*) FROM chunk_blocks").fetchone()[0] == 0
        assert "blockVectors" not in db.execute("SELECT value FROM meta").fetchone()[0]
        db.close()


def test_an_index_without_blocks_is_rebuilt_for_them() -> None:
    new = {"provider": "local", "blockVectors": 1}
    why = identity_diff({"provider": "local"}, new)
    assert why is not None and "blockVectors" in why.reason
    assert identity_diff(new, new) is None


def test_calibration_reads_the_chunks_own_cosine() -> None:
    cands = Candidates("q", "hybrid", (LegHit("a", 0.62, 1, 0.41), LegHit("b", 0.5, 2, 0.5)),
                       (), {}, 200)
    assert query_evidence(cands).top_cos == pytest.approx(0.5)
