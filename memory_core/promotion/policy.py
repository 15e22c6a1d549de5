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
  queries, and the bullet is the line(s) the recalling queries match best (each query its
  own line, if it matches ``min_match_share`` of the query's weight), not the whole chunk: a
  recalled chunk fewer than ``min_matching_queries`` queries choose a line of is not
  written (the thresholds chosen by cross-validation, ``scripts/tune_dreaming.py``).

All are decided by :func:`policy_for` from the index's profile; nothing here changes what a
reference-profile run writes below the cap.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..base.text import CJK_RUN_RE, cjk_bigrams
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
    #: A query recalling a range chooses its best-matching line for the bullet only if that
    #: line matches this share of the query's weight (:func:`memory_lines`); a range no query
    #: chooses a line of is not written. A question the range answers matches most of itself
    #: on the answering line; a range that came back for words it merely shares does not.
    min_match_share: float = 0.0
    #: A range is written only if this many distinct queries each choose a line of it. One
    #: query matching half of itself on some line happens by chance (a chunk comes back for
    #: night after night of questions, and one of them shares the right words); two rarely do.
    min_matching_queries: int = 1


REFERENCE = DreamingPolicy("reference")
#: The default's thresholds were chosen by cross-validation over LoCoMo dev's conversations
#: (scripts/tune_dreaming.py; docs/promotion.md section 6). With two queries wanted on a
#: line of the chunk, counting a search's later hits (recall_top_k 0: all) no longer
#: promotes padding, and saves more searches than counting the first three.
DEFAULT = DreamingPolicy("default", keep_recalled=True, max_artifact_share=0.5,
                         rem_reads_light=True, score_metadata=False, clean_lines=True,
                         recall_top_k=0, min_distinct_queries=3, min_match_share=0.4,
                         min_matching_queries=2)

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


def _stem(word: str) -> str:
    """A crude English stem ("moored" and "moor", "classes" and "class" meet): a question and
    the line answering it seldom inflect a word alike."""
    if word.endswith(("ing", "ed")):
        base = word[:-3] if word.endswith("ing") else word[:-2]
    elif word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")):
        base = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        base = word[:-1]
    else:
        return word
    return base if len(base) >= 3 else word


_TOKEN = re.compile(r"[^\W_]+")


def _terms(text: str) -> set[str]:
    """The words a line and a query are compared by: stemmed words of 3+ letters, and a run of
    Chinese or Japanese as its overlapping pairs (one token otherwise: a query's
    "报表为什么改到" would never meet a diary's "夜间报表改到")."""
    out = {_stem(w) for w in _words(text) if not CJK_RUN_RE.search(w)}
    out.update(w for w in _TOKEN.findall(cjk_bigrams(text)) if CJK_RUN_RE.fullmatch(w))
    return out


#: A line that asks (a "?" ending a sentence, anywhere in it: "Congrats! What made you run
#: again? As for me, …"): a question in a diary is not the memory, the line answering it is.
_ASKS = re.compile(r"\?(?=\s|$|[\]\"')])")


def query_matches(lines: Sequence[str], queries: Sequence[str],
                  context: Sequence[str] = ()) -> list[tuple[int, float]]:
    """For each distinct query, the line of ``lines`` that matches it best and the share of the
    query's weight that line matches (``(-1, 0.0)``: no line shares a word with it).

    A word weighs its inverse document frequency over the lines of ``context`` (the whole
    diary; ``lines`` without it): a speaker's name or the day's topic, on most lines, tells
    little about which line the agent wanted, a word on one line tells a lot. A query word
    the diary never uses weighs most, so a query about something the diary does not mention
    matches little of itself anywhere (its evidence is elsewhere)."""
    scope = [x for x in (context or lines) if x.strip()]
    df: dict[str, int] = {}
    for x in scope:
        for w in _terms(x):
            df[w] = df.get(w, 0) + 1

    def weight(w: str) -> float:
        return max(0.0, math.log((len(scope) + 1) / (df.get(w, 0) + 0.5)))

    own = [_terms(x) for x in lines]
    # a line answering a question also answers to the question's words ("Did you make the
    # black and white bowl?" "Yeah, I made it in my class."): the words the agent's query
    # shares with the question are what the answer is about
    terms = [t | own[i - 1] if i and _ASKS.search(lines[i - 1]) else t
             for i, t in enumerate(own)]
    out = []
    for q in dict.fromkeys(queries):
        qt = _terms(q)
        total = sum(weight(w) for w in qt)
        scores = [sum(weight(w) for w in qt & t) for t in terms]
        best = max(range(len(lines)), key=lambda i: (scores[i], -i), default=-1)
        if best < 0 or not qt & terms[best] or total <= 0:
            out.append((-1, 0.0))
        else:
            out.append((best, scores[best] / total))
    return out


#: A physical line that opens something of its own: a list item, a heading, a quote.
_OPENS = re.compile(r"^\s*(?:>|#|[-*+]\s|\d+[.)]\s)")
_INNER_MARKER = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
#: Between the items of one bullet. A bullet stays one physical line, the items joined on it
#: rather than written as lines beneath its marker: ``bullet_text`` (2026.9's formatting,
#: shared with the reference) collapses a bullet to one line and cuts it at 640 characters,
#: and ``promoted_sections`` (budget compaction) takes each line of a promoted section that is
#: no marker for a bullet.
ITEM_SEPARATOR = " · "


def logical_items(lines: Sequence[str], *, keep_junk: bool = False) -> list[str]:
    """``lines`` (a recalled range) as its logical lines, junk left out: a list item or a
    paragraph line wrapped over several physical lines is one item, its head with the
    continuation lines after it (indented, not blank, opening no list item, heading or
    quote, after a head that is no heading: Markdown's continuation of a list item).
    Chosen by one physical line, a bullet stopped mid-sentence ("… retried 5 times,").
    Only lines of ``lines`` are joined: a head whose continuation lies past the range keeps
    what the range holds, and a range opening inside an item starts with its own item.

    A junk head (:func:`junk_line`) drops its whole item (the rest is that command's or that
    output's); a junk continuation line (a stack frame under an error) drops alone; an item
    junk once joined drops too. ``keep_junk``: every item (the diary words are weighed over).
    """
    items: list[list[str]] = []
    head = ""  # the current item's head line ("": none, after a blank line)
    for x in lines:
        if not x.strip():
            head = ""
            continue
        if head and x[:1].isspace() and not _OPENS.match(x) and not head.lstrip().startswith("#"):
            if keep_junk or not junk_line(x):
                items[-1].append(x.strip())
            continue
        head = x
        items.append([x.rstrip()])
    joined = [" ".join(it) for it in items]
    if keep_junk:
        return joined
    return [x for it, x in zip(items, joined, strict=True)
            if not junk_line(it[0]) and not junk_line(x)]


def join_items(items: Sequence[str]) -> str:
    """The items of one bullet on its one line: each without its list marker (kept inline,
    "A. - B." reads as one run-on item) and :data:`ITEM_SEPARATOR` between them."""
    return ITEM_SEPARATOR.join(_INNER_MARKER.sub("", x.strip()) for x in items)


def memory_lines(lines: Sequence[str], queries: Sequence[str] = (), *,
                 context: Sequence[str] = (), min_share: float = 0.0,
                 min_queries: int = 1) -> tuple[str, str]:
    """The lines of a recalled range worth keeping in ``MEMORY.md``, joined, and ``""``; or
    ``""`` and why no line is kept (the reason a skipped entry shows).

    The range is read as its logical items (:func:`logical_items`: a wrapped list item is
    one, junk left out) and the kept ones are joined on one line (:func:`join_items`). With
    the ``queries`` that recalled the range,
    each distinct query chooses the line that matches it best (:func:`query_matches`, words
    weighed over ``context``, the whole diary; an answer matches its question's words too),
    if that line matches at least ``min_share`` of the query's weight; a chosen line asking a
    question brings the next line, its answer, with it, and an answer chosen by its
    question's words brings the question (alone, "The Tuesday ones." says nothing). The
    lines chosen by the most queries are kept first, within the bullet's 640 characters, in
    the diary's order: one fact, not the 20-30 lines of a search chunk. When
    fewer than ``min_queries`` queries (at least one) choose a line, ``""``: the range came
    back for those queries as padding, not as what they were after (without ``queries``,
    every clean line).
    """
    clean = logical_items(lines)
    if not clean:
        return "", "nothing left once commands and tool output are removed"
    if not queries:
        return join_items(clean), ""
    context = logical_items(context, keep_junk=True) if context else ()
    votes: dict[int, list[float]] = {}
    distinct = list(dict.fromkeys(queries))
    matches = query_matches(clean, distinct, context)
    choosing = 0
    for q, (best, share) in zip(distinct, matches, strict=True):
        if best < 0 or share < min_share:
            continue
        choosing += 1
        chosen = [best]
        if best + 1 < len(clean) and _ASKS.search(clean[best]):
            chosen.append(best + 1)
        if best and _ASKS.search(clean[best - 1]) and (
                _terms(q) & _terms(clean[best - 1])) - _terms(clean[best]):
            chosen.insert(0, best - 1)  # an answer chosen by its question's words: both
        for j in chosen:
            v = votes.setdefault(j, [0, 0.0])
            v[0] += 1
            v[1] += share
    if all(i < 0 for i, _ in matches):
        return "", "no line of it shares a word with the queries that recalled it"
    if not choosing:
        return "", (f"no line of it matches {min_share:.0%} of a query that recalled it (the "
                    "default profile's minMatchShare)")
    if choosing < min_queries:
        return "", (f"only {choosing} of the queries that recalled it match {min_share:.0%} of "
                    "themselves on a line of it (the default profile's minMatchingQueries: "
                    f"{min_queries})")
    kept: list[int] = []
    size = 0
    for i in sorted(votes, key=lambda i: (-votes[i][0], -votes[i][1], i)):
        if kept and size + len(clean[i]) > PROMOTED_TEXT_MAX_CHARS:
            continue
        kept.append(i)
        size += len(clean[i]) + len(ITEM_SEPARATOR)
    return join_items([clean[i] for i in sorted(kept)]), ""
