"""What the Embedding map draws: each chunk's embedding aligned with its row, and the selection.

The index returns embeddings (``MemoryIndex.embeddings``) and chunk rows (``MemoryIndex.chunks``)
separately; an embedding whose chunk is gone (a file deleted since, a cache row) must not become a
point. :func:`load_points` keeps the chunks present in both, in the embeddings' order, so that
row *i* of the matrix, of the coordinates and of :attr:`MapPoints.info` is the same chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memory_core import MemoryIndex
from memory_core import evaluation as ev
from memory_core.base.lru import Lru
from memory_core.evaluation import EvalQuery

from . import charts
from .maplayers import chunk_kind, supersession_groups
from .projection import chunk_date, fingerprint

#: The columns of :attr:`MapPoints.info`, one row per point.
INFO_COLUMNS = ["id", "path", "source", "kind", "lines", "start", "end", "date", "snippet",
                "supersession", "superseded_by"]
#: Most points a map draws and fits (issue #10 item 7): above it a fixed, seeded sample, so the
#: projection (and its disk cache) does not change with the query; the query's hits outside
#: the sample are placed on the map by :meth:`MapPoints.vector_of` (see the page).
MAX_POINTS = 20_000
#: Above this many points the 2-D map draws with WebGL (plotly's Scattergl): SVG slows down
#: past a few thousand markers, while below it SVG points stay individually clickable.
WEBGL_ABOVE = 5_000


#: Reads the stored embeddings of chunk ids (:meth:`MemoryIndex.embeddings_of`).
VectorLookup = Callable[[Sequence[str]], dict[str, np.ndarray]]


@dataclass
class MapPoints:
    """The chunks with an embedding: ids, the float32 matrix, a table of what each point is."""

    ids: list[str]
    matrix: np.ndarray
    info: pd.DataFrame
    fingerprint: str
    #: chunks with an embedding before sampling (``len(self)`` when nothing was left out)
    total: int = -1
    #: reads any chunk's embedding, to place a hit the sample left out (never the whole matrix)
    lookup: VectorLookup | None = None
    position: dict[str, int] = field(init=False)
    #: per point: [id, "path#lines", hover text], an object array (what the map's traces carry)
    custom: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.position = {cid: i for i, cid in enumerate(self.ids)}
        if self.total < 0:
            self.total = len(self.ids)
        # once per map, not per rerun: wrapping 20k snippets took seconds on every click
        lines = 6 if len(self.ids) <= WEBGL_ABOVE else 3  # 20k hovers are sent at each rerun
        self.custom = np.empty((len(self.ids), 3), dtype=object)
        for i, r in enumerate(self.info.itertuples(index=False)):
            self.custom[i] = (r.id, f"{r.path}#{r.lines}", charts.wrap(r.snippet, 60, lines))

    @property
    def sampled(self) -> bool:
        """Whether the map shows a sample of the chunks."""
        return self.total > len(self.ids)

    def vector_of(self, cid: str) -> np.ndarray | None:
        """The embedding of any chunk of the index, drawn or not (``None`` if it has none)."""
        if cid in self.position:
            return self.matrix[self.position[cid]]
        if not self.sampled or self.lookup is None:
            return None
        return self.lookup([cid]).get(cid)

    def __len__(self) -> int:
        return len(self.ids)


def load_points(idx: MemoryIndex, max_points: int = MAX_POINTS,
                progress: Callable[[int, int], None] | None = None) -> MapPoints:
    """The index's embeddings aligned with their chunk rows (empty for a keyword-only index);
    above ``max_points``, a seeded uniform sample of them (same sample on every run), read
    without the other rows' vectors (:meth:`MemoryIndex.embedding_sample`)."""
    sample = idx.embedding_sample(max_points, progress=progress)
    ids, matrix = sample.ids, sample.matrix
    # only the drawn chunks' rows: never 133k chunk texts for a 20k-point map
    rows = idx.chunk_rows(ids) if len(ids) else {}
    keep = [i for i, cid in enumerate(ids) if cid in rows]
    kept_ids = [ids[i] for i in keep]
    m = np.asarray(matrix[keep], dtype=np.float32) if keep else np.zeros((0, 0), np.float32)
    info = pd.DataFrame([{
        "id": cid, "path": rows[cid].path, "source": rows[cid].source,
        "kind": chunk_kind(rows[cid].path, rows[cid].source),
        "lines": f"L{rows[cid].start_line}–L{rows[cid].end_line}",
        "start": rows[cid].start_line, "end": rows[cid].end_line,
        "date": chunk_date(rows[cid].path),
        "snippet": rows[cid].text,
    } for cid in kept_ids], columns=INFO_COLUMNS)
    # issue #34: superseded / current / unchanged, from the relation stored with the index
    spans = [(cid, rows[cid].path, rows[cid].start_line, rows[cid].end_line) for cid in kept_ids]
    info["supersession"], info["superseded_by"] = supersession_groups(idx.supersessions(), spans)
    sampled = sample.total > len(ids)
    return MapPoints(kept_ids, m, info, fingerprint(kept_ids, int(m.shape[1]) if keep else 0),
                     total=sample.total if sampled else len(kept_ids),
                     lookup=idx.embeddings_of if sampled else None)


#: Maps kept per server process (one per open index and generation; 20k points are ~40 MB).
_points = Lru(2)


def cached_points(idx: MemoryIndex, max_points: int = MAX_POINTS,
                  progress: Callable[[int, int], None] | None = None) -> MapPoints:
    """:func:`load_points`, once per index generation for the whole server: every rerun of the
    map (a colour, a slider, a click) reused to re-read 20k rows (and, before the sample was
    read on its own, every embedding: 7.5 s at 133k chunks). The page copies ``info`` before
    adding columns to it: the points are shared by every session."""
    return _points.get_or((str(idx.store_path), idx.generation, max_points),
                          lambda: load_points(idx, max_points, progress))


def selected_ids(event: Any, known: Iterable[str]) -> list[str]:
    """Chunk ids of the points a plotly selection event holds, in order, once each.

    Every trace of the map carries the chunk id as ``customdata[0]``; ids not in ``known`` (the
    query marker) are ignored.
    """
    allowed = set(known)
    out: list[str] = []
    for p in ((event or {}).get("selection") or {}).get("points", []):
        cd = p.get("customdata")
        cid = cd[0] if isinstance(cd, list | tuple) and cd else None
        if cid in allowed and cid not in out:
            out.append(cid)
    return out


def labelled_queries(workspace: Path) -> dict[str, EvalQuery]:
    """The labelled queries judged against ``workspace`` (or a copy of it), by a display label:
    what the map's gold colouring can show. BEIR sets are left out (their workspace is built
    from the corpus on first use, minutes for SciFact)."""
    out: dict[str, EvalQuery] = {}
    for name in ev.available_query_sets():
        if name in ev.BEIR_SETS:
            continue
        try:
            qs = ev.load_query_set(name)
        except Exception:  # a set that cannot load (missing data, a bad file) offers none
            continue
        for q in qs.queries:
            ws = qs.workspaces.get(q.workspace)
            if ws is not None and q.relevant and ev.same_workspace(ws, workspace):
                out[f"{q.qid}: {q.query}"[:90]] = q
    return out
