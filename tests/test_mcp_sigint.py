"""Ctrl-C ends ``memory-core mcp`` at once (issue 33): over stdio idle, and over stdio and HTTP
with a tool call stuck in a worker thread. Real server processes on copies of the demo
workspace (provider ``none``), as :mod:`tests.test_mcp` and :mod:`tests.test_mcp_hostile` run
them."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import anyio
import pytest
from mcp import Client

from memory_core import MemoryIndex
from tests.test_mcp import HttpServer
from tests.test_mcp_hostile import StdioServer

#: Generous for a loaded machine: today's server waited for the next stdin line, forever.
EXIT_WITHIN_S = 5.0


@pytest.fixture(autouse=True)
def sigint_not_ignored() -> Iterator[None]:
    """Start each server as a terminal starts it, SIGINT not ignored. A child keeps an ignored
    SIGINT across exec, and a non-interactive shell starts a background job (``make test &``)
    with SIGINT ignored: pytest, its workers and every server they started then ignored
    Ctrl-C, and these tests failed however quickly the server would have exited."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before if before is not None else signal.SIG_DFL)


@contextmanager
def serving(ws: Path) -> Iterator[StdioServer]:
    """A server on ``ws``, initialized; killed on the way out if it is still there."""
    srv = StdioServer(ws)
    try:
        yield srv
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait()


def interrupt(srv: StdioServer | HttpServer, ws: Path) -> None:
    """SIGINT to the server: it exits within the bound, 0 or 130, no traceback, and the index
    it leaves opens and answers."""
    assert srv.proc.stderr is not None
    t0 = time.monotonic()
    srv.proc.send_signal(signal.SIGINT)
    try:
        code = srv.proc.wait(timeout=EXIT_WITHIN_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the server ignored SIGINT for {EXIT_WITHIN_S:.0f} s")
    took, out = time.monotonic() - t0, srv.proc.stderr.read()
    err = out.decode() if isinstance(out, bytes) else out
    assert code in (0, 130), (code, err)
    assert "Traceback" not in err, err
    assert took < EXIT_WITHIN_S
    with MemoryIndex.open(ws, provider="none") as idx:
        assert idx.search("incident", max_results=1).hits  # opens, reads, finds


def test_sigint_when_idle(demo_ws: Path) -> None:
    with serving(demo_ws) as srv:
        assert srv.ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]
        interrupt(srv, demo_ws)


def test_sigint_while_a_tool_call_is_stuck(demo_ws: Path) -> None:
    # a memory file that is a FIFO with no writer: reading it blocks its worker thread for good,
    # as a long-running call would (a thread cannot be stopped; the process must not wait)
    os.mkfifo(demo_ws / "memory" / "stuck.md")
    with serving(demo_ws) as srv:
        srv.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "memory_get", "arguments": {"path": "memory/stuck.md"}}}))
        assert srv.proc.stdout is not None
        ready, _, _ = select.select([srv.proc.stdout], [], [], 1.0)
        assert not ready, "the call was expected to be still running"
        interrupt(srv, demo_ws)


def test_sigint_over_http_while_a_tool_call_is_stuck(demo_ws: Path) -> None:
    os.mkfifo(demo_ws / "memory" / "stuck.md")
    srv = HttpServer(demo_ws)
    called = threading.Event()

    async def stuck_call() -> None:
        async with Client(srv.url) as c:
            called.set()
            await c.call_tool("memory_get", {"path": "memory/stuck.md"})

    def client() -> None:
        with suppress(BaseException):  # the server going away mid-call is the point
            anyio.run(stuck_call)

    threading.Thread(target=client, daemon=True).start()
    try:
        assert called.wait(30)
        time.sleep(1.0)  # the call reaches its worker thread
        interrupt(srv, demo_ws)
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait()
