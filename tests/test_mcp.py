"""The MCP server, driven by the official SDK's client over stdio and over streamable HTTP.

Each test talks to a real ``memory-core mcp`` process (provider ``none``: keyword search is
enough to check shapes, line ranges, errors and freshness). HTTP servers bind 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.test_live import message

EXE = str(Path(sys.executable).with_name("memory-core"))
ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
BAD_CALLS: list[tuple[str, Any]] = [
    ("memory_search", {}),
    ("memory_search", {"query": None}),
    ("memory_search", {"query": 123}),
    ("memory_search", {"query": ["a"]}),
    ("memory_search", {"query": "x", "maxResults": "5"}),
    ("memory_search", {"query": "x", "maxResults": 0}),
    ("memory_search", {"query": "x", "maxResults": 2.5}),
    ("memory_search", {"query": "x", "maxResults": True}),
    ("memory_search", {"query": "x", "minScore": "high"}),
    ("memory_search", {"query": "x", "corpus": "wiki"}),
    ("memory_search", {"query": "x", "bogus": 1}),
    ("memory_get", {}),
    ("memory_get", {"path": ""}),
    ("memory_get", {"path": 5}),
    ("memory_get", {"path": "MEMORY.md\x00"}),
    ("memory_get", {"path": "MEMORY.md", "from": "x"}),
    ("memory_get", {"path": "MEMORY.md", "from": 0}),
    ("memory_get", {"path": "MEMORY.md", "lines": -3}),
    ("memory_get", {"path": "../outside.md"}),
    ("memory_get", {"path": "/etc/passwd"}),
    ("memory_get", {"path": "memory/../../outside.md"}),
    ("memory_status", {"x": 1}),
    ("no_such_tool", {}),
]


def make_ws(root: Path) -> Path:
    """A three-file workspace in ``root/ws`` (a diary holding COOKIE_EXPIRED_4711, MEMORY.md,
    a transcript) and a file outside it, ``root/outside.md``."""
    w = root / "ws"
    (w / "memory").mkdir(parents=True)
    (w / "sessions").mkdir()
    (w / "MEMORY.md").write_text("# Memory\n\nThe team prefers tabs.\n")
    (w / "memory" / "2026-11-03.md").write_text(
        "# 2026-11-03\n\nMorning: coffee.\n\n## Incident\n\nThe scraper failed with "
        "COOKIE_EXPIRED_4711 at 09:12.\nRotated the session cookie.\n")
    (w / "sessions" / "agent.jsonl").write_text(message(0, "hello from an earlier session"))
    (root / "outside.md").write_text("secret outside the workspace\n")
    return w


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return make_ws(tmp_path)


def structured(result: Any) -> dict[str, Any]:
    """The structured content, checked against the JSON text (both must say the same)."""
    text = json.loads(result.content[0].text)
    assert result.structured_content == text
    return text


def stdio_params(ws: Path, *extra: str) -> StdioServerParameters:
    # the SDK passes a minimal environment: PYTHONPATH is carried so that a worktree's server
    # runs the worktree's code, not the editable install's
    path = {k: v for k, v in os.environ.items() if k == "PYTHONPATH"}
    return StdioServerParameters(command=EXE, args=["mcp", "-w", str(ws), "--provider", "none",
                                                    *extra], env={**ENV, **path})


# ----------------------------------------------------------------------------- stdio


def test_stdio_tools_search_get_and_errors(ws: Path, tmp_path: Path) -> None:
    async def run() -> None:
        if True:
            async with Client(stdio_params(ws)) as c:
                names = [t.name for t in (await c.list_tools()).tools]
                assert {"memory_search", "memory_get", "memory_status"} <= set(names)

                r = await c.call_tool("memory_search", {"query": "COOKIE_EXPIRED_4711"})
                assert not r.is_error
                hit = structured(r)["results"][0]
                assert hit["path"] == "memory/2026-11-03.md"
                lines = (ws / hit["path"]).read_text().splitlines()
                block = lines[hit["startLine"] - 1: hit["endLine"]]
                assert any("COOKIE_EXPIRED_4711" in ln for ln in block)
                assert f"Source: {hit['path']}#L{hit['startLine']}" in hit["snippet"]

                g = await c.call_tool("memory_get", {"path": hit["path"], "from": 7,
                                                      "lines": 1})
                assert not g.is_error
                assert "COOKIE_EXPIRED_4711" in structured(g)["text"]

                out = await c.call_tool("memory_get", {"path": str(tmp_path / "outside.md")})
                assert out.is_error
                body = structured(out)
                assert body["text"] == "" and body["disabled"] is True and body["error"]

                for name, args in BAD_CALLS:
                    r = await c.call_tool(name, args)
                    assert r.is_error, (name, args)
                    assert "error" in structured(r), (name, args)
                    assert "secret" not in r.content[0].text

                st = await c.call_tool("memory_status", {})
                assert not st.is_error
                s = structured(st)
                assert s["files"] == 3 and s["generation"] >= 1
                assert s["live"]["watching"] is True and s["live"]["syncs"] >= 1

    anyio.run(run)


def test_stdio_search_records_recalls(ws: Path) -> None:
    """An agent's searches feed promotion, as the reference's tool does (§6.2)."""
    async def run() -> None:
        async with Client(stdio_params(ws)) as c:
            for _ in range(2):
                r = await c.call_tool("memory_search", {"query": "COOKIE_EXPIRED_4711"})
                assert structured(r)["results"]

    anyio.run(run)
    from memory_core import MemoryIndex
    from memory_core.promotion import list_candidates

    with MemoryIndex.open(ws, provider="none") as idx:
        cands = list_candidates(idx, min_score=0, min_recall_count=0, min_unique_queries=0,
                                max_age_days=100_000)
    assert any(c.path == "memory/2026-11-03.md" for c in cands)


# ----------------------------------------------------------------------------- HTTP


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HttpServer:
    def __init__(self, ws: Path, *extra: str, env: dict[str, str] | None = None):
        self.ws = ws
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc = subprocess.Popen(
            [EXE, "mcp", "-w", str(ws), "--provider", "none", "--transport", "http",
             "--port", str(self.port), *extra],
            env={**os.environ, **ENV, **(env or {})}, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()  # "memory-core mcp: serving http://.../mcp for ..."
        assert "serving" in line, line
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # the port answers once uvicorn is up
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("server did not start")

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """One plain HTTP server for the module's tests, on its own workspace (``.ws``): a start
    costs ~3 CPU s. It stops with the module, and must stop without a traceback."""
    srv = HttpServer(make_ws(tmp_path_factory.mktemp("http")))
    yield srv
    err = srv.stop()
    assert "Traceback" not in err


def test_http_follows_the_files(http_server: HttpServer) -> None:
    """The acceptance scenario: a diary written after start, a transcript grown by 60
    messages (5 s debounce included), a deleted diary. Deadlines are generous for a loaded
    machine; benchmarks/bench_live.py measures the real latencies."""
    ws = http_server.ws

    async def search(c: Client, q: str) -> list[str]:
        r = await c.call_tool("memory_search", {"query": q})
        assert not r.is_error
        return [h["path"] for h in structured(r)["results"]]

    async def until(c: Client, q: str, want: bool, path: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (path in await search(c, q)) == want:
                return
            await anyio.sleep(0.1)
        raise AssertionError(f"{q!r} {'not found' if want else 'still found'} in {path}")

    async def run() -> None:
        async with Client(http_server.url) as c:
            assert "memory_search" in [t.name for t in (await c.list_tools()).tools]
            diary = ws / "memory" / "2026-11-04.md"
            diary.write_text("# 2026-11-04\n\nMigrated to QUEBEC_POOL_77.\n")
            await until(c, "QUEBEC_POOL_77", True, "memory/2026-11-04.md", 10)

            t = ws / "sessions" / "agent.jsonl"  # indexed at start-up
            await until(c, "earlier session", True, "sessions/agent.jsonl", 5)
            with t.open("a") as h:
                for i in range(1, 61):
                    h.write(message(i, f"step {i}: set ROMEO_LIMIT to {i}"))
            await until(c, "ROMEO_LIMIT", True, "sessions/agent.jsonl", 20)

            diary.unlink()
            await until(c, "QUEBEC_POOL_77", False, "memory/2026-11-04.md", 10)

            r = await c.call_tool("memory_search", {"query": "x", "maxResults": "5"})
            assert r.is_error  # and the server is still there:
            assert await search(c, "COOKIE_EXPIRED_4711") == ["memory/2026-11-03.md"]

    anyio.run(run)


def _post(url: str, headers: dict[str, str]) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}).encode()
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        **headers})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def test_http_refuses_foreign_host_and_origin(http_server: HttpServer) -> None:
    assert _post(http_server.url, {}) == 200
    assert _post(http_server.url, {"Host": "evil.example:80"}) in (400, 403, 421)
    assert _post(http_server.url, {"Origin": "http://evil.example"}) in (400, 403)


def test_http_bearer_token(ws: Path) -> None:
    srv = HttpServer(ws, env={"MEMORY_CORE_MCP_TOKEN": "s3cret-token"})
    try:
        assert _post(srv.url, {}) == 401
        assert _post(srv.url, {"Authorization": "Bearer wrong"}) == 401
        assert _post(srv.url, {"Authorization": "Bearer s3cret-token"}) == 200
    finally:
        srv.stop()


def test_public_bind_without_token_is_refused(ws: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MEMORY_CORE_MCP_TOKEN"}
    p = subprocess.run([EXE, "mcp", "-w", str(ws), "--provider", "none", "--transport", "http",
                        "--host", "0.0.0.0", "--port", str(free_port())],
                       env={**env, **ENV}, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "MEMORY_CORE_MCP_TOKEN" in p.stderr
    assert "Traceback" not in p.stderr


def test_port_in_use_is_one_line(ws: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = subprocess.run([EXE, "mcp", "-w", str(ws), "--provider", "none", "--transport",
                            "http", "--port", str(port)], env={**os.environ, **ENV},
                           capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and re.search(r"cannot listen on 127\.0\.0\.1:\d+", p.stderr)
    assert "Traceback" not in p.stderr
