"""Your own labels: queries and relevance judgements kept beside a workspace's index, as qrels.

A label folder (:func:`labels_dir`: ``labels/`` beside the index file, e.g.
``<workspace>/.memory/labels/``; never among the workspace's Markdown) holds ``queries.jsonl``
(``{qid, query, category}`` a line) and ``qrels.txt`` (TREC qrels: ``qid 0 docid rel``, a docid
being ``path#Lstart-Lend`` for a marked hit, ``path#L<line>`` for a labelled line or ``path`` for
a whole file; ``rel`` 0 for a hit marked not relevant). The demo ships its labels in the same
form (``examples/demo-labels/``).

:func:`load_labelled` turns any queries file (our JSONL, BEIR ``queries.jsonl`` or TREC topics)
and a qrels file (TREC or BEIR TSV) into a :class:`~.datasets.QuerySet` the evaluator runs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..base.fileio import atomic_write, iter_jsonl
from ..base.locations import REPO_ROOT
from .datasets import APART_CATEGORIES, EvalQuery, QuerySet
from .trec import (
    Qrels,
    docid_of_evidence,
    evidence_of,
    format_qrels,
    read_qrels,
    read_topics,
)

DEMO_LABELS = REPO_ROOT / "examples" / "demo-labels"
QUERIES_FILE = "queries.jsonl"
QRELS_FILE = "qrels.txt"


def labels_dir(index_path: str | os.PathLike[str]) -> Path:
    """The label folder of the index file ``index_path`` (``labels/`` beside it)."""
    return Path(index_path).parent / "labels"


def load_labelled(queries: str | os.PathLike[str], qrels: str | os.PathLike[str], *,
                  workspace: str | os.PathLike[str] | None = None, name: str | None = None,
                  doc_ids: Mapping[str, str] | None = None) -> QuerySet:
    """A query set from a queries file and a qrels file, judged against ``workspace``.

    ``doc_ids`` maps workspace paths to the qrels' document ids (a BEIR folder's); without it a
    qrels id is a workspace path, ``path#L<line>`` or ``path#Lstart-Lend``. Queries with no
    relevant judgement are left out (counted in ``skipped``).
    """
    texts = read_topics(queries)
    judged = read_qrels(qrels)
    categories = _categories(Path(queries))
    to_path = {v: k for k, v in (doc_ids or {}).items()}
    out: list[EvalQuery] = []
    skipped: dict[str, int] = {}
    for qid, text in texts.items():
        rel = tuple(dict.fromkeys(
            evidence_of(to_path.get(d, d)) for d, r in judged.get(qid, {}).items() if r > 0))
        if not text.strip():
            skipped["empty query"] = skipped.get("empty query", 0) + 1
        elif not rel:
            skipped["no evidence"] = skipped.get("no evidence", 0) + 1
        else:
            cat = categories.get(qid, "all")
            out.append(EvalQuery(qid, text.strip(), cat, rel, "", cat in APART_CATEGORIES))
    unknown = len(set(judged) - set(texts))
    if unknown:
        skipped["judged but not in the queries file"] = unknown
    ws = Path(os.path.expanduser(str(workspace))) if workspace else None
    return QuerySet(name or Path(queries).stem, out, {"": ws}, {"": None}, "lines", skipped,
                    f"{queries} + {qrels}", dict(doc_ids or {}))


def _categories(path: Path) -> dict[str, str]:
    """``category`` (or ``category_name``) of our JSONL's queries, where it names one."""
    out: dict[str, str] = {}
    try:
        recs = [line.value for line in iter_jsonl(path) if isinstance(line.value, dict)]
    except OSError:
        return out
    for rec in recs:
        cat = rec.get("category_name") or rec.get("category")
        qid = rec.get("qid", rec.get("_id"))
        if qid is not None and cat is not None:
            out[str(qid)] = str(cat)
    return out


def load_beir_labelled(folder: str | os.PathLike[str], qrels: str | os.PathLike[str]
                       ) -> QuerySet:
    """A BEIR folder's queries judged by another qrels file (its own ids)."""
    from .datasets import load_query_set

    base = load_query_set(str(folder))
    qs = load_labelled(Path(folder) / "queries.jsonl", qrels, workspace=base.workspaces[""],
                       name=base.name, doc_ids=base.doc_ids)
    qs.store_dirs = dict(base.store_dirs)
    qs.level = "files"
    return qs


class LabelStore:
    """The labels of one workspace: read, mark a hit, import a file, evaluate.

    Every change rewrites both files atomically; nothing else in the workspace is touched.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.queries_file = self.folder / QUERIES_FILE
        self.qrels_file = self.folder / QRELS_FILE

    def exists(self) -> bool:
        return self.queries_file.is_file() and self.qrels_file.is_file()

    def queries(self) -> dict[str, dict[str, Any]]:
        """qid → ``{qid, query, category}``, in file order."""
        if not self.queries_file.is_file():
            return {}
        texts = read_topics(self.queries_file)
        cats = _categories(self.queries_file)
        return {q: {"qid": q, "query": t, "category": cats.get(q, "all")}
                for q, t in texts.items()}

    def qrels(self) -> Qrels:
        return read_qrels(self.qrels_file) if self.qrels_file.is_file() else {}

    def qid_of(self, query: str) -> str | None:
        """The qid of a query already labelled with this exact text (spaces collapsed)."""
        want = " ".join(query.split())
        return next((q for q, rec in self.queries().items()
                     if " ".join(rec["query"].split()) == want), None)

    def judgements(self, query: str) -> dict[str, int]:
        """docid → relevance of the hits marked for ``query`` (empty when none)."""
        qid = self.qid_of(query)
        return dict(self.qrels().get(qid, {})) if qid else {}

    def _write(self, queries: Mapping[str, Mapping[str, Any]], qrels: Qrels) -> None:
        # both texts made (and so checked) before either file is written: a refusal leaves
        # the two files as they were, never the queries rewritten and the qrels not
        judgements = format_qrels(qrels).encode("utf-8")
        text = "".join(json.dumps(dict(rec), ensure_ascii=False) + "\n"
                       for rec in queries.values())
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(self.queries_file, text.encode("utf-8"), durable=False, mode=0o644)
        atomic_write(self.qrels_file, judgements, durable=False, mode=0o644)

    def mark(self, query: str, docid: str, relevant: bool | None,
             category: str = "labelled") -> str:
        """Judge ``docid`` for ``query``: relevant, not relevant, or (``None``) unjudged again.

        Returns the query's qid (a new ``label-NNNN`` for a query not labelled before).
        """
        if not query.strip():
            raise ValueError("a label needs a query")
        if not docid or any(c.isspace() for c in docid):
            raise ValueError(f"document id {docid!r}: empty or has white space")
        queries, qrels = self.queries(), self.qrels()
        qid = self.qid_of(query)
        if qid is None:
            used = {int(m.group(1)) for q in queries if (m := re.fullmatch(r"label-(\d+)", q))}
            qid = f"label-{max(used, default=0) + 1:04d}"
            queries[qid] = {"qid": qid, "query": " ".join(query.split()), "category": category}
        judged = qrels.setdefault(qid, {})
        if relevant is None:
            judged.pop(docid, None)
        else:
            judged[docid] = 1 if relevant else 0
        self._write(queries, qrels)
        return qid

    def import_files(self, queries: str | os.PathLike[str],
                     qrels: str | os.PathLike[str] | None = None) -> int:
        """Add the queries (and judgements) of uploaded files; returns how many queries.

        ``queries`` alone must be our JSONL with ``relevant`` lists; with ``qrels`` it may be any
        queries file :func:`read_topics` reads. Imported qids keep their own names; a qid
        already present is replaced.
        """
        from .datasets import load_query_set

        qs = (load_labelled(queries, qrels) if qrels is not None
              else load_query_set(str(queries)))
        graded = read_qrels(qrels) if qrels is not None else {}
        have, judged = self.queries(), self.qrels()
        for q in qs.queries:
            have[q.qid] = {"qid": q.qid, "query": q.query, "category": q.category}
            # the file's own grades (2, 3…) and explicit 0s, not every judgement flattened to 1
            judged[q.qid] = (dict(graded[q.qid]) if q.qid in graded
                             else {docid_of_evidence(ev): 1 for ev in q.relevant})
        self._write(have, judged)
        return len(qs.queries)

    def query_set(self, workspace: str | os.PathLike[str] | None = None,
                  name: str = "labels") -> QuerySet:
        """The labels as a query set judged against ``workspace`` (None: the index given)."""
        if not self.exists():
            raise FileNotFoundError(f"no labels in {self.folder}")
        return load_labelled(self.queries_file, self.qrels_file, workspace=workspace,
                             name=name)

