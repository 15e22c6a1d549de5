"""The OR query's per-phrase row counts (the calibration's evidence, ``Candidates.keyword_df``)
read from the keyword postings sidecar must be FTS5's own ``count(*)`` of each phrase's MATCH:
single tokens, stems, identifiers FTS5 splits into multi-token phrases, CJK bigrams, words in
every row and words in none. Real SQLite and FTS5, keyword-only index; the threshold is lowered
so this small index gets a sidecar."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.base.config import profile_settings
from memory_core.read.keyword import phrase_counts
from memory_core.read.query import or_fts_query
from memory_core.storage import fts_reads as reads
from memory_core.storage import postings
from memory_core.storage.store import Store

WORDS = ("server database deploy camping camps café naïve deploy_script user_id v2 HTTP2 "
         "backup alert rare1 rare2 rare3").split()


@pytest.fixture(scope="module")
def kw_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryIndex]:
    root = tmp_path_factory.mktemp("df")
    rng = random.Random(3)
    (root / "memory").mkdir()
    for f in range(120):
        words = ["server", *rng.sample(WORDS, rng.randint(1, 6))]
        if f % 7 == 0:
            words.append("熔断器触发了告警")
        (root / "memory" / f"2026-03-{f % 28 + 1:02d}-n{f}.md").write_text(
            f"# n{f}\n\n{' '.join(words)}\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMORY_CORE_POSTINGS_MIN_ROWS", "1")
        idx = MemoryIndex.open(root, provider="none")
        idx.sync()
        yield idx
        idx.close()


QUERIES = ["server", "server database deploy", "camp camping", "cafe naive", "HTTP2 v2 server",
           "deploy_script user_id failed", "熔断器 是什么原因", "nothing matches this",
           "rare1 rare3", "backup alert server deploy_script 告警"]


def _fts5_counts(store: Store, match: str) -> list[int]:
    """FTS5's own count of each phrase, read afresh (not through the store's memo)."""
    table = postings.TABLE
    return [int(store.read(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (ph,))[0][0])
            for ph in match.split(" OR ")]


@pytest.mark.parametrize("query", QUERIES)
def test_counts_from_the_sidecar_are_fts5s(kw_index: MemoryIndex, query: str) -> None:
    store, s = kw_index.store, profile_settings("default")
    assert postings.for_store(store) is not None  # the path under test answers
    match = or_fts_query(query, bigrams=s.cjk_bigrams)
    assert match
    dfs, n_rows = phrase_counts(store, match, postings.TABLE, s)
    assert list(dfs) == _fts5_counts(store, match)
    assert n_rows == reads.row_count(store, postings.TABLE)
    if query == "server":
        assert dfs[0] == n_rows == 120  # in every note: not a trivial zero


def test_without_a_sidecar_fts5_counts(tmp_path: Path, kw_index: MemoryIndex) -> None:
    store, s = kw_index.store, profile_settings("default")
    match = or_fts_query("server deploy_script rare2", bigrams=s.cjk_bigrams)
    assert match
    want = _fts5_counts(store, match)
    side = postings.sidecar_path(store.path)
    moved = tmp_path / "postings.moved"
    side.rename(moved)
    try:
        assert postings.for_store(store) is None
        assert list(phrase_counts(store, match, postings.TABLE, s)[0]) == want
    finally:
        moved.rename(side)
