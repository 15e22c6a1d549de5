"""Planning a promotion (spec §6.5): the new ``MEMORY.md`` and its diff, nothing written.

Each candidate is checked and its snippet re-located in its diary; the kept ones become one
``## Promoted From Short-Term Memory (DATE)`` section, after dropping the oldest promoted
sections if the file would exceed its budget. :func:`~.apply.apply` writes exactly this plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.dates import day_of
from ..base.text import utf16_len
from ..write.chunking import CONTINUED
from .memory_file import (
    PromotedSection,
    Relocation,
    Written,
    bullet_text,
    compact_for_budget,
    decode_memory,
    fenced_ranges,
    memory_diff,
    memory_path,
    promotion_markers,
    read_memory_bytes,
    relocate,
    section_text,
    source_lines,
)
from .model import (
    BUDGET_RESERVE_CHARS,
    FRESH_HEADER,
    MEMORY_FILE,
    MEMORY_FILE_MAX_CHARS,
    SECTION_TITLE,
    Now,
    collapse,
    contamination,
    is_session_corpus_path,
    iso,
    now_ms,
)
from .policy import DreamingPolicy, memory_lines, policy_for
from .scoring import PromotionCandidate, list_candidates
from .sessions import corpus_text
from .state import state_of

if TYPE_CHECKING:
    from ..index import MemoryIndex


@dataclass
class PlannedEntry:
    """One candidate as it will be written: re-located range and the bullet text."""

    candidate: PromotionCandidate
    start_line: int
    end_line: int
    snippet: str  # the re-located text (stored back into the recall entry)
    bullet: str  # the line written to MEMORY.md
    quality: int

    @property
    def key(self) -> str:
        return self.candidate.key

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "path": self.candidate.path, "startLine": self.start_line,
                "endLine": self.end_line, "relocated": (self.start_line, self.end_line) != (
                    self.candidate.start_line, self.candidate.end_line) or self.quality != 3,
                "quality": self.quality, "bullet": self.bullet}


@dataclass
class ApplyPlan:
    """What :func:`apply` would write: the new ``MEMORY.md``, its diff, and what is skipped."""

    memory_path: Path
    old_bytes: bytes | None
    new_text: str
    diff: str
    entries: list[PlannedEntry]
    skipped: dict[str, str]
    reconciled: list[str]
    dropped_sections: list[str]
    day: str
    now_ms: int
    candidates: list[PromotionCandidate]
    budget: int = MEMORY_FILE_MAX_CHARS - BUDGET_RESERVE_CHARS
    section_start_line: int | None = None  # 1-based first line of the new section
    warnings: list[str] = field(default_factory=list)
    section: str = ""  # the text added (recorded in the history: compaction's proof)

    @property
    def changed(self) -> bool:
        return bool(self.entries)

    @property
    def over_budget(self) -> bool:
        """The new ``MEMORY.md`` would still exceed its budget after every droppable promoted
        section is gone (user text is never dropped): :attr:`warnings` says so."""
        return utf16_len(self.new_text) > self.budget

    def to_dict(self) -> dict[str, Any]:
        return {"memoryPath": str(self.memory_path), "day": self.day,
                "entries": [e.to_dict() for e in self.entries], "skipped": self.skipped,
                "reconciled": self.reconciled, "droppedSections": self.dropped_sections,
                "length": utf16_len(self.new_text), "budget": self.budget,
                "warnings": self.warnings, "diff": self.diff}


def _plan_entries(index: MemoryIndex, candidates: Sequence[PromotionCandidate],
                  markers: set[str]) -> tuple[list[PlannedEntry], dict[str, str], list[str]]:
    """Check each candidate in order; return the kept ones, the skipped (key → why) and the
    reconciled keys (marker in ``MEMORY.md`` but not marked promoted in the state store)."""
    skipped: dict[str, str] = {}
    reconciled: list[str] = []
    planned: list[PlannedEntry] = []
    recalled = _recalled_state(index, candidates)
    for c in candidates:
        if c.key in skipped or any(p.key == c.key for p in planned):
            continue
        row = recalled.rows.get(c.key)
        if row and row["promoted_at"] is not None:
            skipped[c.key] = f"already promoted ({iso(row['promoted_at'])})"
            continue
        if c.key in markers:
            skipped[c.key] = "already in MEMORY.md (marker present)"
            if row:
                reconciled.append(c.key)
            continue
        if not c.passed:
            skipped[c.key] = "did not pass the gates: " + "; ".join(c.reasons)
            continue
        entry = _plan_entry(index.workspace, c, row, recalled)
        if isinstance(entry, str):
            skipped[c.key] = entry
            continue
        planned.append(entry)
    return planned, skipped, reconciled


@dataclass(frozen=True)
class _Recalled:
    """What the state store and the index say about the candidates, read once per plan: each
    candidate's recall row, the superseded lines (``(path, line)`` → the citation of the line
    that superseded it) and the agent's queries that recalled each entry, under ``policy``."""

    rows: dict[str, dict[str, Any] | None]
    policy: DreamingPolicy
    stale: dict[tuple[str, int], str]
    queries: dict[str, list[str]]


def _recalled_state(index: MemoryIndex, candidates: Sequence[PromotionCandidate]) -> _Recalled:
    """Read the candidates' recall rows, the superseded lines and the recalling queries in one
    visit to the state store (the last two only where the policy writes clean lines)."""
    with state_of(index) as st:
        rows = {c.key: st.recall_entry(c.key) for c in candidates}
        policy = policy_for(index)
        # issue #34: a line a later line superseded is never promoted (the default's policy)
        stale = ({(r.old_path, r.old_line): r.new_citation for r in index.supersessions()}
                 if policy.clean_lines else {})
        # the agent's own queries that recalled each entry: the default writes the lines
        # they were after, not the whole search chunk
        queries = {c.key: [ev["query"] for ev in st.recall_events(c.key)
                           if ev["kind"] == "recall" and ev["query"]]
                   for c in candidates} if policy.clean_lines else {}
    return _Recalled(rows, policy, stale, queries)


def _plan_entry(ws: Path, c: PromotionCandidate, row: dict[str, Any] | None,
                recalled: _Recalled) -> PlannedEntry | str:
    """The entry to write for a candidate that passed the gates, or why it is skipped: its
    snippet must still be found in its source file, outside a dreaming block, with lines left
    that are memory (the default's policy) and nothing contaminated."""
    policy = recalled.policy
    src = source_lines(ws, c.path)
    if src is None:
        return f"source file {c.path} is gone"
    rel, lines = src
    snippet = row["snippet"] if row else c.snippet
    # the default's chunker opens a chunk that starts inside a line with "…", which is
    # in no diary line: re-located as it is, such a snippet is "no longer found"
    loc = relocate(lines, snippet.removeprefix(CONTINUED) if policy.clean_lines
                   else snippet, c.start_line, c.end_line)
    if loc is None:
        return (f"snippet no longer found in {rel} (edited or removed since it "
                f"was recalled at lines {c.start_line}-{c.end_line})")
    fence = next(((a, b) for a, b in fenced_ranges(lines)
                  if loc.start_line <= b and a <= loc.end_line), None)
    if fence:
        return f"lines {loc.start_line}-{loc.end_line} overlap a dreaming block"
    text = snippet if (loc.quality == 3 and loc.loose) else loc.text
    shown = text
    if policy.clean_lines:  # the default: only the lines that are memory (openclaw#67580)
        shown, why_not = _memory_text(c, loc, text, rel, lines, snippet, recalled)
        if why_not:
            return why_not
    # a corpus line is a transcript turn by design; the default writes it without the
    # prefix that kept it from looking like one
    why = contamination(shown, transcript_turns_ok=policy.clean_lines
                        and is_session_corpus_path(c.path))
    if why:  # 2026.9's filters and ours (code fences, cron reports, tool output)
        return f"contaminated ({why}): not written into {MEMORY_FILE}"
    bullet = f"- {bullet_text(shown)}" + (
        f" [score={c.score:.3f} recalls={c.recall_count} avg={c.avg_score:.3f} "
        f"source={rel}:{loc.start_line}-{loc.end_line}]" if policy.score_metadata else "")
    return PlannedEntry(c, loc.start_line, loc.end_line, text, bullet, loc.quality)


def _memory_text(c: PromotionCandidate, loc: Relocation, text: str, rel: str,
                 lines: Sequence[str], snippet: str, recalled: _Recalled) -> tuple[str, str]:
    """The default's clean lines (openclaw#67580): of the recalled range, only the lines that
    are memory and that the agent's queries were after, with superseded lines left out. Returns
    the text to write and ``""``, or ``""`` and why no line is left."""
    policy, stale = recalled.policy, recalled.stale
    a, b = loc.start_line, loc.end_line
    if (not loc.loose and c.start_line <= a and b <= c.end_line <= len(lines)
            and collapse(snippet).removeprefix("…").strip() in collapse(
                " ".join(lines[c.start_line - 1:c.end_line]))):
        # the stored snippet is the chunk's first 700 characters (and a chunk that
        # starts inside a line opens with "…"), so it re-locates to the chunk's head;
        # the line the agent searched for is anywhere in the chunk it recalled, which
        # is still there as it was (an edited range keeps the re-located window)
        a, b = c.start_line, c.end_line
    rng = [text] if loc.loose else lines[a - 1:b]
    gone = [stale[(rel, n)] for n in range(a, b + 1) if (rel, n) in stale]
    if gone and not loc.loose:
        rng = ["" if (rel, n) in stale else x for n, x in enumerate(rng, a)]
    if is_session_corpus_path(c.path):
        rng = [corpus_text(x) for x in rng]
    shown, why = memory_lines(rng, recalled.queries.get(c.key, ()), context=lines,
                              min_share=policy.min_match_share,
                              min_queries=policy.min_matching_queries)
    if not shown:
        return "", f"its lines are superseded (by {gone[0]})" if gone else why
    return collapse(shown), ""


def written_by_promotion(index: MemoryIndex) -> Written:
    """What promotion wrote into ``MEMORY.md`` and has not undone, from its history."""
    sections: set[str] = set()
    legacy: set[tuple[str, str]] = set()
    with state_of(index) as st:
        rows = st.promotion_sections()
    for applied_at, keys, section in rows:
        if section is not None:
            sections.add(section_text(section))
        else:
            legacy.update((day_of(applied_at), k) for k in keys)
    return Written(frozenset(sections), frozenset(legacy))


def preview_apply(index: MemoryIndex, candidates: Sequence[PromotionCandidate] | None = None,
                  *, now: Now = None) -> ApplyPlan:
    """Plan promoting ``candidates`` (default: those passing the default gates), writing nothing.

    Each candidate is checked, in order: it passed its gates; it is not already promoted (state
    store or marker; a marker without a store mark is *reconciled*); its diary still holds the
    snippet (re-located, §6.5) outside any dreaming fence. The kept ones become one
    ``## Promoted From Short-Term Memory (DATE)`` section, after dropping the oldest promoted
    sections if the file would exceed its budget. ``skipped`` maps each other key to why.
    """
    at = now_ms(now)
    if candidates is None:
        candidates = [c for c in list_candidates(index, now=at, check_duplicates_of="none")
                      if c.passed]
    ws = index.workspace
    old = read_memory_bytes(ws)
    old_text = decode_memory(old)
    planned, skipped, reconciled = _plan_entries(
        index, candidates, set(promotion_markers(old_text)))
    day = day_of(at)
    nl = "\r\n" if "\r\n" in old_text else "\n"  # a new section keeps the file's line ends
    budget = MEMORY_FILE_MAX_CHARS - BUDGET_RESERVE_CHARS
    new_text = old_text
    dropped: list[PromotedSection] = []
    section_start = None
    section = ""
    plan_warnings: list[str] = []
    if planned:
        body = ["", f"## {SECTION_TITLE} ({day})", ""]
        for p in planned:
            body += [f"<!-- openclaw-memory-promotion:{p.key} -->", p.bullet]
        body.append("")
        section = nl.join(body)
        if not old_text.strip():
            prefix = FRESH_HEADER.replace("\n", nl)
        else:
            kept, dropped = compact_for_budget(old_text, section, budget,
                                               written_by_promotion(index))
            prefix = kept if kept.endswith(("\n", "\r")) else kept + nl
        new_text = prefix + section
        section_start = prefix.count("\n") + 2  # the blank line, then the heading
        if utf16_len(new_text) > budget:
            plan_warnings.append(
                f"{MEMORY_FILE} will be {utf16_len(new_text)} characters, over its budget of "
                f"{budget}; no more promoted sections can be dropped (user text never is)")
    return ApplyPlan(memory_path(ws), old, new_text, memory_diff(old_text, new_text), planned,
                     skipped, reconciled, [f"{s.day} ({len(s.keys)} entries)" for s in dropped],
                     day, at, list(candidates), budget, section_start, plan_warnings, section)
