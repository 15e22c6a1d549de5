"""A sync's full rebuild says its cause (issue #20 item 4): a :class:`RebuildCause` with its
user-facing text, the report's ``reason`` as before, and ``index --json``'s ``cause``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.cli import main
from memory_core.storage.store import IndexUnavailable
from memory_core.write.rebuild import RebuildCause


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Notes\n\nThe boiler is serviced in March.\n")
    return ws


def test_a_rebuild_reports_its_cause(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    ws = _ws(tmp_path)
    with MemoryIndex.open(ws, provider="none") as idx:
        first = idx.sync()
        assert (first.cause, first.reason) == (RebuildCause.NO_INDEX, "no index yet")
        assert idx.sync().cause is None
        forced = idx.sync(force=True)
        assert (forced.cause, forced.reason) == (RebuildCause.FORCED, "forced")
        with pytest.raises(IndexUnavailable):
            raise idx.store.unavailable(Exception("a read proved it"))
    with MemoryIndex.open(ws, provider="none") as idx:
        marked = idx.sync()
        assert marked.cause is RebuildCause.DAMAGE_FOUND
        assert marked.reason == ("index damaged (found by an earlier read: a read proved it), "
                                 "rebuilding")
    ov = {"chunking": {"tokens": 300}}
    assert main(["index", "--workspace", str(ws), "--json", "--no-progress",
                 "--provider", "none"]) == 0
    assert json.loads(capsys.readouterr().out)["report"]["cause"] is None
    with MemoryIndex.open(ws, provider="none", overrides=ov) as idx:
        changed = idx.sync()
        assert changed.cause is RebuildCause.IDENTITY
        assert changed.reason.startswith("chunkTokens changed (")
        assert idx.status().identity.status == "valid"  # type: ignore[union-attr]
