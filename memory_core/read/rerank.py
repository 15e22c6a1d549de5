"""Maximal-marginal-relevance ordering, vectorised (same order as the reference's greedy loop).

The reference's MMR (spec §4.7) compares every candidate with every chosen one by the Jaccard
similarity of their snippets' token sets. Done pair by pair in Python that is ~0.5 s for 300
candidates (200 per leg), ten times the re-rank budget. Here each snippet's token set is built in
C and cached per snippet text (re-ranking the same chunks again costs no tokenising); the tokens
shared by two snippets or more become a small dense incidence matrix whose product gives every
pair's intersection size, and the greedy loop is one vector operation per pick.
Every quantity is computed with the same float64 operations in the same order as the loop it
replaces, so ties break the same way (see ``tests/test_vectors_mmr.py``).
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..base.lazy import lazy_pattern
from ..base.text import REFERENCE_MMR_CJK_CLASS

if TYPE_CHECKING:
    import numpy as np
else:
    from ..base.lazy import numpy as np

_WORD = re.compile(r"[a-z0-9_]+")
_CJK_RUN = lazy_pattern(f"[{REFERENCE_MMR_CJK_CLASS}]+")


def mmr_tokens(text: str) -> set[str]:
    """The reference MMR's similarity tokens: words, CJK-family unigrams, adjacent bigrams.

    Adjacent means adjacent in the text, so bigrams never cross a run of CJK characters. The
    very tokens the re-rank compares (:func:`_token_set`), as a set of its own.
    """
    return set(_token_set(text))


def _token_list(text: str) -> list[str]:
    """:func:`mmr_tokens` as a list that may repeat (duplicates are merged later).

    Every step runs in C (``findall``, ``list +=``, ``map(operator.add, ...)`` for the bigrams
    of each CJK run): a Python-level loop per token is what made this the MMR's main cost.
    """
    low = text.lower()
    out = _WORD.findall(low)
    if low.isascii():  # no CJK character possible; skips the slower CJK scan
        return out
    for run in _CJK_RUN.findall(low):
        out += run
        out += map(operator.add, run, run[1:])
    return out


@functools.lru_cache(maxsize=8192)
def _token_set(text: str) -> frozenset[str]:
    """The deduplicated tokens of one snippet, cached: a long-running process (the workbench's
    Search & tune re-fusing as a slider moves, the MCP server) re-ranks the same chunks again and
    again, and tokenising is most of the MMR's cost."""
    return frozenset(_token_list(text))


def jaccard_matrix(texts: Sequence[str]) -> np.ndarray:
    """Pairwise Jaccard similarities of the texts' :func:`mmr_tokens` sets (float64).

    Two texts without tokens count as identical (1.0), as in the reference.
    """
    n = len(texts)
    sets = list(map(_token_set, texts))
    lengths = np.fromiter(map(len, sets), dtype=np.int64, count=n)
    total = int(lengths.sum())
    # Token ids without a Python loop: ``setdefault`` keeps the first id a token was given
    # (ids are unique, not dense; ``count()`` is consumed once per occurrence).
    vocab: dict[str, int] = {}
    cols = np.fromiter(map(vocab.setdefault, itertools.chain.from_iterable(sets),
                           itertools.count()), dtype=np.int64, count=total)
    v = max(1, total)
    pdoc = np.repeat(np.arange(n, dtype=np.int64), lengths)
    ptok = cols
    sizes = lengths.astype(np.float64)
    # Only tokens shared by two texts or more can intersect: a dense product over those
    # alone is small (the long tail of one-text tokens is most of the vocabulary).
    df = np.bincount(ptok, minlength=v)
    shared = df[ptok] >= 2
    ids = np.unique(ptok[shared], return_inverse=True)[1].reshape(-1)
    inc = np.zeros((n, int(ids.max()) + 1 if ids.size else 0), dtype=np.float32)
    inc[pdoc[shared], ids] = 1.0
    from threadpoolctl import threadpool_limits  # ~13 ms once; only a re-rank needs it

    # one BLAS thread: the product is ~1 ms of work, and OpenBLAS's threads spinning for a core
    # on a loaded machine cost more than that (cold MMR 40 → 23 ms at load 7 on two cores)
    with threadpool_limits(limits=1, user_api="blas"):
        inter = (inc @ inc.T).astype(np.float64)  # counts of 0/1 products: exact in float32
    union = sizes[:, None] + sizes[None, :] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        sims = np.where(union == 0, 1.0, inter / np.where(union == 0, 1.0, union))
    return sims


def mmr_order(texts: Sequence[str], scores: Sequence[float], lam: float) -> list[int]:
    """Indices of ``texts`` in greedy MMR order (``lam`` clamped to 0..1; 1 = unchanged).

    At each step the candidate with the largest ``lam · relevance − (1 − lam) · max similarity
    to those already chosen`` is taken; ties go to the higher score, then the earlier index.
    """
    lam = min(1.0, max(0.0, lam))
    n = len(texts)
    if lam >= 1.0 or n < 2:
        return list(range(n))
    sc = np.asarray(scores, dtype=np.float64)
    lo, hi = float(sc.min()), float(sc.max())
    rel = np.ones(n) if hi == lo else (sc - lo) / (hi - lo)
    sims = jaccard_matrix(texts)
    max_sim = np.zeros(n)
    taken = np.zeros(n, dtype=bool)
    order: list[int] = []
    base = lam * rel
    for _ in range(n):
        val = base - (1 - lam) * max_sim
        val[taken] = -np.inf
        best_val = val.max()
        ties = np.flatnonzero(val == best_val)
        best = int(ties[0]) if ties.size == 1 else int(ties[np.argmax(sc[ties])])
        order.append(best)
        taken[best] = True
        np.maximum(max_sim, sims[best], out=max_sim)
    return order
