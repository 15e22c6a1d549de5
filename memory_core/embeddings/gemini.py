"""Google's Gemini embeddings on their own wire format (``generativelanguage`` v1beta).

Documents go to ``POST {base}/models/{model}:batchEmbedContents`` as ``requests`` of
``{model, content: {parts: [{text}]}, taskType: RETRIEVAL_DOCUMENT}``; a query goes to
``:embedContent`` with ``taskType: RETRIEVAL_QUERY``. The key travels in ``x-goog-api-key``.
As the reference does, vectors are L2-normalised and ``outputDimensionality`` is sent only to
the ``gemini-embedding-2`` family (768, 1536 or 3072; 3072 by default).
"""

from __future__ import annotations

from typing import Any

from .base import ProviderUnavailable
from .remote import InputKind, RemoteEmbeddingProvider

DEFAULT_GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
DEFAULT_GEMINI_MODEL = "gemini-embedding-001"
#: The models that take ``outputDimensionality`` (the reference's GEMINI_EMBEDDING_2_MODELS).
GEMINI_V2_MODELS = frozenset({"gemini-embedding-2-preview"})
GEMINI_V2_DIMENSIONS = (768, 1536, 3072)
#: Input budgets in tokens from Google's model pages (2,048 for both text models).
GEMINI_INPUT_TOKENS = {"gemini-embedding-001": 2048, "text-embedding-004": 2048}
#: Gemini's batchEmbedContents takes at most 100 requests.
GEMINI_MAX_BATCH = 100

_TASK = {"document": "RETRIEVAL_DOCUMENT", "query": "RETRIEVAL_QUERY"}


def normalize_gemini_model(model: str) -> str:
    """``models/x``, ``gemini/x`` and ``google/x`` all name model ``x``, as in the reference."""
    name = model.strip().removeprefix("models/")
    for prefix in ("gemini/", "google/"):
        name = name.removeprefix(prefix)
    return name or DEFAULT_GEMINI_MODEL


class GeminiEmbeddingProvider(RemoteEmbeddingProvider):
    """Gemini embeddings (``provider = "gemini"``, key in ``GEMINI_API_KEY``)."""

    id = "gemini"
    default_key_env = "GEMINI_API_KEY"
    key_required = "always"
    normalize = True

    def __init__(self, base_url: str = DEFAULT_GEMINI_BASE_URL,
                 model: str = DEFAULT_GEMINI_MODEL, api_key_env: str | None = None,
                 dimensions: int | None = None, **kwargs: Any) -> None:
        model = normalize_gemini_model(model)
        self.output_dimensionality: int | None = None
        if model in GEMINI_V2_MODELS:
            if dimensions is not None and dimensions not in GEMINI_V2_DIMENSIONS:
                raise ProviderUnavailable(
                    f"gemini embeddings: dimensions {dimensions} is not valid for {model} "
                    f"(valid: {', '.join(map(str, GEMINI_V2_DIMENSIONS))})")
            self.output_dimensionality = dimensions or 3072
        kwargs.setdefault("max_input_tokens", GEMINI_INPUT_TOKENS.get(model, 8192))
        kwargs["max_batch_items"] = min(int(kwargs.get("max_batch_items", 96)), GEMINI_MAX_BATCH)
        # older models ignore a width (the reference sends none): learn it from the answer
        super().__init__(base_url, model, api_key_env, self.output_dimensionality, **kwargs)

    @property
    def model_path(self) -> str:
        return f"models/{self.model}"

    def cache_key_data(self) -> dict[str, Any]:
        """Base URL, model, outputDimensionality and headers without the key (§3.6)."""
        return {"provider": "gemini", "baseUrl": self.base_url, "model": self.model,
                "outputDimensionality": self.output_dimensionality,
                "headers": dict(sorted(self._extra_headers.items()))}

    def _auth_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._api_key} if self._api_key else {}

    def _url(self, kind: InputKind, n: int) -> str:
        verb = "embedContent" if kind == "query" else "batchEmbedContents"
        return f"{self.base_url}/{self.model_path}:{verb}"

    def request_for(self, text: str, kind: InputKind) -> dict[str, Any]:
        """One EmbedContentRequest (also the line of a batch job)."""
        req: dict[str, Any] = {"content": {"parts": [{"text": text}]}, "taskType": _TASK[kind]}
        if self.output_dimensionality is not None:
            req["outputDimensionality"] = self.output_dimensionality
        return req

    def _payload(self, texts: list[str], kind: InputKind) -> dict[str, Any]:
        if kind == "query":
            return self.request_for(texts[0], kind)
        return {"requests": [{"model": self.model_path, **self.request_for(t, kind)}
                             for t in texts]}

    def _vectors(self, data: Any, kind: InputKind) -> list[Any]:
        if kind == "query":
            return [data["embedding"]["values"]]
        return [item["values"] for item in data["embeddings"]]
