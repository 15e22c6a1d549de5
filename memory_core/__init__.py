"""memory_core: an agent's Markdown memory → chunks → SQLite (FTS5 + sqlite-vec) → hybrid search.

The public API is :class:`MemoryIndex`; see the README for a tour.
"""

from .candidates import Candidates, ChunkInfo, LegHit
from .chunking import Chunk, chunk_markdown, remap_chunk_lines
from .config import MemoryConfig, SearchSettings, load_config, profile_settings
from .fusion import FusionResult, Hit, fuse
from .index import MemoryIndex, WorkspaceError
from .reading import PathRefused
from .store import IndexPathRefused, IndexUnavailable
from .version import __version__

__all__ = [
    "Candidates", "Chunk", "ChunkInfo", "FusionResult", "Hit", "IndexPathRefused",
    "IndexUnavailable", "LegHit", "MemoryConfig",
    "MemoryIndex", "PathRefused", "SearchSettings", "WorkspaceError", "__version__",
    "chunk_markdown", "fuse", "load_config", "profile_settings", "remap_chunk_lines",
]
