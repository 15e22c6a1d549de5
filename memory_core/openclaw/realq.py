"""The agent's real queries run again: what they got then, what they get now, and label-free
metrics over them (issue #12, item 2).

A real query has no relevance labels, but it has what the agent's memory returned *then*
(the tool result in its transcript). Running it again on an index with some settings gives
what it would return *now*; comparing the two, over every real query, measures a change of
settings without labels:

* **zero-result rate** then and now: the share of queries that got nothing (the reference's
  top complaint, spec §10 item 1);
* **overlap@k**: the share of the top ``k`` results then that are among the top ``k`` now
  (a result counts when it is the same file and its line range overlaps, so a different
  chunker still matches);
* **score spread**: the best minus the ``k``-th score now, a rough measure of how decided the
  ranking is (0 when a query gets one result or none).

Nothing is recorded: the searches pass no recall hook.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..base.config import SOURCE_NAMES, SearchSettings
from .queries import RealQuery

if TYPE_CHECKING:
    from ..index import MemoryIndex


@dataclass
class QueryComparison:
    """One real query: its results then and now, and how far they agree."""

    query: RealQuery
    now: list[dict[str, Any]]
    overlap: float | None  # overlap@k; None when the query got nothing then
    spread: float

    @property
    def zero_then(self) -> bool:
        return not self.query.results_then

    @property
    def zero_now(self) -> bool:
        return not self.now

    def to_dict(self) -> dict[str, Any]:
        return {**self.query.to_dict(), "results_now": self.now, "overlap": self.overlap,
                "spread": self.spread, "zero_then": self.zero_then, "zero_now": self.zero_now}


@dataclass
class LabelFreeMetrics:
    """Label-free metrics over a set of real queries (see the module docstring)."""

    queries: int
    k: int
    zero_rate_then: float | None
    zero_rate_now: float | None
    overlap_at_k: float | None
    score_spread: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"queries": self.queries, "k": self.k, "zeroRateThen": self.zero_rate_then,
                "zeroRateNow": self.zero_rate_now, "overlapAtK": self.overlap_at_k,
                "scoreSpread": self.score_spread}


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (a["path"] == b["path"] and int(a["startLine"]) <= int(b["endLine"])
            and int(b["startLine"]) <= int(a["endLine"]))


def overlap_at_k(then: Sequence[dict[str, Any]], now: Sequence[dict[str, Any]], k: int
                 ) -> float | None:
    """Share of the top ``k`` results then found among the top ``k`` now (same file,
    overlapping lines); ``None`` when there was nothing then."""
    top_then, top_now = list(then)[:k], list(now)[:k]
    if not top_then:
        return None
    found = sum(any(_same(t, n) for n in top_now) for t in top_then)
    return found / len(top_then)


def compare(index: MemoryIndex, queries: Sequence[RealQuery],
            settings: SearchSettings | None = None, *, k: int | None = None
            ) -> list[QueryComparison]:
    """Run each real query (with the ``maxResults``/``minScore`` it was called with, when it
    gave them, else ``settings``') and compare with what it got then. ``k`` defaults to the
    settings' ``max_results``."""
    s = settings or index.settings()
    kk = k or s.max_results
    out: list[QueryComparison] = []
    for q in queries:
        if q.results_then is None:
            continue
        qs = s
        mr, ms = q.args.get("maxResults"), q.args.get("minScore")
        if isinstance(mr, (int, float)) and not isinstance(mr, bool) and mr >= 1:
            qs = replace(qs, max_results=int(mr))
        if isinstance(ms, (int, float)) and not isinstance(ms, bool):
            qs = replace(qs, min_score=min(1.0, max(0.0, float(ms))))
        corpus = q.args.get("corpus")
        sources = [corpus] if corpus in SOURCE_NAMES else None
        hits = index.search(q.query, settings=qs, sources=sources).hits
        now = [{"path": h.path, "startLine": h.start_line, "endLine": h.end_line,
                "score": float(h.score), "snippet": h.snippet, "source": h.source}
               for h in hits]
        scores = [float(h.score) for h in hits[:kk]]
        spread = (scores[0] - scores[-1]) if len(scores) > 1 else 0.0
        out.append(QueryComparison(q, now, overlap_at_k(q.results_then, now, kk), spread))
    return out


def metrics(comparisons: Sequence[QueryComparison], k: int) -> LabelFreeMetrics:
    """Zero-result rates then and now, mean overlap@k, mean score spread."""
    n = len(comparisons)
    if not n:
        return LabelFreeMetrics(0, k, None, None, None, None)
    overlaps = [c.overlap for c in comparisons if c.overlap is not None]
    spreads = [c.spread for c in comparisons if len(c.now) > 1]
    return LabelFreeMetrics(
        n, k, sum(c.zero_then for c in comparisons) / n, sum(c.zero_now for c in comparisons) / n,
        statistics.fmean(overlaps) if overlaps else None,
        statistics.fmean(spreads) if spreads else None)


def percent(x: float | None) -> str:
    """A label-free rate as the tables show it: ``42%``, or ``—`` when there is none."""
    return "—" if x is None else f"{x:.0%}"


def metrics_rows(index: MemoryIndex, queries: Sequence[RealQuery],
                 runs: dict[str, SearchSettings]) -> list[dict[str, Any]]:
    """One row of label-free metrics per named setting (the Evaluate page's table)."""
    rows = []
    for label, s in runs.items():
        m = metrics(compare(index, queries, s), s.max_results)
        rows.append({"settings": label, "queries": m.queries,
                     "zero results then": percent(m.zero_rate_then),
                     "zero results now": percent(m.zero_rate_now),
                     "overlap@k": percent(m.overlap_at_k),
                     "score spread": "—" if m.score_spread is None else f"{m.score_spread:.3f}"})
    return rows
