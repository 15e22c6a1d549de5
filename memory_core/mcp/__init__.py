"""The MCP server: the agent tools ``memory_search``, ``memory_get`` and ``memory_status`` over
stdio or streamable HTTP, on a :class:`memory_core.live.LiveIndex` that follows the files.

It sits above the engine and uses only public faces (``MemoryIndex``, ``tools``, ``live``).
"""

from .handlers import BadArgument, MemoryTools
from .server import (
    DEFAULT_TOKEN_ENV,
    HttpOptions,
    ServerConfigError,
    build_server,
    http_app,
    run_http,
    run_stdio,
    tool_list,
)

__all__ = ["DEFAULT_TOKEN_ENV", "BadArgument", "HttpOptions", "MemoryTools", "ServerConfigError",
           "build_server", "http_app", "run_http", "run_stdio", "tool_list"]
