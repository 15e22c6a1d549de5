"""Search legs: a query → :class:`Candidates`, fetched once per leg.

The keyword leg runs FTS5 (the reference's AND query on ``chunks_fts``, or this project's OR
query over the CJK-bigram shadow table); the vector leg embeds the query once and asks the store
for its nearest chunks. Both fetch a pool large enough for any slider position (200, the
reference's cap), so fusion can cut each leg to ``maxResults × candidateMultiplier`` without
asking again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from .candidates import Candidates, ChunkInfo, LegHit
from .config import SearchSettings
from .embeddings import EmbeddingProvider
from .fusion import bm25_rank_to_score
from .query import extract_keywords, or_fts_query, reference_fts_query
from .store import Store

POOL = 200


def keyword_leg(store: Store, query: str, settings: SearchSettings, pool: int,
                sources: Sequence[str] | None) -> tuple[list[LegHit], str | None, str]:
    """Run the keyword query the settings ask for; return hits, the MATCH string and table."""
    if settings.keyword_query == "or":
        match = or_fts_query(query, bigrams=settings.cjk_bigrams)
        table = "chunks_fts_bigram" if settings.cjk_bigrams else "chunks_fts"
    else:
        match = reference_fts_query(query)
        table = "chunks_fts"
    if not match:
        return [], None, table
    rows = store.keyword_search(match, [], pool, table=table, sources=sources)
    hits = [LegHit(cid, bm25_rank_to_score(rank) if match else 1.0, i + 1, rank)
            for i, (cid, rank) in enumerate(rows)]
    return hits, match, table


def vector_leg(store: Store, qvec: np.ndarray | None, pool: int,
               sources: Sequence[str] | None, *, use_numpy: bool = False,
               engine: str = "auto") -> list[LegHit]:
    """The ``pool`` nearest chunks (``engine``: see :meth:`Store.vector_search`)."""
    if qvec is None or not np.any(qvec):
        return []
    rows = store.vector_search(qvec, pool, sources, use_numpy=use_numpy, engine=engine)
    return [LegHit(cid, score, i + 1, score) for i, (cid, score) in enumerate(rows)]


def fetch_candidates(store: Store, provider: EmbeddingProvider | None, query: str,
                     settings: SearchSettings, sources: Sequence[str] | None = None,
                     *, pool: int = POOL, use_numpy: bool = False,
                     query_vector: np.ndarray | None = None,
                     engine: str = "auto") -> Candidates:
    """Fetch both legs for ``query`` once. Empty query → empty candidates."""
    q = query.strip()
    timings: dict[str, float] = {}
    if not q:
        return Candidates(query, "empty", (), (), {}, pool)
    if provider is None:
        mode = "fts-only"
    elif not store.fts_available:
        mode = "vector-only"
    else:
        mode = "hybrid"
    t0 = time.perf_counter()
    keyword: list[LegHit] = []
    match, table = None, "chunks_fts"
    fallback: list[list[LegHit]] = []
    terms: list[str] = []
    if mode != "vector-only":
        keyword, match, table = keyword_leg(store, q, settings, pool, sources)
        if mode == "fts-only" and not keyword and settings.keyword_query == "and":
            for kw in extract_keywords(q) or [q]:
                hits, _, _ = keyword_leg(store, kw, settings, pool, sources)
                fallback.append(hits)
                terms.append(kw)
    timings["keyword_ms"] = (time.perf_counter() - t0) * 1000
    vector: list[LegHit] = []
    if provider is not None:
        t1 = time.perf_counter()
        qvec = query_vector if query_vector is not None else provider.embed_query(q)
        timings["embed_ms"] = (time.perf_counter() - t1) * 1000
        t2 = time.perf_counter()
        vector = vector_leg(store, qvec, pool, sources, use_numpy=use_numpy, engine=engine)
        timings["vector_ms"] = (time.perf_counter() - t2) * 1000
    ids = {h.id for h in vector} | {h.id for h in keyword}
    for lst in fallback:
        ids |= {h.id for h in lst}
    rows = store.chunk_rows(ids)
    chunks = {cid: ChunkInfo(r.id, r.path, r.source, r.start_line, r.end_line, r.text,
                             r.mtime_ms) for cid, r in rows.items()}
    # A row can vanish between the legs and the lookup (a concurrent sync): drop it.
    vector = [h for h in vector if h.id in chunks]
    keyword = [h for h in keyword if h.id in chunks]
    fb = tuple(tuple(h for h in lst if h.id in chunks) for lst in fallback)
    return Candidates(q, mode, tuple(vector), tuple(keyword), chunks, pool, match, table, fb,
                      tuple(terms), timings)
