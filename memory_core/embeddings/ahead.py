"""Embedding one group ahead of the writer: a sync's default executor.

A sync embeds a group of chunks, then writes it. Serially, the writer waits for every
embedding call and the provider (a server, or the local model's threads) waits for every write:
at 133k chunks from an OpenAI-compatible server on this machine, the embedding waits were 60%
of a first build. :class:`AheadExecutor` runs the same calls, in the same order, on one thread
while this process writes the previous group (the store stays single-writer: the thread never
touches it), at most :data:`DEPTH` groups ahead. Each group is exactly what the serial path
embeds in one call (the plan of :class:`~memory_core.write.sync.EmbedExecutor`), so the vectors are
the same.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from . import EmbeddingError, EmbeddingProvider, ProviderChoice
from .windows import embed_whole

if TYPE_CHECKING:
    import numpy as np

#: Groups embedded but not yet written, at most (each: 256 chunks' vectors, ~0.4 MB).
DEPTH = 2
_Item = tuple["np.ndarray | None", "BaseException | None"]


class AheadStream:
    """The planned groups' vectors, embedded on a thread and handed out in plan order."""

    def __init__(self, provider: EmbeddingProvider, groups: list[list[str]], whole: bool,
                 progress: Callable[[int, int], None]) -> None:
        self._provider = provider
        self._groups = groups
        self._whole = whole
        self._progress = progress
        self._queue: queue.Queue[_Item] = queue.Queue(maxsize=DEPTH)
        self._stop = threading.Event()
        self._next = 0
        self._done = 0
        self._total = sum(len(g) for g in groups)
        self._thread = threading.Thread(target=self._run, name="memory-core-embed-ahead",
                                        daemon=True)
        progress(0, self._total)
        self._thread.start()

    def _run(self) -> None:
        for texts in self._groups:
            if self._stop.is_set():
                return
            item: _Item
            try:
                p = self._provider
                item = (embed_whole(p, texts) if self._whole else p.embed_documents(texts), None)
            except BaseException as e:  # handed to the writer, raised where serial would
                item = (None, e)
            while not self._stop.is_set():
                try:
                    self._queue.put(item, timeout=0.1)
                    break
                except queue.Full:
                    continue
            if item[1] is not None:
                return

    def take(self, texts: Sequence[str]) -> np.ndarray:
        """The next group's vectors; ``texts`` must be the group planned next."""
        i = self._next
        if i >= len(self._groups) or list(texts) != self._groups[i]:
            raise EmbeddingError(f"embedding ahead: the sync asked for group {i} out of plan")
        mat, err = self._queue.get()
        if err is not None:
            raise err
        assert mat is not None
        self._next += 1
        self._done += len(texts)
        self._progress(self._done, self._total)
        return mat

    def close(self) -> None:
        """Stop after the group being embedded (never two users of the provider at once)."""
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.1)
            except queue.Empty:
                continue
        self._thread.join()


class AheadExecutor:
    """A sync's :class:`~memory_core.write.sync.EmbedExecutor` in this process, one thread."""

    def start(self, choice: ProviderChoice, groups: list[list[str]], whole: bool,
              progress: Callable[[int, int], None]) -> AheadStream:
        if choice.provider is None:
            raise EmbeddingError("embedding ahead: no embedding provider (keyword-only)")
        return AheadStream(choice.provider, groups, whole, progress)
