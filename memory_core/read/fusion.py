"""Fusion: a pure function of (candidates, settings) → ranked hits that explain themselves.

No SQL, no model, no clock unless the settings leave ``now_ms`` unset. ``fusion="reference"``
reproduces OpenClaw 2026.5.20's merge, minScore gate and relaxed fallback to the constant (spec
§4.2–4.7); the other modes are this project's improvements, chosen by measurement (see
docs/retrieval.md). Each fusion scores its candidates, then runs one tail pipeline (decay,
sort, MMR, the gate, filling…) whose order per fusion is data, :data:`TAILS`, the reference's
orders marked as such.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import Literal

from ..base.config import FusionMode, SearchSettings
from ..base.dates import DAY_MS, day_start_ms, diary_date, now_ms, path_date
from ..base.supersession import asks_about, time_focus
from ..base.text import truncate_utf16
from . import calibration
from .calibration import CALIBRATIONS
from .candidates import Candidates, ChunkInfo, LegHit
from .expansion import boost_adjacent, diversify
from .query import DateSpan, date_closeness, date_hints, lexical_tokens
from .rerank import mmr_order

SNIPPET_MAX_CHARS = 700


@dataclass
class Hit:
    """A fused result with its explain record.

    ``score`` is what the gate and the order use. ``vector_score`` / ``text_score`` are the legs'
    scores (0 where the leg did not find the chunk) and ``vector_rank`` / ``text_rank`` its rank
    there (``None`` where absent). ``components`` splits ``score`` into its additive parts, for the
    stacked bars of the workbench. ``passed`` is False for hits below minScore that are kept only
    for display.
    """

    id: str
    path: str
    source: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    vector_score: float = 0.0
    text_score: float = 0.0
    vector_rank: int | None = None
    text_rank: int | None = None
    components: dict[str, float] = field(default_factory=dict)
    decay: float = 1.0
    passed: bool = True
    via: str = ""  # "both", "vector", "keyword"
    #: With a calibration: its features, each one's part of the logit, the logit, the
    #: normalized fusion's score it replaced and the probability (= ``score`` before decay).
    evidence: dict[str, object] | None = None
    #: The citation of the line that superseded a statement this chunk covers (the ``current``
    #: step, memory_core.base.supersession), and what that step multiplied the score by.
    superseded_by: str | None = None
    currency: float = 1.0
    #: The step that removed a hit that is not returned ("" for a returned one), recorded by
    #: fusion so that no face works it out again from scores: ``gate`` (below minScore, or
    #: below the relaxed gate), ``abstention`` (a calibrated search that returns nothing),
    #: ``maxResults`` (passed every gate, past the cut); a tail's other gates by their name.
    removed_by: str = ""
    #: The fusion's own arithmetic: each leg's ``(weight, value)`` whose product is its
    #: component before calibration (``--explain``: ``0.65×vector 0.496``).
    terms: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def citation(self) -> str:
        if self.start_line == self.end_line:
            return f"{self.path}#L{self.start_line}"
        return f"{self.path}#L{self.start_line}-L{self.end_line}"

    def to_result(self, explain: bool = False) -> dict[str, object]:
        """The reference's result item (spec §4.8), plus the explain record when asked."""
        d: dict[str, object] = {
            "path": self.path, "startLine": self.start_line, "endLine": self.end_line,
            "score": self.score, "snippet": self.snippet, "source": self.source,
            "vectorScore": self.vector_score, "textScore": self.text_score,
            "citation": self.citation,
        }
        if self.superseded_by is not None:
            d["supersededBy"] = self.superseded_by
        if explain:
            d["explain"] = {
                "id": self.id, "vectorRank": self.vector_rank, "textRank": self.text_rank,
                "components": self.components, "decay": self.decay, "via": self.via,
                "passed": self.passed,
            }
            if self.removed_by:
                d["explain"]["removedBy"] = self.removed_by  # type: ignore[index]
            if self.evidence is not None:
                d["explain"]["calibration"] = self.evidence  # type: ignore[index]
            if self.superseded_by is not None or self.currency != 1.0:
                d["explain"]["current"] = {  # type: ignore[index]
                    "supersededBy": self.superseded_by, "factor": self.currency}
        return d


@dataclass
class FusionResult:
    """The hits the agent would get, and the ones the gate or the cut removed (for display)."""

    hits: list[Hit]
    below_gate: list[Hit]
    settings: SearchSettings
    mode: str
    #: Why there is no hit, when there is none ("" otherwise): the gate, and the query's
    #: evidence when the scores are calibrated (``search --explain``, ``memory_status``).
    abstention: str = ""
    #: Why the answer is not what was asked ("" when nothing): the provider was down and the
    #: keyword leg answered alone, or the library cut a query over
    #: :data:`~memory_core.read.query.MAX_QUERY_TERMS` terms or its characters; every face reports
    #: this note rather than a rule of its own.
    note: str = ""


def snippet_of(text: str) -> str:
    return truncate_utf16(text, SNIPPET_MAX_CHARS)


def lexical_boost_score(query: str, info: ChunkInfo, text_score: float) -> float:
    """``scoreFallbackKeywordResult``: the FTS-only ranking score (spec §4.4)."""
    q = lexical_tokens(query)
    t = lexical_tokens(info.text)
    overlap = len(q & t)
    unique_overlap = overlap / max(1, len(q))
    density = overlap / max(1, len(t))
    path_l = info.path.lower()
    path_boost = 0.18 * sum(1 for tok in q if tok in path_l)
    length_boost = min(len(info.text) / 160, 0.18)
    return min(1.0, text_score + 0.45 * unique_overlap + 0.2 * density + path_boost + length_boost)


# --------------------------------------------------------------------------- temporal decay


def _timestamp_ms(info: ChunkInfo) -> int | None:
    """A chunk's age reference (spec §4.6): a diary's date, evergreen memory, else the mtime."""
    day = diary_date(info.path)
    if day is not None:
        return day_start_ms(day.isoformat())
    if info.source == "memory" and (info.path == "MEMORY.md" or info.path.startswith("memory/")):
        return None  # evergreen
    return info.mtime_ms or None


def decay_multiplier(info: ChunkInfo, half_life_days: float, now: int) -> float:
    """``exp(-ln 2 / halfLife · ageDays)``; 1 for evergreen chunks."""
    ts = _timestamp_ms(info)
    if ts is None:
        return 1.0
    half = max(1.0, math.floor(half_life_days))
    age_days = max(0, now - ts) / DAY_MS
    return math.exp(-math.log(2) / half * age_days)


# --------------------------------------------------------------------------- MMR

def mmr_rerank(hits: list[Hit], lam: float) -> list[Hit]:
    """Greedy maximal-marginal-relevance order (scores unchanged, spec §4.7).

    Vectorised in :mod:`memory_core.read.rerank` (same order as the pair-by-pair loop, ~100×
    faster).
    """
    if min(1.0, max(0.0, lam)) >= 1.0 or len(hits) < 2:
        return list(hits)
    order = mmr_order([h.snippet for h in hits], [h.score for h in hits], lam)
    return [hits[i] for i in order]


# --------------------------------------------------------------------------- fusion


def _make_hit(info: ChunkInfo) -> Hit:
    return Hit(info.id, info.path, info.source, info.start_line, info.end_line, 0.0,
               snippet_of(info.text))


def _apply_decay(hits: list[Hit], cands: Candidates, s: SearchSettings) -> None:
    if not s.decay_enabled:
        return
    now = now_ms(s.now_ms)
    for h in hits:
        m = decay_multiplier(cands.chunks[h.id], s.half_life_days, now)
        if m != 1.0:
            h.decay = m
            h.score *= m
            h.components = {k: v * m for k, v in h.components.items()}


def _sort(hits: list[Hit]) -> list[Hit]:
    return sorted(hits, key=lambda h: -h.score)  # stable, as JavaScript's sort


def _fts_only(cands: Candidates, s: SearchSettings) -> FusionResult:
    n = s.candidate_count()
    scored: dict[str, Hit] = {}
    lists = [(cands.query, cands.keyword[:n])]
    if not cands.keyword and cands.keyword_fallback:
        # each per-keyword search is boosted against its own keyword, as the reference does
        lists = [(term, lst[:n]) for term, lst in
                 zip(cands.keyword_fallback_terms, cands.keyword_fallback, strict=True)]
    for term, lst in lists:
        for k in lst:
            info = cands.chunks[k.id]
            score = lexical_boost_score(term, info, k.score) if s.lexical_boost else k.score
            prev = scored.get(k.id)
            if prev is None or score > prev.score:
                h = _make_hit(info)
                h.score, h.text_score, h.text_rank, h.via = score, k.score, k.rank, "keyword"
                h.components = {"text": k.score, "boost": score - k.score}
                scored[k.id] = h
    return _run_tail("reference:fts-only", cands, s, list(scored.values()), ())


def _finish(chosen: list[Hit], ranked: list[Hit], s: SearchSettings, mode: str,
            evidence: calibration.QueryEvidence | None = None,
            removed: dict[str, str] | None = None) -> FusionResult:
    """The first ``max_results`` of ``chosen``; every other hit of ``ranked`` marked with the
    step that removed it (``removed``: the tail's gates; past the cut: ``maxResults``)."""
    keep = chosen[: max(0, s.max_results)]
    kept = {h.id for h in keep}
    below = []
    for h in ranked:
        if h.id not in kept:
            why = (removed or {}).get(h.id, "maxResults")
            below.append(replace(h, passed=False, removed_by=why))
    return FusionResult(keep, below, s, mode, _abstention(keep, ranked, s, evidence))


def _abstention(keep: list[Hit], ranked: list[Hit], s: SearchSettings,
                evidence: calibration.QueryEvidence | None) -> str:
    if keep:
        return ""
    if not ranked:
        return "no candidate: neither leg found anything for this query"
    if s.max_results <= 0:
        return "maxResults is 0"
    best = max(h.score for h in ranked)
    if evidence is None:
        return f"no hit reaches minScore {s.min_score:g}: the best score is {best:.3f}"
    gate = ("abstainBelow", s.abstain_below) if best < s.abstain_below else (
        "minScore", s.min_score)
    return (f"nothing relevant: the best hit's estimated probability of relevance is "
            f"{best:.3f}, below {gate[0]} {gate[1]:g} ({evidence.describe()})")


def _leg_maps(cands: Candidates, s: SearchSettings) -> tuple[list[LegHit], list[LegHit]]:
    n = s.candidate_count()
    vector = list(cands.vector[:n])
    keyword = list(cands.keyword[:n]) if s.hybrid and cands.mode != "vector-only" else []
    return vector, keyword


def _merge(cands: Candidates, vector: list[LegHit], keyword: list[LegHit]) -> list[Hit]:
    by_id: dict[str, Hit] = {}
    for v in vector:
        h = _make_hit(cands.chunks[v.id])
        h.vector_score, h.vector_rank = v.score, v.rank
        by_id[v.id] = h
    for k in keyword:
        if k.id not in by_id:
            by_id[k.id] = _make_hit(cands.chunks[k.id])
        h = by_id[k.id]
        h.text_score, h.text_rank = k.score, k.rank
    for h in by_id.values():
        h.via = ("both" if h.vector_rank and h.text_rank else
                 "vector" if h.vector_rank else "keyword")
    return list(by_id.values())


def _reference_hybrid(cands: Candidates, s: SearchSettings) -> FusionResult:
    vector, keyword = _leg_maps(cands, s)
    if not s.hybrid or cands.mode == "vector-only":
        hits = _merge(cands, vector, [])
        for h in hits:
            h.score = h.vector_score
            h.components = {"vector": h.vector_score}
        return _run_tail("reference:vector-only", cands, s, hits, ())
    wv, wt = s.normalized_weights()
    merged = _merge(cands, vector, keyword)
    for h in merged:
        h.terms = {"vector": (wv, h.vector_score), "text": (wt, h.text_score)}
        h.components = {"vector": wv * h.vector_score, "text": wt * h.text_score}
        h.score = h.components["vector"] + h.components["text"]
    return _run_tail("reference", cands, s, merged, keyword)


def _fill_keyword_only(strict: list[Hit], merged: list[Hit], s: SearchSettings) -> list[Hit]:
    """2026.9's rule: keyword-only rows below minScore may fill unused slots, never displace."""
    room = s.max_results - len(strict)
    if room <= 0:
        return strict
    have = {h.id for h in strict}
    extra = [h for h in merged if h.id not in have and h.vector_rank is None][:room]
    return strict + extra


def _key(info: ChunkInfo) -> str:
    return f"{info.source}:{info.path}:{info.start_line}:{info.end_line}"


def _rrf(cands: Candidates, s: SearchSettings) -> FusionResult:
    """Weighted reciprocal-rank fusion, scaled so that rank 1 in every leg scores 1.0.

    A leg's contribution is ``w · (k+1)/(k+rank)``: it depends on ranks only, so its scale does
    not drift with corpus size the way BM25 does, and a strong keyword-only hit is never capped
    below the gate by a weight.
    """
    vector, keyword = _leg_maps(cands, s)
    wv, wt = s.normalized_weights()
    if cands.mode == "fts-only" or not vector:
        wv, wt = 0.0, 1.0
    if not keyword or not s.hybrid:
        wv, wt = 1.0, 0.0
    k = max(1, s.rrf_k)
    merged = _merge(cands, vector, keyword)
    for h in merged:
        cv = wv * (k + 1) / (k + h.vector_rank) if h.vector_rank else 0.0
        ct = wt * (k + 1) / (k + h.text_rank) if h.text_rank else 0.0
        h.components = {"vector": cv, "text": ct}
        h.score = cv + ct
    return _run_tail("rrf", cands, s, merged, keyword)


def query_today(s: SearchSettings) -> date:
    """The day relative dates in a query count from ("four weeks ago"): ``now_ms``'s UTC day,
    the clock's when unset (days are UTC throughout, :mod:`..base.dates`)."""
    return datetime.fromtimestamp(now_ms(s.now_ms) / 1000, UTC).date()


def _date_hint(hits: list[Hit], cands: Candidates, s: SearchSettings) -> None:
    """Add ``date_hint × closeness`` to hits in files named by a date the query names.

    A question such as "what did we decide on 12 November 2026?" is about the diary of that day;
    neither leg knows it (the date is rarely written in the diary's text); "four weeks ago"
    counts from :func:`query_today`. Off when the setting is 0 or the query names no date.
    """
    if s.date_hint <= 0:
        return
    spans = date_hints(cands.query, query_today(s))
    if not spans:
        return
    for h in hits:
        day = path_date(h.path)
        if day is None:
            continue
        bonus = s.date_hint * date_closeness(spans, day)
        if bonus > 0:
            h.components["date"] = bonus
            h.score += bonus


def rows_needed(query: str, s: SearchSettings) -> int | None:
    """How many hits of each leg one :func:`fuse` of ``query`` under ``s`` reads the chunk rows
    of (``fetch_candidates(rows_for=…)``): the cut, or ``None`` (every row) when the date hint
    draws on the whole pool (:func:`pool_dates`) or an expansion (PRF, decomposition) reads
    every hit's text."""
    if (s.prf_terms > 0 and s.prf_weight > 0) or s.decompose > 0 or pool_dates(query, s):
        return None
    return s.candidate_count()


def pool_dates(query: str, s: SearchSettings) -> list[DateSpan]:
    """The dates whose chunks :func:`fuse` draws from the legs' whole fetched pools, not only
    from their cut: those ``query`` names, when ``normalized`` fusion's date hint is on.

    A caller that reads the rows of each leg's first ``candidate_count()`` hits only must read
    every row when this is not empty (fusion skips a pool hit whose row it was not given).
    """
    if s.fusion != "normalized" or s.date_hint <= 0:
        return []
    return date_hints(query, query_today(s))


def _with_dated(cands: Candidates, s: SearchSettings, vector: list[LegHit],
                keyword: list[LegHit]) -> tuple[list[LegHit], list[LegHit]]:
    """The legs' cut lists plus every hit of their fetched pools whose file the date hint
    rewards (a date the query names, :func:`pool_dates`), each in the leg that found it.

    The cut is a relevance filter, and the diary or transcript of the asked day is often below
    it in both legs: a transcript carries its date only in its file name (a Markdown diary's
    heading also puts it in the text, where BM25 sees it), and a question's other words ("What
    movie did Joanna watch on 1 May, 2022?") match many days. Cross-validated (issue #14,
    docs/retrieval.md): LoCoMo sessions held-out R@5 0.848 → 0.853.
    """
    spans = pool_dates(cands.query, s)
    if not spans:
        return vector, keyword

    def dated(h: LegHit) -> bool:
        info = cands.chunks.get(h.id)
        day = path_date(info.path) if info is not None else None
        return day is not None and date_closeness(spans, day) > 0

    have = {h.id for h in vector} | {h.id for h in keyword}
    extra_v = [h for h in cands.vector if h.id not in have and dated(h)]
    have.update(h.id for h in extra_v)
    extra_k = [h for h in cands.keyword if h.id not in have and dated(h)] if keyword else []
    return vector + extra_v, keyword + extra_k


def _normalized(cands: Candidates, s: SearchSettings) -> FusionResult:
    """Each leg on a scale that does not drift with corpus size, then a weighted sum.

    * vector: the cosine as it is (an absolute scale for a given model);
    * keyword: BM25 divided by the query's best BM25, so the strongest keyword match scores 1
      whether the index holds 50 chunks or 50,000 (the reference's ``r/(1+r)`` is near 0 on
      small indexes and near 1 on large ones);
    * a candidate is any chunk in either leg's top ``maxResults × candidateMultiplier`` (and,
      when the query names a date and the date hint is on, any chunk of either leg's whole
      fetched pool in a file the date hint rewards: :func:`_with_dated`), and its score on the
      *other* leg is looked up in that leg's whole fetched pool: a chunk missing from a cut
      list is not evidence that the leg found nothing;
    * plus the date hint and the adjacent-chunk bonus, then decay, the per-file diversity
      penalty (:mod:`memory_core.read.expansion`), MMR, the minScore gate and keyword-only filling
      as configured.

    With the default profile's weights the best keyword match scores at least 0.35 and a
    vector-only hit 0.65 × its cosine read from the floor (a mostly-CJK query: 0.5 and 0.5,
    ``cjk_vector_weight``); and minScore means the same on any corpus.
    """
    vector, keyword = _with_current(cands, s, *_with_dated(cands, s, *_leg_maps(cands, s)))
    wv, wt = s.weights_for(cands.query)
    if cands.mode == "fts-only" or not cands.vector:
        wv, wt = 0.0, 1.0
    elif not keyword:
        wv, wt = 1.0, 0.0
    pool_v = {h.id: h for h in cands.vector}
    pool_k = {h.id: h for h in cands.keyword} if keyword else {}
    best = max((-k.raw for k in pool_k.values()), default=0.0)
    merged = _merge(cands, vector, keyword)
    for h in merged:
        v = pool_v.get(h.id)
        if v is not None and h.vector_rank is None:
            h.vector_score, h.vector_rank = v.score, v.rank
        k = pool_k.get(h.id)
        if k is not None and h.text_rank is None:
            h.text_score, h.text_rank = k.score, k.rank
        if k is None:
            t = 0.0
        else:
            t = (-k.raw / best) if best > 0 else 1.0
        cos = max(0.0, h.vector_score)
        if s.vector_floor > 0:
            cos = max(0.0, (cos - s.vector_floor) / (1.0 - s.vector_floor))
        h.terms = {"vector": (wv, cos), "text": (wt, t)}
        h.components = {"vector": wv * cos, "text": wt * t}
        h.score = h.components["vector"] + h.components["text"]
    return _run_tail("normalized", cands, s, merged, keyword)


def hit_evidence(cands: Candidates, hits: list[Hit]
                 ) -> tuple[calibration.QueryEvidence, list[dict[str, float]]]:
    """The calibration features of ``hits``, the fused list in its order: what
    :func:`_calibrate` reads, and what ``scripts/fit_calibration.py`` fits on."""
    q = calibration.query_evidence(cands)
    if not hits:
        return q, []
    top = hits[0]
    top_both = top.vector_rank is not None and top.text_rank is not None
    return q, [calibration.hit_features(q, fused=h.score, rank=i + 1, top_fused=top.score,
                                        top_both=top_both) for i, h in enumerate(hits)]


def _calibrate(hits: list[Hit], cands: Candidates, s: SearchSettings
               ) -> calibration.QueryEvidence:
    """Replace each fused score by the calibrated probability that the hit is relevant.

    The order stays the fusion's (the probability falls along it). The components keep the
    legs' shares of the fused score, rescaled to sum to the probability (the workbench's
    stacked bars); the explain record holds the arithmetic: features, each one's part of the
    logit, the logistic output and its isotonic correction.
    """
    model = CALIBRATIONS.get(s.calibration)
    if model is None:
        raise ValueError(f"unknown calibration {s.calibration!r} "
                         f"({', '.join(CALIBRATIONS) or 'none fitted'})")
    q, feats = hit_evidence(cands, hits)
    for h, x in zip(hits, feats, strict=True):
        terms, z, raw, p = model.evaluate(x, q)
        fused = h.score
        h.evidence = {"features": x, "logit_terms": terms, "intercept": model.intercept,
                      "logit": z, "logistic": raw, "probability": p, "model": model.name,
                      "fused_components": dict(h.components),
                      **({"unseen": list(q.unseen)} if q.unseen else {}),
                      **({"absent": list(q.absent)} if q.absent and q.factor() < 1 else {})}
        h.components = ({k: v * p / fused for k, v in h.components.items()} if fused > 0
                        else {"evidence": p})
        h.score = p
    return q


# --------------------------------------------------------------------------- the tail
#
# What every fusion does once each hit has its fused score: bonuses that read the other hits,
# decay, the order, diversity, the gate and what fills or replaces it. One pipeline; each
# fusion's order of steps is data (:data:`TAILS`). A step reads the settings and does nothing
# when they leave it off, so a tail lists every step its fusion may take.

TailStep = Literal["date_hint", "adjacent", "current", "decay", "sort", "diversify", "mmr",
                   "calibrate", "gate", "relaxed", "floor", "fill"]

#: Each fusion's tail, in order. The three ``reference`` tails are OpenClaw 2026.5.20's
#: (spec §4.2, the search flow; §4.5, the merge: decay → sort → MMR; §4.6–4.7) and must not
#: change (tests/test_reference_goldens.py); the others are this project's (docs/retrieval.md).
TAILS: dict[str, tuple[TailStep, ...]] = {
    # the reference's: hybrid (§4.5, then §4.2's minScore and relaxed fallback, then 2026.9's
    # keyword-only filling, off in its profile), no hybrid or no FTS5 (§4.2: the vector hits
    # above minScore, in the leg's order) and FTS-only (§4.2: decay, sort, minScore, else >= 0)
    "reference": ("decay", "sort", "mmr", "gate", "relaxed", "fill"),
    "reference:vector-only": ("gate",),
    "reference:fts-only": ("decay", "sort", "gate", "floor"),
    # ours
    "rrf": ("date_hint", "decay", "sort", "mmr", "gate"),
    "normalized": ("date_hint", "adjacent", "current", "decay", "sort", "diversify", "mmr",
                   "calibrate", "gate", "fill"),
}


#: The name a removal step gives the hits it leaves out (:attr:`Hit.removed_by`), where it
#: differs from the step's: a calibrated search that returns nothing abstained.
REMOVED_BY: dict[str, str] = {"calibrate": "abstention"}


@dataclass
class _Tail:
    """One fusion call's state as its tail's steps pass it along (nothing outlives the call)."""

    cands: Candidates
    s: SearchSettings
    hits: list[Hit]  # every candidate, in the order the steps so far left them
    keyword: Sequence[LegHit]  # the keyword leg's cut list: the relaxed fallback's and fill's
    chosen: list[Hit] | None = None  # what passes, once a gate ran
    evidence: calibration.QueryEvidence | None = None
    #: hit id → the step that left it out of ``chosen`` (and no later step took it back)
    removed: dict[str, str] = field(default_factory=dict)

    def mark(self, step: TailStep) -> None:
        """``chosen`` was just set by ``step``: a hit it leaves out is removed by ``step``
        unless an earlier gate removed it already; a hit it takes (back) is not removed."""
        kept = {h.id for h in self.chosen or ()}
        label = REMOVED_BY.get(step, step)
        for h in self.hits:
            if h.id in kept:
                self.removed.pop(h.id, None)
            else:
                self.removed.setdefault(h.id, label)


def _step_date_hint(t: _Tail) -> bool:
    _date_hint(t.hits, t.cands, t.s)
    return False


def _step_adjacent(t: _Tail) -> bool:
    boost_adjacent(t.hits, t.s.adjacent)
    return False


def _step_current(t: _Tail) -> bool:
    """Statements a later line superseded, against the time the question asks about.

    Each hit covering a superseded statement is marked with the line that superseded it. For
    a question about now (or with no time cue, :func:`time_focus`) that asks for the value of
    that statement's attribute (:func:`asks_about`), its score is multiplied by
    ``1 - supersession_penalty``, and a hit holding the attribute's current statement gains
    ``current_boost`` × the best score (the newest value is the answer, even where another
    note's words match the question better). A question about the past keeps both as they
    are: it still finds the old value. Off at 0 and 0.
    """
    s, c = t.s, t.cands
    if (s.supersession_penalty <= 0 and s.current_boost <= 0) or not c.subjects:
        return False
    now = time_focus(c.query) == "now"
    best = max((h.score for h in t.hits), default=0.0)
    for h in t.hits:
        h.superseded_by = c.superseded.get(h.id)
        if not now or h.id not in c.subjects or not asks_about(c.query, c.subjects[h.id]):
            continue
        old = h.score
        if h.superseded_by is not None:
            h.score *= 1.0 - s.supersession_penalty
        elif h.id in c.current:
            h.score += s.current_boost * best
        if h.score != old and old > 0:
            h.currency = h.score / old
            h.components = {k: v * h.currency for k, v in h.components.items()}
    return False


def _with_current(cands: Candidates, s: SearchSettings, vector: list[LegHit],
                  keyword: list[LegHit]) -> tuple[list[LegHit], list[LegHit]]:
    """The legs' cut lists plus every hit of their fetched pools holding the current statement
    of an attribute a question about now asks for (the ``current`` step's), each in the leg
    that found it: the newest line may be written in other words than the question (or in
    Chinese) and sit below the cut while the older lines it replaced rank high."""
    if s.current_boost <= 0 or not cands.current or time_focus(cands.query) != "now":
        return vector, keyword
    want = {cid for cid in cands.current if cid in cands.chunks
            and asks_about(cands.query, cands.subjects.get(cid, ()))}
    have = {h.id for h in vector} | {h.id for h in keyword}
    extra_v = [h for h in cands.vector if h.id in want and h.id not in have]
    have.update(h.id for h in extra_v)
    extra_k = [h for h in cands.keyword if h.id in want and h.id not in have] if keyword else []
    return vector + extra_v, keyword + extra_k


def _step_decay(t: _Tail) -> bool:
    _apply_decay(t.hits, t.cands, t.s)
    return False


def _step_sort(t: _Tail) -> bool:
    t.hits = _sort(t.hits)
    return False


def _step_diversify(t: _Tail) -> bool:
    t.hits = diversify(t.hits, t.s.diversity)
    return False


def _step_mmr(t: _Tail) -> bool:
    if t.s.mmr_enabled:
        t.hits = mmr_rerank(t.hits, t.s.mmr_lambda)
    return False


def _step_calibrate(t: _Tail) -> bool:
    """Scores become probabilities; nothing is returned when the best is below abstainBelow."""
    if not (t.s.calibration and t.s.hybrid and calibration.applicable(t.cands)):
        return False
    t.evidence = _calibrate(t.hits, t.cands, t.s)
    if t.hits and t.hits[0].score < t.s.abstain_below:
        t.chosen = []
        return True
    return False


def _step_gate(t: _Tail) -> bool:
    t.chosen = [h for h in t.hits if h.score >= t.s.min_score]
    return False


def _step_relaxed(t: _Tail) -> bool:
    """Spec §4.2: nothing passed but the keyword leg found hits: those of them above
    ``relaxedMinScore``, and the tail ends there."""
    if t.chosen or not t.keyword:
        return False
    kw_keys = {_key(t.cands.chunks[k.id]) for k in t.keyword}
    pool = [h for h in t.hits if _key(t.cands.chunks[h.id]) in kw_keys]
    t.chosen = [h for h in pool if h.score >= t.s.min_score] or [
        h for h in pool if h.score >= t.s.relaxed_min_score]
    return True


def _step_floor(t: _Tail) -> bool:
    """Spec §4.2, FTS-only: nothing passed minScore: every hit scoring at least 0."""
    if not t.chosen:
        t.chosen = [h for h in t.hits if h.score >= 0]
    return False


def _step_fill(t: _Tail) -> bool:
    if t.s.keyword_only_fill and t.keyword:
        t.chosen = _fill_keyword_only(t.chosen or [], t.hits, t.s)
    return False


#: A step changes the tail's state and says whether the tail ends there.
STEPS: dict[TailStep, Callable[[_Tail], bool]] = {
    "date_hint": _step_date_hint, "adjacent": _step_adjacent, "current": _step_current,
    "decay": _step_decay,
    "sort": _step_sort, "diversify": _step_diversify, "mmr": _step_mmr,
    "calibrate": _step_calibrate, "gate": _step_gate, "relaxed": _step_relaxed,
    "floor": _step_floor, "fill": _step_fill}


def _run_tail(tail: str, cands: Candidates, s: SearchSettings, hits: list[Hit],
              keyword: Sequence[LegHit]) -> FusionResult:
    """Run :data:`TAILS` ``[tail]`` over the scored ``hits``; a tail with no gate keeps all."""
    t = _Tail(cands, s, hits, keyword)
    for step in TAILS[tail]:
        before = t.chosen
        ends = STEPS[step](t)
        if t.chosen is not before:
            t.mark(step)
        if ends:
            break
    chosen = t.hits if t.chosen is None else t.chosen
    return _finish(chosen, t.hits, s, cands.mode, t.evidence, t.removed)


FUSIONS: dict[FusionMode, Callable[[Candidates, SearchSettings], FusionResult]] = {
    "reference": _reference_hybrid, "rrf": _rrf, "normalized": _normalized}


def fuse(cands: Candidates, settings: SearchSettings) -> FusionResult:
    """Rank ``cands`` under ``settings``. Pure: same inputs, same output."""
    if cands.rows_for is not None and settings.candidate_count() > cands.rows_for:
        raise ValueError(f"these candidates hold the rows of each leg's first {cands.rows_for}"
                         f" hits; settings that cut at {settings.candidate_count()} need them"
                         " fetched again")
    if cands.mode == "fts-only" and settings.fusion == "reference":
        return _fts_only(cands, settings)
    try:
        fn = FUSIONS[settings.fusion]
    except KeyError as e:
        raise ValueError(f"unknown fusion {settings.fusion!r} ({', '.join(FUSIONS)})") from e
    return fn(cands, settings)


def scores_info(s: SearchSettings) -> dict[str, object]:
    """What ``score`` means under ``s`` and when a search returns nothing (``memory_status``)."""
    if s.calibration:
        return {"calibration": s.calibration, "abstainBelow": s.abstain_below,
                "minScore": s.min_score,
                "meaning": "score estimates the probability that a hit is relevant; nothing "
                           f"is returned when the best hit's is below {s.abstain_below:g}"}
    return {"calibration": None, "minScore": s.min_score,
            "meaning": f"{s.fusion} fusion score; hits below minScore {s.min_score:g} are left out"}

