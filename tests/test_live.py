"""The live layer: the watcher follows the files, transcripts by delta, searches never wait.

Real files, real ``watchfiles`` (inotify), real SQLite, provider ``none`` (the vector leg plays no
part in *when* things become searchable). Waits poll with a deadline; no sleep is an assertion,
except where the test is that nothing happens (then it waits past the relevant debounce).
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memory_core.base.config import load_config
from memory_core.base.synclock import sync_lock
from memory_core.live import DeltaTracker, EventKind, LiveIndex, SyncEvent, WatchPlan
from memory_core.live.deltas import count_newlines


def wait_for(cond: Callable[[], object], timeout: float = 10.0, step: float = 0.05) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"condition not met within {timeout} s")


def message(i: int, text: str) -> str:
    return json.dumps({"type": "message", "timestamp": 1_700_000_000_000 + i,
                       "message": {"role": "user" if i % 2 == 0 else "assistant",
                                   "content": text}}) + "\n"


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    (w / "memory").mkdir(parents=True)
    (w / "sessions").mkdir()
    (w / "MEMORY.md").write_text("# Memory\n\nThe team prefers tabs.\n")
    (w / "memory" / "2026-01-01.md").write_text("# Day one\n\nSet up the ALPHA_START pipeline.\n")
    return w


class Live:
    """A started LiveIndex plus a record of its sync events."""

    def __init__(self, ws: Path, **kw: object):
        self.events: list[SyncEvent] = []
        self.live = LiveIndex.open(ws, provider="none", on_sync=self.events.append, **kw)

    def start(self) -> Live:
        self.live.start()
        assert self.live.wait_idle(30)
        assert self.live.watcher is not None and self.live.watcher.wait_watching()
        return self

    def paths(self, query: str) -> list[str]:
        return [h.path for h in self.live.search_index().search(query).hits]

    def found(self, query: str, path: str) -> bool:
        return path in self.paths(query)

    def reasons(self, since: int = 0) -> list[str]:
        return [e.reason for e in self.events[since:]]


@pytest.fixture()
def live(ws: Path) -> Iterator[Live]:
    lv = Live(ws)
    # keep the transcript debounce short here; its 5 s default is exercised over MCP/HTTP
    assert lv.live.watcher is not None
    lv.live.watcher.session_debounce_s = 0.5
    lv.start()
    yield lv
    lv.live.close()


# ----------------------------------------------------------------------------- pure parts


def test_delta_tracker_thresholds_and_shrink(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text("")
    t = DeltaTracker(delta_bytes=100_000, delta_messages=50)
    t.baseline(f, 0)
    f.write_text("".join(message(i, "hello") for i in range(49)))
    assert t.update(f) is False                      # 49 messages, few bytes: below both
    assert t.pending() == (f.stat().st_size, 49)
    with f.open("a") as h:
        h.write(message(49, "one more"))
    assert t.update(f) is True                       # the 50th message crosses deltaMessages
    assert t.pending()[1] == 0                       # threshold subtracted
    with f.open("a") as h:
        h.write(message(50, "x" * 100_500))
    assert t.update(f) is True                       # one big message crosses deltaBytes
    f.write_text(message(0, "rewritten"))            # shrank: rewritten, dirty at once (what
    assert t.update(f) is True                       # was cut must stop being found)
    assert t.files[f].last_size == f.stat().st_size and t.pending() == (0, 0)
    f.unlink()
    assert t.update(f) is True                       # gone: its chunks must go


def test_delta_tracker_zero_threshold_means_any_change(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text(message(0, "a"))
    t = DeltaTracker(delta_bytes=0, delta_messages=0)
    t.baseline(f, 0)
    assert t.update(f) is True
    assert t.update(f) is False                      # unchanged since


def test_count_newlines_reads_blocks(tmp_path: Path) -> None:
    f = tmp_path / "big"
    f.write_bytes(b"x\n" * 100_000)
    assert count_newlines(f, 0, f.stat().st_size) == 100_000
    assert count_newlines(f, 2, 6) == 2


def test_watch_plan_classifies_like_the_reference(ws: Path) -> None:
    plan = WatchPlan.for_config(ws, load_config(ws))
    assert plan.classify(ws / "MEMORY.md") is EventKind.MEMORY
    assert plan.classify(ws / "memory" / "a" / "b.md") is EventKind.MEMORY
    assert plan.classify(ws / "memory") is EventKind.MEMORY
    assert plan.classify(ws / "memory" / "notes.txt") is EventKind.IGNORED
    assert plan.classify(ws / "memory" / "node_modules" / "x.md") is EventKind.IGNORED
    assert plan.classify(ws / "memory" / ".git" / "x.md") is EventKind.IGNORED
    assert plan.classify(ws / "README.md") is EventKind.IGNORED
    assert plan.classify(ws / ".memory" / "bounded-none.sqlite-wal") is EventKind.IGNORED
    assert plan.classify(ws / "sessions" / "abc.jsonl") is EventKind.SESSION
    assert plan.classify(ws / "sessions" / "abc.jsonl.reset.2026") is EventKind.ARCHIVE
    assert plan.classify(ws / "sessions" / "abc.jsonl.deleted.2026") is EventKind.ARCHIVE
    assert plan.classify(ws / "sessions" / "abc.jsonl.bak") is EventKind.IGNORED


# ----------------------------------------------------------------------------- memory files


def test_create_modify_rename_delete(live: Live, ws: Path) -> None:
    diary = ws / "memory" / "2026-02-03.md"
    diary.write_text("# Day\n\nDeployed BRAVO_CREATED today.\n")
    wait_for(lambda: live.found("BRAVO_CREATED", "memory/2026-02-03.md"))
    diary.write_text("# Day\n\nDeployed CHARLIE_MODIFIED instead.\n")
    wait_for(lambda: live.found("CHARLIE_MODIFIED", "memory/2026-02-03.md"))
    assert live.paths("BRAVO_CREATED") == []
    diary.rename(ws / "memory" / "2026-02-04.md")
    wait_for(lambda: live.found("CHARLIE_MODIFIED", "memory/2026-02-04.md"))
    assert "memory/2026-02-03.md" not in live.paths("CHARLIE_MODIFIED")
    (ws / "memory" / "2026-02-04.md").unlink()
    wait_for(lambda: live.paths("CHARLIE_MODIFIED") == [])


def test_a_burst_of_200_writes_is_one_sync(live: Live, ws: Path) -> None:
    before = len(live.events)
    f = ws / "memory" / "burst.md"
    for i in range(200):  # no search in between: searches would (rightly) sync early
        f.write_text(f"# Burst\n\nvalue DELTA_{i}\n")
    wait_for(lambda: len(live.events) > before, timeout=15)
    assert live.live.wait_idle(15)
    time.sleep(live.live.config.watch.debounce_ms / 1000 + 0.5)  # nothing more may follow
    assert live.reasons(before) == ["watch"]
    assert live.found("DELTA_199", "memory/burst.md")


def test_settle_check_waits_for_a_file_still_being_written(live: Live, ws: Path) -> None:
    before = len(live.events)
    f = ws / "memory" / "slow.md"
    with f.open("w") as h:  # written in pieces for ~2.4 s, longer than one debounce
        for i in range(12):
            h.write(f"line {i} ECHO_SLOW\n")
            h.flush()
            time.sleep(0.2)
    wait_for(lambda: live.found("ECHO_SLOW", "memory/slow.md"), timeout=10)
    assert live.live.wait_idle(10)
    assert len([r for r in live.reasons(before) if r == "watch"]) <= 2


def test_watched_folder_deleted_and_recreated(live: Live, ws: Path) -> None:
    shutil.rmtree(ws / "memory")
    wait_for(lambda: live.paths("ALPHA_START") == [])
    (ws / "memory").mkdir()
    (ws / "memory" / "2026-03-01.md").write_text("# Back\n\nFOXTROT_AGAIN is here.\n")
    wait_for(lambda: live.found("FOXTROT_AGAIN", "memory/2026-03-01.md"))
    # and the new folder is really watched: a later change is seen too
    (ws / "memory" / "2026-03-02.md").write_text("# Later\n\nGOLF_LATER arrives.\n")
    wait_for(lambda: live.found("GOLF_LATER", "memory/2026-03-02.md"))


def test_extra_path_outside_workspace_created_later(tmp_path: Path, ws: Path) -> None:
    notes = tmp_path / "notes"  # does not exist yet
    (ws / "memory-workbench.toml").write_text(f'[sources]\nextra_paths = ["{notes}"]\n')
    lv = Live(ws).start()
    try:
        notes.mkdir()
        (notes / "n.md").write_text("# Note\n\nHOTEL_OUTSIDE lives here.\n")
        wait_for(lambda: any("HOTEL_OUTSIDE" in h.snippet
                             for h in lv.live.search_index().search("HOTEL_OUTSIDE").hits))
    finally:
        lv.live.close()


# ----------------------------------------------------------------------------- transcripts


def test_transcript_below_threshold_waits_above_syncs(live: Live, ws: Path) -> None:
    t = ws / "sessions" / "s1.jsonl"
    t.write_text(message(0, "first words"))
    before = len(live.events)
    with t.open("a") as h:
        for i in range(1, 10):
            h.write(message(i, f"small talk {i} INDIA_SMALL"))
    time.sleep(1.5)  # the test is that nothing happens: 3 debounces of 0.5 s
    assert live.live.wait_idle(5)
    assert "session-delta" not in live.reasons(before)
    st = live.live.status()
    assert st.pending_session_messages >= 9 and st.pending_session_bytes > 0
    with t.open("a") as h:
        for i in range(10, 70):
            h.write(message(i, f"decision {i}: JULIET_GROWN"))
    wait_for(lambda: live.found("JULIET_GROWN", "sessions/s1.jsonl"))
    # the sync's event is recorded a moment after its commit is visible to searches
    wait_for(lambda: "session-delta" in live.reasons(before), timeout=5)
    wait_for(lambda: live.live.status().pending_session_messages == 0)


def test_transcript_rewritten_shorter(live: Live, ws: Path) -> None:
    t = ws / "sessions" / "s2.jsonl"
    t.write_text("".join(message(i, f"old KILO_OLD {i}") for i in range(80)))
    wait_for(lambda: live.found("KILO_OLD", "sessions/s2.jsonl"))
    # rewritten (compacted) to fewer bytes: counted from scratch, 60 messages cross the bar
    t.write_text("".join(message(i, f"new LIMA_NEW {i}") for i in range(60)))
    wait_for(lambda: live.found("LIMA_NEW", "sessions/s2.jsonl"))
    assert live.paths("KILO_OLD") == []


def test_transcript_cut_below_the_bar_stops_returning_what_was_cut(live: Live,
                                                                    ws: Path) -> None:
    """Issue 19 item 10: a transcript rewritten shorter (a message removed, far below both
    thresholds) is re-indexed at the next update; no memory-file change is needed."""
    t = ws / "sessions" / "s4.jsonl"
    kept = "".join(message(i, f"kept NOVEMBER_KEPT {i}") for i in range(40))
    t.write_text(kept + "".join(message(i, f"then OSCAR_CUT {i}") for i in range(40, 55)))
    wait_for(lambda: live.found("OSCAR_CUT", "sessions/s4.jsonl"))  # 55 messages: indexed
    t.write_text(kept)  # the last 15 cut: 40 messages and a few KB, below both thresholds
    wait_for(lambda: live.paths("OSCAR_CUT") == [])
    assert live.found("NOVEMBER_KEPT", "sessions/s4.jsonl")


def test_archive_is_dirty_at_once(live: Live, ws: Path) -> None:
    before = len(live.events)
    (ws / "sessions" / "s3.jsonl.reset.2026-01-01T00-00-00").write_text(
        message(0, "archived MIKE_ARCHIVE"))
    wait_for(lambda: live.found("MIKE_ARCHIVE", "sessions/s3.jsonl.reset.2026-01-01T00-00-00"))
    wait_for(lambda: "session-archive" in live.reasons(before), timeout=5)


def test_startup_catches_up_with_what_changed_while_stopped(ws: Path) -> None:
    lv = Live(ws).start()
    lv.live.close()
    (ws / "sessions" / "s4.jsonl").write_text(message(0, "written while stopped NOVEMBER_CU"))
    (ws / "memory" / "2026-04-01.md").write_text("# Offline\n\nOSCAR_OFFLINE\n")
    lv = Live(ws).start()
    try:
        assert lv.found("NOVEMBER_CU", "sessions/s4.jsonl")
        assert lv.found("OSCAR_OFFLINE", "memory/2026-04-01.md")
        assert lv.reasons() == ["startup"]
    finally:
        lv.live.close()


# ----------------------------------------------------------------------------- never waiting


def test_search_answers_from_committed_state_while_a_sync_waits(live: Live, ws: Path) -> None:
    """Another process's sync holds the lock: searches answer at once, status says behind."""
    release = threading.Event()
    held = threading.Event()

    def hold() -> None:
        with sync_lock(live.live.store_path, wait_s=5):
            held.set()
            release.wait(20)

    th = threading.Thread(target=hold)
    th.start()
    try:
        assert held.wait(5)
        (ws / "memory" / "2026-05-01.md").write_text("# New\n\nPAPA_PENDING\n")
        wait_for(lambda: live.live.status().syncing, timeout=10)
        t0 = time.perf_counter()
        assert live.paths("ALPHA_START") == ["memory/2026-01-01.md"]  # the committed state
        assert live.paths("PAPA_PENDING") == []
        assert time.perf_counter() - t0 < 2.0
        st = live.live.status()
        assert st.dirty and st.behind_ms is not None and st.behind_ms > 0
    finally:
        release.set()
        th.join()
    wait_for(lambda: live.found("PAPA_PENDING", "memory/2026-05-01.md"))
    # the commit is visible to searches a moment before the sync thread marks itself idle
    wait_for(lambda: live.live.status().behind_ms is None, timeout=10)
