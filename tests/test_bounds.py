"""Bounded reads (issue #33 item 4): ``memory_get``'s path and long reads cost time linear in
what is read, and the store's read memo does not grow with the number of distinct queries."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

from memory_core import tools
from memory_core.index import MemoryIndex
from memory_core.read.reading import MAX_PATH_CHARS
from memory_core.storage.store import Store


def small_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n- The team prefers tabs.\n")
    (ws / "memory" / "long.md").write_text("".join(f"line {i:06d} of the log\n"
                                                   for i in range(40_000)))
    return ws


def test_a_huge_path_is_refused_at_once(tmp_path: Path) -> None:
    with MemoryIndex.open(small_ws(tmp_path), provider="none") as idx:
        for path in ("a/" * 150_000 + "x.md", "sessions/" + "a/" * 150_000 + "x.jsonl"):
            t0 = time.monotonic()
            out = tools.memory_get(idx, path)
            assert time.monotonic() - t0 < 1.0
            assert out["disabled"] and f"at most {MAX_PATH_CHARS}" in out["error"]
        ok = tools.memory_get(idx, "MEMORY.md")
        assert "tabs" in ok["text"]


def test_a_long_read_is_cut_in_linear_time(tmp_path: Path) -> None:
    with MemoryIndex.open(small_ws(tmp_path), provider="none") as idx:
        t0 = time.monotonic()
        out = tools.memory_get(idx, "memory/long.md", 1, 40_000)
        assert time.monotonic() - t0 < 2.0
    kept = out["text"].split("\n\n[More content")[0].split("\n")
    assert kept[0] == "line 000000 of the log" and out["truncated"]
    assert out["nextFrom"] == len(kept) + 1 and len(kept) > 100


def test_the_read_memo_is_bounded(tmp_path: Path) -> None:
    store = Store(tmp_path / "x.sqlite")
    try:
        for i in range(2000):  # warm: the memo full, the connection's caches too
            store.read_memo("SELECT ?", [(f"w{i}",)])
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for i in range(2000, 40_000):  # 38,000 distinct reads, the index unchanged
            store.read_memo("SELECT ?", [(f"w{i}",)])
        grown = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert grown < 2_000_000, grown
        assert store.read_memo("SELECT ?", [("w39999",)]) == [[("w39999",)]]
    finally:
        store.close()
