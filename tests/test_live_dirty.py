"""The live index's ``dirty`` tells the truth (issue #33, item 2): after a sync that failed,
the index is behind the files, so ``memory_status`` must not say ``dirty: false`` while it
waits to retry."""

from __future__ import annotations

import time
from pathlib import Path

from memory_core import MemoryIndex
from memory_core.live import LiveIndex


def test_dirty_while_the_last_sync_failed(tmp_path: Path) -> None:
    db = {"store": {"path": str(tmp_path / "shared.sqlite")}}
    a, b = tmp_path / "a", tmp_path / "b"
    for ws in (a, b):
        (ws / "memory").mkdir(parents=True)
        (ws / "MEMORY.md").write_text(f"# {ws.name}\n")
    with MemoryIndex.open(a, provider="none", overrides=db) as idx:
        idx.sync()
    live = LiveIndex.open(b, provider="none", overrides=db, watch=False)
    try:
        live.start()
        deadline = time.monotonic() + 30
        while live.status().last_error is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert live.wait_idle(30)
        st = live.status()
        assert st.last_error and "one index serves one workspace" in st.last_error
        assert st.dirty  # behind the files: never "up to date" after a failed sync
    finally:
        live.close()
