"""The provider batch APIs (OpenAI's and Voyage's Files + Batches) against a real server.

``tests/provider_server.py`` serves the documented routes (multipart upload, batch create,
polling, the output file, a failed or a never-ending job); the tests check the reference's
policy: a timed-out job retried once, inline embedding for a failed call, batch mode off after
2 failures, the state in ``status --json``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_core.base.config import BatchConfig
from memory_core.embeddings.batch import BatchingProvider, BatchState
from memory_core.embeddings.cloud import VoyageEmbeddingProvider
from memory_core.embeddings.openai import OpenAIEmbeddingProvider

from .provider_server import ProviderProcess, hashed_vector, run_cli, two_note_workspace

TEXTS = ["The laptop fan screamed during the docker build.",
         "Rotated the staging password in the vault.",
         "Bob prefers dark mode in every editor.",
         "The train to Lyon leaves from platform 9."]
FAST = BatchConfig(enabled=True, poll_interval_ms=20, timeout_minutes=0.02)


@pytest.fixture(scope="module")
def openai_server() -> Iterator[ProviderProcess]:
    with ProviderProcess("openai") as s:
        yield s


@pytest.fixture()
def server(openai_server: ProviderProcess, monkeypatch: pytest.MonkeyPatch) -> ProviderProcess:
    openai_server.reset()
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    return openai_server


def routes(server: ProviderProcess) -> list[str]:
    return [f"{r['method']} {r['path'].split('?')[0]}" for r in server.log()]


def batching(server: ProviderProcess, cfg: BatchConfig = FAST) -> BatchingProvider:
    inner = OpenAIEmbeddingProvider(server.base_url, "text-embedding-3-small",
                                    base_delay_s=0.01)
    return BatchingProvider(inner, cfg, sleep=lambda s: __import__("time").sleep(min(s, 0.05)))


def test_documents_go_through_files_and_batches(server: ProviderProcess) -> None:
    waits: list[tuple[int, int, str]] = []
    p = batching(server)
    p.set_waiting(lambda w, b, s: waits.append((w, b, s)))
    vectors = p.embed_documents(TEXTS)
    # the output file lists the lines in another order: matched back by custom_id
    np.testing.assert_allclose(vectors, [hashed_vector(t, 64) for t in TEXTS], atol=1e-5)
    seen = routes(server)
    assert seen[:2] == ["POST /v1/files", "POST /v1/batches"]
    assert "POST /v1/embeddings" not in seen
    assert seen[-1].startswith("GET /v1/files/") and seen[-1].endswith("/content")
    assert sum(r.startswith("GET /v1/batches/") for r in seen) >= 1
    upload = server.log()[0]["body"]
    assert upload["purpose"] == "batch"
    assert [ln["body"]["input"] for ln in upload["lines"]] == TEXTS
    assert {(ln["method"], ln["url"]) for ln in upload["lines"]} == {("POST", "/v1/embeddings")}
    assert server.log()[1]["body"]["endpoint"] == "/v1/embeddings"
    assert waits and waits[0][1] == 1  # progress while the job ran: (waited, allowed, state)
    assert p.state.failures == 0 and p.state.enabled
    # the query is embedded inline
    assert p.embed_query("train").shape == (64,)
    assert routes(server)[-1] == "POST /v1/embeddings"


def test_failed_jobs_fall_back_inline_then_disable_batch(server: ProviderProcess) -> None:
    server.control(action="batch_mode", mode="fail")
    p = batching(server)
    first = p.embed_documents(TEXTS[:2])
    np.testing.assert_allclose(first, [hashed_vector(t, 64) for t in TEXTS[:2]], atol=1e-5)
    assert p.state.failures == 1 and p.state.enabled
    assert "injected batch failure" in (p.state.last_error or "")
    assert "POST /v1/embeddings" in routes(server)  # inline took this call over
    p.embed_documents(TEXTS[2:])
    assert p.state.failures == 2 and not p.state.enabled and p.state.last_provider == "openai"
    server.reset()
    p.embed_documents(["a third call"])
    assert routes(server) == ["POST /v1/embeddings"]  # batch is off: no upload at all
    assert BatchState.from_meta(p.state.to_meta(), True).enabled is False


def test_timed_out_job_is_retried_once_then_counts_two(server: ProviderProcess) -> None:
    server.control(action="batch_mode", mode="hang")
    p = batching(server)
    vectors = p.embed_documents(TEXTS)
    assert vectors.shape == (4, 64)
    assert routes(server).count("POST /v1/batches") == 2  # the retry
    assert p.state.failures == 2 and not p.state.enabled
    assert "timed out" in (p.state.last_error or "")


def test_success_resets_the_count(server: ProviderProcess) -> None:
    server.control(action="batch_mode", mode="fail")
    p = batching(server)
    p.embed_documents(TEXTS[:1])
    assert p.state.failures == 1
    server.control(action="batch_mode", mode="ok")
    p.embed_documents(TEXTS[1:2])
    assert p.state.failures == 0 and p.state.last_error is None


def test_voyage_batch_carries_model_and_input_type(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
    with ProviderProcess("voyage") as server:
        inner = VoyageEmbeddingProvider(server.base_url, "voyage-4-large")
        p = BatchingProvider(inner, FAST)
        vectors = p.embed_documents(TEXTS)
        np.testing.assert_allclose(vectors, [hashed_vector(t, 64) for t in TEXTS], atol=1e-5)
        log = server.log()
        assert [ln["body"] for ln in log[0]["body"]["lines"]] == [{"input": t} for t in TEXTS]
        assert log[1]["body"]["completion_window"] == "12h"
        assert log[1]["body"]["request_params"] == {"model": "voyage-4-large",
                                                    "input_type": "document"}
        assert "POST /v1/embeddings" not in routes(server)


# -- the acceptance through the CLI -------------------------------------------------------------


def _cli(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(ws, {"OPENAI_API_KEY": "test-key"}, *args)  # type: ignore[no-any-return]


def _status(ws: Path) -> dict[str, Any]:
    done = _cli(ws, "status", "--json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_cli_batch_then_inline_after_two_failures(server: ProviderProcess, tmp_path: Path) -> None:
    ws = two_note_workspace(tmp_path, f'[provider]\nprovider = "openai"\nbase_url = '
                            f'"{server.base_url}"\n[provider.batch]\nenabled = true\n'
                            "poll_interval_ms = 20\n")
    done = _cli(ws, "index")
    assert done.returncode == 0, done.stderr
    assert "batch job" in done.stderr  # progress while waiting
    seen = routes(server)
    assert "POST /v1/files" in seen and "POST /v1/batches" in seen
    assert "POST /v1/embeddings" not in seen  # no document went inline
    found = _cli(ws, "search", "train to Lyon", "--json")
    assert json.loads(found.stdout)["results"][0]["path"] == "memory/2026-11-02.md"
    st = _status(ws)["batch"]
    assert st == {"enabled": True, "failures": 0, "limit": 2, "wait": True, "concurrency": 2,
                  "pollIntervalMs": 20, "timeoutMs": 3_600_000, "lastError": None,
                  "lastProvider": None}

    server.control(action="batch_mode", mode="fail")
    for day in ("03", "04"):
        (ws / "memory" / f"2026-11-{day}.md").write_text(f"# Diary\n- Notes of day {day}.\n")
        done = _cli(ws, "index")
        assert done.returncode == 0, done.stderr
        assert "batch failed" in done.stderr
    st = _status(ws)["batch"]
    assert st["failures"] == 2 and st["enabled"] is False and st["lastProvider"] == "openai"
    assert "injected batch failure" in st["lastError"]
    server.reset()
    (ws / "memory" / "2026-11-05.md").write_text("# Diary\n- The fifth day.\n")
    assert _cli(ws, "index").returncode == 0
    assert "POST /v1/files" not in routes(server)  # inline has taken over
    assert "POST /v1/embeddings" in routes(server)
    found = _cli(ws, "search", "fifth day", "--json")
    assert json.loads(found.stdout)["results"][0]["path"] == "memory/2026-11-05.md"


def test_openclaw_remote_batch_maps_to_provider_batch(tmp_path: Path) -> None:
    from memory_core.base.config import load_config
    from memory_core.openclaw.config import memory_search_settings

    raw = {"agents": {"defaults": {"memorySearch": {
        "provider": "gemini", "remote": {"batch": {
            "enabled": True, "wait": False, "concurrency": 3, "pollIntervalMs": 500,
            "timeoutMinutes": 5, "bogus": 1}}}}}}
    mapped = memory_search_settings(raw, "main")
    assert mapped.overrides["provider"]["provider"] == "gemini"
    assert mapped.overrides["provider"]["batch"] == {
        "enabled": True, "wait": False, "concurrency": 3, "poll_interval_ms": 500,
        "timeout_minutes": 5.0}
    cfg = load_config(tmp_path, base=mapped.overrides)
    assert cfg.provider.batch == BatchConfig(True, False, 3, 500, 5.0)
    bad = memory_search_settings({"agents": {"defaults": {"memorySearch": {"remote": {
        "batch": {"enabled": "yes"}}}}}}, "main")
    assert "batch" not in bad.overrides.get("provider", {})
    assert any("remote.batch.enabled" in n for n in bad.notes)


def test_live_layer_sends_one_job_per_call(server: ProviderProcess) -> None:
    from memory_core.live.provider import SerializedProvider

    p = SerializedProvider(batching(server))
    texts = [f"note number {i}" for i in range(40)]  # more than the live layer's 16-text slice
    assert p.embed_documents(texts).shape == (40, 64)
    assert routes(server).count("POST /v1/batches") == 1


@pytest.fixture(scope="module")
def gemini_server() -> Iterator[ProviderProcess]:
    with ProviderProcess("gemini") as s:
        yield s


def gemini_batching(server: ProviderProcess, monkeypatch: pytest.MonkeyPatch
                    ) -> BatchingProvider:
    from memory_core.embeddings.gemini import GeminiEmbeddingProvider

    server.reset()
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    return BatchingProvider(GeminiEmbeddingProvider(server.base_url), FAST)


def test_gemini_batch_api(gemini_server: ProviderProcess,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    p = gemini_batching(gemini_server, monkeypatch)
    vectors = p.embed_documents(TEXTS)
    # Gemini's come back scaled: normalised as the inline ones are
    np.testing.assert_allclose(vectors, [hashed_vector(t, 64) for t in TEXTS], atol=1e-5)
    seen = routes(gemini_server)
    assert seen[0] == "POST /upload/v1beta/files"
    assert seen[1] == "POST /v1beta/models/gemini-embedding-001:asyncBatchEmbedContent"
    assert any(r.startswith("GET /v1beta/batches/") for r in seen)
    assert seen[-1].startswith("GET /download/v1beta/files/")
    assert not any(r.endswith(("batchEmbedContents", ":embedContent")) for r in seen)
    upload = gemini_server.log()[0]["body"]
    assert upload["uploadType"] == "multipart"
    assert upload["parts"] == ["application/json", "application/jsonl"]
    assert [ln["request"] for ln in upload["lines"]] == [
        {"content": {"parts": [{"text": t}]}, "taskType": "RETRIEVAL_DOCUMENT"} for t in TEXTS]
    assert p.state.failures == 0


def test_gemini_batch_failures_then_inline(gemini_server: ProviderProcess,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    p = gemini_batching(gemini_server, monkeypatch)
    gemini_server.control(action="batch_mode", mode="fail")
    assert p.embed_documents(TEXTS[:2]).shape == (2, 64)
    assert p.state.failures == 1 and "injected batch failure" in (p.state.last_error or "")
    assert any(r.endswith(":batchEmbedContents") for r in routes(gemini_server))  # inline
    gemini_server.control(action="batch_mode", mode="hang")
    assert p.embed_documents(TEXTS[2:]).shape == (2, 64)
    assert p.state.failures == 3 and not p.state.enabled  # a timeout retried once: 2 more
