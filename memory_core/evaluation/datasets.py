"""Labelled query sets: what is asked, what counts as relevant, and which workspace judges it.

Data formats (see ``../shared/datasets/README.md``, whose protocol the evaluator implements):

* LoCoMo-style query files, one JSON object a line: ``{qid, query, category, relevant: [{path,
  line}]}``, judged against one workspace (``path`` workspace-relative, ``line`` 1-based; for
  session transcripts, JSONL line numbers, which is what the index stores for session chunks).
  An optional ``asked`` (``2026-11-10``) says when the question is asked: "last week" in it
  then means the same days on every run (without it, the clock's today).
* BEIR folders (``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv``): the corpus is written
  once to a cache folder as a workspace of one ``memory/<id>.md`` per document (title, then text),
  and a chunk is relevant when its file is.

The data under ``../shared/datasets`` is licensed for evaluation only: it is read in place, never
copied into the project; generated workspaces and indexes live under :func:`cache_dir`.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..base.dates import asked_ms
from ..base.fileio import atomic_write, iter_jsonl
from ..base.locations import REPO_ROOT, cache_root, datasets_dir

DEMO_WORKSPACE = REPO_ROOT / "examples" / "demo-workspace"
#: The demos' query sets: name → (labels, workspace). ``demo-home`` is the rich demo
#: (``scripts/make_demo_home.py``): an OpenClaw home's workspace.
DEMOS: dict[str, tuple[Path, Path]] = {
    "demo": (REPO_ROOT / "examples" / "demo-queries.jsonl", DEMO_WORKSPACE),
    "demo-home": (REPO_ROOT / "examples" / "demo-home-queries.jsonl",
                  REPO_ROOT / "examples" / "demo-home" / "workspace")}
LOCOMO_CONVS: tuple[str, ...] = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")
BEIR_SETS: dict[str, str] = {"xquad-en": "xquad/beir-en", "xquad-zh": "xquad/beir-zh",
                             "scifact": "scifact"}
#: LoCoMo's category numbers, as the benchmark's own evaluation code names them.
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                     5: "adversarial"}
#: Categories reported apart from the main set (their premise is false: used for abstention).
APART_CATEGORIES = frozenset({"adversarial"})


def cache_dir() -> Path:
    """Where generated workspaces and evaluation indexes live (never inside the project)."""
    return cache_root() / "eval"


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
    #: when the query is asked (epoch ms; LongMemEval's question date): relative dates in it
    #: count from here, not from the clock (:func:`.runner.asked_settings`)
    now_ms: int | None = None


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
    #: workspace path → the dataset's own document id (BEIR), for TREC runs in its ids
    doc_ids: dict[str, str] = field(default_factory=dict)
    #: also score LongMemEval's session-level metrics (files are sessions; see
    #: :func:`~memory_core.evaluation.metrics.session_metrics`)
    sessions: bool = False

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
    out = [name for name, (queries, ws) in DEMOS.items() if queries.is_file() and ws.is_dir()]
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


#: Named query sets whose loader lives in a module of its own, by the name's prefix
#: (``longmemeval-s`` → :func:`.longmemeval.load_longmemeval`). Such a module builds this one's
#: :class:`QuerySet`, so this one cannot import it: the package registers it at import.
NAMED_LOADERS: dict[str, Callable[[str], QuerySet]] = {}


def load_query_set(name_or_path: str | os.PathLike[str], workspace: str | os.PathLike[str]
                   | None = None) -> QuerySet:
    """Load a named query set, a LoCoMo-style ``.jsonl`` file or a BEIR folder.

    Names: ``demo``, ``demo-home`` (the rich demo); ``locomo-markdown:<conv>|all`` and
    ``locomo-sessions:<conv>|all``;
    ``xquad-en``, ``xquad-zh``, ``scifact``; ``longmemeval-s[-all][:PATH][#N]`` (one workspace
    per question, see :mod:`.longmemeval`). A ``.jsonl`` file is judged against ``workspace``
    (or the index given to :func:`run_eval`). Raises :class:`DatasetMissing` when the data is
    absent.
    """
    raw = str(name_or_path)
    if raw in DEMOS:
        return _load_jsonl(DEMOS[raw][0], raw, DEMOS[raw][1])
    m = re.fullmatch(r"locomo-(markdown|sessions)(?::([\w-]+))?", raw)
    if m:
        return _load_locomo(m.group(1), m.group(2) or "all")
    if raw in BEIR_SETS:
        return _load_beir(datasets_dir() / BEIR_SETS[raw], raw)
    for prefix, loader in NAMED_LOADERS.items():
        if raw.startswith(prefix):
            return loader(raw)
    p = Path(os.path.expanduser(raw))
    if p.is_dir() and (p / "corpus.jsonl").is_file():
        return _load_beir(p, p.name)
    if p.is_file():
        return _load_jsonl(p, p.stem, Path(workspace).expanduser() if workspace else None)
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


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a labelled file, streamed; other JSON values are skipped.

    A line that is not JSON (or not UTF-8) is an error naming ``file:line``: a label file with a
    broken line must be fixed, not silently scored on fewer queries.
    """
    for rec in iter_jsonl(path):
        if rec.error is not None:
            raise ValueError(f"{path}:{rec.line}: {rec.error}")
        if isinstance(rec.value, dict):
            yield rec.value


def _line_of(value: Any, rec: Mapping[str, Any]) -> int:
    """A relevant ``line`` as a line number, or a one-line ``ValueError`` naming the query
    (``1e999`` is infinite, ``2.5`` or ``"x"`` no line)."""
    ok = (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if not ok or int(value) < 1:
        raise ValueError(f"query {rec.get('qid', '?')}: relevant line {value!r} is not a line "
                         "number (a whole number from 1)")
    return int(value)


def _parse_queries(records: Iterable[Mapping[str, Any]], workspace_of: Callable[[Mapping[str, Any]],
                   str | None], skipped: dict[str, int]) -> list[EvalQuery]:
    out: list[EvalQuery] = []
    for rec in records:
        ws = workspace_of(rec)
        if ws is None:
            continue
        rel = tuple(dict.fromkeys(
            Evidence(str(r["path"]), _line_of(r["line"], rec) if r.get("line") is not None
                     else None)
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
                             apart=cat in APART_CATEGORIES or bool(rec.get("adversarial")),
                             now_ms=asked_ms(rec.get("asked"))))
    return out


def _load_jsonl(path: Path, name: str, workspace: Path | None) -> QuerySet:
    """A query file judged against one workspace (``None``: the index the caller gives)."""
    if not path.is_file():
        raise DatasetMissing(f"{path} does not exist")
    skipped: dict[str, int] = {}
    queries = _parse_queries(_read_jsonl(path), lambda rec: "", skipped)
    return QuerySet(name, queries, {"": workspace}, {"": None}, "lines", skipped, str(path))


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
            atomic_write(target, text.encode("utf-8"), durable=False)
    atomic_write(marker, stamp.encode("utf-8"), durable=False)
    return ws


def _load_beir(folder: Path, name: str) -> QuerySet:
    if not (folder / "corpus.jsonl").is_file():
        raise DatasetMissing(f"BEIR data not found at {folder} (the evaluation data lives "
                             "beside the project, in ../shared/datasets)")
    qrels: dict[str, list[str]] = {}
    with (folder / "qrels" / "test.tsv").open(encoding="utf-8") as f:
        for n, line in enumerate(f):
            parts = line.rstrip("\n").split("\t")
            if (n == 0 and parts[0] == "query-id") or len(parts) < 3:
                continue
            if float(parts[2]) > 0:
                qrels.setdefault(parts[0], []).append(parts[1])
    ws = beir_workspace(folder, name)
    records = [{"qid": str(rec["_id"]), "query": rec.get("text", ""), "category": "all",
                "relevant": [{"path": beir_path(d)} for d in qrels[str(rec["_id"])]]}
               for rec in _read_jsonl(folder / "queries.jsonl") if str(rec["_id"]) in qrels]
    skipped: dict[str, int] = {}
    queries = _parse_queries(records, lambda rec: "", skipped)
    doc_ids = {beir_path(str(rec["_id"])): str(rec["_id"])
               for rec in _read_jsonl(folder / "corpus.jsonl")}
    return QuerySet(name, queries, {"": ws}, {"": cache_dir() / "stores" / name / "corpus"},
                    "files", skipped, f"BEIR {name} (test qrels), one file per document",
                    doc_ids)


def beir_path(doc_id: str) -> str:
    """The workspace path of a BEIR document in the workspace :func:`beir_workspace` writes."""
    return f"memory/{_safe_name(doc_id)}.md"


# =============================================================================== workspaces


def _labelled_files(ws: Path) -> list[str]:
    return sorted([*(p.name for p in ws.glob("memory/*.md")),
                   *(p.name for p in ws.glob("sessions/*.jsonl"))])


def same_workspace(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """True when ``b`` is the folder ``a`` or a copy of it (same name, same diary and transcript
    file names): the labels of a query set judged against ``a`` then make sense on ``b``."""
    pa, pb = Path(a), Path(b)
    if pa.resolve() == pb.resolve():
        return True
    return pa.name == pb.name and _labelled_files(pa) == _labelled_files(pb)

