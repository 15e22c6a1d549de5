"""The MCP tools answered by the qmd backend (``memory-core mcp --backend qmd``), through the
tools' own code (the transports are tested in test_mcp.py): results in the builtin tool's shape
with citations, memory_get and memory_status through the backend, qmd updated when the live index
saw the files change, and the fallback reason when qmd cannot answer."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memory_core import MemoryIndex
from memory_core.backends import clear_open_failures, open_backend, resolve_command
from memory_core.base.locations import REPO_ROOT
from memory_core.live import LiveIndex
from memory_core.mcp import MemoryTools

pytestmark = pytest.mark.skipif(
    resolve_command("qmd") is None,
    reason="qmd not installed (run `bash scripts/install-node-tools.sh`; needs npm)")


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    clear_open_failures()
    ws = tmp_path / "ws"
    ws.mkdir()
    demo = REPO_ROOT / "examples" / "demo-workspace"
    shutil.copy(demo / "MEMORY.md", ws / "MEMORY.md")
    shutil.copytree(demo / "memory", ws / "memory")
    (ws / "memory-workbench.toml").write_text(
        '[sources]\nsources = ["memory"]\n[provider]\nprovider = "none"\n', encoding="utf-8")
    return ws


def test_tools_through_qmd(ws: Path) -> None:
    idx = MemoryIndex.open(ws)
    backend = open_backend(idx, "qmd")
    live = LiveIndex(idx, watch=False)
    tools = MemoryTools(live, record_recalls=False, backend=backend)
    try:
        out, err = tools.call("memory_search", {"query": "database migration"})
        assert not err and out["backend"] == "qmd" and out["mode"] == "search"
        top = out["results"][0]
        assert (top["path"], top["startLine"], top["endLine"]) == ("memory/2026-11-14.md", 14, 17)
        assert top["snippet"].endswith("Source: memory/2026-11-14.md#L14-L17")
        out, err = tools.call("memory_get", {"path": "memory/2026-11-14.md", "from": 14,
                                             "lines": 1})
        assert not err and out["text"].strip().startswith("will look empty")
        out, err = tools.call("memory_get", {"path": "../secret.md"})
        assert err and out["disabled"] is True
        out, err = tools.call("memory_status", {})
        assert not err and out["backend"] == "qmd" and out["custom"]["qmd"]["version"] == "2.8.3"
        # a new diary: qmd is updated once the live index has synced the change
        (ws / "memory" / "2026-12-01.md").write_text("# 2026-12-01\n\nThe axolotl quarantine "
                                                     "ended today.\n", encoding="utf-8")
        live.start()
        live.request_sync("test")
        assert live.wait_idle(60)
        backend.primary.last_update_at = None  # past the reference's 15 s debounce
        out, _ = tools.call("memory_search", {"query": "axolotl quarantine"})
        assert [r["path"] for r in out["results"]] == ["memory/2026-12-01.md"], out
    finally:
        live.close()
        backend.close()


def test_tools_say_qmd_fell_back(ws: Path, tmp_path: Path) -> None:
    idx = MemoryIndex.open(ws, overrides={"qmd": {"command": str(tmp_path / "none")}})
    backend = open_backend(idx, "qmd")
    live = LiveIndex(idx, watch=False)
    tools = MemoryTools(live, record_recalls=False, backend=backend)
    try:
        out, err = tools.call("memory_search", {"query": "database migration"})
        assert not err and out["backend"] == "builtin" and out["results"]
        assert "qmd binary unavailable" in out["fallback"]["reason"]
        out, _ = tools.call("memory_status", {})
        assert out["fallback"]["from"] == "qmd"
    finally:
        live.close()
        backend.close()
        clear_open_failures()


def test_stdio_server_with_backend_qmd(ws: Path) -> None:
    """``memory-core mcp --backend qmd`` through the SDK's client over stdio."""
    params = StdioServerParameters(
        command=str(Path(sys.executable).with_name("memory-core")),
        args=["mcp", "-w", str(ws), "--backend", "qmd", "--no-record"],
        env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})

    async def run() -> None:
        async with Client(params) as c:
            r = await c.call_tool("memory_search", {"query": "PgBouncer"})
            assert not r.is_error
            out = json.loads(r.content[0].text)
            assert out["backend"] == "qmd" and out["results"]
            assert all(h["citation"] in h["snippet"] for h in out["results"])
            st = json.loads((await c.call_tool("memory_status", {})).content[0].text)
            assert st["backend"] == "qmd" and st["live"]["syncs"] >= 0

    anyio.run(run)
