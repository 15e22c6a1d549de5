"""The Light and REM dreaming phases (spec §6.3): staging reports and phase signals.

Both phases read the recall entries of the workspace's state store, write a Markdown report
and record *phase hits* for the entries they picked; those hits feed ``phaseBoost`` in the deep
phase's score (:func:`.scoring.phase_boost`). Neither ever writes ``MEMORY.md``.

* **Light** (``runLightDreaming``): daily-note ingestion over its lookback, then the entries
  recalled within the lookback whose file still exists, newest first (then most recalled), cut
  to the limit and de-duplicated within a file by token Jaccard ≥ 0.9; each staged as
  ``- Candidate: <snippet>`` with ``confidence`` (average score), ``evidence``, ``recalls`` and
  ``status: staged``.
* **REM** (``runRemDreaming``): themes from the entries' concept tags (``strength =
  min(1, 2·count/entries)`` ≥ 0.75) and up to three "possible lasting truths" (a confidence
  of average score, recall strength, days and tags, ≥ 0.45, Jaccard de-duplicated at 0.88).

Where the report goes follows ``storage.mode`` (``dreaming-markdown.ts``): ``separate`` (the
default) writes ``memory/dreaming/<phase>/YYYY-MM-DD.md``; ``inline`` replaces the managed
block ``## Light Sleep`` / ``## REM Sleep`` between ``<!-- openclaw:dreaming:<phase>:start/end
-->`` in today's ``memory/YYYY-MM-DD.md``; ``both`` does both. These files are written only
when a phase is run (``memory-core dream``, :func:`run_light`, :func:`run_rem`), never by a
search or a sync. Their content is never promoted: ``memory/dreaming/`` is not a short-term
path, the fenced blocks are skipped by re-location and by daily ingestion, and staged lines
are contaminated snippets (:func:`.model.contamination`).

With ``ingest_sessions`` both phases also ingest the workspace's session transcripts after the
diaries (signal 3, :mod:`.sessions`). The dream diary (``DREAMS.md``) is :mod:`.diary`'s,
written from the phases' reports when asked.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..base.dates import DAY_MS, day_of
from ..base.fileio import atomic_write
from ..base.sets import jaccard
from .memory_file import edit_markdown
from .model import Now, RecallEntry, clamp01, day_within, is_short_term_path, now_ms
from .policy import policy_for
from .sessions import ingest_sessions
from .signals import ingest_daily
from .state import state_of

if TYPE_CHECKING:
    from ..index import MemoryIndex

StorageMode = Literal["separate", "inline", "both"]
Phase = Literal["light", "rem"]

HEADINGS = {"light": "## Light Sleep", "rem": "## REM Sleep"}
TITLES = {"light": "# Light Sleep", "rem": "# REM Sleep"}
_REM_TAG_BLACKLIST = {"assistant", "user", "system", "subagent", "the"}


@dataclass
class DreamingConfig:
    """The phases' settings, with the reference's defaults (``src/memory-host-sdk/dreaming.ts``)."""

    storage: StorageMode = "separate"
    light_lookback_days: int = 2
    light_limit: int = 100
    light_dedupe: float = 0.9
    rem_lookback_days: int = 7
    rem_limit: int = 10
    rem_min_pattern_strength: float = 0.75
    #: Signal 3: ingest the index's session transcripts (:mod:`.sessions`). The reference does
    #: for the agents its OpenClaw config binds to the workspace, so off without one (and in
    #: the recorded sweep golden); ``dream --openclaw-home`` and ``dream --sessions`` turn it on.
    ingest_sessions: bool = False

    @classmethod
    def from_openclaw(cls, dreaming: dict[str, Any]) -> DreamingConfig:
        """From ``plugins.entries.memory-core.config.dreaming`` (``storage.mode``,
        ``phases.light.{lookbackDays, limit, dedupeSimilarity}``, ``phases.rem.{lookbackDays,
        limit, minPatternStrength}``); unknown or ill-typed values keep the defaults."""
        c = cls()
        mode = (dreaming.get("storage") or {}).get("mode") if isinstance(
            dreaming.get("storage"), dict) else None
        if mode in ("separate", "inline", "both"):
            c.storage = mode
        phases = dreaming["phases"] if isinstance(dreaming.get("phases"), dict) else {}
        light = phases["light"] if isinstance(phases.get("light"), dict) else {}
        rem = phases["rem"] if isinstance(phases.get("rem"), dict) else {}
        for src, key, attr in ((light, "lookbackDays", "light_lookback_days"),
                               (light, "limit", "light_limit"),
                               (rem, "lookbackDays", "rem_lookback_days"),
                               (rem, "limit", "rem_limit")):
            v = src.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                setattr(c, attr, v)
        for src, key, attr in ((light, "dedupeSimilarity", "light_dedupe"),
                               (rem, "minPatternStrength", "rem_min_pattern_strength")):
            v = src.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1:
                setattr(c, attr, float(v))
        return c


@dataclass
class PhaseReport:
    """What one phase run did: the entries it considered, the keys it hit, its report."""

    phase: Phase
    day: str
    considered: int
    keys: list[str]
    body: list[str]
    written: list[str] = field(default_factory=list)
    ingested: int = 0
    sessions_ingested: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "day": self.day, "considered": self.considered,
                "keys": self.keys, "body": self.body, "written": self.written,
                "dailyIngested": self.ingested, "sessionsIngested": self.sessions_ingested}


# --------------------------------------------------------------------------- selection


def _tokens(text: str) -> set[str]:
    return {t for t in re.split(r"[^a-z0-9]+", text.lower()) if t}


def snippet_jaccard(a: str, b: str) -> float:
    """The phases' similarity: Jaccard of lower-cased ``[a-z0-9]`` tokens; two texts without
    tokens are 1 if equal (case-insensitively), else 0."""
    ta, tb = _tokens(a), _tokens(b)
    if not ta or not tb:
        return 1.0 if a.strip().lower() == b.strip().lower() else 0.0
    return jaccard(ta, tb)


def _within(e: RecallEntry, cutoff: int) -> bool:
    """``entryWithinLookback``: a recall day ending after the cutoff, or recalled after it."""
    for d in e.recall_days:
        try:
            if day_within(d, cutoff):
                return True
        except ValueError:
            continue
    return e.last_recalled_at >= cutoff


def _exists(ws: Path, path: str) -> bool:
    """``shortTermRecallSourceExists``: the path, or ``memory/<basename>``, is a file."""
    cands = [ws / path] + ([] if path.startswith("memory/") else [ws / "memory" / Path(path).name])
    return any(p.is_file() for p in cands)


def recent_entries(index: MemoryIndex, lookback_days: int, now: Now = None) -> list[RecallEntry]:
    """Short-term memory entries recalled within ``lookback_days`` whose file still exists,
    in the order they were first recorded."""
    at = now_ms(now)
    cutoff = at - max(0, lookback_days) * DAY_MS
    with state_of(index) as st:
        rows = st.recall_entries()
        first = st.recall_first_seen()
    # the order the entries were first recorded (the reference iterates its store that way)
    rows.sort(key=lambda r: first.get(r["key"], 1 << 62))
    out = []
    for row in rows:
        e = RecallEntry.from_row(row)
        if (e.source == "memory" and is_short_term_path(e.path) and _within(e, cutoff)
                and _exists(index.workspace, e.path)):
            out.append(e)
    return out


def dedupe(entries: list[RecallEntry], threshold: float) -> list[RecallEntry]:
    """``dedupeEntries``: an entry as similar as ``threshold`` to an earlier one of the same
    file is merged into it (max counts and scores, union of hashes, days and tags)."""
    kept: list[RecallEntry] = []
    for e in entries:
        dup = next((k for k in kept if k.path == e.path
                    and snippet_jaccard(k.snippet, e.snippet) >= threshold), None)
        if dup is None:
            kept.append(RecallEntry.from_row(e.to_row()))
            continue
        dup.recall_count = max(dup.recall_count, e.recall_count)
        dup.total_score = max(dup.total_score, e.total_score)
        dup.max_score = max(dup.max_score, e.max_score)
        dup.query_hashes = list(dict.fromkeys(dup.query_hashes + e.query_hashes))
        dup.recall_days = sorted(set(dup.recall_days) | set(e.recall_days))
        dup.concept_tags = list(dict.fromkeys(dup.concept_tags + e.concept_tags))
        dup.last_recalled_at = max(dup.last_recalled_at, e.last_recalled_at)
    return kept


def light_body(entries: list[RecallEntry]) -> list[str]:
    """``buildLightDreamingBody``: five lines per staged candidate."""
    if not entries:
        return ["- No notable updates."]
    lines: list[str] = []
    for e in entries:
        lines += [f"- Candidate: {e.snippet or '(no snippet captured)'}",
                  f"  - confidence: {e.avg_score:.2f}",
                  f"  - evidence: {e.path}:{e.start_line}-{e.end_line}",
                  f"  - recalls: {e.recall_count}",
                  "  - status: staged"]
    return lines


def truth_confidence(e: RecallEntry) -> float:
    """``calculateCandidateTruthConfidence``."""
    recall = min(1.0, math.log1p(e.recall_count) / math.log1p(6))
    days = min(1.0, len(e.recall_days) / 3)
    tags = min(1.0, len(e.concept_tags) / 6)
    return clamp01(e.avg_score * 0.45 + recall * 0.25 + days * 0.2 + tags * 0.1)


def rem_preview(entries: list[RecallEntry], limit: int, min_strength: float
                ) -> tuple[list[str], list[str]]:
    """``previewRemDreaming``: the report's lines and the keys of the chosen truths."""
    stats: dict[str, tuple[int, list[str]]] = {}
    for e in entries:
        for tag in e.concept_tags:
            if not tag or tag.lower() in _REM_TAG_BLACKLIST:
                continue
            count, ev = stats.get(tag, (0, []))
            where = f"{e.path}:{e.start_line}-{e.end_line}"
            stats[tag] = (count + 1, ev if where in ev else [*ev, where])
    ranked = sorted(((tag, min(1.0, c / max(1, len(entries)) * 2), c, ev)
                     for tag, (c, ev) in stats.items()),
                    key=lambda t: (-t[1], -t[2], t[0]))
    ranked = [t for t in ranked if t[1] >= min_strength][:limit]
    reflections: list[str] = []
    for tag, strength, count, ev in ranked:
        reflections += [f"- Theme: `{tag}` kept surfacing across {count} memories.",
                        f"  - confidence: {strength:.2f}",
                        f"  - evidence: {', '.join(ev[:3])}",
                        "  - note: reflection"]
    if not reflections:
        reflections = ["- No strong patterns surfaced."]
    pool = dedupe([e for e in entries if e.promoted_at is None], 0.88)
    truths = sorted(((e, truth_confidence(e)) for e in pool), key=lambda t: (-t[1], t[0].snippet))
    truths = [t for t in truths if t[1] >= 0.45][:max(1, min(3, limit))]
    body = ["### Reflections", *reflections, "", "### Possible Lasting Truths"]
    body += [f"- {e.snippet or '(no snippet captured)'} [confidence={c:.2f} "
             f"evidence={e.path}:{e.start_line}-{e.end_line}]" for e, c in truths] or [
        "- No strong candidate truths surfaced."]
    return body, list(dict.fromkeys(e.key for e, _ in truths))


# --------------------------------------------------------------------------- output


def replace_managed_block(original: str, heading: str, start: str, end: str, body: str) -> str:
    """``replaceManagedMarkdownBlock``: the first ``heading`` + fenced block replaced by the new
    one (later copies removed), or the block appended after a blank line."""
    block = f"{heading}\n{start}\n{body}\n{end}"
    rx = re.compile(re.escape(heading) + r"(?:[ \t]*(?:\r\n|\n|\r))+[ \t]*" + re.escape(start)
                    + r"[\s\S]*?" + re.escape(end))
    matches = list(rx.finditer(original))
    if matches:
        out, last = "", 0
        for i, m in enumerate(matches):
            between = original[last:m.start()]
            if i == 0:
                out += original[:m.start()] + block
            elif between.strip():
                out += between
            last = m.end()
        return out + original[last:]
    trimmed = original.rstrip()
    return f"{block}\n" if not trimmed else f"{trimmed}\n\n{block}\n"


def write_phase(workspace: Path, phase: Phase, body: list[str], day: str,
                storage: StorageMode) -> list[str]:
    """``writeDailyDreamingPhaseBlock``: the report where ``storage`` says; the written paths
    (workspace-relative)."""
    text = "\n".join(body) if body else "- No notable updates."
    written: list[str] = []
    if storage in ("inline", "both"):
        p = workspace / "memory" / f"{day}.md"
        p.parent.mkdir(parents=True, exist_ok=True)

        def edit(old: str) -> str:  # on the diary as it is at the write (the agent appends)
            new = replace_managed_block(
                old, HEADINGS[phase], f"<!-- openclaw:dreaming:{phase}:start -->",
                f"<!-- openclaw:dreaming:{phase}:end -->", text)
            return new if new.endswith("\n") else new + "\n"

        edit_markdown(p, edit)
        written.append(f"memory/{day}.md")
    if storage in ("separate", "both"):
        p = workspace / "memory" / "dreaming" / phase / f"{day}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(p, f"{TITLES[phase]}\n\n{text}\n".encode())
        written.append(f"memory/dreaming/{phase}/{day}.md")
    return written


def staged_by_light(index: MemoryIndex, entries: list[RecallEntry], cutoff: int
                    ) -> list[RecallEntry]:
    """The entries Light staged since ``cutoff`` (all of ``entries`` when it staged none):
    the default profile's REM reflects on what Light picked (openclaw#86249)."""
    with state_of(index) as st:
        phases = st.phase_signals()
    staged = [e for e in entries
              if (phases.get(e.key) or {}).get("last_light_at") is not None
              and phases[e.key]["last_light_at"] >= cutoff]
    return staged or entries


def _run_phase(index: MemoryIndex, phase: Phase, c: DreamingConfig, now: Now, ingest: bool
               ) -> PhaseReport:
    """One phase: ingest the recent diaries (and transcripts, when ``c`` says so), pick among
    the entries recalled within the phase's lookback (Light: the newest, deduplicated; REM:
    themes and truths, among what Light staged under the default's policy), write its report
    and record its hits."""
    at = now_ms(now)
    lookback, limit = ((c.light_lookback_days, c.light_limit) if phase == "light"
                       else (c.rem_lookback_days, c.rem_limit))
    ingested = ingest_daily(index, now=at, lookback_days=lookback,
                            limit=limit).recorded if ingest else 0
    sessions = ingest_sessions(index, now=at, lookback_days=lookback).recorded \
        if ingest and c.ingest_sessions else 0
    entries = recent_entries(index, lookback, at)
    if phase == "light":
        entries.sort(key=lambda e: (-e.last_recalled_at, -e.recall_count))
        picked = dedupe(entries[:limit], c.light_dedupe)[:limit]
        body, keys = light_body(picked), [e.key for e in picked]
    else:
        if policy_for(index).rem_reads_light:
            entries = staged_by_light(index, entries, at - max(0, lookback) * DAY_MS)
        body, keys = rem_preview(entries, limit, c.rem_min_pattern_strength)
    day = day_of(at)
    written = write_phase(index.workspace, phase, body, day, c.storage)
    with state_of(index) as st, st.transaction():
        st.phase_hit(keys, phase, at)
    return PhaseReport(phase, day, len(entries), keys, body, written, ingested, sessions)


def run_light(index: MemoryIndex, config: DreamingConfig | None = None, *,
              now: Now = None, ingest: bool = True) -> PhaseReport:
    """Run the Light phase (see the module docstring); writes its report, records hits."""
    return _run_phase(index, "light", config or DreamingConfig(), now, ingest)


def run_rem(index: MemoryIndex, config: DreamingConfig | None = None, *,
            now: Now = None, ingest: bool = True) -> PhaseReport:
    """Run the REM phase (see the module docstring); writes its report, records hits."""
    return _run_phase(index, "rem", config or DreamingConfig(), now, ingest)


def run_sweep(index: MemoryIndex, config: DreamingConfig | None = None, *,
              now: Now = None) -> list[PhaseReport]:
    """``runDreamingSweepPhases``: Light, then REM (a phase with limit 0 is skipped)."""
    c = config or DreamingConfig()
    out = []
    if c.light_limit > 0:
        out.append(run_light(index, c, now=now))
    if c.rem_limit > 0:
        out.append(run_rem(index, c, now=now))
    return out
