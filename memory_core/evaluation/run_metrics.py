"""Standard IR metrics of a TREC run against qrels, as ``ranx`` and ``trec_eval`` define them.

Per query: ``ndcg@10`` (gain = the graded relevance, discount ``log2(rank + 1)``, the ideal from
the qrels' own grades: ``ranx``'s ``ndcg``), ``mrr@10`` (1 / rank of the first relevant document
within 10), ``recall@k`` (relevant documents in the top k / all relevant), ``success@k`` (1 when
one is in the top k; ``ranx``'s ``hit_rate``) and ``first_rank``. A document is relevant when its
grade is ≥ 1. Queries are those of the qrels with at least one relevant document; a query the run
does not answer scores 0 (``ranx``'s ``make_comparable``).

These differ on purpose from :mod:`.metrics` (the protocol's chunk-level metrics, where a chunk
gains only for evidence lines no earlier chunk covered): they are the field's, for files anyone
can read, and they score whatever document ids the two files share.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .trec import CHUNK_ID, evidence_of

#: The metrics ``eval compare`` reports, with these spellings as JSON keys.
RUN_METRICS: tuple[str, ...] = ("ndcg@10", "mrr@10", "recall@5", "recall@10", "success@1",
                                "success@5", "success@10")


def _cut(metric: str) -> int:
    return int(metric.rsplit("@", 1)[1])


def score_query(ranked: Sequence[str], judged: Mapping[str, int],
                metrics: Sequence[str] = RUN_METRICS) -> dict[str, Any]:
    """The metrics of one ranked list of document ids against its judgements."""
    relevant = {d for d, r in judged.items() if r > 0}
    first = next((i + 1 for i, d in enumerate(ranked) if d in relevant), None)
    out: dict[str, Any] = {"first_rank": first}
    for m in metrics:
        name, k = m.rsplit("@", 1)[0], _cut(m)
        top = ranked[:k]
        if name == "ndcg":
            dcg = sum(max(judged.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(top))
            ideal = sorted((r for r in judged.values() if r > 0), reverse=True)[:k]
            idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
            out[m] = dcg / idcg if idcg > 0 else 0.0
        elif name == "mrr":
            out[m] = 1.0 / first if first is not None and first <= k else 0.0
        elif name == "recall":
            out[m] = (sum(1 for d in top if d in relevant) / len(relevant)) if relevant else 0.0
        elif name == "success":
            out[m] = 1.0 if first is not None and first <= k else 0.0
        else:
            raise ValueError(f"unknown metric {m!r} (known: {', '.join(RUN_METRICS)})")
    return out


def resolve(ranked: Sequence[str], judged: Mapping[str, int]) -> list[str]:
    """``ranked`` in the judgements' ids: a chunk id (``path#Ls-Le``) that is not judged itself
    stands for the judged line it holds (``path#L<n>``) or its judged file (``path``).

    Ids that match exactly are kept as they are (so BEIR and TREC files score as every tool
    scores them); a judged id met a second time (two chunks holding one labelled line) is
    dropped, as it earns nothing new. What makes a chunk-level run of a workspace scorable
    against line- or file-level labels.
    """
    by_path: dict[str, list[tuple[int, str]]] = {}
    for d in judged:
        ev = evidence_of(d)
        if ev.line is not None and "#L" in d:
            by_path.setdefault(ev.path, []).append((ev.line, d))
    out: list[str] = []
    seen: set[str] = set()
    for d in ranked:
        target = d
        if d not in judged:
            m = CHUNK_ID.match(d)
            if m:
                path, start = m.group("path"), int(m.group("start"))
                end = int(m.group("end") or start)
                lines = [jd for line, jd in by_path.get(path, []) if start <= line <= end]
                target = next((x for x in lines if x not in seen), lines[0] if lines else
                              (path if path in judged else d))
        if target in seen:
            continue
        seen.add(target)
        out.append(target)
    return out


def score_run(run: Mapping[str, Sequence[tuple[str, float]]],
              qrels: Mapping[str, Mapping[str, int]],
              metrics: Sequence[str] = RUN_METRICS) -> dict[str, dict[str, Any]]:
    r"""Per query of ``qrels`` (with a relevant document): :func:`score_query` of the run's list
    (its ids :func:`resolve`\ d to the judged ones)."""
    out = {}
    for qid, judged in qrels.items():
        if not any(r > 0 for r in judged.values()):
            continue
        ranked = resolve([d for d, _ in run.get(qid, [])], judged)
        out[qid] = score_query(ranked, judged, metrics)
    return out

