"""What a backend can do beyond the one face (:attr:`MemoryBackend.capabilities`).

Constants only, in a module of their own: the builtin backend declares :data:`ENGINE` at class
creation, and a no-op ``memory-core index`` then opens it without loading the face's protocol
and result classes (:mod:`.protocol`, with :class:`~memory_core.status.Status`).
"""

from __future__ import annotations

#: The builtin engine answers, with every :class:`~memory_core.MemoryIndex` feature (fusion
#: settings, candidates, sync reports, ``verify``): ``backend.index`` is that index.
ENGINE = "engine"
#: The backend keeps an index of its own, which :meth:`MemoryBackend.sync` must update when the
#: files change (qmd); the builtin engine's index is kept current by the live index itself.
OWN_INDEX = "own-index"

__all__ = ["ENGINE", "OWN_INDEX"]
