"""The workbench, live (issue #15.6): Home and Chunks show changes without a restart, the sidebar
says live / syncing… / not watched with the last sync's time, and the heartbeat that tells the
workbench a ``memory-core watch`` process is following the files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from memory_core import MemoryIndex
from memory_core.base.synclock import sync_lock
from memory_core.live import heartbeat_path, live_watcher, read_heartbeat
from memory_core.live.heartbeat import STALE_BEATS
from tests.apptesting import OpenApp
from workbench import live, state

CLI = Path(sys.executable).with_name("memory-core")
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
DIARY = "memory/2026-11-30.md"
DIARY_TEXT = ("# 2026-11-30\n\n- Rotated the ZEPHYR_LIVE_TOKEN for the billing worker; the old one "
              "expires on Friday.\n")


def _store(ws: Path) -> Path:
    """The index file the app opens for ``ws`` (provider none, default profile)."""
    with MemoryIndex.open(ws, provider="none") as idx:
        return idx.store_path


def _generation(ws: Path) -> int:
    with MemoryIndex.open(ws, provider="none") as idx:
        return idx.generation


def _wait(cond: Callable[[], bool], timeout: float = 60.0, what: str = "") -> None:
    """Poll ``cond`` (a bound for a loaded machine, not an expected time)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _sidebar(at: AppTest) -> str:
    return "\n".join(c.value for c in at.sidebar.caption)


def _main_captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.main.caption)


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _files(at: AppTest) -> list[str]:
    frame = next(d.value for d in at.dataframe if "path" in d.value.columns)
    return list(frame["path"])


@contextmanager
def watching(ws: Path, *extra: str) -> Iterator[subprocess.Popen[str]]:
    """A real ``memory-core watch`` process on ``ws``; killed at the end if still running."""
    p = subprocess.Popen([str(CLI), "watch", "-w", str(ws), "--provider", "none", *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV)
    try:
        yield p
    finally:
        if p.poll() is None:
            p.kill()
        p.wait(30)
        if p.stdout is not None:
            p.stdout.close()


def _heartbeat_of(store: Path, pid: int, timeout: float = 60.0) -> None:
    _wait(lambda: (hb := read_heartbeat(store)) is not None and hb.pid == pid,
          timeout, f"the heartbeat of pid {pid}")


# --------------------------------------------------------------------------- the heartbeat


def test_heartbeat_of_a_watch_process_is_fresh_and_goes_with_it(demo_ws: Path) -> None:
    store = _store(demo_ws)
    with watching(demo_ws) as proc:
        _heartbeat_of(store, proc.pid)
        hb = read_heartbeat(store)
        assert hb is not None and hb.alive and hb.owner == "memory-core watch"
        assert hb.workspace == str(demo_ws.resolve())
        assert hb.age_s <= STALE_BEATS * hb.interval_s
        assert live_watcher(store) == hb
        # it keeps beating
        _wait(lambda: (b := read_heartbeat(store)) is not None and b.last_beat > hb.last_beat,
              3 * hb.interval_s + 30, "a second beat")
        # SIGTERM is a clean exit: the file is removed
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) != 0 or True
        assert not heartbeat_path(store).exists()
        assert read_heartbeat(store) is None and live_watcher(store) is None


def test_a_killed_watcher_leaves_a_stale_heartbeat(demo_ws: Path) -> None:
    store = _store(demo_ws)
    with watching(demo_ws) as proc:
        _heartbeat_of(store, proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        hb = read_heartbeat(store)
        assert hb is not None and hb.pid == proc.pid  # nobody removed it...
        assert hb.pid_alive is False and not hb.alive  # ...but the process is gone
        assert live_watcher(store) is None


def test_a_beat_older_than_three_intervals_is_stale(tmp_path: Path) -> None:
    store = tmp_path / "x.sqlite"
    now = int(time.time() * 1000)
    body = {"pid": os.getpid(), "host": os.uname().nodename, "owner": "t", "workspace": "w",
            "startedAt": now - 60_000, "intervalS": 2.0}
    heartbeat_path(store).write_text(json.dumps({**body, "lastBeat": now - 1000}))
    assert live_watcher(store) is not None  # our own pid, beat 1 s ago
    heartbeat_path(store).write_text(json.dumps({**body, "lastBeat": now - 7000}))
    hb = read_heartbeat(store)
    assert hb is not None and hb.pid_alive and not hb.alive  # a hung process stops beating
    heartbeat_path(store).write_text('{"pid": 1, "lastB')  # half a file says nothing
    assert read_heartbeat(store) is None


def test_ignored_files_changing_all_the_time_do_not_starve_the_watcher(demo_ws: Path) -> None:
    """Readers of the index make its -wal/-shm come and go, a heartbeat is rewritten every 2 s:
    ignored events that never pause must not keep the debounce from firing."""
    from memory_core.live import LiveIndex

    stop = False

    def noise() -> None:
        n = 0
        while not stop:
            (demo_ws / "scratch.log").write_text(str(n))  # not memory: ignored
            n += 1
            time.sleep(0.02)

    with LiveIndex.open(demo_ws, provider="none") as lv:
        assert lv.wait_idle(60)
        before = lv.status().generation
        th = threading.Thread(target=noise, daemon=True)
        th.start()
        try:
            time.sleep(0.5)
            (demo_ws / DIARY).write_text(DIARY_TEXT, encoding="utf-8")
            _wait(lambda: lv.status().generation > before, 30, "the debounced sync")
        finally:
            stop = True
            th.join()
        assert lv.status().last_reason == "watch"


# --------------------------------------------------------------------------- the workbench


@pytest.fixture
def own_watchers() -> Iterator[None]:
    """Stops the watchers the app started in this process (they outlive an AppTest)."""
    yield
    live.stop_watchers()


def test_home_follows_the_files_itself_and_shows_a_new_diary(
        open_app: OpenApp, demo_ws: Path, monkeypatch: pytest.MonkeyPatch,
        own_watchers: None) -> None:
    at = open_app(demo_ws, timeout=120)
    at.button(key="home_index").click().run()
    assert _metrics(at)["Files"] == "20"
    assert "not watched" in _sidebar(at)
    assert "not watched — run `memory-core watch -w" in _main_captions(at)

    monkeypatch.delenv("MEMORY_WORKBENCH_NO_WATCH")  # as a user runs it: the app follows
    at.run()
    assert not at.exception
    assert "live: this workbench follows the files" in _main_captions(at)
    assert "**live**" in _sidebar(at)
    store = _store(demo_ws)
    hb = live_watcher(store)
    assert hb is not None and hb.pid == os.getpid() and hb.owner == live.OWNER
    key = at.session_state["wb_key"]
    before_gen, cache_gen = _generation(demo_ws), state.generation(key)

    (demo_ws / DIARY).write_text(DIARY_TEXT, encoding="utf-8")  # no button pressed after this
    _wait(lambda: _generation(demo_ws) > before_gen, 60, "the workbench's watcher to sync")
    at.run()
    assert not at.exception
    m = _metrics(at)
    assert (m["Files"], m["Up to date"]) == ("21", "yes")
    assert f"generation {_generation(demo_ws)}" in _sidebar(at)
    assert "last sync never" not in _sidebar(at)
    assert state.generation(key) > cache_gen  # cached candidates of the old index are dropped

    live.stop_watchers()
    assert live_watcher(store) is None and not heartbeat_path(store).exists()


def test_the_watcher_started_after_the_page_built_the_index_does_not_build_it_again(
        open_app: OpenApp, demo_ws: Path, monkeypatch: pytest.MonkeyPatch,
        own_watchers: None) -> None:
    # issue #23: the workbench's watcher was suspected of rebuilding (embedding everything
    # again) an index its own page had just built; its start-up catch-up must find nothing to do
    at = open_app(demo_ws, timeout=120)
    at.button(key="home_index").click().run()
    built = _generation(demo_ws)
    monkeypatch.delenv("MEMORY_WORKBENCH_NO_WATCH")
    at.run()
    assert not at.exception and "**live**" in _sidebar(at)
    watcher = live._own(at.session_state["wb_key"])
    assert watcher.wait_idle(120) and watcher.syncs >= 1
    report = watcher.last_report
    assert report is not None and watcher.last_reason == "startup"
    assert (report.full, report.cause, report.files_indexed) == (False, None, 0)
    assert _generation(demo_ws) == built


def test_a_watch_started_after_the_workbench_is_named_and_the_workbench_yields(
        open_app: OpenApp, demo_ws: Path, monkeypatch: pytest.MonkeyPatch,
        own_watchers: None) -> None:
    """Issue #23: a ``memory-core watch`` started while the workbench follows the files itself
    must be the one Home names, and the workbench's watcher must stop (two watchers would
    follow one index); when the watch process ends, the workbench follows again."""
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
    at = open_app(demo_ws, timeout=120)
    monkeypatch.delenv("MEMORY_WORKBENCH_NO_WATCH")  # as a user runs it: the app follows
    at.run()
    assert "live: this workbench follows the files" in _main_captions(at)
    store = _store(demo_ws)
    with watching(demo_ws) as proc:
        _heartbeat_of(store, proc.pid)
        seen: list[int] = []
        for _ in range(8):  # four beats of each: whoever wrote last must always be the watch
            at.run()
            assert not at.exception
            assert f"live: watcher running (pid {proc.pid}" in _main_captions(at)
            hb = read_heartbeat(store)
            seen.append(hb.pid if hb is not None else 0)
            time.sleep(0.5)
        assert set(seen) == {proc.pid}, seen
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    at.run()
    assert "live: this workbench follows the files" in _main_captions(at)
    hb = live_watcher(store)
    assert hb is not None and hb.pid == os.getpid()


def test_chunks_list_follows_a_watch_process(open_app: OpenApp, demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
    # (AppTest drops the sidebar of a page other than Home: the indicator is read on Home)
    at = open_app(demo_ws, "pages/chunks.py", timeout=120)
    assert DIARY not in _files(at) and len(_files(at)) == 20
    store = _store(demo_ws)
    with watching(demo_ws) as proc:
        _heartbeat_of(store, proc.pid)
        at.run()
        before = _generation(demo_ws)
        (demo_ws / DIARY).write_text(DIARY_TEXT, encoding="utf-8")
        _wait(lambda: _generation(demo_ws) > before, 60, "memory-core watch to sync")
        at.run()
        assert not at.exception
        assert DIARY in _files(at) and len(_files(at)) == 21
        at.switch_page("app.py").run()
        assert "**live**" in _sidebar(at)
        assert f"generation {_generation(demo_ws)}" in _sidebar(at)
        assert f"live: watcher running (pid {proc.pid}, `memory-core watch`" in (
            _main_captions(at))
        assert _metrics(at)["Files"] == "21"
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    at.run()
    assert "not watched — run `memory-core watch -w" in _main_captions(at)


def test_chunks_sees_a_rebuild_by_another_process(open_app: OpenApp, demo_ws: Path) -> None:
    """A full rebuild elsewhere swaps the index file: the app reconnects to the new one."""
    at = open_app(demo_ws, "pages/chunks.py", timeout=120)
    assert len(_files(at)) == 20
    (demo_ws / DIARY).write_text(DIARY_TEXT, encoding="utf-8")
    out = subprocess.run([str(CLI), "index", "-w", str(demo_ws), "--provider", "none",
                          "--force", "--no-progress"], capture_output=True, text=True, env=ENV,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    at.run()
    assert not at.exception
    assert DIARY in _files(at) and len(_files(at)) == 21


def test_sidebar_says_syncing_while_a_sync_holds_the_lock(open_app: OpenApp,
                                                          demo_ws: Path) -> None:
    at = open_app(demo_ws, timeout=120)
    at.button(key="home_index").click().run()
    with sync_lock(_store(demo_ws)):
        at.run()
        assert "syncing…" in _sidebar(at)
    at.run()
    assert "syncing…" not in _sidebar(at)
