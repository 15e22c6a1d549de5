"""Citations ``auto | on | off`` (spec §4.8): the ``Source:`` line of tool snippets and the
"Memory Recall" guidance of the MCP server."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memory_core import MemoryIndex
from memory_core.tools import citations_included, memory_instructions, memory_search
from tests.test_mcp import ENV, EXE, structured

ROOT = str(Path(__file__).resolve().parents[1])


def stdio_params(ws: Path) -> StdioServerParameters:
    """This checkout's server (PYTHONPATH: the script alone would import the installed one)."""
    return StdioServerParameters(command=EXE, args=["mcp", "-w", str(ws), "--provider", "none"],
                                 env={**ENV, "PYTHONPATH": ROOT})


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    (w / "memory").mkdir(parents=True)
    (w / "MEMORY.md").write_text("# Memory\n\nThe team prefers tabs.\n")
    (w / "memory" / "2026-11-03.md").write_text(
        "# 2026-11-03\n\nThe scraper failed with COOKIE_EXPIRED_4711 at 09:12.\n")
    return w


def test_auto_rule_reads_the_session_key() -> None:
    assert citations_included("on", "agent:main:discord:channel:42")
    assert not citations_included("off")
    assert citations_included("auto")  # no key: a direct chat (the MCP server, the CLI)
    assert citations_included("auto", "agent:main:main")
    assert citations_included("auto", "agent:main:telegram:direct:7")
    assert not citations_included("auto", "agent:main:discord:channel:42")
    assert not citations_included("auto", "agent:ops:whatsapp:GROUP:9")
    assert citations_included("auto", "not a session key")


@pytest.mark.parametrize("mode", ["auto", "on", "off"])
def test_snippets_follow_the_mode(ws: Path, mode: str) -> None:
    (ws / "memory-workbench.toml").write_text(f'[search]\ncitations = "{mode}"\n')
    with MemoryIndex.open(ws, provider="none") as idx:
        out = memory_search(idx, "COOKIE_EXPIRED_4711", record=False)
        group = memory_search(idx, "COOKIE_EXPIRED_4711", record=False,
                              session_key="agent:main:slack:channel:c1")
    hit = out["results"][0]
    assert out["citations"] == mode
    if mode == "off":
        assert "Source:" not in hit["snippet"] and "citation" not in hit
    else:
        assert hit["snippet"].endswith(f"\n\nSource: {hit['citation']}")
    assert ("Source:" in group["results"][0]["snippet"]) == (mode == "on")


def test_instructions_carry_memory_recall_and_drop_citing_when_off() -> None:
    on, off = memory_instructions("auto"), memory_instructions("off")
    for text in (on, off):
        assert text.startswith("## Memory Recall") and "memory_search" in text
        assert "memory_get" in text
    assert "Source: path#line" in on
    assert "Source" not in off and "Citations are off" in off


def test_mcp_server_with_citations_off(ws: Path) -> None:
    (ws / "memory-workbench.toml").write_text('[search]\ncitations = "off"\n')

    async def run() -> None:
        async with Client(stdio_params(ws)) as c:
            assert c.instructions is not None
            assert "## Memory Recall" in c.instructions and "Source" not in c.instructions
            r = structured(await c.call_tool("memory_search", {"query": "COOKIE_EXPIRED_4711"}))
            assert r["citations"] == "off" and r["results"]
            assert all("Source:" not in h["snippet"] for h in r["results"])
        (ws / "memory-workbench.toml").unlink()
        async with Client(stdio_params(ws)) as c:
            assert "Source: path#line" in (c.instructions or "")
            r = structured(await c.call_tool("memory_search", {"query": "COOKIE_EXPIRED_4711"}))
            assert r["results"][0]["snippet"].endswith(r["results"][0]["citation"])

    anyio.run(run)


def test_openclaw_memory_citations_maps(tmp_path: Path) -> None:
    from memory_core.base.config import load_config
    from memory_core.openclaw.config import memory_search_settings

    mapped = memory_search_settings({"memory": {"citations": "off"}}, "main")
    assert load_config(tmp_path, base=mapped.overrides).settings().citations == "off"
    odd = memory_search_settings({"memory": {"citations": "sometimes"}}, "main")
    assert "search" not in odd.overrides and any("citations" in n for n in odd.notes)
