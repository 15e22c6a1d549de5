"""Mistral AI embeddings on their own wire format.

``POST {base}/embeddings`` with ``{model, input: [...]}`` and the key as a bearer token; the
answer is ``{"data": [{"embedding", "index"}]}``. Mistral has no input type: documents and the
query are sent alike. Vectors are used as returned, as the reference does.
"""

from __future__ import annotations

from typing import Any

from .remote import InputKind, RemoteEmbeddingProvider

DEFAULT_MISTRAL_BASE_URL = "https://api.mistral.ai/v1"
DEFAULT_MISTRAL_MODEL = "mistral-embed"
#: mistral-embed reads 8,192 tokens (Mistral's model card).
MISTRAL_INPUT_TOKENS = 8192


class MistralEmbeddingProvider(RemoteEmbeddingProvider):
    """Mistral embeddings (``provider = "mistral"``, key in ``MISTRAL_API_KEY``).

    ``dimensions``, when set, is sent as ``output_dimension`` (models that take it, e.g.
    codestral-embed); the reference sends none.
    """

    id = "mistral"
    default_key_env = "MISTRAL_API_KEY"
    key_required = "always"
    normalize = False

    def __init__(self, base_url: str = DEFAULT_MISTRAL_BASE_URL,
                 model: str = DEFAULT_MISTRAL_MODEL, api_key_env: str | None = None,
                 dimensions: int | None = None, **kwargs: Any) -> None:
        model = model.strip().removeprefix("mistral/") or DEFAULT_MISTRAL_MODEL
        kwargs.setdefault("max_input_tokens", MISTRAL_INPUT_TOKENS)
        super().__init__(base_url, model, api_key_env, dimensions, **kwargs)

    def cache_key_data(self) -> dict[str, Any]:
        """Base URL, model, dimensions and headers without the key."""
        return {"provider": "mistral", "baseUrl": self.base_url, "model": self.model,
                "outputDimension": self.dimensions,
                "headers": dict(sorted(self._extra_headers.items()))}

    def _payload(self, texts: list[str], kind: InputKind) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "input": texts}
        if self.dimensions is not None:
            payload["output_dimension"] = self.dimensions
        return payload
