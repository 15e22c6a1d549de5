"""Near-duplicate check of candidates against ``MEMORY.md`` (beyond the reference).

Lexical: token-set Jaccard with each ``MEMORY.md`` item and the share of the candidate's tokens
present anywhere in the file. Semantic: embedding cosine through the index's provider, when it
has one. Informational only: it never gates.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base.sets import jaccard
from ..base.text import cjk_bigrams
from ..read.query import STOP_WORDS, TOKEN_RE
from .memory_file import HEADING_RE, LIST_RE, MARKER_RE, PROMOTED_META_RE, read_memory_text
from .model import DUP_COSINE, DUP_COVERAGE, DUP_JACCARD

if TYPE_CHECKING:
    from ..index import MemoryIndex

_unit_cache: dict[tuple[str, str], np.ndarray] = {}


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


def sim_tokens(text: str) -> set[str]:
    """Similarity tokens: lower case, CJK as bigrams, stop words and bare numbers out."""
    toks = {t.lower() for t in TOKEN_RE.findall(cjk_bigrams(text))}
    return {t for t in toks if t not in STOP_WORDS and not t.isdigit()}


def memory_units(text: str) -> list[tuple[int, str]]:
    """``MEMORY.md`` split into items ``(line, text)``: bullets and paragraphs, without markup.

    Headings and promotion markers are not items; an indented continuation line joins the item
    above it; the ``[score=…]`` metadata of promoted bullets is removed.
    """
    units: list[tuple[int, str]] = []
    # split at "\n" only: U+2028 or NEL inside a bullet ends no Markdown line (splitlines would
    # shift every later line number)
    for i, line in enumerate((x.removesuffix("\r") for x in text.split("\n")), 1):
        s = line.strip()
        if not s or HEADING_RE.match(line) or MARKER_RE.search(s):
            continue
        if units and line[:1] in (" ", "\t") and not LIST_RE.match(line):
            units[-1] = (units[-1][0], units[-1][1] + " " + s)
            continue
        body = PROMOTED_META_RE.sub("", LIST_RE.sub("", line)).strip()
        if body:
            units.append((i, body))
    return units


def _token_jaccard(a: set[str], b: set[str]) -> float:
    """Jaccard where "no tokens" never counts as a match (the shared one says 1.0 for two
    empty sets; a candidate without tokens is not a duplicate of an item without tokens)."""
    if not a or not b:
        return 0.0
    return jaccard(a, b)


def _normalize(m: np.ndarray) -> np.ndarray:
    m = np.atleast_2d(m.astype(np.float32))
    n = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(n == 0, 1.0, n)


def check_duplicates(index: MemoryIndex, snippets: Sequence[str]) -> list[DuplicateInfo | None]:
    """How close each snippet is to what ``MEMORY.md`` already says (beyond the reference).

    ``None`` for a snippet when ``MEMORY.md`` is empty or missing. An embedding failure leaves
    the cosine ``None`` (with a warning), never fails the check.
    """
    if not snippets:
        return []
    text = read_memory_text(index.workspace)
    units = memory_units(text)
    if not units:
        return [None] * len(snippets)
    unit_toks = [sim_tokens(t) for _, t in units]
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
        toks = sim_tokens(snip)
        jac = [_token_jaccard(toks, u) for u in unit_toks]
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
