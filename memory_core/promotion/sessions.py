"""Session-transcript ingestion (spec §6.2 signal 3, the reference's
``ingestSessionTranscriptSignals``): the agent's conversation as a weak recall signal.

Light and REM run it when :class:`.phases.DreamingConfig` says so (``ingest_sessions``; the
reference ingests the transcripts of the agents its OpenClaw config binds to the workspace, and
none without such a config). Each transcript the index lists (source ``sessions``) is rendered
exactly as the index renders it (:func:`memory_core.write.sources.load`, ``buildSessionEntry``); its
lines not yet taken, at least 12 characters long and of a day within the lookback, are appended
to ``memory/.dreams/session-corpus/<day>.txt`` as ``[<agent>/<sessions path>#L<jsonl line>]
<snippet>`` and recorded as ``daily`` signals of score 0.58 for ``__dreaming_sessions__:<day>``
on that corpus line. Progress (mtime, size, content hash, line count, cursor per transcript;
seen-message hashes per session) is kept in the state store, where the reference keeps
``memory/.dreams/session-ingestion.json``.

The corpus is the engine's own state (like the state store), never the user's Markdown: it is
a ``.txt`` under a dot folder, so no sync indexes it. Entries fed only by it are *artifacts*
to the default's retention (:func:`.policy.is_artifact`): evicted before anything a search
returned, and never counted as recalls (openclaw#75842).
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..base.dates import DAY_MS
from ..base.fileio import atomic_write, stat_signature
from ..write.sources import SourceError, SourceFile, list_files, load
from .model import Now, Signal, collapse, day_in, day_within, is_contaminated, now_ms
from .policy import policy_for, retain
from .signals import record_into
from .state import StateStore, state_of

if TYPE_CHECKING:
    from pathlib import Path

    from ..index import MemoryIndex

SESSION_SIGNAL_SCORE = 0.58
SESSION_QUERY_PREFIX = "__dreaming_sessions__:"
CORPUS_DIR = "memory/.dreams/session-corpus"
MIN_SNIPPET_CHARS = 12
MAX_SNIPPET_CHARS = 280
#: the rendered corpus line: the ``[agent/path#Ln] `` prefix gets 64 characters beyond the snippet
MAX_LINE_CHARS = MAX_SNIPPET_CHARS + 64
MAX_PER_SWEEP = 240
MIN_PER_FILE = 12
MAX_PER_FILE = 80
MAX_SEEN_PER_SESSION = 4096
MAX_SEEN_SESSIONS = 2048
#: the agent a workspace's own transcripts belong to when no OpenClaw agent is configured
DEFAULT_AGENT = "main"

_SESSION_ID = re.compile(r"^(.*?)\.jsonl(?:\.(?:reset|deleted)\..+)?$")
#: the ``[<agent>/<sessions path>#L<n>] `` a corpus line opens with (:func:`_scan`)
_CORPUS_PREFIX = re.compile(r"^\[[^\]\s]+#L\d+\] ")


def corpus_text(line: str) -> str:
    """A corpus line without its ``[agent/path#Ln]`` prefix: the transcript's words, what a
    promoted bullet keeps (the prefix points into the engine's state, not at a memory)."""
    return _CORPUS_PREFIX.sub("", line, count=1)


@dataclass
class SessionIngestReport:
    """What one session-transcript ingestion did."""

    files: list[str] = field(default_factory=list)
    skipped_files: list[str] = field(default_factory=list)
    lines: int = 0
    recorded: int = 0


@dataclass
class _Taken:
    snippet: str
    rendered: str


def session_scope(agent: str, name: str) -> str:
    """``buildSessionScopeKey``: ``<agent>:<session id>`` (an archive shares its session's id)."""
    m = _SESSION_ID.match(name)
    return f"{agent}:{m.group(1) if m else name}"


def message_hash(scope: str, basis: str, snippet: str) -> str:
    """``hashSessionMessageId``: SHA-1 of the scope, the timestamp (or line) basis, the text."""
    return hashlib.sha1(f"{scope}\n{basis}\n{snippet}".encode()).hexdigest()


def _append_corpus(ws: Path, day: str, taken: list[_Taken]) -> tuple[str, int]:
    """Append the rendered lines to the day's corpus file (rewritten atomically); return its
    workspace-relative path and the line number of the first appended line."""
    rel = f"{CORPUS_DIR}/{day}.txt"
    p = ws / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    old = p.read_bytes().decode("utf-8", "replace").replace("\r\n", "\n") if p.exists() else ""
    n = 0 if not old else len(old.removesuffix("\n").split("\n"))
    if old and not old.endswith("\n"):
        old += "\n"
    atomic_write(p, (old + "".join(t.rendered + "\n" for t in taken)).encode("utf-8"))
    return rel, n + 1


def _transcripts(index: MemoryIndex) -> list[SourceFile]:
    if "sessions" not in index.config.sources.sources:
        return []
    files = [f for f in list_files(index.workspace, index.config).files if f.source == "sessions"]
    return sorted(files, key=lambda f: f.path)


#: a transcript's progress to store once its lines are recorded: the state key, (mtime, size,
#: content hash, line count, cursor), the session scope and its seen hashes (None: unchanged)
_Progress = tuple[str, tuple[int, int, str, int, int], str, list[str] | None]


def _scan(st: StateStore, f: SourceFile, agent: str, cap: int, cutoff: int, tz: str,
          out: dict[str, list[_Taken]], report: SessionIngestReport,
          progress: list[_Progress]) -> int:
    """Take ``f``'s new lines (at most ``cap``) into ``out`` by day and its new progress into
    ``progress``; return how many lines were taken."""
    key = f"{agent}:{f.path}"
    prev = st.session_ingestion_state(key)
    mtime, size = stat_signature(f.abs_path.stat())
    if prev and prev[:2] == (mtime, size) and prev[2] and 0 < prev[3] <= prev[4]:
        report.skipped_files.append(f.path)
        return 0
    try:
        doc = load(f)
    except (SourceError, OSError):
        return 0
    lines = doc.text.split("\n") if doc.text else []
    line_map = doc.line_map or []
    # our renderer keeps a timestamp per line only when every message had one
    stamps = doc.timestamps_ms if doc.timestamps_ms and len(doc.timestamps_ms) == len(lines) \
        else None
    same = prev is not None and prev[:4] == (mtime, size, doc.hash, len(lines))
    cursor = max(0, min(prev[4], len(lines))) if prev and same else 0
    scope = session_scope(agent, f.abs_path.name)
    seen_before = st.session_seen(scope)
    seen = set(seen_before)
    new: list[str] = []
    taken = 0
    last = cursor
    for i in range(cursor, len(lines)):
        if taken >= cap:
            break
        last = i + 1
        snippet = collapse(lines[i])[:MAX_SNIPPET_CHARS]
        if len(snippet) < MIN_SNIPPET_CHARS:
            continue
        jsonl_line = line_map[i] if i < len(line_map) else i + 1
        ts = stamps[i] if stamps else 0
        day = day_in(ts if ts > 0 else mtime, tz)
        if not day_within(day, cutoff):
            continue
        h = message_hash(scope, f"ts:{ts}" if ts > 0 else f"line:{jsonl_line}", snippet)
        if h in seen:
            continue
        rendered = f"[{agent}/{f.path}#L{jsonl_line}] {snippet}"[:MAX_LINE_CHARS]
        out.setdefault(day, []).append(_Taken(snippet, rendered))
        seen.add(h)
        new.append(h)
        taken += 1
    progress.append((key, (mtime, size, doc.hash, len(lines), max(last, cursor)), scope,
                     (seen_before + new)[-MAX_SEEN_PER_SESSION:] if new else None))
    report.files.append(f.path)
    return taken


def ingest_sessions(index: MemoryIndex, *, now: Now = None, lookback_days: int = 2
                    ) -> SessionIngestReport:
    """Ingest ``index``'s transcripts as ``daily`` signals on the session corpus (module
    docstring); return what was taken and recorded."""
    at = now_ms(now)
    report = SessionIngestReport()
    files = _transcripts(index)
    if not files:
        return report
    agent = index.config.sources.sessions_agent or DEFAULT_AGENT
    cutoff = at - max(0, lookback_days) * DAY_MS
    per_file = min(MAX_PER_FILE, max(MIN_PER_FILE, math.ceil(MAX_PER_SWEEP / len(files))))
    remaining = MAX_PER_SWEEP
    by_day: dict[str, list[_Taken]] = {}
    progress: list[_Progress] = []
    with state_of(index) as st:
        tz = st.timezone()
        for f in files:
            if remaining <= 0:
                break
            remaining -= _scan(st, f, agent, max(1, min(per_file, remaining)), cutoff, tz,
                               by_day, report, progress)
        for day in sorted(by_day):
            taken = by_day[day]
            rel, first = _append_corpus(index.workspace, day, taken)
            report.lines += len(taken)
            sigs = [Signal(rel, first + i, first + i, t.snippet, SESSION_SIGNAL_SCORE)
                    for i, t in enumerate(taken)
                    if not is_contaminated(t.snippet, transcript_turns_ok=True)]
            report.recorded += record_into(st, sigs, query=SESSION_QUERY_PREFIX + day,
                                           kind="daily", now=at)
        # only once the lines are in the corpus and recorded: a failure before leaves them new
        with st.transaction():
            for key, state, scope, seen in progress:
                st.session_ingestion_set(key, *state)
                if seen is not None:
                    st.session_seen_set(scope, seen, MAX_SEEN_SESSIONS)
        retain(st, policy_for(index))
    return report
