"""memory_core: an agent's Markdown memory → chunks → SQLite (FTS5 + sqlite-vec) → hybrid search.

The public API is :class:`MemoryIndex`; see the README for a tour.
"""

from typing import TYPE_CHECKING

from .common.lazy import lazy_exports
from .version import __version__

if TYPE_CHECKING:
    from .candidates import Candidates, ChunkInfo, LegHit
    from .chunking import Chunk, chunk_markdown, remap_chunk_lines
    from .config import MemoryConfig, SearchSettings, load_config, profile_settings
    from .fusion import FusionResult, Hit, fuse
    from .index import MemoryIndex, WorkspaceError
    from .reading import PathRefused
    from .store import IndexPathRefused, IndexUnavailable

#: Public name → the module that defines it, imported on first use: ``memory-core --version``
#: (and anything that needs one submodule) no longer pays for numpy, pydantic and the whole
#: engine at ``import memory_core`` (290 ms here).
_LAZY = {
    "Candidates": "candidates",
    "ChunkInfo": "candidates",
    "LegHit": "candidates",
    "Chunk": "chunking",
    "chunk_markdown": "chunking",
    "remap_chunk_lines": "chunking",
    "MemoryConfig": "config",
    "SearchSettings": "config",
    "load_config": "config",
    "profile_settings": "config",
    "FusionResult": "fusion",
    "Hit": "fusion",
    "fuse": "fusion",
    "MemoryIndex": "index",
    "WorkspaceError": "index",
    "PathRefused": "reading",
    "IndexPathRefused": "store",
    "IndexUnavailable": "store",
}

__getattr__ = lazy_exports(__name__, _LAZY)


__all__ = [
    "Candidates", "Chunk", "ChunkInfo", "FusionResult", "Hit", "IndexPathRefused",
    "IndexUnavailable", "LegHit", "MemoryConfig",
    "MemoryIndex", "PathRefused", "SearchSettings", "WorkspaceError", "__version__",
    "chunk_markdown", "fuse", "load_config", "profile_settings", "remap_chunk_lines",
]
