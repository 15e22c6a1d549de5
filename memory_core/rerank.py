"""Maximal-marginal-relevance ordering, vectorised (same order as the reference's greedy loop).

The reference's MMR (spec §4.7) compares every candidate with every chosen one by the Jaccard
similarity of their snippets' token sets. Done pair by pair in Python that is ~0.5 s for 300
candidates (200 per leg), ten times the re-rank budget. Here the token sets become one sparse
incidence matrix; a single sparse product gives every pair's intersection size, so the whole
similarity matrix costs a few milliseconds, and the greedy loop is one vector operation per pick.
Every quantity is computed with the same float64 operations in the same order as the loop it
replaces, so ties break the same way (see ``tests/test_vectors_mmr.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from .text import REFERENCE_MMR_CJK_CLASS

_WORD = re.compile(r"[a-z0-9_]+")
_CJK_RUN = re.compile(f"[{REFERENCE_MMR_CJK_CLASS}]+")


def mmr_tokens(text: str) -> set[str]:
    """The reference MMR's similarity tokens: words, CJK-family unigrams, adjacent bigrams.

    Adjacent means adjacent in the text, so bigrams never cross a run of CJK characters.
    """
    low = text.lower()
    out = set(_WORD.findall(low))
    for m in _CJK_RUN.finditer(low):
        run = m.group()
        out.update(run)
        out.update(run[i : i + 2] for i in range(len(run) - 1))
    return out


def _token_list(text: str) -> list[str]:
    """:func:`mmr_tokens` as a list that may repeat (cheaper; duplicates are merged later)."""
    low = text.lower()
    out = _WORD.findall(low)
    for run in _CJK_RUN.findall(low):
        out.extend(run)
        out.extend([run[i : i + 2] for i in range(len(run) - 1)])
    return out


def jaccard_matrix(texts: Sequence[str]) -> np.ndarray:
    """Pairwise Jaccard similarities of the texts' :func:`mmr_tokens` sets (float64).

    Two texts without tokens count as identical (1.0), as in the reference.
    """
    n = len(texts)
    vocab: dict[str, int] = {}
    get = vocab.setdefault
    cols: list[int] = []
    lengths: list[int] = []
    for t in texts:
        toks = _token_list(t)
        cols.extend([get(tok, len(vocab)) for tok in toks])
        lengths.append(len(toks))
    v = max(1, len(vocab))
    docs = np.repeat(np.arange(n, dtype=np.int64), lengths)
    pairs = np.unique(docs * v + np.asarray(cols, dtype=np.int64))  # (doc, token), as sets
    pdoc, ptok = pairs // v, pairs % v
    sizes = np.bincount(pdoc, minlength=n).astype(np.float64)
    # Only tokens shared by two texts or more can intersect: a dense product over those
    # alone is small (the long tail of one-text tokens is most of the vocabulary).
    df = np.bincount(ptok, minlength=v)
    shared = df[ptok] >= 2
    ids = np.unique(ptok[shared], return_inverse=True)[1].reshape(-1)
    inc = np.zeros((n, int(ids.max()) + 1 if ids.size else 0), dtype=np.float32)
    inc[pdoc[shared], ids] = 1.0
    inter = (inc @ inc.T).astype(np.float64)
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
