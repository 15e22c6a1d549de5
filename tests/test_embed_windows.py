"""No silent truncation (issue 21 item 4): chunks longer than the model reads are embedded in
windows it can read and pooled, with the real local model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory_core import MemoryIndex
from memory_core.embeddings.local import LocalEmbeddingProvider
from memory_core.embeddings.windows import (
    POOLING,
    InputLimit,
    counter_of,
    embed_whole,
    estimated_counts,
    pooled_key,
    windows_of,
)
from memory_core.storage.store import Store
from memory_core.write.sync import index_identity

ROOT = Path(__file__).resolve().parent.parent

FILLER = ("We went over the quarterly roadmap, the hiring plan for the data team and the budget "
          "for the offsite in the mountains; nobody had strong opinions. ")
NEEDLE = "In the afternoon the build server overheated and its fan failed with a loud grinding."


@pytest.fixture(scope="module")
def local() -> LocalEmbeddingProvider:
    return LocalEmbeddingProvider()


def test_windows_fit_the_model_and_cut_at_words(local: LocalEmbeddingProvider) -> None:
    english = FILLER * 20 + NEEDLE
    chinese = "数据库连接池在周四的迁移中耗尽，回滚方案已经写好。" * 40
    limit = local.input_limit
    assert limit.tokens == 256
    for text in (english, chinese):
        assert local.token_counts([text])[0] > 2 * limit.tokens
        wins = windows_of([text], limit, counter_of(local))[0]
        assert len(wins) >= 3
        assert "".join(wins) == text  # nothing dropped, nothing repeated
        assert max(local.token_counts(wins)) <= limit.tokens
    wins = windows_of([english], limit, counter_of(local))[0]
    at = 0
    for w in wins[:-1]:
        at += len(w)
        assert english[at - 1] == " " and english[at] != " "  # cut between two words
    short = windows_of(["a short chunk"], limit, counter_of(local))[0]
    assert short == ["a short chunk"]


def test_the_end_of_a_long_chunk_counts(local: LocalEmbeddingProvider) -> None:
    text = FILLER * 12 + NEEDLE
    q = local.embed_query("when did the computer overheat?")
    whole = embed_whole(local, [text])[0]
    cut = local.embed_documents([text])[0]  # the model alone reads the first 256 pieces
    wins = windows_of([text], local.input_limit, counter_of(local))[0]
    mean = local.embed_documents(wins).mean(axis=0)
    assert np.allclose(whole, mean / np.linalg.norm(mean), atol=1e-5)
    assert abs(float(np.linalg.norm(whole)) - 1.0) < 1e-5
    assert float(whole @ q) > float(cut @ q) + 0.05


def test_counting_a_long_chunk_warns_nobody() -> None:
    """Once the model is loaded its tokenizer counts the pieces, and transformers warned on
    stderr that a long chunk "will result in indexing errors" (``replay`` showed it), though
    the chunk is then embedded in windows. A fresh process: the warning fires once per
    tokenizer, so an earlier test in this one would hide it."""
    code = ("from memory_core.embeddings.local import LocalEmbeddingProvider as P\n"
            "p = P(); p.embed_documents(['warm up'])\n"
            f"print(p.token_counts([{FILLER * 20!r}])[0])\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip().splitlines()[-1]) > 256  # it did count past the model's limit
    assert "Token indices sequence length" not in out.stderr
    assert "indexing errors" not in out.stderr


def test_estimated_counts_window_a_provider_without_a_tokenizer() -> None:
    text = "word " * 500
    assert estimated_counts([text])[0] == 627  # 2,500 characters / 4 + 2 special tokens
    wins = windows_of([text], InputLimit(100), estimated_counts)[0]
    assert "".join(wins) == text and max(estimated_counts(wins)) <= 100
    capped = windows_of(["x y " * 400], InputLimit(10_000, chars=500), estimated_counts)[0]
    assert max(len(w) for w in capped) <= 500


def test_pooled_vectors_are_cached_apart_and_only_by_the_default_profile(
        indexed_demo: Path, indexed_demo_reference: Path) -> None:
    with MemoryIndex.open(indexed_demo) as idx:
        key = idx.choice.key
        assert idx.status().identity is not None
        identity = index_identity(idx.config, indexed_demo, idx.choice)
        assert identity["embedWindows"] == POOLING
        chunk = max(idx.chunks(), key=lambda c: len(c.text))
        store = Store(idx.store_path, readonly=True)
        try:
            # the pooled vector is cached under its own key; under the provider's key (where a
            # truncated vector of the same text lives) this index wrote nothing
            assert chunk.hash in store.cache_get("local", idx.choice.model, pooled_key(key),
                                                 [chunk.hash])
            assert not store.cache_get("local", idx.choice.model, key, [chunk.hash])
        finally:
            store.close()
    with MemoryIndex.open(indexed_demo_reference, profile="reference") as ref:
        assert "embedWindows" not in index_identity(ref.config, indexed_demo_reference,
                                                    ref.choice)
        t = ref.status(deep=True).truncation
        assert t is not None and t.truncated > 0 and t.windowed == 0  # OpenClaw's model cuts


def test_status_deep_reports_no_truncation(indexed_demo: Path) -> None:
    with MemoryIndex.open(indexed_demo) as idx:
        t = idx.status(deep=True).truncation
        assert t is not None and t.available
        assert t.chunks > 0 and t.truncated == 0 and t.share == 0.0
        assert t.windowed > 0.5 * t.chunks  # most demo chunks are longer than 256 pieces
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "memory_core", "status", "--deep", "--json",
                          "--workspace", str(indexed_demo)], capture_output=True, text=True,
                         env=env, timeout=600, check=True).stdout
    tr = json.loads(out)["truncation"]
    assert tr["truncated"] == 0 and tr["share"] == 0.0 and tr["windowed"] > 0
