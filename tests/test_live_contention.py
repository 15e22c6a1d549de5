"""Issue #13 item 15: while a long sync holds an index, a second sync waits its turn (bounded,
with a progress line) and a search answers from the last committed state at once.

The "long sync" is another process holding the index's sync lock, exactly what a running
``index`` holds for its whole duration.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.index import SyncBusy

EXE = str(Path(sys.executable).with_name("memory-core"))
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    (w / "memory").mkdir(parents=True)
    (w / "memory" / "2026-01-01.md").write_text("# Day\n\nUNIFORM_COMMITTED was decided.\n")
    with MemoryIndex.open(w, provider="none") as idx:
        idx.sync()
    return w


@contextmanager
def held_elsewhere(index_path: Path, seconds: float) -> Iterator[subprocess.Popen[str]]:
    """Another process holds the sync lock of ``index_path`` for ``seconds``."""
    code = ("import sys, time; from pathlib import Path; "
            "from memory_core.base.synclock import sync_lock\n"
            "with sync_lock(Path(sys.argv[1])):\n"
            "    print('held', flush=True); time.sleep(float(sys.argv[2]))\n")
    p = subprocess.Popen([sys.executable, "-c", code, str(index_path), str(seconds)],
                         stdout=subprocess.PIPE, text=True, env=ENV)
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    try:
        yield p
    finally:
        p.kill()
        p.wait()


def test_sync_waits_bounded_then_says_why(ws: Path) -> None:
    with MemoryIndex.open(ws, provider="none") as idx:
        waits: list[tuple[str, int, int]] = []
        with held_elsewhere(idx.store_path, 30):
            t0 = time.monotonic()
            with pytest.raises(SyncBusy, match=r"being synced by another process \(pid \d+\)"):
                idx.sync(lock_wait_s=1.5, progress=lambda *a: waits.append(a))
            assert 1.4 < time.monotonic() - t0 < 10
        assert waits and waits[0][0] == "waiting for another sync"
        assert idx.sync().files_seen == 1  # free again: syncs normally


def test_second_index_waits_its_turn(ws: Path) -> None:
    with MemoryIndex.open(ws, provider="none") as idx:
        store = idx.store_path
    (ws / "memory" / "2026-01-02.md").write_text("# Day 2\n\nVICTOR_LATER\n")
    with held_elsewhere(store, 3) as holder:
        t0 = time.monotonic()
        p = subprocess.run([EXE, "index", "-w", str(ws), "--provider", "none"],
                           capture_output=True, text=True, timeout=120, env=ENV)
        elapsed = time.monotonic() - t0
        assert holder.poll() is not None  # it waited for the holder to finish
    assert p.returncode == 0, p.stderr
    assert elapsed > 2
    assert "waiting for another sync" in p.stderr
    assert "Traceback" not in p.stderr and "locked" not in p.stderr
    assert "1 indexed" in p.stdout


def test_search_answers_at_once_from_committed_state(ws: Path) -> None:
    with MemoryIndex.open(ws, provider="none") as idx:
        store = idx.store_path
    (ws / "memory" / "2026-01-02.md").write_text("# Day 2\n\nUNIFORM_COMMITTED revisited\n")
    with held_elsewhere(store, 120) as holder:
        t0 = time.monotonic()
        p = subprocess.run([EXE, "search", "UNIFORM_COMMITTED", "-w", str(ws), "--provider",
                            "none", "--json"], capture_output=True, text=True, timeout=60,
                           env=ENV)
        elapsed = time.monotonic() - t0
        assert holder.poll() is None  # the long sync is still running
    assert p.returncode == 0, p.stderr
    assert elapsed < 30  # process start-up only; it did not wait for the 120 s holder
    paths = [r["path"] for r in json.loads(p.stdout)["results"]]
    assert paths == ["memory/2026-01-01.md"]  # the committed state, not the new diary
    assert "Traceback" not in p.stderr
