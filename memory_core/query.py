"""Query construction for the keyword leg: FTS5 MATCH strings and keyword extraction.

``reference_fts_query`` is the reference's ``buildFtsQuery`` (spec §4.4): tokens are maximal runs
of letters, digits and ``_``, quoted, joined with AND. That almost never matches a
natural-language question, so the default profile joins terms with OR and lets BM25 rank, and
rewrites CJK runs as bigrams so that Chinese keywords can match inside sentences.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from .text import CJK_RUN_RE, cjk_bigrams

TOKEN_RE = re.compile(r"[^\W]+", re.UNICODE)  # letters, digits and "_"
_WORD_RE = re.compile(r"[\w]+", re.UNICODE)

# Short, closed lists: BM25's IDF handles the rest. Used only where the reference uses them
# (keyword extraction for the FTS-only fallback) and to drop pure function words from OR queries.
STOP_WORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in
    into is it its me my of on or our she he so than that the their them then there these they
    this to was we were what when where which who whom why will with would you your about after
    before yesterday today tomorrow just also any all some please tell know remember""".split()
) | frozenset(
    "的 了 是 在 和 与 或 吗 呢 吧 啊 我 你 他 她 它 们 这 那 "
    "之前 以前 今天 昨天 什么 怎么 为什么 哪里 哪个".split()
)


def tokens(text: str) -> list[str]:
    """Maximal runs of Unicode letters, numbers or ``_``."""
    return TOKEN_RE.findall(text)


def _quote(tok: str) -> str:
    return '"' + tok.replace('"', "") + '"'


def reference_fts_query(raw: str) -> str | None:
    """``buildFtsQuery``: ``router VLAN-20?`` → ``"router" AND "VLAN" AND "20"``."""
    toks = [t for t in tokens(raw) if t]
    if not toks:
        return None
    return " AND ".join(_quote(t) for t in toks)


def or_fts_query(raw: str, *, bigrams: bool = True, drop_stop_words: bool = True) -> str | None:
    """OR-joined, de-duplicated terms for BM25 ranking; CJK runs become their bigrams.

    With ``bigrams`` the query targets the bigram shadow table, whose text was rewritten the same
    way. Stop words are dropped unless nothing else is left.
    """
    text = cjk_bigrams(raw) if bigrams else raw
    toks = list(dict.fromkeys(t.lower() for t in tokens(text)))
    if drop_stop_words:
        kept = [t for t in toks if t not in STOP_WORDS]
        toks = kept or toks
    if not toks:
        return None
    return " OR ".join(_quote(t) for t in toks)


def extract_keywords(query: str) -> list[str]:
    """Keywords for the FTS-only per-keyword fallback (a simplified ``extractKeywords``).

    Lower-cased words minus stop words, pure digits and ASCII words shorter than 3; Chinese runs
    become single characters plus adjacent bigrams; de-duplicated in order.
    """
    out: list[str] = []
    for tok in _WORD_RE.findall(query.lower()):
        if CJK_RUN_RE.fullmatch(tok):
            chars = list(tok)
            out.extend(chars)
            out.extend(tok[i : i + 2] for i in range(len(tok) - 1))
            continue
        if tok in STOP_WORDS or tok.isdigit():
            continue
        if tok.isascii() and tok.isalpha() and len(tok) < 3:
            continue
        out.append(tok)
    return [k for k in dict.fromkeys(out) if k not in STOP_WORDS]


def lexical_tokens(text: str) -> set[str]:
    """Unique lower-cased ``[\\p{L}\\p{N}_]+`` tokens, for the FTS-only lexical boost."""
    return {t.lower() for t in TOKEN_RE.findall(text)}


# --------------------------------------------------------------------------- date hints

_MONTHS = {m: i + 1 for i, m in enumerate(
    "january february march april may june july august september october november december"
    .split())}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MON = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), "ymd"),
    (re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"), "ymd"),
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MON})\.?,?\s+(\d{{4}})\b", re.I),
     "dmy"),
    (re.compile(rf"\b({_MON})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I), "mdy"),
    (re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月"), "ym"),
    (re.compile(rf"\b({_MON})\.?,?\s+(?:of\s+)?(\d{{4}})\b", re.I), "my"),
    (re.compile(rf"\b(?:in|during|early|late|mid|since)\s+({_MON})\b(?!\s*\d)", re.I), "m"),
)
#: A diary this many days outside the asked span still gets half the hint.
DATE_HINT_HALF_DAYS = 7.0


@dataclass(frozen=True)
class DateSpan:
    """A date range a query names (first and last day), or a month of any year (``month``)."""

    start: date | None = None
    end: date | None = None
    month: int | None = None


def _month_end(y: int, m: int) -> date:
    return (date(y + 1, 1, 1) if m == 12 else date(y, m + 1, 1)) - timedelta(days=1)


def date_hints(query: str) -> list[DateSpan]:
    """The absolute dates a question names: "on 7 May 2023", "May 7, 2023", "2023-05-07",
    "in May 2023", "2023年5月7日", or a bare month ("in June"). Relative dates are ignored.

    Used by the default profile to prefer diaries named by the asked date (``memory/2023-05-08.md``
    is where an agent writes what happened that day); an invalid date is skipped.
    """
    spans: list[DateSpan] = []
    taken: list[tuple[int, int]] = []
    for rx, kind in _DATE_PATTERNS:
        for m in rx.finditer(query):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            g = m.groups()
            try:
                if kind == "ymd":
                    d = date(int(g[0]), int(g[1]), int(g[2]))
                    span = DateSpan(d, d)
                elif kind == "dmy":
                    d = date(int(g[2]), _MONTHS[g[1].lower()], int(g[0]))
                    span = DateSpan(d, d)
                elif kind == "mdy":
                    d = date(int(g[2]), _MONTHS[g[0].lower()], int(g[1]))
                    span = DateSpan(d, d)
                elif kind in ("ym", "my"):
                    y, mo = (int(g[0]), int(g[1])) if kind == "ym" else (
                        int(g[1]), _MONTHS[g[0].lower()])
                    span = DateSpan(date(y, mo, 1), _month_end(y, mo))
                else:
                    span = DateSpan(month=_MONTHS[g[0].lower()])
            except (ValueError, KeyError):
                continue
            taken.append((m.start(), m.end()))
            spans.append(span)
    return spans


def date_closeness(spans: list[DateSpan], day: date) -> float:
    """1 inside a named span, halving every :data:`DATE_HINT_HALF_DAYS` days outside it."""
    best = 0.0
    for s in spans:
        if s.month is not None:
            c = 1.0 if day.month == s.month else 0.0
        elif s.start is not None and s.end is not None:
            if s.start <= day <= s.end:
                c = 1.0
            else:
                gap = (s.start - day).days if day < s.start else (day - s.end).days
                c = 2.0 ** (-gap / DATE_HINT_HALF_DAYS)
        else:
            c = 0.0
        best = max(best, c)
    return best
