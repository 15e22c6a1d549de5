"""Hostile MCP traffic (issue 19, items 5 and 6), against real ``memory-core mcp`` processes.

* HTTP on 127.0.0.1: a 650 KB query of 100k distinct words is cut by the library (its first
  terms searched, a note saying so), and another client's one-word search is answered
  meanwhile (completion asserted, no timing threshold;
  the whole test is bounded);
* stdio: a lone surrogate (``"abc\\udcff"``, valid JSON) gets an answer for its own id, other
  malformed lines get JSON-RPC ``-32700`` / ``-32600`` replies, and the server keeps serving.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from memory_core.mcp.server import MAX_BODY_BYTES
from memory_core.read.query import MAX_QUERY_TERMS
from tests.test_mcp import ENV, EXE, HttpServer, make_ws, structured
from tests.test_mcp import ws as ws  # the fixture: a fresh workspace a test may change

HUGE = " ".join(f"q{i:05d}" for i in range(100_000))  # 100k distinct words, ~700 KB


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """One HTTP server for the module's HTTP tests, on a workspace nobody changes: each test
    only sends requests and reads the answers, and ends by checking that the server still
    serves. Started once instead of ten times (a start is ~2.5 CPU s, the MCP SDK's import);
    that no request made it write a traceback is checked when it stops, after the last."""
    srv = HttpServer(make_ws(tmp_path_factory.mktemp("hostile-http")))
    yield srv
    err = srv.stop()
    assert "Traceback" not in err


def test_http_huge_query_cut_while_others_are_answered(http_server: HttpServer) -> None:
    assert len(HUGE.encode()) > 650_000
    outcomes: dict[str, Any] = {}
    order: list[str] = []

    async def call(c: Client, name: str, query: str) -> None:
        outcomes[name] = await c.call_tool("memory_search", {"query": query})
        order.append(name)

    async def run() -> None:
        with anyio.fail_after(120):  # bounds the test, not the server's speed
            async with Client(http_server.url) as a, Client(http_server.url) as b:
                async with anyio.create_task_group() as tg:
                    for i in range(3):
                        tg.start_soon(call, a, f"huge{i}", HUGE)
                    await anyio.sleep(0)
                    tg.start_soon(call, b, "small", "COOKIE_EXPIRED_4711")

    anyio.run(run)
    assert sorted(order) == ["huge0", "huge1", "huge2", "small"]
    for i in range(3):
        r = outcomes[f"huge{i}"]
        assert not r.is_error  # the library's verdict, reported: searched in part, and why
        assert structured(r)["note"] == f"query cut to its first {MAX_QUERY_TERMS} terms " \
                                        "(of 100000)"
    small = outcomes["small"]
    assert not small.is_error
    assert [h["path"] for h in structured(small)["results"]] == ["memory/2026-11-03.md"]


def test_http_query_term_cap(http_server: HttpServer) -> None:
    async def run() -> None:
        with anyio.fail_after(60):
            async with Client(http_server.url) as c:
                r = await c.call_tool("memory_search",
                                      {"query": " ".join(["cookie"] * (MAX_QUERY_TERMS + 1))})
                assert not r.is_error and f"first {MAX_QUERY_TERMS} terms" in structured(r)[
                    "note"]
                r = await c.call_tool("memory_search", {"query": " ".join(
                    ["COOKIE_EXPIRED_4711"] + ["zz"] * (MAX_QUERY_TERMS - 1))})
                assert not r.is_error  # at the cap: searched whole, no note
                assert "results" in structured(r) and "note" not in structured(r)

    anyio.run(run)


def test_http_oversized_body_refused_before_it_is_read(http_server: HttpServer) -> None:
    # declare a body over the cap and send none of it: the answer must come from the headers
    # alone (a client that sent the whole megabyte could meet a closed socket mid-way)
    import http.client
    from urllib.parse import urlsplit

    url = urlsplit(http_server.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        conn.putrequest("POST", url.path)
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Accept", "application/json, text/event-stream")
        conn.putheader("Content-Length", str(MAX_BODY_BYTES + 1))
        conn.endheaders()
        resp = conn.getresponse()
        assert resp.status == 413
        assert "over" in json.loads(resp.read())["error"]
    finally:
        conn.close()


# ----------------------------------------------------------------------------- stdio


class StdioServer:
    """A ``memory-core mcp`` stdio process spoken to line by line (not through the SDK, so
    that malformed lines reach it as they are)."""

    def __init__(self, ws: Path):
        self.proc = subprocess.Popen(
            [EXE, "mcp", "-w", str(ws), "--provider", "none"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **ENV})
        reply = self.ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}})
        assert reply["id"] == 1 and "result" in reply
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 60) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "no answer (the server hangs)"
        return dict(json.loads(self.proc.stdout.readline()))

    def ask(self, msg: dict[str, Any] | str) -> dict[str, Any]:
        self.send(msg if isinstance(msg, str) else json.dumps(msg))
        return self.receive()

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        return self.proc.stderr.read().decode()


@pytest.fixture(scope="module")
def stdio_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioServer]:
    """One stdio server for the module's malformed-line tests, on a workspace nobody changes:
    each test ends by checking that it still serves; its clean exit (status 0, no traceback)
    after all of them is checked when its input closes. Started once instead of three times."""
    srv = StdioServer(make_ws(tmp_path_factory.mktemp("hostile-stdio")))
    yield srv
    err = srv.close()
    assert srv.proc.returncode == 0 and "Traceback" not in err


def _search(rid: Any, query: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "memory_search", "arguments": {"query": query}}}


def test_stdio_lone_surrogate_and_malformed_lines_are_answered(stdio_server: StdioServer) -> None:
    srv = stdio_server
    # json.dumps writes the lone surrogate as the escape "\udcff": valid JSON
    line = json.dumps(_search(3, "abc\udcff"))
    assert "\\udcff" in line
    r = srv.ask(line)
    assert r["id"] == 3 and r["error"]["code"] == -32700 and "surrogate" in r["error"][
        "message"]
    r = srv.ask("{not json")
    assert r == {"jsonrpc": "2.0", "id": None, "error": r["error"]}
    assert r["error"]["code"] == -32700
    r = srv.ask("[1, 2]")
    assert r["id"] is None and r["error"]["code"] == -32600
    r = srv.ask('{"jsonrpc": "2.0", "id": 5}')
    assert r["id"] == 5 and r["error"]["code"] == -32600
    r = srv.ask(_search("s6", "COOKIE_EXPIRED_4711"))  # and it still serves
    assert r["id"] == "s6"
    hits = json.loads(r["result"]["content"][0]["text"])["results"]
    assert [h["path"] for h in hits] == ["memory/2026-11-03.md"]
    r = srv.ask(_search(7, HUGE))  # 700 KB on one stdio line: cut by the library, noted
    assert r["id"] == 7 and r["result"]["isError"] is False
    assert "query cut" in json.loads(r["result"]["content"][0]["text"])["note"]


# ----------------------------------------------------------------------------- issue 33


def test_http_chunked_body_over_the_cap_is_refused(http_server: HttpServer) -> None:
    # no Content-Length: the body arrives in chunks, and is cut at the cap all the same
    import http.client
    from urllib.parse import urlsplit

    url = urlsplit(http_server.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    piece = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "' + b"x" * 65536
    try:
        conn.putrequest("POST", url.path)
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Accept", "application/json, text/event-stream")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        try:
            for _ in range(2 * MAX_BODY_BYTES // len(piece) + 1):
                conn.send(b"%x\r\n%s\r\n" % (len(piece), piece))
            conn.send(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before the whole body was sent
        resp = conn.getresponse()
        assert resp.status == 413
        assert "over" in json.loads(resp.read())["error"]
    finally:
        conn.close()


def test_stdio_request_with_an_unreadable_id_is_answered(stdio_server: StdioServer) -> None:
    srv = stdio_server
    line = json.dumps(_search(1, "COOKIE_EXPIRED_4711")).replace('"id": 1', '"id": 1e400')
    r = srv.ask(line)
    assert r["id"] is None and r["error"]["code"] == -32600
    r = srv.ask(_search(9, "COOKIE_EXPIRED_4711"))  # and it still serves
    assert r["id"] == 9 and "result" in r


#: Requests whose ``id`` can be read but whose other fields are of the wrong type: each must be
#: answered for its own ``id`` (a client waits for that id), with the code given.
WRONG_FIELDS = [
    ('{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": [1]}', -32600),
    ('{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": "x"}', -32600),
    ('{"jsonrpc": "2.0", "id": 13, "method": 5}', -32600),
    ('{"jsonrpc": "1.0", "id": 14, "method": "tools/list"}', -32600),
    ('{"jsonrpc": "2.0", "id": 15, "method": "ping", "params": 5}', -32600),
    ('{"id": 16, "method": "tools/list"}', -32600),
    ('{"jsonrpc": "2.0", "id": 17, "method": "no/such"}', -32601),
    ('{"jsonrpc": "2.0", "id": 18, "method": "tools/call"}', -32602),
    ('{"jsonrpc": "2.0", "id": 19, "method": "tools/call", "params": {"name": 5}}', -32602),
    ('{"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": {"name": '
     '"memory_search", "arguments": [1]}}', -32602),
]


def test_stdio_wrong_field_types_are_answered_for_their_id(stdio_server: StdioServer) -> None:
    srv = stdio_server
    for line, code in WRONG_FIELDS:
        r = srv.ask(line)
        assert (r["id"], r["error"]["code"]) == (json.loads(line)["id"], code), line
    r = srv.ask(_search(99, "COOKIE_EXPIRED_4711"))  # and it still serves
    assert r["id"] == 99 and "result" in r


def _post(url: str, body: str) -> tuple[int, str]:
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        conn.request("POST", u.path, body=body.encode(), headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


@pytest.mark.parametrize("rid", ["1e400", "1.5", "true", "null", "{}", "[1]"])
def test_http_request_with_an_unreadable_id_is_answered(http_server: HttpServer,
                                                        rid: str) -> None:
    # the transport took it for a notification: 202, no body, the client waiting forever
    line = '{"jsonrpc": "2.0", "id": ' + rid + ', "method": "tools/list"}'
    status, body = _post(http_server.url, line)
    assert status == 400
    assert json.loads(body) == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": "Invalid request: 'tools/list' needs an 'id' that is a "
        "string or an integer"}}
    status, body = _post(http_server.url, json.dumps({  # and it still serves
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}))
    assert status == 200 and '"id":1' in body


def test_tools_over_an_index_replaced_by_a_foreign_file_say_so_in_one_line(ws: Path) -> None:
    from memory_core import MemoryIndex
    from memory_core.backends import open_backend
    from memory_core.live import LiveIndex
    from memory_core.mcp import MemoryTools

    idx = MemoryIndex.open(ws, provider="none")
    live = LiveIndex(idx, watch=False).start()
    tools = MemoryTools(live, record_recalls=False, backend=open_backend(idx, "builtin"))
    try:
        out, err = tools.call("memory_search", {"query": "COOKIE_EXPIRED_4711"})
        assert not err and out["results"]
        db = Path(live.store_path)
        for f in db.parent.glob(db.name + "*"):
            f.unlink()
        db.write_bytes(os.urandom(8192))  # somebody else's file where the index was
        for name, args in (("memory_status", {}), ("memory_search", {"query": "tabs"})):
            out, err = tools.call(name, args)
            assert err and out["error"].startswith("index path ") and str(db) in out["error"]
    finally:
        live.close()
