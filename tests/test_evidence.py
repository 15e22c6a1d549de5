"""Evidence that means something (issue #33 item 6), in the default profile, on the demo home
indexed with the real local model: stop words and repeated terms are not confident evidence,
and an identifier is found however the query spells it. The reference profile is untouched
(``tests/test_reference_goldens.py``)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from memory_core import MemoryIndex
from memory_core.read.query import compound_parts, distinct_terms, or_fts_query

from .conftest import ROOT

HOME = ROOT / "examples" / "demo-home"


def test_query_pieces() -> None:
    assert or_fts_query("the") is None and or_fts_query("a the of") is None
    assert or_fts_query("的") is None
    assert or_fts_query("the crawler") == '"crawler"'
    assert compound_parts("ops2291") == ["ops", "2291"] and compound_parts("v2beta") == [
        "v", "2", "beta"]
    assert compound_parts("crawler") == [] and compound_parts("2291") == []
    assert distinct_terms("crawler Crawler  crawler pool") == "crawler pool"


#: The diaries the fast tier's home keeps: September's, the month OPS-2291 was written in (22 of
#: the 133, with MEMORY.md, notes/ and the transcripts). Embedding the whole home with the local
#: model costs ~65 CPU s, most of this file's; the whole home (``[whole-…]``, full tier) asks the
#: same questions with the same assertions on all six months.
MONTH = "2026-09-"


@pytest.fixture(scope="module", params=[
    "month", pytest.param("whole", marks=pytest.mark.full)])
def home(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[MemoryIndex]:
    """The demo home's workspace (a copy), indexed once with the local model, default profile:
    one month of its diaries (the fast tier) or all of them (the full tier)."""
    dest = tmp_path_factory.mktemp("evidence") / "demo-home"
    shutil.copytree(HOME, dest, ignore=shutil.ignore_patterns(".memory"))
    if request.param == "month":
        for diary in (dest / "workspace" / "memory").glob("20*.md"):
            if not diary.name.startswith(MONTH):
                diary.unlink()
    with MemoryIndex.open(dest / "workspace") as idx:
        assert idx.config.profile == "default"
        idx.sync()
        yield idx


@pytest.mark.parametrize("query", ["the", "a", "的", "the a of", "what is it"])
def test_stop_words_alone_answer_nothing(home: MemoryIndex, query: str) -> None:
    res = home.search(query)
    assert res.hits == [] and "nothing relevant" in res.abstention


def test_a_repeated_term_counts_once(home: MemoryIndex) -> None:
    once = home.search("crawler")
    seven = home.search(" ".join(["crawler"] * 7))
    assert [(h.path, h.start_line, round(h.score, 6)) for h in seven.hits] == [
        (h.path, h.start_line, round(h.score, 6)) for h in once.hits]


@pytest.mark.parametrize("query", ["OPS-2291", "ops-2291", "OPS 2291", "OPS2291", "ops2291",
                                   "what happened with OPS2291?"])
def test_an_identifier_is_found_however_it_is_spelled(home: MemoryIndex, query: str) -> None:
    res = home.search(query)
    assert res.hits, res.abstention
    top = res.hits[0]
    assert top.path == "memory/2026-09-02.md" and top.start_line <= 40 <= top.end_line
    assert top.score >= 0.5
