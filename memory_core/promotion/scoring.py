"""Scoring and gates (spec §6.4): every tracked entry scored, gated, and explained.

:func:`list_candidates` ranks the entries of the workspace's state store as
``rankShortTermPromotionCandidates`` does; :func:`explain` shows one entry's whole computation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..base.dates import DAY_MS, day_start_ms
from .duplicates import DuplicateInfo, check_duplicates
from .memory_file import promotion_markers, read_memory_text, relocate, source_lines
from .model import (
    DEFAULT_LIMIT,
    DEFAULT_MAX_AGE_DAYS,
    DEFAULT_MIN_RECALL_COUNT,
    DEFAULT_MIN_SCORE,
    DEFAULT_MIN_UNIQUE_QUERIES,
    HALF_LIFE_DAYS,
    WEIGHTS,
    Now,
    PromotionError,
    RecallEntry,
    clamp01,
    is_contaminated,
    is_session_corpus_path,
    is_short_term_path,
    iso,
    now_ms,
)
from .policy import policy_for
from .state import state_of

if TYPE_CHECKING:
    from ..index import MemoryIndex


def _consolidation_days(days: Sequence[str]) -> float:
    if not days:
        return 0.0
    uniq = sorted(set(days))
    if len(uniq) == 1:
        return 0.2
    span = (day_start_ms(uniq[-1]) - day_start_ms(uniq[0])) / DAY_MS
    n = len(uniq)
    return clamp01(0.55 * clamp01(math.log(1 + (n - 1)) / math.log(5))
                   + 0.45 * clamp01(span / 7))


def normalize_weights(weights: dict[str, float] | None) -> dict[str, float]:
    """The §6.4 weights, or overrides normalised to sum to 1 (``normalizeWeights``)."""
    if not weights:
        return dict(WEIGHTS)
    w = {k: max(0.0, float(weights.get(k, WEIGHTS[k]))) for k in WEIGHTS}
    total = sum(w.values())
    return {k: v / total for k, v in w.items()} if total > 0 else dict(WEIGHTS)


#: ``phaseBoost`` constants (``calculatePhaseSignalBoost``): the most a Light and a REM hit
#: history can add, and the half-life of a phase hit.
LIGHT_BOOST_MAX = 0.06
REM_BOOST_MAX = 0.09
PHASE_HALF_LIFE_DAYS = 14.0


def phase_boost(phase: dict[str, Any] | None, now: Now = None) -> float:
    """``calculatePhaseSignalBoost`` (§6.4): ``0.06·Ls·Lr + 0.09·Rs·Rr`` where the strengths
    are ``clamp01(ln(1+hits)/ln 7)`` and the recencies decay with a 14-day half-life since the
    phase's last hit (0 when never hit); clamped to 0..1."""
    if not phase:
        return 0.0
    at = now_ms(now)

    def part(hits: int, last: int | None) -> float:
        if last is None:
            return 0.0
        strength = clamp01(math.log1p(max(0, hits)) / math.log1p(6))
        age = max(0.0, (at - last) / DAY_MS)
        return strength * clamp01(math.exp(-math.log(2) / PHASE_HALF_LIFE_DAYS * age))

    return clamp01(LIGHT_BOOST_MAX * part(phase.get("light_hits", 0), phase.get("last_light_at"))
                   + REM_BOOST_MAX * part(phase.get("rem_hits", 0), phase.get("last_rem_at")))


@dataclass
class PromotionCandidate(RecallEntry):
    """A scored recall entry (its fields, ``signals`` and ``avg_score`` are the entry's): the
    breakdown, whether it passed the gates, and why not.

    ``components`` are the weighted contributions (they sum to ``score``); ``raw`` the 0..1
    values before weighting. ``reasons`` lists every gate the entry failed (empty if passed).
    (Not to be confused with the search side's ``Candidates``, the two legs of one query.)
    """

    score: float = 0.0
    components: dict[str, float] = field(default_factory=dict)
    raw: dict[str, float] = field(default_factory=dict)
    age_days: float = 0.0
    passed: bool = True
    reasons: list[str] = field(default_factory=list)
    duplicate: DuplicateInfo | None = None
    rank: int = 0

    @property
    def unique_queries(self) -> int:
        return len(self.query_hashes)

    @property
    def context_diversity(self) -> int:
        """The reference's diversity: distinct queries or distinct days, the more."""
        return max(len(self.query_hashes), len(self.recall_days))

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key, "path": self.path, "startLine": self.start_line,
            "endLine": self.end_line, "snippet": self.snippet, "score": round(self.score, 6),
            "components": {k: round(v, 6) for k, v in self.components.items()},
            "rawComponents": {k: round(v, 6) for k, v in self.raw.items()},
            "recallCount": self.recall_count, "dailyCount": self.daily_count,
            "groundedCount": self.grounded_count, "signals": self.signals,
            "uniqueQueries": self.unique_queries, "contextDiversity": self.context_diversity,
            "avgScore": round(self.avg_score, 6), "maxScore": round(self.max_score, 6),
            "recallDays": self.recall_days, "conceptTags": self.concept_tags,
            "firstRecalledAt": iso(self.first_recalled_at),
            "lastRecalledAt": iso(self.last_recalled_at), "ageDays": round(self.age_days, 3),
            "promotedAt": iso(self.promoted_at), "passed": self.passed, "reasons": self.reasons,
            "rank": self.rank,
            "duplicate": self.duplicate.to_dict() if self.duplicate else None,
        }


def score_entry(e: RecallEntry, *, now: Now = None, half_life_days: float = HALF_LIFE_DAYS,
                weights: dict[str, float] | None = None,
                phase: dict[str, Any] | None = None) -> PromotionCandidate:
    """§6.4's formula for one entry, as a candidate that passed (pure; the gates are applied
    by :func:`list_candidates`).

    ``phase``: the entry's Light/REM hits (:meth:`StateStore.phase_signals`), which give
    ``phaseBoost`` (:func:`phase_boost`); none → 0.
    """
    w = normalize_weights(weights)
    frequency = clamp01(math.log(1 + e.signals) / math.log(11))
    diversity = clamp01(max(len(e.query_hashes), len(e.recall_days)) / 5)
    age = max(0.0, (now_ms(now) - e.last_recalled_at) / DAY_MS)
    recency = math.exp(-math.log(2) / max(half_life_days, 1e-9) * age)
    consolidation = max(_consolidation_days(e.recall_days), clamp01(e.grounded_count / 3))
    conceptual = clamp01(len(e.concept_tags) / 6)
    raw = {"frequency": frequency, "relevance": e.avg_score, "diversity": diversity,
           "recency": recency, "consolidation": consolidation, "conceptual": conceptual,
           "phaseBoost": phase_boost(phase, now)}
    comps = {k: w[k] * raw[k] for k in WEIGHTS}
    comps["phaseBoost"] = raw["phaseBoost"]
    return PromotionCandidate(**e.to_row(), score=clamp01(sum(comps.values())),
                              components=comps, raw=raw, age_days=age)


def list_candidates(index: MemoryIndex, *, now: Now = None, min_score: float | None = None,
                    min_recall_count: int | None = None,
                    min_unique_queries: int | None = None,
                    max_age_days: float | None = None, limit: int | None = None,
                    include_promoted: bool = False, half_life_days: float = HALF_LIFE_DAYS,
                    weights: dict[str, float] | None = None,
                    check_duplicates_of: str = "passed") -> list[PromotionCandidate]:
    """Every tracked entry, scored and gated (``rankShortTermPromotionCandidates``, §6.4).

    Returns the entries that passed first, in the reference's order (score desc, then recall
    count desc, then path), at most ``limit`` of them; then the gated ones in the same order,
    each with ``reasons``. ``None`` gates take the deep-phase defaults (0.80, 3, 3, 30 days, 10);
    a negative ``max_age_days`` or a ``limit`` ≤ 0 disables that gate. Entries already promoted
    (``promotedAt`` set, or their marker already in ``MEMORY.md``) are left out unless
    ``include_promoted``, and then never pass. ``check_duplicates_of`` is ``"passed"``
    (default), ``"all"`` or ``"none"``: which candidates get their near-duplicate check.
    """
    ms = DEFAULT_MIN_SCORE if min_score is None else min_score
    mrc = DEFAULT_MIN_RECALL_COUNT if min_recall_count is None else min_recall_count
    muq = DEFAULT_MIN_UNIQUE_QUERIES if min_unique_queries is None else min_unique_queries
    mad = DEFAULT_MAX_AGE_DAYS if max_age_days is None else max_age_days
    lim = DEFAULT_LIMIT if limit is None else limit
    mdq = policy_for(index).min_distinct_queries
    at = now_ms(now)
    markers = set(promotion_markers(read_memory_text(index.workspace)))
    with state_of(index) as st:
        rows = st.recall_entries()
        phases = st.phase_signals()
    out: list[PromotionCandidate] = []
    for row in rows:
        e = RecallEntry.from_row(row)
        if e.source != "memory" or not is_short_term_path(e.path) or is_contaminated(
                e.snippet, transcript_turns_ok=is_session_corpus_path(e.path)):
            continue
        promoted = e.promoted_at is not None or e.key in markers
        if promoted and not include_promoted:
            continue
        c = score_entry(e, now=at, half_life_days=half_life_days, weights=weights,
                        phase=phases.get(e.key))
        if e.promoted_at is not None:
            c.reasons.append(f"already promoted ({iso(e.promoted_at)})")
        elif e.key in markers:
            c.reasons.append("already in MEMORY.md (its marker is there)")
        if c.signals == 0:
            c.reasons.append("no signals")
        elif c.signals < mrc:
            c.reasons.append(f"signals {c.signals} < minRecallCount {mrc}")
        if c.context_diversity < muq:
            c.reasons.append(f"unique queries/days {c.context_diversity} < minUniqueQueries {muq}")
        if len(e.query_hashes) < mdq:
            c.reasons.append(f"distinct queries {len(e.query_hashes)} < {mdq} (the default "
                             "profile's minDistinctQueries)")
        if mad >= 0 and c.age_days > mad:
            c.reasons.append(f"last recalled {c.age_days:.1f} days ago > maxAgeDays {mad:g}")
        if c.score < ms:
            c.reasons.append(f"score {c.score:.3f} < minScore {ms:.2f}")
        out.append(c)
    out.sort(key=lambda c: (-c.score, -c.recall_count, c.path, c.start_line))
    n_passed = 0
    for c in out:
        if not c.reasons:
            n_passed += 1
            if lim > 0 and n_passed > lim:
                c.reasons.append(f"beyond limit {lim}")
        c.passed = not c.reasons
    ordered = [c for c in out if c.passed] + [c for c in out if not c.passed]
    for i, c in enumerate(ordered, 1):
        c.rank = i
    if check_duplicates_of != "none":
        todo = [c for c in ordered if c.passed or check_duplicates_of == "all"]
        for c, d in zip(todo, check_duplicates(index, [c.snippet for c in todo]), strict=True):
            c.duplicate = d
    return ordered


def explain(index: MemoryIndex, key: str, *, now: Now = None) -> dict[str, Any]:
    """Everything about one entry: its §6.2 fields, the score worked out, each gate, the recent
    signals (with query text for live recalls), where its snippet is now, and its duplicate.

    Raises :class:`PromotionError` for an unknown key.
    """
    at = now_ms(now)
    with state_of(index) as st:
        row = st.recall_entry(key)
        events = st.recall_events(key)
        phase = st.phase_signals().get(key)
    if row is None:
        raise PromotionError(f"no recall entry with key {key!r}")
    e = RecallEntry.from_row(row)
    s = score_entry(e, now=at, phase=phase)
    cands = list_candidates(index, now=at, include_promoted=True, check_duplicates_of="none")
    cand = next((c for c in cands if c.key == key), None)
    gates = {
        "minRecallCount": {"value": s.signals, "threshold": DEFAULT_MIN_RECALL_COUNT,
                           "passed": s.signals >= DEFAULT_MIN_RECALL_COUNT},
        "minUniqueQueries": {"value": s.context_diversity,
                             "threshold": DEFAULT_MIN_UNIQUE_QUERIES,
                             "passed": s.context_diversity >= DEFAULT_MIN_UNIQUE_QUERIES},
        "maxAgeDays": {"value": round(s.age_days, 3), "threshold": DEFAULT_MAX_AGE_DAYS,
                       "passed": s.age_days <= DEFAULT_MAX_AGE_DAYS},
        "minScore": {"value": round(s.score, 6), "threshold": DEFAULT_MIN_SCORE,
                     "passed": s.score >= DEFAULT_MIN_SCORE},
    }
    n_days = len(set(e.recall_days))
    formulas = {
        "frequency": f"ln(1+{s.signals})/ln(11)",
        "relevance": f"clamp01({e.total_score:.3f}/{s.signals})" if s.signals else "0",
        "diversity": f"max({len(e.query_hashes)} queries, {len(e.recall_days)} days)/5",
        "recency": f"exp(-ln2/{HALF_LIFE_DAYS:g} × {s.age_days:.2f} days)",
        "consolidation": f"{n_days} distinct days" + (
            f", span {e.recall_days[0]}→{e.recall_days[-1]}" if n_days > 1 else ""),
        "conceptual": f"{len(e.concept_tags)} tags/6",
        "phaseBoost": (f"0.06·{(phase or {}).get('light_hits', 0)} light + "
                       f"0.09·{(phase or {}).get('rem_hits', 0)} REM hits, 14-day half-life"),
    }
    located: dict[str, Any]
    src = source_lines(index.workspace, e.path)
    if src is None:
        located = {"found": False, "reason": f"source file {e.path} is gone"}
    else:
        loc = relocate(src[1], e.snippet, e.start_line, e.end_line)
        located = ({"found": False, "reason": "snippet no longer found"} if loc is None else
                   {"found": True, "path": src[0], "startLine": loc.start_line,
                    "endLine": loc.end_line, "quality": loc.quality, "loose": loc.loose})
    dup = check_duplicates(index, [e.snippet])[0]
    return {
        "entry": e.to_dict(),
        "score": round(s.score, 6),
        "components": {k: round(v, 6) for k, v in s.components.items()},
        "rawComponents": {k: round(v, 6) for k, v in s.raw.items()},
        "weights": dict(WEIGHTS),
        "formulas": formulas,
        "gates": gates,
        "passed": bool(cand and cand.passed),
        "reasons": cand.reasons if cand else [],
        "rank": cand.rank if cand else None,
        "markerInMemory": key in promotion_markers(read_memory_text(index.workspace)),
        "located": located,
        "duplicate": dup.to_dict() if dup else None,
        "events": [{**ev, "at": iso(ev["at"])} for ev in events],
        "now": iso(at),
    }
