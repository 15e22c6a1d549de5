"""The keyword leg's query plans: a query → its MATCH string, its table, and the ranked
``(id, bm25)`` rows of whichever plan answers it exactly and cheapest.

The reference profile runs the reference's AND query on ``chunks_fts`` as FTS5 orders it (spec
§4.4). The default profile's OR query over ``chunks_fts_bigram`` tries, in order: the postings
sidecar (:mod:`.postings`), a MaxScore split (:func:`or_query_topk`), then FTS5's full query;
each gives the same rows, order and floats as the last.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..candidates import LegHit
from ..config import SearchSettings
from ..query import compound_parts, or_fts_query, reference_fts_query
from ..store import OperationalError, Store
from . import postings, reads
from .fts import BIGRAM_TABLE, REFERENCE_TABLE, phrase_bound, rank_to_score


def keyword_leg(store: Store, query: str, settings: SearchSettings, pool: int,
                sources: Sequence[str] | None) -> tuple[list[LegHit], str | None, str]:
    """Run the keyword query the settings ask for; return hits, the MATCH string and table."""
    if settings.keyword_query == "or":
        match = or_fts_query(query, bigrams=settings.cjk_bigrams)
        table = BIGRAM_TABLE if settings.cjk_bigrams else REFERENCE_TABLE
        if match and store.fts_available:
            match = identifier_spellings(store, table, match)
    else:
        match = reference_fts_query(query)
        table = REFERENCE_TABLE
    if not match:
        return [], None, table
    if settings.keyword_query == "or" and store.fts_available:
        rows = or_query_topk(store, table, match.split(" OR "), pool, sources)[0]
    else:
        rows = reads.match_rows(store, match, [], pool, table=table, sources=sources)
    hits = [LegHit(cid, rank_to_score(rank), i + 1, rank)
            for i, (cid, rank) in enumerate(rows)]
    return hits, match, table


def identifier_spellings(store: Store, table: str, match: str) -> str:
    """``match`` (an OR query) with each letters-and-digits phrase the index lacks (``ops2291``)
    replaced by its runs as one phrase (``"ops 2291"``) when the index has that: the spelling
    the tokenizer made of ``OPS-2291`` and ``OPS 2291``, so an identifier is found however the
    query writes it. One phrase stays one phrase (the calibration's bound counts it once)."""
    phrases = match.split(" OR ")
    split = {i: " ".join(parts) for i, ph in enumerate(phrases)
             if (parts := compound_parts(ph.strip('"')))}
    if not split:
        return match
    asked = [phrases[i] for i in split] + [f'"{s}"' for s in split.values()]
    dfs = reads.doc_counts(store, table, asked)
    n = len(split)
    for k, (i, s) in enumerate(split.items()):
        if dfs[k] == 0 and dfs[n + k] > 0:
            phrases[i] = f'"{s}"'
    return " OR ".join(dict.fromkeys(phrases))


def or_query_topk(store: Store, table: str, phrases: Sequence[str], pool: int,
                  sources: Sequence[str] | None) -> tuple[list[tuple[str, float]], str]:
    """The top ``pool`` rows of the OR query over ``phrases``: the same rows, order and bm25 as
    FTS5's own ``ORDER BY bm25 LIMIT pool``, without computing bm25 for every matching row.

    FTS5 has no top-k pruning: an OR query computes bm25 (positions, a docsize lookup) for every
    row matching any phrase, and a phrase found in most chunks ("server", "py") makes that the
    whole corpus (300 ms at 133k chunks). Instead, the MaxScore argument: split the phrases into
    the rarest ("essential") ones and the rest, whose whole contribution to any row is below
    ``delta`` (:func:`.fts.phrase_bound` summed). Rank the rows matching an essential phrase
    (cheap: rare phrases match few rows) and keep the best ``8 · pool``. A row left out scores at
    most the best left-out essential score plus ``delta``; when that is below the ``pool``-th
    full score of the kept rows, no row left out can enter the top ``pool``, and FTS5 scoring the
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
            got = side.ranked(store, table, phrases, pool, sources) if side else None
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
    return reads.match_rows(store, match, [], pool, table=table, sources=sources), "full"


def _split_topk(store: Store, table: str, phrases: Sequence[str], pool: int,
                sources: Sequence[str] | None) -> tuple[list[tuple[str, float]], str] | None:
    """:func:`or_query_topk`'s split plans; ``None`` when none of them can answer exactly."""
    match = " OR ".join(phrases)
    n_rows = reads.row_count(store, table)
    dfs = reads.doc_counts(store, table, phrases)
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
        ess = reads.ranked_rows(store, table, " OR ".join(phrases[i] for i in essential), limit,
                                sources=sources)
        if len(ess) < pool:
            continue
        ceiling = 0.0 if len(ess) < limit else -ess[-1][2]  # best essential score left out
        floor = -ess[pool - 1][2]  # the pool-th full score lies in [floor, floor + delta]
        if ceiling >= floor:
            continue
        full = reads.ranked_rows(store, table, match, pool, sources=sources,
                                 rowids=[r[0] for r in ess])
        if len(full) == pool and ceiling + delta < -full[-1][2] * (1 - 1e-9):
            return [(cid, rank) for _, cid, rank in full], f"split-{k}"
    return None


def phrase_counts(store: Store, match: str | None, table: str, settings: SearchSettings
                  ) -> tuple[tuple[int, ...], int]:
    """The OR query's per-phrase row counts and the table's rows (see ``Candidates.keyword_df``);
    nothing for the reference's AND query, whose candidates stay as they were."""
    if settings.keyword_query != "or" or not match or not store.fts_available:
        return (), 0
    try:
        return (tuple(_doc_counts(store, table, match.split(" OR "))),
                reads.row_count(store, table))
    except OperationalError:
        return (), 0  # only the calibration's evidence is lost: fusion reads the bm25 alone


def _doc_counts(store: Store, table: str, phrases: Sequence[str]) -> list[int]:
    """:func:`.reads.doc_counts`, from a fresh postings sidecar for the phrases of one token:
    its posting list's length is the ``nHit`` FTS5's bm25 uses, which the sidecar's own ranking
    already relies on. FTS5 counts the other phrases (and all, without a sidecar): one
    ``count(*)`` of a MATCH per phrase not seen since the index changed, ~1 ms each at 133k
    rows, was most of a query's work outside its two legs."""
    side = None
    if table == postings.TABLE:
        try:
            side = postings.for_store(store)
        except (OperationalError, ValueError):
            side = None
    if side is None:
        return reads.doc_counts(store, table, phrases)
    counts: list[int | None] = []
    try:
        for toks in side.phrase_tokens(phrases):
            counts.append(int(side.term_rows(toks[0])[0].size) if len(toks) == 1 else None)
    except (OperationalError, IndexError, ValueError):  # a damaged sidecar: FTS5 counts
        return reads.doc_counts(store, table, phrases)
    rest = iter(reads.doc_counts(store, table, [p for p, c in zip(phrases, counts, strict=True)
                                                if c is None]))
    return [next(rest) if c is None else c for c in counts]
