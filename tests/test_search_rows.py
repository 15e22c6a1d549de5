"""``memory_search`` reads only the chunk rows its one fusion needs (issue #10: at 133k chunks
reading every candidate's row was a third of a query), and answers exactly as the full
candidates would. Real local model, the demo workspace, both profiles."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memory_core import MemoryIndex, fuse

QUERIES = ["router VLAN", "what did we decide about the database migration", "连接池",
           "deploy", "backup schedule alerts", "x"]


@pytest.mark.parametrize("fixture", ["indexed_demo", "indexed_demo_reference"])
def test_search_equals_fusing_every_row(fixture: str, request: pytest.FixtureRequest) -> None:
    ws: Path = request.getfixturevalue(fixture)
    profile = "reference" if fixture.endswith("reference") else "default"
    with MemoryIndex.open(ws, profile=profile) as idx:
        s = idx.settings()
        for q in QUERIES:
            full = idx.candidates(q, settings=s)
            cut = idx.candidates(q, settings=s, rows_for=s.candidate_count())
            assert full.rows_for is None and cut.rows_for == s.candidate_count()
            n = s.candidate_count()
            base = {h.id for h in (*full.vector[:n], *full.keyword[:n])}
            # and the pools' chunks holding a supersession (the current step may draw them)
            assert base <= set(cut.chunks) and set(cut.chunks) - base <= set(full.subjects)
            assert cut.vector == full.vector and cut.keyword == full.keyword
            assert fuse(cut, s).hits == fuse(full, s).hits == idx.search(q).hits, q
            # more results than the rows were read for: refused, not answered from half a pool
            wide = replace(s, max_results=s.max_results * 10)
            if wide.candidate_count() > s.candidate_count():
                with pytest.raises(ValueError, match="fetched again"):
                    fuse(cut, wide)


def test_keyword_only_fallback_lists_keep_their_rows(demo_ws: Path) -> None:
    """Keyword-only under the reference: an AND query that matches nothing runs one search
    per keyword; their hits need rows too, with and without a cut."""
    with MemoryIndex.open(demo_ws, profile="reference", provider="none") as idx:
        idx.sync()
        s = idx.settings()
        q = "router zzzqqq-nothing deploy"
        full = idx.candidates(q, settings=s)
        assert not full.keyword and any(full.keyword_fallback), full
        cut = idx.candidates(q, settings=s, rows_for=s.candidate_count())
        for c in (full, cut):
            n = s.candidate_count() if c.rows_for else None
            assert all(h.id in c.chunks for lst in c.keyword_fallback for h in lst[:n])
        assert fuse(full, s).hits == fuse(cut, s).hits == idx.search(q).hits
        assert idx.search(q).hits
