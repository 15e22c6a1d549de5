"""The keyword postings' in-memory delta, kept as the tests' oracle (not shipped): the sync
streams the same file (``postings.write_delta``), and ``tests/test_postings.py`` checks that
stream, and the incremental update, against this whole form."""

from __future__ import annotations

from typing import Any

import numpy as np

from memory_core.storage import postings
from memory_core.storage.postings import TABLE, Postings


def build_delta(db: Any, old: Postings, table: str = TABLE
                ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, Any,
                           np.ndarray] | None:
    """``old`` brought up to the table's current rows, in memory: kept rows keep their
    postings, rows gone lose them, new or changed rows (by ``(rowid, id)``) are tokenized
    afresh. ``None`` when that would touch more than a quarter of the rows. A sync streams the
    same file instead (``postings.write_delta``: no array of all the postings in memory); this
    whole form is what the tests check that stream against."""
    got = postings._changed_rows(db, old, table)
    if got is None:
        return None
    cur, keep_new, added, texts = got
    n = cur.rowids.size
    new_of_old, old_pos = postings._kept_positions(old, cur, keep_new)
    o_rows = new_of_old[old.rows]  # int32, one per old posting; -1: the row is gone
    live = o_rows >= 0
    # postings each old term keeps: its count less those of rows gone (few: no pass over all)
    o_ptr = np.asarray(old.ptr, np.int64)
    dropped = np.flatnonzero(~live)
    o_counts = np.diff(o_ptr) - np.bincount(
        np.searchsorted(o_ptr, dropped, side="right") - 1, minlength=len(old.terms))
    o_rows = o_rows[live]
    o_tfs = np.asarray(old.tfs)[live]
    del live
    d_terms, d_rows, d_tfs, d_len = postings._delta_postings(old.spec, texts, added)
    terms = sorted(set(old.terms).union(d_terms)) if d_terms else list(old.terms)
    counts = np.zeros(len(terms), np.int64)
    if old.terms:
        counts[np.searchsorted(terms, old.terms)] = o_counts
    base = np.concatenate([[0], np.cumsum(counts)])  # each term's start among kept postings
    d_term = np.searchsorted(terms, d_terms) if d_terms else np.zeros(0, np.int64)
    at = np.empty(d_rows.size, np.int64)
    for i in range(d_rows.size):  # a few postings per changed row: a search each
        lo, hi = int(base[d_term[i]]), int(base[d_term[i] + 1])
        at[i] = lo + int(np.searchsorted(o_rows[lo:hi], d_rows[i]))
    if d_rows.size:
        wide = o_tfs.dtype != np.uint16 or int(d_tfs.max()) >= 65536
        tf_type = np.uint32 if wide else np.uint16
        rows = np.insert(o_rows, at, d_rows.astype(np.int32))
        tfs = np.insert(o_tfs.astype(tf_type, copy=False), at, d_tfs.astype(tf_type))
    else:  # only rows gone: nothing to merge in
        rows, tfs = o_rows, o_tfs
    np.add.at(counts, d_term, 1)
    ptr = np.concatenate([[0], np.cumsum(counts)])
    # a term no row has any more keeps an empty range: harmless, dropped at the next full read
    doclen = postings._new_doclen(old, n, keep_new, old_pos, added, d_len)
    return terms, ptr, rows, tfs, cur, doclen
