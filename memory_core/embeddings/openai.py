"""An embedding provider for any OpenAI-compatible ``/embeddings`` endpoint.

It talks to OpenAI itself, Ollama, LM Studio or any server that speaks the same JSON, with the
shared HTTP machinery of :mod:`memory_core.embeddings.remote` (batching, retries, ``Retry-After``).

Every vector is L2-normalised (``normalize_rows``) even though OpenAI's already are, because local
servers do not always normalise and the index compares vectors by dot product.
"""

from __future__ import annotations

from typing import Any

from memory_core.embeddings.remote import InputKind, RemoteEmbeddingProvider

__all__ = ["DEFAULT_MODEL", "PRESETS", "PRESET_MODELS", "OpenAIEmbeddingProvider"]

#: Base URLs of the OpenAI-compatible services we know by name.
PRESETS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "ollama": "http://127.0.0.1:11434/v1",
    "lmstudio": "http://127.0.0.1:1234/v1",
}

#: The default embedding model of each preset (the reference's defaults, §7.1).
PRESET_MODELS: dict[str, str] = {
    "openai": "text-embedding-3-small",
    "ollama": "nomic-embed-text",
    "lmstudio": "text-embedding-nomic-embed-text-v1.5",
}

DEFAULT_MODEL = PRESET_MODELS["openai"]


class OpenAIEmbeddingProvider(RemoteEmbeddingProvider):
    """Embeddings from an OpenAI-compatible HTTP endpoint (``POST {base_url}/embeddings``).

    A base URL on this machine (127.0.0.1, localhost) may be used without a key; any other
    raises :class:`ProviderUnavailable` when the key's variable is unset or empty. See
    :class:`RemoteEmbeddingProvider` for batching and retries.
    """

    id = "openai"
    default_key_env = "OPENAI_API_KEY"
    key_required = "remote"
    normalize = True

    def __init__(self, base_url: str = PRESETS["openai"], model: str = DEFAULT_MODEL,
                 api_key_env: str | None = "OPENAI_API_KEY", dimensions: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(base_url, model, api_key_env, dimensions, **kwargs)

    def cache_key_data(self) -> dict[str, Any]:
        """Provider, base URL, model, dimensions (§3.6), and the extra headers if any were
        given (without secrets). The key never enters it."""
        data: dict[str, Any] = {"provider": "openai", "baseUrl": self.base_url,
                                "model": self.model, "dimensions": self.dimensions}
        if self._extra_headers:
            data["headers"] = dict(sorted(self._extra_headers.items()))
        return data

    def _payload(self, texts: list[str], kind: InputKind) -> dict[str, Any]:
        # OpenAI rejects empty strings; a single space embeds to a neutral, valid vector.
        payload: dict[str, Any] = {"model": self.model, "input": [t or " " for t in texts]}
        if self.dimensions is not None:
            payload["dimensions"] = self.dimensions
        return payload
