"""Promotion ("dreaming"): diary facts the agent keeps recalling → ``MEMORY.md`` (spec §6).

The flow, as in OpenClaw 2026.5.20:

1. **Signals** (§6.2). Every search made with ``index.record_recalls`` on records its hits on
   short-term files (dated diaries) as *recalls*: count, score, query hash, day. Daily-note
   ingestion (:func:`ingest_daily`) records each diary snippet of the last days as a weaker
   *daily* signal. Both land in the index database (tables of migration 4).
2. **Scoring** (§6.4). :func:`list_candidates` scores every entry with the six weighted
   components and gates it (minScore 0.80, minRecallCount 3, minUniqueQueries 3, maxAgeDays 30,
   limit 10); each candidate carries its breakdown and the reasons it was gated.
3. **Applying** (§6.5). :func:`preview_apply` re-locates each snippet in its diary, builds the
   ``## Promoted From Short-Term Memory (DATE)`` section with one marker per entry, compacts to
   the 10,000-character budget by dropping the oldest *promoted* sections, and shows the diff.
   :func:`apply` writes exactly that diff atomically, keeps a backup, and records what
   :func:`undo` needs to restore the previous bytes. This module is the only place the engine
   writes the user's Markdown.

Beyond the reference: a near-duplicate check of each candidate against ``MEMORY.md``
(:func:`check_duplicates`), a retrieval impact preview (:func:`impact_preview`) and a replay of a
query log over simulated days (:func:`replay`) so that a fresh workspace has signals to show.

Every function that reads the clock takes ``now`` (an aware ``datetime`` or epoch milliseconds)
so that tests and demos are deterministic. Days are UTC calendar days.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
import time
import unicodedata
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import numpy as np

from .query import STOP_WORDS, TOKEN_RE
from .store import DatabaseError, Store
from .text import cjk_bigrams, truncate_utf16, utf16_len

if TYPE_CHECKING:
    from .fusion import Hit
    from .index import MemoryIndex

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

DAY_MS = 86_400_000
#: Where backups and the lock live (inside the workspace's hidden index folder, never indexed).
PROMOTIONS_DIR = Path(".memory") / "promotions"
LOCK_STALE_S = 60.0
LOCK_TIMEOUT_S = 10.0

#: Near-duplicate thresholds (heuristics, see docs/promotion.md).
DUP_COSINE = 0.90
DUP_JACCARD = 0.60
DUP_COVERAGE = 0.90

Now = datetime | int | float | None


class PromotionError(ValueError):
    """A promotion cannot proceed (lock held, file changed, nothing to undo); says why."""


# --------------------------------------------------------------------------- time and text


def now_ms(now: Now = None) -> int:
    """Epoch milliseconds of ``now`` (an aware datetime, epoch ms, or epoch s below 1e11)."""
    if now is None:
        return int(time.time() * 1000)
    if isinstance(now, datetime):
        dt = now if now.tzinfo else now.replace(tzinfo=UTC)
        return int(dt.timestamp() * 1000)
    return int(now * 1000) if now < 1e11 else int(now)


def day_of(ms: int) -> str:
    """The UTC calendar day ``YYYY-MM-DD`` of an epoch-millisecond time."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def _day_start_ms(day: str) -> int:
    return int(datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp() * 1000)


_WS = re.compile(r"\s+")


def collapse(text: str) -> str:
    """Whitespace-collapsed, trimmed text: how snippets are stored and compared (§6.2)."""
    return _WS.sub(" ", text).strip()


def clamp01(x: float) -> float:
    if not math.isfinite(x):
        return 0.0
    return min(1.0, max(0.0, x))


def sha1_12(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def query_hash(query: str) -> str:
    """``sha1(lower-cased trimmed query)[0:12]`` (§6.2, §12)."""
    return sha1_12(query.strip().lower())


def claim_hash(snippet: str) -> str:
    return sha1_12(collapse(snippet).lower())


def recall_key(path: str, start: int, end: int) -> str:
    """``memory:<path>:<start>:<end>`` (§6.2)."""
    return f"memory:{path}:{start}:{end}"


# --------------------------------------------------------------------------- short-term paths

_DATED_NAME = r"\d{4}-\d{2}-\d{2}(?:-[^/]*)?\.md"
_SHORT_TERM_RES = (
    re.compile(rf"^memory/(?:.+/)?{_DATED_NAME}$"),
    re.compile(r"^memory/\.dreams/session-corpus/\d{4}-\d{2}-\d{2}\.(?:md|txt)$"),
    re.compile(rf"^{_DATED_NAME}$"),
)
_DAILY_FILE_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:-[^/]*)?\.md$")


def is_short_term_path(path: str) -> bool:
    """``isShortTermMemoryPath``: dated diaries, never ``MEMORY.md`` or topic notes (§6.2)."""
    p = path.replace("\\", "/").removeprefix("./")
    if p.startswith("memory/dreaming/"):
        return False
    return any(r.match(p) for r in _SHORT_TERM_RES)


_CONTAMINATION = (
    re.compile(r"<!--\s*openclaw-memory-promotion:"),
    re.compile(r"<!--\s*openclaw:dreaming:"),
    re.compile(r"__openclaw_memory_core_short_term_promotion_dream__"),
    re.compile(r"Candidate:.*\b(?:confidence|evidence)\b.*status:\s*staged", re.I | re.S),
)


def is_contaminated(snippet: str) -> bool:
    """Dreaming output (promotion markers, staged candidates) must never feed promotion back."""
    return any(r.search(snippet) for r in _CONTAMINATION)


# --------------------------------------------------------------------------- concept tags

#: Protected glossary terms, taken first (§6.4), with equivalents in a few languages.
GLOSSARY = (
    "backup", "embedding", "gateway", "router", "vlan", "qmd", "s3",
    "备份", "嵌入", "网关", "路由器", "sauvegarde", "passerelle", "routeur", "respaldo",
    "enrutador", "sicherung", "バックアップ", "ルーター",
)
_TAG_STOP = STOP_WORDS | frozenset(
    """not now new one two day days via per only more most still since until because rather
    almost always same other each every over under out off too very much many first last next
    yes done todo then than also just got get set use used using need needs make made still
    md ts js json txt yaml yml py html http https www com org net tmp log logs dev""".split()
) | frozenset("los las una por para con que del les des une pour avec der die das und mit".split())
_COMPOUND_RE = re.compile(r"[\w]+(?:[./-][\w]+)+")
_SCRIPT_RE = re.compile(
    r"[\u3040-\u30ff]+|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[\uac00-\ud7af]+|[^\W]+")
_KANA_RE = re.compile(r"^[\u3040-\u30ff]+$")
_HAN_RE = re.compile(r"^[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+$")
_NUMBER_RE = re.compile(r"^[\d.,:%+\-/]+$")
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}|^\d{1,2}:\d{2}")
_EDGE_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^`{|}~…“”‘’«»「」『』（）【】，。、；：！？"


def _tag_ok(tok: str) -> bool:
    if not tok or len(tok) > 32 or tok in _TAG_STOP:
        return False
    if _NUMBER_RE.match(tok) or _DATE_RE.search(tok):
        return False
    if _KANA_RE.match(tok):
        return len(tok) >= 3
    if _HAN_RE.match(tok):
        return len(tok) >= 2
    return not (tok.isascii() and len(tok) < 3)


_CJK_FUNCTION_CHARS = re.compile("[的了是在和与或也都就把被从到给对为着过吗呢吧啊这那个一不有]+")


def _segment_cjk(run: str) -> list[str]:
    """A crude word split for a Han/Hangul run: cut at function characters, keep pieces of two
    to four characters whole, and cut longer pieces into consecutive two-character words (most
    Chinese words have two)."""
    out: list[str] = []
    for piece in _CJK_FUNCTION_CHARS.split(run):
        if len(piece) <= 4:
            out.append(piece)
        else:
            out.extend(piece[i : i + 2] for i in range(0, len(piece) - 1, 2))
    return out


def derive_concept_tags(path: str, snippet: str, limit: int = MAX_CONCEPT_TAGS) -> list[str]:
    """``deriveConceptTags``, simplified: at most ``limit`` tags from the file name and snippet.

    Order as in the reference: glossary terms present, then compound tokens (``a.b``, ``a/b``,
    ``a-b``), then word segments. The reference segments words with ``Intl.Segmenter``; here a
    word is a run of one script
    (there is no dictionary segmenter in the standard library): Han runs are cut at function
    characters, and pieces longer than four characters into consecutive pairs.
    """
    text = unicodedata.normalize("NFKC", PurePosixPath(path).name + " " + snippet).lower()
    raw: list[str] = []
    for term in GLOSSARY:
        if term.isascii():
            if re.search(rf"(?<![\w]){re.escape(term)}(?![\w])", text):
                raw.append(term)
        elif term in text:
            raw.append(term)
    raw.extend(_COMPOUND_RE.findall(text))
    for tok in _SCRIPT_RE.findall(text):
        if _HAN_RE.match(tok):
            raw.extend(_segment_cjk(tok))
        else:
            raw.append(tok)
    out: list[str] = []
    for tok in raw:
        t = tok.strip(_EDGE_PUNCT).replace("_", "-")
        if _tag_ok(t) and t not in out:
            out.append(t)
            if len(out) >= limit:
                break
    return out


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


def _merge_recent(items: list[str], item: str, cap: int) -> list[str]:
    """Move ``item`` to the end (most recent) and keep the last ``cap`` items."""
    out = [x for x in items if x != item]
    out.append(item)
    return out[-cap:]


def _store(index: MemoryIndex) -> Store:
    return index.store


@contextmanager
def _transaction(index: MemoryIndex) -> Iterator[Store]:
    """The index's store inside ``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on error)."""
    with index._lock:  # the store connection is shared by the index's threads
        store = _store(index)
        store.begin()
        try:
            yield store
            store.commit()
        except BaseException:
            store.rollback()
            raise


def record_signals(index: MemoryIndex, signals: Sequence[Signal], *, query: str, kind: str,
                   now: Now = None, dedupe_per_day: bool = False) -> int:
    """Record ``signals`` as ``kind`` (``recall`` or ``daily``) for ``query``; return how many.

    Updates follow §6.2: the count of the kind += 1, ``totalScore += clamp01(score)``,
    ``maxScore = max``, the query hash and the day bucket merged (capped), concept tags
    re-derived, ``lastRecalledAt`` = now. With ``dedupe_per_day`` a key already signalled for the
    same query on the same day is not counted again (daily ingestion).
    """
    if kind not in ("recall", "daily", "grounded"):
        raise ValueError(f"unknown signal kind {kind!r}")
    at = now_ms(now)
    day = day_of(at)
    qh = query_hash(query)
    logged_query = query[:200]
    n = 0
    with _transaction(index) as store:
        seen: set[str] = set()
        for s in signals:
            key = recall_key(s.path, s.start_line, s.end_line)
            if key in seen:
                continue
            seen.add(key)
            if dedupe_per_day and store.recall_event_seen(key, qh, day):
                continue
            row = store.recall_entry(key)
            e = RecallEntry.from_row(row) if row else RecallEntry(
                key, s.path, s.start_line, s.end_line, s.snippet,
                first_recalled_at=at, last_recalled_at=at)
            if kind == "recall":
                e.recall_count += 1
            elif kind == "daily":
                e.daily_count += 1
            else:
                e.grounded_count += 1
            e.total_score += clamp01(s.score)
            e.max_score = max(e.max_score, s.score)
            e.snippet = s.snippet
            e.query_hashes = _merge_recent(e.query_hashes, qh, MAX_QUERY_HASHES)
            e.recall_days = sorted(set(e.recall_days) | {day})[-MAX_RECALL_DAYS:]
            e.concept_tags = derive_concept_tags(e.path, e.snippet)
            # min/max rather than "= now" so that a replay's simulated times stay consistent
            e.first_recalled_at = min(e.first_recalled_at, at)
            e.last_recalled_at = max(e.last_recalled_at, at)
            store.recall_put(e.to_row())
            store.recall_event_add(key, kind, qh, logged_query, day, clamp01(s.score), at)
            n += 1
    return n


def record_search(index: MemoryIndex, query: str, hits: Sequence[Hit], *,
                  now: Now = None) -> int:
    """Record a search's hits on short-term files as recalls (§6.2 signal 1); return how many.

    Called by :meth:`MemoryIndex.search` when ``index.record_recalls`` is on. Only hits with
    source ``memory`` on dated diaries count, and snippets carrying dreaming output are skipped.
    A database failure here never fails the search: it is reported as a warning.
    """
    if not query.strip():
        return 0
    signals = []
    for h in hits:
        if h.source != "memory" or not is_short_term_path(h.path):
            continue
        snip = collapse(h.snippet)
        if not snip or is_contaminated(snip):
            continue
        signals.append(Signal(h.path, h.start_line, h.end_line, snip, float(h.score)))
    if not signals:
        return 0
    try:
        return record_signals(index, signals, query=query.strip(), kind="recall", now=now)
    except DatabaseError as e:
        warnings.warn(f"recall signals not recorded: {e}", RuntimeWarning, stacklevel=2)
        return 0


# --------------------------------------------------------------------------- daily ingestion

_FENCE_START = re.compile(r"<!--\s*openclaw:dreaming:(\w+):start\s*-->")
_FENCE_END = re.compile(r"<!--\s*openclaw:dreaming:(\w+):end\s*-->")
_HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_LIST_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_GENERIC_HEADING = re.compile(
    r"^(?:\d{4}-\d{2}-\d{2}.*|\d{1,2}:\d{2}.*|(?:morning|afternoon|evening|night|today|"
    r"tonight|am|pm|上午|下午|晚上|早上|今天)\b.*)$", re.I)
_MANAGED_HEADINGS = ("light sleep", "rem sleep")
DAILY_SNIPPET_MIN = 8
DAILY_SNIPPET_MAX = 280
DAILY_GROUP_LINES = 4


def _fenced_ranges(lines: Sequence[str]) -> list[tuple[int, int]]:
    """1-based inclusive line ranges inside ``openclaw:dreaming:*:start/end`` fences."""
    out: list[tuple[int, int]] = []
    start: int | None = None
    for i, line in enumerate(lines, 1):
        if start is None and _FENCE_START.search(line):
            start = i
        elif start is not None and _FENCE_END.search(line):
            out.append((start, i))
            start = None
    if start is not None:
        out.append((start, len(lines)))
    return out


def daily_snippets(text: str) -> list[Signal]:
    """Split a diary into the snippets daily ingestion records (§6.2 signal 2).

    Managed Light/REM blocks are blanked first (line numbers are kept). Consecutive lines of
    the same kind (list items or paragraph lines), at most four, make one snippet, joined with
    ``"; "`` (lists) or ``" "`` (paragraphs) and prefixed with the current heading
    (``"Heading: …"``) unless that heading is a generic date or time of day. Snippets shorter
    than 8 characters are dropped, longer than 280 are cut. ``path`` is left empty.
    """
    lines = text.split("\n")
    blank = set()
    for a, b in _fenced_ranges(lines):
        blank.update(range(a, b + 1))
    in_managed = False
    for i, line in enumerate(lines, 1):
        m = _HEADING_RE.match(line)
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
        m = _HEADING_RE.match(line)
        if m:
            flush(i - 1)
            title = m.group(2).strip()
            heading = "" if _GENERIC_HEADING.match(title) else title
            continue
        kind = "list" if _LIST_RE.match(line) else "para"
        body = _LIST_RE.sub("", line).strip() if kind == "list" else line.strip()
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
    snippets: int = 0
    recorded: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


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
    today = day_of(at)
    report = IngestReport()
    mem = index.workspace / "memory"
    if not mem.is_dir():
        return report
    dated: list[tuple[str, Path]] = []
    for p in mem.iterdir():
        m = _DAILY_FILE_RE.match(p.name)
        if not m or not p.is_file():
            continue
        try:
            start = _day_start_ms(m.group(1))
        except ValueError:
            continue
        if start + DAY_MS - 1 >= at - lookback_days * DAY_MS and start <= at:
            dated.append((m.group(1), p))
    dated.sort(key=lambda t: (t[0], t[1].name), reverse=True)
    if not dated:
        return report
    total_cap = max(20, limit * 4)
    per_file = max(6, math.ceil(total_cap / len(dated)))
    budget = total_cap
    store = _store(index)
    for day, p in dated:
        rel = f"memory/{p.name}"
        st = p.stat()
        mtime = int(st.st_mtime * 1000)
        with index._lock:
            state = store.daily_ingestion_state(rel)
        if state and state[0] == mtime and state[1] == st.st_size and state[2] == today:
            report.skipped_files.append(rel)
            continue
        if budget <= 0:
            break
        text = p.read_bytes().decode("utf-8", "replace")
        snips = daily_snippets(text)[: min(per_file, budget)]
        budget -= len(snips)
        report.files.append(rel)
        report.snippets += len(snips)
        sigs = [replace(s, path=rel) for s in snips if not is_contaminated(s.snippet)]
        report.recorded += record_signals(index, sigs, query=DAILY_QUERY_PREFIX + day,
                                          kind="daily", now=at, dedupe_per_day=True)
        with _transaction(index) as tx:
            tx.daily_ingestion_set(rel, mtime, st.st_size, today)
    return report


# --------------------------------------------------------------------------- scoring


@dataclass
class Score:
    """A score and how it was made: raw components (0..1), weighted contributions, inputs."""

    score: float
    components: dict[str, float]
    raw: dict[str, float]
    signals: int
    avg_score: float
    context_diversity: int
    age_days: float


def _consolidation_days(days: Sequence[str]) -> float:
    if not days:
        return 0.0
    uniq = sorted(set(days))
    if len(uniq) == 1:
        return 0.2
    span = (_day_start_ms(uniq[-1]) - _day_start_ms(uniq[0])) / DAY_MS
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


def score_entry(e: RecallEntry, *, now: Now = None, half_life_days: float = HALF_LIFE_DAYS,
                weights: dict[str, float] | None = None) -> Score:
    """§6.4's formula for one entry (pure; gates are applied by :func:`list_candidates`).

    ``phaseBoost`` is 0: the Light/REM phases (§6.3) are not implemented, so no entry has
    light or REM hits.
    """
    w = normalize_weights(weights)
    signals = e.signals
    avg = clamp01(e.total_score / signals) if signals else 0.0
    frequency = clamp01(math.log(1 + signals) / math.log(11))
    context_div = max(len(e.query_hashes), len(e.recall_days))
    diversity = clamp01(context_div / 5)
    age = max(0.0, (now_ms(now) - e.last_recalled_at) / DAY_MS)
    recency = math.exp(-math.log(2) / max(half_life_days, 1e-9) * age)
    consolidation = max(_consolidation_days(e.recall_days), clamp01(e.grounded_count / 3))
    conceptual = clamp01(len(e.concept_tags) / 6)
    raw = {"frequency": frequency, "relevance": avg, "diversity": diversity, "recency": recency,
           "consolidation": consolidation, "conceptual": conceptual, "phaseBoost": 0.0}
    comps = {k: w[k] * raw[k] for k in WEIGHTS}
    comps["phaseBoost"] = 0.0
    score = clamp01(sum(comps.values()))
    return Score(score, comps, raw, signals, avg, context_div, age)


# --------------------------------------------------------------------------- candidates


@dataclass
class DuplicateInfo:
    """The closest thing ``MEMORY.md`` already says about a candidate.

    ``line``/``text``: the closest ``MEMORY.md`` item (by cosine when embeddings are available,
    else by Jaccard). ``jaccard``: token-set Jaccard with that item. ``cosine``: embedding cosine
    (``None`` without an embedding provider). ``coverage``: share of the candidate's tokens found
    anywhere in ``MEMORY.md``. ``likely``: any of the three over its threshold.
    """

    line: int | None
    text: str
    jaccard: float
    cosine: float | None
    coverage: float
    likely: bool

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "text": self.text, "jaccard": round(self.jaccard, 4),
                "cosine": None if self.cosine is None else round(self.cosine, 4),
                "coverage": round(self.coverage, 4), "likelyDuplicate": self.likely}


@dataclass
class Candidate:
    """A scored recall entry: the breakdown, whether it passed the gates, and why not.

    ``components`` are the weighted contributions (they sum to ``score``); ``raw`` the 0..1
    values before weighting. ``reasons`` lists every gate the entry failed (empty if passed).
    """

    key: str
    path: str
    start_line: int
    end_line: int
    snippet: str
    score: float
    components: dict[str, float]
    recall_count: int
    unique_queries: int
    passed: bool
    reasons: list[str]
    duplicate: DuplicateInfo | None = None
    raw: dict[str, float] = field(default_factory=dict)
    signals: int = 0
    daily_count: int = 0
    grounded_count: int = 0
    avg_score: float = 0.0
    max_score: float = 0.0
    context_diversity: int = 0
    recall_days: list[str] = field(default_factory=list)
    concept_tags: list[str] = field(default_factory=list)
    first_recalled_at: int = 0
    last_recalled_at: int = 0
    age_days: float = 0.0
    promoted_at: int | None = None
    rank: int = 0

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


def _candidate(e: RecallEntry, s: Score) -> Candidate:
    return Candidate(
        e.key, e.path, e.start_line, e.end_line, e.snippet, s.score, s.components,
        e.recall_count, len(e.query_hashes), True, [], None, s.raw, s.signals, e.daily_count,
        e.grounded_count, s.avg_score, e.max_score, s.context_diversity, list(e.recall_days),
        list(e.concept_tags), e.first_recalled_at, e.last_recalled_at, s.age_days,
        e.promoted_at)


def list_candidates(index: MemoryIndex, *, now: Now = None, min_score: float | None = None,
                    min_recall_count: int | None = None,
                    min_unique_queries: int | None = None,
                    max_age_days: float | None = None, limit: int | None = None,
                    include_promoted: bool = False, half_life_days: float = HALF_LIFE_DAYS,
                    weights: dict[str, float] | None = None,
                    check_duplicates_of: str = "passed") -> list[Candidate]:
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
    at = now_ms(now)
    markers = set(promotion_markers(_read_memory_text(index.workspace)))
    with index._lock:
        rows = _store(index).recall_entries(include_promoted=True)
    out: list[Candidate] = []
    for row in rows:
        e = RecallEntry.from_row(row)
        if e.source != "memory" or not is_short_term_path(e.path) or is_contaminated(e.snippet):
            continue
        promoted = e.promoted_at is not None or e.key in markers
        if promoted and not include_promoted:
            continue
        s = score_entry(e, now=at, half_life_days=half_life_days, weights=weights)
        c = _candidate(e, s)
        if e.promoted_at is not None:
            c.reasons.append(f"already promoted ({iso(e.promoted_at)})")
        elif e.key in markers:
            c.reasons.append("already in MEMORY.md (its marker is there)")
        if s.signals == 0:
            c.reasons.append("no signals")
        elif s.signals < mrc:
            c.reasons.append(f"signals {s.signals} < minRecallCount {mrc}")
        if s.context_diversity < muq:
            c.reasons.append(f"unique queries/days {s.context_diversity} < minUniqueQueries {muq}")
        if mad >= 0 and s.age_days > mad:
            c.reasons.append(f"last recalled {s.age_days:.1f} days ago > maxAgeDays {mad:g}")
        if s.score < ms:
            c.reasons.append(f"score {s.score:.3f} < minScore {ms:.2f}")
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


# --------------------------------------------------------------------------- near-duplicates

_PROMOTED_META_RE = re.compile(
    r"\s*\[score=\d+(?:\.\d+)? recalls=\d+ avg=\d+(?:\.\d+)? source=[^\]]*\]\s*$")
_MARKER_RE = re.compile(r"<!--\s*openclaw-memory-promotion:(.+?)\s*-->")
_unit_cache: dict[tuple[str, str], np.ndarray] = {}


def _sim_tokens(text: str) -> set[str]:
    toks = {t.lower() for t in TOKEN_RE.findall(cjk_bigrams(text))}
    return {t for t in toks if t not in STOP_WORDS and not t.isdigit()}


def memory_units(text: str) -> list[tuple[int, str]]:
    """``MEMORY.md`` split into items ``(line, text)``: bullets and paragraphs, without markup.

    Headings and promotion markers are not items; an indented continuation line joins the item
    above it; the ``[score=…]`` metadata of promoted bullets is removed.
    """
    units: list[tuple[int, str]] = []
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or _HEADING_RE.match(line) or _MARKER_RE.search(s):
            continue
        if units and line[:1] in (" ", "\t") and not _LIST_RE.match(line):
            units[-1] = (units[-1][0], units[-1][1] + " " + s)
            continue
        body = _PROMOTED_META_RE.sub("", _LIST_RE.sub("", line)).strip()
        if body:
            units.append((i, body))
    return units


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def check_duplicates(index: MemoryIndex, snippets: Sequence[str]) -> list[DuplicateInfo | None]:
    """How close each snippet is to what ``MEMORY.md`` already says (beyond the reference).

    Lexical: Jaccard of token sets (CJK as bigrams, stop words out) with each ``MEMORY.md``
    item, and the share of the snippet's tokens present anywhere in the file. Semantic: cosine
    of embeddings through the index's provider, when it has one (a failure leaves it ``None``).
    ``None`` for a snippet when ``MEMORY.md`` is empty or missing.
    """
    if not snippets:
        return []
    text = _read_memory_text(index.workspace)
    units = memory_units(text)
    if not units:
        return [None] * len(snippets)
    unit_toks = [_sim_tokens(t) for _, t in units]
    all_toks: set[str] = set().union(*unit_toks)
    cos: np.ndarray | None = None
    try:
        provider = index.choice.provider
        if provider is not None:
            ukey = (index.choice.id + ":" + index.choice.model,
                    hashlib.sha256(text.encode()).hexdigest())
            umat = _unit_cache.get(ukey)
            if umat is None:
                umat = _normalize(np.asarray(provider.embed_documents([t for _, t in units])))
                _unit_cache.clear()  # one MEMORY.md at a time is enough
                _unit_cache[ukey] = umat
            smat = _normalize(np.asarray(provider.embed_documents(list(snippets))))
            cos = smat @ umat.T
    except Exception as e:  # any provider failure: lexical only, and say so once
        warnings.warn(f"near-duplicate check without embeddings: {e}", RuntimeWarning,
                      stacklevel=2)
        cos = None
    out: list[DuplicateInfo | None] = []
    for si, snip in enumerate(snippets):
        toks = _sim_tokens(snip)
        jac = [_jaccard(toks, u) for u in unit_toks]
        if cos is not None:
            best = int(np.argmax(cos[si]))
            best_cos: float | None = float(cos[si][best])
        else:
            best = int(np.argmax(jac))
            best_cos = None
        coverage = len(toks & all_toks) / len(toks) if toks else 0.0
        likely = (best_cos is not None and best_cos >= DUP_COSINE) or max(jac) >= DUP_JACCARD \
            or coverage >= DUP_COVERAGE
        line, utext = units[best]
        out.append(DuplicateInfo(line, utext, max(jac), best_cos, coverage, likely))
    return out


def _normalize(m: np.ndarray) -> np.ndarray:
    m = np.atleast_2d(m.astype(np.float32))
    n = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(n == 0, 1.0, n)


# --------------------------------------------------------------------------- relocation


@dataclass
class Relocation:
    """Where a snippet is now: its 1-based line range, the window text, and match quality.

    ``quality``: 3 exact, 2 the window contains the snippet, 1 the snippet contains the window
    (spec §6.5). ``loose`` is True when it matched only after undoing daily-ingestion rendering
    (heading prefix, ``"; "`` joins, list markers).
    """

    start_line: int
    end_line: int
    text: str
    quality: int
    loose: bool = False

    @property
    def moved(self) -> bool:
        return self.quality != 3


#: A window the snippet merely contains must cover this share of the snippet: otherwise any
#: short line that survives an edit (a heading, "- ok") would "match".
MIN_CONTAINED_SHARE = 0.4


def _loose_line(line: str) -> str:
    if _HEADING_RE.match(line):
        return ""
    return _LIST_RE.sub("", line)


def relocate(lines: Sequence[str], snippet: str, start: int, end: int) -> Relocation | None:
    """``relocateCandidateRange``: find ``snippet`` in ``lines`` near ``start..end`` (§6.5).

    Exact at the stored range first; otherwise every window of 1…max(span+3, 8) lines is tried,
    preferring the better match quality, then the smallest start distance, then the span
    closest to the original. If nothing matches, a second, loose pass compares without the
    heading prefix and list joins that daily ingestion adds (the reference cannot, issue
    #77707). ``None`` when the snippet is gone.
    """
    target = collapse(snippet)
    if not target:
        return None
    n = len(lines)
    span = max(1, end - start + 1)
    if 1 <= start <= end <= n and collapse(" ".join(lines[start - 1 : end])) == target:
        return Relocation(start, end, target, 3)
    found = _window_search(list(lines), target, start, span)
    if found:
        return found
    loose_target = collapse(target.replace("; ", " "))
    m = re.match(r"^([^:]{1,120}):\s+(.*)$", loose_target)
    headings = {collapse(h.group(2)) for h in map(_HEADING_RE.match, lines) if h}
    if m and collapse(m.group(1)) in headings:
        loose_target = m.group(2)
    found = _window_search([_loose_line(x) for x in lines], loose_target, start, span)
    if found:
        s, e = found.start_line, found.end_line
        return Relocation(s, e, collapse(" ".join(lines[s - 1 : e])), found.quality, True)
    return None


def _window_search(lines: list[str], target: str, start: int, span: int) -> Relocation | None:
    n = len(lines)
    max_w = max(span + 3, 8)
    best: tuple[tuple[int, int, int], Relocation] | None = None
    for s in range(n):
        if not lines[s].strip():
            continue  # a window starting on a blank line equals the one starting after it
        parts: list[str] = []
        for w in range(1, max_w + 1):
            if s + w > n:
                break
            parts.append(lines[s + w - 1])
            text = collapse(" ".join(parts))
            if not text:
                continue
            if text == target:
                q = 3
            elif target in text:
                q = 2
            elif text in target and len(text) >= MIN_CONTAINED_SHARE * len(target):
                q = 1
            else:
                continue
            rank = (-q, abs((s + 1) - start), abs(w - span))
            if best is None or rank < best[0]:
                best = (rank, Relocation(s + 1, s + w, text, q))
    return best[1] if best else None


# --------------------------------------------------------------------------- MEMORY.md editing


def _memory_path(workspace: Path) -> Path:
    return workspace / MEMORY_FILE


def _read_memory_bytes(workspace: Path) -> bytes | None:
    try:
        return _memory_path(workspace).read_bytes()
    except FileNotFoundError:
        return None


def _read_memory_text(workspace: Path) -> str:
    data = _read_memory_bytes(workspace)
    return "" if data is None else data.decode("utf-8", "replace")


def promotion_markers(text: str) -> list[str]:
    """Keys of every ``<!-- openclaw-memory-promotion:<key> -->`` marker in ``text``."""
    return [m.group(1) for m in _MARKER_RE.finditer(text)]


_SECTION_RE = re.compile(
    rf"^## {re.escape(SECTION_TITLE)} \((\d{{4}}-\d{{2}}-\d{{2}})\)\s*$")
_PROMOTED_BULLET_RE = re.compile(r"^- .*" + _PROMOTED_META_RE.pattern.removeprefix(r"\s*"))
_TOP_HEADING_RE = re.compile(r"^#{1,2}\s")


@dataclass(frozen=True)
class PromotedSection:
    """A ``## Promoted From Short-Term Memory (DATE)`` block: lines ``[start, end)``, 0-based."""

    day: str
    start: int
    end: int
    keys: tuple[str, ...]


def promoted_sections(text: str) -> list[PromotedSection]:
    """The promoted sections that may be dropped to fit the budget.

    A section runs from its heading to the next level-1/2 heading or the end of the file. Only
    sections made entirely of what promotion writes (blank lines, markers, promoted bullets)
    count: a section the user has edited is user text and is never dropped. A blank line right
    before the heading belongs to the section (promotion wrote it).
    """
    lines = text.splitlines(keepends=True)
    out: list[PromotedSection] = []
    i = 0
    while i < len(lines):
        m = _SECTION_RE.match(lines[i].rstrip("\r\n"))
        if not m:
            i += 1
            continue
        j = i + 1
        ok = True
        keys: list[str] = []
        while j < len(lines) and not _TOP_HEADING_RE.match(lines[j]):
            s = lines[j].rstrip("\r\n")
            mk = _MARKER_RE.fullmatch(s.strip())
            if mk:
                keys.append(mk.group(1))
            elif s.strip() and not _PROMOTED_BULLET_RE.match(s):
                ok = False
            j += 1
        if ok:
            start = i - 1 if i > 0 and not lines[i - 1].strip() else i
            if out and start < out[-1].end:
                start = i
            out.append(PromotedSection(m.group(1), start, j, tuple(keys)))
        i = j
    return out


def compact_for_budget(existing: str, addition: str, budget: int
                       ) -> tuple[str, list[PromotedSection]]:
    """``compactMemoryForBudget``: drop the oldest promoted sections while over ``budget``.

    Lengths are UTF-16 units, as the reference measures. User text is never dropped; if the
    result still does not fit, it is returned anyway (the caller writes it and warns).
    """
    dropped: list[PromotedSection] = []
    text = existing
    while utf16_len(text) + utf16_len(addition) > budget:
        secs = promoted_sections(text)
        if not secs:
            break
        oldest = min(secs, key=lambda s: (s.day, s.start))
        lines = text.splitlines(keepends=True)
        text = "".join(lines[: oldest.start] + lines[oldest.end :])
        dropped.append(oldest)
    return text, dropped


def _bullet_text(text: str) -> str:
    """The promoted bullet's text: capped, and never starting as a Markdown heading."""
    t = collapse(text).lstrip("#").lstrip() if text.lstrip().startswith("#") else collapse(text)
    if utf16_len(t) > PROMOTED_TEXT_MAX_CHARS:
        cut = truncate_utf16(t, PROMOTED_TEXT_MAX_CHARS - 1)
        sp = cut.rfind(" ")
        t = (cut[:sp] if sp > PROMOTED_TEXT_MAX_CHARS // 2 else cut).rstrip() + "…"
    return t


@dataclass
class PlannedEntry:
    """One candidate as it will be written: re-located range and the bullet text."""

    candidate: Candidate
    start_line: int
    end_line: int
    snippet: str  # the re-located text (stored back into the recall entry)
    bullet: str  # the line written to MEMORY.md
    quality: int
    loose: bool = False

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
    candidates: list[Candidate]
    budget: int = MEMORY_FILE_MAX_CHARS - BUDGET_RESERVE_CHARS
    section_start_line: int | None = None  # 1-based first line of the new section
    warnings: list[str] = field(default_factory=list)

    @property
    def old_sha256(self) -> str | None:
        return None if self.old_bytes is None else hashlib.sha256(self.old_bytes).hexdigest()

    @property
    def changed(self) -> bool:
        return bool(self.entries)

    def to_dict(self) -> dict[str, Any]:
        return {"memoryPath": str(self.memory_path), "day": self.day,
                "entries": [e.to_dict() for e in self.entries], "skipped": self.skipped,
                "reconciled": self.reconciled, "droppedSections": self.dropped_sections,
                "length": utf16_len(self.new_text), "budget": self.budget,
                "warnings": self.warnings, "diff": self.diff}


def _source_lines(workspace: Path, path: str) -> tuple[str, list[str]] | None:
    """Re-read a candidate's diary: ``path``, then ``memory/<basename>`` (§6.5)."""
    for rel in (path, f"memory/{PurePosixPath(path).name}"):
        p = workspace / rel
        try:
            data = p.read_bytes()
        except OSError:
            continue
        return rel, data.decode("utf-8", "replace").split("\n")
    return None


def _newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def preview_apply(index: MemoryIndex, candidates: Sequence[Candidate] | None = None, *,
                  now: Now = None) -> ApplyPlan:
    """Plan promoting ``candidates`` (default: those passing the default gates), writing nothing.

    Each candidate is checked, in order: it passed its gates; it is not already promoted (store
    or marker; a marker without a store mark is *reconciled*); its diary still holds the
    snippet (re-located, §6.5) outside any dreaming fence. The kept ones become one
    ``## Promoted From Short-Term Memory (DATE)`` section, after dropping the oldest promoted
    sections if the file would exceed its budget. ``skipped`` maps each other key to why.
    """
    at = now_ms(now)
    if candidates is None:
        candidates = [c for c in list_candidates(index, now=at, check_duplicates_of="none")
                      if c.passed]
    ws = index.workspace
    old = _read_memory_bytes(ws)
    try:
        old_text = "" if old is None else old.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PromotionError(f"{MEMORY_FILE} is not valid UTF-8 (byte {e.start}); refusing to "
                             "rewrite it") from e
    markers = set(promotion_markers(old_text))
    skipped: dict[str, str] = {}
    reconciled: list[str] = []
    planned: list[PlannedEntry] = []
    with index._lock:
        store = _store(index)
        rows = {c.key: store.recall_entry(c.key) for c in candidates}
    for c in candidates:
        if c.key in skipped or any(p.key == c.key for p in planned):
            continue
        row = rows.get(c.key)
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
        src = _source_lines(ws, c.path)
        if src is None:
            skipped[c.key] = f"source file {c.path} is gone"
            continue
        rel, lines = src
        snippet = row["snippet"] if row else c.snippet
        loc = relocate(lines, snippet, c.start_line, c.end_line)
        if loc is None:
            skipped[c.key] = (f"snippet no longer found in {rel} (edited or removed since it "
                              f"was recalled at lines {c.start_line}-{c.end_line})")
            continue
        fence = next(((a, b) for a, b in _fenced_ranges(lines)
                      if loc.start_line <= b and a <= loc.end_line), None)
        if fence:
            skipped[c.key] = f"lines {loc.start_line}-{loc.end_line} overlap a dreaming block"
            continue
        text = snippet if (loc.quality == 3 and loc.loose) else loc.text
        bullet = (f"- {_bullet_text(text)} [score={c.score:.3f} recalls={c.recall_count} "
                  f"avg={c.avg_score:.3f} source={rel}:{loc.start_line}-{loc.end_line}]")
        planned.append(PlannedEntry(c, loc.start_line, loc.end_line, text, bullet,
                                    loc.quality, loc.loose))
    day = day_of(at)
    nl = _newline_of(old_text)
    budget = MEMORY_FILE_MAX_CHARS - BUDGET_RESERVE_CHARS
    new_text = old_text
    dropped: list[PromotedSection] = []
    section_start = None
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
            kept, dropped = compact_for_budget(old_text, section, budget)
            prefix = kept if kept.endswith(("\n", "\r")) else kept + nl
        new_text = prefix + section
        section_start = prefix.count("\n") + 2  # the blank line, then the heading
        if utf16_len(new_text) > budget:
            plan_warnings.append(
                f"{MEMORY_FILE} will be {utf16_len(new_text)} characters, over its budget of "
                f"{budget}; no more promoted sections can be dropped (user text never is)")
    diff = "".join(difflib.unified_diff(
        old_text.splitlines(keepends=True), new_text.splitlines(keepends=True),
        f"a/{MEMORY_FILE}", f"b/{MEMORY_FILE}"))
    return ApplyPlan(_memory_path(ws), old, new_text, diff, planned, skipped, reconciled,
                     [f"{s.day} ({len(s.keys)} entries)" for s in dropped], day, at,
                     list(candidates), budget, section_start, plan_warnings)


# --------------------------------------------------------------------------- atomic write, lock


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return  # not supported everywhere (Windows)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder, fsync, ``os.replace``.

    A crash leaves either the old file or the new one, never a mix. The file's mode is kept.
    """
    mode = None
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(path.parent)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def promotion_lock(workspace: Path, timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """The promotion lock (§6.2): a ``pid:timestamp`` file created exclusively.

    It is stale after 60 s if its owner process is gone; waits retry every 40 ms and give up
    after ``timeout_s`` with :class:`PromotionError`.
    """
    d = workspace / PROMOTIONS_DIR
    d.mkdir(parents=True, exist_ok=True)
    lock = d / "promotion.lock"
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                pid_s, ts_s = lock.read_text().strip().split(":", 1)
                stale = (time.time() * 1000 - int(ts_s) > LOCK_STALE_S * 1000
                         and not _pid_alive(int(pid_s)))
            except (OSError, ValueError):
                stale = False
            if stale:
                try:
                    lock.unlink()
                except FileNotFoundError:
                    pass
                continue
            if time.monotonic() > deadline:
                raise PromotionError(f"another promotion holds {lock}; try again later") from None
            time.sleep(0.04)
            continue
        with os.fdopen(fd, "w") as f:
            f.write(f"{os.getpid()}:{int(time.time() * 1000)}")
        break
    try:
        yield
    finally:
        try:
            lock.unlink()
        except FileNotFoundError:
            pass


# --------------------------------------------------------------------------- apply and undo


@dataclass
class ApplyResult:
    """What :func:`apply` did. ``wrote`` is False when there was nothing new to promote."""

    wrote: bool
    applied: list[str]
    skipped: dict[str, str]
    reconciled: list[str]
    dropped_sections: list[str]
    memory_path: Path
    backup_path: Path | None
    history_id: int | None
    diff: str
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"wrote": self.wrote, "applied": self.applied, "skipped": self.skipped,
                "reconciled": self.reconciled, "droppedSections": self.dropped_sections,
                "memoryPath": str(self.memory_path),
                "backupPath": str(self.backup_path) if self.backup_path else None,
                "historyId": self.history_id, "warnings": self.warnings, "diff": self.diff}


def _stamp(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y%m%dT%H%M%S%fZ")


def _backup(workspace: Path, data: bytes, at: int, suffix: str = "MEMORY.md") -> Path:
    d = workspace / PROMOTIONS_DIR
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{_stamp(at)}-{suffix}"
    n = 1
    while p.exists():
        p = d / f"{_stamp(at)}-{n}-{suffix}"
        n += 1
    atomic_write(p, data)
    return p


def _restore(path: Path, data: bytes | None) -> None:
    """Put ``path`` back to ``data`` (``None``: the file did not exist)."""
    if data is None:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
    else:
        atomic_write(path, data)


def _resync(index: MemoryIndex, notes: list[str]) -> None:
    """Re-index after writing ``MEMORY.md`` so searches see it; a failure is only reported."""
    try:
        index.sync()
    except Exception as e:  # the write succeeded; a stale index is recoverable
        notes.append(f"re-index after the write failed: {e}")


def apply(index: MemoryIndex, candidates: Sequence[Candidate] | ApplyPlan | None = None, *,
          now: Now = None, resync: bool = True) -> ApplyResult:
    """Promote: write the planned section to ``MEMORY.md`` atomically, keep a backup (§6.5).

    Given an :class:`ApplyPlan`, exactly that plan is written: if ``MEMORY.md``, the diaries or
    the store changed since it was made, :class:`PromotionError` asks for a new preview. Given
    candidates (or ``None``: those passing the default gates), they are planned and written.
    The recall entries get ``promotedAt`` and their re-located range, and a history row records
    what :func:`undo` restores, in the same transaction as the write. Runs under the promotion
    lock. With ``resync`` the index is brought up to date afterwards.
    """
    ws = index.workspace
    notes: list[str] = []
    with promotion_lock(ws):
        if isinstance(candidates, ApplyPlan):
            given = candidates
            plan = preview_apply(index, given.candidates, now=given.now_ms)
            if plan.new_text != given.new_text or plan.old_bytes != given.old_bytes:
                raise PromotionError(
                    f"{MEMORY_FILE}, a diary or the recall store changed since this preview; "
                    "preview again before applying")
        else:
            plan = preview_apply(index, candidates, now=now)
        at = plan.now_ms
        backup: Path | None = None
        history_id: int | None = None
        new_bytes = plan.new_text.encode("utf-8")
        written = False
        try:
            with _transaction(index) as store:
                for key in plan.reconciled:
                    row = store.recall_entry(key)
                    if row:
                        row["promoted_at"] = at
                        store.recall_put(row)
                if plan.entries:
                    before = []
                    for p in plan.entries:
                        row = store.recall_entry(p.key)
                        if row is None:  # a candidate made by hand: track it from now on
                            c = p.candidate
                            row = RecallEntry(c.key, c.path, c.start_line, c.end_line, c.snippet,
                                              first_recalled_at=at, last_recalled_at=at).to_row()
                            before.append({"key": p.key, "absent": True})
                        else:
                            before.append(dict(row))
                        row.update(promoted_at=at, start_line=p.start_line, end_line=p.end_line,
                                   snippet=p.snippet)
                        store.recall_put(row)
                    if plan.old_bytes is not None:
                        backup = _backup(ws, plan.old_bytes, at)
                    history_id = store.promotion_add(
                        at, MEMORY_FILE, str(backup.relative_to(ws)) if backup else None,
                        plan.old_sha256, hashlib.sha256(new_bytes).hexdigest(),
                        [p.key for p in plan.entries], before)
                    # Last step inside the transaction: if the write fails, nothing is marked.
                    atomic_write(plan.memory_path, new_bytes)
                    written = True
        except BaseException:
            if written:  # the commit failed after the write: put the old bytes back
                _restore(plan.memory_path, plan.old_bytes)
            raise
        notes.extend(plan.warnings)
    if plan.entries and resync:
        _resync(index, notes)
    return ApplyResult(bool(plan.entries), [p.key for p in plan.entries], plan.skipped,
                       plan.reconciled, plan.dropped_sections, plan.memory_path, backup,
                       history_id, plan.diff, notes)


@dataclass
class UndoResult:
    """What :func:`undo` did; ``restored`` False with ``message`` when it refused or had nothing."""

    restored: bool
    message: str
    history_id: int | None = None
    keys: list[str] = field(default_factory=list)
    memory_path: Path | None = None
    saved_current: Path | None = None  # with force: where the overwritten edits were saved

    def to_dict(self) -> dict[str, Any]:
        return {"restored": self.restored, "message": self.message,
                "historyId": self.history_id, "keys": self.keys,
                "memoryPath": str(self.memory_path) if self.memory_path else None,
                "savedCurrent": str(self.saved_current) if self.saved_current else None}


def undo(index: MemoryIndex, *, force: bool = False, now: Now = None,
         resync: bool = True) -> UndoResult:
    """Revert the newest promotion not yet undone: ``MEMORY.md`` gets its exact previous bytes.

    Refuses (``restored=False``, with the reason) when ``MEMORY.md`` changed since that apply,
    because restoring would throw those edits away; ``force`` restores anyway, after saving the
    current file next to the backups. The entries' ``promotedAt`` and ranges are restored too.
    Repeated calls walk back through earlier promotions.
    """
    ws = index.workspace
    at = now_ms(now)
    path = _memory_path(ws)
    notes: list[str] = []
    with promotion_lock(ws):
        with index._lock:
            last = _store(index).promotion_last()
        if last is None:
            return UndoResult(False, "nothing to undo: no applied promotion is left to revert",
                              memory_path=path)
        current = _read_memory_bytes(ws)
        cur_sha = None if current is None else hashlib.sha256(current).hexdigest()
        when = iso(last["applied_at"])
        saved = None
        if cur_sha != last["after_sha256"]:
            if not force:
                return UndoResult(
                    False, f"{MEMORY_FILE} changed since the promotion of {when}; undoing would "
                    "discard those edits. Use force (--force) to restore the previous version "
                    "anyway (the current file is saved first).", last["id"], last["keys"], path)
            if current is not None:
                saved = _backup(ws, current, at, "MEMORY.md.before-undo")
        previous: bytes | None = None
        if last["before_sha256"] is not None:
            bpath = ws / last["backup_path"]
            try:
                previous = bpath.read_bytes()
            except OSError as e:
                return UndoResult(False, f"backup {bpath} is unreadable ({e}); nothing changed",
                                  last["id"], last["keys"], path)
            if hashlib.sha256(previous).hexdigest() != last["before_sha256"]:
                return UndoResult(False, f"backup {bpath} does not match what was replaced; "
                                  "nothing changed", last["id"], last["keys"], path)
        written = False
        try:
            with _transaction(index) as store:
                for before in last["entries_before"]:
                    if before.get("absent"):
                        store.recall_delete(before["key"])
                        continue
                    row = store.recall_entry(before["key"])
                    if row is None:
                        continue
                    row.update(promoted_at=before["promoted_at"], start_line=before["start_line"],
                               end_line=before["end_line"], snippet=before["snippet"])
                    store.recall_put(row)
                store.promotion_mark_undone(last["id"], at)
                if previous is None:
                    try:
                        path.unlink()
                    except FileNotFoundError:
                        pass
                    _fsync_dir(path.parent)
                else:
                    atomic_write(path, previous)
                written = True
        except BaseException:
            if written:
                _restore(path, current)
            raise
    if resync:
        _resync(index, notes)
    msg = f"restored {MEMORY_FILE} as it was before the promotion of {when}"
    if notes:
        msg += " (" + "; ".join(notes) + ")"
    return UndoResult(True, msg, last["id"], last["keys"], path, saved)


# --------------------------------------------------------------------------- explain


def explain(index: MemoryIndex, key: str, *, now: Now = None,
            half_life_days: float = HALF_LIFE_DAYS) -> dict[str, Any]:
    """Everything about one entry: its §6.2 fields, the score worked out, each gate, the recent
    signals (with query text for live recalls), where its snippet is now, and its duplicate.

    Raises :class:`PromotionError` for an unknown key.
    """
    at = now_ms(now)
    with index._lock:
        store = _store(index)
        row = store.recall_entry(key)
        events = store.recall_events(key)
    if row is None:
        raise PromotionError(f"no recall entry with key {key!r}")
    e = RecallEntry.from_row(row)
    s = score_entry(e, now=at, half_life_days=half_life_days)
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
        "recency": f"exp(-ln2/{half_life_days:g} × {s.age_days:.2f} days)",
        "consolidation": f"{n_days} distinct days" + (
            f", span {e.recall_days[0]}→{e.recall_days[-1]}" if n_days > 1 else ""),
        "conceptual": f"{len(e.concept_tags)} tags/6",
        "phaseBoost": "0 (Light/REM phases not implemented)",
    }
    located: dict[str, Any]
    src = _source_lines(index.workspace, e.path)
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
        "markerInMemory": key in promotion_markers(_read_memory_text(index.workspace)),
        "located": located,
        "duplicate": dup.to_dict() if dup else None,
        "events": [{**ev, "at": iso(ev["at"])} for ev in events],
        "now": iso(at),
    }


# --------------------------------------------------------------------------- impact preview


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


def _search_quietly(index: MemoryIndex, query: str, k: int) -> list[Hit]:
    """A search that records no recall (previews must not feed the signals they preview)."""
    saved = index.record_recalls
    index.record_recalls = False
    try:
        return index.search(query, max_results=k).hits
    finally:
        index.record_recalls = saved


def impact_preview(index: MemoryIndex, candidates: Sequence[Candidate] | ApplyPlan | None,
                   queries: Sequence[dict[str, Any]], *, k: int | None = None,
                   now: Now = None) -> ImpactReport:
    """Re-run ``queries`` as if the promotion were applied; report gold hits gained or lost.

    ``queries`` are ``{query, relevant: [{path, line}], qid?}``. The workspace is copied to a
    temporary folder (without its ``.memory``), the planned ``MEMORY.md`` written there, and the
    index copied with ``VACUUM INTO`` so that only ``MEMORY.md`` is re-embedded. Nothing in the
    real workspace changes and no recall is recorded.
    """
    from .index import MemoryIndex as _MemoryIndex

    plan = candidates if isinstance(candidates, ApplyPlan) else preview_apply(
        index, candidates, now=now)
    kk = k or index.settings().max_results
    before = [_gold_rank(_search_quietly(index, q["query"], kk), q.get("relevant", []))
              for q in queries]
    with tempfile.TemporaryDirectory(prefix="memory-promotion-impact-") as tmp:
        copy = Path(tmp) / "ws"
        shutil.copytree(index.workspace, copy, symlinks=True,
                        ignore=shutil.ignore_patterns(".memory", ".git"))
        (copy / MEMORY_FILE).write_bytes(plan.new_text.encode("utf-8"))
        cfg = _copy_config(index, copy)
        target = cfg.store_path(copy)
        target.parent.mkdir(parents=True, exist_ok=True)
        with index._lock:
            _store(index).db.execute("VACUUM INTO ?", (str(target),))
        other = _MemoryIndex(copy, cfg, index.choice)
        try:
            other.sync()
            after_hits = [_search_quietly(other, q["query"], kk) for q in queries]
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


def _copy_config(index: MemoryIndex, copy: Path) -> Any:
    import copy as _copy

    cfg = _copy.deepcopy(index.config)
    cfg.store.path = str(copy / ".memory" / "impact-preview.sqlite")
    return cfg


# --------------------------------------------------------------------------- replay


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
    """
    if days < 1:
        raise ValueError("days must be at least 1")
    if mode not in ("spread", "repeat"):
        raise ValueError(f"unknown replay mode {mode!r} (spread or repeat)")
    qs = [q.strip() for q in queries if q and q.strip()]
    end = now_ms(now)
    if reset:
        with _transaction(index) as store:
            store.recall_clear()
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
        day_start = _day_start_ms(day_of(day_end))
        m = len(day_queries)
        for j, q in enumerate(day_queries):
            ts = day_start + (day_end - day_start) * (j + 1) // (m + 1)
            hits = cache.get(q) if cacheable else None
            if hits is None:
                saved = index.record_recalls
                index.record_recalls = False
                try:
                    hits = index.search(q, now_ms=ts).hits
                finally:
                    index.record_recalls = saved
                if cacheable:
                    cache[q] = hits
            recalls += record_search(index, q, hits, now=ts)
            done += 1
            if progress:
                progress(done, total)
        if daily:
            daily_n += ingest_daily(index, now=day_end).recorded
    with index._lock:
        n_entries = len(_store(index).recall_entries(include_promoted=True))
    n_cands = sum(c.passed for c in list_candidates(index, now=end, check_duplicates_of="none"))
    return ReplayReport(days, mode, len(qs), done, recalls, daily_n, n_entries, n_cands,
                        day_of(end - (days - 1) * DAY_MS), day_of(end))


def load_query_log(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a JSONL query log: objects with a ``query`` field (other fields kept, unused here).

    Blank lines are skipped; a line that is not such an object raises ``ValueError`` naming it.
    """
    out: list[dict[str, Any]] = []
    p = Path(path)
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{p}:{n}: not JSON ({e.msg})") from e
        if not isinstance(rec, dict) or not isinstance(rec.get("query"), str):
            raise ValueError(f"{p}:{n}: expected an object with a string 'query'")
        out.append(rec)
    return out
