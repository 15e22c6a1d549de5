"""Query construction for the keyword leg: FTS5 MATCH strings and keyword extraction.

``reference_fts_query`` is the reference's ``buildFtsQuery`` (spec §4.4): tokens are maximal runs
of letters, digits and ``_``, quoted, joined with AND. That almost never matches a
natural-language question, so the default profile joins terms with OR and lets BM25 rank, and
rewrites CJK runs as bigrams so that Chinese keywords can match inside sentences.
"""

from __future__ import annotations

import re

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
