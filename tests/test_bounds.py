"""Bounded reads (issue #33 item 4): ``memory_get``'s path and long reads cost time linear in
what is read, and the store's read memo does not grow with the number of distinct queries. The
store and the workbench keep their memos in one LRU, :mod:`memory_core.base.lru` (issue #32)."""

from __future__ import annotations

import threading
import time
import tracemalloc
from pathlib import Path

from memory_core import tools
from memory_core.base.lru import Lru
from memory_core.index import MemoryIndex
from memory_core.read.reading import MAX_PATH_CHARS
from memory_core.storage.store import Store
from tests.product_files import ROOT, product_files


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


def test_one_lru_keeps_the_most_recent_and_forgets_on_change() -> None:
    lru = Lru(2)
    lru.valid_for(1)
    calls: list[str] = []
    get = lambda k: lru.get_or(k, lambda: calls.append(k) or k.upper())  # noqa: E731
    assert [get("a"), get("b"), get("a"), get("c"), get("a"), get("b")] == list("ABACAB")
    assert calls == ["a", "b", "c", "b"]  # "a" was used last, so "b" made room for "c"
    lru.valid_for(1)  # the same stamp keeps what is kept
    assert get("a") == "A" and calls[-1] == "b" and list(lru) == ["b", "a"]
    lru.valid_for(2)
    assert list(lru) == [] and get("a") == "A" and calls[-1] == "a"


def test_one_lru_shared_by_threads_stays_bounded() -> None:
    lru = Lru(8)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(3000):
                assert lru.get_or((n + i) % 50, lambda i=i: i) is not None
                if i % 500 == 0:
                    lru.valid_for(i)
        except BaseException as e:  # pragma: no cover - shown by the assert below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == [] and len(lru) <= 8


def test_the_store_memo_is_read_again_after_a_write(tmp_path: Path) -> None:
    store = Store(tmp_path / "x.sqlite")
    try:
        store.db.execute("CREATE TABLE t(x)")
        assert store.read_memo("SELECT x FROM t", [()]) == [[]]
        store.db.execute("INSERT INTO t VALUES (1)")
        assert store.read_memo("SELECT x FROM t", [()]) == [[(1,)]]
    finally:
        store.close()


def test_no_module_but_base_lru_keeps_an_lru_by_hand() -> None:
    """One LRU in the product: no other module orders a dict by use to drop its oldest."""
    found = [str(p.relative_to(ROOT)) for p in product_files()
             if p != ROOT / "memory_core" / "base" / "lru.py"
             and any(w in p.read_text(encoding="utf-8")
                     for w in ("OrderedDict", "move_to_end", "popitem(last=False)"))]
    assert found == []
