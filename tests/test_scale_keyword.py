"""The default profile's OR keyword query, answered by splitting its phrases (issue #10 item 2).

``keyword.plans.or_query_topk`` must return exactly what FTS5's own ``ORDER BY bm25 LIMIT pool``
returns (same ids, same order, same bm25 floats), whichever plan answers. The corpus is built to
make that hard: words in most chunks (IDF clamped to 1e-6), duplicate chunks (exact ties), a
rare word per topic, Chinese bigrams, and a source filter. Real SQLite, keyword-only index.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.keyword import reads
from memory_core.keyword.fts import phrase_bound
from memory_core.keyword.plans import or_query_topk
from memory_core.query import or_fts_query

COMMON = "server database deploy alert backup".split()
MEDIUM = [f"topic{i}" for i in range(30)]
RARE = [f"rare{i}" for i in range(120)]


def _workspace(root: Path) -> Path:
    rng = random.Random(7)
    mem = root / "memory"
    mem.mkdir(parents=True)
    lines = []
    for i in range(600):
        words = [w for w in COMMON if rng.random() < 0.8]
        words += rng.sample(MEDIUM, rng.randint(1, 3)) + rng.sample(RARE, rng.randint(0, 2))
        if i % 9 == 0:
            words.append("熔断器触发")
        rng.shuffle(words)
        lines.append(" ".join(words * rng.randint(1, 3)))
    lines += lines[:40]  # exact duplicates: equal bm25, the tie order must hold
    for f, line in enumerate(lines):  # one chunk per file
        (mem / f"2026-01-{f % 28 + 1:02d}-n{f}.md").write_text(f"# n{f}\n\n{line}\n",
                                                                encoding="utf-8")
    (root / "MEMORY.md").write_text("# index\n\nserver topic1 rare3 backup\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def kw_index(tmp_path_factory: pytest.TempPathFactory) -> MemoryIndex:
    ws = _workspace(tmp_path_factory.mktemp("kw"))
    idx = MemoryIndex.open(ws, provider="none")
    idx.sync()
    assert idx.status().chunks > 300, idx.status().chunks
    return idx


def _queries() -> list[str]:
    rng = random.Random(3)
    out = ["server database deploy", "server", "熔断器 是什么原因", "topic1 server backup",
           "rare5 server database deploy alert backup", "nothing matches this"]
    for _ in range(60):
        words = rng.sample(COMMON, rng.randint(0, 4)) + rng.sample(MEDIUM, rng.randint(0, 3))
        words += rng.sample(RARE, rng.randint(0, 2))
        out.append(" ".join(words) or "server")
    return out


@pytest.mark.parametrize("pool", [5, 20, 60])
@pytest.mark.parametrize("sources", [None, ["memory"]])
def test_split_query_equals_the_full_fts5_query(kw_index: MemoryIndex, pool: int,
                                                sources: list[str] | None) -> None:
    st, table = kw_index.store, "chunks_fts_bigram"
    plans: dict[str, int] = {}
    for q in _queries():
        match = or_fts_query(q)
        assert match
        want = reads.match_rows(st, match, [], pool, table=table, sources=sources)
        got, plan = or_query_topk(st, table, match.split(" OR "), pool, sources)
        plans[plan.split("-")[0]] = plans.get(plan.split("-")[0], 0) + 1
        assert got == want, (q, plan)
    if pool <= 20:
        assert plans.get("split", 0) >= 10, plans  # the fast path is actually taken


def test_phrase_bound_is_fts5s_clamped_idf() -> None:
    assert phrase_bound(100, 0) == 0.0
    assert phrase_bound(100, 50) == pytest.approx(2.2e-6)
    assert phrase_bound(100, 1) == pytest.approx(2.2 * math.log(99.5 / 1.5))


def test_default_profile_search_is_unchanged_by_the_split(kw_index: MemoryIndex) -> None:
    """Through the public search path: the keyword leg's ids and scores are FTS5's."""
    from memory_core.config import profile_settings
    from memory_core.keyword.plans import keyword_leg
    from memory_core.search import fetch_candidates

    s = profile_settings("default")
    for q in _queries()[:20]:
        hits, match, table = keyword_leg(kw_index.store, q, s, 200, None)
        assert match is not None
        want = reads.match_rows(kw_index.store, match, [], 200, table=table)
        assert [(h.id, h.raw) for h in hits] == want
        c = fetch_candidates(kw_index.store, None, q, s)
        assert [h.id for h in c.keyword] == [i for i, _ in want]
