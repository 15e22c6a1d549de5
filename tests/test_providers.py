"""Providers through the index: remote over real HTTP, fallback, the cache, local models."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memory_core import MemoryIndex
from memory_core.base.config import ProviderConfig
from memory_core.embeddings import create_provider

from .embed_server import EmbedServer


@pytest.fixture(scope="module")
def server() -> Iterator[EmbedServer]:
    with EmbedServer() as s:
        yield s


@pytest.fixture
def tiny_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Long-term\n- The user prefers short answers.\n")
    (ws / "memory" / "2026-11-01.md").write_text(
        "# Diary\n- The laptop fan screamed all afternoon during the docker build.\n")
    (ws / "memory" / "2026-11-02.md").write_text(
        "# Diary\n- Rotated the staging password; vault path secret/pipeline/staging.\n")
    (ws / "memory" / "2026-11-03.md").write_text(
        "# 日记\n- 数据库连接池耗尽，把 max_connections 从 100 调到 200。\n")
    return ws


def _remote(server: EmbedServer, model: str = "minilm-a", **extra: object) -> dict:
    return {"provider": {"provider": "openai", "base_url": server.base_url, "model": model,
                         "max_retries": 1, "fallback": ["local", "none"], **extra}}


def test_index_and_search_over_real_http(server: EmbedServer, tiny_ws: Path) -> None:
    server.reset()
    server.clear_requests()
    with MemoryIndex.open(tiny_ws, overrides=_remote(server, batch_items=2)) as idx:
        report = idx.sync()
        assert report.embedded == 4
        sizes = [r.n_inputs for r in server.requests if r.path.endswith("/embeddings")]
        assert max(sizes) <= 2 and sum(sizes) == 4
        res = idx.search("computer overheating")
        assert res.hits[0].path == "memory/2026-11-01.md"
        assert idx.status().provider == "openai"


def test_429_is_retried_after_retry_after(server: EmbedServer, tiny_ws: Path) -> None:
    server.reset()
    server.clear_requests()
    server.rate_limit(1, retry_after=1)
    with MemoryIndex.open(tiny_ws, overrides=_remote(server)) as idx:
        report = idx.sync()
        assert report.embedded == 4 and not idx.fallback
    first, second = server.requests[0], server.requests[1]
    assert first.outcome == "status 429" and second.outcome == "ok"
    assert second.at - first.at >= 0.95


def test_persistent_failure_falls_back_to_local_with_reason(server: EmbedServer,
                                                            tiny_ws: Path) -> None:
    server.reset()
    server.always_fail(500)
    try:
        with MemoryIndex.open(tiny_ws, overrides=_remote(server)) as idx:
            report = idx.sync()
            assert report.full and report.embedded == 4
            st = idx.status()
            assert st.provider == "local"
            assert st.fallback is not None and st.fallback.from_provider == "openai"
            assert "500" in st.fallback.reason
            # the local model answers the vector leg (the fused answer may abstain on a
            # four-file workspace: the calibrated default returns nothing on weak evidence)
            cands = idx.candidates("computer overheating")
            assert cands.chunks[cands.vector[0].id].path == "memory/2026-11-01.md"
    finally:
        server.always_fail(None)


def test_provider_that_cannot_start_falls_back_at_once(tiny_ws: Path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = ProviderConfig(provider="openai", base_url="https://api.example.invalid/v1",
                         fallback=["none"])
    choice = create_provider(cfg)
    assert choice.provider is None and choice.fallback_from == "openai"
    assert "OPENAI_API_KEY" in (choice.reason or "")


def test_model_change_rebuilds_and_cache_avoids_reembedding(server: EmbedServer,
                                                            tiny_ws: Path) -> None:
    server.reset()
    with MemoryIndex.open(tiny_ws, overrides=_remote(server, "minilm-a")) as idx:
        assert idx.sync().embedded == 4
        forced = idx.sync(force=True)
        assert forced.full and forced.embedded == 0 and forced.cache_hits == 4
    with MemoryIndex.open(tiny_ws, overrides=_remote(server, "minilm-b")) as idx:
        changed = idx.sync()
        assert changed.full and "model" in changed.reason and changed.embedded == 4
    with MemoryIndex.open(tiny_ws, overrides=_remote(server, "minilm-a")) as idx:
        back = idx.sync()
        assert back.full and back.embedded == 0 and back.cache_hits == 4


def test_local_provider_vectors_are_unit_float32() -> None:
    choice = create_provider(ProviderConfig())
    p = choice.provider
    assert p is not None and p.id == "local" and p.dims == 384
    m = p.embed_documents(["hello world", "数据库"])
    assert m.dtype == np.float32 and m.shape == (2, 384)
    assert np.allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)
    assert p.provider_key != create_provider(ProviderConfig(provider="none")).key


def test_e5_provider_handles_chinese(tiny_ws: Path) -> None:
    with MemoryIndex.open(tiny_ws, provider="e5") as idx:
        idx.sync()
        assert idx.status().model == "multilingual-e5-small"
        res = idx.candidates("数据库连接不够用了")
        top = res.chunks[res.vector[0].id]
        assert top.path == "memory/2026-11-03.md"
