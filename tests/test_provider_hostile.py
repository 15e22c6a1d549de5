"""Embedding providers are untrusted input (issue #33 item 3), against real servers on 127.0.0.1.

The server (``tests/hostile_provider.py``) redirects, answers NaN/inf/zero vectors, changes its
width, truncates, trickles, never ends, or is down; the key, the index and the cache must hold.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memory_core.embeddings import EmbeddingError
from memory_core.embeddings.openai import OpenAIEmbeddingProvider
from memory_core.index import MemoryIndex

from .hostile_provider import HostileServer
from .provider_server import hashed_vector, run_cli

KEY_ENV = "MC_HOSTILE_TEST_KEY"
SECRET = "sk-hostile-secret"


@pytest.fixture()
def server() -> Iterator[HostileServer]:
    with HostileServer() as s:
        yield s


def provider(server: HostileServer, **kwargs: object) -> OpenAIEmbeddingProvider:
    opts: dict[str, object] = {"api_key_env": KEY_ENV, "base_delay_s": 0.01, "max_retries": 1}
    opts.update(kwargs)
    return OpenAIEmbeddingProvider(server.base_url, "hashed", **opts)  # type: ignore[arg-type]


def workspace(root: Path, server: HostileServer, notes: int = 12, extra: str = "") -> Path:
    """``notes`` diary files of one distinct line each, and a config that embeds them with the
    hostile server two texts a request, one request at a time, one retry."""
    ws = root / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Long-term\n- Bob prefers dark mode in every editor.\n")
    for i in range(notes):
        (ws / "memory" / f"2026-11-{i + 1:02d}.md").write_text(
            f"# Diary\n- Note {i}: the train number {1000 + i} leaves platform {i}.\n")
    (ws / "memory-workbench.toml").write_text(
        f'[provider]\nprovider = "openai"\nmodel = "hashed"\nbase_url = "{server.base_url}"\n'
        f'batch_items = 2\nconcurrency = 1\nmax_retries = 1\n{extra}')
    return ws


def cache_rows(db: Path) -> list[np.ndarray]:
    with sqlite3.connect(db) as conn:
        return [np.frombuffer(b, dtype=np.float32)
                for (b,) in conn.execute("SELECT embedding FROM embedding_cache")]


def chunk_vectors(idx: MemoryIndex) -> list[np.ndarray]:
    rows = idx.store.db.execute("SELECT embedding FROM chunks").fetchall()
    return [np.frombuffer(b, dtype=np.float32) for (b,) in rows if b]


# -- the key ---------------------------------------------------------------------------------------


def test_the_key_never_follows_a_redirect_to_another_origin(
        server: HostileServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    with HostileServer() as other:
        server.redirect_to = other.base_url.removesuffix("/v1")
        server.play("redirect", then="redirect")
        with pytest.raises(EmbeddingError, match="redirect"):
            provider(server, max_retries=0).embed_documents(["a text"])
        assert all(SECRET not in (r["auth"] or "") for r in other.log)
    assert server.log and all(r["auth"] == f"Bearer {SECRET}" for r in server.log)


# -- vectors that are not vectors ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["nan", "inf", "zero"])
def test_non_finite_and_zero_vectors_are_refused(server: HostileServer, mode: str) -> None:
    server.play(mode, mode, mode)
    with pytest.raises(EmbeddingError, match=r"finite|zero"):
        provider(server).embed_documents(["one text", "two texts"])
    server.play(mode)  # once: the retry answers well, and only good vectors come back
    p = provider(server)
    got = p.embed_documents(["one text", "two texts"])
    assert p.stats.retries == 1
    np.testing.assert_allclose(got, [hashed_vector(t, 32) for t in ["one text", "two texts"]],
                               atol=1e-6)


@pytest.mark.parametrize("mode", ["nan", "zero"])
def test_bad_vectors_are_never_stored_cached_or_reused(server: HostileServer, tmp_path: Path,
                                                       mode: str) -> None:
    ws = workspace(tmp_path, server)
    server.play(mode)  # the first request's first vector is bad; its retry is good
    with MemoryIndex.open(ws) as idx:
        idx.sync()
        assert idx.fallback is None
        vectors = chunk_vectors(idx)
        cached = cache_rows(idx.store_path)
        texts = [t for (t,) in idx.store.db.execute("SELECT text FROM chunks")]
    assert cached and vectors
    good = np.asarray([hashed_vector(t, 32) for t in texts], dtype=np.float32)
    for v in cached + vectors:  # each one the server's good vector of its text
        assert float(np.max(good @ v)) > 1 - 1e-5
    with MemoryIndex.open(ws) as idx:  # --force reuses the cache: the good vectors only
        idx.sync(force=True)
        assert all(abs(float(np.linalg.norm(v)) - 1.0) < 1e-4 for v in chunk_vectors(idx))


# -- width -----------------------------------------------------------------------------------------


def test_a_width_change_under_the_same_model_is_an_error_naming_the_widths(
        server: HostileServer, tmp_path: Path) -> None:
    ws = workspace(tmp_path, server, notes=3)
    with MemoryIndex.open(ws) as idx:
        idx.sync()
    server.dims = 48
    (ws / "memory" / "2026-12-01.md").write_text("# Diary\n- A new note about the ferry.\n")
    with MemoryIndex.open(ws) as idx:
        with pytest.raises(EmbeddingError, match=r"48.*32|32.*48"):
            idx.sync()
        assert idx.fallback is None
        assert {v.size for v in chunk_vectors(idx)} == {32}
    with MemoryIndex.open(ws) as idx:  # --force: everything again at the new width
        idx.sync(force=True)
        assert idx.fallback is None
        assert {v.size for v in chunk_vectors(idx)} == {48}


# -- failures: retried, and what was received is kept ----------------------------------------------


def test_a_truncated_answer_is_retried(server: HostileServer) -> None:
    server.play("truncate")
    p = provider(server)
    got = p.embed_documents(["one text", "two texts"])
    assert got.shape == (2, 32) and p.stats.retries == 1


def test_a_final_failure_keeps_the_vectors_received_and_says_so(
        server: HostileServer, tmp_path: Path) -> None:
    ws = workspace(tmp_path, server)
    total = 13  # chunks: MEMORY.md and 12 notes
    server.play("ok", "ok", "ok", then="down")  # 6 texts received, then the server is down
    with MemoryIndex.open(ws) as idx:
        report = idx.sync()
        assert idx.fallback is not None and "openai" in idx.fallback["from"]
        assert any("keyword-only" in w and "6" in w for w in report.warnings), report.warnings
    server.play(then="ok")
    server.log.clear()
    with MemoryIndex.open(ws) as idx:
        idx.sync()
        assert idx.fallback is None
        assert len(chunk_vectors(idx)) == total
    assert server.texts_embedded() == total - 6  # the 6 already received were not asked again


def test_fallback_empty_means_no_fallback(server: HostileServer, tmp_path: Path) -> None:
    ws = workspace(tmp_path, server, notes=2, extra="fallback = []\n")
    server.play(then="down")
    with MemoryIndex.open(ws) as idx, pytest.raises(EmbeddingError):
        idx.sync()
    done = run_cli(ws, {}, "index")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "error" in done.stderr


# -- bounds on one request -------------------------------------------------------------------------


def test_timeout_bounds_a_whole_request(server: HostileServer) -> None:
    server.play("trickle")
    t0 = time.monotonic()
    with pytest.raises(EmbeddingError, match="timed out"):
        provider(server, timeout_s=3.0, max_retries=0).embed_documents(["one text"])
    assert time.monotonic() - t0 < 6.0


def test_an_answer_that_never_ends_is_cut(server: HostileServer) -> None:
    server.play("endless")
    with pytest.raises(EmbeddingError, match="MiB"):
        provider(server, max_retries=0).embed_documents(["one text"])
    assert server.sent < 128 * 1024 * 1024


# -- query time ------------------------------------------------------------------------------------


def test_a_provider_down_at_query_time_leaves_the_keyword_leg_with_a_note(
        server: HostileServer, tmp_path: Path) -> None:
    from memory_core import tools

    ws = workspace(tmp_path, server, notes=3, extra="query_timeout_s = 5\n")
    with MemoryIndex.open(ws) as idx:
        idx.sync()
    server.play(then="down")
    with MemoryIndex.open(ws) as idx:
        res = idx.search("train number 1001")
        assert res.hits and res.hits[0].path == "memory/2026-11-02.md"
        assert res.note and "keyword" in res.note
        out = tools.memory_search(idx, "train number 1001")
        assert out["results"] and "keyword" in out["note"]
    done = run_cli(ws, {}, "search", "train number 1001", "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["results"] and "keyword" in answer["note"]
