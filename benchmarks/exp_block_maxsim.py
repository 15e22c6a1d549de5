"""Measure a vector leg that scores a chunk by its best block (max-sim), on LongMemEval-S dev.

Issue #36's ranked misses are questions whose answer is one user turn inside a 400-token chunk:
the chunk's one vector (the mean of its windows, ``embeddings/windows.py``) is diluted by the
turns around it, so the vector leg ranks the answer 4th or 9th, or finds nothing above MiniLM's
noise. Smaller chunks were measured before and lose at chunk level (docs/retrieval.md, "Chunk
budget"). This script measures the other way: keep the chunk the agent reads, score it in the
vector leg by the best cosine of its *blocks* (blank-line separated: a user turn in
LongMemEval's diaries, a paragraph in a note) — several vectors per chunk.

Nothing in the engine changes: the candidates are the cached evaluation candidates; the blocks
of each question's first ``--top`` vector hits are embedded here with the index's own provider
(kept in ``--vectors``, a pickle outside the project, so a second run embeds nothing), their
vector leg re-scored and re-ranked, and both of the evaluation's views scored under the shipped
settings (and any ``--floor``): the ranked list (gate off, 50) and the agent's (≤ 6 hits,
abstention on). Variants: ``pooled`` (today's), ``max`` (best block), ``maxof`` (the larger of
the two), ``mean`` (their mean). The calibration was fitted on pooled cosines: the agent's
abstention figures are indicative only.

    MEMORY_WORKBENCH_DATASETS=../shared/datasets \\
        .venv/bin/python benchmarks/exp_block_maxsim.py --n 100 --vectors /tmp/blocks.pickle
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import re
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_core.base.config import profile_settings
from memory_core.evaluation.datasets import load_query_set
from memory_core.evaluation.longmemeval import RANKED_OFF, lme_configs
from memory_core.evaluation.runner import (
    CollectedQuery,
    EvalConfig,
    collect,
    evaluate_rows,
    open_eval_index,
)
from memory_core.read.candidates import LegHit

VARIANTS: dict[str, Callable[[float, float], float]] = {
    "pooled": lambda p, m: p, "max": lambda p, m: m, "maxof": max,
    "mean": lambda p, m: (p + m) / 2}
MIN_BLOCK = 20  # characters: a block shorter than this (a blank "user:" line) is not scored


def blocks(text: str) -> list[str]:
    """The chunk's blank-line separated blocks, without its file heading."""
    parts = (b.strip() for b in re.split(r"\n\s*\n", text))
    return [b for b in parts if len(b) >= MIN_BLOCK and not b.startswith("# ")]


def _key(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def embed_blocks(col: list[CollectedQuery], provider: Any, top: int, store: Path
                 ) -> dict[str, np.ndarray]:
    """Every block of each question's first ``top`` vector hits, embedded once (kept in
    ``store`` as it goes: the embedding is the long part, about 10 blocks a second here)."""
    vecs: dict[str, np.ndarray] = pickle.loads(store.read_bytes()) if store.is_file() else {}
    todo: dict[str, str] = {}
    for cq in col:
        for c in cq.cands.values():
            for h in c.vector[:top]:
                for b in blocks(c.chunks[h.id].text):
                    if _key(b) not in vecs:
                        todo[_key(b)] = b
    items = list(todo.items())
    print(f"{len(items)} blocks to embed, {len(vecs)} kept", flush=True)
    t0 = time.perf_counter()
    for i in range(0, len(items), 512):
        part = items[i:i + 512]
        got = np.asarray(provider.embed_documents([b for _, b in part]), dtype=np.float32)
        vecs.update((k, v) for (k, _), v in zip(part, got, strict=True))
        store.write_bytes(pickle.dumps(vecs))
        print(f"  {i + len(part)} of {len(items)}, {time.perf_counter() - t0:.0f} s", flush=True)
    return vecs


def rescored(cq: CollectedQuery, qvec: np.ndarray, vecs: dict[str, np.ndarray], top: int,
             how: Callable[[float, float], float]) -> CollectedQuery:
    """``cq`` with each vector leg re-scored: its first ``top`` hits by ``how(pooled, best
    block)``, the rest as they were; then re-ranked."""
    out = {}
    for key, c in cq.cands.items():
        score = {h.id: h.score for h in c.vector}
        for h in c.vector[:top]:
            sims = [float(vecs[_key(b)] @ qvec) for b in blocks(c.chunks[h.id].text)]
            score[h.id] = how(h.score, max(sims, default=h.score))
        order = sorted(score, key=lambda i: -score[i])
        out[key] = replace(c, vector=tuple(LegHit(i, score[i], r + 1, score[i])
                                           for r, i in enumerate(order)))
    return replace(cq, cands=out)


def report(name: str, col: list[CollectedQuery], floor: float) -> None:
    base = replace(profile_settings("default", "local"), vector_floor=floor)
    ranked = evaluate_rows(col, EvalConfig("ranked", replace(base, **RANKED_OFF)))
    agent = evaluate_rows(col, EvalConfig("agent", base))
    ans = [(r, a) for r, a in zip(ranked, agent, strict=True) if not r["apart"]]
    apart = [a for r, a in zip(ranked, agent, strict=True) if r["apart"]]
    n = max(1, len(ans))

    def mean(rows: list[float]) -> float:
        return sum(rows) / max(1, len(rows))

    pref = [r["metrics"]["session"]["recall_any@5"] for r, _ in ans
            if r["category"].startswith("single-session-pref")]
    print(f"{name:6} floor {floor:.2f}: {len(ans)} answerable, ranked recall_any@5 "
          f"{sum(r['metrics']['session']['recall_any@5'] for r, _ in ans) / n:.3f} "
          f"recall_all@5 {sum(r['metrics']['session']['recall_all@5'] for r, _ in ans) / n:.3f}"
          f" (preference {mean(pref):.3f}); agent Success@5 "
          f"{sum(a['metrics']['chunk']['success@5'] for _, a in ans) / n:.3f}, abstention "
          f"empty {sum(a['metrics']['n_results'] == 0 for a in apart)} of {len(apart)}",
          flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100, help="the stratified subset's size (0: all)")
    ap.add_argument("--top", type=int, default=20, help="vector hits re-scored per question")
    ap.add_argument("--floor", type=float, action="append", help="vector floors to score under")
    ap.add_argument("--vectors", type=Path, required=True,
                    help="a pickle outside the project that keeps the block vectors")
    a = ap.parse_args()
    qs = load_query_set(f"longmemeval-s#{a.n}" if a.n else "longmemeval-s")
    col = collect(qs, lme_configs(), provider="local", cache=True)[0]
    idx = open_eval_index(qs, qs.queries[0].workspace, profile="default", provider="local")
    try:
        provider = idx.choice.provider
        if provider is None:
            raise SystemExit("the evaluation index has no embedding provider")
        vecs = embed_blocks(col, provider, a.top, a.vectors)
        qvecs = {cq.query.qid: np.asarray(provider.embed_query(cq.query.query), np.float32)
                 for cq in col}
    finally:
        idx.close()
    for name, how in VARIANTS.items():
        variant = [rescored(cq, qvecs[cq.query.qid], vecs, a.top, how) for cq in col]
        for floor in a.floor or [profile_settings("default", "local").vector_floor]:
            report(name, variant, floor)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
