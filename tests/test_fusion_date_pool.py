"""The date hint draws the chunks of the named days from the legs' whole fetched pools.

A question naming a date ("What movie did Joanna watch on 1 May, 2022?") is about the diary or
transcript of that day, which both legs may rank below their cut (``maxResults ×
candidateMultiplier``): a transcript carries its date only in its file name. Normalized fusion
therefore lets every pool hit in a file the hint rewards compete (docs/retrieval.md, issue #14:
LoCoMo sessions held-out R@5 0.845 → 0.853). The real fusion and a real index, nothing mocked.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from memory_core import MemoryIndex
from memory_core.base.config import profile_settings
from memory_core.read.candidates import Candidates, ChunkInfo, LegHit
from memory_core.read.fusion import fuse, pool_dates

QUERY = "What movie did Joanna watch on 1 May, 2022?"


def _chunk(cid: str, path: str) -> ChunkInfo:
    return ChunkInfo(cid, path, "memory", 1, 5, f"text of {cid}")


def _cands(query: str = QUERY, *, with_gold_row: bool = True) -> Candidates:
    """30 undated keyword hits above the transcript of 2 May 2022, which ranks 31st: five
    strong ones (BM25 over the best 0.92–1), 25 middling ones (0.43–0.55), the day's 0.3."""
    chunks = {f"n{i}": _chunk(f"n{i}", f"notes/n{i}.md") for i in range(30)}
    if with_gold_row:
        chunks["gold"] = _chunk("gold", "sessions/2022-05-02.jsonl")
    raws = [-1.0 + 0.02 * i for i in range(5)] + [-0.55 + 0.005 * i for i in range(25)]
    keyword = tuple(LegHit(f"n{i}", 0.5, i + 1, raw) for i, raw in enumerate(raws))
    keyword += (LegHit("gold", 0.3, 31, -0.3),)
    return Candidates(query, "fts-only", (), keyword, chunks, 200)


def test_a_dated_pool_hit_below_the_cut_competes() -> None:
    s = profile_settings("default")
    assert s.candidate_count() == 24  # the gold hit (31st) is below the cut
    d = fuse(_cands(), s)
    # keyword alone (no vector leg): 0.3 + 0.4 × 2^(-1/7) (a day from the named one) ≈ 0.66
    assert [h.id for h in d.hits] == ["n0", "n1", "n2", "n3", "n4", "gold"]
    gold = d.hits[-1]
    assert gold.text_rank == 31 and gold.components["date"] > 0
    off = fuse(_cands(), replace(s, date_hint=0.0))  # without the hint: the cut as before
    assert "gold" not in {h.id for h in off.hits + off.below_gate}


def test_undated_questions_and_the_reference_keep_the_cut() -> None:
    d = fuse(_cands("What movie did Joanna watch?"), profile_settings("default"))
    assert "gold" not in {h.id for h in d.hits + d.below_gate}
    assert pool_dates(QUERY, profile_settings("reference")) == []
    assert pool_dates("What movie did Joanna watch?", profile_settings("default")) == []
    assert pool_dates(QUERY, profile_settings("default"))


def test_a_pool_hit_without_its_row_is_skipped() -> None:
    d = fuse(_cands(with_gold_row=False), profile_settings("default"))
    assert "gold" not in {h.id for h in d.hits + d.below_gate}
    assert len(d.hits) == 6


def test_search_reads_the_rows_of_the_dated_pool(tmp_path: Path) -> None:
    # MemoryIndex.search must fetch the rows of the whole pool when pool_dates() says so
    # (a search that read only each leg's cut would never see the day's transcript here)
    mem = tmp_path / "memory"
    mem.mkdir()
    for i in range(8):
        (mem / f"film-{i}.md").write_text(f"# Films {i}\n\nJoanna watched a movie, movie {i}.\n")
    (mem / "2022-05-02.md").write_text("# Notes\n\nJoanna stayed in and cooked.\n")
    with MemoryIndex.open(tmp_path, provider="none") as idx:
        idx.sync()
        s = replace(idx.settings(), candidate_multiplier=1, max_results=3)
        res = idx.search(QUERY, settings=s)
        ranked = res.hits + res.below_gate
        day = next(h for h in ranked if h.path == "memory/2022-05-02.md")
        assert day.components["date"] > 0 and day.text_rank is not None
        assert day.text_rank > s.candidate_count()
