"""Agents can read what search returns (issue 21 item 6): ``memory_get`` of every citation
``memory_search`` returns on the demo succeeds, through the tool, the CLI and MCP; transcript
citations read the rendered lines search indexed; ``corpus`` speaks the input's vocabulary; the
MCP tools declare output schemas their results satisfy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memory_core import MemoryIndex
from memory_core.tools import memory_get, memory_search

ROOT = Path(__file__).resolve().parent.parent
EXE = str(Path(sys.executable).with_name("memory-core"))
ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
QUERIES = ("COOKIE_EXPIRED", "why did our hosting spend increase?", "Brightline rows dropped",
           "login pages from the retailers", "数据库连接池", "who is on call",
           "when was the computer overheating?", "Postgres upgrade plan")
CALLS = [(q, c) for q in QUERIES for c in (None, "sessions", "memory")]


def _first_line(snippet: str) -> str:
    """The snippet's first line of chunk text, without the "…" mark a chunk starting inside a
    line opens with."""
    return snippet.split("\n\nSource: ")[0].lstrip("\u2026").split("\n", 1)[0].strip()


def _check_read(result: dict[str, Any], got: dict[str, Any]) -> None:
    assert not got.get("error") and not got.get("disabled"), (result["citation"], got)
    assert got["path"] == result["path"] and got["from"] == result["startLine"]
    first = _first_line(result["snippet"])
    assert first and first in got["text"], (result["citation"], first[:60], got["text"][:200])
    if result["source"] == "sessions":
        assert got["source"] == "sessions"
        assert got["text"].startswith(("User: ", "Assistant: "))
        assert not got["text"].lstrip().startswith("{")  # rendered, not the raw JSONL


def _cited(idx: MemoryIndex) -> list[dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for q, corpus in CALLS:
        res = memory_search(idx, q, corpus=corpus, record=False)["results"]
        for r in res:
            assert r["corpus"] == ("sessions" if r["source"] == "sessions" else "memory")
            if corpus is not None:
                assert r["corpus"] == corpus
            out.setdefault(r["citation"], r)
    return list(out.values())


def test_memory_get_reads_every_citation_of_the_demo(indexed_demo: Path) -> None:
    with MemoryIndex.open(indexed_demo) as idx:
        cited = _cited(idx)
        assert sum(r["source"] == "sessions" for r in cited) >= 3
        assert sum(r["source"] == "memory" for r in cited) >= 10
        for r in cited:
            got = memory_get(idx, r["path"], r["startLine"], r["endLine"] - r["startLine"] + 1)
            _check_read(r, got)


def test_transcript_read_follows_jsonl_line_numbers(indexed_demo: Path) -> None:
    path = "sessions/3f2c9a1e-7b4d-4c1a-9e2f-5a8b6c0d1e23.jsonl"
    raw = (indexed_demo / path).read_text(encoding="utf-8").split("\n")
    with MemoryIndex.open(indexed_demo) as idx:
        line_map = idx.file_view(path).line_map
        assert line_map is not None
        jl = line_map[1]  # the JSONL line of the second rendered message
        one = memory_get(idx, path, jl, 1)
        content = json.loads(raw[jl - 1])["message"]["content"]
        text = content if isinstance(content, str) else " ".join(
            p.get("text", "") for p in content if isinstance(p, dict))
        assert one["lines"] == 1 and text.strip()[:40] in one["text"]
        assert one["nextFrom"] == line_map[2]
        whole = memory_get(idx, path, 1, 10_000)
        assert whole["text"] == idx.file_view(path).text.rstrip("\n")
        assert "nextFrom" not in whole
        past = memory_get(idx, path, 10_000, 5)
        assert past["text"] == "" and not past.get("error")


@pytest.mark.parametrize("path", ["sessions/nope.jsonl", "../sessions/x.jsonl",
                                  "notes/stray.jsonl", "/etc/passwd.jsonl",
                                  "sessions/../MEMORY.jsonl"])
def test_memory_get_still_refuses_what_is_not_a_source(demo_ws: Path, path: str) -> None:
    (demo_ws / "notes" / "stray.jsonl").write_text('{"type":"message"}\n', encoding="utf-8")
    (demo_ws / "MEMORY.jsonl").write_text('{"type":"message"}\n', encoding="utf-8")
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        got = memory_get(idx, path, 1, 5)
    assert got["disabled"] is True and got["text"] == "" and got["error"]


def test_transcripts_unreadable_when_sessions_are_not_a_source(demo_ws: Path) -> None:
    with MemoryIndex.open(demo_ws, provider="none",
                          overrides={"sources": {"sources": ["memory"]}}) as idx:
        got = memory_get(idx, "sessions/3f2c9a1e-7b4d-4c1a-9e2f-5a8b6c0d1e23.jsonl", 1, 5)
    assert got["disabled"] is True and "not a session transcript" in got["error"]


@pytest.fixture
def demo_copy(indexed_demo: Path, tmp_path: Path) -> Path:
    """A copy of the indexed demo, index included, for faces that write (recalls, live)."""
    ws = tmp_path / "demo"
    shutil.copytree(indexed_demo, ws)
    return ws


def test_cli_get_reads_a_transcript_citation(demo_copy: Path) -> None:
    indexed_demo = demo_copy
    env = {**os.environ, **ENV, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "memory_core", "search", "-w",
                          str(indexed_demo), "Brightline rows dropped", "--json", "--no-record"],
                         capture_output=True, text=True, env=env, timeout=600, check=True)
    hits = [h for h in json.loads(out.stdout)["results"] if h["source"] == "sessions"]
    assert hits
    for h in hits:
        got = subprocess.run([sys.executable, "-m", "memory_core", "get", "-w",
                              str(indexed_demo), h["path"], "--from", str(h["startLine"]),
                              "--lines", str(h["endLine"] - h["startLine"] + 1), "--json"],
                             capture_output=True, text=True, env=env, timeout=600)
        assert got.returncode == 0, got.stderr
        body = json.loads(got.stdout)
        assert body["source"] == "sessions" and body["text"].startswith(("User:", "Assistant:"))
        assert _first_line(h["snippet"]) in body["text"]


def test_mcp_declares_output_schemas_and_reads_every_citation(demo_copy: Path) -> None:
    params = StdioServerParameters(command=EXE, args=["mcp", "-w", str(demo_copy), "--no-record"],
                                   env={**ENV, "PYTHONPATH": str(ROOT)})

    async def run() -> None:
        async with Client(params) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            for name in ("memory_search", "memory_get", "memory_status"):
                schema = tools[name].output_schema
                assert schema and schema["type"] == "object"
                success, error = schema["anyOf"]
                assert success["required"] and error == {"required": ["error"]}
            assert "nothing relevant is stored" in (tools["memory_search"].description or "")
            assert "sessions" in (tools["memory_get"].description or "")
            cited: dict[str, dict[str, Any]] = {}
            # the SDK's client validates each non-error result against the declared schema
            for q, corpus in CALLS[:12]:
                args: dict[str, Any] = {"query": q}
                if corpus:
                    args["corpus"] = corpus
                r = await c.call_tool("memory_search", args)
                assert not r.is_error
                for hit in r.structured_content["results"]:
                    if corpus:
                        assert hit["corpus"] == corpus
                    cited.setdefault(hit["citation"], hit)
            assert any(h["source"] == "sessions" for h in cited.values())
            for hit in cited.values():
                g = await c.call_tool("memory_get", {
                    "path": hit["path"], "from": hit["startLine"],
                    "lines": hit["endLine"] - hit["startLine"] + 1})
                assert not g.is_error, g.structured_content
                _check_read(hit, g.structured_content)
            st = await c.call_tool("memory_status", {})
            assert not st.is_error and "live" in st.structured_content

    anyio.run(run)
