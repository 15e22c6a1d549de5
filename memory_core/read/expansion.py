"""Search-side expansions for questions whose evidence is spread out (multi-hop, open-domain).

Each is off unless its setting is non-zero (the ``reference`` profile never turns one on), and
each was kept or dropped by cross-validated measurement (docs/retrieval.md, issue #14):

* **diversity** (pure, in fusion): the *n*-th chunk of a file already in the list pays
  ``diversity × n``, so when several chunks of one diary or session crowd the top, a strong
  chunk of another day can take a slot (multi-hop evidence lives in several sessions);
* **adjacent** (pure, in fusion): a chunk next to a strong hit of the same file gains
  ``adjacent × that hit's score`` (a turn is often answered in the next chunk);
* **pseudo-relevance feedback** (at fetch time, the keyword leg): RM3-style term expansion:
  the terms that weigh most in the top keyword chunks (term frequency × the chunk's score,
  against their frequency in the whole candidate pool) form a second OR query, and the keyword
  leg becomes ``(1 - prf_weight) × original + prf_weight × expanded`` on the normalised BM25
  scale. The expanded leg is fetched once with the candidates, so fusion stays pure;
* **decomposition** (at fetch time, the keyword leg): a question that coordinates two things
  ("What did Caroline and Melanie paint?") is also asked once per conjunct ("What did Caroline
  paint?", "What did Melanie paint?"); each sub-query's keyword leg, on its own best-is-1 scale
  and weighted ``decompose``, can lift a chunk to ``max(original, weighted sub-query)``, so the
  evidence of the second conjunct is not outweighed by the first's. Dates need no splitting: the
  date hint already rewards every date a question names.

Nothing here imports fusion: the re-ranking helpers work on any hit with ``path``,
``start_line``, ``end_line``, ``score`` and ``components``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

from ..base.text import cjk_bigrams
from .candidates import Candidates, LegHit
from .query import STOP_WORDS, tokens


class RankedHit(Protocol):
    """What the re-ranking helpers read and adjust on a fused hit."""

    path: str
    start_line: int
    end_line: int
    score: float
    components: dict[str, float]


H = TypeVar("H", bound=RankedHit)


def diversify(hits: Sequence[H], penalty: float) -> list[H]:
    """Greedy order where each further chunk of an already listed file pays ``penalty`` per
    earlier chunk of that file; the penalty is written into the hit's score and components."""
    if penalty <= 0 or len(hits) < 2:
        return list(hits)
    left = list(hits)
    seen: Counter[str] = Counter()
    out: list[H] = []
    while left:
        best_i = max(range(len(left)),
                     key=lambda i: (left[i].score - penalty * seen[left[i].path], -i))
        h = left.pop(best_i)
        n = seen[h.path]
        if n:
            h.score -= penalty * n
            h.components["diversity"] = -penalty * n
        seen[h.path] += 1
        out.append(h)
    return out


def _adjacent(a: RankedHit, b: RankedHit) -> bool:
    """Same file, and the line ranges touch or overlap (chunks overlap by design)."""
    return (a is not b and a.path == b.path and a.start_line <= b.end_line + 1
            and b.start_line <= a.end_line + 1)


def boost_adjacent(hits: Sequence[H], weight: float) -> None:
    """Add ``weight × the best neighbour's score`` to each hit (scores before any boost)."""
    if weight <= 0 or len(hits) < 2:
        return
    base = {id(h): h.score for h in hits}
    by_path: dict[str, list[H]] = {}
    for h in hits:
        by_path.setdefault(h.path, []).append(h)
    for group in by_path.values():
        if len(group) < 2:
            continue
        for h in group:
            near = max((base[id(o)] for o in group if _adjacent(h, o)), default=0.0)
            if near > 0:
                bonus = weight * near
                h.components["adjacent"] = bonus
                h.score += bonus


# --------------------------------------------------------------------------- PRF (RM3-style)


def _terms(text: str) -> list[str]:
    """The keyword leg's terms: lower-cased tokens, CJK as bigrams, without stop words."""
    return [t for t in (x.lower() for x in tokens(cjk_bigrams(text)))
            if t not in STOP_WORDS and (len(t) > 2 or not t.isascii()) and not t.isdigit()]


def feedback_terms(cands: Candidates, n_terms: int, n_docs: int = 3) -> list[str]:
    """RM3's feedback model, cut to ``n_terms``: terms weighted by their frequency in the top
    ``n_docs`` keyword chunks (each weighted by its normalised BM25), divided by their share of
    the whole candidate pool (the background), excluding the query's own terms."""
    if n_terms <= 0 or not cands.keyword:
        return []
    top = cands.keyword[:n_docs]
    best = max(-h.raw for h in top) or 1.0
    fb: dict[str, float] = {}
    for h in top:
        words = _terms(cands.chunks[h.id].text)
        if not words:
            continue
        w = (-h.raw / best) / len(words)
        for t, c in Counter(words).items():
            fb[t] = fb.get(t, 0.0) + w * c
    df: Counter[str] = Counter()
    for ch in cands.chunks.values():
        df.update(set(_terms(ch.text)))
    n = max(1, len(cands.chunks))
    asked = set(_terms(cands.query))
    scored = {t: v * math.log(1 + n / (1 + df[t])) for t, v in fb.items() if t not in asked}
    return [t for t, _ in sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))[:n_terms]]


def interpolate_keyword(original: Sequence[LegHit], expanded: Sequence[LegHit], weight: float
                        ) -> tuple[LegHit, ...]:
    """One keyword leg from two: each on its query's best-is-1 scale, mixed ``1-w : w``.

    ``raw`` stays a BM25-like negative value (minus the mixed score), so fusion's own
    normalisation (raw over the best raw) reads it unchanged; ``score`` keeps the original
    leg's mapping where the chunk had one.
    """
    if weight <= 0 or not expanded:
        return tuple(original)
    b0 = max((-h.raw for h in original), default=0.0) or 1.0
    b1 = max((-h.raw for h in expanded), default=0.0) or 1.0
    mixed: dict[str, float] = {}
    score: dict[str, float] = {}
    for h in original:
        mixed[h.id] = (1 - weight) * (-h.raw / b0)
        score[h.id] = h.score
    for h in expanded:
        mixed[h.id] = mixed.get(h.id, 0.0) + weight * (-h.raw / b1)
        score.setdefault(h.id, h.score)
    order = sorted(mixed, key=lambda cid: -mixed[cid])
    return tuple(LegHit(cid, score[cid], i + 1, -mixed[cid]) for i, cid in enumerate(order))


def with_feedback(cands: Candidates, fetch_keyword: Callable[[str], Candidates],
                  n_terms: int, n_docs: int, weight: float) -> Candidates:
    """``cands`` with its keyword leg mixed with a feedback query's (see the module doc).

    ``fetch_keyword(text)`` runs the keyword leg alone for ``text`` (the caller's store and
    settings); the chunks it finds join ``cands.chunks``.
    """
    terms = feedback_terms(cands, n_terms, n_docs)
    if not terms or weight <= 0:
        return cands
    extra = fetch_keyword(" ".join(terms))
    chunks = dict(extra.chunks)
    chunks.update(cands.chunks)
    return replace(cands, keyword=interpolate_keyword(cands.keyword, extra.keyword, weight),
                   chunks=chunks)


# --------------------------------------------------------------------------- decomposition

_COORD_RE = re.compile(
    r"\b([\w'’-]+),?\s+(?:and|or)\s+((?:(?:her|his|their|the|my|our|a|an)\s+)?[\w'’-]+)",
    re.IGNORECASE)


def split_query(query: str) -> list[str]:
    """The sub-queries of a question that coordinates two things, each conjunct in turn in
    place of the pair ("A and B" → "A", "B"); ``[]`` when there is nothing to split.

    English "and"/"or" only: Chinese is written without spaces, and without a word segmenter
    the extent of a conjunct around 和 or 与 is a guess.
    """
    for m in _COORD_RE.finditer(query):
        left, right = m.group(1), m.group(2)
        if left.lower() in STOP_WORDS and right.lower() in STOP_WORDS:
            continue
        head, tail = query[: m.start()], query[m.end():]
        return [f"{head}{left}{tail}", f"{head}{right}{tail}"]
    return []


def max_keyword(original: Sequence[LegHit], parts: Sequence[Sequence[LegHit]], weight: float
                ) -> tuple[LegHit, ...]:
    """One keyword leg: each chunk at ``max(original, weight × part)`` on best-is-1 scales."""
    if weight <= 0 or not any(parts):
        return tuple(original)
    b0 = max((-h.raw for h in original), default=0.0) or 1.0
    best: dict[str, float] = {h.id: -h.raw / b0 for h in original}
    score = {h.id: h.score for h in original}
    for part in parts:
        bp = max((-h.raw for h in part), default=0.0) or 1.0
        for h in part:
            best[h.id] = max(best.get(h.id, 0.0), weight * (-h.raw / bp))
            score.setdefault(h.id, h.score)
    order = sorted(best, key=lambda cid: -best[cid])
    return tuple(LegHit(cid, score[cid], i + 1, -best[cid]) for i, cid in enumerate(order))


def with_decomposition(cands: Candidates, fetch_keyword: Callable[[str], Candidates],
                       weight: float) -> Candidates:
    """``cands`` with its keyword leg lifted by the sub-queries' legs (see the module doc)."""
    subs = split_query(cands.query) if weight > 0 else []
    if not subs:
        return cands
    fetched = [fetch_keyword(q) for q in subs]
    chunks = {}
    for f in fetched:
        chunks.update(f.chunks)
    chunks.update(cands.chunks)
    return replace(cands, keyword=max_keyword(cands.keyword, [f.keyword for f in fetched],
                                              weight), chunks=chunks)
