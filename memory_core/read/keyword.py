"""The keyword leg's query plans: a query → its MATCH string, its table, and the ranked
``(id, bm25)`` rows of whichever plan answers it exactly and cheapest.

The reference profile runs the reference's AND query on ``chunks_fts`` as FTS5 orders it (spec
§4.4). The default profile's OR query over ``chunks_fts_bigram`` tries, in order: the postings
sidecar (:mod:`.postings`, the fast path), then FTS5's full query (the reference); both give
the same rows, order and floats (:func:`or_query_topk`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..base.config import SearchSettings
from ..storage import fts_reads as reads
from ..storage import postings
from ..storage.fts import BIGRAM_TABLE, REFERENCE_TABLE, rank_to_score
from ..storage.store import OperationalError, Store
from .candidates import LegHit
from .query import compound_parts, keyword_text, or_fts_query, reference_fts_query


def keyword_leg(store: Store, query: str, settings: SearchSettings, pool: int,
                sources: Sequence[str] | None) -> tuple[list[LegHit], str | None, str]:
    """Run the keyword query the settings ask for; return hits, the MATCH string and table."""
    if settings.keyword_query == "or":
        text = keyword_text(query) if settings.drop_question_frame else query
        match = or_fts_query(text, bigrams=settings.cjk_bigrams)
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
    """The top ``pool`` rows of the OR query over ``phrases``: FTS5's own ``ORDER BY bm25
    LIMIT pool``, rows, order and floats.

    Two plans, chosen by what the index has: the fast one, a fresh keyword postings sidecar
    (:mod:`.postings`, on indexes of 5k rows and more), computes that answer in numpy without
    FTS5 scoring every matching row (FTS5 has no top-k pruning: a phrase in most chunks makes
    an OR query score the whole corpus, 80-300 ms at 133k chunks); the reference, FTS5's full
    query, answers everywhere else (small indexes, where it takes a few milliseconds, and a
    stale or damaged sidecar). ``tests/test_postings.py`` holds the one to the other.
    Returns the ``(id, rank)`` rows and which plan answered (``postings`` or ``full``).
    """
    if table == postings.TABLE:
        try:
            side = postings.for_store(store)
            got = side.ranked(store, table, phrases, pool, sources) if side else None
        except (OperationalError, IndexError, ValueError):
            got = None  # a damaged sidecar only costs speed: FTS5 answers below
        if got is not None:
            return got, "postings"
    match = " OR ".join(phrases)
    return reads.match_rows(store, match, [], pool, table=table, sources=sources), "full"


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
