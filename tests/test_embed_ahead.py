"""A sync embeds one group ahead of its writes (``memory_core.embeddings.ahead``): every chunk
gets its own text's vector, a provider that fails in a later group fails the sync as the serial
path would (nothing half-built swapped in, no thread left running), and a stream closed early
stops embedding.

A real OpenAI-compatible server on 127.0.0.1 answers with deterministic hashed vectors (one per
text, whatever the batch), so each stored vector can be checked against its text alone.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from memory_core import MemoryIndex
from memory_core.embeddings import EmbeddingError, ProviderChoice
from memory_core.embeddings.ahead import AheadExecutor
from memory_core.embeddings.openai import OpenAIEmbeddingProvider
from memory_core.write.sync import Indexer
from tests.test_eval_ray import _embed, _Handler, serve

WORDS = ("pool router backup firmware deadline peanut jazz glacier vlan switch dimmer hiring "
         "lunch photos gym swimming rack spare access point rollback allergy bake sale").split()


class _Counting(_Handler):
    """The hashed-vector server; counts requests, and fails every one past ``fail_after``."""

    requests: ClassVar[int] = 0
    fail_after: ClassVar[int | None] = None
    lock: ClassVar[threading.Lock] = threading.Lock()

    def do_POST(self) -> None:
        cls = type(self)
        with cls.lock:
            cls.requests += 1
            failing = cls.fail_after is not None and cls.requests > cls.fail_after
        if failing:
            body = json.dumps({"error": {"message": "quota exceeded"}}).encode()
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_POST()


@pytest.fixture()
def url() -> Iterator[str]:
    _Counting.requests, _Counting.fail_after = 0, None
    with serve(_Counting) as u:
        yield u
    _Counting.fail_after = None


def _workspace(root: Path, url: str) -> Path:
    rng = np.random.default_rng(9)
    (root / "memory").mkdir(parents=True)
    for d in range(80):
        paras = [" ".join(rng.choice(WORDS, size=50)) for _ in range(12)]
        (root / "memory" / f"2026-03-{d + 1:03d}.md").write_text(
            f"# Day {d + 1}\n\n" + "\n\n".join(paras) + "\n", encoding="utf-8")
    (root / "memory-workbench.toml").write_text(
        f'[provider]\nprovider = "openai"\nbase_url = "{url}"\nmodel = "hash-64"\n'
        'fallback = []\nbatch_items = 16\n\n[chunking]\ntokens = 120\noverlap = 20\n',
        encoding="utf-8")
    return root


def _ahead_alive() -> bool:
    return any(t.name == "memory-core-embed-ahead" for t in threading.enumerate())


def test_every_chunk_gets_its_own_texts_vector(tmp_path: Path, url: str) -> None:
    ws = _workspace(tmp_path / "ws", url)
    seen: list[tuple[str, int, int]] = []
    with MemoryIndex.open(ws) as idx:
        rep = idx.sync(progress=lambda s, d, t: seen.append((s, d, t)))
        rows = idx.store.db.execute("SELECT text, embedding FROM chunks").fetchall()
    assert rep.embedded > 3 * 256  # several groups: embedded ahead of the writes
    assert len(rows) == rep.chunks_written
    for text, blob in rows:
        want = np.asarray(_embed(text), np.float32)
        got = np.frombuffer(blob, np.float32)
        assert np.allclose(got, want / np.linalg.norm(want), atol=1e-6), text[:40]
    embeds = [(d, t) for s, d, t in seen if s == "embed"]
    assert embeds[0] == (0, rep.embedded) and embeds[-1] == (rep.embedded, rep.embedded)
    assert not _ahead_alive()


def test_a_failure_in_a_later_group_fails_the_sync_and_keeps_the_old_index(
        tmp_path: Path, url: str) -> None:
    ws = _workspace(tmp_path / "ws", url)
    with MemoryIndex.open(ws, overrides={"store": {"cache_enabled": False}}) as idx:
        first = idx.sync()
        config, choice, path = idx.config, idx.choice, idx.store_path
    start = _Counting.requests
    _Counting.fail_after = start + 20  # a later group of the rebuild fails (16 texts each)
    # the Indexer itself (MemoryIndex would fall back to keyword-only and rebuild again)
    with pytest.raises(EmbeddingError, match="quota exceeded"):
        Indexer(ws, config, choice).sync(path, force=True)
    assert not _ahead_alive()
    assert _Counting.requests - start >= 21  # past the first group (256 texts): it was written
    _Counting.fail_after = None
    with MemoryIndex.open(ws) as idx:  # the old index, whole; the temp file is gone
        assert idx.store.chunk_count() == first.chunks_written
        assert idx.status().files == first.files_indexed
    assert not list(path.parent.glob("*.tmp-*"))


def test_a_stream_closed_early_stops_embedding(url: str) -> None:
    provider = OpenAIEmbeddingProvider(url, "hash-64", max_batch_items=4, concurrency=1)
    groups = [[f"text {g} {i} {w}" for i, w in enumerate(WORDS)] for g in range(20)]
    stream = AheadExecutor().start(ProviderChoice(provider, "openai"), groups, False,
                                   lambda d, t: None)
    first = stream.take(groups[0])
    assert first.shape == (len(WORDS), 64)
    stream.close()
    assert not _ahead_alive()
    per_group = -(-len(WORDS) // 4)
    assert _Counting.requests <= per_group * 5  # at most the groups taken, queued, in flight
    with pytest.raises(EmbeddingError, match="out of plan"):
        AheadExecutor().start(ProviderChoice(provider, "openai"), groups, False,
                              lambda d, t: None).take(["not planned"])
