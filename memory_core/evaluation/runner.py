"""Running an evaluation: configurations, one candidate fetch per query, scoring, sweeps.

For every query the runner fetches the legs' candidates once (one query embedding, one keyword
query per keyword-leg option), then fuses them under each configuration asked for: fusion is a
pure function, so comparing profiles' *settings*, sweeping weights and gates, or auditing the
legs costs no extra SQL or model calls. It uses only :class:`MemoryIndex`'s public face.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import pickle
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ..base.config import PROFILES, SearchSettings, profile_settings
from ..base.fileio import atomic_write
from ..index import MemoryIndex
from ..read.candidates import Candidates
from ..read.fusion import fuse
from .datasets import EvalQuery, QuerySet, cache_dir, load_query_set
from .metrics import (
    DEPTH,
    METRIC_KEYS,
    aggregate,
    covers,
    gold_chunk_count,
    ideal_counts,
    score_ranking,
)
from .report import EvalReport, RunResult

#: ``progress(stage, done, total)``: indexing and querying report through it.
Progress = Callable[[str, int, int], None]
#: Bumped when what a cached candidate file holds changes shape. 7: the vector leg's first hits
#: scored by the larger of their cosine and their best block's (not for a mostly-CJK query; 6
#: was that without the exception, never released); 5: keyed by
#: ``SearchSettings.fetch_key`` (the question frame a setting); 4: the OR keyword query drops
#: the question frame; 3: notes. A query's own "now" is not in the key: the fetch reads every
#: row and no leg depends on the day, only fusion (:func:`asked_settings`).
_CACHE_VERSION = 7

@dataclass(frozen=True)
class EvalConfig:
    """A labelled way of ranking: fused under ``settings``, or one leg alone (``leg``).

    A leg alone is its own ranking cut at :data:`DEPTH`, with no gate: the upper bound of what
    that leg contributes, as the datasets' protocol asks ("vector-only, keyword-only").
    """

    label: str
    settings: SearchSettings
    leg: str | None = None  # None (fused), "vector" or "keyword"


def leg_configs(settings: SearchSettings, prefix: str = "") -> list[EvalConfig]:
    """The vector leg and the keyword leg of ``settings`` (its query options), each alone."""
    kq = settings.keyword_query + ("+bigrams" if settings.cjk_bigrams else "")
    return [EvalConfig(f"{prefix}vector leg", settings, "vector"),
            EvalConfig(f"{prefix}keyword leg ({kq})", settings, "keyword")]


def _label_for(settings: SearchSettings, index: MemoryIndex | None) -> str:
    """The profile whose settings these are, else the index's profile, else "config"."""
    for name in PROFILES:
        if settings == profile_settings(name):
            return name
    return index.config.profile if index else "config"


def asked_settings(settings: SearchSettings, query: EvalQuery) -> SearchSettings:
    """``settings`` as the asker of ``query`` runs them: at the query's own "now" when it has
    one (LongMemEval's question date), so "four weeks ago" counts from the day it was asked."""
    return settings if query.now_ms is None else replace(settings, now_ms=query.now_ms)


def _ranked(config: EvalConfig, cands: Candidates, query: EvalQuery
            ) -> tuple[list[tuple[str, int, int]], list[float], Any]:
    """The list the agent would get under ``config`` (or the leg's own top :data:`DEPTH`), its
    scores, and the fusion result (None for a leg)."""
    if config.leg is not None:
        leg = cands.vector if config.leg == "vector" else cands.keyword
        return ([(cands.chunks[h.id].path, cands.chunks[h.id].start_line,
                  cands.chunks[h.id].end_line) for h in leg[:DEPTH]],
                [float(h.score) for h in leg[:DEPTH]], None)
    res = fuse(cands, asked_settings(config.settings, query))
    return ([(h.path, h.start_line, h.end_line) for h in res.hits],
            [float(h.score) for h in res.hits], res)


# =============================================================================== collection


@dataclass
class CollectedQuery:
    """One query's fetched candidates (per keyword-leg option) and its ideal counts.

    What :func:`leg_audit` and every configuration's scoring read; built once per query.
    """

    query: EvalQuery
    cands: dict[tuple[Any, ...], Candidates]
    ideal_chunks: int
    ideal_files: int
    fetch_ms: dict[tuple[Any, ...], float]
    #: the index's chunk count and how many cover evidence (session metrics' sets only)
    corpus: tuple[int, int] | None = None


def open_eval_index(query_set: QuerySet, key: str, *, profile: str | None = None,
                    provider: str | None = None, chunk_tokens: int | None = None) -> MemoryIndex:
    """Open the index of one of ``query_set``'s workspaces (in the cache for shared data).

    The index file is named after the chunking mode, budget, provider and the workspace's path,
    so that profiles and chunk sizes never overwrite each other's index, and two checkouts of
    the same data never meet at one index (which would refuse the second).
    """
    ws = query_set.workspaces.get(key)
    if ws is None:
        raise ValueError(f"query set {query_set.name!r} has no workspace: pass an index or one")
    overrides: dict[str, Any] = {}
    if chunk_tokens:
        overrides["chunking"] = {"tokens": chunk_tokens, "overlap": chunk_tokens // 5}
    store_dir = query_set.store_dirs.get(key)
    if store_dir is not None:
        # One index serves one workspace: the same dataset read from another checkout (another
        # path) gets its own cached index instead of being refused by the first one's.
        tokens, where = chunk_tokens or 400, _path_tag(ws)
        overrides["store"] = {"path": str(store_dir / f"{{chunking}}-t{tokens}-{{provider}}"
                                                      f"-{where}.sqlite")}
    return MemoryIndex.open(ws, profile=profile, provider=provider, overrides=overrides or None)


def _path_tag(ws: Path) -> str:
    """A short, stable tag of the workspace's absolute path (names its cached index)."""
    return hashlib.sha256(str(Path(ws).resolve()).encode()).hexdigest()[:8]


def _cache_file(idx: MemoryIndex, chunks: Any, queries: Sequence[EvalQuery],
                keys: Sequence[tuple[Any, ...]]) -> Path:
    """Where one workspace's fetched candidates are kept (see :func:`collect`)."""
    ident = json.dumps([str(idx.store_path), idx.generation, chunks, idx.choice.key,
                        [list(k) for k in keys], [(q.qid, q.query) for q in queries],
                        _CACHE_VERSION], default=str)
    digest = hashlib.sha256(ident.encode()).hexdigest()[:24]
    return cache_dir() / "candidates" / f"{digest}.pickle"


def _shared_chunks(collected: Sequence[CollectedQuery]) -> list[CollectedQuery]:
    """The same chunk object for one chunk id across queries: a pickle then stores each once."""
    pool: dict[str, Any] = {}
    out = []
    for c in collected:
        cands = {k: replace(v, chunks={cid: pool.setdefault(cid, ch)
                                       for cid, ch in v.chunks.items()})
                 for k, v in c.cands.items()}
        out.append(replace(c, cands=cands))
    return out


def _load_cached(path: Path) -> list[CollectedQuery] | None:
    try:
        with path.open("rb") as f:
            data = pickle.load(f)  # our own cache file (see _store_cached)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, TypeError,
            ImportError):  # a file an older version wrote (its classes moved): fetched again
        return None
    return data if isinstance(data, list) else None


def _store_cached(path: Path, collected: list[CollectedQuery]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, pickle.dumps(collected, protocol=pickle.HIGHEST_PROTOCOL),
                     durable=False)
    except OSError:
        pass  # a cache that cannot be written is only slower next time


def collect(query_set: QuerySet | str, configs: Sequence[EvalConfig], *,
            index_or_workspace: MemoryIndex | str | os.PathLike[str] | None = None,
            profile: str | None = None, provider: str | None = None,
            progress: Progress | None = None, chunk_tokens: int | None = None,
            cache: bool = False) -> tuple[list[CollectedQuery], dict[str, Any]]:
    """Every query's candidates (once per keyword-leg option of ``configs``), ready to fuse;
    each workspace's index synced first.

    What every evaluation, cross-validation and scratch experiment starts from. With ``cache``
    the candidates of each workspace are kept on disk under the evaluation cache, keyed by the
    index file, its generation and chunk count, the provider and the queries, so a second run
    fetches nothing.
    """
    query_set = load_query_set(query_set) if isinstance(query_set, str) else query_set
    prog = progress or (lambda stage, done, total: None)
    by_ws = queries_by_workspace(query_set, index_or_workspace)
    out: list[CollectedQuery] = []
    info: dict[str, Any] = {"indexes": {}}
    total = len(query_set.queries)
    for ws_key, queries in by_ws.items():
        before = len(out)

        def ws_prog(stage: str, d: int, t: int, before: int = before) -> None:
            prog(stage, before + d, total) if stage == "query" else prog(stage, d, t)

        collected, ws_info = collect_workspace(
            query_set, ws_key, queries, configs, index_or_workspace=index_or_workspace,
            profile=profile, provider=provider, progress=ws_prog, chunk_tokens=chunk_tokens,
            cache=cache)
        out.extend(collected)
        info["indexes"][ws_key or "workspace"] = ws_info
    return out, info


def queries_by_workspace(query_set: QuerySet,
                         index_or_workspace: MemoryIndex | str | os.PathLike[str] | None = None
                         ) -> dict[str, list[EvalQuery]]:
    """The set's queries grouped by workspace key, in order of first appearance.

    The unit of work of an evaluation: each group has its own index, so groups can be
    collected anywhere (serially here, one Ray task each in :mod:`.ray_executor`) and merged
    in this order. A given index or folder can only judge a set of one workspace.
    """
    by_ws: dict[str, list[EvalQuery]] = {}
    for q in query_set.queries:
        by_ws.setdefault(q.workspace, []).append(q)
    if index_or_workspace is not None and len(by_ws) > 1:
        raise ValueError(f"{query_set.name} is judged against {len(by_ws)} workspaces: evaluate "
                         "it on its own workspaces (index_or_workspace=None)")
    return by_ws


def collect_workspace(query_set: QuerySet, ws_key: str, queries: Sequence[EvalQuery],
                      configs: Sequence[EvalConfig], *,
                      index_or_workspace: MemoryIndex | str | os.PathLike[str] | None = None,
                      profile: str | None = None, provider: str | None = None,
                      progress: Progress | None = None, chunk_tokens: int | None = None,
                      cache: bool = False) -> tuple[list[CollectedQuery], dict[str, Any]]:
    """One workspace's queries: sync its index, fetch each query's candidates once per leg
    option of ``configs``; also return the index's description (for the report's ``info``).

    ``progress`` sees ``("query", done, len(queries))`` counts local to this workspace.
    """
    prog = progress or (lambda stage, done, total: None)
    keys = list(dict.fromkeys(c.settings.fetch_key() for c in configs))
    own = not isinstance(index_or_workspace, MemoryIndex)
    if isinstance(index_or_workspace, MemoryIndex):
        idx = index_or_workspace
    elif index_or_workspace is not None:
        idx = MemoryIndex.open(index_or_workspace, profile=profile, provider=provider)
    else:
        idx = open_eval_index(query_set, ws_key, profile=profile, provider=provider,
                              chunk_tokens=chunk_tokens)
    out: list[CollectedQuery] = []
    try:
        idx.sync(progress=lambda stage, d, t: prog(f"index {ws_key or 'workspace'}: {stage}",
                                                   d, t))
        st = idx.status().to_json()
        ws_info = {"workspace": str(idx.workspace), "store": str(idx.store_path),
                   "chunks": st.get("chunks"), "files": st.get("files"),
                   "provider": idx.choice.id, "model": idx.choice.model,
                   "chunking": st.get("chunking"), "profile": idx.config.profile,
                   "generation": idx.generation}
        cfile = _cache_file(idx, st.get("chunks"), queries, keys) if cache else None
        cached = _load_cached(cfile) if cfile is not None and cfile.is_file() else None
        if cached is not None and len(cached) == len(queries):
            prog("query", len(cached), len(queries))
            return cached, ws_info
        vectors, embed_ms = _embed_queries(idx.choice.provider, [q.query for q in queries])
        for q, qvec in zip(queries, vectors, strict=True):
            cands: dict[tuple[Any, ...], Candidates] = {}
            fetch_ms: dict[tuple[Any, ...], float] = {}
            for key in keys:
                s = next(c.settings for c in configs if c.settings.fetch_key() == key)
                t1 = time.perf_counter()
                cands[key] = idx.candidates(q.query, settings=s, auto_sync=False,
                                            query_vector=qvec)
                fetch_ms[key] = embed_ms + (time.perf_counter() - t1) * 1000
            ic, ifl = ideal_counts(idx, q.relevant)
            corpus = ((int(st.get("chunks") or 0), gold_chunk_count(idx, q.relevant))
                      if query_set.sessions else None)
            out.append(CollectedQuery(q, cands, ic, ifl, fetch_ms, corpus))
            prog("query", len(out), len(queries))
        if cfile is not None:
            out = _shared_chunks(out)
            _store_cached(cfile, out)
    finally:
        if own:
            idx.close()
    return out, ws_info


def _embed_queries(provider: Any, texts: Sequence[str]) -> tuple[list[Any], float]:
    """Query vectors, and the embedding time per query in ms.

    Symmetric models (``local``, OpenAI-compatible) embed a query exactly as a document, so their
    queries are embedded in batches (much faster on a CPU); the time is amortised per query.
    Others (e5 adds a ``query:`` prefix) go one by one through ``embed_query``.
    """
    if provider is None or not texts:
        return [None] * len(texts), 0.0
    t0 = time.perf_counter()
    if getattr(provider, "id", "") in ("local", "openai"):
        vectors = list(provider.embed_documents(list(texts)))
    elif hasattr(provider, "embed_queries"):  # asymmetric, but batched (e5)
        vectors = list(provider.embed_queries(list(texts)))
    else:
        vectors = [provider.embed_query(t) for t in texts]
    return vectors, (time.perf_counter() - t0) * 1000 / len(texts)


def evaluate_rows(collected: Sequence[CollectedQuery], config: EvalConfig
                  ) -> list[dict[str, Any]]:
    """One row per query (metrics, latency, the cited results) for ``config``'s ranking."""
    rows = []
    key = config.settings.fetch_key()
    for c in collected:
        cands = c.cands[key]
        t0 = time.perf_counter()
        ranked, scores, _ = _ranked(config, cands, c.query)
        fuse_ms = (time.perf_counter() - t0) * 1000
        m = score_ranking(ranked, c.query.relevant, c.ideal_chunks, c.ideal_files,
                          getattr(c, "corpus", None))
        rows.append({
            "qid": c.query.qid, "query": c.query.query, "category": c.query.category,
            "workspace": c.query.workspace, "apart": c.query.apart,
            "ideal_chunks": c.ideal_chunks, "metrics": m,
            "latency_ms": c.fetch_ms[key] + fuse_ms,
            "results": [f"{p}#L{s}-L{e}" for p, s, e in ranked[:DEPTH]],
            # what a TREC run of this row needs, and what marks its gold hits in a side view
            "scores": [round(x, 6) for x in scores[:DEPTH]],
            "gold": [any(covers(p, s, e, ev) for ev in c.query.relevant)
                     for p, s, e in ranked[:DEPTH]],
        })
    return rows


# =============================================================================== leg audit


def leg_audit(collected: Sequence[CollectedQuery], config: EvalConfig) -> dict[str, Any]:
    """Per query: which leg found a gold chunk (within the pool fusion sees), and what the gate did.

    The summary counts the main set only (like the metrics); per-query rows cover every query.

    ``vector_rank`` / ``keyword_rank``: rank of the first relevant chunk in each leg's candidate
    list (cut to ``max_results × candidate_multiplier``, as fusion cuts it). ``gated`` counts
    relevant chunks that fusion scored but a gate removed (minScore, or a calibrated search's
    abstention: :attr:`Hit.removed_by`); ``cut`` those that passed the gates but fell below
    ``max_results``.
    """
    s = config.settings
    n = s.candidate_count()
    rows = []
    summary = {"both": 0, "vector only": 0, "keyword only": 0, "neither": 0,
               "gold gated (queries)": 0, "gold gated (chunks)": 0, "all gold gated": 0,
               "gold cut by maxResults (queries)": 0}
    for c in collected:
        cands = c.cands[s.fetch_key()]
        gold = {cid for cid, ch in cands.chunks.items()
                if any(covers(ch.path, ch.start_line, ch.end_line, ev) for ev in c.query.relevant)}
        vr = next((h.rank for h in cands.vector[:n] if h.id in gold), None)
        kr = next((h.rank for h in cands.keyword[:n] if h.id in gold), None)
        found = ("both" if vr and kr else "vector only" if vr else "keyword only" if kr
                 else "neither")
        res = fuse(cands, asked_settings(s, c.query))
        kept = [h for h in res.hits if h.id in gold]
        gated = [h for h in res.below_gate if h.id in gold and h.removed_by != "maxResults"]
        cut = [h for h in res.below_gate if h.id in gold and h.removed_by == "maxResults"]
        if not c.query.apart:  # the summary counts the main set, as the metrics do
            summary[found] += 1
            if gated:
                summary["gold gated (queries)"] += 1
                summary["gold gated (chunks)"] += len(gated)
                if not kept:
                    summary["all gold gated"] += 1
            if cut and not kept:
                summary["gold cut by maxResults (queries)"] += 1
        rows.append({"qid": c.query.qid, "category": c.query.category, "apart": c.query.apart,
                     "found_by": found,
                     "vector_rank": vr, "keyword_rank": kr, "kept": len(kept),
                     "gated": len(gated), "cut": len(cut),
                     "first_rank": next((i + 1 for i, h in enumerate(res.hits)
                                         if h.id in gold), None)})
    return {"config": config.label, "pool": n, "summary": summary, "per_query": rows}


def run_eval(index_or_workspace: MemoryIndex | str | os.PathLike[str] | None,
             query_set: QuerySet | str,
             settings: SearchSettings | Sequence[Any] | Mapping[str, SearchSettings] | None
             = None, progress: Progress | None = None, *, profile: str | None = None,
             provider: str | None = None, legs: bool = False, audit: bool = True,
             limit: int | None = None, chunk_tokens: int | None = None) -> EvalReport:
    """Measure one or more configurations on a query set; all share one index per workspace.

    ``index_or_workspace``: an open :class:`MemoryIndex` (used as is), a workspace folder (opened
    with ``profile``/``provider``, its own store), or ``None`` for the query set's own workspaces
    (indexes in the evaluation cache). ``settings``: one :class:`SearchSettings`, a list (or a
    ``{label: settings}`` mapping, or :class:`EvalConfig` items); default: the profile's.
    ``legs`` adds each leg of the first configuration alone. ``progress(stage, done, total)``
    reports indexing and querying. :func:`~memory_core.evaluation.ray_executor.run_eval_ray`
    gives the same report with one Ray task per workspace.
    """
    qs = load_query_set(query_set) if isinstance(query_set, str) else query_set
    qs = qs.limited(limit)
    idx = index_or_workspace if isinstance(index_or_workspace, MemoryIndex) else None
    configs = eval_configs(settings, idx, profile=profile, provider=provider, legs=legs)
    collected, info = collect(qs, configs, index_or_workspace=index_or_workspace,
                              profile=profile, provider=provider, progress=progress,
                              chunk_tokens=chunk_tokens)
    return build_report(qs, configs, [score_collected(collected, configs, audit)], info)


def eval_configs(settings: SearchSettings | Sequence[Any] | Mapping[str, SearchSettings] | None,
                 index: MemoryIndex | None = None, *, profile: str | None = None,
                 provider: str | None = None, legs: bool = False) -> list[EvalConfig]:
    """The configurations :func:`run_eval` measures for these arguments (legs last): one
    :class:`SearchSettings` or :class:`EvalConfig`, a ``{label: settings}`` mapping, or a list
    of configurations, ``(label, settings)`` pairs or settings; without any, the index's
    settings, else ``profile``'s."""
    if settings is None:
        settings = ([EvalConfig(index.config.profile, index.settings())] if index is not None
                    else {profile or "default": profile_settings(profile or "default", provider)})
    if isinstance(settings, SearchSettings):
        configs = [EvalConfig(_label_for(settings, index), settings)]
    elif isinstance(settings, EvalConfig):
        configs = [settings]
    elif isinstance(settings, Mapping):
        configs = [EvalConfig(str(k), v) for k, v in settings.items()]
    else:
        configs = []
        for i, s in enumerate(settings, 1):
            if isinstance(s, EvalConfig):
                configs.append(s)
            elif isinstance(s, tuple):
                configs.append(EvalConfig(str(s[0]), s[1]))
            else:
                configs.append(EvalConfig(f"config-{i}", s))
    if legs:
        configs += leg_configs(configs[0].settings)
    return configs


@dataclass
class ScoredQueries:
    """Some queries scored under every configuration: ``rows[i]`` holds ``configs[i]``'s rows
    (see :func:`evaluate_rows`), ``audit`` the first configuration's leg audit (or None).

    What one workspace's evaluation sends back when it runs elsewhere (a Ray task): metric rows
    only, no candidates, so little crosses the wire.
    """

    rows: list[list[dict[str, Any]]]
    audit: dict[str, Any] | None = None


def score_collected(collected: Sequence[CollectedQuery], configs: Sequence[EvalConfig],
                    audit: bool = True) -> ScoredQueries:
    """Fuse and score ``collected`` under each configuration (and audit the first one)."""
    rows = [evaluate_rows(collected, cfg) for cfg in configs]
    aud = leg_audit(collected, configs[0]) if audit and configs[0].leg is None else None
    return ScoredQueries(rows, aud)


def _merge_audits(audits: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One leg audit from per-workspace ones: the summary is a count, so counts add up."""
    first = audits[0]
    summary = {k: sum(a["summary"][k] for a in audits) for k in first["summary"]}
    return {"config": first["config"], "pool": first["pool"], "summary": summary,
            "per_query": [r for a in audits for r in a["per_query"]]}


def build_report(query_set: QuerySet, configs: Sequence[EvalConfig],
                 parts: Sequence[ScoredQueries], info: dict[str, Any]) -> EvalReport:
    """The report of ``parts`` (consecutive groups of queries, in the set's order).

    Metrics are aggregated over the concatenated rows, so scoring the workspaces one by one,
    or each in its own process, gives the same floats as scoring them all at once.
    """
    runs = []
    for i, cfg in enumerate(configs):
        rows = [r for part in parts for r in part.rows[i]]
        runs.append(RunResult(cfg.label, asdict(cfg.settings), cfg.leg, aggregate(rows),
                              rows))
    report = EvalReport(query_set.name, query_set.level, runs, dict(query_set.skipped), info)
    audits = [p.audit for p in parts if p.audit is not None]
    if audits:
        report.audit = _merge_audits(audits)
    return report


# =============================================================================== sweep

DEFAULT_GRID: dict[str, list[Any]] = {
    "vector_weight": [round(0.1 * i, 1) for i in range(11)],
    "min_score": [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5],
}


def grid_configs(base: SearchSettings, grid: Mapping[str, Sequence[Any]]
                 ) -> list[tuple[dict[str, Any], EvalConfig]]:
    """Every combination of ``grid`` applied to ``base`` (a vector weight sets both weights)."""
    names = list(grid)
    out = []
    for vals in itertools.product(*(grid[n] for n in names)):
        combo = dict(zip(names, vals, strict=True))
        s = replace(base, **combo)
        if "vector_weight" in combo and "text_weight" not in combo:
            s = replace(s, text_weight=round(1.0 - float(combo["vector_weight"]), 6))
        out.append((combo, EvalConfig(json.dumps(combo, sort_keys=True), s)))
    return out


def sweep(index_or_workspace: MemoryIndex | str | os.PathLike[str] | None,
          query_set: QuerySet | str, base: SearchSettings | None = None,
          grid: Mapping[str, Sequence[Any]] | None = None, progress: Progress | None = None, *,
          profile: str | None = None, provider: str | None = None, limit: int | None = None,
          chunk_tokens: int | None = None) -> list[dict[str, Any]]:
    """Fuse cached candidates under every combination of ``grid``; one tidy row per combination.

    ``grid`` maps :class:`SearchSettings` field names to values (default: vector weight 0..1 ×
    minScore 0..0.5); ``vector_weight`` also sets ``text_weight = 1 - vector_weight``. Each row
    holds the swept values, the main chunk-level metrics (``success@k``, ``recall@k``,
    ``mrr@10``, ``ndcg@10``), ``file_success@5``, ``file_ndcg@10``, ``zero_result_rate`` and
    ``n_queries``: ready for a heatmap (e.g. pandas ``pivot``).
    """
    qs = load_query_set(query_set) if isinstance(query_set, str) else query_set
    qs = qs.limited(limit)
    idx = index_or_workspace if isinstance(index_or_workspace, MemoryIndex) else None
    if base is None:
        base = idx.settings() if idx else profile_settings(profile or "default", provider)
    configs = grid_configs(base, grid or DEFAULT_GRID)
    collected, _ = collect(qs, [cfg for _, cfg in configs],
                           index_or_workspace=index_or_workspace, profile=profile,
                           provider=provider, progress=progress, chunk_tokens=chunk_tokens)
    rows = []
    for i, (combo, cfg) in enumerate(configs):
        m = aggregate(evaluate_rows(collected, cfg))
        row: dict[str, Any] = dict(combo)
        row.update({k: m["chunk"][k] for k in METRIC_KEYS})
        row["file_success@5"] = m["file"]["success@5"]
        row["file_ndcg@10"] = m["file"]["ndcg@10"]
        row["zero_result_rate"] = m["zero_result_rate"]
        row["mean_results"] = m["mean_results"]
        row["n_queries"] = m["n_queries"]
        rows.append(row)
        if progress:
            progress("sweep", i + 1, len(configs))
    return rows
