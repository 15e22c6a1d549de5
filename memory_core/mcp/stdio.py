"""Answering the stdio lines the MCP SDK cannot read, instead of dropping them.

The SDK's stdio transport hands a line it cannot validate to the server as an exception, and
the server drops it: a client that sent ``{"id": 3, …, "query": "abc\\udcff"}`` (valid JSON;
what ``JSON.stringify`` makes of a cut emoji, but not valid Unicode) waits for request 3
forever. :func:`serve_answering_malformed` sits between the transport and the server and
answers every such line with a JSON-RPC error: ``-32700`` (parse error) for a line that is not
JSON the SDK can read, ``-32600`` (invalid request) for JSON that is not a JSON-RPC message;
with the request's ``id`` whenever it can be read from the line, so the caller is answered.

A request whose ``id`` is neither a string nor an integer (``{"id": 1e400, "method":
"tools/call"}``) is read by the SDK as a notification (the id dropped) and never answered: a
"notification" of a request's method (anything but ``notifications/…``) is answered ``-32600``
with a ``null`` id instead.

Ctrl-C must end the server at once, idle or busy. The SDK reads stdin with ``readline`` in an
AnyIO worker thread that cannot be cancelled: on SIGINT the event loop waited for the client's
next line, and the interpreter's exit then joined that (non-daemon) thread, so the process
lived on until stdin closed. :func:`claimed_stdin` hands the transport lines read in daemon
threads (:func:`in_daemon_thread`), which a cancelled caller abandons and the exit does not
join; tool calls run the same way.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from mcp.server import Server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

T = TypeVar("T")


async def in_daemon_thread(fn: Callable[..., T], *args: Any,
                           then: Callable[[], None] | None = None) -> T:
    """``fn(*args)`` in a daemon thread of its own; ``then()`` runs on the event loop when it
    returns, even after the caller stopped waiting. A cancelled caller (Ctrl-C) stops waiting
    at once: a thread cannot be stopped, and a daemon one does not hold the process's exit."""
    token = anyio.lowlevel.current_token()
    done = anyio.Event()
    outcome: list[tuple[bool, Any]] = []

    def finish() -> None:
        if then is not None:
            then()
        done.set()

    def work() -> None:
        try:
            outcome.append((True, fn(*args)))
        except Exception as e:  # handed to the caller, raised there
            outcome.append((False, e))
        try:
            anyio.from_thread.run_sync(finish, token=token)
        except Exception:  # the event loop has ended: nobody waits for this answer
            pass

    threading.Thread(target=work, name="memory-core mcp worker", daemon=True).start()
    await done.wait()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


class DaemonLines:
    """The lines of ``fp`` for the SDK's stdio transport (which only iterates them), each read
    by :func:`in_daemon_thread`, so that cancelling the transport does not wait for a line."""

    def __init__(self, fp: TextIO) -> None:
        self._fp = fp

    def __aiter__(self) -> DaemonLines:
        return self

    async def __anext__(self) -> str:
        line = await in_daemon_thread(self._fp.readline)
        if not line:
            raise StopAsyncIteration
        return line


@contextmanager
def claimed_stdin() -> Iterator[DaemonLines]:
    """The client's lines, read from a private duplicate of fd 0 while fd 0 reads the null
    device (as the SDK does with the stdin it opens itself: a child process or stray read
    cannot take the client's bytes); fd 0 is restored on exit."""
    try:
        import fcntl  # POSIX

        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except (ImportError, OSError):
        yield DaemonLines(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
        return
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:  # never closed: an abandoned reader thread may still be blocked on it
        yield DaemonLines(io.TextIOWrapper(os.fdopen(private, "rb", closefd=False),
                                           encoding="utf-8", errors="replace"))
    finally:
        os.dup2(private, 0)


def _request_id(value: Any) -> str | int | None:
    rid = value.get("id") if isinstance(value, dict) else None
    return rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None


def malformed_reply(exc: Exception) -> types.JSONRPCError:
    """The JSON-RPC error answering the line the transport could not read (``exc``)."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    first: dict[str, Any] = dict(errors[0]) if errors else {}
    raw = first.get("input")
    if first.get("type") == "json_invalid" or not errors:
        code, message = types.PARSE_ERROR, f"Parse error: {first.get('msg') or exc}"
        try:  # the stdlib reads what pydantic refuses (a lone surrogate): the id is wanted
            raw = json.loads(raw) if isinstance(raw, str) else None
        except (ValueError, RecursionError):
            raw = None
    else:  # the whole message is the input of a "missing field" error at its top level
        raw = next((e["input"] for e in errors if len(e["loc"]) == 1 or (
            len(e["loc"]) == 2 and e["type"] == "missing")), None)
        code, message = types.INVALID_REQUEST, (
            "Invalid request: not a JSON-RPC 2.0 request, notification or response")
    return types.JSONRPCError(jsonrpc="2.0", id=_request_id(raw),
                              error=types.ErrorData(code=code, message=message[:300]))


def unreadable_id(message: Any) -> types.JSONRPCError | None:
    """The error answering a request the SDK took for a notification because its ``id`` is
    not a string or an integer (see the module's doc), or ``None`` for any other message."""
    if not isinstance(message, types.JSONRPCNotification):
        return None
    if message.method.startswith("notifications/"):
        return None
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(
        code=types.INVALID_REQUEST, message=f"Invalid request: {message.method[:80]!r} needs an "
        "'id' that is a string or an integer"))


def unreadable_id_body(body: bytes) -> types.JSONRPCError | None:
    """:func:`unreadable_id` for an HTTP request's body: the streamable HTTP transport also
    takes ``{"id": 1e400, "method": "tools/list"}`` for a notification (202, no answer)."""
    try:
        msg = json.loads(body)
    except (ValueError, RecursionError):
        return None  # the transport answers it
    if not isinstance(msg, dict) or "id" not in msg or _request_id(msg) is not None:
        return None
    method = msg.get("method")
    return unreadable_id(types.JSONRPCNotification(jsonrpc="2.0", method=method)
                         ) if isinstance(method, str) else None


async def serve_answering_malformed(server: Server[Any], read: Any, write: Any) -> None:
    """``server.run`` on the transport's streams, answering unreadable lines on ``write``."""
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

    async def forward() -> None:
        async with send:
            async for item in read:
                reply = (malformed_reply(item) if isinstance(item, Exception)
                         else unreadable_id(item.message))
                if reply is None:
                    await send.send(item)
                    continue
                try:
                    await write.send(SessionMessage(reply))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    async with anyio.create_task_group() as tg:
        tg.start_soon(forward)
        await server.run(receive, write, server.create_initialization_options())
        tg.cancel_scope.cancel()
