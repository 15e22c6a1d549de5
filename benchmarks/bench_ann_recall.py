"""ANN recall on real embeddings (issue #26 item 3): the engine's HNSW graph against exact search.

The approximate index is the one ``memory_core.vectors`` builds into the vector sidecar
(``usearch`` HNSW, :data:`~memory_core.vectors.ANN_CONNECTIVITY` /
:data:`~memory_core.vectors.ANN_EXPANSION_ADD` / :data:`~memory_core.vectors.ANN_EXPANSION_SEARCH`),
written and searched through the engine's own ``vectors.write`` / ``VectorMatrix.search``
(``MEMORY_CORE_ANN_MIN_ROWS=1`` for the run). Recall@24 = the share of the exact top 24 (same
sidecar, ``exact=True``) that the approximate search returns, averaged over real queries.

Vectors are real: the dev sets' documents and queries (``../shared/datasets``: SciFact's 5,183
abstracts, XQuAD en + zh paragraphs, LoCoMo's dialogue turns; never the holdout) embedded by the
engine's local model (MiniLM-L6; ``--models local,e5`` adds multilingual-e5-small, ~5× slower to
embed). They are cached under ``<cache root>/bench-ann`` (derived data: outside the project).
For comparison, the same texts with the scale benchmark's hashed bag-of-words vectors.

    .venv/bin/python benchmarks/bench_ann_recall.py                 # MiniLM (+ hashed)
    .venv/bin/python benchmarks/bench_ann_recall.py --models local,e5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ["MEMORY_CORE_ANN_MIN_ROWS"] = "1"  # before the engine reads it

from scale_support import hash_embed  # noqa: E402

from memory_core import vectors  # noqa: E402
from memory_core.common.locations import cache_root  # noqa: E402

DATA = ROOT.parent / "shared" / "datasets"
K = 24


def _jsonl(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def texts(scifact: int | None = None) -> tuple[list[str], list[str]]:
    """The dev sets' documents and queries (``(docs, queries)``); ``scifact``: only the first
    that many SciFact abstracts (the local model embeds ~10 a CPU second here)."""
    docs: list[str] = []
    queries: list[str] = []
    for rec in _jsonl(DATA / "scifact" / "corpus.jsonl")[:scifact]:
        docs.append(f"{rec.get('title', '')}\n{rec['text']}".strip())
    queries += [str(r["text"]) for r in _jsonl(DATA / "scifact" / "queries.jsonl")]
    for lang in ("en", "zh"):
        base = DATA / "xquad" / f"beir-{lang}"
        docs += [str(r["text"]) for r in _jsonl(base / "corpus.jsonl")]
        queries += [str(r["text"]) for r in _jsonl(base / "queries.jsonl")]
    for md in sorted((DATA / "locomo-dev" / "markdown").glob("*/memory/*.md")):
        docs += [line for line in md.read_text(encoding="utf-8").splitlines()
                 if line.startswith("[")]
    queries += [str(r["query"]) for r in _jsonl(DATA / "locomo-dev" / "queries-markdown.jsonl")]
    return docs, queries


def embedded(model: str, docs: list[str], queries: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(doc vectors, query vectors)`` of ``model`` (``local``, ``e5`` or ``hash``), cached."""
    if model == "hash":
        return hash_embed(docs), hash_embed(queries)
    cache = cache_root() / "bench-ann" / model
    cache.mkdir(parents=True, exist_ok=True)
    dp, qp = cache / f"docs-{len(docs)}.npy", cache / f"queries-{len(queries)}.npy"
    if not dp.is_file() or not qp.is_file():
        if model == "local":
            from memory_core.embeddings.local import LocalEmbeddingProvider

            prov: object = LocalEmbeddingProvider()
        else:
            from memory_core.embeddings.e5 import E5EmbeddingProvider

            prov = E5EmbeddingProvider()
        t = time.perf_counter()
        d = np.asarray(prov.embed_documents(docs), dtype=np.float32)  # type: ignore[attr-defined]
        q = np.vstack([prov.embed_query(x) for x in queries]).astype(np.float32)  # type: ignore[attr-defined]
        print(f"  embedded {len(docs)} docs + {len(queries)} queries with {model} in "
              f"{time.perf_counter() - t:.0f} s", flush=True)
        np.save(dp, d)
        np.save(qp, q)
    return np.load(dp), np.load(qp)


def recall(model: str, mat: np.ndarray, qv: np.ndarray, efs: list[int]) -> None:
    """Build the engine's sidecar + HNSW graph over ``mat``; recall@24 and times per ``ef``."""
    n = mat.shape[0]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "i.sqlite"
        t = time.perf_counter()
        vm = vectors.write(db, "bench", np.arange(1, n + 1), [f"c{i}" for i in range(n)],
                           ["memory"] * n, mat)
        build_s = time.perf_counter() - t
        assert vm is not None and vm.ann is not None, "usearch missing: pip install '.[ann]'"
        exact = [{i for i, _ in vm.search(q, K, exact=True)} for q in qv]
        t = time.perf_counter()
        for q in qv[:200]:
            vm.search(q, K, exact=True)
        exact_ms = (time.perf_counter() - t) * 1000 / min(200, len(qv))
        print(f"{model:<6} N={n:>6} d={mat.shape[1]} graph built in {build_s:.1f} s; "
              f"exact search {exact_ms:.2f} ms/query")
        for ef in efs:
            vm.ann.expansion_search = ef
            got, ts = [], []
            for q, ex in zip(qv, exact, strict=True):
                t = time.perf_counter()
                a = {i for i, _ in vm.search(q, K)}
                ts.append((time.perf_counter() - t) * 1000)
                got.append(len(a & ex) / len(ex) if ex else 1.0)
            arr = np.asarray(got)
            print(f"  ef {ef:>5}: recall@{K} mean {arr.mean():.4f}, p10 {np.quantile(arr, 0.1):.3f}"
                  f", queries at 1.0 {float((arr == 1.0).mean()):.3f}; "
                  f"{statistics.median(ts):.2f} ms/query (median)", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="local", help="local, e5 (hashed vectors always)")
    ap.add_argument("--scifact", type=int, default=None,
                    help="only the first N SciFact abstracts (default: all 5,183)")
    ap.add_argument("--ef", default=f"64,128,{vectors.ANN_EXPANSION_SEARCH},1024")
    args = ap.parse_args(argv)
    if not DATA.is_dir():
        print(f"no dev sets at {DATA}: nothing to measure")
        return 0
    docs, queries = texts(args.scifact)
    print(f"{len(docs)} documents, {len(queries)} queries (SciFact, XQuAD en/zh, LoCoMo dev)")
    efs = [int(x) for x in args.ef.split(",")]
    for model in [*args.models.split(","), "hash"]:
        d, q = embedded(model, docs, queries)
        recall(model, d, q, efs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
