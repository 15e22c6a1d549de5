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
from typing import TYPE_CHECKING

from . import postings
from .calibration import phrase_bound
from .candidates import Candidates, ChunkInfo, LegHit
from .config import SearchSettings
from .embeddings import EmbeddingProvider
from .fusion import bm25_rank_to_score
from .query import extract_keywords, or_fts_query, reference_fts_query
from .store import OperationalError, Store

if TYPE_CHECKING:
    import numpy as np
else:
    from .common.lazy import numpy as np

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
    if settings.keyword_query == "or" and store.fts_available:
        rows = or_query_topk(store, table, match.split(" OR "), pool, sources)[0]
    else:
        rows = store.keyword_search(match, [], pool, table=table, sources=sources)
    hits = [LegHit(cid, bm25_rank_to_score(rank), i + 1, rank)
            for i, (cid, rank) in enumerate(rows)]
    return hits, match, table


def or_query_topk(store: Store, table: str, phrases: Sequence[str], pool: int,
                  sources: Sequence[str] | None) -> tuple[list[tuple[str, float]], str]:
    """The top ``pool`` rows of the OR query over ``phrases``: the same rows, order and bm25 as
    FTS5's own ``ORDER BY bm25 LIMIT pool``, without computing bm25 for every matching row.

    FTS5 has no top-k pruning: an OR query computes bm25 (positions, a docsize lookup) for every
    row matching any phrase, and a phrase found in most chunks ("server", "py") makes that the
    whole corpus (300 ms at 133k chunks). Instead, the MaxScore argument: split the phrases into
    the rarest ("essential") ones and the rest, whose whole contribution to any row is below
    ``delta`` (:func:`phrase_bound` summed). Rank the rows matching an essential phrase (cheap:
    rare phrases match few rows) and keep the best ``8 · pool``. A row left out scores at most
    the best left-out essential score plus ``delta``; when that is below the ``pool``-th full
    score of the kept rows, no row left out can enter the top ``pool``, and FTS5 scoring the
    kept rows with the full query (one scan, bm25 only for them) gives the exact answer.
    Otherwise, or when no split can work (every phrase is needed, too few rows), the full query
    runs as before. Before any of that, a fresh keyword postings sidecar (:mod:`.postings`, on
    indexes of 5k rows and more) answers the same query in numpy with the same floats.
    Returns the ``(id, rank)`` rows and which plan answered (``postings``, ``full``,
    ``split-<k>``).
    """
    match = " OR ".join(phrases)
    if table == postings.TABLE:
        try:
            side = postings.for_store(store)
            got = side.ranked(store.db, table, phrases, pool, sources) if side else None
        except (OperationalError, IndexError, ValueError):
            got = None  # a damaged sidecar only costs speed: FTS5 answers below
        if got is not None:
            return got, "postings"
    if len(phrases) >= 2:
        try:
            split = _split_topk(store, table, phrases, pool, sources)
        except OperationalError:
            split = None  # whatever FTS5 refuses, the full query handles as it always has
        if split is not None:
            return split
    return store.keyword_search(match, [], pool, table=table, sources=sources), "full"


def _split_topk(store: Store, table: str, phrases: Sequence[str], pool: int,
                sources: Sequence[str] | None) -> tuple[list[tuple[str, float]], str] | None:
    """:func:`or_query_topk`'s split plans; ``None`` when none of them can answer exactly."""
    match = " OR ".join(phrases)
    n_rows = store.fts_row_count(table)
    dfs = store.fts_doc_counts(table, phrases)
    bounds = [phrase_bound(n_rows, d) for d in dfs]
    present = sorted((i for i in range(len(phrases)) if dfs[i] > 0), key=lambda i: (dfs[i], i))
    if not present or bounds[present[0]] < 1e-3:
        return None  # every phrase is in half the rows or more: scores ~1e-6, nothing to split
    limit = 8 * pool
    # What is left out after the first k phrases: at most two splits are tried, the first that
    # leaves out less than 1.0 of bm25, then the one that leaves out only the phrases in half the
    # rows or more (their IDF is clamped to 1e-6: they can only break near-ties).
    rest = [sum(bounds[i] for i in present[k:]) for k in range(len(present) + 1)]
    tries = sorted({k for k in (next((k for k in range(1, len(present)) if rest[k] < 1.0), 0),
                                next((k for k in range(1, len(present)) if rest[k] < 1e-3), 0))
                    if k})
    for k in tries:
        essential = sorted(present[:k])
        ess_rows = sum(dfs[i] for i in essential)
        if ess_rows < pool:
            continue  # too few rows can match them: the others would fill the pool
        if ess_rows > 0.4 * sum(dfs[i] for i in present):
            break  # about as costly as the full query, which a failed split would add to
        # a 1e-6 relative margin covers the rounding of bm25's sums and of our IDF
        delta = rest[k] * (1 + 1e-6) + 1e-12
        ess = store.fts_ranked(table, " OR ".join(phrases[i] for i in essential), limit,
                               sources=sources)
        if len(ess) < pool:
            continue
        ceiling = 0.0 if len(ess) < limit else -ess[-1][2]  # best essential score left out
        floor = -ess[pool - 1][2]  # the pool-th full score lies in [floor, floor + delta]
        if ceiling >= floor:
            continue
        full = store.fts_ranked(table, match, pool, sources=sources, rowids=[r[0] for r in ess])
        if len(full) == pool and ceiling + delta < -full[-1][2] * (1 - 1e-9):
            return [(cid, rank) for _, cid, rank in full], f"split-{k}"
    return None


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
                     engine: str = "auto", rows_for: int | None = None) -> Candidates:
    """Fetch both legs for ``query`` once. Empty query → empty candidates.

    ``rows_for``: read the chunk rows (path, lines, text) of each leg's first ``rows_for`` hits
    only, which is all one fusion under settings with ``candidate_count() <= rows_for`` reads
    (``memory_search`` itself: 48 rows of ~400 at the default cut, a third of a query's time at
    133k chunks). ``None``: every hit's row, for callers that re-fuse under other settings.
    """
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
    # every hit of every list (the fallback lists run when the keyword leg found nothing)
    cut = max(len(vector), len(keyword), *map(len, fallback), 0) if rows_for is None else max(
        0, rows_for)
    ids = {h.id for h in vector[:cut]} | {h.id for h in keyword[:cut]}
    for lst in fallback:
        ids |= {h.id for h in lst[:cut]}
    rows = store.chunk_rows(ids)
    chunks = {cid: ChunkInfo(r.id, r.path, r.source, r.start_line, r.end_line, r.text,
                             r.mtime_ms) for cid, r in rows.items()}
    # A row can vanish between the legs and the lookup (a concurrent sync): drop it.
    vector = _present(vector, chunks, cut)
    keyword = _present(keyword, chunks, cut)
    fb = tuple(tuple(_present(lst, chunks, cut)) for lst in fallback)
    dfs, n_rows = _phrase_counts(store, match, table, settings)
    return Candidates(q, mode, tuple(vector), tuple(keyword), chunks, pool, match, table, fb,
                      tuple(terms), timings, rows_for, dfs, n_rows)


def _phrase_counts(store: Store, match: str | None, table: str, settings: SearchSettings
                   ) -> tuple[tuple[int, ...], int]:
    """The OR query's per-phrase row counts and the table's rows (see ``Candidates.keyword_df``);
    nothing for the reference's AND query, whose candidates stay as they were."""
    if settings.keyword_query != "or" or not match or not store.fts_available:
        return (), 0
    try:
        return (tuple(store.fts_doc_counts(table, match.split(" OR "))),
                store.fts_row_count(table))
    except OperationalError:
        return (), 0  # only the calibration's evidence is lost: fusion reads the bm25 alone


def _present(hits: list[LegHit], chunks: dict[str, ChunkInfo], cut: int) -> list[LegHit]:
    """``hits`` without those whose row vanished; past ``cut`` no row was read: kept as is."""
    return [h for h in hits[:cut] if h.id in chunks] + hits[cut:]
