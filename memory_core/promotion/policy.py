"""What dreaming does differently per profile, and the short-term store's retention.

The ``reference`` profile reproduces OpenClaw (2026.5.20's scoring and phases, 2026.9's store
cap of 512 entries, newest kept); the ``default`` profile keeps the same signals and scoring but
is immune to the failures OpenClaw's users report (issue 25):

* **retention** (openclaw#150635, #75842): the reference keeps the 512 entries touched last,
  so a night of daily or transcript ingestion (hundreds of fresh snippets) evicts every entry
  the agent actually recalled, and the store ends up made of dreaming's own ingestion. The
  default evicts *artifacts* first (entries whose only signals are dreaming's ingestion, no
  search ever returned them), keeps them to at most half of the cap, and evicts a recalled
  entry only for a more recently recalled one;
* **REM reads Light** (#86249): the default's REM phase draws its truths from what Light
  staged (when Light staged anything within REM's lookback) rather than from the whole store;
* **clean bullets** (#67580, #89444): the default writes only the recalled lines that are
  memory, not staged ``Candidate:``/``confidence:`` lines, shell commands or tool output
  (:func:`memory_lines`), and no ``[score=… recalls=…]`` metadata (the marker before each
  bullet keeps its key, the state store and the history keep the rest);
* **no padding** (what the dreaming evaluation found most junk to be): only a search's first
  ``recall_top_k`` hits are recalls, a candidate needs ``min_distinct_queries`` distinct
  queries, and a recalled chunk no line of which shares a word with its queries is not
  written (both thresholds chosen by cross-validation, ``scripts/tune_dreaming.py``).

All are decided by :func:`policy_for` from the index's profile; nothing here changes what a
reference-profile run writes below the cap.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .model import PROMOTED_TEXT_MAX_CHARS, RecallEntry

if TYPE_CHECKING:
    from ..index import MemoryIndex
    from .state import StateStore

#: 2026.9's short-term store retention (spec §6.2 "[later]").
RETENTION_CAP = 512


@dataclass(frozen=True)
class DreamingPolicy:
    """The profile-dependent choices of the dreaming pipeline."""

    profile: str
    retention_cap: int = RETENTION_CAP
    #: Evict entries no search returned before recalled ones (the reference: newest kept).
    keep_recalled: bool = False
    #: The share of the cap that artifact-only entries may take (1.0: no bound).
    max_artifact_share: float = 1.0
    #: REM picks its truths among the entries Light staged.
    rem_reads_light: bool = False
    #: Write ``[score=… recalls=… avg=… source=…]`` after each promoted bullet.
    score_metadata: bool = True
    #: Drop staged-output lines, shell commands and tool output from promoted text.
    clean_lines: bool = False
    #: Only a search's first ``recall_top_k`` hits count as recalls (0: all of them). The
    #: rest fill the agent's result list: a chunk that keeps coming back fifth or sixth for
    #: unrelated questions is padding, not something the agent needed.
    recall_top_k: int = 0
    #: A candidate needs this many distinct queries that recalled it (0: no such gate). The
    #: reference's diversity is max(queries, days), so one question asked on three days
    #: passes; an entry only one or two questions wanted is rarely worth a line of MEMORY.md.
    min_distinct_queries: int = 0


REFERENCE = DreamingPolicy("reference")
#: The default's two thresholds were chosen by cross-validation over LoCoMo dev's
#: conversations (scripts/tune_dreaming.py; docs/promotion.md section 6).
DEFAULT = DreamingPolicy("default", keep_recalled=True, max_artifact_share=0.5,
                         rem_reads_light=True, score_metadata=False, clean_lines=True,
                         recall_top_k=3, min_distinct_queries=3)

_OVERRIDE: ContextVar[DreamingPolicy | None] = ContextVar("dreaming_policy", default=None)


def policy_for(index: MemoryIndex) -> DreamingPolicy:
    """The policy of ``index``'s profile (the default's as :func:`tuned` set it, if it did)."""
    if str(index.config.profile) == "reference":
        return REFERENCE
    return _OVERRIDE.get() or DEFAULT


@contextmanager
def tuned(**changes: Any) -> Iterator[DreamingPolicy]:
    """Run the default profile with some of its constants changed (cross-validation)."""
    token = _OVERRIDE.set(replace(DEFAULT, **changes))
    try:
        yield _OVERRIDE.get() or DEFAULT
    finally:
        _OVERRIDE.reset(token)


def is_artifact(e: RecallEntry) -> bool:
    """An entry only dreaming's own ingestion fed: never returned by a search, never grounded."""
    return e.recall_count <= 0 and e.grounded_count <= 0


def entries_to_keep(entries: list[RecallEntry], policy: DreamingPolicy) -> set[str]:
    """The keys that stay in a store of ``entries`` under ``policy`` (all when within the cap).

    Reference: the ``cap`` entries recalled last (``lastRecalledAt`` desc, then key). Default:
    recalled entries first (newest first, up to the cap), then artifacts (newest first) into
    what is left, at most ``max_artifact_share`` of the cap.
    """
    cap = policy.retention_cap
    if cap <= 0 or len(entries) <= cap:
        return {e.key for e in entries}

    def newest(es: list[RecallEntry]) -> list[RecallEntry]:
        return sorted(es, key=lambda e: (-e.last_recalled_at, e.key))

    if not policy.keep_recalled:
        return {e.key for e in newest(entries)[:cap]}
    recalled = newest([e for e in entries if not is_artifact(e)])[:cap]
    room = min(cap - len(recalled), int(cap * policy.max_artifact_share))
    artifacts = newest([e for e in entries if is_artifact(e)])[:max(0, room)]
    return {e.key for e in recalled + artifacts}


def retain(st: StateStore, policy: DreamingPolicy) -> int:
    """Bound the store to the policy's cap; return how many entries were evicted."""
    # counted first: this runs after every recorded search, and is a no-op below the cap
    (n,) = st.db.execute("SELECT COUNT(*) FROM recall_entries").fetchone()
    if n <= policy.retention_cap:
        return 0
    entries = [RecallEntry.from_row(r) for r in st.recall_entries()]
    keep = entries_to_keep(entries, policy)
    gone = [e.key for e in entries if e.key not in keep]
    with st.transaction():
        for key in gone:
            st.recall_delete(key)
    return len(gone)


# --------------------------------------------------------------------------- promoted text

_LEAD = r"^\s*(?:>\s*)?(?:[-*+]\s+|\d+[.)]\s+)?"
_COMMANDS = ("sudo|git|npm|npx|pnpm|yarn|pip3?|uv|docker|kubectl|helm|systemctl|journalctl|"
             "curl|wget|ssh|scp|rsync|rm|mv|cp|chmod|chown|cd|ls|cat|grep|find|make|python3?|"
             "node|openclaw|memory-core|brew|apt(?:-get)?|tar|kill|export")
_JUNK_LINE = (
    # staged dreaming output and score metadata (Light's five lines, REM's reflections)
    re.compile(_LEAD + r"(?:(?:Candidate|Reflections?|Theme|Possible Lasting Truths?)\s*:|"
               r"confidence:\s*\d|evidence:\s*\S+:\d|recalls:\s*\d|status:\s*staged|"
               r"note:\s*reflection)", re.I),
    re.compile(r"\[\s*(?:score|confidence)=\d", re.I),
    re.compile(r"<!--\s*openclaw[-:]", re.I),
    # a shell command: a prompt, a whole line in backticks, or a command word with arguments
    re.compile(_LEAD + r"(?:\$|%|❯|PS [A-Z]:\\[^>]*>)\s+\S"),
    re.compile(_LEAD + r"`[^`]+`\s*$"),
    re.compile(_LEAD + r"sudo\s+\S"),
    re.compile(_LEAD + rf"(?:{_COMMANDS})\s+(?=.*(?:\s-{{1,2}}[\w-]+|\s[./~]\S*|\S/\S|\S=\S))"
               r"[^.!?]*[^.!?\s]\s*$"),
    # tool output: a JSON payload, a stream label, a stack frame, a log line
    re.compile(_LEAD + r"[{\[]\s*[\"{\[]"),
    re.compile(_LEAD + r"(?:stdout|stderr|exit (?:code|status)|exitCode|Traceback \(most "
               r"recent call last\))\b", re.I),
    re.compile(r"^\s+at \S+ \(.*:\d+:\d+\)\s*$"),
    re.compile(_LEAD + r"\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}\S*\]?\s+(?:ERROR|WARN(?:ING)?|"
               r"INFO|DEBUG|TRACE)\b"),
)


def junk_line(line: str) -> bool:
    """Is ``line`` staged dreaming output, score metadata, a shell command or tool output?"""
    return any(rx.search(line) for rx in _JUNK_LINE)


_WORD = re.compile(r"[^\W_]{3,}")
_STOP = frozenset("the and for are was were what when where which who whom whose how did does "
                  "with from that this have has had you your they them their about into "
                  "there been not but can could would should will".split())


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


#: A line that ends by asking (an image caption or other bracketed tail after the "?" allowed):
#: a question in a diary is not the memory, the line answering it is.
_ASKS = re.compile(r"\?\s*(?:\[[^\]]*\]\s*)?$")


def memory_lines(lines: Sequence[str], queries: Sequence[str] = ()) -> str:
    """The lines of a recalled range worth keeping in ``MEMORY.md``, joined (``""``: none).

    Junk lines (:func:`junk_line`) are left out. With the ``queries`` that recalled the range,
    only the lines sharing a distinctive word (one on at most a quarter of the range's lines) with
    them are kept (a search chunk is 20-30 diary
    lines, and the bullet's 640 characters would otherwise be its first few, whatever the agent
    was after), the lines sharing the most first (a line asking a question brings the next
    line, its answer, right after it), then in the diary's order. When none shares a
    word, ``""``: the range came back for those queries as padding, not as what they were after
    (without ``queries``, every clean line).
    """
    clean = [x for x in lines if x.strip() and not junk_line(x)]
    if not queries or not clean:
        return "\n".join(clean)
    words = [_words(x) for x in clean]
    # a word on most lines of the range (a speaker's name, the topic's heading word) tells
    # nothing about which line the agent wanted
    seen: dict[str, int] = {}
    for ws in words:
        for w in ws:
            seen[w] = seen.get(w, 0) + 1
    common = {w for w, n in seen.items() if n > max(1, len(clean) // 4)}
    wanted = [_words(q) - common for q in queries]
    overlap = [sum(len(w & x) for w in wanted) for x in words]
    if not any(overlap):
        return ""
    order: list[int] = []
    for i in sorted((i for i, n in enumerate(overlap) if n), key=lambda i: (-overlap[i], i)):
        order += [j for j in (i, i + 1) if j not in order and (j == i or (
            j < len(clean) and _ASKS.search(clean[i])))]
    kept: list[int] = []
    size = 0
    for i in order:
        if kept and size + len(clean[i]) > PROMOTED_TEXT_MAX_CHARS:
            break
        kept.append(i)
        size += len(clean[i]) + 1
    return "\n".join(clean[i] for i in sorted(kept))
