"""Ranking that knows what time the question asks about (issue #34, item 2).

The ``current`` fusion step over real Candidates values (no index), then the real engine on a
small workspace through ``search --json``'s shape: a question about now gets the newest
statement first, a question about the past still finds the old one, and every hit covering a
superseded statement says which line superseded it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from memory_core import MemoryIndex
from memory_core.base.config import profile_settings
from memory_core.base.supersession import asks_about, time_focus
from memory_core.read.candidates import Candidates, ChunkInfo, LegHit
from memory_core.read.fusion import TAILS, fuse

OLD = "memory/2026-08-14.md"
NEW = "memory/2026-11-18.md"
SUBJECT = (frozenset({"redi", "maxmemory"}),)


def _cands(query: str) -> Candidates:
    """The old statement is both legs' best; the new one, in other words, ranks lower."""
    chunks = {"old": ChunkInfo("old", OLD, "memory", 40, 42, "Redis maxmemory is 4gb"),
              "new": ChunkInfo("new", NEW, "memory", 33, 33, "maxmemory now 8gb"),
              "other": ChunkInfo("other", "notes/redis.md", "memory", 1, 9, "Redis notes")}
    vector = (LegHit("old", 0.8, 1, 0.8), LegHit("other", 0.6, 2, 0.6),
              LegHit("new", 0.5, 3, 0.5))
    keyword = (LegHit("old", 0.5, 1, -9.0), LegHit("new", 0.3, 2, -4.0))
    return Candidates(query, "hybrid", vector, keyword, chunks, 200,
                      superseded={"old": f"{NEW}#L33"}, current=frozenset({"new"}),
                      subjects={"old": SUBJECT, "new": SUBJECT})


def _order(query: str, **kw: float) -> list[str]:
    s = replace(profile_settings("default"), calibration="", **kw)
    return [h.id for h in fuse(_cands(query), s).hits]


def test_the_question_about_now_gets_the_newest_value_first() -> None:
    assert _order("What is Redis maxmemory set to currently?") == ["new", "old", "other"]
    assert _order("What is Redis maxmemory set to?") == ["new", "old", "other"]  # no cue: now
    # off: the older statement's words and vector win, as before
    assert _order("What is Redis maxmemory set to currently?", supersession_penalty=0.0,
                  current_boost=0.0) == ["old", "new", "other"]


def test_the_question_about_the_past_still_finds_the_old_value() -> None:
    assert _order("What was Redis maxmemory set to before?")[0] == "old"
    assert _order("以前 Redis maxmemory 是多少？")[0] == "old"


def test_a_question_about_something_else_is_left_alone() -> None:
    """A hit covering a superseded statement is marked, but a question that does not ask for
    that attribute's value (here: how to read the notes) keeps its order."""
    q = "How do I read the Redis notes?"
    assert _order(q) == _order(q, supersession_penalty=0.0, current_boost=0.0)
    assert _order(q)[0] == "old"


def test_superseded_hits_are_marked_in_the_result_and_the_explain() -> None:
    res = fuse(_cands("What is Redis maxmemory now?"), profile_settings("default"))
    by = {h.id: h.to_result(explain=True) for h in res.hits + res.below_gate}
    assert by["old"]["supersededBy"] == f"{NEW}#L33"
    assert by["old"]["explain"]["current"]["factor"] == 0.5  # type: ignore[index]
    assert "supersededBy" not in by["new"] and "supersededBy" not in by["other"]
    # calibrated: the superseded line is no confident answer to a question about now
    assert by["new"]["score"] > by["old"]["score"]  # type: ignore[operator]


def test_the_reference_profile_never_takes_the_step() -> None:
    assert all("current" not in TAILS[t] for t in TAILS if t.startswith("reference"))
    res = fuse(_cands("What is Redis maxmemory now?"), profile_settings("reference"))
    assert all("supersededBy" not in h.to_result() for h in res.hits)


def test_time_focus_and_value_questions() -> None:
    for q in ("Which proxy vendor do we use now?", "Who is on call?", "现在值班的是谁？",
              "目前用的是哪个代理？", "What's the latest Postgres version we run?"):
        assert time_focus(q) == "now", q
    for q in ("Which proxy vendor did we use in August?", "What did we use before Sable?",
              "Who used to be on call?", "以前的代理供应商是谁？", "之前的报表时间是几点？",
              "原来的并发是多少？", "Which vendor did we have previously?"):
        assert time_focus(q) == "past", q
    assert asks_about("What is Redis maxmemory?", SUBJECT)
    assert not asks_about("Restart Redis and check maxmemory", SUBJECT)  # not a question


def test_search_json_marks_superseded_hits_end_to_end(tmp_path: Path) -> None:
    mem = tmp_path / "memory"
    mem.mkdir()
    (mem / "2026-08-14.md").write_text(
        "# 2026-08-14\n\n## Redis\n- Redis maxmemory is 4gb on the frontier host, policy "
        "noeviction: Redis maxmemory matters for the frontier.\n", encoding="utf-8")
    (mem / "2026-11-18.md").write_text(
        "# 2026-11-18\n\n## Frontier\n- Raised Redis maxmemory from 4gb to 8gb.\n",
        encoding="utf-8")
    (mem / "2026-09-01.md").write_text("# 2026-09-01\n\n- Lunch was good.\n", encoding="utf-8")
    with MemoryIndex.open(tmp_path, provider="none") as idx:
        idx.sync()
        now = [h.to_result() for h in idx.search("What is Redis maxmemory set to now?").hits]
        past = [h.to_result() for h in idx.search("What was Redis maxmemory before?").hits]
    assert now[0]["path"] == "memory/2026-11-18.md" and "supersededBy" not in now[0]
    old = next(r for r in now if r["path"] == "memory/2026-08-14.md")
    assert old["supersededBy"] == "memory/2026-11-18.md#L4"
    assert past[0]["path"] == "memory/2026-08-14.md"
    json.dumps(now)  # the shape search --json prints


def test_mcp_structured_content_carries_superseded_by(tmp_path: Path) -> None:
    """A real ``memory-core mcp`` process: the search tool's outputSchema declares
    ``supersededBy`` and its structured content carries it on the superseded hit."""
    import anyio
    from mcp import Client

    from tests.test_mcp import stdio_params, structured

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-08-14.md").write_text(
        "# 2026-08-14\n\n- Redis maxmemory is 4gb on the frontier host.\n", encoding="utf-8")
    (ws / "memory" / "2026-11-18.md").write_text(
        "# 2026-11-18\n\n- Raised Redis maxmemory from 4gb to 8gb.\n", encoding="utf-8")

    async def run() -> None:
        async with Client(stdio_params(ws)) as c:
            tool = next(t for t in (await c.list_tools()).tools if t.name == "memory_search")
            item = tool.output_schema["properties"]["results"]["items"]  # type: ignore[index]
            assert item["properties"]["supersededBy"]["type"] == "string"
            r = await c.call_tool("memory_search", {"query": "What was Redis maxmemory before?"})
            hits = structured(r)["results"]
            old = next(h for h in hits if h["path"] == "memory/2026-08-14.md")
            assert old["supersededBy"] == "memory/2026-11-18.md#L3"
            assert all("supersededBy" not in h for h in hits if h is not old)

    anyio.run(run)
