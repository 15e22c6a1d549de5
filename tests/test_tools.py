"""Agent tools: the reference's result shapes, errors returned, never raised."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

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


# ------------------------------------------------------------------ issue #13 items 11 and 7


@pytest.fixture
def fts_index(demo_ws: Path) -> Iterator[MemoryIndex]:
    """The demo workspace, keyword-only (no model), indexed."""
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        yield idx


def test_the_library_cuts_a_650_kb_query_with_a_note(fts_index: MemoryIndex) -> None:
    """The query cap lives in the library (issue #32): the agent tool answers a 650 KB query
    of 100k words at once with its first terms searched and a note, where it took 214 s."""
    import time

    from memory_core.read.query import MAX_QUERY_CHARS, MAX_QUERY_TERMS

    huge = " ".join(f"q{i:05d}" for i in range(100_000))[:650_000]
    t = time.perf_counter()
    out = memory_search(fts_index, huge, record=False)
    assert time.perf_counter() - t < 5.0
    assert "error" not in out and out["note"] == (
        f"query cut to its first {MAX_QUERY_TERMS} terms (of 92858)")
    res = fts_index.search("COOKIE_EXPIRED " + "x" * 10_000)  # one long term: characters
    assert res.note == f"query cut to its first {MAX_QUERY_CHARS} characters (of 10015)"
    assert [h.path for h in res.hits][:1] == ["memory/2026-11-03.md"]
    assert fts_index.search("COOKIE_EXPIRED").note == ""


def test_a_650_kb_query_reaches_the_local_model_cut(indexed_demo: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """With the local model (issue #32) the cap applies before any work on the query's text:
    the model embeds at most MAX_QUERY_CHARS characters, so the answer's time is bounded by
    one short query's embedding (at most the model's 256 word pieces: 2.1-2.4 s in a fresh
    process at load 20, 0.6 s on a quieter machine), and the answer says it was cut."""
    from memory_core.read.query import MAX_QUERY_CHARS, MAX_QUERY_TERMS

    with MemoryIndex.open(indexed_demo) as idx:
        provider = idx.choice.provider
        assert provider is not None
        embedded: list[int] = []
        real = provider.embed_query

        def counted(text: str) -> object:  # the real model, its input's length recorded
            embedded.append(len(text))
            return real(text)

        monkeypatch.setattr(provider, "embed_query", counted)
        out = memory_search(idx, "word " * 130_000, record=False)
    assert out["provider"] == "local" and "error" not in out
    assert out["note"] == f"query cut to its first {MAX_QUERY_TERMS} terms (of 130000)"
    assert embedded and max(embedded) <= MAX_QUERY_CHARS, embedded


BAD_SEARCHES: list[tuple[tuple[object, ...], str]] = [
    ((None,), "query required"),
    ((123,), "query required"),
    ((["cookie"],), "query required"),
    (("   ",), "query required"),
    (("cookie\x00",), "query must not contain NUL"),
    (("cookie", "x"), "maxResults must be an integer"),
    (("cookie", True), "maxResults must be an integer"),
    (("cookie", float("nan")), "maxResults must be a finite number"),
    (("cookie", "5"), "maxResults must be an integer (got the string '5')"),
    (("cookie", 2.5), "maxResults must be an integer (got 2.5)"),
    (("cookie", 0), "maxResults must be between 1 and 100 (got 0)"),
    (("cookie", None, "high"), "minScore must be a number"),
    (("cookie", None, 1.5), "minScore must be between 0.0 and 1.0 (got 1.5)"),
    (("cookie", None, None, "wiki"), "corpus must be one of memory, sessions, all"),
    (("cookie", None, None, 5), "corpus must be one of"),
]


@pytest.mark.parametrize(("args", "error"), BAD_SEARCHES,
                         ids=[repr(a)[:40] for a, _ in BAD_SEARCHES])
def test_memory_search_never_raises(fts_index: MemoryIndex, args: tuple[object, ...],
                                    error: str) -> None:
    out = memory_search(fts_index, *args)  # type: ignore[arg-type]
    assert out["results"] == []
    assert out["error"].startswith(error), out
    assert "unavailable" not in out  # a bad argument, not a broken index
    json.dumps(out)


def test_one_rule_one_schema_for_the_tool_api_and_mcp(fts_index: MemoryIndex) -> None:
    """Issue 20: the tool API used to read ``"5"`` as 5 and truncate 1.9 where the MCP server
    refused both. Both now check a call against the one schema the MCP server publishes: JSON
    has one number type, so 2.0 is the integer 2; a string or a fraction is not."""
    from memory_core.mcp.server import tool_list
    from memory_core.tools import GET_SCHEMA, SEARCH_SCHEMA, BadArgument, check_arguments

    published = {t.name: t.input_schema for t in tool_list()}
    assert published["memory_search"] == SEARCH_SCHEMA
    assert published["memory_get"] == GET_SCHEMA
    assert SEARCH_SCHEMA["properties"]["minScore"] == {
        "type": "number", "minimum": 0.0, "maximum": 1.0,
        "description": SEARCH_SCHEMA["properties"]["minScore"]["description"]}
    as_int = memory_search(fts_index, "cookie", 2)
    assert len(as_int["results"]) == 2
    assert memory_search(fts_index, " cookie ", 2.0, 0)["results"] == as_int["results"]
    for bad in ("2", 1.9):
        with pytest.raises(BadArgument, match="maxResults must be an integer"):
            check_arguments({"query": "cookie", "maxResults": bad}, SEARCH_SCHEMA)
        assert memory_search(fts_index, "cookie", bad)["error"].startswith(
            "maxResults must be an integer")


BAD_GETS: list[tuple[tuple[object, ...], str]] = [
    (("MEMORY.md\x00",), "path must not contain NUL"),
    (("MEMORY.md", "x"), "from must be an integer"),
    (("MEMORY.md", 1, "ten"), "lines must be an integer"),
    (("MEMORY.md", float("inf")), "from must be a finite number"),
    (("MEMORY.md", [1]), "from must be an integer"),
    (("MEMORY.md", "1"), "from must be an integer"),
    (("MEMORY.md", 0), "from must be at least 1"),
    ((None,), "path required"),
    ((42,), "path required"),
    (("",), "path required"),
    (("memory/\x00/../MEMORY.md",), "path must not contain NUL"),
]


@pytest.mark.parametrize(("args", "error"), BAD_GETS, ids=[repr(a)[:40] for a, _ in BAD_GETS])
def test_memory_get_never_raises(demo_ws: Path, args: tuple[object, ...], error: str) -> None:
    idx = MemoryIndex.open(demo_ws, provider="none")
    out = memory_get(idx, *args)  # type: ignore[arg-type]
    assert out["disabled"] is True and out["text"] == ""
    assert out["error"].startswith(error), out
    assert out["path"] == (args[0] if isinstance(args[0], str) else "")
    json.dumps(out)


def test_memory_get_reads_integral_numbers(demo_ws: Path) -> None:
    idx = MemoryIndex.open(demo_ws, provider="none")
    assert memory_get(idx, "memory/2026-11-03.md", 1.0, 1.0) == \
        memory_get(idx, "memory/2026-11-03.md", 1, 1)


def _damage(db: Path) -> None:
    """Random bytes over the middle third of the file's pages (header page kept)."""
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    pages = len(data) // page
    rnd = random.Random(13)
    for n in range(max(1, pages // 3), max(2, 2 * pages // 3)):
        data[n * page:(n + 1) * page] = rnd.randbytes(page)
    db.write_bytes(bytes(data))


def test_damaged_index_is_unavailable_never_an_empty_success(demo_ws: Path) -> None:
    """Item 7, the tool's side: with random pages in the index, search used to answer
    ``{"results": []}``. When it cannot rebuild now (a live index never syncs on search), the
    result says ``unavailable`` and why; when it can, it answers from the rebuilt index."""
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        healthy = memory_search(idx, "cookie", record=False)["results"]
        db = idx.store_path
    assert healthy
    _damage(db)
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.auto_sync = False
        out = memory_search(idx, "cookie", record=False)
    assert out["results"] == [] and out["unavailable"] is True and out["disabled"] is True
    assert "damaged" in out["error"] and "memory-core index" in out["action"]
    json.dumps(out)
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        again = memory_search(idx, "cookie", record=False)
    assert again.get("unavailable") or [r["path"] for r in again["results"]] == \
        [r["path"] for r in healthy]
