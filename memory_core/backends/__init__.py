"""Memory backends behind one face (issue #11): the builtin engine and qmd (spec §9).

``open_backend(workspace, kind)`` gives a :class:`MemoryBackend` (search, get, sync, status,
probes): :class:`BuiltinBackend` over :class:`~memory_core.MemoryIndex`, or qmd wrapped in the
reference's fallback to builtin (:class:`FallbackBackend`, :class:`OpenedFallback`). Results
share one shape (``BackendSearch.hits`` → ``{path, startLine, endLine, score, snippet,
source}``). This package sits beside the feature packages, above ``MemoryIndex``.

The qmd side (and the fallback that wraps it: subprocess, the qmd collections) is imported on
first use, so a builtin command does not load it; the face's classes (:mod:`.protocol`) too,
so a no-op ``index`` does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base.lazy import lazy_exports
from ..index import MemoryIndex
from .builtin import BuiltinBackend

if TYPE_CHECKING:
    from .fallback import (
        OPEN_FAILURE_COOLDOWN_S,
        FallbackBackend,
        OpenedFallback,
        clear_open_failures,
    )
    from .protocol import BackendSearch, BackendStatus, FallbackNote, MemoryBackend
    from .qmd import QmdBackend, QmdCollection, resolve_collections
    from .qmd_process import QmdError, resolve_command
    from .sync_answer import BackendSync

BACKENDS: tuple[str, ...] = ("builtin", "qmd")

#: Public name → the module that defines it, imported the first time it is asked for.
_LAZY = {
    "BackendSearch": "protocol", "BackendStatus": "protocol", "BackendSync": "sync_answer",
    "FallbackNote": "protocol",
    "MemoryBackend": "protocol",
    "OPEN_FAILURE_COOLDOWN_S": "fallback", "FallbackBackend": "fallback",
    "OpenedFallback": "fallback", "clear_open_failures": "fallback",
    "QmdBackend": "qmd", "QmdCollection": "qmd", "resolve_collections": "qmd",
    "QmdError": "qmd_process", "resolve_command": "qmd_process",
}

__getattr__ = lazy_exports(__name__, _LAZY)


def open_backend(workspace: Any, kind: str | None = None, **options: Any) -> MemoryBackend:
    """The one door: the backend ``kind`` (default: the workspace's ``[backend] kind``) for
    ``workspace`` (a folder or an open :class:`MemoryIndex`); see
    :func:`.fallback.open_backend` for ``options``. The faces call this and never ask which
    backend answered. The builtin engine over an open index is built here, without importing
    qmd's side and the fallback (a no-op ``index`` process does not need them).
    """
    if (isinstance(workspace, MemoryIndex) and not options
            and (kind or workspace.config.backend.kind) == "builtin"):
        return BuiltinBackend(workspace)
    from .fallback import open_backend as open_any

    return open_any(workspace, kind, **options)


__all__ = [
    "BACKENDS", "OPEN_FAILURE_COOLDOWN_S", "BackendSearch", "BackendStatus", "BackendSync",
    "BuiltinBackend", "FallbackBackend", "FallbackNote", "MemoryBackend",
    "OpenedFallback", "QmdBackend", "QmdCollection", "QmdError", "clear_open_failures",
    "open_backend", "resolve_collections", "resolve_command",
]
