"""Recall signals (spec §6.2): live recalls from searches and daily-note ingestion.

Both land in the workspace's durable state store (:mod:`.state`). Searches record through
:func:`recall_recorder`, passed as ``MemoryIndex.search(..., on_hits=recall_recorder(idx))``
by the callers that record (the CLI's ``search``, the agent tools, MCP); nothing records
unless asked.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..base.dates import DAY_MS, dated_name_date, day_start_ms
from ..base.fileio import stat_signature
from ..base.text import repair_surrogates
from .concepts import derive_concept_tags
from .memory_file import HEADING_RE, LIST_RE, fenced_ranges
from .model import (
    DAILY_LOOKBACK_DAYS,
    DAILY_QUERY_PREFIX,
    DAILY_SIGNAL_SCORE,
    DEFAULT_LIMIT,
    MAX_QUERY_HASHES,
    MAX_RECALL_DAYS,
    Now,
    PromotionError,
    RecallEntry,
    Signal,
    clamp01,
    collapse,
    day_in,
    day_within,
    is_contaminated,
    is_session_corpus_path,
    is_short_term_path,
    now_ms,
    query_hash,
    recall_key,
)
from .policy import policy_for, retain
from .state import StateError, StateStore, state_of

if TYPE_CHECKING:
    from ..index import MemoryIndex
    from ..read.fusion import Hit

_GENERIC_HEADING = re.compile(
    r"^(?:\d{4}-\d{2}-\d{2}.*|\d{1,2}:\d{2}.*|(?:morning|afternoon|evening|night|today|"
    r"tonight|am|pm|上午|下午|晚上|早上|今天)\b.*)$", re.I)
_MANAGED_HEADINGS = ("light sleep", "rem sleep")
DAILY_SNIPPET_MIN = 8
DAILY_SNIPPET_MAX = 280
DAILY_GROUP_LINES = 4


def _merge_recent(items: list[str], item: str, cap: int) -> list[str]:
    """Move ``item`` to the end (most recent) and keep the last ``cap`` items."""
    out = [x for x in items if x != item]
    out.append(item)
    return out[-cap:]


@lru_cache(maxsize=4096)
def _concept_tags(path: str, snippet: str) -> tuple[str, ...]:
    """:func:`derive_concept_tags`, remembered: a pure function of the two, and half of what
    recording a recall costs; the same chunk comes back across the searches of a batch."""
    return tuple(derive_concept_tags(path, snippet))


def _count(st: StateStore, s: Signal, kind: str, at: int, day: str, qh: str, query: str, *,
           as_tool: bool = False) -> None:
    """Count one signal ``s`` of ``kind`` at ``at`` into its entry, and log it (§6.2).

    Ours (``record_into``) merges days sorted and moves the query hash to the newest end, keeps
    the times min/max (a replay's simulated times stay consistent) and caches the concept tags;
    ``as_tool`` is the reference's tool (``recordShortTermRecalls``): hashes and days appended
    if new, the entry's range the result's, ``lastRecalledAt = now``, tags kept when none derive.
    """
    key = recall_key(s.path, s.start_line, s.end_line)
    row = st.recall_entry(key)
    e = RecallEntry.from_row(row) if row else RecallEntry(
        key, s.path, s.start_line, s.end_line, s.snippet,
        first_recalled_at=at, last_recalled_at=at)
    setattr(e, f"{kind}_count", getattr(e, f"{kind}_count") + 1)
    e.total_score += clamp01(s.score)
    e.max_score = max(e.max_score, clamp01(s.score))
    e.snippet = s.snippet
    if as_tool:
        e.start_line, e.end_line = s.start_line, s.end_line
        e.query_hashes = _merge_distinct(e.query_hashes, qh, MAX_QUERY_HASHES)
        e.recall_days = _merge_distinct(e.recall_days, day, MAX_RECALL_DAYS)
        e.concept_tags = derive_concept_tags(s.path, s.snippet) or e.concept_tags
        e.last_recalled_at = at
    else:
        e.query_hashes = _merge_recent(e.query_hashes, qh, MAX_QUERY_HASHES)
        e.recall_days = sorted(set(e.recall_days) | {day})[-MAX_RECALL_DAYS:]
        e.concept_tags = list(_concept_tags(e.path, e.snippet))
        e.first_recalled_at = min(e.first_recalled_at, at)
        e.last_recalled_at = max(e.last_recalled_at, at)
    st.recall_put(e.to_row())
    st.recall_event_add(key, kind, qh, query[:200], day, clamp01(s.score), at)


def record_into(st: StateStore, signals: Sequence[Signal], *, query: str,
                kind: Literal["recall", "daily"], now: Now = None) -> int:
    """Record ``signals`` as ``kind`` in one transaction of ``st``; return how many.

    Updates follow §6.2: the count of the kind += 1, ``totalScore += clamp01(score)``,
    ``maxScore = max``, the query hash and the day bucket merged (capped), concept tags
    re-derived, ``lastRecalledAt`` = now. A ``daily`` signal (daily-note and session ingestion)
    is counted once per key, query and day: a key already signalled so is not counted again.
    """
    at = now_ms(now)
    day = day_in(at, st.timezone())  # the configured timezone's calendar day (§6.2)
    query = repair_surrogates(query)[0]  # a lone surrogate has no UTF-8: one query, not a crash
    qh = query_hash(query)
    n = 0
    with st.transaction():
        seen: set[str] = set()
        for s in signals:
            key = recall_key(s.path, s.start_line, s.end_line)
            if key in seen:
                continue
            seen.add(key)
            if kind == "daily" and st.recall_event_seen(key, qh, day):
                continue
            _count(st, s, kind, at, day, qh, query)
            n += 1
    return n


def record_search(index: MemoryIndex, query: str, hits: Sequence[Hit], *,
                  now: Now = None) -> int:
    """Record a search's hits on short-term files as recalls (§6.2 signal 1); return how many.

    Only hits with source ``memory`` on dated diaries count, and snippets carrying dreaming
    output are skipped. A state-store failure never fails the search: it is a warning.
    """
    with BatchRecorder(index) as record:  # a batch of one: the same rows, one connection
        return record(query, hits, now=now)


def recall_recorder(index: MemoryIndex) -> Callable[[str, Sequence[Hit]], None]:
    """The ``on_hits`` hook that records a search's hits as recalls for ``index``'s workspace.

    ``idx.search(q, on_hits=recall_recorder(idx))``; the hook never raises (see
    :func:`record_search`).
    """
    def on_hits(query: str, hits: Sequence[Hit]) -> None:
        record_search(index, query, hits)

    return on_hits


def search_signals(index: MemoryIndex, hits: Sequence[Hit]) -> list[Signal]:
    """The recalls a search's ``hits`` give: those with source ``memory`` on dated diaries,
    within the policy's ``recall_top_k``, snippets carrying dreaming output skipped."""
    signals = []
    top = policy_for(index).recall_top_k
    for h in hits[:top] if top > 0 else hits:
        if h.source != "memory" or not is_short_term_path(h.path):
            continue
        snip = collapse(h.snippet)
        if not snip or is_contaminated(snip):
            continue
        signals.append(Signal(h.path, h.start_line, h.end_line, snip, float(h.score)))
    return signals


class BatchRecorder:
    """The ``on_hits`` hook of many searches in a row (``search --batch``), for one thread.

    Each search's recalls are recorded exactly as :func:`record_search` records them, in a
    transaction of their own (committed before the next search: a killed batch loses nothing
    already answered), but through one state-store connection opened on the first search with
    recalls and kept until :meth:`close`. Opening, migrating and closing a connection per search
    was most of a recorded search's cost: closing the last connection checkpoints the WAL and
    deletes it, so the next commit recreated it. Never raises (a failure is a warning).
    """

    def __init__(self, index: MemoryIndex) -> None:
        self.index = index
        self._st: StateStore | None = None

    def __call__(self, query: str, hits: Sequence[Hit], *, now: Now = None) -> int:
        signals = search_signals(self.index, hits) if query.strip() else []
        if not signals:
            return 0
        try:
            if self._st is None:
                self._st = state_of(self.index)
            n = record_into(self._st, signals, query=query.strip(), kind="recall", now=now)
            retain(self._st, policy_for(self.index))
            return n
        except (StateError, PromotionError, OSError) as e:
            warnings.warn(f"recall signals not recorded: {e}", RuntimeWarning, stacklevel=2)
            return 0

    def close(self) -> None:
        if self._st is not None:
            self._st.close()
            self._st = None

    def __enter__(self) -> BatchRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------- daily ingestion


def daily_snippets(text: str) -> list[Signal]:
    """Split a diary into the snippets daily ingestion records (§6.2 signal 2).

    Managed Light/REM blocks are blanked first (line numbers are kept). Consecutive lines of
    the same kind (list items or paragraph lines), at most four, make one snippet, joined with
    ``"; "`` (lists) or ``" "`` (paragraphs) and prefixed with the current heading
    (``"Heading: …"``) unless that heading is a generic date or time of day. Snippets shorter
    than 8 characters are dropped, longer than 280 are cut. ``path`` is left empty.
    """
    lines = text.split("\n")
    blank: set[int] = set()
    for a, b in fenced_ranges(lines):
        blank.update(range(a, b + 1))
    in_managed = False
    for i, line in enumerate(lines, 1):
        m = HEADING_RE.match(line)
        if m:
            in_managed = m.group(2).strip().lower() in _MANAGED_HEADINGS
        if in_managed:
            blank.add(i)
    out: list[Signal] = []
    heading = ""
    group: list[str] = []
    gkind = ""
    gstart = 0

    def flush(end: int) -> None:
        nonlocal group
        if group:
            body = ("; " if gkind == "list" else " ").join(group)
            snip = collapse(f"{heading}: {body}" if heading else body)
            if len(snip) >= DAILY_SNIPPET_MIN:
                out.append(Signal("", gstart, end, snip[:DAILY_SNIPPET_MAX], DAILY_SIGNAL_SCORE))
        group = []

    for i, line in enumerate(lines, 1):
        if i in blank or not line.strip():
            flush(i - 1)
            continue
        m = HEADING_RE.match(line)
        if m:
            flush(i - 1)
            title = m.group(2).strip()
            heading = "" if _GENERIC_HEADING.match(title) else title
            continue
        kind = "list" if LIST_RE.match(line) else "para"
        body = LIST_RE.sub("", line).strip() if kind == "list" else line.strip()
        if group and (kind != gkind or len(group) >= DAILY_GROUP_LINES):
            flush(i - 1)
        if not group:
            gkind, gstart = kind, i
        group.append(body)
    flush(len(lines))
    return out


@dataclass
class IngestReport:
    """What one daily-note ingestion did."""

    files: list[str] = field(default_factory=list)
    skipped_files: list[str] = field(default_factory=list)
    recorded: int = 0


def _recent_diaries(mem: Path, at: int, lookback_days: int) -> list[tuple[str, Path]]:
    """``memory/YYYY-MM-DD[-x].md`` whose day is within the lookback, newest first."""
    dated: list[tuple[str, Path]] = []
    for p in mem.iterdir():
        d = dated_name_date(p.name)  # None for an impossible date too (2026-02-30)
        if d is None or not p.is_file():
            continue
        day = d.isoformat()
        if day_within(day, at - lookback_days * DAY_MS) and day_start_ms(day) <= at:
            dated.append((day, p))
    dated.sort(key=lambda t: (t[0], t[1].name), reverse=True)
    return dated


def ingest_daily(index: MemoryIndex, *, now: Now = None, lookback_days: int = DAILY_LOOKBACK_DAYS,
                 limit: int = DEFAULT_LIMIT) -> IngestReport:
    """``ingestDailyMemorySignals``: record recent diary snippets as ``daily`` signals (§6.2).

    Files are ``memory/YYYY-MM-DD[-x].md`` whose day (counted until 23:59:59.999 UTC) is within
    ``lookback_days`` of now, newest first. A file unchanged (mtime, size) since it was ingested
    today is skipped. Caps: ``max(20, limit × 4)`` snippets in all and ``max(6, ⌈total/files⌉)``
    per file. Each snippet is a signal of score 0.62 for the query ``__dreaming_daily__:<day>``,
    counted at most once per day.
    """
    at = now_ms(now)
    report = IngestReport()
    mem = index.workspace / "memory"
    if not mem.is_dir():
        return report
    dated = _recent_diaries(mem, at, lookback_days)
    if not dated:
        return report
    total_cap = max(20, limit * 4)
    per_file = max(6, math.ceil(total_cap / len(dated)))
    budget = total_cap
    with state_of(index) as st:
        today = day_in(at, st.timezone())
        for day, p in dated:
            rel = f"memory/{p.name}"
            mtime, size = stat_signature(p.stat())
            state = st.daily_ingestion_state(rel)
            if state and state[:2] == (mtime, size) and state[2] == today:
                report.skipped_files.append(rel)
                continue
            if budget <= 0:
                break
            text = p.read_bytes().decode("utf-8", "replace")
            snips = daily_snippets(text)[: min(per_file, budget)]
            budget -= len(snips)
            report.files.append(rel)
            sigs = [replace(s, path=rel) for s in snips if not is_contaminated(s.snippet)]
            report.recorded += record_into(st, sigs, query=DAILY_QUERY_PREFIX + day,
                                           kind="daily", now=at)
            with st.transaction():
                st.daily_ingestion_set(rel, mtime, size, today)
        retain(st, policy_for(index))
    return report


# --------------------------------------------------------------------------- tool results


def _merge_distinct(items: list[str], item: str, cap: int) -> list[str]:
    """``mergeRecentDistinct`` / ``mergeQueryHashes``: keep order, append ``item`` if new, keep
    the last ``cap``."""
    out = list(dict.fromkeys(x for x in items if x))
    if item and item not in out:
        out.append(item)
    return out[-cap:]


def record_tool_results_into(st: StateStore, query: str, results: Sequence[dict[str, Any]], *,
                             now: Now = None) -> int:
    """Record one ``memory_search`` call's results exactly as the reference's tool records
    them when they happen (``recordShortTermRecalls``, spec §6.2); return how many were counted.

    ``results`` are the tool's results (``{path, startLine, endLine, score, snippet, source}``,
    citation removed). Only ``source == "memory"`` results on short-term paths count; empty or
    contaminated snippets are skipped. Per result, in order (a chunk returned twice counts
    twice): ``recallCount += 1``, ``totalScore += clamp01(score)``, ``maxScore = max``, the
    query hash appended if new (last 32 kept), the day appended if new (last 16), concept tags
    re-derived, ``firstRecalledAt`` kept, ``lastRecalledAt = now``. The key is
    ``memory:<path>:<start>:<end>`` of the result as it was returned then.
    """
    q = query.strip()
    if not q:
        return 0
    at = now_ms(now)
    day = day_in(at, st.timezone())  # the configured timezone's calendar day (§6.2)
    qh = query_hash(q)
    n = 0
    with st.transaction():
        for r in results:
            path = str(r.get("path", "")).replace("\\", "/").removeprefix("./")
            if r.get("source", "memory") != "memory" or not is_short_term_path(path):
                continue
            snip = collapse(str(r.get("snippet") or ""))
            if not snip or is_contaminated(snip, transcript_turns_ok=is_session_corpus_path(path)):
                continue
            start = max(1, int(r.get("startLine", 1)))
            end = max(1, int(r.get("endLine", start)))
            score = float(r.get("score") or 0.0)
            _count(st, Signal(path, start, end, snip, score), "recall", at, day, qh, q,
                   as_tool=True)
            n += 1
    return n


def record_tool_results(index: MemoryIndex, query: str, results: Sequence[dict[str, Any]], *,
                        now: Now = None) -> int:
    """:func:`record_tool_results_into` on ``index``'s workspace state store."""
    with state_of(index) as st:
        n = record_tool_results_into(st, query, results, now=now)
        retain(st, policy_for(index))
        return n


def set_timezone(index: MemoryIndex, name: str) -> None:
    """Make recall days calendar days in the IANA time zone ``name`` for ``index``'s workspace
    (the reference's ``dreaming.timezone``, else ``agents.defaults.userTimezone``; ``UTC``
    until set). Kept in the state store; days already recorded keep their bucket."""
    with state_of(index) as st, st.transaction():
        st.set_timezone(name)
