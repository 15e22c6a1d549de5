"""Retrieval evaluation: labelled queries → the protocol's metrics, per configuration and per leg.

The evaluator measures what the agent would receive. For every query it fetches the legs' candidates
once (one query embedding, one keyword query per keyword-leg option), then fuses them under each
configuration asked for: fusion is a pure function, so comparing profiles' *settings*, sweeping
weights and gates, or auditing the legs costs no extra SQL or model calls.

Data formats (see ``../shared/datasets/README.md``, whose protocol this module implements):

* LoCoMo-style query files, one JSON object a line: ``{qid, query, category, relevant: [{path,
  line}]}``, judged against one workspace (``path`` workspace-relative, ``line`` 1-based; for
  session transcripts, JSONL line numbers, which is what the index stores for session chunks).
* BEIR folders (``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv``): the corpus is written
  once to a cache folder as a workspace of one ``memory/<id>.md`` per document (title, then text),
  and a chunk is relevant when its file is.

Protocol, in short: duplicates are collapsed; a chunk earns gain only if it covers an evidence line
(or relevant file) that no earlier chunk covered; Recall@k, Success@k (k = 1, 3, 5, 10), MRR@10 and
nDCG@10 whose ideal ordering is over the relevant chunks *of this index*; the same at file level
(chunks collapsed to files, each at its best rank), which compares chunkers fairly.

Public API (used by the CLI's ``eval`` command and the workbench's Evaluate page):

* :func:`available_query_sets` and :func:`load_query_set` → :class:`QuerySet`;
* :func:`run_eval` → :class:`EvalReport` (``.metrics``, ``.per_query``, ``.audit``,
  ``.to_markdown()``, ``.to_json()``);
* :func:`sweep` → a tidy list of dicts (one per setting combination) for a heatmap;
* :func:`compare` → the per-query wins and losses between two reports.

The data under ``../shared/datasets`` is licensed for evaluation only: it is read in place, never
copied into the project; generated workspaces and indexes live in a cache folder outside it
(``$MEMORY_WORKBENCH_CACHE`` or ``~/.cache/memory-workbench``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from .candidates import Candidates
from .config import PROFILES, SearchSettings, profile_settings
from .fusion import fuse
from .index import MemoryIndex

KS: tuple[int, ...] = (1, 3, 5, 10)
#: Rank depth of every metric (MRR@10, nDCG@10) and of a leg evaluated alone.
DEPTH = 10
REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_WORKSPACE = REPO_ROOT / "examples" / "demo-workspace"
DEMO_QUERIES = REPO_ROOT / "examples" / "demo-queries.jsonl"
LOCOMO_CONVS: tuple[str, ...] = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")
BEIR_SETS: dict[str, str] = {"xquad-en": "xquad/beir-en", "xquad-zh": "xquad/beir-zh",
                             "scifact": "scifact"}
#: LoCoMo's category numbers, as the benchmark's own evaluation code names them.
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                     5: "adversarial"}
#: Categories reported apart from the main set (their premise is false: used for abstention).
APART_CATEGORIES = frozenset({"adversarial"})

Progress = Callable[[str, int, int], None]


# =============================================================================== locations


def datasets_dir() -> Path:
    """``../shared/datasets`` beside the project (``$MEMORY_WORKBENCH_DATASETS`` overrides)."""
    env = os.environ.get("MEMORY_WORKBENCH_DATASETS")
    return Path(env) if env else (REPO_ROOT / ".." / "shared" / "datasets").resolve()


def cache_dir() -> Path:
    """Where generated workspaces and evaluation indexes live (never inside the project)."""
    env = os.environ.get("MEMORY_WORKBENCH_CACHE")
    base = Path(env) if env else Path.home() / ".cache" / "memory-workbench"
    return base / "eval"


class DatasetMissing(FileNotFoundError):
    """The labelled data a query set needs is not there (the CLI prints this and stops)."""


# =============================================================================== query sets


@dataclass(frozen=True)
class Evidence:
    """One judged unit: a line of a file (``line`` 1-based) or, with ``line=None``, a whole file."""

    path: str
    line: int | None = None


@dataclass(frozen=True)
class EvalQuery:
    """A labelled query. ``workspace`` keys :attr:`QuerySet.workspaces`; ``apart`` queries (e.g.
    LoCoMo's adversarial ones) are scored but kept out of the main averages."""

    qid: str
    query: str
    category: str
    relevant: tuple[Evidence, ...]
    workspace: str = ""
    apart: bool = False


@dataclass
class QuerySet:
    """Labelled queries and the workspace(s) they are judged against.

    ``workspaces`` maps a key to a workspace folder (``None``: the caller supplies the index).
    ``store_dirs`` maps the same keys to the folder for their index files (``None``: the
    workspace's own configured store). ``skipped`` counts queries left out, by reason.
    """

    name: str
    queries: list[EvalQuery]
    workspaces: dict[str, Path | None]
    store_dirs: dict[str, Path | None]
    level: str = "lines"  # "lines" (evidence lines) or "files" (BEIR: the file is the unit)
    skipped: dict[str, int] = field(default_factory=dict)
    description: str = ""

    def limited(self, n: int | None) -> QuerySet:
        """The first ``n`` queries of each workspace (all when ``n`` is None), kept in order."""
        if not n:
            return self
        seen: dict[str, int] = {}
        keep = []
        for q in self.queries:
            if seen.get(q.workspace, 0) < n:
                keep.append(q)
                seen[q.workspace] = seen.get(q.workspace, 0) + 1
        return replace(self, queries=keep, name=f"{self.name} (first {n} per workspace)")


def available_query_sets() -> list[str]:
    """Names :func:`load_query_set` accepts whose data exists on this machine."""
    out = ["demo"] if DEMO_QUERIES.is_file() and DEMO_WORKSPACE.is_dir() else []
    ds = datasets_dir()
    loc = ds / "locomo-dev"
    for shape in ("markdown", "sessions"):
        if (loc / f"queries-{shape}.jsonl").is_file() and (loc / shape).is_dir():
            convs = [c for c in LOCOMO_CONVS if (loc / shape / c).is_dir()]
            if convs:
                out.append(f"locomo-{shape}:all")
                out.extend(f"locomo-{shape}:{c}" for c in convs)
    out.extend(n for n, sub in BEIR_SETS.items() if (ds / sub / "corpus.jsonl").is_file())
    return out


def load_query_set(name_or_path: str | os.PathLike[str], workspace: str | os.PathLike[str]
                   | None = None) -> QuerySet:
    """Load a named query set, a LoCoMo-style ``.jsonl`` file or a BEIR folder.

    Names: ``demo``; ``locomo-markdown:<conv>|all`` and ``locomo-sessions:<conv>|all``;
    ``xquad-en``, ``xquad-zh``, ``scifact``. A ``.jsonl`` file is judged against ``workspace``
    (or the index given to :func:`run_eval`). Raises :class:`DatasetMissing` when the data is
    absent.
    """
    raw = str(name_or_path)
    if raw == "demo":
        return _load_jsonl(DEMO_QUERIES, "demo", {"": DEMO_WORKSPACE}, {"": None})
    m = re.fullmatch(r"locomo-(markdown|sessions)(?::([\w-]+))?", raw)
    if m:
        return _load_locomo(m.group(1), m.group(2) or "all")
    if raw in BEIR_SETS:
        return _load_beir(datasets_dir() / BEIR_SETS[raw], raw)
    p = Path(os.path.expanduser(raw))
    if p.is_dir() and (p / "corpus.jsonl").is_file():
        return _load_beir(p, p.name)
    if p.is_file():
        ws = Path(os.path.expanduser(str(workspace))) if workspace else None
        return _load_jsonl(p, p.stem, {"": ws}, {"": None})
    raise DatasetMissing(
        f"no query set {raw!r}: not a known name ({', '.join(available_query_sets()) or 'none'}"
        " available), a .jsonl file or a BEIR folder")


def _category_of(rec: Mapping[str, Any]) -> str:
    name = rec.get("category_name")
    cat = rec.get("category", "all")
    if name:
        return str(name)
    if isinstance(cat, int) and cat in LOCOMO_CATEGORIES:
        return LOCOMO_CATEGORIES[cat]
    return str(cat)


def _read_jsonl(path: Path) -> Iterable[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{n}: not JSON ({e})") from e
            if isinstance(rec, dict):
                yield rec


def _parse_queries(records: Iterable[Mapping[str, Any]], workspace_of: Callable[[Mapping[str, Any]],
                   str | None], skipped: dict[str, int]) -> list[EvalQuery]:
    out: list[EvalQuery] = []
    for rec in records:
        ws = workspace_of(rec)
        if ws is None:
            continue
        rel = tuple(dict.fromkeys(
            Evidence(str(r["path"]), int(r["line"]) if r.get("line") is not None else None)
            for r in rec.get("relevant") or [] if isinstance(r, dict) and r.get("path")))
        query = str(rec.get("query") or "").strip()
        if not query:
            skipped["empty query"] = skipped.get("empty query", 0) + 1
            continue
        if not rel:
            skipped["no evidence"] = skipped.get("no evidence", 0) + 1
            continue
        cat = _category_of(rec)
        out.append(EvalQuery(str(rec.get("qid", len(out) + 1)), query, cat, rel, ws,
                             apart=cat in APART_CATEGORIES or bool(rec.get("adversarial"))))
    return out


def _load_jsonl(path: Path, name: str, workspaces: dict[str, Path | None],
                store_dirs: dict[str, Path | None]) -> QuerySet:
    if not path.is_file():
        raise DatasetMissing(f"{path} does not exist")
    skipped: dict[str, int] = {}
    queries = _parse_queries(_read_jsonl(path), lambda rec: "", skipped)
    return QuerySet(name, queries, workspaces, store_dirs, "lines", skipped, str(path))


def _load_locomo(shape: str, conv: str) -> QuerySet:
    root = datasets_dir() / "locomo-dev"
    qfile = root / f"queries-{shape}.jsonl"
    if not qfile.is_file():
        raise DatasetMissing(f"LoCoMo data not found at {root} (the evaluation data lives "
                             "beside the project, in ../shared/datasets)")
    convs = list(LOCOMO_CONVS) if conv == "all" else [conv]
    workspaces: dict[str, Path | None] = {}
    stores: dict[str, Path | None] = {}
    for c in convs:
        ws = root / shape / c
        if not ws.is_dir():
            raise DatasetMissing(f"LoCoMo workspace {ws} not found")
        workspaces[c] = ws
        stores[c] = cache_dir() / "stores" / f"locomo-{shape}" / c
    skipped: dict[str, int] = {}
    queries = _parse_queries(
        _read_jsonl(qfile), lambda rec: rec.get("workspace") if rec.get("workspace") in
        workspaces else None, skipped)
    return QuerySet(f"locomo-{shape}:{conv}", queries, workspaces, stores, "lines", skipped,
                    f"LoCoMo dev, {shape} workspaces ({', '.join(convs)})")


def _safe_name(doc_id: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]", "_", doc_id)
    if name != doc_id:  # keep distinct ids distinct after cleaning
        name += "-" + hashlib.sha1(doc_id.encode()).hexdigest()[:8]
    return name


def beir_workspace(folder: Path, name: str) -> Path:
    """Write (once) a workspace of one ``memory/<id>.md`` per BEIR document; return its folder.

    The file holds ``# <title>``, a blank line and the text, as BEIR's BM25 baselines index title
    plus text. It is regenerated when the corpus file changes (size and mtime are checked).
    """
    corpus = folder / "corpus.jsonl"
    st = corpus.stat()
    stamp = f"{corpus.resolve()}|{st.st_size}|{int(st.st_mtime)}|v1"
    ws = cache_dir() / "workspaces" / name
    marker = ws / ".complete"
    if marker.is_file() and marker.read_text(encoding="utf-8") == stamp:
        return ws
    mem = ws / "memory"
    mem.mkdir(parents=True, exist_ok=True)
    for rec in _read_jsonl(corpus):
        title = str(rec.get("title") or "").strip()
        body = str(rec.get("text") or "").strip()
        text = f"# {title}\n\n{body}\n" if title else f"{body}\n"
        target = mem / f"{_safe_name(str(rec['_id']))}.md"
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
    marker.write_text(stamp, encoding="utf-8")
    return ws


def _load_beir(folder: Path, name: str) -> QuerySet:
    if not (folder / "corpus.jsonl").is_file():
        raise DatasetMissing(f"BEIR data not found at {folder} (the evaluation data lives "
                             "beside the project, in ../shared/datasets)")
    qrels: dict[str, list[str]] = {}
    qrel_file = folder / "qrels" / "test.tsv"
    with qrel_file.open(encoding="utf-8") as f:
        for n, line in enumerate(f):
            parts = line.rstrip("\n").split("\t")
            if (n == 0 and parts[0] == "query-id") or len(parts) < 3:
                continue
            if float(parts[2]) > 0:
                qrels.setdefault(parts[0], []).append(parts[1])
    ws = beir_workspace(folder, name)
    records = []
    for rec in _read_jsonl(folder / "queries.jsonl"):
        qid = str(rec["_id"])
        if qid in qrels:
            records.append({"qid": qid, "query": rec.get("text", ""), "category": "all",
                            "relevant": [{"path": f"memory/{_safe_name(d)}.md"}
                                         for d in qrels[qid]]})
    skipped: dict[str, int] = {}
    queries = _parse_queries(records, lambda rec: "", skipped)
    return QuerySet(name, queries, {"": ws}, {"": cache_dir() / "stores" / name / "corpus"},
                    "files", skipped, f"BEIR {name} (test qrels), one file per document")


# =============================================================================== metrics


def _covers(path: str, start: int, end: int, ev: Evidence) -> bool:
    return path == ev.path and (ev.line is None or start <= ev.line <= end)


def _max_new_unit_sequence(unit_sets: Sequence[frozenset[int]], depth: int) -> int:
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
                  ideal_chunks: int | None = None, ideal_files: int | None = None
                  ) -> dict[str, Any]:
    """The protocol's metrics for one ranked list of ``(path, start_line, end_line)``.

    Duplicates (same path and lines) are collapsed first. A chunk gains 1 when it covers an
    evidence unit no earlier chunk covered. ``ideal_chunks`` / ``ideal_files`` are how many gains
    the best ranking of this index could earn (see :func:`ideal_counts`); without them the ideal
    assumes every unit can be found by its own chunk. Returns ``{"chunk": {...}, "file": {...},
    "n_results": int}`` with ``recall@k``, ``success@k``, ``mrr@10``, ``ndcg@10`` and
    ``first_rank`` (``None`` when no relevant chunk is in the list).
    """
    seen: set[tuple[str, int, int]] = set()
    unique = []
    for item in ranked:
        if item not in seen:
            seen.add(item)
            unique.append(item)
    units = list(dict.fromkeys(relevant))
    covered: set[int] = set()
    gains: list[int] = []
    hit_flags: list[bool] = []
    covered_at: list[int] = []
    for path, start, end in unique:
        cov = {i for i, ev in enumerate(units) if _covers(path, start, end, ev)}
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
    return {"chunk": chunk, "file": file, "n_results": len(unique)}


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
                                  if _covers(r.path, r.start_line, r.end_line, ev)))
    return _max_new_unit_sequence(sets, DEPTH), min(files, DEPTH)


METRIC_KEYS: tuple[str, ...] = (*(f"recall@{k}" for k in KS), *(f"success@{k}" for k in KS),
                                "mrr@10", "ndcg@10")


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
    out["zero_result_rate"] = _mean([1.0 if r["metrics"]["n_results"] == 0 else 0.0 for r in rows])
    out["mean_results"] = _mean([r["metrics"]["n_results"] for r in rows])
    lat = sorted(r["latency_ms"] for r in rows)
    if lat:
        out["latency_ms"] = {"mean": statistics.fmean(lat), "p50": lat[len(lat) // 2],
                             "p95": lat[min(len(lat) - 1, int(0.95 * len(lat)))]}
    out["no_relevant_in_index"] = sum(1 for r in rows if r["ideal_chunks"] == 0)
    return out


# =============================================================================== configurations


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


def _as_configs(settings: SearchSettings | Sequence[Any] | Mapping[str, SearchSettings] | None,
                index: MemoryIndex | None) -> list[EvalConfig]:
    if settings is None:
        if index is None:
            raise ValueError("no settings and no index to take them from")
        return [EvalConfig(index.config.profile, index.settings())]
    if isinstance(settings, SearchSettings):
        return [EvalConfig(_label_for(settings, index), settings)]
    if isinstance(settings, EvalConfig):
        return [settings]
    if isinstance(settings, Mapping):
        return [EvalConfig(str(k), v) for k, v in settings.items()]
    out = []
    for i, s in enumerate(settings, 1):
        if isinstance(s, EvalConfig):
            out.append(s)
        elif isinstance(s, tuple):
            out.append(EvalConfig(str(s[0]), s[1]))
        else:
            out.append(EvalConfig(f"config-{i}", s))
    return out


def _label_for(settings: SearchSettings, index: MemoryIndex | None) -> str:
    """The profile whose settings these are, else the index's profile, else "config"."""
    for name in PROFILES:
        if settings == profile_settings(name):
            return name
    return index.config.profile if index else "config"


def _leg_key(s: SearchSettings) -> tuple[Any, ...]:
    """What the candidate fetch depends on (the keyword query's construction)."""
    return (s.keyword_query, s.cjk_bigrams)


def _ranked(config: EvalConfig, cands: Candidates) -> tuple[list[tuple[str, int, int]], Any]:
    """The list the agent would get under ``config`` (or the leg's own top :data:`DEPTH`)."""
    if config.leg is not None:
        leg = cands.vector if config.leg == "vector" else cands.keyword
        return [(cands.chunks[h.id].path, cands.chunks[h.id].start_line,
                 cands.chunks[h.id].end_line) for h in leg[:DEPTH]], None
    res = fuse(cands, config.settings)
    return [(h.path, h.start_line, h.end_line) for h in res.hits], res


# =============================================================================== collection


@dataclass
class _Collected:
    """One query's fetched candidates (per keyword-leg option) and its ideal counts."""

    query: EvalQuery
    cands: dict[tuple[Any, ...], Candidates]
    ideal_chunks: int
    ideal_files: int
    fetch_ms: dict[tuple[Any, ...], float]


def open_eval_index(query_set: QuerySet, key: str, *, profile: str | None = None,
                    provider: str | None = None, chunk_tokens: int | None = None,
                    chunk_overlap: int | None = None) -> MemoryIndex:
    """Open the index of one of ``query_set``'s workspaces (in the cache for shared data).

    The index file is named after the chunking mode, budget and provider, so that profiles and
    chunk sizes never overwrite each other's index.
    """
    ws = query_set.workspaces.get(key)
    if ws is None:
        raise ValueError(f"query set {query_set.name!r} has no workspace: pass an index or one")
    overrides: dict[str, Any] = {}
    if chunk_tokens or chunk_overlap is not None:
        ch: dict[str, Any] = {}
        if chunk_tokens:
            ch["tokens"] = chunk_tokens
        if chunk_overlap is not None:
            ch["overlap"] = chunk_overlap
        elif chunk_tokens:
            ch["overlap"] = chunk_tokens // 5
        overrides["chunking"] = ch
    store_dir = query_set.store_dirs.get(key)
    if store_dir is not None:
        tokens = chunk_tokens or 400
        overrides["store"] = {"path": str(store_dir / f"{{chunking}}-t{tokens}-{{provider}}"
                                                      ".sqlite")}
    return MemoryIndex.open(ws, profile=profile, provider=provider, overrides=overrides or None)


def _collect(index_or_workspace: MemoryIndex | str | os.PathLike[str] | None,
             query_set: QuerySet, configs: Sequence[EvalConfig], *, profile: str | None,
             provider: str | None, progress: Progress | None,
             chunk_tokens: int | None = None) -> tuple[list[_Collected], dict[str, Any]]:
    """Sync each workspace's index and fetch every query's candidates once per leg option."""
    prog = progress or (lambda stage, done, total: None)
    keys = list(dict.fromkeys(_leg_key(c.settings) for c in configs))
    by_ws: dict[str, list[EvalQuery]] = {}
    for q in query_set.queries:
        by_ws.setdefault(q.workspace, []).append(q)
    if index_or_workspace is not None and len(by_ws) > 1:
        raise ValueError(f"{query_set.name} is judged against {len(by_ws)} workspaces: evaluate "
                         "it on its own workspaces (index_or_workspace=None)")
    out: list[_Collected] = []
    info: dict[str, Any] = {"indexes": {}}
    total = len(query_set.queries)
    done = 0
    for ws_key, queries in by_ws.items():
        own = not isinstance(index_or_workspace, MemoryIndex)
        if isinstance(index_or_workspace, MemoryIndex):
            idx = index_or_workspace
        elif index_or_workspace is not None:
            idx = MemoryIndex.open(index_or_workspace, profile=profile, provider=provider)
        else:
            idx = open_eval_index(query_set, ws_key, profile=profile, provider=provider,
                                  chunk_tokens=chunk_tokens)
        try:
            idx.sync(progress=lambda stage, d, t, k=ws_key: prog(f"index {k or 'workspace'}:"
                                                                f" {stage}", d, t))
            st = idx.status()
            info["indexes"][ws_key or "workspace"] = {
                "workspace": str(idx.workspace), "store": str(idx.store_path),
                "chunks": st.get("chunks"), "files": st.get("files"),
                "provider": idx.choice.id, "model": idx.choice.model,
                "chunking": st.get("chunking"), "profile": idx.config.profile}
            prov = idx.choice.provider
            vectors, embed_ms = _embed_queries(prov, [q.query for q in queries])
            for q, qvec in zip(queries, vectors, strict=True):
                cands: dict[tuple[Any, ...], Candidates] = {}
                fetch_ms: dict[tuple[Any, ...], float] = {}
                for key in keys:
                    s = next(c.settings for c in configs if _leg_key(c.settings) == key)
                    t1 = time.perf_counter()
                    cands[key] = idx.candidates(q.query, settings=s, auto_sync=False,
                                                query_vector=qvec)
                    fetch_ms[key] = embed_ms + (time.perf_counter() - t1) * 1000
                ic, ifl = ideal_counts(idx, q.relevant)
                out.append(_Collected(q, cands, ic, ifl, fetch_ms))
                done += 1
                prog("query", done, total)
        finally:
            if own:
                idx.close()
    return out, info


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
        mat = provider.embed_documents(list(texts))
        vectors = [mat[i] for i in range(len(texts))]
    else:
        vectors = [provider.embed_query(t) for t in texts]
    return vectors, (time.perf_counter() - t0) * 1000 / len(texts)


def _evaluate(collected: Sequence[_Collected], config: EvalConfig) -> list[dict[str, Any]]:
    rows = []
    key = _leg_key(config.settings)
    for c in collected:
        cands = c.cands[key]
        t0 = time.perf_counter()
        ranked, _ = _ranked(config, cands)
        fuse_ms = (time.perf_counter() - t0) * 1000
        m = score_ranking(ranked, c.query.relevant, c.ideal_chunks, c.ideal_files)
        rows.append({
            "qid": c.query.qid, "query": c.query.query, "category": c.query.category,
            "workspace": c.query.workspace, "apart": c.query.apart,
            "ideal_chunks": c.ideal_chunks, "metrics": m,
            "latency_ms": c.fetch_ms[key] + fuse_ms,
            "results": [f"{p}#L{s}-L{e}" for p, s, e in ranked[:DEPTH]],
        })
    return rows


# =============================================================================== leg audit


def leg_audit(collected: Sequence[_Collected], config: EvalConfig) -> dict[str, Any]:
    """Per query: which leg found a gold chunk (within the pool fusion sees), and what the gate did.

    The summary counts the main set only (like the metrics); per-query rows cover every query.

    ``vector_rank`` / ``keyword_rank``: rank of the first relevant chunk in each leg's candidate
    list (cut to ``max_results × candidate_multiplier``, as fusion cuts it). ``gated`` counts
    relevant chunks that fusion scored but the minScore gate removed; ``cut`` those that passed
    the gate but fell below ``max_results``.
    """
    s = config.settings
    n = s.candidate_count()
    rows = []
    summary = {"both": 0, "vector only": 0, "keyword only": 0, "neither": 0,
               "gold gated (queries)": 0, "gold gated (chunks)": 0, "all gold gated": 0,
               "gold cut by maxResults (queries)": 0}
    for c in collected:
        cands = c.cands[_leg_key(s)]
        rel = c.query.relevant

        def is_rel(cid: str, cands: Candidates = cands, rel: tuple[Evidence, ...] = rel) -> bool:
            ch = cands.chunks[cid]
            return any(_covers(ch.path, ch.start_line, ch.end_line, ev) for ev in rel)

        vr = next((h.rank for h in cands.vector[:n] if is_rel(h.id)), None)
        kr = next((h.rank for h in cands.keyword[:n] if is_rel(h.id)), None)
        found = ("both" if vr and kr else "vector only" if vr else "keyword only" if kr
                 else "neither")
        res = fuse(cands, s)
        kept = [h for h in res.hits if is_rel(h.id)]
        gated = [h for h in res.below_gate if is_rel(h.id) and h.score < s.min_score]
        cut = [h for h in res.below_gate if is_rel(h.id) and h.score >= s.min_score]
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
                                         if is_rel(h.id)), None)})
    return {"config": config.label, "pool": n, "summary": summary, "per_query": rows}


# =============================================================================== reports


@dataclass
class RunResult:
    """One configuration's metrics and per-query rows."""

    label: str
    settings: dict[str, Any]
    leg: str | None
    metrics: dict[str, Any]
    per_query: list[dict[str, Any]]


@dataclass
class EvalReport:
    """What :func:`run_eval` measured: one :class:`RunResult` per configuration.

    ``metrics`` and ``per_query`` are the first (primary) configuration's; ``runs`` has them all
    (legs included when asked); ``audit`` is the primary configuration's leg audit.
    """

    query_set: str
    level: str
    runs: list[RunResult]
    skipped: dict[str, int]
    info: dict[str, Any] = field(default_factory=dict)
    audit: dict[str, Any] | None = None

    @property
    def metrics(self) -> dict[str, Any]:
        return self.runs[0].metrics

    @property
    def per_query(self) -> list[dict[str, Any]]:
        return self.runs[0].per_query

    def run(self, label: str) -> RunResult:
        """The run labelled ``label`` (KeyError if there is none)."""
        for r in self.runs:
            if r.label == label:
                return r
        raise KeyError(label)

    def to_dict(self, per_query: bool = True) -> dict[str, Any]:
        """A JSON-ready dict (per-query rows included unless ``per_query`` is False)."""
        return {
            "query_set": self.query_set, "level": self.level, "skipped": self.skipped,
            "info": self.info,
            "runs": [{"label": r.label, "leg": r.leg, "settings": r.settings,
                      "metrics": r.metrics, **({"per_query": r.per_query} if per_query else {})}
                     for r in self.runs],
            **({"audit": self.audit} if self.audit else {}),
        }

    def to_json(self, per_query: bool = True) -> str:
        return json.dumps(self.to_dict(per_query), ensure_ascii=False, indent=1)

    def to_markdown(self, *, categories: bool = True) -> str:
        """Tables: the main metrics per run, then per category, then the leg audit."""
        lines = [f"### {self.query_set}", ""]
        n = self.runs[0].metrics["n_queries"] if self.runs else 0
        skipped = ", ".join(f"{v} {k}" for k, v in self.skipped.items()) or "none"
        lines.append(f"{n} queries (skipped: {skipped}); chunk level unless marked *file*.")
        lines.append("")
        lines += markdown_table([(r.label, r.metrics) for r in self.runs])
        if categories and self.runs and len(self.runs[0].metrics["by_category"]) > 1:
            lines += ["", "Success@5 / Recall@5 by category (chunk level):", ""]
            cats = list(self.runs[0].metrics["by_category"])
            lines.append("| run | " + " | ".join(
                f"{c} ({self.runs[0].metrics['by_category'][c]['n_queries']})" for c in cats)
                + " |")
            lines.append("|---" * (len(cats) + 1) + "|")
            for r in self.runs:
                bc = r.metrics["by_category"]
                lines.append(f"| {r.label} | " + " | ".join(
                    f"{bc[c]['chunk']['success@5']:.3f} / {bc[c]['chunk']['recall@5']:.3f}"
                    if c in bc else "–" for c in cats) + " |")
        apart = [(r.label, r.metrics["apart"]) for r in self.runs if "apart" in r.metrics]
        if apart:
            lines += ["", "Reported apart (adversarial: false premise):", ""]
            lines += markdown_table(apart)
        if self.audit:
            lines += ["", f"Leg audit of {self.audit['config']} (pool {self.audit['pool']} per "
                      "leg):", ""]
            lines.append("| " + " | ".join(self.audit["summary"]) + " |")
            lines.append("|---" * len(self.audit["summary"]) + "|")
            lines.append("| " + " | ".join(str(v) for v in self.audit["summary"].values())
                         + " |")
        return "\n".join(lines) + "\n"


def markdown_table(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """One line per labelled metrics dict: the protocol's headline numbers."""
    head = ("| run | S@1 | S@5 | R@5 | R@10 | MRR@10 | nDCG@10 | file S@5 | file nDCG@10 | "
            "zero | results | p50 ms |")
    out = [head, "|---" * 12 + "|"]
    for label, m in rows:
        c, f = m["chunk"], m["file"]
        lat = m.get("latency_ms", {}).get("p50", float("nan"))
        out.append(
            f"| {label} | {c['success@1']:.3f} | {c['success@5']:.3f} | {c['recall@5']:.3f} | "
            f"{c['recall@10']:.3f} | {c['mrr@10']:.3f} | {c['ndcg@10']:.3f} | "
            f"{f['success@5']:.3f} | {f['ndcg@10']:.3f} | {m['zero_result_rate']:.1%} | "
            f"{m['mean_results']:.1f} | {lat:.0f} |")
    return out


def _settings_dict(s: SearchSettings) -> dict[str, Any]:
    return asdict(s)


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
    reports indexing and querying.
    """
    qs = load_query_set(query_set) if isinstance(query_set, str) else query_set
    qs = qs.limited(limit)
    idx = index_or_workspace if isinstance(index_or_workspace, MemoryIndex) else None
    if settings is None and idx is None:
        settings = {profile or "default": profile_settings(profile or "default")}
    configs = _as_configs(settings, idx)
    if legs:
        configs += leg_configs(configs[0].settings)
    collected, info = _collect(index_or_workspace, qs, configs, profile=profile,
                               provider=provider, progress=progress, chunk_tokens=chunk_tokens)
    runs = []
    for cfg in configs:
        rows = _evaluate(collected, cfg)
        runs.append(RunResult(cfg.label, _settings_dict(cfg.settings), cfg.leg, aggregate(rows),
                              rows))
    report = EvalReport(qs.name, qs.level, runs, dict(qs.skipped), info)
    if audit and configs[0].leg is None:
        report.audit = leg_audit(collected, configs[0])
    return report


# =============================================================================== sweep

DEFAULT_GRID: dict[str, list[Any]] = {
    "vector_weight": [round(0.1 * i, 1) for i in range(11)],
    "min_score": [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5],
}


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
        base = idx.settings() if idx else profile_settings(profile or "default")
    grid = dict(grid or DEFAULT_GRID)
    names = list(grid)
    combos = [dict(zip(names, vals, strict=True)) for vals in itertools.product(*grid.values())]
    configs = []
    for combo in combos:
        s = replace(base, **combo)
        if "vector_weight" in combo and "text_weight" not in combo:
            s = replace(s, text_weight=round(1.0 - float(combo["vector_weight"]), 6))
        configs.append(EvalConfig(json.dumps(combo), s))
    collected, _ = _collect(index_or_workspace, qs, configs[:1] + [
        c for c in configs if _leg_key(c.settings) != _leg_key(configs[0].settings)],
        profile=profile, provider=provider, progress=progress, chunk_tokens=chunk_tokens)
    rows = []
    for i, (combo, cfg) in enumerate(zip(combos, configs, strict=True)):
        m = aggregate(_evaluate(collected, cfg))
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


def sweep_markdown(rows: Sequence[Mapping[str, Any]], metric: str = "success@5") -> str:
    """A pivot of ``metric`` over the first two swept fields (others: best value shown)."""
    if not rows:
        return ""
    keys = [k for k in rows[0] if k not in (*METRIC_KEYS, "file_success@5", "file_ndcg@10",
                                            "zero_result_rate", "mean_results", "n_queries")]
    if len(keys) < 2:
        out = [f"| {keys[0] if keys else 'config'} | {metric} |", "|---|---|"]
        out += [f"| {r.get(keys[0]) if keys else ''} | {r[metric]:.3f} |" for r in rows]
        return "\n".join(out) + "\n"
    varying = [k for k in keys if len({json.dumps(r[k]) for r in rows}) > 1]
    keys = varying + [k for k in keys if k not in varying]
    if len(varying) < 2:
        out = [f"| {keys[0]} | {metric} |", "|---|---|"]
        out += [f"| {r[keys[0]]} | {r[metric]:.3f} |" for r in rows]
        return "\n".join(out) + "\n"
    a, b = keys[0], keys[1]
    avals = list(dict.fromkeys(r[a] for r in rows))
    bvals = list(dict.fromkeys(r[b] for r in rows))
    cell: dict[tuple[Any, Any], float] = {}
    for r in rows:
        k = (r[a], r[b])
        cell[k] = max(cell.get(k, -1.0), r[metric])
    out = [f"{metric}: rows {a}, columns {b}" + (f" (best over {', '.join(keys[2:])})"
                                                 if keys[2:] else ""), "",
           f"| {a} \\ {b} | " + " | ".join(str(v) for v in bvals) + " |",
           "|---" * (len(bvals) + 1) + "|"]
    for av in avals:
        out.append(f"| {av} | " + " | ".join(
            f"{cell[(av, bv)]:.3f}" if (av, bv) in cell else "–" for bv in bvals) + " |")
    best = max(rows, key=lambda r: r[metric])
    out += ["", "best: " + ", ".join(f"{k}={best[k]}" for k in keys) + f" → {best[metric]:.3f}"]
    return "\n".join(out) + "\n"


# =============================================================================== compare


def compare(report_a: EvalReport | RunResult, report_b: EvalReport | RunResult,
            metric: str = "ndcg@10") -> list[dict[str, Any]]:
    """Queries on which two runs differ in ``metric`` (chunk level), biggest difference first.

    Each row: ``qid``, ``query``, ``category``, both values and first relevant ranks, ``delta``
    (b − a) and ``winner`` (the label of the better run). Reports are compared through their
    primary run; queries are matched by ``(workspace, qid)``.
    """
    ra = report_a.runs[0] if isinstance(report_a, EvalReport) else report_a
    rb = report_b.runs[0] if isinstance(report_b, EvalReport) else report_b
    la, lb = ra.label, rb.label
    if la == lb:
        la, lb = f"{la} (a)", f"{lb} (b)"
    by_b = {(r["workspace"], r["qid"]): r for r in rb.per_query}
    out = []
    for r in ra.per_query:
        o = by_b.get((r["workspace"], r["qid"]))
        if o is None:
            continue
        va, vb = r["metrics"]["chunk"][metric], o["metrics"]["chunk"][metric]
        if abs(va - vb) < 1e-12:
            continue
        out.append({"qid": r["qid"], "query": r["query"], "category": r["category"],
                    "workspace": r["workspace"], "a": va, "b": vb, "delta": vb - va,
                    "a_first_rank": r["metrics"]["chunk"]["first_rank"],
                    "b_first_rank": o["metrics"]["chunk"]["first_rank"],
                    "winner": lb if vb > va else la})
    out.sort(key=lambda x: -abs(x["delta"]))
    return out


def compare_markdown(rows: Sequence[Mapping[str, Any]], limit: int = 30) -> str:
    """The win/loss list as a Markdown table (the ``limit`` biggest differences)."""
    wins: dict[str, int] = {}
    for r in rows:
        wins[r["winner"]] = wins.get(r["winner"], 0) + 1
    out = ["Wins: " + ", ".join(f"{k} {v}" for k, v in wins.items()) if wins
           else "No query differs.", ""]
    if rows:
        out += ["| qid | category | query | a (rank) | b (rank) | winner |",
                "|---|---|---|---|---|---|"]
        for r in rows[:limit]:
            q = r["query"].replace("|", "\\|")[:70]
            out.append(f"| {r['qid']} | {r['category']} | {q} | {r['a']:.2f} "
                       f"({r['a_first_rank'] or '–'}) | {r['b']:.2f} "
                       f"({r['b_first_rank'] or '–'}) | {r['winner']} |")
    return "\n".join(out) + "\n"
