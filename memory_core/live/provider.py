"""One loaded model shared by the background sync and the searches, used by one thread at a time.

The live layer syncs on one thread while searches embed queries on others. Loading the model
twice would double memory and start-up time; sharing it unguarded is unsafe (Hugging Face fast
tokenizers raise "Already borrowed" when two threads use one at once). This wrapper serialises
calls, and cuts a sync's document batches into small slices so that a query waits for at most
one slice (tens of milliseconds), never for a whole sync.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..embeddings import EmbeddingProvider, ProgressFn
from ..embeddings.base import WrappedProvider

#: Documents embedded per hold of the model; a query waits for at most this many.
SLICE = 16


class SerializedProvider(WrappedProvider):
    """Delegates to ``inner``; every model call holds one lock."""

    def __init__(self, inner: EmbeddingProvider):
        super().__init__(inner)
        self._model_lock = threading.Lock()

    def embed_documents(self, texts: Sequence[str], progress: ProgressFn | None = None
                        ) -> np.ndarray:
        if getattr(self.inner, "whole_calls", False):
            # a provider batch API: one job for the whole call, not one per slice; it holds no
            # model, so queries need not wait for it
            return self.inner.embed_documents(texts, progress)
        parts: list[np.ndarray] = []
        total = len(texts)
        for start in range(0, total, SLICE):
            piece = list(texts[start:start + SLICE])
            with self._model_lock:
                parts.append(self.inner.embed_documents(piece))
            if progress is not None:
                progress(min(start + SLICE, total), total)
        if not parts:
            return self.inner.embed_documents([])
        return np.vstack(parts)

    def embed_query(self, text: str) -> np.ndarray:
        with self._model_lock:
            return self.inner.embed_query(text)

    def __getattr__(self, name: str) -> Any:
        # optional capabilities (token_counts, max_seq_length, ...) of the wrapped provider
        return getattr(self.inner, name)
