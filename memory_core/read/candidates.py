"""The values that flow from the search legs into fusion.

``Candidates`` is what one query fetched from each leg, once: plain, immutable and cacheable. The
workbench's sliders, the evaluator's sweeps and the tests all re-fuse the same ``Candidates``
with different settings, without touching SQL or the embedding model again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..storage.fts import REFERENCE_TABLE


@dataclass(frozen=True)
class ChunkInfo:
    """What fusion and the result shape need to know about a chunk."""

    id: str
    path: str
    source: str
    start_line: int
    end_line: int
    text: str
    mtime_ms: int = 0


@dataclass(frozen=True)
class LegHit:
    """One leg's view of a chunk: its score there, its 1-based rank, the raw value behind it.

    For the vector leg ``raw`` is the cosine similarity (= ``score``); for the keyword leg it is
    FTS5's ``bm25()`` rank (negative, smaller is better) and ``score`` its reference mapping.
    """

    id: str
    score: float
    rank: int
    raw: float


@dataclass(frozen=True)
class Candidates:
    """Everything one query fetched: the legs' ranked hits and the chunks they point at.

    ``mode`` is ``hybrid`` (both legs), ``fts-only`` (no embedding provider) or ``vector-only``
    (no FTS5). ``keyword_fallback`` holds the per-keyword searches the reference runs in FTS-only
    mode when the whole query matched nothing.
    """

    query: str
    mode: str
    vector: tuple[LegHit, ...]
    keyword: tuple[LegHit, ...]
    chunks: dict[str, ChunkInfo]
    pool: int
    keyword_query: str | None = None
    keyword_table: str = REFERENCE_TABLE
    keyword_fallback: tuple[tuple[LegHit, ...], ...] = ()
    keyword_fallback_terms: tuple[str, ...] = ()  # the keyword each fallback list searched
    timings_ms: dict[str, float] = field(default_factory=dict)
    #: ``None``: ``chunks`` holds every hit's row. A number: only each leg's first that many
    #: (what one fusion with ``candidate_count()`` up to it reads; see ``fetch_candidates``).
    rows_for: int | None = None
    #: The OR keyword query's phrases' document counts on ``keyword_table`` and that table's row
    #: count (bm25's ``nHit`` and ``N``): what the query's own best possible bm25 is made of, so
    #: fusion can read a keyword hit against it (absolute evidence,
    #: ``memory_core.read.calibration``).
    #: Empty for the reference's AND query.
    keyword_df: tuple[int, ...] = ()
    keyword_rows: int = 0
    #: Why the answer is not what the mode promises ("" when it is): the query's embedding
    #: failed and the keyword leg answered alone.
    note: str = ""
    #: The supersession facts of these chunks (``memory_core.base.supersession.chunk_marks``): a
    #: chunk covering a statement a later line superseded → that line's citation; the chunks
    #: holding a current statement (one that superseded another and still stands); each
    #: marked chunk's attributes (their subject words).
    superseded: dict[str, str] = field(default_factory=dict)
    current: frozenset[str] = frozenset()
    subjects: dict[str, tuple[frozenset[str], ...]] = field(default_factory=dict)
