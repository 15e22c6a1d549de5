"""Embeddings: providers behind one interface, a fallback chain, and the cache key.

``create_provider(config)`` returns the configured provider, or the first of its fallbacks that
starts, together with the reasons the others did not. ``None`` means keyword-only ("none"), the
reference's FTS-only mode.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..base.config import PROVIDERS, ProviderConfig
from .base import (
    EmbeddingError,
    EmbeddingProvider,
    ProgressFn,
    ProviderStats,
    ProviderUnavailable,
    VectorWidthChanged,
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
    "VectorWidthChanged",
    "build_provider",
    "create_provider",
    "falls_back_to_keywords",
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


#: The remote providers and the modules that speak their APIs (ollama and lmstudio: OpenAI's,
#: at their preset address and model).
_REMOTE: dict[str, tuple[str, str]] = {
    "openai": (".openai", "OpenAIEmbeddingProvider"),
    "ollama": (".openai", "OpenAIEmbeddingProvider"),
    "lmstudio": (".openai", "OpenAIEmbeddingProvider"),
    "gemini": (".gemini", "GeminiEmbeddingProvider"),
    "voyage": (".cloud", "VoyageEmbeddingProvider"),
    "mistral": (".cloud", "MistralEmbeddingProvider"),
}
#: ``provider = "auto"``: the reference's order after local (spec §7.2; copilot, deepinfra and
#: bedrock have no equivalent here).
AUTO_ORDER = ("openai", "gemini", "voyage", "mistral")


def build_provider(name: str, cfg: ProviderConfig) -> EmbeddingProvider | None:
    """Start one provider by name; raises :class:`ProviderUnavailable` if it cannot start.

    ``model``, ``base_url``, ``api_key_env`` and ``dimensions`` apply to the configured provider
    (``provider``, or each candidate of ``auto``); a fallback starts with its own defaults.
    """
    own = cfg.provider in (name, "auto")
    if name == "none":
        return None
    if name == "auto":
        raise ProviderUnavailable("auto is a selection, not a provider")
    if name == "local":
        from .local import LocalEmbeddingProvider

        return LocalEmbeddingProvider(cfg.model if cfg.provider == "local" else None)
    if name == "e5":
        from .e5 import E5EmbeddingProvider

        return E5EmbeddingProvider(cfg.model if cfg.provider == "e5" else None)
    if name in _REMOTE:
        module, cls_name = _REMOTE[name]
        cls = getattr(importlib.import_module(module, __name__), cls_name)
        kwargs: dict[str, Any] = {}
        local_server = name in ("ollama", "lmstudio")
        if local_server:
            from .openai import PRESET_MODELS, PRESETS

            kwargs.update(base_url=PRESETS[name], model=PRESET_MODELS[name])
        if own and cfg.base_url:
            kwargs["base_url"] = cfg.base_url
        if own and cfg.model:
            kwargs["model"] = cfg.model
        provider: EmbeddingProvider = cls(
            api_key_env=cfg.api_key_env if own else None,
            dimensions=cfg.dimensions if own else None, timeout_s=cfg.timeout_s,
            query_timeout_s=cfg.query_timeout_s, max_batch_items=cfg.batch_items,
            max_batch_bytes=cfg.batch_bytes, concurrency=cfg.concurrency,
            max_retries=cfg.max_retries, headers=cfg.headers, **kwargs)
        if local_server:
            return provider  # a local server has no batch API
        from .batch import with_batch  # the HTTP client stack: only for a remote provider

        return with_batch(provider, cfg.batch)
    raise ProviderUnavailable(f"unknown provider {name!r} ({', '.join(PROVIDERS)})")


def _auto_select(cfg: ProviderConfig) -> tuple[EmbeddingProvider | None, list[str]]:
    """The reference's auto selection: local only when ``model`` names an existing local path,
    then each remote provider in order, moving on only when its key is missing (any other
    failure to start ends the selection, as the reference aborts). Returns the provider (or
    ``None``) and why each earlier candidate was skipped."""
    skipped: list[str] = []
    if cfg.model and Path(os.path.expanduser(cfg.model)).exists():
        try:
            return build_provider("local", replace(cfg, provider="local")), skipped
        except ProviderUnavailable as e:
            skipped.append(f"local: {e}")
    for name in AUTO_ORDER:
        try:
            provider = build_provider(name, cfg)  # cfg.provider is "auto": its settings apply
        except ProviderUnavailable as e:
            skipped.append(str(e))
            if "missing API key" not in str(e):
                return None, skipped
            continue
        if name == "openai" and not os.environ.get(
                cfg.api_key_env or "OPENAI_API_KEY", "").strip():
            # auto never picks a keyless local OpenAI-compatible server: the reference asks
            # every auto candidate for its key
            skipped.append(f"openai embeddings: missing API key: set the environment variable "
                           f"{cfg.api_key_env or 'OPENAI_API_KEY'}")
            continue
        return provider, skipped
    return None, skipped


def create_provider(cfg: ProviderConfig, skip: set[str] | None = None) -> ProviderChoice:
    """The configured provider, or the first fallback that starts, with the reasons.

    ``auto`` picks as the reference does (:func:`_auto_select`); when nothing can start it is
    keyword-only, the reasons recorded (the reference's ``providerUnavailableReason``).
    """
    errors: list[str] = []
    if cfg.provider == "auto" and not (skip and "auto" in skip):
        provider, skipped = _auto_select(cfg)
        errors.extend(skipped)
        if provider is not None and not (skip and provider.id in skip):
            return ProviderChoice(provider, "auto", errors=errors,
                                  reason="; ".join(skipped) or None)
    chain = [cfg.provider] + [f for f in cfg.fallback if f != cfg.provider]
    for name in chain:
        if (skip and name in skip) or name == "auto":
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
    if not falls_back_to_keywords(cfg):
        raise ProviderUnavailable(
            f"{'; '.join(errors) or 'no provider could start'} (fallback = "
            f"{list(cfg.fallback)}: keyword-only is not among them)")
    return ProviderChoice(None, cfg.provider, fallback_from=cfg.provider,
                          reason="; ".join(errors) or "no provider could start", errors=errors)


def falls_back_to_keywords(cfg: ProviderConfig) -> bool:
    """Whether the configuration lets an embedding failure end keyword-only: ``none`` is the
    provider or one of its fallbacks (the default ``fallback = ["none"]``), or ``auto``'s
    selection (which is keyword-only when nothing starts, as the reference's). ``fallback =
    []`` means no fallback: the failure is an error."""
    return cfg.provider in ("none", "auto") or "none" in cfg.fallback
