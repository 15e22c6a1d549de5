"""Voyage AI embeddings on their own wire format.

``POST {base}/embeddings`` with ``{model, input: [...], input_type: "document" | "query"}`` and
the key as a bearer token; the answer is ``{"data": [{"embedding", "index"}]}``. Vectors are used
as returned, as the reference does (Voyage's are unit length).
"""

from __future__ import annotations

from typing import Any

from .remote import InputKind, RemoteEmbeddingProvider

DEFAULT_VOYAGE_BASE_URL = "https://api.voyageai.com/v1"
DEFAULT_VOYAGE_MODEL = "voyage-4-large"
#: Context lengths in tokens from Voyage's model table (32k for the current text models).
VOYAGE_INPUT_TOKENS = {"voyage-4-large": 32000, "voyage-4": 32000, "voyage-4-lite": 32000,
                       "voyage-3": 32000, "voyage-3-lite": 16000, "voyage-code-3": 32000}
#: Voyage takes at most 1,000 texts per request.
VOYAGE_MAX_BATCH = 1000


class VoyageEmbeddingProvider(RemoteEmbeddingProvider):
    """Voyage embeddings (``provider = "voyage"``, key in ``VOYAGE_API_KEY``).

    ``dimensions``, when set, is sent as ``output_dimension`` (the reference sends none).
    """

    id = "voyage"
    default_key_env = "VOYAGE_API_KEY"
    key_required = "always"
    normalize = False

    def __init__(self, base_url: str = DEFAULT_VOYAGE_BASE_URL,
                 model: str = DEFAULT_VOYAGE_MODEL, api_key_env: str | None = None,
                 dimensions: int | None = None, **kwargs: Any) -> None:
        model = model.strip().removeprefix("voyage/") or DEFAULT_VOYAGE_MODEL
        kwargs.setdefault("max_input_tokens", VOYAGE_INPUT_TOKENS.get(model, 8192))
        kwargs["max_batch_items"] = min(int(kwargs.get("max_batch_items", 96)), VOYAGE_MAX_BATCH)
        super().__init__(base_url, model, api_key_env, dimensions, **kwargs)

    def cache_key_data(self) -> dict[str, Any]:
        """Base URL, model, dimensions, the documents' input type, headers without the key."""
        return {"provider": "voyage", "baseUrl": self.base_url, "model": self.model,
                "outputDimension": self.dimensions, "inputType": "document",
                "headers": dict(sorted(self._extra_headers.items()))}

    def _payload(self, texts: list[str], kind: InputKind) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "input": texts, "input_type": kind}
        if self.dimensions is not None:
            payload["output_dimension"] = self.dimensions
        return payload
