"""The protocol's metrics: one ranked list against its evidence, and their averages.

Duplicates are collapsed; a chunk earns gain only if it covers an evidence line (or relevant
file) that no earlier chunk covered; Recall@k, Success@k (k = 1, 3, 5, 10), MRR@10 and nDCG@10
whose ideal ordering is over the relevant chunks *of this index*; the same at file level (chunks
collapsed to files, each at its best rank), which compares chunkers fairly.

Pure functions, except :func:`ideal_counts`, which reads an index's chunks of the relevant files.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from ..index import MemoryIndex
from .datasets import Evidence

KS: tuple[int, ...] = (1, 3, 5, 10)
#: Rank depth of every metric (MRR@10, nDCG@10) and of a leg evaluated alone.
DEPTH = 10


def covers(path: str, start: int, end: int, ev: Evidence) -> bool:
    """Whether lines ``start..end`` of ``path`` hold the evidence ``ev`` (a line or the file)."""
    return path == ev.path and (ev.line is None or start <= ev.line <= end)


def max_new_unit_sequence(unit_sets: Sequence[frozenset[int]], depth: int) -> int:
    """The longest run of chunks in which each covers a unit no earlier one covered (≤ depth).

    This is how many gains the ideal ranking can earn under the "first chunk covering a new line"
    rule. Exact (memoised search over covered sets) when the units are few; greedy (fewest new
    units first) beyond 16 units, where the exact search could blow up.
    """
    sets = sorted({s for s in unit_sets if s}, key=len)
    if not sets:
        return 0
    universe = frozenset().union(*sets)
    limit = min(depth, len(universe), len(sets))
    if len(universe) > 16:
        covered: frozenset[int] = frozenset()
        n = 0
        while n < limit:
            fresh = [s for s in sets if not s <= covered]
            if not fresh:
                break
            pick = min(fresh, key=lambda s: len(s - covered))
            covered |= pick
            n += 1
        return n

    @cache
    def best(covered: frozenset[int]) -> int:
        bound = min(limit, len(universe - covered))
        res = 0
        for s in sets:
            if not s <= covered:
                res = max(res, 1 + best(covered | s))
                if res >= bound:
                    break
        return res

    return min(limit, best(frozenset()))


def _dcg(gains: Sequence[int]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains[:DEPTH]))


def _idcg(n: int) -> float:
    return sum(1 / math.log2(i + 2) for i in range(min(n, DEPTH)))


def score_ranking(ranked: Sequence[tuple[str, int, int]], relevant: Sequence[Evidence],
                  ideal_chunks: int | None = None, ideal_files: int | None = None,
                  corpus: tuple[int, int] | None = None) -> dict[str, Any]:
    """The protocol's metrics for one ranked list of ``(path, start_line, end_line)``.

    Duplicates (same path and lines) are collapsed first. A chunk gains 1 when it covers an
    evidence unit no earlier chunk covered. ``ideal_chunks`` / ``ideal_files`` are how many gains
    the best ranking of this index could earn (see :func:`ideal_counts`); without them the ideal
    assumes every unit can be found by its own chunk. Returns ``{"chunk": {...}, "file": {...},
    "n_results": int}`` with ``recall@k``, ``success@k``, ``mrr@10``, ``ndcg@10`` and
    ``first_rank`` (``None`` when no relevant chunk is in the list). With ``corpus``
    (the index's chunk count and how many cover evidence) also ``"session"``: LongMemEval's
    metrics (:func:`session_metrics`).
    """
    unique = list(dict.fromkeys(ranked))
    units = list(dict.fromkeys(relevant))
    covered: set[int] = set()
    gains: list[int] = []
    hit_flags: list[bool] = []
    covered_at: list[int] = []
    for path, start, end in unique:
        cov = {i for i, ev in enumerate(units) if covers(path, start, end, ev)}
        hit_flags.append(bool(cov))
        gains.append(1 if cov - covered else 0)
        covered |= cov
        covered_at.append(len(covered))
    rel_files = list(dict.fromkeys(ev.path for ev in units))
    files: list[str] = list(dict.fromkeys(p for p, _, _ in unique))
    file_gains = [1 if f in rel_files else 0 for f in files]
    chunk = _level_metrics(hit_flags, gains, covered_at, len(units),
                           ideal_chunks if ideal_chunks is not None else len(units))
    found_files = list(itertools.accumulate(file_gains))
    file = _level_metrics([bool(g) for g in file_gains], file_gains, found_files, len(rel_files),
                          ideal_files if ideal_files is not None else len(rel_files))
    file.update(peer_metrics(files, rel_files))
    out: dict[str, Any] = {"chunk": chunk, "file": file, "n_results": len(unique)}
    if corpus is not None:
        out["session"] = session_metrics(unique, units, *corpus)
    return out


def peer_metrics(files: Sequence[str], relevant: Sequence[str]) -> dict[str, float]:
    """``recall_any@k`` and ``recall_all@k`` over a ranked list of distinct files (sessions).

    As the LongMemEval paper's code defines them (``evaluate_retrieval`` in
    ``src/retrieval/eval_utils.py`` of xiaowu0162/LongMemEval; its ``turn2session`` variant
    widens the cut until k distinct sessions are in it, which is what ranking files does):
    ``recall_any@k`` is 1 when any relevant file is among the first k, ``recall_all@k`` when all
    are. MemPalace's and agentmemory's LongMemEval "R@5" is ``recall_any@5`` at session level.
    """
    rel = set(relevant)
    out: dict[str, float] = {}
    for k in KS:
        top = set(files[:k])
        out[f"recall_any@{k}"] = 1.0 if rel & top else 0.0
        out[f"recall_all@{k}"] = 1.0 if rel and rel <= top else 0.0
    return out


#: LongMemEval's cut-offs (``src/retrieval/run_retrieval.py``).
SESSION_KS: tuple[int, ...] = (1, 3, 5, 10, 30, 50)
SESSION_KEYS: tuple[str, ...] = tuple(f"{m}@{k}" for m in ("recall_any", "recall_all",
                                                           "ndcg_any") for k in SESSION_KS)


def chunk_sessions(ranked: Sequence[tuple[str, int, int]], relevant: Sequence[Evidence]
                   ) -> list[tuple[str, bool]]:
    """Each ranked chunk as LongMemEval's turn-to-session mapping sees it: ``(session, gold)``.

    The benchmark names a turn of an answer session that does not hold the answer
    ``…noans…``: it is another "session", neither gold nor the gold one's. So a chunk is
    ``(path, True)`` when it covers an evidence line, ``(path + "#noans", False)`` when its file
    holds evidence elsewhere, and ``(path, False)`` otherwise.
    """
    gold_files = {ev.path for ev in relevant}
    out = []
    for path, start, end in ranked:
        if any(covers(path, start, end, ev) for ev in relevant):
            out.append((path, True))
        else:
            out.append((path + "#noans" if path in gold_files else path, False))
    return out


def _lme_dcg(rels: Sequence[int], k: int) -> float:
    """``dcg`` of ``eval_utils.py``: the first gain undiscounted, the i-th (0-based, i ≥ 1)
    divided by log2(i + 1) (so ranks 1 and 2 weigh the same)."""
    r = rels[:k]
    return float(r[0] + sum(g / math.log2(i + 1) for i, g in enumerate(r) if i)) if r else 0.0


def session_metrics(ranked: Sequence[tuple[str, int, int]], relevant: Sequence[Evidence],
                    n_corpus: int, n_gold: int) -> dict[str, float]:
    """LongMemEval's session-level ``recall_any@k``, ``recall_all@k``, ``ndcg_any@k``.

    As ``evaluate_retrieval_turn2session`` in the benchmark's ``src/retrieval/eval_utils.py``
    (xiaowu0162/LongMemEval): chunks map to sessions (:func:`chunk_sessions`), the cut grows
    from k until k distinct sessions are in it (or past the corpus, ``n_corpus`` chunks); any /
    all gold sessions (files holding evidence) among the cut's; nDCG over the cut's chunks with
    binary gains (a chunk covering evidence), the ideal being the index's ``n_gold`` such chunks
    first. ``ranked`` may be shorter than the corpus: what it lacks counts as a miss.
    """
    docs = chunk_sessions(ranked, relevant)
    gold = {ev.path for ev in relevant}
    out: dict[str, float] = {}
    for k in SESSION_KS:
        eff = k
        while eff <= n_corpus and len({d for d, _ in docs[:eff]}) < k:
            if eff >= len(docs):  # nothing more to see: the benchmark's loop runs to the end
                eff = n_corpus + 1
                break
            eff += 1
        top = {d for d, _ in docs[:eff]}
        out[f"recall_any@{k}"] = float(any(g in top for g in gold))
        out[f"recall_all@{k}"] = float(all(g in top for g in gold))
        ideal = _lme_dcg([1] * min(n_gold, eff), eff)
        out[f"ndcg_any@{k}"] = (_lme_dcg([int(g) for _, g in docs[:eff]], eff) / ideal
                                if ideal else 0.0)
    return out


def _level_metrics(hit_flags: Sequence[bool], gains: Sequence[int], covered_at: Sequence[int],
                   n_units: int, ideal: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    first = next((i + 1 for i, h in enumerate(hit_flags) if h), None)
    for k in KS:
        cov = covered_at[min(k, len(covered_at)) - 1] if covered_at else 0
        out[f"recall@{k}"] = cov / n_units if n_units else 0.0
        out[f"success@{k}"] = 1.0 if first is not None and first <= k else 0.0
    out["mrr@10"] = 1.0 / first if first is not None and first <= DEPTH else 0.0
    idcg = _idcg(ideal)
    out["ndcg@10"] = _dcg(gains) / idcg if idcg > 0 else 0.0
    out["first_rank"] = first
    return out


def ideal_counts(index: MemoryIndex, relevant: Sequence[Evidence]) -> tuple[int, int]:
    """How many gains the ideal chunk and file rankings can earn in ``index`` (capped at 10)."""
    units = list(dict.fromkeys(relevant))
    sets: list[frozenset[int]] = []
    files = 0
    for path in dict.fromkeys(ev.path for ev in units):
        rows = index.chunks(path)
        if rows:
            files += 1
        for r in rows:
            sets.append(frozenset(i for i, ev in enumerate(units)
                                  if covers(r.path, r.start_line, r.end_line, ev)))
    return max_new_unit_sequence(sets, DEPTH), min(files, DEPTH)


def gold_chunk_count(index: MemoryIndex, relevant: Sequence[Evidence]) -> int:
    """How many of ``index``'s chunks cover an evidence line (LongMemEval's ideal nDCG)."""
    return sum(1 for path in dict.fromkeys(ev.path for ev in relevant)
               for r in index.chunks(path)
               if any(covers(r.path, r.start_line, r.end_line, ev) for ev in relevant))


METRIC_KEYS: tuple[str, ...] = (*(f"recall@{k}" for k in KS), *(f"success@{k}" for k in KS),
                                "mrr@10", "ndcg@10")
#: File-level only: the peers' session-level figures (see :func:`peer_metrics`).
PEER_KEYS: tuple[str, ...] = (*(f"recall_any@{k}" for k in KS), *(f"recall_all@{k}" for k in KS))


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def aggregate(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Average per-query rows (from :func:`run_eval`) into the report's metrics dict."""
    main = [r for r in rows if not r["apart"]]
    out: dict[str, Any] = {"n_queries": len(main)}
    out.update(_agg_block(main))
    cats: dict[str, list[Mapping[str, Any]]] = {}
    for r in main:
        cats.setdefault(r["category"], []).append(r)
    out["by_category"] = {c: {"n_queries": len(rs), **_agg_block(rs)}
                          for c, rs in sorted(cats.items())}
    apart = [r for r in rows if r["apart"]]
    if apart:
        out["apart"] = {"n_queries": len(apart), **_agg_block(apart)}
    return out


def _agg_block(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for level in ("chunk", "file"):
        out[level] = {k: _mean([r["metrics"][level][k] for r in rows]) for k in METRIC_KEYS}
    out["file"].update({k: _mean([r["metrics"]["file"].get(k, 0.0) for r in rows])
                        for k in PEER_KEYS})
    if rows and all("session" in r["metrics"] for r in rows):
        out["session"] = {k: _mean([r["metrics"]["session"][k] for r in rows])
                          for k in SESSION_KEYS}
    out["zero_result_rate"] = _mean([1.0 if r["metrics"]["n_results"] == 0 else 0.0 for r in rows])
    out["mean_results"] = _mean([r["metrics"]["n_results"] for r in rows])
    lat = sorted(r["latency_ms"] for r in rows)
    if lat:
        out["latency_ms"] = {"mean": statistics.fmean(lat), "p50": lat[len(lat) // 2],
                             "p95": lat[min(len(lat) - 1, int(0.95 * len(lat)))]}
    out["no_relevant_in_index"] = sum(1 for r in rows if r["ideal_chunks"] == 0)
    return out
