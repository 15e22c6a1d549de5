"""Tests of the OpenAI-compatible embedding provider against a real local HTTP server.

The server (``tests/embed_server.py``) answers with real all-MiniLM-L6-v2 embeddings and can be
told to rate-limit, fail or hang, so batching, ordering, retries, ``Retry-After`` and timeouts are
exercised over genuine HTTP rather than mocks.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from collections.abc import Iterator
from email.utils import formatdate

import numpy as np
import pytest

from memory_core.base.config import ProviderConfig
from memory_core.embeddings import build_provider
from memory_core.embeddings.base import (
    EmbeddingError,
    EmbeddingProvider,
    ProviderUnavailable,
    provider_key_for,
)
from memory_core.embeddings.openai import PRESET_MODELS, PRESETS, OpenAIEmbeddingProvider
from memory_core.embeddings.remote import make_batches, parse_retry_after

try:
    from tests.embed_server import EmbedServer, embed_texts
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from embed_server import EmbedServer, embed_texts  # type: ignore[no-redef]

TEXTS = [
    "The cat sat on the mat.",
    "Quarterly revenue grew by twelve percent.",
    "How do I reset my router password?",
    "Photosynthesis converts light into chemical energy.",
    "The meeting moved to Thursday at 3 pm.",
    "Python's GIL limits CPU-bound threads.",
    "She planted tomatoes and basil in the garden.",
    "Remember to renew the passport before June.",
    "The API returns 429 when rate limited.",
    "Mount Everest is the highest mountain above sea level.",
    "Café au lait, s'il vous plaît.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "Bob prefers dark mode in every editor.",
    "The deploy failed because the disk was full.",
    "Whales are mammals, not fish.",
    "Use SQLite FTS5 for keyword search.",
    "The train to Lyon leaves from platform 9.",
    "Alice's birthday is on the 14th of March.",
    "Vectors are normalised to unit length.",
    "Backups run nightly at 2 am UTC.",
    "I am allergic to peanuts.",
    "The project deadline slipped by two weeks.",
    "Jazz originated in New Orleans.",
    "Set the thermostat to 20 degrees.",
]


@pytest.fixture(scope="session")
def embed_server() -> Iterator[EmbedServer]:
    """One real embeddings server (MiniLM loaded once) for the whole test session."""
    with EmbedServer() as server:
        yield server


@pytest.fixture()
def server(embed_server: EmbedServer) -> Iterator[EmbedServer]:
    """The session server with faults, options and the request log cleared for each test."""
    embed_server.reset()
    yield embed_server
    embed_server.reset()


def make_provider(server: EmbedServer, **kwargs: object) -> OpenAIEmbeddingProvider:
    """A provider for the test server; no API key is needed on 127.0.0.1."""
    opts: dict[str, object] = {"api_key_env": "MC_TEST_EMBED_KEY_UNSET", "base_delay_s": 0.01}
    opts.update(kwargs)
    return OpenAIEmbeddingProvider(server.base_url, "all-MiniLM-L6-v2", **opts)  # type: ignore[arg-type]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.sum(a * b, axis=1)


# -- batching --------------------------------------------------------------------------------------


def test_make_batches_count_bytes_and_oversized() -> None:
    texts = ["a" * 10] * 5 + ["b" * 50] + ["c" * 10] * 2
    batches = make_batches(texts, max_items=2, max_bytes=25)
    assert [len(b) for _, b in batches] == [2, 2, 1, 1, 2]
    assert [start for start, _ in batches] == [0, 2, 4, 5, 6]
    assert batches[3][1] == ["b" * 50]  # oversized goes alone
    assert [t for _, b in batches for t in b] == texts
    # bytes, not characters: "é" is 2 UTF-8 bytes, so 10 of them fill a 25-byte batch alone
    assert [len(b) for _, b in make_batches(["é" * 10] * 3, 10, 25)] == [1, 1, 1]
    assert make_batches([], 3, 100) == []


def test_batches_bounded_by_count(server: EmbedServer) -> None:
    provider = make_provider(server, max_batch_items=5, concurrency=2)
    vectors = provider.embed_documents(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    sizes = sorted((r.n_inputs for r in server.requests), reverse=True)
    assert sizes == [5, 5, 5, 5, 4]
    assert sorted(provider.stats.batch_sizes, reverse=True) == sizes
    assert provider.stats.requests == 5
    assert provider.stats.texts == len(TEXTS)


def test_batches_bounded_by_bytes_oversized_alone(server: EmbedServer) -> None:
    # 2-byte characters: 200 chars = 400 bytes each, so a 1000-byte budget holds two, not five.
    texts = [f"{i} " + "é" * 199 for i in range(6)]
    big = "word " * 400  # 2000 bytes, larger than the budget on its own
    texts.insert(2, big)  # batches: [0, 1], [big], [2, 3], [4, 5]
    provider = make_provider(server, max_batch_items=50, max_batch_bytes=1000)
    vectors = provider.embed_documents(texts)
    assert vectors.shape == (len(texts), 384)
    assert len(server.requests) == 4
    for req in server.requests:
        assert req.input_bytes <= 1000 or req.n_inputs == 1
    big_requests = [r for r in server.requests if r.input_bytes > 1000]
    assert len(big_requests) == 1 and big_requests[0].n_inputs == 1
    assert sorted(r.n_inputs for r in server.requests) == [1, 2, 2, 2]
    assert np.all(cosines(vectors, embed_texts(texts)) > 0.9999)


# -- correctness and order -------------------------------------------------------------------------


def test_vectors_match_in_process_minilm_and_order_is_kept(server: EmbedServer) -> None:
    # Vectors come back scaled (not unit) and with `data` reversed; the first batch is delayed so
    # later batches finish first. The provider must still normalise and keep input order.
    server.set_options(scale=3.0, reverse=True)
    server.hang(1, 0.4)
    progress: list[tuple[int, int]] = []
    provider = make_provider(server, max_batch_items=3, concurrency=4, timeout_s=10)
    vectors = provider.embed_documents(TEXTS, progress=lambda d, t: progress.append((d, t)))
    expected = embed_texts(TEXTS)
    assert vectors.dtype == np.float32
    assert vectors.shape == expected.shape
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.all(cosines(vectors, expected) > 0.9999)
    # each row matches its own text far better than any other text
    sims = vectors @ expected.T
    assert list(np.argmax(sims, axis=1)) == list(range(len(TEXTS)))
    # the delayed first batch really finished last, so order was restored, not merely kept
    assert server.requests[0].outcome == "hang"
    assert len(progress) == 8
    assert [d for d, _ in progress] == sorted(d for d, _ in progress)
    assert progress[-1] == (len(TEXTS), len(TEXTS))
    assert provider.dims == 384


def test_embed_query_is_trimmed_unit_vector(server: EmbedServer) -> None:
    provider = make_provider(server)
    assert provider.dims == 0
    vec = provider.embed_query("   where is the train to Lyon?  \n")
    assert vec.shape == (384,)
    assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-5
    expected = embed_texts(["where is the train to Lyon?"])[0]
    assert float(vec @ expected) > 0.9999
    assert provider.dims == 384
    assert provider.embed_documents([]).shape == (0, 384)


def test_dimensions_are_sent_and_respected(server: EmbedServer) -> None:
    provider = make_provider(server, dimensions=128)
    assert provider.dims == 128
    vectors = provider.embed_documents(TEXTS[:4])
    assert vectors.shape == (4, 128)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert server.requests[0].dimensions == 128
    assert server.requests[0].model == "all-MiniLM-L6-v2"


def test_satisfies_protocol() -> None:
    provider = OpenAIEmbeddingProvider("http://127.0.0.1:9/v1", "m", api_key_env="MC_UNSET_X")
    assert isinstance(provider, EmbeddingProvider)
    assert provider.id == "openai"
    assert provider.max_input_tokens == 8192


# -- retries ---------------------------------------------------------------------------------------


def test_429_honours_retry_after(server: EmbedServer) -> None:
    server.rate_limit(1, retry_after=1)
    provider = make_provider(server, base_delay_s=0.01)
    start = time.monotonic()
    vectors = provider.embed_documents(TEXTS[:3])
    elapsed = time.monotonic() - start
    assert vectors.shape == (3, 384)
    assert elapsed >= 0.95, f"retried after {elapsed:.2f}s, ignoring Retry-After: 1"
    assert len(server.requests) == 2
    assert server.requests[0].outcome == "status 429"
    assert server.requests[1].at - server.requests[0].at >= 0.95
    assert provider.stats.retries == 1
    assert provider.stats.failures == 0


def test_retry_after_header_parsing() -> None:
    now = time.time()
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    in_10s = formatdate(now + 10, usegmt=True)
    parsed = parse_retry_after(in_10s, now=now)
    assert parsed is not None and 9.0 <= parsed <= 10.5
    assert parse_retry_after(formatdate(now - 100, usegmt=True), now=now) == 0.0


def test_retry_after_is_capped(server: EmbedServer) -> None:
    server.rate_limit(1, retry_after=3600)
    provider = make_provider(server, max_retry_after_s=0.2)
    start = time.monotonic()
    provider.embed_documents(TEXTS[:2])
    assert time.monotonic() - start < 5.0
    assert provider.stats.retries == 1


def test_500_retried_with_exponential_backoff(server: EmbedServer) -> None:
    server.fail(2, 500, "upstream exploded")
    provider = make_provider(server, base_delay_s=0.15, max_delay_s=8.0)
    start = time.monotonic()
    vectors = provider.embed_documents(TEXTS[:4])
    elapsed = time.monotonic() - start
    assert vectors.shape == (4, 384)
    assert [r.outcome for r in server.requests] == ["status 500", "status 500", "ok"]
    gap1 = server.requests[1].at - server.requests[0].at
    gap2 = server.requests[2].at - server.requests[1].at
    assert gap1 >= 0.15 and gap2 >= 0.30, (gap1, gap2)  # 0.15 then doubled
    # jitter adds at most 20 %; the slack is for a loaded machine
    assert gap1 <= 0.15 * 1.2 + 0.6 and gap2 <= 0.30 * 1.2 + 0.6
    assert elapsed >= 0.45
    assert provider.stats.retries == 2
    assert (
        provider.stats.last_error is not None and "upstream exploded" in provider.stats.last_error
    )


def test_persistent_500_fails_after_max_retries_plus_one(server: EmbedServer) -> None:
    server.always_fail(500, "still broken")
    provider = make_provider(server, max_retries=3, base_delay_s=0.01)
    with pytest.raises(EmbeddingError, match="still broken") as info:
        provider.embed_documents(TEXTS[:2])
    assert "4 attempts" in str(info.value)
    assert len(server.requests) == 4
    assert provider.stats.retries == 3
    assert provider.stats.failures == 1
    assert "HTTP 500" in (provider.stats.last_error or "")


def test_hang_times_out(server: EmbedServer) -> None:
    server.hang(1, 2.0)
    provider = make_provider(server, timeout_s=0.5, max_retries=0)
    start = time.monotonic()
    with pytest.raises(EmbeddingError, match="timed out"):
        provider.embed_documents(TEXTS[:2])
    elapsed = time.monotonic() - start
    assert 0.4 <= elapsed < 1.5
    assert provider.stats.failures == 1


def test_hang_then_retry_succeeds(server: EmbedServer) -> None:
    server.hang(1, 2.0)
    provider = make_provider(server, timeout_s=0.5, max_retries=3)
    vectors = provider.embed_documents(TEXTS[:2])
    assert vectors.shape == (2, 384)
    assert np.all(cosines(vectors, embed_texts(TEXTS[:2])) > 0.9999)
    # the hung request was abandoned after 0.5 s and retried (a retry can itself time out when
    # the machine is loaded, so only "at least one" is certain)
    assert server.requests[0].outcome == "hang"
    assert provider.stats.retries >= 1
    assert provider.stats.failures == 0


def test_query_timeout_is_separate(server: EmbedServer) -> None:
    server.hang(1, 2.0)
    provider = make_provider(server, timeout_s=30, query_timeout_s=0.4, max_retries=0)
    start = time.monotonic()
    with pytest.raises(EmbeddingError, match="timed out"):
        provider.embed_query("hello")
    assert time.monotonic() - start < 1.5


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_fail_at_once(server: EmbedServer, status: int) -> None:
    server.fail(1, status, f"bad request number {status}")
    provider = make_provider(server, max_retries=3)
    with pytest.raises(EmbeddingError, match=f"bad request number {status}") as info:
        provider.embed_documents(TEXTS[:2])
    assert f"HTTP {status}" in str(info.value)
    assert len(server.requests) == 1
    assert provider.stats.retries == 0
    assert provider.stats.failures == 1


def test_connection_refused_is_retried_then_fails() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = OpenAIEmbeddingProvider(
        f"http://127.0.0.1:{port}/v1",
        "m",
        api_key_env="MC_UNSET_X",
        max_retries=2,
        base_delay_s=0.01,
    )
    with pytest.raises(EmbeddingError, match="3 attempts"):
        provider.embed_documents(["hello"])
    assert provider.stats.retries == 2
    assert provider.stats.requests == 3


def test_first_failing_batch_aborts_the_call(server: EmbedServer) -> None:
    server.fail(1, 400, "poison batch")
    provider = make_provider(server, max_batch_items=2, concurrency=2)
    with pytest.raises(EmbeddingError, match="poison batch"):
        provider.embed_documents(TEXTS)
    # the pending batches were cancelled: far fewer than the 12 requests a full run needs,
    # and nothing of that call is still running once it has raised
    sent = len(server.requests)
    assert sent < 12
    time.sleep(0.3)
    assert len(server.requests) == sent
    assert provider.stats.failures == 1


# -- keys, presets, provider_key -------------------------------------------------------------------


def test_missing_api_key_for_remote_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ProviderUnavailable, match="OPENAI_API_KEY"):
        OpenAIEmbeddingProvider()
    monkeypatch.setenv("OPENAI_API_KEY", "")
    with pytest.raises(ProviderUnavailable, match="OPENAI_API_KEY"):
        OpenAIEmbeddingProvider("https://embeddings.example.com/v1", "m")
    monkeypatch.delenv("MY_EMBED_KEY", raising=False)
    with pytest.raises(ProviderUnavailable, match="MY_EMBED_KEY"):
        OpenAIEmbeddingProvider(api_key_env="MY_EMBED_KEY")
    monkeypatch.setenv("MY_EMBED_KEY", "sk-test")
    OpenAIEmbeddingProvider(api_key_env="MY_EMBED_KEY")  # builds without touching the network
    # local URLs need no key
    OpenAIEmbeddingProvider(PRESETS["ollama"], "nomic-embed-text", api_key_env="MC_UNSET_X")
    OpenAIEmbeddingProvider("http://localhost:8080/v1", "m", api_key_env="MC_UNSET_X")


def test_bearer_key_is_sent_and_not_recorded(
    server: EmbedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MC_TEST_EMBED_KEY", "sk-secret-value-123")
    provider = make_provider(server, api_key_env="MC_TEST_EMBED_KEY")
    provider.embed_documents(["hello"])
    req = server.requests[0]
    assert req.auth_scheme == "Bearer"
    assert "sk-secret-value-123" not in json.dumps(req.headers)
    assert req.headers.get("Content-Type") == "application/json"
    server.clear_requests()
    make_provider(server).embed_documents(["hello"])
    assert server.requests[0].auth_scheme is None


def test_provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-key-one")
    base = OpenAIEmbeddingProvider()
    assert base.provider_key == provider_key_for(
        {
            "provider": "openai",
            "baseUrl": "https://api.openai.com/v1",
            "model": "text-embedding-3-small",
            "dimensions": None,
        }
    )
    assert OpenAIEmbeddingProvider("https://api.openai.com/v1/").provider_key == base.provider_key
    monkeypatch.setenv("OPENAI_API_KEY", "sk-key-two")
    assert OpenAIEmbeddingProvider().provider_key == base.provider_key  # key is not part of it
    others = {
        OpenAIEmbeddingProvider(model="text-embedding-3-large").provider_key,
        OpenAIEmbeddingProvider("https://proxy.example.com/v1").provider_key,
        OpenAIEmbeddingProvider(dimensions=512).provider_key,
    }
    assert len(others) == 3 and base.provider_key not in others
    assert "sk-key" not in base.provider_key


def test_presets() -> None:
    """ollama and lmstudio start at their preset address and model (a fallback's defaults)."""
    assert PRESET_MODELS["openai"] == "text-embedding-3-small"
    cfg = ProviderConfig()
    ollama = build_provider("ollama", cfg)
    assert isinstance(ollama, OpenAIEmbeddingProvider)
    assert ollama.base_url == "http://127.0.0.1:11434/v1"
    assert ollama.model == "nomic-embed-text"
    lms = build_provider("lmstudio", cfg)
    assert isinstance(lms, OpenAIEmbeddingProvider)
    assert lms.base_url == PRESETS["lmstudio"]
    assert lms.model == "text-embedding-nomic-embed-text-v1.5"
    with pytest.raises(ProviderUnavailable):
        build_provider("nope", cfg)


# -- the server's HTTP control API -----------------------------------------------------------------


def _post(url: str, payload: dict[str, object]) -> dict[str, object]:
    req = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read())


def test_server_control_endpoint_and_healthz(server: EmbedServer) -> None:
    with urllib.request.urlopen(f"{server.url}/healthz", timeout=5) as resp:
        assert json.loads(resp.read()) == {"ok": True}
    assert _post(
        f"{server.url}/control", {"action": "fail", "count": 1, "status": 503, "retry_after": 1}
    ) == {"ok": True}
    provider = make_provider(server)
    start = time.monotonic()
    provider.embed_documents(["hello"])
    assert time.monotonic() - start >= 0.95  # 503 + Retry-After: 1 honoured
    assert [r.outcome for r in server.requests] == ["status 503", "ok"]
    _post(f"{server.url}/control", {"action": "always_fail", "status": 502})
    with pytest.raises(EmbeddingError, match="HTTP 502"):
        make_provider(server, max_retries=1).embed_documents(["x"])
    _post(f"{server.url}/control", {"action": "reset"})
    assert server.requests == []
    assert make_provider(server).embed_documents(["x"]).shape == (1, 384)
