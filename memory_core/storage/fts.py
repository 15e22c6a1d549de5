"""What FTS5 is in this index: its tables' names and bm25's constants and formulas, each once.

A leaf (it imports nothing of the project): the store names its FTS tables from here when it
writes them, the calibration bounds a phrase's bm25 with :func:`phrase_bound`, the postings
sidecar scores with :data:`K1` and :data:`B`, and the keyword leg maps ``bm25()`` to the
reference's text score with :func:`rank_to_score`. The migrations keep their own literal SQL:
each one is the schema as it was at that step, and must not move when a name here does.
"""

from __future__ import annotations

import math

#: The reference's table (spec §3.2): unicode61 over the whole text, the ``reference``
#: profile's AND query.
REFERENCE_TABLE = "chunks_fts"
#: The same text with CJK runs rewritten as overlapping bigrams, English stemmed
#: (``porter unicode61``, migration 5): the ``default`` profile's OR query.
BIGRAM_TABLE = "chunks_fts_bigram"
TABLES = (REFERENCE_TABLE, BIGRAM_TABLE)

#: FTS5's bm25 constants (``fts5_aux.c``), and ``k1 + 1.0`` computed as C computes it.
K1 = 1.2
B = 0.75
K1_PLUS_1 = K1 + 1.0


def checked_table(table: str) -> str:
    """``table`` if it is one of ours (its name goes into SQL text), else ``ValueError``."""
    if table not in TABLES:
        raise ValueError(table)
    return table


def idf(n_rows: int, n_hit: int) -> float:
    """FTS5's IDF of a phrase in ``n_hit`` of ``n_rows`` rows, 1e-6 when not positive (the same
    C ``log``, so the postings' floats are FTS5's)."""
    v = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
    return v if v > 0.0 else 1e-6


def phrase_bound(n_rows: int, n_hit: int) -> float:
    """The most one phrase can add to a row's bm25: its IDF times ``k1 + 1``; 0 for a phrase no
    row contains."""
    if n_hit <= 0:
        return 0.0
    return idf(n_rows, n_hit) * K1_PLUS_1


def rank_to_score(rank: float) -> float:
    """``bm25RankToScore`` (spec §4.4): FTS5's ``bm25()`` (negative, smaller is better) → the
    reference's text score in (0, 1]."""
    if not math.isfinite(rank):
        return 0.001
    if rank < 0:
        r = -rank
        return r / (1 + r)
    return 1 / (1 + rank)
