"""``memory-core mcp``: serve the agent tools over MCP (stdio or streamable HTTP), live.

The server keeps the model loaded and follows the files (see :mod:`memory_core.live`), so a
query embeds in milliseconds and a diary written a second ago is found.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import (
    CliError,
    add_backend_arg,
    add_workspace_args,
    open_backend_for,
    open_index,
)


def register(sub: Any) -> None:
    p = sub.add_parser("mcp", help="serve memory_search / memory_get / memory_status over MCP",
                       description="Run an MCP server on the workspace: stdio for a client that "
                       "starts it, or streamable HTTP at /mcp. See docs/mcp.md.")
    add_workspace_args(p)
    add_backend_arg(p)
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                   help="stdio (default) or streamable HTTP")
    p.add_argument("--host", default="127.0.0.1",
                   help="HTTP bind address (default 127.0.0.1; anything else needs a token)")
    p.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    p.add_argument("--token-env", default=None, metavar="VAR",
                   help="environment variable holding the bearer token "
                   "(default MEMORY_CORE_MCP_TOKEN)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="HOST[:PORT]",
                   help="extra Host header value to accept (repeatable)")
    p.add_argument("--allowed-origin", action="append", default=[], metavar="ORIGIN",
                   help="extra Origin header value to accept (repeatable)")
    p.add_argument("--no-watch", action="store_true",
                   help="do not follow the files (each search checks for changes instead)")
    p.add_argument("--no-record", action="store_true",
                   help="do not record searches as recalls for promotion")
    p.set_defaults(func=cmd_mcp)


def _check_port(host: str, port: int) -> None:
    if not 0 < port < 65536:
        raise CliError(f"--port must be between 1 and 65535, got {port}")
    import socket  # here: every command registers this module's flags, few serve MCP

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            raise CliError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None


def cmd_mcp(args: argparse.Namespace) -> int:
    from ..live import LiveIndex
    from ..mcp import DEFAULT_TOKEN_ENV, HttpOptions, http_app, run_http, run_stdio
    from ..mcp.server import log_to_stderr

    log_to_stderr()
    opts: HttpOptions | None = None
    if args.transport == "http":
        opts = HttpOptions(args.host, args.port, args.token_env or DEFAULT_TOKEN_ENV,
                           tuple(args.allowed_host), tuple(args.allowed_origin))
    idx = open_index(args)
    backend = open_backend_for(idx, args)  # --backend qmd: qmd answers, builtin as fallback
    timers = backend.follow()  # qmd's boot, interval and debounced updates (builtin: none)
    live = LiveIndex(idx, watch=False if args.no_watch else None, owner="memory-core mcp",
                     on_sync=None if timers is None else (
                         lambda ev: timers.poke() if ev.report and ev.report.wrote_anything
                         else None))
    try:
        if opts is None:
            live.start()
            run_stdio(live, record_recalls=not args.no_record, backend=backend)
            return 0
        # refuses a public bind without a token before anything starts
        http_app(live, opts, backend=backend)
        _check_port(opts.host, opts.port)
        live.start()
        run_http(live, opts, record_recalls=not args.no_record, backend=backend,
                 on_ready=lambda url: print(f"memory-core mcp: serving {url} for "
                                            f"{live.workspace}", file=sys.stderr, flush=True))
        return 0
    finally:
        live.close()
        if timers is not None:
            timers.stop()
        backend.release()  # qmd's own processes; the index closes with ``live``
