"""Gemini, Voyage and Mistral on their own wire formats, against real servers on 127.0.0.1.

The servers (``tests/provider_server.py``, one child process per API) implement each
provider's documented request and answer shapes and error bodies, so what is checked here is
that our client speaks those APIs: the task/input types, the key's header, retries on 429 (with
and without ``Retry-After``) and 5xx, malformed answers, a wrong width, a missing key.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_core.base.config import ProviderConfig
from memory_core.embeddings import EmbeddingError, ProviderUnavailable, create_provider
from memory_core.embeddings.cloud import MistralEmbeddingProvider, VoyageEmbeddingProvider
from memory_core.embeddings.gemini import GeminiEmbeddingProvider
from memory_core.embeddings.remote import RemoteEmbeddingProvider

from .provider_server import ProviderProcess, hashed_vector, run_cli, two_note_workspace

APIS = ("gemini", "voyage", "mistral")
CLASSES: dict[str, type[RemoteEmbeddingProvider]] = {
    "gemini": GeminiEmbeddingProvider, "voyage": VoyageEmbeddingProvider,
    "mistral": MistralEmbeddingProvider}
KEY_ENV = {"gemini": "GEMINI_API_KEY", "voyage": "VOYAGE_API_KEY", "mistral": "MISTRAL_API_KEY"}
MODEL = {"gemini": "gemini-embedding-001", "voyage": "voyage-4-large", "mistral": "mistral-embed"}
TEXTS = ["The laptop fan screamed during the docker build.",
         "Rotated the staging password in the vault.",
         "Bob prefers dark mode in every editor.",
         "The train to Lyon leaves from platform 9."]


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, ProviderProcess]]:
    procs = {api: ProviderProcess(api) for api in APIS}
    for p in procs.values():
        p.__enter__()
    try:
        yield procs
    finally:
        for p in procs.values():
            p.__exit__(None, None, None)


@pytest.fixture(params=APIS)
def api(request: pytest.FixtureRequest, servers: dict[str, ProviderProcess],
        monkeypatch: pytest.MonkeyPatch) -> str:
    name = str(request.param)
    servers[name].reset()
    for env in KEY_ENV.values():
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setenv(KEY_ENV[name], "test-key")
    return name


def make(api: str, server: ProviderProcess, **kwargs: Any) -> RemoteEmbeddingProvider:
    opts: dict[str, Any] = {"base_delay_s": 0.01, "max_retries": 3}
    opts.update(kwargs)
    return CLASSES[api](base_url=server.base_url, model=MODEL[api], **opts)


def embed_posts(server: ProviderProcess) -> list[dict[str, Any]]:
    return [r for r in server.log() if r["method"] == "POST"]


# -- success, and the types each API must carry --------------------------------------------------


def test_documents_and_query_carry_their_task_type(api: str,
                                                    servers: dict[str, ProviderProcess]) -> None:
    server = servers[api]
    p = make(api, server)
    docs = p.embed_documents(TEXTS)
    query = p.embed_query("  where is the train to Lyon?  ")
    assert docs.shape == (4, 64) and query.shape == (64,) and p.dims == 64
    expected = np.asarray([hashed_vector(t, 64) for t in TEXTS], dtype=np.float32)
    # same direction as the server's vectors; Gemini's arrive scaled by 3 and are normalised
    np.testing.assert_allclose(docs, expected, atol=1e-5)
    assert int(np.argmax(docs @ query)) == 3
    doc_req, query_req = embed_posts(server)
    if api == "gemini":
        assert doc_req["path"] == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
        assert [r["taskType"] for r in doc_req["body"]["requests"]] == ["RETRIEVAL_DOCUMENT"] * 4
        assert {r["model"] for r in doc_req["body"]["requests"]} == {
            "models/gemini-embedding-001"}
        assert "outputDimensionality" not in doc_req["body"]["requests"][0]
        assert query_req["path"] == "/v1beta/models/gemini-embedding-001:embedContent"
        assert query_req["body"] == {"content": {"parts": [
            {"text": "where is the train to Lyon?"}]}, "taskType": "RETRIEVAL_QUERY"}
        assert "authorization" not in doc_req["headers"] and doc_req["auth"]
    else:
        assert doc_req["path"] == query_req["path"] == "/v1/embeddings"
        assert doc_req["body"]["input"] == TEXTS and doc_req["body"]["model"] == MODEL[api]
        if api == "voyage":
            assert doc_req["body"]["input_type"] == "document"
            assert query_req["body"]["input_type"] == "query"
        else:
            assert "input_type" not in doc_req["body"]  # Mistral has none
        assert query_req["body"]["input"] == ["where is the train to Lyon?"]


def test_voyage_and_mistral_vectors_are_used_as_returned(
        servers: dict[str, ProviderProcess], monkeypatch: pytest.MonkeyPatch) -> None:
    for api in ("voyage", "mistral"):
        monkeypatch.setenv(KEY_ENV[api], "test-key")
        p = make(api, servers[api], dimensions=16)  # sent as output_dimension: a cut vector
        vec = p.embed_documents(TEXTS[:1])[0]
        cut = np.asarray(hashed_vector(TEXTS[0], 64)[:16], dtype=np.float32)
        np.testing.assert_allclose(vec, cut, atol=1e-6)
        assert float(np.linalg.norm(vec)) < 0.99  # not normalised
        assert embed_posts(servers[api])[-1]["body"]["output_dimension"] == 16


def test_gemini_batches_hold_at_most_100(servers: dict[str, ProviderProcess],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    servers["gemini"].reset()
    p = make("gemini", servers["gemini"], max_batch_items=500, max_batch_bytes=10**9)
    assert p.embed_documents([f"note {i}" for i in range(230)]).shape == (230, 64)
    sizes = sorted(len(r["body"]["requests"]) for r in embed_posts(servers["gemini"]))
    assert sizes == [30, 100, 100]


# -- retries ---------------------------------------------------------------------------------


def test_429_with_retry_after_waits(api: str, servers: dict[str, ProviderProcess]) -> None:
    server = servers[api]
    server.control(action="status", status=429, retry_after=1, message="Resource has been "
                   "exhausted (e.g. check quota).")
    p = make(api, server)
    t0 = time.monotonic()
    assert p.embed_documents(TEXTS).shape == (4, 64)
    assert time.monotonic() - t0 >= 1.0
    assert p.stats.retries == 1 and len(embed_posts(server)) == 2


def test_429_without_retry_after_backs_off(api: str, servers: dict[str, ProviderProcess]) -> None:
    server = servers[api]
    server.control(action="status", status=429, count=2, message="rate limit exceeded")
    p = make(api, server)
    t0 = time.monotonic()
    assert p.embed_query("hello").shape == (64,)
    assert time.monotonic() - t0 < 1.0  # 10 ms, then 20 ms: not a Retry-After wait
    assert p.stats.retries == 2


def test_5xx_retried_then_given_up(api: str, servers: dict[str, ProviderProcess]) -> None:
    server = servers[api]
    server.control(action="status", status=503, count=1, message="overloaded")
    p = make(api, server)
    assert p.embed_documents(TEXTS[:2]).shape == (2, 64)
    server.control(action="status", status=500, count=4, message="upstream exploded")
    with pytest.raises(EmbeddingError, match=r"after 4 attempts.*HTTP 500.*upstream exploded"):
        p.embed_documents(TEXTS[:2])


def test_4xx_is_not_retried_and_keeps_the_servers_words(
        api: str, servers: dict[str, ProviderProcess], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV[api], "wrong-key")
    p = make(api, servers[api])
    with pytest.raises(EmbeddingError, match=r"HTTP 40[01] .*(API key not valid|Unauthorized)"):
        p.embed_documents(TEXTS[:1])
    assert len(embed_posts(servers[api])) == 1


# -- bad answers -----------------------------------------------------------------------------


def test_malformed_body_is_retried_then_a_clear_error(
        api: str, servers: dict[str, ProviderProcess]) -> None:
    # an answer cut short is retried as a 5xx is (issue #33): once, and the retry answers
    servers[api].control(action="malformed")
    assert make(api, servers[api]).embed_documents(TEXTS[:2]).shape == (2, 64)
    assert len(embed_posts(servers[api])) == 2
    servers[api].reset()
    for _ in range(2):
        servers[api].control(action="malformed")
    with pytest.raises(EmbeddingError, match=f"{api} embeddings: answer .* is not JSON"):
        make(api, servers[api], max_retries=1).embed_documents(TEXTS[:2])


def test_wrong_dimensions_are_refused(api: str, servers: dict[str, ProviderProcess]) -> None:
    p = make(api, servers[api])
    p.embed_documents(TEXTS[:1])
    servers[api].control(action="dims")
    with pytest.raises(EmbeddingError, match="returned 65-d vectors, expected 64"):
        p.embed_query("hello")


# -- keys, cache keys, limits ------------------------------------------------------------------


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for api, env in KEY_ENV.items():
        monkeypatch.delenv(env, raising=False)
        with pytest.raises(ProviderUnavailable) as e:
            CLASSES[api](base_url="http://127.0.0.1:9/v1")  # a local URL needs a key too
        assert f"set the environment variable {env}" in str(e.value)
        assert "\n" not in str(e.value)


def test_cache_keys_follow_what_changes_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in KEY_ENV.values():
        monkeypatch.setenv(env, "k1")
    base = {api: CLASSES[api]().provider_key for api in APIS}
    assert len(set(base.values())) == 3
    monkeypatch.setenv("GEMINI_API_KEY", "another-key")
    assert GeminiEmbeddingProvider().provider_key == base["gemini"]  # the key is no part
    assert GeminiEmbeddingProvider(
        headers={"x-goog-api-key": "secret", "Authorization": "x"}).provider_key == base["gemini"]
    assert GeminiEmbeddingProvider(headers={"X-Team": "a"}).provider_key != base["gemini"]
    assert GeminiEmbeddingProvider(base_url="http://proxy/v1beta").provider_key != base["gemini"]
    assert VoyageEmbeddingProvider(model="voyage-4").provider_key != base["voyage"]
    assert MistralEmbeddingProvider(dimensions=256).provider_key != base["mistral"]
    v2 = GeminiEmbeddingProvider(model="gemini-embedding-2-preview", dimensions=768)
    assert v2.output_dimensionality == 768 and v2.cache_key_data()["outputDimensionality"] == 768
    assert GeminiEmbeddingProvider(dimensions=768).output_dimensionality is None  # 001: never
    with pytest.raises(ProviderUnavailable, match="not valid"):
        GeminiEmbeddingProvider(model="gemini-embedding-2-preview", dimensions=100)
    assert GeminiEmbeddingProvider(model="models/gemini-embedding-001").model == (
        "gemini-embedding-001")
    assert (GeminiEmbeddingProvider().max_input_tokens, VoyageEmbeddingProvider().max_input_tokens,
            MistralEmbeddingProvider().max_input_tokens) == (2048, 32000, 8192)


def test_auto_takes_the_reference_order_and_records_skips(
        servers: dict[str, ProviderProcess], monkeypatch: pytest.MonkeyPatch) -> None:
    for env in (*KEY_ENV.values(), "OPENAI_API_KEY"):
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
    cfg = ProviderConfig(provider="auto", base_url=servers["voyage"].base_url)
    choice = create_provider(cfg)
    assert choice.id == "voyage" and choice.requested == "auto"
    assert "OPENAI_API_KEY" in (choice.reason or "") and "GEMINI_API_KEY" in (choice.reason or "")
    assert choice.provider is not None and choice.provider.embed_query("x").shape == (64,)
    monkeypatch.delenv("VOYAGE_API_KEY")
    none = create_provider(ProviderConfig(provider="auto"))
    assert none.provider is None and none.fallback_from == "auto"
    for env in ("OPENAI_API_KEY", "GEMINI_API_KEY", "VOYAGE_API_KEY", "MISTRAL_API_KEY"):
        assert env in (none.reason or "")


# -- the acceptance: index and search from memory-workbench.toml alone ---------------------------


def _cli(ws: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(ws, env, *args)  # type: ignore[no-any-return]


def test_index_and_search_through_the_cli(api: str, servers: dict[str, ProviderProcess],
                                          tmp_path: Path) -> None:
    server = servers[api]
    ws = two_note_workspace(tmp_path, f'[provider]\nprovider = "{api}"\n'
                            f'model = "{MODEL[api]}"\nbase_url = "{server.base_url}"\n')
    env = {KEY_ENV[api]: "test-key"}
    done = _cli(ws, env, "index")
    assert done.returncode == 0, done.stderr
    found = _cli(ws, env, "search", "train to Lyon", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["results"]
    assert hits[0]["path"] == "memory/2026-11-02.md"
    status = json.loads(_cli(ws, env, "status", "--json").stdout)
    assert status["provider"] == api and status["model"] == MODEL[api]
    posts = embed_posts(server)
    if api == "gemini":
        kinds = {r["path"].rsplit(":", 1)[1] for r in posts}
        assert kinds == {"batchEmbedContents", "embedContent"}
        assert {q["taskType"] for r in posts if r["path"].endswith("batchEmbedContents")
                for q in r["body"]["requests"]} == {"RETRIEVAL_DOCUMENT"}
        assert [r["body"]["taskType"] for r in posts if r["path"].endswith(":embedContent")] == [
            "RETRIEVAL_QUERY"]
    elif api == "voyage":
        assert [r["body"]["input_type"] for r in posts] == ["document", "query"]
    # without the key: one line naming the variable, and a keyword-only answer
    (ws / "memory" / "2026-11-03.md").write_text("# Diary\n- More notes.\n")
    nokey = _cli(ws, {}, "index")
    lines = [ln for ln in nokey.stderr.splitlines() if KEY_ENV[api] in ln]
    assert len(lines) == 1 and "Traceback" not in nokey.stderr, nokey.stderr


def test_auto_records_its_reasons_in_status(servers: dict[str, ProviderProcess],
                                            tmp_path: Path) -> None:
    ws = two_note_workspace(tmp_path, f'[provider]\nprovider = "auto"\n'
                            f'base_url = "{servers["mistral"].base_url}"\n')
    done = _cli(ws, {"MISTRAL_API_KEY": "test-key"}, "index")
    assert done.returncode == 0, done.stderr
    st = json.loads(_cli(ws, {"MISTRAL_API_KEY": "test-key"}, "status", "--json").stdout)
    assert st["provider"] == "mistral" and st["requestedProvider"] == "auto"
    why = st["custom"]["providerUnavailableReason"]
    for env in ("OPENAI_API_KEY", "GEMINI_API_KEY", "VOYAGE_API_KEY"):
        assert env in why
    none = _cli(ws, {}, "status", "--json")
    assert none.returncode == 0
    (ws / "memory" / "2026-11-09.md").write_text("# Diary\n- Another note.\n")
    assert _cli(ws, {}, "index").returncode == 0
    st = json.loads(_cli(ws, {}, "status", "--json").stdout)
    assert st["provider"] == "none" and "MISTRAL_API_KEY" in st["custom"][
        "providerUnavailableReason"]
