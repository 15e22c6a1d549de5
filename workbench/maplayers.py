"""What the Embedding map colours its points by, and what a clicked point shows.

Pure functions over the map's points (:class:`workbench.mapdata.MapPoints`): no Streamlit, so
each is tested directly. The page picks a colouring; this module turns it into one label (or
one number) per point and a palette that never gives two groups the same colour:

* **kind**: ``MEMORY.md``, diary, note, transcript — what a reader of the workspace calls them;
* **file**: the most frequent files each get a colour of their own, the rest are "other files"
  (a repeating 10-colour palette made MEMORY.md and a diary look alike);
* **cluster**: k-means groups named by their most distinctive words;
* **supersession** (issue #34): a chunk covering a statement a later line superseded, one
  holding the statement that superseded it (current), or neither;
* for the current query: **similarity** to it (every point), the hits' **rank** and **leg**;
  for a labelled query: **gold** (a chunk covering an evidence line), found or missed.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from memory_core import Hit
from memory_core.base.dates import path_date
from memory_core.base.supersession import Supersession, chunk_marks

#: Distinct colours (Plotly's Dark24 and Alphabet palettes, greys left out): groups beyond
#: these are pooled as "other", which is drawn grey.
PALETTE = [
    "#2E91E5", "#E15F99", "#1CA71C", "#FB0D0D", "#DA16FF", "#B68100", "#750D86", "#EB663B",
    "#511CFB", "#00A08B", "#FB00D1", "#FC0080", "#B2828D", "#6C7C32", "#778AAE", "#862A16",
    "#A777F1", "#620042", "#1616A7", "#DA60CA", "#6C4516", "#0D2A63", "#AF0038", "#3283FE",
]
OTHER = "#BBBBBB"
#: How many files get a colour of their own before the rest are pooled.
TOP_FILES = 16
KINDS = ("MEMORY.md", "diary", "note", "transcript")
KIND_COLOURS = {"MEMORY.md": "#E45756", "diary": "#4C78A8", "note": "#54A24B",
                "transcript": "#F58518"}
#: The gold colouring's groups, in legend order.
GOLD_GROUPS = ("gold, found", "gold, missed", "hit, not gold", "other")
GOLD_COLOURS = {"gold, found": "#1CA71C", "gold, missed": "#FB0D0D",
                "hit, not gold": "#2E91E5", "other": "#DDDDDD"}
LEG_GROUPS = ("both legs", "vector leg", "keyword leg", "not a hit")
LEG_COLOURS = {"both legs": "#750D86", "vector leg": "#2E91E5", "keyword leg": "#EB663B",
               "not a hit": "#DDDDDD"}
#: The supersession colouring's groups (:func:`supersession_groups`), in legend order.
SUPERSESSION_GROUPS = ("superseded", "current", "unchanged")
SUPERSESSION_COLOURS = {"superseded": "#FB0D0D", "current": "#1CA71C", "unchanged": "#DDDDDD"}
_VIA = {"both": "both legs", "vector": "vector leg", "keyword": "keyword leg"}


def chunk_kind(path: str, source: str) -> str:
    """What a chunk's file is to the agent: its ``MEMORY.md``, a dated diary, a note (any
    other Markdown: an extra path, an undated file) or a session transcript."""
    if source == "sessions" or path.endswith(".jsonl"):
        return "transcript"
    name = path.rsplit("/", 1)[-1]
    if name in ("MEMORY.md", "memory.md") and "/" not in path:
        return "MEMORY.md"
    if path.startswith("memory/") and path_date(path) is not None:
        return "diary"
    return "note"


def group_colours(groups: Sequence[str], top: int = TOP_FILES,
                  other: str = "other files") -> tuple[list[str], dict[str, str]]:
    """Each point's group, the ``top`` most frequent groups kept and the rest pooled as
    ``other``, and a colour per group with no colour used twice (``other`` is grey)."""
    counts = Counter(groups)
    kept = [g for g, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    kept = kept[:min(top, len(PALETTE))]
    keep = set(kept)
    labels = [g if g in keep else other for g in groups]
    colours = {g: PALETTE[i] for i, g in enumerate(sorted(kept))}
    if len(keep) < len(counts):
        colours[other] = OTHER
    return labels, colours


_WORD = re.compile(r"[A-Za-z][A-Za-z_-]{2,}|[\u4e00-\u9fff]{2,}")
_STOP = frozenset("""the and for was were with that this from have has had not but are our you
they them their its his her she him all any can will would could should into onto out over
than then when what which who whom why how about after before been being did does done each
few more most other some such only own same too very just also there here where while said
user assistant session""".split())


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP]


def cluster_names(labels: Sequence[int], texts: Sequence[str], n_terms: int = 3
                  ) -> dict[int, str]:
    """Name each cluster by its most distinctive words: how often a word occurs in the
    cluster's chunks against how many chunks of the whole map hold it (tf × idf), so that a
    word every chunk shares ("crawler" in a crawler's diary) names no cluster."""
    docs = [set(_words(t)) for t in texts]
    df = Counter(w for d in docs for w in d)
    n = max(1, len(docs))
    names: dict[int, str] = {}
    for c in sorted(set(int(x) for x in labels)):
        tf: Counter[str] = Counter()
        for lab, text in zip(labels, texts, strict=True):
            if int(lab) == c:
                tf.update(_words(text))
        scored = sorted(tf, key=lambda w: (-tf[w] * math.log(n / df[w] + 1.0), w))
        top = scored[:n_terms]
        names[c] = f"{c + 1}: " + (", ".join(top) if top else "(no words)")
    return names


def nearest(matrix: np.ndarray, vec: np.ndarray, k: int = 8, skip: int | None = None
            ) -> list[tuple[int, float]]:
    """The ``k`` rows of ``matrix`` (unit vectors) most similar to ``vec`` by cosine, best
    first, leaving out row ``skip`` (the clicked point itself)."""
    if matrix.size == 0:
        return []
    sims = similarity(matrix, vec)
    if skip is not None:
        sims[skip] = -np.inf
    k = min(k, len(sims) - (skip is not None))
    order = np.argsort(-sims, kind="stable")[:max(0, k)]
    return [(int(i), float(sims[i])) for i in order]


def similarity(matrix: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """Every point's cosine with the query: a colour a reader can check against the ranking."""
    v = np.asarray(vec, dtype=np.float32).reshape(-1)
    return matrix @ (v / (float(np.linalg.norm(v)) or 1.0))


def leg_groups(ids: Sequence[str], hits: Iterable[Hit]) -> list[str]:
    """Each point's leg group: which leg found it among the current hits, or "not a hit"."""
    via = {h.id: _VIA.get(h.via, "both legs") for h in hits}
    return [via.get(cid, "not a hit") for cid in ids]


def ranks(ids: Sequence[str], hits: Iterable[Hit]) -> list[float]:
    """Each point's rank among the current hits, in their order (NaN when it is not one)."""
    rank = {h.id: float(r) for r, h in enumerate(hits, 1)}
    return [rank.get(cid, math.nan) for cid in ids]


def covers(path: str, start: int, end: int, evidence: Iterable[tuple[str, int | None]]) -> bool:
    """Whether a chunk covers an evidence line (same path, the line in its range); evidence
    without a line is judged at file level (any chunk of the file)."""
    return any(p == path and (line is None or start <= line <= end) for p, line in evidence)


def gold_groups(ids: Sequence[str], gold: set[str], hit_ids: Iterable[str]) -> list[str]:
    """Each point's gold group for a labelled query: gold found among the hits, gold missed,
    a hit that is not gold, or other."""
    found = set(hit_ids)
    out = []
    for cid in ids:
        if cid in gold:
            out.append("gold, found" if cid in found else "gold, missed")
        else:
            out.append("hit, not gold" if cid in found else "other")
    return out


def supersession_groups(rows: Sequence[Supersession],
                        chunks: Sequence[tuple[str, str, int, int]]
                        ) -> tuple[list[str], list[str]]:
    """Each ``(id, path, start_line, end_line)`` chunk's supersession group and, for a
    superseded one, the newer line's citation (``path#L<n>``, what ``supersededBy`` says;
    "" otherwise). The groups are :func:`memory_core.base.supersession.chunk_marks`'s, the
    ones ranking uses: a chunk holding both a superseded and a current statement is current."""
    marks = chunk_marks(rows, chunks)
    groups, newer = [], []
    for cid, *_ in chunks:
        by = marks.superseded.get(cid, "")
        groups.append("superseded" if by else "current" if cid in marks.current
                      else "unchanged")
        newer.append(by)
    return groups, newer


def date_scale(dates: list[str], ticks: int = 6) -> tuple[np.ndarray, list[float], list[str]]:
    """Dates (``YYYY-MM-DD`` or "undated") as days since the first one, NaN where undated, and
    a colour bar's tick values and labels: a continuous scale, where one legend entry per day
    (~130 on the demo home, colours repeating) said nothing of which day is older."""
    parsed = pd.to_datetime(pd.Series(dates), format="%Y-%m-%d", errors="coerce")
    if parsed.notna().sum() == 0:
        return np.full(len(dates), np.nan), [], []
    first = parsed.min()
    days = ((parsed - first).dt.days).to_numpy(dtype=float)
    span = float(np.nanmax(days))
    vals = sorted({round(span * i / max(1, ticks - 1)) for i in range(ticks)})
    labels = [(first + pd.Timedelta(days=v)).date().isoformat() for v in vals]
    return days, [float(v) for v in vals], labels
