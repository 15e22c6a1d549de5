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

import hmac
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings

from .. import __version__
from ..live import LiveIndex
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

DEFAULT_TOKEN_ENV = "MEMORY_CORE_MCP_TOKEN"
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
INSTRUCTIONS = (
    "This server is the agent's long-term memory. Before answering questions about prior work, "
    "decisions, dates, people, preferences or todos, run memory_search; then use memory_get to "
    "read only the lines you need. Cite the 'Source: path#line' of what you used.")
log = logging.getLogger("memory_core.mcp")

ASGIApp = Callable[[dict[str, Any], Callable[[], Awaitable[dict[str, Any]]],
                    Callable[[dict[str, Any]], Awaitable[None]]], Awaitable[None]]


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


def build_server(live: LiveIndex, *, record_recalls: bool = True,
                 backend: Any = None) -> Server[Any]:
    """The MCP server object for ``live`` (not running; see :func:`run_stdio`/:func:`run_http`).

    ``backend``: a ``memory_core.backends`` backend (qmd) that answers the tools instead."""
    memory = MemoryTools(live, record_recalls=record_recalls, backend=backend)

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # The engine is synchronous (SQLite, the model): run it off the event loop.
        payload, is_error = await anyio.to_thread.run_sync(
            memory.call, params.name, params.arguments)
        if is_error:
            log.info("tool %s: error result: %.200s", params.name, payload.get("error"))
        text = json.dumps(payload, ensure_ascii=False, indent=2, default=str)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=json.loads(text), is_error=is_error)

    return Server("memory-core", version=__version__, title="Memory Workbench",
                  instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)


async def _serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def run_stdio(live: LiveIndex, *, record_recalls: bool = True, backend: Any = None) -> None:
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


def bearer_guard(app: ASGIApp, token: str) -> ASGIApp:
    """Refuse HTTP requests that lack ``Authorization: Bearer <token>`` (401, one JSON line)."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                body = b'{"error": "missing or wrong bearer token"}'
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b"Bearer"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


def http_app(live: LiveIndex, opts: HttpOptions, *, record_recalls: bool = True,
             backend: Any = None) -> Any:
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
    return bearer_guard(app, token) if token else app


def run_http(live: LiveIndex, opts: HttpOptions, *, record_recalls: bool = True,
             on_ready: Callable[[str], None] | None = None, backend: Any = None) -> None:
    """Serve streamable HTTP until interrupted."""
    import uvicorn

    app = http_app(live, opts, record_recalls=record_recalls, backend=backend)
    config = uvicorn.Config(app, host=opts.host, port=opts.port, log_level="warning",
                            lifespan="on")
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
