"""Promotion and supersession (issue #34, item 3): nothing superseded is promoted, and a
``MEMORY.md`` line a later diary superseded is shown and can be updated (and undone)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_core import MemoryIndex
from memory_core import promotion as pr

from .conftest import copy_demo

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SUPERSEDED = ("8 workers per host", "PostgreSQL 15.4", "runs at 02:00", "from 8 to 4")


def test_preview_proposes_no_superseded_value(tmp_path: Path) -> None:
    """The demo's agent asked about the crawler, the database and the report: the diary of
    2026-10-20 states all three as they were then, and later diaries changed each."""
    ws = copy_demo(tmp_path)
    queries = ["crawler concurrency workers per host", "PostgreSQL version db-01",
               "nightly report cron time", "CRAWLER_CONCURRENCY env production",
               "Postgres 15.4 PgBouncer port", "report-nightly job schedule",
               "concurrency 8 workers", "database PostgreSQL port 5432", "nightly report 02:00"]
    with MemoryIndex.open(ws, provider="none") as idx:
        idx.sync()
        for i, q in enumerate(queries * 2):
            pr.record_search(idx, q, idx.search(q).hits,
                             now=NOW - timedelta(days=2 * len(queries) - i))
        plan = pr.preview_apply(idx, now=NOW)
    assert plan.entries  # something is still promoted (the current values among it)
    assert "from 4 to 6" in plan.section
    for old in SUPERSEDED:
        assert old not in plan.section, old
    assert any(why.startswith("its lines are superseded") for why in plan.skipped.values())


def _stale_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_bytes(
        b"# Memory\r\n\r\n- Redis maxmemory is 2gb on the frontier host.\r\n- Sam likes tea.\r\n")
    day = datetime(2026, 3, 1, tzinfo=UTC).timestamp()
    os.utime(ws / "MEMORY.md", (day, day))  # written before the diary that changed it
    (ws / "memory" / "2026-05-11.md").write_text(
        "# 2026-05-11\n\n- Raised Redis maxmemory from 2gb to 4gb after the Sunday peak.\n",
        encoding="utf-8")
    return ws


def test_stale_memory_line_is_listed_updated_and_undone(tmp_path: Path) -> None:
    ws = _stale_ws(tmp_path)
    original = (ws / "MEMORY.md").read_bytes()
    with MemoryIndex.open(ws, provider="none") as idx:
        idx.sync()
        stale = pr.stale_lines(idx)
        assert [(s.line, s.superseded_by) for s in stale] == [(3, "memory/2026-05-11.md#L3")]
        assert "2gb" in stale[0].text and "4gb" in stale[0].newer_text
        plan = pr.preview_update(idx)
        assert "-- Redis maxmemory is 2gb on the frontier host." in plan.diff
        assert ("+- Raised Redis maxmemory from 2gb to 4gb after the Sunday peak. "
                "(memory/2026-05-11.md#L3)") in plan.diff
        assert (ws / "MEMORY.md").read_bytes() == original  # a preview writes nothing
        res = pr.apply_update(idx, plan, now=NOW)
        assert res.wrote and res.backup_path is not None
        text = (ws / "MEMORY.md").read_bytes().decode()
        assert "4gb" in text and "2gb on the frontier" not in text and "\r\n" in text
        assert "- Sam likes tea.\r\n" in text
        assert pr.stale_lines(idx) == []  # re-synced: nothing stale any more
        undone = pr.undo(idx, now=NOW)
        assert undone.restored, undone.message
        assert (ws / "MEMORY.md").read_bytes() == original


def test_an_update_is_refused_when_memory_md_changed(tmp_path: Path) -> None:
    ws = _stale_ws(tmp_path)
    with MemoryIndex.open(ws, provider="none") as idx:
        idx.sync()
        plan = pr.preview_update(idx)
        (ws / "MEMORY.md").write_text("# Memory\n\n- edited by hand\n", encoding="utf-8")
        try:
            pr.apply_update(idx, plan, now=NOW)
        except pr.PromotionError as e:
            assert "changed since this preview" in str(e)
        else:
            raise AssertionError("the update of an edited MEMORY.md was written")
        assert (ws / "MEMORY.md").read_text() == "# Memory\n\n- edited by hand\n"
