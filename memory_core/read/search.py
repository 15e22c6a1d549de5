"""Search legs: a query → :class:`Candidates`, fetched once per leg.

The keyword leg is :mod:`memory_core.keyword` (the reference's AND query on ``chunks_fts``, or
this project's OR query over the CJK-bigram shadow table, by its query plans); the vector leg
embeds the query once and asks the store for its nearest chunks. Both fetch a pool large enough
for any slider position (200, the reference's cap), so fusion can cut each leg to
``maxResults × candidateMultiplier`` without asking again.
"""

from __future__ import annotations

import contextvars
import functools
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..base.config import SearchSettings
from ..base.supersession import chunk_marks
from ..base.text import mostly_cjk
from ..embeddings import EmbeddingError, EmbeddingProvider
from ..storage.fts import REFERENCE_TABLE
from ..storage.store import Store
from .candidates import Candidates, ChunkInfo, LegHit
from .keyword import keyword_leg, phrase_counts
from .query import distinct_terms, extract_keywords

if TYPE_CHECKING:
    import numpy as np
else:
    from ..base.lazy import numpy as np

POOL = 200


def vector_leg(store: Store, qvec: np.ndarray | None, pool: int,
               sources: Sequence[str] | None, rescore: int = 0) -> list[LegHit]:
    """The ``pool`` nearest chunks (:meth:`Store.vector_search`), the first ``rescore`` of
    them scored by their best block (:func:`best_block`)."""
    if qvec is None or not np.any(qvec):
        return []
    rows = store.vector_search(qvec, pool, sources)
    return best_block(store, qvec, [LegHit(cid, score, i + 1, score)
                                    for i, (cid, score) in enumerate(rows)], rescore)


def block_rescore(query: str, top: int) -> int:
    """``top`` (``SearchSettings.block_rescore``), or 0 for a query written mostly in a script
    without spaces: the model the blocks are embedded with reads English only (MiniLM: XQuAD
    zh's vector leg alone S@5 0.29), its cosines on such a query are noise, and the larger of
    several noises is only a higher noise (XQuAD zh lost 1.6 points of S@5 under the gate)."""
    return 0 if top and mostly_cjk(query) else top


def best_block(store: Store, qvec: np.ndarray, hits: list[LegHit], top: int) -> list[LegHit]:
    """``hits`` with each of the first ``top`` scored by the larger of its own cosine and its
    best block's (:meth:`Store.block_vectors`; a chunk without blocks keeps its own), then
    re-ranked.

    A chunk's one vector is the mean of its windows, diluted by the turns around an answer;
    its best block is not (issue #36: LongMemEval-S dev, ranked ``recall_any@5`` 0.976 →
    0.986). The larger of the two: a chunk whose whole says more than any one paragraph (a
    list of bullets about one incident) keeps its score, so a hit only ever rises. ``raw``
    keeps the chunk's own cosine: the calibration's evidence of "anything relevant stored" was
    fitted on it (``read/calibration.py``, ``top_cos``). Only the first ``top`` are read: a
    chunk further down rarely has a block better than the leg's first few (cross-validated:
    ``benchmarks/cv_block_rescore.py``).
    """
    if top <= 0 or not hits:
        return hits
    q = np.asarray(qvec, dtype=np.float32)
    blocks = {cid: m for cid, m in store.block_vectors(h.id for h in hits[:top]).items()
              if m.shape[1] == q.size}  # another width: not this model's (a damaged row)
    if not blocks:
        return hits
    scored = [LegHit(h.id, max(h.score, float(np.max(blocks[h.id] @ q))), 0, h.raw)
              if h.id in blocks else h for h in hits[:top]]
    ranked = sorted(scored + hits[top:], key=lambda h: -h.score)
    return [LegHit(h.id, h.score, i + 1, h.raw) for i, h in enumerate(ranked)]


def query_text(query: str, settings: SearchSettings) -> str:
    """The text both legs search for: ``query`` stripped and, under the default profile's OR
    query, each term once (a repeated term is evidence once, in both legs; a group's vector
    legs embed the same text as its queries' own searches)."""
    q = query.strip()
    return distinct_terms(q) if settings.keyword_query == "or" else q


def fetch_candidates(store: Store, provider: EmbeddingProvider | None, query: str,
                     settings: SearchSettings, sources: Sequence[str] | None = None,
                     *, pool: int = POOL,
                     query_vector: np.ndarray | None = None,
                     rows_for: int | None = None,
                     vector_hits: VectorLeg | None = None) -> Candidates:
    """Fetch both legs for ``query`` once. Empty query → empty candidates.

    ``vector_hits``: the vector leg already fetched for ``query`` with these ``pool`` and
    ``sources`` (:func:`vector_legs`, a group's at once), with its share of the group's time.

    ``rows_for``: read the chunk rows (path, lines, text) of each leg's first ``rows_for`` hits
    only, which is all one fusion under settings with ``candidate_count() <= rows_for`` reads
    (``memory_search`` itself: 48 rows of ~400 at the default cut, a third of a query's time at
    133k chunks). ``None``: every hit's row, for callers that re-fuse under other settings.
    """
    q = query_text(query, settings)
    timings: dict[str, float] = {}
    note = ""
    if not q:
        return Candidates(query, "empty", (), (), {}, pool)
    if provider is None:
        mode = "fts-only"
    elif not store.fts_available:
        mode = "vector-only"
    else:
        mode = "hybrid"
    # A provider that answers over the network embeds while the keyword leg runs: the query's
    # round trip (a millisecond or more, mostly waiting) overlaps the leg instead of following
    # it. Errors surface where they did (after the keyword leg), the vector is the same.
    soon = (_Soon(provider.embed_query, q) if provider is not None and query_vector is None
            and vector_hits is None and mode != "vector-only"
            and getattr(provider, "waits_on_network", False) else None)
    t0 = time.perf_counter()
    keyword: list[LegHit] = []
    match, table = None, REFERENCE_TABLE
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
    if provider is not None and vector_hits is not None:
        vector = list(vector_hits.hits)
        timings.update(vector_hits.timings)
    elif provider is not None:
        vector, mode, note = _fetch_vector_leg(store, provider, q, mode, pool, sources,
                                               query_vector, soon, timings,
                                               block_rescore(q, settings.block_rescore))
    # every hit of every list (the fallback lists run when the keyword leg found nothing)
    cut = max(len(vector), len(keyword), *map(len, fallback), 0) if rows_for is None else max(
        0, rows_for)
    chunks = _hit_chunks(store, vector, keyword, fallback, cut, rows_for)
    # A row can vanish between the legs and the lookup (a concurrent sync): drop it.
    vector = _present(vector, chunks, cut)
    keyword = _present(keyword, chunks, cut)
    fb = tuple(tuple(_present(lst, chunks, cut)) for lst in fallback)
    dfs, n_rows = phrase_counts(store, match, table, settings)
    marks = chunk_marks(
        store.supersessions(), ((c.id, c.path, c.start_line, c.end_line) for c in chunks.values()))
    return Candidates(q, mode, tuple(vector), tuple(keyword), chunks, pool, match, table, fb,
                      tuple(terms), timings, rows_for, dfs, n_rows, note, marks.superseded,
                      marks.current, marks.subjects)


def _fetch_vector_leg(store: Store, provider: EmbeddingProvider, q: str, mode: str, pool: int,
                      sources: Sequence[str] | None, query_vector: np.ndarray | None,
                      soon: _Soon | None, timings: dict[str, float], rescore: int = 0
                      ) -> tuple[list[LegHit], str, str]:
    """The vector leg of :func:`fetch_candidates`: embed ``q`` (unless ``query_vector`` is
    given, or ``soon`` is embedding it already) and search the vectors, timing both into
    ``timings``. Returns the hits, the mode and a note: when the embedding fails beside a
    keyword leg, the mode becomes ``fts-only`` and the note says why (no hits)."""
    note = ""
    t1 = time.perf_counter()
    try:
        qvec = (query_vector if query_vector is not None else
                soon.result() if soon is not None else provider.embed_query(q))
    except EmbeddingError as e:
        if mode == "vector-only":
            raise  # no keyword leg to answer instead
        # the provider is down: the keyword leg answers alone, and says so
        qvec, mode = None, "fts-only"
        note = f"the query's embedding failed ({e}): keyword results only"
    timings["embed_ms"] = (time.perf_counter() - t1) * 1000  # with ``soon``: the wait left
    t2 = time.perf_counter()
    vector = vector_leg(store, qvec, pool, sources, rescore)
    timings["vector_ms"] = (time.perf_counter() - t2) * 1000
    return vector, mode, note


def _hit_chunks(store: Store, vector: list[LegHit], keyword: list[LegHit],
                fallback: list[list[LegHit]], cut: int,
                rows_for: int | None) -> dict[str, ChunkInfo]:
    """The chunk rows (path, lines, text) of each list's first ``cut`` hits, read in one
    lookup; with ``rows_for``, also those of every fetched hit whose chunk has a supersession
    (fusion may draw current statements from the whole pool)."""
    ids = {h.id for h in vector[:cut]} | {h.id for h in keyword[:cut]}
    if rows_for is not None:  # the fetched pools' chunks with a supersession (fusion may
        marked = store.marked_chunk_ids()  # draw current statements from the whole pool)
        ids |= {h.id for h in (*vector, *keyword) if h.id in marked}
    for lst in fallback:
        ids |= {h.id for h in lst[:cut]}
    rows = store.chunk_rows(ids)
    return {cid: ChunkInfo(r.id, r.path, r.source, r.start_line, r.end_line, r.text,
                           r.mtime_ms) for cid, r in rows.items()}


@dataclass(frozen=True)
class VectorLeg:
    """One query's vector leg fetched in a group (:func:`vector_legs`), and its share of the
    group's embedding and search time (``embed_ms``, ``vector_ms``)."""

    hits: tuple[LegHit, ...]
    timings: dict[str, float]


def vector_legs(store: Store, provider: EmbeddingProvider, queries: Sequence[str], pool: int,
                sources: Sequence[str] | None, rescore: int = 0) -> list[VectorLeg | None]:
    """The vector legs of ``queries`` (as :func:`fetch_candidates` would fetch them, one by
    one, ``rescore`` as ``SearchSettings.block_rescore``) from one pass over the vector matrix
    for the group.

    Each query is embedded by the provider's ``embed_query``, the request a query alone would
    make (a provider that waits on the network has them all in flight at once): a batched
    request is not used, since a model may embed a text in a batch differently in the last
    bits (MiniLM does, padded beside longer texts). ``None`` for a query whose embedding
    failed and every query after it: :func:`fetch_candidates` then embeds it itself, and its
    error is raised where a query alone raises it.
    """
    t0 = time.perf_counter()
    texts = [q.strip() for q in queries]
    vecs: list[np.ndarray] = []
    # all in flight at once when they wait on the network, else each when its turn comes
    waits = getattr(provider, "waits_on_network", False)
    pending = [_Soon(provider.embed_query, q).result if waits
               else functools.partial(provider.embed_query, q) for q in texts if q]
    for embed in pending:
        try:
            vecs.append(embed())
        except Exception:  # raised again by the query's own embedding
            break
    t1 = time.perf_counter()
    usable = [v for v in vecs if np.any(v)]
    found = iter(store.vector_search_many(usable, pool, sources))
    t2 = time.perf_counter()
    share = {"embed_ms": (t1 - t0) * 1000 / max(1, len(vecs)),
             "vector_ms": (t2 - t1) * 1000 / max(1, len(vecs))}
    out: list[VectorLeg | None] = []
    got = iter(vecs)
    for q in texts:
        v = next(got, None) if q else None
        if v is None:
            out.append(None)
            continue
        rows = next(found) if np.any(v) else []
        hits = [LegHit(cid, score, i + 1, score) for i, (cid, score) in enumerate(rows)]
        out.append(VectorLeg(tuple(best_block(store, v, hits, block_rescore(q, rescore))),
                             share))
    return out


#: Threads that embed queries while the keyword legs run (started on demand, then reused:
#: starting a thread per query made the caller wait for it to be scheduled, which on a busy
#: machine cost more than the overlap saved). More concurrent searches than this queue.
QUERY_EMBED_THREADS = 8
_jobs: queue.SimpleQueue[tuple[Future[Any], contextvars.Context, Callable[[str], Any], str]] = (
    queue.SimpleQueue())
_pool_lock = threading.Lock()
_idle = 0
_threads = 0


def _embed_worker() -> None:
    global _idle
    while True:
        fut, ctx, fn, arg = _jobs.get()
        with _pool_lock:
            _idle -= 1
        try:
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(ctx.run(fn, arg))
                except BaseException as e:  # handed to the caller, which raises it
                    fut.set_exception(e)
        finally:
            with _pool_lock:
                _idle += 1


class _Soon:
    """``fn(arg)`` started now on a reused daemon thread (the caller's context variables
    kept; daemon: a pending request never holds the process's exit); :meth:`result` waits
    for it and returns its value or raises its exception."""

    def __init__(self, fn: Callable[[str], np.ndarray], arg: str) -> None:
        global _idle, _threads
        self._future: Future[np.ndarray] = Future()
        with _pool_lock:
            if _idle == 0 and _threads < QUERY_EMBED_THREADS:
                _threads += 1
                _idle += 1
                threading.Thread(target=_embed_worker, daemon=True,
                                 name=f"memory-core-query-embedding-{_threads}").start()
        _jobs.put((self._future, contextvars.copy_context(), fn, arg))

    def result(self) -> np.ndarray:
        return self._future.result()


def _present(hits: list[LegHit], chunks: dict[str, ChunkInfo], cut: int) -> list[LegHit]:
    """``hits`` without those whose row vanished; past ``cut`` no row was read: kept as is."""
    return [h for h in hits[:cut] if h.id in chunks] + hits[cut:]
