"""Text measures shared by chunking, snippets and keyword search.

The reference engine is JavaScript: its string lengths are UTF-16 code units, not Python code
points, and it weighs CJK characters 4× when it estimates tokens. Reproducing its chunk boundaries
and snippets exactly therefore needs these helpers; everything else in the package uses plain
Python strings.
"""

from __future__ import annotations

import re

from .lazy import lazy_pattern

CHARS_PER_TOKEN = 4

# Three character classes, each with one meaning; they differ on purpose, so never merge them.
#
# 1. REFERENCE_NON_LATIN_CLASS: the reference's token-*estimate* class (spec §1.1), characters
#    that weigh 4 when it estimates tokens. It decides chunk boundaries, so it must stay exactly
#    as the reference has it (the chunk goldens fail otherwise): CJK radicals to the end of the
#    Unified block (U+2E80–U+9FFF, which also takes in kana and Hangul compatibility letters),
#    Yi, Hangul syllables, compatibility ideographs and the astral Extension B+ ideographs.
# 2. CJK_SCRIPT_CLASS: "scripts written without spaces between words" for this project's own
#    tokenisers: kana, Han (Extension A, Unified, compatibility ideographs) and Hangul
#    syllables. A run of these becomes bigrams for the keyword leg (:func:`cjk_bigrams`) and
#    for promotion's concept tokens.
# 3. REFERENCE_MMR_CJK_CLASS: the reference MMR's "CJK family" (spec §4.7), unigrams and
#    adjacent bigrams in its similarity tokens: kana, Extension A, Unified, Hangul syllables and
#    Hangul Jamo (no compatibility ideographs). Kept as the reference wrote it, for MMR parity.

#: The reference's token-estimate "non-Latin" class (spec §1.1), in code points; see above.
REFERENCE_NON_LATIN_CLASS = (
    "\u2e80-\u9fff\ua000-\ua4ff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f")
#: One character of :data:`REFERENCE_NON_LATIN_CLASS` (weighs 4 in the token estimate).
REFERENCE_NON_LATIN_RE = lazy_pattern(f"[{REFERENCE_NON_LATIN_CLASS}]")
#: Scripts written without spaces (kana, Han, Hangul syllables): the bigram tokenisers' class.
CJK_SCRIPT_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
#: A maximal run of :data:`CJK_SCRIPT_CLASS` characters.
CJK_RUN_RE = lazy_pattern(f"[{CJK_SCRIPT_CLASS}]+")
#: The reference MMR's CJK family (spec §4.7): kana, Ext. A, Unified, Hangul syllables, Jamo.
REFERENCE_MMR_CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u1100-\u11ff"
#: One character of :data:`REFERENCE_MMR_CJK_CLASS`.
REFERENCE_MMR_CJK_RE = lazy_pattern(f"[{REFERENCE_MMR_CJK_CLASS}]")
_ASTRAL_RE = re.compile("[\U00010000-\U0010ffff]")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_HIGH = range(0xD800, 0xDC00)
_LOW = range(0xDC00, 0xE000)


def has_astral(text: str) -> bool:
    """True when ``text`` holds a character outside the BMP (two UTF-16 units)."""
    return _ASTRAL_RE.search(text) is not None


def to_units(text: str) -> str:
    """Return ``text`` with each astral character replaced by its two surrogate code points.

    Python can hold lone surrogates in a ``str``, so the result indexes exactly like a JavaScript
    string: ``len(to_units(s))`` is the JS ``s.length`` and slicing cuts where JS would.
    """
    if not has_astral(text):
        return text
    out: list[str] = []
    for ch in text:
        cp = ord(ch)
        if cp < 0x10000:
            out.append(ch)
        else:
            cp -= 0x10000
            out.append(chr(0xD800 + (cp >> 10)))
            out.append(chr(0xDC00 + (cp & 0x3FF)))
    return "".join(out)


def from_units(units: str) -> str:
    """Inverse of :func:`to_units`; a lone surrogate becomes U+FFFD, as Node's encoder does."""
    if not _SURROGATE_RE.search(units):
        return units
    return units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (JavaScript's ``length``)."""
    return len(text) + len(_ASTRAL_RE.findall(text))


def estimate_units_chars(units: str) -> int:
    """The reference's ``estimateStringChars`` over a UTF-16 unit string (see :func:`to_units`)."""
    if units.isascii():  # one C pass: no surrogate, nothing weighing 4 (most lines)
        return len(units)
    n = 0
    pairs_cjk = 0
    i = 0
    length = len(units)
    # Fast path: no surrogates at all.
    if not _SURROGATE_RE.search(units):
        n = len(REFERENCE_NON_LATIN_RE.findall(units))
        return length + n * (CHARS_PER_TOKEN - 1)
    while i < length:
        c = ord(units[i])
        if c in _HIGH and i + 1 < length and ord(units[i + 1]) in _LOW:
            cp = 0x10000 + ((c - 0xD800) << 10) + (ord(units[i + 1]) - 0xDC00)
            if 0x20000 <= cp <= 0x2FA1F:
                n += 1
            if 0xD840 <= c <= 0xD87E:
                pairs_cjk += 1
            i += 2
            continue
        if REFERENCE_NON_LATIN_RE.match(units[i]):
            n += 1
        i += 1
    if n > 0:
        length -= pairs_cjk
    return length + n * (CHARS_PER_TOKEN - 1)


def estimate_chars(text: str) -> int:
    """``estimateStringChars`` for an ordinary Python string: CJK weighs 4, astral symbols 2."""
    if text.isascii():  # the chunker's common case, without to_units' regex scan
        return len(text)
    return estimate_units_chars(to_units(text))


def estimate_tokens(text: str) -> int:
    """Rough token count the reference uses: ``ceil(weighted chars / 4)``."""
    return -(-max(0, estimate_chars(text)) // CHARS_PER_TOKEN)


def truncate_utf16(text: str, max_units: int) -> str:
    """Cut ``text`` to at most ``max_units`` UTF-16 units without splitting a surrogate pair."""
    head = text[:max_units]
    # only these characters can be kept: without an astral one among them they are the first
    # ``max_units`` units (not searching a whole chunk for one was a snippet's main cost)
    if max_units >= 0 and (head.isascii() or not has_astral(head)):
        return head
    if utf16_len(text) <= max_units:
        return text
    units = to_units(text)[:max_units]
    if units and 0xD800 <= ord(units[-1]) < 0xDC00:
        units = units[:-1]
    return from_units(units)


_CJK_CHAR_RE = lazy_pattern(f"[{CJK_SCRIPT_CLASS}]")


def is_word_start(text: str, idx: int) -> bool:
    """True when a piece of ``text`` may start at ``idx`` without cutting a word: at 0, after
    white space, or next to a CJK character (scripts written without spaces may be cut
    anywhere). Never at white space itself."""
    if idx <= 0:
        return True
    if idx >= len(text) or text[idx].isspace():
        return False
    prev = text[idx - 1]
    return prev.isspace() or bool(_CJK_CHAR_RE.match(prev) or _CJK_CHAR_RE.match(text[idx]))


def mostly_cjk(text: str) -> bool:
    """Whether most of ``text``'s letters and digits are :data:`CJK_SCRIPT_CLASS` characters
    (a Chinese question with a Latin name in it still counts; an English one with a Chinese
    term does not)."""
    chars = [c for c in text if c.isalnum()]
    return bool(chars) and 2 * sum(1 for c in chars if _CJK_CHAR_RE.match(c)) > len(chars)


def cjk_bigrams(text: str) -> str:
    """Rewrite every CJK run as space-separated overlapping bigrams (a lone character stays).

    ``unicode61`` treats a whole run of Chinese characters as one token, so a keyword inside a
    sentence can never match. Indexing (and querying) the bigrams makes each two-character window
    a token, which is how Lucene's CJK analyzer works, with no dictionary to ship.
    """

    def split(m: re.Match[str]) -> str:
        run = m.group(0)
        if len(run) == 1:
            return f" {run} "
        return " " + " ".join(run[i : i + 2] for i in range(len(run) - 1)) + " "

    return CJK_RUN_RE.sub(split, text)


_LONE_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def repair_surrogates(text: str) -> tuple[str, int]:
    """``text`` with each lone surrogate (from a JSON ``"\\ud83d"`` escape or an undecodable
    command-line byte: no character, so no UTF-8) replaced by U+FFFD, and how many there were.
    Text from outside (a transcript line, a query) passes here before it is hashed or stored."""
    if not _LONE_SURROGATE_RE.search(text):
        return text, 0
    return _LONE_SURROGATE_RE.subn("\ufffd", text)
