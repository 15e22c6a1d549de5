"""The durable promotion state (issue #13 item 1): ``<workspace>/.memory/state.sqlite``.

Recall signals, promotion history and the "promoted" marks used to be tables of the index file,
which ``index --force`` replaces and which exists once per chunking × provider. These tests run
the real engine (keyword-only, no model) on real files and fail on the old layout.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_core import MemoryIndex
from memory_core import promotion as pr
from memory_core.base.sql import sqlite
from memory_core.promotion.state_migrations import m001_state

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
DIARY = """# 2026-11-20

## Crawler concurrency
- Raised CRAWLER_CONCURRENCY from 4 to 6 on crawl-01 and crawl-02 after the token bucket landed.
- PgBouncer pool stayed below its limit during the Sunday full crawl with six workers.
- Nightly crawl duration dropped to 5h05m; no login lockouts at the new concurrency.
"""
USER_MEMORY = "# Mine\n\n- Sam prefers short answers first.\n"
QUERIES = ["crawler concurrency", "PgBouncer pool limit", "nightly crawl duration",
           "token bucket crawl-01"]


def make_ws(tmp_path: Path, n_extra: int = 0) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_bytes(USER_MEMORY.encode())
    (ws / "memory" / "2026-11-20.md").write_text(DIARY, encoding="utf-8")
    for i in range(n_extra):  # other notes, so that a rebuild takes several steps
        (ws / "memory" / f"note-{i}.md").write_text(f"# Note {i}\n\nUnrelated text {i}.\n")
    return ws


def open_index(ws: Path, **kw: str) -> MemoryIndex:
    idx = MemoryIndex.open(ws, provider="none", **kw)
    idx.sync()
    return idx


def seed(idx: MemoryIndex) -> None:
    start = NOW - timedelta(days=len(QUERIES) - 1)
    for i, q in enumerate(QUERIES):
        hits = idx.search(q).hits
        assert hits, q
        pr.record_search(idx, q, hits, now=start + timedelta(days=i))


def entries(idx: MemoryIndex) -> list[dict]:
    with pr.state_of(idx) as st:
        return st.recall_entries()


def history(idx: MemoryIndex) -> list[dict]:
    with pr.state_of(idx) as st:
        return st.promotion_history()


def test_state_lives_beside_the_index_in_wal_mode(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        seed(idx)
        assert (ws / ".memory" / "state.sqlite").is_file()
        assert pr.state_path(ws) == ws / ".memory" / "state.sqlite"
        assert pr.state_path(ws) != idx.store_path
        db = sqlite.connect(pr.state_path(ws))
        try:
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert db.execute("PRAGMA user_version").fetchone()[0] >= 1
            assert db.execute("SELECT count(*) FROM recall_entries").fetchone()[0] == 1
        finally:
            db.close()


def test_apply_during_a_forced_rebuild_keeps_history_undo_and_marks(tmp_path: Path) -> None:
    """The issue's reproduction: a promotion applied while ``index --force`` runs."""
    ws = make_ws(tmp_path, n_extra=5)
    applied: list[pr.ApplyResult] = []
    with open_index(ws) as idx:
        seed(idx)
        (key,) = [e["key"] for e in entries(idx)]

        def mid_rebuild(phase: str, done: int, total: int) -> None:
            if applied or done < 2:
                return
            # A second process's view of the workspace applies while the rebuild is under way.
            with MemoryIndex.open(ws, provider="none") as other:
                applied.append(pr.apply(other, now=NOW, resync=False))

        idx.sync(force=True, progress=mid_rebuild)
        assert applied and applied[0].applied == [key]
        promoted = (ws / "MEMORY.md").read_bytes()
        assert b"<!-- openclaw-memory-promotion:" + key.encode() in promoted
        idx.sync()
        assert len(history(idx)) == 1
        assert pr.list_candidates(idx, now=NOW) == []  # not a candidate again
        (row,) = entries(idx)
        assert row["promoted_at"] == pr.now_ms(NOW)
        u = pr.undo(idx, now=NOW)
        assert u.restored, u.message
        assert (ws / "MEMORY.md").read_bytes() == USER_MEMORY.encode()


def test_recalls_survive_a_forced_rebuild_and_a_lost_index(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        seed(idx)
        before = entries(idx)
        assert before and before[0]["recall_count"] == 4
        idx.sync(force=True)
        assert entries(idx) == before
        path = idx.store_path
    for suffix in ("", "-wal", "-shm"):  # the index file deleted outright: rebuilt from Markdown
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with open_index(ws) as idx:
        assert entries(idx) == before
        assert [c.key for c in pr.list_candidates(idx, now=NOW)] == [before[0]["key"]]


def test_two_index_files_of_a_workspace_share_the_signals(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as default, open_index(ws, profile="reference") as reference:
        assert default.store_path != reference.store_path
        seed(default)
        assert entries(reference) == entries(default) != []
        # Recorded through the reference index: seen by the default one as well.
        hits = reference.search("Sunday full crawl").hits
        assert pr.record_search(reference, "Sunday full crawl", hits, now=NOW) >= 1
        assert entries(default) == entries(reference)
        res = pr.apply(reference, now=NOW)
        assert res.wrote
        assert pr.list_candidates(default, now=NOW) == []
        assert len(history(default)) == 1
        assert pr.undo(default, now=NOW).restored


def _legacy_index(path: Path, rows: list[tuple], history_rows: list[tuple] = ()) -> None:
    """An index file as older versions left it: the recall tables of index migration 4."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite.connect(path, isolation_level=None)
    try:
        db.execute("BEGIN")
        m001_state(db)  # the old index tables had the state store's columns
        db.executemany(
            "INSERT INTO recall_entries(key, path, start_line, end_line, snippet, recall_count,"
            " total_score, max_score, first_recalled_at, last_recalled_at, query_hashes,"
            " recall_days) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        db.executemany(
            "INSERT INTO recall_events(key, kind, query_hash, query, day, score, at)"
            " VALUES (?,?,?,?,?,?,?)",
            [(r[0], "recall", "abc", "old query", "2026-11-29", 0.9, r[9]) for r in rows])
        db.executemany(
            "INSERT INTO promotion_history(applied_at, memory_path, backup_path, before_sha256,"
            " after_sha256, keys, entries_before, undone_at) VALUES (?,?,?,?,?,?,?,?)",
            history_rows)
        db.execute("COMMIT")
    finally:
        db.close()


def test_signals_of_old_index_files_are_imported_once(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    at = pr.now_ms(NOW)
    key = "memory:memory/2026-11-20.md:3:6"
    row = (key, "memory/2026-11-20.md", 3, 6, "Crawler concurrency: raised", 2, 1.8, 0.9, at,
           at, '["a","b"]', '["2026-11-28","2026-11-29"]')
    stronger = (*row[:5], 5, 4.5, 0.95, at, at + 1, '["a","b","c"]', '["2026-11-29"]')
    _legacy_index(ws / ".memory" / "bounded-local.sqlite", [row],
                  [(at, "MEMORY.md", None, None, "f" * 64, f'["{key}"]', "[]", at)])
    _legacy_index(ws / ".memory" / "reference-local.sqlite", [stronger])
    with pr.open_state(ws) as st:
        (got,) = st.recall_entries()
        assert got["recall_count"] == 5  # the copy with more signals wins
        assert [e["query"] for e in st.recall_events(key)] == ["old query", "old query"]
        assert len(st.promotion_history()) == 1
        assert set(st.legacy_imported()) == {
            str((ws / ".memory" / n).resolve()) for n in ("bounded-local.sqlite",
                                                          "reference-local.sqlite")}
        with st.transaction():
            st.recall_clear()
    with pr.open_state(ws) as st:  # second open: nothing imported again
        assert st.recall_entries() == []
        assert len(st.promotion_history()) == 1
    # A new index file of the workspace (with the old, empty tables) brings nothing back.
    with open_index(ws) as idx:
        idx.sync(force=True)
        assert entries(idx) == []
