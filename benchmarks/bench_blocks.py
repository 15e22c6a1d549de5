"""What block vectors cost (issue #36): a fresh index of the demo home with the local model, its
chunks' blocks embedded or not, and a warm query with the best-block score on or off.

``chunking.block_vectors`` makes a sync embed each chunk's blocks (blank-line separated
paragraphs and turns, ``write/chunking.chunk_blocks``) beside the chunk itself; the default
profile's ``block_rescore`` then reads the first hits' block vectors at query time
(``read/search.best_block``: one SQL read of a few blobs). The two builds run in turn (A B A B
…, each in a fresh copy with an empty embedding cache, the model loaded once), then the demo
home's labelled queries are searched one by one on the built index under both settings, in
turn. Figures are medians; ratios are taken pair by pair (the machine is shared).

    .venv/bin/python benchmarks/bench_blocks.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_core import MemoryIndex

ROOT = Path(__file__).resolve().parent.parent
HOME = ROOT / "examples" / "demo-home" / "workspace"
QUERIES = ROOT / "examples" / "demo-home-queries.jsonl"


def build(blocks: bool, where: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds of a fresh index of a copy of the demo home, and its block count."""
    ws = where / f"home-{blocks}-{time.monotonic_ns()}"
    shutil.copytree(HOME, ws, ignore=shutil.ignore_patterns(".memory"))
    t0, c0 = time.perf_counter(), time.process_time()
    with MemoryIndex.open(ws, overrides={"chunking": {"block_vectors": blocks}}) as idx:
        idx.sync()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        n = idx.store.block_count()
    shutil.rmtree(ws)
    return wall, cpu, n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        build(False, where)  # loads the model: not timed
        on, off = [], []
        for _ in range(a.rounds):
            on.append(build(True, where))
            off.append(build(False, where))
        ratio = statistics.median(x[1] / y[1] for x, y in zip(on, off, strict=True))
        print(f"index, blocks on:  {statistics.median(x[0] for x in on):.1f} s wall, "
              f"{statistics.median(x[1] for x in on):.1f} s CPU, {on[0][2]:,} block vectors")
        print(f"index, blocks off: {statistics.median(x[0] for x in off):.1f} s wall, "
              f"{statistics.median(x[1] for x in off):.1f} s CPU; CPU ratio on/off "
              f"{ratio:.2f} (pair by pair)")
        ws = where / "home"
        shutil.copytree(HOME, ws, ignore=shutil.ignore_patterns(".memory"))
        queries = [json.loads(line)["query"] for line in QUERIES.read_text().splitlines()
                   if line.strip()]
        with MemoryIndex.open(ws) as idx:
            idx.sync()
            s = idx.settings()
            times: dict[int, list[float]] = {0: [], s.block_rescore: []}
            for q in queries * 3:
                for top in times:
                    t0 = time.perf_counter()
                    idx.search(q, block_rescore=top)
                    times[top].append((time.perf_counter() - t0) * 1000)
        med = {t: statistics.median(v) for t, v in times.items()}
        print(f"warm query, {len(queries)} queries × 3: block_rescore {s.block_rescore} "
              f"{med[s.block_rescore]:.1f} ms, 0 {med[0]:.1f} ms (median), ratio "
              f"{med[s.block_rescore] / med[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
