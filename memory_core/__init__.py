"""memory_core: an agent's Markdown memory → chunks → SQLite (FTS5 + sqlite-vec) → hybrid search.

The public API is :class:`MemoryIndex`; see the README for a tour.
"""

from typing import TYPE_CHECKING

from .base.lazy import lazy_exports
from .base.version import __version__

if TYPE_CHECKING:
    from .base.config import MemoryConfig, SearchSettings, load_config, profile_settings
    from .index import MemoryIndex, WorkspaceError
    from .read.candidates import Candidates, ChunkInfo, LegHit
    from .read.fusion import FusionResult, Hit, fuse
    from .read.reading import PathRefused
    from .storage.store import IndexPathRefused, IndexUnavailable
    from .write.chunking import Chunk, chunk_markdown, remap_chunk_lines

#: Public name → the module that defines it, imported on first use: ``memory-core --version``
#: (and anything that needs one submodule) no longer pays for numpy, pydantic and the whole
#: engine at ``import memory_core`` (290 ms here).
_LAZY = {
    "Candidates": "read.candidates",
    "ChunkInfo": "read.candidates",
    "LegHit": "read.candidates",
    "Chunk": "write.chunking",
    "chunk_markdown": "write.chunking",
    "remap_chunk_lines": "write.chunking",
    "MemoryConfig": "base.config",
    "SearchSettings": "base.config",
    "load_config": "base.config",
    "profile_settings": "base.config",
    "FusionResult": "read.fusion",
    "Hit": "read.fusion",
    "fuse": "read.fusion",
    "MemoryIndex": "index",
    "WorkspaceError": "index",
    "PathRefused": "read.reading",
    "IndexPathRefused": "storage.store",
    "IndexUnavailable": "storage.store",
}

__getattr__ = lazy_exports(__name__, _LAZY)


__all__ = [
    "Candidates", "Chunk", "ChunkInfo", "FusionResult", "Hit", "IndexPathRefused",
    "IndexUnavailable", "LegHit", "MemoryConfig",
    "MemoryIndex", "PathRefused", "SearchSettings", "WorkspaceError", "__version__",
    "chunk_markdown", "fuse", "load_config", "profile_settings", "remap_chunk_lines",
]
