"""The promotion data model: constants, time and text helpers, recall entries and signals.

Everything else in :mod:`memory_core.promotion` builds on these; this module imports nothing
of the package, so it can never close an import cycle.
"""

from __future__ import annotations

import hashlib
import math
import re
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..base.dates import DATED_NAME_RE, DAY_MS, day_of, day_start_ms
from ..base.dates import now_ms as clock_ms

# --------------------------------------------------------------------------- constants

#: Deep-phase defaults (spec §6.4 table, first row): used by the CLI and by default here.
DEFAULT_MIN_SCORE = 0.80
DEFAULT_MIN_RECALL_COUNT = 3
DEFAULT_MIN_UNIQUE_QUERIES = 3
DEFAULT_MAX_AGE_DAYS = 30.0
DEFAULT_LIMIT = 10
HALF_LIFE_DAYS = 14.0

#: The six weights of §6.4 (they sum to 1). ``phaseBoost`` is added on top (always 0 here).
WEIGHTS: dict[str, float] = {
    "frequency": 0.24, "relevance": 0.30, "diversity": 0.15,
    "recency": 0.15, "consolidation": 0.10, "conceptual": 0.06,
}

MAX_QUERY_HASHES = 32
MAX_RECALL_DAYS = 16
MAX_CONCEPT_TAGS = 8
DAILY_SIGNAL_SCORE = 0.62
DAILY_LOOKBACK_DAYS = 2
DAILY_QUERY_PREFIX = "__dreaming_daily__:"

MEMORY_FILE = "MEMORY.md"
MEMORY_FILE_MAX_CHARS = 10_000
BUDGET_RESERVE_CHARS = 21
#: Promoted bullet text is capped like 2026.9 does (640 characters): a recall snippet is a
#: whole search chunk, and uncapped chunks would blow the budget on the first apply.
PROMOTED_TEXT_MAX_CHARS = 640
SECTION_TITLE = "Promoted From Short-Term Memory"
FRESH_HEADER = "# Long-Term Memory\n\n"

#: Where backups and the lock live (inside the workspace's hidden index folder, never indexed).
PROMOTIONS_DIR = Path(".memory") / "promotions"
LOCK_TIMEOUT_S = 10.0

#: Near-duplicate thresholds (heuristics, see docs/promotion.md).
DUP_COSINE = 0.90
DUP_JACCARD = 0.60
DUP_COVERAGE = 0.90

Now = datetime | int | float | None


class PromotionError(ValueError):
    """A promotion cannot proceed (lock held, file changed, nothing to undo); says why."""


def full_disk_note(path: Path) -> str:
    """`` (the disk holding path is full)`` when it is: SQLite reports a shared-memory file
    it could not grow as a mere "disk I/O error"."""
    try:
        free = shutil.disk_usage(path).free
    except OSError:
        return ""
    return f" (the disk holding {path} is full)" if free < 256 * 1024 else ""


# --------------------------------------------------------------------------- time and text


def now_ms(now: Now = None) -> int:
    """Epoch milliseconds of ``now`` (an aware datetime, epoch ms, or epoch s below 1e11).

    Wider than :func:`memory_core.base.dates.now_ms` on purpose: promotion's callers (CLI
    ``--now``, tests, demos) pass datetimes.
    """
    if now is None:
        return clock_ms()
    if isinstance(now, datetime):
        dt = now if now.tzinfo else now.replace(tzinfo=UTC)
        return int(dt.timestamp() * 1000)
    return int(now * 1000) if now < 1e11 else int(now)


def check_timezone(name: str) -> str:
    """``name`` if it is an IANA time zone (``Europe/Berlin``, ``UTC``); else PromotionError."""
    try:
        ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError):
        raise PromotionError(f"unknown time zone {name!r} (an IANA name such as "
                             "Europe/Berlin or UTC)") from None
    return name


def day_in(ms: int, timezone: str = "UTC") -> str:
    """The calendar day ``YYYY-MM-DD`` of epoch milliseconds ``ms`` in ``timezone``."""
    if timezone == "UTC":
        return day_of(ms)
    return datetime.fromtimestamp(ms / 1000, ZoneInfo(timezone)).strftime("%Y-%m-%d")


def day_within(day: str, cutoff: int) -> bool:
    """``isDayWithinLookback``: the day ``YYYY-MM-DD`` ends (23:59:59.999 UTC) at or after
    ``cutoff`` (epoch ms)."""
    return day_start_ms(day) + DAY_MS - 1 >= cutoff


def iso(ms: int | None) -> str | None:
    """ISO 8601 UTC time (``…Z``) of epoch milliseconds, or ``None``."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


_WS = re.compile(r"\s+")


def collapse(text: str) -> str:
    """Whitespace-collapsed, trimmed text: how snippets are stored and compared (§6.2)."""
    return _WS.sub(" ", text).strip()


def clamp01(x: float) -> float:
    """``x`` clamped to 0..1 (non-finite → 0)."""
    if not math.isfinite(x):
        return 0.0
    return min(1.0, max(0.0, x))


def query_hash(query: str) -> str:
    """``sha1(lower-cased trimmed query)[0:12]`` (§6.2, §12)."""
    return hashlib.sha1(query.strip().lower().encode("utf-8")).hexdigest()[:12]


def recall_key(path: str, start: int, end: int) -> str:
    """``memory:<path>:<start>:<end>`` (§6.2)."""
    return f"memory:{path}:{start}:{end}"


# --------------------------------------------------------------------------- short-term paths

#: ``YYYY-MM-DD[-slug].md`` without its anchors, to embed in the path rules below.
_DATED_NAME = DATED_NAME_RE.pattern.removeprefix("^").removesuffix("$")
_SHORT_TERM_RES = (
    re.compile(rf"^memory/(?:.+/)?{_DATED_NAME}$"),
    re.compile(r"^memory/\.dreams/session-corpus/\d{4}-\d{2}-\d{2}\.(?:md|txt)$"),
    re.compile(rf"^{_DATED_NAME}$"),
)


def is_short_term_path(path: str) -> bool:
    """``isShortTermMemoryPath``: dated diaries, never ``MEMORY.md`` or topic notes (§6.2)."""
    p = path.replace("\\", "/").removeprefix("./")
    if p.startswith("memory/dreaming/"):
        return False
    return any(r.match(p) for r in _SHORT_TERM_RES)


def is_session_corpus_path(path: str) -> bool:
    """``isShortTermSessionCorpusPath``: a day file of session ingestion's corpus, whose
    snippets are transcript turns by design (the turn filter does not apply to them)."""
    return bool(_SHORT_TERM_RES[1].match(path.replace("\\", "/").removeprefix("./")))


# The contamination filters of 2026.9 (``isContaminatedDreamingSnippet``,
# short-term-promotion-store.ts): dreaming output and raw transcript material must never be
# recorded, ranked or promoted.
_DREAM_PROMPT_RE = re.compile(r"\[[^\]]*dreaming-narrative[^\]]*]\s*(?:User|Assistant):\s*Write a "
                              r"dream diary entry from these memory fragments:?", re.I)
_RAW_SESSION_META_RE = re.compile(r"\bSession Key\b.{0,260}\bSession ID\b|"
                                  r"\bSession ID\b.{0,260}\bSession Key\b", re.I)
_CONVERSATION_SUMMARY_RE = re.compile(r"^(?:[-*+]\s*)?Conversation Summary:", re.I)
_TRANSCRIPT_TURN_RE = re.compile(r"^(?:[-*+]\s*)?(?:user|assistant):\s", re.I)
_MEMORY_FLUSH_RE = re.compile(r"Save important context from this session to the daily memory "
                              r"file\.\s*STRICT RULES:", re.I)
_SCORE_METADATA_RE = re.compile(r"\[\s*score=\d+(?:\.\d+)?\s+(?:signals=\d+\s+)?recalls=\d+\s+"
                                r"avg=\d+(?:\.\d+)?\s+source=memory/", re.I)
_DIFF_PREFIX_RE = re.compile(r"@@\s*-\d+(?:,\d+)?\s+[-*+]\s+", re.I)
# Beyond 2026.9 (issue #12; the reference users' "dreaming promotes junk", spec §10 item 8):
# managed dreaming fences and the cron sentinel, cron delivery reports, Markdown code fences and
# raw tool output (a JSON tool payload or a tool-call record).
_OURS = (
    ("dreaming fence", re.compile(r"<!--\s*openclaw:dreaming:")),
    ("cron sentinel", re.compile(r"__openclaw_memory_core_short_term_promotion_dream__")),
    ("cron delivery report", re.compile(
        r"^\s*(?:[-*+]\s*)?\[cron:[^\]]*\]|\bdelivery (?:status|report)\s*:|"
        r"\bcron delivery\b", re.I | re.M)),
    ("code fence", re.compile(r"```|~~~")),
    ("raw tool output", re.compile(
        r"\{\s*\"(?:results|toolCallId|toolName|tool_call_id|stdout|stderr|exitCode)\"\s*:|"
        r"\btoolCallId\b|\[tool(?:Call|Result)\b", re.I)),
)


def _dreaming_lead(snippet: str) -> bool:
    """``hasDreamingNarrativeLead``: after diff prefixes, brackets and list markers, the text
    starts with (or within 200 characters names) ``Candidate:``/``Reflection:``."""
    i = 0
    while i < len(snippet):
        m = _DIFF_PREFIX_RE.match(snippet, i)
        if m:
            i = m.end()
            continue
        c = snippet[i]
        if c in "[(":
            i += 1
            while i < len(snippet) and snippet[i] == " ":
                i += 1
            continue
        if c in "-*+>" and snippet[i + 1:i + 2] == " ":
            i += 2
            continue
        break
    rest = snippet[i:]
    if re.match(r"(?:Candidate|Reflections?):", rest, re.I):
        return True
    head = rest[:200]
    return bool(re.search(r"\b(?:Candidate|Reflections?):", head, re.I)
                or re.search(r"#{1,6}\s+Reflections?\b", head, re.I))


def contamination(snippet: str, *, transcript_turns_ok: bool = False,
                  ours: bool = True) -> str | None:
    """Why ``snippet`` must not feed promotion, or ``None``: 2026.9's filters (promotion
    marker or score metadata, the dream-diary prompt, raw session metadata, a conversation
    summary, a raw ``user:``/``assistant:`` turn unless ``transcript_turns_ok`` (the session
    corpus), the memory-flush prompt, a staged Light candidate or a REM reflection), then ours
    (dreaming fences, the cron sentinel, cron delivery reports, code fences, raw tool output)
    unless ``ours`` is false. Recording and ranking apply 2026.9's filters and the dreaming
    fences; the text written into ``MEMORY.md`` is checked against all of them."""
    s = collapse(snippet)
    if not s:
        return None
    if re.search(r"<!--\s*openclaw-memory-promotion:", s, re.I) or _SCORE_METADATA_RE.search(s):
        return "promotion marker"
    if _DREAM_PROMPT_RE.search(s):
        return "dream diary prompt"
    if _RAW_SESSION_META_RE.search(s):
        return "raw session metadata"
    if _CONVERSATION_SUMMARY_RE.search(s):
        return "conversation summary"
    if not transcript_turns_ok and _TRANSCRIPT_TURN_RE.search(s):
        return "raw transcript turn"
    if _MEMORY_FLUSH_RE.search(s):
        return "memory flush prompt"
    if _dreaming_lead(s) and re.search(r"\bconfidence:\s*\d", s, re.I) and re.search(
            r"\bevidence:\s*(?:memory/\.dreams/session-corpus/|memory/)", s, re.I) and (
            (re.search(r"\bstatus:\s*staged\b", s, re.I)
             and re.search(r"\brecalls:\s*\d+\b", s, re.I))
            or re.search(r"\bnote:\s*reflection\b", s, re.I)):
        return "staged dreaming output"
    for why, rx in _OURS if ours else _OURS[:2]:
        if rx.search(snippet):  # on the raw text: a fence or a report spans lines
            return why
    return None


def is_contaminated(snippet: str, *, transcript_turns_ok: bool = False) -> bool:
    """Dreaming output and raw transcript material must never feed promotion back: 2026.9's
    filters and the dreaming fences (see :func:`contamination`), as recording and ranking
    apply them."""
    return contamination(snippet, transcript_turns_ok=transcript_turns_ok,
                         ours=False) is not None


# --------------------------------------------------------------------------- recall entries


@dataclass
class RecallEntry:
    """One tracked short-term snippet (§6.2 fields; times in epoch ms)."""

    key: str
    path: str
    start_line: int
    end_line: int
    snippet: str
    source: str = "memory"
    recall_count: int = 0
    daily_count: int = 0
    grounded_count: int = 0
    total_score: float = 0.0
    max_score: float = 0.0
    first_recalled_at: int = 0
    last_recalled_at: int = 0
    query_hashes: list[str] = field(default_factory=list)
    recall_days: list[str] = field(default_factory=list)
    concept_tags: list[str] = field(default_factory=list)
    claim_hash: str | None = None
    promoted_at: int | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> RecallEntry:
        return cls(**row)

    def to_row(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @property
    def signals(self) -> int:
        return self.recall_count + self.daily_count + self.grounded_count

    @property
    def avg_score(self) -> float:
        """The mean score per signal, clamped to 0..1 (0 before any signal)."""
        return clamp01(self.total_score / self.signals) if self.signals > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The entry in the reference's JSON shape (camelCase, ISO times)."""
        return {
            "key": self.key, "path": self.path, "startLine": self.start_line,
            "endLine": self.end_line, "source": self.source, "snippet": self.snippet,
            "recallCount": self.recall_count, "dailyCount": self.daily_count,
            "groundedCount": self.grounded_count, "totalScore": self.total_score,
            "maxScore": self.max_score, "firstRecalledAt": iso(self.first_recalled_at),
            "lastRecalledAt": iso(self.last_recalled_at), "queryHashes": self.query_hashes,
            "recallDays": self.recall_days, "conceptTags": self.concept_tags,
            "claimHash": self.claim_hash, "promotedAt": iso(self.promoted_at),
        }


@dataclass(frozen=True)
class Signal:
    """One observation of a snippet: where it is, its text, and the score it came with."""

    path: str
    start_line: int
    end_line: int
    snippet: str
    score: float
