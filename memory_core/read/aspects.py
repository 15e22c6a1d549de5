"""Multi-aspect questions: each event a question names gets its own best chunk near the top.

"Which did I do first, the volleyball league or the charity 5K run?" names two events, each
told in its own session; the question's words and its embedding lean towards one of them, and
the other's session can fall past the first few results (LongMemEval's temporal and
multi-session questions, issue #36: ``recall_all@5`` misses the second event). Here such a
question is split at its connectives ("or", "and", "before", "after", "between", "when", …)
into **aspects**, the content words of each part; each candidate chunk's **cover** of an
aspect is the IDF-weighted share of the aspect's words it holds (IDF over the candidates'
chunks, words compared by a crude stem), and the one best chunk of each aspect (highest
cover, then highest fused score) gains ``bonus × cover × the best fused score``.

A pure function of the candidates (their chunk texts) and the question: no fetch, no model.
Only a question with two aspects or more, each with a chunk covering at least
:data:`MIN_COVER` of it, moves; a chunk already first for its aspect by the fused score keeps
its place or rises, so a question whose aspects the fused list already answers changes
little.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Protocol

from .query import STOP_WORDS, tokens

#: What splits a question into aspects: coordination and the connectives of time.
_SPLIT_RE = re.compile(r"\b(?:or|and|before|after|between|when|while|than|versus|vs)\b|[,;:?]",
                       re.IGNORECASE)
#: Words of the question's frame rather than of an event ("how many days passed", "which
#: event happened first"): an aspect of these only is no aspect.
FRAME_WORDS = frozenset(
    """many much long days day weeks week months month years year ago passed first last
    happened happen event events order earliest latest start started recently most least
    take took total number difference time times since until later earlier did does
    which what whom whose when where how who i me my mine myself im ive id""".split())
#: Shortest share of an aspect's (IDF-weighted) words a chunk must hold to be its best.
MIN_COVER = 0.5
#: The best chunk of each aspect gains this × its cover × the best fused score (0: off).
ASPECT_BONUS = 0.0


class _Scored(Protocol):
    id: str
    score: float
    components: dict[str, float]


def stem(word: str) -> str:
    """A crude English stem, enough to match "workshops" to "workshop", "attended" to
    "attend" (the keyword leg's porter tokenizer does this for BM25; here only words are
    compared)."""
    w = word.lower().removesuffix("'s").removesuffix("’s")
    for suf in ("ing", "ed", "es", "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 3 and not w.endswith(("ss", "us", "is")):
            return w[: -len(suf)]
    return w


def _content(text: str) -> list[str]:
    return [stem(t) for t in tokens(text)
            if t.lower() not in STOP_WORDS and t.lower() not in FRAME_WORDS
            and not t.isdigit() and len(t) > 1]


def split_aspects(query: str) -> list[frozenset[str]]:
    """The question's aspects: the stemmed content words of each part between connectives;
    ``[]`` unless there are two or more (distinct) parts with content."""
    parts = [frozenset(_content(p)) for p in _SPLIT_RE.split(query)]
    out: list[frozenset[str]] = []
    for p in parts:
        if p and p not in out:
            out.append(p)
    return out if len(out) >= 2 else []


def aspect_bonus(query: str, hits: Sequence[_Scored], texts: Mapping[str, str],
                 bonus: float) -> None:
    """Add to the best chunk of each aspect of ``query`` ``bonus × its cover × the best
    score`` (``components["aspect"]``); ``texts``: each hit's chunk text by id."""
    if bonus <= 0 or len(hits) < 2:
        return
    aspects = split_aspects(query)
    if not aspects:
        return
    words = {h.id: set(_content(texts.get(h.id, ""))) for h in hits}
    df: dict[str, int] = {}
    for ws in words.values():
        for w in ws:
            df[w] = df.get(w, 0) + 1
    n = len(words)
    idf = {w: math.log(1 + n / (1 + df.get(w, 0))) for a in aspects for w in a}
    top = max(h.score for h in hits)
    gains: dict[str, float] = {}
    found = 0
    for a in aspects:
        total = sum(idf[w] for w in a)
        if total <= 0:
            continue
        cover = {h.id: sum(idf[w] for w in a if w in words[h.id]) / total for h in hits}
        best = max(hits, key=lambda h: (cover[h.id], h.score))
        if cover[best.id] >= MIN_COVER:
            found += 1
            gains[best.id] = max(gains.get(best.id, 0.0), bonus * cover[best.id] * top)
    if found < 2:  # one aspect found is no multi-aspect question here
        return
    for h in hits:
        g = gains.get(h.id, 0.0)
        if g > 0:
            h.score += g
            h.components["aspect"] = g
