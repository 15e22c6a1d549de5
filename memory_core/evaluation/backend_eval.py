"""Evaluating another backend (qmd) on the same labelled sets as the builtin engine.

The builtin runs fetch candidates once and fuse them under many settings (:mod:`.runner`); a
backend such as qmd is a black box that returns a ranked list per query, so it is run once per
query with ``maxResults`` at the metrics' depth (10) and no injection budget. The list the agent
would get under the reference's limits (4 results, 2,200 characters) is the head of that list,
which qmd ranks the same way whatever ``-n`` is; both are scored, by the same protocol
(:func:`~.metrics.score_ranking`).

qmd's "chunk" is the window its snippet cites (a hunk of a few lines around the best match), so
the chunk level measures whether the cited lines hold the evidence; the file level compares it
fairly with the builtin engine. The ideal ranking of nDCG is the evidence itself (no builtin
index is needed to evaluate qmd).

qmd's index for a shared data set lives next to the builtin indexes of that set in the
evaluation cache (``<store dir>/qmd``), never in the data folder.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

from ..backends import QmdBackend, QmdError
from ..index import MemoryIndex
from .datasets import QuerySet, load_query_set
from .metrics import DEPTH, aggregate, score_ranking
from .report import EvalReport, RunResult
from .runner import open_eval_index, queries_by_workspace

Progress = Callable[[str, int, int], None]

#: The reference's qmd limits (``backend-config.ts``): the agent gets at most this many results.
REFERENCE_MAX_RESULTS = 4
#: Generous per-query bound for measuring (the reference's 4,000 ms is reported separately).
EVAL_TIMEOUT_MS = 30_000


def _qmd_for(idx: MemoryIndex, store_dir: Any, mode: str) -> QmdBackend:
    cfg = copy.deepcopy(idx.config)
    if store_dir is not None:
        cfg.qmd.home = str(store_dir / "qmd")
    cfg.qmd.search_mode = mode  # type: ignore[assignment]  # checked by the caller
    cfg.qmd.max_results = DEPTH
    cfg.qmd.max_injected_chars = 0
    cfg.qmd.timeout_ms = EVAL_TIMEOUT_MS
    cfg.qmd.paths = []
    cfg.sources.extra_paths = []
    return QmdBackend(idx.workspace, cfg)


def run_qmd_eval(query_set: QuerySet | str, *, mode: str = "search",
                 progress: Progress | None = None, limit: int | None = None) -> EvalReport:
    """Measure qmd (``mode``: search, vsearch or query) on ``query_set``'s own workspaces.

    Two runs: ``qmd <mode>`` at the reference's limits (top 4) and the same list to depth 10.
    A query whose qmd command fails counts as no results; failures, the number of queries
    slower than the reference's 4,000 ms timeout and the latencies are in ``info``.
    """
    if mode not in ("search", "vsearch", "query"):
        raise ValueError(f"unknown qmd search mode {mode!r}")
    qs = load_query_set(query_set) if isinstance(query_set, str) else query_set
    qs = qs.limited(limit)
    prog = progress or (lambda stage, done, total: None)
    by_ws = queries_by_workspace(qs)
    rows_ref: list[dict[str, Any]] = []
    rows_10: list[dict[str, Any]] = []
    info: dict[str, Any] = {"indexes": {}, "failures": 0, "over_4000ms": 0, "errors": []}
    latencies: list[float] = []
    done, total = 0, len(qs.queries)
    for key, queries in by_ws.items():
        idx = open_eval_index(qs, key)
        try:
            backend = _qmd_for(idx, qs.store_dirs.get(key), mode)
            t0 = time.perf_counter()
            backend.sync(force=True, reason="boot")
            st = backend.status()
            info["indexes"][key or "workspace"] = {
                "workspace": str(idx.workspace), "index": st.db_path, "files": st.files,
                "version": st.custom["qmd"]["version"],
                "sync_ms": round((time.perf_counter() - t0) * 1000)}
            for q in queries:
                t1 = time.perf_counter()
                try:
                    hits = backend.search(q.query).hits
                except QmdError as e:
                    hits = []
                    info["failures"] += 1
                    if len(info["errors"]) < 5:
                        info["errors"].append(f"{q.qid}: {e}")
                ms = (time.perf_counter() - t1) * 1000
                latencies.append(ms)
                info["over_4000ms"] += ms > 4000
                ranked = [(h.path, h.start_line, h.end_line) for h in hits]
                for rows, cut in ((rows_ref, REFERENCE_MAX_RESULTS), (rows_10, DEPTH)):
                    mine = ranked[:cut]
                    rows.append({
                        "qid": q.qid, "query": q.query, "category": q.category,
                        "workspace": q.workspace, "apart": q.apart, "ideal_chunks": None,
                        "metrics": score_ranking(mine, q.relevant),
                        "latency_ms": ms, "results": [f"{p}#L{s}-L{e}" for p, s, e in mine]})
                done += 1
                prog("query", done, total)
        finally:
            idx.close()
    latencies.sort()
    if latencies:
        info["latency_ms"] = {"p50": round(latencies[len(latencies) // 2]),
                              "p95": round(latencies[int(len(latencies) * 0.95) - 1 or 0])}
    label = f"qmd {mode}" + (" (BM25)" if mode == "search" else "")
    settings = {"backend": "qmd", "search_mode": mode}
    runs = [RunResult(f"{label}, reference limits (4 results)",
                      dict(settings, max_results=REFERENCE_MAX_RESULTS), None,
                      aggregate(rows_ref), rows_ref),
            RunResult(f"{label}, 10 results", dict(settings, max_results=DEPTH), None,
                      aggregate(rows_10), rows_10)]
    return EvalReport(qs.name, qs.level, runs, dict(qs.skipped), info)


__all__ = ["REFERENCE_MAX_RESULTS", "run_qmd_eval"]
