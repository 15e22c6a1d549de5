"""The MCP server (official ``mcp`` SDK, low-level ``Server``): stdio or streamable HTTP at /mcp.

The low-level server is used rather than the decorator API so that each result is exactly the
reference's shape: the JSON as text (what most clients show the model) *and* as structured
content, with ``isError`` set by our own argument checks, not by a schema library's wording.

HTTP binds to 127.0.0.1 by default with the SDK's Host/Origin checks (DNS-rebinding
protection) on. Binding anywhere else requires a bearer token, read from an environment variable
(``MEMORY_CORE_MCP_TOKEN`` unless told otherwise), never from the command line where ``ps``
would show it. When the variable is set, the token is required on localhost too.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings

from ..backends import MemoryBackend
from ..base.version import __version__
from ..live import LiveIndex
from ..tools import memory_instructions
from .handlers import (
    GET_DESCRIPTION,
    GET_SCHEMA,
    SEARCH_DESCRIPTION,
    SEARCH_SCHEMA,
    STATUS_DESCRIPTION,
    STATUS_SCHEMA,
    MemoryTools,
)
from .schemas import GET_OUTPUT_SCHEMA, SEARCH_OUTPUT_SCHEMA, STATUS_OUTPUT_SCHEMA
from .stdio import (
    claimed_stdin,
    in_daemon_thread,
    serve_answering_malformed,
    unreadable_id_body,
)

DEFAULT_TOKEN_ENV = "MEMORY_CORE_MCP_TOKEN"
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
#: Tool calls run in worker threads, at most this many at once, so that a burst of calls cannot
#: pile threads up; the others wait their turn, and one whose client cancels or goes away while
#: it waits is dropped without running. A call already running is bounded by the library's query
#: cap (:func:`memory_core.read.query.cap_query`) and finishes, holding its place; its answer is
#: discarded. The threads are daemons: Ctrl-C does not wait for them.
TOOL_WORKERS = 4
#: A call that could not start within this many seconds is answered "busy" instead.
TOOL_QUEUE_TIMEOUT_S = 60.0
#: An HTTP request whose declared body is larger is answered 413 before it is read: a tool call
#: is far smaller (a query is searched up to 4,096 characters), and reading it would cost that
#: much memory.
MAX_BODY_BYTES = 1024 * 1024
#: On Ctrl-C, HTTP requests still running after this many seconds are cut, not waited for.
HTTP_SHUTDOWN_S = 1
log = logging.getLogger("memory_core.mcp")

Scope = MutableMapping[str, Any]  # ASGI's own types, as Starlette declares them
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Scope]], Callable[[Scope], Awaitable[None]]],
                   Awaitable[None]]


class ServerConfigError(ValueError):
    """The server cannot start as asked (e.g. a public bind without a token)."""


def tool_list() -> list[types.Tool]:
    ro = types.ToolAnnotations(read_only_hint=True, destructive_hint=False,
                               idempotent_hint=True, open_world_hint=False)
    return [
        types.Tool(name="memory_search", title="Search memory", description=SEARCH_DESCRIPTION,
                   input_schema=SEARCH_SCHEMA, output_schema=SEARCH_OUTPUT_SCHEMA, annotations=ro),
        types.Tool(name="memory_get", title="Read memory lines", description=GET_DESCRIPTION,
                   input_schema=GET_SCHEMA, output_schema=GET_OUTPUT_SCHEMA, annotations=ro),
        types.Tool(name="memory_status", title="Memory index status",
                   description=STATUS_DESCRIPTION, input_schema=STATUS_SCHEMA,
                   output_schema=STATUS_OUTPUT_SCHEMA, annotations=ro),
    ]


def build_server(live: LiveIndex, *, backend: MemoryBackend,
                 record_recalls: bool = True) -> Server[Any]:
    """The MCP server object for ``live`` (not running; see :func:`run_stdio`/:func:`run_http`).

    ``backend``: the ``memory_core.backends`` backend that answers the tools (builtin over the
    live index, or qmd)."""
    memory = MemoryTools(live, record_recalls=record_recalls, backend=backend)
    workers = anyio.CapacityLimiter(TOOL_WORKERS)

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # The engine is synchronous (SQLite, the model): run it off the event loop, in the
        # bounded pool; waiting for a worker is where a cancelled call is dropped.
        place = object()  # the call's place in the pool, freed when its thread ends
        try:
            with anyio.fail_after(TOOL_QUEUE_TIMEOUT_S):
                await workers.acquire_on_behalf_of(place)
        except TimeoutError:
            payload, is_error = {"error": f"the server is busy ({TOOL_WORKERS} calls running "
                                 f"for over {TOOL_QUEUE_TIMEOUT_S:.0f} s); try again"}, True
        else:
            payload, is_error = await in_daemon_thread(
                memory.call, params.name, params.arguments,
                then=lambda: workers.release_on_behalf_of(place))
        if is_error:
            log.info("tool %s: error result: %.200s", params.name, payload.get("error"))
        text = json.dumps(payload, ensure_ascii=False, indent=2, default=str)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=json.loads(text), is_error=is_error)

    return Server("memory-core", version=__version__, title="Memory Workbench",
                  instructions=memory_instructions(live.config.settings().citations),
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def _serve_stdio(server: Server[Any]) -> None:
    # stdin read in daemon threads, not the SDK's uncancellable one: see .stdio (Ctrl-C)
    with claimed_stdin() as lines:
        async with stdio_server(stdin=cast(Any, lines)) as (read, write):
            await serve_answering_malformed(server, read, write)


def run_stdio(live: LiveIndex, *, backend: MemoryBackend, record_recalls: bool = True) -> None:
    """Serve over stdin/stdout until the client closes them (stdout carries only protocol)."""
    server = build_server(live, record_recalls=record_recalls, backend=backend)
    anyio.run(_serve_stdio, server)


@dataclass(frozen=True)
class HttpOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    token_env: str = DEFAULT_TOKEN_ENV
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()


async def _refuse(send: Any, status: int, error: str,
                  headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """Answer an HTTP request with ``status`` and ``{"error": …}`` (one JSON line)."""
    await _answer(send, status, json.dumps({"error": error}).encode(), headers)


async def _answer(send: Any, status: int, body: bytes,
                  headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """Answer an HTTP request with ``status`` and the JSON ``body``, whole."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), *headers,
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def bearer_guard(app: ASGIApp, token: str) -> ASGIApp:
    """Refuse HTTP requests that lack ``Authorization: Bearer <token>`` (401, one JSON line)."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Scope, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await _refuse(send, 401, "missing or wrong bearer token",
                              ((b"www-authenticate", b"Bearer"),))
                return
        await app(scope, receive, send)

    return guarded


def body_limit(app: ASGIApp) -> ASGIApp:
    """Refuse HTTP requests whose body is over :data:`MAX_BODY_BYTES` (413, one JSON line): one that
    declares it is refused before it is read; one that does not (``Transfer-Encoding:
    chunked``) is read up to the cap, then refused. A body within the cap is read whole, a
    request with an unreadable ``id`` answered -32600 (:func:`.stdio.unreadable_id_body`), any
    other handed on."""
    too_big = (f"request body over {MAX_BODY_BYTES} bytes (a tool call is far smaller; a query is "
               "capped at 8 KB)")

    async def limited(scope: Scope, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
            await _refuse(send, 413, too_big)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message.get("type") != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:
                await _refuse(send, 413, too_big)
                return
            if not message.get("more_body", False):
                break
        unanswered = unreadable_id_body(bytes(body))
        if unanswered is not None:  # the SDK would answer 202 and never the request itself
            await _answer(send, 400, unanswered.model_dump_json(
                by_alias=True, exclude_unset=True).encode())
            return
        given = False

        async def replay() -> Scope:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return limited


def http_app(live: LiveIndex, opts: HttpOptions, *, backend: MemoryBackend,
             record_recalls: bool = True) -> Any:
    """The ASGI app: streamable HTTP at /mcp, Host/Origin checks, bearer token when required."""
    token = os.environ.get(opts.token_env, "")
    local = opts.host in LOCAL_HOSTS
    if not local and not token:
        raise ServerConfigError(
            f"binding to {opts.host} exposes the memory beyond this machine: set a bearer token "
            f"in the environment variable {opts.token_env} (clients send 'Authorization: Bearer "
            f"<token>')")
    if local:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", *opts.allowed_hosts],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*",
                             *opts.allowed_origins])
    elif opts.allowed_hosts:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                             allowed_hosts=list(opts.allowed_hosts),
                                             allowed_origins=list(opts.allowed_origins))
    else:  # a public bind is protected by the token; the Host header is whatever clients use
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    server = build_server(live, record_recalls=record_recalls, backend=backend)
    app = server.streamable_http_app(streamable_http_path="/mcp", transport_security=security,
                                     host=opts.host)
    limited = body_limit(app)
    return bearer_guard(limited, token) if token else limited


def _not_the_shutdown_cut(record: logging.LogRecord) -> bool:
    """False for uvicorn's traceback of a request cut at shutdown (not an error of ours)."""
    return not (record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))


def run_http(live: LiveIndex, opts: HttpOptions, *, backend: MemoryBackend,
             record_recalls: bool = True,
             on_ready: Callable[[str], None] | None = None) -> None:
    """Serve streamable HTTP until interrupted."""
    import uvicorn

    app = http_app(live, opts, record_recalls=record_recalls, backend=backend)
    # Ctrl-C: a request still running after HTTP_SHUTDOWN_S is cut, not waited for (its
    # daemon thread is abandoned, see .stdio); the cut is not logged as an application error
    config = uvicorn.Config(app, host=opts.host, port=opts.port, log_level="warning",
                            lifespan="on", timeout_graceful_shutdown=HTTP_SHUTDOWN_S)
    logging.getLogger("uvicorn.error").addFilter(_not_the_shutdown_cut)
    server = uvicorn.Server(config)
    if on_ready is not None:
        host = f"[{opts.host}]" if ":" in opts.host else opts.host
        on_ready(f"http://{host}:{opts.port}/mcp")
    server.run()


def log_to_stderr(level: int = logging.WARNING) -> None:
    """Logs go to stderr: on stdio, stdout belongs to the protocol."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("memory-core mcp: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
