"""The keyword leg's postings: a sidecar that answers the default profile's OR query exactly as
FTS5 would, without FTS5 scoring every row that matches any term.

Why: FTS5 has no top-k pruning. An OR query computes ``bm25()`` (position lists, a docsize
lookup) for every row that matches any phrase, and a phrase found in most chunks makes that the
whole corpus: ~90 ms a query at 133k chunks, where the vector leg over a mapped matrix costs
~25 ms. So every committed sync of an index of at least :func:`min_rows` rows writes
``<index>.postings``: per term (as FTS5's own tokenizer made it, read from FTS5's ``fts5vocab``
tables, never re-tokenised by us), the rows that contain it and how often, plus each row's token
count. A query then costs one numpy pass per term over that term's rows.

The scores are FTS5's, bit for bit: the same IDF (``log((N − n + 0.5) / (n + 0.5))``, 1e-6 when
not positive, computed by the same C ``log``), the same per-row formula evaluated in the same
order of operations, summed phrase by phrase in query order, and ranked like ``ORDER BY bm25
LIMIT k`` (ties in rowid order). A phrase that FTS5 splits into several tokens (``foo_bar`` →
``foo bar``: positions matter) is asked of FTS5 itself, alone: its contribution to any row is
exactly minus that one-phrase query's ``bm25``, because the IDF depends only on the phrase and N.
``tests/test_postings.py`` checks rows, order and floats against FTS5's own answer.

The sidecar is stamped like the vector one (the index meta's ``builtAt`` and ``generation``); a
stale or missing sidecar is not used and the search runs the FTS5 query as before. A sync that
changed a few rows updates the previous sidecar, streamed a piece at a time (the new rows'
tokens come from an in-memory FTS5 table with the same tokenizer); a new or mostly changed index
is read from FTS5 whole.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import threading
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.indexfiles import IndexFiles
from ..base.locations import env_int
from ..base.lru import Lru
from ..base.sql import sqlite
from ..base.topk import smallest_first
from . import fts_reads as reads
from . import vectors
from .fts import BIGRAM_TABLE, K1, K1_PLUS_1, B, idf
from .sidecar import (
    BlockReader,
    Checks,
    SidecarDamaged,
    StreamWriter,
    id_column,
    ids_at,
    open_mapped,
    sealed,
    source_codes,
    write_file,
)
from .store import Store

if TYPE_CHECKING:
    import numpy as np
else:
    from ..base.lazy import numpy as np

MAGIC = b"MWPOST01"
#: The FTS5 table the sidecar mirrors: the default profile's keyword table.
TABLE = BIGRAM_TABLE
#: Indexes below this many rows get no sidecar: FTS5 answers them in a few milliseconds (at
#: 13k rows its OR query took ~20 ms, the postings < 1 ms).
MIN_ROWS = 5_000
_VOCAB = "mw_postings_vocab"
#: Memory for the per-term score arrays kept between queries (a term in every row of 133k:
#: ~1.6 MB); the oldest go first.
SCORE_CACHE_BYTES = 64 << 20


def _score_bytes(scores: tuple[np.ndarray, np.ndarray]) -> int:
    """What one term's ``(rows, contribution)`` arrays hold (:meth:`Postings.term_scores`)."""
    return int(scores[1].nbytes + scores[0].size * 4)


def min_rows() -> int:
    """The configured threshold (``MEMORY_CORE_POSTINGS_MIN_ROWS``, else :data:`MIN_ROWS`)."""
    return env_int("MEMORY_CORE_POSTINGS_MIN_ROWS", MIN_ROWS)


def sidecar_path(db_path: Path) -> Path:
    """``<index>.postings`` beside the index file."""
    return IndexFiles(db_path).postings


def tokenizer_spec(db: Any, table: str = TABLE) -> str:
    """The ``tokenize=`` argument ``table`` was created with (FTS5's default when none)."""
    row = db.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    m = re.search(r"tokenize\s*=\s*(['\"])(.*?)\1", row[0] if row else "", re.I)
    return m.group(2) if m else "unicode61"


# --------------------------------------------------------------------------- tokenising

_local = threading.local()


def _tokenizer_db(spec: str) -> Any:
    """A per-thread in-memory FTS5 table with tokenizer ``spec`` and its instance vocabulary."""
    conns: dict[str, Any] = getattr(_local, "conns", None) or {}
    _local.conns = conns
    conn = conns.get(spec)
    if conn is None:
        conn = sqlite.connect(":memory:", isolation_level=None, check_same_thread=False)
        quoted = "'" + spec.replace("'", "''") + "'"
        conn.execute(f"CREATE VIRTUAL TABLE tok USING fts5(x, tokenize={quoted})")
        conn.execute("CREATE VIRTUAL TABLE tokv USING fts5vocab(tok, instance)")
        conns[spec] = conn
    return conn


def tokenize(spec: str, texts: Sequence[str]) -> list[list[str]]:
    """Each text's tokens, in order, exactly as an FTS5 table with tokenizer ``spec`` stores
    (and, for a quoted phrase, queries) them."""
    conn = _tokenizer_db(spec)
    out: list[list[str]] = [[] for _ in texts]
    conn.execute("BEGIN")
    try:
        conn.executemany("INSERT INTO tok(rowid, x) VALUES (?, ?)",
                         [(i + 1, t) for i, t in enumerate(texts)])
        for doc, term in conn.execute("SELECT doc, term FROM tokv ORDER BY doc, offset"):
            out[doc - 1].append(term)
    finally:
        conn.execute("ROLLBACK")
    return out


# --------------------------------------------------------------------------- the sidecar


@dataclass
class Postings:
    """A loaded sidecar. Row ``i`` is chunk ``ids[i]`` (rowid ``rowids[i]``, ascending); term
    ``t`` (``terms`` sorted) is in rows ``rows[ptr[t]:ptr[t+1]]`` (ascending) ``tfs[…]`` times."""

    stamp: str
    spec: str
    terms: list[str]
    ptr: np.ndarray  # (T + 1,) int64
    rows: np.ndarray  # (P,) int32
    tfs: np.ndarray  # (P,) uint16 or uint32
    rowids: np.ndarray  # (N,) int64
    ids: np.ndarray  # (N,) bytes
    codes: np.ndarray  # (N,) uint8 index into ``sources``
    sources: list[str]
    doclen: np.ndarray  # (N,) int32: tokens per row (FTS5's docsize)
    total_tokens: int
    checks: Checks | None = field(default=None, repr=False)
    _norm: np.ndarray | None = field(default=None, repr=False)
    _scores: Lru = field(default_factory=lambda: Lru(SCORE_CACHE_BYTES, _score_bytes),
                         repr=False)

    @property
    def n(self) -> int:
        return int(self.rowids.shape[0])

    def term_rows(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, tfs)`` of one term (empty when no row has it)."""
        t = bisect_left(self.terms, term)
        if t == len(self.terms) or self.terms[t] != term:
            return np.zeros(0, np.int32), np.zeros(0, np.uint16)
        a, b = int(self.ptr[t]), int(self.ptr[t + 1])
        if self.checks is not None:  # the first time a term is asked: its blocks only
            self.checks.verify("rows", 4 * a, 4 * b)
            self.checks.verify("tfs", self.tfs.itemsize * a, self.tfs.itemsize * b)
        return self.rows[a:b], self.tfs[a:b]

    def intact(self) -> bool:
        """Whether the file is good (:meth:`~.common.sidecar.Checks.intact`)."""
        return self.checks is None or self.checks.intact()

    def term_scores(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, contribution)``: what one phrase of this single term adds to each row's
        bm25, as FTS5 computes it. Fixed for a given sidecar (N, the term's row count and avgdl
        are), so the arrays of recent terms are kept up to :data:`SCORE_CACHE_BYTES`."""
        scores: tuple[np.ndarray, np.ndarray] = self._scores.get_or(
            term, lambda: self._term_scores(term))
        return scores

    def _term_scores(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        rows, tfs = self.term_rows(term)
        if not rows.size:
            return rows, np.zeros(0, np.float64)
        f = tfs.astype(np.float64)
        return rows, idf(self.n, rows.size) * ((f * K1_PLUS_1) / (f + self.length_norm()[rows]))

    def length_norm(self) -> np.ndarray:
        """Per row, bm25's ``k1 · (1 − b + b · D / avgdl)``, in FTS5's order of operations."""
        if self._norm is None:
            avgdl = float(self.total_tokens) / float(self.n)
            d = self.doclen.astype(np.float64)
            self._norm = K1 * ((1 - B) + (B * d) / avgdl)
        return self._norm

    def phrase_tokens(self, phrases: Sequence[str]) -> list[list[str]]:
        """Each phrase of a MATCH (``"tok"`` strings) as this sidecar's tokenizer splits it."""
        return tokenize(self.spec, [p[1:-1] if len(p) >= 2 and p[0] == p[-1] == '"' else p
                                    for p in phrases])

    def ranked(self, store: Store, table: str, phrases: Sequence[str], pool: int,
               sources: Sequence[str] | None = None) -> list[tuple[str, float]] | None:
        """The top ``pool`` ``(id, bm25)`` of the OR of ``phrases`` (``"tok"`` strings, as in
        the MATCH), as FTS5's ``ORDER BY bm25 LIMIT pool`` gives them; ``None`` when a phrase
        has no token (FTS5's own query decides those)."""
        n = self.n
        if n == 0 or pool <= 0:
            return []
        toks = self.phrase_tokens(phrases)
        if any(not t for t in toks):
            return None
        score = np.zeros(n, np.float64)
        for phrase, terms in zip(phrases, toks, strict=True):
            if len(terms) == 1:
                rows, contrib = self.term_scores(terms[0])
                if not rows.size:
                    continue
            else:  # positions matter: FTS5 scores this phrase alone, exactly as in the OR
                got = reads.phrase_scores(store, table, phrase)
                if not got:
                    continue
                arr = np.asarray(got, dtype=np.float64)
                rows = np.searchsorted(self.rowids, arr[:, 0].astype(np.int64))
                if rows.max(initial=0) >= n or not np.array_equal(
                        self.rowids[np.minimum(rows, n - 1)], arr[:, 0].astype(np.int64)):
                    return None  # the table moved under us: FTS5's own query answers
                contrib = -arr[:, 1]
            score[rows] += contrib
        hit = score > 0.0  # every phrase found in a row adds at least 1e-6 · (…) > 0
        if sources:
            wanted = [i for i, s in enumerate(self.sources) if s in sources]
            if len(wanted) < len(self.sources):
                hit &= np.isin(self.codes, np.asarray(wanted, dtype=np.uint8))
        cand = np.flatnonzero(hit)
        if not cand.size:
            return []
        rank = -1.0 * score[cand]
        top = smallest_first(rank, pool)
        return list(zip(ids_at(self.ids, cand[top]), rank[top].tolist(), strict=True))


def load(db_path: Path, stamp: str | None = None) -> Postings | None:
    """Map ``<index>.postings``; ``None`` if absent, damaged or (given ``stamp``) stale.

    Everything but the posting rows and their term frequencies is verified here (the per-row
    arrays, the terms and their pointers: read whole by any query); those two, term by term
    as queries ask (:meth:`Postings.term_rows`); :meth:`Postings.intact` judges it all.
    """
    got = open_mapped(sidecar_path(db_path), MAGIC, stamp)
    if got is None:
        return None
    header, buf, checks = got
    try:
        o, s = header["offsets"], header["sizes"]
        n, w = int(header["rows"]), int(header["idWidth"])
        for key in ("terms", "ptr", "rowids", "ids", "codes", "doclen"):
            checks.verify(key)

        def arr(key: str, dtype: str) -> np.ndarray:
            return buf[o[key] : o[key] + s[key]].view(dtype)

        raw_terms = bytes(arr("terms", "u1"))
        terms = raw_terms.decode("utf-8").split("\0") if raw_terms else []
        p = Postings(
            header["stamp"], header["spec"], terms, arr("ptr", "<i8"), arr("rows", "<i4"),
            arr("tfs", header["tfType"]), arr("rowids", "<i8"),
            arr("ids", f"S{w}") if w else np.zeros(n, "S1"), arr("codes", "u1"),
            list(header["sources"]), arr("doclen", "<i4"), int(header["totalTokens"]),
            checks)
    except (OSError, ValueError, KeyError, TypeError, OverflowError):  # SidecarDamaged too
        return None
    t = len(p.terms)
    if (p.ptr.shape[0] != t + 1 or any(a.shape[0] != n for a in (p.rowids, p.ids, p.codes,
                                                                   p.doclen))
            or p.rows.shape[0] != p.tfs.shape[0] or int(p.ptr[0]) != 0
            or int(p.ptr[-1]) != p.rows.shape[0] or bool(np.any(np.diff(p.ptr) < 0))
            or (n and int(p.codes.max()) >= max(1, len(p.sources)))):
        return None  # not what write() writes: the search asks FTS5, the next sync rewrites
    return p


def _tf_type(tf_max: int) -> str:
    return "<u2" if tf_max < 65536 else "<u4"


def _layout(stamp: str, spec: str, terms: Sequence[str], ptr: np.ndarray, tf_type: str,
            rowids: np.ndarray, ids: Sequence[bytes] | np.ndarray, sources: Sequence[str],
            doclen: np.ndarray) -> tuple[dict[str, Any], dict[str, bytes], dict[str, bytes]]:
    """The header and every array but the postings' ``rows`` and ``tfs``, which go between
    the two dicts returned (``terms``, ``ptr`` | ``rowids``, ``ids``, ``codes``, ``doclen``)."""
    if any("\0" in t for t in terms):
        raise ValueError("a term holds NUL, the sidecar's separator")
    names, codes = source_codes(sources)
    if isinstance(ids, np.ndarray):  # already the column: :func:`id_column`'s bytes
        w, id_bytes = (ids.itemsize, ids.tobytes()) if ids.size else (0, b"")
    else:
        w, id_bytes = id_column(ids)
    header = {"stamp": stamp, "spec": spec, "rows": len(ids), "idWidth": w, "sources": names,
              "tfType": tf_type, "totalTokens": int(np.sum(doclen, dtype=np.int64))}
    return header, {
        "terms": "\0".join(terms).encode("utf-8"),
        "ptr": np.ascontiguousarray(ptr, "<i8").tobytes(),
    }, {
        "rowids": np.ascontiguousarray(rowids, "<i8").tobytes(),
        "ids": id_bytes,
        "codes": codes.tobytes(),
        "doclen": np.ascontiguousarray(doclen, "<i4").tobytes(),
    }


def write(db_path: Path, stamp: str, spec: str, terms: Sequence[str], ptr: np.ndarray,
          rows: np.ndarray, tfs: np.ndarray, rowids: np.ndarray,
          ids: Sequence[bytes] | np.ndarray, sources: Sequence[str], doclen: np.ndarray
          ) -> Postings | None:
    """Write the sidecar atomically (temp file + rename); returns it loaded."""
    tf_type = _tf_type(int(tfs.max()) if tfs.size else 0)
    header, head, tail = _layout(stamp, spec, terms, ptr, tf_type, rowids, ids, sources, doclen)
    # the postings' columns as views, not ``tobytes`` copies (8 B a posting: ~2 GB at 1M)
    write_file(sidecar_path(db_path), MAGIC, header, {
        **head,
        "rows": np.ascontiguousarray(rows, "<i4").data.cast("B"),
        "tfs": np.ascontiguousarray(tfs, tf_type).data.cast("B"),
        **tail,
    })
    return load(db_path, stamp)


# --------------------------------------------------------------------------- building


@dataclass
class _Rows:
    rowids: np.ndarray
    ids: np.ndarray  # fixed-width ASCII, as wide as the widest id
    sources: list[str]


def _current_rows(db: Any, table: str) -> _Rows:
    # a batch at a time into columns, not fetchall: no list of N tuples nor of N id objects
    # (~180 B a row, 38 MiB at 133k rows); numpy widens the id column to the widest batch's
    rowids: list[np.ndarray] = []
    ids: list[np.ndarray] = []
    sources: list[str] = []
    names: dict[str, str] = {}  # one string per source, not one per row
    got = db.execute(f"SELECT rowid, id, source FROM {table} ORDER BY rowid")
    while batch := got.fetchmany(8192):
        rowids.append(np.fromiter((r[0] for r in batch), np.int64, len(batch)))
        ids.append(np.array([r[1].encode("ascii") for r in batch], np.bytes_))
        sources.extend(names.setdefault(r[2], r[2]) for r in batch)
    return _Rows(np.concatenate(rowids) if rowids else np.zeros(0, np.int64),
                 np.concatenate(ids) if ids else np.zeros(0, "S1"), sources)


def _runs(docs: np.ndarray, starts_of_terms: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                    np.ndarray]:
    """From instances (one ``doc`` each, sorted by term then doc) and where each term's
    instances start, the postings: ``(first instance of each posting, doc, tf)``."""
    new = np.ones(docs.size, bool)
    if docs.size > 1:
        new[1:] = docs[1:] != docs[:-1]
    new[starts_of_terms[starts_of_terms < docs.size]] = True
    first = np.flatnonzero(new)
    tf = np.diff(np.append(first, docs.size))
    return first, docs[first], tf


#: Characters of ``group_concat`` text parsed per ``np.fromstring`` call (bounds the memory of
#: the text held at once: a full read at 1M chunks has ~250M instances).
_PARSE_CHARS = 64 << 20


def _instance_pieces(db: Any, table: str, dtype: Any
                     ) -> Iterator[tuple[list[str], np.ndarray, np.ndarray]]:
    """Every term of ``table``'s vocabulary in FTS5's order, its instance count, and the doc
    (rowid) of every instance, sorted by term then doc, a piece of whole terms at a time (about
    :data:`_PARSE_CHARS` characters of text each): ``(terms, counts, docs)``.

    One row per *term*, its instances' docs joined by SQLite (``group_concat``) and parsed by
    numpy: fetching one Python row per instance (~33M at 133k chunks) was most of a first
    build's postings read (35 s of 238 s at 133k chunks; now ~3 s). fts5vocab delivers rows in
    term order (so ``GROUP BY term`` streams, no sort) and, within a term, by doc then offset;
    :func:`build_full` checks both rather than trusting them.
    """
    terms: list[str] = []
    counts: list[int] = []
    pending: list[str] = []
    size = 0
    for term, n, joined in db.execute(
            f"SELECT term, count(*), group_concat(doc) FROM temp.{_VOCAB}_inst GROUP BY term"):
        terms.append(term)
        counts.append(n)
        pending.append(joined)
        size += len(joined)
        if size >= _PARSE_CHARS:
            yield (terms, np.asarray(counts, np.int64),
                   np.fromstring(",".join(pending), dtype=dtype, sep=","))
            terms, counts, pending, size = [], [], [], 0
    if pending:
        yield (terms, np.asarray(counts, np.int64),
               np.fromstring(",".join(pending), dtype=dtype, sep=","))


def _joined(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    """``parts`` concatenated, each part let go once copied (the peak: the result and one
    part, not the result and every part)."""
    out = np.empty(sum(p.size for p in parts), dtype)
    at = 0
    while parts:
        p = parts.pop(0)
        out[at:at + p.size] = p
        at += p.size
    return out


def build_full(db: Any, table: str = TABLE) -> tuple[list[str], np.ndarray, np.ndarray,
                                                     np.ndarray, _Rows, np.ndarray]:
    """Read the whole table's postings from FTS5's vocabulary, in one read transaction:
    ``(terms, ptr, rows, tfs, current rows, doclen)``.

    The instances are turned into postings a piece of whole terms at a time, so what is held
    is the postings' own columns (``rows`` and ``tfs``, 8 B a posting) and one piece's
    instances, not every instance and its temporaries (~6.9 GB at 1.33M chunks)."""
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_VOCAB}_inst "
               f"USING fts5vocab(main, {table}, instance)")
    terms: list[str] = []
    per_term: list[np.ndarray] = []  # postings of each term
    rows_parts: list[np.ndarray] = []
    tf_parts: list[np.ndarray] = []
    db.execute("BEGIN")
    try:
        cur = _current_rows(db, table)
        n = cur.rowids.size
        wide = n and int(cur.rowids[-1]) >= 2**31
        doclen = np.zeros(n, np.float64)
        for t, counts, docs in _instance_pieces(db, table, np.int64 if wide else np.int32):
            terms.extend(t)
            inst_ptr = np.concatenate([[0], np.cumsum(counts)])
            if inst_ptr[-1] != docs.size:
                raise ValueError("FTS5 instances could not be read whole")
            if docs.size > 1:  # within each term, docs ascending (group_concat kept the order)
                down = np.flatnonzero(docs[1:] < docs[:-1]) + 1
                if not np.isin(down, inst_ptr[1:-1]).all():
                    raise ValueError("FTS5 instances are not in doc order within a term")
            first, post_docs, tf = _runs(docs, inst_ptr[:-1])
            del docs
            per_term.append(np.diff(np.searchsorted(first, inst_ptr)))
            del first
            rows = np.searchsorted(cur.rowids, post_docs).astype(np.int32)
            if rows.size and (rows.max() >= n or not np.array_equal(cur.rowids[rows],
                                                                       post_docs)):
                raise ValueError("FTS5 rows and vocabulary disagree")
            del post_docs
            tf = tf.astype(np.uint32)
            doclen += np.bincount(rows, weights=tf, minlength=n)  # whole numbers: exact
            rows_parts.append(rows)
            tf_parts.append(tf)
    finally:
        db.execute("COMMIT")
    if any(a >= b for a, b in itertools.pairwise(terms)):
        # lookups bisect in Python's order, which is FTS5's (UTF-8 byte order) for valid text
        raise ValueError("FTS5's vocabulary is not in code point order")
    ptr = np.concatenate([[0], np.cumsum(_joined(per_term, np.int64))]).astype(np.int64)
    return (terms, ptr, _joined(rows_parts, np.int32), _joined(tf_parts, np.uint32), cur,
            doclen.astype(np.int32))


def _delta_postings(spec: str, texts: Sequence[str], positions: np.ndarray
                    ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Postings of a few rows (their text and their positions among the new rows), tokenized
    by an in-memory FTS5 table: ``(term per posting, row, tf)`` sorted by term then row, and
    each row's token count."""
    per_row = tokenize(spec, texts)
    pairs = Counter((t, pos) for pos, toks in zip(positions.tolist(), per_row, strict=True)
                    for t in toks)
    keys = sorted(pairs)
    return ([t for t, _ in keys], np.asarray([p for _, p in keys], np.int64),
            np.asarray([pairs[k] for k in keys], np.int64),
            np.asarray([len(t) for t in per_row], np.int64))


def _changed_rows(db: Any, old: Postings, table: str
                  ) -> tuple[_Rows, np.ndarray, np.ndarray, list[str]] | None:
    """The table's current rows, which of them ``old`` holds (by ``(rowid, id)``), the others'
    positions and texts, in one read transaction; ``None`` when those are more than a quarter
    of the rows (a full read is then as fast)."""
    db.execute("BEGIN")
    try:
        cur = _current_rows(db, table)
        keep_new = np.zeros(cur.rowids.size, bool)
        if old.n and cur.rowids.size:  # same rowid, same id: compared as columns, no dict
            at = np.minimum(np.searchsorted(old.rowids, cur.rowids), old.n - 1)
            keep_new = (np.asarray(old.rowids)[at] == cur.rowids) & (
                np.asarray(old.ids)[at] == cur.ids)
        added = np.flatnonzero(~keep_new)
        if added.size > max(1000, cur.rowids.size // 4):
            return None
        texts: list[str] = []
        for i in range(0, added.size, 500):
            part = cur.rowids[added[i : i + 500]].tolist()
            marks = ",".join("?" * len(part))
            got = dict(db.execute(f"SELECT rowid, text FROM {table} WHERE rowid IN ({marks})",
                                  part).fetchall())
            texts.extend(got.get(r) or "" for r in part)
    finally:
        db.execute("COMMIT")
    return cur, keep_new, added, texts


def _kept_positions(old: Postings, cur: _Rows, keep_new: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Where each old row is among the new rows (-1: gone), and the old row of each kept one."""
    old_pos = np.searchsorted(old.rowids, cur.rowids[keep_new])
    new_of_old = np.full(old.n, -1, np.int32)
    new_of_old[old_pos] = np.flatnonzero(keep_new)
    return new_of_old, old_pos


def _new_doclen(old: Postings, n: int, keep_new: np.ndarray, old_pos: np.ndarray,
                added: np.ndarray, d_len: np.ndarray) -> np.ndarray:
    doclen = np.zeros(n, np.int32)
    doclen[keep_new] = np.asarray(old.doclen)[old_pos]
    doclen[added] = d_len
    return doclen


#: Old postings read, mapped and written per piece by :func:`write_delta` (1 MiB of rows).
STREAM_POSTINGS = 1 << 18


def _pieces(total: int) -> Iterator[tuple[int, int]]:
    for a in range(0, total, STREAM_POSTINGS):
        yield a, min(total, a + STREAM_POSTINGS)


def _term_of(o_ptr: np.ndarray, a: int, b: int) -> np.ndarray:
    """The (old) term of each posting ``[a, b)``."""
    t0 = int(np.searchsorted(o_ptr, a, side="right")) - 1
    t1 = int(np.searchsorted(o_ptr, b - 1, side="right"))
    bounds = np.clip(o_ptr[t0 : t1 + 1], a, b)
    return np.repeat(np.arange(t0, t1, dtype=np.int64), np.diff(bounds))


def write_delta(db: Any, old: Postings, db_path: Path, stamp: str, table: str = TABLE) -> bool:
    """Write ``old`` brought up to the table's current rows, the file the tests' in-memory
    oracle (``tests/postings_oracle.py``) + :func:`write` would write, byte for byte, but
    streamed (:class:`StreamWriter`): the old
    postings are read a piece at a time through a file handle (not the mapping: the pages do
    not stay in the process), each block checked against its checksum, the kept ones mapped to
    their new rows and the changed rows' merged in by ``(term, row)``, so no array of all the
    postings is ever whole in memory (they were ~6 bytes a posting, three times over: 346 MiB
    at 133k chunks). ``False`` (nothing written) when a delta would touch more than a quarter
    of the rows; :class:`SidecarDamaged` (nothing written: the temp is removed) when a block of
    ``old`` fails, so damage is never carried over under fresh checksums."""
    got = _changed_rows(db, old, table)
    if got is None or old.checks is None:
        return False
    cur, keep_new, added, texts = got
    n = cur.rowids.size
    new_of_old, old_pos = _kept_positions(old, cur, keep_new)
    o_ptr = np.asarray(old.ptr, np.int64)
    d_terms, d_rows, d_tfs, d_len = _delta_postings(old.spec, texts, added)
    terms, new_ix, d_term = _merged_terms(old.terms, d_terms)
    rows_in, tfs_in = BlockReader.open(old.checks, "rows"), BlockReader.open(old.checks, "tfs")
    try:
        if rows_in is None or tfs_in is None:
            return False  # the file was replaced since it was mapped: read afresh
        old_tf = np.dtype(old.tfs.dtype)  # the header's, little-endian
        # first pass: the postings of rows gone, per term (the file's sizes come first)
        gone, tf_max = _gone_per_term(rows_in, tfs_in, o_ptr, new_of_old, old_tf,
                                      int(d_tfs.max()) if d_tfs.size else 0)
        counts = np.zeros(len(terms), np.int64)
        counts[new_ix] = np.diff(o_ptr) - gone
        np.add.at(counts, d_term, 1)
        ptr = np.concatenate([[0], np.cumsum(counts)])
        tf_type = _tf_type(tf_max)
        doclen = _new_doclen(old, n, keep_new, old_pos, added, d_len)
        header, head, tail = _layout(stamp, old.spec, terms, ptr, tf_type, cur.rowids, cur.ids,
                                     cur.sources, doclen)
        total = int(ptr[-1])
        sizes = {**{k: len(v) for k, v in head.items()}, "rows": 4 * total,
                 "tfs": np.dtype(tf_type).itemsize * total, **{k: len(v) for k, v in tail.items()}}
        d_key = d_term * n + d_rows  # the merge order: by term, then row
        d_rows32, d_tfs = d_rows.astype("<i4"), d_tfs.astype(tf_type)
        with StreamWriter(sidecar_path(db_path), MAGIC, header, sizes) as out:
            for k, v in head.items():
                out.put(k, v)
            d0 = _put_merged(out, rows_in, tfs_in, o_ptr, new_of_old, old_tf, new_ix, n,
                             d_key, d_rows32, d_tfs, tf_type)
            out.put("rows", d_rows32[d0:].data)  # the changed rows' postings after the last kept
            out.put("tfs", d_tfs[d0:].data)
            for k, v in tail.items():
                out.put(k, v)
            rows_in.close()  # before the rename: no handle left on the file it replaces
            tfs_in.close()
            out.commit()
    finally:
        for r in (rows_in, tfs_in):
            if r is not None:
                r.close()
    return True


def _merged_terms(old_terms: list[str], d_terms: list[str]
                  ) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The vocabulary after a delta (``old_terms`` plus the changed rows' ``d_terms``, sorted),
    each old term's index in it (``new_ix``) and each delta posting's (``d_term``), so the old
    postings can be renumbered without a lookup per term."""
    terms = sorted(set(old_terms).union(d_terms)) if d_terms else list(old_terms)
    # each old term's index among ``terms``: itself plus the new terms before it
    fresh = [bisect_left(old_terms, t) for t in sorted(set(d_terms).difference(old_terms))]
    ix = np.arange(len(old_terms), dtype=np.int64)
    new_ix = ix + np.searchsorted(np.asarray(fresh, np.int64), ix, side="right")
    d_term = np.fromiter((bisect_left(terms, t) for t in d_terms), np.int64, len(d_terms))
    return terms, new_ix, d_term


def _gone_per_term(rows_in: BlockReader, tfs_in: BlockReader, o_ptr: np.ndarray,
                   new_of_old: np.ndarray, old_tf: np.dtype[Any], tf_max: int
                   ) -> tuple[np.ndarray, int]:
    """The first pass of :func:`write_delta` over the old postings, a piece at a time: how many
    of each old term's postings belong to rows gone (the new file's sizes are written first),
    and the largest term frequency kept, starting from the delta's ``tf_max`` (it picks the
    new file's tf type)."""
    gone = np.zeros(o_ptr.size - 1, np.int64)
    for a, b in _pieces(int(o_ptr[-1])):
        live = new_of_old[np.frombuffer(rows_in.read(4 * a, 4 * b), "<i4")] >= 0
        if not live.all():
            gone += np.bincount(_term_of(o_ptr, a, b)[~live], minlength=o_ptr.size - 1)
        if old_tf.itemsize > 2:  # only then can a kept tf be ≥ 65536
            tf = np.frombuffer(tfs_in.read(old_tf.itemsize * a, old_tf.itemsize * b), old_tf)
            tf_max = max(tf_max, int(tf[live].max(initial=0)))
    return gone, tf_max


def _put_merged(out: StreamWriter, rows_in: BlockReader, tfs_in: BlockReader,
                o_ptr: np.ndarray, new_of_old: np.ndarray, old_tf: np.dtype[Any],
                new_ix: np.ndarray, n: int, d_key: np.ndarray, d_rows32: np.ndarray,
                d_tfs: np.ndarray, tf_type: str) -> int:
    """The second pass of :func:`write_delta`: write the kept old postings, a piece at a time,
    renumbered to their new rows and terms, with the changed rows' postings merged in by
    ``(term, row)`` (``d_key``); return how many of those were written (the rest come after
    the last kept posting)."""
    d0 = 0
    for a, b in _pieces(int(o_ptr[-1])):
        rows = new_of_old[np.frombuffer(rows_in.read(4 * a, 4 * b), "<i4")]
        tfs = np.frombuffer(tfs_in.read(old_tf.itemsize * a, old_tf.itemsize * b),
                            old_tf).astype(tf_type)
        live = rows >= 0
        some_gone = not live.all()
        if some_gone:
            rows, tfs = rows[live], tfs[live]
        if d0 < d_key.size and rows.size:
            term = new_ix[_term_of(o_ptr, a, b)]
            key = (term[live] if some_gone else term) * n + rows
            d1 = int(np.searchsorted(d_key, key[-1]))
            at = np.searchsorted(key, d_key[d0:d1])
            rows = np.insert(rows, at, d_rows32[d0:d1])
            tfs = np.insert(tfs, at, d_tfs[d0:d1])
            d0 = d1
        out.put("rows", rows.astype("<i4", copy=False).data)
        out.put("tfs", tfs.data)
    return d0


def refresh(store: Store, *, force_full: bool = False,
            progress: Callable[[str, int, int], None] | None = None) -> str:
    """Bring ``<index>.postings`` up to the store's committed state. Returns what was done:
    ``fresh``, ``delta``, ``full``, ``removed`` (below :func:`min_rows`) or ``none``.
    ``force_full``: read FTS5 whole even when the sidecar looks fresh (``index --verify``).
    ``progress(stage, done, total)`` hears the start and the end of a rewrite (a full read
    takes ~10–20 s at 133k chunks)."""
    if not store.fts_available:
        return "none"
    stamp = vectors.stamp_of(store.get_meta())
    path = sidecar_path(store.path)
    n_rows = reads.row_count(store, TABLE)
    if n_rows < min_rows():
        if path.exists():
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
            _cache.pop(str(store.path), None)
            return "removed"
        return "none"
    if not force_full:
        if sealed(path, MAGIC, stamp):  # from the header: no mapping, no numpy
            return "fresh"
        current = load(store.path, stamp)
        if current is not None and current.intact():
            return "fresh"  # the common no-op sync: the stamp matches, the file is good
    spec = tokenizer_spec(store.db)
    if progress is not None:
        progress("keyword postings", 0, n_rows)
    how = "full"
    old = None if force_full else load(store.path)  # its postings checked as they are read
    if old is not None and old.spec == spec:
        with contextlib.suppress(SidecarDamaged):  # a damaged one is not updated: read afresh
            if write_delta(store.db, old, store.path, stamp):
                how = "delta"
    del old
    if how == "full":
        terms, ptr, rows, tfs, cur, doclen = build_full(store.db)
        write(store.path, stamp, spec, terms, ptr, rows, tfs, cur.rowids, cur.ids,
              cur.sources, doclen)
    if progress is not None:
        progress("keyword postings", n_rows, n_rows)
    return how


_cache: dict[str, tuple[tuple[str, int, int, int], Postings]] = {}
_cache_lock = threading.Lock()


def for_store(store: Store, *, verify: bool = False) -> Postings | None:
    """The mapped sidecar of ``store`` if it matches the index's committed state and was not
    found damaged, else ``None`` (kept mapped between queries; re-mapped when a sync replaced
    it). ``verify``: check all of it now (``status``)."""
    stamp = vectors.stamp_of(store.get_meta())
    key = str(store.path)
    try:
        st = os.stat(sidecar_path(store.path))
    except OSError:
        return None
    ident = (stamp, st.st_ino, st.st_mtime_ns, st.st_size)  # a rewrite (verify) is a new file
    with _cache_lock:
        got = _cache.get(key)
    if got is not None and got[0] == ident and not (got[1].checks and got[1].checks.damaged):
        return got[1] if not verify or got[1].intact() else None
    p = load(store.path, stamp)
    if verify and p is not None and not p.intact():
        p = None
    with _cache_lock:
        if p is None:
            _cache.pop(key, None)
        else:
            _cache[key] = (ident, p)
    return p
