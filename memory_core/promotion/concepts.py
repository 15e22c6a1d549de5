"""Concept tags of a recall entry: ``deriveConceptTags``, simplified (spec §6.4 "conceptual").

Glossary terms first, then compound tokens (``crawler/db.py``), then words; at most eight.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import PurePosixPath

from ..read.query import STOP_WORDS
from .model import MAX_CONCEPT_TAGS

#: Protected glossary terms, taken first (§6.4), with equivalents in a few languages.
GLOSSARY = (
    "backup", "embedding", "gateway", "router", "vlan", "qmd", "s3",
    "备份", "嵌入", "网关", "路由器", "sauvegarde", "passerelle", "routeur", "respaldo",
    "enrutador", "sicherung", "バックアップ", "ルーター",
)
TAG_STOP_WORDS = STOP_WORDS | frozenset(
    """not now new one two day days via per only more most still since until because rather
    almost always same other each every over under out off too very much many first last next
    yes done todo then than also just got get set use used using need needs make made still
    md ts js json txt yaml yml py html http https www com org net tmp log logs dev""".split()
) | frozenset("los las una por para con que del les des une pour avec der die das und mit".split())

# The three scripts are kept apart here (a tag is a run of ONE script), so the union
# ``memory_core.base.text.CJK_SCRIPT_CLASS`` cannot be used as is; together they are exactly it.
#: Hiragana and katakana.
KANA_CLASS = "\u3040-\u30ff"
#: Han: Extension A, Unified Ideographs, compatibility ideographs.
HAN_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
#: Hangul syllables.
HANGUL_CLASS = "\uac00-\ud7af"

_COMPOUND_RE = re.compile(r"[\w]+(?:[./-][\w]+)+")
_SCRIPT_RE = re.compile(
    rf"[{KANA_CLASS}]+|[{HAN_CLASS}]+|[{HANGUL_CLASS}]+|[^\W]+")
_KANA_RE = re.compile(rf"^[{KANA_CLASS}]+$")
_HAN_RE = re.compile(rf"^[{HAN_CLASS}{HANGUL_CLASS}]+$")
_NUMBER_RE = re.compile(r"^[\d.,:%+\-/]+$")
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}|^\d{1,2}:\d{2}")
_EDGE_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^`{|}~…“”‘’«»「」『』（）【】，。、；：！？"
_CJK_FUNCTION_CHARS = re.compile("[的了是在和与或也都就把被从到给对为着过吗呢吧啊这那个一不有]+")


def _tag_ok(tok: str) -> bool:
    if not tok or len(tok) > 32 or tok in TAG_STOP_WORDS:
        return False
    if _NUMBER_RE.match(tok) or _DATE_RE.search(tok):
        return False
    if _KANA_RE.match(tok):
        return len(tok) >= 3
    if _HAN_RE.match(tok):
        return len(tok) >= 2
    return not (tok.isascii() and len(tok) < 3)


def segment_cjk(run: str) -> list[str]:
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


def derive_concept_tags(path: str, snippet: str) -> list[str]:
    """``deriveConceptTags``, simplified: at most eight tags from the file name and snippet.

    Order as in the reference: glossary terms present, then compound tokens (``a.b``, ``a/b``,
    ``a-b``), then word segments. The reference segments words with ``Intl.Segmenter``; here a
    word is a run of one script (there is no dictionary segmenter in the standard library): Han
    runs are cut at function characters, and pieces longer than four characters into pairs.
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
            raw.extend(segment_cjk(tok))
        else:
            raw.append(tok)
    out: list[str] = []
    for tok in raw:
        t = tok.strip(_EDGE_PUNCT).replace("_", "-")
        if _tag_ok(t) and t not in out:
            out.append(t)
            if len(out) >= MAX_CONCEPT_TAGS:
                break
    return out
