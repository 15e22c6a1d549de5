"""The keyword leg's conformance test: its fast path, the postings sidecar (issue #10 item 2),
answers the default profile's OR query in numpy and must give FTS5's own ``ORDER BY bm25 LIMIT
pool`` (the reference path), row for row and float for float.

The corpus is built to make that hard: words in most chunks (IDF clamped to 1e-6), duplicate
chunks (exact ties, rowid order), stems (``camping`` / ``camp``), accents, identifiers that FTS5
splits into multi-token phrases (``deploy_script``), Chinese bigrams, repeated words (tf up to
dozens) and chunk lengths from a few tokens to hundreds. Real SQLite and FTS5, keyword-only
index; the threshold is lowered so this small index gets a sidecar.
"""

from __future__ import annotations

import json
import math
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_core import MemoryIndex
from memory_core.base.config import profile_settings
from memory_core.read.keyword import keyword_leg, or_query_topk
from memory_core.read.query import or_fts_query
from memory_core.storage import fts_reads as reads
from memory_core.storage import postings
from memory_core.storage.fts import phrase_bound
from tests.postings_oracle import build_delta

TABLE = postings.TABLE
COMMON = "server database deploy alert backup".split()
MEDIUM = [f"topic{i}" for i in range(30)] + ["camping", "camps", "café", "naïve", "deploy_script",
                                             "user_id", "v2", "HTTP2"]
RARE = [f"rare{i}" for i in range(120)]


def _line(rng: random.Random, i: int) -> str:
    words = [w for w in COMMON if rng.random() < 0.8]
    words += rng.sample(MEDIUM, rng.randint(1, 3)) + rng.sample(RARE, rng.randint(0, 2))
    if i % 9 == 0:
        words.append("熔断器触发了告警")
    if i % 50 == 0:
        words += ["backup"] * 40  # a high term frequency
    rng.shuffle(words)
    return " ".join(words * rng.randint(1, 3))


def _workspace(root: Path) -> Path:
    rng = random.Random(11)
    mem = root / "memory"
    mem.mkdir(parents=True)
    lines = [_line(rng, i) for i in range(500)]
    lines += lines[:30]  # exact duplicates: equal bm25, the tie order must hold
    for f, line in enumerate(lines):
        (mem / f"2026-02-{f % 28 + 1:02d}-n{f}.md").write_text(f"# n{f}\n\n{line}\n",
                                                                encoding="utf-8")
    (root / "MEMORY.md").write_text("# index\n\nserver topic1 rare3 backup camp\n",
                                    encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def low_threshold() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMORY_CORE_POSTINGS_MIN_ROWS", "1")
        yield


@pytest.fixture(scope="module")
def kw_index(tmp_path_factory: pytest.TempPathFactory, low_threshold: None
             ) -> Iterator[MemoryIndex]:
    ws = _workspace(tmp_path_factory.mktemp("post"))
    idx = MemoryIndex.open(ws, provider="none")
    idx.sync()
    yield idx
    idx.close()


def _queries() -> list[str]:
    rng = random.Random(5)
    out = ["server database deploy", "server", "熔断器 是什么原因", "camp camping", "cafe naive",
           "deploy_script user_id failed", "HTTP2 v2 server", "backup", "nothing matches this",
           "rare5 server database deploy alert backup", "topic1 topic2 topic3 topic4 topic5"]
    pool = COMMON + MEDIUM + RARE
    for _ in range(80):
        out.append(" ".join(rng.sample(pool, rng.randint(1, 6))))
    return out


def test_tokenize_is_fts5s() -> None:
    spec = "porter unicode61"
    assert postings.tokenize(spec, ["camping", "deploy_script", "Café", "熔断 断器", "", "_"]) == [
        ["camp"], ["deploi", "script"], ["cafe"], ["熔断", "断器"], [], []]


def test_phrase_bound_is_fts5s_clamped_idf() -> None:
    """The calibration's bound on one phrase's bm25 (``calibration.keyword_bound``)."""
    assert phrase_bound(100, 0) == 0.0
    assert phrase_bound(100, 50) == pytest.approx(2.2e-6)
    assert phrase_bound(100, 1) == pytest.approx(2.2 * math.log(99.5 / 1.5))


def test_sync_writes_a_fresh_sidecar(kw_index: MemoryIndex) -> None:
    store = kw_index.store
    side = postings.for_store(store)
    assert side is not None
    assert side.n == reads.row_count(store, TABLE)
    assert postings.refresh(store) == "fresh"
    # row lengths are FTS5's docsize: the same avgdl as bm25 uses
    total = sum(len(t) for t in postings.tokenize(
        side.spec, [r[0] for r in store.db.execute(f"SELECT text FROM {TABLE} ORDER BY rowid")]))
    assert side.total_tokens == total


@pytest.mark.parametrize("pool", [5, 20, 200])
@pytest.mark.parametrize("sources", [None, ["memory"], ["sessions"]])
def test_postings_equal_the_fts5_query(kw_index: MemoryIndex, pool: int,
                                       sources: list[str] | None) -> None:
    store = kw_index.store
    side = postings.for_store(store)
    assert side is not None
    for q in _queries():
        match = or_fts_query(q)
        assert match
        want = reads.match_rows(store, match, [], pool, table=TABLE, sources=sources)
        got = side.ranked(store, TABLE, match.split(" OR "), pool, sources)
        assert got == want, q  # same ids, same order, same floats


def test_the_search_leg_uses_the_sidecar(kw_index: MemoryIndex) -> None:
    store, s = kw_index.store, profile_settings("default")
    plans = set()
    for q in _queries()[:30]:
        match = or_fts_query(q)
        assert match
        got, plan = or_query_topk(store, TABLE, match.split(" OR "), 200, None)
        plans.add(plan)
        hits, m, table = keyword_leg(store, q, s, 200, None)
        assert table == TABLE and m == match
        want = reads.match_rows(store, match, [], 200, table=TABLE)
        assert [(h.id, h.raw) for h in hits] == want == got
    assert plans == {"postings"}


def _same_postings(a: tuple, b: tuple) -> None:
    terms_a, ptr_a, rows_a, tfs_a, cur_a, len_a = a
    terms_b, ptr_b, rows_b, tfs_b, cur_b, len_b = b
    assert np.array_equal(cur_a.rowids, cur_b.rowids) and np.array_equal(cur_a.ids, cur_b.ids)
    assert np.array_equal(len_a, len_b)
    index_b = {t: i for i, t in enumerate(terms_b)}
    for i, t in enumerate(terms_a):
        lo, hi = int(ptr_a[i]), int(ptr_a[i + 1])
        if t not in index_b:
            assert lo == hi, t  # only an emptied term may be missing from a full read
            continue
        j = index_b[t]
        assert np.array_equal(rows_a[lo:hi], rows_b[int(ptr_b[j]):int(ptr_b[j + 1])]), t
        assert np.array_equal(np.asarray(tfs_a[lo:hi], np.int64),
                              np.asarray(tfs_b[int(ptr_b[j]):int(ptr_b[j + 1])], np.int64)), t
    assert set(terms_b) <= set(terms_a)


@pytest.fixture()
def fresh(tmp_path: Path, low_threshold: None) -> Iterator[tuple[Path, MemoryIndex]]:
    """A workspace of its own, synced (with its sidecar), for a test that changes it."""
    ws = _workspace(tmp_path / "ws")
    idx = MemoryIndex.open(ws, provider="none")
    idx.sync()
    yield ws, idx
    idx.close()


def _instances_one_row_each(db: object, table: str) -> tuple[list[str], np.ndarray,
                                                              np.ndarray]:
    """The full read's input as it was first written: one fetched row per FTS5 instance."""
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.t_inst USING fts5vocab(main, {table},"
               " instance)")
    got = db.execute("SELECT term, doc FROM temp.t_inst").fetchall()
    terms = sorted({t for t, _ in got})
    counts = np.asarray([sum(1 for t, _ in got if t == u) for u in terms], np.int64)
    return terms, counts, np.asarray([d for _, d in got], np.int32)


def _instance_docs(db: Any, table: str, dtype: Any) -> tuple[list[str], np.ndarray, np.ndarray]:
    """:func:`postings._instance_pieces` joined: every term, its instance count, every
    instance's doc."""
    terms: list[str] = []
    counts: list[np.ndarray] = []
    docs: list[np.ndarray] = []
    for t, c, d in postings._instance_pieces(db, table, dtype):
        terms.extend(t)
        counts.append(c)
        docs.append(d)
    return (terms, np.concatenate(counts) if counts else np.zeros(0, np.int64),
            np.concatenate(docs) if docs else np.zeros(0, dtype))


@pytest.mark.parametrize("parse_chars", [1, 50, 1 << 26])
def test_the_full_read_equals_one_row_per_instance(kw_index: MemoryIndex, parse_chars: int,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """``group_concat`` per term, parsed in pieces of any size, gives exactly the instances a
    row-per-instance read gives; the postings built from them equal FTS5's answers above."""
    store = kw_index.store
    whole = postings.build_full(store.db)  # the default piece: the whole table at once here
    monkeypatch.setattr(postings, "_PARSE_CHARS", parse_chars)
    full = postings.build_full(store.db)  # postings built a piece of terms at a time
    terms, counts, docs = _instance_docs(store.db, TABLE, np.int32)
    want_terms, want_counts, want_docs = _instances_one_row_each(store.db, TABLE)
    assert terms == want_terms == full[0] == whole[0]
    for a, b in ((full[1], whole[1]), (full[2], whole[2]), (full[3], whole[3]),
                 (full[5], whole[5]), (full[4].rowids, whole[4].rowids)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert np.array_equal(counts, want_counts) and np.array_equal(docs, want_docs)
    assert docs.size > 10 * len(terms)  # many instances per term: the parse was exercised


def test_a_small_sync_updates_the_sidecar_like_a_full_read(
        fresh: tuple[Path, MemoryIndex]) -> None:
    ws, idx = fresh
    store = idx.store
    old = postings.load(store.path)
    assert old is not None
    mem = ws / "memory"
    (mem / "2026-02-01-n0.md").unlink()  # a file gone
    (mem / "2026-02-02-n1.md").write_text("# n1\n\nbrandnew zebra server camping\n",
                                          encoding="utf-8")  # a file changed
    (mem / "2026-03-01-extra.md").write_text("# extra\n\nzebra_crossing 斑马线 topic7\n",
                                             encoding="utf-8")  # a file added
    idx.sync()
    store = idx.store
    delta = build_delta(store.db, old)
    assert delta is not None
    _same_postings(delta, postings.build_full(store.db))
    side = postings.for_store(store)
    assert side is not None and side.n == reads.row_count(store, TABLE)
    for q in [*_queries()[:40], "zebra brandnew", "斑马", "zebra_crossing"]:
        match = or_fts_query(q)
        assert match
        want = reads.match_rows(store, match, [], 50, table=TABLE)
        assert side.ranked(store, TABLE, match.split(" OR "), 50, None) == want, q


def test_stale_or_damaged_sidecars_are_not_used(fresh: tuple[Path, MemoryIndex]) -> None:
    ws, idx = fresh
    store = idx.store
    path = postings.sidecar_path(store.path)
    stale = path.read_bytes()
    (ws / "memory" / "2026-03-02-more.md").write_text("# more\n\nserver okapi\n",
                                                      encoding="utf-8")
    idx.sync()
    store = idx.store
    path.write_bytes(stale)  # a sidecar of an older state: its stamp no longer matches
    assert postings.for_store(store) is None
    match = or_fts_query("okapi server")
    assert match
    want = reads.match_rows(store, match, [], 20, table=TABLE)
    got, plan = or_query_topk(store, TABLE, match.split(" OR "), 20, None)
    assert got == want and plan != "postings"
    path.write_bytes(b"MWPOST01" + b"\xff" * 64)  # damaged
    assert postings.load(store.path) is None
    got, plan = or_query_topk(store, TABLE, match.split(" OR "), 20, None)
    assert got == want and plan != "postings"
    # the next sync writes a fresh one again
    assert postings.refresh(store) == "full"
    assert postings.for_store(store) is not None


def test_small_indexes_get_no_sidecar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_CORE_POSTINGS_MIN_ROWS", "1")
    ws = _workspace(tmp_path / "ws")
    idx = MemoryIndex.open(ws, provider="none")
    try:
        idx.sync()
        path = postings.sidecar_path(idx.store.path)
        assert path.exists()
        monkeypatch.setenv("MEMORY_CORE_POSTINGS_MIN_ROWS", "100000")
        assert postings.refresh(idx.store) == "removed"
        assert not path.exists()
        assert postings.for_store(idx.store) is None
    finally:
        idx.close()


def test_verify_rewrites_a_sidecar_that_looks_fresh(fresh: tuple[Path, MemoryIndex]) -> None:
    """``index --verify`` does not trust the stamp: a sidecar whose content is wrong (here: a
    term's rows dropped) but whose stamp matches is read afresh from FTS5."""
    _, idx = fresh
    store = idx.store
    side = postings.for_store(store)
    assert side is not None
    t = side.terms.index("server")
    ptr = np.array(side.ptr, np.int64)
    lo, hi = int(ptr[t]), int(ptr[t + 1])
    rows = np.delete(np.asarray(side.rows), np.s_[lo:hi])
    tfs = np.delete(np.asarray(side.tfs), np.s_[lo:hi])
    ptr[t + 1:] -= hi - lo
    postings.write(store.path, side.stamp, side.spec, side.terms, ptr, rows, tfs, side.rowids,
                   [bytes(i) for i in side.ids], [side.sources[c] for c in side.codes],
                   side.doclen)
    match = or_fts_query("server")
    assert match
    want = reads.match_rows(store, match, [], 20, table=TABLE)
    bad = postings.for_store(store)
    assert bad is not None and bad.ranked(store, TABLE, [match], 20) != want
    idx.sync()  # a plain sync trusts the stamp
    assert postings.for_store(idx.store).ranked(idx.store, TABLE, [match], 20) != want
    idx.sync(verify=True)
    good = postings.for_store(idx.store)
    assert good is not None and good.ranked(idx.store, TABLE, [match], 20) == want


def test_a_sync_that_only_removes_rows_updates_like_a_full_read(
        fresh: tuple[Path, MemoryIndex]) -> None:
    ws, idx = fresh
    old = postings.load(idx.store.path)
    assert old is not None
    for name in ("2026-02-03-n2.md", "2026-02-10-n9.md"):
        (ws / "memory" / name).unlink()
    idx.sync()
    delta = build_delta(idx.store.db, old)
    assert delta is not None and delta[4].rowids.size == old.n - 2
    _same_postings(delta, postings.build_full(idx.store.db))


def test_a_sidecar_that_cannot_be_written_costs_a_warning_not_the_sync(
        fresh: tuple[Path, MemoryIndex]) -> None:
    """The index folder refuses the sidecar (a directory squats its name): the sync still
    commits, says why in a warning, and searches answer from FTS5."""
    ws, idx = fresh
    path = postings.sidecar_path(idx.store.path)
    path.unlink()
    path.mkdir()  # os.replace onto a directory fails
    try:
        (ws / "memory" / "2026-03-03-new.md").write_text("# new\n\nserver quokka\n",
                                                         encoding="utf-8")
        report = idx.sync()
        assert report.wrote_anything
        assert any("keyword postings not written" in w for w in report.warnings), report.warnings
        match = or_fts_query("quokka server")
        assert match
        got, plan = or_query_topk(idx.store, TABLE, match.split(" OR "), 20, None)
        assert plan != "postings" and got == reads.match_rows(idx.store, match, [], 20, table=TABLE)
        assert got and idx.search("quokka").hits
    finally:
        path.rmdir()


def test_status_says_which_paths_answer(fresh: tuple[Path, MemoryIndex], indexed_demo: Path
                                        ) -> None:
    _, idx = fresh
    st = idx.status()
    assert st.fts is not None and st.fts.postings and st.to_json()["fts"]["postings"] is True
    postings.sidecar_path(idx.store.path).unlink()
    assert idx.status().fts.postings is False  # FTS5 answers alone now
    with MemoryIndex.open(indexed_demo) as demo:  # local model: the mapped vector sidecar
        vs = demo.status()
        assert vs.vector is not None and vs.vector.search == "sidecar"


def _file_parts(path: Path) -> tuple[dict[str, object], bytes]:
    """A sidecar's header less its seal and checksum (the time it was written), and every byte
    from its first array on."""
    raw = path.read_bytes()
    n = int.from_bytes(raw[8:16], "little")
    header = json.loads(raw[16 : 16 + n])
    start = min(header["offsets"].values())
    return {k: v for k, v in header.items() if k not in ("sealedNs", "headerCrc")}, raw[start:]


@pytest.mark.parametrize("piece", [5, 1 << 18])
def test_the_streamed_delta_writes_the_whole_deltas_file(
        fresh: tuple[Path, MemoryIndex], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        piece: int) -> None:
    """After files changed, added and deleted, the delta a sync streams (old postings a piece at
    a time; pieces of 5 postings split terms and merge changed rows across their edges) is the
    file the in-memory delta writes: header, checksums, every array; and the sync's own file."""
    ws, idx = fresh
    monkeypatch.setattr(postings, "STREAM_POSTINGS", piece)
    before = tmp_path / "before.sqlite"  # the previous file, kept: the sync replaces it
    shutil.copy(postings.sidecar_path(idx.store.path), postings.sidecar_path(before))
    mem = ws / "memory"
    (mem / "2026-02-01-n0.md").unlink()
    (mem / "2026-02-05-n4.md").unlink()
    (mem / "2026-02-02-n1.md").write_text("# n1\n\nbrandnew zebra server camping\n",
                                          encoding="utf-8")
    (mem / "2026-03-01-extra.md").write_text("# extra\n\nzebra_crossing 斑马线 topic7 aardvark "
                                             "backup backup\n", encoding="utf-8")
    idx.sync()
    store = idx.store
    stamp = postings.vectors.stamp_of(store.get_meta())
    old = postings.load(before)
    assert old is not None
    got = build_delta(store.db, old)
    assert got is not None and got[4].rowids.size != old.n
    terms, ptr, rows, tfs, cur, doclen = got
    whole, streamed = tmp_path / "whole.sqlite", tmp_path / "streamed.sqlite"
    postings.write(whole, stamp, old.spec, terms, ptr, rows, tfs, cur.rowids, cur.ids,
                   cur.sources, doclen)
    assert postings.write_delta(store.db, old, streamed, stamp)
    want = _file_parts(postings.sidecar_path(whole))
    assert _file_parts(postings.sidecar_path(streamed)) == want
    assert _file_parts(postings.sidecar_path(store.path)) == want  # the sync streamed it too
    assert "aardvark" in terms and "aardvark" not in old.terms  # a term new to the index
    side = postings.load(streamed, stamp)
    assert side is not None and side.intact()
    for q in [*_queries()[:30], "zebra brandnew aardvark", "斑马", "zebra_crossing"]:
        match = or_fts_query(q)
        assert match
        want_rows = reads.match_rows(store, match, [], 50, table=TABLE)
        assert side.ranked(store, TABLE, match.split(" OR "), 50, None) == want_rows, q


@pytest.mark.parametrize("key", ["rows", "tfs"])
def test_a_damaged_previous_file_is_not_streamed_into_the_next(
        fresh: tuple[Path, MemoryIndex], tmp_path: Path, key: str) -> None:
    """A block of the previous postings that fails its checksum (read only by the streamed
    delta, not at load) stops the delta before anything is renamed: no temp file is left and
    the file stays as it was; the sync then reads FTS5 whole (a full read drops a term no row
    has any more, which a delta keeps)."""
    ws, idx = fresh
    gone = ws / "memory" / "2026-03-04-wombat.md"
    gone.write_text("# wombat\n\nwombat server\n", encoding="utf-8")
    idx.sync()
    path = postings.sidecar_path(idx.store.path)
    old = postings.load(idx.store.path)
    assert old is not None and old.checks is not None and "wombat" in old.terms
    raw = bytearray(path.read_bytes())
    raw[old.checks.offsets[key] + old.checks.sizes[key] - 1] ^= 0x01  # its last block
    path.write_bytes(bytes(raw))
    old = postings.load(idx.store.path)
    assert old is not None  # the per-row arrays, terms and pointers still check
    with pytest.raises(postings.SidecarDamaged):
        postings.write_delta(idx.store.db, old, idx.store.path, old.stamp)
    assert path.read_bytes() == bytes(raw)
    assert [p.name for p in path.parent.iterdir() if ".tmp" in p.name] == []
    del old
    gone.unlink()
    idx.sync()
    store = idx.store
    terms, ptr, rows, tfs, cur, doclen = postings.build_full(store.db)
    assert "wombat" not in terms
    stamp = postings.vectors.stamp_of(store.get_meta())
    postings.write(tmp_path / "full.sqlite", stamp, postings.tokenizer_spec(store.db), terms,
                   ptr, rows, tfs, cur.rowids, cur.ids, cur.sources, doclen)
    assert (_file_parts(postings.sidecar_path(store.path))
            == _file_parts(postings.sidecar_path(tmp_path / "full.sqlite")))
