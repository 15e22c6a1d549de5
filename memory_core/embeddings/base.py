"""The embedding provider interface, shared by every provider.

A provider turns texts into L2-normalised float32 vectors. The index never talks to a model or an
HTTP endpoint directly: it asks a provider, through this narrow interface, so that the local model,
an OpenAI-compatible endpoint and the multilingual e5 model are interchangeable, and a fallback
chain can swap one for the next without the store noticing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
else:
    from ..base.lazy import numpy as np

#: Called with (done, total) while a batch of documents is embedded.
ProgressFn = Callable[[int, int], None]


class EmbeddingError(RuntimeError):
    """An embedding request failed for good (after retries). The message says why.

    ``received``: the vectors that did arrive before the failure (input position → vector),
    for a caller that keeps them (the index caches them), empty when none did.
    """

    received: dict[int, np.ndarray]

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self.received = {}


class VectorWidthChanged(EmbeddingError):
    """The provider answers vectors of another width than the index holds, under the same
    model name: an error to fix (``index --force``), never a reason to fall back."""


class ProviderUnavailable(EmbeddingError):
    """A provider cannot start at all (missing package, missing key, model not found)."""


@runtime_checkable
class EmbeddingProvider(Protocol):
    """What the index needs from an embedding backend.

    ``id`` names the adapter (``local``, ``openai``, ``e5``), ``model`` the model, ``dims`` the
    vector width (``0`` until known), ``max_input_tokens`` the model's input budget and
    ``provider_key`` a hash that changes whenever vectors would stop being comparable (§3.6 of the
    reference spec): it is part of the index identity and of the embedding cache key.
    """

    id: str
    model: str

    @property
    def dims(self) -> int: ...

    @property
    def max_input_tokens(self) -> int: ...

    @property
    def provider_key(self) -> str: ...

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressFn | None = None
    ) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class WrappedProvider:
    """A provider that adds a way of calling another (``inner``: serialised, batched) and is
    otherwise it: the same id, model, width, input budget and key."""

    def __init__(self, inner: EmbeddingProvider) -> None:
        self.inner = inner
        self.id = inner.id
        self.model = inner.model

    @property
    def dims(self) -> int:
        return self.inner.dims

    @property
    def max_input_tokens(self) -> int:
        return self.inner.max_input_tokens

    @property
    def provider_key(self) -> str:
        return self.inner.provider_key


def provider_key_for(data: dict[str, object]) -> str:
    """SHA-256 of the JSON of ``data``, as the reference computes ``providerKey``."""
    return hashlib.sha256(json.dumps(data, separators=(",", ":")).encode("utf-8")).hexdigest()


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Replace non-finite values with 0 and scale each row to unit length (§7.3).

    Rows whose norm is below 1e-10 are left as they are (all zeros), as the reference does.
    """
    v = np.asarray(vectors, dtype=np.float32)
    if v.ndim == 1:
        v = v[None, :]
    v = np.where(np.isfinite(v), v, 0.0).astype(np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    safe = np.where(norms < 1e-10, 1.0, norms)
    return (v / safe).astype(np.float32)


@dataclass
class ProviderStats:
    """Counters a provider keeps, shown in status and benchmarks."""

    requests: int = 0
    texts: int = 0
    retries: int = 0
    failures: int = 0
    last_error: str | None = None
    batch_sizes: list[int] = field(default_factory=list)
