"""Embeddings: providers behind one interface, a fallback chain, and the cache key.

``create_provider(config)`` returns the configured provider, or the first of its fallbacks that
starts, together with the reasons the others did not. ``None`` means keyword-only ("none"), the
reference's FTS-only mode.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import ProviderConfig
from .base import (
    EmbeddingError,
    EmbeddingProvider,
    ProgressFn,
    ProviderStats,
    ProviderUnavailable,
    normalize_rows,
    provider_key_for,
)
from .windows import InputLimit

__all__ = [
    "FTS_ONLY_KEY",
    "EmbeddingError",
    "EmbeddingProvider",
    "InputLimit",
    "ProgressFn",
    "ProviderChoice",
    "ProviderStats",
    "ProviderUnavailable",
    "build_provider",
    "create_provider",
    "normalize_rows",
    "provider_key_for",
]

FTS_ONLY_KEY = provider_key_for({"provider": "none", "model": "fts-only"})


@dataclass
class ProviderChoice:
    """The provider in use (``None`` = keyword-only), what was asked for, and why it differs."""

    provider: EmbeddingProvider | None
    requested: str
    fallback_from: str | None = None
    reason: str | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.provider.id if self.provider else "none"

    @property
    def model(self) -> str:
        return self.provider.model if self.provider else "fts-only"

    @property
    def key(self) -> str:
        return self.provider.provider_key if self.provider else FTS_ONLY_KEY


def build_provider(name: str, cfg: ProviderConfig) -> EmbeddingProvider | None:
    """Start one provider by name; raises :class:`ProviderUnavailable` if it cannot start."""
    if name == "none":
        return None
    if name == "local":
        from .local import LocalEmbeddingProvider

        return LocalEmbeddingProvider(cfg.model if cfg.provider == "local" else None)
    if name == "e5":
        from .e5 import E5EmbeddingProvider

        return E5EmbeddingProvider(cfg.model if cfg.provider == "e5" else None)
    if name in ("openai", "ollama", "lmstudio"):
        from .openai import PRESETS, OpenAIEmbeddingProvider

        base_url = cfg.base_url or PRESETS.get(name, PRESETS["openai"])
        model = cfg.model if cfg.provider == name and cfg.model else _default_remote_model(name)
        return OpenAIEmbeddingProvider(
            base_url=base_url, model=model, api_key_env=cfg.api_key_env,
            dimensions=cfg.dimensions, timeout_s=cfg.timeout_s,
            query_timeout_s=cfg.query_timeout_s, max_batch_items=cfg.batch_items,
            max_batch_bytes=cfg.batch_bytes, concurrency=cfg.concurrency,
            max_retries=cfg.max_retries,
        )
    raise ProviderUnavailable(f"unknown provider {name!r} (local, e5, openai, ollama, lmstudio, "
                              "none)")


def _default_remote_model(name: str) -> str:
    from .openai import DEFAULT_MODEL, PRESET_MODELS

    return PRESET_MODELS.get(name, DEFAULT_MODEL)


def create_provider(cfg: ProviderConfig, skip: set[str] | None = None) -> ProviderChoice:
    """The configured provider, or the first fallback that starts, with the reasons."""
    chain = [cfg.provider] + [f for f in cfg.fallback if f != cfg.provider]
    errors: list[str] = []
    for name in chain:
        if skip and name in skip:
            continue
        try:
            provider = build_provider(name, cfg)
        except ProviderUnavailable as e:
            errors.append(str(e))
            continue
        if name == cfg.provider:
            return ProviderChoice(provider, cfg.provider, errors=errors)
        return ProviderChoice(provider, cfg.provider, fallback_from=cfg.provider,
                              reason="; ".join(errors) or "skipped", errors=errors)
    return ProviderChoice(None, cfg.provider, fallback_from=cfg.provider,
                          reason="; ".join(errors) or "no provider could start", errors=errors)
