"""Indexing throughput: chunks embedded per second by the pipeline vs the model's bare encode.

The pipeline adds listing, reading, chunking, hashing, the cache lookup, SQLite writes (chunks,
FTS5 twice, sqlite-vec) on top of the model. This prints both rates on the same texts and their
ratio, so the pipeline's overhead is a number, not a feeling.

    .venv/bin/python benchmarks/bench_embed.py [--copies N]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from memory_core import MemoryIndex
from memory_core.embeddings.local import LocalEmbeddingProvider

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo-workspace"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--copies", type=int, default=4, help="demo diaries copied N times")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        shutil.copytree(DEMO, ws, ignore=shutil.ignore_patterns(".memory"))
        for i in range(1, args.copies):
            for f in sorted((DEMO / "memory").glob("*.md")):
                # distinct text per copy, so the cache cannot help
                lines = f.read_text(encoding="utf-8").split("\n")
                (ws / "memory" / f"copy{i}-{f.name}").write_text(
                    "\n".join(f"{ln} [c{i}]" for ln in lines), encoding="utf-8")
        provider = LocalEmbeddingProvider()
        provider.embed_documents(["warm up"])
        with MemoryIndex.open(ws) as idx:
            t0 = time.perf_counter()
            report = idx.sync()
            pipeline_s = time.perf_counter() - t0
            # the pipeline embeds each distinct text once; the bare run gets the same texts
            texts = list(dict.fromkeys(c.text for c in idx.chunks()))
        t1 = time.perf_counter()
        provider.embed_documents(texts)
        bare_s = time.perf_counter() - t1
        with MemoryIndex.open(ws) as idx:
            t2 = time.perf_counter()
            again = idx.sync(force=True)
            cached_s = time.perf_counter() - t2
    n = report.embedded
    print(f"distinct chunk texts: {len(texts)}; embedded by the sync: {n}")
    print(f"bare model encode:  {len(texts) / bare_s:8.1f} chunks/s ({bare_s:.2f} s)")
    print(f"pipeline (sync):    {n / pipeline_s:8.1f} chunks/s ({pipeline_s:.2f} s)")
    print(f"overhead ratio:     {pipeline_s / bare_s:8.2f}x the bare encode time")
    print(f"full rebuild, all cache hits ({again.cache_hits}): {cached_s:.2f} s "
          f"({len(texts) / cached_s:.0f} chunks/s)")


if __name__ == "__main__":
    main()
