"""Saved runs: an evaluation kept as a TREC run file plus everything needed to trust it later.

A run folder (under :func:`runs_dir`, ``<cache>/runs`` unless told otherwise) holds:

* ``run.trec``: the ranked results (``qid Q0 docid rank score tag``; see :func:`trec_run`);
* ``qrels.txt``: the judgements of its query set in TREC form (``path`` or ``path#L<line>``, or
  the dataset's own ids for BEIR), so ``eval compare`` needs nothing else;
* ``run.json``: its name, time, settings, dataset, index identity (file, generation, chunks,
  provider, model, chunking), code version, metrics and per-query rows (hits, scores, gold flags).

:func:`compare_saved` compares two saved runs on their own per-query metrics (the protocol's, at
chunk or file level), so two chunkings can be compared fairly; :func:`side_by_side` lines up both
hit lists of one query with the gold hits marked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..base.fileio import atomic_write
from ..base.locations import REPO_ROOT, cache_root
from ..base.version import __version__
from .datasets import QuerySet
from .report import EvalReport, RunResult
from .run_compare import DEFAULT_THRESHOLD, Comparison, compare_per_query
from .run_metrics import RUN_METRICS
from .significance import DEFAULT_ROUNDS, DEFAULT_SEED
from .trec import Qrels, Run, docid_of_evidence, path_id, write_qrels, write_run

#: Bumped when a run folder's layout changes.
RUN_FORMAT = 1


def runs_dir(root: str | os.PathLike[str] | None = None) -> Path:
    """Where saved runs live: ``root``, else ``$MEMORY_WORKBENCH_RUNS``, else ``<cache>/runs``."""
    if root is not None:
        return Path(os.path.expanduser(str(root)))
    env = os.environ.get("MEMORY_WORKBENCH_RUNS")
    return Path(env) if env else cache_root() / "runs"


# =============================================================================== TREC views


def _key(row: Mapping[str, Any], qualified: bool) -> str:
    """A row's query id: ``workspace/qid`` when ``qualified`` (and it has a workspace)."""
    return f"{row['workspace']}/{row['qid']}" if qualified and row.get("workspace") else \
        str(row["qid"])


def _qualified(rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether qids repeat across workspaces (then a run's qid is ``workspace/qid``)."""
    return len({r["qid"] for r in rows}) < len(rows)


def trec_run(run: RunResult, level: str = "file", doc_ids: Mapping[str, str] | None = None
             ) -> Run:
    """``run``'s ranked results as a TREC run: chunk ids (``level="chunk"``) or files.

    At file level the chunks are collapsed to their files at their best rank (and score); a file
    is named by ``doc_ids`` (a BEIR document's id) where it has one, else by its path.
    """
    if level not in ("file", "chunk"):
        raise ValueError(f"run level {level!r}: expected file or chunk")
    ids = doc_ids or {}
    qualified = _qualified(run.per_query)
    out: Run = {}
    for row in run.per_query:
        scores = row.get("scores") or [0.0] * len(row["results"])
        best: dict[str, float] = {}  # a file's first (best) chunk ranks it
        for res, score in zip(row["results"], scores, strict=False):
            path, lines = res.rsplit("#L", 1)
            doc = (f"{path_id(path)}#L{lines}" if level == "chunk"
                   else ids.get(path, path_id(path)))
            best.setdefault(doc, float(score))
        out[_key(row, qualified)] = list(best.items())
    return out


def query_qrels(query_set: QuerySet, level: str = "file") -> Qrels:
    """The judgements of ``query_set`` as TREC qrels for a run of ``level``: the relevant files
    (by their BEIR ids where they have them) at file level; at chunk level each judged line as
    ``path#L<line>`` (which a chunk holding it matches, see :func:`~.run_metrics.resolve`)."""
    rows = [{"qid": q.qid, "workspace": q.workspace} for q in query_set.queries]
    qualified = _qualified(rows)
    out: Qrels = {}
    for q, row in zip(query_set.queries, rows, strict=True):
        if level == "file":
            docs = [query_set.doc_ids.get(ev.path, path_id(ev.path)) for ev in q.relevant]
        else:
            docs = [docid_of_evidence(ev) for ev in q.relevant]
        out[_key(row, qualified)] = dict.fromkeys(docs, 1)
    return out


# =============================================================================== saving


def code_version() -> dict[str, Any]:
    """This package's version and, from a git checkout, its commit (and whether it is dirty)."""
    out: dict[str, Any] = {"version": __version__}
    try:
        head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=10)
        if head.returncode == 0:
            out["commit"] = head.stdout.strip()
            dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain",
                                    "--untracked-files=no"], capture_output=True, text=True,
                                   timeout=10)
            out["dirty"] = bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass  # not a checkout (an installed wheel): the version says enough
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60] or "run"


@dataclass
class SavedRun:
    """A run folder, read back: ``meta`` is ``run.json``'s content."""

    path: Path
    meta: dict[str, Any]

    @property
    def id(self) -> str:
        return self.path.name

    @property
    def name(self) -> str:
        return str(self.meta.get("name") or self.id)

    @property
    def trec_file(self) -> Path:
        return self.path / "run.trec"

    @property
    def qrels_file(self) -> Path:
        return self.path / "qrels.txt"

    @property
    def per_query(self) -> list[dict[str, Any]]:
        return list(self.meta.get("per_query") or [])

    @property
    def level(self) -> str:
        """The level of its metrics: file for a set judged by files (BEIR), else chunk."""
        return "file" if self.meta.get("level") == "files" else "chunk"

    def summary(self) -> dict[str, Any]:
        """One row for a list of runs: what, when, on what, and its headline figures."""
        m = self.meta.get("metrics", {})
        return {"id": self.id, "name": self.name, "created": self.meta.get("created"),
                "query_set": self.meta.get("query_set"), "label": self.meta.get("label"),
                "n_queries": m.get("n_queries"),
                **{k: m.get(self.level, {}).get(k) for k in ("ndcg@10", "mrr@10", "success@5",
                                                      "recall@5")},
                "code": self.meta.get("code", {}).get("commit", "")[:10]
                or self.meta.get("code", {}).get("version")}


def save_run(report: EvalReport, query_set: QuerySet, name: str | None = None, *,
             run_index: int = 0, level: str = "file",
             root: str | os.PathLike[str] | None = None) -> SavedRun:
    """Save ``report.runs[run_index]`` as a run folder (see the module's docstring)."""
    run = report.runs[run_index]
    # microseconds: runs saved within one second still list in the order they were saved
    created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    name = name or f"{query_set.name} {run.label}"
    base = runs_dir(root)
    base.mkdir(parents=True, exist_ok=True)
    stem = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + _slug(name)
    folder, n = base / stem, 1
    while folder.exists():
        n += 1
        folder = base / f"{stem}-{n}"
    folder.mkdir()
    write_run(folder / "run.trec", trec_run(run, level, query_set.doc_ids), tag=_slug(name))
    write_qrels(folder / "qrels.txt", query_qrels(query_set, level))
    relevant = {(q.workspace, q.qid): [docid_of_evidence(ev) for ev in q.relevant]
                for q in query_set.queries}
    per_query = [{**{k: r[k] for k in ("qid", "query", "category", "workspace", "apart")},
                  "metrics": r["metrics"], "results": r["results"],
                  "scores": r.get("scores", []), "gold": r.get("gold", []),
                  "relevant": relevant.get((r["workspace"], r["qid"]), [])}
                 for r in run.per_query]
    meta = {"format": RUN_FORMAT, "name": name, "created": created, "label": run.label,
            "leg": run.leg, "query_set": query_set.name, "level": query_set.level,
            "run_level": level,
            "dataset": {"name": query_set.name, "description": query_set.description,
                        "n_queries": len(query_set.queries), "skipped": query_set.skipped,
                        "workspaces": {k: str(v) if v else None
                                       for k, v in query_set.workspaces.items()}},
            "settings": run.settings, "index": report.info.get("indexes", {}),
            "code": code_version(), "metrics": run.metrics, "per_query": per_query}
    data = json.dumps(meta, ensure_ascii=False, indent=1, default=str).encode("utf-8")
    atomic_write(folder / "run.json", data, durable=False, mode=0o644)
    return SavedRun(folder, meta)


# =============================================================================== reading


def load_run(ref: str | os.PathLike[str], root: str | os.PathLike[str] | None = None
             ) -> SavedRun:
    """A saved run by folder path or by id (its folder name) under :func:`runs_dir`."""
    p = Path(os.path.expanduser(str(ref)))
    if not (p / "run.json").is_file():
        p = runs_dir(root) / str(ref)
    meta_file = p / "run.json"
    if not meta_file.is_file():
        raise FileNotFoundError(f"no saved run {ref!s} (looked for {meta_file})")
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{meta_file}: not a run file ({e})") from None
    if not isinstance(meta, dict) or "per_query" not in meta:
        raise ValueError(f"{meta_file}: not a run file (no per-query rows)")
    problem = _damage(meta)
    if problem:
        raise ValueError(f"{meta_file}: a damaged run file ({problem})")
    return SavedRun(p, meta)


def _damage(meta: dict[str, Any]) -> str | None:
    """What in a ``run.json`` is not shaped as :func:`save_run` writes it (``None``: fine), so
    a damaged or hand-edited run is one line, not a traceback in ``eval runs``/``compare``."""
    for key in ("metrics", "code", "settings", "dataset"):
        if key in meta and not isinstance(meta[key], dict):
            return f"{key} is not an object"
    rows = meta["per_query"]
    if not isinstance(rows, list):
        return "per_query is not a list"
    for i, r in enumerate(rows, 1):
        if not isinstance(r, dict) or "qid" not in r:
            return f"per-query row {i} has no qid"
        if not isinstance(r.get("metrics"), dict) or not all(
                isinstance(r["metrics"].get(lvl, {}), dict) for lvl in ("file", "chunk")):
            return f"per-query row {i} has no metrics"
        for key in ("results", "scores", "gold"):
            if not isinstance(r.get(key, []), list):
                return f"per-query row {i}: {key} is not a list"
    return None


def list_runs(root: str | os.PathLike[str] | None = None) -> list[SavedRun]:
    """The saved runs under :func:`runs_dir`, newest first (unreadable folders are left out)."""
    base = runs_dir(root)
    out = []
    for d in sorted(base.iterdir()) if base.is_dir() else []:
        try:
            out.append(load_run(d))
        except (OSError, ValueError):
            continue
    return sorted(out, key=lambda r: (str(r.meta.get("created", "")), r.id), reverse=True)


def compare_saved(a: SavedRun, b: SavedRun, *, level: str | None = None,
                  metrics: Sequence[str] = RUN_METRICS, primary: str = "ndcg@10",
                  rounds: int = DEFAULT_ROUNDS, seed: int = DEFAULT_SEED,
                  threshold: int = DEFAULT_THRESHOLD) -> Comparison:
    """``a`` vs ``b`` on their own per-query metrics at ``level`` (default: the set's level),
    queries paired by (workspace, qid)."""
    return compare_rows(a.per_query, b.per_query, level or a.level, label_a=a.name,
                        label_b=b.name, metrics=metrics, primary=primary, rounds=rounds,
                        seed=seed, threshold=threshold)


def compare_rows(rows_a: Sequence[Mapping[str, Any]], rows_b: Sequence[Mapping[str, Any]],
                 level: str, *, label_a: str = "a", label_b: str = "b",
                 metrics: Sequence[str] = RUN_METRICS, primary: str = "ndcg@10",
                 rounds: int = DEFAULT_ROUNDS, seed: int = DEFAULT_SEED,
                 threshold: int = DEFAULT_THRESHOLD) -> Comparison:
    """Two evaluations' per-query rows (a report's or a saved run's; the main set, not the
    queries reported apart) compared on their ``level`` metrics."""
    def table(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        return {_key(r, True): r["metrics"].get(level, {}) for r in rows if not r.get("apart")}

    cmp = compare_per_query(table(rows_a), table(rows_b), metrics, label_a=label_a,
                            label_b=label_b, primary=primary,
                            queries={_key(r, True): r.get("query", "") for r in rows_a},
                            rounds=rounds, seed=seed, threshold=threshold)
    cmp.settings["level"] = level
    return cmp


def side_by_side(a: SavedRun, b: SavedRun, qid: str) -> list[dict[str, Any]]:
    """Both runs' hit lists for one query (``qid`` as :func:`compare_saved` names it), rank by
    rank, each hit with whether it holds gold evidence."""
    def row_of(run: SavedRun) -> dict[str, Any]:
        return next((r for r in run.per_query if _key(r, True) == qid),
                    {"results": [], "gold": [], "scores": []})

    ra, rb = row_of(a), row_of(b)
    n = max(len(ra["results"]), len(rb["results"]))
    out = []
    for i in range(n):
        item: dict[str, Any] = {"rank": i + 1}
        for tag, r in (("A", ra), ("B", rb)):
            has = i < len(r["results"])
            gold, scores = r.get("gold", []), r.get("scores", [])
            item[f"{tag} hit"] = r["results"][i] if has else ""
            item[f"{tag} gold"] = has and i < len(gold) and bool(gold[i])
            item[f"{tag} score"] = scores[i] if has and i < len(scores) else None
        out.append(item)
    return out
