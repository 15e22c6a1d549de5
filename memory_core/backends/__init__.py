"""Memory backends behind one face (issue #11): the builtin engine and qmd (spec §9).

``open_backend(workspace, kind)`` gives a :class:`MemoryBackend` (search, get, sync, status,
probes): :class:`BuiltinBackend` over :class:`~memory_core.MemoryIndex`, or qmd wrapped in the
reference's fallback to builtin (:class:`FallbackBackend`, :class:`OpenedFallback`). Results
share one shape (``BackendSearch.hits`` → ``{path, startLine, endLine, score, snippet,
source}``). This package sits beside the feature packages, above ``MemoryIndex``.
"""

from .builtin import BuiltinBackend
from .fallback import (
    OPEN_FAILURE_COOLDOWN_S,
    FallbackBackend,
    OpenedFallback,
    clear_open_failures,
    open_backend,
)
from .protocol import ENGINE, OWN_INDEX, BackendSearch, BackendStatus, FallbackNote, MemoryBackend
from .qmd import QmdBackend, QmdCollection, resolve_collections
from .qmd_process import QmdError, resolve_command

BACKENDS: tuple[str, ...] = ("builtin", "qmd")

__all__ = [
    "BACKENDS", "ENGINE", "OPEN_FAILURE_COOLDOWN_S", "OWN_INDEX", "BackendSearch",
    "BackendStatus", "BuiltinBackend", "FallbackBackend", "FallbackNote", "MemoryBackend",
    "OpenedFallback", "QmdBackend", "QmdCollection", "QmdError", "clear_open_failures",
    "open_backend", "resolve_collections", "resolve_command",
]
