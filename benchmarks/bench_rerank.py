"""How long a slider change on Search & tune takes: re-fusing 1,000 cached candidates per leg.

The page fetches both legs once per query and keeps the :class:`memory_core.Candidates`; moving a
slider only calls :func:`memory_core.fuse` again with new settings (no embedding, no SQL). This
benchmark builds such candidates (synthetic by default: 1,000 hits per leg over 1,500 chunks of
realistic length, so that the legs overlap; or fetched from a real index with the pool raised),
then times one fusion per simulated slider step (minScore and the weights move), for each fusion
mode and with MMR or temporal decay on, with the default pool (maxResults 6 × multiplier 4 = 24
per leg) and the largest one (200 per leg). A scenario stops after 20 s (at least 3 steps).

It prints the median and p95 per scenario and their ratio to the issue's 50 ms target. It also
times the page's own work on the result (the results table) for information. Usage::

    .venv/bin/python benchmarks/bench_rerank.py [--n 1000] [--steps 300]
    .venv/bin/python benchmarks/bench_rerank.py --workspace DIR --query "..."   # a real index
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memory_core import Candidates, ChunkInfo, LegHit, SearchSettings, fuse  # noqa: E402
from memory_core.base.config import profile_settings  # noqa: E402

TARGET_MS = 50.0
DAY_MS = 86_400_000
_WORDS = ("crawler cookie backup postgres pgbouncer router vlan wireguard report nightly csv "
          "schedule deadlock retry proxy vault grafana staging invoice budget alert oncall "
          "rotation migration index vacuum replica latency timeout session token login portal "
          "retailer price queue worker concurrency throttle captcha timezone 连接池 日志 熔断 "
          "验证码 报表 时区").split()


def synthetic_candidates(n: int = 1000, seed: int = 7) -> Candidates:
    """``n`` hits per leg over ``1.5 n`` chunks; half of each leg is in the other."""
    rng = random.Random(seed)
    total = n + n // 2
    chunks: dict[str, ChunkInfo] = {}
    now = 1_796_000_000_000
    for i in range(total):
        day = 1 + i % 28
        path = f"memory/2026-11-{day:02d}.md" if i % 3 else f"notes/topic-{i % 17}.md"
        text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(120, 320)))
        chunks[f"c{i:05d}"] = ChunkInfo(f"c{i:05d}", path, "memory", 1 + i, 20 + i, text,
                                        now - (i % 60) * DAY_MS)
    ids = list(chunks)
    vec_ids = ids[:n]
    kw_ids = ids[total - n:]  # the last n: overlaps the vector leg by n/2
    rng.shuffle(vec_ids)
    rng.shuffle(kw_ids)
    cos = sorted((rng.uniform(0.05, 0.85) for _ in vec_ids), reverse=True)
    vector = tuple(LegHit(cid, c, r + 1, c) for r, (cid, c) in enumerate(zip(vec_ids, cos,
                                                                              strict=True)))
    bm25 = sorted(-rng.uniform(0.5, 25.0) for _ in kw_ids)
    keyword = tuple(LegHit(cid, (-b) / (1 - b), r + 1, b)
                    for r, (cid, b) in enumerate(zip(kw_ids, bm25, strict=True)))
    return Candidates("synthetic benchmark query", "hybrid", vector, keyword, chunks, n)


def real_candidates(workspace: str, query: str, n: int) -> Candidates:
    """Both legs of ``query`` from a real index, each with a pool of ``n``."""
    from memory_core import MemoryIndex
    from memory_core.read.search import fetch_candidates

    idx = MemoryIndex.open(workspace)
    idx.ensure_synced()
    s = replace(idx.settings(), keyword_query="or")
    return fetch_candidates(idx.store, idx.choice.provider, query, s, pool=n)


def slider_steps(base: SearchSettings) -> Iterator[SearchSettings]:
    """Settings as a user drags sliders: minScore and the weights move, step by step."""
    min_scores = [round(0.05 * i, 2) for i in range(12)]
    weights = [round(0.1 * i, 1) for i in range(11)]
    for ms, w in zip(itertools.cycle(min_scores), itertools.cycle(weights), strict=False):
        yield replace(base, min_score=ms, vector_weight=w, text_weight=round(1 - w, 1))


def time_steps(fn: Callable[[SearchSettings], object], base: SearchSettings, steps: int,
               budget_s: float = 20.0) -> list[float]:
    """Milliseconds of ``fn(settings)`` per slider step: ``steps`` of them after 3 warm-up
    calls, or fewer (at least 3) when they take longer than ``budget_s`` in all."""
    gen = slider_steps(base)
    for _ in range(3):
        fn(next(gen))
    out: list[float] = []
    start = time.perf_counter()
    while len(out) < steps and (len(out) < 3 or time.perf_counter() - start < budget_s):
        s = next(gen)
        t0 = time.perf_counter()
        fn(s)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def p95(xs: list[float]) -> float:
    ys = sorted(xs)
    return ys[min(len(ys) - 1, int(0.95 * len(ys)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="candidates per leg (default 1000)")
    ap.add_argument("--steps", type=int, default=300, help="slider steps per scenario")
    ap.add_argument("--workspace", help="fetch the candidates from this workspace's index")
    ap.add_argument("--query", default="who is on call right now?")
    ap.add_argument("--strict", action="store_true", help="exit 1 if a p95 misses the target")
    args = ap.parse_args(argv)

    if args.workspace:
        cands = real_candidates(args.workspace, args.query, args.n)
        origin = f"index {args.workspace}, query {args.query!r}"
    else:
        cands = synthetic_candidates(args.n)
        origin = "synthetic"
    print(f"Re-fusing cached candidates per slider change ({origin}): "
          f"{len(cands.vector)} vector + {len(cands.keyword)} keyword hits over "
          f"{len(cands.chunks)} chunks; {args.steps} steps per scenario; target {TARGET_MS:.0f} ms")
    print("(fusion considers each leg's top maxResults × candidateMultiplier, at most 200, as "
          "the reference does: 24 per leg with the default sliders, 200 at most)\n")

    default = profile_settings("default")
    reference = profile_settings("reference")
    now = 1_796_000_000_000
    main = f"default ({default.fusion})"
    modes: list[tuple[str, SearchSettings]] = [
        ("reference (weighted sum)", reference),
        (main, default),
        *[(f"default, fusion={f}", replace(default, fusion=f))
          for f in ("reference", "rrf", "normalized") if f != default.fusion],
        ("default + temporal decay", replace(default, decay_enabled=True, now_ms=now)),
        ("default + MMR", replace(default, mmr_enabled=True)),
    ]
    pools = [("6×4", 6, 4), ("50×20", 50, 20)]  # maxResults × multiplier: 24 and 200 per leg
    head = (f"{'scenario':<26} {'pool/leg':>8} {'steps':>6} {'median ms':>10} {'p95 ms':>9} "
            f"{'p95/target':>11}  verdict")
    print(head)
    print("-" * len(head))
    worst: dict[str, float] = {}
    for (pool_name, mr, cm), (name, base) in itertools.product(pools, modes):
        b = replace(base, max_results=mr, candidate_multiplier=cm)
        ms = time_steps(lambda s: fuse(cands, s), b, args.steps)
        med, hi = statistics.median(ms), p95(ms)
        worst[f"{name}, {pool_name}"] = hi
        verdict = "ok" if hi < TARGET_MS else "SLOW"
        print(f"{name:<26} {b.candidate_count():>8} {len(ms):>6} {med:>10.2f} {hi:>9.2f} "
              f"{hi / TARGET_MS:>10.2f}×  {verdict}")

    try:
        from workbench.tuning import hits_frame
    except ImportError:  # pragma: no cover - run from elsewhere
        hits_frame = None  # type: ignore[assignment]
    if hits_frame is not None:
        ms = time_steps(lambda s: hits_frame(fuse(cands, s), cut_limit=10), default,
                        args.steps)
        print(f"{'default + results table':<26} {default.candidate_count():>8} {len(ms):>6} "
              f"{statistics.median(ms):>10.2f} {p95(ms):>9.2f} {p95(ms) / TARGET_MS:>10.2f}×  "
              "(fusion plus the page's table, for information)")
    slow = {k: v for k, v in worst.items() if v >= TARGET_MS}
    key = f"{main}, 6×4"
    print(f"\nDefault sliders ({main}, 6×4): p95 {worst[key]:.2f} ms = "
          f"{worst[key] / TARGET_MS:.2f}× the {TARGET_MS:.0f} ms target.")
    print("Over target: " + (", ".join(f"{k} ({v:.0f} ms)" for k, v in slow.items())
                             if slow else "none."))
    return 1 if args.strict and slow else 0


if __name__ == "__main__":
    raise SystemExit(main())
