"""Agent tools: the reference's result shapes, errors returned, never raised."""

from __future__ import annotations

from pathlib import Path

from memory_core import MemoryIndex
from memory_core.tools import memory_get, memory_search


def test_memory_search_shape_and_order(indexed_demo: Path) -> None:
    with MemoryIndex.open(indexed_demo) as idx:
        out = memory_search(idx, "COOKIE_EXPIRED", maxResults=4)
        res = out["results"]
        assert 0 < len(res) <= 4
        assert [r["score"] for r in res] == sorted((r["score"] for r in res), reverse=True)
        assert res[0]["snippet"].endswith("Source: " + res[0]["citation"])
        assert out["provider"] == "local"
        only_sessions = memory_search(idx, "cookie", corpus="sessions")["results"]
        assert only_sessions and {r["source"] for r in only_sessions} == {"sessions"}


def test_memory_get_returns_errors(demo_ws: Path) -> None:
    idx = MemoryIndex.open(demo_ws, provider="none")
    assert memory_get(idx, "memory/2026-11-03.md", 1, 1)["text"] == "# 2026-11-03"
    bad = memory_get(idx, "../secrets.md")
    assert bad["disabled"] is True and bad["text"] == "" and "not a memory file" in bad["error"]
