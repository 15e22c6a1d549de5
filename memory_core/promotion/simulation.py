"""What-if tools (beyond the reference): the retrieval impact of a planned promotion, a replay
of a query log over simulated days, and the query-log reader.

Neither records anything it is not asked to: searches here pass no ``on_hits`` hook, and replay
records each search's hits itself, at a simulated time.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.dates import DAY_MS, day_of, day_start_ms
from ..base.fileio import iter_jsonl
from ..base.indexfiles import IndexFiles
from ..base.sql import sqlite
from ..index import MemoryIndex
from ..storage.indexfile import read_uri
from .model import MEMORY_FILE, Now, iso, now_ms
from .plan import ApplyPlan, preview_apply
from .scoring import PromotionCandidate, list_candidates
from .signals import ingest_daily, record_search, record_tool_results_into
from .state import state_of

if TYPE_CHECKING:
    from ..read.fusion import Hit


@dataclass
class QueryImpact:
    """One labelled query before and after the promotion: rank of its first gold hit in top k."""

    query: str
    qid: Any
    before_rank: int | None
    after_rank: int | None
    promoted_rank: int | None  # rank of the first hit inside the new section, if any

    @property
    def change(self) -> str:
        b, a = self.before_rank, self.after_rank
        if b is None and a is not None:
            return "gained"
        if b is not None and a is None:
            return "lost"
        if b is None or a is None or a == b:
            return "same"
        return "better" if a < b else "worse"

    def to_dict(self) -> dict[str, Any]:
        return {"qid": self.qid, "query": self.query, "beforeRank": self.before_rank,
                "afterRank": self.after_rank, "promotedRank": self.promoted_rank,
                "change": self.change}


@dataclass
class ImpactReport:
    """Retrieval with and without the planned promotion, over a labelled query set."""

    k: int
    queries: list[QueryImpact]
    plan: ApplyPlan

    @property
    def gained(self) -> list[QueryImpact]:
        return [q for q in self.queries if q.change == "gained"]

    @property
    def lost(self) -> list[QueryImpact]:
        return [q for q in self.queries if q.change == "lost"]

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "gained": len(self.gained), "lost": len(self.lost),
                "recallBefore": sum(q.before_rank is not None for q in self.queries),
                "recallAfter": sum(q.after_rank is not None for q in self.queries),
                "queries": [q.to_dict() for q in self.queries]}


def _gold_rank(hits: Sequence[Hit], relevant: Sequence[dict[str, Any]]) -> int | None:
    for i, h in enumerate(hits, 1):
        for g in relevant:
            if h.path == g.get("path") and h.start_line <= int(g.get("line", 0)) <= h.end_line:
                return i
    return None


def _snapshot_index(src: Path, target: Path) -> None:
    """A consistent copy of an index file (SQLite's online backup), so that the copy only has
    to re-embed what changed. A missing or unreadable index just means a full sync there."""
    if not src.exists():
        return
    try:
        with sqlite.connect(read_uri(src), uri=True) as a, \
                sqlite.connect(target) as b:
            a.backup(b)
    except sqlite.Error:
        for p in (target, *IndexFiles(target).journal):
            p.unlink(missing_ok=True)


def impact_preview(index: MemoryIndex,
                   candidates: Sequence[PromotionCandidate] | ApplyPlan | None,
                   queries: Sequence[dict[str, Any]], *, k: int | None = None,
                   now: Now = None) -> ImpactReport:
    """Re-run ``queries`` as if the promotion were applied; report gold hits gained or lost.

    ``queries`` are ``{query, relevant: [{path, line}], qid?}``. The workspace is copied to a
    temporary folder (without its ``.memory``), the planned ``MEMORY.md`` written there (a
    symlinked ``MEMORY.md`` is replaced in the copy, never written through), and the index
    copied so that only ``MEMORY.md`` is re-embedded. Nothing in the real workspace changes and
    no recall is recorded.
    """
    plan = candidates if isinstance(candidates, ApplyPlan) else preview_apply(
        index, candidates, now=now)
    kk = k or index.settings().max_results
    before = [_gold_rank(index.search(q["query"], max_results=kk).hits, q.get("relevant", []))
              for q in queries]
    with tempfile.TemporaryDirectory(prefix="memory-promotion-impact-") as tmp:
        copy_ws = Path(tmp) / "ws"
        shutil.copytree(index.workspace, copy_ws, symlinks=True,
                        ignore=shutil.ignore_patterns(".memory", ".git"))
        planned = copy_ws / MEMORY_FILE
        planned.unlink(missing_ok=True)  # a copied symlink would write the user's real file
        planned.write_bytes(plan.new_text.encode("utf-8"))
        cfg = copy.deepcopy(index.config)
        cfg.store.path = str(copy_ws / ".memory" / "impact-preview.sqlite")
        target = cfg.store_path(copy_ws)
        target.parent.mkdir(parents=True, exist_ok=True)
        _snapshot_index(index.store_path, target)
        other = MemoryIndex(copy_ws, cfg, index.choice)
        try:
            other.sync()
            after_hits = [other.search(q["query"], max_results=kk).hits for q in queries]
        finally:
            other.close()
    out = []
    sec = plan.section_start_line
    for q, b, hits in zip(queries, before, after_hits, strict=True):
        a = _gold_rank(hits, q.get("relevant", []))
        pr = None
        if sec is not None:
            pr = next((i for i, h in enumerate(hits, 1)
                       if h.path == MEMORY_FILE and h.end_line >= sec), None)
        out.append(QueryImpact(q["query"], q.get("qid"), b, a, pr))
    return ImpactReport(kk, out, plan)


@dataclass
class ReplayReport:
    """What a replay recorded."""

    days: int
    mode: str
    queries: int
    searches: int
    recalls_recorded: int
    daily_recorded: int
    entries: int
    candidates: int
    first_day: str
    last_day: str

    def to_dict(self) -> dict[str, Any]:
        return {"days": self.days, "mode": self.mode, "queries": self.queries,
                "searches": self.searches, "recallsRecorded": self.recalls_recorded,
                "dailyRecorded": self.daily_recorded, "entries": self.entries,
                "candidates": self.candidates, "firstDay": self.first_day,
                "lastDay": self.last_day}


#: :func:`replay`'s ``days`` at most: ten years of simulated days (99999999 ran for hours).
MAX_REPLAY_DAYS = 3660


def replay(index: MemoryIndex, queries: list[str], days: int, *, now: Now = None,
           progress: Callable[[int, int], None] | None = None, mode: str = "spread",
           daily: bool = True, reset: bool = False) -> ReplayReport:
    """Seed recall signals from a query log over ``days`` simulated days ending today.

    ``mode="spread"`` (default) runs the log once, in order, cut into ``days`` consecutive
    slices, one per day: a diary chunk gathers one recall per distinct query that finds it,
    which is what ``minRecallCount``/``minUniqueQueries`` are meant to measure.
    ``mode="repeat"`` runs the whole log every day (stronger signals; note that the reference's
    diversity counts days too, so a single query repeated on 3 days passes
    ``minUniqueQueries 3``). Each search goes through :meth:`MemoryIndex.search` and is recorded
    with a simulated time inside its day (never later than ``now``); with ``daily`` the
    daily-note ingestion runs at the end of each simulated day, as the nightly sweep would.
    ``reset`` forgets all signals first. ``progress(done, total)`` is called after each search.
    ``days`` out of 1 to :data:`MAX_REPLAY_DAYS` raises ``ValueError`` before anything is done.
    """
    if not 1 <= days <= MAX_REPLAY_DAYS:
        raise ValueError(f"days: at least 1 and at most {MAX_REPLAY_DAYS} (got {days})")
    if mode not in ("spread", "repeat"):
        raise ValueError(f"unknown replay mode {mode!r} (spread or repeat)")
    qs = [q.strip() for q in queries if q and q.strip()]
    end = now_ms(now)
    if reset:
        with state_of(index) as st, st.transaction():
            st.recall_clear()
    if mode == "spread":
        plan = [[q for i, q in enumerate(qs) if i * days // max(1, len(qs)) == d]
                for d in range(days)]
    else:
        plan = [list(qs) for _ in range(days)]
    total = sum(len(p) for p in plan)
    cacheable = not index.settings().decay_enabled  # otherwise results depend on "now"
    cache: dict[str, list[Hit]] = {}
    done = recalls = daily_n = 0
    index.ensure_synced()
    for d, day_queries in enumerate(plan):
        day_end = end - (days - 1 - d) * DAY_MS
        day_start = day_start_ms(day_of(day_end))
        m = len(day_queries)
        for j, q in enumerate(day_queries):
            ts = day_start + (day_end - day_start) * (j + 1) // (m + 1)
            hits = cache.get(q) if cacheable else None
            if hits is None:
                hits = index.search(q, now_ms=ts).hits  # no on_hits: recorded below, at ts
                if cacheable:
                    cache[q] = hits
            recalls += record_search(index, q, hits, now=ts)
            done += 1
            if progress:
                progress(done, total)
        if daily:
            daily_n += ingest_daily(index, now=day_end).recorded
    with state_of(index) as st:
        n_entries = len(st.recall_entries())
    n_cands = sum(c.passed for c in list_candidates(index, now=end, check_duplicates_of="none"))
    return ReplayReport(days, mode, len(qs), done, recalls, daily_n, n_entries, n_cands,
                        day_of(end - (days - 1) * DAY_MS), day_of(end))


def load_query_log(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a JSONL query log: objects with a ``query`` field (other fields kept, unused here).

    Blank lines are skipped; a line that is not such an object (bad JSON, bad UTF-8) raises
    ``ValueError`` naming it.
    """
    out: list[dict[str, Any]] = []
    p = Path(path)
    for line in iter_jsonl(p):
        if line.error is not None:
            raise ValueError(f"{p}:{line.line}: {line.error}")
        rec = line.value
        if not isinstance(rec, dict) or not isinstance(rec.get("query"), str):
            raise ValueError(f"{p}:{line.line}: expected an object with a string 'query'")
        out.append(rec)
    return out


@dataclass
class SessionReplayReport:
    """What replaying an agent's real tool results recorded (``replay --from-sessions``)."""

    calls: int
    answered: int
    recalls_recorded: int
    entries: int
    candidates: int
    first_at: int | None
    last_at: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "answered": self.answered,
                "recallsRecorded": self.recalls_recorded, "entries": self.entries,
                "candidates": self.candidates, "firstAt": iso(self.first_at),
                "lastAt": iso(self.last_at)}


def replay_tool_results(index: MemoryIndex,
                        calls: Sequence[tuple[str, int | None, Sequence[dict[str, Any]] | None]],
                        *, now: Now = None, reset: bool = False) -> SessionReplayReport:
    """Record recalls from what the agent really got: each ``(query, at, results)`` of its
    ``memory_search`` calls, in order, at its own time (``now`` for a call without one), as
    the reference's tool records them when they happen (:func:`record_tool_results_into`).
    Nothing is searched: the results are those of the transcripts. ``results`` ``None`` (a
    call without a result in the transcript) records nothing.
    """
    at_default = now_ms(now)
    recorded = answered = 0
    times: list[int] = []
    with state_of(index) as st:
        if reset:
            with st.transaction():
                st.recall_clear()
        for query, at, results in calls:
            if results is None:
                continue
            answered += 1
            when = at if at is not None else at_default
            times.append(when)
            recorded += record_tool_results_into(st, query, results, now=when)
        entries = len(st.recall_entries())
    cands = [c for c in list_candidates(index, now=now, check_duplicates_of="none") if c.passed]
    return SessionReplayReport(len(calls), answered, recorded, entries, len(cands),
                               min(times) if times else None, max(times) if times else None)
