"""Voyage AI and Mistral AI embeddings: one wire format, so one class and a table of presets.

Both take ``POST {base}/embeddings`` with ``{model, input: [...]}`` and the key as a bearer
token, and answer ``{"data": [{"embedding", "index"}]}``. ``dimensions``, when set, is sent as
``output_dimension`` (the reference sends none). They differ only in data: Voyage also sends
``input_type`` (``document`` or ``query``), Mistral has no input type (documents and the query
are sent alike). Vectors are used as returned, as the reference does (Voyage's are unit length).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .remote import InputKind, RemoteEmbeddingProvider


@dataclass(frozen=True)
class CloudPreset:
    """What one service's API differs in."""

    base_url: str
    model: str
    #: Context lengths in tokens, by model (``default_tokens`` for a model not listed).
    input_tokens: dict[str, int] = field(default_factory=dict)
    default_tokens: int = 8192
    #: Most texts one request takes (``None``: no cap beyond the configured batch).
    max_batch: int | None = None
    #: Whether requests carry ``input_type`` (and the cache key says documents are sent so).
    input_type: bool = False


#: Voyage's context lengths from its model table (32k for the current text models); 1,000
#: texts per request at most. mistral-embed reads 8,192 tokens (Mistral's model card).
PRESETS: dict[str, CloudPreset] = {
    "voyage": CloudPreset(
        "https://api.voyageai.com/v1", "voyage-4-large",
        {"voyage-4-large": 32000, "voyage-4": 32000, "voyage-4-lite": 32000, "voyage-3": 32000,
         "voyage-3-lite": 16000, "voyage-code-3": 32000}, max_batch=1000, input_type=True),
    "mistral": CloudPreset("https://api.mistral.ai/v1", "mistral-embed"),
}


class CloudEmbeddingProvider(RemoteEmbeddingProvider):
    """Embeddings from a service of :data:`PRESETS` (``id`` names it; its key in
    ``<ID>_API_KEY``)."""

    key_required = "always"
    normalize = False

    def __init__(self, base_url: str | None = None, model: str | None = None,
                 api_key_env: str | None = None, dimensions: int | None = None,
                 **kwargs: Any) -> None:
        preset = PRESETS[self.id]
        model = (model or "").strip().removeprefix(f"{self.id}/") or preset.model
        kwargs.setdefault("max_input_tokens", preset.input_tokens.get(model,
                                                                      preset.default_tokens))
        if preset.max_batch is not None:
            kwargs["max_batch_items"] = min(int(kwargs.get("max_batch_items", 96)),
                                            preset.max_batch)
        self.input_type = preset.input_type
        super().__init__(preset.base_url if base_url is None else base_url, model, api_key_env,
                         dimensions, **kwargs)

    def cache_key_data(self) -> dict[str, Any]:
        """Base URL, model, dimensions, the documents' input type if sent, headers without the
        key."""
        data: dict[str, Any] = {"provider": self.id, "baseUrl": self.base_url,
                                "model": self.model, "outputDimension": self.dimensions}
        if self.input_type:
            data["inputType"] = "document"
        data["headers"] = dict(sorted(self._extra_headers.items()))
        return data

    def _payload(self, texts: list[str], kind: InputKind) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "input": texts}
        if self.input_type:
            payload["input_type"] = kind
        if self.dimensions is not None:
            payload["output_dimension"] = self.dimensions
        return payload


class VoyageEmbeddingProvider(CloudEmbeddingProvider):
    """Voyage embeddings (``provider = "voyage"``, key in ``VOYAGE_API_KEY``)."""

    id = "voyage"
    default_key_env = "VOYAGE_API_KEY"


class MistralEmbeddingProvider(CloudEmbeddingProvider):
    """Mistral embeddings (``provider = "mistral"``, key in ``MISTRAL_API_KEY``)."""

    id = "mistral"
    default_key_env = "MISTRAL_API_KEY"
